// The schedule's step accounting, as torch.profiler.schedule(wait, warmup, active).
#include "harness/schedule.h"

#include <gtest/gtest.h>

#include <vector>

namespace pil {
namespace {

std::vector<StepAction> actions(Schedule s) {
  std::vector<StepAction> out;
  for (int i = 0; i < s.steps(); ++i) out.push_back(s.action(i));
  return out;
}

TEST(Schedule, SeriesDefaultIsWaitWarmupThenThreeRecordedSteps) {
  const Schedule s{1, 1, 3};
  EXPECT_EQ(s.steps(), 5);
  EXPECT_EQ(actions(s), (std::vector<StepAction>{StepAction::None, StepAction::Warmup,
                                                 StepAction::Record, StepAction::Record,
                                                 StepAction::RecordAndSave}));
}

TEST(Schedule, OnlyActiveStepsRecordAndTheLastOneSaves) {
  for (int wait : {0, 2})
    for (int warmup : {0, 3})
      for (int active : {1, 4}) {
        const Schedule s{wait, warmup, active};
        int recorded = 0, saved = 0, warm = 0;
        for (StepAction a : actions(s)) {
          recorded += Schedule::records(a);
          saved += a == StepAction::RecordAndSave;
          warm += a == StepAction::Warmup;
        }
        EXPECT_EQ(recorded, active);
        EXPECT_EQ(saved, 1);
        EXPECT_EQ(warm, warmup);
        EXPECT_EQ(s.action(s.steps() - 1), StepAction::RecordAndSave);
      }
}

TEST(Schedule, StepsOutsideTheScheduleDoNothing) {
  const Schedule s{1, 1, 1};
  EXPECT_EQ(s.action(-1), StepAction::None);
  EXPECT_EQ(s.action(3), StepAction::None);
  EXPECT_EQ(s.action(100), StepAction::None);
}

}  // namespace
}  // namespace pil
