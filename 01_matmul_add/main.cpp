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
// Benchmark (every variant x size x fp32/bf16; GPU ones where a GPU is usable):
//   cmake --build build --target 01_matmul_add_bench
//   build/bin/01_matmul_add_bench --benchmark_out=bench.json --benchmark_out_format=json
// Open the trace: the run prints `trace: <path>`; drop that file on https://ui.perfetto.dev
// (or chrome://tracing). The table printed is the one Python's key_averages().table() shows.
//
// Variants:
//   eager               matmul, then add: aten::matmul -> aten::mm, then aten::add (two kernels
//                       on a GPU)
//   addmm               one aten::addmm: the bias is the GEMM's starting value (beta = 1)
//   compiled            torch.compile's C++ route: compiled.py's module exported and compiled
//                       ahead of time by AOTInductor into a .pt2 package (a build step), loaded
//                       and run from C++ on the same x, w, b (common/harness/aoti.h)
//   On a GPU only, beneath LibTorch (traced with the project's CUPTI tracer, not Kineto):
//   cublas_bias_kernel  a cuBLAS GEMM, then the hand-written bias kernel of kernels.cu: two
//                       kernels, as eager, each in an NVTX range
//   lt_bias             one cuBLASLt matmul, D = x·w + b with b as its C operand: one kernel and
//                       no copy of the bias (lesson 01's bias is a full matrix; the BIAS epilogue,
//                       which takes a vector, is lesson 02's)
//   And traced with LibTorch's profiler:
//   graph               the eager step captured once into a CUDA graph and replayed: one launch
//                       (cudaGraphLaunch) per step instead of several
//
// Try this (predict first, then run):
//   - --warmup-calls 0: how much longer is the first profiled step? Where does the gap sit?
//   - --variant addmm: which rows leave the table, which arrive?
//   - --size 64 vs --size 1024: how does the share of aten::mm in the CPU total change?
//   - --dtype bf16 on the CPU: faster or slower than fp32, and which error does verify report?
//   - --wait 0 --warmup 0: what does the first recorded step now include?
//   - --variant compiled: which operator does the package call for the product, and what is
//     left of the add?

#include <torch/types.h>

#include "harness/aoti.h"
#include "harness/lesson.h"
#include "harness/named_range.h"

#if PIL_LESSON_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

#include "cuda/check.h"
#include "harness/lt_matmul.h"
#include "cuda/nvtx.h"
#include "harness/cuda_graph.h"
#include "harness/cuda_types.h"
#include "kernels.h"
#endif

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

// x, w, b and y on the device (plus the eager variant's matmul result) and the float64
// reference (x, w, b, y); on the host the float64 copies verification makes.
pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double elements = double(p.options.size) * double(p.options.size);
  return {5 * elements * double(c10::elementSize(p.dtype)) + 4 * elements * sizeof(double),
          6 * elements * sizeof(double)};
}

