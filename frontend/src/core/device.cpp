#include "kiln/device.h"

#include <charconv>
#include <ostream>

#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/registry.h"

namespace kiln {

namespace {
bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}
}  // namespace

Device::Device(std::string_view spec) {
  size_t colon = spec.find(':');
  std::string_view name = spec.substr(0, colon);
  KILN_CHECK(valid_name(name), "invalid device '", detail::shorten_for_message(spec),
             "': expected a backend name of lowercase letters, digits and '_', optionally "
             "followed by ':index' (e.g. \"cpu\", \"cuda:1\")");
  int index = 0;
  if (colon != std::string_view::npos) {
    std::string_view digits = spec.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    KILN_CHECK(
        !digits.empty() && ec == std::errc() && end == digits.data() + digits.size() && index >= 0,
        "invalid device '", detail::shorten_for_message(spec),
        "': the index after ':' must be a non-negative integer");
  }
  backend_ = std::string(name);
  index_ = index;
}

Device::Device(std::string backend, int index) : backend_(std::move(backend)), index_(index) {
  KILN_CHECK(valid_name(backend_), "invalid backend name '", detail::shorten_for_message(backend_),
             "'");
  KILN_CHECK(index_ >= 0, "invalid device index ", index_, " for backend '", backend_, "'");
}

std::string Device::str() const { return backend_ + ":" + std::to_string(index_); }

std::ostream& operator<<(std::ostream& out, const Device& device) { return out << device.str(); }

Device default_device() { return detail::Registry::get().default_context()->device(); }

void set_default_device(const Device& device) { detail::Registry::get().set_default(device); }

void synchronize(const Device& device) { detail::Registry::get().resolve(device)->synchronize(); }

}  // namespace kiln
