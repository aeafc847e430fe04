// The reports on the synthetic GPU trace (tests/trace/synthetic_trace.h), answers by hand.
#include "trace/reports.h"

#include <gtest/gtest.h>

#include <tuple>

#include "trace/parse.h"
#include "trace/svg.h"
#include "trace/synthetic_trace.h"
#include "trace/trace_builder.h"

namespace pil::trace {
namespace {

constexpr int64_t us = 1000;

/// What `summary` says of a planted trace.
std::string explain_built(const test::TraceBuilder& b) {
  const Trace t = parse_trace_text(b.str());
  return explain(TraceIndex(t));
}

struct Fixture : ::testing::Test {
  Trace t = parse_trace_text(test::synthetic_gpu_trace(0, /*reversed=*/true));
  TraceIndex index{t};
  const Event& named(std::string_view n) const {
    for (const auto& e : t.events)
      if (e.name == n) return e;
    throw std::runtime_error("no event " + std::string(n));
  }
};

using Reports = Fixture;

// Work on two GPUs: summary's busy share is any stream of either, said so (a 2080 Ti trace
// with a copy on GPU 2 and kernels on GPU 0 read as one GPU 91.5% busy); each stream's own share
// names its device.
TEST(ReportsSummary, BusyOverSeveralGpusIsSaidToBeThemAll) {
  test::TraceBuilder b;
  b.step(1, 0, 1000);
  b.kernel("k0", b.call("cudaLaunchKernel", 10, 5), 100, 300, 7, 0, 0);
  b.kernel("k2", b.call("cudaLaunchKernel", 20, 5), 500, 300, 7, 0, 2);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("GPU busy 60.0% of the window (any stream of 2 GPUs, as one;"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 7 (device 0) 30.0%, stream 7 (device 2) 30.0%"), std::string::npos) << text;
  test::TraceBuilder one;
  one.step(1, 0, 1000);
  one.kernel("k0", one.call("cudaLaunchKernel", 10, 5), 100, 300);
  EXPECT_NE(explain_built(one).find("(any stream; the window"), std::string::npos) << explain_built(one);
}

// A last step range the profiler's stop cut short (Python's `with profile(...)` block ending just
// after the loop's last prof.step() opened it; a public ResNet trace's 29.8 us ProfilerStep#4
// read its median step 1.90 ms for 3.77): left out of the steps and said. Two steps of 1000 us,
// each with an operator and a kernel, then step 3 [2000, 2030] holding only the profiler's
// synchronize. Kept: a short last step with an operator in it, and one a tenth of the others or
// longer; with no other step, there is nothing to be short against.
TEST(ReportsSummary, ALastStepTheProfilersStopCutShortIsLeftOut) {
  auto built = [](double last, bool op_in_last, int steps) {
    test::TraceBuilder b;
    for (int k = 0; k + 1 < steps; ++k) {
      b.step(k + 1, 1000.0 * k, 1000);
      b.op("aten::mm", 1000.0 * k + 10, 100);
      b.kernel("gemm", b.call("cudaLaunchKernel", 1000.0 * k + 20, 5), 1000.0 * k + 30, 500);
    }
    const double at = 1000.0 * (steps - 1);
    b.step(steps, at, last);
    b.call("cudaDeviceSynchronize", at + 5, 10);
    if (op_in_last) b.op("aten::add", at + 2, 1);
    return b.str();
  };
  const Trace t = parse_trace_text(built(30, false, 3));
  const TraceIndex index(t);
  ASSERT_EQ(index.steps.size(), 2u);
  ASSERT_GE(index.cut_short_step, 0);
  EXPECT_EQ(t.events[size_t(index.cut_short_step)].name, "ProfilerStep#3");
  EXPECT_EQ(index.window_end, 2000 * us) << "the window is the steps'";
  const std::string said = explain(index);
  EXPECT_NE(said.find("2 profiled steps, median 1.00 ms on the CPU; besides ProfilerStep#3 (30.0 us, nothing in it), "
                      "left out: the profiler's stop cut it short"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("1 GPU work item launched per step"), std::string::npos) << said;
  for (const auto& [last, op, steps] : {std::tuple{30.0, true, 3}, std::tuple{100.0, false, 3}, std::tuple{30.0, false, 1}}) {
    const Trace kept = parse_trace_text(built(last, op, steps));
    const TraceIndex i(kept);
    EXPECT_EQ(i.cut_short_step, -1) << last << " " << op << " " << steps;
    EXPECT_EQ(i.steps.size(), size_t(steps));
  }
  EXPECT_TRUE(is_cut_short_step(99, 1000, false));
  EXPECT_FALSE(is_cut_short_step(100, 1000, false));
  EXPECT_FALSE(is_cut_short_step(10, 1000, true));
  EXPECT_FALSE(is_cut_short_step(10, 0, false));
}

// A trace of CUDA calls and GPU work alone (no CPU activity) whose recording began long before
// its first call (the profiler's span 20 ms earlier): what the host did then is not in it, said
// (a public RTX A4000 trace: 3.12 s in its DataLoader, read as a 117 ms window "82% busy").
TEST(ReportsSummary, RecordingThatBeganLongBeforeACudaOnlyTracesFirstCallIsSaid) {
  auto built = [](double span_from) {
    test::TraceBuilder b;
    b.slice("Trace", "PyTorch Profiler (0)", span_from, 21000 - span_from);
    b.kernel("k", b.call("cudaLaunchKernel", 20000, 10), 20020, 900);
    return explain_built(b);
  };
  const std::string late = built(0);
  EXPECT_NE(late.find("recording began 20.0 ms before the first event (the profiler's span, PyTorch Profiler (0)): "
                      "what the host did then is not in the trace, and the figures below cover the 920 us after it only"),
            std::string::npos)
      << late;
  EXPECT_EQ(built(19990).find("recording began"), std::string::npos) << "10 us before: nothing to say";
}

// "Kernel launches ran a kernel shorter than the launch call" counts kernels only: a copy's
// call (a pageable copy's lasts as long as the copy) and a set's are no launch overhead.
TEST(ReportsLaunches, OnlyKernelsAreCountedShorterThanTheirCall) {
  test::TraceBuilder b;
  b.step(1, 0, 1000);
  b.kernel("tiny", b.call("cudaLaunchKernel", 10, 8), 30, 2);
  b.memcpy("Memcpy HtoD (Pageable -> Device)", b.call("cudaMemcpyAsync", 50, 40), 60, 20, 1 << 20);
  b.memset(b.call("cudaMemsetAsync", 120, 9), 140, 1);
  const Trace t = parse_trace_text(b.str());
  const LaunchReport r = launch_report(TraceIndex(t));
  EXPECT_EQ(r.delay.count, 3);
  EXPECT_EQ(r.kernel_launches, 1);
  EXPECT_EQ(r.shorter_than_call, 1) << "the kernel: 2 us after an 8 us call; the copy and the set not counted";
}

// Where the GPU mostly waits during stream captures, summary says so rather than send the reader
// to advise for a stall: a kernel [20, 30), a capture [100, 9900) of launches that run nothing,
// then a kernel [10000, 10010).
TEST(ReportsSummary, TheGpuIdleInAStreamCaptureIsSaidSo) {
  test::TraceBuilder b;
  b.kernel("k", b.call("cudaLaunchKernel", 10, 5), 20, 10);
  b.call("cudaStreamBeginCapture", 90, 10);
  for (int k = 0; k < 20; ++k) b.call("cudaLaunchKernel", 200 + 400.0 * k, 5);
  b.call("cudaStreamEndCapture", 9900, 10);
  b.kernel("k", b.call("cudaLaunchKernel", 9950, 5), 10000, 10);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("of it during stream captures, whose launches are recorded into a graph and run nothing then"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("`pil-trace advise` looks at what the host did then"), std::string::npos) << text;
}

// Where the longest idle stretch ends at work that waited after its launch returned (on an
// event, or work the trace does not show), summary says so: a kernel [20, 30), then one launched
// at [40, 45) that starts at 9000.
TEST(ReportsSummary, AStretchEndedByWorkThatWaitedIsNotSentToAdvise) {
  test::TraceBuilder b;
  b.kernel("k", b.call("cudaLaunchKernel", 10, 5), 20, 10);
  b.kernel("k", b.call("cudaLaunchKernel", 40, 5), 9000, 10);
  b.call("cudaMemcpy", 50, 8900);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("most of it after the launch of the work that ended it had returned"), std::string::npos) << text;
  // A graph's later node waits on its earlier ones, not on something else: one graph launch at
  // [40, 45) whose nodes run [50, 60) and [9000, 9010).
  test::TraceBuilder g;
  g.kernel("k", g.call("cudaLaunchKernel", 10, 5), 20, 10);
  const int graph = g.call("cudaGraphLaunch", 40, 5);
  g.kernel("node_a", graph, 50, 10).kernel("node_b", graph, 9000, 10);
  const std::string graph_text = explain_built(g);
  EXPECT_EQ(graph_text.find("most of it after the launch"), std::string::npos) << graph_text;
}

// A copy or set that ran inside its call (the call waited for it: synchronous, or from pageable
// memory) is no launch's latency: counted apart (a public H100 trace's 65 pageable copies made
// its latency's median 68 ns). Here the kernel's 20 us latency, a copy [60, 80) inside its call
// [50, 90), a set [125, 126) after its call [120, 124) returned: latency 20 and 1, one in a call.
TEST(ReportsLaunches, ACopyThatRanInsideItsCallIsNoLatency) {
  test::TraceBuilder b;
  b.step(1, 0, 1000);
  b.kernel("k", b.call("cudaLaunchKernel", 10, 8), 38, 2);
  b.memcpy("Memcpy DtoH (Device -> Pageable)", b.call("cudaMemcpyAsync", 50, 40), 60, 20, 1 << 20);
  b.memset(b.call("cudaMemsetAsync", 120, 4), 125, 1);
  // An async copy between pinned buffers that merely ran during its slow call: latency (0).
  b.memcpy("Memcpy HtoD (Pinned -> Device)", b.call("cudaMemcpyAsync", 200, 40), 210, 5, 4096);
  const Trace t = parse_trace_text(b.str());
  const LaunchReport r = launch_report(TraceIndex(t));
  EXPECT_EQ(r.delay.count, 4);
  EXPECT_EQ(r.in_call, 1);
  EXPECT_EQ(r.latency.count, 3);
  EXPECT_EQ(r.latency.max, 20 * 1000);
  EXPECT_EQ(r.latency.min, 0);
  ASSERT_EQ(r.launches.size(), 4u);
  EXPECT_STREQ(r.launches[1].kind(), "in its call");
  EXPECT_STREQ(r.launches[0].kind(), "launch latency");
}

TEST_F(Reports, WindowIsTheProfiledSteps) {
  EXPECT_EQ(index.window_start, 0);
  EXPECT_EQ(index.window_end, 200 * us);
  ASSERT_EQ(index.steps.size(), 1u);
}

TEST_F(Reports, CorrelationJoinsLaunchesToTheirWork) {
  const auto& ev = t.events;
  size_t gemm = size_t(&named("gemm") - ev.data());
  const long call = index.launch_of(gemm);
  ASSERT_GE(call, 0);
  EXPECT_EQ(ev[size_t(call)].name, "cudaLaunchKernel");
  EXPECT_EQ(ev[size_t(call)].start_ns, 30 * us);
  const size_t graph = size_t(&named("cudaGraphLaunch") - ev.data());
  ASSERT_EQ(index.work_of(graph).size(), 2u);  // one launch, two kernels
  EXPECT_EQ(ev[index.work_of(graph)[0]].name, "graph_k1");
}

TEST_F(Reports, SparseCorrelationIdsJoinTheSame) {
  // Ids far apart take the sorting join instead of the table indexed by id: same answers.
  Trace sparse = parse_trace_text(test::synthetic_gpu_trace(0, /*reversed=*/true));
  for (auto& e : sparse.events)
    if (e.correlation) e.correlation = e.correlation * 1'000'000'007ull;
  const TraceIndex other(sparse);
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(other.launch_of(i), index.launch_of(i)) << "event " << i;
    const auto a = index.work_of(i), b = other.work_of(i);
    EXPECT_EQ(std::vector<size_t>(a.begin(), a.end()), std::vector<size_t>(b.begin(), b.end()));
  }
  EXPECT_EQ(other.launch_calls(), index.launch_calls());
  EXPECT_EQ(index.work_of(t.events.size() + 5).size(), 0u);  // out of range: no work
}

TEST_F(Reports, KernelStatistics) {
  const auto rows = kernel_report(index);
  ASSERT_EQ(rows.size(), 6u);  // kernels only: no memcpy, no mirrored range
  EXPECT_EQ(rows[0].name, "gemm");
  EXPECT_EQ(rows[0].time.total, 100 * us);
  EXPECT_NEAR(rows[0].share, 100.0 / 132.0, 1e-9);  // 100 + 10 + 5 + 2 + 10 + 5
  ASSERT_TRUE(rows[0].launch.has_value());
  EXPECT_EQ(rows[0].launch->registers, 90);
  EXPECT_DOUBLE_EQ(rows[0].launch->est_occupancy_pct, 12.0);
  EXPECT_DOUBLE_EQ(rows[0].launch->blocks_per_sm, 0.48);
}

TEST_F(Reports, KernelsOfOneRange) {
  const auto rows = kernel_report(index, "matmul_add");
  std::vector<std::string> names;
  for (const auto& r : rows) names.push_back(r.name);
  std::sort(names.begin(), names.end());
  // Launched from inside matmul_add on thread 1; kernel_a and kernel_b come from thread 2.
  EXPECT_EQ(names, (std::vector<std::string>{"add_kernel", "gemm", "graph_k1", "graph_k2"}));
}

TEST_F(Reports, DurationStatsByHand) {
  const auto s = DurationStats::of({4, 1, 3, 2});
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.total, 10);
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_NEAR(s.stddev, 1.2909944, 1e-6);  // sample standard deviation
  EXPECT_DOUBLE_EQ(DurationStats::of({7, 1, 5}).median, 5.0);
  EXPECT_DOUBLE_EQ(DurationStats::of({9}).median, 9.0);
  EXPECT_EQ(DurationStats::of({}).count, 0);
}

TEST_F(Reports, MedianBySelectionMatchesTheSortedMiddle) {
  uint64_t x = 12345;
  for (size_t n = 1; n < 60; ++n) {
    std::vector<int64_t> v;
    for (size_t k = 0; k < n; ++k) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      v.push_back(int64_t(x >> 58));  // small values: many ties
    }
    std::vector<int64_t> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    const double expected =
        n % 2 ? double(sorted[n / 2]) : (double(sorted[n / 2 - 1]) + double(sorted[n / 2])) / 2.0;
    const auto s = DurationStats::of(v);
    EXPECT_DOUBLE_EQ(s.median, expected) << "n = " << n;
    EXPECT_EQ(s.min, sorted.front());
    EXPECT_EQ(s.max, sorted.back());
  }
}

