#!/usr/bin/env python3
"""One table from a lesson benchmark's JSON (Google Benchmark --benchmark_out), with the ceiling
measured in the same run, and the lesson's goals checked.

  build/bin/01_matmul_add_bench --benchmark_out=bench.json --benchmark_out_format=json
  scripts/bench_table.py bench.json
  scripts/bench_table.py --goal-filter 01_matmul_add     # the rows its goals need (a filter)

Exit code: 0 when every goal checkable in the run is met, 1 when one is missed, 2 for bad usage
or a file that is not a benchmark's JSON.

Rows are named variant/device/dtype/size[/manual_time]; variants named ceiling_* are the
throughput ceilings: a plain GEMM (share in FLOP/s) or a copy (share in bytes/s, for the rows
that count bytes only, such as a kernel measured on its own). Goals, checked where the run has
the rows:
  lesson 01: lt_bias within 5% of the plain cuBLAS GEMM at 8192 bf16 and never slower than
             eager; graph at size 64 at most a third of eager's time per step.
  lesson 03: the fused GeGLU kernel at least 80% of the copy bandwidth, same bytes, same run,
             on the GPU in every dtype measured.
  lesson 04: flash attention at least 5x the naive attention, the attention alone timed
             (attention_sdpa_flash against attention_naive: bf16, GPU, the default sequence
             1024; over the whole block the shared projections and MLP would cap the ratio near
             2-3x); the training step at least 40% of the bf16 GEMM ceiling's FLOP/s, same run.
  lesson 06: fast at least 3x faster than slow, a whole training step each, same run: on the
             CPU in fp32 (its default batch of 2) and on the GPU in bf16.
"""
import json
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# The rows each lesson's goals are checked on (a --benchmark_filter), for a GPU check that runs
# only those: scripts/gpu-check.sh asks `bench_table.py --goal-filter LESSON`. A lesson without
# goals has none.
GOAL_ROWS = {
    "01_matmul_add": "/cuda/bf16/(64|8192)(/|$)",
    "03_mlp": "^(kernel_.*|ceiling_copy)/cuda/",
    "04_transformer": "^(attention_.*|training|ceiling_gemm)/cuda/bf16/",
    # Every fix's row too: the page's table of each fix's gain against advise's bound.
    "06_find_and_fix": "^(slow|fix[0-9]+|fast)/cuda/bf16/",
}


