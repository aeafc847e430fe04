// 03_mlp — a GeGLU MLP: guess the kernel count, then see where a training step spends its time
// ==============================================================================================
//
// The question: the MLP of a transformer block, GeGLU style — three bias-free projections and
// `gelu(gate, tanh) * up` between them. How many operators (and kernels on a GPU) does one
// forward run, which of them dominate, and what do backward and the optimizer add?
// Guess first, then look.
//
//   mlp(x) = down(gelu(gate(x), tanh) * up(x))
//   x: [batch, seq, model]; gate, up: model -> hidden; down: hidden -> model (no bias)
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 03_mlp
//   build/bin/03_mlp --device cpu                       # batch 64 x seq 128, model 768, hidden 3072
//   build/bin/03_mlp --variant training                 # forward, backward and an AdamW step
//   build/bin/03_mlp --size 8 --seq 64 --model 256 --hidden 1024   # quicker on a laptop
// The run prints `trace: <path>`; open it in https://ui.perfetto.dev or chrome://tracing.
//
// Variants:
//   eager     the forward under NoGradGuard, in an `mlp_fwd` range: three projections (matrix
//             products) and two pointwise operators (gelu, mul)
//   training  one training step: forward in `mlp_fwd`, backward in `mlp_bwd`, AdamW in
//             `optimizer_step`
//   compiled  torch.compile's C++ route: compiled.py's GeGLU exported and compiled ahead of
//             time by AOTInductor into a .pt2 package (a build step), run from C++ on the same x
//             and weights: three products and one fused gelu·mul loop (common/harness/aoti.h)
//   On a GPU only (kernels.cu):
//   fused_geglu     the forward with gelu·mul in one kernel (a custom autograd function):
//                   3 GEMMs + 1 pointwise kernel, one round trip of the intermediate fewer
//   fused_training  the training step with the fused kernel and its fused backward
//   lt_epilogue     the gate projection as one cuBLASLt matmul with the GELU epilogue: gelu
//                   applied before the product is stored; then up, mul and down as eager
//   graph           the eager forward captured once into a CUDA graph and replayed
// Benchmarks (03_mlp_bench): the variants, and the gelu·mul step alone (eager kernels, fused
// kernel) beside a copy of the same bytes: the fused kernel's share of the copy bandwidth.
//
// Try this (predict first, then run):
//   - Count the matrix products in the eager table; then in the training one. Why seven, not nine?
//   - --hidden 1536: which rows shrink by half, and which do not?
//   - --dtype bf16 on the CPU: faster or slower than fp32?
//   - --variant training: which range takes the most time — and how much is the optimizer?
//   - --variant compiled: how many operators are left under mlp_fwd, and which loop replaced
//     gelu and mul?

#include <torch/torch.h>

#include <memory>

#include "harness/aoti.h"
#include "harness/lesson.h"
#include "harness/named_range.h"

#if PIL_LESSON_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "harness/cuda_graph.h"
#include "harness/lt_matmul.h"
#include "kernels.h"
#endif

namespace {

// --- The problem -----------------------------------------------------------------------------
struct GeGLUImpl : torch::nn::Module {
  GeGLUImpl(int64_t model, int64_t hidden)
      : gate(register_module("gate", torch::nn::Linear(torch::nn::LinearOptions(model, hidden).bias(false)))),
        up(register_module("up", torch::nn::Linear(torch::nn::LinearOptions(model, hidden).bias(false)))),
        down(register_module("down", torch::nn::Linear(torch::nn::LinearOptions(hidden, model).bias(false)))) {}

  // [mlp-forward]
  torch::Tensor forward(const torch::Tensor& x) {
    // x: [batch, seq, model] -> gate, up: [batch, seq, hidden] -> [batch, seq, model]
    return down(torch::gelu(gate(x), "tanh") * up(x));
  }
  // [mlp-forward]