TEST_F(Reports, ApiCalls) {
  const auto rows = api_report(index);
  std::map<std::string, DurationStats> by;
  for (const auto& r : rows) by[r.name] = r.time;
  EXPECT_EQ(by["cudaLaunchKernel"].count, 4);
  EXPECT_EQ(by["cudaLaunchKernel"].total, 24 * us);  // 5 + 4 + 5 + 10
  EXPECT_EQ(by["cudaGraphLaunch"].total, 3 * us);
  EXPECT_EQ(by["cudaDeviceSynchronize"].total, 8 * us);
  EXPECT_EQ(by["cudaMemcpyAsync"].count, 1);
}

TEST_F(Reports, LaunchDelaysByHand) {
  const LaunchReport r = launch_report(index);
  // gemm 40-35, add 150-74, graph 165-89, memcpy 50-48, kernel_a 20-10, kernel_b 120-110
  ASSERT_EQ(r.launches.size(), 6u);
  EXPECT_EQ(r.delay.median, 10 * us);  // 2, 5, 10, 10, 76, 76
  EXPECT_EQ(r.delay.max, 76 * us);
  EXPECT_EQ(r.delay.min, 2 * us);
  EXPECT_EQ(r.shorter_than_call, 1);  // kernel_b: 5 us of work after a 10 us launch
  EXPECT_EQ(r.kernel_launches, 5);    // all but the memcpy
  EXPECT_EQ(r.graph_launches, 1);
  EXPECT_EQ(r.graph_kernels, 2);
  EXPECT_TRUE(r.outliers.empty());
}

