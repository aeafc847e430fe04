#pragma once
/// \file
/// The machine-readable summary of one lesson run, written beside its trace as JSON.
#include <cstdint>
#include <string>
#include <vector>

#include "trace/key_averages.h"
#include "trace/reports.h"

namespace pil {

struct RunSummary {
  std::string lesson, variant;
  std::string libtorch_version;
  std::string device;       ///< "cpu" or "cuda"
  std::string device_name;  ///< CPU model or GPU name
  std::string dtype;
  int64_t size = 0;
  uint64_t seed = 0;
  /// The lesson's own flags as run (their CPU defaults applied on the CPU): a choice flag by its
  /// word, the others by number.
  struct Flag {
    std::string name;  ///< without the dashes: "seq", "tf32"
    int64_t value = 0;
    std::string word;  ///< a choice flag's word ("off"); empty for a number
  };
  std::vector<Flag> flags;
  int wait = 0, warmup = 0, active = 0, warmup_calls = 0;
  std::string result;       ///< PASSED or FAILED
  double max_abs_err = 0, max_rel_err = 0;
  int64_t mismatches = 0;
  std::string trace_path, table_path;
  /// Data-parallel runs: this process's rank, the ranks in all and the c10d backend
  /// (world_size 0: not data-parallel, and the three are left out of the JSON).
  int rank = 0, world_size = 0;
  std::string backend;
  struct Step {
    std::string name;
    int64_t cpu_ns = 0;
  };
  std::vector<Step> steps;  ///< the recorded ProfilerStep#N ranges, in order
  trace::KeyAverages operators;
  /// With --profile-memory on: per device, from the trace's memory events.
  std::vector<trace::MemoryRow> memory;
  /// On a GPU: the caching allocator's peak of bytes allocated over the schedule's steps.
  int64_t cuda_peak_allocated = -1;
};

/// The summary as pretty-printed JSON text.
std::string to_json(const RunSummary& s);

}  // namespace pil
