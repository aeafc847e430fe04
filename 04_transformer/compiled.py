"""04_transformer's workload for AOTInductor (the `compiled` variant).

The pre-norm block of main.cpp's forward — LayerNorm, causal multi-head self-attention through
scaled_dot_product_attention, residual, LayerNorm, Linear(model, 4 model), gelu(tanh),
Linear(4 model, model), residual — written once more as a torch.nn.Module so that torch.export
can capture it and Inductor compile it ahead of time into a .pt2 package, which the lesson loads
and runs from C++ (common/harness/aoti.h). The weights are inputs, passed in by the C++ run from
the lesson's own block, by name. Batch and sequence are dynamic; heads and head width fix the
weights' shapes, so a package is made per (--heads, --head-dim).
Compiled by scripts/aoti_compile.py (a build step; see the lesson's README).
"""
import torch
import torch.nn.functional as F

# The package's inputs, in the order the C++ variant passes them (the weights by their names in
# the lesson's block).
INPUTS = ["x"] + ["%s.%s" % (layer, kind) for layer in ("norm1", "qkv", "proj", "norm2", "fc1", "fc2")
                  for kind in ("weight", "bias")]


class Block(torch.nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = heads

    def forward(self, x, n1w, n1b, qkvw, qkvb, projw, projb, n2w, n2b, fc1w, fc1b, fc2w, fc2b):
        b, s, m = x.shape
        a = F.layer_norm(x, (m,), n1w, n1b)
        qkv = F.linear(a, qkvw, qkvb).view(b, s, 3, self.heads, m // self.heads).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], is_causal=True)
        h = x + F.linear(o.transpose(1, 2).reshape(b, s, m), projw, projb)
        return h + F.linear(F.gelu(F.linear(F.layer_norm(h, (m,), n2w, n2b), fc1w, fc1b), approximate="tanh"),
                            fc2w, fc2b)


def example(flags, dtype, device):
    """(module, example inputs, dynamic dims) for torch.export at --heads and --head-dim."""
    heads, head_dim = flags["--heads"], flags["--head-dim"]
    m, b, s = heads * head_dim, 2, 16
    t = lambda *shape: torch.randn(*shape, dtype=dtype, device=device)
    x = t(b, s, m)
    weights = [t(m), t(m), t(3 * m, m), t(3 * m), t(m, m), t(m), t(m), t(m), t(4 * m, m), t(4 * m),
               t(m, 4 * m), t(m)]
    B, S = torch.export.Dim("batch", min=1), torch.export.Dim("seq", min=2)
    return Block(heads), (x, *weights), ({0: B, 1: S},) + (None,) * len(weights)
