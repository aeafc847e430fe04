#pragma once
/// \file
/// The flags every lesson shares, parsed and checked before anything runs or is written.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trace/expect.h"
#include "trace/key_averages.h"

namespace pil {

enum class DeviceChoice { Auto, Cpu, Cuda };
enum class DTypeChoice { Auto, F32, BF16, F16 };

/// A flag of one lesson's own (--in-features 32, --bias on|off), beside the shared ones.
struct LessonFlag {
  std::string name;   ///< "--in-features"
  std::string help;
  int64_t default_value = 0;
  int64_t min = 1, max = int64_t(1) << 20;
  /// For a choice flag ("on", "off"): the allowed words; the value is the word's index.
  std::vector<std::string> choices;
};

/// What a lesson tells the parser about itself.
struct LessonInfo {
  std::string name;         ///< "01_matmul_add": also the default output folder `traces/NAME`
  std::string description;  ///< one line for --help
  int64_t default_size = 64;
  int64_t max_size = 65536;
  struct Variant {
    std::string name, summary;
  };
  std::vector<Variant> variants;  ///< the first one is the default
  std::string size_help = "Problem size N";  ///< what --size means in this lesson
  std::vector<LessonFlag> flags;             ///< the lesson's own flags
  bool profile_memory = false;               ///< --profile-memory's default
  /// The defaults on the CPU, where they differ (a shape a CPU runs in seconds): --size (0: the
  /// same) and the lesson's own flags by name. Said in --help; applied by the lesson runner once
  /// the device is known, to the flags not given.
  int64_t default_size_cpu = 0;
  std::map<std::string, int64_t> flag_defaults_cpu;
};

/// The shared flags, checked. Defaults follow the "Profiling in PyTorch" series.
struct Options {
  DeviceChoice device = DeviceChoice::Auto;
  DTypeChoice dtype = DTypeChoice::Auto;  ///< auto: bf16 on a GPU, fp32 on the CPU
  int64_t size = 64;
  std::vector<std::string> variants;      ///< one name, or every variant for --variant all
  int wait = 1, warmup = 1, active = 3;   ///< the profiler schedule, in steps
  int warmup_calls = 3;                   ///< plain calls before the profiler starts
  std::string out_dir;                    ///< default `traces/LESSON`
  int row_limit = 15;
  std::optional<trace::SortKey> sort;     ///< default: device total on a GPU, CPU total on the CPU
  uint64_t seed = 0;
  bool profile_memory = false;            ///< record allocations and frees in the trace
  bool record_shapes = true;              ///< record each operator's input shapes (as Python's record_shapes)
  /// Off: no in-process profiler (no trace, no table), NVTX ranges only, so an outside profiler
  /// (Nsight Systems, Nsight Compute) can attach; CUPTI takes one subscriber.
  bool profiler = true;
  std::vector<trace::Expectation> expect; ///< predictions checked after the run ("kernels=5")
  /// --verify full: the whole result against float64. Off (sample, the default): where the
  /// lesson's rows are independent, a seeded sample of rows, the whole result still checked for
  /// NaN, infinity and all zeros.
  bool verify_full = false;
  std::map<std::string, int64_t> extra;   ///< the lesson's own flags by name ("--bias" -> 1)
  std::set<std::string> given;            ///< the flags given on the command line ("--size")

  /// A lesson flag's value (for a choice flag, the index of the word given).
  int64_t flag(const std::string& name) const { return extra.at(name); }
};

/// What parsing decided: run with these options, list the variants for them (--list; the
/// lesson knows which would run), or exit now with this code and text (help goes to stdout with
/// code 0; a bad flag is one line for stderr with code 2).
struct ParsedArgs {
  bool run = false;
  bool list = false;  ///< --list, with the options checked (--device, --dtype, --size, flags)
  int exit_code = 0;
  std::string text;
  Options options;
};

ParsedArgs parse_options(const LessonInfo& lesson, int argc, const char* const argv[]);

/// A lesson flag's value as the command line writes it: the word of a choice flag, else the number.
std::string flag_text(const LessonFlag& flag, int64_t value);

/// What a run's file names add for the lesson's own flags (`flags`, not the shared ones): each
/// flag whose value is not its default on that device (`cpu_defaults` on the CPU, where the
/// lesson has one), in the lesson's order, "_seq128" for a number and "_tf32-off" for a word.
/// Runs that differ only by a lesson flag keep their own files; a run with the defaults adds nothing.
std::string flags_in_name(const std::vector<LessonFlag>& flags, const std::map<std::string, int64_t>& cpu_defaults,
                          const std::map<std::string, int64_t>& values, bool on_cpu);

}  // namespace pil
