#pragma once
/// \file
/// The profiler schedule, as torch.profiler.schedule(wait, warmup, active) with repeat = 1:
/// `wait` steps run with the profiler off, `warmup` steps run with it prepared (its start-up
/// cost paid, events thrown away), `active` steps are recorded; the last one also saves.

namespace pil {

enum class StepAction {
  None,           ///< a wait step: profiler off
  Warmup,         ///< profiler prepared, nothing kept
  Record,         ///< recorded
  RecordAndSave,  ///< recorded, then the profiler stops and the trace is saved
};

struct Schedule {
  int wait = 1, warmup = 1, active = 3;

  /// Steps in one pass through the schedule.
  int steps() const { return wait + warmup + active; }

  /// What the profiler does during step `step` (0-based). Steps past the end are None.
  StepAction action(int step) const {
    if (step < 0 || step >= steps()) return StepAction::None;
    if (step < wait) return StepAction::None;
    if (step < wait + warmup) return StepAction::Warmup;
    return step == steps() - 1 ? StepAction::RecordAndSave : StepAction::Record;
  }

  static bool records(StepAction a) {
    return a == StepAction::Record || a == StepAction::RecordAndSave;
  }
};

}  // namespace pil