TEST_F(Reports, LaunchDelaySplitIntoLatencyAndQueueing) {
  const LaunchReport r = launch_report(index);
  // Onto an idle stream: gemm (40 - 35), the copy (50 - 48), kernel_a (20 - 10), and kernel_b
  // (120 - 110: kernel_a had ended at 30). Onto a busy stream: add_kernel (call ended at 74,
  // gemm ran until 140) and the graph (call ended at 89, add_kernel ran until 160).
  EXPECT_EQ(r.latency.count, 4);
  EXPECT_DOUBLE_EQ(r.latency.median, 7.5 * us);  // 2, 5, 10, 10
  EXPECT_EQ(r.latency.max, 10 * us);
  EXPECT_EQ(r.queueing.count, 2);
  EXPECT_DOUBLE_EQ(r.queueing.median, 76 * us);
  EXPECT_EQ(r.delay.count, r.latency.count + r.queueing.count);
  std::map<std::string, Launch> by;
  for (const auto& l : r.launches) by[std::string(t.events[l.first_work].name)] = l;
  EXPECT_FALSE(by["gemm"].queued);
  EXPECT_EQ(by["gemm"].queue_ns, 0);
  EXPECT_FALSE(by["kernel_b"].queued);
  EXPECT_TRUE(by["add_kernel"].queued);
  EXPECT_EQ(by["add_kernel"].queue_ns, 66 * us);  // 74 -> 140, then 10 us more to its start
  EXPECT_TRUE(by["graph_k1"].queued);
  EXPECT_EQ(by["graph_k1"].queue_ns, 71 * us);    // 89 -> 160
}

// Two launches on one stream, built to show one kind each: the first onto an idle stream, the
// second while the first kernel still runs.
Trace two_launches(int64_t second_call_us) {
  auto x = [](const char* cat, const char* name, int pid, int tid, int ts, int dur, int corr) {
    return std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
           "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
           ", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
           ", \"args\": {\"correlation\": " + std::to_string(corr) + "}}";
  };
  const int c = int(second_call_us);
  return parse_trace_text("[" + x("cuda_runtime", "cudaLaunchKernel", 1, 1, 0, 5, 1) + "," +
                          x("kernel", "long_kernel", 0, 7, 8, 100, 1) + "," +  // [8, 108]
                          x("cuda_runtime", "cudaLaunchKernel", 1, 1, c, 5, 2) + "," +
                          x("kernel", "next_kernel", 0, 7, std::max(c + 9, 110), 10, 2) + "]");
}

TEST_F(Reports, SecondLaunchOntoABusyStreamIsQueueing) {
  const Trace busy = two_launches(20);  // returns at 25, the stream busy until 108, starts at 110
  const LaunchReport r = launch_report(TraceIndex(busy));
  ASSERT_EQ(r.launches.size(), 2u);
  EXPECT_FALSE(r.launches[0].queued);
  EXPECT_EQ(r.launches[0].delay_ns, 3 * us);
  EXPECT_TRUE(r.launches[1].queued);
  EXPECT_EQ(r.launches[1].delay_ns, 85 * us);
  EXPECT_EQ(r.launches[1].queue_ns, 83 * us);
  EXPECT_EQ(r.latency.count, 1);
  EXPECT_EQ(r.queueing.count, 1);
  EXPECT_EQ(r.queueing.max, 85 * us);
}

TEST_F(Reports, SecondLaunchOntoAnIdleStreamIsLatency) {
  const Trace idle = two_launches(200);  // returns at 205, the stream idle since 108, starts at 209
  const LaunchReport r = launch_report(TraceIndex(idle));
  ASSERT_EQ(r.launches.size(), 2u);
  EXPECT_FALSE(r.launches[1].queued);
  EXPECT_EQ(r.launches[1].queue_ns, 0);
  EXPECT_EQ(r.latency.count, 2);
  EXPECT_EQ(r.queueing.count, 0);
  EXPECT_DOUBLE_EQ(r.latency.median, 3.5 * us);  // 3 and 4
}

