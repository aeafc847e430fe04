// The GPU figures on traces where the GPU runs behind the CPU (tests/trace/lagging_trace.h):
// nothing clipped away, per-step figures both ways, "GPU busy" as the union over the streams.
// Every answer is worked out by hand in the trace's comment.
#include <gtest/gtest.h>

#include "trace/lagging_trace.h"
#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/svg.h"

namespace pil::trace {
namespace {

constexpr int64_t us = 1000;

struct LaggingGpu : ::testing::Test {
  Trace t = parse_trace_text(test::lagging_gpu_trace());
  TraceIndex index{t};
  StreamReport r = stream_report(index);
  const StreamRow& stream(int64_t s) const {
    for (const auto& row : r.streams)
      if (row.stream == s) return row;
    throw std::runtime_error("no stream " + std::to_string(s));
  }
};

TEST_F(LaggingGpu, NoGpuWorkIsClippedAway) {
  // The CPU's steps end at 400; the GPU works on until 550, and a kernel ran at [30, 40].
  EXPECT_EQ(index.window_start, 100 * us) << "the profiled window stays the steps (svg's origin)";
  EXPECT_EQ(index.window_end, 400 * us);
  EXPECT_EQ(r.window_start, 30 * us);
  EXPECT_EQ(r.window_end, 550 * us);
  ASSERT_EQ(r.streams.size(), 3u);
  EXPECT_EQ(stream(7).busy_ns, 310 * us);  // [30,40] + [250,550]
  EXPECT_EQ(stream(7).work_items, 7);
  EXPECT_EQ(stream(8).busy_ns, 20 * us);
  EXPECT_EQ(stream(9).busy_ns, 10 * us);
  for (const auto& row : r.streams) {
    EXPECT_EQ(row.window_ns, 520 * us);
    EXPECT_EQ(row.busy_ns + row.host_wait_ns + row.kernel_wait_ns + row.other_idle_ns, 520 * us);
  }
}

TEST_F(LaggingGpu, GpuBusyIsTheUnionOverStreams) {
  // [30,40] + [220,230] + [250,550]; the copy [420,440] ran beside stream 7's [400,450].
  EXPECT_EQ(r.busy_ns, 320 * us);
  EXPECT_EQ(r.overlap_ns, 20 * us);
  EXPECT_DOUBLE_EQ(r.busy_share(), 320.0 / 520.0);
}

TEST_F(LaggingGpu, PerStepFiguresBothWays) {
  ASSERT_EQ(r.steps.size(), 3u);
  struct Want {
    int64_t launched_busy, launched_items, launched_kernels, to_gpu_end, wall_busy, wall_items;
  };
  // Launched: each step's two kernels (50 us each) run 1.5 steps later, done 250 us after the
  // step starts; step 2 also launched the copy and owns the orphan (no launch: by its start).
  // In wall time: step 1 saw no GPU work, step 2 the orphan and [250,300], step 3 [300,400].
  const Want want[] = {{100, 2, 2, 250, 0, 0}, {110, 4, 3, 250, 60, 2}, {100, 2, 2, 250, 100, 2}};
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(r.steps[k].step);
    EXPECT_EQ(r.steps[k].duration_ns, 100 * us);
    EXPECT_EQ(r.steps[k].launched_busy_ns, want[k].launched_busy * us);
    EXPECT_EQ(r.steps[k].launched_work_items, want[k].launched_items);
    EXPECT_EQ(r.steps[k].launched_kernels, want[k].launched_kernels);
    EXPECT_EQ(r.steps[k].to_gpu_end_ns, want[k].to_gpu_end * us);
    EXPECT_EQ(r.steps[k].busy_ns, want[k].wall_busy * us);
    EXPECT_EQ(r.steps[k].kernels, want[k].wall_items);
  }
}

TEST_F(LaggingGpu, WorkOutsideEveryStepAndWithoutALaunchIsCountedApart) {
  EXPECT_EQ(r.outside_steps_work_items, 1);  // warmup, launched at 20
  EXPECT_EQ(r.outside_steps_busy_ns, 10 * us);
  EXPECT_EQ(r.without_launch_work_items, 1);  // orphan
}

TEST_F(LaggingGpu, SummarySaysTheTailAndTheUnion) {
  const Summary m = summarize(index);
  ASSERT_TRUE(m.work_items_per_step.has_value());
  EXPECT_EQ(*m.work_items_per_step, 2) << "launched per step: 2, 4, 2";
  const std::string text = explain(index);
  EXPECT_NE(text.find("GPU busy 61.5% of the window (any stream"), std::string::npos) << text;
  EXPECT_NE(text.find("two or more at once 3.8%"), std::string::npos) << text;
  EXPECT_NE(text.find("the GPU ran 150 us past the last step's CPU end"), std::string::npos) << text;
  EXPECT_NE(text.find("busy 100 us, its last item done 150 us after the step's CPU end"),
            std::string::npos) << text;
  EXPECT_NE(text.find("1 GPU work item (10.0 us busy) belongs to no step"), std::string::npos) << text;
}

TEST_F(LaggingGpu, SvgStepWindowShowsTheStepsGpuTail) {
  int64_t from = 0, to = 0;
  ASSERT_TRUE(step_window(index, 0, from, to));
  EXPECT_EQ(from, 100 * us);
  EXPECT_EQ(to, 350 * us) << "step 1's second kernel ends at 350";
  ASSERT_TRUE(step_window(index, 2, from, to));
  EXPECT_EQ(to, 550 * us);
}

TEST(TwoStreams, GpuBusyIsTheUnionAndTheOverlapIsSaid) {
  const Trace t = parse_trace_text(test::two_stream_trace());
  const TraceIndex index(t);
  const StreamReport r = stream_report(index);
  ASSERT_EQ(r.streams.size(), 2u);
  EXPECT_EQ(r.window_start, 0);
  EXPECT_EQ(r.window_end, 170 * us);
  EXPECT_EQ(r.streams[0].busy_ns, 100 * us);
  EXPECT_EQ(r.streams[1].busy_ns, 110 * us);
  EXPECT_EQ(r.busy_ns, 160 * us) << "[0,150] + [160,170]";
  EXPECT_EQ(r.overlap_ns, 50 * us) << "[50,100]";
  const std::string text = explain(index);
  EXPECT_NE(text.find("GPU busy 94.1% of the window (any stream"), std::string::npos) << text;
  EXPECT_NE(text.find("stream 7 58.8%, stream 8 64.7%"), std::string::npos) << text;
}

}  // namespace
}  // namespace pil::trace
