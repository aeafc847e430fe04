// pil-trace advise's GPU rules (and the two that also read a CPU trace: fusion and naive
// attention), each on a planted trace where it must fire, with the evidence and gain worked out
// by hand in the comments, and on one where it must stay quiet; then on committed lesson traces
// (03 eager against compiled, 04 naive against sdpa) and on the real GPU traces the project
// keeps (what a profiling engineer would call their top problem). Planted traces:
// trace_builder.h; times in the comments are microseconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <string>
#include <tuple>

#include "trace/advise/advise.h"
#include "trace/advise/names.h"  // is_fp32_simt_gemm_kernel
#include "trace/check.h"  // launch_expectations
#include "trace/parse.h"
#include "trace/advice_lookup.h"
#include "trace/trace_builder.h"

namespace pil::trace {
namespace {

using test::advise_text;
using test::clean;
using test::figure;
using test::finding;
using test::symptom;
using test::TraceBuilder;
using test::unable;

Advice advise_trace(const Trace& t, const AdviseOptions& o = {}) {
  const TraceIndex index(t);
  return advise(index, o);
}

Advice advise_file(const std::string& relative, const AdviseOptions& o = {}) {
  return advise_trace(parse_trace_file(std::string(PIL_SOURCE_DIR) + "/" + relative), o);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --- launch-bound: only kernel launches, only onto an idle stream --------------------------------

// One step [0, 1000]. Five kernel launches under five names, each call 20 long, its kernel 5
// long starting 25 after the call (the stream idle): 15 each beyond the work, 75 in all. One
// cudaGraphLaunch [600, 630] of three kernels of 4 (12 < 30): 18 beyond. Four cudaMemcpyAsync
// and a cudaMemsetAsync as short as the kernels: not kernel launches, not counted.
// Short: 6 of 6 kernel launches; saved 75 + 18 = 93.
TEST(AdviseShortKernels, OnlyKernelAndGraphLaunchesCount) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  const char* names[] = {"cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC",
                         "hipLaunchKernel", "hipExtModuleLaunchKernel"};
  for (int k = 0; k < 5; ++k) {
    const double at = 10 + 100.0 * k;
    b.kernel("small_kernel", b.call(names[k], at, 20), at + 25, 5);
  }
  const int graph = b.call("cudaGraphLaunch", 600, 30);
  for (int k = 0; k < 3; ++k) b.kernel("graph_kernel", graph, 635 + 5.0 * k, 4);
  for (int k = 0; k < 4; ++k)
    b.memcpy("Memcpy DtoD (Device -> Device)", b.call("cudaMemcpyAsync", 700 + 50.0 * k, 20), 725 + 50.0 * k, 5, 4096);
  b.memset(b.call("cudaMemsetAsync", 900, 20), 925, 5);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "short_kernels");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "launches"), 6);
  EXPECT_DOUBLE_EQ(figure(*s, "short_launches"), 6);
  EXPECT_EQ(s->saved_ns, 93'000);
  EXPECT_TRUE(has(s->text, "6 of 6 kernel launches")) << s->text;
}

// Ten kernel launches, two short ones (5 after a call of 20) and eight long ones (50): 2 of 10,
// 20%, under the 30% threshold. Twenty short copies beside them would have made 22 of 30 (73%)
// when copies counted as kernels.
TEST(AdviseShortKernels, ShortCopiesDoNotMakeALaunchBoundLoop) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 5000);
  for (int k = 0; k < 10; ++k) {
    const double at = 10 + 200.0 * k;
    b.kernel(k < 2 ? "small_kernel" : "big_kernel", b.call("cudaLaunchKernel", at, 20), at + 25, k < 2 ? 5 : 50);
  }
  for (int k = 0; k < 20; ++k)
    b.memcpy("Memcpy DtoD (Device -> Device)", b.call("cudaMemcpyAsync", 2100 + 100.0 * k, 20),
             2125 + 100.0 * k, 2, 4096);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(symptom(a, "short_kernels"), nullptr);
  EXPECT_TRUE(clean(a, "short_kernels"));
}

// A kernel of 500 keeps the stream busy [30, 530]; five launches of short kernels follow while
// it runs, their kernels queued behind it: the GPU is fed, the launches cost nothing.
TEST(AdviseShortKernels, ShortKernelsQueuedBehindWorkAreNotLaunchBound) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 600);
  b.kernel("big_kernel", b.call("cudaLaunchKernel", 5, 20), 30, 500);
  for (int k = 0; k < 5; ++k)
    b.kernel("small_kernel", b.call("cudaLaunchKernel", 30 + 25.0 * k, 20), 530 + 5.0 * k, 5);
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "short_kernels"));
}

// Five launches of short kernels onto an idle stream (calls of 200, kernels of 5: 195 beyond the
// work each). The first kernel starts 5 after its call returned; the other four 1,100 after (more
// than 1 ms: they waited on something besides the host, as another stream's event): not launch
// latency, so 1 of 5 (20%) is short, under the 30% threshold. Counted as short, it was 5 of 5,
// 975 of the step's 6,000 (16%).
TEST(AdviseShortKernels, LaunchesWhoseWorkWaitedOnSomethingElseAreNotLaunchBound) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 6000);
  b.kernel("small_kernel", b.call("cudaLaunchKernel", 10, 200), 215, 5);
  for (int k = 0; k < 4; ++k) {
    const double at = 300 + 1400.0 * k;
    b.kernel("small_kernel", b.call("cudaLaunchKernel", at, 200), at + 200 + 1100, 5);
  }
  const Advice a = advise_text(b.str());
  EXPECT_EQ(symptom(a, "short_kernels"), nullptr);
  EXPECT_TRUE(clean(a, "short_kernels"));
}

// --- the GPU waiting on the host: launch gaps and stalls ----------------------------------------

// The framework's launch-bound loop: step [0, 1000], ten kernels of 10 at 35 + 100k, their calls
// [10 + 100k, 30 + 100k]. Gaps waiting on the host: [0, 35] (35) and nine of 90 between the
// kernels: 845 of the GPU window [0, 1000], all inside the step. No gap over 1 ms: no stall.
// One step of ten launches `period` apart, calls [10 + period k, 30 + period k], kernels of 10
// starting `start` after each call began: on an H100, or (`geforce`) an RTX 4090.
std::string ten_launches(double period, double start, bool geforce = false) {
  TraceBuilder b;
  if (geforce) b.device("NVIDIA GeForce RTX 4090", 128, 24LL << 30, 8, 9);
  else b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10 * period);
  for (int k = 0; k < 10; ++k)
    b.kernel("small_kernel", b.call("cudaLaunchKernel", 10 + period * k, 20), 10 + start + period * k, 10);
  return b.str();
}

TEST(AdviseHostWait, LaunchGapsAreTheLaunchBoundLoop) {
  const Advice a = advise_text(ten_launches(100, 25));
  const Symptom* s = symptom(a, "gpu_host_wait");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "host_wait_ns"), 845'000);
  EXPECT_DOUBLE_EQ(figure(*s, "host_wait_share"), 0.845);
  EXPECT_DOUBLE_EQ(figure(*s, "gaps"), 10);
  EXPECT_DOUBLE_EQ(figure(*s, "longest_gap_ns"), 90'000);
  EXPECT_NE(s->text.find("in 10 gaps, the longest 90.0 us (a gap over 1.00 ms is a stall, judged apart)"),
            std::string::npos)
      << s->text;
  EXPECT_DOUBLE_EQ(figure(*s, "busy_share"), 0.1);
  EXPECT_EQ(s->saved_ns, 845'000);
  EXPECT_TRUE(clean(a, "host_stall"));
}

// The same loop at a slow launch latency (a public RTX 4090 trace: a median 178 us a launch onto
// an idle stream, 5.86 ms of its 6.16 ms of gaps after the calls returned). Ten kernels of 10 at
// 200k + 150, their calls [200k + 10, 200k + 30]: each gap [prev end, 200k + 150], 120 of it after
// the call returned. The latency is said, in the symptom and in summary's launch line; at the
// microseconds of the loop above, neither says it.
TEST(AdviseHostWait, ASlowLaunchLatencyIsSaidAsTheWaitsCause) {
  const std::string json = ten_launches(200, 140, /*geforce=*/true);
  const Advice a = advise_text(json);
  const Symptom* s = symptom(a, "gpu_host_wait");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "after_return_ns"), 1'200'000);  // 10 x 120
  EXPECT_TRUE(has(s->text, "1.20 ms of it after the launch calls had returned: launch latency, median 120 us a "
                           "launch onto an idle stream (far above the few microseconds"))
      << s->text;
  EXPECT_TRUE(has(s->examples.at(0).detail, "waiting for its launch (cudaLaunchKernel), 120 us of that after the call had "
                                             "returned"))
      << s->examples[0].detail;
  const Trace t = parse_trace_text(json);
  const TraceIndex index(t);
  EXPECT_TRUE(launch_report(index, LaunchDetail::Totals).slow_latency());
  EXPECT_TRUE(has(explain(index), "over 10 launches (far above the few microseconds of an idle, unshared GPU"));

  const std::string fast_json = ten_launches(100, 25);
  const Advice fa = advise_text(fast_json);
  const Symptom* f = symptom(fa, "gpu_host_wait");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(has(f->text, "launch latency")) << f->text;
  const Trace ft = parse_trace_text(fast_json);
  const TraceIndex fi(ft);
  EXPECT_FALSE(launch_report(fi, LaunchDetail::Totals).slow_latency());
  EXPECT_FALSE(has(explain(fi), "far above the few microseconds"));
}

// At a slow latency a launch queued behind earlier work waits for work that has not started
// yet: summary does not say the GPU had work then. Ten pairs of launches 200 apart: the first's
// kernel starts 120 after its call returned (latency), the second's call returns before that and
// its kernel queues behind it.
// A launch whose work started over 1 ms after its call returned is "waited", not latency, but at
// a slow latency it may be latency too: said so. One more launch at 2100, its kernel at 3300.
TEST(AdviseHostWait, AtASlowLatencyQueuedIsNotSaidAsTheGpuBusy) {
  for (bool slow : {true, false}) {
    TraceBuilder b;
    b.device("NVIDIA GeForce RTX 4090", 128, 24LL << 30, 8, 9);
    b.step(1, 0, 3400);
    const double late = slow ? 120 : 5;
    for (int k = 0; k < 10; ++k) {
      const double at = 10 + 200.0 * k;
      b.kernel("kernel_a", b.call("cudaLaunchKernel", at, 10), at + 10 + late, 10);
      b.kernel("kernel_b", b.call("cudaLaunchKernel", at + 12, 3), at + 20 + late, 10);
    }
    b.kernel("kernel_c", b.call("cudaLaunchKernel", 2100, 10), 3300, 10);
    const Trace t = parse_trace_text(b.str());
    const TraceIndex index(t);
    const std::string said = explain(index);
    EXPECT_TRUE(has(said, "queued behind earlier work on the stream: 10 launches")) << said;
    EXPECT_EQ(has(said, "the GPU had work then"), !slow) << said;
    EXPECT_EQ(has(said, "whose earlier work started late itself"), slow) << said;
    EXPECT_TRUE(has(said, "1 launch onto an idle stream started more than 1.00 ms after the call returned")) << said;
    EXPECT_EQ(has(said, "perhaps the launch's latency too"), slow) << said;
    EXPECT_EQ(has(said, "does not show: not latency"), !slow) << said;
  }
}

// Gaps under a stall spent in the DataLoader's fetch wait for the batch, not for launches (a
// public RTX 3080 trace without workers: 380 us of its longest 473 us gap in the fetch). Step [0,
// 3000], three rounds at t = 0, 1000, 2000: the fetch [t, t + 600], a copy's call [t + 600, t +
// 610] and copy [t + 620, t + 625], a kernel's call [t + 625, t + 630] and kernel [t + 640, t +
// 1000]. Gaps: [t, t + 620] (620, 600 of it in the fetch: the data's) and [t + 625, t + 640] (15,
// launch scale): 1860 of 3000 (62%) waiting for the data, 45 (1.5%) for launches: no launch-bound
// loop. With worker processes, the loader behind them.
TEST(AdviseHostWait, ShortGapsInsideTheDataLoadersFetchWaitForTheDataNotForLaunches) {
  for (const std::string iter : {"_SingleProcessDataLoaderIter", "_MultiProcessingDataLoaderIter"}) {
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3");
    b.step(1, 0, 3000);
    for (int k = 0; k < 3; ++k) {
      const double t = 1000.0 * k;
      b.range("enumerate(DataLoader)#" + iter + ".__next__", t, 600);
      b.memcpy("Memcpy HtoD (Pinned -> Device)", b.call("cudaMemcpyAsync", t + 600, 10), t + 620, 5, 4096);
      b.kernel("big_kernel", b.call("cudaLaunchKernel", t + 625, 5), t + 640, 360);
    }
    const Advice a = advise_text(b.str());
    const bool workers = iter == "_MultiProcessingDataLoaderIter";
    const Finding* f = finding(a, workers ? "loader_behind" : "untraced");
    ASSERT_NE(f, nullptr) << iter;
    const Symptom& s = f->symptoms.at(0);
    EXPECT_EQ(s.rule, "gpu_host_wait");
    EXPECT_DOUBLE_EQ(figure(s, "loading_wait_ns"), 1'860'000);
    EXPECT_DOUBLE_EQ(figure(s, "loading_wait_share"), 0.62);
    EXPECT_DOUBLE_EQ(figure(s, "gaps"), 3);
    EXPECT_EQ(s.saved_ns, 1'860'000);
    EXPECT_TRUE(has(s.text, "GPU idle waiting for the data between launches: 62% of the steps (1.86 ms in 3 gaps of "
                            "1.00 ms or less, each mostly with the launching thread inside the DataLoader's fetches"))
        << s.text;
    EXPECT_TRUE(has(s.text, workers ? "its worker processes did not have the batch ready"
                                    : "the training thread prepared the data itself"))
        << s.text;
    ASSERT_EQ(s.examples.size(), 3u);
    EXPECT_EQ(s.examples[0].name, "Memcpy HtoD (Pinned -> Device)");
    EXPECT_EQ(finding(a, "launch_bound"), nullptr) << "45 us of launch gaps is no launch-bound loop";
  }
}

// Step [0, 10000]. A kernel [70, 100] (call [50, 60]); then what `host` records; then a kernel
// [6170, 9970] (call [6150, 6160]). The gap [100, 6170] (6070) waits on the host: a stall.
// The gap [0, 70] is launch scale: 70 of the window, 0.7%, under the launch-bound threshold.
template <typename Host>
std::string stalled_step(Host host) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 50, 10), 70, 30);
  host(b);
  b.kernel("big_kernel", b.call("cudaLaunchKernel", 6150, 10), 6170, 3800);
  return b.str();
}

