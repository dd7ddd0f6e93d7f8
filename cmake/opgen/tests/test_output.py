"""Writing the generated files: only when their text changes, formatted first when asked."""

import os
import shutil
import stat
import sys
import tempfile
import unittest

from opgen.common import CatalogueError
from opgen.output import clang_format, generate, write_if_changed
from opgen.tests.catalogues import catalogue

SOURCES = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
CLANG_FORMAT = shutil.which("clang-format-14")
OLD = 1_000_000_000  # a modification time (2001) that a rewrite would change


class Folder(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.dir = folder.name

    def aged(self, path):
        """path's modification time, set to OLD first."""
        os.utime(path, ns=(OLD, OLD))
        return os.stat(path).st_mtime_ns

    def program(self, name, body):
        """An executable Python script in the folder, standing in for clang-format."""
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!{sys.executable}\nimport sys\n{body}\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path


class WriteIfChanged(Folder):
    def test_creates_the_file_and_its_folders(self):
        path = os.path.join(self.dir, "a", "b", "f.h")
        write_if_changed(path, "int x;\n")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "int x;\n")

    def test_leaves_an_unchanged_file_alone(self):
        path = os.path.join(self.dir, "f.h")
        write_if_changed(path, "int x;\n")
        before = self.aged(path)
        write_if_changed(path, "int x;\n")
        self.assertEqual(os.stat(path).st_mtime_ns, before)
        self.assertEqual(os.listdir(self.dir), ["f.h"])  # no .tmp left behind

    def test_rewrites_a_changed_file(self):
        path = os.path.join(self.dir, "f.h")
        write_if_changed(path, "int x;\n")
        before = self.aged(path)
        write_if_changed(path, "int y;\n")
        self.assertNotEqual(os.stat(path).st_mtime_ns, before)
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "int y;\n")
        self.assertEqual(os.listdir(self.dir), ["f.h"])

    def test_generate_twice_rewrites_nothing(self):
        generate(catalogue(), self.dir)
        path = os.path.join(self.dir, "frontend", "pointwise_ops.cpp")
        before = self.aged(path)
        generate(catalogue(), self.dir)
        self.assertEqual(os.stat(path).st_mtime_ns, before)


class Formatting(Folder):
    def test_generate_formats_every_file_before_comparing(self):
        seen = []

        def formatter(path, text):
            seen.append(path)
            return "// formatted\n" + text

        raw = os.path.join(self.dir, "raw")
        generate(catalogue(), raw)
        formatted = os.path.join(self.dir, "formatted")
        generate(catalogue(), formatted, formatter)
        self.assertEqual(len(seen), 10)
        for path in seen:
            self.assertTrue(path.startswith(formatted), path)
            with open(path, encoding="utf-8") as f, \
                    open(raw + path[len(formatted):], encoding="utf-8") as unformatted:
                self.assertEqual(f.read(), "// formatted\n" + unformatted.read())
        # Formatted the same way again: nothing is rewritten, so nothing rebuilds.
        path = os.path.join(formatted, "frontend", "pointwise_ops.cpp")
        before = self.aged(path)
        generate(catalogue(), formatted, formatter)
        self.assertEqual(os.stat(path).st_mtime_ns, before)

    def test_clang_format_gets_the_style_file_and_the_path(self):
        fake = self.program("fake-format", "print(' '.join(sys.argv[1:]))\n"
                                           "sys.stdout.write(sys.stdin.read().upper())")
        text = clang_format(fake, "/src/.clang-format", "/build/f.cpp", "int x;\n")
        self.assertEqual(text, "--style=file:/src/.clang-format --assume-filename=/build/f.cpp\n"
                               "INT X;\n")

    def test_a_failing_clang_format_names_the_file(self):
        fake = self.program("fake-format", "sys.stderr.write('bad style\\n'); sys.exit(3)")
        with self.assertRaises(CatalogueError) as e:
            clang_format(fake, "/src/.clang-format", "/build/f.cpp", "int x;\n")
        self.assertIn("failed to format /build/f.cpp (exit status 3): bad style", str(e.exception))

    def test_a_missing_clang_format_names_the_file(self):
        missing = os.path.join(self.dir, "no-such-clang-format")
        with self.assertRaises(CatalogueError) as e:
            clang_format(missing, "/src/.clang-format", "/build/f.cpp", "int x;\n")
        self.assertIn(f"{missing} could not run to format /build/f.cpp", str(e.exception))

    @unittest.skipUnless(CLANG_FORMAT, "clang-format-14 is not installed")
    def test_clang_format_14_formats_the_generated_code_stably(self):
        style = os.path.join(SOURCES, ".clang-format")
        generate(catalogue(), os.path.join(self.dir, "raw"))
        generate(catalogue(), os.path.join(self.dir, "formatted"),
                 lambda path, text: clang_format(CLANG_FORMAT, style, path, text))
        name = os.path.join("frontend", "pointwise_ops.cpp")
        with open(os.path.join(self.dir, "raw", name), encoding="utf-8") as f:
            raw = f.read()
        path = os.path.join(self.dir, "formatted", name)
        with open(path, encoding="utf-8") as f:
            formatted = f.read()
        self.assertNotEqual(formatted, raw)  # the lambda's long line is wrapped
        self.assertEqual(clang_format(CLANG_FORMAT, style, path, formatted), formatted)


if __name__ == "__main__":
    unittest.main()
