// pil-trace end to end: every subcommand on the synthetic GPU trace, JSON that parses, and bad
// input answered with one line and exit 2.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "trace/lagging_trace.h"
#include "trace/synthetic_ranks.h"
#include "trace/synthetic_trace.h"
#include "trace/trace_builder.h"
#include "trace/parse.h"

namespace {

using pil::test::run_process;
using pil::test::TempDir;

const std::string kTool = PIL_TRACE_EXE;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

struct PilTrace : ::testing::Test {
  TempDir dir;
  std::string trace = dir.path() + "/gpu.json";
  void SetUp() override { std::ofstream(trace) << pil::test::synthetic_gpu_trace(); }
};

TEST_F(PilTrace, EveryReportRunsAndItsJsonParses) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"summary"}, {"ops"}, {"kernels"}, {"api"}, {"launches"},
        {"streams"}, {"chain", "--range", "matmul_add"}}) {
    SCOPED_TRACE(args[0]);
    auto text_args = args;
    text_args.insert(text_args.begin() + 1, trace);
    const auto text = run_process(kTool, text_args);
    EXPECT_EQ(text.exit_code, 0) << text.err;
    EXPECT_FALSE(text.out.empty());
    text_args.push_back("--json");
    const auto js = run_process(kTool, text_args);
    EXPECT_EQ(js.exit_code, 0) << js.err;
    EXPECT_TRUE(nlohmann::json::accept(js.out)) << js.out;
  }
}

TEST_F(PilTrace, TextReportsCarryTheFigures) {
  const auto kernels = run_process(kTool, {"kernels", trace});
  EXPECT_NE(kernels.out.find("100,000"), std::string::npos) << kernels.out;  // gemm total (ns)
  EXPECT_NE(kernels.out.find("64x1x1 128x1x1 90 4096"), std::string::npos) << kernels.out;
  const auto streams = run_process(kTool, {"streams", trace, "--json"});
  const auto j = nlohmann::json::parse(streams.out);
  int64_t busy7 = -1;
  for (const auto& s : j["streams"])
    if (s["stream"] == 7) busy7 = s["busy_ns"];
  EXPECT_EQ(busy7, 117000);
  EXPECT_EQ(j["synchronizes"].size(), 1u);
  EXPECT_EQ(j["synchronizes"][0]["gpu_busy_ns"], 8000);
  const auto chain = run_process(kTool, {"chain", trace, "--range", "matmul_add"});
  EXPECT_NE(chain.out.find("=> GPU gemm"), std::string::npos) << chain.out;
  EXPECT_NE(chain.out.find("after its launch call ends (queued behind earlier work)"), std::string::npos)
      << chain.out;
  // Launch delay in its two kinds: 4 launches onto an idle stream, 2 queued (by hand in
  // reports_test.cpp).
  const auto launches = run_process(kTool, {"launches", trace});
  EXPECT_NE(launches.out.find("launch latency (the stream was idle when the call returned): 4 launches, "
                              "median 7,500 ns"), std::string::npos) << launches.out;
  EXPECT_NE(launches.out.find("queueing (earlier work still ran on the stream): 2 launches, median 76,000 ns"),
            std::string::npos) << launches.out;
  const auto lj = nlohmann::json::parse(run_process(kTool, {"launches", trace, "--json"}).out);
  EXPECT_EQ(lj["launch_latency"]["count"], 4);
  EXPECT_EQ(lj["queueing"]["count"], 2);
  EXPECT_EQ(lj["largest_delays"][0]["kind"], "queueing");
}

// Per-step GPU figures (busy per step, kernels per step) for torch.profiler's step names, and
// for the project's old ones (ProfileStep#N), which older traces carry.
TEST_F(PilTrace, PerStepGpuFiguresForTorchProfilersStepsAndTheOldName) {
  std::string old_names = pil::test::synthetic_gpu_trace();
  for (size_t at = 0; (at = old_names.find("ProfilerStep#", at)) != std::string::npos;)
    old_names.replace(at, 13, "ProfileStep#");
  const std::string old_trace = dir.path() + "/old.json";
  std::ofstream(old_trace) << old_names;
  for (const std::string& path : {trace, old_trace}) {
    SCOPED_TRACE(path);
    const auto streams = run_process(kTool, {"streams", path, "--json"});
    ASSERT_EQ(streams.exit_code, 0) << streams.err;
    const auto j = nlohmann::json::parse(streams.out);
    ASSERT_EQ(j["steps"].size(), 1u) << streams.out;
    EXPECT_GT(j["steps"][0]["in_wall_time"]["busy_ns"].get<int64_t>(), 0);
    EXPECT_GT(j["steps"][0]["launched"]["busy_ns"].get<int64_t>(), 0);
    const auto e = run_process(kTool, {"expect", path, "steps=1", "kernels=6"});
    EXPECT_EQ(e.exit_code, 0) << e.out << e.err;
  }
}