// The GPU idle during a stream capture waits on no launch: the launches made inside it are
// recorded into a graph and run nothing then (a public vLLM start-up trace's 56.1 ms capture read
// as a host stall, "53x faster"). The same step as ALongGapIsAStallNamedByWhatTheHostDid with a
// capture [200, 6100] holding 50 launches that find no work: no stall, the header says why; the
// gap's part after the capture (6100 to 6170) is launch scale.
TEST(AdviseHostWait, TheGpusIdleTimeInAStreamCaptureIsNoStall) {
  for (int variant : {0, 1, 2}) {
    // 0: the launching thread captures; 1: no capture; 2: another thread captures, which leaves
    // this thread's launches waited for.
    const bool captured = variant == 0;
    SCOPED_TRACE(variant == 0 ? "inside a capture" : variant == 1 ? "the same launches, no capture"
                                                                  : "another thread's capture");
    const Advice a = advise_text(stalled_step([&](TraceBuilder& b) {
      b.range("capture_32_FULL", 100, 6020);
      const int tid = variant == 2 ? 2 : 1;
      if (variant != 1) b.call("cudaStreamBeginCapture", 190, 10, 0, tid);
      for (int k = 0; k < 50; ++k) b.call("cudaLaunchKernel", 300 + 100.0 * k, 5, 0, tid);
      if (variant != 1) b.call("cudaStreamEndCapture", 6100, 10, 0, tid);
    }));
    EXPECT_EQ(finding(a, "host_stall") == nullptr, captured);
    if (captured) {
      EXPECT_EQ(a.capture_idle_ns, 5'900'000);
      EXPECT_TRUE(has(format_advice(a, "t.json"), "a stream capture takes 5.90 ms of the steps")) << format_advice(a, "t.json");
    } else {
      EXPECT_TRUE(a.captures.empty());
    }
  }
}

// The host loads data in a range [100, 6100] holding aten::to [300, 5800] (which holds
// cudaMalloc [400, 2000]). What the host did: the innermost slice covering at least half of the
// stall (3035): aten::to (5500), not cudaMalloc (1600), inside the data loader's range. Saved
// 6070 of 10000.
TEST(AdviseHostWait, ALongGapIsAStallNamedByWhatTheHostDid) {
  const Advice a = advise_text(stalled_step([](TraceBuilder& b) {
    b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 6000);
    b.op("aten::to", 300, 5500);
    b.call("cudaMalloc", 400, 1600);
  }));
  const Finding* f = finding(a, "host_stall");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(s.saved_ns, 6'070'000);
  EXPECT_DOUBLE_EQ(figure(s, "stalls"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "stall_share"), 0.607);
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].name, "aten::to");
  EXPECT_EQ(s.examples[0].ts_ns, 300'000);
  EXPECT_TRUE(has(s.examples[0].detail, "the GPU idle 6.07 ms")) << s.examples[0].detail;
  EXPECT_TRUE(has(s.examples[0].detail, "inside enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"))
      << s.examples[0].detail;
  EXPECT_TRUE(has(s.examples[0].detail, "then big_kernel")) << s.examples[0].detail;
  // The lesson whose fix moves the batch off the training thread (a cold read found the profiler's
  // options page here, which teaches neither).
  EXPECT_EQ(f->lesson.link(), "06_find_and_fix/README.md#3-the-batch-on-the-training-thread-fix2");
  EXPECT_EQ(f->lesson.command, "./run-lesson 06_find_and_fix --variant fix2");
  EXPECT_TRUE(clean(a, "gpu_host_wait"));
  // 6000 of the 6070 inside the DataLoader's fetch (half or more): the step waited for its batch,
  // prepared on the training thread itself.
  EXPECT_DOUBLE_EQ(figure(s, "data_loading_ns"), 6'000'000);
  EXPECT_TRUE(has(s.text, "; 6.00 ms of it (99%) with the launching thread inside the DataLoader's fetches "
                          "(enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__): the training "
                          "thread prepared the data itself"))
      << s.text;
}

// The same stall with no operator or range on the launching thread but Python's stack tracer's
// slices (with_stack in Python): the innermost covering half of it names what the host did,
// preprocess [200, 4200] (4000 of 6070) inside step [100, 6100], not read_video [300, 1300].
TEST(AdviseHostWait, AStallCoveredByPythonsTracerIsNamedByItsCode) {
  const Advice a = advise_text(stalled_step([](TraceBuilder& b) {
    b.slice("python_function", "pipeline.py(10): __call__", 100, 6000);
    b.slice("python_function", "image_processing.py(235): preprocess", 200, 4000);
    b.slice("python_function", "video.py(50): read_video", 300, 1000);
  }));
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->examples.size(), 1u);
  EXPECT_EQ(s->examples[0].name, "image_processing.py(235): preprocess");
  EXPECT_TRUE(has(s->examples[0].detail, "but this Python code (Python's stack tracer's slice)")) << s->examples[0].detail;
}

// The same stall waiting on a DataLoader with worker processes ([100, 6100]), and one where the
// fetch covers less than half of the stall ([100, 3000]: 2900 of 6070): named only when it is
// most of the stall.
TEST(AdviseHostWait, AStallInsideTheDataLoadersFetchIsTheLoaders) {
  for (const double fetch : {6000.0, 2900.0}) {
    const Advice a = advise_text(stalled_step([fetch](TraceBuilder& b) {
      b.range("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 100, fetch);
    }));
    const Symptom* s = symptom(a, "host_stall");
    ASSERT_NE(s, nullptr);
    const bool named = has(s->text, "its worker processes did not have the batch ready");
    EXPECT_EQ(named, fetch == 6000.0) << s->text;
    const bool figure_given = std::any_of(s->figures.begin(), s->figures.end(),
                                          [](const auto& f) { return f.first == "data_loading_ns"; });
    EXPECT_EQ(figure_given, fetch == 6000.0);
  }
}

// The same stall where the fetch [100, 3100] is a loop of 300 small operators (10 each): the loop's
// 3000 is op_loop's, not the stall's (3070 counted), and none of the counted part is in the fetch:
// the stall is not the loader's.
TEST(AdviseHostWait, AFetchThatIsALoopIsNotTheStallsCause) {
  const Advice a = advise_text(stalled_step([](TraceBuilder& b) {
    b.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 100, 3000);
    for (int i = 0; i < 300; ++i) b.op("aten::neg", 100 + 10.0 * i, 10);
  }));
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "stall_ns"), 3'070'000);
  EXPECT_FALSE(has(s->text, "DataLoader")) << s->text;
}

// The same stall with the launching thread inside torch.compile's ranges ([100, 6100], nested
// "(dynamo_timed)" ones, counted once): a first call compiling inside the recorded window. Its
// ranges are user_annotation in 2025's traces, cpu_op in torch 2.11's: both.
TEST(AdviseHostWait, AStallWhileTorchCompileCompilesIsSaidSo) {
  for (const bool as_operators : {false, true}) {
    SCOPED_TRACE(as_operators ? "cpu_op" : "user_annotation");
    const Advice a = advise_text(stalled_step([as_operators](TraceBuilder& b) {
      for (const auto& [name, at, dur] : {std::tuple{"_compile.compile_inner (dynamo_timed)", 100.0, 6000.0},
                                          std::tuple{"OutputGraph.call_user_compiler (dynamo_timed)", 200.0, 5000.0}})
        as_operators ? b.op(name, at, dur) : b.range(name, at, dur);
    }));
    const Symptom* s = symptom(a, "host_stall");
    ASSERT_NE(s, nullptr);
    EXPECT_DOUBLE_EQ(figure(*s, "compiling_ns"), 6'000'000);
    EXPECT_NE(finding(a, "one_time_stall"), nullptr);  // a first call's: warm up
    EXPECT_EQ(finding(a, "host_stall"), nullptr);
    EXPECT_TRUE(has(s->text, "; 6.00 ms of it (99%) with the launching thread compiling (torch.compile's "
                             "\"(dynamo_timed)\" ranges, the longest _compile.compile_inner (dynamo_timed)): a "
                             "first call compiled inside the recorded window, not the steady state"))
        << s->text;
  }
}

// Step [0, 10000]: first_kernel [70, 100] (call [50, 60]); then loaded_kernel's first launch, a
// call of 4800 [200, 5000] (the runtime loading the kernel), its kernel [5010, 5100]; then its
// second launch, a slow call too [5200, 7200] but not a first one, its kernel [7210, 9900].
// Stalls: [100, 5010] (4910) and [5100, 7210] (2110), 7020 in all, of which 4800 inside the first
// launch (68%: half or more): said, and the gain says it is mostly a first call's one-time cost.
TEST(AdviseHostWait, AStallInsideAKernelsFirstLaunchIsAOneTimeCost) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 50, 10), 70, 30);
  b.kernel("loaded_kernel", b.call("cudaLaunchKernel", 200, 4800), 5010, 90);
  b.kernel("loaded_kernel", b.call("cudaLaunchKernel", 5200, 2000), 7210, 2690);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "stall_ns"), 7'020'000);
  EXPECT_DOUBLE_EQ(figure(*s, "first_launch_ns"), 4'800'000);
  EXPECT_TRUE(has(s->text, "; 4.80 ms of it (68%) with the launching thread in the first launches of their kernels "
                           "(the longest 4.80 ms, cudaLaunchKernel of loaded_kernel): the GPU's runtime loads a "
                           "kernel's code at its first launch"))
      << s->text;
  EXPECT_TRUE(has(s->how, "; most of it a first call's one-time cost: warm up before recording")) << s->how;
  EXPECT_NE(finding(a, "one_time_stall"), nullptr);
  ASSERT_EQ(s->examples.size(), 2u);
  EXPECT_TRUE(has(s->examples[0].detail, "was inside this call (its kernel's first launch in the trace)"))
      << s->examples[0].detail;
  EXPECT_TRUE(has(s->examples[1].detail, "was inside this call;")) << s->examples[1].detail;
}

// A first call far slower than its later ones: step [0, 12000]; first_kernel [10, 20] (call [0,
// 5]); aten::conv's first call [100, 3100] (a library setting itself up: 3000, over a stall), its
// kernel's launch [3000, 3010] and kernel [3020, 3100]; then a second aten::conv [3200, 3300] (100:
// a thirtieth), launch [3250, 3260], kernel [3270, 3300]; then untraced host time and a last
// kernel [6000, 11900] (call [5980, 5990]). Stalls: [20, 3020] (3000, of which 2900 inside the
// first conv) and [3300, 6000] (2700, none). 5700 in all: the first call 51%, said; its kernel
// launch is not a first slow one (10 us). Inside each conv, the library's call (aten::cudnn,
// [150, 2900] then [3210, 3240]), a first call too, which names whose set-up it was.
TEST(AdviseHostWait, AFirstCallFarSlowerThanItsLaterOnesIsAOneTimeCost) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 12000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.op("aten::conv", 100, 3000);
  b.op("aten::cudnn", 150, 2750);
  b.kernel("conv_kernel", b.call("cudaLaunchKernel", 3000, 10), 3020, 80);
  b.op("aten::conv", 3200, 100);
  b.op("aten::cudnn", 3210, 30);
  b.kernel("conv_kernel", b.call("cudaLaunchKernel", 3250, 10), 3270, 30);
  b.kernel("last_kernel", b.call("cudaLaunchKernel", 5980, 10), 6000, 5900);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "stall_ns"), 5'700'000);
  EXPECT_DOUBLE_EQ(figure(*s, "first_call_ns"), 2'920'000);
  EXPECT_TRUE(has(s->text, "; 2.92 ms of it (51%) with the launching thread in first calls far slower than their "
                           "later ones (the longest aten::conv (3.00 ms), most of it in aten::cudnn (2.75 ms)): "
                           "a library setting itself up"))
      << s->text;
  EXPECT_NE(finding(a, "one_time_stall"), nullptr);
  // Its later call as slow (3000 as well): not a first call's cost, nor one made once.
  TraceBuilder same;
  same.device("NVIDIA H100 80GB HBM3");
  same.step(1, 0, 12000);
  same.kernel("first_kernel", same.call("cudaLaunchKernel", 0, 5), 10, 10);
  same.op("aten::conv", 100, 3000);
  same.kernel("conv_kernel", same.call("cudaLaunchKernel", 3000, 10), 3020, 80);
  same.kernel("last_kernel", same.call("cudaLaunchKernel", 5980, 10), 6000, 5900);
  const Advice slow = advise_text(same.str());
  const Symptom* once = symptom(slow, "host_stall");
  ASSERT_NE(once, nullptr);
  EXPECT_FALSE(has(once->text, "first calls")) << once->text;
  EXPECT_EQ(finding(slow, "one_time_stall"), nullptr);
  // Slow again later (a 1.5 ms call among forty fast ones): a cost that recurs, not a first call's.
  TraceBuilder again;
  again.device("NVIDIA H100 80GB HBM3");
  again.step(1, 0, 12000);
  again.kernel("first_kernel", again.call("cudaLaunchKernel", 0, 5), 10, 10);
  again.op("aten::conv", 100, 3000);
  again.kernel("conv_kernel", again.call("cudaLaunchKernel", 3000, 10), 3020, 80);
  for (int k = 0; k < 40; ++k) again.op("aten::conv", 3200 + 10.0 * k, 5);
  again.op("aten::conv", 3700, 1500);
  again.kernel("last_kernel", again.call("cudaLaunchKernel", 5980, 10), 6000, 5900);
  const Advice recurs = advise_text(again.str());
  const Symptom* r = symptom(recurs, "host_stall");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(has(r->text, "first calls")) << r->text;
}

// One-time costs together: a kernel's first launch (call [30, 1830], kernel [1840, 1900]) and a
// first call far slower than its later one (aten::setup [2000, 3600], later [3700, 3750]; its
// launch [3600, 3605], kernel [3610, 3700]), then a stall of other work (untraced to the last
// kernel [6000, 11900], call [5980, 5990]). Stalls: [20, 1840] (1820: 1800 first launch), [1900,
// 3610] (1710: 1600 first call), [3700, 6000] (2300: the later aten::setup, then untraced). 5830 in
// all: first launches 31%, first calls 27%, neither half; together 3400 (58%): one-time costs.
TEST(AdviseHostWait, OneTimeCostsTogetherHoldingHalfAStallAreOneTimeCosts) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 12000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.kernel("loaded_kernel", b.call("cudaLaunchKernel", 30, 1800), 1840, 60);
  b.op("aten::setup", 2000, 1600);
  b.kernel("setup_kernel", b.call("cudaLaunchKernel", 3600, 5), 3610, 90);
  b.op("aten::setup", 3700, 50);
  b.kernel("last_kernel", b.call("cudaLaunchKernel", 5980, 10), 6000, 5900);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "stall_ns"), 5'830'000);
  EXPECT_DOUBLE_EQ(figure(*s, "one_time_ns"), 3'400'000);
  EXPECT_TRUE(has(s->text, "; 3.40 ms of it (58%) with the launching thread paying one-time costs: first launches of "
                           "kernels, first calls far slower than their later ones, compiling (the longest 1.80 ms, "
                           "cudaLaunchKernel of loaded_kernel): not the steady state"))
      << s->text;
  EXPECT_NE(finding(a, "one_time_stall"), nullptr);
}