class BadInput(Exception):
    """A file that is not a benchmark's JSON: said in one line, exit 2."""


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BadInput("%s: %s" % (path, e.strerror if isinstance(e, OSError) else "not JSON: %s" % e))
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise BadInput("%s: not a Google Benchmark JSON (no \"benchmarks\" list); allowed: the file "
                       "a *_bench program writes with --benchmark_out=FILE --benchmark_out_format=json"
                       % path)
    rows, skipped = {}, []
    for b in doc["benchmarks"]:
        if not isinstance(b, dict) or "name" not in b:
            continue
        if b.get("error_occurred"):  # a row the program skipped with a reason (SkipWithError)
            skipped.append((b["name"], str(b.get("error_message", ""))))
            continue
        if "real_time" not in b:
            continue
        parts = b["name"].split("/")
        if len(parts) < 4:
            continue
        variant, device, dtype, size = parts[0], parts[1], parts[2], int(parts[3])
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
        rows[(variant, device, dtype, size)] = {
            "seconds": b["real_time"] * unit,
            "flops": b.get("FLOP/s", 0.0),
            "bytes": b.get("bytes/s", 0.0),
            "items": b.get("items_per_second", 0.0),
        }
    return doc.get("context", {}), rows, skipped


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("--help", "-h"):
        print(__doc__.strip())
        return 0
    if len(sys.argv) == 3 and sys.argv[1] == "--goal-filter":
        # A lesson with no goal rows prints an empty line; a name that is no lesson is refused.
        lessons = sorted(d for d in os.listdir(ROOT) if re.fullmatch(r"[0-9]{2}_\w+", d)
                         and os.path.isfile(os.path.join(ROOT, d, "CMakeLists.txt")))
        if sys.argv[2] not in lessons:
            print("bench_table.py: --goal-filter %s: not a lesson; allowed: %s" % (sys.argv[2], " ".join(lessons)),
                  file=sys.stderr)
            return 2
        print(GOAL_ROWS.get(sys.argv[2], ""))
        return 0
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: bench_table.py BENCH.json | --goal-filter LESSON", file=sys.stderr)
        return 2
    try:
        context, rows, skipped = load(sys.argv[1])
    except BadInput as e:
        print("bench_table.py: %s" % e, file=sys.stderr)
        return 2
    print("host: %s, %s CPUs; date %s" % (context.get("host_name", "?"), context.get("num_cpus", "?"),
                                         context.get("date", "?")))
    groups = defaultdict(dict)
    for (variant, device, dtype, size), r in rows.items():
        groups[(device, dtype, size)][variant] = r
    print("%-6s %-5s %6s  %-22s %12s %10s %10s %9s %12s" % ("device", "dtype", "size", "variant", "time (us)",
                                                           "TFLOP/s", "GB/s", "% ceiling", "items/s"))
    for key in sorted(groups):
        device, dtype, size = key
        g = groups[key]
        ceiling = next((r for v, r in g.items() if v.startswith("ceiling_")), None)
        for variant in sorted(g, key=lambda v: (v.startswith("ceiling_"), v)):
            r = g[variant]
            share = ""
            if ceiling and ceiling["flops"] and r["flops"]:
                share = "%8.1f%%" % (100 * r["flops"] / ceiling["flops"])
            elif ceiling and not ceiling["flops"] and not r["flops"] and ceiling["bytes"]:
                share = "%8.1f%%" % (100 * r["bytes"] / ceiling["bytes"])
            items = "%12.4g" % r["items"] if r["items"] else ""
            print(("%-6s %-5s %6d  %-22s %12.2f %10.2f %10.1f %9s %12s" % (
                device, dtype, size, variant, r["seconds"] * 1e6, r["flops"] / 1e12, r["bytes"] / 1e9, share,
                items)).rstrip())  # empty columns last: no trailing blanks
    if skipped:  # said, not left out silently: what the program could not time, and why
        print("not timed (%d row%s, the program's reason):" % (len(skipped), "" if len(skipped) == 1 else "s"))
        for name, why in skipped:
            print("  %s: %s" % (name.split("/manual_time")[0], why))
    verdicts = []

    def get(v, d, t, n):
        return rows.get((v, d, t, n))

    lt, gemm, eager = get("lt_bias", "cuda", "bf16", 8192), get("ceiling_cublas_gemm", "cuda", "bf16", 8192), \
        get("eager", "cuda", "bf16", 8192)
    if lt and gemm:
        ratio = lt["seconds"] / gemm["seconds"]
        verdicts.append(("lt_bias within 5%% of the plain GEMM at 8192 bf16: %.3fx" % ratio, ratio <= 1.05))
    slower = [k for k in rows if k[0] == "lt_bias" and rows.get(("eager",) + k[1:]) and
              rows[k]["seconds"] > rows[("eager",) + k[1:]]["seconds"]]
    if any(k[0] == "lt_bias" for k in rows):
        verdicts.append(("lt_bias never slower than eager: slower at %s" % (slower or "none"), not slower))
    graph, eager64 = get("graph", "cuda", "bf16", 64), get("eager", "cuda", "bf16", 64)
    if graph and eager64:
        ratio = graph["seconds"] / eager64["seconds"]
        verdicts.append(("graph at 64 (bf16) at most 1/3 of eager: %.2fx" % ratio, ratio <= 1 / 3))
    for (variant, device, dtype, size), r in sorted(rows.items()):
        copy = rows.get(("ceiling_copy", device, dtype, size))
        if variant == "kernel_fused_geglu" and device == "cuda" and copy and copy["bytes"]:
            share = r["bytes"] / copy["bytes"]
            verdicts.append(("fused GeGLU kernel at least 80%% of the copy bandwidth (%s, size %d): %.1f%%"
                             % (dtype, size, 100 * share), share >= 0.8))
    for (variant, device, dtype, size), r in sorted(rows.items()):
        if device != "cuda" or dtype != "bf16":
            continue
        naive = rows.get(("attention_naive", device, dtype, size))
        if variant == "attention_sdpa_flash" and naive:
            speedup = naive["seconds"] / r["seconds"]
            verdicts.append(("flash attention at least 5x the naive attention, attention alone (bf16, batch %d): "
                             "%.2fx" % (size, speedup), speedup >= 5))
        gemm = rows.get(("ceiling_gemm", device, dtype, size))
        if variant == "training" and gemm and gemm["flops"] and r["flops"]:
            share = r["flops"] / gemm["flops"]
            verdicts.append(("training step at least 40%% of the bf16 GEMM ceiling (batch %d): %.1f%%"
                             % (size, 100 * share), share >= 0.4))
    for (variant, device, dtype, size), r in sorted(rows.items()):
        slow = rows.get(("slow", device, dtype, size))
        if variant == "fast" and slow and (device, dtype) in (("cpu", "fp32"), ("cuda", "bf16")):
            speedup = slow["seconds"] / r["seconds"]
            verdicts.append(("fast at least 3x faster than slow (%s %s, batch %d): %.2fx" % (device, dtype, size, speedup),
                             speedup >= 3))
    if verdicts:
        print("\ngoals:")
        for text, ok in verdicts:
            print("  %s  %s" % ("met   " if ok else "MISSED", text))
    else:
        print("\ngoals: none checkable (none of their rows in this run)")
    return 0 if all(ok for _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
