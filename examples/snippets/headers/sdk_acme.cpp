// The examples in the plugin SDK's headers' comments (@code blocks), compiled: the CTest
// docs.header_snippets (cmake/CheckHeaderSnippets.cmake) fails when a header's example
// is not found here line for line. Each sits in a function (or namespace) of its own,
// its parameters standing for what the surrounding program would have. Compiled only,
// never run (an object library): several expect devices or files a test machine lacks.
#include <kiln/sdk/plugin.h>

// kiln/sdk/plugin.h: KILN_SDK_PLUGIN for a backend of several devices.
namespace acme {
class Backend : public kiln::sdk::Backend {
 public:
  int32_t device_count() override { return 0; }
  kiln::sdk::BackendDevice& device(int32_t) override { throw std::runtime_error("no devices"); }
};
}  // namespace acme
KILN_SDK_PLUGIN(acme::Backend, "acme", "1.2.0")
