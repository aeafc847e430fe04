// pil-trace ops --roofline end to end: the table and its JSON on a Python trace and a hand-made
// GPU trace, the peaks given on the command line, the same answers on one thread or three, and a
// trace recorded without shapes refused in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "trace/roofline_traces.h"

namespace {

using pil::test::run_process;
using pil::test::TempDir;

const std::string kTool = PIL_TRACE_EXE;
const std::string kPython = std::string(PIL_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json";

nlohmann::json row_of(const nlohmann::json& j, const std::string& name) {
  for (const auto& r : j["rows"])
    if (r["name"] == name) return r;
  return nullptr;
}

TEST(PilTraceRoofline, TableOfAPythonTrace) {
  const auto r = run_process(kTool, {"ops", kPython, "--roofline"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* column : {"FLOPs", "Bytes", "FLOP/byte", "GFLOP/s", "GB/s", "% of peak", "Name, Input Dims, Input type"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column << "\n" << r.out;
  // mm [16,16] x [16,16]: 8192 FLOPs, 3072 bytes per call, 2.67 FLOP/byte.
  EXPECT_NE(r.out.find("8.19k  3.07k       2.67"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::mm [[16, 16], [16, 16]] float, float"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::matmul [[16, 16], [16, 16]] float, float (counted in aten::mm)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("CPU: no peak given"), std::string::npos) << r.out;
}

TEST(PilTraceRoofline, JsonWithACpuPeak) {
  const auto plain = run_process(kTool, {"ops", kPython, "--roofline", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto j = nlohmann::json::parse(plain.out);
  const auto mm = row_of(j, "aten::mm");
  ASSERT_FALSE(mm.is_null()) << plain.out;
  EXPECT_EQ(mm["calls"], 3);
  EXPECT_EQ(mm["flops_per_call"], 8192);
  EXPECT_EQ(mm["bytes_per_call"], 3072);
  EXPECT_EQ(mm["counted"], "yes");
  EXPECT_EQ(mm["device"], "cpu");
  EXPECT_TRUE(mm["share"].is_null());
  const double gflops = mm["achieved_gflops"];
  EXPECT_GT(gflops, 0);
  EXPECT_EQ(row_of(j, "aten::matmul")["counted_in"], nlohmann::json::array({"aten::mm"}));
  // With a peak: the share is the achieved rate over it.
  const auto peak = run_process(kTool, {"ops", kPython, "--roofline", "--json", "--cpu-peak-gflops", "0.5"});
  ASSERT_EQ(peak.exit_code, 0) << peak.err;
  const auto k = nlohmann::json::parse(peak.out);
  const auto mm2 = row_of(k, "aten::mm");
  EXPECT_DOUBLE_EQ(double(mm2["share"]), gflops / 0.5);
  EXPECT_EQ(mm2["share_of"], "compute");
  EXPECT_EQ(k["cpu_peak"]["gflops"], 0.5);
  EXPECT_NE(std::string(mm2["evidence"]).find("of the CPU's peak"), std::string::npos) << mm2["evidence"];
}

TEST(PilTraceRoofline, AGpuTraceHeldAgainstItsDevice) {
  TempDir dir;
  const std::string trace = dir.path() + "/gpu.json";
  std::ofstream(trace) << pil::test::roofline_trace("NVIDIA H100 PCIe", 114);
  const auto r = run_process(kTool, {"ops", trace, "--roofline"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU: 'NVIDIA H100 PCIe' (cc 9.0, 114 SMs, 85.0 GB) is the H100 PCIe 80GB"), std::string::npos)
      << r.out;
  // addmm: 137G FLOPs, 101M bytes, 501 us of GPU work, 274,329 GFLOP/s, 36% of 756.5 TFLOP/s bf16.
  EXPECT_NE(r.out.find("GPU 0   137G   101M       1365   501 us   274329"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compute        36%  756 TFLOP/s bf16 tensor  aten::addmm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 call(s) of operators with a formula had inputs it does not take"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(run_process(kTool, {"ops", trace, "--roofline", "--json"}).out);
  const auto add = row_of(j, "aten::add");
  EXPECT_EQ(add["device"], "cuda:0");
  EXPECT_EQ(add["bound"], "memory");
  EXPECT_EQ(add["peak"]["gbps"], 2000);
  EXPECT_EQ(add["peak"]["source"], "H100 PCIe 80GB");
  EXPECT_NEAR(double(add["share"]), 0.50331648, 1e-8);
  // A measured ceiling replaces the table's.
  const auto given = nlohmann::json::parse(
      run_process(kTool, {"ops", trace, "--roofline", "--json", "--gpu-peak-tflops", "500", "--gpu-peak-gbps", "2500"}).out);
  EXPECT_EQ(row_of(given, "aten::addmm")["peak"]["source"], "--gpu-peak-tflops");
  EXPECT_NEAR(double(row_of(given, "aten::addmm")["share"]), 137438953472.0 / 501000 / 500000, 1e-12);
}

TEST(PilTraceRoofline, OneThreadOrThreeSameAnswer) {
  const std::string lesson = std::string(PIL_FIXTURES_DIR) + "/lessons/02_linear_training_cpu.pt.trace.json";
  for (const std::string& path : {kPython, lesson}) {
    SCOPED_TRACE(path);
    const auto one = run_process(kTool, {"ops", path, "--roofline", "--json", "--threads", "1"});
    const auto three = run_process(kTool, {"ops", path, "--roofline", "--json", "--threads", "3"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(three.out, one.out);
    EXPECT_FALSE(nlohmann::json::parse(one.out)["rows"].empty());
  }
}

TEST(PilTraceRoofline, ATraceWithoutShapesIsRefusedInOneLine) {
  // Python's backward trace was recorded without record_shapes.
  const std::string path = std::string(PIL_FIXTURES_DIR) + "/python_backward_steps.pt.trace.json";
  const auto r = run_process(kTool, {"ops", path, "--roofline"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("--record-shapes on"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record_shapes=True"), std::string::npos) << r.err;
  // The same trace's operator table is as before.
  EXPECT_EQ(run_process(kTool, {"ops", path}).exit_code, 0);
}

TEST(PilTraceRoofline, PeaksNeedRooflineAndArePositive) {
  for (std::vector<std::string> args : {std::vector<std::string>{"ops", kPython, "--cpu-peak-gflops", "100"},
                                        {"ops", kPython, "--roofline", "--cpu-peak-gflops", "-1"},
                                        {"ops", kPython, "--roofline", "--gpu-peak-tflops", "zero"},
                                        {"ops", kPython, "--roofline", "--gpu-peak-tflops", "1e-300"},
                                        {"ops", kPython, "--roofline", "--cpu-peak-gbps", "1e300"},
                                        {"ops", kPython, "--roofline", "--sort", "cpu_time_total"}}) {
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << args[2];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// advise takes the same peaks: the CPU's products in the evidence of its overhead finding, the
// figures those of `ops --roofline` with the same peak; bad values refused in one line.
TEST(PilTraceRoofline, AdviseCitesTheProductsAgainstAPeakGiven) {
  const std::string path = std::string(PIL_FIXTURES_DIR) + "/lessons/04_transformer_naive_cpu.pt.trace.json";
  const auto plain = run_process(kTool, {"advise", path});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("roofline"), std::string::npos) << plain.out;
  const auto given = run_process(kTool, {"advise", path, "--cpu-peak-gflops", "100"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  const auto ops = run_process(kTool, {"ops", path, "--roofline", "--json", "--cpu-peak-gflops", "100"});
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  std::string bmm;
  const auto table = nlohmann::json::parse(ops.out);  // held: a range-for over a temporary's member dangles
  for (const auto& r : table["rows"])
    if (bmm.empty() && r["name"] == "aten::bmm" && r["counted"] == "yes") bmm = r["evidence"];  // most time first
  ASSERT_FALSE(bmm.empty()) << ops.out;
  EXPECT_NE(given.out.find("       roofline: " + bmm + "\n"), std::string::npos) << bmm << "\n" << given.out;
  for (std::vector<std::string> args : {std::vector<std::string>{"advise", path, "--cpu-peak-gflops", "0"},
                                        {"advise", path, "--gpu-peak-tflops", "fast"}}) {
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << args[2];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
