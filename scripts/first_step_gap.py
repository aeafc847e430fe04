#!/usr/bin/env python3
"""What is the gap at the start of lesson 01's first recorded step? Each candidate cause off in turn.

In the first recorded step, `aten::matmul` begins well after the `matmul_add` range opens; in the
later steps a few microseconds after. This script runs lesson 01 on the CPU several times per
condition, each condition switching one candidate cause off (or on), and prints per condition
the median and range over the runs of that gap in the first recorded step and in the later ones,
read from each trace with `pil-trace chain --json`. Conditions:

  default            the lesson's defaults (3 warm-up calls, wait 1, warm-up 1, active 3,
                     record_shapes on, profile_memory off)
  record-shapes off  the profiler records no input shapes
  profile-memory on  the profiler also records allocations (the opposite switch: off is the default)
  no prepare step    --warmup 0: the profiler is not prepared a step ahead (Python's WARMUP)
  no warm-up calls   --warmup-calls 0: the first recorded step is not the first call (wait 1, warm-up 1 still run)
  no warm-up at all  --warmup-calls 0 --wait 0 --warmup 0: the first recorded step is the process's first call
  one thread         OMP_NUM_THREADS=1: no OpenMP thread pool to start or wake

The others run with LibTorch's default threads: OMP_NUM_THREADS or MKL_NUM_THREADS set in the
shell is left out of their runs (and said so).

Usage: scripts/first_step_gap.py [--build build] [--runs 5] [--size 512] [--device cpu|cuda]
                                 [--dtype fp32|bf16] [--only NAME...]
The figures depend on the machine and its load: say which, and where the runs were made.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONDITIONS = [
    ("default", [], {}),
    ("record-shapes off", ["--record-shapes", "off"], {}),
    ("profile-memory on", ["--profile-memory", "on"], {}),
    ("no prepare step", ["--warmup", "0"], {}),
    ("no warm-up calls", ["--warmup-calls", "0"], {}),
    ("no warm-up at all", ["--warmup-calls", "0", "--wait", "0", "--warmup", "0"], {}),
    ("one thread", [], {"OMP_NUM_THREADS": "1"}),
]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def run_env(base, env):
    """The environment of one condition's runs: `base` without the threads variables a shell may
    hold (OMP_NUM_THREADS, MKL_NUM_THREADS: an `export OMP_NUM_THREADS=1`, as lesson 01's page
    suggests, would make every condition 'one thread'), then the condition's own."""
    out = {k: v for k, v in base.items() if k not in THREAD_VARIABLES}
    out.update(env)
    return out


def gap_us(tool, trace, instance):
    """Time from the range's start to its first operator, in microseconds."""
    out = subprocess.run([tool, "chain", trace, "--range", "matmul_add", "--instance", str(instance),
                          "--json"], check=True, capture_output=True, text=True).stdout
    lines = json.loads(out)
    first = next(l for l in lines if l["depth"] == 1)
    return first["offset_ns"] / 1e3


def step_us(summary, k):
    with open(summary) as f:
        return json.load(f)["steps"][k]["cpu_ns"] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--only", nargs="*", help="condition names to run (default: all)")
    a = ap.parse_args()

    def usage(message):  # one line, exit 2, before any run
        print(f"first_step_gap.py: {message}", file=sys.stderr)
        sys.exit(2)

    lesson = os.path.join(a.build, "bin", "01_matmul_add")
    tool = os.path.join(a.build, "bin", "pil-trace")
    for exe in (lesson, tool):
        if not os.access(exe, os.X_OK) or os.path.isdir(exe):
            usage(f"{exe} not found; allowed: a --build folder with 01_matmul_add and pil-trace built "
                  f"(cmake --build {a.build} --target 01_matmul_add pil-trace)")
    if a.runs < 1:
        usage(f"--runs {a.runs}: out of range; allowed: 1 or more")
    if not 1 <= a.size <= 65536:
        usage(f"--size {a.size}: out of range; allowed: 1 to 65536 (lesson 01's sizes)")
    names = [c[0] for c in CONDITIONS]
    if a.only is not None and not a.only:
        usage(f"--only: no condition given; allowed: one or more of {', '.join(names)}")
    for n in a.only or []:
        if n not in names:
            usage(f"--only: unknown condition '{n}'; allowed: {', '.join(names)}")
    fmt = lambda v: f"{statistics.median(v):.0f} ({min(v):.0f}-{max(v):.0f})"
    print(f"lesson 01, --device {a.device} --dtype {a.dtype} --size {a.size}, {a.runs} runs per condition; "
          "median (min-max), microseconds")
    held = [f"{k}={os.environ[k]}" for k in THREAD_VARIABLES if k in os.environ]
    if held:
        print(f"({', '.join(held)} in this shell left out: each condition runs with LibTorch's default threads, "
              "but 'one thread', which sets OMP_NUM_THREADS=1)")
    print("| condition | flags | gap, first recorded step | gap, later steps | first step | later steps |")
    print("|---|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, flags, env in CONDITIONS:
            if a.only and name not in a.only:
                continue
            first, later, s_first, s_later = [], [], [], []
            for r in range(a.runs):
                out = os.path.join(tmp, f"{name.replace(' ', '_')}_{r}")
                cmd = [lesson, "--device", a.device, "--dtype", a.dtype, "--size", str(a.size), "--out", out] + flags
                p = subprocess.run(cmd, capture_output=True, text=True, env=run_env(os.environ, env))
                if p.returncode == 77:  # the lesson's own reason, its line before RESULT: SKIPPED
                    why = [l for l in p.stdout.splitlines() if l and not l.startswith("RESULT:")]
                    print(f"first_step_gap.py: skipped: {why[-1] if why else 'the lesson skipped'}", file=sys.stderr)
                    sys.exit(77)
                if p.returncode != 0:
                    sys.exit(f"first_step_gap.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
                # The files the run says it wrote ("trace: PATH", "summary: PATH"), not a guess at
                # their names.
                said = dict(line.split(": ", 1) for line in p.stdout.splitlines()
                            if line.startswith(("trace: ", "summary: ")))
                trace, summary = said["trace"], said["summary"]
                first.append(gap_us(tool, trace, 0))
                later.append(statistics.median([gap_us(tool, trace, k) for k in (1, 2)]))
                s_first.append(step_us(summary, 0))
                s_later.append(statistics.median([step_us(summary, k) for k in (1, 2)]))
            shown = " ".join(flags) + (" " if flags and env else "") + " ".join(f"{k}={v}" for k, v in env.items())
            print(f"| {name} | `{shown or '(none)'}` | {fmt(first)} | {fmt(later)} | {fmt(s_first)} | {fmt(s_later)} |",
                  flush=True)


if __name__ == "__main__":
    main()
