// 01_matmul_add — matmul + bias: reading your first trace
// =========================================================
//
// The question: `y = x·w + b` is one line of code. What does the profiler see when it runs —
// how many operators, how many kernels, where does the time go, and why is the first step slow?
// Guess first, then look.
//
//   fn(x, w, b) = torch::add(torch::matmul(x, w), b)     x, w, b: [size, size]
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 01_matmul_add
//   build/bin/01_matmul_add --device cpu --size 512 --dtype fp32
//   build/bin/01_matmul_add --variant addmm            # one fused operator instead of two
//   build/bin/01_matmul_add --list                     # the variants
// Open the trace: the run prints `trace: <path>`; drop that file on https://ui.perfetto.dev
// (or chrome://tracing). The table printed is the one Python's key_averages().table() shows.
//
// Variants:
//   eager  matmul, then add: aten::matmul -> aten::mm, then aten::add (two kernels on a GPU)
//   addmm  one aten::addmm: the bias is the GEMM's starting value (beta = 1)
//
// Try this (predict first, then run):
//   - --warmup-calls 0: how much longer is the first profiled step? Where does the gap sit?
//   - --variant addmm: which rows leave the table, which arrive?
//   - --size 64 vs --size 1024: how does the share of aten::mm in the CPU total change?
//   - --dtype bf16 on the CPU: faster or slower than fp32, and which error does verify report?
//   - --wait 0 --warmup 0: what does the first recorded step now include?

#include <torch/types.h>

#include "harness/lesson.h"
#include "harness/named_range.h"

namespace {

// --- The problem -----------------------------------------------------------------------------
// Inputs, in order: x [n, n], w [n, n], b [n, n]; random normal values drawn in fp32 and
// rounded to the run's dtype, so every dtype sees the same numbers up to rounding.
pil::Tensors make_inputs(const pil::Problem& p) {
  const int64_t n = p.options.size;
  const auto draw = torch::TensorOptions().dtype(torch::kFloat).device(p.device);
  pil::Tensors in;
  for (int i = 0; i < 3; ++i) in.push_back(torch::randn({n, n}, draw).to(p.dtype));
  return in;
}

// x, w, b and y on the device (plus the eager variant's matmul result); on the host the float64
// reference (x, w, b, y) and the copies verification makes.
pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double elements = double(p.options.size) * double(p.options.size);
  return {5 * elements * double(c10::elementSize(p.dtype)), 10 * elements * sizeof(double)};
}

// --- The reference: float64 on the CPU, from the very same inputs ----------------------------
torch::Tensor reference(const pil::Tensors& in) {
  auto f64 = [](const torch::Tensor& t) { return t.to(torch::kCPU, torch::kDouble); };
  return torch::add(torch::matmul(f64(in[0]), f64(in[1])), f64(in[2]));
}

// --- The variants ----------------------------------------------------------------------------
// [variant-eager]
// Two operators: aten::matmul (which dispatches to aten::mm for 2-D inputs) and aten::add.
torch::Tensor matmul_add_eager(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &w = in[1], &b = in[2];
  pil::NamedRange range("matmul_add");
  return torch::add(torch::matmul(x, w), b);
}
// [variant-eager]

// [variant-addmm]
// One operator: aten::addmm computes b + x·w, the bias being the GEMM's starting value.
torch::Tensor matmul_add_addmm(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &w = in[1], &b = in[2];
  pil::NamedRange range("matmul_add");
  return torch::addmm(b, x, w);
}
// [variant-addmm]

// --- The variant table: drives --list, --variant, the tests and the docs ---------------------
const pil::Lesson kLesson{
    "01_matmul_add",
    "matmul + bias, y = x*w + b, profiled with LibTorch's profiler",
    /*default_size=*/64,
    /*max_size=*/65536,
    make_inputs,
    reference,
    memory_need,
    {
        {"eager", "torch::add(torch::matmul(x, w), b): two operators", matmul_add_eager},
        {"addmm", "torch::addmm(b, x, w): one operator, bias as the GEMM's start value",
         matmul_add_addmm},
    },
};

}  // namespace

// --- main: the harness warms up, profiles, verifies against the reference and reports --------
int main(int argc, char** argv) { return pil::run_lesson(kLesson, argc, argv); }