// chain's --range takes any slice of a thread: a Python function or module torch.profiler
// recorded (with_stack, with_modules: category python_function) holds the operators it called.
// The profiler's own span sits on a lane of its own, with nothing to chain: said in one line
// (it said "1 slice named 'PyTorch Profiler (0)', no instance 0; allowed: --instance 0").
TEST(PilTraceChain, APythonFunctionHoldsItsOperatorsAndTheProfilersSpanIsSaid) {
  TempDir tmp;
  const std::string path = tmp.path() + "/stack.json";
  std::ofstream(path) << R"js({"traceEvents": [
{"ph": "X", "cat": "Trace", "ts": 100, "dur": 500, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
{"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 7, "tid": 7, "ts": 150, "dur": 100, "args": {"Python id": 3}},
{"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 7, "tid": 7, "ts": 160, "dur": 80, "args": {"External id": 1}},
{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 7, "tid": 7, "ts": 170, "dur": 60, "args": {"External id": 2}},
{"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 7, "tid": 7, "ts": 300, "dur": 10, "args": {"External id": 3}}
]})js";
  const auto module = run_process(kTool, {"chain", path, "--range", "nn.Module: Linear_0"});
  ASSERT_EQ(module.exit_code, 0) << module.err;
  EXPECT_EQ(module.out, "nn.Module: Linear_0  [+0 ns, 100,000 ns]\n  aten::linear  [+10,000 ns, 80,000 ns]\n"
                        "    aten::addmm  [+20,000 ns, 60,000 ns]\n");
  const auto span = run_process(kTool, {"chain", path, "--range", "PyTorch Profiler (0)"});
  EXPECT_EQ(span.exit_code, 2);
  EXPECT_EQ(span.out, "");
  EXPECT_EQ(span.err, "pil-trace: error: --range: 'PyTorch Profiler (0)' holds no operator, range or CUDA call on "
                      "its lane (the profiler's own span has a lane of its own); allowed: a step, a named range or "
                      "an operator (svg and slice take any slice's time as a window)\n");
}

// A "see the effect" command that reads the user's trace runs pil-trace as the user ran it (here
// by its absolute path), so that it runs from where the trace path was given, not only from
// the project's folder ("build/bin/pil-trace chain traces/dl0.pt.trace.json" ran from neither).
TEST(PilTraceAdvise, TheCommandToSeeTheEffectRunsPilTraceAsItWasRun) {
  const std::string slow = std::string(PIL_FIXTURES_DIR) + "/lessons/06_find_and_fix_slow_cpu_n1.pt.trace.json.gz";
  const auto r = run_process(kTool, {"advise", slow});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("see the effect: " + kTool + " chain " + slow + " --range "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("see the effect: build/bin/pil-trace chain"), std::string::npos) << r.out;
}

// advise --min-share moves the floor under every finding (2% of the steps by default): lesson
// 06's slow at batch 1 builds its mask in 0.9% of its steps, named from a floor of 0.5%; a
// value outside 0-100 is refused in one line, exit 2.
TEST(PilTraceAdvise, MinShareMovesTheFloorUnderEveryFinding) {
  const std::string slow = std::string(PIL_FIXTURES_DIR) + "/lessons/06_find_and_fix_slow_cpu_n1.pt.trace.json.gz";
  auto causes = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"advise", slow, "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);  // held: a range-for over a temporary's member dangles
    std::vector<std::string> c;
    for (const auto& f : j["findings"]) c.push_back(f["cause"]);
    return c;
  };
  const auto plain = causes({}), low = causes({"--min-share", "0.5"}), two = causes({"--min-share", "2"});
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "rebuilt_constant"), 0);
  EXPECT_EQ(std::count(low.begin(), low.end(), "rebuilt_constant"), 1);
  EXPECT_EQ(two, plain);
  // The floor is said where it moved, and always in the JSON.
  const auto text = run_process(kTool, {"advise", slow, "--min-share", "0.5"});
  EXPECT_NE(text.out.find("CPU only; findings from 0.5% of the steps (--min-share)\n"), std::string::npos) << text.out;
  EXPECT_EQ(run_process(kTool, {"advise", slow}).out.find("--min-share"), std::string::npos);
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(run_process(kTool, {"advise", slow, "--json", "--min-share", "0.5"}).out)
                       .at("min_share").get<double>(), 0.005);
  for (const char* bad : {"150", "-1", "half"}) {
    const auto r = run_process(kTool, {"advise", slow, "--min-share", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--min-share"), std::string::npos) << r.err;
  }
}

// A trace written by Python's torch.profiler (tests/trace/fixtures/make_python_trace.py, CPU):
// its ProfilerStep#2..#4 are steps, so the figures are per step, as for the lessons' traces.
TEST(PilTracePython, TorchProfilersStepsAreStepsInAPythonTrace) {
  const std::string fixture = std::string(PIL_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json";
  const auto summary = run_process(kTool, {"summary", fixture});
  ASSERT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("3 profiled steps"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("mean time per step"), std::string::npos) << summary.out;
  EXPECT_EQ(summary.out.find("time in the trace"), std::string::npos) << summary.out;
  const auto e = run_process(kTool, {"expect", fixture, "steps=3", "calls:aten::mm=1",
                                     "calls:matmul_add=1", "kernels=0"});
  EXPECT_EQ(e.exit_code, 0) << e.out << e.err;
  // The table as Python's: the steps in one ProfilerStep* row, called 3 times.
  const auto ops = run_process(kTool, {"ops", fixture, "--json"});
  ASSERT_EQ(ops.exit_code, 0) << ops.err;
  const auto j = nlohmann::json::parse(ops.out);
  int64_t step_calls = -1;
  for (const auto& r : j["operators"])
    if (r["name"] == "ProfilerStep*") step_calls = r["calls"];
  EXPECT_EQ(step_calls, 3) << ops.out;
}

// Python's printed key_averages().table(sort_by="cpu_time_total", row_limit=15) for the trace
// Python wrote (tests/trace/fixtures/make_python_table.py), byte for byte: a name of 53
// characters cut to 52 and "...", averages rounded as Python prints them.
TEST(PilTracePython, OpsPrintsPythonsTableToTheByte) {
  const std::string dir = PIL_FIXTURES_DIR;
  std::ifstream in(dir + "/python_backward_steps.table.txt");
  const std::string python((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(python.find("autograd::engine::evaluate_function: NllLossBackward..."), std::string::npos);
  for (const char* threads : {"1", "2"}) {
    const auto r = run_process(kTool, {"ops", dir + "/python_backward_steps.pt.trace.json",
                                       "--sort", "cpu_time_total", "--row-limit", "15",
                                       "--threads", threads});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, python);
  }
}

// The autograd profiler's own format (tests/trace/fixtures/make_python_table.py --event-list: EventList's
// export, a bare array of slices in "CPU functions" with no category, as torch 1.7's profiler and
// prof.events().export_chrome_trace() write it) is read: Python's table for the same run, byte for
// byte, and its ProfilerStep#N slices as the steps. Its torch 1.7 GPU side, "CUDA functions" (each
// operator's time by CUDA events), is said not to be read, not taken for a CPU run.
// In the autograd profiler's format a slice's start is written in µs from the profiler's start
// and its duration as Python's own end minus start (399.0550000000512): Python's average is the
// sum of those doubles, which prints 249.236us where the exact 249.2365 would round up (a cold
// read's own trace printed 6.183us for Python's 6.182us). The two slices are Python's arithmetic
// on starts and ends in whole ns: (700042685 - 699643630) ns and (700145642 - 700046224) ns.
TEST(PilTracePython, AnEventListAverageIsPythonsFloatingPointAverage) {
  TempDir tmp;
  const std::string path = tmp.path() + "/half.json";
  std::ofstream(path) << R"js([{"name": "x", "ph": "X", "ts": 699643.63, "dur": 399.0550000000512, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "x", "ph": "X", "ts": 700046.224, "dur": 99.41799999994691, "tid": 1, "pid": "CPU functions", "args": {}}])js";
  const auto r = run_process(kTool, {"ops", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("    x       100.00%     498.473us       100.00%     498.473us     249.236us             2  \n"),
            std::string::npos) << r.out;
  // Python sorts by the same doubles: two slices of 20,000 ns each, `first` written first, whose
  // times are 19.999999999999886 and 20.000000000000227 µs, come `second` first (they came in
  // the file's order, a cold read's own table's two last rows swapped).
  const std::string tie = tmp.path() + "/tie.json";
  std::ofstream(tie) << R"js([{"name": "first", "ph": "X", "ts": 1004.003, "dur": 19.999999999999886, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "second", "ph": "X", "ts": 2028.001, "dur": 20.000000000000227, "tid": 1, "pid": "CPU functions", "args": {}}])js";
  const auto sorted = run_process(kTool, {"ops", tie, "--sort", "cpu_time_total"});
  ASSERT_EQ(sorted.exit_code, 0) << sorted.err;
  EXPECT_LT(sorted.out.find(" second "), sorted.out.find(" first ")) << sorted.out;
}

TEST(PilTracePython, TheAutogradProfilersOwnFormatIsRead) {
  const std::string dir = PIL_FIXTURES_DIR;
  std::ifstream in(dir + "/python_event_list.table.txt");
  const std::string python((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(python.find("forward"), std::string::npos);
  const std::string trace = dir + "/python_event_list.json";
  for (const char* threads : {"1", "2"}) {
    const auto r = run_process(kTool, {"ops", trace, "--sort", "cpu_time_total", "--row-limit", "15", "--threads", threads});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, python);
  }
  const auto summary = run_process(kTool, {"summary", trace});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("3 profiled steps"), std::string::npos) << summary.out;
  EXPECT_NE(summary.out.find("no GPU work in this trace: the autograd profiler's own format (EventList's export, its "
                             "slices in \"CPU functions\") holds a run's GPU side only as each operator's GPU time, "
                             "recorded with use_cuda=True (\"CUDA functions\" events, none here)"),
            std::string::npos)
      << summary.out << "not \"a CPU run\": the format has no GPU side to show";
  const auto advice = run_process(kTool, {"advise", trace});
  EXPECT_EQ(advice.exit_code, 0) << advice.err;
  EXPECT_NE(advice.out.find(": the 3 profiled steps ("), std::string::npos) << advice.out;
  EXPECT_NE(advice.out.find("), CPU side only (the autograd profiler's format: whether the run used a GPU, it does not "
                            "say)\n"),
            std::string::npos)
      << advice.out;

  TempDir tmp;
  const std::string old_gpu = tmp.path() + "/torch17.json";
  std::ofstream(old_gpu)
      << "[{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 10, \"dur\": 30, \"tid\": 1, \"pid\": \"CPU functions\", \"args\": {}}, "
         "{\"name\": \"aten::mm\", \"ph\": \"s\", \"ts\": 10, \"tid\": 1, \"pid\": \"CPU functions\", \"id\": 0, \"cat\": \"cpu_to_cuda\", \"args\": {}}, "
         "{\"name\": \"aten::mm\", \"ph\": \"f\", \"ts\": 12, \"tid\": 0, \"pid\": \"CUDA functions\", \"id\": 0, \"cat\": \"cpu_to_cuda\", \"args\": {}}, "
         "{\"name\": \"aten::mm\", \"ph\": \"X\", \"ts\": 12, \"dur\": 25, \"tid\": 0, \"pid\": \"CUDA functions\", \"args\": {}}]";
  const auto r = run_process(kTool, {"summary", old_gpu});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "pil-trace: note: " + old_gpu +
                       ": not read: 1 \"CUDA functions\" events (the autograd profiler's GPU time of each operator, by "
                       "CUDA events, before Kineto: not kernels on streams)\n");
  EXPECT_NE(r.out.find("most self CPU time: aten::mm 100.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no GPU work pil-trace reads: the trace's GPU side is the autograd profiler's GPU time of "
                       "each operator (1 \"CUDA functions\" events, torch 1.7 and before)"),
            std::string::npos)
      << r.out;
}

// Traces Python recorded with profile_memory (tests/trace/fixtures/make_python_memory_table.py)
// and the tables it printed sorted by the memory columns, byte for byte: each operator's and
// range's memory is every allocation and free in its span, ends included, on any thread, as
// Python matches them; memory no span holds is the "[memory]" row (12 frees by `del` outside
// every operator, -867.75 KB), which the table lacked before.
TEST(PilTracePython, OpsPrintsPythonsMemoryTablesToTheByte) {
  const std::string dir = PIL_FIXTURES_DIR;
  for (const auto& [trace, sort] : {std::pair{"python_memory_steps", "self_cpu_memory_usage"},
                                    std::pair{"python_memory_steps", "cpu_memory_usage"},
                                    std::pair{"python_memory_loose", "cpu_memory_usage"}}) {
    SCOPED_TRACE(std::string(trace) + ", " + sort);
    std::ifstream in(dir + "/" + trace + "." + sort + ".table.txt");
    const std::string python((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(python.find("Self CPU Mem"), std::string::npos);
    const auto r = run_process(kTool, {"ops", dir + "/" + trace + ".pt.trace.json", "--sort", sort, "--row-limit", "100"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, python);
  }
  std::ifstream loose(dir + "/python_memory_loose.cpu_memory_usage.table.txt");
  const std::string table((std::istreambuf_iterator<char>(loose)), std::istreambuf_iterator<char>());
  EXPECT_NE(table.find("[memory]"), std::string::npos) << "the fixture holds the row it is for";
}

// A trace Python recorded with_flops (tests/trace/fixtures/make_python_flops_table.py) and the
// tables it printed sorted three ways, byte for byte: the "Total KFLOPs" column from the
// recorded inputs of conv2d, mm, bmm, baddbmm, mul and add; aten::sum's inner call dropped into
// the outer one as Python's EventList does (2 calls, not 4); averages that fall halfway between
// two printed digits rounded as Python's floating-point sums rounded them (up and down).
TEST(PilTracePython, OpsPrintsPythonsFlopsTableToTheByte) {
  const std::string dir = PIL_FIXTURES_DIR;
  for (const char* sort : {"cpu_time_total", "self_cpu_time_total", "count"}) {
    std::ifstream in(dir + "/python_flops_steps." + sort + ".table.txt");
    const std::string python((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(python.find("Total KFLOPs"), std::string::npos) << sort;
    for (const char* threads : {"1", "2"}) {
      SCOPED_TRACE(std::string(sort) + ", threads " + threads);
      const auto r = run_process(kTool, {"ops", dir + "/python_flops_steps.pt.trace.json", "--sort", sort,
                                         "--row-limit", "100", "--threads", threads});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.out, python);
    }
  }
  // The JSON gives each row's FLOPs; a trace recorded without with_flops has no such column.
  const auto j = run_process(kTool, {"ops", dir + "/python_flops_steps.pt.trace.json", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  bool conv = false;
  const auto table = nlohmann::json::parse(j.out);  // held: a range-for over a temporary's member dangles
  for (const auto& r : table["operators"])
    if (r["name"] == "aten::conv2d") conv = r["flops"].get<uint64_t>() > 0;
  EXPECT_TRUE(conv) << j.out;
  const auto plain = run_process(kTool, {"ops", dir + "/python_backward_steps.pt.trace.json"});
  EXPECT_EQ(plain.out.find("FLOPs"), std::string::npos) << plain.out;
}

TEST_F(PilTrace, DiffOfARunWithItselfIsAllSame) {
  const auto d = run_process(kTool, {"diff", trace, trace, "--json"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto j = nlohmann::json::parse(d.out);
  ASSERT_FALSE(j["rows"].empty());
  for (const auto& r : j["rows"]) EXPECT_EQ(r["change"], "same") << r.dump();
}

// diff compares each trace's totals: traces of different step counts are said to differ in that
// (a 3-step trace against one of its steps read as every operator faster, without a word).
TEST_F(PilTrace, DiffOfDifferentStepCountsSaysTheTimesAreTotals) {
  const std::string three = std::string(PIL_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json";
  const std::string one = dir.path() + "/one.json";
  ASSERT_EQ(run_process(kTool, {"slice", three, "--step", "1", "--out", one}).exit_code, 0);
  const auto same = run_process(kTool, {"diff", three, three, "--json"});
  EXPECT_EQ(same.err, "");
  const auto steps = nlohmann::json::parse(same.out)["steps"];
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_GT(steps[0].get<int>(), 1) << steps;
  EXPECT_EQ(steps[0], steps[1]);
  const auto d = run_process(kTool, {"diff", three, one, "--json"});
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["steps"], nlohmann::json({steps[0], 1})) << d.out;
  EXPECT_EQ(d.err, "pil-trace: note: A has " + std::to_string(steps[0].get<int>()) +
                       " profiled steps and B 1: the times are each trace's totals, so they differ by the steps' "
                       "count too; compare traces of as many steps (pil-trace slice --step K cuts one out)\n");
}

// A trace whose GPU side was not recorded (its launch calls and copies found no GPU work) against
// one that has it: the second's kernels read as "added", which is the first's loss, not the
// program's change (a public RTX 2080 Ti pair); said on both sides, in the JSON too.
TEST_F(PilTrace, DiffSaysWhenATracesGpuSideIsMissing) {
  auto built = [](bool gpu) {
    pil::test::TraceBuilder b;
    b.device("NVIDIA GeForce RTX 2080 Ti", 68, 11LL << 30, 7, 5);
    b.step(1, 0, 1000);
    b.op("aten::mul", 10, 100);
    const int call = b.call("cudaLaunchKernel", 20, 10);
    if (gpu) b.kernel("mul_kernel", call, 40, 50);
    return b.str();
  };
  const std::string lost = dir.path() + "/lost.json", whole = dir.path() + "/whole.json";
  std::ofstream(lost) << built(false);
  std::ofstream(whole) << built(true);
  const auto d = run_process(kTool, {"diff", lost, whole});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("added"), std::string::npos) << d.out;
  EXPECT_EQ(d.err, "pil-trace: note: A: 1 call starts GPU work and none is in the trace (its GPU side was not recorded, "
                   "or lost): the GPU rows and totals lack its missing work, so that work reads as added or slower "
                   "in B, not a change of the program (pil-trace check on A says more)\n");
  const auto j = run_process(kTool, {"diff", whole, lost, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto missing = nlohmann::json::parse(j.out)["gpu_side_missing"];
  EXPECT_EQ(missing[0], "");
  EXPECT_NE(missing[1].get<std::string>().find("none is in the trace"), std::string::npos) << missing;
  EXPECT_NE(j.err.find("B: 1 call starts"), std::string::npos) << j.err;
  EXPECT_EQ(run_process(kTool, {"diff", whole, whole}).err, "");
}

// Two GPUs, or a cold run against a warm one: the figures differ by that too, said (a public LoRA
// run's cold step against its warm one read as cudaLaunchKernel 218 ms "faster", its 98 lazy
// loading records unsaid).
TEST_F(PilTrace, DiffSaysTwoGpusAndAColdRunAgainstAWarmOne) {
  auto built = [](const char* gpu, bool cold) {
    pil::test::TraceBuilder b;
    b.device(gpu);
    b.step(1, 0, 1000);
    b.kernel("k", b.call("cudaLaunchKernel", 20, cold ? 500 : 10), cold ? 530 : 40, 50);
    if (cold) b.overhead("Runtime Triggered Module Loading", 25, 480);
    return b.str();
  };
  const std::string a = dir.path() + "/a.json", b = dir.path() + "/b.json";
  std::ofstream(a) << built("NVIDIA H100 80GB HBM3", true);
  std::ofstream(b) << built("NVIDIA A100-SXM4-40GB", false);
  const auto d = run_process(kTool, {"diff", a, b});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.err.find("note: A ran on NVIDIA H100 80GB HBM3, B on NVIDIA A100-SXM4-40GB: the GPU times differ by "
                       "the GPUs too"),
            std::string::npos)
      << d.err;
  EXPECT_NE(d.err.find("note: A has CUDA's lazy loading (1 record, 480 us: kernels' code loaded at their first "
                       "launch, a one-time cost) and B none: a cold run against a warm one"),
            std::string::npos)
      << d.err;
  const auto j = nlohmann::json::parse(run_process(kTool, {"diff", a, b, "--json"}).out);
  EXPECT_EQ(j["lazy_loading_ns"], nlohmann::json::array({480'000, 0}));
  EXPECT_EQ(j["gpus"][1], "NVIDIA A100-SXM4-40GB");
}

TEST_F(PilTrace, SvgIsWrittenWhole) {
  const std::string out = dir.path() + "/t.svg";
  const auto r = run_process(kTool, {"svg", trace, "--out", out, "--range", "matmul_add"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text.rfind("<svg", 0), 0u);
  EXPECT_NE(text.find("</svg>"), std::string::npos);
}

TEST_F(PilTrace, SummaryJsonCarriesTheSummarysFigures) {
  const auto r = run_process(kTool, {"summary", trace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["steps"]["count"], 1);
  EXPECT_EQ(j["steps"]["median_ns"], 200000);
  EXPECT_EQ(j["ranges"]["matmul_add"]["cpu_per_step_ns"], 80000);  // [10, 90] us
  EXPECT_EQ(j["gpu"]["top_kernel"]["name"], "gemm");
  EXPECT_EQ(j["gpu"]["launch_latency"]["count"], 4);
  EXPECT_EQ(j["gpu"]["queueing"]["count"], 2);
  EXPECT_EQ(j["gpu"]["synchronizes"][0]["gpu_busy_ns"], 8000);
}

TEST_F(PilTrace, SvgMarksPointAtNamedSlices) {
  const std::string out = dir.path() + "/m.svg";
  const auto r = run_process(kTool, {"svg", trace, "--out", out, "--step", "0", "--mark", "aten::mm",
                                     "--mark", "gemm"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find(">aten::mm, at +25 us (30 us)</text>"), std::string::npos) << text;
  EXPECT_NE(text.find(">gemm, at +40 us (100 us)</text>"), std::string::npos) << text;
}

TEST_F(PilTrace, EveryReportIsTheSameReadByOneThreadOrThree) {
  // Over 8 MB (the reader's chunks are 4 MB): the synthetic events many times over, so the
  // parallel read cuts the file; then the same file with one event spoiled near its end.
  std::string one = pil::test::synthetic_gpu_trace();
  const size_t open = one.find('[', one.find("traceEvents")) + 1, close = one.rfind(']');
  const std::string body = one.substr(open, close - open);
  std::string big = one.substr(0, open);
  for (int i = 0; big.size() < (size_t(9) << 20); ++i) big += (i ? ",\n" : "") + body;
  const std::string path = dir.path() + "/big.json", bad_path = dir.path() + "/bad.json";
  std::ofstream(path) << big << one.substr(close);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"summary"}, {"ops"}, {"launches", "--json"}, {"streams"},
        {"chain", "--range", "matmul_add"}}) {
    SCOPED_TRACE(args[0]);
    args.insert(args.begin() + 1, path);
    auto with = [&](const char* n) {
      auto a = args;
      a.push_back("--threads");
      a.push_back(n);
      return run_process(kTool, a);
    };
    const auto a = with("1"), b = with("3");
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_FALSE(a.out.empty());
    EXPECT_EQ(a.out, b.out);
  }
  const size_t spoil = big.rfind("\"dur\": ");
  ASSERT_NE(spoil, std::string::npos);
  big.insert(spoil + 7, "-");
  std::ofstream(bad_path) << big << one.substr(close);
  const auto r = run_process(kTool, {"summary", bad_path, "--threads", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("negative duration"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" at byte " + std::to_string(big.rfind('{', spoil))), std::string::npos) << r.err;
  EXPECT_EQ(run_process(kTool, {"summary", bad_path, "--threads", "1"}).err, r.err);
  EXPECT_EQ(run_process(kTool, {"summary", path, "--threads", "0"}).exit_code, 2);
}

// The command line's own mistakes, each one line naming the word and what is allowed (CLI11
// said "A subcommand is required" for a misspelt command, listed the words it did not take last
// first, "1 required TEXT missing" for a flag left without its value, and "At Most 1 required
// but received 2" for one given twice).
TEST_F(PilTrace, CommandLineMistakesAreNamedWithWhatIsAllowed) {
  const auto err = [&](std::vector<std::string> args) {
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    return r.err;
  };
  EXPECT_EQ(err({"sumary", trace}).rfind("pil-trace: error: sumary: not a command (did you mean summary?); allowed: "
                                         "summary|ops|", 0), 0u);
  EXPECT_EQ(err({}).rfind("pil-trace: error: no command given; allowed: summary|ops|", 0), 0u);
  EXPECT_EQ(err({"summary", trace, "--jsn"}),
            "pil-trace: error: --jsn: not a flag of pil-trace summary (did you mean --json?); allowed: what "
            "`pil-trace summary --help` lists\n");
  EXPECT_EQ(err({"summary", trace, "--bogus", "1", "--more"}),
            "pil-trace: error: --bogus: not a flag of pil-trace summary; allowed: what `pil-trace summary --help` "
            "lists\n");
  EXPECT_EQ(err({"summary", trace, "extra"}),
            "pil-trace: error: 'extra': a value with no flag before it; allowed: what `pil-trace summary --help` "
            "lists\n");
  EXPECT_EQ(err({"summary", trace, "--", "extra"}),
            "pil-trace: error: 'extra': a value with no flag before it; allowed: what `pil-trace summary --help` "
            "lists\n");
  EXPECT_EQ(err({"svg", trace, "--out"}),
            "pil-trace: error: --out: no value given; allowed: --out VALUE (SVG file to write)\n");
  EXPECT_EQ(err({"svg", trace, "--out", "--step", "1"}),
            "pil-trace: error: --out: no value given; allowed: --out VALUE (SVG file to write)\n");
  EXPECT_EQ(err({"slice", trace, "--out", dir.path() + "/s.json", "--step", "0", "--step", "1"}),
            "pil-trace: error: --step: given 2 times (0, 1); allowed: once\n");
  EXPECT_FALSE(std::ifstream(dir.path() + "/s.json").good()) << "nothing is written on error";
  EXPECT_EQ(err({"svg", trace, "--step=", "--out", dir.path() + "/x.svg"}),
            "pil-trace: error: --step: no value given; allowed: --step VALUE (Window: the K-th profiled step (0 = "
            "first))\n");
  EXPECT_EQ(err({"slice", trace, "--out", dir.path() + "/s.json", "--range=a", "--range="}),
            "pil-trace: error: --range: no value given; allowed: --range VALUE (Span: a slice of this name)\n");
  // A command's flag before the command, a flag pil-trace lacks before any command, and a flag
  // that takes no value given one (CLI11 said "--json: not a flag of pil-trace summary (did you
  // mean --json?)", "A subcommand is required", "Could not convert: --json = nope").
  EXPECT_EQ(err({"--json", "summary", trace}),
            "pil-trace: error: --json: given before the command; allowed: pil-trace summary TRACE --json (a "
            "command's flags come after it)\n");
  EXPECT_EQ(err({"--bogus"}).rfind("pil-trace: error: --bogus: not a flag of pil-trace itself; allowed: a command "
                                   "first (summary|ops|", 0), 0u);
  EXPECT_EQ(err({"summary", "--json=nope", trace}),
            "pil-trace: error: --json: takes no value ('--json=nope'); allowed: --json alone\n");
  // A flag that would do nothing without another: refused (they ran, exit 0, the flag unused).
  EXPECT_EQ(err({"svg", trace, "--out", dir.path() + "/i.svg", "--instance", "1"}),
            "pil-trace: error: --instance without --range; allowed: --instance only with --range\n");
  EXPECT_EQ(err({"ranks", trace, "--title", "x"}), "pil-trace: error: --title without --svg; allowed: --title only with --svg\n");
  EXPECT_EQ(err({"ranks", trace, "--step", "0"}), "pil-trace: error: --step without --svg; allowed: --step only with --svg\n");
  // An empty word as a name: said ("cannot write : Too many levels of symbolic links" for an
  // --out, the whole table for --range ''), and a new file's folder that takes none (/proc) before
  // the trace is read, not after the report.
  EXPECT_EQ(err({"svg", trace, "--out", ""}), "pil-trace: error: --out: an empty name; allowed: a file to write\n");
  EXPECT_EQ(err({"ranks", trace, "--svg", ""}), "pil-trace: error: --svg: an empty name; allowed: a file to write\n");
  EXPECT_EQ(err({"kernels", trace, "--range", ""}),
            "pil-trace: error: --range: an empty name; allowed: a slice's name\n");
  EXPECT_EQ(err({"chain", trace, "--range", ""}), "pil-trace: error: --range: an empty name; allowed: a slice's name\n");
  if (std::ifstream("/proc/version").good()) {  // Linux: /proc takes no new file, root or not
    EXPECT_EQ(err({"ranks", trace, "--svg", "/proc/x.svg"}).rfind("pil-trace: error: --svg /proc/x.svg: cannot make a "
                                                                  "file in /proc: ", 0), 0u);
  }
  // A word the command needs, missing: named, with the command's words (CLI11: "b is required").
  EXPECT_EQ(err({"summary"}), "pil-trace: error: TRACE: not given; allowed: pil-trace summary TRACE (TRACE: Trace "
                              "file (.json or .json.gz))\n");
  EXPECT_EQ(err({"diff", trace}), "pil-trace: error: B: not given; allowed: pil-trace diff A B (A: Trace A (.json "
                                  "or .json.gz); B: Trace B (.json or .json.gz))\n");
  EXPECT_EQ(err({"expect", trace}).rfind("pil-trace: error: PREDICTIONS: not given; allowed: pil-trace expect TRACE "
                                         "PREDICTIONS (TRACE: Trace file (.json or .json.gz); PREDICTIONS: "
                                         "KEY=VALUE...: steps=N",
                                         0),
            0u);
  EXPECT_EQ(err({"expect", "steps=3", trace}), "pil-trace: error: 'steps=3' is where the trace goes and '" + trace +
                                                 "' has no '=': the trace comes first; allowed: pil-trace expect TRACE "
                                                 "KEY=VALUE...\n");
  EXPECT_EQ(err({"expect", trace, "steps"}).rfind("pil-trace: error: prediction steps: not KEY=VALUE; allowed: steps=N", 0),
            0u);
  EXPECT_EQ(err({"chain", trace}), "pil-trace: error: --range: not given; allowed: --range VALUE (Range or operator "
                                   "name)\n");
  // A typo of the required flag is the reason it was not given (it read "--range: not given"); a
  // bare value where the flag's should be is said beside it.
  EXPECT_EQ(err({"chain", trace, "--rang", "step"}),
            "pil-trace: error: --rang: not a flag of pil-trace chain (did you mean --range?); allowed: what "
            "`pil-trace chain --help` lists\n");
  EXPECT_EQ(err({"chain", trace, "step"}), "pil-trace: error: --range: not given; allowed: --range VALUE (Range or "
                                           "operator name); 'step' came with no flag before it\n");
  // A flag's value: the value and what is allowed, in the lessons' words (CLI11 wrapped a negative
  // step round to 18446744073709551615, said "Could not convert", or ended a range in a 309-digit
  // number).
  EXPECT_EQ(err({"slice", trace, "--step", "-1", "--out", dir.path() + "/s.json"}),
            "pil-trace: error: --step: -1 is out of range; allowed: a whole number from 0 up\n");
  EXPECT_EQ(err({"chain", trace, "--range", "step", "--instance", "x"}),
            "pil-trace: error: --instance: 'x' is not a whole number; allowed: a whole number from 0 up\n");
  EXPECT_EQ(err({"summary", trace, "--threads", "0"}),
            "pil-trace: error: --threads: 0 is out of range; allowed: a whole number from 1 to 1024\n");
  EXPECT_EQ(err({"check", trace, "--examples", "-1"}),
            "pil-trace: error: --examples: -1 is out of range; allowed: a whole number from 0 up\n");
  EXPECT_EQ(err({"diff", trace, trace, "--tolerance", "11"}),
            "pil-trace: error: --tolerance: 11 is out of range; allowed: a number from 0 to 10\n");
  EXPECT_EQ(err({"advise", trace, "--cpu-peak-gflops", "0"}),
            "pil-trace: error: --cpu-peak-gflops: 0 is out of range; allowed: a number from 0.001 to 1e+09\n");
  EXPECT_EQ(err({"advise", trace, "--min-share", "nan"}),
            "pil-trace: error: --min-share: 'nan' is not a number; allowed: a number from 0 to 100\n");
  EXPECT_EQ(err({"slice", trace, "--from-us", "x", "--out", dir.path() + "/s.json"}),
            "pil-trace: error: --from-us: 'x' is not a number; allowed: a number\n");
  // Repeatable ones stay so.
  EXPECT_EQ(run_process(kTool, {"expect", trace, "steps=3", "kernels=0"}).err.find("given"), std::string::npos);
}

TEST_F(PilTrace, BadInputIsOneLineAndExit2) {
  const std::string bad = dir.path() + "/bad.json", empty = dir.path() + "/empty.json";
  std::ofstream(bad) << "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": -4}]}";
  std::ofstream(empty) << "";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"ops", dir.path() + "/missing.json"}, {"ops", dir.path()},
        {"ops", bad}, {"kernels", empty}, {"chain", trace, "--range", "nope"},
        {"svg", trace, "--out", dir.path() + "/x.svg", "--step", "5"}, {"frobnicate", trace},
        {"svg", trace, "--out", dir.path() + "/x.svg", "--range", "aten::add", "--mark", "kernel_a"},
        {"ops"},
        // An --out that cannot be written is the user's to fix, not an internal error (was 70).
        {"svg", trace, "--out", dir.path() + "/no/such/folder/x.svg"}, {"svg", trace, "--out", dir.path()}}) {
    SCOPED_TRACE(args[0] + " " + (args.size() > 1 ? args[1] : ""));
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("pil-trace: error: ", 0), 0u) << r.err;
  }
  EXPECT_FALSE(std::ifstream(dir.path() + "/x.svg").good()) << "nothing is written on error";
}

// An --out (or --svg) is renamed over what is there: refused before reading where that would
// replace the trace read, a device (/dev/null, as root, became a plain file) or a FIFO; a link
// keeps being a link, its target written; a long name still has room for its temporary.
TEST_F(PilTrace, AnOutThatWouldReplaceSomethingElseIsRefused) {
  const std::string before = read_text(trace);
  const std::string fifo = dir.path() + "/fifo.svg";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"svg", trace, "--out", trace}, "the trace this command reads"},
           {{"slice", trace, "--out", "/dev/null", "--step", "0"}, "not a regular file"},
           {{"svg", trace, "--out", fifo}, "not a regular file"},
           {{"ranks", trace, "--svg", dir.path()}, "a folder"}}) {
    SCOPED_TRACE(args[0] + " " + args[3]);
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "") << "refused before any report";
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_EQ(read_text(trace), before);
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  const std::string real = dir.path() + "/real.svg", link = dir.path() + "/link.svg";
  std::ofstream(real) << "old";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  ASSERT_EQ(run_process(kTool, {"svg", trace, "--out", link}).exit_code, 0);
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(read_text(real).rfind("<svg", 0), 0u);

  const std::string long_name = dir.path() + "/" + std::string(250, 'n') + ".svg";  // 254 characters
  EXPECT_EQ(run_process(kTool, {"svg", trace, "--out", long_name}).exit_code, 0);
  EXPECT_TRUE(std::ifstream(long_name).good());
}

// A trace through a pipe, gzip-compressed or not (`pil-trace summary <(gzip -c t.json)`): a pipe
// cannot be read at an offset, so gzip was not told apart ("not JSON" at byte 0).
TEST_F(PilTrace, ATraceThroughAPipeIsReadGzipOrNot) {
  const std::string expected = run_process(kTool, {"ops", trace}).out;
  ASSERT_NE(expected, "");
  for (const std::string through : {"gzip -c", "cat"}) {
    const std::string out = dir.path() + "/piped.txt";
    const std::string cmd = "bash -c \"'" + kTool + "' ops <(" + through + " '" + trace + "') > '" + out + "'\"";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << through;
    EXPECT_EQ(WEXITSTATUS(status), 0) << through;
    EXPECT_EQ(read_text(out), expected) << through;
  }
  const std::string cut = dir.path() + "/cut.txt";
  const std::string cmd = "bash -c \"'" + kTool + "' ops <(gzip -c '" + trace + "' | head -c 40) 2> '" + cut + "'\"";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(read_text(cut).find("not a readable gzip file: the stream ends early"), std::string::npos) << read_text(cut);
}

// A damaged gzip file: zlib's reason without its "<fd:3>: " (the file is named already).
TEST_F(PilTrace, ADamagedGzipFileIsSaidPlainly) {
  const std::string gz = dir.path() + "/t.json.gz";
  ASSERT_EQ(std::system(("gzip -c '" + trace + "' > '" + gz + "'").c_str()), 0);
  std::string bytes = read_text(gz);
  ASSERT_GT(bytes.size(), 40u);
  bytes[bytes.size() - 6] = char(bytes[bytes.size() - 6] ^ 0xff);  // the trailer's checksum
  std::ofstream(gz, std::ios::binary | std::ios::trunc) << bytes;
  const auto r = run_process(kTool, {"summary", gz});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "pil-trace: error: " + gz + ": not a readable gzip file: incorrect data check (the file is damaged)\n");
}

// Another tool's trace in the same format (a line profiler's "Line 12" slices) is said to be one,
// not read as an empty CPU run with no findings; ops --roofline on a trace with no operators asks
// for the CPU to be recorded, not for record_shapes (the trace had it on).
TEST_F(PilTrace, WhatIsNoTorchProfilerTraceIsSaid) {
  const std::string lines = dir.path() + "/lines.json";
  std::ofstream(lines) << "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"Line 12\", \"name\": \"x = f()\", "
                          "\"ts\": 1, \"dur\": 5, \"pid\": 0, \"tid\": 1}]}";
  for (const std::string cmd : {"summary", "check", "advise", "ops"}) {
    const auto r = run_process(kTool, {cmd, lines});
    EXPECT_EQ(r.exit_code, 2) << cmd;
    EXPECT_NE(r.err.find("its 1 events are none of them an operator, range, CUDA call, GPU work or allocation"),
              std::string::npos)
        << r.err;
  }
  const std::string kernels_only = dir.path() + "/kernels.json";
  std::ofstream(kernels_only) << "{\"record_shapes\": 1, \"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", "
                                 "\"name\": \"k\", \"ts\": 1, \"dur\": 5, \"pid\": 0, \"tid\": 7}]}";
  const auto r = run_process(kTool, {"ops", kernels_only, "--roofline"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no operators in the trace (cpu_op), so no shapes to count: record the CPU's operators"),
            std::string::npos)
      << r.err;
}

// A report that does not reach standard output whole is not a success; values too large for a
// flag are refused; a million-digit number is not echoed whole; values nested deeper than JSON
// readers allow are said (walk --fields recursed until the stack ran out).
TEST_F(PilTrace, OutputAndValuesBeyondWhatFitsAreSaid) {
  const std::string cmd = "'" + kTool + "' summary '" + trace + "' > /dev/full 2> " + dir.path() + "/err.txt";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(read_text(dir.path() + "/err.txt")
                .find("pil-trace: error: the report could not be written to standard output: No space left on device\n"),
            std::string::npos);

  const auto gap = run_process(kTool, {"streams", trace, "--gap-threshold-us", "1e20"});
  EXPECT_EQ(gap.exit_code, 2);
  EXPECT_NE(gap.err.find("out of range"), std::string::npos) << gap.err;

  const std::string huge = dir.path() + "/huge.json";
  std::ofstream(huge) << "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": " << std::string(100000, '1')
                      << ", \"dur\": 1}]}";
  const auto h = run_process(kTool, {"summary", huge});
  EXPECT_EQ(h.exit_code, 2);
  EXPECT_LT(h.err.size(), 300u) << h.err.substr(0, 300);
  EXPECT_NE(h.err.find("(100000 characters)"), std::string::npos) << h.err.substr(0, 300);

  const std::string deep = dir.path() + "/deep.json";
  std::ofstream(deep) << "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 1, \"args\": "
                      << std::string(100000, '[') << std::string(100000, ']') << "}]}";
  const auto w = run_process(kTool, {"walk", "--fields", deep});
  EXPECT_EQ(w.exit_code, 2);
  EXPECT_NE(w.err.find("nested more than 1024 levels deep"), std::string::npos) << w.err;
}

// A trace with no events is valid JSON (a profiler that never reached its active steps writes
// one): read whole, whatever its form and threads, and answered with what is missing, not as
// broken JSON (it was "improper structure" at its first event).
TEST_F(PilTrace, ATraceWithNoEventsSaysSo) {
  const std::string path = dir.path() + "/none.json";
  for (const char* text : {"{\"traceEvents\": []}", "[]", "{\"traceEvents\": [\n  ]\n}\n",
                           "{\"schemaVersion\": 1, \"traceEvents\": [], \"displayTimeUnit\": \"ms\"}",
                           "{\"traceEvents\": [{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, "
                           "\"args\": {\"name\": \"python\"}}]}"}) {
    SCOPED_TRACE(text);
    std::ofstream(path) << text;
    for (const char* threads : {"1", "2"}) {
      const auto r = run_process(kTool, {"summary", path, "--threads", threads});
      EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(": the trace has no events"), std::string::npos) << r.err;
    }
    EXPECT_TRUE(pil::trace::parse_trace_text(text).events.empty());
  }
}

// torch.profiler's trace of a cycle with no recorded step (exported before its active steps, or
// after it ended) holds the span Kineto writes over every trace and its markers: the profiler
// recorded nothing, and says so (it was told "not torch.profiler's categories").
TEST_F(PilTrace, ATraceOfTheProfilersSpanAloneSaysNothingWasRecorded) {
  const std::string path = dir.path() + "/span.json";
  std::ofstream(path) << R"js({"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "Trace", "ts": 5681270025838.656, "dur": 55763.707, "pid": "Spans", "tid": "PyTorch Profiler",
   "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
  {"name": "process_sort_index", "ph": "M", "ts": 5681270025838.656, "pid": "Spans", "tid": 0, "args": {"sort_index": 536870912}},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 5681270025838.656},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 5681270081810.201}],
  "traceName": "span.json"})js";
  for (const char* cmd : {"summary", "ops", "advise"}) {
    const auto r = run_process(kTool, {cmd, path});
    EXPECT_EQ(r.exit_code, 2) << cmd << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(": the trace holds only the profiler's own span (its traceEvents holds no operator, "
                         "named range, kernel or memory event): the profiler recorded nothing; allowed: a trace with "
                         "work recorded (with a schedule, at least one step"),
              std::string::npos) << cmd << r.err;
  }
  // A step with nothing in it, and the span: a cycle exported as the next began (advise said "at
  // most the whole basis faster", untraced work).
  const std::string with_step = dir.path() + "/step.json";
  std::ofstream(with_step) << R"js({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 100, "dur": 74},
  {"ph": "X", "cat": "Trace", "ts": 50, "dur": 384, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)"}]})js";
  for (const char* cmd : {"summary", "advise", "check"}) {
    const auto r = run_process(kTool, {cmd, with_step});
    EXPECT_EQ(r.exit_code, 2) << cmd << r.out << r.err;
    EXPECT_NE(r.err.find(": the trace holds only 1 profiled step with nothing in it and the profiler's span ("),
              std::string::npos) << cmd << r.err;
  }
  // diff's second trace too: an empty one was read as every row of the first "removed".
  const std::string ours = std::string(PIL_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json";
  const auto d = run_process(kTool, {"diff", ours, path});
  EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
  EXPECT_TRUE(d.out.empty()) << d.out;
  EXPECT_EQ(d.err, "pil-trace: error: " + path + ": the trace holds only the profiler's own span (its traceEvents "
                   "holds no operator, named range, kernel or memory event): the profiler recorded nothing; allowed: a "
                   "trace with work recorded (with a schedule, at least one step in its active phase before the trace "
                   "is written; without one, work between the profiler's start and stop)\n");
}

