#pragma once
/// \file
/// The pre-norm transformer block lessons 04 and 06 share: LayerNorm, causal multi-head
/// self-attention (by hand or through LibTorch's scaled-dot-product attention, one backend or
/// LibTorch's choice), residual, LayerNorm, a GELU MLP, residual. Each part runs in a named range
/// (`norm1`, `attn`, `norm2`, `mlp`), so a trace shows where the block's time goes.
///
///   h = x + attn(norm1(x));   y = h + mlp(norm2(h))        x, y: [batch, seq, model]
///
/// A model kit beside the harness: it needs LibTorch and the profiler kit's named ranges
/// (pil::profiler::record_function), nothing of the harness or of a lesson.
#include <ATen/Context.h>
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <utility>

namespace pil::models {

/// Which attention kernel scaled-dot-product attention may use: LibTorch's choice, or one backend.
enum class Backend { Default, Math, Flash, MemEfficient, CuDNN };

/// "math", "flash", "memory-efficient", "cuDNN", "default": as LibTorch's messages name them.
const char* backend_name(Backend b);

// [sdpa-backend]
// Leaves only backend `b` enabled for LibTorch's scaled-dot-product attention while it lives —
// what Python's torch.nn.attention.sdpa_kernel([b]) does — and restores the settings after.
class OnlyBackend {
 public:
  explicit OnlyBackend(Backend b) : active_(b != Backend::Default) {
    at::Context& c = at::globalContext();
    saved_ = {c.userEnabledMathSDP(), c.userEnabledFlashSDP(), c.userEnabledMemEfficientSDP(),
              c.userEnabledCuDNNSDP()};
    if (!active_) return;
    c.setSDPUseMath(b == Backend::Math);
    c.setSDPUseFlash(b == Backend::Flash);
    c.setSDPUseMemEfficient(b == Backend::MemEfficient);
    c.setSDPUseCuDNN(b == Backend::CuDNN);
  }
  ~OnlyBackend() {
    if (!active_) return;
    at::Context& c = at::globalContext();
    c.setSDPUseMath(saved_[0]);
    c.setSDPUseFlash(saved_[1]);
    c.setSDPUseMemEfficient(saved_[2]);
    c.setSDPUseCuDNN(saved_[3]);
  }
  OnlyBackend(const OnlyBackend&) = delete;
  OnlyBackend& operator=(const OnlyBackend&) = delete;

 private:
  bool active_;
  std::array<bool, 4> saved_{};
};
// [sdpa-backend]

/// How the block computes its attention.
struct Attention {
  enum Kind { Naive, NaiveInplace, Sdpa };
  Attention(Kind kind_ = Sdpa, Backend backend_ = Backend::Default, torch::Tensor mask_ = {})
      : kind(kind_), backend(backend_), mask(std::move(mask_)) {}
  Kind kind;
  Backend backend;
  /// For the naive kinds: the causal mask to use ([seq, seq] bool, true above the diagonal);
  /// undefined: the block's own, made once per shape and device (causal_mask()).
  torch::Tensor mask;
};

struct BlockImpl : torch::nn::Module {
  BlockImpl(int64_t model, int64_t heads);

  /// x [B, S, M] -> [B, S, M]: the block, each part in its named range.
  torch::Tensor forward(const torch::Tensor& x, const Attention& how);
  /// x [B, S, M] -> q, k, v [B, H, S, D] -> causal attention -> [B, S, M] -> output projection.
  torch::Tensor attention(const torch::Tensor& x, const Attention& how);
  /// One of the block's linear layers, through the module or torch::linear (aten_linear).
  torch::Tensor linear(torch::nn::Linear& layer, const torch::Tensor& x);
  /// Causal attention written out on q, k, v [B, H, S, D]: the seq x seq scores in memory.
  /// `mask` undefined: causal_mask().
  torch::Tensor naive_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                bool inplace, const torch::Tensor& mask = {});
  /// True above the diagonal (the future a token must not see); made once per shape and device.
  const torch::Tensor& causal_mask(int64_t s, const c10::Device& device);

  int64_t heads;
  bool aten_linear = false;  ///< torch::linear (aten::linear -> addmm) instead of the module's forward
  torch::nn::LayerNorm norm1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm norm2;
  torch::nn::Linear fc1, fc2;
  torch::Tensor mask;
};
TORCH_MODULE(Block);

}  // namespace pil::models
