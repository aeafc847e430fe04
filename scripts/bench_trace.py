#!/usr/bin/env python3
"""How fast does pil-trace read and explain a large trace? One run, side by side.

Generates a Kineto-like trace (default about 1 GB: profiler steps, named ranges, operators, CUDA
runtime launches, kernels with their launch shapes, copies, ac2g flow arrows; written the way
Kineto writes it) once into the cache, then times, each in a fresh process, measuring wall time
and peak memory (GNU time):

  walk       simdjson merely walking the events, each skipped whole (pil-trace walk), one core
  walk+fields  simdjson visiting every field of every event, values untouched
             (pil-trace walk --fields), one core: the least a one-thread reader of fields must do
  pil-trace  the full analysis (pil-trace summary: operator table, kernels, idle-time split per
             stream, launch delays) on every core the process may use (the default --threads)
  advise     pil-trace advise (every rule, shapes read) on every core: goal within 1.2x of summary
  json.load  Python's json.load of the same file, one core
  HTA        Holistic Trace Analysis: loading plus its kernel breakdown and idle-time breakdown
             (pip package holistictraceanalysis, installed into a venv in the cache), one core

then the scaling of the full analysis with its reader's threads (1, 2, 4, ... up to the cores;
pinned to that many cores), with the speed-up over one thread and the efficiency per thread
(speed-up / threads), and prints the ratios the goals are stated in. With --big-gb N it also
generates an N GB trace (when the disk has room for it twice over) and reports the full
analysis's time and peak memory there. Usage:
  scripts/bench_trace.py [--size-mb 1024] [--build build] [--skip-hta] [--skip-json]
                         [--threads 1,2] [--big-gb 10] [--ranks] [--against OTHER_BUILD]

With --against, another build's walk and full analysis take their turns in the same rounds (a
before/after on one machine state: on a shared machine, runs minutes apart are not comparable),
and its ratio is printed beside this build's.

With --ranks it measures pil-trace's multi-rank analysis instead: two rank traces of the same
size (each with an NCCL all-reduce kernel and its record_param_comms per step) analysed together
(`pil-trace ranks A B` on all cores: here one file per core) against one of them alone, with the goals
"two ranks within 1.3x the time of one" and "peak memory at most half the two files' size".
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PIL_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "profiling-in-libtorch")


def generate(path, size_mb, seed=1, rank=None, steps=None):
    """Writes a Kineto-like trace of about size_mb megabytes, whole or not at all. With `rank`,
    one rank of a data-parallel run: its distributedInfo, and per step a record_param_comms call
    and an NCCL all-reduce kernel overlapping the step's last kernels. With `steps`, exactly that
    many steps (the ranks of one run record the same steps). Returns the number of steps."""
    rng = random.Random(seed if rank is None else seed + rank)
    target = size_mb * 1024 * 1024
    tmp = path + ".partial"
    pid, tid = 4242, 4242
    kernels = ["void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(Params)",
               "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
               "void at::native::(anonymous namespace)::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const",
               "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"]
    ops = ["aten::mm", "aten::add", "aten::gelu", "aten::addmm"]
    with open(tmp, "w", buffering=1 << 22) as f:
        f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {"id": 0, "name": "Synthetic GPU", '
                '"totalGlobalMem": 85899345920, "computeMajor": 9, "computeMinor": 0, "numSms": 132}\n  ],\n'
                '  "distributedInfo": {"backend": "nccl", "rank": %d%s},\n'
                '  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1700000000000000000,\n  "traceEvents": [\n'
                % (rank or 0, "" if rank is not None else ', "world_size": 1'))
        written, ext, corr, ts, step, first = 0, 1, 1, 1000.0, 0, True
        out = []
        while (written < target) if steps is None else (step < steps):
            step_start = ts
            events = []
            n_ops = 40
            step_ext = ext
            ext += 1
            range_ext = ext
            ext += 1
            gpu_t = ts + 30.0
            for i in range(n_ops):
                k = rng.randrange(len(ops))
                op_ts = ts + 2.0 + i * 25.0
                op_dur = 18.0 + rng.random() * 4
                events.append(
                    '  {\n    "ph": "X", "cat": "cpu_op", "name": "%s", "pid": %d, "tid": %d,\n'
                    '    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d,"Sequence number": %d, '
                    '"Fwd thread id": 0, "Record function id": 0, "Concrete Inputs": ["", ""], "Input type": '
                    '["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[4096, 1], [4096, 1]], "Input Dims": '
                    '[[4096, 4096], [4096, 4096]], "Ev Idx": %d\n    }\n  }' % (ops[k], pid, tid, op_ts, op_dur, ext, i, i))
                l_ts = op_ts + 5.0
                l_dur = 4.0 + rng.random() * 2
                events.append(
                    '  {\n    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d,\n'
                    '    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d, "cbid": 211, '
                    '"correlation": %d\n    }\n  }' % (pid, tid, l_ts, l_dur, ext, corr))
                k_ts = max(gpu_t, l_ts + l_dur + 2.0)
                k_dur = 5.0 + rng.random() * 30
                gpu_t = k_ts + k_dur + rng.choice([0.5, 1.0, 2.0, 40.0])
                events.append(
                    '  {\n    "ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7,\n'
                    '    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d,\n      "queued": 0, '
                    '"device": 0, "context": 1,\n      "stream": 7, "correlation": %d,\n      "registers per thread": 90, '
                    '"shared memory": 49152,\n      "blocks per SM": 1.939394, "warps per SM": 7.757576,\n      '
                    '"grid": [256, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %%": 12\n    }\n  }'
                    % (kernels[k], k_ts, k_dur, ext, corr))
                events.append('  {\n    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %.3f,\n    "cat": "ac2g", '
                              '"name": "ac2g"\n  }' % (corr, pid, tid, l_ts, ))
                events.append('  {\n    "ph": "f", "id": %d, "pid": 0, "tid": 7, "ts": %.3f,\n    "cat": "ac2g", '
                              '"name": "ac2g", "bp": "e"\n  }' % (corr, k_ts))
                ext += 1
                corr += 1
            if rank is not None:  # the step's all-reduce: issued at the end, runs beside the last kernels
                c_ts = ts + 2.0 + n_ops * 25.0 - 10.0
                events.append(
                    '  {\n    "ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": %d, "tid": %d,\n'
                    '    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d, "Collective name": '
                    '"allreduce", "dtype": "Float", "In msg nelems": 1048576, "Out msg nelems": 1048576, '
                    '"Group size": 2, "Process Group Name": "0", "Rank": %d\n    }\n  }' % (pid, tid, c_ts, 6.0, ext, rank))
                events.append(
                    '  {\n    "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", '
                    '"pid": 0, "tid": 20,\n    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d, '
                    '"device": 0, "stream": 20, "correlation": %d\n    }\n  }'
                    % (gpu_t - 150.0, 140.0 + 30.0 * rng.random(), ext, corr))
                ext += 1
                corr += 1
            ts = max(ts + 2.0 + n_ops * 25.0 + 10.0, gpu_t)
            events.insert(0, '  {\n    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d", "pid": %d, '
                          '"tid": %d,\n    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d,'
                          '"Record function id": 0, "Ev Idx": 0\n    }\n  }' % (step, pid, tid, step_start,
                                                                              ts - step_start, step_ext))
            events.insert(1, '  {\n    "ph": "X", "cat": "user_annotation", "name": "block", "pid": %d, "tid": %d,\n'
                          '    "ts": %.3f, "dur": %.3f,\n    "args": {\n      "External id": %d,"Record function id": 0, '
                          '"Ev Idx": 1\n    }\n  }' % (pid, tid, step_start + 1.0, n_ops * 25.0, range_ext))
            text = ",\n".join(events)
            if not first:
                text = ",\n" + text
            first = False
            f.write(text)
            written += len(text)
            step += 1
        f.write('\n  ],\n  "traceName": "synthetic"\n}\n')
    os.replace(tmp, path)
    return step


def usable_cores():
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cores(n):
    """The first n cores this process may use, as taskset writes them."""
    mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(n))
    return ",".join(str(c) for c in mine[:n])


def measure(label, argv, core="0", repeat=1):
    """Runs argv on the cores `core` `repeat` times; returns (median seconds, peak MB, ok)."""
    return measure_side_by_side([(label, argv, core)], repeat)[label]


def measure_side_by_side(specs, repeat):
    """Runs each (label, argv, core) once per round, `repeat` rounds, the tools taking turns, so
    a machine that drifts (another tenant, the page cache) weighs on all of them alike; returns
    {label: (median seconds, largest peak MB, ok)}."""
    runs = {label: [] for label, _, _ in specs}
    for _ in range(repeat):
        for label, argv, core in specs:
            runs[label].append(measure_once(argv, core))
    out = {}
    for label, _, _ in specs:
        rs = sorted(runs[label], key=lambda r: (r[0] != r[0], r[0]))  # a run without a time last
        seconds, _, _, tail = rs[len(rs) // 2]
        peak_mb = max(r[1] for r in rs)
        ok = all(r[2] for r in rs)
        if not ok:
            tail = next(r[3] for r in rs if not r[2])  # what a failed run said
        extra = ""
        if repeat > 1:
            extra = " (median of %d%s)" % (repeat, ", taking turns" if len(specs) > 1 else "")
        print("  %-20s %8.2f s  %8.0f MB  %s%s" % (
            label, seconds, peak_mb, "ok" if ok else "FAILED: " + " | ".join(tail), extra), flush=True)
        out[label] = (seconds, peak_mb, ok)
    return out


def measure_once(argv, core):
    cmd = ["/usr/bin/time", "-f", "PILTIME %e %M"]
    if core is not None and shutil.which("taskset"):
        cmd += ["taskset", "-c", core]
    proc = subprocess.run(cmd + argv, capture_output=True, text=True)
    seconds, peak_mb = float("nan"), float("nan")
    for line in proc.stderr.splitlines():
        if line.startswith("PILTIME "):
            _, s, kb = line.split()
            seconds, peak_mb = float(s), int(kb) / 1024.0
    ok = proc.returncode == 0
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    return seconds, peak_mb, ok, tail


HTA_SCRIPT = r"""
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_gpu_kernel_breakdown(visualize=False)
a.get_idle_time_breakdown(visualize=False)
print("hta done")
"""


def hta_python():
    venv = os.path.join(CACHE, "hta-venv")
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        print("installing holistictraceanalysis into %s (once)" % venv, flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "holistictraceanalysis"], check=True)
    return py


def run_big(tool, bench_dir, gb, n_cores):
    """Generates (once) and reads a trace of `gb` GB on every core; None when the disk lacks
    room for it twice over (the trace and slack for everything else)."""
    trace = os.path.join(bench_dir, "trace-%dGB.json" % gb)
    if not os.path.exists(trace):
        free = shutil.disk_usage(bench_dir).free
        if free < 2 * gb * (1 << 30):
            print("--big-gb %d: skipped, %.0f GB free in %s (needs %d)" % (gb, free / (1 << 30), bench_dir, 2 * gb),
                  flush=True)
            return None
        print("generating %s (long) ..." % trace, flush=True)
        t0 = time.time()
        generate(trace, gb * 1024)
        print("  generated in %.0f s" % (time.time() - t0), flush=True)
    mb = os.path.getsize(trace) / 1024.0 / 1024.0
    print("big trace %s (%.0f MB):" % (trace, mb), flush=True)
    s, peak, ok = measure("pil-trace", [tool, "summary", trace], core=cores(n_cores))
    return {"trace": trace, "mb": mb, "seconds": s, "peak_mb": peak, "ok": ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--skip-json", action="store_true")
    ap.add_argument("--json-out", help="write the results as JSON here")
    ap.add_argument("--threads", help="thread counts of the scaling table, e.g. 1,2,4 "
                    "(default: 1, 2, 4, ... and the number of usable cores)")
    ap.add_argument("--big-gb", type=int, default=0,
                    help="also time the full analysis of a generated trace of this many GB")
    ap.add_argument("--ranks", action="store_true", help="measure pil-trace ranks on two rank traces instead")
    ap.add_argument("--against", metavar="OTHER_BUILD",
                    help="another build folder: its walk and full analysis take turns with this build's")
    args = ap.parse_args()
    if args.size_mb < 64:
        ap.error("--size-mb %d: at least 64 (allowed: 64 and up; a smaller trace is read in less "
                 "time than /usr/bin/time measures, 10 ms)" % args.size_mb)
    if args.ranks:
        return bench_ranks(args)
    n_cores = usable_cores()
    if args.threads is not None:  # "--threads ''" is no list, not the default
        try:
            counts = sorted({int(x) for x in args.threads.split(",")})
        except ValueError:
            ap.error("--threads: a comma-separated list of thread counts, e.g. 1,2,4")
        if not counts or counts[0] < 1:
            ap.error("--threads: counts of at least 1")
    else:
        counts, n = [], 1
        while n < n_cores:
            counts.append(n)
            n *= 2
        counts.append(n_cores)

    tool = os.path.join(args.build, "bin", "pil-trace")
    if not os.path.exists(tool):
        print("bench_trace.py: --build: no %s; allowed: a build folder with pil-trace built (cmake --build %s "
              "--target pil-trace)" % (tool, args.build), file=sys.stderr)
        return 2
    other = os.path.join(args.against, "bin", "pil-trace") if args.against else None
    if other and not os.path.exists(other):
        print("bench_trace.py: --against: no %s; allowed: another build folder with pil-trace built (cmake --build "
              "%s --target pil-trace)" % (other, args.against), file=sys.stderr)
        return 2
    bench_dir = os.path.join(CACHE, "bench")
    os.makedirs(bench_dir, exist_ok=True)
    trace = os.path.join(bench_dir, "trace-%dMB.json" % args.size_mb)
    if not os.path.exists(trace):
        print("generating %s ..." % trace, flush=True)
        t0 = time.time()
        generate(trace, args.size_mb)
        print("  generated in %.0f s" % (time.time() - t0), flush=True)
    size_mb = os.path.getsize(trace) / 1024.0 / 1024.0
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print("trace: %s (%.0f MB); %d usable cores of: %s" % (trace, size_mb, n_cores, cpu), flush=True)

    # Read the file once so every tool finds it in the page cache, then time the quick ones five
    # times each, taking turns (medians): their seconds are short enough for noise to matter,
    # and the goal is a ratio of two of them.
    with open(trace, "rb") as f:
        while f.read(1 << 24):
            pass
    specs = [("walk", [tool, "walk", trace], "0"),
             ("walk+fields", [tool, "walk", "--fields", trace], "0"),
             ("pil-trace", [tool, "summary", trace], cores(n_cores)),
             ("advise", [tool, "advise", trace], cores(n_cores))]
    if other:  # the walk and the full analysis (an older build may have no advise)
        specs += [("walk (against)", [other, "walk", trace], "0"),
                  ("pil-trace (against)", [other, "summary", trace], cores(n_cores))]
    results = measure_side_by_side(specs, repeat=5)
    against = {k: results.pop(k) for k in ("walk (against)", "pil-trace (against)") if k in results}
    if not args.skip_json:
        results["json.load"] = measure("json.load", [sys.executable, "-c",
                                                     "import json,sys; json.load(open(sys.argv[1]))", trace])
    if not args.skip_hta:
        with tempfile.TemporaryDirectory() as d:
            os.symlink(trace, os.path.join(d, "rank-0.json"))
            results["HTA"] = measure("HTA", [hta_python(), "-c", HTA_SCRIPT, d])

    print("scaling of the full analysis (pil-trace summary --threads N, on N cores):", flush=True)
    scaling = {}
    for n in counts:
        scaling[n] = measure("%d thread%s" % (n, "" if n == 1 else "s"),
                             [tool, "summary", "--threads", str(n), trace],
                             core=cores(min(n, n_cores)), repeat=3)
    big = None
    if args.big_gb > 0:
        big = run_big(tool, bench_dir, args.big_gb, n_cores)

    walk_s = results["walk"][0]
    ours_s, ours_mb = results["pil-trace"][0], results["pil-trace"][1]
    print("\n%-12s %10s %10s %12s %12s" % ("", "seconds", "vs walk", "peak MB", "MB / file MB"))
    for name, (s, mb, ok) in results.items():
        print("%-12s %10.2f %9.2fx %12.0f %12.2f%s" % (name, s, s / walk_s, mb, mb / size_mb, "" if ok else "  FAILED"))
    one = scaling[1][0] if 1 in scaling else None
    print("\n%-12s %10s %10s %10s %12s %12s" % ("threads", "seconds", "vs walk", "speed-up", "per thread", "peak MB"))
    for n, (s, mb, ok) in scaling.items():
        speedup = one / s if one else float("nan")
        print("%-12d %10.2f %9.2fx %9.2fx %11.0f%% %12.0f%s" % (
            n, s, s / walk_s, speedup, 100 * speedup / n, mb, "" if ok else "  FAILED"))
    fields_s = results["walk+fields"][0]
    print("\ngoals: full analysis (%d threads) within 1.5x of the one-thread walk: %.2fx %s against events "
          "skipped whole; %.2fx against every field visited" % (
              n_cores, ours_s / walk_s, "met" if ours_s <= 1.5 * walk_s else "MISSED", ours_s / fields_s))
    advise_s = results["advise"][0]
    print("       advise within 1.2x of the full analysis: %.2fx %s" % (
        advise_s / ours_s, "met" if advise_s <= 1.2 * ours_s else "MISSED"))
    if "HTA" in results and results["HTA"][2]:
        r = results["HTA"][0] / ours_s
        print("       at least 10x faster than HTA: %.1fx %s" % (r, "met" if r >= 10 else "MISSED"))
    print("       peak memory at most 0.4 of the file: %.2f %s" % (ours_mb / size_mb, "met" if ours_mb <= 0.4 * size_mb else "MISSED"))
    if against:
        (aw, _, awok), (ap_s, ap_mb, apok) = against["walk (against)"], against["pil-trace (against)"]
        print("       against %s: its full analysis %.2f s, %.2fx its own walk (%.2f s), %.2fx this build's walk; "
              "peak %.2f of the file%s" % (args.against, ap_s, ap_s / aw, aw, ap_s / walk_s, ap_mb / size_mb,
                                           "" if awok and apok else "  FAILED"))
    if big:
        print("       %s (%.0f MB): full analysis %.1f s, peak %.0f MB (%.2f of the file)%s" % (
            os.path.basename(big["trace"]), big["mb"], big["seconds"], big["peak_mb"],
            big["peak_mb"] / big["mb"], "" if big["ok"] else "  FAILED"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"trace_mb": size_mb, "cpu": cpu, "cores": n_cores,
                       "results": {k: {"seconds": v[0], "peak_mb": v[1], "ok": v[2]} for k, v in results.items()},
                       "scaling": {str(k): {"seconds": v[0], "peak_mb": v[1], "ok": v[2]} for k, v in scaling.items()},
                       "big": big,
                       "against": {"build": args.against,
                                   **{k: {"seconds": v[0], "peak_mb": v[1], "ok": v[2]} for k, v in against.items()}}
                       if against else None}, f, indent=2)
    ok = all(v[2] for v in results.values()) and all(v[2] for v in scaling.values()) and (not big or big["ok"])
    ok = ok and all(v[2] for v in against.values())
    return 0 if ok else 1


def bench_ranks(args):
    """Two rank traces analysed together against one alone: time and peak memory."""
    tool = os.path.join(args.build, "bin", "pil-trace")
    if not os.path.exists(tool):
        print("bench_trace.py: --build: no %s; allowed: a build folder with pil-trace built (cmake --build %s "
              "--target pil-trace)" % (tool, args.build), file=sys.stderr)
        return 2
    bench_dir = os.path.join(CACHE, "bench")
    os.makedirs(bench_dir, exist_ok=True)
    traces = [os.path.join(bench_dir, "trace-%dMB-rank%d.json" % (args.size_mb, rank)) for rank in (0, 1)]
    if not all(os.path.exists(t) for t in traces):
        steps = None
        for rank, path in enumerate(traces):  # rank 1 records exactly rank 0's steps
            print("generating %s ..." % path, flush=True)
            t0 = time.time()
            steps = generate(path, args.size_mb, rank=rank, steps=steps)
            print("  generated in %.0f s (%d steps)" % (time.time() - t0, steps), flush=True)
    sizes = [os.path.getsize(t) / 1024.0 / 1024.0 for t in traces]
    print("rank traces: %s (%.0f MB + %.0f MB); all %d cores of the machine" % (
        ", ".join(traces), sizes[0], sizes[1], os.cpu_count() or 0), flush=True)
    for t in traces:
        with open(t, "rb") as f:
            while f.read(1 << 24):
                pass
    # The goal compares the two files read together (here one core each) with one file read as
    # each of them is (one thread); one file on every core is printed beside it for reference.
    one = measure("one rank, 1 thread", [tool, "ranks", traces[0], "--threads", "1"], core=None, repeat=3)
    one_all = measure("one rank, all cores", [tool, "ranks", traces[0]], core=None, repeat=3)
    two = measure("two ranks, all cores", [tool, "ranks"] + traces, core=None, repeat=3)
    ratio, peak_share = two[0] / one[0], two[1] / sum(sizes)
    print("\none rank on all cores: %.2f s (%.2fx of one thread)" % (one_all[0], one_all[0] / one[0]))
    print("goals: two ranks within 1.3x the time of one (read by one thread, as each of the two is): %.2fx %s"
          % (ratio, "met" if ratio <= 1.3 else "MISSED"))
    print("       peak memory at most half the two files: %.2f %s" % (peak_share, "met" if peak_share <= 0.5 else "MISSED"))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"trace_mb": sizes, "one": {"seconds": one[0], "peak_mb": one[1]},
                       "one_all_cores": {"seconds": one_all[0], "peak_mb": one_all[1]},
                       "two": {"seconds": two[0], "peak_mb": two[1]}}, f, indent=2)
    return 0 if one[2] and one_all[2] and two[2] else 1


if __name__ == "__main__":
    sys.exit(main())
