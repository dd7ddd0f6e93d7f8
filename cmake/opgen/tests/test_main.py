"""The command line: python3 -B -m opgen ... (main(argv) here)."""

import contextlib
import io
import json
import os
import tempfile
import unittest

from opgen.__main__ import main
from opgen.catalogue import render_ops_md
from opgen.tests.catalogues import OPS_MD, catalogue, op


class CommandLine(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.dir = folder.name
        self.catalogue = self.write("ops.json", json.dumps(catalogue()))
        self.ops_md = self.write("OPS.md", OPS_MD)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_main(self, *args):
        """(exit status, stdout, stderr) of main with --catalogue and args."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["--catalogue", self.catalogue, *args])
        return rc, out.getvalue(), err.getvalue()

    def test_check_reports_an_out_of_date_ops_md(self):
        rc, _, err = self.run_main("--ops-md", self.ops_md, "--check")
        self.assertEqual(rc, 1)
        self.assertIn(f"opgen: {self.ops_md} is out of date with {self.catalogue}: run "
                      "`cmake --build build --target kiln_update_ops_md` and commit both", err)

    def test_update_rewrites_ops_md_then_check_agrees(self):
        rc, out, _ = self.run_main("--ops-md", self.ops_md, "--update")
        self.assertEqual((rc, out), (0, f"rewrote {self.ops_md} from {self.catalogue}\n"))
        with open(self.ops_md, encoding="utf-8") as f:
            self.assertEqual(f.read(), render_ops_md(catalogue(), OPS_MD))
        rc, out, _ = self.run_main("--ops-md", self.ops_md, "--check")
        self.assertEqual((rc, out), (0, f"{self.ops_md} agrees with {self.catalogue}\n"))

    def test_out_writes_the_generated_files(self):
        out = os.path.join(self.dir, "generated")
        self.assertEqual(self.run_main("--out", out)[0], 0)
        self.assertTrue(os.path.exists(os.path.join(out, "frontend", "pointwise_ops.cpp")))

    def test_a_missing_key(self):
        cat = catalogue()
        del op(cat, "kiln.exp")["layout"]
        self.write("ops.json", json.dumps(cat))
        self.assertEqual(self.run_main()[::2], (1, "opgen: missing key 'layout'\n"))

    def test_a_catalogue_that_is_not_json(self):
        self.write("ops.json", "{\"ops\": [}")
        rc, _, err = self.run_main()
        self.assertEqual(rc, 1)
        self.assertTrue(err.startswith("opgen: Expecting value: line 1 column 10"), err)

    def test_an_unreadable_catalogue_is_named(self):
        self.catalogue = os.path.join(self.dir, "absent.json")
        self.assertEqual(self.run_main()[::2],
                         (1, f"opgen: {self.catalogue}: No such file or directory\n"))

    def test_an_unreadable_formulas_header_is_named(self):
        absent = os.path.join(self.dir, "formulas.h")
        rc, _, err = self.run_main("--formulas", absent, "--public-headers", self.dir)
        self.assertEqual((rc, err), (1, f"opgen: {absent}: No such file or directory\n"))

    def test_a_catalogue_that_is_not_utf8(self):
        with open(self.catalogue, "wb") as f:
            f.write(b'{"ops": ["\xff"]}')
        rc, _, err = self.run_main()
        self.assertEqual(rc, 1)
        self.assertTrue(err.startswith("opgen: an input is not UTF-8 text"), err)

    def test_a_refused_catalogue(self):
        cat = catalogue()
        op(cat, "kiln.exp")["layout"] = "strdied"
        self.write("ops.json", json.dumps(cat))
        self.assertEqual(self.run_main()[::2],
                         (1, "opgen: api/ops.json: kiln.exp: unknown layout 'strdied'\n"))

    def test_formula_names_from_the_headers(self):
        formulas = self.write("formulas.h", "namespace kiln::detail::formulas {\n"
                                            "Tensor twice(const Tensor& x);\n}\n")
        headers = os.path.join(self.dir, "include")
        os.makedirs(os.path.join(headers, "nn"))
        with open(os.path.join(headers, "nn", "ops.h"), "w", encoding="utf-8") as f:
            f.write("namespace kiln {\nTensor halve(const Tensor& x);\n}\n")
        names = ("--formulas", formulas, "--public-headers", headers)
        cat = catalogue()
        op(cat, "kiln.exp")["gradient"] = {"x": "twice(halve(grad)) * exp(x)"}
        self.write("ops.json", json.dumps(cat))
        self.assertEqual(self.run_main(*names)[0], 0)
        op(cat, "kiln.exp")["gradient"] = {"x": "thrice(grad)"}
        self.write("ops.json", json.dumps(cat))
        rc, _, err = self.run_main(*names)
        self.assertEqual(rc, 1)
        self.assertIn("kiln.exp: the gradient of 'x' calls 'thrice'", err)

    def test_options_that_go_together(self):
        for args in (("--formulas", "f.h"), ("--public-headers", "include"),
                     ("--clang-format", "clang-format-14"), ("--clang-format-style", "s"),
                     ("--check", "--update")):
            with self.subTest(args=args), self.assertRaises(SystemExit) as e, \
                    contextlib.redirect_stderr(io.StringIO()):
                self.run_main(*args)
            self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
