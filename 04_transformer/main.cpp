// 04_transformer — a transformer block: attention variants, a training step and its memory
// ===========================================================================================
//
// The question: one pre-norm transformer block — LayerNorm, causal multi-head self-attention,
// residual, LayerNorm, MLP, residual. Where does its time go, part by part? How many kernels
// does attention take when written by hand, and when LibTorch's scaled-dot-product attention
// picks (or is told) a backend? And in training, where does the memory peak come from?
// Guess first, then look.
//
//   h = x + attn(norm1(x));   y = h + mlp(norm2(h))        x, y: [batch, seq, model]
//   attn: qkv projection -> heads x [seq, head_dim] -> causal attention -> output projection
//   mlp:  Linear(model, 4 model) -> gelu(tanh) -> Linear(4 model, model)
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 04_transformer
//   build/bin/04_transformer --device cpu --size 1 --seq 256        # a quick one on a laptop
//   build/bin/04_transformer --variant naive                       # attention by hand
//   build/bin/04_transformer --variant training --size 1 --seq 256 # forward, backward, AdamW
//   build/bin/04_transformer --list
// Defaults: batch 8, sequence 1024, 16 heads of 64 (model 1024); bf16 on a GPU, fp32 on the
// CPU. Memory profiling is on: the table has memory columns and the run names its peak.
//
// Variants (the forward in a `block_fwd` range, with `norm1`, `attn`, `norm2`, `mlp` inside):
//   naive               matmul, scale, masked_fill (out of place: a hidden copy of the
//                       seq x seq scores), softmax, matmul
//   naive_inplace       the same with masked_fill_ in place: no copy
//   sdpa_math           at::scaled_dot_product_attention with only the math backend enabled
//   sdpa_flash          ... only flash attention (CPU: LibTorch's flash kernel for the CPU)
//   sdpa_mem_efficient  ... only the memory-efficient backend (GPU)
//   sdpa_cudnn          ... only cuDNN attention (GPU)
//   graph               the whole block's forward replayed from a CUDA graph (GPU)
//   compiled            torch.compile's C++ route: compiled.py's block exported and compiled
//                       ahead of time by AOTInductor into a .pt2 package per (--heads,
//                       --head-dim) (a build step), run from C++ on the same x and weights, in
//                       one `block_fwd` range (common/harness/aoti.h)
//   training            forward (`block_fwd`), backward (`block_bwd`) and AdamW
//                       (`optimizer_step`), attention by LibTorch's own choice
//   --linear module|aten applies to every variant: the block's four linear layers through
//                       nn::Linear (C++'s functional::linear: aten::matmul + aten::add_ on a
//                       3-D input) or torch::linear (aten::linear -> aten::addmm, as Python)
//   A backend LibTorch has no kernel for on this device and dtype is a skip (exit 77), with
//   LibTorch's reason.
//
// Try this (predict first, then run):
//   - naive against naive_inplace: which row leaves the table, and how much memory goes with it?
//   - --seq 512 then 1024 (naive): by how much does the peak grow? And with sdpa_flash?
//   - sdpa_math against sdpa_flash: how many operators does each run under `attn`?
//   - --variant training: which range holds the peak, forward or backward? What does AdamW add?
//   - --linear aten against the default: which rows leave the table, and what does a step save?
//   - --variant compiled: which of norm1, attn, norm2, mlp can you still find in the trace?

#include <torch/torch.h>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "harness/aoti.h"
#include "harness/lesson.h"
#include "harness/named_range.h"
#include "models/transformer_block.h"

#if PIL_LESSON_CUDA
#include "harness/cuda_graph.h"
#endif

