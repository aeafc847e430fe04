// Roofline rows of a hand-made trace (roofline_traces.h works out every figure): which calls
// count and where, the time each is measured over, the peak, bound and share, and the
// evidence line another report cites.
#include "trace/roofline.h"
#include "trace/roofline_format.h"
#include "trace/trace_builder.h"

#include <gtest/gtest.h>

#include "trace/parse.h"
#include "trace/roofline_traces.h"

namespace pil::trace {
namespace {

Trace read(const std::string& text, bool shapes = true) {
  ParseOptions o;
  o.read_shapes = shapes;
  return parse_trace_text(text, "roofline.json", o);
}

const RooflineRow* row(const RooflineReport& r, std::string_view name, std::string_view dims = "") {
  for (const RooflineRow& x : r.rows)
    if (x.name == name && (dims.empty() || x.input_dims == dims)) return &x;
  return nullptr;
}

TEST(TraceRoofline, NoRecordedShapesNoRows) {
  const Trace t = read(test::roofline_trace(), /*shapes=*/false);
  EXPECT_FALSE(has_recorded_inputs(t));
  EXPECT_TRUE(roofline_report(TraceIndex(t)).rows.empty());
  EXPECT_TRUE(has_recorded_inputs(read(test::roofline_trace())));
}

// Two rows whose name, dims and types read alike differ in an input's value: SDPA's is_causal
// (half the scores, half the FLOPs). Each shows its values as "Concrete Inputs" writes them (a
// Python trace's two rows printed the same, 2.13M and 4.19M FLOPs).
TEST(TraceRoofline, RowsThatReadAlikeShowTheValuesTheyDifferIn) {
  test::TraceBuilder b;
  const std::string dims = "[[4, 4, 64, 16], [4, 4, 64, 16], [4, 4, 64, 16], [], [], [], []]";
  const std::string types = R"(["float", "float", "float", "Scalar", "Scalar", "", ""])";
  b.op_with_inputs("aten::_scaled_dot_product_flash_attention_for_cpu", 0, 10, dims, types,
                   R"(["", "", "", "0.", "True", "", ""])");
  b.op_with_inputs("aten::_scaled_dot_product_flash_attention_for_cpu", 20, 10, dims, types,
                   R"(["", "", "", "0.", "False", "", ""])");
  b.op_with_inputs("aten::mm", 40, 10, "[[8, 8], [8, 8]]", R"(["float", "float"])", R"(["", ""])");
  ParseOptions o;
  o.read_shapes = true;
  o.read_concrete = true;
  const Trace t = parse_trace_text(b.str(), "sdpa.json", o);
  const RooflineReport r = roofline_report(TraceIndex(t));
  const std::string text = format_roofline(r, RooflineOptions{}, 20);
  EXPECT_NE(text.find("float, float, float, Scalar, Scalar, '', '' ['', '', '', 0., True, '', '']"), std::string::npos) << text;
  EXPECT_NE(text.find("float, float, float, Scalar, Scalar, '', '' ['', '', '', 0., False, '', '']"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mm [[8, 8], [8, 8]] float, float\n"), std::string::npos) << "a row alone: no values\n" << text;
}

TEST(TraceRoofline, OnAnH100PcieGpu) {
  const Trace t = read(test::roofline_trace("NVIDIA H100 PCIe", 114));
  const TraceIndex index(t);
  const RooflineReport r = roofline_report(index);
  EXPECT_EQ(r.calls_not_understood, 1);  // aten::mm [3, 4] x [5, 6]
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_NE(r.devices[0].find("H100 PCIe 80GB"), std::string::npos) << r.devices[0];

  // addmm, bf16: its kernel (500 us) and the bias copy its copy_ launched (1 us).
  const RooflineRow* addmm = row(r, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->counted, Counted::Yes);
  EXPECT_TRUE(addmm->on_gpu);
  EXPECT_EQ(addmm->device, 0);
  EXPECT_EQ(addmm->calls, 1);
  EXPECT_EQ(addmm->time_ns, 501000);
  EXPECT_EQ(addmm->gpu_work_items, 2);
  EXPECT_EQ(addmm->flops, 137438953472.0);
  EXPECT_EQ(addmm->bytes, 100671488.0);
  EXPECT_NEAR(addmm->gflops(), 274329.25, 0.01);
  EXPECT_EQ(addmm->peak.gflops, 756500);
  EXPECT_EQ(addmm->peak.gbps, 2000);
  EXPECT_EQ(addmm->peak.kind, "bf16 tensor");
  EXPECT_EQ(addmm->peak.source, "H100 PCIe 80GB");
  EXPECT_NEAR(addmm->peak.ridge(), 378.25, 1e-9);
  EXPECT_EQ(addmm->bound, Bound::Compute);
  EXPECT_NEAR(addmm->share, 274329.25 / 756500, 1e-6);
  EXPECT_EQ(addmm->tensors, "[4096]x[4096, 4096]x[4096, 4096]");

  // Counted elsewhere: linear in addmm (its callee), the copy_ in addmm (its caller).
  const RooflineRow* linear = row(r, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->counted, Counted::InCallees);
  EXPECT_EQ(linear->counted_in, std::vector<std::string>{"aten::addmm"});
  EXPECT_EQ(linear->flops, 137438953472.0);  // its own formula, shown, not added again
  EXPECT_EQ(linear->share, -1);
  const RooflineRow* copy = row(r, "aten::copy_");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->counted, Counted::InCaller);
  EXPECT_EQ(copy->counted_in, std::vector<std::string>{"aten::addmm"});
  EXPECT_EQ(row(r, "aten::t"), nullptr);  // no formula: no row

  // add, float: memory bound, held against the bandwidth.
  const RooflineRow* add = row(r, "aten::add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->time_ns, 200000);
  EXPECT_EQ(add->bytes, 201326592.0);
  EXPECT_EQ(add->peak.kind, "fp32");
  EXPECT_EQ(add->bound, Bound::Memory);
  EXPECT_EQ(add->share_of, Bound::Memory);
  EXPECT_NEAR(add->gbps(), 1006.63296, 1e-5);
  EXPECT_NEAR(add->share, 1006.63296 / 2000, 1e-8);

  // An fp32 GEMM faster than the fp32 vector peak: TF32 tensor cores.
  const RooflineRow* mm = row(r, "aten::mm", "[[8192, 8192], [8192, 8192]]");
  ASSERT_NE(mm, nullptr);
  EXPECT_NEAR(mm->gflops(), 109951.1627776, 1e-6);
  EXPECT_EQ(mm->peak.kind, "tf32 tensor");
  EXPECT_EQ(mm->peak.gflops, 378000);
  EXPECT_NE(mm->note.find("TF32"), std::string::npos);
  EXPECT_NEAR(mm->share, 109951.1627776 / 378000, 1e-9);

  // The mm that launched nothing ran on the CPU: its CPU time, and no CPU peak was given.
  const RooflineRow* cpu = row(r, "aten::mm", "[[1024, 1024], [1024, 1024]]");
  ASSERT_NE(cpu, nullptr);
  EXPECT_FALSE(cpu->on_gpu);
  EXPECT_EQ(cpu->time_ns, 100000000);
  EXPECT_NEAR(cpu->gflops(), 21.47483648, 1e-9);
  EXPECT_EQ(cpu->share, -1);
  EXPECT_EQ(cpu->bound, Bound::Unknown);

  // Counted rows first, most time first.
  EXPECT_EQ(r.rows[0].name, "aten::mm");
  EXPECT_EQ(r.rows[0].input_dims, "[[1024, 1024], [1024, 1024]]");
  EXPECT_EQ(r.rows[1].input_dims, "[[8192, 8192], [8192, 8192]]");
  EXPECT_EQ(r.rows[2].name, "aten::addmm");
  EXPECT_EQ(r.rows[3].name, "aten::add");
  EXPECT_EQ(r.rows.size(), 6u);
}

// An operator whose GPU work is only copies between host and GPU is bounded by the link (PCIe,
// NVLink), not by the GPU's memory: not held against its peaks (a real T4 trace's 4 MB pageable
// copies read "memory 3.8% of 300 GB/s"). Here aten::add's kernel becomes such a copy; addmm's
// device-to-device bias copy beside its kernel leaves it judged as before.
TEST(TraceRoofline, ACopyBetweenHostAndGpuIsNotHeldAgainstTheGpusPeaks) {
  std::string text = test::roofline_trace();
  const std::string kernel = R"("cat": "kernel", "name": "vectorized_elementwise_kernel")";
  text.replace(text.find(kernel), kernel.size(), R"x("cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)")x");
  const Trace t = read(text);
  const RooflineReport r = roofline_report(TraceIndex(t));
  const RooflineRow* add = row(r, "aten::add");
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->on_gpu);
  EXPECT_EQ(add->link_copies, 1);
  EXPECT_EQ(add->share, -1);
  EXPECT_EQ(add->bound, Bound::Unknown);
  EXPECT_NE(add->note.find("a copy between host and GPU (or between GPUs): bounded by the link"), std::string::npos)
      << add->note;
  const RooflineRow* addmm = row(r, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->link_copies, 0);
  EXPECT_EQ(addmm->bound, Bound::Compute);
}

TEST(TraceRoofline, TheSameTraceOnAnH100SxmIsHeldAgainstItsOwnPeaks) {
  const RooflineReport pcie = roofline_report(TraceIndex(read(test::roofline_trace("NVIDIA H100 PCIe", 114))));
  const Trace sxm_trace = read(test::roofline_trace("NVIDIA H100 80GB HBM3", 132));
  const RooflineReport sxm = roofline_report(TraceIndex(sxm_trace));
  const RooflineRow *a = row(pcie, "aten::addmm"), *b = row(sxm, "aten::addmm");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(b->peak.source, "H100 SXM5 80GB");
  EXPECT_NEAR(b->share, 274329.25 / 989500, 1e-6);
  EXPECT_GT(a->share, b->share);
  EXPECT_NEAR(row(sxm, "aten::add")->share, 1006.63296 / 3350, 1e-8);
  EXPECT_NEAR(row(sxm, "aten::mm", "[[8192, 8192], [8192, 8192]]")->share, 109951.1627776 / 494500, 1e-9);
}

TEST(TraceRoofline, NoPeakWithoutAMatchOrAFigureGiven) {
  // A GPU the table lacks: rates, no share; the device line says so.
  const Trace t = read(test::roofline_trace("NVIDIA Imaginary GPU", 100, 50000000000));
  const TraceIndex index(t);
  RooflineReport r = roofline_report(index);
  ASSERT_EQ(r.devices.size(), 1u);
  EXPECT_NE(r.devices[0].find("not in the table"), std::string::npos) << r.devices[0];
  const RooflineRow* addmm = row(r, "aten::addmm");
  EXPECT_EQ(addmm->share, -1);
  EXPECT_EQ(addmm->peak.gflops, 0);
  EXPECT_NE(roofline_evidence(*addmm).find("no peak to compare with"), std::string::npos);
  // A measured ceiling given: the share is over it.
  RooflineOptions o;
  o.gpu_peak_tflops = 500;
  o.gpu_peak_gbps = 2500;
  o.cpu_peak_gflops = 86;
  r = roofline_report(index, o);
  addmm = row(r, "aten::addmm");
  EXPECT_EQ(addmm->peak.source, "--gpu-peak-tflops");
  EXPECT_NEAR(addmm->share, 137438953472.0 / 501000 / 500000, 1e-12);
  EXPECT_EQ(addmm->bound, Bound::Compute);
  EXPECT_NEAR(row(r, "aten::add")->share, 1006.63296 / 2500, 1e-8);
  // The CPU with a compute peak only: its share of that peak, the bound unknown.
  const RooflineRow* cpu = row(r, "aten::mm", "[[1024, 1024], [1024, 1024]]");
  EXPECT_NEAR(cpu->share, 21.47483648 / 86, 1e-9);
  EXPECT_EQ(cpu->share_of, Bound::Compute);
  EXPECT_EQ(cpu->bound, Bound::Unknown);
  EXPECT_TRUE(cpu->note.empty());
  // With its bandwidth too: intensity 170.7 against a ridge of 86 / 20: compute.
  o.cpu_peak_gbps = 20;
  cpu = row(roofline_report(index, o), "aten::mm", "[[1024, 1024], [1024, 1024]]");
  EXPECT_EQ(cpu->bound, Bound::Compute);
  // A peak below what the run reached is said to be wrong, not hidden.
  o.cpu_peak_gflops = 10;
  const RooflineReport low = roofline_report(index, o);
  cpu = row(low, "aten::mm", "[[1024, 1024], [1024, 1024]]");
  EXPECT_NEAR(cpu->share, 2.147483648, 1e-9);
  EXPECT_NE(cpu->note.find("above the peak given"), std::string::npos) << cpu->note;
}

TEST(TraceRoofline, EvidenceLines) {
  const Trace t = read(test::roofline_trace("NVIDIA H100 PCIe", 114));
  RooflineOptions o;
  o.cpu_peak_gflops = 86;
  const RooflineReport r = roofline_report(TraceIndex(t), o);
  EXPECT_EQ(roofline_evidence(*row(r, "aten::mm", "[[1024, 1024], [1024, 1024]]")),
            "aten::mm [1024, 1024]x[1024, 1024] float: 25% of the CPU's peak (21.5 of 86 GFLOP/s)");
  EXPECT_EQ(roofline_evidence(*row(r, "aten::addmm")),
            "aten::addmm [4096]x[4096, 4096]x[4096, 4096] c10::BFloat16: 36% of the H100 PCIe 80GB's bf16 "
            "tensor peak (274 of 756 TFLOP/s)");
  EXPECT_EQ(roofline_evidence(*row(r, "aten::add")),
            "aten::add [4096, 4096], [4096, 4096] float: 50% of the H100 PCIe 80GB's memory bandwidth "
            "(1007 of 2000 GB/s)");
  EXPECT_EQ(roofline_evidence(*row(r, "aten::linear")),
            "aten::linear [4096, 4096]x[4096, 4096]x[4096] c10::BFloat16: counted in aten::addmm");
}

TEST(TraceRoofline, APythonTraceOnTheCpu) {
  // torch.profiler's trace (make_python_trace.py): y = x @ w + b, 16 x 16, three steps. matmul is
  // counted in mm: 2 * 16^3 FLOPs per call, measured over mm's own CPU time.
  ParseOptions o;
  o.read_shapes = true;
  const Trace t = parse_trace_file(std::string(PIL_TRACE_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json", o);
  const RooflineReport r = roofline_report(TraceIndex(t));
  const RooflineRow* mm = row(r, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->calls, 3);
  EXPECT_EQ(mm->flops, 8192);
  EXPECT_EQ(mm->bytes, 3 * 256 * 4);
  int64_t cpu_ns = 0;
  for (const Event& e : t.events)
    if (e.name == "aten::mm") cpu_ns += e.dur_ns;
  EXPECT_EQ(mm->time_ns, cpu_ns);
  EXPECT_EQ(row(r, "aten::matmul")->counted, Counted::InCallees);
  EXPECT_EQ(row(r, "aten::add")->flops, 256);
}

}  // namespace
}  // namespace pil::trace