// Each device loads its modules itself: kernel k's first launch on device 0 (call [30, 2030],
// kernel [2040, 2100]) and its first on device 1 (call [2200, 4200], kernel [4210, 4300]), after
// a first kernel [10, 20] and before a last [4410, 9900]. Stalls [20, 2040] (2020) and [2100,
// 4210] (2110): 4130, of which 4000 in first launches (97%; keyed by name alone, device 1's
// would not be one: 48%, not said). A graph's launch is none (its first is the graph's upload).
TEST(AdviseHostWait, AKernelsFirstLaunchIsPerDevice) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.kernel("k", b.call("cudaLaunchKernel", 30, 2000), 2040, 60, 7, 0, 0);
  b.kernel("k", b.call("cudaLaunchKernel", 2200, 2000), 4210, 90, 7, 0, 1);
  b.kernel("last_kernel", b.call("cudaLaunchKernel", 4400, 5), 4410, 5490);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "stall_ns"), 4'130'000);
  EXPECT_DOUBLE_EQ(figure(*s, "first_launch_ns"), 4'000'000);

  TraceBuilder g;
  g.device("NVIDIA H100 80GB HBM3");
  g.step(1, 0, 10000);
  g.kernel("first_kernel", g.call("cudaLaunchKernel", 0, 5), 10, 10);
  g.kernel("graph_kernel", g.call("cudaGraphLaunch", 30, 4000), 4040, 60);
  g.kernel("last_kernel", g.call("cudaLaunchKernel", 4400, 5), 4410, 5490);
  const Advice ga = advise_text(g.str());
  const Symptom* graph = symptom(ga, "host_stall");
  ASSERT_NE(graph, nullptr);
  EXPECT_FALSE(has(graph->text, "first launches")) << graph->text;
}

// Step [0, 5000]: a kernel [10, 20] (call [0, 5]), then nothing recorded on the thread but
// aten::add [100, 200] until the next launch [3000, 3010] and its kernel [3020, 3030]. The gap
// [20, 3020] (3000) is a stall no slice covers half of: untraced work, said so, with the slice
// that covered the most. Saved 3000 of 5000.
TEST(AdviseHostWait, AStallWithNothingRecordedSaysSo) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 5000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.op("aten::add", 100, 100);
  b.kernel("next_kernel", b.call("cudaLaunchKernel", 3000, 10), 3020, 10);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->saved_ns, 3'000'000);
  ASSERT_EQ(s->examples.size(), 1u);
  EXPECT_EQ(s->examples[0].name, "(untraced)");
  EXPECT_EQ(s->examples[0].ts_ns, 20'000);
  EXPECT_EQ(s->examples[0].dur_ns, 3'000'000);
  EXPECT_TRUE(has(s->examples[0].detail, "ran nothing the profiler recorded on the launching thread "
                                         "for most of it (aten::add covers 100 us)"))
      << s->examples[0].detail;
  // The same stall begun 500 us before the step (the step [520, 5520], the first kernel launched
  // before it): its example's place from the first step is negative, written "-500.000 us".
  TraceBuilder early;
  early.device("NVIDIA H100 80GB HBM3");
  early.kernel("first_kernel", early.call("cudaLaunchKernel", 0, 5), 10, 10);
  early.step(1, 520, 5000);
  early.op("aten::add", 600, 100);
  early.kernel("next_kernel", early.call("cudaLaunchKernel", 3000, 10), 3020, 10);
  const std::string said = format_advice(advise_text(early.str()), "t.json");
  EXPECT_TRUE(has(said, "\n       -500.000 us (ts 20.000): (untraced)")) << said;
}

// A stall that is the profiler's: the launching thread inside aten::mm [100, 3102], CUPTI's
// Activity Buffer Request [500, 3000] (pid -1), its next call at 3002 (2 after the record, no call
// of that thread during it): that thread most likely waited for the profiler. The GPU idle from
// 20 to 3022 (3002), 2500 of it the profiler's: 502 left, under the stall threshold, no finding.
// The same with the launch at 5002 (the mm [100, 5102], the record [2500, 5000]): 5002 idle,
// 2500 the profiler's, 2502 a stall, said with the profiler's part left out.
TEST(AdviseHostWait, TheProfilersOwnWorkTheLaunchingThreadWaitedForIsNoStall) {
  auto held = [](double launch) {
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3");
    b.step(1, 0, 6000);
    b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
    b.op("aten::mm", 100, launch);
    b.overhead("Activity Buffer Request", launch - 2502, 2500);  // ends 2 before the launch
    b.kernel("next_kernel", b.call("cudaLaunchKernel", launch, 10), launch + 20, 10);
    return advise_text(b.str());
  };
  const Advice a = held(3002);
  EXPECT_TRUE(clean(a, "host_stall"));
  const Advice longer = held(5002);
  const Symptom* s = symptom(longer, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->saved_ns, 2'502'000);
  EXPECT_DOUBLE_EQ(figure(*s, "profiler_ns"), 2'500'000);
  EXPECT_TRUE(has(s->text, " (besides 2.50 ms of the profiler's own work that the launching thread most "
                           "likely waited for, left out: summary names it)"))
      << s->text;
  // A second record inside the first ([3000, 4999]) adds nothing: their union is left out once.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 6000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.op("aten::mm", 100, 5002);
  b.overhead("Activity Buffer Request", 2500, 2500).overhead("Buffer Flush", 3000, 1999);
  b.kernel("next_kernel", b.call("cudaLaunchKernel", 5002, 10), 5022, 10);
  const Advice two = advise_text(b.str());
  const Symptom* t = symptom(two, "host_stall");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->saved_ns, 2'502'000);
}

// CUDA's own work among CUPTI's overhead records is the program's, not the profiler's: a stall
// whose record is a lazy load of the next kernel's code ("Runtime Triggered Module Loading" [2500,
// 5000] and "Lazy Function Loading" [4990, 4995], inside the next launch call [2490, 5002]) counts
// whole, the GPU idle [20, 5022]; the summary says the records apart from the profiler's work.
TEST(AdviseHostWait, LazyLoadingIsTheProgramsOwnStallNotTheProfilers) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 6000);
  b.kernel("first_kernel", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.overhead("Runtime Triggered Module Loading", 2500, 2500).overhead("Lazy Function Loading", 4990, 5);
  b.kernel("next_kernel", b.call("cudaLaunchKernel", 2490, 2512), 5022, 10);
  const std::string json = b.str();
  const Advice a = advise_text(json);
  const Symptom* s = symptom(a, "host_stall");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->saved_ns, 5'002'000);  // the idle [20, 5022]: no profiler's part left out
  for (const auto& [name, value] : s->figures) EXPECT_NE(name, "profiler_ns") << s->text;
  const Trace t = parse_trace_text(json);
  const TraceIndex index(t);
  EXPECT_TRUE(profiler_overhead(index).empty());
  const std::vector<CudaOverhead> cuda = cuda_overhead(index);
  ASSERT_EQ(cuda.size(), 2u);
  EXPECT_EQ(cuda[0].name, "Runtime Triggered Module Loading");
  EXPECT_STREQ(cuda[0].kind, "lazy loading");
  EXPECT_EQ(cuda[0].records, 1);
  EXPECT_EQ(cuda[0].total_ns, 2'500'000);
  ASSERT_NE(cuda[0].in_call, CudaOverhead::npos);
  EXPECT_EQ(t.events[cuda[0].in_call].dur_ns, 2'512'000);
  const std::string said = explain(index);
  EXPECT_EQ(said.find("the profiler's own work"), std::string::npos) << said;
  {
    // The call that paid for a record: the shortest that lasts through it, a synchronize aside
    // (another thread's cudaStreamSynchronize [0, 6000] spans it too); the kinds in their order
    // (a Driver Compiler record first in the trace, said after lazy loading).
    TraceBuilder two = b;
    two.call("cudaStreamSynchronize", 0, 6000, 0, /*tid=*/2);
    two.overhead("Driver Compiler", 100, 50);
    const Trace t2 = parse_trace_text(two.str());
    const TraceIndex i2(t2);
    const std::vector<CudaOverhead> c2 = cuda_overhead(i2);
    ASSERT_EQ(c2.size(), 3u);
    EXPECT_STREQ(c2[0].kind, "lazy loading");
    EXPECT_STREQ(c2[1].kind, "lazy loading");
    EXPECT_STREQ(c2[2].kind, "the driver compiling");
    ASSERT_NE(c2[0].in_call, CudaOverhead::npos);
    EXPECT_EQ(t2.events[c2[0].in_call].name, "cudaLaunchKernel");
    EXPECT_EQ(c2[2].in_call, CudaOverhead::npos);  // inside the synchronize alone
  }
  EXPECT_NE(said.find("CUDA's own work in CUPTI's overhead records (the program's, with or without a profiler): "
                      "lazy loading (a kernel's code loaded at its first launch"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("1 Runtime Triggered Module Loading record, 2.50 ms (inside a 2.51 ms cudaLaunchKernel of "
                      "next_kernel in ProfilerStep#1), 1 Lazy Function Loading record, 5.00 us (inside a 2.51 ms "
                      "cudaLaunchKernel of next_kernel in ProfilerStep#1)"),
            std::string::npos)
      << said;
}

// GPU events that stop early, and why. Step [0, 1000]: a kernel [20, 620] (call [10, 15]), a
// second launched at 30 (call [30, 35]) that runs from 620 for `second` us, then launches at 900
// and 950 whose work is not in the trace. With second = 600 the recorded work ends at 1220, past
// the CPU's end (1000), the GPU 585 us behind its host at the last launch found: the lost work ran
// after recording stopped, most likely. With second = 100 it ends at 720, 280 us before the CPU's
// end: the GPU was idle while the lost launches were made, and recording went on: dropped.
TEST(AdviseHeader, GpuEventsThatStopEarlySayTheLikelierCause) {
  auto lost = [](double second) {
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3");
    b.step(1, 0, 1000);
    b.kernel("first_kernel", b.call("cudaLaunchKernel", 10, 5), 20, 600);
    b.kernel("second_kernel", b.call("cudaLaunchKernel", 30, 5), 620, second);
    b.call("cudaLaunchKernel", 900, 5);
    b.call("cudaLaunchKernel", 950, 5);
    return b.str();
  };
  const Trace late = parse_trace_text(lost(600));
  const TraceIndex late_index(late);
  const LaunchExpectations x = launch_expectations(late_index);
  ASSERT_TRUE(x.stops_early());
  EXPECT_EQ(x.lost(), 2u);
  EXPECT_EQ(x.expecting.size(), 4u);
  EXPECT_EQ(x.lag_ns, 585'000);
  EXPECT_EQ(x.gpu_end, 1'220'000);
  EXPECT_EQ(x.cpu_end, 1'000'000);
  EXPECT_TRUE(x.after_recording);
  EXPECT_EQ(lost_tail_said(x),
            "GPU events stop early: the last 2 of 4 launch calls that must start GPU work found none; the recorded "
            "GPU work lasts to the recording's end (the GPU 585 us behind its host at the last launch found): their "
            "work ran after the profiler stopped, most likely, and Kineto keeps none of it (synchronize before it "
            "stops)");
  const Advice a = advise(late_index);
  EXPECT_EQ(a.gpu_events_stop_early, lost_tail_said(x) + ": " + lost_tail_consequence(x));
  EXPECT_TRUE(a.lost_after_recording);
  EXPECT_TRUE(has(format_advice(a, "t.json"), "(synchronize before it stops): the figures are the recorded work's, "
                                              "without theirs (`pil-trace check`)"));
  EXPECT_TRUE(has(explain(late_index), "  - GPU events stop early: the last 2 of 4 launch calls"));

  const Trace early = parse_trace_text(lost(100));
  const TraceIndex early_index(early);
  const LaunchExpectations y = launch_expectations(early_index);
  ASSERT_TRUE(y.stops_early());
  EXPECT_FALSE(y.after_recording);
  EXPECT_EQ(lost_tail_said(y),
            "GPU events stop early: the last 2 of 4 launch calls that must start GPU work found none; the recorded "
            "GPU work ended 280 us before the recording did: their records were dropped, most likely (a full "
            "buffer?)");
  EXPECT_TRUE(has(format_advice(advise(early_index), "t.json"),
                  "(a full buffer?): the missing work reads as GPU idle time, so idle and launch-bound figures come "
                  "out too high"));
  // Where the profiler logged that GPU events are missing, they were dropped, whatever the times.
  std::string logged = lost(600);
  logged.insert(logged.rfind('}'), R"x(, "ERROR": ["ERROR:2026-12-07 10:00:00 1:1 GenericActivityProfiler.cpp:799] )x"
                                   R"x(State: CollectTrace stopped by GPU profiler. (Buffer size configured is 128MB)"])x");
  const Trace lt = parse_trace_text(logged);
  const TraceIndex li(lt);
  const LaunchExpectations z = launch_expectations(li);
  EXPECT_TRUE(z.loss_logged);
  EXPECT_FALSE(z.after_recording);
  EXPECT_TRUE(has(lost_tail_said(z), "; the profiler logged that GPU events are missing: their records were dropped"))
      << lost_tail_said(z);
  // One lost launch at the end is no stop: the last launch before a profiler stops may miss its work.
  TraceBuilder one;
  one.device("NVIDIA H100 80GB HBM3");
  one.step(1, 0, 1000);
  one.kernel("first_kernel", one.call("cudaLaunchKernel", 10, 5), 20, 600);
  one.call("cudaLaunchKernel", 950, 5);
  const Trace t1 = parse_trace_text(one.str());
  const TraceIndex i1(t1);
  EXPECT_FALSE(launch_expectations(i1).stops_early());
  EXPECT_TRUE(advise(i1).gpu_events_stop_early.empty());
}

// A trace of CUDA calls and GPU work alone (recorded without ProfilerActivity.CPU): the rules
// that read the operators have none to read, and say so instead of "nothing found".
TEST(AdviseHeader, ATraceWithoutOperatorsLeavesTheOperatorRulesUnchecked) {
  TraceBuilder b;
  b.device("NVIDIA RTX A4000", 48, 16LL << 30, 8, 6);
  for (int k = 0; k < 5; ++k) b.kernel("k", b.call("cudaLaunchKernel", 100.0 * k, 5), 100.0 * k + 10, 50);
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(a.cuda_side_only);
  for (const char* rule : {"op_loop", "copies", "optimizer", "rebuilt_constant", "gemm_epilogue", "memory_peak"}) {
    const auto it = std::find_if(a.unable.begin(), a.unable.end(), [&](const RuleNote& n) { return n.rule == rule; });
    ASSERT_NE(it, a.unable.end()) << rule;
    EXPECT_TRUE(has(it->why, "no operator or range")) << it->why;
  }
  EXPECT_TRUE(has(format_advice(a, "t.json"), "with GPU work; no operator or range (recorded without "
                                              "ProfilerActivity.CPU)"));
}

