#pragma once
/// \file
/// What the profiler logged while it recorded (Trace::ProfilerLog: Kineto's ERROR, WARNING and
/// INFO lists in the trace), read: its record counts, and the messages that say GPU events are
/// missing. `check` lists them; `summary` says when the GPU side is incomplete.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace pil::trace {

/// Kineto's "Record counts" line (Trace::ProfilerLog::record_counts), read: what it left out of the
/// trace or found wrong as it wrote it (libkineto's GenericActivityProfiler, its ErrorCounts).
struct ProfilerCounts {
  bool read = false;                  ///< the trace had the line, and it read
  int64_t out_of_range = 0;           ///< "Out-of-range": records outside the recording window, left out
  int64_t blocklisted = 0;            ///< "Blocklisted runtime": runtime calls on its blocklist, left out
  int64_t invalid_correlations = 0;   ///< "Invalid ext correlations": links to operators it could not use
  int64_t out_of_order = 0;           ///< "CPU GPU out-of-order": GPU work starting before its runtime call
  int64_t unexpected = 0;             ///< "Unexpected CUDA events": records of a kind it did not know
  bool stopped_early = false;         ///< "CUPTI stopped early? = 1" (later "GPU stopped early?")
};
ProfilerCounts profiler_counts(const std::string& record_counts);

/// A logged message without its "LEVEL:date pid:tid " head, its source after it:
/// "WARNING: Dropped 12 activity records (CuptiActivityApi.cpp:326)". One it cannot split, whole.
std::string profiler_message(const std::string& logged);

/// The profiler's own messages in the trace (Trace::ProfilerLog) that say GPU events are missing
/// from it, each as profiler_message gives it: CUPTI not initialised or not permitted, records
/// dropped, its GPU buffer full and the recording of GPU work stopped early (a logged message, or
/// the record counts' "stopped early? = 1"). Empty for a trace whose profiler said none of that.
std::vector<std::string> profiler_gpu_loss(const Trace& t);

/// True for a logged message that says GPU events are missing (profiler_gpu_loss's test).
bool says_gpu_loss(const std::string& message);

/// The profiler's messages, its errors then its warnings, as logged.
std::vector<const std::string*> logged_messages(const Trace& t);

}  // namespace pil::trace
