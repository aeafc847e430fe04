// pil-trace advise: the rules that run on every trace (where the host's time goes, memory,
// communication), each on a planted trace where it must fire, with its evidence and gain worked
// out by hand beside the trace, and on one where it must stay quiet; and lesson 05's pairing on
// its committed rank traces. Planted traces: trace_builder.h (JSON, as a file would be read), or
// a Trace built in memory with input shapes as text only (as the LibTorch adapter keeps them).
#include <gtest/gtest.h>

#include <string>

#include "trace/advice_lookup.h"
#include "trace/advise/advise.h"
#include "trace/advise/cpu_slices.h"
#include "trace/advise/names.h"  // needs_input_shapes
#include "trace/advise/rules.h"  // percent_text
#include "trace/parse.h"
#include "trace/ranks.h"
#include "trace/trace_builder.h"

namespace pil::trace {
namespace {

using test::advise_text;
using test::clean;
using test::figure;
using test::finding;
using test::has_finding;
using test::has_symptom;
using test::symptom;
using test::TraceBuilder;
using test::unable;

constexpr int64_t kUs = 1000;  // ns

// --- op_overhead ------------------------------------------------------------------------------

// Two steps of 100 us. In each: aten::mm (40 us, one call: median 40 us, not small), ten
// aten::view of 3 us, and aten::add (8 us) holding aten::empty (2 us): add's self time is 6 us.
// Short calls: 10 views + add + empty = 12 a step, self 30 + 6 + 2 = 38 us a step, 76 us of 200.
// With `launch`, add holds a cudaLaunchKernel in empty's place, and the trace no GPU work.
std::string small_operators(bool launch = false) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 100.0 * k;
    b.step(k + 1, s, 100);
    b.op("aten::mm", s + 5, 40);
    for (int v = 0; v < 10; ++v) b.op("aten::view", s + 46 + 4 * v, 3);
    b.op("aten::add", s + 90, 8);
    if (launch) b.call("cudaLaunchKernel", s + 91, 2);
    else b.op("aten::empty", s + 91, 2);
  }
  return b.str();
}

TEST(AdviseCpu, ManySmallOperatorsAreOverhead) {
  const Advice a = advise_text(small_operators());
  const Finding* f = finding(a, "op_overhead");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "op_overhead");
  EXPECT_DOUBLE_EQ(figure(s, "overhead_ns"), 76.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "overhead_share"), 0.38);
  EXPECT_DOUBLE_EQ(figure(s, "small_calls"), 24);
  EXPECT_DOUBLE_EQ(figure(s, "small_operators"), 3);
  EXPECT_DOUBLE_EQ(figure(s, "operator_calls"), 26);
  EXPECT_EQ(f->saved_ns, 76 * kUs);
  EXPECT_DOUBLE_EQ(f->speedup, 200.0 / 124.0);
  // The operators with the most short-call time first: views (20 x 3 us), add (2 x 6), empty.
  ASSERT_EQ(s.examples.size(), 3u);
  EXPECT_EQ(s.examples[0].name, "aten::view");
  EXPECT_EQ(s.examples[0].ts_ns, 46 * kUs);
  EXPECT_EQ(s.examples[0].detail, "20 calls, median self time 3.00 us, 60.0 us in all");
  EXPECT_EQ(s.examples[1].name, "aten::add");
  EXPECT_EQ(s.examples[2].name, "aten::empty");
}

// A GPU run whose GPU side was not recorded (the profiler's CUDA activity off, or lost): the
// host's time is launches and waits, not what a CPU run's would be, so the rules that take it for
// the steps' cost are not run, and the advice says why, not "CPU only".
TEST(AdviseCpu, ARunWhoseGpuSideWasNotRecordedIsNotJudgedAsACpuRun) {
  const Advice a = advise_text(small_operators(/*launch=*/true));
  EXPECT_FALSE(a.gpu);
  EXPECT_EQ(a.launches_without_gpu_work, 2);
  EXPECT_EQ(finding(a, "op_overhead"), nullptr) << "its 20 views would be overhead in a CPU run";
  for (const char* rule : {"op_overhead", "op_loop", "copies", "untraced", "fusion", "gemm_epilogue"})
    EXPECT_EQ(unable(a, rule).rfind("the trace's GPU side was not recorded (2 CUDA calls start GPU work, none is in "
                                    "the trace; pil-trace check)", 0),
              0u)
        << rule << ": " << unable(a, rule);
  EXPECT_TRUE(unable(a, "memory_peak").find("no memory events") != std::string::npos) << "the rules that do not "
                                                                                          "read the host's time run";
  EXPECT_NE(format_advice(a, "t.json").find("the 2 profiled steps (200 us), GPU work not recorded\n"),
            std::string::npos)
      << format_advice(a, "t.json");

  // Calls that only wait or ask start no GPU work: a CPU run's trace all the same.
  TraceBuilder sync;
  sync.step(1, 0, 100);
  for (int v = 0; v < 20; ++v) sync.op("aten::view", 1 + 4 * v, 3);
  sync.call("cudaDeviceSynchronize", 90, 2);
  const Advice cpu = advise_text(sync.str());
  EXPECT_EQ(cpu.launches_without_gpu_work, 0);
  EXPECT_EQ(cpu.sync_or_query_calls, 1);
  EXPECT_NE(finding(cpu, "op_overhead"), nullptr);
  EXPECT_NE(format_advice(cpu, "t.json")
                .find(", CPU only as recorded (no GPU work, and its 1 CUDA call only synchronizes or queries: any "
                      "work waited for was launched before recording began)\n"),
            std::string::npos)
      << format_advice(cpu, "t.json");
  EXPECT_EQ(advice_json(cpu)["sync_or_query_calls"], 1);
}

TEST(AdviseCpu, FewLongOperatorsAreNotOverhead) {
  // One step of 100 us: aten::mm 80 us, two views of 3 us: 6% in short calls.
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::mm", 2, 80);
  b.op("aten::view", 85, 3);
  b.op("aten::view", 90, 3);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "op_overhead"), nullptr);
  EXPECT_TRUE(clean(a, "op_overhead"));
}

TEST(AdviseCpu, LongCallsOfAMostlySmallOperatorAreWork) {
  // One step of 100 us: nine aten::copy_ of 2 us (median 2 us) and one of 70 us. Only the
  // short calls are overhead: 18 us, 18% (under 20%); all of copy_'s self time would be 88%.
  TraceBuilder b;
  b.step(1, 0, 100);
  for (int k = 0; k < 9; ++k) b.op("aten::copy_", 1 + 2.5 * k, 2);
  b.op("aten::copy_", 25, 70);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(symptom(a, "op_overhead"), nullptr);
}

// --- op_loop ----------------------------------------------------------------------------------

// Two steps of 10 ms. In each: aten::mm (3 ms), then a range "loss" holding a loop of 300
// iterations, each aten::select (4 us) then aten::neg (6 us), back to back from +4 ms to +7 ms:
// 600 short calls in a row, 300 of each operator in one loop. `slow_iteration`: the 101st
// iteration's neg takes 30 us (the thread preempted), and the rest 24 us later.
std::string per_element_loop(bool slow_iteration = false) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 10'000.0 * k;
    b.step(k + 1, s, 10'000);
    b.op("aten::mm", s + 100, 3000);
    b.range("loss", s + 3990, 3100);
    double t = s + 4000;
    for (int i = 0; i < 300; ++i) {
      const double neg = slow_iteration && i == 100 ? 30 : 6;
      b.op("aten::select", t, 4);
      b.op("aten::neg", t + 4, neg);
      t += 4 + neg;
    }
  }
  return b.str();
}

TEST(AdviseCpu, ALoopOfSmallOperatorsIsNamedWithItsCalls) {
  const Advice a = advise_text(per_element_loop());
  const Finding* f = finding(a, "op_loop");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  // The loop's stretch each step: 3 ms, every bit of it in the calls.
  EXPECT_DOUBLE_EQ(figure(s, "loop_ns"), 6000.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "loop_calls_ns"), 6000.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "loop_share"), 0.30);
  EXPECT_DOUBLE_EQ(figure(s, "loop_calls"), 1200);
  EXPECT_DOUBLE_EQ(figure(s, "looping_operators"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "loops"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "most_calls_in_one"), 300);
  EXPECT_EQ(f->saved_ns, 6000 * kUs);
  EXPECT_EQ(s.text,
            "a loop of small operators in the range loss: 1,200 short calls one after another (each under "
            "20.0 us, with what it calls), up to 300 of aten::neg in one loop; 6.00 ms in the calls, "
            "6.00 ms (30% of the steps) with the time between them");
  // Most time first: neg (600 x 6 us), then select (600 x 4 us).
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "aten::neg");
  EXPECT_EQ(s.examples[0].ts_ns, 4004 * kUs);
  EXPECT_EQ(s.examples[0].detail, "600 calls under loss (up to 300 in one loop), median 6.00 us, 3.60 ms in all");
  EXPECT_EQ(s.examples[1].name, "aten::select");
  // The calls' self time is 30% of the steps, past op_overhead's 20%: the overhead spread over
  // the program is op_overhead's, a loop's is op_loop's, named once.
  EXPECT_EQ(symptom(a, "op_overhead"), nullptr);
}

// With no caller, a loop is the step's; on a trace without steps, the thread's top level's (a
// real A100 trace with none, GPUPuzzlers' .item() loop, read "4,096 calls under the step").
TEST(AdviseCpu, ALoopWithNoCallerIsTheStepsOrTheTopLevels) {
  auto loop = [](bool steps) {
    TraceBuilder b;
    if (steps) b.step(1, 0, 10'000);
    b.op("aten::mm", 100, 3000);
    for (int i = 0; i < 300; ++i) b.op("aten::neg", 4000 + 10 * i, 8);
    return b.str();
  };
  const Advice in_step = advise_text(loop(true));
  const Symptom* s = symptom(in_step, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->text.rfind("a loop of small operators directly in the step: ", 0), 0u) << s->text;
  const Advice without = advise_text(loop(false));
  const Symptom* w = symptom(without, "op_loop");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->text.rfind("a loop of small operators at the top level: ", 0), 0u) << w->text;
  EXPECT_EQ(w->examples.at(0).detail.rfind("300 calls under the top level", 0), 0u) << w->examples[0].detail;
}