namespace {

namespace F = torch::nn::functional;

// The block (common/models/transformer_block.h, shared with lesson 06): its attention by hand
// or through scaled-dot-product attention, each part in a named range.
using pil::models::Attention;
using pil::models::Backend;
using pil::models::backend_name;
using pil::models::Block;
using pil::models::OnlyBackend;

// The block and its optimizer live across the calls of a run: make_inputs builds them (seeded,
// in the run's dtype, on its device); the variants use them.
struct State {
  Block block{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  // For the attention-alone benchmarks: the block's q, k, v of input x (attention_source).
  torch::Tensor attention_source;
  std::array<torch::Tensor, 3> attention_qkv;
};
const auto g_state = std::make_shared<State>();

int64_t seq(const pil::Problem& p) { return p.options.flag("--seq"); }
int64_t heads(const pil::Problem& p) { return p.options.flag("--heads"); }
int64_t head_dim(const pil::Problem& p) { return p.options.flag("--head-dim"); }
int64_t model(const pil::Problem& p) { return heads(p) * head_dim(p); }
double tokens(const pil::Problem& p) { return double(p.options.size) * double(seq(p)); }

// Inputs, in order: x [batch, seq, model] and the upstream gradient g of the same shape.
pil::Tensors make_inputs(const pil::Problem& p) {
  g_state->block = Block(model(p), heads(p));
  g_state->block->aten_linear = p.options.flag("--linear") == 1;
  g_state->block->to(p.device, p.dtype);
  // eps as the dtype holds it: LibTorch's default 1e-8 is 0 in fp16 (pil::adamw_eps says why).
  g_state->optimizer = std::make_unique<torch::optim::AdamW>(
      g_state->block->parameters(), torch::optim::AdamWOptions(1e-4).eps(pil::adamw_eps(p.dtype)));
  const auto draw = torch::TensorOptions().dtype(torch::kFloat).device(p.device);
  const std::vector<int64_t> shape{p.options.size, seq(p), model(p)};
  return {torch::randn(shape, draw).to(p.dtype), torch::randn(shape, draw).to(p.dtype)};
}

pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double m = double(model(p)), t = tokens(p);
  const double scores = double(p.options.size) * double(heads(p)) * double(seq(p)) * double(seq(p));
  // weights, gradients and AdamW's two moments; activations kept for backward; the naive
  // attention's scores, their masked copy, softmax and its gradient.
  const double elements = 4 * 12 * m * m + 30 * t * m + 4 * scores;
  return {elements * double(c10::elementSize(p.dtype)), 2 * elements * sizeof(double)};
}

// --- The reference: float64, the math backend, from the block's weights as they are now ------
// The same block written with functional calls on float64 copies of the weights; attention is
// LibTorch's math backend. Returns y, dx and every parameter's gradient for upstream gradient
// g, side by side (the order of named_parameters()).
torch::Tensor reference_of(const pil::Tensors& in, bool with_backward) {
  std::map<std::string, torch::Tensor> w;
  std::vector<torch::Tensor> order;
  for (const auto& kv : g_state->block->named_parameters()) {
    torch::Tensor t = kv.value().detach().to(torch::kDouble).requires_grad_(with_backward);
    w[kv.key()] = t;
    order.push_back(t);
  }
  const torch::Tensor x = in[0].detach().to(torch::kDouble).requires_grad_(with_backward);
  const int64_t b = x.size(0), s = x.size(1), m = x.size(2), h = g_state->block->heads, d = m / h;
  auto norm = [&](const torch::Tensor& t, const std::string& name) {
    return F::layer_norm(t, F::LayerNormFuncOptions({m}).weight(w[name + ".weight"]).bias(w[name + ".bias"]));
  };
  auto linear = [&](const torch::Tensor& t, const std::string& name) {
    return F::linear(t, w[name + ".weight"], w[name + ".bias"]);
  };
  const torch::Tensor qkv = linear(norm(x, "norm1"), "qkv").view({b, s, 3, h, d}).permute({2, 0, 3, 1, 4});
  torch::Tensor o;
  {
    const OnlyBackend math(Backend::Math);
    o = at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], {}, 0.0, /*is_causal=*/true);
  }
  const torch::Tensor hid = x + linear(o.transpose(1, 2).reshape({b, s, m}), "proj");
  const torch::Tensor y = hid + linear(torch::gelu(linear(norm(hid, "norm2"), "fc1"), "tanh"), "fc2");
  if (!with_backward) return y.detach();
  y.backward(in[1].to(torch::kDouble));
  std::vector<torch::Tensor> parts{y.detach().flatten(), x.grad().flatten()};
  for (const auto& t : order) parts.push_back(t.grad().flatten());
  return torch::cat(parts);
}
torch::Tensor reference(const pil::Tensors& in) { return reference_of(in, true); }
torch::Tensor forward_reference(const pil::Tensors& in) { return reference_of(in, false); }

