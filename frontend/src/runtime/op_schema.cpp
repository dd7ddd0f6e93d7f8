// Vendor op schemas: parsing and validating what a plugin declares, and the list of
// declared ops. The JSON comes from a plugin, so every field is checked for presence,
// type and size here, and nothing else in Kiln reads the text.
#include "runtime/op_schema.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <shared_mutex>
#include <utility>

#include "kiln/error.h"
#include "kiln/op_catalogue.h"
#include "runtime/log.h"
#include "runtime/registry.h"

namespace kiln {
namespace detail {

namespace {

using nlohmann::json;

// Throws "plugin 'p': op 'n' version v: bad schema: <parts>".
class SchemaError {
 public:
  SchemaError(std::string_view plugin, std::string_view name, int32_t version)
      : prefix_(concat("plugin '", shorten_for_message(plugin, 64), "': op '",
                       shorten_for_message(name, kMaxSchemaOpName), "' version ", version,
                       ": bad schema: ")) {}
  template <class... Args>
  [[noreturn]] void fail(Args&&... args) const {
    throw Error(concat(prefix_, std::forward<Args>(args)...));
  }

 private:
  std::string prefix_;
};

bool is_identifier(std::string_view s) {
  if (s.empty() || s.size() > kMaxSchemaFieldName) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// "acme.swish", "acme.nn.swish_v2": identifiers joined by dots, at least two, never
// in the catalogue's "kiln." namespace.
std::string op_name_problem(std::string_view name) {
  if (name.size() > kMaxSchemaOpName)
    return concat("an op name is at most ", kMaxSchemaOpName, " characters");
  size_t dots = 0, start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '.') continue;
    if (!is_identifier(name.substr(start, i - start)))
      return "an op name is '<prefix>.<op>', identifiers joined by dots (e.g. 'acme.swish')";
    if (i < name.size()) ++dots;
    start = i + 1;
  }
  if (dots == 0)
    return "an op name is '<prefix>.<op>', identifiers joined by dots (e.g. 'acme.swish')";
  if (name.substr(0, 5) == "kiln.") return "the 'kiln.' prefix is the catalogue's";
  return "";
}

// Nesting depth of the JSON text, counted without parsing (strings skipped), so that a
// deep document is refused before a parser or a destructor recurses into it.
size_t nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > kMaxSchemaNesting) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

uint32_t dtype_class_mask(std::string_view name) {
  static const std::map<std::string_view, uint32_t> classes = {
      {"all", KILN_DTYPES_ALL},
      {"non_bool", KILN_DTYPES_NON_BOOL},
      {"float_int", KILN_DTYPES_FLOAT_INT},
      {"signed", KILN_DTYPES_SIGNED},
      {"float", KILN_DTYPES_FLOAT},
      {"float32_64", KILN_DTYPES_FLOAT32_64},
      {"complex", KILN_DTYPES_COMPLEX}};
  auto it = classes.find(name);
  return it == classes.end() ? 0 : it->second;
}

// Typed access to one JSON object's members, naming the object in errors.
class Fields {
 public:
  Fields(const SchemaError& error, const json& object, std::string where)
      : error_(error), object_(object), where_(std::move(where)) {
    if (!object_.is_object()) error_.fail(where_, " must be a JSON object");
  }
  const json* find(const char* key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  std::optional<std::string> text(const char* key, size_t max_size) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) error_.fail(where_, ".", key, " must be a string");
    const auto& s = v->get_ref<const std::string&>();
    if (s.size() > max_size)
      error_.fail(where_, ".", key, " has ", s.size(), " characters; at most ", max_size);
    return s;
  }
  std::string identifier(const char* key) const {
    std::optional<std::string> s = text(key, kMaxSchemaFieldName);
    if (!s) error_.fail(where_, " has no \"", key, "\"");
    if (!is_identifier(*s))
      error_.fail(where_, ".", key, " '", *s,
                  "' is not an identifier (letters, digits and '_', not starting with a "
                  "digit)");
    return *s;
  }
  bool flag(const char* key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) error_.fail(where_, ".", key, " must be true or false");
    return v->get<bool>();
  }
  const json* array(const char* key, size_t max_size, bool required) const {
    const json* v = find(key);
    if (!v) {
      if (required) error_.fail(where_, " has no \"", key, "\" (an array)");
      return nullptr;
    }
    if (!v->is_array()) error_.fail(where_, ".", key, " must be an array");
    if (v->size() > max_size)
      error_.fail(where_, ".", key, " has ", v->size(), " entries; at most ", max_size);
    return v;
  }

 private:
  const SchemaError& error_;
  const json& object_;
  std::string where_;
};