TEST(AdviseCpu, AnIterationThatTookLongerStaysInItsLoop) {
  // The 30 us neg is longer than a short call, but the loop called neg short before: the same
  // loop, 24 us longer each step.
  const Advice a = advise_text(per_element_loop(true));
  const Symptom* s = symptom(a, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "loops"), 2);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_calls"), 1200);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_ns"), 2 * 3024.0 * kUs);
}

TEST(AdviseCpu, ShortCallsThatAreNoLoopAreNotOne) {
  // Each step of 10 ms: (a) 255 calls of aten::add under "few", one short of a loop; (b) 300
  // of aten::mul under "split", cut in two by a long aten::mm no call before it made short;
  // (c) 300 aten::select inside one aten::unbind (its own, not the program's calls); (d) 300
  // aten::sub under "spread" with a 30 us mm between every two (a model's layers).
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 40'000.0 * k;
    b.step(k + 1, s, 40'000);
    b.range("few", s + 10, 2600);
    for (int i = 0; i < 255; ++i) b.op("aten::add", s + 20 + 10 * i, 8);
    b.range("split", s + 3000, 3200);
    for (int i = 0; i < 300; ++i) {
      const double at = s + 3010 + 10 * i + (i >= 150 ? 100 : 0);
      if (i == 150) b.op("aten::mm", s + 3010 + 1500, 90);
      b.op("aten::mul", at, 8);
    }
    b.op("aten::unbind", s + 6500, 3100);
    for (int i = 0; i < 300; ++i) b.op("aten::select", s + 6510 + 10 * i, 8);
    b.range("spread", s + 10'000, 12'100);
    for (int i = 0; i < 300; ++i) {
      b.op("aten::mm", s + 10'010 + 40 * i, 30);
      b.op("aten::sub", s + 10'041 + 40 * i, 8);
    }
  }
  const Advice a = advise_text(b.str());
  EXPECT_EQ(symptom(a, "op_loop"), nullptr);
  EXPECT_TRUE(clean(a, "op_loop"));
}

// A trace Python's torch.profiler wrote (fixtures/make_python_loop_trace.py): a loss computed
// row by row over 300 rows in a `loss` range, its backward with no range around it, two steps.
// The loops are the forward's in `loss` and the autograd nodes' under the step, four in all; the
// first SelectBackward0 of each step took longer than a short call before any was short, so each
// backward loop holds 599 of them, not 600.
TEST(AdviseCpu, PythonsRowByRowLossIsALoop) {
  const Trace t = parse_trace_file(std::string(PIL_SOURCE_DIR) +
                                   "/tests/trace/fixtures/python_row_loop.pt.trace.json.gz");
  const TraceIndex index(t);
  const Advice a = advise(index);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings.front().cause, "op_loop");
  const Symptom* s = symptom(a, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "loops"), 4);
  EXPECT_DOUBLE_EQ(figure(*s, "looping_operators"), 6);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_calls"), 4790);
  EXPECT_DOUBLE_EQ(figure(*s, "most_calls_in_one"), 599);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_ns"), 27'349'652);
  EXPECT_EQ(s->text.rfind("a loop of small operators directly in the step and in the range loss: 4,790 short calls", 0), 0u) << s->text;
  ASSERT_FALSE(s->examples.empty());
  EXPECT_EQ(s->examples[0].name, "autograd::engine::evaluate_function: SelectBackward0");
  EXPECT_EQ(s->examples[0].detail.rfind("1,198 calls under the step (up to 599 in one loop)", 0), 0u)
      << s->examples[0].detail;
  EXPECT_EQ(symptom(a, "op_overhead"), nullptr);  // the loop's calls are op_loop's
}

// On a trace with GPU work the host's time costs the step only while the GPU waits for it: the
// GPU rules judge it there, and the rules about the host's time say so instead of guessing. A
// loop is judged there too, by what the GPU spent on it (below); 20 calls are none.
TEST(AdviseCpu, OnAGpuTraceTheGpuRulesJudgeTheHostsTime) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 100);
  for (int v = 0; v < 20; ++v) b.op("aten::view", 2 + 4 * v, 3);  // 60% in short calls
  const int corr = b.call("cudaLaunchKernel", 85, 5);
  b.kernel("k", corr, 92, 5);
  const Advice a = advise_text(b.str());
  for (const char* rule : {"op_overhead", "untraced", "data_loading"})
    EXPECT_EQ(unable(a, rule),
              "the trace has GPU work: the host's time there is judged by the GPU's wait for it "
              "(launch-bound loop, host stalls)")
        << rule;
  EXPECT_TRUE(clean(a, "op_loop"));
}

// A loop on a GPU, launching a kernel per call. One step [0, 10000]: aten::mm [0, 50] launches
// a gemm [30, 3030]; then 300 aten::neg back to back from 4000, 10 each, each launching (call
// [t+2, t+7]) a kernel [t+8, t+10]: the loop's stretch is [4000, 7000). The GPU waits on the
// host in [3030, 4008] (8 of it inside the loop) and 8 before each of the other 299 kernels:
// 2400 inside the loop, 970 outside. The loop costs the GPU 2400 + 300 x 2 = 3000, 30% of the
// step (its host time, 3000, by chance the same). What is left to the launch-bound rules: 970
// waited in a GPU window of [30, 7000), 14%, under the 20% gpu_host_wait needs (with the loop's
// wait, 48%, it would have been named); the loop's launches, each longer than its kernel, are
// op_loop's, not short_kernels'.
std::string gpu_loop(bool launches) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10'000);
  b.op("aten::mm", 0, 50);
  b.kernel("gemm", b.call("cudaLaunchKernel", 10, 10), 30, launches ? 3000 : 8000);
  for (int i = 0; i < 300; ++i) {
    const double t = 4000 + 10.0 * i;
    b.op("aten::neg", t, 10);
    if (launches) b.kernel("neg_kernel", b.call("cudaLaunchKernel", t + 2, 5), t + 8, 2);
  }
  return b.str();
}

TEST(AdviseCpu, ALoopOnAGpuCostsWhatTheGpuSpentOnIt) {
  const Advice a = advise_text(gpu_loop(true));
  const Symptom* s = symptom(a, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_ns"), 3000.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_wait_ns"), 2400.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "launched_ns"), 600.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "cost_share"), 0.30);
  EXPECT_EQ(s->saved_ns, 3000 * kUs);
  EXPECT_NE(s->text.find("; the GPU waited 2.40 ms for the loops' launches and ran 600 us of the work they "
                         "launched: 3.00 ms together, 30% of the steps"),
            std::string::npos)
      << s->text;
  EXPECT_EQ(symptom(a, "gpu_host_wait"), nullptr);
  EXPECT_EQ(symptom(a, "short_kernels"), nullptr);
}

// The same loop launching nothing (its operators on host tensors) while the gemm, now [30, 8030],
// keeps the GPU busy through it: the GPU never waited for the loop, which costs the step nothing.
TEST(AdviseCpu, ALoopTheGpuNeverWaitedForIsNoFinding) {
  const Advice a = advise_text(gpu_loop(false));
  EXPECT_EQ(symptom(a, "op_loop"), nullptr);
  EXPECT_TRUE(clean(a, "op_loop"));
  AdviseOptions none;
  none.min_saved_share = 0;
  const Trace t = parse_trace_text(gpu_loop(false));
  const TraceIndex index(t);
  EXPECT_FALSE(has_symptom(advise(index, none), "op_loop")) << "a cost of nothing is no finding, at any floor";
}

// Each of 300 calls launches a kernel: 110 us with its launch call of 20 us, 90 us without. The
// operator is a small one on a GPU (under kLoopCallGpuNs less its launches, and it launches 2 us
// of work); the launch's own time is the launch rules' to judge. (Lesson 06's per-token loss on
// the H200 machine, 2026-12-04: aten::log_softmax a median 19.6 us with its launch, 44% of the
// calls at 20 us or more; the engine's calls for its backward's SelectBackward0 48 us less their launches.) Without a
// launch a 110 us call is a long one.
std::string launching_loop(bool launches) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 40'000);
  for (int i = 0; i < 300; ++i) {
    const double t = 1000 + 115.0 * i;
    b.op("aten::log_softmax", t, 110);
    if (launches) b.kernel("softmax_kernel", b.call("cudaLaunchKernel", t + 5, 20), t + 30, 2);
  }
  if (!launches) b.kernel("gemm", b.call("cudaLaunchKernel", 100, 10), 120, 100);
  return b.str();
}

TEST(AdviseCpu, ALoopsLaunchCallsAreNotItsOperatorsOwnTime) {
  const Advice a = advise_text(launching_loop(true));
  const Symptom* s = symptom(a, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "loop_calls"), 300);
  EXPECT_DOUBLE_EQ(figure(*s, "most_calls_in_one"), 300);
  EXPECT_NE(s->text.find("(each under 100 us, with what it calls less its launch calls)"), std::string::npos)
      << s->text;
  AdviseOptions none;
  none.min_saved_share = 0;
  EXPECT_FALSE(has_symptom(advise_text(launching_loop(false), none), "op_loop"))
      << "110 us of the operator's own is a long call";
}

