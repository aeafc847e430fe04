#!/usr/bin/env python3
"""scripts/bench_table.py on hand-made benchmark JSON: the shares it prints and the goals it
checks (met -> exit 0, missed -> exit 1 and MISSED), with figures chosen so each verdict is
known in advance."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench_table.py")


def row(name, us, flops=None, bytes_=None):
    r = {"name": name + "/manual_time", "real_time": us, "time_unit": "us"}
    if flops is not None:
        r["FLOP/s"] = flops
    if bytes_ is not None:
        r["bytes/s"] = bytes_
    return r


def run(rows):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"context": {"host_name": "test", "num_cpus": 1, "date": "today"}, "benchmarks": rows}, f)
    try:
        return subprocess.run([sys.executable, SCRIPT, f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)


class BenchTable(unittest.TestCase):
    def test_fused_kernel_at_85_percent_of_copy_meets_the_goal(self):
        r = run([row("kernel_fused_geglu/cuda/bf16/64", 100, bytes_=3.4e12),
                 row("ceiling_copy/cuda/bf16/64", 85, bytes_=4.0e12)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("met     fused GeGLU kernel at least 80% of the copy bandwidth (bf16, size 64): 85.0%",
                      r.stdout)
        self.assertIn("85.0%", r.stdout)

    def test_fused_kernel_at_70_percent_misses_and_exits_1(self):
        r = run([row("kernel_fused_geglu/cuda/fp32/64", 100, bytes_=2.8e12),
                 row("ceiling_copy/cuda/fp32/64", 70, bytes_=4.0e12)])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("MISSED  fused GeGLU kernel at least 80% of the copy bandwidth (fp32, size 64): 70.0%",
                      r.stdout)

    def test_gemm_share_is_in_flops_and_lesson01_goals_are_checked(self):
        r = run([row("lt_bias/cuda/bf16/8192", 1040, flops=5.0e14),
                 row("eager/cuda/bf16/8192", 1200, flops=4.0e14),
                 row("ceiling_cublas_gemm/cuda/bf16/8192", 1000, flops=6.0e14)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("83.3%", r.stdout)  # 5.0 / 6.0 of the GEMM's FLOP/s
        self.assertIn("met     lt_bias within 5% of the plain GEMM at 8192 bf16: 1.040x", r.stdout)

    def test_lesson04_flash_speedup_and_training_share(self):
        # The whole block's rows (2x apart) do not carry the goal; the attention alone does.
        r = run([row("naive/cuda/bf16/8", 2000, flops=1e14),
                 row("sdpa_flash/cuda/bf16/8", 1000, flops=2e14),
                 row("attention_naive/cuda/bf16/8", 600, flops=1e13),
                 row("attention_sdpa_flash/cuda/bf16/8", 100, flops=6e13),
                 row("training/cuda/bf16/8", 9000, flops=2.0e14),
                 row("ceiling_gemm/cuda/bf16/8", 100, flops=6.0e14)])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("met     flash attention at least 5x the naive attention, attention alone (bf16, batch 8): "
                      "6.00x", r.stdout)
        self.assertEqual(r.stdout.count("flash attention at least 5x"), 1, r.stdout)
        self.assertIn("MISSED  training step at least 40% of the bf16 GEMM ceiling (batch 8): 33.3%", r.stdout)

    def test_lesson06_fast_against_slow_on_the_cpu_in_fp32_and_the_gpu_in_bf16(self):
        r = run([row("slow/cpu/fp32/2", 500000), row("fast/cpu/fp32/2", 125000),
                 row("slow/cpu/bf16/2", 500000), row("fast/cpu/bf16/2", 400000),  # no goal: an exercise
                 row("slow/cuda/bf16/32", 900000), row("fast/cuda/bf16/32", 450000)])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("met     fast at least 3x faster than slow (cpu fp32, batch 2): 4.00x", r.stdout)
        self.assertIn("MISSED  fast at least 3x faster than slow (cuda bf16, batch 32): 2.00x", r.stdout)
        self.assertEqual(r.stdout.count("fast at least 3x"), 2, r.stdout)

    def test_cpu_rows_only_check_no_goal(self):
        r = run([row("eager/cpu/fp32/1", 10, flops=1e9), row("ceiling_copy/cpu/fp32/1", 1, bytes_=1e9)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("goals: none checkable", r.stdout)


    def test_a_row_the_program_skipped_is_said_with_its_reason(self):
        skipped = {"name": "compiled/cpu/bf16/64/manual_time", "error_occurred": True,
                   "error_message": "skipped: no AOTInductor package cpu_bf16.pt2"}
        r = run([row("eager/cpu/fp32/1", 10, flops=1e9), skipped])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("not timed (1 row, the program's reason):\n  compiled/cpu/bf16/64: skipped: no AOTInductor "
                      "package cpu_bf16.pt2\n", r.stdout)
        self.assertNotIn("compiled   ", r.stdout.split("not timed")[0], "no timed row for it")

    def test_what_is_no_benchmark_json_is_one_line_and_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            cases = {"missing": os.path.join(d, "missing.json"), "folder": d}
            for name, text in (("empty", ""), ("list", "[]"), ("trace", '{"traceEvents": []}'),
                               ("junk", "\x88\x89")):
                cases[name] = os.path.join(d, name + ".json")
                with open(cases[name], "w", encoding="latin-1") as f:
                    f.write(text)
            for name, path in cases.items():
                r = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
                self.assertEqual(r.returncode, 2, name + ": " + r.stderr)
                self.assertEqual(r.stderr.count("\n"), 1, name + ": " + r.stderr)
                self.assertTrue(r.stderr.startswith("bench_table.py: " + path + ": "), r.stderr)
                self.assertNotIn("Traceback", r.stderr)

    def test_goal_filter_of_a_name_that_is_no_lesson_is_refused_and_help_is_help(self):
        # An empty line for "nope" read as a lesson without goals (exit 0); --help was a usage error.
        r = subprocess.run([sys.executable, SCRIPT, "--goal-filter", "nope"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertTrue(r.stderr.startswith("bench_table.py: --goal-filter nope: not a lesson; allowed: 01_"), r.stderr)
        self.assertEqual(r.stdout, "")
        r = subprocess.run([sys.executable, SCRIPT, "--goal-filter", "05_data_parallel"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout), (0, "\n"), r.stderr)  # a lesson with no goal rows
        r = subprocess.run([sys.executable, SCRIPT, "--help"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--goal-filter", r.stdout)


if __name__ == "__main__":
    unittest.main()
