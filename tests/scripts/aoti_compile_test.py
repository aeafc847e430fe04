#!/usr/bin/env python3
"""scripts/aoti_compile.py when a step fails: the status file names the step and the reason in
one line, no package is left behind (not even an earlier build's), and with --keep-going (the build step) the exit code is 0
so the rest of the build goes on; without it, 1. A bad --flag is a usage error (exit 2).

Run with the Python torch the build compiles with:  aoti_compile_test.py PYTHON [ENV=VALUE...]
"""
import os
import subprocess
import sys
import tempfile
import unittest

# Every folder a test makes lies under this one, removed when the tests end (pass or fail).
_FOLDERS = tempfile.TemporaryDirectory(prefix="aoti_compile_test-")


def new_folder():
    return tempfile.mkdtemp(dir=_FOLDERS.name)


SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "aoti_compile.py")
COMMAND = sys.argv[1:]  # e.g. /usr/bin/cmake -E env PYTHONPATH=... python3
del sys.argv[1:]

BROKEN = '''import torch
INPUTS = ["x"]
def example(flags, dtype, device):
    raise RuntimeError("no such shape: --heads %d" % flags["--heads"])
'''


class FailedCompile(unittest.TestCase):
    def run_script(self, *args, stale=False):
        d = new_folder()
        lesson = os.path.join(d, "09_demo")
        os.makedirs(lesson)
        with open(os.path.join(lesson, "compiled.py"), "w") as f:
            f.write(BROKEN)
        out = os.path.join(d, "out", "cpu_fp32_heads3.pt2")
        if stale:  # an earlier build's package, from before compiled.py broke
            os.makedirs(os.path.dirname(out))
            with open(out, "w") as f:
                f.write("an old package")
        r = subprocess.run(COMMAND + [SCRIPT, "--lesson-dir", lesson, "--device", "cpu", "--dtype", "fp32",
                                      "--out", out] + list(args), capture_output=True, text=True)
        return r, out

    def test_a_failed_step_is_named_and_the_build_goes_on(self):
        r, out = self.run_script("--flag", "heads=3", "--keep-going")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out[:-4] + ".status") as f:
            status = f.read()
        self.assertEqual(status, "failed export: RuntimeError: no such shape: --heads 3\n")
        self.assertFalse(os.path.exists(out))
        self.assertEqual(os.listdir(os.path.dirname(out)), ["cpu_fp32_heads3.status"], "no partial file left")
        self.assertIn("failed at export", r.stderr)

    def test_a_failed_recompile_leaves_no_stale_package_to_load(self):
        r, out = self.run_script("--flag", "heads=3", "--keep-going", stale=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(out), "the old package would run the old model")
        self.assertEqual(os.listdir(os.path.dirname(out)), ["cpu_fp32_heads3.status"])

    def test_without_keep_going_it_fails_and_a_bad_flag_is_a_usage_error(self):
        r, _ = self.run_script("--flag", "heads=3")
        self.assertEqual(r.returncode, 1, r.stderr)
        r, _ = self.run_script("--flag", "heads=three")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--flag heads=three: expected NAME=INTEGER", r.stderr)

    def test_an_out_folder_that_takes_no_file_is_a_usage_error_before_compiling(self):
        # It ended in two tracebacks (FileNotFoundError) after the compile.
        if not os.path.isdir("/proc/self"):
            self.skipTest("no /proc/self on this system")
        d = new_folder()
        lesson = os.path.join(d, "09_demo")
        os.makedirs(lesson)
        with open(os.path.join(lesson, "compiled.py"), "w") as f:
            f.write(BROKEN)
        r = subprocess.run(COMMAND + [SCRIPT, "--lesson-dir", lesson, "--device", "cpu", "--dtype", "fp32",
                                      "--out", "/proc/self/x.pt2"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("error: --out /proc/self/x.pt2: cannot make a file in /proc/self: ", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main()