TEST_F(Reports, SynchronizeAgainstTheGpuWorkItCovered) {
  const auto rows = sync_report(index);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(t.events[rows[0].call].name, "cudaDeviceSynchronize");
  EXPECT_EQ(rows[0].gpu_busy_ns, 8 * us);  // gemm ran through [91, 99]
  EXPECT_EQ(rows[0].work_items, 1);
  EXPECT_DOUBLE_EQ(rows[0].idle_share(t), 0.0);
}

TEST_F(Reports, ALongSynchronizeOverLittleGpuWorkIsNotGpuBound) {
  // The series' size-64 case in small: 1.78 ms of synchronize over 26 us of GPU work.
  const Trace s = parse_trace_text(
      "[{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": 0, \"dur\": 5, \"args\": {\"correlation\": 1}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, "
      "\"ts\": 1700, \"dur\": 26, \"args\": {\"correlation\": 1}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaDeviceSynchronize\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": 6, \"dur\": 1780, \"args\": {\"correlation\": 2}}]");
  const TraceIndex si(s);
  const auto rows = sync_report(si);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].gpu_busy_ns, 26 * us);
  EXPECT_NEAR(rows[0].idle_share(s), 1.0 - 26.0 / 1780.0, 1e-12);
  const std::string text = explain(si);
  EXPECT_NE(text.find("cudaDeviceSynchronize 1.78 ms covered 26.0 us of GPU work (1 item); GPU idle "
                      "98.5% of the wait: the GPU idle most of the wait: not GPU-bound"),
            std::string::npos) << text;
}

TEST_F(Reports, IdleTimeSplitPerStreamByHand) {
  const StreamReport r = stream_report(index, 30 * us);
  ASSERT_EQ(r.streams.size(), 3u);
  std::map<int64_t, StreamRow> s;
  for (const auto& row : r.streams) s[row.stream] = row;
  // Stream 7: busy 100 + 10 + 5 + 2; before gemm the GPU waited for its launch (ended at 35):
  // host wait 40; gaps of 10 and 5 after launches that had long ended: kernel wait; the tail
  // after the last kernel: other. The mirrored range is not counted as busy.
  EXPECT_EQ(s[7].busy_ns, 117 * us);
  EXPECT_EQ(s[7].host_wait_ns, 40 * us);
  EXPECT_EQ(s[7].kernel_wait_ns, 15 * us);
  EXPECT_EQ(s[7].other_idle_ns, 28 * us);
  EXPECT_EQ(s[7].work_items, 4);
  // Stream 9: kernel_b's launch ended at 110, 80 us after kernel_a finished: host wait.
  EXPECT_EQ(s[9].busy_ns, 15 * us);
  EXPECT_EQ(s[9].host_wait_ns, (20 + 90) * us);
  EXPECT_EQ(s[9].kernel_wait_ns, 0);
  EXPECT_EQ(s[9].other_idle_ns, 75 * us);
  // Stream 8: one copy.
  EXPECT_EQ(s[8].busy_ns, 10 * us);
  EXPECT_EQ(s[8].host_wait_ns, 50 * us);
  for (const auto& [id, row] : s)
    EXPECT_EQ(row.busy_ns + row.host_wait_ns + row.kernel_wait_ns + row.other_idle_ns, 200 * us);
  // Per step, all streams together: union [20,30] + [40,140] + [150,160] + [165,172].
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].busy_ns, 127 * us);
  EXPECT_EQ(r.steps[0].kernels, 7);
}

// The host's wait ends when the launch call returns: work that starts more than 1 ms later
// (kLatencyAfterReturnNs) waited on something else, here another stream's kernel (an event), as
// the real traces show (PARAM's DLRM: its compute stream waits on NCCL's; TraceLens's SGLang
// decode: 463 ms after a hipStreamWaitEvent). Stream 7: kernel a [10, 3010]. Stream 8: b's call
// [20, 25] returns with the stream idle, b starts at 3010, after a; c's call [3100, 3105], c
// starts at 3108 (3 us of latency: still the host's wait). Times in us.
TEST(IdleSplit, TheHostsWaitEndsWhenTheLaunchCallReturns) {
  test::TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 4000);
  int c = b.call("cudaLaunchKernel", 5, 4);
  b.kernel("a", c, 10, 3000, 7);
  c = b.call("cudaLaunchKernel", 20, 5);
  b.kernel("b", c, 3010, 50, 8);
  c = b.call("cudaLaunchKernel", 3100, 5);
  b.kernel("c", c, 3108, 10, 8);
  const Trace t = parse_trace_text(b.str());
  const TraceIndex index(t);
  const StreamReport r = stream_report(index, 30 * us);
  std::map<int64_t, StreamRow> s;
  for (const auto& row : r.streams) s[row.stream] = row;
  EXPECT_EQ(s[8].host_wait_ns, (25 + 48) * us);      // until b's call returned; c's gap whole
  EXPECT_EQ(s[8].other_idle_ns, (2985 + 882) * us);  // b waiting on a; the tail
  EXPECT_EQ(s[7].host_wait_ns, 10 * us);
  EXPECT_EQ(s[7].other_idle_ns, 990 * us);
  // The launch report says so too: b's delay is no launch latency (a's and c's are).
  const LaunchReport l = launch_report(index);
  EXPECT_EQ(l.waited.count, 1);
  EXPECT_EQ(l.waited.max, 2985 * us);
  EXPECT_EQ(l.latency.count, 2);
  EXPECT_EQ(l.latency.max, 3 * us);
  // HTA's rule is HTA's: a gap only between two items, host wait when the call started after
  // the stream's previous item ended (c's, 48 us; b is the stream's first item).
  const StreamReport h = stream_report(index, 30 * us, IdleRule::Hta);
  for (const auto& row : h.streams) {
    if (row.stream == 8) {
      EXPECT_EQ(row.host_wait_ns, 48 * us);
    }
  }
}

TEST_F(Reports, AThresholdOfZeroMovesKernelWaitToOther) {
  const StreamReport r = stream_report(index, 0);
  for (const auto& row : r.streams)
    if (row.stream == 7) {
      EXPECT_EQ(row.kernel_wait_ns, 0);
      EXPECT_EQ(row.other_idle_ns, (28 + 15) * us);
    }
}

TEST_F(Reports, ChainFromRangeToGpuWork) {
  const auto lines = chain_report(index, "matmul_add");
  std::vector<std::string> got;
  for (const auto& l : lines)
    got.push_back(std::string(size_t(l.depth), ' ') + (l.gpu ? "GPU " : "") +
                  std::string(t.events[l.event].name));
  EXPECT_EQ(got, (std::vector<std::string>{
                     "matmul_add", " aten::matmul", "  aten::mm", "   cudaLaunchKernel",
                     "    GPU gemm", " aten::add", "  cudaLaunchKernel", "   GPU add_kernel",
                     " cudaGraphLaunch", "  GPU graph_k1", "  GPU graph_k2"}));
  EXPECT_EQ(lines[4].delay_ns, 5 * us);
  EXPECT_FALSE(lines[4].queued);  // gemm: its stream was idle
  EXPECT_TRUE(lines[7].queued);   // add_kernel: launched while gemm ran
  EXPECT_EQ(lines[4].offset_ns, 30 * us);  // gemm starts 30 us after matmul_add does
  EXPECT_TRUE(chain_report(index, "no_such_range").empty());
  EXPECT_TRUE(chain_report(index, "matmul_add", 1).empty());
}