// On a CPU-only trace a call is short under 20 us: the same loop's calls of 25 us are long ones.
TEST(AdviseCpu, OnTheCpuALoopsCallIsShortUnderTwentyMicroseconds) {
  auto loop = [](double us) {
    TraceBuilder b;
    b.step(1, 0, 10'000);
    for (int i = 0; i < 300; ++i) b.op("aten::log_softmax", 1000 + 30.0 * i, us);
    return b.str();
  };
  const Advice a15 = advise_text(loop(15));
  const Symptom* s = symptom(a15, "op_loop");
  ASSERT_NE(s, nullptr);
  EXPECT_NE(s->text.find("(each under 20.0 us, with what it calls)"), std::string::npos) << s->text;
  AdviseOptions none;
  none.min_saved_share = 0;
  EXPECT_FALSE(has_symptom(advise_text(loop(25), none), "op_loop"));
}

// --- copies -----------------------------------------------------------------------------------

// Two steps of 100 us. In each: linear_fwd [0, 50) holding `caller` [5, 45), which copies
// (aten::copy_ [10, 30): 20 us); aten::to [60, 75) -> _to_copy -> empty_strided, copy_
// (15 us, counted once); aten::contiguous [80, 84) -> clone -> copy_ (4 us). Copies: 39 us a
// step, 78 us of 200 (39%); by caller: aten::matmul 40 us (51%), the step itself 38 us (49%).
std::string copies_trace(const char* caller = "aten::matmul", bool steps = true) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 100.0 * k;
    if (steps) b.step(k + 1, s, 100);
    b.range("linear_fwd", s, 50);
    b.op(caller, s + 5, 40);
    b.op("aten::copy_", s + 10, 20);
    b.op("aten::to", s + 60, 15);
    b.op("aten::_to_copy", s + 61, 13);
    b.op("aten::empty_strided", s + 61.5, 1);
    b.op("aten::copy_", s + 63, 10);
    b.op("aten::contiguous", s + 80, 4);
    b.op("aten::clone", s + 80.5, 3);
    b.op("aten::copy_", s + 81, 2);
  }
  return b.str();
}

TEST(AdviseCpu, CopiesTakingALargeShareAndWhoCalledThem) {
  const Advice a = advise_text(copies_trace());
  const Finding* f = finding(a, "copies");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "copy_ns"), 78.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "copy_share"), 0.39);
  EXPECT_DOUBLE_EQ(figure(s, "copies"), 6);
  EXPECT_DOUBLE_EQ(figure(s, "top_caller_share"), 40.0 / 78.0);
  EXPECT_EQ(f->saved_ns, 78 * kUs);
  EXPECT_NE(s.text.find("called from aten::matmul 51%, the step itself 49%"), std::string::npos)
      << s.text;
  ASSERT_EQ(s.examples.size(), 3u);
  EXPECT_EQ(s.examples[0].name, "aten::copy_");
  EXPECT_EQ(s.examples[0].dur_ns, 20 * kUs);
  EXPECT_EQ(s.examples[0].detail, "called from aten::matmul");
  EXPECT_EQ(s.examples[2].name, "aten::to");
  EXPECT_EQ(s.examples[2].detail, "called from the step itself");
  // The command to look closer lists what the first caller runs, in the trace advise read.
  EXPECT_EQ(f->lesson.command, "build/bin/pil-trace chain traces/TRACE.pt.trace.json --range aten::matmul");
  AdviseOptions named;
  named.trace_path = "t.json";
  const Advice in_range = advise_text(copies_trace("my range#1"), named);
  EXPECT_EQ(finding(in_range, "copies")->lesson.command, "build/bin/pil-trace chain t.json --range 'my range#1'");
  // Without steps (a trace of other projects' making, often), the copy with no caller is called
  // from the thread's top level: there is no step.
  const Advice without_steps = advise_text(copies_trace("aten::matmul", false));
  const Finding* w = finding(without_steps, "copies");
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->symptoms.at(0).text.find("called from aten::matmul 51%, the top level 49%"), std::string::npos)
      << w->symptoms.at(0).text;
  EXPECT_EQ(w->symptoms.at(0).examples.at(2).detail, "called from the top level");
  // First caller the top level (or the step itself): chain cannot take it; the cause's command.
  TraceBuilder top;
  top.op("aten::copy_", 0, 60);
  top.op("aten::mm", 60, 40);
  const Advice at_top = advise_text(top.str());
  EXPECT_EQ(finding(at_top, "copies")->lesson.command,
            "build/bin/pil-trace chain traces/TRACE.pt.trace.json --range aten::copy_");
  // With steps on thread 1, a copy on thread 2 with no caller (autograd's thread, a loader's) is
  // at its own thread's top level, not in a step there.
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::mm", 5, 60);
  b.op("aten::copy_", 10, 30, "", "", 2);
  const Advice other_thread = advise_text(b.str());
  const Symptom* o = symptom(other_thread, "copies");
  ASSERT_NE(o, nullptr);
  EXPECT_NE(o->text.find("called from the top level 100%"), std::string::npos) << o->text;
}

// Under addmm, the copy is the product's starting value (its bias written into the output): part
// of the product, not counted. What is left: 38 us of 200 (19%).
TEST(AdviseCpu, AnAddmmsBiasCopyIsPartOfTheProduct) {
  const Advice a = advise_text(copies_trace("aten::addmm"));
  const Finding* f = finding(a, "copies");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(figure(f->symptoms.at(0), "copy_ns"), 38.0 * kUs);
  EXPECT_EQ(f->saved_ns, 38 * kUs);
}

TEST(AdviseCpu, NestedCopiesCountOnce) {
  // One step of 100 us: aten::to [10, 16) -> _to_copy [10.5, 15.5) -> copy_ [11, 15): 6 us,
  // 6% (under 10%). Their totals added up would be 6 + 5 + 4 = 15%.
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::to", 10, 6);
  b.op("aten::_to_copy", 10.5, 5);
  b.op("aten::copy_", 11, 4);
  b.op("aten::mm", 20, 75);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "copies"), nullptr);
  EXPECT_TRUE(clean(a, "copies"));
}

TEST(AdviseCpu, ACopyBetweenHostAndGpuIsThePageableCopyRules) {
  // A GPU step of 100 us: aten::copy_ [10, 58) waiting 40 us in cudaMemcpyAsync [12, 52) for a
  // host-to-device copy: the GPU rules' (pageable copies, synchronizes). Its CPU time, 48%, does
  // not count on a GPU trace, nor does the copy itself.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 100);
  int64_t id = 0;
  b.op("aten::copy_", 10, 48, "", "", 1, &id);
  const int corr = b.call("cudaMemcpyAsync", 12, 40, id);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", corr, 15, 35, 1 << 20);
  b.op("aten::mm", 60, 35);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "copies"), nullptr);
}

TEST(AdviseCpu, OnAGpuTheCopiesGpuTime) {
  // A GPU step of 100 us: aten::contiguous [10, 20) launches a copy kernel of 30 us [25, 55);
  // aten::copy_ [60, 70) a host-to-device copy [65, 90) (the pageable-copy rule's). The copies'
  // GPU time: 30 us, 30%.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 100);
  int64_t id = 0;
  b.op("aten::contiguous", 10, 10, "", "", 1, &id);
  int corr = b.call("cudaLaunchKernel", 12, 5, id);
  b.kernel("copy_kernel", corr, 25, 30, 7, id);
  b.op("aten::copy_", 60, 10, "", "", 1, &id);
  corr = b.call("cudaMemcpyAsync", 61, 5, id);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", corr, 65, 25, 1 << 20);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "copies");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "copy_ns"), 30.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "copy_share"), 0.30);
  EXPECT_DOUBLE_EQ(figure(*s, "copies"), 2);
  EXPECT_EQ(s->saved_ns, 30 * kUs);
  ASSERT_FALSE(s->examples.empty());
  EXPECT_EQ(s->examples[0].name, "aten::contiguous");
}

// torch.compile's cudagraphs: CompiledFunction [5, 95) copies its input (aten::copy_ [10, 20),
// a device-to-device copy of 30 us [25, 55)), then replays its graph (cudaGraphLaunch [60, 65),
// a kernel [70, 80)). The copies' 30 us are the graph's inputs copied into its buffers: said so.
// The same copy in a range that launches no graph is not.
TEST(AdviseCpu, CopiesIntoACudaGraphsInputsAreSaidSo) {
  for (const bool graph : {true, false}) {
    TraceBuilder b;
    b.device("NVIDIA V100-SXM2-16GB", 80, 16LL << 30, 7, 0);
    b.step(1, 0, 100);
    b.range("CompiledFunction", 5, 90);
    int64_t id = 0;
    b.op("aten::copy_", 10, 10, "", "", 1, &id);
    b.memcpy("Memcpy DtoD (Device -> Device)", b.call("cudaMemcpyAsync", 12, 5, id), 25, 30, 1 << 20);
    b.kernel("graph_kernel", b.call(graph ? "cudaGraphLaunch" : "cudaLaunchKernel", 60, 5), 70, 10);
    const Advice a = advise_text(b.str());
    const Symptom* s = symptom(a, "copies");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->text.find("then launch a CUDA graph") != std::string::npos, graph) << s->text;
    EXPECT_DOUBLE_EQ(figure(*s, "into_graphs_ns"), graph ? 30.0 * kUs : 0);
  }
}

// --- optimizer --------------------------------------------------------------------------------

// Two steps of 1000 us, each with the optimizer's range [600, 900): four aten::addcdiv_ of 40 us
// and four aten::lerp_ of 20 us in it. The optimizer: 300 us a step, 600 of 2000 (30%); eight
// operator calls a step; by self time addcdiv_ 320 of 600 us (53%), lerp_ 160 (27%).
std::string optimizer_trace(const std::string& range, double range_us = 300) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    b.op("aten::mm", s + 10, 500);
    if (!range.empty()) b.range(range, s + 600, range_us);
    for (int p = 0; p < 4; ++p) {
      b.op("aten::addcdiv_", s + 605 + 70 * p, range_us >= 300 ? 40 : 4);
      b.op("aten::lerp_", s + 646 + 70 * p, range_us >= 300 ? 20 : 2);
    }
  }
  return b.str();
}

TEST(AdviseCpu, TheOptimizersShareFromPythonsRange) {
  const Advice a = advise_text(optimizer_trace("Optimizer.step#AdamW.step"));
  const Finding* f = finding(a, "optimizer");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "optimizer_ns"), 600.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "optimizer_share"), 0.30);
  EXPECT_DOUBLE_EQ(figure(s, "operator_calls_per_step"), 8);
  EXPECT_DOUBLE_EQ(figure(s, "from_ranges"), 1);
  EXPECT_EQ(f->saved_ns, 600 * kUs);
  EXPECT_NE(s.text.find("by self CPU time aten::addcdiv_ 53%, aten::lerp_ 27%"), std::string::npos)
      << s.text;
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "Optimizer.step#AdamW.step");
}

