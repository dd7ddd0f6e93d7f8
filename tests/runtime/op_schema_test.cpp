// Vendor op schemas (the extension "kiln.op_schemas.v1"): the validator takes good
// schemas whole and refuses bad ones with a kiln::Error naming the plugin, the op and the
// problem; a plugin's table registers what validates and skips the rest; a VendorOp
// computes output shapes from the rules. Needs no plugin.
#include <string>

#include "kiln/custom_op.h"
#include "runtime/op_schema.h"
#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using detail::parse_op_schema;

OpSchema parse(const std::string& json, const std::string& name = "acme.swish") {
  return parse_op_schema("acme", name, 1, json);
}

const char* const kSwish = R"js({
  "name": "acme.swish", "version": 1, "section": "ignored: a catalogue key",
  "inputs": [{"name": "x", "desc": "any shape"}],
  "outputs": [{"name": "y", "shape": "input 0"}],
  "attributes": [{"name": "beta", "type": "FLOAT", "default": 1.0},
                 {"name": "mode", "type": "STRING", "optional": true},
                 {"name": "steps", "type": "INT"}],
  "dtypes": {"class": "float", "one_dtype": true},
  "differentiable": true, "gradient": "acme.swish_backward",
  "semantics": "y = x * sigmoid(beta * x)"})js";

TEST(OpSchema, AGoodSchemaIsTakenWhole) {
  const OpSchema s = parse(kSwish);
  EXPECT_EQ(s.name, "acme.swish");
  EXPECT_EQ(s.plugin, "acme");
  ASSERT_EQ(s.inputs.size(), 1u);
  EXPECT_EQ(s.inputs[0].description, "any shape");
  ASSERT_EQ(s.outputs.size(), 1u);
  EXPECT_EQ(s.outputs[0].shape, OpSchema::ShapeRule::SameAs);
  EXPECT_EQ(s.outputs[0].shape_input, 0);
  ASSERT_EQ(s.attributes.size(), 3u);
  EXPECT_EQ(s.attributes[0].type, OpSchema::AttributeType::Float);
  EXPECT_TRUE(s.attributes[0].optional);  // a default makes it optional
  ASSERT_TRUE(s.attributes[0].default_value.has_value());
  EXPECT_EQ(std::get<double>(*s.attributes[0].default_value), 1.0);
  EXPECT_TRUE(s.attributes[1].optional);
  EXPECT_FALSE(s.attributes[1].default_value.has_value());
  EXPECT_FALSE(s.attributes[2].optional);
  EXPECT_EQ(s.dtype_class, "float");
  EXPECT_EQ(s.dtypes, (std::vector<DType>{float32, float64, float16, bfloat16}));
  EXPECT_TRUE(s.one_dtype);
  EXPECT_TRUE(s.differentiable);
  EXPECT_EQ(s.gradient, "acme.swish_backward");
  EXPECT_EQ(s.semantics, "y = x * sigmoid(beta * x)");
}

TEST(OpSchema, ShapeAndDtypeRules) {
  const OpSchema s = parse(R"({"inputs": [{"name": "a"}, {"name": "b"}],
      "outputs": [{"name": "sum", "shape": "broadcast"},
                  {"name": "mask", "shape": "input 1", "dtype": "bool"},
                  {"name": "total", "shape": "scalar", "dtype": "input 1"},
                  {"name": "free"}],
      "dtypes": {"class": "all", "of": "output 0"}})");
  ASSERT_EQ(s.outputs.size(), 4u);
  EXPECT_EQ(s.outputs[0].shape, OpSchema::ShapeRule::Broadcast);
  EXPECT_EQ(s.outputs[1].shape, OpSchema::ShapeRule::SameAs);
  EXPECT_EQ(s.outputs[1].shape_input, 1);
  EXPECT_EQ(s.outputs[1].dtype, kbool);
  EXPECT_EQ(s.outputs[2].shape, OpSchema::ShapeRule::Scalar);
  EXPECT_EQ(s.outputs[2].dtype_input, 1);
  EXPECT_EQ(s.outputs[3].shape, OpSchema::ShapeRule::None);
  EXPECT_TRUE(s.dtype_of_output);
  EXPECT_EQ(s.dtype_operand, 0);
}