// "input 2" -> 2 when 0 <= 2 < count; nullopt for anything else.
std::optional<int> operand_index(std::string_view text, std::string_view role, size_t count) {
  if (text.size() <= role.size() + 1 || text.substr(0, role.size()) != role ||
      text[role.size()] != ' ')
    return std::nullopt;
  std::string_view digits = text.substr(role.size() + 1);
  if (digits.size() > 2) return std::nullopt;
  int value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (static_cast<size_t>(value) >= count) return std::nullopt;
  return value;
}

void parse_output(const SchemaError& error, const json& j, size_t index, size_t num_inputs,
                  OpSchema::Output& out) {
  const std::string where = concat("outputs[", index, "]");
  Fields f(error, j, where);
  out.name = f.identifier("name");
  out.description = f.text("desc", kMaxSchemaText).value_or("");
  if (std::optional<std::string> shape = f.text("shape", kMaxSchemaFieldName)) {
    if (*shape == "broadcast") {
      if (num_inputs == 0) error.fail(where, ".shape 'broadcast' needs at least one input");
      out.shape = OpSchema::ShapeRule::Broadcast;
    } else if (*shape == "scalar") {
      out.shape = OpSchema::ShapeRule::Scalar;
    } else if (std::optional<int> i = operand_index(*shape, "input", num_inputs)) {
      out.shape = OpSchema::ShapeRule::SameAs;
      out.shape_input = *i;
    } else {
      error.fail(where, ".shape '", *shape, "' is not a shape rule: 'input N' (N < ", num_inputs,
                 ", the number of inputs), 'broadcast' or 'scalar'");
    }
  }
  if (std::optional<std::string> dtype = f.text("dtype", kMaxSchemaFieldName)) {
    if (std::optional<int> i = operand_index(*dtype, "input", num_inputs)) {
      out.dtype_input = *i;
    } else {
      try {
        out.dtype = dtype_from_name(*dtype);
      } catch (const Error&) {
        error.fail(where, ".dtype '", *dtype,
                   "' is neither 'input N' nor a dtype name (float32, int64, bool, ...)");
      }
    }
  }
}

void parse_attribute(const SchemaError& error, const json& j, size_t index,
                     OpSchema::Attribute& attr) {
  const std::string where = concat("attributes[", index, "]");
  Fields f(error, j, where);
  attr.name = f.identifier("name");
  const std::optional<std::string> type = f.text("type", kMaxSchemaFieldName);
  if (!type) error.fail(where, " ('", attr.name, "') has no \"type\"");
  if (*type == "INT")
    attr.type = OpSchema::AttributeType::Int;
  else if (*type == "FLOAT")
    attr.type = OpSchema::AttributeType::Float;
  else if (*type == "STRING")
    attr.type = OpSchema::AttributeType::String;
  else if (*type == "INTS" || *type == "FLOATS")
    error.fail(where, " ('", attr.name, "') has type ", *type,
               ": a vendor op's attributes are INT, FLOAT or STRING (what call_op passes)");
  else
    error.fail(where, " ('", attr.name, "') has type '", *type, "': expected INT, FLOAT or STRING");
  attr.optional = f.flag("optional", false);
  attr.description = f.text("desc", kMaxSchemaText).value_or("");
  if (const json* d = f.find("default")) {
    attr.optional = true;  // a default makes it optional
    switch (attr.type) {
      case OpSchema::AttributeType::Int:
        if (!d->is_number_integer() || (d->is_number_unsigned() && d->get<uint64_t>() > INT64_MAX))
          error.fail(where, " ('", attr.name, "'): the default of an INT must be a 64-bit integer");
        attr.default_value = d->get<int64_t>();
        break;
      case OpSchema::AttributeType::Float:
        if (!d->is_number())
          error.fail(where, " ('", attr.name, "'): the default of a FLOAT must be a number");
        attr.default_value = d->get<double>();
        break;
      case OpSchema::AttributeType::String:
        if (!d->is_string() || d->get_ref<const std::string&>().size() > kMaxSchemaText)
          error.fail(where, " ('", attr.name,
                     "'): the default of a STRING must be a string of at most ", kMaxSchemaText,
                     " characters");
        attr.default_value = d->get<std::string>();
        break;
    }
  }
}