// --- The reference: float64, from the very same inputs ----------------------------------------
// Computed where the inputs are: on a GPU a float64 product of size 8192 takes milliseconds,
// on the host minutes.
torch::Tensor reference(const pil::Tensors& in) {
  auto f64 = [](const torch::Tensor& t) { return t.to(torch::kDouble); };
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

// [variant-compiled]
// compiled.py's MatmulAdd, compiled by AOTInductor; its inputs are the lesson's x, w and b.
pil::Variant make_compiled_variant() {
  pil::Variant v = pil::aoti::compiled_variant(
      {"matmul_add", {}, [](const pil::Tensors& in) { return in; }}, PIL_AOTI_BUILD);
  v.agrees_with = "eager";
  return v;
}
// [variant-compiled]

#if PIL_LESSON_CUDA
// --- Beneath LibTorch (CUDA only) ------------------------------------------------------------
using pil::cuda_data_type;
using pil::kernel_element;

// y = x·w for n × n matrices with one cuBLAS GEMM (fp32 accumulation). Row-major y = x·w is
// column-major yᵀ = wᵀ·xᵀ, so w goes first.
torch::Tensor cublas_gemm(const torch::Tensor& x, const torch::Tensor& w) {
  const int n = int(x.size(0));
  torch::Tensor y = torch::empty_like(x);
  const cudaDataType_t t = cuda_data_type(x.scalar_type());
  const float alpha = 1.0f, beta = 0.0f;
  PIL_CUBLAS_CHECK(cublasGemmEx(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_N, CUBLAS_OP_N, n,
                                n, n, &alpha, w.data_ptr(), t, n, x.data_ptr(), t, n, &beta,
                                y.data_ptr(), t, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return y;
}

// [variant-cublas]
// A cuBLAS GEMM writes y = x·w, then our kernel adds b: the two kernels eager launches, with no
// operator in between.
torch::Tensor matmul_add_cublas_bias_kernel(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &w = in[1], &b = in[2];
  pil::NamedRange range("matmul_add");
  torch::Tensor y;
  {
    pil::cuda::NvtxRange gemm("cublasGemmEx");
    y = cublas_gemm(x, w);
  }
  {
    pil::cuda::NvtxRange add("bias_add_kernel");
    lesson01::bias_add(y.data_ptr(), b.data_ptr(), y.numel(), kernel_element(x.scalar_type()),
                       at::cuda::getCurrentCUDAStream().stream());
  }
  return y;
}
// [variant-cublas]

// [variant-lt]
// One cuBLASLt matmul computes D = x·w + b: b is read as the C operand (beta = 1) and D is a new
// tensor, so no kernel copies the bias into the output first (as addmm's does).
torch::Tensor matmul_add_lt_bias(const pil::Tensors& in) {
  const torch::Tensor &x = in[0], &w = in[1], &b = in[2];
  const uint64_t n = uint64_t(x.size(0));
  pil::NamedRange range("matmul_add");
  torch::Tensor y = torch::empty_like(x);
  pil::cuda::NvtxRange matmul("cublasLtMatmul");
  // All four n × n; row-major y = x·w is column-major yᵀ = wᵀ·xᵀ, so w goes first
  // (pil::lt_matmul, common/harness/lt_matmul.h).
  pil::lt_matmul({w, false, n, n}, {x, false, n, n}, y, n, n, CUBLASLT_EPILOGUE_DEFAULT, nullptr, &b);
  return y;
}
// [variant-lt]

// The shapes cuBLASLt takes (pil::lt_shape_problem): every matrix is size × size.
std::string lt_bias_check(const pil::Problem& p) {
  const pil::LtDim n{"--size", p.options.size};
  return pil::lt_shape_problem("lt_bias", p.dtype != torch::kFloat, {n}, {n});
}

// [variant-graph]
// The eager step, captured once into a CUDA graph and then replayed: every kernel of the step in
// one cudaGraphLaunch (pil::replayed_from_graph, common/harness/cuda_graph.h).
torch::Tensor graph_body(const pil::Tensors& in) {
  return torch::add(torch::matmul(in[0], in[1]), in[2]);
}

std::function<torch::Tensor(const pil::Tensors&)> make_graph_variant() {
  return pil::replayed_from_graph("matmul_add", graph_body);
}
// [variant-graph]
#endif  // PIL_LESSON_CUDA

// --- Ceilings for the benchmarks: the plain matrix product, no bias ---------------------------
torch::Tensor plain_mm(const pil::Tensors& in) { return torch::mm(in[0], in[1]); }
#if PIL_LESSON_CUDA
torch::Tensor plain_cublas_gemm(const pil::Tensors& in) { return cublas_gemm(in[0], in[1]); }
#endif

// --- The variant table: drives --list, --variant, the tests and the docs ---------------------
std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  v.push_back({"eager", "torch::add(torch::matmul(x, w), b): two operators", matmul_add_eager});
  pil::Variant addmm{"addmm", "torch::addmm(b, x, w): one operator, bias as the GEMM's start value",
                     matmul_add_addmm};
  addmm.agrees_with = "eager";
  v.push_back(addmm);
  v.push_back(make_compiled_variant());
#if PIL_LESSON_CUDA
  pil::Variant cublas{"cublas_bias_kernel",
                      "cuBLAS GEMM + hand-written bias kernel (GPU; CUPTI tracer)",
                      matmul_add_cublas_bias_kernel};
  cublas.needs_cuda = true;
  cublas.tracer = pil::Tracer::Cupti;
  cublas.agrees_with = "eager";
  v.push_back(cublas);
  pil::Variant lt{"lt_bias", "one cuBLASLt matmul, bias as its C operand (GPU; CUPTI tracer)",
                  matmul_add_lt_bias};
  lt.needs_cuda = true;
  lt.tracer = pil::Tracer::Cupti;
  lt.check = lt_bias_check;
  lt.agrees_with = "eager";
  v.push_back(lt);
  pil::Variant graph{"graph", "the eager step replayed from a CUDA graph (GPU)",
                     make_graph_variant()};
  graph.needs_cuda = true;
  graph.agrees_with = "eager";
  v.push_back(graph);
#endif
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "01_matmul_add";
  l.description = "matmul + bias, y = x*w + b, profiled with LibTorch's profiler";
  l.default_size = 64;
  l.max_size = 65536;
  l.make_inputs = make_inputs;
  l.row_inputs = {0, 2};  // y's rows: x's rows times w, plus b's rows
  l.reference = reference;
  l.memory_need = memory_need;
  l.variants = variants();
  // One call: 2n³ for the product, n² for the bias; at least x, w and b read and y written.
  l.flops = [](const pil::Problem& p) {
    const double n = double(p.options.size);
    return 2 * n * n * n + n * n;
  };
  l.bytes = [](const pil::Problem& p) {
    const double n = double(p.options.size);
    return 4 * n * n * double(c10::elementSize(p.dtype));
  };
  pil::Variant mm{"ceiling_mm", "torch::mm(x, w): the matrix product alone (CPU ceiling)", plain_mm};
  l.ceilings.push_back(mm);
#if PIL_LESSON_CUDA
  pil::Variant gemm{"ceiling_cublas_gemm", "cublasGemmEx y = x·w alone (GPU ceiling)",
                    plain_cublas_gemm};
  gemm.needs_cuda = true;
  l.ceilings.push_back(gemm);
#endif
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

// --- main: the harness warms up, profiles, verifies against the reference and reports --------
int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
