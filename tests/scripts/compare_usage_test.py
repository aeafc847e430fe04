#!/usr/bin/env python3
"""compare_with_python.py and compare_training.py with bad arguments: one line saying what was
wrong and what is allowed, exit 2, before any run (a folder as --lesson ran Python's side, then
stopped with a PermissionError; a huge --size built Python's N x N tensors first; an --out that
cannot take a file ended in a FileNotFoundError). No Python torch is needed for these."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def run(script, *args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), *args],
                          capture_output=True, text=True, timeout=60)


class CompareUsage(unittest.TestCase):
    def check(self, p, says):
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn(says, p.stderr)

    def test_compare_with_python(self):
        with tempfile.TemporaryDirectory() as d:
            exe = sys.executable  # an executable file: the checks below come before any run
            a_file = os.path.join(d, "a_file")
            open(a_file, "w").close()
            self.check(run("compare_with_python.py", "--lesson", d),
                       "--lesson %s: not an executable; allowed:" % d)
            self.check(run("compare_with_python.py", "--lesson", exe, "--size", "99999999999999999999"),
                       "--size 99999999999999999999: out of range; allowed: 1 to 8192")
            self.check(run("compare_with_python.py", "--lesson", exe, "--size", "0"), "--size 0: out of range")
            self.check(run("compare_with_python.py", "--lesson", exe, "--out", a_file),
                       "--out: %s exists and is not a folder; allowed: a folder to write into" % a_file)
            if os.path.isdir("/proc/self"):
                self.check(run("compare_with_python.py", "--lesson", exe, "--out", "/proc/self/x"),
                           "--out: cannot make a file in /proc/self/x: ")
            self.assertEqual(os.listdir(d), ["a_file"], "nothing written")

    def test_compare_training(self):
        with tempfile.TemporaryDirectory() as d:
            a_file = os.path.join(d, "a_file")
            open(a_file, "w").close()
            self.check(run("compare_training.py", "--program", d), "--program %s: not an executable" % d)
            self.check(run("compare_training.py", "--program", sys.executable, "--out", a_file),
                       "--out: %s exists and is not a folder; allowed: a folder to write into" % a_file)


if __name__ == "__main__":
    unittest.main()