  torch::nn::Linear gate, up, down;
};
TORCH_MODULE(GeGLU);

// The model and its optimizer live across the calls of a run: make_inputs builds them (seeded,
// in the run's dtype, on its device); the variants use them.
struct State {
  GeGLU mlp{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer;
  // For the kernel benchmarks: gate(x) and up(x) as [tokens, hidden], and the copy's buffers,
  // made on first use.
  torch::Tensor gate, up, copy_src, copy_dst;
};
const auto g_state = std::make_shared<State>();

int64_t seq(const pil::Problem& p) { return p.options.flag("--seq"); }
int64_t model(const pil::Problem& p) { return p.options.flag("--model"); }
int64_t hidden(const pil::Problem& p) { return p.options.flag("--hidden"); }

// Inputs, in order: x [batch, seq, model] and the upstream gradient g of the same shape.
pil::Tensors make_inputs(const pil::Problem& p) {
  g_state->mlp = GeGLU(model(p), hidden(p));
  g_state->mlp->to(p.device, p.dtype);
  // eps as the dtype holds it: LibTorch's default 1e-8 is 0 in fp16 (pil::adamw_eps says why).
  g_state->optimizer = std::make_unique<torch::optim::AdamW>(
      g_state->mlp->parameters(), torch::optim::AdamWOptions(1e-4).eps(pil::adamw_eps(p.dtype)));
  g_state->gate = g_state->up = g_state->copy_src = g_state->copy_dst = torch::Tensor();
  const auto draw = torch::TensorOptions().dtype(torch::kFloat).device(p.device);
  const std::vector<int64_t> shape{p.options.size, seq(p), model(p)};
  return {torch::randn(shape, draw).to(p.dtype), torch::randn(shape, draw).to(p.dtype)};
}

pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double tokens = double(p.options.size) * double(seq(p)), m = double(model(p)),
               h = double(hidden(p));
  const double elements = 4 * tokens * m + 6 * tokens * h + 3 * 4 * m * h;  // weights, grads, Adam
  return {elements * double(c10::elementSize(p.dtype)), 2 * elements * sizeof(double)};
}

// --- The reference: float64, from the same inputs and the model's weights as they are now -----
// The gate, up and down weights in float64 (tracking gradients for the training reference).
std::vector<torch::Tensor> weights64(bool grad) {
  std::vector<torch::Tensor> w;
  for (const auto* l : {&g_state->mlp->gate, &g_state->mlp->up, &g_state->mlp->down})
    w.push_back((*l)->weight.detach().to(torch::kDouble).requires_grad_(grad));
  return w;
}

// The MLP in float64: down(gelu(gate(x), tanh) * up(x)).
torch::Tensor forward64(const torch::Tensor& x, const std::vector<torch::Tensor>& w) {
  const torch::Tensor x64 = x.detach().to(torch::kDouble);
  return torch::matmul(torch::gelu(torch::matmul(x64, w[0].t()), "tanh") * torch::matmul(x64, w[1].t()),
                       w[2].t());
}

torch::Tensor reference(const pil::Tensors& in) { return forward64(in[0], weights64(false)); }

// Training: the output and the three weight gradients for upstream gradient g, in float64
// through autograd (checking LibTorch's backward against itself in higher precision).
torch::Tensor training_reference(const pil::Tensors& in) {
  const std::vector<torch::Tensor> w = weights64(true);
  const torch::Tensor y = forward64(in[0], w);
  y.backward(in[1].to(torch::kDouble));
  return torch::cat({y.detach().flatten(), w[0].grad().flatten(), w[1].grad().flatten(),
                     w[2].grad().flatten()});
}

#if PIL_LESSON_CUDA
// --- fused_geglu: gelu·mul in one CUDA kernel, forward and backward --------------------------
// h = gelu(gate, tanh) * up by the fused kernel (kernels.cu), on the current stream.
torch::Tensor geglu_fused(const torch::Tensor& gate, const torch::Tensor& up) {
  torch::Tensor h = torch::empty_like(gate);
  lesson03::geglu_forward(h.data_ptr(), gate.data_ptr(), up.data_ptr(), h.numel(),
                          pil::kernel_element(h.scalar_type()), at::cuda::getCurrentCUDAStream().stream());
  return h;
}

// [fused-geglu]
// A custom autograd function: forward saves gate and up (not gelu(gate), which backward
// recomputes in registers), backward returns the gradients of both in one more pass.
struct FusedGeGLU : torch::autograd::Function<FusedGeGLU> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gate_in,
                               const torch::Tensor& up_in) {
    const torch::Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
    ctx->save_for_backward({gate, up});
    return geglu_fused(gate, up);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor dh = grads[0].contiguous();
    torch::Tensor dgate = torch::empty_like(saved[0]), dup = torch::empty_like(saved[1]);
    lesson03::geglu_backward(dgate.data_ptr(), dup.data_ptr(), dh.data_ptr(), saved[0].data_ptr(),
                             saved[1].data_ptr(), dh.numel(), pil::kernel_element(dh.scalar_type()),
                             at::cuda::getCurrentCUDAStream().stream());
    return {dgate, dup};
  }
};
// [fused-geglu]

