// The pre-norm transformer block of lessons 04 and 06 (see transformer_block.h). The regions
// between `// [name]` lines are shown on lesson 04's page (scripts/docs_page.py, snippet from=).
#include "models/transformer_block.h"

#include <cmath>
#include <limits>

#include "profiler/profiler.h"

namespace pil::models {

// The lessons' named range (harness/named_range.h), here without the harness: this kit needs
// only the profiler's.
using NamedRange = profiler::record_function;

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Math: return "math";
    case Backend::Flash: return "flash";
    case Backend::MemEfficient: return "memory-efficient";
    case Backend::CuDNN: return "cuDNN";
    case Backend::Default: break;
  }
  return "default";
}

BlockImpl::BlockImpl(int64_t model, int64_t heads_)
    : heads(heads_),
      norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({model})))),
      qkv(register_module("qkv", torch::nn::Linear(model, 3 * model))),
      proj(register_module("proj", torch::nn::Linear(model, model))),
      norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({model})))),
      fc1(register_module("fc1", torch::nn::Linear(model, 4 * model))),
      fc2(register_module("fc2", torch::nn::Linear(4 * model, model))) {}

// [block-forward]
torch::Tensor BlockImpl::forward(const torch::Tensor& x, const Attention& how) {
  torch::Tensor a, m;
  {
    NamedRange range("norm1");
    a = norm1(x);
  }
  {
    NamedRange range("attn");
    a = attention(a, how);
  }
  const torch::Tensor h = x + a;
  {
    NamedRange range("norm2");
    m = norm2(h);
  }
  {
    NamedRange range("mlp");
    m = linear(fc2, torch::gelu(linear(fc1, m), "tanh"));
  }
  return h + m;
}
// [block-forward]

// x [B, S, M] -> q, k, v [B, H, S, D] -> causal attention -> [B, S, M] -> output projection
torch::Tensor BlockImpl::attention(const torch::Tensor& x, const Attention& how) {
  const int64_t b = x.size(0), s = x.size(1), model = x.size(2), d = model / heads;
  const torch::Tensor qkv_heads = linear(qkv, x).view({b, s, 3, heads, d}).permute({2, 0, 3, 1, 4});
  const torch::Tensor q = qkv_heads[0], k = qkv_heads[1], v = qkv_heads[2];
  torch::Tensor o;
  if (how.kind == Attention::Sdpa) {
    const OnlyBackend only(how.backend);
    o = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0,
                                         /*is_causal=*/true);
  } else {
    o = naive_attention(q, k, v, how.kind == Attention::NaiveInplace, how.mask);
  }
  return linear(proj, o.transpose(1, 2).reshape({b, s, model}));
}

// [linear-choice]
// C++'s nn::Linear calls torch::nn::functional::linear, which on a 3-D input runs
// aten::matmul (-> aten::mm on the input folded to 2-D) and then adds the bias in a second
// operator, aten::add_. Python's F.linear is aten::linear, which folds the input itself and
// runs one aten::addmm, the bias in the GEMM. --linear aten takes that path from C++.
torch::Tensor BlockImpl::linear(torch::nn::Linear& layer, const torch::Tensor& x) {
  return aten_linear ? torch::linear(x, layer->weight, layer->bias) : layer(x);
}
// [linear-choice]

// [naive-attention]
// Attention written out: every step a separate operator, the seq x seq scores in memory.
// Out of place, masked_fill copies the scores first (aten::clone under aten::masked_fill);
// in place it writes into them.
torch::Tensor BlockImpl::naive_attention(const torch::Tensor& q, const torch::Tensor& k,
                                         const torch::Tensor& v, bool inplace,
                                         const torch::Tensor& given_mask) {
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  const torch::Tensor& mask = given_mask.defined() ? given_mask : causal_mask(q.size(2), q.device());
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  scores = inplace ? scores.masked_fill_(mask, kMinusInf) : scores.masked_fill(mask, kMinusInf);
  return torch::matmul(torch::softmax(scores, -1), v);
}
// [naive-attention]

const torch::Tensor& BlockImpl::causal_mask(int64_t s, const c10::Device& device) {
  if (!mask.defined() || mask.size(0) != s || mask.device() != device)
    mask = torch::ones({s, s}, torch::TensorOptions().dtype(torch::kBool).device(device)).triu(1);
  return mask;
}

}  // namespace pil::models