TEST_F(Reports, DiffAddedRemovedFasterSlower) {
  // B: the same trace with aten::add twice as long and gemm gone (renamed).
  std::string text_b = test::synthetic_gpu_trace();
  const auto gemm = text_b.find("\"gemm\"");
  text_b.replace(gemm, 6, "\"gemm2\"");
  const auto add = text_b.find("\"name\": \"aten::add\"");
  const auto dur = text_b.find("\"dur\": ", add);
  text_b.replace(dur, 9, "\"dur\": 40");  // 20.000000 -> 40
  const Trace b = parse_trace_text(text_b);
  const TraceIndex index_b(b);
  const DiffReport d = diff_report(index, index_b);
  std::map<std::string, DiffRow> by;
  for (const auto& r : d.rows) by[r.name] = r;
  EXPECT_EQ(by["gemm"].change, Change::Removed);
  EXPECT_EQ(by["gemm2"].change, Change::Added);
  EXPECT_TRUE(by["gemm2"].device);
  EXPECT_EQ(by["aten::add"].change, Change::Slower);
  EXPECT_EQ(by["aten::mm"].change, Change::Same);
  EXPECT_EQ(by.count("ProfilerStep*"), 0u);
  EXPECT_EQ(d.kernels_a, 6);
  EXPECT_EQ(d.kernels_b, 6);
  const DiffReport back = diff_report(index_b, index);
  for (const auto& r : back.rows) {
    if (r.name == "aten::add") {
      EXPECT_EQ(r.change, Change::Faster);
    }
  }
}

// Two builds of torch spell one kernel two ways (a public LoRA run's optimizer kernels, RTX 5090
// against an older build on an A100: every kernel "removed" and "added"): one row, under A's.
TEST(ReportsDiff, AKernelSpelledTwoWaysIsOneRow) {
  EXPECT_EQ(kernel_spelling("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
                            "at::detail::Array<char*, 2> >(int, at::native::AbsFunctor<float>, "
                            "at::detail::Array<char*, 2>)"),
            kernel_spelling("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>, "
                            "std::array<char*, 2ul>>(int, at::native::AbsFunctor<float>, std::array<char*, 2ul>)"));
  EXPECT_NE(kernel_spelling("k<2ul>"), kernel_spelling("k<3ul>"));
  EXPECT_EQ(kernel_spelling("sgemm_128x128"), "sgemm_128x128");
  auto trace = [](const std::string& kernel, double dur) {
    test::TraceBuilder b;
    b.step(1, 0, 1000);
    b.kernel(kernel, b.call("cudaLaunchKernel", 10, 5), 20, dur);
    return parse_trace_text(b.str());
  };
  const Trace a = trace("k<at::detail::Array<char*, 2> >(int)", 100), b = trace("k<std::array<char*, 2ul>>(int)", 200);
  const DiffReport d = diff_report(TraceIndex(a), TraceIndex(b));
  const auto row = std::find_if(d.rows.begin(), d.rows.end(), [](const DiffRow& r) { return r.device; });
  ASSERT_NE(row, d.rows.end());
  EXPECT_EQ(row->name, "k<at::detail::Array<char*, 2> >(int)");
  EXPECT_EQ(row->change, Change::Slower);
  EXPECT_EQ(d.respelled, 1);
}

// A trace written in whole microseconds tells 2 us from 3 us by no more than its clock: a change
// within a clock step a call (the square root of the calls' steps: errors that mostly cancel) is
// none (a public H100 trace's aten::_unsafe_view, 2 -> 3 us, read "slower"); a nanosecond
// trace's is one, and so is 1000 calls' 2 us against 3 us (1 ms, not within 31.6 us).
TEST(ReportsDiff, AChangeWithinTheClocksStepIsNone) {
  auto trace = [](double dur, int calls = 1) {
    test::TraceBuilder b;
    b.step(1, 0, 10000);
    for (int k = 0; k < calls; ++k) b.op("aten::_unsafe_view", 10 + 5 * k, dur);
    return parse_trace_text(b.str());
  };
  auto change = [](const Trace& a, const Trace& b) {
    const DiffReport d = diff_report(TraceIndex(a), TraceIndex(b));
    for (const DiffRow& r : d.rows)
      if (r.name == "aten::_unsafe_view") return r.change;
    return Change::Added;
  };
  EXPECT_EQ(written_step_ns(trace(2)), 1000);
  EXPECT_EQ(written_step_ns(trace(2.5)), 100);
  EXPECT_EQ(change(trace(2), trace(3)), Change::Same);
  EXPECT_EQ(change(trace(2), trace(4)), Change::Slower);
  EXPECT_EQ(change(trace(2.001), trace(3.001)), Change::Slower);
  EXPECT_EQ(change(trace(2, 1000), trace(3, 1000)), Change::Slower);
  EXPECT_EQ(change(trace(2, 1000), trace(2.03, 1000)), Change::Same);  // 30 us over 1000 calls: within
}

// A range's GPU work is the work launched inside it on its thread, as `chain` shows it, not only
// the work of the operators inside it: c10d's NCCL kernel names record_param_comms, the operator
// around its nccl:all_reduce range (the operator table gives the range none, as torch.profiler).
// One step [0, 1000]: record_param_comms [100, 400] holding nccl:all_reduce [150, 250], whose
// launch at 200 (its External id the operator's) runs a kernel of 500. A range "outer" [400, 700]
// holding another "outer" [420, 620] (counted once: 300 us, not 500) and aten::add [450, 470]
// whose launch at 455 runs a kernel of 40 (40 us, not 80).
TEST(Summary, NamedRangesCountTheGpuWorkLaunchedInside) {
  test::TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  int64_t comms = 0, add = 0;
  b.op("record_param_comms", 100, 300, "", "", 1, &comms);
  b.range("nccl:all_reduce", 150, 100);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", b.call("cudaLaunchKernel", 200, 10, comms), 215, 500);
  b.range("outer", 400, 300);
  b.range("outer", 420, 200);
  b.op("aten::add", 450, 20, "", "", 1, &add);
  b.kernel("add_kernel", b.call("cudaLaunchKernel", 455, 10, add), 480, 40);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("named ranges, mean time per step (CPU / GPU time of the work launched inside, its items added): outer 300 us / 40.0 us, "
                      "nccl:all_reduce 100 us / 500 us"),
            std::string::npos) << text;
}

