// The examples in the plugin SDK's headers' comments (@code blocks), compiled: the CTest
// docs.header_snippets (cmake/CheckHeaderSnippets.cmake) fails when a header's example
// is not found here line for line. Each sits in a function (or namespace) of its own,
// its parameters standing for what the surrounding program would have. Compiled only,
// never run (an object library): several expect devices or files a test machine lacks.
#include <kiln/base/table_entries.h>
#include <kiln/sdk/catalogue.h>
#include <kiln/sdk/dtype_visit.h>
#include <kiln/sdk/half.h>
#include <kiln/sdk/kernel_table.h>
#include <kiln/sdk/op_schemas.h>
#include <kiln/sdk/philox.h>
#include <kiln/sdk/plugin.h>
#include <kiln/sdk/status.h>
#include <kiln/sdk/versioned.h>

#include <string>

// kiln/sdk/catalogue.h
namespace sdk_catalogue_1 {
void add(const kiln::sdk::OpArgs& args);
const kiln::sdk::KernelEntry entries[] = {
{"kiln.add", &kiln::sdk::run_kernel<add>,
 &kiln::sdk::supports_catalogue_dtypes<kiln::sdk::catalogue::add>, kiln::sdk::kStridedInOut},
};
}  // namespace sdk_catalogue_1

// kiln/sdk/dtype_visit.h
namespace sdk_dtype_visit_1 {
void example(kiln_dtype dtype) {
  bool handled = kiln::sdk::visit_dtype<kiln::sdk::FloatTypes, kiln::sdk::IntTypes>(
      dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        (void)sizeof(T);  // ... the kernel for T ...
      });  // false: dtype not in the set
}
}  // namespace sdk_dtype_visit_1

// kiln/sdk/half.h
namespace sdk_half_1 {
void example() {
  kiln::sdk::float16 h(3.14159f);        // rounds once, to nearest even
  float f = static_cast<float>(h);       // 3.140625f, exact
  auto b = kiln::sdk::bfloat16(1e40);    // from double: rounds once (here to +inf)
}
}  // namespace sdk_half_1

// kiln/sdk/kernel_table.h
namespace sdk_kernel_table_1 {
void add(const kiln::sdk::OpArgs& args);
const kiln::sdk::KernelTable& table() {
  static const kiln::sdk::KernelTable t({
      {"kiln.add", &kiln::sdk::run_kernel<add>, nullptr, kiln::sdk::kStridedInOut},
  });
  return t;
}
kiln_status* get_kernel(kiln_device*, const char* name, int32_t version,
                        kiln_kernel* kernel) {
  return kiln::sdk::guard("get_kernel", [&] { table().lookup(name, version, kernel); });
}
}  // namespace sdk_kernel_table_1

// kiln/sdk/philox.h
namespace sdk_philox_1 {
void example(uint64_t seed, uint64_t offset, int64_t i, float low, float high, float* y) {
  // element i of a float32 random_uniform(seed, offset, low, high):
  y[i] = kiln::sdk::random_uniform_f32(seed, offset, i, low, high);

  // or, four elements per Philox block, as a vectorizing kernel would:
  kiln::sdk::PhiloxBlock w = kiln::sdk::philox_block(seed, offset + i / 4);
  for (int j = 0; j < 4; ++j) y[i + j] = kiln::sdk::uniform_f32_from_word(w.w[j], low, high);
}
}  // namespace sdk_philox_1

// kiln/sdk/plugin.h
namespace sdk_plugin_2 {
struct MyDevice : kiln::sdk::BackendDevice {};
void example(const kiln::sdk::OpArgs& args) {
  auto& device = kiln::sdk::device_from_handle<MyDevice>(args.raw().outputs[0].device);
}
}  // namespace sdk_plugin_2

// kiln/sdk/status.h
namespace sdk_status_1 {
kiln_status *my_allocate(kiln_device *d, size_t bytes, void **data) {
  return kiln::sdk::guard("allocate", [&] {
    KILN_SDK_CHECK(d != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null device");
    *data = ::operator new(bytes);      // may throw anything
  });                                   // never lets an exception escape
}
}  // namespace sdk_status_1

// kiln/sdk/status.h
namespace sdk_status_2 {
void example(int64_t n) {
  KILN_SDK_CHECK(n >= 0, KILN_STATUS_INVALID_ARGUMENT, "negative size ", n);
}
}  // namespace sdk_status_2

// kiln/base/table_entries.h
namespace base_table_entries_1 {
void example(const kiln_plugin_api* api, void (*fail)(const std::string&)) {
  const kiln::base::TableDefects defects = kiln::base::plugin_table_defects(*api);
  if (!defects.empty()) fail(defects.describe());
}
}  // namespace base_table_entries_1

// kiln/sdk/versioned.h
namespace sdk_versioned_1 {
void example(const kiln_host_api* host, const kiln_plugin_api** api,
             kiln_device_properties* properties, const kiln_device_properties& full) {
  kiln::sdk::check_host_abi(host, api, "acme");  // in kiln_plugin_init, first of all
  kiln::sdk::write_sized(properties, full);      // answering a struct the caller sized
}
}  // namespace sdk_versioned_1

// kiln/sdk/op_schemas.h
namespace sdk_op_schemas_1 {
class AcmeBackend : public kiln::sdk::Backend {
 public:
  int32_t device_count() override { return 0; }
  kiln::sdk::BackendDevice& device(int32_t) override { throw std::runtime_error("no devices"); }
  const void* extension(const char* name) override;
};
const void* AcmeBackend::extension(const char* name) {  // overrides Backend's
  static const kiln::sdk::OpSchemaList ops({
      {"acme.swish", 1, R"({"inputs": [{"name": "x"}],
                            "outputs": [{"name": "y", "shape": "input 0"}],
                            "attributes": [{"name": "beta", "type": "FLOAT"}],
                            "dtypes": {"class": "float32_64", "one_dtype": true}})"},
  });
  return ops.extension(name);
}
}  // namespace sdk_op_schemas_1