// What every variant but graph is checked by: one more forward and backward after profiling,
// with the variant's attention and the weights as they are: y, dx and the parameter gradients.
torch::Tensor forward_backward(const pil::Tensors& in, const Attention& how) {
  g_state->block->zero_grad();
  const torch::Tensor x = in[0].detach().requires_grad_(true);
  const torch::Tensor y = g_state->block->forward(x, how);
  y.backward(in[1]);
  std::vector<torch::Tensor> parts{y.detach().flatten(), x.grad().flatten()};
  for (const auto& t : g_state->block->parameters()) parts.push_back(t.grad().flatten());
  return torch::cat(parts);
}

// --- The variants ------------------------------------------------------------------------------
std::function<torch::Tensor(const pil::Tensors&)> forward_with(Attention how) {
  return [how](const pil::Tensors& in) {
    torch::NoGradGuard no_grad;
    pil::NamedRange range("block_fwd");
    return g_state->block->forward(in[0], how);
  };
}

// [variant-training]
torch::Tensor training_step(const pil::Tensors& in) {
  g_state->optimizer->zero_grad();
  torch::Tensor y;
  {
    pil::NamedRange range("block_fwd");
    y = g_state->block->forward(in[0], Attention{});
  }
  {
    pil::NamedRange range("block_bwd");
    y.backward(in[1]);
  }
  {
    pil::NamedRange range("optimizer_step");
    g_state->optimizer->step();
  }
  return y.detach();
}
// [variant-training]

// Empty when LibTorch has a kernel of backend `b` for this device, dtype and shape (asked the
// way the call itself asks: at::_fused_sdp_choice, with only `b` enabled); else why not.
std::function<std::string(const pil::Problem&)> unavailable_unless(Backend b) {
  return [b](const pil::Problem& p) -> std::string {
    const torch::Tensor q =
        torch::zeros({1, heads(p), seq(p), head_dim(p)}, torch::TensorOptions().dtype(p.dtype).device(p.device))
            .requires_grad_(true);
    try {
      const OnlyBackend only(b);
      (void)at::_fused_sdp_choice(q, q, q, {}, 0.0, /*is_causal=*/true);
      return {};
    } catch (const c10::Error& e) {
      std::string why = e.what_without_backtrace();
      why = why.substr(0, why.find('\n'));
      return std::string("LibTorch has no ") + backend_name(b) + " attention kernel for " +
             p.device.str() + " " + std::string(c10::toString(p.dtype)) + " here (" + why + ")";
    }
  };
}

// --- Measured beside the variants (04_transformer_bench): attention alone ---------------------
// The block's projections and MLP are the same whatever the attention, so timed over the whole
// block a faster attention shows diluted (Amdahl). These time the attention core alone —
// q, k, v in, o out — on the block's own q, k and v, made once per benchmark case.
const std::array<torch::Tensor, 3>& attention_inputs(const pil::Tensors& in) {
  std::array<torch::Tensor, 3>& qkv = g_state->attention_qkv;
  if (!g_state->attention_source.is_same(in[0])) {  // a new case: new x, new block
    torch::NoGradGuard no_grad;
    const torch::Tensor& x = in[0];
    const int64_t b = x.size(0), s = x.size(1), m = x.size(2), h = g_state->block->heads, d = m / h;
    const torch::Tensor heads_ = g_state->block->qkv(g_state->block->norm1(x))
                                     .view({b, s, 3, h, d}).permute({2, 0, 3, 1, 4});
    qkv = {heads_[0].contiguous(), heads_[1].contiguous(), heads_[2].contiguous()};
    g_state->attention_source = x;
  }
  return qkv;
}

