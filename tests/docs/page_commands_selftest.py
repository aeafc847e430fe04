#!/usr/bin/env python3
"""tests/docs/page_commands.py's check that a page makes build/ before it uses it, on hand-made
pages (run with --list: nothing is run), and on the project's own pages: a page a reader starts
on a fresh clone must run ./run-lesson LESSON (or ./run-tests, or cmake --preset) before its
first build/bin/... or cmake --build build. The pages' runs cannot see it: they share one build."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "page_commands.py")
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def block(marker, code):
    return "<!-- sh: %s -->\n```sh\n%s\n```\n\n" % (marker, code)


def check(page_text):
    """page_commands.py --list on one page: (exit code, stderr)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "page.md"), "w") as f:
            f.write("# A page\n\n" + page_text)
        p = subprocess.run([sys.executable, SCRIPT, "--root", d, "--page", "page.md", "--list"],
                           capture_output=True, text=True)
        return p.returncode, p.stderr


class BuildBeforeUse(unittest.TestCase):
    def test_a_lesson_run_first_makes_build(self):
        rc, err = check(block("expect RESULT: PASSED", "./run-lesson 01_matmul_add --device cpu") +
                        block("expect trace", "build/bin/pil-trace summary traces/x.json"))
        self.assertEqual(rc, 0, err)

    def test_build_bin_before_any_set_up_is_refused_with_its_line(self):
        rc, err = check("Text.\n\n" + block("expect trace", "build/bin/pil-trace summary t.json") +
                        block("expect RESULT: PASSED", "./run-lesson 01_matmul_add"))
        self.assertEqual(rc, 2)
        self.assertIn("page.md:7: uses build/ before any command of the page made it", err)
        self.assertIn("build/bin/pil-trace summary t.json", err)

    def test_cmake_build_of_an_unconfigured_folder_is_a_use(self):
        rc, err = check(block("expect ok", "cmake --build build --target docs"))
        self.assertEqual(rc, 2)
        self.assertIn("cmake --build build --target docs", err)

    def test_a_use_before_the_set_up_in_the_same_block_is_refused(self):
        rc, err = check(block("expect ok", "build/bin/01_matmul_add\n./run-lesson 01_matmul_add"))
        self.assertEqual(rc, 2)
        self.assertIn("page.md:5:", err)

    def test_the_usage_line_of_run_lesson_makes_nothing(self):
        rc, _ = check(block("expect usage exit=2", "./run-lesson") +
                      block("expect ok", "build/bin/01_matmul_add"))
        self.assertEqual(rc, 2)

    def test_a_placeholder_makes_it_and_its_own_uses_are_the_readers(self):
        rc, err = check(block("placeholder /opt/x stands for yours", "cmake --install build --prefix /opt/x") +
                        block("placeholder the cache", "PIL_CACHE=/x ./run-lesson 01_matmul_add") +
                        block("expect ok", "ls build/docs"))
        self.assertEqual(rc, 0, err)

    def test_comments_and_other_folders_are_not_uses(self):
        rc, err = check(block("expect ok", "ls my_program/build  # build/bin/x is built later\n"
                                           "PIL_BUILD_DIR=build-other true\necho rebuild/it"))
        self.assertEqual(rc, 0, err)

    def test_run_tests_and_presets_make_it(self):
        for first in ("./run-tests", "cmake --preset release"):
            rc, err = check(block("self the tests", first) + block("expect ok", "build/bin/x"))
            self.assertEqual(rc, 0, first + ": " + err)

    def test_every_page_of_the_project_makes_build_before_it_uses_it(self):
        p = subprocess.run([sys.executable, SCRIPT, "--root", ROOT, "--list"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
