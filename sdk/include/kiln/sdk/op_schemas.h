#pragma once
// kiln/sdk/op_schemas.h — declaring a plugin's own ops (the extension
// "kiln.op_schemas.v1", share/doc/kiln/ABI.md "Vendor op schemas").
//
// A plugin that provides ops outside the catalogue ("acme.swish") describes each one
// as JSON in the catalogue's form plus output shape rules; the frontend then checks
// every kiln::call_op against it, a kiln::VendorOp allocates the outputs, and
// kiln-info lists the ops. With the plugin kit, return the list from
// Backend::extension (see share/doc/kiln/vendor-ops.md):
//
// @code
//   const void* AcmeBackend::extension(const char* name) {  // overrides Backend's
//     static const kiln::sdk::OpSchemaList ops({
//         {"acme.swish", 1, R"({"inputs": [{"name": "x"}],
//                               "outputs": [{"name": "y", "shape": "input 0"}],
//                               "attributes": [{"name": "beta", "type": "FLOAT"}],
//                               "dtypes": {"class": "float32_64", "one_dtype": true}})"},
//     });
//     return ops.extension(name);
//   }
// @endcode

#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::sdk {

/// The "kiln.op_schemas.v1" table of a plugin's declared ops. It copies what it is
/// given and must live as long as the process (a function-local static, as above):
/// the frontend keeps pointers into it.
class OpSchemaList {
 public:
  /// One op: its name ("acme.swish"), the version get_kernel is asked for, and its
  /// schema as JSON text.
  struct Entry {
    std::string name;
    int32_t version = 1;
    std::string schema_json;
  };

  OpSchemaList(std::initializer_list<Entry> entries) : entries_(entries) {
    schemas_.reserve(entries_.size());
    for (const Entry& e : entries_)
      schemas_.push_back(
          {sizeof(kiln_op_schema), e.name.c_str(), e.version, e.schema_json.c_str()});
    for (const kiln_op_schema& s : schemas_) pointers_.push_back(&s);
    table_.struct_size = sizeof(kiln_op_schemas_api);
    table_.count = pointers_.size();
    table_.schemas = pointers_.data();
  }
  OpSchemaList(const OpSchemaList&) = delete;
  OpSchemaList& operator=(const OpSchemaList&) = delete;

  /// The table, for get_extension(context, KILN_EXTENSION_OP_SCHEMAS).
  const kiln_op_schemas_api* table() const { return &table_; }
  /// table() when `name` is KILN_EXTENSION_OP_SCHEMAS, otherwise NULL: the body of a
  /// Backend::extension that has no other extension.
  const void* extension(const char* name) const {
    return name != nullptr && std::strcmp(name, KILN_EXTENSION_OP_SCHEMAS) == 0 ? &table_ : nullptr;
  }

 private:
  std::vector<Entry> entries_;
  std::vector<kiln_op_schema> schemas_;
  std::vector<const kiln_op_schema*> pointers_;
  kiln_op_schemas_api table_{};
};

}  // namespace kiln::sdk
