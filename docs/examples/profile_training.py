#!/usr/bin/env python3
"""The Python twin of profile_training.cpp: the same model, shapes, loss, optimizer, schedule and
recording options under torch.profiler. It prints the operator table and writes a trace.

  PYTHONPATH=~/.cache/profiling-in-libtorch/torch-2.11.0 \\
    python3 docs/examples/profile_training.py [trace folder]          (default folder: log)

scripts/compare_training.py runs it beside the C++ program and checks where they differ.
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


def make_model():
    # x: [32, 3, 16, 16] -> conv [32, 8, 16, 16] -> flatten [32, 2048] -> linear [32, 10]
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Flatten(), nn.Linear(8 * 16 * 16, 10))


def main(argv):
    if len(argv) > 1 or (argv and (not argv[0] or argv[0].startswith("-"))):
        print("profile_training.py: %r: allowed: [trace folder]" % " ".join(argv), file=sys.stderr)
        return 2
    folder = argv[0] if argv else "log"
    # [training]
    torch.manual_seed(0)
    model = make_model()
    sgd = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 16, 16)
    y = torch.randint(0, 10, (32,))  # class labels, int64

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=3, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(folder)) as prof:
        for _ in range(5):
            sgd.zero_grad()  # records Optimizer.zero_grad#SGD.zero_grad
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            sgd.step()       # records Optimizer.step#SGD.step
            prof.step()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15))
    # [training]
    return 0


if __name__ == "__main__":
    os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # no "gpuGetDeviceCount failed" without a GPU
    sys.exit(main(sys.argv[1:]))
