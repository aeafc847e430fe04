#!/usr/bin/env python3
"""scripts/docs_page.py on a hand-made lesson folder: a README whose snippet equals the source
passes and becomes \\snippet; one that differs fails (exit 1) naming the snippet; a marker
without a code block, or a figure naming an undeclared run, is a usage error (exit 2)."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "docs_page.py")

SOURCE = """int helper();
// [variant-x]
int x() {
  return helper();
}
// [variant-x]
"""


def lesson(readme):
    d = tempfile.mkdtemp()
    lesson_dir = os.path.join(d, "09_demo")
    os.makedirs(lesson_dir)
    with open(os.path.join(lesson_dir, "main.cpp"), "w") as f:
        f.write(SOURCE)
    with open(os.path.join(lesson_dir, "README.md"), "w") as f:
        f.write(readme)
    return lesson_dir


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


class DocsPage(unittest.TestCase):
    def page_of(self, d):
        """The page docs_page.py makes of lesson folder d (no runs: the README has none)."""
        page = os.path.join(d, "out", "page.md")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", "/bin/false", "--out-dir",
                os.path.join(d, "out"), "--page", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            return f.read()

    def test_matching_snippet_becomes_a_doxygen_snippet(self):
        d = lesson("# Demo {#demo}\n\n<!-- snippet: variant-x -->\n```cpp\nint x() {\n  return helper();\n}\n```\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        text = self.page_of(d)
        self.assertIn("\\snippet 09_demo/main.cpp variant-x", text)
        self.assertNotIn("return helper();", text)

    def test_a_snippet_from_another_source_of_the_project(self):
        d = lesson("<!-- snippet: calls from=common/h.cpp -->\n```cpp\nprof.step();\n```\n")
        os.makedirs(os.path.join(d, "..", "common"))
        with open(os.path.join(d, "..", "common", "h.cpp"), "w") as f:
            f.write("void f() {\n  // [calls]\n  prof.step();\n  // [calls]\n}\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        self.assertIn("\\snippet common/h.cpp calls", self.page_of(d))
        with open(os.path.join(d, "..", "common", "h.cpp"), "w") as f:
            f.write("// [calls]\nprof.stop();\n// [calls]\n")
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("common/h.cpp", r.stderr)

    def test_a_copy_that_differs_from_the_source_fails(self):
        d = lesson("<!-- snippet: variant-x -->\n```cpp\nint x() {\n  return 42;\n}\n```\n")
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("snippet variant-x", r.stderr)
        self.assertIn("README.md:1", r.stderr)

    def test_bad_markers_are_usage_errors(self):
        for readme in ("<!-- snippet: variant-x -->\nno code here\n",
                       "<!-- snippet: variant-y -->\n```cpp\n```\n",
                       "<!-- table: never-ran -->\n"):
            d = lesson(readme)
            r = run("--lesson-dir", d, "--exe", "/bin/true", "--pil-trace", "/bin/true", "--out-dir",
                    os.path.join(d, "out"), "--page", os.path.join(d, "out", "p.md"))
            self.assertEqual(r.returncode, 2, readme + r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out", "p.md")), "nothing written")

    def test_a_committed_trace_is_drawn_and_tabled(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        fixture = "tests/fuzz/corpus/gpu_small.json"
        d = lesson("<!-- trace: gpu: %s -->\n<!-- table: gpu rows=3 -->\n<!-- timeline: gpu step=0 -->\n" % fixture)
        fake = os.path.join(d, "fake-pil-trace")
        with open(fake, "w") as f:  # stands in for pil-trace: prints its arguments, writes the svg
            f.write("#!/bin/sh\necho \"$@\"\nif [ \"$1\" = svg ]; then : > \"$4\"; fi\n")
        os.chmod(fake, 0o755)
        page = os.path.join(d, "out", "p.md")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", fake, "--out-dir",
                os.path.join(d, "out"), "--page", page, "--root", root)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            text = f.read()
        self.assertIn("ops " + os.path.join(root, fixture) + " --row-limit 3", text)
        self.assertIn("\\image html 09_demo_gpu_step0.svg", text)
        r = run("--lesson-dir", lesson("<!-- trace: gpu: no/such.json -->\n"), "--exe", "/bin/false",
                "--pil-trace", fake, "--out-dir", os.path.join(d, "o2"), "--page", os.path.join(d, "o2", "p.md"))
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_a_failing_run_fails_and_writes_nothing(self):
        d = lesson("<!-- run: a: --size 1 -->\n")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", "/bin/true", "--out-dir",
                os.path.join(d, "out"), "--page", os.path.join(d, "out", "p.md"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "out", "p.md")))


if __name__ == "__main__":
    unittest.main()
