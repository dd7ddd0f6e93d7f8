"""The functions a gradient formula may call: read from headers, checked per formula."""

import json
import os
import unittest

from opgen.common import CatalogueError
from opgen.formulas import check_gradient_names, declared_functions, header_functions
from opgen.tests.catalogues import catalogue, op

SOURCES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

HEADER = r"""
#pragma once
#define KILN_HELPER(x) inline_macro(x)
#include "kiln/tensor.h"

namespace kiln {
class Tensor;
/// where(c, a, b): "{" in a comment, and a brace in a string below.
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b);
std::array<Tensor, 2> split_two(const Tensor& x, const char* sep = "{");
Tensor&
reshaped_(Tensor& x);
inline Tensor twice(const Tensor& x) { return from_body(x) * 2; }
struct Options {
  Tensor member_function(int n) const;
};
namespace nn {
Tensor linear(const Tensor& x, const Tensor& w);
}  // namespace nn
namespace detail {
Tensor internal(const Tensor& x);
}  // namespace detail
Tensor after_nested(const Tensor& x);
}  // namespace kiln

namespace kiln::detail::formulas {
Tensor helper_backward(const Tensor& grad, const Tensor& y);
}  // namespace kiln::detail::formulas

Tensor global_function(const Tensor& x);
"""


class DeclaredFunctions(unittest.TestCase):
    def test_names_at_namespace_scope_of_kiln_and_the_formulas(self):
        self.assertEqual(declared_functions(HEADER),
                         {"Tensor", "where", "split_two", "reshaped_", "twice", "Options",
                          "after_nested", "helper_backward"})

    def test_the_repository_headers(self):
        names = header_functions([
            os.path.join(SOURCES, "frontend", "src", "ops", "formulas.h"),
            os.path.join(SOURCES, "frontend", "include", "kiln")])
        for name in ("where", "isnan", "matmul", "relu_backward", "maximum_backward", "Tensor"):
            self.assertIn(name, names)
        for name in ("reshape", "linear", "backward_impl", "if", "return"):
            self.assertNotIn(name, names)  # methods, kiln::nn's, nothing from bodies


class GradientNames(unittest.TestCase):
    FUNCTIONS = {"where", "isnan", "sign", "cos", "helper_backward"}

    def check(self, formulas, name="kiln.exp", functions=FUNCTIONS):
        cat = catalogue()
        op(cat, name)["gradient"] = formulas
        check_gradient_names(cat, functions)

    def assert_refused(self, formulas, *fragments, name="kiln.exp"):
        with self.assertRaises(CatalogueError) as e:
            self.check(formulas, name)
        for fragment in (f"api/ops.json: {name}: ",) + fragments:
            self.assertIn(fragment, str(e.exception))

    def test_the_tiny_catalogue_is_accepted(self):
        check_gradient_names(catalogue(), set())

    def test_accepted_formulas(self):
        for formula in (
                "grad * where(isnan(x), 0.0, sign(x))",   # declared functions
                "grad * (exp(-(x * x)) * 1.1283791670955126)",  # exp: a generated op
                "grad / (result * 2.0) + mul(grad, x)",   # result; mul: generated
                "grad * cos(x) * 1e-5 + 0.5f * grad + .25 * x + 0x1p-3",  # numbers
                "grad * x.abs() + x->sum(0)",             # members: the compiler's
                "grad * kiln::tan(x) * std::exp(1.0)",    # qualified: the compiler's
                "true ? static_cast<double>(1) * grad : int64_t(2) * grad",  # C++ words
                "grad*where(x>0,x,result)"):              # no spaces
            with self.subTest(formula=formula):
                self.check({"x": formula})
        self.check({"a": "grad * b", "b": "where(a < b, grad, -grad)"}, name="kiln.mul")

    def test_accepted_backward_helper(self):
        self.check({"backward": "helper_backward"}, name="kiln.mul")

    def test_an_unknown_function(self):
        self.assert_refused({"x": "grad * coss(x)"}, "the gradient of 'x' calls 'coss', which is "
                            "not a generated pointwise op, a helper in ops/formulas.h or a "
                            "public kiln function")
        self.assert_refused({"a": "grad * b", "b": "grad * a * x(2)"},
                            "the gradient of 'b' calls 'x'", name="kiln.mul")

    def test_an_input_called_as_a_function(self):
        self.assert_refused({"x": "grad * x (2.0)"}, "the gradient of 'x' calls 'x'")

    def test_an_unknown_variable(self):
        self.assert_refused({"x": "grad * y"}, "the gradient of 'x' uses 'y', which is not an "
                            "input (x), grad or result")
        self.assert_refused({"a": "grad * b", "b": "grad * c"},
                            "the gradient of 'b' uses 'c', which is not an input (a, b)",
                            name="kiln.mul")

    def test_an_unknown_backward_helper(self):
        self.assert_refused({"backward": "helpr_backward"}, "gradient.backward names "
                            "'helpr_backward', which is not a helper in ops/formulas.h or a "
                            "public kiln function", name="kiln.mul")

    def test_the_repository_catalogue_is_accepted(self):
        with open(os.path.join(SOURCES, "api", "ops.json"), encoding="utf-8") as f:
            cat = json.load(f)
        check_gradient_names(cat, header_functions([
            os.path.join(SOURCES, "frontend", "src", "ops", "formulas.h"),
            os.path.join(SOURCES, "frontend", "include", "kiln")]))


if __name__ == "__main__":
    unittest.main()