// Per step, the ranges' figures are totals over the steps divided by their count (a mean, which
// the line says: a slow first step pulls it above the steps line's median). Without steps they
// are the trace's totals, and the line says so. Steps of 1000, 100, 100 us, each holding a range
// of 900, 90, 90 us: mean 360 us, beside a median step of 100 us.
TEST(Summary, NamedRangesSayTheirTimePerStepIsAMean) {
  test::TraceBuilder b;
  const int64_t starts[] = {0, 2000, 3000}, lengths[] = {1000, 100, 100};
  for (int k = 0; k < 3; ++k) {
    b.step(k + 1, starts[k], lengths[k]);
    b.range("forward", starts[k] + 5, lengths[k] * 9 / 10);
  }
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("median 100 us on the CPU"), std::string::npos) << text;
  EXPECT_NE(text.find("named ranges, mean time per step (CPU): forward 360 us"), std::string::npos) << text;

  test::TraceBuilder stepless;
  stepless.range("forward", 0, 900);
  stepless.range("forward", 1000, 100);
  const std::string whole = explain_built(stepless);
  EXPECT_NE(whole.find("named ranges, time in the trace (CPU): forward 1.00 ms"), std::string::npos) << whole;
  EXPECT_EQ(whole.find("per step"), std::string::npos) << whole;
}

// A range that launches nothing itself while another thread of the process launches its work
// (a backward range around the autograd engine's thread) says so: "backward" [100, 500] on the
// program's thread, the engine's thread (2) launching kernels of 100 and 60 at 150 and 300, and
// one of 999 at 600, after the range; "idle" [700, 800] has no launch anywhere.
TEST(Summary, ARangeWhoseWorkOtherThreadsLaunchSaysSo) {
  test::TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  b.range("backward", 100, 400);
  b.kernel("mm_kernel", b.call("cudaLaunchKernel", 150, 10, 0, 2), 170, 100);
  b.kernel("add_kernel", b.call("cudaLaunchKernel", 300, 10, 0, 2), 320, 60);
  b.kernel("late_kernel", b.call("cudaLaunchKernel", 600, 10, 0, 2), 620, 999);
  b.range("idle", 700, 100);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find(": backward 400 us / 0 ns (other threads launched 160 us meanwhile), idle 100 us / 0 ns\n"),
            std::string::npos)
      << text;
  // A range that launched a little itself, far less than the other thread meanwhile (a B200
  // trace's backward: 1.5 us itself, 396 us elsewhere, said nothing); a name with a space quoted
  // ("Add & Norm 1 120 us" read as 1,120 us).
  test::TraceBuilder c;
  c.device("NVIDIA H100 80GB HBM3");
  c.step(1, 0, 1000);
  c.range("Add & Norm 1", 100, 400);
  c.kernel("fill_kernel", c.call("cudaLaunchKernel", 110, 5), 120, 2);
  c.kernel("mm_kernel", c.call("cudaLaunchKernel", 150, 10, 0, 2), 170, 100);
  const std::string spaced = explain_built(c);
  EXPECT_NE(spaced.find(": `Add & Norm 1` 400 us / 2.00 us (other threads launched 100 us meanwhile)\n"),
            std::string::npos)
      << spaced;
}

// A range's spans on a thread are taken as their union, and a launch as inside [start, end):
// a [100, 200) and b [200, 300) with a launch at 200 (a kernel of 50): b's alone. r [400, 600)
// and r [500, 800), overlapping without nesting, are 400 us, with the launch at 700 (a kernel
// of 30) inside.
TEST(Summary, RangeSpansAreUnionsAndHalfOpen) {
  test::TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 2000);
  b.range("a", 100, 100);
  b.range("b", 200, 100);
  b.kernel("k1", b.call("cudaLaunchKernel", 200, 10), 215, 50);
  b.range("r", 400, 200);
  b.range("r", 500, 300);
  b.kernel("k2", b.call("cudaLaunchKernel", 700, 10), 715, 30);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find(" r 400 us / 30.0 us"), std::string::npos) << text;
  EXPECT_NE(text.find(" a 100 us / 0 ns"), std::string::npos) << text;
  EXPECT_NE(text.find(" b 100 us / 50.0 us"), std::string::npos) << text;
}

// Copies alone are GPU work: a data-loading benchmark's trace is not "a CPU run".
TEST(Summary, CopiesAloneAreGpuWork) {
  test::TraceBuilder b;
  b.device("NVIDIA A100-PCIE-40GB");
  b.step(1, 0, 1000);
  b.memcpy("Memcpy HtoD (Pinned -> Device)", b.call("cudaMemcpyAsync", 100, 10), 115, 600, 1 << 24);
  const std::string text = explain_built(b);
  EXPECT_EQ(text.find("a CPU run"), std::string::npos) << text;
  EXPECT_NE(text.find("no kernel in this trace: its GPU work is 1 copy ("), std::string::npos) << text;
  EXPECT_NE(text.find("GPU busy 60.0% of the window"), std::string::npos) << text;
}

// Launch calls with no GPU work recorded: the GPU's side is missing, which is not a CPU run.
TEST(Summary, LaunchesWithoutRecordedWorkAreNotACpuRun) {
  test::TraceBuilder b;
  b.step(1, 0, 1000);
  b.call("cudaLaunchKernel", 100, 10);
  b.call("cudaDeviceSynchronize", 200, 300);
  const std::string text = explain_built(b);
  EXPECT_EQ(text.find("a CPU run"), std::string::npos) << text;
  EXPECT_NE(text.find("no GPU work recorded, though 1 of the CPU's 2 CUDA runtime or driver calls starts "
                      "GPU work (launches, copies, sets): the trace has the CPU's side only"),
            std::string::npos) << text;
  // Synchronizes and queries alone start nothing: a CPU run that waited on earlier work.
  test::TraceBuilder q;
  q.step(1, 0, 1000);
  q.call("cudaDeviceSynchronize", 200, 300);
  const std::string tq_text = explain_built(q);
  EXPECT_NE(tq_text.find("no GPU work recorded, and no call that starts any: the CPU's 1 CUDA runtime or "
                         "driver call only synchronizes or queries"),
            std::string::npos) << tq_text;
}

// The same on real traces: pytorch/benchmark's copy benchmark (A100, copies alone, no kernel)
// and rank 1 of tugot17/tokenomics-from-first-principles (its NCCL kernel, 11,264,642 ns, names
// record_param_comms; its launch is inside nccl:all_reduce).
TEST(Summary, RealTracesOfCopiesAloneAndOfAnNcclRange) {
  const std::string dir = std::string(PIL_TRACE_FIXTURES_DIR);
  const Trace copies = parse_trace_file(dir + "/torchbench/pageable_copies.json.gz");
  const std::string c = explain(TraceIndex(copies));
  EXPECT_NE(c.find("no kernel in this trace: its GPU work is 20 copies"), std::string::npos) << c;
  EXPECT_NE(c.find("GPU busy 98.6% of the window"), std::string::npos) << c;
  const Trace nccl = parse_trace_file(dir + "/tokenomics/trace1.json.gz");
  const std::string n = explain(TraceIndex(nccl));
  EXPECT_NE(n.find("nccl:all_reduce 97.7 us / 11.3 ms"), std::string::npos) << n;
}