// A ROCm trace whose correlation ids are all 0 (amd-sriram/Frameworks101's MIOpen runs: 7 of 7
// kernels, each hipLaunchKernel's too): no GPU work is linked to its launch. The launch rules
// found nothing for want of links and said "Nothing found"; they are now not checked, and said
// why, while the rules that read kernels alone still run. Three steps of 1000: five launches
// 150 apart, each kernel 20 long 5 after its call returned: the GPU waits on the host.
TEST(AdviseHeader, GpuWorkWithoutLaunchCallsLeavesTheLaunchRulesUnchecked) {
  TraceBuilder b;
  b.device("AMD Instinct MI250X", 104, 64LL << 30, 9, 0);
  for (int k = 0; k < 3; ++k) {
    b.step(k + 1, 1000.0 * k, 1000);
    for (int j = 0; j < 5; ++j) {
      const double at = 1000.0 * k + 10 + 150 * j;
      b.kernel("elementwise_kernel", b.call("hipLaunchKernel", at, 10), at + 15, 20);
    }
  }
  const std::string linked = b.str();
  const Advice with_links = advise_text(linked);
  EXPECT_NE(finding(with_links, "launch_bound"), nullptr);
  EXPECT_FALSE(with_links.links_missing());
  const std::string zero = std::regex_replace(linked, std::regex("\"correlation\": [0-9]+"), "\"correlation\": 0");
  const Advice a = advise_text(zero);
  EXPECT_EQ(a.unlinked_work, 15);
  EXPECT_EQ(a.work_items, 15);
  EXPECT_TRUE(a.links_missing());
  EXPECT_EQ(finding(a, "launch_bound"), nullptr);
  for (const char* rule : {"gpu_host_wait", "short_kernels", "host_stall", "host_sync", "pageable_copy",
                           "rebuilt_constant", "optimizer", "copies", "gemm_epilogue"})
    EXPECT_TRUE(has(unable(a, rule), "15 of the 15 GPU work items have no launch call in the trace (correlation 0 "
                                     "on every one; pil-trace check: gpu_work_without_launch)"))
        << rule << ": " << unable(a, rule);
  EXPECT_TRUE(clean(a, "first_step"));  // read from the steps alone: still run
  // Those that leave a GPU trace's host time to the GPU rules say that, not the links.
  for (const char* rule : {"op_overhead", "untraced", "data_loading"})
    EXPECT_TRUE(has(unable(a, rule), "the trace has GPU work: the host's time there is judged")) << rule << ": "
                                                                                                  << unable(a, rule);
  EXPECT_TRUE(has(format_advice(a, "t.json"), "15 of the 15 GPU work items have no launch call in the trace"));
}

// --- host synchronizes inside a step -------------------------------------------------------------

// Two steps of 1000 on an H100, each launching kernel_A [s + 30, s + 330] (call [s + 10, s + 20]),
// then what `rest` adds at the step's start s.
std::string kernel_a_then(const std::function<void(TraceBuilder&, double)>& rest) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  for (int k = 0; k < 2; ++k) {
    const double s = 1000.0 * k;
    b.step(k + 1, s, 1000);
    b.kernel("kernel_A", b.call("cudaLaunchKernel", s + 10, 10), s + 30, 300);
    rest(b, s);
  }
  return b.str();
}

// Two steps of 1000 at s = 0 and 1000. In each: kernel A [s+30, s+330] (call [s+10, s+20]); a
// copy to the host, cudaMemcpyAsync [s+40, s+50] whose copy runs [s+330, s+332] behind A; then
// cudaStreamSynchronize [s+55, s+335] (280), the GPU busy 275 of it with A and 2 with the copy
// (277); kernel B [s+420, s+720] (call [s+400, s+410]); with `final_sync`, the step's last
// cudaDeviceSynchronize [s+415, s+725], waiting for B after the step's last launch: not counted
// (counted, it would add 2 x 310).
// Counted: the two cudaStreamSynchronize, 560 waited, 554 of it the GPU busy. The GPU idle in
// each step: 1000 - (300 + 2 + 300) = 398, 796 in all; saved min(560, 796) = 560 of 2000.
std::string item_every_step(bool final_sync, bool mid_step_sync = true) {
  return kernel_a_then([&](TraceBuilder& b, double s) {
    if (mid_step_sync) {
      b.memcpy("Memcpy DtoH (Device -> Pinned)", b.call("cudaMemcpyAsync", s + 40, 10), s + 330, 2, 4);
      b.call("cudaStreamSynchronize", s + 55, 280);
    }
    b.kernel("kernel_B", b.call("cudaLaunchKernel", s + 400, 10), s + 420, 300);
    if (final_sync) b.call("cudaDeviceSynchronize", s + 415, 310);
  });
}

TEST(AdviseHostSync, ACopyToTheHostMidStepIsASync) {
  const Advice a = advise_text(item_every_step(true));
  const Finding* f = finding(a, "host_sync");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "waits"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "synchronizes"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "after_copy_to_host"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "most_in_a_step"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "final_not_counted"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "waited_ns"), 560'000);
  EXPECT_DOUBLE_EQ(figure(s, "gpu_busy_ns"), 554'000);
  EXPECT_DOUBLE_EQ(figure(s, "gpu_idle_ns"), 796'000);
  EXPECT_EQ(s.saved_ns, 560'000);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(s.examples[0].ts_ns, 55'000);
  EXPECT_TRUE(has(s.examples[0].detail, "waited 280 us for 277 us of GPU work (2 items, the longest kernel_A)"))
      << s.examples[0].detail;
  EXPECT_TRUE(has(s.examples[0].detail, "after a copy to the host")) << s.examples[0].detail;
  EXPECT_EQ(s.examples[0].where.substr(0, 14), "ProfilerStep#1");
}

// Without its final synchronize the mid-step one is each step's last, but kernel B is launched
// after it: it is counted all the same (the same 560).
TEST(AdviseHostSync, ASyncWithWorkLaunchedAfterItIsCounted) {
  const Advice a = advise_text(item_every_step(false));
  const Symptom* s = symptom(a, "host_sync");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "final_not_counted"), 0);
  EXPECT_EQ(s->saved_ns, 560'000);
}

// The lessons' loop: one synchronize at each step's end, after its last launch. Not a problem.
TEST(AdviseHostSync, TheStepFinalSynchronizeIsNotAProblem) {
  const Advice a = advise_text(item_every_step(true, /*mid_step_sync=*/false));
  EXPECT_EQ(finding(a, "host_sync"), nullptr);
  EXPECT_TRUE(clean(a, "host_sync"));
}

// Two synchronizes back to back after the step's last launch (an event's, then the stream's, as
// a public trace's pinned-copy loop: 306 us, then 2 us), in either order: both are the step's
// end, none counted; with kernel B launched after the first, that one is.
TEST(AdviseHostSync, SynchronizesBackToBackAtTheStepsEndAreAllItsEnd) {
  for (bool long_first : {true, false}) {
    const Advice a = advise_text(kernel_a_then([&](TraceBuilder& b, double s) {
      b.call("cudaEventSynchronize", s + 40, long_first ? 295 : 2);
      b.call("cudaStreamSynchronize", s + (long_first ? 340 : 45), long_first ? 2 : 290);
    }));
    EXPECT_EQ(symptom(a, "host_sync"), nullptr) << long_first;
    EXPECT_TRUE(clean(a, "host_sync")) << long_first;
  }
  const Advice a = advise_text(kernel_a_then([](TraceBuilder& b, double s) {
    b.call("cudaEventSynchronize", s + 40, 295);
    b.kernel("kernel_B", b.call("cudaLaunchKernel", s + 400, 10), s + 420, 300);
    b.call("cudaStreamSynchronize", s + 415, 310);
  }));
  const Symptom* with_b = symptom(a, "host_sync");
  ASSERT_NE(with_b, nullptr);
  EXPECT_DOUBLE_EQ(figure(*with_b, "waits"), 2);
  EXPECT_DOUBLE_EQ(figure(*with_b, "final_not_counted"), 2);

  // A wait for kernel A, [s + 40, s + 335), then the step's final synchronize `gap` later. With
  // an operator between (the CPU's work, which could have run beside A), the first is a wait of
  // its own, counted; with a short stretch of untraced time alone (a script's end: a compiled MoE
  // trace's 15.5 ms final synchronize, 94 us before a second one), both are the step's end; with
  // a long one (untraced Python's work, over kFinalSyncUntracedNs), counted again.
  struct Case {
    bool cpu_work;
    double gap;
    bool counted;
  };
  for (const Case k : {Case{true, 405, true}, Case{false, 100, false}, Case{false, 405, true}}) {
    const Advice apart = advise_text(kernel_a_then([&](TraceBuilder& b, double s) {
      b.call("cudaStreamSynchronize", s + 40, 295);
      if (k.cpu_work) b.op("aten::cpu_work", s + 340, k.gap - 5);
      b.call("cudaDeviceSynchronize", s + 335 + k.gap, 2);
    }));
    const Symptom* sa = symptom(apart, "host_sync");
    EXPECT_EQ(sa != nullptr, k.counted) << k.cpu_work << " " << k.gap;
    EXPECT_EQ(clean(apart, "host_sync"), !k.counted) << k.cpu_work << " " << k.gap;
    if (sa) {
      EXPECT_DOUBLE_EQ(figure(*sa, "waits"), 2);
    }
  }
}

// Lesson 06's loss read, in one step as a GPU runs it. Backward: 20 launches, [10 + 100k, +10],
// their kernels back to back [100, 8100]. Then the optimizer: 40 launches of 10, 50 apart, each
// kernel 5 long, 15 after its call or behind the kernel before it. The read (.item()): a copy to
// the host (call 10, copy 2 behind the last kernel before it, 4 bytes) and a synchronize until
// the copy is done.
//  - Before the optimizer (the lesson): copy call [2010, 2020], copy [8100, 8102], sync [2025,
//    8105] (waited 6080, the GPU busy 6075 + 2 = 6077 of it). The optimizer's launches from
//    8110 reach an idle GPU: kernels [8125 + 50j, +5]; the step ends at 10100. Busy 8000 + 2 +
//    200 = 8202, idle 1898; saved: see the test.
//  - At the step's end: the optimizer's launches from 2010 queue behind backward, kernels
//    [8100 + 5j, +5] up to 8300; copy call [4010, 4020], copy [8300, 8302], sync [4025, 8305]:
//    the step's last, nothing launched after it, not counted. The step ends at 8400, 1700
//    sooner: within the bound advise gives the read before the optimizer (1798, below).
std::string loss_read(bool before_optimizer) {
  TraceBuilder b;
  b.device("NVIDIA H200");
  b.step(1, 0, before_optimizer ? 10100 : 8400);
  for (int k = 0; k < 20; ++k) b.kernel("backward_kernel", b.call("cudaLaunchKernel", 10 + 100 * k, 10), 100 + 400 * k, 400);
  const double opt_from = before_optimizer ? 8110 : 2010, read_at = before_optimizer ? 2010 : 4010;
  const double copy_at = before_optimizer ? 8100 : 8300;
  b.memcpy("Memcpy DtoH (Device -> Pageable)", b.call("cudaMemcpyAsync", read_at, 10), copy_at, 2, 4);
  b.call("cudaStreamSynchronize", read_at + 15, copy_at + 5 - (read_at + 15));
  for (int j = 0; j < 40; ++j) {
    const double call = opt_from + 50 * j;
    const double start = before_optimizer ? call + 15 : 8100 + 5 * j;
    b.kernel("optimizer_kernel", b.call("cudaLaunchKernel", call, 10), start, 5);
  }
  return b.str();
}

TEST(AdviseHostSync, TheLossReadBeforeTheOptimizerIsCountedAtTheStepsEndItIsNot) {
  const Advice before = advise_text(loss_read(true));
  const Symptom* s = symptom(before, "host_sync");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "waits"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "after_copy_to_host"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "final_not_counted"), 0);
  EXPECT_DOUBLE_EQ(figure(*s, "waited_ns"), 6'080'000);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_busy_ns"), 6'077'000);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_idle_ns"), 1'898'000);
  // Its 3 with the GPU idle too, and the 6077 it held back, at most the 1795 the GPU idles after
  // it (the 1995 to the step's end less the optimizer's 200): 1798, not the step's whole idle
  // 1898 (the 100 before the first kernel no wait caused). The read moved to the step's end
  // makes the step 1700 shorter: within the bound.
  EXPECT_DOUBLE_EQ(figure(*s, "held_back_ns"), 1'798'000);
  EXPECT_EQ(s->saved_ns, 1'798'000);

  const Advice at_end = advise_text(loss_read(false));
  EXPECT_EQ(symptom(at_end, "host_sync"), nullptr);
  EXPECT_TRUE(clean(at_end, "host_sync"));
  EXPECT_EQ(before.basis_ns - at_end.basis_ns, 1'700'000);
}

// ROCm's copy to the GPU, hipMemcpyWithStream [40, 340], returns when its copy [330, 335] is
// done, behind kernel A [30, 330]: a wait of 300, the GPU busy 290 + 5 = 295 of it. Step
// [0, 1000], GPU busy 300 + 5 + 300 = 605, idle 395: saved min(300, 395) = 300.
TEST(AdviseHostSync, ASynchronousCopyIsAWait) {
  TraceBuilder b;
  b.device("AMD Instinct MI250X", 104, 64LL << 30, 9, 0);
  b.step(1, 0, 1000);
  b.kernel("kernel_A", b.call("hipLaunchKernel", 10, 10), 30, 300);
  b.memcpy("Memcpy HtoD (Host -> Device)", b.call("hipMemcpyWithStream", 40, 300), 330, 5, -1);
  b.kernel("kernel_B", b.call("hipLaunchKernel", 400, 10), 420, 300);
  b.call("hipDeviceSynchronize", 730, 10);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "host_sync");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "sync_copies"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "synchronizes"), 0);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_busy_ns"), 295'000);
  EXPECT_EQ(s->saved_ns, 300'000);
  EXPECT_TRUE(has(s->examples.at(0).detail, "a copy the host waits for")) << s->examples[0].detail;
}