torch::Tensor attention_alone(const pil::Tensors& in, const Attention& how) {
  torch::NoGradGuard no_grad;
  const auto& [q, k, v] = attention_inputs(in);
  pil::NamedRange range("attn");
  if (how.kind != Attention::Sdpa)
    return g_state->block->naive_attention(q, k, v, how.kind == Attention::NaiveInplace);
  const OnlyBackend only(how.backend);
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
}

// Causal attention in float64 on the same q, k and v.
torch::Tensor attention_reference(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  const auto& [q, k, v] = attention_inputs(in);
  const torch::Tensor q64 = q.to(torch::kDouble), k64 = k.to(torch::kDouble), v64 = v.to(torch::kDouble);
  torch::Tensor scores = torch::matmul(q64, k64.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  scores = scores.masked_fill(g_state->block->causal_mask(q.size(2), q.device()),
                              -std::numeric_limits<double>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v64);
}
// [variant-compiled]
// compiled.py's Block, compiled by AOTInductor for this --heads and --head-dim; its inputs are
// x and the block's own parameters, by name (compiled.py's INPUTS).
pil::Variant make_compiled_variant() {
  pil::Variant v = pil::aoti::compiled_variant(
      {"block_fwd", {"--heads", "--head-dim"}, [](const pil::Tensors& in) {
         const auto params = g_state->block->named_parameters();
         pil::Tensors args{in[0]};
         for (const char* layer : {"norm1", "qkv", "proj", "norm2", "fc1", "fc2"})
           for (const char* kind : {".weight", ".bias"}) args.push_back(params[std::string(layer) + kind]);
         return args;
       }},
      PIL_AOTI_BUILD);
  v.agrees_with = "naive";  // its forward (the package has no backward)
  return v;
}
// [variant-compiled]

// The bf16 matrix ceiling of the benchmarks: one GEMM of the MLP's first shape,
// [tokens, model] x [model, 4 model], with nothing around it.
torch::Tensor ceiling_gemm(const pil::Tensors& in) {
  const auto& fc1 = g_state->block->fc1;
  return torch::mm(in[0].view({-1, in[0].size(-1)}), fc1->weight.t());
}

std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  auto add = [&v](const char* name, const char* summary, Attention how) {
    pil::Variant x{name, summary, forward_with(how)};
    x.collect = [how](const pil::Tensors& in) { return forward_backward(in, how); };
    if (how.kind == Attention::Sdpa) x.unavailable = unavailable_unless(how.backend);
    v.push_back(std::move(x));
  };
  add("naive", "attention by hand; masked_fill out of place (a hidden copy of the scores)",
      {Attention::Naive, Backend::Default});
  add("naive_inplace", "attention by hand; masked_fill_ in place", {Attention::NaiveInplace, Backend::Default});
  add("sdpa_math", "scaled_dot_product_attention, math backend only", {Attention::Sdpa, Backend::Math});
  add("sdpa_flash", "scaled_dot_product_attention, flash backend only", {Attention::Sdpa, Backend::Flash});
  add("sdpa_mem_efficient", "scaled_dot_product_attention, memory-efficient backend only (GPU)",
      {Attention::Sdpa, Backend::MemEfficient});
  add("sdpa_cudnn", "scaled_dot_product_attention, cuDNN backend only (GPU)",
      {Attention::Sdpa, Backend::CuDNN});
#if PIL_LESSON_CUDA
  // [variant-graph]
  pil::Variant graph{"graph", "the whole block's forward replayed from a CUDA graph (GPU)",
                     pil::replayed_from_graph("block_fwd", [](const pil::Tensors& in) {
                       torch::NoGradGuard no_grad;
                       return g_state->block->forward(in[0], Attention{});
                     })};
  // [variant-graph]
  graph.needs_cuda = true;
  v.push_back(graph);
#endif
  pil::Variant training{"training", "forward, backward and an AdamW step, each in its range",
                        training_step};
  training.collect = [](const pil::Tensors& in) {
    return forward_backward(in, Attention{});
  };
  training.flops_factor = 3;  // the backward's products are twice the forward's
  v.push_back(training);
  v.push_back(make_compiled_variant());
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "04_transformer";
  l.description = "a pre-norm transformer block: attention variants, a training step, memory";
  l.default_size = 8;
  l.max_size = 4096;
  l.size_help = "Batch";
  l.flags = {{"--seq", "Sequence length", 1024, 1, 1 << 17, {}},
             {"--heads", "Attention heads", 16, 1, 256, {}},
             {"--head-dim", "Width of one head (model = heads x head-dim)", 64, 1, 1024, {}},
             {"--linear",
              "The block's linear layers: module (nn::Linear: aten::matmul, then aten::add_ for "
              "the bias) or aten (torch::linear: aten::linear, one aten::addmm, as Python's F.linear)",
              0, 0, 1, {"module", "aten"}}};
  l.profile_memory = true;
  l.make_inputs = make_inputs;
  l.row_inputs = {0, 1};  // batch elements: x's and g's
  // On the CPU one sequence (the page's shape): a default run in seconds, not minutes.
  l.default_size_cpu = 1;
  l.memory_need = memory_need;
  l.reference = reference;
  l.references = {{"graph", forward_reference}, {"compiled", forward_reference}};
  l.variants = variants();
  // Forward FLOPs: the four projections, 24·model² per token, and causal attention, whose
  // q·kᵀ and p·v need only the lower triangle: 2·seq·model per token (half of the full 4·seq·model).
  l.flops = [](const pil::Problem& p) {
    const double m = double(model(p));
    return tokens(p) * (24 * m * m + 2 * double(seq(p)) * m);
  };
  // At least: the weights read, x read and y written.
  l.bytes = [](const pil::Problem& p) {
    const double m = double(model(p));
    return (12 * m * m + 2 * tokens(p) * m) * double(c10::elementSize(p.dtype));
  };
  l.items = tokens;
  l.bench_sizes_gpu = {8};
  l.bench_sizes_cpu = {1};
  // 4 heads of 32: the shape of the compiled variant's package the build makes (one per
  // --heads/--head-dim pair; see CMakeLists.txt).
  l.bench_flags_cpu = {{"--seq", 128}, {"--heads", 4}, {"--head-dim", 32}};
  pil::Variant gemm{"ceiling_gemm", "one GEMM of the MLP's first shape", ceiling_gemm};
  gemm.flops = [](const pil::Problem& p) { return 2 * tokens(p) * 4 * double(model(p)) * double(model(p)); };
  // Attention alone: causal q·kᵀ and p·v, 2·seq·model FLOPs per token.
  auto attention_flops = [](const pil::Problem& p) { return tokens(p) * 2 * double(seq(p)) * double(model(p)); };
  // At least q, k and v read and o written.
  auto attention_bytes = [](const pil::Problem& p) {
    return 4 * tokens(p) * double(model(p)) * double(c10::elementSize(p.dtype));
  };
  pil::Variant attn_naive{"attention_naive", "the naive attention alone, on the block's q, k, v",
                          [](const pil::Tensors& in) { return attention_alone(in, {Attention::Naive, Backend::Default}); }};
  attn_naive.flops = attention_flops;
  attn_naive.bytes = attention_bytes;
  pil::Variant attn_flash{"attention_sdpa_flash", "flash attention alone, on the block's q, k, v",
                          [](const pil::Tensors& in) { return attention_alone(in, {Attention::Sdpa, Backend::Flash}); }};
  attn_flash.flops = attention_flops;
  attn_flash.bytes = attention_bytes;
  attn_flash.unavailable = unavailable_unless(Backend::Flash);
  l.ceilings = {gemm, attn_naive, attn_flash};
  l.references["attention_naive"] = attention_reference;
  l.references["attention_sdpa_flash"] = attention_reference;
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
