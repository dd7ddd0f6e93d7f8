"""Every way a catalogue (or OPS.md) can be refused: one bad catalogue per raise site, and the
message must name what is wrong and where."""

import unittest

from opgen.catalogue import check_catalogue, render_ops_md
from opgen.common import CatalogueError
from opgen.tests.catalogues import OPS_MD, catalogue, op


class CatalogueErrors(unittest.TestCase):
    def assert_refused(self, change, *fragments, name="kiln.exp"):
        """change(cat, the op called name) makes the tiny catalogue one check_catalogue
        refuses, with a message holding every fragment."""
        cat = catalogue()
        change(cat, op(cat, name))
        with self.assertRaises(CatalogueError) as e:
            check_catalogue(cat)
        for fragment in ("api/ops.json: ",) + fragments:
            self.assertIn(fragment, str(e.exception))

    def test_the_tiny_catalogue_is_accepted(self):
        check_catalogue(catalogue())

    # -- every op ------------------------------------------------------------------------

    def test_name_without_the_kiln_prefix(self):
        self.assert_refused(lambda c, o: o.update(name="exp"), "exp: not named kiln.<lowercase>")
        self.assert_refused(lambda c, o: o.update(name="kiln.Exp"), "kiln.Exp: not named")

    def test_dtypes_of_not_an_operand(self):
        self.assert_refused(lambda c, o: o["dtypes"].update(of="result"),
                            "kiln.exp: dtypes.of 'result' is not 'input N' or 'output N'")

    def test_op_listed_twice(self):
        self.assert_refused(lambda c, o: c["ops"].append(dict(o)), "kiln.exp: listed twice")

    def test_unknown_section(self):
        self.assert_refused(lambda c, o: o.update(section="unry"),
                            "kiln.exp: unknown section 'unry'")

    def test_unknown_dtype_class(self):
        self.assert_refused(lambda c, o: o["dtypes"].update({"class": "floats"}),
                            "kiln.exp: unknown dtype class 'floats'")

    def test_unknown_layout(self):
        self.assert_refused(lambda c, o: o.update(layout="strdied"),
                            "kiln.exp: unknown layout 'strdied'")

    def test_optional_dtype_inside_the_class_or_unknown(self):
        self.assert_refused(lambda c, o: o["dtypes"].update(optional=["float64"]),
                            "kiln.exp: optional dtype 'float64' is not a dtype outside the op's "
                            "class")
        self.assert_refused(lambda c, o: o["dtypes"].update(optional=["float128"]),
                            "kiln.exp: optional dtype 'float128'")

    def test_unknown_autocast_policy(self):
        self.assert_refused(lambda c, o: o.update(autocast="half"),
                            "kiln.exp: autocast must be one of ['float32', 'lower']")

    # -- attributes ----------------------------------------------------------------------

    def test_attribute_name_not_cpp_or_twice(self):
        self.assert_refused(lambda c, o: o["attributes"][0].update(name="Dim"),
                            "kiln.softmax attribute 'Dim': not a C++ name, or listed twice",
                            name="kiln.softmax")
        self.assert_refused(lambda c, o: o["attributes"].append({"name": "dim", "type": "INT"}),
                            "kiln.softmax attribute 'dim': not a C++ name, or listed twice",
                            name="kiln.softmax")

    def test_attribute_type_unknown(self):
        self.assert_refused(lambda c, o: o["attributes"][0].update(type="BOOL"),
                            "kiln.softmax attribute 'dim': type must be one of "
                            "['FLOAT', 'INT', 'INTS', 'STRING']", name="kiln.softmax")

    def test_attribute_count_only_for_ints(self):
        message = "an INTS attribute, and only it, states its count (>= 1)"
        self.assert_refused(lambda c, o: o["attributes"][2].pop("count"),
                            "kiln.softmax attribute 'window': " + message, name="kiln.softmax")
        self.assert_refused(lambda c, o: o["attributes"][0].update(count=1),
                            "kiln.softmax attribute 'dim': " + message, name="kiln.softmax")
        self.assert_refused(lambda c, o: o["attributes"][2].update(count=0),
                            "kiln.softmax attribute 'window': " + message, name="kiln.softmax")

    def test_attribute_default_only_when_optional(self):
        message = "an optional attribute, and only it, has a default"
        self.assert_refused(lambda c, o: o["attributes"][1].pop("default"),
                            "kiln.softmax attribute 'scale': " + message, name="kiln.softmax")
        self.assert_refused(lambda c, o: o["attributes"][0].update(default="0"),
                            "kiln.softmax attribute 'dim': " + message, name="kiln.softmax")

    def test_optional_attribute_without_a_reader(self):
        self.assert_refused(lambda c, o: o["attributes"][2].update(optional=True, default="{}"),
                            "kiln.softmax attribute 'window': optional attributes of type INTS "
                            "have no OpArgs reader yet", name="kiln.softmax")

    # -- generated pointwise ops ---------------------------------------------------------

    def test_function_not_a_cpp_name(self):
        self.assert_refused(lambda c, o: o["frontend"].update(function="Exp"),
                            "kiln.exp: frontend.function is not a C++ name")
        self.assert_refused(lambda c, o: o["frontend"].pop("function"),
                            "kiln.exp: frontend.function is not a C++ name")

    def test_unknown_promotion(self):
        self.assert_refused(lambda c, o: o["frontend"].update(promote="int"),
                            "kiln.exp: frontend.promote must be one of "
                            "['arith', 'compare', 'float', 'logical']")

    def test_pointwise_operand_counts(self):
        message = "a generated pointwise op has 1 or 2 inputs, 1 output and no attributes"
        self.assert_refused(lambda c, o: o["inputs"].append({"name": "c"}),
                            "kiln.mul: " + message, name="kiln.mul")
        self.assert_refused(lambda c, o: o["outputs"].append({"name": "z"}), "kiln.exp: " + message)
        self.assert_refused(lambda c, o: o["attributes"].append({"name": "k", "type": "INT"}),
                            "kiln.exp: " + message)

    def test_scalar_spelling_of_a_unary_op(self):
        self.assert_refused(lambda c, o: o["frontend"].update(scalar=True),
                            "kiln.exp: scalar spellings are generated for binary ops only")

    def test_inplace_spelling_of_a_comparison(self):
        self.assert_refused(lambda c, o: o["frontend"].update(promote="compare"),
                            "kiln.exp: an in-place spelling needs a result of the operand's "
                            "dtype (arith or float)")

    def test_gradient_exactly_when_differentiable(self):
        message = "kiln.exp: differentiable ops, and only they, have a gradient"
        self.assert_refused(lambda c, o: o.pop("gradient"), message)
        self.assert_refused(lambda c, o: o.update(differentiable=False), message)

    def test_gradient_formula_missing_for_an_input(self):
        self.assert_refused(lambda c, o: o["gradient"].pop("b"),
                            "kiln.mul: no gradient formula for input 'b'", name="kiln.mul")

    def test_gradient_formula_for_a_non_input(self):
        self.assert_refused(lambda c, o: o["gradient"].update(c="grad"),
                            "kiln.mul: a gradient for 'c', which is not an input", name="kiln.mul")

    def test_functor_op_keeps_one_dtype(self):
        message = "kiln.exp: a functor-registered op keeps one dtype (promote arith or float)"
        self.assert_refused(lambda c, o: o["dtypes"].update(one_dtype=False), message)

        def compare(c, o):
            o["frontend"].update(promote="compare", inplace=False)
        self.assert_refused(compare, message)

    def test_test_domain_one_range_per_input(self):
        message = "test.domain is one [lo, hi] per input"
        self.assert_refused(lambda c, o: o["test"].update(domain=[[-3, 3]]),
                            "kiln.mul: " + message, name="kiln.mul")
        self.assert_refused(lambda c, o: o["test"].update(domain=[[3, -3]]), "kiln.exp: " + message)
        self.assert_refused(lambda c, o: o["test"].update(domain=[[-3, 0, 3]]),
                            "kiln.exp: " + message)
        self.assert_refused(lambda c, o: o["test"].update(domain=[["-3", 3]]),
                            "kiln.exp: " + message)
        self.assert_refused(lambda c, o: o["test"].update(domain=3), "kiln.exp: " + message)

    def test_test_field_unknown(self):
        # The flag that meant both "special values" and "a kink at 0" before issue 40.
        self.assert_refused(lambda c, o: o["test"].update(special=True),
                            "kiln.exp: test.special is not a test field (domain, special_values, "
                            "nondifferentiable_at)")

    def test_special_values_not_a_bool(self):
        self.assert_refused(lambda c, o: o["test"].update(special_values="yes"),
                            "kiln.exp: test.special_values is true or false")

    def test_nondifferentiable_at_of_an_op_without_a_gradient(self):
        def change(c, o):
            o.update(differentiable=False)
            o.pop("gradient")
            o["test"].update(nondifferentiable_at=[[0]])
        self.assert_refused(change,
                            "kiln.exp: test.nondifferentiable_at is for differentiable ops only")

    def test_nondifferentiable_at_one_list_per_input(self):
        message = "test.nondifferentiable_at is one list of points per input"
        self.assert_refused(lambda c, o: o["test"].update(nondifferentiable_at=[[0]]),
                            "kiln.mul: " + message, name="kiln.mul")
        self.assert_refused(lambda c, o: o["test"].update(nondifferentiable_at=[0]),
                            "kiln.exp: " + message)
        self.assert_refused(lambda c, o: o["test"].update(nondifferentiable_at=0),
                            "kiln.exp: " + message)

    def test_nondifferentiable_at_too_many_points(self):
        self.assert_refused(
            lambda c, o: o["test"].update(nondifferentiable_at=[[-2, -1, 0, 1, 2]]),
            "kiln.exp: test.nondifferentiable_at of input 'x' has 5 points, at most 4")

    def test_nondifferentiable_at_outside_the_domain(self):
        self.assert_refused(lambda c, o: o["test"].update(nondifferentiable_at=[[], [3]]),
                            "kiln.mul: test.nondifferentiable_at of input 'b': 3 is not a number "
                            "in its test.domain [-2, 2]", name="kiln.mul")
        self.assert_refused(lambda c, o: o["test"].update(nondifferentiable_at=[["0"]]),
                            "kiln.exp: test.nondifferentiable_at of input 'x': '0' is not a "
                            "number in its test.domain [-3, 3]")


class OpsMdErrors(unittest.TestCase):
    def assert_refused(self, text, *fragments):
        with self.assertRaises(CatalogueError) as e:
            render_ops_md(catalogue(), text)
        for fragment in fragments:
            self.assertIn(fragment, str(e.exception))

    def test_a_table_for_a_section_without_ops(self):
        self.assert_refused(OPS_MD + "<!-- catalogue: fft -->\n<!-- end catalogue -->\n",
                            "api/OPS.md names catalogue section 'fft', which has no ops")

    def test_a_marker_without_its_end(self):
        self.assert_refused(OPS_MD + "<!-- catalogue: unary -->\n",
                            "api/OPS.md: a catalogue marker without '<!-- end catalogue -->'")

    def test_a_section_without_a_table(self):
        text = OPS_MD.replace("<!-- catalogue: binary -->\n<!-- end catalogue -->\n", "")
        self.assert_refused(text, "api/OPS.md has no table for catalogue section 'binary'",
                            "<!-- catalogue: binary -->")


if __name__ == "__main__":
    unittest.main()
