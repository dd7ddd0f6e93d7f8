#include "logging.h"

#include "kiln/sdk/host_log.h"

namespace kiln::cuda {

namespace {
sdk::HostLog host_log("cuda");
}  // namespace

void attach_log(const kiln_host_api* host) { host_log.attach(host); }

void log(kiln_log_level level, const std::string& message) { host_log.write(level, message); }

}  // namespace kiln::cuda