TEST(OpSchema, BadSchemasAreRefusedNamingPluginOpAndProblem) {
  const std::string io = R"("inputs": [{"name": "x"}], "outputs": [{"name": "y"}])";
  const std::string dt = R"("dtypes": {"class": "float"})";
  auto with = [&](const std::string& more) { return "{" + io + ", " + dt + more + "}"; };
  // Not JSON, not an object, too deep, too long.
  EXPECT_KILN_ERROR(parse("{"), "plugin 'acme'", "op 'acme.swish'", "not valid JSON");
  EXPECT_KILN_ERROR(parse("[]"), "must be a JSON object");
  EXPECT_KILN_ERROR(parse(std::string(100, '[') + std::string(100, ']')), "nests deeper");
  EXPECT_KILN_ERROR(parse(std::string(70000, ' ')), "bytes; at most 65536");
  // Names.
  EXPECT_KILN_ERROR(parse(with(""), "swish"), "'<prefix>.<op>'");
  EXPECT_KILN_ERROR(parse(with(""), "kiln.swish"), "catalogue");
  EXPECT_KILN_ERROR(parse(with(""), "acme..swish"), "'<prefix>.<op>'");
  EXPECT_KILN_ERROR(parse_op_schema("acme", "acme.swish", 0, with("")), "version must be");
  EXPECT_KILN_ERROR(parse(with(R"(, "name": "acme.other")")), "differs from the declared name");
  EXPECT_KILN_ERROR(parse(with(R"(, "version": 2)")), "differs from the declared version");
  // Operands.
  EXPECT_KILN_ERROR(parse("{" + dt + R"(, "outputs": [{"name": "y"}]})"), "no \"inputs\"");
  EXPECT_KILN_ERROR(parse(R"({"inputs": [], "outputs": [], )" + dt + "}"), "no outputs");
  EXPECT_KILN_ERROR(
      parse(R"({"inputs": [{"name": "x"}, {"name": "x"}], "outputs": [{"name": "y"}], )" + dt +
            "}"),
      "two inputs are named 'x'");
  EXPECT_KILN_ERROR(
      parse(R"({"inputs": [{"name": "1x"}], "outputs": [{"name": "y"}], )" + dt + "}"),
      "inputs[0].name '1x' is not an identifier");
  EXPECT_KILN_ERROR(parse(R"({"inputs": [{}], "outputs": [{"name": "y"}], )" + dt + "}"),
                    "inputs[0] has no \"name\"");
  std::string nine = R"({"inputs": [)";
  for (int i = 0; i < 9; ++i)
    nine += (i ? "," : "") + std::string(R"({"name": "x)") + std::to_string(i) + "\"}";
  EXPECT_KILN_ERROR(parse(nine + R"(], "outputs": [{"name": "y"}], )" + dt + "}"),
                    "inputs has 9 entries; at most 8");
  // Shape and dtype rules.
  auto output = [&](const std::string& o) {
    return parse(R"({"inputs": [{"name": "x"}], "outputs": [)" + o + "], " + dt + "}");
  };
  EXPECT_KILN_ERROR(output(R"({"name": "y", "shape": "input 1"})"), "outputs[0].shape 'input 1'",
                    "'input N' (N < 1");
  EXPECT_KILN_ERROR(output(R"({"name": "y", "shape": "same"})"), "is not a shape rule");
  EXPECT_KILN_ERROR(output(R"({"name": "y", "shape": 0})"), "outputs[0].shape must be a string");
  EXPECT_KILN_ERROR(output(R"({"name": "y", "dtype": "float128"})"), "neither 'input N' nor");
  EXPECT_KILN_ERROR(
      parse(R"({"inputs": [], "outputs": [{"name": "y", "shape": "broadcast"}], )" + dt + "}"),
      "needs at least one input");
  // Attributes.
  auto attribute = [&](const std::string& a) {
    return parse(with(R"(, "attributes": [)" + a + "]"));
  };
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "INTS"})"), "type INTS",
                    "INT, FLOAT or STRING");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "DOUBLE"})"), "type 'DOUBLE'");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k"})"), "('k') has no \"type\"");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "INT", "default": 1.5})"),
                    "default of an INT must be a 64-bit integer");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "FLOAT", "default": "1"})"),
                    "default of a FLOAT must be a number");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "STRING", "default": 1})"),
                    "default of a STRING");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "INT", "optional": "yes"})"),
                    "optional must be true or false");
  EXPECT_KILN_ERROR(attribute(R"({"name": "k", "type": "INT"}, {"name": "k", "type": "INT"})"),
                    "two attributes are named 'k'");
  // Dtypes, gradient, text.
  EXPECT_KILN_ERROR(parse("{" + io + "}"), "no \"dtypes\"");
  EXPECT_KILN_ERROR(parse("{" + io + R"(, "dtypes": {"class": "floats"}})"),
                    "'floats' is not a catalogue dtype class");
  EXPECT_KILN_ERROR(parse("{" + io + R"(, "dtypes": {"class": "all", "of": "input 3"}})"),
                    "dtypes.of 'input 3' names no operand");
  EXPECT_KILN_ERROR(parse(with(R"(, "gradient": "acme.swish_backward")")),
                    "needs \"differentiable\": true");
  EXPECT_KILN_ERROR(parse(with(R"(, "differentiable": true, "gradient": "backward")")),
                    "gradient 'backward'");
  EXPECT_KILN_ERROR(parse(with(R"(, "semantics": ")" + std::string(5000, 'a') + "\"")),
                    "semantics has 5000 characters; at most 4096");
}