// A slow first step dilutes the optimizer's share over all the steps: four steps, the first of
// 20,000 us (warm-up), each later one of 1000 us with an optimizer range of 300 us (the first's
// too). Over all: 1200 of 23,000, 5.2%, under the threshold; over the steps after the first: 900
// of 3000, 30%: found, and said so.
// Four steps, the first of `first_us`, the later ones of 1000 us, each with aten::mm and an
// optimizer range of 300 us at its end.
std::string slow_first_step_optimizer(double first_us) {
  TraceBuilder b;
  double at = 0;
  for (int k = 0; k < 4; ++k) {
    const double step = k == 0 ? first_us : 1000;
    b.step(k + 1, at, step);
    b.op("aten::mm", at + 10, step - 400);
    b.range("optimizer_step", at + step - 350, 300);
    at += step;
  }
  return b.str();
}

TEST(AdviseCpu, TheOptimizersShareIsJudgedWithoutASlowFirstStep) {
  const Advice a = advise_text(slow_first_step_optimizer(20000));
  const Symptom* s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(figure(*s, "optimizer_share"), 1200.0 / 23000.0, 1e-9);
  EXPECT_DOUBLE_EQ(figure(*s, "after_first_step_share"), 0.30);
  EXPECT_NE(s->text.find("; 30% of the steps after the first (900 us), whose slow first step dilutes the share over all"),
            std::string::npos)
      << s->text;
  EXPECT_EQ(s->saved_ns, 1200 * kUs);
}

// With a first step of 100,000 us the same optimizer is 1200 us of 103,000 (1.2%): 30% of the
// later steps, but a gain under the floor every finding keeps (--min-share, 2%): quiet.
TEST(AdviseCpu, TheOptimizersShareAfterASlowFirstStepKeepsTheGainsFloor) {
  const Advice a = advise_text(slow_first_step_optimizer(100000));
  EXPECT_EQ(symptom(a, "optimizer"), nullptr);
}

// On a GPU the later steps' share is the union of their optimizer work, as the share over all
// is: four steps (the first 20,000 us, then 1000 us each), each optimizer range launching two
// kernels of 300 us that run side by side on two streams: 300 us a step, not 600, and the GPU
// idle the range's first 30 us. Over all: 1320 of 23,000 (5.7%); after the first: 990 of 3000,
// 33% (not 63%).
TEST(AdviseCpu, OnAGpuTheOptimizersLaterShareCountsOverlapOnce) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  double at = 0;
  for (int k = 0; k < 4; ++k) {
    const double step = k == 0 ? 20000 : 1000;
    b.step(k + 1, at, step);
    b.range("optimizer_step", at + step - 350, 300);
    for (int p = 0; p < 2; ++p) {
      const int corr = b.call("cudaLaunchKernel", at + step - 345 + 10 * p, 5);
      b.kernel("multi_tensor_apply_kernel", corr, at + step - 320, 300, 7 + p);
    }
    at += step;
  }
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_NEAR(figure(*s, "optimizer_share"), 1320.0 / 23000.0, 1e-9);
  EXPECT_NEAR(figure(*s, "after_first_step_share"), 0.33, 1e-9);
}

TEST(AdviseCpu, TheOptimizersShareFromTheLessonsRange) {
  const Advice a = advise_text(optimizer_trace("optimizer_step"));
  const Symptom* s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "optimizer_share"), 0.30);
}

TEST(AdviseCpu, TheOptimizersShareFromItsOwnOperators) {
  // No range: Python's multi-tensor AdamW, aten::_foreach_addcdiv_ [600, 900) holding one
  // aten::addcdiv_ per parameter: 300 us a step again, one operator call a step.
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    b.op("aten::mm", s + 10, 500);
    b.op("aten::_foreach_addcdiv_", s + 600, 300);
    for (int p = 0; p < 4; ++p) b.op("aten::addcdiv_", s + 605 + 70 * p, 40);
  }
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "optimizer_ns"), 600.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "from_ranges"), 0);
  EXPECT_DOUBLE_EQ(figure(*s, "operator_calls_per_step"), 1);
}

TEST(AdviseCpu, ASmallOptimizerIsQuiet) {
  // Its range 100 us of 1000 a step: 10%. Per-parameter operators with no optimizer around them
  // (addcdiv_ in the model) are not the optimizer's.
  Advice a = advise_text(optimizer_trace("optimizer_step", 100));
  EXPECT_EQ(finding(a, "optimizer"), nullptr);
  EXPECT_TRUE(clean(a, "optimizer"));
  a = advise_text(optimizer_trace(""));
  EXPECT_TRUE(clean(a, "optimizer"));
}

// A GPU trace, two steps of 1000 us: the optimizer's range [600, 900) (30% of the CPU's time)
// launches four kernels of `kernel_us`, back to back from 610. With 70 us each: 280 us of GPU
// time a step, and the GPU idle 20 us of the range (before the first, after the last): 600 of
// 2000 (30%), a finding. With 20 us each: 80 us of GPU time and 220 idle while the host launches
// (a per-parameter loop over small tensors): a finding too; but with the GPU busy all the while
// on other work (`busy`: a backward's kernel on stream 8, [s + 110, s + 950)), 8%: quiet,
// whatever its CPU time.
std::string gpu_optimizer(double kernel_us, bool busy = false) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    if (busy) b.kernel("backward_kernel", b.call("cudaLaunchKernel", s + 100, 5), s + 110, 840, 8);
    b.range("optimizer_step", s + 600, 300);
    for (int p = 0; p < 4; ++p) {
      const int corr = b.call("cudaLaunchKernel", s + 605 + 70 * p, 5);
      b.kernel("multi_tensor_apply_kernel", corr, s + 610 + kernel_us * p, kernel_us);
    }
  }
  return b.str();
}

TEST(AdviseCpu, OnAGpuTheOptimizersGpuTimeAndTheGpusIdleWhileItRuns) {
  Advice a = advise_text(gpu_optimizer(70));
  const Symptom* s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "optimizer_ns"), 600.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_idle_ns"), 40.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "optimizer_share"), 0.30);
  EXPECT_EQ(s->saved_ns, 600 * kUs);
  a = advise_text(gpu_optimizer(20));
  s = symptom(a, "optimizer");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_idle_ns"), 440.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "optimizer_share"), 0.30);
  EXPECT_NE(s->text.find("on the GPU, its work and the GPU's idle while the host ran it (600 us, of it 440 us idle"), std::string::npos) << s->text;
  a = advise_text(gpu_optimizer(20, /*busy=*/true));
  EXPECT_TRUE(clean(a, "optimizer"));
}

// --- untraced and data loading ----------------------------------------------------------------

// Two steps of 100 us on thread 1.
// Step 1: A [0, 30); on thread 2, X [30, 45); B [60, 95). Untraced: [45, 60) = 15 us; the 5 us
//   before the step's end is under 10 us: left out.
// Step 2: A [100, 130); a range "load" [130, 140); B [160, 195). Untraced: [140, 160) = 20 us.
// 35 us of 200: 17.5%.
std::string untraced_trace() {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::mm", 0, 30);
  b.op("aten::add", 30, 15, "", "", 2);
  b.op("aten::relu", 60, 35);
  b.step(2, 100, 100);
  b.op("aten::mm", 100, 30);
  b.range("load", 130, 10);
  b.op("aten::relu", 160, 35);
  return b.str();
}

TEST(AdviseCpu, TimeInAStepThatNoOperatorCovers) {
  const Advice a = advise_text(untraced_trace());
  const Finding* f = finding(a, "untraced");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "untraced");
  EXPECT_DOUBLE_EQ(figure(s, "untraced_ns"), 35.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "untraced_share"), 0.175);
  EXPECT_DOUBLE_EQ(figure(s, "gaps"), 2);
  EXPECT_EQ(f->saved_ns, 35 * kUs);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].ts_ns, 140 * kUs);  // the longest first
  EXPECT_EQ(s.examples[0].dur_ns, 20 * kUs);
  EXPECT_EQ(s.examples[0].detail, "after load, before aten::relu");
  EXPECT_EQ(s.examples[1].ts_ns, 45 * kUs);
  EXPECT_EQ(s.examples[1].detail, "after aten::add, before aten::relu");
}

// A share just under a whole one keeps a decimal, cut rather than rounded up: copies "called from
// aten::mul 100%, aten::log_softmax 0.1%" added up to more than all of them.
TEST(AdviseCpu, AShareJustUnderAWholeOneIsNotRoundedUpToIt) {
  EXPECT_EQ(advise_rules::percent_text(0.99877), "99.8%");
  EXPECT_EQ(advise_rules::percent_text(0.9996), "99.9%");
  EXPECT_EQ(advise_rules::percent_text(1.0), "100%");
  EXPECT_EQ(advise_rules::percent_text(0.994), "99%");
  EXPECT_EQ(advise_rules::percent_text(0.05), "5.0%");
}

// The finding's "see the effect" command names the trace advise read, not a placeholder; its
// folder where the command reads every rank's trace; quoted where a shell would split it.
TEST(AdviseCpu, TheCommandToSeeTheEffectNamesTheTrace) {
  const Advice unnamed = advise_text(copies_trace());
  EXPECT_EQ(finding(unnamed, "copies")->lesson.command,
            "build/bin/pil-trace chain traces/TRACE.pt.trace.json --range aten::matmul");  // no path given: as written
  AdviseOptions o;
  o.trace_path = "runs/a.json";
  const Advice named = advise_text(copies_trace(), o);
  EXPECT_EQ(finding(named, "copies")->lesson.command, "build/bin/pil-trace chain runs/a.json --range aten::matmul");
  // A lesson's run names no trace: as written.
  const Advice lesson_run = advise_text(untraced_trace(), o);
  EXPECT_EQ(finding(lesson_run, "untraced")->lesson.command, "./run-lesson 06_find_and_fix --variant fix2");
  EXPECT_EQ(command_for_trace("build/bin/pil-trace ranks TRACES_FOLDER", "runs/r0.json"),
            "build/bin/pil-trace ranks runs");
  EXPECT_EQ(command_for_trace("build/bin/pil-trace ranks TRACES_FOLDER", "r0.json"), "build/bin/pil-trace ranks .");
  EXPECT_EQ(command_for_trace("pil-trace ops traces/TRACE.pt.trace.json", "my runs/it's.json"),
            "pil-trace ops 'my runs/it'\\''s.json'");
  EXPECT_EQ(command_for_trace("./run-lesson 01_matmul_add", "a.json"), "./run-lesson 01_matmul_add");
  // pil-trace as the user ran it, where the command reads their trace: a trace path given from
  // another folder does not run with the project's build/bin/pil-trace.
  EXPECT_EQ(command_for_trace("build/bin/pil-trace chain traces/TRACE.pt.trace.json --range loss", "t.json",
                              "/opt/pil/bin/pil-trace"),
            "/opt/pil/bin/pil-trace chain t.json --range loss");
  EXPECT_EQ(command_for_trace("build/bin/pil-trace ranks TRACES_FOLDER", "runs/r0.json", "pil-trace"),
            "pil-trace ranks runs");
  EXPECT_EQ(command_for_trace("build/bin/pil-trace svg docs/traces/x.json.gz", "t.json", "/opt/pil-trace"),
            "build/bin/pil-trace svg docs/traces/x.json.gz");  // the project's own trace: from its folder
}

