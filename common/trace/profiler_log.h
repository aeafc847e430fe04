#pragma once
/// \file
/// What the profiler logged while it recorded (Trace::ProfilerLog: Kineto's ERROR, WARNING and
/// INFO lists in the trace), read: its record counts, and the messages that say GPU events are
/// missing. `check` lists them; `summary` and `advise` say first when the GPU side is incomplete.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace pil::trace {

/// Kineto's "Record counts" line (Trace::ProfilerLog::record_counts), read: what it left out of the
/// trace or found wrong as it wrote it (libkineto's GenericActivityProfiler, its ErrorCounts).
/// Each count is -1 where the line does not give it (or gives no whole number).
struct ProfilerCounts {
  bool read = false;                  ///< the trace had the line, and some count in it read
  int64_t out_of_range = -1;          ///< "Out-of-range": records outside the recording window, left out
  int64_t blocklisted = -1;           ///< "Blocklisted runtime": runtime calls on its blocklist, left out
  int64_t invalid_correlations = -1;  ///< "Invalid ext correlations": links to operators it could not use
  int64_t out_of_order = -1;          ///< "CPU GPU out-of-order": GPU work starting before its runtime call
  int64_t unexpected = -1;            ///< "Unexpected CUDA events": records of a kind it did not know
  /// "CUPTI stopped early?" (2023 to 2026), later "GPU stopped early?": 1 when its GPU buffer ran
  /// full and it stopped recording GPU work; -1 where not given.
  int64_t stopped_early = -1;
};
ProfilerCounts profiler_counts(const std::string& record_counts);

/// A logged message without its "LEVEL:date pid:tid " head, its source after it:
/// "WARNING: Dropped 12 activity records (CuptiActivityApi.cpp:326)". One it cannot split, whole.
std::string profiler_message(const std::string& logged);

/// The profiler's errors and warnings (errors first, each as profiler_message gives it), sorted
/// in two: `gpu_loss`, those that say GPU events are missing from the trace (CUPTI not
/// initialised; records dropped; its GPU buffer full and recording stopped, in warm-up or in the
/// recording itself, "stopped by CUPTI" until 2026 and "stopped by GPU profiler" since; in a
/// trace without GPU work, `gpu_work` false, a CUPTI call refused for want of privileges: with
/// GPU work in the trace that refusal was of another CUPTI service, its counters), and the record
/// counts' line where it says the GPU side stopped early; `other`, the rest. Both empty for a
/// trace whose profiler logged nothing: Kineto wrote its log into the trace until July 2026
/// (pytorch/kineto #1460; its INFO list until April 2026, #1336), so a trace without the lists
/// says nothing either way.
struct ProfilerMessages {
  std::vector<std::string> gpu_loss, other;
};
ProfilerMessages profiler_messages(const Trace& t, bool gpu_work);

/// How summary and advise begin their line on a GPU side the profiler said is incomplete:
/// "the profiler logged that GPU events are missing (FIRST MESSAGE; N more)".
std::string gpu_loss_said(const std::vector<std::string>& gpu_loss);

}  // namespace pil::trace
