// 02_linear — one torch::nn::Linear: where did the bias go, and what does backward run?
// =====================================================================================
//
// The question: y = x·Wᵀ + b through torch::nn::Linear. Lesson 01 needed two operators (or
// addmm) for matmul + bias. How many does nn::Linear need, and which kernels? And when the
// layer trains, what does the backward pass add to the trace?
// Guess first, then look.
//
//   linear(x) = x·Wᵀ + b      x: [batch, in], W: [out, in], b: [out], y: [batch, out]
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 02_linear
//   build/bin/02_linear --device cpu                         # batch 1024, in 32, out 64
//   build/bin/02_linear --variant training                   # forward and backward
//   build/bin/02_linear --size 4096 --in-features 1024 --out-features 1024 --bias off
// The run prints `trace: <path>`; open it in https://ui.perfetto.dev or chrome://tracing.
//
// Variants:
//   inference  forward only, under NoGradGuard, in a `linear_fwd` range: aten::t (a view, no
//              kernel), then aten::addmm with the bias in the GEMM. (C++'s F::linear picks addmm
//              itself, so there is no aten::linear row, unlike in Python's trace.)
//   training   forward in `linear_fwd`, then backward from a fixed upstream gradient in
//              `linear_bwd`: AddmmBackward0's two matrix products and the bias-gradient sum
//   On a GPU only, the layer in cuBLASLt (a custom autograd function):
//   lt_linear    forward: one cublasLtMatmul with the BIAS epilogue, matching nn::Linear
//   lt_training  forward and backward: dx and dW as two cublasLtMatmul, db from the BGRADB
//                epilogue of the dW product (no separate reduction)
//
// Try this (predict first, then run):
//   - --bias off: which operators replace aten::addmm?
//   - --variant training: how many aten::mm calls does the backward make, and why not three?
//   - --dtype bf16 on the CPU: which rows of the table change?
//   - --in-features 1024 --out-features 1024: where does the time move?
//   - on a GPU, --dtype fp32 --tf32 on against --tf32 off: which kernel names change?

#include <ATen/Context.h>
#include <torch/torch.h>

#include <memory>

#include "harness/lesson.h"
#include "harness/named_range.h"

#if PIL_LESSON_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "harness/lt_matmul.h"
#endif

namespace {

// --- The problem -----------------------------------------------------------------------------
// The layer lives across calls of a run: make_inputs builds it (seeded, in the run's dtype and
// on its device) and the variants call it.
struct Layer {
  torch::nn::Linear linear{nullptr};
};
const auto g_layer = std::make_shared<Layer>();

int64_t in_features(const pil::Problem& p) { return p.options.flag("--in-features"); }
int64_t out_features(const pil::Problem& p) { return p.options.flag("--out-features"); }
bool with_bias(const pil::Problem& p) { return p.options.flag("--bias") == 0; }
bool tf32(const pil::Problem& p) { return p.options.flag("--tf32") == 0; }

// Inputs, in order: x [batch, in] (requires grad, so backward computes dx too), the upstream
// gradient g [batch, out], then the layer's W [out, in] and, with a bias, b [out].
pil::Tensors make_inputs(const pil::Problem& p) {
  const int64_t batch = p.options.size, in = in_features(p), out = out_features(p);
  // [tf32]
  // TF32: fp32 matrix products on CUDA's tensor cores with inputs rounded to 10 mantissa bits
  // (LibTorch's default is off: "highest" precision). The kernels chosen, and their names,
  // change with it; the CPU's products are not affected.
  at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL,
                                          tf32(p) ? at::Float32Precision::TF32 : at::Float32Precision::IEEE);
  // [tf32]
  g_layer->linear = torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(with_bias(p)));
  g_layer->linear->to(p.device, p.dtype);
  const auto draw = torch::TensorOptions().dtype(torch::kFloat).device(p.device);
  torch::Tensor x = torch::randn({batch, in}, draw).to(p.dtype).requires_grad_(true);
  torch::Tensor g = torch::randn({batch, out}, draw).to(p.dtype);
  pil::Tensors t{x, g, g_layer->linear->weight};
  if (with_bias(p)) t.push_back(g_layer->linear->bias);
  return t;
}

pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double batch = double(p.options.size), in = double(in_features(p)),
               out = double(out_features(p));
  const double elements = 2 * batch * in + 3 * batch * out + 2 * in * out + 2 * out;
  return {elements * double(c10::elementSize(p.dtype)), 3 * elements * sizeof(double)};
}