TEST_F(Reports, ExplainNamesTheGpuFigures) {
  const std::string text = explain(index);
  EXPECT_NE(text.find("1 profiled step, 200 us on the CPU"), std::string::npos) << text;
  EXPECT_NE(text.find("7 GPU work items launched per step"), std::string::npos) << text;
  EXPECT_NE(text.find("launch delay"), std::string::npos) << text;
  EXPECT_NE(text.find("launch latency (stream idle when the call returned) median 7.50 us, max 10.0 us "
                      "over 4 launches"), std::string::npos) << text;
  EXPECT_NE(text.find("queued behind earlier work on the stream: 2 launches, median wait 76.0 us"),
            std::string::npos) << text;
  // The synchronize [91, 99] ran while gemm [40, 140] did: the GPU busy all through the wait.
  EXPECT_NE(text.find("cudaDeviceSynchronize 8.00 us covered 8.00 us of GPU work (1 item); GPU idle "
                      "0.0% of the wait: the GPU busy most of the wait"), std::string::npos) << text;
  EXPECT_NE(text.find("1 graph launch ran 2 kernels"), std::string::npos) << text;
  // matmul_add: [10, 90] us on the CPU; gemm 100 + add_kernel 10 + the graph's 5 + 2 launched inside.
  EXPECT_NE(text.find("named ranges, mean time per step (CPU / GPU time of the work launched inside, its items added): matmul_add "
                      "80.0 us / 117 us"),
            std::string::npos) << text;
}

TEST_F(Reports, AnIndexWithThreadsSaysTheSameAsOneThread) {
  // With threads the operator table is computed beside the index and the stream report beside
  // the other reports (ThreadSanitizer runs this in the debug-tsan preset); the answers may not
  // change. Each index is asked on its own, so the table's thread is still at work when the
  // first question comes.
  for (unsigned threads : {2u, 3u, 8u}) {
    const TraceIndex parallel(t, threads, /*table_ahead=*/true);
    EXPECT_EQ(explain(parallel), explain(index)) << threads << " threads";
    EXPECT_EQ(format_table(parallel.key_averages(), {}), format_table(index.key_averages(), {}));
    const TraceIndex dropped(t, threads, true);  // destroyed with its table maybe still being made
  }
}