// With Python's frames recorded (with_stack: "python_function" slices), an untraced stretch says
// which frame was running around it, the innermost one over its middle: step 2's gap [140, 160)
// (middle 150) lies inside main.py(3): <module> [100, 199) and data.py(7): make_batch
// [135, 158); step 1's gap (middle 52.5) inside main.py(3): <module> [1, 99) and main.py(1):
// run [0, 100), as long as the step (a frame around everything says nothing: not chosen), and
// a frame on thread 2 is not the step's thread's.
TEST(AdviseCpu, AnUntracedStretchNamesThePythonFrameAroundIt) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::mm", 0, 30);
  b.op("aten::add", 30, 15, "", "", 2);
  b.slice("python_function", "main.py(1): run", 0, 100);
  b.slice("python_function", "main.py(3): <module>", 1, 98);
  b.slice("python_function", "loader.py(9): other_thread", 45, 15, 2);
  b.op("aten::relu", 60, 35);
  b.step(2, 100, 100);
  b.op("aten::mm", 100, 30);
  b.range("load", 130, 10);
  b.slice("python_function", "main.py(3): <module>", 100, 99);
  b.slice("python_function", "data.py(7): make_batch", 135, 23);
  b.op("aten::relu", 160, 35);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "untraced");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "untraced_ns"), 35.0 * kUs);  // the frames cover nothing
  ASSERT_EQ(s->examples.size(), 2u);
  EXPECT_EQ(s->examples[0].detail,
            "after load, before aten::relu; the profiler recorded data.py(7): make_batch around it");
  EXPECT_EQ(s->examples[1].detail,
            "after aten::add, before aten::relu; the profiler recorded main.py(3): <module> around it");
  // Without such slices the detail is as before (TimeInAStepThatNoOperatorCovers).
}

TEST(AdviseCpu, TheStepsThreadWaitingForAnotherThreadIsNotUntraced) {
  // As a GPU backward in Python: the main thread runs nothing from 20 to 90 us while autograd's
  // thread (2) runs the operators. Counting the step's thread alone would call 70% untraced.
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::mm", 0, 20);
  b.op("autograd::engine::evaluate_function: MmBackward0", 20, 70, "", "", 2);
  b.op("aten::sub_", 90, 10);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "untraced"), nullptr);
  EXPECT_TRUE(clean(a, "untraced"));
}

// Without steps the window [0, 100] is judged, every thread covering: aten::mm [0, 20] and
// [80, 100] on thread 1, aten::add [30, 45] on thread 2. Untraced: [20, 30] (10, the least
// counted) and [45, 80] (35): 45 of 100, the findings' words of the window, not of a step.
TEST(AdviseCpu, WithoutStepsTheWindowIsJudged) {
  TraceBuilder b;
  b.op("aten::mm", 0, 20);
  b.op("aten::add", 30, 15, "", "", 2);
  b.op("aten::mm", 80, 20);
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "untraced");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Time in the recorded window outside the model's operators: untraced work, data loading");
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "untraced_ns"), 45.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "untraced_share"), 0.45);
  EXPECT_EQ(s.text, "2 stretches of at least 10.0 us with no operator, range or runtime call on any thread took 45% "
                    "of the window (45.0 us)");
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].ts_ns, 45 * kUs);
  EXPECT_EQ(s.examples[0].where, "the window");
  EXPECT_EQ(s.examples[0].detail, "after aten::add, before aten::mm");
  EXPECT_EQ(s.examples[1].detail, "after aten::mm, before aten::add");
}

// Two steps of 100 us: the DataLoader's fetch [0, 40) (aten::stack in it), then the model. 80 us
// of 200 (40%): data preparation on the training thread, the untraced cause.
std::string data_loading_trace(const char* cat, bool workers = false) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double s = 100.0 * k;
    b.step(k + 1, s, 100);
    const char* op = std::string(cat) == "Operator" ? "Operator" : "cpu_op";
    b.slice(cat,
            workers ? "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
                    : "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
            s, 40);
    b.slice(op, "aten::stack", s + 10, 20);
    b.slice(op, "aten::mm", s + 41, 58);
  }
  return b.str();
}

TEST(AdviseCpu, TheDataLoaderOnTheTrainingThread) {
  for (const char* cat : {"user_annotation", "Operator"}) {  // torch 1.8-1.9 wrote "Operator"
    const Advice a = advise_text(data_loading_trace(cat));
    const Finding* f = finding(a, "untraced");
    ASSERT_NE(f, nullptr) << cat;
    const Symptom& s = f->symptoms.at(0);
    EXPECT_EQ(s.rule, "data_loading");
    EXPECT_DOUBLE_EQ(figure(s, "loading_ns"), 80.0 * kUs);
    EXPECT_DOUBLE_EQ(figure(s, "loading_share"), 0.40);
    EXPECT_DOUBLE_EQ(figure(s, "fetches"), 2);
    EXPECT_DOUBLE_EQ(figure(s, "workers"), 0);
    EXPECT_EQ(f->saved_ns, 80 * kUs);
    EXPECT_TRUE(clean(a, "untraced")) << "the fetch is a range: its time is covered";
  }
}

// The same fetches with worker processes behind them (_MultiProcessingDataLoaderIter): the
// training thread waited for workers that did not keep up, a cause of its own. Not "move data
// preparation to a loader thread": a Python run with num_workers=2 was told so.
TEST(AdviseCpu, DataLoaderWorkersThatDoNotKeepUp) {
  const Advice a = advise_text(data_loading_trace("user_annotation", true));
  const Finding* f = finding(a, "loader_behind");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(clean(a, "untraced"));
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "data_loading");
  EXPECT_DOUBLE_EQ(figure(s, "workers"), 1);
  EXPECT_EQ(f->saved_ns, 80 * kUs);
  EXPECT_NE(s.text.find("waiting for its worker processes"), std::string::npos) << s.text;
  EXPECT_NE(s.how.find("with workers that keep up, only the hand-off of a ready batch stays on the step"),
            std::string::npos) << s.how;
  EXPECT_NE(f->fix.find("num_workers"), std::string::npos) << f->fix;
  EXPECT_EQ(f->fix.find("loader thread"), std::string::npos) << f->fix;
}

// The workers starting: a first fetch far longer than the rest (a public Windows trace's took
// 12.5 s) is their start-up, a cause of its own, not workers that do not keep up. Four steps:
// the first [0, 5100) holds a fetch of 5000 us, each later one of 100 us a fetch of `later` us.
// With 40 us fetches after it: the start-up alone (the other three, 120 of 5520, are 2%: no
// loader_behind); with a first fetch of 300, under 10x the others' 40: no start-up, the workers'
// pace as before (420 of 820).
TEST(AdviseCpu, TheWorkersStartingIsNotTheirPace) {
  auto trace = [](double first, double later) {
    TraceBuilder b;
    double at = 0;
    for (int k = 0; k < 4; ++k) {
      const double fetch = k == 0 ? first : later, step = fetch + 100;
      b.step(k + 1, at, step);
      b.range("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", at, fetch);
      b.op("aten::mm", at + fetch + 1, 98);
      at += step;
    }
    return b.str();
  };
  const Advice a = advise_text(trace(5000, 40));
  const Finding* f = finding(a, "loader_startup");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "data_loading");
  EXPECT_DOUBLE_EQ(figure(s, "first_fetch_ns"), 5000.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "median_other_ns"), 40.0 * kUs);
  EXPECT_EQ(f->saved_ns, 5000 * kUs);
  EXPECT_NE(s.text.find("took 5.00 ms, 125.0x the median of the other 3 (40.0 us): its worker processes starting"),
            std::string::npos)
      << s.text;
  EXPECT_NE(f->fix.find("persistent_workers=True"), std::string::npos) << f->fix;
  EXPECT_EQ(finding(a, "loader_behind"), nullptr);

  const Advice steady = advise_text(trace(300, 40));
  EXPECT_EQ(finding(steady, "loader_startup"), nullptr);
  const Finding* behind = finding(steady, "loader_behind");
  ASSERT_NE(behind, nullptr);
  EXPECT_EQ(behind->saved_ns, 420 * kUs);
}

TEST(AdviseCpu, RangesWrittenAsOperatorsAreToldByTheirHash) {
  Event e;
  e.category = Category::CpuOp;
  e.name = "Optimizer.step#SGD.step";
  EXPECT_TRUE(advise_rules::is_named_range(e));
  EXPECT_FALSE(advise_rules::is_operator(e));
  e.name = "aten::add_";
  EXPECT_FALSE(advise_rules::is_named_range(e));
  EXPECT_TRUE(advise_rules::is_operator(e));
}

// --- rebuilt_constant: input shapes, in a Trace built in memory -----------------------------