// A plugin's table as the loader hands it over: what validates is registered, the rest
// skipped (logged), and the first declaration of a name wins.
TEST(OpSchema, APluginsTableRegistersWhatValidates) {
  const std::string good = R"({"inputs": [{"name": "a"}, {"name": "b"}],
      "outputs": [{"name": "c", "shape": "broadcast"}, {"name": "n", "shape": "scalar",
                   "dtype": "int64"}],
      "dtypes": {"class": "all"}})";
  const kiln_op_schema add{sizeof(kiln_op_schema), "fake.add", 1, good.c_str()};
  const kiln_op_schema bad{sizeof(kiln_op_schema), "fake.bad", 1, "{"};
  const kiln_op_schema small{8, "fake.small", 1, good.c_str()};
  const kiln_op_schema* const entries[] = {&add, &bad, nullptr, &small};
  const kiln_op_schemas_api table{sizeof(kiln_op_schemas_api), 4, entries};
  detail::register_op_schemas("fake", &table);
  detail::register_op_schemas("fake", nullptr);  // no table: nothing happens
  const kiln_op_schemas_api huge{sizeof(kiln_op_schemas_api), size_t{1} << 40, entries};
  detail::register_op_schemas("fake", &huge);  // refused whole, never read
  const kiln_op_schema again{
      sizeof(kiln_op_schema), "fake.add", 1,
      R"({"inputs": [], "outputs": [{"name": "z"}], "dtypes": {"class": "all"}})"};
  const kiln_op_schema* const second[] = {&again};
  const kiln_op_schemas_api other{sizeof(kiln_op_schemas_api), 1, second};
  detail::register_op_schemas("other", &other);

  std::optional<OpSchema> s = op_schema("fake.add");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->plugin, "fake");
  EXPECT_EQ(s->inputs.size(), 2u);
  EXPECT_FALSE(op_schema("fake.add", 2).has_value());
  EXPECT_FALSE(op_schema("fake.bad").has_value());
  EXPECT_FALSE(op_schema("fake.small").has_value());
  bool listed = false;
  for (const OpSchema& v : vendor_ops()) listed |= v.name == "fake.add";
  EXPECT_TRUE(listed);

  // The wrapper's shapes: a broadcast, and a scalar.
  VendorOp op("fake.add");
  const auto shapes = op.output_shapes({{2, 1, 3}, {4, 1}});
  EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{2, 4, 3}, {}}));
  EXPECT_KILN_ERROR(op.output_shapes({{2}, {3}}), "VendorOp(fake.add)", "broadcast");
  EXPECT_KILN_ERROR(op.output_shapes({{2}}), "1 input shapes", "takes 2 inputs (a, b)");
  auto a = ones({2, 3});
  EXPECT_KILN_ERROR(op({a, a}), "writes 2 outputs; call run()");
  // Declared, but no plugin has a kernel for it.
  EXPECT_KILN_ERROR(op.run({a, a}), "fake.add (version 1) has no kernel on cpu:0");
  EXPECT_KILN_ERROR(VendorOp("fake.bad"), "no loaded plugin declares the op", "kiln-info");
}

}  // namespace
}  // namespace kiln
