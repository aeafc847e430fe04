#!/usr/bin/env python3
"""Lesson 01 held side by side with Python: the same workload under Python's torch.profiler and
under the C++ lesson, and their tables and traces compared.

The workload is lesson 01's eager variant, y = torch.add(torch.matmul(x, w), b) inside a
`matmul_add` range, on the CPU in fp32, with the lesson's schedule (3 plain warm-up calls, then
wait 1, warmup 1, active 3). Compared:
  - the operator table's rows: the same names, the same call counts (Python's
    prof.key_averages() against the lesson's table, as its summary JSON holds it);
  - the nesting in the trace: every CPU slice's chain of enclosing slices
    (ProfilerStep* > matmul_add > aten::matmul > aten::mm), counted, the same in both traces.
Times are not compared: they are the machine's, not the API's.

  PYTHONPATH=~/.cache/profiling-in-libtorch/torch-2.11.0 \\
    python3 scripts/compare_with_python.py --lesson build/bin/01_matmul_add

Exit 0 when both agree, 1 when they differ, 2 on bad usage, 77 when no Python torch is
importable (a skip, as ctest's SKIP_RETURN_CODE reads it).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

from folder_check import folder_problem

SKIP = 77


def python_torch():
    """True when Python's torch.profiler imports; else prints why (a skip, not a pass)."""
    try:
        import torch.profiler  # noqa: F401
    except Exception as e:
        print("SKIPPED: no Python torch to compare with (%s: %s); set PYTHONPATH to the torch "
              "wheel (scripts/setup.sh caches it in ~/.cache/profiling-in-libtorch)"
              % (type(e).__name__, e))
        return False
    return True


def python_run(size, out_dir):
    """The workload under torch.profiler; returns (table rows {name: calls}, trace path)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    torch.manual_seed(0)
    x, w, b = (torch.randn(size, size) for _ in range(3))

    def matmul_add():
        with record_function("matmul_add"):
            return torch.add(torch.matmul(x, w), b)

    for _ in range(3):  # the lesson's --warmup-calls
        matmul_add()
    trace = os.path.join(out_dir, "python.pt.trace.json")
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1)) as prof:
        for _ in range(5):
            matmul_add()
            prof.step()
    prof.export_chrome_trace(trace)
    return {e.key: e.count for e in prof.key_averages()}, trace


def cpp_run(lesson, size, out_dir):
    """The C++ lesson; returns (table rows {name: calls}, trace path)."""
    run = subprocess.run([lesson, "--device", "cpu", "--size", str(size), "--out", out_dir],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("compare_with_python: the lesson failed (exit %d):\n%s%s"
                 % (run.returncode, run.stdout, run.stderr))
    def value(key):
        m = re.search(r"^%s: (.+)$" % key, run.stdout, re.M)
        if not m:
            sys.exit("compare_with_python: the lesson printed no '%s:' line" % key)
        return m.group(1)
    with open(value("summary")) as f:
        summary = json.load(f)
    rows = {op["name"]: op["calls"] for op in summary["operators"] if not op["device_work"]}
    return rows, value("trace")


def chains(trace_path):
    """Every CPU slice (operator or named range) as its chain of enclosing slices on its thread,
    outermost first: a list of tuples of names, ('ProfilerStep#2', 'matmul_add', 'aten::matmul')."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X"
              and e.get("cat") in ("cpu_op", "user_annotation")]
    out = []
    by_thread = {}
    for e in slices:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_thread.values():
        # Parents first: by start, then the longer first.
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []
        for e in evs:
            start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and not (start >= stack[-1][0] and end <= stack[-1][1]):
                stack.pop()
            chain = (stack[-1][2] if stack else ()) + (e["name"],)
            out.append(chain)
            stack.append((start, end, chain))
    return out


def step_name(name):
    """ProfilerStep#N as Python's table groups the steps: ProfilerStep*."""
    return re.sub(r"^ProfilerStep#\d+$", "ProfilerStep*", name)


def nesting(trace_path):
    """Every CPU slice's chain of enclosing slices on its thread, counted."""
    return Counter(" > ".join(step_name(n) for n in c) for c in chains(trace_path))


def side_by_side(title, a, b):
    """Prints both counts per key; returns the keys that differ."""
    keys = sorted(set(a) | set(b), key=lambda k: (-max(a.get(k, 0), b.get(k, 0)), k))
    width = max([len(k) for k in keys] + [len(title)])
    print("%-*s  %8s  %8s" % (width, title, "Python", "C++"))
    differ = []
    for k in keys:
        same = a.get(k, 0) == b.get(k, 0)
        print("%-*s  %8s  %8s%s" % (width, k, a.get(k, "-"), b.get(k, "-"), "" if same else "  <- differs"))
        if not same:
            differ.append(k)
    print()
    return differ


MAX_SIZE = 8192  # Python's two N x N fp32 tensors and the result: 768 MB at 8192


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lesson", required=True, help="the built lesson: build/bin/01_matmul_add")
    ap.add_argument("--size", type=int, default=64, help="N of the N x N matrices (default 64)")
    ap.add_argument("--out", help="folder for both traces (default: a temporary one)")
    args = ap.parse_args()
    if not os.access(args.lesson, os.X_OK) or os.path.isdir(args.lesson):
        print("compare_with_python: --lesson %s: not an executable; allowed: the built lesson "
              "(build/bin/01_matmul_add)" % args.lesson, file=sys.stderr)
        return 2
    if not 1 <= args.size <= MAX_SIZE:
        print("compare_with_python: --size %d: out of range; allowed: 1 to %d (the N x N matrices "
              "Python builds too)" % (args.size, MAX_SIZE), file=sys.stderr)
        return 2
    if args.out and folder_problem(args.out):
        print("compare_with_python: --out: %s; allowed: a folder to write into"
              % folder_problem(args.out), file=sys.stderr)
        return 2
    if not python_torch():
        return SKIP
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # no "gpuGetDeviceCount failed" without a GPU
    out = args.out or tempfile.mkdtemp(prefix="pil_compare_")
    os.makedirs(out, exist_ok=True)
    py_rows, py_trace = python_run(args.size, out)
    cpp_rows, cpp_trace = cpp_run(args.lesson, args.size, out)
    print("Lesson 01 (eager, CPU, fp32, size %d): Python's torch.profiler and the C++ lesson\n"
          % args.size)
    bad = side_by_side("operator table: # of Calls", py_rows, cpp_rows)
    bad += side_by_side("nesting in the trace: slices", nesting(py_trace), nesting(cpp_trace))
    print("traces: %s, %s" % (py_trace, cpp_trace))
    if bad:
        print("RESULT: FAILED (%d rows differ)" % len(bad))
        return 1
    print("RESULT: PASSED (the same rows, call counts and nesting)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