// --- The references: float64, from the very same inputs --------------------------------------
// Forward: y = x·Wᵀ + b. Backward from g: dx = g·W, dW = gᵀ·x, db = Σ_batch g.
torch::Tensor forward64(const pil::Tensors& in) {
  const torch::Tensor x = in[0].detach().to(torch::kDouble), w = in[2].detach().to(torch::kDouble);
  torch::Tensor y = torch::matmul(x, w.t());
  if (in.size() > 3) y = y + in[3].detach().to(torch::kDouble);
  return y;
}

torch::Tensor training64(const pil::Tensors& in) {
  const torch::Tensor x = in[0].detach().to(torch::kDouble), g = in[1].to(torch::kDouble),
                      w = in[2].detach().to(torch::kDouble);
  std::vector<torch::Tensor> parts{forward64(in).flatten(), torch::matmul(g, w).flatten(),
                                   torch::matmul(g.t(), x).flatten()};
  if (in.size() > 3) parts.push_back(g.sum(0));
  return torch::cat(parts);
}

// --- The variants ----------------------------------------------------------------------------
// [variant-inference]
torch::Tensor linear_inference(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  pil::NamedRange range("linear_fwd");
  return g_layer->linear(in[0]);
}
// [variant-inference]

// [variant-training]
// Forward, then backward from the upstream gradient g. Returns y; the gradients stay on x and
// on the layer's parameters.
torch::Tensor linear_training(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &g = in[1];
  x.mutable_grad() = torch::Tensor();
  g_layer->linear->zero_grad();
  torch::Tensor y;
  {
    pil::NamedRange range("linear_fwd");
    y = g_layer->linear(x);
  }
  {
    pil::NamedRange range("linear_bwd");
    y.backward(g);
  }
  return y.detach();
}
// [variant-training]

// y, dx, dW and db side by side, so one comparison checks them all: the step run once more
// after profiling, so the result stands on its own (and can be compared with another variant's).
torch::Tensor training_result_of(const pil::Tensors& in,
                                 torch::Tensor (*step)(const pil::Tensors&)) {
  const torch::Tensor y = step(in);
  std::vector<torch::Tensor> parts{y.flatten(), in[0].grad().flatten(),
                                   g_layer->linear->weight.grad().flatten()};
  if (g_layer->linear->options.bias()) parts.push_back(g_layer->linear->bias.grad());
  return torch::cat(parts);
}

#if PIL_LESSON_CUDA
// --- lt_linear: the layer in cuBLASLt, forward and backward (GPU only) ------------------------
// The layer as cuBLASLt matmuls (pil::lt_matmul, common/harness/lt_matmul.h): y = x·Wᵀ + b is
// asked for column-major as yᵀ = W·xᵀ + b, where b has one value per row of yᵀ — the shape the
// BIAS epilogue adds.
// [variant-lt-linear]
struct LtLinear : torch::autograd::Function<LtLinear> {
  // x [B, I], w [O, I], b [O] (or undefined) -> y [B, O]
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& w, const torch::Tensor& b) {
    const uint64_t batch = uint64_t(x.size(0)), in = uint64_t(x.size(1)), out = uint64_t(w.size(0));
    ctx->save_for_backward({x, w});
    ctx->saved_data["bias"] = b.defined();
    torch::Tensor y = torch::empty({int64_t(batch), int64_t(out)}, x.options());
    // yᵀ [O, B] = W [O, I] · xᵀ [I, B] (+ b per row): W's buffer is column-major [I, O] -> T.
    pil::lt_matmul({w, true, in, out}, {x, false, in, batch}, y, out, batch,
                   b.defined() ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
                   b.defined() ? b.data_ptr() : nullptr);
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &w = saved[1];
    const torch::Tensor dy = grads[0].contiguous();
    const uint64_t batch = uint64_t(x.size(0)), in = uint64_t(x.size(1)), out = uint64_t(w.size(0));
    // dxᵀ [I, B] = Wᵀ [I, O] · dyᵀ [O, B]
    torch::Tensor dx = torch::empty_like(x);
    pil::lt_matmul({w, false, in, out}, {dy, false, out, batch}, dx, in, batch);
    // dWᵀ [I, O] = xᵀ [I, B] · dy [B, O]; with BGRADB the same GEMM sums dy over the batch: db.
    torch::Tensor dw = torch::empty_like(w);
    torch::Tensor db;
    const bool bias = ctx->saved_data["bias"].toBool();
    if (bias) db = torch::empty({int64_t(out)}, w.options());
    pil::lt_matmul({x, false, in, batch}, {dy, true, out, batch}, dw, in, out,
                   bias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT,
                   bias ? db.data_ptr() : nullptr);
    return {dx, dw, db};
  }
};
// [variant-lt-linear]

