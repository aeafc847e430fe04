#pragma once
// Two data-parallel ranks of a CPU run in Kineto's format, small enough to work out by hand.
// Times in microseconds from baseTimeNanoseconds (the same base on both ranks); Gloo's slices on
// their own thread (tid 2), the operators on the main thread (tid 1).
//
//             step #1 [0,100)                          step #2 [100,200)
//   rank 0:   aten::mm [0,60)   gloo [50,90)           aten::mm [100,190)  gloo [150,195)
//             c10d::allreduce_ [95,97) (a call, not computation)
//   rank 1:   aten::mm [0,80)   gloo [80,95)           aten::mm [100,130)  gloo [120,196)
//
// Each gloo:all_reduce carries Input Dims [[1000]] of float: 4000 bytes.
// Worked out: step 1 — rank 0 compute 60, comm 40, overlap 10; rank 1 compute 80, comm 15,
// overlap 0; rank 1 started its collective last (80 vs 50): rank 0 waited 30, rank 1 is the
// slowest. Step 2 — rank 0 compute 90, comm 45, overlap 40; rank 1 compute 30, comm 76, overlap
// 10; rank 0 started last (150 vs 120): rank 1 waited 30, rank 0 is the slowest.
#include <fstream>
#include <string>

#include "trace/event.h"

namespace pil::test {

/// The steps' name prefix the trace kit takes: torch.profiler's `ProfilerStep#`, or the older
/// spelling where the kit still expects it (before the rename reaches this branch).
inline std::string step_prefix() {
  return trace::is_step_name("ProfilerStep#1") ? "ProfilerStep#" : "ProfileStep#";
}

/// Writes `text` to dir/name; returns the path.
inline std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

inline std::string synthetic_rank_trace(int rank, int world_size = 2, const std::string& run_id = "run1") {
  auto x = [&](const char* cat, const char* name, int tid, double ts, double dur, const std::string& args) {
    return std::string("  {\n    \"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
           "\", \"pid\": " + std::to_string(100 + rank) + ", \"tid\": " + std::to_string(tid) +
           ",\n    \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + ",\n    \"args\": {" +
           args + "}\n  }";
  };
  const std::string gloo_args = "\"External id\": 9, \"Input type\": [\"float\"], \"Input Dims\": [[1000]]";
  std::string events;
  auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
  add(x("user_annotation", (step_prefix() + "1").c_str(), 1, 0, 100, "\"External id\": 1"));
  add(x("user_annotation", (step_prefix() + "2").c_str(), 1, 100, 100, "\"External id\": 2"));
  if (rank == 0) {
    add(x("cpu_op", "aten::mm", 1, 0, 60, "\"External id\": 3"));
    add(x("user_annotation", "gloo:all_reduce", 2, 50, 40, gloo_args));
    add(x("cpu_op", "c10d::allreduce_", 1, 95, 2, "\"External id\": 4"));
    add(x("cpu_op", "aten::mm", 1, 100, 90, "\"External id\": 5"));
    add(x("user_annotation", "gloo:all_reduce", 2, 150, 45, gloo_args));
  } else {
    add(x("cpu_op", "aten::mm", 1, 0, 80, "\"External id\": 3"));
    add(x("user_annotation", "gloo:all_reduce", 2, 80, 15, gloo_args));
    add(x("cpu_op", "aten::mm", 1, 100, 30, "\"External id\": 5"));
    add(x("user_annotation", "gloo:all_reduce", 2, 120, 76, gloo_args));
  }
  return "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"gloo\", \"rank\": " + std::to_string(rank) +
         ", \"world_size\": " + std::to_string(world_size) + ", \"pil_run_id\": \"" + run_id +
         "\"},\n  \"baseTimeNanoseconds\": 1700000000000000000,\n  \"traceEvents\": [\n" + events + "\n  ]\n}\n";
}

}  // namespace pil::test
