// The examples in the plugin SDK's headers' comments (@code blocks), compiled: the CTest
// docs.header_snippets (cmake/CheckHeaderSnippets.cmake) fails when a header's example
// is not found here line for line. Each sits in a function (or namespace) of its own,
// its parameters standing for what the surrounding program would have. Compiled only,
// never run (an object library): several expect devices or files a test machine lacks.
// kiln/sdk/plugin.h: the smallest backend, a whole plugin.
#include <cstdlib>
#include <cstring>

#include <kiln/sdk/plugin.h>

class HostDevice : public kiln::sdk::BackendDevice {
 public:
  void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
    return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment
                                           + (bytes == 0 ? alignment : 0));
  }
  void deallocate(void* data, kiln::sdk::Stream*) override { std::free(data); }
  void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
            kiln::sdk::Stream*) override { std::memcpy(dst, src, bytes); }
};
KILN_SDK_PLUGIN(kiln::sdk::SingleDeviceBackend<HostDevice>, "host", "0.1.0")