// --- lt_epilogue: the gate projection and its gelu in one cuBLASLt matmul ---------------------
// [lt-epilogue]
// cuBLASLt's GELU epilogue (the tanh form, as aten::gelu(approximate="tanh")) is applied to the
// product before it is stored: gelu(gate(x)) leaves the GEMM finished, so no gelu kernel runs
// and the un-activated gate is never written. x [tokens, model], w [hidden, model] -> [tokens,
// hidden], asked for column-major as (x·wᵀ)ᵀ = w·xᵀ.
torch::Tensor gelu_gate_lt(const torch::Tensor& x, const torch::Tensor& w) {
  const uint64_t tokens = uint64_t(x.size(0)), model = uint64_t(x.size(1)), hidden = uint64_t(w.size(0));
  torch::Tensor y = torch::empty({int64_t(tokens), int64_t(hidden)}, x.options());
  pil::lt_matmul({w, true, model, hidden}, {x, false, model, tokens}, y, hidden, tokens,
                 CUBLASLT_EPILOGUE_GELU);
  return y;
}

torch::Tensor mlp_lt_epilogue(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  pil::NamedRange range("mlp_fwd");
  GeGLU& m = g_state->mlp;
  const torch::Tensor x = in[0].reshape({-1, in[0].size(-1)});
  const torch::Tensor h = gelu_gate_lt(x, m->gate->weight) * m->up(x);
  return m->down(h).view(in[0].sizes());
}
// [lt-epilogue]

// The shapes cuBLASLt takes (pil::lt_shape_problem): x is [tokens, model], the gate's W
// [hidden, model].
std::string lt_epilogue_check(const pil::Problem& p) {
  const pil::LtDim tokens{"--size x --seq", p.options.size * seq(p)}, m{"--model", model(p)},
      h{"--hidden", hidden(p)};
  return pil::lt_shape_problem("lt_epilogue", p.dtype != torch::kFloat, {tokens, m, h}, {m, h});
}

// --- graph: the eager forward replayed from a CUDA graph --------------------------------------
// [variant-graph]
torch::Tensor forward_body(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  return g_state->mlp(in[0]);
}

std::function<torch::Tensor(const pil::Tensors&)> make_graph_variant() {
  return pil::replayed_from_graph("mlp_fwd", forward_body);
}
// [variant-graph]
#endif

// The forward, eager or with the fused gelu·mul.
torch::Tensor mlp_forward(const torch::Tensor& x, bool fused) {
  GeGLU& m = g_state->mlp;
#if PIL_LESSON_CUDA
  if (fused) return m->down(FusedGeGLU::apply(m->gate(x), m->up(x)));
#endif
  (void)fused;
  return m(x);
}

// --- The variants ----------------------------------------------------------------------------
// [variant-eager]
torch::Tensor mlp_eager(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  pil::NamedRange range("mlp_fwd");
  return g_state->mlp(in[0]);
}
// [variant-eager]

torch::Tensor mlp_fused(const pil::Tensors& in) {
  torch::NoGradGuard no_grad;
  pil::NamedRange range("mlp_fwd");
  return mlp_forward(in[0], /*fused=*/true);
}

