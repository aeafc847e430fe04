"""01_matmul_add's workload for AOTInductor (the `compiled` variant).

The same y = x·w + b as main.cpp's eager variant, written once more as a torch.nn.Module so that
torch.export can capture it and Inductor compile it ahead of time into a .pt2 package, which the
lesson loads and runs from C++ (common/harness/aoti.h). The inputs are the lesson's own x, w and
b, passed in by the C++ run: no second random draw. The size n is dynamic, so one package serves
every --size. Compiled by scripts/aoti_compile.py (a build step; see the lesson's README).
"""
import torch


class MatmulAdd(torch.nn.Module):
    def forward(self, x, w, b):
        return torch.add(torch.matmul(x, w), b)


# The package's inputs, in the order the C++ variant passes them.
INPUTS = ["x", "w", "b"]


def example(flags, dtype, device):
    """(module, example inputs at the lesson's default size, dynamic dims) for torch.export."""
    n = 64
    x, w, b = (torch.randn(n, n, dtype=dtype, device=device) for _ in range(3))
    N = torch.export.Dim("n", min=2)
    return MatmulAdd(), (x, w, b), ({0: N, 1: N}, {0: N, 1: N}, {0: N, 1: N})