// Three steps of 100 us. In each: aten::ones [10, 14) and aten::triu [15, 20) called by the
// program with the same inputs every step; aten::mm [30, 80), which builds an aten::zeros of
// its own [31, 33) (ATen's, not the program's); aten::arange [85, 88) in steps 1 and 2 only.
// Rebuilt: ones and triu, 6 calls, 3 x (4 + 5) = 27 us of 300 (9%).
// With `gpu`, each aten::ones also launches a 4 us kernel (a fill): on a GPU trace their cost is
// that GPU time, 3 x 4 = 12 us of 300 (4%).
Trace constants_trace(bool same_triu = true, bool gpu = false) {
  Trace t;
  const uint32_t none = t.input_shapes.size();
  t.input_shapes.push_back(t.intern("[[], [], [], [], []]"));
  t.input_shapes.push_back(t.intern("[[16, 16], []]"));
  t.input_shapes.push_back(t.intern("[[8, 16], [16, 16]]"));
  for (const char* dims : {"[[32, 32], []]", "[[64, 64], []]"})
    t.input_shapes.push_back(t.intern(dims));
  auto add = [&](Category c, const char* name, double ts_us, double dur_us, uint32_t shapes) {
    Event e;
    e.category = c;
    e.name = t.intern(name);
    e.start_ns = int64_t(ts_us * kUs);
    e.dur_ns = int64_t(dur_us * kUs);
    e.pid = 100;
    e.tid = 1;
    e.external_id = t.events.size() + 1;
    e.input_shapes = shapes;
    t.events.push_back(e);
  };
  for (int k = 0; k < 3; ++k) {
    const double s = 100.0 * k;
    add(Category::UserAnnotation, ("ProfilerStep#" + std::to_string(k + 1)).c_str(), s, 100,
        kNoKernelInfo);
    add(Category::CpuOp, "aten::ones", s + 10, 4, none);
    if (gpu) {
      add(Category::Runtime, "cudaLaunchKernel", s + 11, 1, kNoKernelInfo);
      t.events.back().correlation = uint64_t(k + 1);
      add(Category::Kernel, "fill_kernel", s + 12, 4, kNoKernelInfo);
      t.events.back().correlation = uint64_t(k + 1);
      t.events.back().pid = 0;
      t.events.back().tid = 7;
    }
    add(Category::CpuOp, "aten::triu", s + 15, 5, same_triu ? 1 : uint32_t(k == 0 ? 1 : 2 + k));
    add(Category::CpuOp, "aten::mm", s + 30, 50, 2);
    add(Category::CpuOp, "aten::zeros", s + 31, 2, none);
    if (k < 2) add(Category::CpuOp, "aten::arange", s + 85, 3, none);
  }
  return t;
}

Advice advise_trace(const Trace& t) {
  const TraceIndex index(t);
  return advise(index);
}

TEST(AdviseCpu, TheSameConstantBuiltInEveryStep) {
  const Advice a = advise_trace(constants_trace());
  const Finding* f = finding(a, "rebuilt_constant");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "calls"), 6);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt_ns"), 27.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt_share"), 0.09);
  EXPECT_EQ(f->saved_ns, 27 * kUs);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "aten::triu");  // 15 us in all, before ones' 12
  EXPECT_EQ(s.examples[0].detail, "inputs [[16, 16], []], 3 calls, 15.0 us in all");
  EXPECT_EQ(s.examples[1].name, "aten::ones");
}

TEST(AdviseCpu, AConstantOfAnotherShapeEachStepIsNotRebuilt) {
  // triu's input is 16, 32 and 64 wide in the three steps; ones alone (12 us, 4%) remains.
  const Advice a = advise_trace(constants_trace(false));
  const Symptom* s = symptom(a, "rebuilt_constant");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt_ns"), 12.0 * kUs);
}

TEST(AdviseCpu, OnAGpuTheConstantsGpuTime) {
  const Advice a = advise_trace(constants_trace(true, true));
  ASSERT_TRUE(a.gpu);
  const Symptom* s = symptom(a, "rebuilt_constant");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt_ns"), 12.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt_share"), 0.04);
}

TEST(AdviseCpu, RebuiltConstantsNeedInputShapes) {
  Trace t = constants_trace();
  t.input_shapes.clear();
  for (Event& e : t.events) e.input_shapes = kNoKernelInfo;
  const Advice a = advise_trace(t);
  EXPECT_EQ(unable(a, "rebuilt_constant"),
            "the trace has no input shapes: record with record_shapes");
}

// --- rebuilt_constant: a factory's sizes, read from the trace's "Concrete Inputs" -------------

// As `pil-trace advise` reads a trace: the inputs of the operators its rules judge by them, with
// their concrete values (or, with `concrete` false, their Input Dims and types only).
Advice advise_read(const std::string& json, bool concrete = true) {
  ParseOptions o;
  o.read_shapes = true;
  o.shapes_for = advise_rules::needs_input_shapes;
  o.read_concrete = concrete;
  const Trace t = parse_trace_text(json, "t.json", o);
  return advise(TraceIndex(t));
}

// Three steps of 100 us. In each, the program calls aten::ones [10, 20) (10 us), whose sizes are
// in its Concrete Inputs, not its Input Dims ([[], [], [], [], []]): [2, 4, 1024, 1024] in
// every step, or with `growing` [k, 4, 1024, 1024] in step k (another tensor each step). With
// `second`, also aten::ones [40, 43) (3 us) of sizes [1024] in every step.
// Rebuilt, same sizes: 1 constant, 3 calls, 30 us of 300 (10%); with `second`: 2, 6 calls, 39 us.
std::string ones_trace(bool growing, bool second = false) {
  const std::string dims = "[[], [], [], [], []]";
  const std::string types = R"(["ScalarList", "Scalar", "", "", ""])";
  TraceBuilder b;
  for (int k = 1; k <= 3; ++k) {
    const double s = 100.0 * (k - 1);
    b.step(k, s, 100);
    const std::string sizes = "[" + std::to_string(growing ? k : 2) + ", 4, 1024, 1024]";
    b.op_with_inputs("aten::ones", s + 10, 10, dims, types, R"([")" + sizes + R"(", "11", "", "", ""])");
    b.op("aten::empty", s + 11, 2);  // ATen's own, inside
    if (second) b.op_with_inputs("aten::ones", s + 40, 3, dims, types, R"(["[1024]", "6", "", "", ""])");
    b.op("aten::mm", s + 50, 30, "[[8, 16], [16, 16]]", R"(["float", "float"])");
  }
  return b.str();
}

TEST(AdviseCpu, TheSameSizesInEveryStepAreOneConstant) {
  const Advice a = advise_read(ones_trace(false));
  const Finding* f = finding(a, "rebuilt_constant");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "calls"), 3);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt_ns"), 30.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "rebuilt_share"), 0.10);
  // The sizes, not the Input Dims: each argument's value as a call writes it (dtype 11 is
  // torch.bool), None left out.
  EXPECT_NE(s.text.find("3 calls, 30.0 us, 10% of the steps): aten::ones([2, 4, 1024, 1024], dtype=torch.bool)"),
            std::string::npos)
      << s.text;
  EXPECT_EQ(s.text.find("[[], [], [], [], []]"), std::string::npos) << s.text;
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].detail, "inputs ([2, 4, 1024, 1024], dtype=torch.bool), 3 calls, 30.0 us in all");
}

TEST(AdviseCpu, OtherSizesInEachStepAreNotTheSameConstant) {
  // The same Input Dims and types in every step, other sizes: a tensor of its step, not a
  // constant to build once.
  const Advice a = advise_read(ones_trace(true));
  EXPECT_EQ(finding(a, "rebuilt_constant"), nullptr);
  EXPECT_TRUE(clean(a, "rebuilt_constant"));
  // Read without the concrete values, the calls look the same (the limit they lift).
  const Advice without_inputs = advise_read(ones_trace(true), false);
  const Symptom* blind = symptom(without_inputs, "rebuilt_constant");
  ASSERT_NE(blind, nullptr);
  EXPECT_NE(blind->text.find("aten::ones [[], [], [], [], []]"), std::string::npos) << blind->text;
}

TEST(AdviseCpu, TwoSizesBuiltInEveryStepAreTwoConstants) {
  const Advice a = advise_read(ones_trace(false, true));
  const Symptom* s = symptom(a, "rebuilt_constant");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt"), 2);
  EXPECT_DOUBLE_EQ(figure(*s, "calls"), 6);
  EXPECT_DOUBLE_EQ(figure(*s, "rebuilt_ns"), 39.0 * kUs);
  EXPECT_NE(s->text.find("aten::ones([2, 4, 1024, 1024], dtype=torch.bool); aten::ones([1024], dtype=torch.float32)"),
            std::string::npos)
      << s->text;
  ASSERT_EQ(s->examples.size(), 2u);
  EXPECT_EQ(s->examples[1].detail, "inputs ([1024], dtype=torch.float32), 3 calls, 9.00 us in all");
}

// Three steps, each calling `op` once [10, 20) with these recorded inputs (Input type and
// Concrete Inputs; Input Dims [] each but a tensor's): rebuilt in every step, so its evidence
// shows the call.
std::string constant_call_trace(const std::string& op, const std::string& dims, const std::string& types,
                                const std::string& concrete) {
  TraceBuilder b;
  for (int k = 1; k <= 3; ++k) {
    const double s = 100.0 * (k - 1);
    b.step(k, s, 100);
    b.op_with_inputs(op, s + 10, 10, dims, types, concrete);
    b.op("aten::mm", s + 50, 30, "[[8, 16], [16, 16]]", R"(["float", "float"])");
  }
  return b.str();
}

std::string constant_call(const std::string& op, const std::string& dims, const std::string& types,
                          const std::string& concrete) {
  const Advice a = advise_read(constant_call_trace(op, dims, types, concrete));
  const Symptom* s = symptom(a, "rebuilt_constant");
  if (s == nullptr) return "(no finding)";
  const size_t from = s->text.find("): ");
  return from == std::string::npos ? s->text : s->text.substr(from + 3);
}

