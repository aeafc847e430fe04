#pragma once
/// \file
/// torch.profiler's schedule, in C++: which steps the profiler skips, waits through, warms up on
/// and records. The same arithmetic as `torch.profiler.schedule` (torch/profiler/profiler.py),
/// so a step number means the same thing in a Python trace and in ours.
/// Needs no LibTorch: unit-tested on its own.
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>

namespace pil::profiler {

/// What the profiler does during a step: `torch.profiler.ProfilerAction`.
enum class ProfilerAction {
  NONE,             ///< profiler off (a skipped or wait step)
  WARMUP,           ///< profiler set up (its start-up cost paid here), nothing kept
  RECORD,           ///< recorded
  RECORD_AND_SAVE,  ///< recorded; when the step ends, the trace is ready (on_trace_ready)
};

/// True for the actions that record.
inline bool records(ProfilerAction a) {
  return a == ProfilerAction::RECORD || a == ProfilerAction::RECORD_AND_SAVE;
}

/// `torch.profiler.schedule(wait=, warmup=, active=, repeat=, skip_first=)`: skip `skip_first`
/// steps, then cycles of `wait` steps off, `warmup` steps warming up and `active` steps recorded,
/// the last of each cycle RECORD_AND_SAVE; `repeat` cycles (0: as long as steps come).
class Schedule {
 public:
  /// Throws std::invalid_argument, naming the bad value and what is allowed, as Python does:
  /// wait, warmup, repeat, skip_first >= 0 and active > 0.
  Schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat = 0, int64_t skip_first = 0)
      : wait_(wait), warmup_(warmup), active_(active), repeat_(repeat), skip_first_(skip_first) {
    if (wait < 0 || warmup < 0 || active <= 0 || repeat < 0 || skip_first < 0)
      throw std::invalid_argument(
          "pil::profiler::schedule: invalid arguments: wait=" + std::to_string(wait) +
          " (need >= 0), warmup=" + std::to_string(warmup) + " (need >= 0), active=" +
          std::to_string(active) + " (need > 0), repeat=" + std::to_string(repeat) +
          " (need >= 0), skip_first=" + std::to_string(skip_first) + " (need >= 0)");
  }

  /// The action for step `step` (0-based, as torch.profiler's step_num).
  ProfilerAction operator()(int64_t step) const {
    if (step < 0)
      throw std::invalid_argument("pil::profiler::schedule: step must be >= 0, got " +
                                  std::to_string(step));
    if (step < skip_first_) return ProfilerAction::NONE;
    step -= skip_first_;
    if (repeat_ > 0 && step >= repeat_ * cycle()) return ProfilerAction::NONE;
    const int64_t mod = step % cycle();
    if (mod < wait_) return ProfilerAction::NONE;
    if (mod < wait_ + warmup_) return ProfilerAction::WARMUP;
    return mod < cycle() - 1 ? ProfilerAction::RECORD : ProfilerAction::RECORD_AND_SAVE;
  }

  int64_t wait() const { return wait_; }
  int64_t warmup() const { return warmup_; }
  int64_t active() const { return active_; }
  int64_t repeat() const { return repeat_; }
  int64_t skip_first() const { return skip_first_; }
  /// Steps in one cycle: wait + warmup + active.
  int64_t cycle() const { return wait_ + warmup_ + active_; }
  /// Steps until the last cycle has been saved: skip_first + repeat × cycle; 0 when repeat is 0
  /// (the cycles go on as long as steps come).
  int64_t total_steps() const { return repeat_ > 0 ? skip_first_ + repeat_ * cycle() : 0; }

 private:
  int64_t wait_, warmup_, active_, repeat_, skip_first_;
};

/// `torch.profiler.schedule(...)`, with Python's argument order, and Python's warning on stderr
/// for warmup 0 ("Profiler won't be using warmup, this can skew profiler results": the first
/// recorded step then pays the profiler's start-up; lesson 01 measures it).
inline Schedule schedule(int64_t wait, int64_t warmup, int64_t active, int64_t repeat = 0,
                         int64_t skip_first = 0) {
  Schedule s(wait, warmup, active, repeat, skip_first);
  if (warmup == 0)
    std::cerr << "pil::profiler: warning: Profiler won't be using warmup, this can skew profiler "
                 "results\n";
  return s;
}

}  // namespace pil::profiler