void parse_dtypes(const SchemaError& error, const json* j, OpSchema& schema) {
  if (!j) error.fail("no \"dtypes\" (an object with a \"class\")");
  Fields f(error, *j, "dtypes");
  const std::optional<std::string> cls = f.text("class", kMaxSchemaFieldName);
  if (!cls) error.fail("dtypes has no \"class\"");
  const uint32_t mask = dtype_class_mask(*cls);
  if (mask == 0)
    error.fail("dtypes.class '", *cls,
               "' is not a catalogue dtype class (all, non_bool, float_int, signed, float, "
               "float32_64, complex)");
  schema.dtype_class = *cls;
  for (int32_t d = 0; d < 32; ++d)
    if (mask & (1u << d)) schema.dtypes.push_back(static_cast<DType>(d));
  schema.one_dtype = f.flag("one_dtype", false);
  if (std::optional<std::string> of = f.text("of", kMaxSchemaFieldName)) {
    if (std::optional<int> i = operand_index(*of, "input", schema.inputs.size())) {
      schema.dtype_operand = *i;
    } else if (std::optional<int> o = operand_index(*of, "output", schema.outputs.size())) {
      schema.dtype_of_output = true;
      schema.dtype_operand = *o;
    } else {
      error.fail("dtypes.of '", *of, "' names no operand ('input N' or 'output N')");
    }
  } else if (schema.inputs.empty()) {
    schema.dtype_of_output = true;  // an op without inputs: its first output decides
  }
}

}  // namespace

OpSchema parse_op_schema(std::string_view plugin, std::string_view name, int32_t version,
                         std::string_view text) {
  const SchemaError error(plugin, name, version);
  if (std::string problem = op_name_problem(name); !problem.empty()) error.fail(problem);
  if (version < 1) error.fail("the version must be at least 1");
  if (text.size() > kMaxSchemaJsonBytes)
    error.fail("the JSON text has ", text.size(), " bytes; at most ", kMaxSchemaJsonBytes);
  if (nesting_depth(text) > kMaxSchemaNesting)
    error.fail("the JSON nests deeper than ", kMaxSchemaNesting, " levels");

  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    error.fail("not valid JSON (", e.what(), ")");
  }
  Fields top(error, root, "the schema");

  OpSchema schema;
  schema.name = std::string(name);
  schema.version = version;
  schema.plugin = std::string(plugin);
  if (std::optional<std::string> n = top.text("name", kMaxSchemaOpName); n && *n != name)
    error.fail("its \"name\" '", *n, "' differs from the declared name");
  if (const json* v = top.find("version"))
    if (!v->is_number_integer() || v->get<int64_t>() != version)
      error.fail("its \"version\" ", shorten_for_message(v->dump(), 40),
                 " differs from the declared version");

  const json* inputs = top.array("inputs", kMaxSchemaOperands, true);
  for (size_t i = 0; i < inputs->size(); ++i) {
    Fields f(error, (*inputs)[i], concat("inputs[", i, "]"));
    OpSchema::Input in;
    in.name = f.identifier("name");
    in.description = f.text("desc", kMaxSchemaText).value_or("");
    for (const auto& other : schema.inputs)
      if (other.name == in.name) error.fail("two inputs are named '", in.name, "'");
    schema.inputs.push_back(std::move(in));
  }
  const json* outputs = top.array("outputs", kMaxSchemaOperands, true);
  if (outputs->empty()) error.fail("no outputs (an op writes at least one)");
  for (size_t i = 0; i < outputs->size(); ++i) {
    OpSchema::Output out;
    parse_output(error, (*outputs)[i], i, schema.inputs.size(), out);
    for (const auto& other : schema.outputs)
      if (other.name == out.name) error.fail("two outputs are named '", out.name, "'");
    schema.outputs.push_back(std::move(out));
  }
  if (const json* attributes = top.array("attributes", kMaxSchemaAttributes, false)) {
    for (size_t i = 0; i < attributes->size(); ++i) {
      OpSchema::Attribute attr;
      parse_attribute(error, (*attributes)[i], i, attr);
      for (const auto& other : schema.attributes)
        if (other.name == attr.name) error.fail("two attributes are named '", attr.name, "'");
      schema.attributes.push_back(std::move(attr));
    }
  }
  parse_dtypes(error, top.find("dtypes"), schema);
  schema.differentiable = top.flag("differentiable", false);
  if (std::optional<std::string> g = top.text("gradient", kMaxSchemaOpName)) {
    if (std::string problem = op_name_problem(*g); !problem.empty())
      error.fail("gradient '", *g, "': ", problem);
    if (!schema.differentiable) error.fail("a \"gradient\" needs \"differentiable\": true");
    schema.gradient = *g;
  }
  schema.semantics = top.text("semantics", kMaxSchemaText).value_or("");
  return schema;
}