TEST(AdviseCpu, AConstantsCallIsShownWithItsArgumentsNamedAsATorchCallNamesThem) {
  // ATen's schemas name what follows the first argument; a dtype by torch's name; the default
  // layout (0, strided) and pin_memory (False) left out, another layout kept; None left out.
  EXPECT_EQ(constant_call("aten::zeros", "[[], [], [], [], []]", R"(["ScalarList", "Scalar", "Scalar", "", "Scalar"])",
                          R"(["[512]", "15", "0", "", "False"])"),
            "aten::zeros([512], dtype=torch.bfloat16)");
  EXPECT_EQ(constant_call("aten::ones", "[[], [], [], [], []]", R"(["ScalarList", "Scalar", "Scalar", "", ""])",
                          R"(["[4, 4]", "6", "1", "", ""])"),
            "aten::ones([4, 4], dtype=torch.float32, layout=torch.sparse_coo)");
  EXPECT_EQ(constant_call("aten::full", "[[], [], [], [], [], []]",
                          R"(["ScalarList", "Scalar", "Scalar", "", "", ""])", R"(["[8, 8]", "-inf", "7", "", "", ""])"),
            "aten::full([8, 8], fill_value=-inf, dtype=torch.float64)");
  EXPECT_EQ(constant_call("aten::tril", "[[1024, 1024], []]", R"(["bool", "Scalar"])", R"(["", "-1"])"),
            "aten::tril([1024, 1024], diagonal=-1)");
  // aten::arange's overloads by how many arguments were recorded: (end), (start, end),
  // (start, end, step), each with the four options.
  EXPECT_EQ(constant_call("aten::arange", "[[], [], [], [], []]", R"(["Scalar", "Scalar", "", "", ""])",
                          R"(["16", "4", "", "", ""])"),
            "aten::arange(16, dtype=torch.int64)");
  EXPECT_EQ(constant_call("aten::arange", "[[], [], [], [], [], [], []]",
                          R"(["Scalar", "Scalar", "Scalar", "Scalar", "", "", ""])",
                          R"(["0", "16", "2", "4", "", "", ""])"),
            "aten::arange(0, end=16, step=2, dtype=torch.int64)");
  // A dtype number torch does not have stays a number (45 is its last); an overload of another argument count
  // (not one of the schemas) shows its values unnamed.
  EXPECT_EQ(constant_call("aten::ones", "[[], [], [], [], []]", R"(["ScalarList", "Scalar", "", "", ""])",
                          R"(["[2]", "99", "", "", ""])"),
            "aten::ones([2], dtype=99)");
  EXPECT_EQ(constant_call("aten::ones", "[[], [], [], [], []]", R"(["ScalarList", "Scalar", "", "", ""])",
                          R"(["[2]", "45", "", "", ""])"),
            "aten::ones([2], dtype=torch.float4_e2m1fn_x2)");
  EXPECT_EQ(constant_call("aten::ones", "[[], [], []]", R"(["ScalarList", "", "Scalar"])", R"(["[2]", "", "7"])"),
            "aten::ones([2], 7)");
  // Values read but the first one (the sizes) not recorded, or none at all: not a call of a 0-d
  // tensor, but the Input Dims, as without the values.
  EXPECT_EQ(constant_call("aten::ones", "[[], [], [], [], []]", R"(["ScalarList", "Scalar", "", "", ""])",
                          R"(["", "6", "", "", ""])"),
            "aten::ones [[], [], [], [], []]");
  EXPECT_EQ(constant_call("aten::zeros", "[[], [], [], [], []]", R"(["", "", "", "", ""])", R"(["", "", "", "", ""])"),
            "aten::zeros [[], [], [], [], []]");
}

// --- memory_peak --------------------------------------------------------------------------------

// A GPU of 80 GiB; one step of 100 us with the range "attn" [10, 90) holding aten::empty [20, 25)
// (60 GiB allocated) and aten::bmm [30, 60) (`more` GiB more); both freed at 95 us.
std::string memory_trace(int64_t more_gib, int device = 0) {
  constexpr int64_t kGiB = 1LL << 30;
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3", 132, 80 * kGiB);
  b.step(1, 0, 100);
  b.range("attn", 10, 80);
  b.op("aten::empty", 20, 5);
  b.memory(21, 60 * kGiB, 60 * kGiB, device);
  b.op("aten::bmm", 30, 30);
  b.memory(31, more_gib * kGiB, (60 + more_gib) * kGiB, device);
  b.memory(95, -(60 + more_gib) * kGiB, 0, device);
  return b.str();
}

TEST(AdviseCpu, TheReaderKeepsTheDevicesMemory) {
  const Trace t = parse_trace_text(memory_trace(14));
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].total_global_mem, 80LL << 30);
}

TEST(AdviseCpu, AMemoryPeakNearTheDevicesCapacity) {
  // 74 of 80 GiB: 92.5%, in attn, in aten::bmm.
  const Advice a = advise_text(memory_trace(14));
  const Finding* f = finding(a, "memory_peak");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "peak_bytes"), double(74LL << 30));
  EXPECT_DOUBLE_EQ(figure(s, "capacity_bytes"), double(80LL << 30));
  EXPECT_DOUBLE_EQ(figure(s, "peak_share"), 0.925);
  EXPECT_EQ(f->saved_ns, 0) << "a peak is not a time";
  EXPECT_NE(s.text.find("in range attn, operator aten::bmm"), std::string::npos) << s.text;
  // The units summary, memory and Python's table use (GB of 1024), not a second spelling.
  EXPECT_NE(s.text.find("peaked at 74.00 GB of its 80.00 GB"), std::string::npos) << s.text;
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].name, "aten::bmm");
  EXPECT_EQ(s.examples[0].ts_ns, 31 * kUs);
  EXPECT_NE(format_advice(a, "t.json").find("gain: not in time: "), std::string::npos);
}

TEST(AdviseCpu, AMemoryPeakWellUnderTheCapacityIsQuiet) {
  const Advice a = advise_text(memory_trace(0));  // 60 of 80 GiB: 75%
  EXPECT_EQ(finding(a, "memory_peak"), nullptr);
  EXPECT_TRUE(clean(a, "memory_peak"));
}

TEST(AdviseCpu, HostMemoryHasNoCapacityInATrace) {
  EXPECT_EQ(unable(advise_text(memory_trace(14, -1)), "memory_peak"),
            "a trace carries no capacity for host memory: host peaks are not judged");
  TraceBuilder b;
  b.step(1, 0, 100);
  EXPECT_EQ(unable(advise_text(b.str()), "memory_peak"),
            "the trace has no memory events: record with profile_memory");
}

// --- exposed_comm -----------------------------------------------------------------------------

// Two steps of 1000 us of one rank with Gloo. Thread 1 computes aten::mm [0, 600) and calls
// c10d::allreduce_ [600, 610) (a collective's call: not computation); Gloo's thread 5 runs
// gloo:all_reduce [from, from + 300). From 605: nothing beside it, 300 us exposed a step, 600 of
// 600 (100%), 30% of the steps. From 350: 250 us beside aten::mm, 50 exposed (17%): quiet.
std::string gloo_rank(double from) {
  TraceBuilder b;
  b.rank(0, 2, "gloo");
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    b.op("aten::mm", s, 600);
    b.op("c10d::allreduce_", s + 600, 10);
    b.op("gloo:all_reduce", s + from, 300, "", "", 5);
  }
  return b.str();
}

TEST(AdviseCpu, CommunicationWithNothingBesideIt) {
  const Advice a = advise_text(gloo_rank(605));
  const Finding* f = finding(a, "exposed_comm");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "comm_ns"), 600.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "overlap_ns"), 0);
  EXPECT_DOUBLE_EQ(figure(s, "exposed_share"), 1.0);
  EXPECT_DOUBLE_EQ(figure(s, "exposed_of_steps"), 0.30);
  EXPECT_DOUBLE_EQ(figure(s, "collectives_per_step"), 1);
  EXPECT_EQ(f->saved_ns, 600 * kUs);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "gloo:all_reduce");
  EXPECT_EQ(s.examples[0].ts_ns, 605 * kUs);
  EXPECT_EQ(s.examples[0].where, "ProfilerStep#1");
  // The bound says what one rank's trace cannot tell apart: the transfer, and the wait for a
  // slower rank that hiding would not remove (ranks measures it across the traces).
  EXPECT_NE(s.how.find("an upper bound"), std::string::npos) << s.how;
  EXPECT_NE(s.how.find("this rank waiting for a slower one"), std::string::npos) << s.how;
  EXPECT_NE(s.how.find("pil-trace ranks"), std::string::npos) << s.how;
}

// Two all-reduces a step are buckets already: the fix says so, not "buckets instead of one
// all-reduce after backward" (a public MI300X DDP rank, 4 a step, 74% exposed).
TEST(AdviseCpu, ExposedBucketsAreToldTheyAreBucketsAlready) {
  TraceBuilder b;
  b.rank(0, 2, "gloo");
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    b.op("aten::mm", s, 600);
    b.op("gloo:all_reduce", s + 605, 150, "", "", 5);
    b.op("gloo:all_reduce", s + 760, 150, "", "", 5);
  }
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "exposed_comm");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(figure(f->symptoms.at(0), "collectives_per_step"), 2);
  EXPECT_NE(f->fix.find("already reduced in 2 collectives a step"), std::string::npos) << f->fix;
  const Advice one = advise_text(gloo_rank(605));
  ASSERT_NE(finding(one, "exposed_comm"), nullptr);
  EXPECT_EQ(finding(one, "exposed_comm")->fix.find("already reduced"), std::string::npos);
}

TEST(AdviseCpu, CommunicationHiddenBehindComputationIsQuiet) {
  const Advice a = advise_text(gloo_rank(350));
  EXPECT_EQ(finding(a, "exposed_comm"), nullptr);
  EXPECT_TRUE(clean(a, "exposed_comm"));
}

TEST(AdviseCpu, OnAGpuNcclKernelsAgainstComputeKernels) {
  // One step of 1000 us: a compute kernel [100, 600) on stream 7, NCCL's all-reduce [500, 900)
  // on stream 20: 100 of its 400 us beside computation, 300 exposed (75%), 30% of the step.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.rank(0, 2, "nccl");
  b.step(1, 0, 1000);
  int corr = b.call("cudaLaunchKernel", 10, 5);
  b.kernel("sm90_xmma_gemm_f32", corr, 100, 500, 7);
  corr = b.call("cudaLaunchKernel", 20, 5);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", corr, 500, 400, 20);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "exposed_comm");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "comm_ns"), 400.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "overlap_ns"), 100.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(*s, "exposed_share"), 0.75);
  EXPECT_EQ(s->saved_ns, 300 * kUs);
}