// A copy to pageable host memory returns only once copied, behind the stream's earlier work:
// cudaMemcpyAsync's too. Kernel A [20, 620]; the copy call [30, 630] (DtoH to pageable), its
// copy [620, 628]; kernel B launched at 650 runs [700, 900]. host_sync: a wait of 590 (until A
// ended), the GPU busy all of it. pageable_copy: of the call's 600 only the 10 after A ended are
// the copy's: under 2% of the step, no finding; with --min-share 0, 10 held and the 590 of
// waiting said. Each microsecond counted once. A call that returned before its copy ran is no
// wait; one whose copy ran at once, beside another stream's work, waited for nothing (a real A100
// trace's 3.23 ms copy on stream 22 read "waited 3.23 ms for 3.17 ms of GPU work (50 items)",
// stream 20's kernels): the pageable copy's finding alone.
TEST(AdviseHostSync, ACopyToPageableMemoryIsAWaitItsQueueNotThePageablesCost) {
  auto trace = [](double call_dur) {
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3");
    b.step(1, 0, 1000);
    b.kernel("kernel_A", b.call("cudaLaunchKernel", 10, 5), 20, 600);
    b.memcpy("Memcpy DtoH (Device -> Pageable)", b.call("cudaMemcpyAsync", 30, call_dur), 620, 8, 1 << 20);
    b.kernel("kernel_B", b.call("cudaLaunchKernel", 650, 5), 700, 200);
    return b.str();
  };
  const Advice a = advise_text(trace(600));
  const Symptom* s = symptom(a, "host_sync");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "sync_copies"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "waited_ns"), 590'000);
  EXPECT_DOUBLE_EQ(figure(*s, "gpu_busy_ns"), 590'000);
  EXPECT_TRUE(has(s->examples.at(0).detail, "waited 590 us of its 600 us for its stream's earlier work: 590 us of GPU "
                                            "work on that stream (1 item, the longest kernel_A)"))
      << s->examples[0].detail;
  EXPECT_EQ(symptom(a, "pageable_copy"), nullptr);
  AdviseOptions all;
  all.min_saved_share = 0;
  const Advice low = advise_text(trace(600), all);
  const Symptom* p = symptom(low, "pageable_copy");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(figure(*p, "held_ns"), 10'000);
  EXPECT_TRUE(has(p->examples.at(0).detail, "held the CPU 10.0 us for its copy (590 us more waiting for the stream's earlier work)"))
      << p->examples[0].detail;
  const Advice returned = advise_text(trace(5));  // returned at 35, its copy at 620
  EXPECT_EQ(symptom(returned, "host_sync"), nullptr);
  // Kernels on stream 20 [0, 3000]; on stream 22 a copy call [100, 3330], its copy [113, 1861].
  TraceBuilder other;
  other.device("NVIDIA A100-SXM4-40GB");
  other.step(1, 0, 4000);
  for (int k = 0; k < 10; ++k) other.kernel("sgemm", other.call("cudaLaunchKernel", 5 * k, 2), 300 * k, 300, 20);
  other.memcpy("Memcpy DtoH (Device -> Pageable)", other.call("cudaMemcpyAsync", 100, 3230), 113, 1748, 64 << 20, 22);
  const Advice beside = advise_text(other.str());
  EXPECT_EQ(symptom(beside, "host_sync"), nullptr);
  const Symptom* held = symptom(beside, "pageable_copy");
  ASSERT_NE(held, nullptr);
  EXPECT_DOUBLE_EQ(figure(*held, "held_ns"), 3'230'000);
}

// A wait for GPU work the trace does not show (SGLang's prefill on an MI300X, TraceLens's test
// data: a copy the host waited 493 ms for, behind a kernel that started 493 ms after its launch
// on an idle stream): not the wait's own cost. Here the kernel, launched at 10 onto an idle
// stream, starts at 3000 (waiting on something unrecorded); the copy call [20, 3100] waits for
// it: not counted, and the rule says why it could not judge it. With the kernel started at
// once, the same copy is a wait.
TEST(AdviseHostSync, AWaitForWorkTheTraceDoesNotShowIsNotCounted) {
  // slow: five more launches earlier, their kernels 120 after the calls returned (a slow latency),
  // where the late start may be latency too, which the text says.
  auto trace = [](double kernel_start, bool slow = false) {
    TraceBuilder b;
    b.device("AMD Instinct MI300X", 304, 192LL << 30, 9, 4);
    b.step(1, -1000, 5000);
    if (slow)
      for (int k = 0; k < 5; ++k) b.kernel("warm_up", b.call("hipLaunchKernel", -1000 + 150.0 * k, 5), -875 + 150.0 * k, 10);
    b.kernel("resolve_future_token_ids_kernel", b.call("hipLaunchKernel", 5, 5), kernel_start, 10);
    b.memcpy("Memcpy DtoH (Device -> Host)", b.call("hipMemcpyWithStream", 20, 3080), 3090, 5, -1);
    return advise_text(b.str());
  };
  const Advice unseen = trace(3000);
  EXPECT_EQ(symptom(unseen, "host_sync"), nullptr);
  EXPECT_TRUE(has(unable(unseen, "host_sync"), "1 wait (3.08 ms) on GPU work the trace does not show"))
      << unable(unseen, "host_sync");
  EXPECT_FALSE(has(unable(unseen, "host_sync"), "perhaps the latency")) << unable(unseen, "host_sync");
  const Advice slow = trace(3000, true);
  EXPECT_TRUE(has(unable(slow, "host_sync"), "; at this trace's slow launch latency, perhaps the latency)"))
      << unable(slow, "host_sync");
  const Advice seen = trace(15);
  EXPECT_NE(symptom(seen, "host_sync"), nullptr);
}

// Steps that hold nothing while the work ran outside them (a public VAE trace: one step of 14.1 us,
// 2,810 calls outside it, advised "at most the whole basis faster"): said in the header, since
// the findings judge the steps alone. A step that holds its work says nothing.
TEST(AdviseHeader, StepsThatHoldNothingAreSaid) {
  auto built = [](bool inside) {
    TraceBuilder b;
    b.step(1, 0, inside ? 100 : 10);
    for (int k = 0; k < 5; ++k) b.op("aten::mm", 20 + 10.0 * k, 5);
    return advise_text(b.str());
  };
  const Advice outside = built(false);
  EXPECT_EQ(outside.steps_hold_nothing,
            "1 step of 1 hold nothing, and most of the work ran outside every step (5 operator, range or CUDA "
            "calls outside, 0 inside; pil-trace check: steps_empty), so the findings judge the steps' 10.0 us only; "
            "record the steps around the work (prof.step() at the end of each iteration)");
  EXPECT_TRUE(has(format_advice(outside, "t.json"), "\n1 step of 1 hold nothing"));
  EXPECT_EQ(built(true).steps_hold_nothing, "");
}

// A trace with Python's stack tracer's slices (with_stack in Python: category python_function)
// says so in its header: the host's times include the tracer's cost. Read by one thread or two.
TEST(AdviseHeader, PythonsStackTracerIsSaid) {
  TraceBuilder b;
  b.step(1, 0, 400);
  b.slice("python_function", "train.py(12): step", 0, 300);
  b.slice("python_function", "torch/nn/modules/module.py(1751): _call_impl", 10, 200);
  b.op("aten::mm", 20, 100);
  for (unsigned threads : {1u, 2u}) {
    ParseOptions o;
    o.threads = threads;
    o.chunk_bytes = 64;
    const Trace t = parse_trace_text(b.str(), "t.json", o);
    EXPECT_EQ(t.python_functions, 2);
    const Advice a = advise_trace(t);
    EXPECT_EQ(a.python_functions, 2);
    EXPECT_TRUE(has(format_advice(a, "t.json"), "recorded with Python's stack tracer (with_stack: 2 python_function slices)"))
        << format_advice(a, "t.json");
  }
  TraceBuilder plain;
  plain.step(1, 0, 400);
  plain.op("aten::mm", 20, 100);
  EXPECT_FALSE(has(format_advice(advise_text(plain.str()), "t.json"), "stack tracer"));
}

// --- a trace without steps -------------------------------------------------------------------

// Rank 1 of tugot17/tokenomics-from-first-principles (no ProfilerStep ranges): its shares are of
// the window, its examples at +us from the trace's start, its collectives not "a step" and their
// example on its stream, not "outside the steps".
TEST(AdviseWithoutSteps, SharesAreOfTheWindowAndExamplesFromTheTracesStart) {
  const Advice a = advise_file("tests/trace/fixtures/tokenomics/trace1.json.gz");
  EXPECT_EQ(a.steps, 0);
  const Symptom* s = symptom(a, "exposed_comm");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(has(s->text, ", 1 collective) ran 11.3 ms")) << s->text;
  EXPECT_TRUE(has(s->text, " of the window)")) << s->text;
  // A forward-only run (its operators have no backward): its all-reduce is no gradient's.
  EXPECT_TRUE(has(s->text, "the trace's operators have no backward pass, so these are not gradients' all-reduces"))
      << s->text;
  ASSERT_FALSE(s->examples.empty());
  EXPECT_EQ(s->examples[0].where, "GPU 1 stream 17");  // its stream; no step to name
  const std::string text = format_advice(a, "t.json");
  EXPECT_TRUE(has(text, "examples at +us from the trace's start")) << text;
  EXPECT_FALSE(has(text, "of the steps")) << text;
  EXPECT_FALSE(has(text, "from the first step")) << text;
  EXPECT_EQ(finding(a, "exposed_forward")->title,
            "The recorded window waits for all-reduces that are not gradients' (no backward pass)");
}

// GPU Puzzlers' small kernels on an A100 (fixtures/gpupuzzlers): 9.08 s recorded before the GPU's
// first work, 6.39 s of it the first cudaFree (the CUDA context), then 3.21 ms of kernels. The
// set-up is left out of the basis and said so; it was "at most 2858x faster", a stall.
TEST(AdviseWithoutSteps, TheSetUpBeforeTheGpusFirstWorkIsLeftOut) {
  const Advice a = advise_file("tests/trace/fixtures/gpupuzzlers/more_small_kernels.json.gz");
  EXPECT_EQ(a.steps, 0);
  EXPECT_GT(a.set_up_ns, 9'000'000'000);
  EXPECT_LT(a.basis_ns, 4'000'000);
  EXPECT_TRUE(has(a.basis, "the trace's window from the launch of the GPU's first work (3.21 ms; the 9.08 s "
                           "recorded before it, set-up, left out)"))
      << a.basis;
  EXPECT_EQ(finding(a, "host_stall"), nullptr);
  for (const Finding& f : a.findings) EXPECT_LT(f.speedup, 10) << f.cause;
}

// GPU Puzzlers' streams (fixtures/gpupuzzlers): 100 copies to pageable host memory on their own
// stream, each starting at once beside another stream's kernels. Their calls' time is the
// pageable copies' (held_ns), and no wait for earlier work: host_sync, which had counted the same
// 3.23 ms ("waited 3.23 ms for 3.17 ms of GPU work (50 items)", the other stream's), finds none.
TEST(AdviseHostSync, APageableCopyThatRanAtOnceWaitedForNothing) {
  const Advice a = advise_file("tests/trace/fixtures/gpupuzzlers/swimming_in_streams.json.gz");
  const Symptom* p = symptom(a, "pageable_copy");
  ASSERT_NE(p, nullptr);
  EXPECT_DOUBLE_EQ(figure(*p, "copies"), 300);
  EXPECT_EQ(symptom(a, "host_sync"), nullptr);
  EXPECT_TRUE(clean(a, "host_sync"));
}

// TraceLens's vLLM on a B200 (fixtures/tracelens), tensor-parallel rank 0, no backward pass: its
// all-reduces are a finding of their own, whose fix is no gradients' buckets.
TEST(AdviseWithoutSteps, ForwardAllReducesAreNotToldToBucketGradients) {
  AdviseOptions o;
  o.trace_path = "traces/b200.json";
  const Advice a = advise_file("tests/trace/fixtures/tracelens/b200_vllm_eager.json.gz", o);
  const Finding* f = finding(a, "exposed_forward");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(finding(a, "exposed_comm"), nullptr);
  EXPECT_FALSE(has(f->fix, "bucket_cap_mb")) << f->fix;
  EXPECT_TRUE(has(f->symptoms.at(0).how, "none of it would be left in the window")) << f->symptoms[0].how;
  EXPECT_EQ(f->lesson.command, "build/bin/pil-trace ranks traces");
  // The GPU's share of waiting is of the same window as the gains: without the 2.58 ms of set-up.
  EXPECT_GT(a.set_up_ns, 2'000'000);
  const Symptom* w = symptom(a, "gpu_host_wait");
  ASSERT_NE(w, nullptr);
  EXPECT_NEAR(figure(*w, "host_wait_share"), figure(*w, "host_wait_ns") / double(a.basis_ns), 0.01);
}

// Without steps, the set-up left out before the GPU's first work says what of it was the
// DataLoader's first batch (a public fp16 RTX A5000 trace: 5.10 s of its 8.60 s "set-up" in
// _MultiProcessingDataLoaderIter.__next__), a quarter of it or more. Here a fetch [1000, 6000) of
// a set-up [0, 8000): said; [1000, 3000), a quarter: said; [1000, 1500), a sixteenth: not said.
TEST(AdviseWithoutSteps, TheSetUpLeftOutNamesTheDataLoadersFirstBatch) {
  for (double fetch_us : {5000.0, 2000.0, 500.0}) {
    TraceBuilder b;
    b.device("NVIDIA RTX A5000", 64, 24LL << 30, 8, 6);
    b.op("aten::randperm", 0, 10);
    b.range("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 1000, fetch_us);
    for (int k = 0; k < 3; ++k) b.kernel("kernel_A", b.call("cudaLaunchKernel", 8000 + 100.0 * k, 10), 8020 + 100.0 * k, 60);
    const Advice a = advise_text(b.str());
    EXPECT_EQ(a.set_up_ns, 8'000'000);
    EXPECT_EQ(a.set_up_loading_ns, int64_t(fetch_us * 1000));
    const bool said = fetch_us > 1000;
    EXPECT_EQ(has(a.basis, " ms of it in the DataLoader's fetches "
                           "(enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__): a first batch waits "
                           "for the worker processes to start; persistent_workers=True"),
              said)
        << a.basis;
  }
}

// The same in a torch 1.8-1.9 trace, which files the fetch as an operator; and two fetches, one
// from worker processes and one made on the training thread: counted together, named by the
// longest.
TEST(AdviseWithoutSteps, TheSetUpsFetchesAreFoundInOldTracesAndCountedTogether) {
  TraceBuilder b;
  b.device("NVIDIA RTX A5000", 64, 24LL << 30, 8, 6);
  b.op("aten::randperm", 0, 10);
  b.slice("cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 500, 1000);
  b.slice("cpu_op", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 2000, 3000);
  for (int k = 0; k < 3; ++k) b.kernel("kernel_A", b.call("cudaLaunchKernel", 8000 + 100.0 * k, 10), 8020 + 100.0 * k, 60);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(a.set_up_loading_ns, 4'000'000);
  EXPECT_TRUE(has(a.basis, "; 4.00 ms of it in the DataLoader's fetches (2 fetches, the longest 3.00 ms "
                           "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__): a first batch waits"))
      << a.basis;
}

// A synchronize after a copy to the host, then more work, with no steps: the window's, said so
// in the title, the symptom and the list of what was found clean.
TEST(AdviseWithoutSteps, ASyncInTheWindowIsNotSaidOfAStep) {
  TraceBuilder b;
  b.kernel("kernel_A", b.call("cudaLaunchKernel", 10, 10), 30, 300);
  b.memcpy("Memcpy DtoH (Device -> Pinned)", b.call("cudaMemcpyAsync", 40, 10), 330, 2, 4);
  b.call("cudaStreamSynchronize", 55, 280);
  b.kernel("kernel_B", b.call("cudaLaunchKernel", 400, 10), 420, 300);
  b.call("cudaDeviceSynchronize", 415, 310);
  const Advice a = advise_text(b.str());
  EXPECT_EQ(a.steps, 0);
  const Finding* f = finding(a, "host_sync");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "The CPU stops inside the recorded window to wait for the GPU");
  EXPECT_EQ(f->symptoms.at(0).text.substr(0, 121),
            "1 synchronize (1 after a copy to the host) inside the window (its final synchronizes, after its "
            "last launch, not counted)");
  const std::string text = format_advice(a, "t.json");
  EXPECT_FALSE(has(text, "inside a step")) << text;
  EXPECT_FALSE(has(text, "in one step")) << text;
  EXPECT_FALSE(has(text, "share of the step")) << text;
}

// --- copies from pageable memory -----------------------------------------------------------------

// Step [0, 10000]: a pageable copy to the GPU, cudaMemcpyAsync [100, 2100] for a copy of
// 8,000,000 bytes [150, 2050] (1900: 4.2 GB/s); one to the host, [5000, 5500] for 1,000,000
// bytes [5050, 5450]; a pinned copy of 50 MB beside them, not counted. Held 2000 + 500 = 2500,
// 9,000,000 bytes, GPU time 1900 + 400 = 2300.
TEST(AdvisePageableCopy, PageableCopiesHoldTheCpu) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10000);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 100, 2000), 150, 1900, 8'000'000);
  b.memcpy("Memcpy DtoH (Device -> Pageable)", b.call("cudaMemcpyAsync", 5000, 500), 5050, 400, 1'000'000);
  b.memcpy("Memcpy HtoD (Pinned -> Device)", b.call("cudaMemcpyAsync", 6000, 10), 6020, 2000, 50'000'000);
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "pageable_copy");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "copies"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "to_device"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "to_host"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "bytes"), 9'000'000);
  EXPECT_DOUBLE_EQ(figure(s, "held_ns"), 2'500'000);
  EXPECT_DOUBLE_EQ(figure(s, "gpu_ns"), 2'300'000);
  EXPECT_EQ(s.saved_ns, 2'500'000);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_EQ(s.examples[0].name, "cudaMemcpyAsync");
  EXPECT_EQ(s.examples[0].ts_ns, 100'000);
  EXPECT_TRUE(has(s.examples[0].detail, "8,000,000 bytes at 4.2 GB/s")) << s.examples[0].detail;
  EXPECT_FALSE(has(s.how, "little beside them")) << s.how;  // 2500 of 10000: work to overlap
}

