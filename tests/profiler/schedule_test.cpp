// The schedule's step accounting, as torch.profiler.schedule(wait, warmup, active, repeat,
// skip_first) computes it (torch/profiler/profiler.py).
#include "profiler/schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace pil::profiler {
namespace {

using A = ProfilerAction;

std::vector<A> actions(const Schedule& s, int steps) {
  std::vector<A> out;
  for (int i = 0; i < steps; ++i) out.push_back(s(i));
  return out;
}

TEST(Schedule, SeriesDefaultIsWaitWarmupThenThreeRecordedSteps) {
  const Schedule s = schedule(1, 1, 3, /*repeat=*/1);
  EXPECT_EQ(s.total_steps(), 5);
  EXPECT_EQ(actions(s, 6),
            (std::vector<A>{A::NONE, A::WARMUP, A::RECORD, A::RECORD, A::RECORD_AND_SAVE, A::NONE}));
}

TEST(Schedule, OnlyActiveStepsRecordAndTheLastOfEachCycleSaves) {
  for (int wait = 0; wait < 3; ++wait)
    for (int warmup = 0; warmup < 3; ++warmup)
      for (int active = 1; active < 4; ++active) {
        const Schedule s(wait, warmup, active, /*repeat=*/2);
        int recorded = 0, saved = 0, warm = 0;
        for (A a : actions(s, int(s.total_steps()) + 3)) {
          recorded += records(a);
          saved += a == A::RECORD_AND_SAVE;
          warm += a == A::WARMUP;
        }
        EXPECT_EQ(recorded, 2 * active);
        EXPECT_EQ(saved, 2);
        EXPECT_EQ(warm, 2 * warmup);
        EXPECT_EQ(s(s.total_steps() - 1), A::RECORD_AND_SAVE);
      }
}

TEST(Schedule, SkipFirstAndRepeatAsPython) {
  // Python: schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=2)
  const Schedule s = schedule(1, 1, 2, 2, 2);
  EXPECT_EQ(actions(s, 12),
            (std::vector<A>{A::NONE, A::NONE, A::NONE, A::WARMUP, A::RECORD, A::RECORD_AND_SAVE,
                            A::NONE, A::WARMUP, A::RECORD, A::RECORD_AND_SAVE, A::NONE, A::NONE}));
  EXPECT_EQ(s.total_steps(), 10);
}

TEST(Schedule, RepeatZeroCyclesForever) {
  const Schedule s = schedule(0, 0, 2);
  EXPECT_EQ(s.total_steps(), 0);
  EXPECT_EQ(s(1001), A::RECORD_AND_SAVE);
  EXPECT_EQ(s(1000), A::RECORD);
}

// Python's schedule() warns for warmup 0: the first recorded step then pays the start-up.
TEST(Schedule, WarmupZeroIsWarnedAsPythonWarns) {
  testing::internal::CaptureStderr();
  schedule(1, 0, 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "pil::profiler: warning: Profiler won't be using warmup, this can skew profiler results\n");
  testing::internal::CaptureStderr();
  schedule(0, 1, 2);
  const Schedule quiet(1, 0, 2);  // the class itself (the lessons' harness) says nothing
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(quiet(1), A::RECORD);
}

TEST(Schedule, BadArgumentsThrowNamingWhatIsAllowed) {
  try {
    schedule(1, 1, 0);
    FAIL() << "active=0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("active=0 (need > 0)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(schedule(-1, 1, 1), std::invalid_argument);
  EXPECT_THROW(schedule(1, -1, 1), std::invalid_argument);
  EXPECT_THROW(schedule(1, 1, 1, -1), std::invalid_argument);
  EXPECT_THROW(schedule(1, 1, 1, 0, -2), std::invalid_argument);
  EXPECT_THROW(schedule(1, 1, 1)(-1), std::invalid_argument);
}

}  // namespace
}  // namespace pil::profiler
