#!/usr/bin/env python3
"""scripts/first_step_gap.py: each condition's runs get the threads the condition names, whatever
the shell exported (lesson 01's page has the reader export OMP_NUM_THREADS=1 before section 2)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import first_step_gap  # noqa: E402


class RunEnv(unittest.TestCase):
    def test_the_shells_threads_are_left_out_but_the_conditions_kept(self):
        shell = {"PATH": "/bin", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "2"}
        conditions = {name: env for name, _, env in first_step_gap.CONDITIONS}
        self.assertEqual(first_step_gap.run_env(shell, conditions["default"]), {"PATH": "/bin"})
        self.assertEqual(first_step_gap.run_env(shell, conditions["one thread"]),
                         {"PATH": "/bin", "OMP_NUM_THREADS": "1"})
        self.assertEqual(shell["OMP_NUM_THREADS"], "1", "the shell's own environment untouched")


if __name__ == "__main__":
    unittest.main()