// A copy that starts long into its call with its stream free (a V100 sample of Kineto's: a
// 2.9 ms copy 42.9 ms into its call, nothing earlier in the trace): the example says so, the
// held time (an upper bound) is unchanged. Call [100, 9100], copy [8000, 9000]: 7.9 ms late.
// A copy 50 us into its call is not.
TEST(AdvisePageableCopy, ACopyThatStartedLongIntoItsCallSaysSo) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 20000);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 100, 9000), 8000, 1000, 8'000'000);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 10000, 1100), 10050, 1000, 8'000'000);
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "pageable_copy");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "held_ns"), 10'100'000);
  ASSERT_EQ(s.examples.size(), 2u);
  EXPECT_TRUE(has(s.examples[0].detail, "; the copy started 7.90 ms after the call had begun with its stream free: a "
                                        "wait the trace does not show, maybe not the copy's"))
      << s.examples[0].detail;
  EXPECT_FALSE(has(s.examples[1].detail, "the copy started")) << s.examples[1].detail;
}

// pytorch/benchmark's copy benchmark (A100, fixtures/torchbench): ten steps of a 154 MB copy to
// the GPU and one back, nothing else. From pageable memory the calls held 671 ms of the 675 ms:
// the bound (everything) is far above what pinned memory gave (its pinned twin's step: 30.8 ms
// against 67.5 ms), and the finding says why; the pinned twin has no finding.
TEST(AdvisePageableCopy, CopiesWithNothingBesideThemSayTheBoundIsFarAbove) {
  const Advice a = advise_file("tests/trace/fixtures/torchbench/pageable_copies.json.gz");
  const Finding* f = finding(a, "pageable_copy");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "copies"), 20);
  EXPECT_DOUBLE_EQ(figure(s, "bytes"), 3'082'813'440);
  EXPECT_TRUE(has(s.how, "here the calls held 99% of the steps, with little beside them to overlap")) << s.how;
  EXPECT_TRUE(clean(advise_file("tests/trace/fixtures/torchbench/pinned_copies.json.gz"), "pageable_copy"));
}

// Four pageable copies of 200,000 bytes (800,000 in all, under 1 MiB) held the CPU 4 x 500 of
// a step of 10000, and a pinned copy of 50 MB: small copies cost little either way.
TEST(AdvisePageableCopy, SmallOrPinnedCopiesAreQuiet) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 10000);
  for (int k = 0; k < 4; ++k)
    b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 100 + 1000.0 * k, 500),
             150 + 1000.0 * k, 400, 200'000);
  b.memcpy("Memcpy HtoD (Pinned -> Device)", b.call("cudaMemcpyAsync", 6000, 10), 6020, 2000, 50'000'000);
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "pageable_copy"));
}

// The reader keeps a copy's "bytes" and the device's compute capability, with one thread or
// several (the parallel reader's merge shifts the copies' indices like the others).
TEST(AdvisePageableCopy, TheReaderKeepsCopyBytesAndComputeCapability) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 6);
  b.step(1, 0, 10000);
  for (int k = 0; k < 40; ++k)
    b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 100 + 200.0 * k, 50),
             120 + 200.0 * k, 40, 1000 + k);
  b.memory(9000, 4096, 4096);  // an allocation: its bytes stay the allocation's
  const std::string json = b.str();
  for (unsigned threads : {1u, 4u}) {
    ParseOptions o;
    o.threads = threads;
    o.chunk_bytes = 512;
    const Trace t = parse_trace_text(json, "<planted>", o);
    ASSERT_EQ(t.devices.size(), 1u);
    EXPECT_EQ(t.compute_capability(0), 86);
    int64_t k = 0;
    for (const Event& e : t.events) {
      if (e.category == Category::Memcpy) {
        EXPECT_EQ(t.copy_bytes_of(e), 1000 + k++) << threads;
      }
      if (e.category == Category::Memory) {
        ASSERT_NE(t.memory_info(e), nullptr);
        EXPECT_EQ(t.memory_info(e)->bytes, 4096);
        EXPECT_EQ(t.copy_bytes_of(e), -1);
      }
      if (e.category == Category::Memcpy) {
        EXPECT_EQ(t.memory_info(e), nullptr);
      }
    }
    EXPECT_EQ(k, 40);
  }
}

// --- fp32 GEMMs without tensor cores --------------------------------------------------------------

// Step [0, 1000] on `device`: ampere_sgemm_128x64_nn and an xmma FFMA GEMM, 150 each (fp32, no
// tensor cores: 300), a TF32 xmma GEMM of 200, a cuDNN implicit_convolve_sgemm of 100 (a
// convolution: not counted) and an elementwise kernel of 100, one after another: GPU busy 700.
// fp32 share 300 / 700; saved 300.
std::string gemms(TraceBuilder b) {
  b.step(1, 0, 1000);
  double at = 10;
  auto k = [&](const std::string& name, double dur) {
    b.kernel(name, b.call("cudaLaunchKernel", at - 5, 3), at, dur);
    at += dur;
  };
  k("ampere_sgemm_128x64_nn", 150);
  k("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel", 200);
  k("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_"
    "execute_kernel__5x_cublas",
    150);
  k("void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int)", 100);
  k("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)", 100);
  return b.str();
}

TEST(AdviseFp32Gemm, SgemmOnAGpuWithTf32) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 0);
  const Advice a = advise_text(gemms(b));
  const Finding* f = finding(a, "fp32_gemm");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "kernels"), 2);
  EXPECT_DOUBLE_EQ(figure(s, "gemm_ns"), 300'000);
  EXPECT_DOUBLE_EQ(figure(s, "busy_share"), 300.0 / 700.0);
  EXPECT_DOUBLE_EQ(figure(s, "compute_capability"), 8.0);
  EXPECT_EQ(s.saved_ns, 300'000);
  ASSERT_EQ(s.examples.size(), 2u);  // one per name
  EXPECT_EQ(s.examples[0].name, "ampere_sgemm_128x64_nn");
  EXPECT_EQ(s.examples[1].name.substr(0, 32), "sm80_xmma_gemm_f32f32_f32f32_f32");
  EXPECT_TRUE(has(s.text, "compute capability 8.0, which has TF32")) << s.text;
  EXPECT_TRUE(has(s.how, "upper bound")) << s.how;
}

// On a GeForce card TF32's dense peak is fp32's: the symptom says the gain is autocast's, under
// a cause whose fix leads with autocast, not TF32.
TEST(AdviseFp32Gemm, OnAGeForceCardTheGainIsAutocastsNotTf32s) {
  TraceBuilder b;
  b.device("NVIDIA GeForce RTX 4090", 128, 24LL << 30, 8, 9);
  const Advice geforce = advise_text(gemms(b));
  const Symptom* s = symptom(geforce, "fp32_gemm");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "geforce"), 1);
  EXPECT_TRUE(has(s->text, "; a GeForce card: TF32's dense peak is fp32's there, so the gain is bf16's or fp16's "
                           "under autocast"))
      << s->text;
  EXPECT_TRUE(has(s->how, "a bf16 or fp16 kernel still takes some of it")) << s->how;
  // The same cause (lesson 06 names it so on any card), with autocast's fix.
  const Finding* f = finding(geforce, "fp32_gemm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->fix.rfind("Run the products in bf16 or fp16 where the accuracy allows: under autocast", 0), 0u)
      << f->fix;
  EXPECT_FALSE(has(f->fix, "setFloat32MatmulPrecision")) << f->fix;
  EXPECT_EQ(f->lesson.command, "./run-lesson 02_linear --device cuda --dtype bf16");
  TraceBuilder a100;
  a100.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 0);
  const Advice datacentre = advise_text(gemms(a100));
  ASSERT_NE(symptom(datacentre, "fp32_gemm"), nullptr);
  EXPECT_FALSE(has(symptom(datacentre, "fp32_gemm")->text, "GeForce"));
  EXPECT_TRUE(has(symptom(datacentre, "fp32_gemm")->how, "TF32's dense peak is 8x fp32's"));
  ASSERT_NE(finding(datacentre, "fp32_gemm"), nullptr);
  EXPECT_TRUE(has(finding(datacentre, "fp32_gemm")->fix, "TF32 for fp32"));
  EXPECT_EQ(finding(datacentre, "fp32_gemm")->lesson.command, "./run-lesson 02_linear --device cuda --tf32 on");
}

// An outlier (over 10x its name's median, three instances or more) counts at that: a compiled MoE
// trace's one cutlass simt sgemm of 2.44 ms beside two of 9.7 us made the bound 2.51 ms, not
// 0.13. Here three of 50, 50 and 2000 in a step of 4000: counted 50 + 50 + 500 = 600.
TEST(AdviseFp32Gemm, AnOutlierCountsAtTenTimesItsNamesMedian) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-40GB", 108, 40LL << 30, 8, 0);
  b.step(1, 0, 4000);
  double at = 10;
  for (double dur : {50.0, 50.0, 2000.0}) {
    b.kernel("cutlass_80_simt_sgemm_128x32_8x5_nn_align1", b.call("cudaLaunchKernel", at - 5, 3), at, dur);
    at += dur + 10;
  }
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "fp32_gemm");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "gemm_ns"), 600'000);
  EXPECT_DOUBLE_EQ(figure(*s, "outliers"), 1);
  EXPECT_EQ(s->saved_ns, 600'000);
  EXPECT_TRUE(has(s->text, "; 1 outlier over 10x the median of its name and launch shape counted at that")) << s->text;
  // The example is the longest instance counted whole (the first of 50 us), not the outlier.
  ASSERT_EQ(s->examples.size(), 1u);
  EXPECT_EQ(s->examples[0].ts_ns, 10'000);
  EXPECT_EQ(s->examples[0].dur_ns, 50'000);
}

// The share is of the steps' GPU work: a 5 ms warm-up kernel before the step does not make four
// sgemms of 90 us, 360 us of 1 ms of work in the step, "under 10%".
TEST(AdviseFp32Gemm, TheShareIsOfTheStepsWorkNotOfWorkBeforeThem) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 0);
  int64_t id = 0;
  b.op("aten::conv2d", 0, 10, "", "", 1, &id);
  b.kernel("void cudnn::winograd_kernel(int)", b.call("cudaLaunchKernel", 2, 3, id), 10, 5000, 7, id);
  b.step(1, 6000, 1000);
  for (int j = 0; j < 4; ++j) {
    b.op("aten::mm", 6010 + 5 * j, 4, "", "", 1, &id);
    b.kernel("ampere_sgemm_128x64_nn", b.call("cudaLaunchKernel", 6011 + 5 * j, 2, id), 6050 + 100 * j, 90, 7, id);
  }
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "fp32_gemm");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "busy_share"), 1.0);
  EXPECT_EQ(s->saved_ns, 360'000);
  EXPECT_TRUE(has(s->text, "100% of the GPU's busy time in the steps")) << s->text;
}

// Another launch shape is another product, not an outlier: three of 50 us at grid 4 and one of
// 2000 us at grid 400 (an LM head beside the layers) count whole, 2150.
TEST(AdviseFp32Gemm, ALongerKernelOfAnotherGridIsNoOutlier) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-40GB", 108, 40LL << 30, 8, 0);
  b.step(1, 0, 4000);
  double at = 10;
  for (double dur : {50.0, 50.0, 50.0, 2000.0}) {
    b.kernel_with_grid("cutlass_80_simt_sgemm_128x32_8x5_nn_align1", b.call("cudaLaunchKernel", at - 5, 3), at, dur,
                       dur > 100 ? 400 : 4);
    at += dur + 10;
  }
  // Read as `pil-trace advise` reads a trace (the command line reads no launch shapes for the
  // other commands but kernels and launches).
  ParseOptions command_line;
  command_line.read_launch_shapes = false;
  const Trace t = parse_trace_text(b.str(), "t.json", advise_read_options(command_line));
  const TraceIndex index(t);
  const Advice a = advise(index);
  const Symptom* s = symptom(a, "fp32_gemm");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "gemm_ns"), 2'150'000);
  EXPECT_DOUBLE_EQ(figure(*s, "outliers"), 0);
}

TEST(AdviseFp32Gemm, AV100HasNoTf32) {
  TraceBuilder b;
  b.device("Tesla V100-SXM2-32GB", 80, 32LL << 30, 7, 0);
  const Advice a = advise_text(gemms(b));
  EXPECT_TRUE(clean(a, "fp32_gemm"));
}

TEST(AdviseFp32Gemm, WithoutComputeCapabilityItSaysSo) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, -1);
  const Advice a = advise_text(gemms(b));
  EXPECT_EQ(unable(a, "fp32_gemm"),
            "no compute capability in the trace's deviceProperties (computeMajor, computeMinor)");
}

TEST(AdviseFp32Gemm, AnAmdGpuIsNotJudged) {
  TraceBuilder b;
  b.device("AMD Instinct MI250X", 104, 64LL << 30, 9, 0);
  const Advice a = advise_text(gemms(b));
  EXPECT_TRUE(has(unable(a, "fp32_gemm"), "an AMD GPU")) << unable(a, "fp32_gemm");
}

