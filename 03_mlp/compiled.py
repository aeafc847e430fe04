"""03_mlp's workload for AOTInductor (the `compiled` variant).

The GeGLU MLP of main.cpp, down(gelu(gate(x), tanh) * up(x)) with three bias-free projections,
written once more as a torch.nn.Module so that torch.export can capture it and Inductor compile
it ahead of time into a .pt2 package, which the lesson loads and runs from C++
(common/harness/aoti.h). The weights are inputs, passed in by the C++ run from the lesson's own
module: the package computes on the very weights eager uses. Batch, sequence, model and hidden
widths are dynamic, so one package serves every shape. Inductor fuses gelu and mul into one loop
(`cpp_fused_..._gelu_mul_...` in the trace); the three products stay library calls.
Compiled by scripts/aoti_compile.py (a build step; see the lesson's README).
"""
import torch
import torch.nn.functional as F


class GeGLU(torch.nn.Module):
    def forward(self, x, w_gate, w_up, w_down):
        return F.linear(F.gelu(F.linear(x, w_gate), approximate="tanh") * F.linear(x, w_up), w_down)


# The package's inputs, in the order the C++ variant passes them (the weights by their names in
# the lesson's module).
INPUTS = ["x", "gate.weight", "up.weight", "down.weight"]


def example(flags, dtype, device):
    """(module, example inputs at a small shape, dynamic dims) for torch.export."""
    b, s, m, h = 2, 16, 32, 64
    t = lambda *shape: torch.randn(*shape, dtype=dtype, device=device)
    B, S = torch.export.Dim("batch", min=1), torch.export.Dim("seq", min=1)
    M, H = torch.export.Dim("model", min=2), torch.export.Dim("hidden", min=2)
    return (GeGLU(), (t(b, s, m), t(h, m), t(h, m), t(m, h)),
            ({0: B, 1: S, 2: M}, {0: H, 1: M}, {0: H, 1: M}, {0: M, 1: H}))