// What the reader passes over is said, not silently dropped: begin/end events (the Chrome
// format allows them; Kineto writes complete ones), async ones, the events of a device pil-trace does not
// model (MTIA's, as HTA's test traces hold them: not "a CPU run"); a lane id past int64 (an IBM
// AIU trace's 15514734831341844875) is read; a UTF-16 file is refused by name.
TEST_F(PilTrace, WhatTheReaderDoesNotReadIsSaid) {
  const std::string path = dir.path() + "/unread.json";
  const std::string be = "{\"ph\": \"B\", \"name\": \"allreduce\", \"pid\": 1, \"tid\": 2, \"ts\": 10},\n"
                         "{\"ph\": \"E\", \"name\": \"allreduce\", \"pid\": 1, \"tid\": 2, \"ts\": 20}";
  std::ofstream(path) << "{\"traceEvents\": [\n" << be << "\n]}\n";
  for (const char* threads : {"1", "2"}) {
    const auto r = run_process(kTool, {"summary", path, "--threads", threads});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err, "pil-trace: error: " + path +
                         ": no event pil-trace reads; the trace holds 2 begin/end events (\"ph\": \"B\", \"E\"; "
                         "pil-trace reads complete events, \"X\", as torch.profiler and Kineto write them)\n");
  }
  // Async events, as another tool's spans converted to the Chrome format: said so (a serving
  // system's trace was called one with "no events", the profiler to blame).
  std::ofstream(path) << "{\"traceEvents\": [\n{\"ph\": \"b\", \"cat\": \"req\", \"id\": 1, \"name\": \"infer\", "
                         "\"pid\": 1, \"tid\": 2, \"ts\": 10},\n{\"ph\": \"e\", \"cat\": \"req\", \"id\": 1, "
                         "\"name\": \"infer\", \"pid\": 1, \"tid\": 2, \"ts\": 20}\n]}\n";
  const auto async = run_process(kTool, {"summary", path});
  EXPECT_EQ(async.exit_code, 2);
  EXPECT_EQ(async.err, "pil-trace: error: " + path +
                           ": no event pil-trace reads; the trace holds 2 async events (\"ph\": \"b\", \"e\", \"n\": "
                           "another tool's spans, not a profiler's; pil-trace reads torch.profiler's and Kineto's "
                           "traces)\n");
  std::string mtia = "{\"traceEvents\": [\n" + be;
  mtia += ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 15514734831341844875, "
          "\"ts\": 0, \"dur\": 50}";
  mtia += ",\n{\"ph\": \"X\", \"cat\": \"mtia_runtime\", \"name\": \"runFunction\", \"pid\": 1, \"tid\": 1, "
          "\"ts\": 5, \"dur\": 3, \"args\": {\"correlation\": 4}}";
  for (int k = 0; k < 3; ++k)
    mtia += ",\n{\"ph\": \"X\", \"cat\": \"mtia_ccp_events\", \"name\": \"dma_request\", \"pid\": 9, \"tid\": 801, "
            "\"ts\": " + std::to_string(10 + 10 * k) + ", \"dur\": 8}";
  std::ofstream(path) << mtia << "\n]}\n";
  const auto r = run_process(kTool, {"summary", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "pil-trace: note: " + path +
                       ": not read: 2 begin/end events (\"ph\": \"B\", \"E\"; pil-trace reads complete events, "
                       "\"X\", as torch.profiler and Kineto write them); 3 mtia_ccp_events, 1 mtia_runtime events, "
                       "of a device pil-trace does not model (its figures are the rest of the trace's)\n");
  EXPECT_NE(r.out.find("no GPU work pil-trace reads: the trace's device work is of a kind it does not model "
                       "(mtia_ccp_events 3, mtia_runtime 1 events)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("a CPU run"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::mm"), std::string::npos) << r.out;
  // advise's header says the same (it said "CPU only"), and its JSON names the kinds.
  const auto a = run_process(kTool, {"advise", path});
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find(", the CPU side only: its device's work (3 mtia_ccp_events, 1 mtia_runtime events) is of a "
                       "kind pil-trace does not model\n"),
            std::string::npos)
      << a.out;
  const auto aj = run_process(kTool, {"advise", path, "--json"});
  EXPECT_EQ(aj.exit_code, 0) << aj.err;
  EXPECT_EQ(nlohmann::json::parse(aj.out)["unmodelled_device_events"],
            nlohmann::json({{"mtia_ccp_events", 3}, {"mtia_runtime", 1}}))
      << aj.out;
  // diff's second trace, and each trace ranks reads, are said the same way.
  const std::string note = "pil-trace: note: " + path + ": not read: 2 begin/end events";
  const auto d = run_process(kTool, {"diff", trace, path});
  EXPECT_NE(d.err.find(note), std::string::npos) << d.err;
  const auto k = run_process(kTool, {"ranks", path});
  EXPECT_NE(k.err.find(note), std::string::npos) << k.err;
  // UTF-16, as a Windows editor saves it: its byte-order mark, then two bytes a character.
  std::string utf16 = "\xFF\xFE";
  for (char c : std::string("{\"traceEvents\": []}")) utf16 += std::string{c, '\0'};
  std::ofstream(path, std::ios::binary) << utf16;
  const auto u = run_process(kTool, {"summary", path});
  EXPECT_EQ(u.exit_code, 2);
  EXPECT_EQ(u.err, "pil-trace: error: " + path +
                       ": the file is UTF-16 text (it starts with UTF-16's byte-order mark); allowed: UTF-8 JSON, as "
                       "torch.profiler writes it (convert: iconv -f UTF-16 -t UTF-8 IN > OUT)\n");
}

