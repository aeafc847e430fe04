#!/usr/bin/env python3
"""pil-trace's FLOP formulas beside torch's own counter, on the same calls.

Runs a few matrix products and a scaled-dot-product attention (forward and backward) under
torch.utils.flop_counter.FlopCounterMode, then again under torch.profiler with
record_shapes=True, and compares FlopCounterMode's count per operator with the FLOPs that
`pil-trace ops --roofline --json` gives the counted rows of that trace. The CPU's attention
operator (_scaled_dot_product_flash_attention_for_cpu) has no entry in FlopCounterMode: its
figures are compared with the counter's own sdpa_flop_count / sdpa_backward_flop_count.

  PYTHONPATH=~/.cache/profiling-in-libtorch/torch-2.11.0 python3 scripts/roofline_flop_check.py build/bin/pil-trace

Exit codes: 0 every figure equal, 1 one differs, 2 bad usage.
"""
import json
import os
import subprocess
import sys
import tempfile


def work(torch, F):
    a, b, c = torch.randn(64, 48), torch.randn(48, 32), torch.randn(32)
    x3, y3 = torch.randn(5, 64, 48), torch.randn(5, 48, 32)
    torch.mm(a, b)
    torch.addmm(c, a, b)
    torch.bmm(x3, y3)
    torch.baddbmm(torch.randn(5, 64, 32), x3, y3)
    torch.matmul(x3, b)                          # counted in aten::mm
    F.linear(a, torch.randn(32, 48), c)          # counted in aten::addmm
    q = torch.randn(2, 3, 10, 8, requires_grad=True)
    k = torch.randn(2, 3, 12, 8, requires_grad=True)
    v = torch.randn(2, 3, 12, 8, requires_grad=True)
    F.scaled_dot_product_attention(q, k, v).sum().backward()


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("--help", "-h"):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    tool = sys.argv[1]
    if not os.access(tool, os.X_OK) or os.path.isdir(tool):
        print("roofline_flop_check.py: %s: not an executable; allowed: the built pil-trace "
              "(build/bin/pil-trace)" % tool, file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("roofline_flop_check.py: no Python torch to import; set PYTHONPATH to the cached wheel "
              "(~/.cache/profiling-in-libtorch/torch-2.11.0)", file=sys.stderr)
        return 2
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    torch.manual_seed(0)
    with FlopCounterMode(display=False) as counter:
        work(torch, F)
    theirs = {"aten::" + str(op).split(".")[1]: n for op, n in counter.get_flop_counts()["Global"].items()}
    theirs["aten::_scaled_dot_product_flash_attention_for_cpu"] = sdpa_flop_count((2, 3, 10, 8), (2, 3, 12, 8), (2, 3, 12, 8))
    theirs["aten::_scaled_dot_product_flash_attention_for_cpu_backward"] = sdpa_backward_flop_count(
        (2, 3, 10, 8), (2, 3, 10, 8), (2, 3, 12, 8), (2, 3, 12, 8))

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "flops.pt.trace.json")
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            work(torch, F)
        prof.export_chrome_trace(path)
        report = json.loads(subprocess.check_output([tool, "ops", path, "--roofline", "--json"]))
    ours = {}
    for row in report["rows"]:
        if row["counted"] == "yes":
            ours[row["name"]] = ours.get(row["name"], 0) + row["flops"]
    failed = 0
    for op, n in sorted(theirs.items()):
        mine = ours.get(op)
        same = mine is not None and int(mine) == n
        failed += not same
        print("%-60s torch %14d  pil-trace %14s  %s" % (op, n, "-" if mine is None else int(mine), "same" if same else "DIFFERS"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