// [variant-training]
torch::Tensor training_step(const pil::Tensors& in, bool fused) {
  g_state->optimizer->zero_grad();
  torch::Tensor y;
  {
    pil::NamedRange range("mlp_fwd");
    y = mlp_forward(in[0], fused);
  }
  {
    pil::NamedRange range("mlp_bwd");
    y.backward(in[1]);
  }
  {
    pil::NamedRange range("optimizer_step");
    g_state->optimizer->step();
  }
  return y.detach();
}
// [variant-training]

torch::Tensor mlp_training_step(const pil::Tensors& in) { return training_step(in, false); }
torch::Tensor mlp_fused_training_step(const pil::Tensors& in) { return training_step(in, true); }

// The step changed the weights, so its own output cannot be checked against them: after
// profiling, forward and backward run once more (no optimizer step) with the weights as they
// are, and y and the gradients are compared with the float64 reference of the same weights.
torch::Tensor training_result_of(const pil::Tensors& in, bool fused) {
  g_state->optimizer->zero_grad();
  const torch::Tensor y = mlp_forward(in[0], fused);
  y.backward(in[1]);
  return torch::cat({y.detach().flatten(), g_state->mlp->gate->weight.grad().flatten(),
                     g_state->mlp->up->weight.grad().flatten(),
                     g_state->mlp->down->weight.grad().flatten()});
}
torch::Tensor training_result(const pil::Tensors& in) {
  return training_result_of(in, false);
}
torch::Tensor fused_training_result(const pil::Tensors& in) {
  return training_result_of(in, true);
}

// [variant-compiled]
// compiled.py's GeGLU, compiled by AOTInductor; its inputs are x and the module's own weights.
pil::Variant make_compiled_variant() {
  pil::Variant v = pil::aoti::compiled_variant(
      {"mlp_fwd", {}, [](const pil::Tensors& in) {
         const GeGLU& m = g_state->mlp;
         return pil::Tensors{in[0], m->gate->weight, m->up->weight, m->down->weight};
       }},
      PIL_AOTI_BUILD);
  v.agrees_with = "eager";
  return v;
}
// [variant-compiled]

// --- Measured beside the variants (03_mlp_bench): the gelu·mul step alone, and a copy ---------
// The fused kernel must move gate and up in and the product out: 3 values per element of the
// [tokens, hidden] intermediate. The copy ceiling moves the same bytes (1.5 values read, 1.5
// written per element), so kernel and copy can be compared in bytes per second, same run.
void make_intermediate(const torch::Tensor& x) {
  if (g_state->gate.defined()) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor x2 = x.reshape({-1, x.size(-1)});
  g_state->gate = g_state->mlp->gate(x2);
  g_state->up = g_state->mlp->up(x2);
}

torch::Tensor geglu_eager_kernels(const pil::Tensors& in) {
  make_intermediate(in[0]);
  return torch::gelu(g_state->gate, "tanh") * g_state->up;
}

#if PIL_LESSON_CUDA
torch::Tensor geglu_fused_kernel(const pil::Tensors& in) {
  make_intermediate(in[0]);
  return geglu_fused(g_state->gate, g_state->up);
}
#endif

torch::Tensor geglu_reference(const pil::Tensors& in) {
  make_intermediate(in[0]);
  return torch::gelu(g_state->gate.to(torch::kDouble), "tanh") * g_state->up.to(torch::kDouble);
}

// The copy: the intermediate's gate and up, viewed as one buffer, copied into half as many
// values again — 1.5 values in and 1.5 out per element.
torch::Tensor copy_source(const pil::Tensors& in) {
  make_intermediate(in[0]);
  const int64_t n = g_state->gate.numel();
  return torch::cat({g_state->gate.flatten(), g_state->up.flatten().slice(0, 0, n / 2)});
}
torch::Tensor copy_ceiling(const pil::Tensors& in) {
  if (!g_state->copy_src.defined()) {
    g_state->copy_src = copy_source(in);
    g_state->copy_dst = torch::empty_like(g_state->copy_src);
  }
  return g_state->copy_dst.copy_(g_state->copy_src);
}
torch::Tensor copy_reference(const pil::Tensors& in) { return copy_source(in).to(torch::kDouble); }

double intermediate_bytes(const pil::Problem& p) {
  return 3.0 * double(p.options.size) * double(seq(p)) * double(hidden(p)) *
         double(c10::elementSize(p.dtype));
}