// Exit 70 is for a bug: no input reaches it on purpose, so the test sets the tool's test-only
// PIL_TRACE_TEST_INTERNAL_ERROR, which makes every command throw (a std::exception, or with
// "unknown" something else). Each answers with one line and 70, never 1 (check's findings).
TEST_F(PilTrace, AnInternalErrorInAnyCommandIsOneLineAndExit70) {
  const std::string out = dir.path() + "/out";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"summary", trace}, {"ops", trace}, {"kernels", trace}, {"api", trace},
        {"launches", trace}, {"streams", trace}, {"memory", trace}, {"expect", trace, "kernels=1"},
        {"chain", trace, "--range", "matmul_add"}, {"diff", trace, trace}, {"ranks", trace},
        {"svg", trace, "--out", out + ".svg"}, {"walk", trace}, {"check", trace},
        {"slice", trace, "--out", out + ".json", "--step", "0"}}) {
    for (const char* bug : {"1", "unknown"}) {
      SCOPED_TRACE(args[0] + std::string(" ") + bug);
      std::vector<std::string> env_args = {std::string("PIL_TRACE_TEST_INTERNAL_ERROR=") + bug, kTool};
      env_args.insert(env_args.end(), args.begin(), args.end());
      const auto r = run_process("/usr/bin/env", env_args);
      EXPECT_EQ(r.exit_code, 70) << r.out << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.err.rfind("pil-trace: internal error: ", 0), 0u) << r.err;
    }
  }
  EXPECT_FALSE(std::ifstream(out + ".svg").good());
  EXPECT_FALSE(std::ifstream(out + ".json").good());
}

