#!/usr/bin/env python3
"""pil-trace's `--idle-rule hta` against Holistic Trace Analysis's own get_idle_time_breakdown.

Usage: hta_idle_compare.py PIL_TRACE TRACE...

For each trace, HTA (the `holistictraceanalysis` package) loads it and splits each stream's idle
time; `pil-trace streams TRACE --idle-rule hta --json` must give the same host wait, kernel wait
and other, per stream, to the nanosecond (HTA's figures are whole microseconds). Exits 77 (ctest's
skip) with one line when the package is not importable, 1 on a difference or where HTA itself
fails on a trace (said as such, the other traces compared all the same), 0 when all agree.

HTA is imported from Python's own path, or else from where ./run-tests installs it
(scripts/setup.sh: PIL_HTA_VERSION into ${PIL_CACHE:-${XDG_CACHE_HOME:-~/.cache}/profiling-in-libtorch}).
"""
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile

HTA_VERSION = "0.5.0"  # scripts/setup.sh's PIL_HTA_VERSION


def hta_cache_dir():
    """The folder scripts/setup.sh installs HTA into (its PIL_CACHE rule)."""
    cache = os.environ.get("PIL_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "profiling-in-libtorch")
    return os.path.join(cache, "hta-" + HTA_VERSION)


def hta_split(trace_path):
    """{stream: {"host_wait": us, "kernel_wait": us, "other": us}} from HTA itself."""
    from hta.trace_analysis import TraceAnalysis  # noqa: E402 (imported only when there)
    folder = tempfile.mkdtemp(prefix="hta-compare-")
    try:
        # HTA reads a folder of rank traces: one rank here.
        shutil.copy(trace_path, os.path.join(folder, "rank-0" + (".json.gz" if trace_path.endswith(".gz") else ".json")))
        analyzer = TraceAnalysis(trace_dir=folder)
        df, _ = analyzer.get_idle_time_breakdown(ranks=[analyzer.t.get_ranks()[0]], visualize=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = {}
    for _, row in df.iterrows():
        out.setdefault(int(row["stream"]), {})[str(row["idle_category"])] = float(row["idle_time"])
    return out


def main():
    if len(sys.argv) < 3:
        print("usage: hta_idle_compare.py PIL_TRACE TRACE...", file=sys.stderr)
        return 2
    try:
        import hta.trace_analysis  # noqa: F401
    except ImportError:
        sys.path.insert(0, hta_cache_dir())
    try:
        import hta.trace_analysis  # noqa: F401,F811
    except Exception as e:  # not installed, or its dependencies are not
        print(f"SKIP: holistictraceanalysis is not importable ({type(e).__name__}: {e}); "
              f"./run-tests installs it into {hta_cache_dir()}, or pip install "
              f"holistictraceanalysis=={HTA_VERSION} to run this comparison")
        return 77
    logging.disable(logging.WARNING)
    tool, traces = sys.argv[1], sys.argv[2:]
    bad = unread = 0
    for trace in traces:
        name = os.path.basename(trace)
        try:
            theirs = hta_split(trace)
        except Exception as e:  # HTA's own failure, said as such: every trace given must compare
            print(f"{name}: HTA itself failed ({type(e).__name__}: {e}): not compared")
            unread += 1
            continue
        r = subprocess.run([tool, "streams", trace, "--idle-rule", "hta", "--json"],
                           capture_output=True, text=True, check=True)
        ours = {s["stream"]: s for s in json.loads(r.stdout)["streams"]}
        if sorted(theirs) != sorted(ours):
            print(f"{name}: streams differ: HTA {sorted(theirs)}, pil-trace {sorted(ours)}")
            bad += 1
            continue
        for stream, split in sorted(theirs.items()):
            mine = {"host_wait": ours[stream]["host_wait_ns"], "kernel_wait": ours[stream]["kernel_wait_ns"],
                    "other": ours[stream]["other_idle_ns"]}
            for kind in ("host_wait", "kernel_wait", "other"):
                hta_ns = round(split.get(kind, 0.0) * 1000)
                same = hta_ns == mine[kind]
                print(f"{name} stream {stream} {kind}: HTA {hta_ns} ns, pil-trace {mine[kind]} ns"
                      f"{'' if same else '  DIFFERENT'}")
                bad += not same
    if unread:
        print(f"{unread} of {len(traces)} traces not compared: HTA itself failed on them")
    return 1 if bad or unread else 0


if __name__ == "__main__":
    sys.exit(main())