namespace {

struct SchemaList {
  std::shared_mutex mutex;
  std::deque<OpSchema> schemas;  // never shrinks: pointers into it stay valid
  std::map<std::pair<std::string, int32_t>, const OpSchema*> by_name;
};

SchemaList& schema_list() {
  static SchemaList* list = new SchemaList;  // never destroyed: plugins outlive statics
  return *list;
}

// A string the plugin handed over, read at most `limit` + 1 bytes far.
std::optional<std::string_view> bounded(const char* s, size_t limit) {
  if (s == nullptr) return std::nullopt;
  const size_t n = strnlen(s, limit + 1);
  return std::string_view(s, n);
}

}  // namespace

void register_op_schemas(const char* plugin, const kiln_op_schemas_api* table) noexcept {
  if (table == nullptr) return;
  const std::string component = plugin ? plugin : "?";
  try {
    if (table->struct_size < KILN_OP_SCHEMAS_API_SIZE_V1) {  // count may lie beyond it
      log(KILN_LOG_WARNING, component,
          concat("the kiln.op_schemas.v1 table is malformed (struct_size ", table->struct_size,
                 ", less than ", KILN_OP_SCHEMAS_API_SIZE_V1,
                 "); its ops are callable without schemas"));
      return;
    }
    if (table->count > kMaxSchemasPerPlugin || (table->count > 0 && table->schemas == nullptr)) {
      log(KILN_LOG_WARNING, component,
          concat("the kiln.op_schemas.v1 table is malformed (count ", table->count, ", at most ",
                 kMaxSchemasPerPlugin, " entries, schemas ", table->schemas ? "set" : "NULL",
                 "); its ops are callable without schemas"));
      return;
    }
    SchemaList& list = schema_list();
    for (size_t i = 0; i < table->count; ++i) {
      const kiln_op_schema* entry = table->schemas[i];
      if (entry == nullptr || entry->struct_size < KILN_OP_SCHEMA_SIZE_V1 ||
          entry->name == nullptr || entry->schema_json == nullptr) {
        log(KILN_LOG_WARNING, component,
            concat("kiln.op_schemas.v1 entry ", i,
                   " is malformed (null, too small, or without a name or JSON); skipped"));
        continue;
      }
      const std::string_view name = *bounded(entry->name, kMaxSchemaOpName);
      const std::string_view text = *bounded(entry->schema_json, kMaxSchemaJsonBytes);
      OpSchema schema;
      try {
        schema = parse_op_schema(component, name, entry->version, text);
      } catch (const Error& e) {
        log(KILN_LOG_WARNING, component,
            concat(e.what(), "; the op is callable without a schema (unchecked)"));
        continue;
      }
      std::unique_lock lock(list.mutex);
      auto key = std::make_pair(schema.name, schema.version);
      if (auto it = list.by_name.find(key); it != list.by_name.end()) {
        log(KILN_LOG_WARNING, component,
            concat("op '", schema.name, "' version ", schema.version,
                   " is declared already by plugin '", it->second->plugin,
                   "'; keeping that schema"));
        continue;
      }
      list.schemas.push_back(std::move(schema));
      list.by_name.emplace(std::move(key), &list.schemas.back());
    }
  } catch (const std::exception& e) {  // allocation failures: keep loading the plugin
    log(KILN_LOG_WARNING, component, concat("reading its op schemas failed: ", e.what()));
  }
}

const OpSchema* find_op_schema(const std::string& name, int32_t version) {
  SchemaList& list = schema_list();
  std::shared_lock lock(list.mutex);
  auto it = list.by_name.find({name, version});
  return it == list.by_name.end() ? nullptr : it->second;
}

}  // namespace detail

std::vector<OpSchema> vendor_ops() {
  (void)detail::Registry::get();  // loads the plugins, which declare their ops
  detail::SchemaList& list = detail::schema_list();
  std::shared_lock lock(list.mutex);
  std::vector<OpSchema> out;
  for (const auto& [key, schema] : list.by_name) out.push_back(*schema);
  return out;
}

std::optional<OpSchema> op_schema(const std::string& name, int32_t version) {
  (void)detail::Registry::get();
  if (const OpSchema* s = detail::find_op_schema(name, version)) return *s;
  return std::nullopt;
}

}  // namespace kiln