// --idle-rule on a hand-made stream (times in us; one stream, steps [0, 100) and [100, 200)):
//   k1 [5.4, 20.6]    launched at 1.0     k2 [21.2, 30.2]  launched at 3.0
//   k3 [56.0, 60.0]   launched at 50.0    k4 [100.5, 110]  launched at 57.0
//   k5 [152.0, 160.0] launched at 150.0 (in the last step)
// HTA's rule: start rounded up, end down, to whole us; with two step names only the work
// launched before the last step starts (k5 is left out); gap = next start - previous end:
//   k1 -> k2: 22 - 20 = 2, the launch (3) started before 20, 2 < 30: kernel wait 2 (rounded to
//             the nearest us, 21 - 21 = 0)
//   k2 -> k3: 56 - 30 = 26, the launch (50) started after 30: host wait 26
//   k3 -> k4: 101 - 60 = 41, the launch (57) started before 60, 41 >= 30: other 41
// (unrounded, 0.6 / 25.8 / 40.5; with k5, 42 more of host wait). pil-trace's rule, over the
// window [0, 200]: before k1 5.4 host (its launch ended at 3 after 0), 0.6 kernel, 25.8 host,
// 40.5 other (k4's launch ended at 59, before 60), 42 host (k5's at 152, after 110), 40 other
// after the last work: host 73.2, kernel 0.6, other 80.5. Busy: 45.7 of 200 (22.85%).
// `base_us` moves every time (the epoch times Kineto writes: float64 keeps quarter us there);
// `k3_dur` is k3's duration in tenths of a us; `gpu_step` adds step 1's range mirrored on the
// GPU stream, where it starts when the GPU reaches the step (at 151 us, after k5's launch).
std::string idle_trace(int64_t base_us = 0, int k3_dur = 40, bool gpu_step = false) {
  auto at = [&](int tenths) { return std::to_string(base_us + tenths / 10) + "." + std::to_string(tenths % 10); };
  std::string s = "{\"traceEvents\": [\n";
  auto add = [&](const std::string& e) { s += (s.size() > 18 ? ",\n  " : "  ") + e; };
  for (int k = 0; k < 2; ++k)
    add("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" + std::to_string(k) +
        "\", \"pid\": 1, \"tid\": 1, \"ts\": " + at(1000 * k) + ", \"dur\": 100}");
  if (gpu_step)
    add("{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 0, "
        "\"tid\": 7, \"ts\": " + at(1510) + ", \"dur\": 9}");
  struct Work {
    const char* name;
    int launch, launch_dur, start, dur;  // tenths of a us
  };
  const Work work[] = {{"k1", 10, 20, 54, 152},  {"k2", 30, 20, 212, 90},   {"k3", 500, 50, 560, k3_dur},
                       {"k4", 570, 20, 1005, 95}, {"k5", 1500, 20, 1520, 80}};
  for (int c = 0; c < 5; ++c) {
    const std::string corr = std::to_string(c + 1);
    const Work& w = work[c];
    add("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": " + at(w.launch) + ", \"dur\": " + std::to_string(w.launch_dur / 10) + "." +
        std::to_string(w.launch_dur % 10) + ", \"args\": {\"correlation\": " + corr + "}}");
    add(std::string("{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"") + w.name +
        "\", \"pid\": 0, \"tid\": 7, \"ts\": " + at(w.start) + ", \"dur\": " + std::to_string(w.dur / 10) + "." +
        std::to_string(w.dur % 10) + ", \"args\": {\"correlation\": " + corr + ", \"device\": 0, \"stream\": 7}}");
  }
  return s + "\n]}\n";
}

// The stream's row of `streams`' table: its cells split at blanks (the figures' commas kept).
std::vector<std::string> stream_row(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string c; cells >> c;) row.push_back(c);
    if (row.size() == 8 && row[0] == "0" && row[1] == "7") return row;
  }
  return {};
}