// The names as real runs wrote them (public Kineto and Nsight traces, and this project's H200
// run of 2026-12-04, lesson 02's --tf32 off and on): PyTorch's fp32 GEMMs on Hopper run
// Ampere-era FFMA kernels (an sm_90 run's cutlass simt sgemm and sm80 xmma ffma); a TF32 or bf16
// GEMM carries its type (the H200's TF32 kernel an sm90 one, with no tensor-core word but
// tf32). cuBLAS's gemmk1 and gemmSN kernels take a
// cublasGemm...Params argument whatever their element type (double and bf16 too): its "sGemm"
// is no sgemm.
TEST(AdviseFp32Gemm, TheKernelNamesRealRunsWrote) {
  using advise_rules::is_fp32_simt_gemm_kernel;
  for (const char* fp32 :
       {"void cutlass::Kernel2<cutlass_80_simt_sgemm_32x128_8x5_tn_align1>(T1::Params)",
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_"
        "alignc4_execute_kernel__5x_cublas",
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_"
        "execute_kernel__5x_cublas",
        "ampere_sgemm_128x64_nn", "volta_sgemm_64x32_sliced1x4_nn"})
    EXPECT_TRUE(is_fp32_simt_gemm_kernel(fp32)) << fp32;
  for (const char* other :
       {"nvjet_sss_tf32_128x256_TNT", "nvjet_tst_192x208_64x4_2x1_v_bz_coopB_bias_TNT",
        "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel",
        "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x64x32_warpgroupsize1x1x1_execute_segment_k_off_"
        "kernel__5x_cublas",
        "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn",
        "void gemmk1_kernel<int, float, 256, 5, false, false, false, false, cublasGemvTensorStridedBatched"
        "<float const>, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
        "float, 0>(cublasGemmk1Params<float, cublasGemvTensorStridedBatched<float const>, "
        "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>)",
        "void gemmk1_kernel<int, __nv_bfloat16, 256, 5, false, false, false, false, "
        "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 "
        "const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float, 0>(cublasGemmk1Params<float, "
        "cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 "
        "const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>)",
        "void gemmSN_NN_kernel<double, 128, 2, 4, 8, 4, 4, cublasGemvTensorStridedBatched<double const>, "
        "cublasGemvTensorStridedBatched<double>>(cublasGemmSmallNParams<double const, "
        "cublasGemvTensorStridedBatched<double const>, double>)",
        "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false, true, true>(int)"})
    EXPECT_FALSE(is_fp32_simt_gemm_kernel(other)) << other;
}

// --- fusion ----------------------------------------------------------------------------------------

// Step [0, 1000], one stream, kernels back to back from 10: a GEMM (100), then add (40), gelu
// (50) and mul (30), each launched by its operator, then a GEMM (100): one chain of 3, 120,
// saved 120 - 30 = 90. Then one elementwise kernel (a chain of 1), a GEMM, an elementwise
// kernel, a reduction, an elementwise kernel, a GEMM: no chain between products.
// Operators each launching one kernel on stream 7, back to back from `at`: op(name, kernel, dur)
// adds the operator [at - 8, at - 2), its launch [at - 6, at - 3) and the kernel [at, at + dur).
struct OpKernels {
  TraceBuilder& b;
  double at = 10;
  void operator()(const std::string& op, const std::string& kernel, double dur) {
    int64_t id = 0;
    b.op(op, at - 8, 6, "", "", 1, &id);
    b.kernel(kernel, b.call("cudaLaunchKernel", at - 6, 3, id), at, dur, 7, id);
    at += dur;
  }
};
const std::string kH100Gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
const std::string kElementwise = "void at::native::vectorized_elementwise_kernel<4, at::native::";

TEST(AdviseFusion, ElementwiseKernelsBetweenGemms) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  OpKernels k{b};
  const std::string& gemm = kH100Gemm;
  const std::string& ew = kElementwise;
  k("aten::mm", gemm, 100);
  k("aten::add", ew + "AddFunctor<float>, at::detail::Array<char*, 3> >(int)", 40);
  k("aten::gelu", ew + "GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda(float)#1}>(int)", 50);
  k("aten::mul", ew + "MulFunctor<float>, at::detail::Array<char*, 3> >(int)", 30);
  k("aten::mm", gemm, 100);
  k("aten::relu", ew + "launch_clamp_scalar>(int)", 20);
  k("aten::mm", gemm, 100);
  k("aten::add", ew + "AddFunctor<float>>(int)", 20);
  k("aten::sum", "void at::native::reduce_kernel<512, 1>(int)", 20);
  k("aten::add", ew + "AddFunctor<float>>(int)", 20);
  k("aten::mm", gemm, 100);
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "fusion");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "chains"), 1);
  EXPECT_DOUBLE_EQ(figure(s, "items"), 3);
  EXPECT_DOUBLE_EQ(figure(s, "chain_ns"), 120'000);
  EXPECT_EQ(s.saved_ns, 90'000);
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].ts_ns, 110'000);
  EXPECT_TRUE(has(s.examples[0].detail, "aten::add -> aten::gelu -> aten::mul")) << s.examples[0].detail;
  EXPECT_EQ(f->lesson.link(), "03_mlp/README.md#what-did-compiling-change");
}

// Autocast's casts of the next linear's weight and bias (aten::linear -> aten::to -> aten::copy_)
// are that product's work, not passes to fuse with the gelu before it: a public fp16 RTX A5000
// trace read "aten::gelu -> aten::copy_ -> aten::copy_" as a chain. Step [0, 1000): linear 1's
// GEMM [10, 110), a gelu [110, 160), linear 2 casting its weight [160, 175) and bias [175, 180)
// then its GEMM [180, 280). No chain; the same casts run as top-level operators are one.
TEST(AdviseFusion, AProductsOwnCastsAreNotPassesBetweenProducts) {
  for (bool cast_inside : {true, false}) {
    SCOPED_TRACE(cast_inside ? "inside aten::linear" : "top-level");
    TraceBuilder b;
    b.device("NVIDIA RTX A5000", 64, 24LL << 30, 8, 6);
    b.step(1, 0, 1000);
    const std::string gemm = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn";
    const std::string ew = "void at::native::vectorized_elementwise_kernel<4, at::native::";
    const std::string copy = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>(int)";
    int64_t id = 0;
    b.op("aten::linear", 2, 9, "", "", 1, &id);
    b.kernel(gemm, b.call("cudaLaunchKernel", 5, 3, id), 10, 100, 7, id);
    b.op("aten::gelu", 102, 6, "", "", 1, &id);
    b.kernel(ew + "GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda(c10::Half)#1}>(int)",
             b.call("cudaLaunchKernel", 104, 3, id), 110, 50, 7, id);
    if (cast_inside) b.op("aten::linear", 150, 30);
    for (double at : {152.0, 162.0}) {
      b.op("aten::to", at, 8);
      b.op("aten::copy_", at + 1, 6, "", "", 1, &id);
      b.kernel(copy, b.call("cudaLaunchKernel", at + 2, 3, id), at == 152.0 ? 160 : 175, at == 152.0 ? 15 : 5, 7, id);
    }
    b.op("aten::addmm", 172, 6, "", "", 1, &id);
    b.kernel(gemm, b.call("cudaLaunchKernel", 173, 3, id), 180, 100, 7, id);
    const Advice a = advise_text(b.str());
    if (cast_inside) {
      EXPECT_EQ(finding(a, "fusion"), nullptr);
    } else {
      const Symptom* s = symptom(a, "fusion");
      ASSERT_NE(s, nullptr);
      EXPECT_DOUBLE_EQ(figure(*s, "items"), 3);
    }
  }
}

// The chain of ElementwiseKernelsBetweenGemms in a trace written as torch 2.0-2.2 wrote it (each
// launch's and kernel's External id its own correlation id, here also the id of an unrelated
// operator: by that id the add's kernel (correlation 2) would be aten::mm's (id 2), the gelu's
// aten::add's, the mul's aten::gelu's): the kernels are still named by
// the operators around their launch calls. Kernels launched straight from compiled code (inside
// CompiledFunction, no library operator around them) keep their kernel names (the compiled case
// checks that naming rule only: by External id or by launch, no operator of a library's).
TEST(AdviseFusion, ChainsNameTheOperatorAroundTheLaunchWhereTheTraceLinksNone) {
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3").correlation_as_external_id();
    b.step(1, 0, 1000);
    if (compiled) b.op("CompiledFunction", 1, 990);
    double at = 10;
    auto k = [&](const std::string& op, const std::string& kernel, double dur) {
      if (!compiled) b.op(op, at - 8, 6);
      b.kernel(kernel, b.call("cudaLaunchKernel", at - 6, 3), at, dur);
      at += dur;
    };
    const std::string gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
    const std::string ew = "void at::native::vectorized_elementwise_kernel<4, at::native::";
    k("aten::mm", gemm, 100);
    k("aten::add", ew + "AddFunctor<float>, at::detail::Array<char*, 3> >(int)", 40);
    k("aten::gelu", ew + "GeluCUDAKernelImpl(at::TensorIteratorBase&)::{lambda(float)#1}>(int)", 50);
    k("aten::mul", ew + "MulFunctor<float>, at::detail::Array<char*, 3> >(int)", 30);
    k("aten::mm", gemm, 100);
    const Advice a = advise_text(b.str());
    const Finding* f = finding(a, "fusion");
    ASSERT_NE(f, nullptr);
    const Symptom& s = f->symptoms.at(0);
    ASSERT_EQ(s.examples.size(), 1u);
    const std::string& d = s.examples[0].detail;
    if (compiled) {
      EXPECT_FALSE(has(d, "CompiledFunction")) << d;
      EXPECT_TRUE(has(d, "AddFunctor")) << d;
    } else {
      EXPECT_TRUE(has(d, "aten::add -> aten::gelu -> aten::mul, between aten::mm and aten::mm")) << d;
    }
  }
}

// The same GEMMs with the elementwise work between them fused into one kernel each: quiet.
TEST(AdviseFusion, FusedKernelsAreQuiet) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  double at = 10;
  for (const char* name : {"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT", "triton_poi_fused_add_gelu_mul_0",
                           "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT", "triton_poi_fused_add_gelu_mul_0",
                           "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNT"}) {
    b.kernel(name, b.call("cudaLaunchKernel", at - 6, 3), at, 100);
    at += 100;
  }
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "fusion"));
}

// A CPU trace, step [0, 100]: aten::matmul [0, 20] (holding aten::mm), aten::t [21, 22] (a
// view), aten::gelu [22, 32], aten::mul [33, 41], aten::matmul [42, 60]: one chain of 2
// operators, 10 + 8 = 18 of CPU time, saved 18 - 8 = 10.
TEST(AdviseFusion, ElementwiseOperatorsOnTheCpu) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::matmul", 0, 20).op("aten::mm", 2, 16);
  b.op("aten::t", 21, 1);
  b.op("aten::gelu", 22, 10);
  b.op("aten::mul", 33, 8);
  b.op("aten::matmul", 42, 18).op("aten::mm", 44, 14);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "fusion");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "chains"), 1);
  EXPECT_DOUBLE_EQ(figure(*s, "chain_ns"), 18'000);
  EXPECT_EQ(s->saved_ns, 10'000);
  EXPECT_TRUE(has(s->examples.at(0).detail, "aten::gelu -> aten::mul, between aten::matmul and aten::matmul"))
      << s->examples[0].detail;
}

// A convolution is a product in the operator form as in the kernels': conv2d [0, 40], add
// [41, 61], relu [62, 82], conv2d [83, 123] in a step of 200: one chain, 40 of CPU time, 20 saved.
TEST(AdviseFusion, ConvolutionsBoundAChainOfOperators) {
  TraceBuilder b;
  b.step(1, 0, 200);
  b.op("aten::conv2d", 0, 40);
  b.op("aten::add", 41, 20);
  b.op("aten::relu", 62, 20);
  b.op("aten::conv2d", 83, 40);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "fusion");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "chain_ns"), 40'000);
  EXPECT_EQ(s->saved_ns, 20'000);
  EXPECT_TRUE(has(s->examples.at(0).detail, "between aten::conv2d and aten::conv2d")) << s->examples[0].detail;
}

// A pass after a product that is one of fusion's chains is fusion's alone, not also an epilogue:
// (a) the bias add closes a range (fc1: mm, add) and the gelu after it is outside, so the add is
// the last operator under its parent; (b) the add is followed by aten::to, no elementwise
// operator by name, whose copy kernel is elementwise. Each had been claimed by both rules (400 us
// of 230 us of passes in (b)).
TEST(AdviseFusion, AChainsPassIsNotAlsoAnEpilogue) {
  for (bool copy_after : {false, true}) {
    SCOPED_TRACE(copy_after ? "a copy kernel after the add" : "the add closes a range");
    TraceBuilder b;
    b.device("NVIDIA H100 80GB HBM3");
    b.step(1, 0, 1000);
    OpKernels k{b};
    const std::string& gemm = kH100Gemm;
    const std::string& ew = kElementwise;
    if (!copy_after) b.range("fc1", 1, 200);
    k("aten::mm", gemm, 100);
    k("aten::add", ew + "AddFunctor<float>>(int)", 100);
    if (copy_after) {
      k("aten::to", "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>(int)", 30);
    } else {
      k.at = 220;
      k("aten::gelu", ew + "GeluCUDAKernelImpl>(int)", 100);
    }
    k("aten::mm", gemm, 100);
    const Advice a = advise_text(b.str());
    EXPECT_NE(finding(a, "fusion"), nullptr);
    EXPECT_EQ(finding(a, "gemm_epilogue"), nullptr);
  }
}

// A layer norm between the elementwise operators: no chain of two back to back.
TEST(AdviseFusion, AnotherOperatorBreaksTheChain) {
  TraceBuilder b;
  b.step(1, 0, 100);
  b.op("aten::matmul", 0, 20);
  b.op("aten::gelu", 22, 10);
  b.op("aten::layer_norm", 33, 8);
  b.op("aten::mul", 42, 8);
  b.op("aten::matmul", 51, 18);
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "fusion"));
}

// --- naive attention --------------------------------------------------------------------------------

// A CPU trace, step [0, 200], attention by hand: aten::matmul [10, 30] (holding aten::bmm),
// aten::div [31, 41] (the scale), aten::eq [42, 44] (the mask's comparison), aten::masked_fill
// [45, 60], aten::softmax [61, 75] (holding aten::_softmax), aten::dropout [76, 78],
// aten::matmul [79, 99]. The pattern's time: 99 - 10 = 89 of 200.
std::string attention_by_hand() {
  TraceBuilder b;
  b.step(1, 0, 200);
  b.range("attn", 5, 100);
  b.op("aten::matmul", 10, 20).op("aten::bmm", 12, 16);
  b.op("aten::div", 31, 10);
  b.op("aten::eq", 42, 2);
  b.op("aten::masked_fill", 45, 15);
  b.op("aten::softmax", 61, 14).op("aten::_softmax", 62, 12);
  b.op("aten::dropout", 76, 2);
  b.op("aten::matmul", 79, 20).op("aten::bmm", 81, 16);
  return b.str();
}

TEST(AdviseNaiveAttention, SoftmaxBetweenTwoProductsOnTheCpu) {
  const Advice a = advise_text(attention_by_hand());
  const Finding* f = finding(a, "naive_attention");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "patterns"), 1);
  EXPECT_EQ(s.saved_ns, 89'000);
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].name, "aten::matmul");
  EXPECT_EQ(s.examples[0].ts_ns, 10'000);
  EXPECT_TRUE(has(s.examples[0].detail,
                  "aten::matmul -> aten::div -> aten::eq -> aten::masked_fill -> aten::softmax -> "
                  "aten::dropout -> aten::matmul"))
      << s.examples[0].detail;
  EXPECT_EQ(f->lesson.link(), "04_transformer/README.md#then-look");
}

