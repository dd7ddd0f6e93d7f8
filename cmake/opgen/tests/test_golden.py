"""The exact generated text for the tiny catalogue (tests/catalogues.py: kiln.exp, unary;
kiln.mul, binary; kiln.softmax, with attributes), unformatted, against the files under
golden/. OPGEN_UPDATE_GOLDEN=1 rewrites them."""

import os
import tempfile
import unittest

from opgen.catalogue import render_ops_md
from opgen.output import generate
from opgen.tests.catalogues import OPS_MD, catalogue

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
# generated path -> golden file
FILES = {
    "frontend/kiln/pointwise_ops.h": "frontend_pointwise_ops.h.golden",
    "frontend/kiln/pointwise_methods.h": "frontend_pointwise_methods.h.golden",
    "frontend/pointwise_ops.cpp": "frontend_pointwise_ops.cpp.golden",
    "sdk/kiln/sdk/pointwise_ops.h": "sdk_pointwise_ops.h.golden",
    "testing/kiln/testing/pointwise_ops.h": "testing_pointwise_ops.h.golden",
    "api/kiln/op_catalogue.h": "op_catalogue.h.golden",
    "sdk/kiln/sdk/op_attrs.h": "sdk_op_attrs.h.golden",
    "frontend/private/op_attrs.h": "frontend_op_attrs.h.golden",
    "frontend/private/op_dtype_rules.h": "op_dtype_rules.h.golden",
    "frontend/private/op_autocast.h": "op_autocast.h.golden",
}


class Golden(unittest.TestCase):
    def compare(self, golden, text):
        path = os.path.join(GOLDEN, golden)
        if os.environ.get("OPGEN_UPDATE_GOLDEN"):
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        with open(path, encoding="utf-8") as f:
            expected = f.read()
        self.maxDiff = None
        self.assertEqual(text, expected, f"the generated text differs from {path}")

    def test_generated_files(self):
        with tempfile.TemporaryDirectory() as out:
            generate(catalogue(), out)
            written = sorted(os.path.relpath(os.path.join(d, f), out).replace(os.sep, "/")
                             for d, _, files in os.walk(out) for f in files)
            self.assertEqual(written, sorted(FILES))
            for path, golden in FILES.items():
                with self.subTest(path=path):
                    with open(os.path.join(out, path), encoding="utf-8") as f:
                        self.compare(golden, f.read())

    def test_ops_md_tables(self):
        self.compare("OPS.md.golden", render_ops_md(catalogue(), OPS_MD))


if __name__ == "__main__":
    unittest.main()