TEST_F(PilTrace, IdleRuleHtaSplitsAHandMadeStreamAsHtaDoes) {
  const std::string path = dir.path() + "/idle.json";
  std::ofstream(path) << idle_trace();
  struct Want {
    std::string rule;
    int64_t host, kernel, other;
  };
  for (const Want& w : {Want{"hta", 26'000, 2'000, 41'000}, Want{"pil", 73'200, 600, 80'500}}) {
    SCOPED_TRACE(w.rule);
    const auto js = run_process(kTool, {"streams", path, "--idle-rule", w.rule, "--json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["idle_rule"], w.rule);
    ASSERT_EQ(j["streams"].size(), 1u);
    EXPECT_EQ(j["streams"][0]["host_wait_ns"], w.host);
    EXPECT_EQ(j["streams"][0]["kernel_wait_ns"], w.kernel);
    EXPECT_EQ(j["streams"][0]["other_idle_ns"], w.other);
    const auto sj = nlohmann::json::parse(run_process(kTool, {"summary", path, "--idle-rule", w.rule, "--json"}).out);
    EXPECT_EQ(sj["gpu"]["idle"]["rule"], w.rule);
    EXPECT_EQ(sj["gpu"]["idle"]["host_wait_ns"], w.host);
    EXPECT_EQ(sj["gpu"]["idle"]["kernel_wait_ns"], w.kernel);
    EXPECT_EQ(sj["gpu"]["idle"]["other_ns"], w.other);
  }
  const auto text = run_process(kTool, {"streams", path, "--idle-rule", "hta"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(stream_row(text.out),
            (std::vector<std::string>{"0", "7", "22.9", "45,700", "26,000", "2,000", "41,000", "5"}))
      << text.out;
  EXPECT_NE(text.out.find("Holistic Trace Analysis's rule"), std::string::npos) << text.out;
  // The default is pil-trace's rule.
  EXPECT_EQ(stream_row(run_process(kTool, {"streams", path}).out),
            (std::vector<std::string>{"0", "7", "22.9", "45,700", "73,200", "600", "80,500", "5"}));
  // Summary: of 69 us idle, 26 host (37.7%), 2 kernel (2.9%), 41 other (59.4%).
  const auto summary = run_process(kTool, {"summary", path, "--idle-rule", "hta"});
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("(Holistic Trace Analysis's rule): host wait 37.7%, kernel wait 2.9%, "
                             "other 59.4%"),
            std::string::npos)
      << summary.out;
}

// HTA's rule as HTA computes it, on the hand-made stream above:
// - its times are float64 microseconds: at epoch times (1.7e15 us) a quarter us apart, so k3's
//   end, 59.9 us after a whole one, rounds to 60.0 before HTA floors it: the gap to k4 is 41 us
//   there and 42 us near zero (k3 lasting 3.9 us instead of 4.0);
// - its last step is the last "ProfilerStep" event that is not GPU work, the range mirrored on
//   the GPU stream too (gpu_user_annotation, at 151 us): k5, launched at 150 us, is kept, and its
//   gap after k4 (152 - 110, launched after k4 ended) is 42 us more of host wait.
// Each figure as hta_idle_compare.py's run of HTA 0.5.0 gave it on these traces.
TEST_F(PilTrace, IdleRuleHtaRoundsAsFloat64AndCutsAtTheLastStepOnTheGpuToo) {
  struct Case {
    const char* what;
    int64_t base_us;
    int k3_dur;
    bool gpu_step;
    int64_t host, kernel, other;
  };
  for (const Case& c : {Case{"near zero", 0, 39, false, 26'000, 2'000, 42'000},
                        Case{"epoch times", 1712195495500000, 39, false, 26'000, 2'000, 41'000},
                        Case{"the step on the GPU", 0, 40, true, 68'000, 2'000, 41'000}}) {
    SCOPED_TRACE(c.what);
    const std::string path = dir.path() + "/idle_hta.json";
    std::ofstream(path) << idle_trace(c.base_us, c.k3_dur, c.gpu_step);
    const auto js = run_process(kTool, {"streams", path, "--idle-rule", "hta", "--json"});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const auto j = nlohmann::json::parse(js.out);
    ASSERT_EQ(j["streams"].size(), 1u);
    EXPECT_EQ(j["streams"][0]["host_wait_ns"], c.host);
    EXPECT_EQ(j["streams"][0]["kernel_wait_ns"], c.kernel);
    EXPECT_EQ(j["streams"][0]["other_idle_ns"], c.other);
  }
}

// A rule is named (pil or hta, any case): anything else, a number too, is one line naming both.
TEST_F(PilTrace, ABadIdleRuleIsOneLineAndExit2) {
  for (const char* command : {"streams", "summary"})
    for (const char* rule : {"nope", "1"}) {
      SCOPED_TRACE(std::string(command) + " " + rule);
      const auto r = run_process(kTool, {command, trace, "--idle-rule", rule});
      EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_EQ(r.err, "pil-trace: error: --idle-rule: unknown value '" + std::string(rule) +
                           "'; allowed: pil|hta\n");
    }
  const auto upper = run_process(kTool, {"streams", trace, "--idle-rule", "HTA", "--json"});
  EXPECT_EQ(upper.exit_code, 0) << upper.err;
  EXPECT_EQ(nlohmann::json::parse(upper.out)["idle_rule"], "hta");
}

// A GEMM kernel's grid follows M and N, not K: a public LoRA run's ampere_sgemm_128x128_tn ran
// at one grid for [4096, 768] x [768, 768] (315 us) and for the FFN's [4096, 3072] x [3072, 768]
// (1.17 ms), and the longer read as outliers. Where the trace recorded shapes, each kernel is
// held against those its operator's shapes launched: of nine small products one of 700 us (over
// twice their 300 us) is an outlier, the three of 1200 us are none; without shapes, all four are.
TEST_F(PilTrace, AGemmKernelIsAnOutlierOnlyAgainstItsOwnOperatorShapes) {
  for (bool shapes : {true, false}) {
    pil::test::TraceBuilder b;
    b.device("NVIDIA A100 80GB PCIe");
    b.step(1, 0, 20000);
    double at = 10;
    for (int k = 0; k < 12; ++k) {
      const bool big = k % 4 == 3;
      int64_t id = 0;
      b.op("aten::addmm", at, 20,
           !shapes ? "" : big ? "[[768], [4096, 3072], [3072, 768]]" : "[[768], [4096, 768], [768, 768]]",
           !shapes ? "" : "[\"float\", \"float\", \"float\"]", 1, &id);
      b.kernel("ampere_sgemm_128x128_tn", b.call("cudaLaunchKernel", at + 5, 10, id), at + 20,
               big ? 1200 : k == 0 ? 700 : 300, 7, id);
      at += 1500;
    }
    const std::string path = dir.path() + "/gemm.json";
    std::ofstream(path) << b.str();
    const auto j = nlohmann::json::parse(run_process(kTool, {"launches", path, "--json"}).out);
    EXPECT_EQ(j["outliers"].size(), shapes ? 1u : 4u) << shapes;
  }
}

// A ROCm trace, as Kineto writes it there (HIP names, "stream": "0x5612a0c3e4f0" on the launch
// call, "size" and "kind" as decimal strings, the launch shape on the call), gives the same
// answers as its CUDA twin from every report, up to the API names (the launch shapes too: one
// kernel at two, no outlier against its own); neither says anything on stderr.
TEST_F(PilTrace, ARocmTraceEqualsItsCudaTwin) {
  using pil::test::Flavor;
  for (auto make : {pil::test::lagging_gpu_trace, pil::test::two_stream_trace, pil::test::two_shape_trace}) {
    const std::string cuda = dir.path() + "/cuda.json", rocm = dir.path() + "/rocm.json";
    std::ofstream(cuda) << make(Flavor::Cuda);
    std::ofstream(rocm) << make(Flavor::Rocm);
    // The API names mapped, and the blanks and rules a longer name adds to a table collapsed.
    auto same_names = [](std::string s) {
      for (size_t at = 0; (at = s.find("hip", at)) != std::string::npos;) s.replace(at, 3, "cuda");
      std::string out;
      for (char ch : s)
        if ((ch != ' ' && ch != '-') || out.empty() || out.back() != ch) out += ch;
      return out;
    };
    for (std::vector<std::string> args :
         {std::vector<std::string>{"summary"}, {"summary", "--json"}, {"ops"}, {"ops", "--json"},
          {"kernels"}, {"kernels", "--json"}, {"api", "--json"}, {"launches", "--json"},
          {"streams"}, {"streams", "--json"}, {"expect", "kernels=2"}}) {
      SCOPED_TRACE(args[0] + (args.size() > 1 ? " " + args[1] : ""));
      auto with = [&](const std::string& path) {
        auto a = args;
        a.insert(a.begin() + 1, path);
        return run_process(kTool, a);
      };
      const auto c = with(cuda), r = with(rocm);
      EXPECT_EQ(c.exit_code, r.exit_code);
      EXPECT_EQ(r.err, "");
      EXPECT_EQ(c.err, "");
      EXPECT_EQ(same_names(r.out), same_names(c.out));
    }
    EXPECT_NE(run_process(kTool, {"api", rocm}).out.find("hipLaunchKernel"), std::string::npos);
    if (make == pil::test::two_shape_trace) {  // each kernel against its own shape, the call's on ROCm
      for (const std::string& p : {cuda, rocm})
        EXPECT_EQ(nlohmann::json::parse(run_process(kTool, {"launches", p, "--json"}).out)["outliers"].size(), 0u) << p;
    }
    for (const std::string& p : {cuda, rocm}) {
      const auto svg = run_process(kTool, {"svg", p, "--out", p + ".svg", "--title", "t", "--step", "0"});
      EXPECT_EQ(svg.exit_code, make == pil::test::two_stream_trace ? 2 : 0) << svg.err;
    }
  }
}

// An argument of an unexpected type is read as absent and counted: the trace still reads, with
// one line on stderr; malformed JSON is still refused.
TEST_F(PilTrace, AnArgumentOfAnUnexpectedTypeIsSkippedAndSaidOnce) {
  std::string odd = pil::test::synthetic_gpu_trace();
  for (const std::string& from : {std::string("\"External id\": 3}"),
                                  std::string("\"correlation\": 13, \"External id\": 0}")}) {
    const size_t at = odd.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    odd.replace(at, from.size(), from.substr(0, from.find(':') + 2) + "{\"odd\": [1]}}");
  }
  const std::string path = dir.path() + "/odd.json";
  std::ofstream(path) << odd;
  const auto r = run_process(kTool, {"summary", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("2 event(s) had an argument of an unexpected type, read as absent "
                       "('External id' 1, 'correlation' 1)"),
            std::string::npos) << r.err;
  EXPECT_NE(r.out.find("what this trace says"), std::string::npos);
  const auto clean = run_process(kTool, {"summary", trace});
  EXPECT_EQ(clean.err, "") << "nothing said when nothing was skipped";
  for (const char* threads : {"1", "3"}) {  // the parallel read counts the same
    const auto t = run_process(kTool, {"api", path, "--threads", threads});
    EXPECT_EQ(t.err, r.err);
  }
  std::ofstream(path) << odd.substr(0, odd.size() / 2);  // malformed: cut in the middle
  const auto bad = run_process(kTool, {"summary", path});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err.rfind("pil-trace: error: ", 0), 0u) << bad.err;
}

}  // namespace

// pil-trace ranks: the report and its picture from two synthetic ranks; traces that cannot be
// read together answered with one line and exit 2.
namespace {

struct PilTraceRanks : ::testing::Test {
  TempDir dir;
  std::string write(const std::string& name, const std::string& text) {
    return pil::test::write_file(dir.path(), name, text);
  }
  void expect_refusal(const std::vector<std::string>& args, const std::string& says) {
    const auto r = run_process(kTool, args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.rfind("pil-trace: error: ", 0), 0u) << r.err;
  }
};

TEST_F(PilTraceRanks, TablesJsonAndALanePerRank) {
  const std::string a = write("r_rank0.json", pil::test::synthetic_rank_trace(0));
  const std::string b = write("r_rank1.json", pil::test::synthetic_rank_trace(1));
  const std::string svg = dir.path() + "/ranks.svg";
  const auto text = run_process(kTool, {"ranks", a, b, "--svg", svg, "--threads", "2"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("rank 1: the slowest in 1 of 2 steps"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("gloo:all_reduce"), std::string::npos);
  std::ifstream in(svg);
  const std::string picture((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(picture.find(">rank 0<"), std::string::npos);
  EXPECT_NE(picture.find(">rank 1<"), std::string::npos);
  const auto js = run_process(kTool, {"ranks", dir.path(), "--json"});  // the folder
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["steps"][0]["slowest_rank"], 1);
  EXPECT_EQ(j["steps"][0]["wait_ns"][0], 30000);
  EXPECT_EQ(j["ranks"][0]["steps"][0]["overlap_ns"], 10000);
}

// A rank whose trace had an argument of an unexpected type: read, and said once, by its file.
TEST_F(PilTraceRanks, ASkippedArgumentIsSaidForItsRank) {
  std::string odd = pil::test::synthetic_rank_trace(1);
  const std::string from = "\"External id\": 3}";
  const size_t at = odd.find(from);
  ASSERT_NE(at, std::string::npos);
  odd.replace(at, from.size(), "\"External id\": [3]}");
  const std::string a = write("k_rank0.json", pil::test::synthetic_rank_trace(0));
  const std::string b = write("k_rank1.json", odd);
  const auto r = run_process(kTool, {"ranks", a, b});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "pil-trace: note: " + b +
                       ": 1 event(s) had an argument of an unexpected type, read as absent "
                       "('External id' 1)\n");
}

// One of two ranks: analysed, with rank 1 said missing and the figures across ranks partial;
// a single process's trace (no distributedInfo) is rank 0 of 1, and said.
TEST_F(PilTraceRanks, OneOfTwoRanksPrintsPartialFigures) {
  const std::string r1 = write("p_rank1.json", pil::test::synthetic_rank_trace(1));
  const auto text = run_process(kTool, {"ranks", r1});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("missing rank 0 of 2: PARTIAL"), std::string::npos) << text.out;
  const auto j = nlohmann::json::parse(run_process(kTool, {"ranks", r1, "--json"}).out);
  EXPECT_EQ(j["partial"], true);
  EXPECT_EQ(j["missing_ranks"], nlohmann::json::array({0}));
  EXPECT_EQ(j["ranks"][0]["rank"], 1);
  EXPECT_EQ(j["steps"][0]["slowest_rank"], 1);
  EXPECT_EQ(j["steps"][0]["partial"], true);
  std::string single = pil::test::synthetic_rank_trace(0);
  const size_t at = single.find("\"distributedInfo\"");
  ASSERT_NE(at, std::string::npos);
  single.replace(at, 17, "\"notDistributed\"");
  const auto s = run_process(kTool, {"ranks", write("single.json", single)});
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("read as rank 0 of 1"), std::string::npos) << s.out;
}

TEST_F(PilTraceRanks, BadInputsAreOneLine) {
  const std::string r0 = write("s_rank0.json", pil::test::synthetic_rank_trace(0));
  const std::string other = write("s_rank1.json", pil::test::synthetic_rank_trace(1, 2, "another-run"));
  expect_refusal({"ranks", r0, other}, "ranks of different runs");
  const std::string full = pil::test::synthetic_rank_trace(1);
  const std::string cut = write("t_rank1.json", full.substr(0, full.size() * 2 / 3));
  expect_refusal({"ranks", r0, cut}, "t_rank1.json");
  expect_refusal({"ranks", r0, dir.path() + "/nothing.json"}, "nothing.json");
  expect_refusal({"ranks", r0, r0}, "s_rank0.json: given twice");
}

// A folder's files only (a FIFO named rank1.json held the read up for ever); a rank number too
// large for one is no rank (std::stoi threw: an internal error).
TEST_F(PilTraceRanks, AFolderReadsItsFilesAndAHugeRankNumberIsNoRank) {
  write("u_rank0.json", pil::test::synthetic_rank_trace(0));
  const std::string fifo = dir.path() + "/u_rank1.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const auto r = run_process(kTool, {"ranks", dir.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 rank"), std::string::npos) << r.out;
  const std::string huge = write("rank3000000000.json", pil::test::synthetic_rank_trace(0));
  const auto h = run_process(kTool, {"ranks", huge});
  EXPECT_EQ(h.exit_code, 0) << h.err;
}

}  // namespace