// The shapes cuBLASLt takes (pil::lt_shape_problem): x is [size, in], W [out, in], y [size, out].
std::string lt_check(const pil::Problem& p) {
  const pil::LtDim size{"--size", p.options.size}, in{"--in-features", in_features(p)},
      out{"--out-features", out_features(p)};
  return pil::lt_shape_problem("the cuBLASLt variants", p.dtype != torch::kFloat, {size, in, out}, {in, out});
}

torch::Tensor lt_linear_inference(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  pil::NamedRange range("linear_fwd");
  const auto& l = g_layer->linear;
  return LtLinear::apply(in[0], l->weight, l->options.bias() ? l->bias : torch::Tensor());
}

torch::Tensor lt_linear_training(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &g = in[1];
  x.mutable_grad() = torch::Tensor();
  g_layer->linear->zero_grad();
  const auto& l = g_layer->linear;
  torch::Tensor y;
  {
    pil::NamedRange range("linear_fwd");
    y = LtLinear::apply(x, l->weight, l->options.bias() ? l->bias : torch::Tensor());
  }
  {
    pil::NamedRange range("linear_bwd");
    y.backward(g);
  }
  return y.detach();
}
#endif

std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  v.push_back({"inference", "forward under NoGradGuard: nn::Linear -> aten::t -> aten::addmm", linear_inference});
  pil::Variant training{"training", "forward and backward from a fixed upstream gradient",
                        linear_training};
  training.collect = [](const pil::Tensors& in) {
    return training_result_of(in, linear_training);
  };
  training.flops_factor = 3;  // forward, and the backward's two products per forward one
  v.push_back(training);
#if PIL_LESSON_CUDA
  pil::Variant lt{"lt_linear", "cuBLASLt forward with the BIAS epilogue (GPU)", lt_linear_inference};
  lt.needs_cuda = true;
  lt.check = lt_check;
  lt.agrees_with = "inference";
  v.push_back(lt);
  pil::Variant lt_training{"lt_training",
                           "cuBLASLt forward and backward, db from the BGRADB epilogue (GPU)",
                           lt_linear_training};
  lt_training.needs_cuda = true;
  lt_training.collect = [](const pil::Tensors& in) {
    return training_result_of(in, lt_linear_training);
  };
  lt_training.agrees_with = "training";
  lt_training.check = lt_check;
  lt_training.flops_factor = 3;
  v.push_back(lt_training);
#endif
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "02_linear";
  l.description = "one torch::nn::Linear, forward and backward, profiled";
  l.default_size = 1024;
  l.max_size = int64_t(1) << 24;
  l.size_help = "Batch: rows of x";
  l.flags = {{"--in-features", "Columns of x (the layer's input features)", 32, 1, 65536, {}},
             {"--out-features", "Columns of y (the layer's output features)", 64, 1, 65536, {}},
             {"--bias", "The layer's bias term", 0, 0, 1, {"on", "off"}},
             {"--tf32", "fp32 products with TF32 on a GPU's tensor cores", 1, 0, 1, {"on", "off"}}};
  // fp32 with TF32 on a GPU: checked under TF32's tolerance, not fp32's.
  l.tolerance = [](const pil::Problem& p) {
    return p.device.is_cuda() && p.dtype == torch::kFloat && tf32(p) ? pil::tolerance_for_tf32()
                                                                      : pil::tolerance_for(p.dtype);
  };
  l.make_inputs = make_inputs;
  l.memory_need = memory_need;
  l.variants = variants();
  // Each variant checks against its own reference: the forward, or everything training returns.
  l.reference = forward64;
  l.references = {{"training", training64}, {"lt_training", training64}};
  l.flops = [](const pil::Problem& p) {
    return 2.0 * double(p.options.size) * double(in_features(p)) * double(out_features(p));
  };
  l.bytes = [](const pil::Problem& p) {
    const double b = double(p.options.size), i = double(in_features(p)), o = double(out_features(p));
    return (b * i + i * o + o + b * o) * double(c10::elementSize(p.dtype));
  };
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