// With recorded shapes (here set on the softmax in memory: the reader does not keep Input Dims
// yet), the score matrix's shape is part of the evidence.
TEST(AdviseNaiveAttention, TheScoreShapeWhereRecorded) {
  Trace t = parse_trace_text(attention_by_hand());
  t.input_shapes.push_back(t.intern("[[8, 16, 128, 128], [], []]"));
  for (Event& e : t.events)
    if (e.name == "aten::softmax") e.input_shapes = 0;
  const Advice a = advise_trace(t);
  const Symptom* s = symptom(a, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(has(s->text, "the score matrix [8, 16, 128, 128] written and read back")) << s->text;
  EXPECT_TRUE(has(s->examples.at(0).detail, "scores [8, 16, 128, 128]")) << s->examples[0].detail;
}

// at::scaled_dot_product_attention's math backend runs the same steps inside the operator: not
// the program's own attention. And a classifier's softmax with no product after it.
TEST(AdviseNaiveAttention, SdpaAndAClassifierAreQuiet) {
  TraceBuilder b;
  b.step(1, 0, 200);
  b.op("aten::scaled_dot_product_attention", 10, 90)
      .op("aten::_scaled_dot_product_attention_math", 11, 88)
      .op("aten::matmul", 12, 20)
      .op("aten::mul", 33, 10)
      .op("aten::_safe_softmax", 44, 14)
      .op("aten::matmul", 60, 20);
  b.op("aten::linear", 110, 20);
  b.op("aten::softmax", 131, 10);
  b.op("aten::argmax", 142, 5);
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "naive_attention"));
}

// A classifier's softmax at a step's end, and the next step's first layer: two products with a
// softmax between them, but in two steps (a Python MLP's trace was told to use
// scaled_dot_product_attention, "at most 2.20x faster", the time between the steps counted).
TEST(AdviseNaiveAttention, AClassifierBeforeTheNextStepIsQuiet) {
  TraceBuilder b;
  for (int k = 0; k < 3; ++k) {
    const int64_t at = k * 300;
    b.step(k + 1, at, 250);
    b.op("aten::linear", at + 10, 60);
    b.op("aten::relu", at + 75, 10);
    b.op("aten::linear", at + 90, 60);
    b.op("aten::softmax", at + 155, 40);
    b.op("aten::argmax", at + 200, 20);
  }
  const Advice a = advise_text(b.str());
  EXPECT_TRUE(clean(a, "naive_attention"));
}

// Where shapes were recorded, the second product reads the scores (·V): a softmax whose output
// no later product takes is not attention, the same products reading it are.
TEST(AdviseNaiveAttention, TheSecondProductReadsTheScores) {
  auto with_shapes = [](const char* second_inputs) {
    Trace t = parse_trace_text(attention_by_hand());
    t.input_shapes.push_back(t.intern("[[8, 16, 128, 128], [], []]"));
    t.input_shapes.push_back(t.intern(second_inputs));
    int matmuls = 0;
    for (Event& e : t.events) {
      if (e.name == "aten::softmax") e.input_shapes = 0;
      if (e.name == "aten::matmul" && ++matmuls == 2) e.input_shapes = 1;
    }
    return advise_trace(t);
  };
  const Advice reads = with_shapes("[[8, 16, 128, 128], [8, 16, 128, 64]]");
  EXPECT_NE(symptom(reads, "naive_attention"), nullptr);
  EXPECT_TRUE(clean(with_shapes("[[8, 128, 1024], [1024, 1024]]"), "naive_attention"));
  // A view of the scores: nn.MultiheadAttention's fast path softmaxes [16, 8, 128, 128] and its
  // second bmm reads [128, 128, 128] (a public H100 trace's, missed). As many elements and the
  // same last two dims; not a tensor of other elements with those dims.
  const Advice viewed = with_shapes("[[128, 128, 128], [128, 128, 64]]");
  EXPECT_NE(symptom(viewed, "naive_attention"), nullptr);
  EXPECT_TRUE(clean(with_shapes("[[64, 128, 128], [64, 128, 64]]"), "naive_attention"));
}

// nn.MultiheadAttention's fast path: one operator, aten::_native_multi_head_attention, whose
// children compute the scores (need_weights=True, or any call on a CPU): the rule looks inside
// it, also under TransformerEncoderLayer's aten::_transformer_encoder_layer_fwd. The same
// operator calling the fused kernel (a GPU, need_weights=False) is quiet.
TEST(AdviseNaiveAttention, InsideMultiheadAttentionsFastPath) {
  TraceBuilder b;
  b.step(1, 0, 400);
  b.op("aten::_native_multi_head_attention", 10, 90)
      .op("aten::mm", 12, 10)
      .op("aten::_transform_bias_rescale_qkv", 23, 5)
      .op("aten::bmm", 30, 20)
      .op("aten::_softmax", 52, 10)
      .op("aten::bmm", 64, 20)
      .op("aten::addmm", 86, 10);
  b.op("aten::_transformer_encoder_layer_fwd", 110, 100)
      .op("aten::_native_multi_head_attention", 111, 80)
      .op("aten::bmm", 120, 20)
      .op("aten::_softmax", 142, 10)
      .op("aten::bmm", 154, 20);
  b.op("aten::_native_multi_head_attention", 220, 90)
      .op("aten::mm", 222, 10)
      .op("aten::scaled_dot_product_attention", 235, 50)
      .op("aten::_scaled_dot_product_attention_math", 236, 48)
      .op("aten::bmm", 237, 15)
      .op("aten::_softmax", 253, 10)
      .op("aten::bmm", 264, 15);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "patterns"), 2);
  EXPECT_EQ(s->saved_ns, (84 - 30 + 174 - 120) * 1000);
  EXPECT_TRUE(has(s->text, "all inside aten::_native_multi_head_attention (nn.MultiheadAttention's fast path)"))
      << s->text;
  EXPECT_TRUE(has(s->text, "need_weights=False")) << s->text;
  ASSERT_EQ(s->examples.size(), 2u);
  EXPECT_TRUE(has(s->examples[0].detail,
                  "aten::bmm -> aten::_softmax -> aten::bmm; inside aten::_native_multi_head_attention"))
      << s->examples[0].detail;
}

// The same written by Python's torch.profiler (fixtures/make_python_mha_trace.py): two steps of
// nn.MultiheadAttention on its fast path on a CPU, scores [4, 4, 256, 256], then a linear; read
// as `pil-trace advise` reads it (the softmax's recorded inputs kept).
TEST(AdviseNaiveAttention, PythonsMultiheadAttentionOnTheCpu) {
  const Advice a = advise_trace(parse_trace_file(
      std::string(PIL_SOURCE_DIR) + "/tests/trace/fixtures/python_mha.pt.trace.json.gz", advise_read_options()));
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings.front().cause, "naive_attention");
  const Symptom* s = symptom(a, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "patterns"), 2);
  EXPECT_TRUE(has(s->text, "the score matrix [4, 4, 256, 256] written and read back")) << s->text;
  EXPECT_TRUE(has(s->text, "all inside aten::_native_multi_head_attention")) << s->text;
}

// A GPU trace without operators: a GEMM [0, 100], the scale [100, 110] and the mask [110, 125]
// (elementwise), softmax_warp_forward [125, 155], a GEMM [155, 255]: 255 of GPU time in a step
// of 1000. A flash kernel, and a log-softmax between GEMMs (a loss), are not naive attention.
TEST(AdviseNaiveAttention, TheSameInKernelsWithoutOperators) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  const std::string gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1";
  const std::string ew = "void at::native::vectorized_elementwise_kernel<4, at::native::";
  struct K {
    std::string name;
    double ts, dur;
  };
  const K kernels[] = {
      {gemm, 0, 100},
      {ew + "MulScalarFunctor<float>>(int)", 100, 10},
      {ew + "masked_fill_kernel>(int)", 110, 15},
      {"void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*)", 125, 30},
      {gemm, 155, 100},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)", 300, 100},
      {gemm, 420, 50},
      {"void cunn_SoftMaxForward<4, float, float, float, LogSoftMaxForwardEpilogue>(float*)", 470, 10},
      {gemm, 480, 50},
  };
  for (const K& k : kernels) b.kernel(k.name, 0, k.ts, k.dur);
  const Advice a = advise_text(b.str());
  const Symptom* s = symptom(a, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "patterns"), 1);
  EXPECT_EQ(s->saved_ns, 255'000);
  EXPECT_TRUE(has(s->text, "(kernels)")) << s->text;
}

// The same kernels launched by operators (matmul, softmax, matmul) whose correlation ids are all
// 0, as ROCm's traces write them: the operators' pattern cannot be costed by the work it launched
// (0 of it linked), so the kernels' form finds it, as without operators.
TEST(AdviseNaiveAttention, WithoutLaunchLinksTheKernelsFormFindsIt) {
  TraceBuilder b;
  b.device("AMD Instinct MI250X", 104, 64LL << 30, 9, 0);
  b.step(1, 0, 1000);
  const std::string gemm = "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1";
  auto k = [&](const char* op, const std::string& kernel, double at, double dur) {
    int64_t id = 0;
    b.op(op, at, 8, "", "", 1, &id);
    b.kernel(kernel, b.call("hipLaunchKernel", at + 1, 5, id), at + 20, dur, 7, id);
  };
  k("aten::matmul", gemm, 10, 100);
  k("aten::softmax", "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*)",
    130, 30);
  k("aten::matmul", gemm, 170, 100);
  const std::string zero = std::regex_replace(b.str(), std::regex("\"correlation\": [0-9]+"), "\"correlation\": 0");
  const Advice a = advise_text(zero);
  ASSERT_TRUE(a.links_missing());
  const Symptom* s = symptom(a, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(has(s->text, "(kernels)")) << s->text;
  EXPECT_GT(s->saved_ns, 0);
}

// --- the lessons' own traces: the slow variant gets the advice, the fixed one does not ----------

TEST(AdviseLessons, Lesson03EagerChainsGeluAndMulCompiledDoesNot) {
  const Advice eager = advise_file("tests/trace/fixtures/lessons/03_mlp_eager_n8.pt.trace.json");
  const Symptom* s = symptom(eager, "fusion");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "chains"), double(eager.steps));  // one per step
  EXPECT_TRUE(has(s->examples.at(0).detail, "aten::gelu -> aten::mul, between aten::matmul and aten::matmul"))
      << s->examples[0].detail;
  const Advice compiled = advise_file("tests/trace/fixtures/lessons/03_mlp_compiled_n8.pt.trace.json");
  EXPECT_TRUE(clean(compiled, "fusion"));
}

TEST(AdviseLessons, Lesson04NaiveMaterialisesTheScoresSdpaDoesNot) {
  const Advice naive = advise_file("tests/trace/fixtures/lessons/04_transformer_naive_cpu.pt.trace.json");
  const Symptom* s = symptom(naive, "naive_attention");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(figure(*s, "patterns"), double(naive.steps));  // one block per step
  EXPECT_TRUE(has(s->examples.at(0).detail,
                  "aten::matmul -> aten::mul -> aten::masked_fill -> aten::softmax -> aten::matmul"))
      << s->examples[0].detail;
  const Advice sdpa = advise_file("tests/trace/fixtures/lessons/04_transformer_sdpa_cpu.pt.trace.json");
  EXPECT_TRUE(clean(sdpa, "naive_attention"));
}

// --- real GPU traces from other projects: no false finding, the top one right -----------------

// ResNet-50 on a V100 (Python, 2021): the GPU waits 48.5 ms for the single-process data loader
// on the training thread; its launches are queued behind the GPU's work otherwise (not
// launch-bound); its 19 MB pageable input copy and its synchronizes are under 2% of the step;
// a V100 has no TF32.
TEST(AdviseRealTraces, ResNetWaitsForItsDataLoader) {
  const Advice a = advise_file("docs/traces/kineto-samples/resnet50_v100_step.pt.trace.json.gz");
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].cause, "host_stall");
  EXPECT_EQ(a.findings[0].symptoms.at(0).examples.at(0).name,
            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__");
  EXPECT_DOUBLE_EQ(figure(a.findings[0].symptoms.at(0), "data_loading_ns"), 48'185'000);
  EXPECT_EQ(finding(a, "launch_bound"), nullptr);
  for (const char* rule : {"host_sync", "pageable_copy", "fp32_gemm", "fusion", "naive_attention"})
    EXPECT_TRUE(clean(a, rule)) << rule;
}

// A toy model on an MI250 (ROCm 6.2, HTA's test data): a 6.5 ms hipLaunchKernel in backward
// (the kernel's first launch) leaves the GPU idle, a one-time cost; the rest of the step is a
// launch-bound loop of microsecond kernels.
TEST(AdviseRealTraces, Mi250StallsInAFirstLaunchThenIsLaunchBound) {
  const Advice a = advise_file("tests/trace/fixtures/hta/mi250_rocm6_2_train.json.gz");
  ASSERT_GE(a.findings.size(), 2u);
  EXPECT_EQ(a.findings[0].cause, "one_time_stall");
  EXPECT_EQ(a.findings[0].symptoms.at(0).rule, "host_stall");
  EXPECT_EQ(a.findings[0].symptoms.at(0).examples.at(0).name, "hipLaunchKernel");
  // The launch is its kernel's first (6.54 ms of the stall's 6.63): a one-time cost, said so.
  EXPECT_DOUBLE_EQ(figure(a.findings[0].symptoms.at(0), "first_launch_ns"), 6'543'109);
  EXPECT_EQ(a.findings[1].cause, "launch_bound");
  EXPECT_TRUE(has(unable(a, "fp32_gemm"), "an AMD GPU"));
}

// A mixture-of-experts model's forward on an A100 (SwitchTransformers, MIT; no steps, recorded
// without a warm-up): 17 kernels' first launches took 490 ms between them (the longest, an
// embedding's index_select, 358 ms), 489 ms of the GPU's 518 ms idle in stretches over 1 ms. The
// finding is the host stall still (that is what the window shows), said to be a first call's
// one-time cost rather than work to move off the launching thread: a finding of its own, whose
// lesson is lesson 01's first step (it was told to move the host's work to a loader thread).
TEST(AdviseRealTraces, AForwardRecordedWithoutAWarmUpStallsInItsKernelsFirstLaunches) {
  const Advice a = advise_file("tests/trace/fixtures/switchtransformers/moe_forward_a100.json.gz");
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].cause, "one_time_stall");
  EXPECT_EQ(a.findings[0].title, "The GPU idles while the host pays one-time costs: first launches, first calls, compiling");
  EXPECT_EQ(a.findings[0].lesson.link(), "01_matmul_add/README.md#2-why-is-the-first-step-slow");
  const Symptom& s = a.findings[0].symptoms.at(0);
  EXPECT_DOUBLE_EQ(figure(s, "stall_ns"), 518'353'000);
  EXPECT_DOUBLE_EQ(figure(s, "first_launch_ns"), 489'273'000);
  EXPECT_TRUE(has(s.how, "most of it a first call's one-time cost")) << s.how;
  EXPECT_EQ(s.examples.at(0).name, "cudaLaunchKernel");
  EXPECT_TRUE(has(s.examples.at(0).detail, "(its kernel's first launch in the trace), inside aten::embedding"))
      << s.examples.at(0).detail;
}

}  // namespace
}  // namespace pil::trace