// Exchanges apart from reductions: one step of 1000 us, a compute kernel [100, 600) on stream 7,
// NCCL's all-reduce [450, 550) on stream 20 (all of it beside computation: quiet) and an
// all-to-all's SendRecv kernel [600, 900) (nothing beside it: 300 exposed, 30% of the step). The
// exposure is the exchange's, under the exchange's cause and fix; no finding for the all-reduce.
TEST(AdviseCpu, AllToAllExposedApartFromTheAllReduce) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.rank(0, 2, "nccl");
  b.step(1, 0, 1000);
  b.kernel("sm90_xmma_gemm_f32", b.call("cudaLaunchKernel", 10, 5), 100, 500, 7);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", b.call("cudaLaunchKernel", 20, 5), 450, 100, 20);
  b.kernel("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", b.call("cudaLaunchKernel", 30, 5),
           600, 300, 20);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "exposed_comm"), nullptr);
  const Finding* f = finding(a, "exposed_exchange");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->symptoms.size(), 1u);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "exposed_comm");  // one rule, two causes
  EXPECT_DOUBLE_EQ(figure(s, "comm_ns"), 300.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "overlap_ns"), 0);
  EXPECT_DOUBLE_EQ(figure(s, "collectives_per_step"), 1);
  EXPECT_EQ(f->saved_ns, 300 * kUs);
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].ts_ns, 600 * kUs);
  EXPECT_EQ(f->lesson.link(), "docs/pil-trace.md#several-ranks-at-once");
}

// All-gathers and reduce-scatters apart from all-reduces: FSDP's parameters and gradients, or
// tensor parallelism's activations (tugot17/tokenomics-from-first-principles's forward-only
// 2-GPU Llama: 9 ReduceScatter and 10 AllGather kernels were told to overlap "the all-reduce"
// with backward). One step of 1000 us: a compute kernel [100, 400), a reduce-scatter [400, 600)
// and an all-gather [600, 700) with nothing beside them: 300 exposed, under their own cause.
TEST(AdviseCpu, AllGathersAndReduceScattersAreTheirOwnFinding) {
  TraceBuilder b;
  b.device("NVIDIA GeForce RTX 4090");
  b.rank(0, 2, "nccl");
  b.step(1, 0, 1000);
  b.kernel("sm89_xmma_gemm_f32", b.call("cudaLaunchKernel", 10, 5), 100, 300, 7);
  b.kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
           b.call("cudaLaunchKernel", 20, 5), 400, 200, 17);
  b.kernel("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", b.call("cudaLaunchKernel", 30, 5),
           600, 100, 17);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "exposed_comm"), nullptr);
  EXPECT_EQ(finding(a, "exposed_exchange"), nullptr);
  const Finding* f = finding(a, "exposed_sharded");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->symptoms.size(), 1u);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.rule, "exposed_comm");
  EXPECT_DOUBLE_EQ(figure(s, "comm_ns"), 300.0 * kUs);
  EXPECT_DOUBLE_EQ(figure(s, "collectives_per_step"), 2);
  EXPECT_NE(s.text.find("all-gathers and reduce-scatters (ncclDevKernel_ReduceScatter_Sum_f32_RING_LL and 1 other "
                        "name, GPU kernels, 2 collectives a step)"),
            std::string::npos) << s.text;
  EXPECT_EQ(f->title, "The step waits for all-gathers and reduce-scatters that nothing hides");

  // NCCL ran an all-gather as a SendRecv kernel (HTA's sampled TorchRec ranks): the backend's
  // slice around the launch says what it is, and both names are quoted.
  TraceBuilder g;
  g.device("NVIDIA A100-SXM4-80GB");
  g.rank(0, 2, "nccl");
  g.step(1, 0, 1000);
  g.kernel("sm80_xmma_gemm_f32", g.call("cudaLaunchKernel", 10, 5), 100, 300, 7);
  g.range("nccl:_all_gather_base", 18, 10);
  g.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           g.call("cudaLaunchKernel", 20, 5), 400, 300, 17);
  const Advice ag = advise_text(g.str());
  const Symptom* sg = symptom(ag, "exposed_comm");
  ASSERT_NE(sg, nullptr);
  EXPECT_NE(sg->text.find("all-gathers and reduce-scatters (nccl:_all_gather_base run as "
                          "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t, GPU kernels"),
            std::string::npos) << sg->text;
}

// An all-reduce in a trace whose operators have no backward pass is no gradient's (tensor
// parallelism's, an evaluation's): the finding says so, is a cause of its own whose fix is no
// gradients' buckets, and its bound is other computation, not backward. With autograd's nodes in the trace it does
// not, nor where the trace recorded no operators (GPU work alone cannot tell).
TEST(AdviseCpu, AnAllReduceWithoutBackwardIsSaidNotToBeGradients) {
  for (const int ops : {100, 0}) {
    for (const bool backward : {false, true}) {
      TraceBuilder b;
      b.device("NVIDIA H100 80GB HBM3");
      b.rank(0, 2, "nccl");
      b.step(1, 0, 1000);
      for (int k = 0; k < ops; ++k) b.op("aten::add", 1 + k * 0.05, 0.04);
      if (backward) b.range("autograd::engine::evaluate_function: MmBackward0", 5, 30);
      b.kernel("sm90_xmma_gemm_f32", b.call("cudaLaunchKernel", 10, 5), 100, 300, 7);
      b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", b.call("cudaLaunchKernel", 20, 5), 400, 300, 20);
      const Advice a = advise_text(b.str());
      const Symptom* s = symptom(a, "exposed_comm");
      ASSERT_NE(s, nullptr) << backward;
      const bool said = ops > 0 && !backward;
      EXPECT_EQ(s->text.find("the trace's operators have no backward pass, so these are not gradients' all-reduces") !=
                    std::string::npos,
                said) << s->text;
      EXPECT_EQ(s->how.find("hidden behind other computation") != std::string::npos, said) << s->how;
      // A cause of its own, whose fix is no gradients' buckets (a B200's forward-only vLLM trace
      // was told to set bucket_cap_mb).
      const Finding* f = finding(a, said ? "exposed_forward" : "exposed_comm");
      ASSERT_NE(f, nullptr) << said;
      EXPECT_EQ(f->fix.find("bucket_cap_mb") == std::string::npos, said) << f->fix;
    }
  }
}

// A real DLRM step (PARAM's test data, torch 2.1, 8 V100s; fixtures/param): its embeddings'
// all-to-alls (NCCL's SendRecv kernels, 5 in the step) and its dense gradients' all-reduces (3)
// are each their own finding, and the two kinds' time adds up to the step's communication as
// `ranks` counts it (they never run at once on this rank).
TEST(AdviseCpu, ARealDlrmStepExposesItsAllToAllsAndItsAllReduces) {
  const std::string path = std::string(PIL_SOURCE_DIR) + "/tests/trace/fixtures/param/dlrm_rank0.pt.trace.json.gz";
  const Trace t = parse_trace_file(path);
  const TraceIndex index(t);
  const Advice a = advise(index);
  const Finding* fx = finding(a, "exposed_exchange");
  const Finding* fr = finding(a, "exposed_comm");
  ASSERT_NE(fx, nullptr);
  ASSERT_NE(fr, nullptr);
  ASSERT_EQ(fx->symptoms.size(), 1u);
  ASSERT_EQ(fr->symptoms.size(), 1u);
  const Symptom* x = &fx->symptoms[0];
  const Symptom* r = &fr->symptoms[0];
  EXPECT_DOUBLE_EQ(figure(*x, "collectives_per_step"), 5);
  EXPECT_DOUBLE_EQ(figure(*r, "collectives_per_step"), 3);
  int64_t sendrecv = 0, allreduce = 0;  // the kernels' own time
  for (const Event& e : t.events) {
    if (e.category != Category::Kernel) continue;
    if (e.name.find("ncclKernel_SendRecv") == 0) sendrecv += e.dur_ns;
    if (e.name.find("ncclKernel_AllReduce") == 0) allreduce += e.dur_ns;
  }
  EXPECT_DOUBLE_EQ(figure(*x, "comm_ns"), double(sendrecv));
  EXPECT_DOUBLE_EQ(figure(*r, "comm_ns"), double(allreduce));
  const RankProfile p = rank_profile(t);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].comm_ns, sendrecv + allreduce);
}

// Lesson 05's pairing, on one rank's trace of each variant (one step each, cut with pil-trace
// slice from `05_data_parallel --device cpu --ranks 2`, Gloo; fixtures/lessons/README.md): the
// all-reduce after backward is all exposed; buckets hide part of it behind backward. Judged by
// the finding and its overlap figure, not by time.
Advice advise_file(const std::string& name) {
  const Trace t =
      parse_trace_file(std::string(PIL_SOURCE_DIR) + "/tests/trace/fixtures/lessons/" + name);
  const TraceIndex index(t);
  return advise(index);
}

TEST(AdviseCpu, Lesson05BucketsHideWhatTheAllReduceAfterBackwardExposes) {
  const Advice after = advise_file("05_data_parallel_allreduce_after_cpu_rank0.pt.trace.json.gz");
  const Advice bucketed = advise_file("05_data_parallel_bucketed_cpu_rank1.pt.trace.json.gz");
  const Symptom* a = symptom(after, "exposed_comm");
  ASSERT_NE(a, nullptr) << "allreduce_after: the finding";
  EXPECT_DOUBLE_EQ(figure(*a, "overlap_ns"), 0);
  EXPECT_DOUBLE_EQ(figure(*a, "exposed_share"), 1.0);
  EXPECT_DOUBLE_EQ(figure(*a, "collectives_per_step"), 1);
  const Symptom* b = symptom(bucketed, "exposed_comm");
  if (b) {  // present only with a smaller exposed share
    EXPECT_GT(figure(*b, "overlap_ns"), 0);
    EXPECT_LT(figure(*b, "exposed_share"), figure(*a, "exposed_share"));
    EXPECT_DOUBLE_EQ(figure(*b, "collectives_per_step"), 3);
  }
}

}  // namespace
}  // namespace pil::trace