TEST_F(Reports, SvgHasLanesArrowsAxisAndLegend) {
  SvgOptions o;
  o.title = "synthetic";
  const std::string svg = render_svg(index, o);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("thread 1 (main)"), std::string::npos);
  EXPECT_NE(svg.find("GPU 0 stream 7"), std::string::npos);
  EXPECT_NE(svg.find("marker-end"), std::string::npos);  // launch arrows
  EXPECT_NE(svg.find("kernel</text>"), std::string::npos);  // legend
  EXPECT_NE(svg.find(">gemm"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  int64_t from = 0, to = 0;
  ASSERT_TRUE(range_window(index, "aten::add", 0, from, to));
  EXPECT_EQ(from, 65 * us);
  EXPECT_EQ(to, 160 * us);  // widened to the end of the kernel it launched
  EXPECT_FALSE(step_window(index, 1, from, to));
}

TEST_F(Reports, SvgMarksPointAtTheFirstSliceOfANameInTheWindow) {
  SvgOptions o;
  EXPECT_EQ(render_svg(index, o).find("class=\"mark\""), std::string::npos) << "no marks asked for";
  ASSERT_TRUE(range_window(index, "aten::add", 0, o.from_ns, o.to_ns));  // [65, 160] us
  const auto launch = find_mark(index, o, "cudaLaunchKernel");
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(index.trace().events[*launch].start_ns, 70 * us) << "the window's first, not the trace's (5 us)";
  EXPECT_FALSE(find_mark(index, o, "kernel_a").has_value()) << "[20, 30] us: before the window";
  EXPECT_FALSE(find_mark(index, o, "no such slice").has_value());
  o.marks = {"cudaLaunchKernel", "add_kernel", "no such slice"};
  const std::string svg = render_svg(index, o);
  size_t marks = 0;
  for (size_t p = svg.find("class=\"mark\""); p != std::string::npos; p = svg.find("class=\"mark\"", p + 1)) ++marks;
  EXPECT_EQ(marks, 2u) << "one arrow and label per slice found; none for a name not in the window";
  EXPECT_NE(svg.find(">cudaLaunchKernel, at +5 us (4 us)</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">add_kernel, at +85 us (10 us)</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find("marker-end=\"url(#markhead)\""), std::string::npos);
}

TEST_F(Reports, SubPixelSlicesAreMerged) {
  // 2000 back-to-back 1 us kernels in a 1000-pixel picture: far fewer rectangles than slices.
  std::string text = "[";
  for (int i = 0; i < 2000; ++i)
    text += std::string(i ? "," : "") + "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", "
            "\"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(i * 2) + ", \"dur\": 1}";
  text += "]";
  const Trace many = parse_trace_text(text);
  const TraceIndex mi(many);
  SvgOptions o;
  o.width = 1000;
  const std::string svg = render_svg(mi, o);
  size_t rects = 0;
  for (size_t p = svg.find("<rect"); p != std::string::npos; p = svg.find("<rect", p + 1)) ++rects;
  EXPECT_LT(rects, 50u);
  EXPECT_NE(svg.find("slices narrower than a pixel"), std::string::npos);
}


// A graph's nodes are kernels, memsets and copies alike: each counted as what it is (HTA's
// negative_queue_length trace: 70 graph launches ran 135 kernels and 210 memsets, said as 345
// kernels), and a graph whose first node is a memset still counts as a kernel launch, judged by
// its first kernel (20 such launches were left out of the short-kernel count).
TEST(GraphLaunches, NodesAreCountedByKindAndTheFirstKernelIsJudged) {
  test::TraceBuilder b;
  b.step(1, 0, 200);
  const int g1 = b.call("cudaGraphLaunch", 10, 10);
  b.memset(g1, 30, 1).kernel("graph_kernel_a", g1, 32, 4).kernel("graph_kernel_b", g1, 37, 30);
  const int g2 = b.call("cudaGraphLaunch", 80, 10);
  b.memset(g2, 100, 1).memset(g2, 102, 1).memcpy("Memcpy DtoD (Device -> Device)", g2, 104, 2, 1024)
      .kernel("graph_kernel_c", g2, 107, 20);
  const int k = b.call("cudaLaunchKernel", 140, 5);
  b.kernel("plain", k, 150, 2);
  const Trace t = parse_trace_text(b.str());
  const TraceIndex index(t);
  const LaunchReport r = launch_report(index);
  EXPECT_EQ(r.graph_launches, 2);
  EXPECT_EQ(r.graph_work_items, 7);
  EXPECT_EQ(r.graph_kernels, 3);
  EXPECT_EQ(r.graph_memsets, 3);
  EXPECT_EQ(r.graph_copies, 1);
  EXPECT_EQ(r.kernel_launches, 3) << "both graphs (a memset first) and the plain launch";
  // g1's first kernel (4 us) is shorter than its call (10 us); g2's (20 us) is not; plain's 2 < 5.
  EXPECT_EQ(r.shorter_than_call, 2);
  EXPECT_EQ(graph_work_text(r), "7 GPU work items (3 kernels, 3 memsets, 1 copy)");
  const std::string text = explain(index);
  EXPECT_NE(text.find("2 graph launches ran 7 GPU work items (3 kernels, 3 memsets, 1 copy)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2 of 3 kernel launches ran a kernel shorter than the launch call"), std::string::npos) << text;
}

// Where the GPU mostly waits after its last work (the host went on without it), that is said,
// not "launch/overhead bound" (HTA's triton_example: one kernel 1.35 ms into a 13.3 s step);
// short waits that are not the host's launches are not called launch-bound either; a loop whose
// launches return after the GPU went idle is.
TEST(IdleVerdict, AfterTheLastWorkShortOtherWaitsAndALaunchBoundLoopAreToldApart) {
  test::TraceBuilder tail;
  tail.step(1, 0, 10'000);
  const int c = tail.call("cudaLaunchKernel", 10, 5);
  tail.kernel("only", c, 20, 10);
  std::string text = explain_built(tail);
  EXPECT_NE(text.find("of it after its last work, 9.97 ms to the window's end: the host went on without it"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("launch/overhead bound"), std::string::npos) << text;

  // Thirty launches in a 2 ms step: call k at call_at(k) for call_dur, its kernel at kernel_at(k).
  auto loop = [](auto call_at, double call_dur, auto kernel_at, double kernel_dur) {
    test::TraceBuilder b;
    b.step(1, 0, 2000);
    for (int k = 0; k < 30; ++k) b.kernel("k", b.call("cudaLaunchKernel", call_at(k), call_dur), kernel_at(k), kernel_dur);
    return explain_built(b);
  };
  // Launches all made at the start, each kernel starting 50 us after the previous one ended
  // (the stream idle, the work late: "other"): no single stretch, no long ones, not the host's
  // launches.
  text = loop([](int k) { return 2.0 * k + 1; }, 1, [](int k) { return 60.0 * k + 50; }, 10);
  EXPECT_EQ(text.find("launch/overhead bound"), std::string::npos) << text;
  EXPECT_NE(text.find("in short stretches, most of them not on the host's launch calls"), std::string::npos) << text;

  // Each launch returns after the previous kernel ended: the GPU waits on the host.
  text = loop([](int k) { return 60.0 * k + 1; }, 50, [](int k) { return 60.0 * k + 52; }, 5);
  EXPECT_NE(text.find("(launch/overhead bound: the GPU mostly waits)"), std::string::npos) << text;
}

// A trace taken with CUPTI's range profiler (HTA's cupti_profiler data: cuda_profiler_range
// events, a kernel's counters each, no kernel on a stream) is said to be one, not blamed on the
// profiler's GPU activity being off or lost.
TEST(CuptiRangeProfiler, ItsTraceIsSaidToKeepNoKernelTimeline) {
  test::TraceBuilder b;
  b.step(1, 0, 500);
  for (int k = 0; k < 3; ++k) {
    b.call("cudaLaunchKernel", 10.0 + 100 * k, 5);
    b.slice("cuda_profiler_range", "some_kernel", 20.0 + 100 * k, 50);
  }
  const Trace t = parse_trace_text(b.str());
  ASSERT_EQ(t.unread.count(Trace::kUnreadCuptiRange), 1u);
  EXPECT_EQ(t.unread.at(Trace::kUnreadCuptiRange), 3);
  const std::string text = explain(TraceIndex(t));
  EXPECT_NE(text.find("no GPU work pil-trace reads: the trace was recorded with CUPTI's range profiler (3 "
                      "cuda_profiler_range events"),
            std::string::npos) << text;
  EXPECT_NE(text.find("3 of the CPU's 3 CUDA runtime or driver calls start GPU work"), std::string::npos) << text;
  EXPECT_EQ(text.find("lost"), std::string::npos) << text;
}


// A range on two threads at once (Gloo's all-reduce on its two worker threads, HTA's cpu_only
// trace: 344 ms a step inside a 210 ms step) adds each thread's time, and says so.
TEST(NamedRanges, ARangeOnSeveralThreadsSaysItsTimesAreAdded) {
  test::TraceBuilder b;
  b.step(1, 0, 1000);
  b.range("forward", 10, 300);
  b.range("gloo:all_reduce", 400, 500, /*tid=*/2).range("gloo:all_reduce", 410, 480, /*tid=*/3);
  const std::string text = explain_built(b);
  EXPECT_NE(text.find("gloo:all_reduce 980 us (2 threads, added), forward 300 us"), std::string::npos) << text;
  const Trace t = parse_trace_text(b.str());
  const TraceIndex index(t);
  const auto rows = named_range_rows(index);
  const RangeTimes times = named_range_times(index, rows);
  ASSERT_EQ(times.threads.size(), rows.size());
  for (size_t k = 0; k < rows.size(); ++k) EXPECT_EQ(times.threads[k], rows[k]->name == "forward" ? 1 : 2) << rows[k]->name;
}

// A trace of CUDA calls and GPU work alone (recorded without ProfilerActivity.CPU, as a public RTX
// A4000 trace of willding123's is): no operator, no range. The summary says its CPU time is the
// calls' alone; with one operator (or a step), it is a trace with a CPU side.
TEST(Explain, ATraceWithoutOperatorsOrRangesSaysItsCpuSideWasNotRecorded) {
  pil::test::TraceBuilder b;
  b.device("NVIDIA RTX A4000", 48, 16LL << 30, 8, 6);
  b.kernel("k", b.call("cudaLaunchKernel", 0, 5), 10, 10);
  b.kernel("k", b.call("cudaLaunchKernel", 30, 5), 40, 10);
  const Trace t = parse_trace_text(b.str());
  const TraceIndex index(t);
  EXPECT_TRUE(cuda_side_only(index));
  EXPECT_NE(explain(index).find("no operator or range in this trace, only CUDA calls and GPU work"), std::string::npos)
      << explain(index);
  b.op("aten::mm", 0, 8);
  const Trace with_op = parse_trace_text(b.str());
  EXPECT_FALSE(cuda_side_only(TraceIndex(with_op)));
  EXPECT_EQ(explain(TraceIndex(with_op)).find("no operator or range"), std::string::npos);
  EXPECT_FALSE(cuda_side_only(TraceIndex(parse_trace_text(R"({"traceEvents": []})"))));
}

}  // namespace
}  // namespace pil::trace