std::vector<pil::Variant> ceilings() {
  std::vector<pil::Variant> c;
  auto add = [&c](pil::Variant v, bool cuda) {
    v.needs_cuda = cuda;
    v.flops_factor = 0;  // measured in bytes per second
    v.bytes = intermediate_bytes;
    c.push_back(std::move(v));
  };
  add({"kernel_eager_geglu", "gelu then mul on the intermediate: two kernels", geglu_eager_kernels}, false);
#if PIL_LESSON_CUDA
  add({"kernel_fused_geglu", "the fused gelu·mul kernel on the intermediate", geglu_fused_kernel}, true);
#endif
  add({"ceiling_copy", "a copy moving the bytes the fused kernel must move", copy_ceiling}, false);
  return c;
}

std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  v.push_back({"eager", "forward: 3 projections, gelu and mul", mlp_eager});
  pil::Variant training{"training", "forward, backward and an AdamW step, each in its range",
                        mlp_training_step};
  training.collect = training_result;
  // The forward's 3 products and the backward's 4 (the weights' 3 gradients and the hidden
  // activation's; x needs none, so not the 2 more dx would take): 7 of the forward's 3.
  training.flops_factor = 7.0 / 3.0;
  v.push_back(training);
  v.push_back(make_compiled_variant());
#if PIL_LESSON_CUDA
  pil::Variant fused{"fused_geglu", "forward with gelu·mul fused in one CUDA kernel (GPU)",
                     mlp_fused};
  fused.needs_cuda = true;
  fused.agrees_with = "eager";
  v.push_back(fused);
  pil::Variant fused_training{"fused_training",
                              "training step with the fused kernel and its backward (GPU)",
                              mlp_fused_training_step};
  fused_training.needs_cuda = true;
  fused_training.collect = fused_training_result;
  fused_training.flops_factor = 7.0 / 3.0;  // as training's
  fused_training.agrees_with = "training";
  v.push_back(fused_training);
  pil::Variant lt{"lt_epilogue", "forward with gelu in the gate GEMM's cuBLASLt epilogue (GPU)",
                  mlp_lt_epilogue};
  lt.needs_cuda = true;
  lt.check = lt_epilogue_check;
  lt.agrees_with = "eager";
  v.push_back(lt);
  pil::Variant graph{"graph", "the eager forward replayed from a CUDA graph (GPU)",
                     make_graph_variant()};
  graph.needs_cuda = true;
  graph.agrees_with = "eager";
  v.push_back(graph);
#endif
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "03_mlp";
  l.description = "a GeGLU MLP (gate, up, down; gelu(gate, tanh) * up), forward and training";
  l.default_size = 64;
  l.max_size = 65536;
  l.size_help = "Batch";
  l.flags = {{"--seq", "Sequence length", 128, 1, 1 << 20, {}},
             {"--model", "Model width (features in and out)", 768, 1, 1 << 16, {}},
             {"--hidden", "Hidden width of gate and up", 3072, 1, 1 << 18, {}}};
  l.make_inputs = make_inputs;
  l.row_inputs = {0, 1};  // batch elements: x's and g's
  l.memory_need = memory_need;
  l.reference = reference;
  l.references = {{"training", training_reference},
                  {"fused_training", training_reference},
                  {"kernel_eager_geglu", geglu_reference},
                  {"kernel_fused_geglu", geglu_reference},
                  {"ceiling_copy", copy_reference}};
  l.variants = variants();
  l.bench_sizes_gpu = {64};
  l.bench_sizes_cpu = {1};
  l.ceilings = ceilings();
  // One forward: three products of tokens x model x hidden, 2 FLOP each.
  l.flops = [](const pil::Problem& p) {
    return 3 * 2.0 * double(p.options.size) * double(seq(p)) * double(model(p)) * double(hidden(p));
  };
  l.bytes = [](const pil::Problem& p) {
    const double tokens = double(p.options.size) * double(seq(p));
    return (2 * tokens * double(model(p)) + 3 * double(model(p)) * double(hidden(p)) +
            4 * tokens * double(hidden(p))) * double(c10::elementSize(p.dtype));
  };
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
