#include "harness/options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "base/command_line.h"

namespace pil {

namespace {

/// A bad flag value: the message names the flag, the value and what is allowed.
struct BadValue {
  std::string message;
};

int64_t whole_number(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  if (const std::string problem = whole_number_problem(text, min, max, value); !problem.empty())
    throw BadValue{flag + ": " + problem};
  return value;
}

template <typename T>
T one_of(const std::string& flag, const std::string& text,
         const std::vector<std::pair<std::string, T>>& choices) {
  std::vector<std::string> names;
  for (const auto& choice : choices) names.push_back(choice.first);
  size_t i = 0;
  if (const std::string problem = choice_problem(text, names, i); !problem.empty()) throw BadValue{flag + ": " + problem};
  return choices[i].second;
}

/// The message for the first word the parser did not take: a flag the lesson does not have
/// (with the nearest of its flags, where one is a typo away), or a value with no flag before it.
std::string not_expected(const std::string& word, const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* opt : app.get_options())
    for (const auto& n : opt->get_lnames()) flags.push_back("--" + n);
  return word_not_taken(word, flags, "this lesson", "the flags --help lists",
                        "the flags --help lists, each with its value");
}

}  // namespace

ParsedArgs parse_options(const LessonInfo& lesson, int argc, const char* const argv[]) {
  ParsedArgs result;
  Options& o = result.options;
  o.size = lesson.default_size;
  o.out_dir = "traces/" + lesson.name;
  for (const auto& f : lesson.flags) o.extra[f.name] = f.default_value;

  std::string variant_names;
  for (const auto& v : lesson.variants) variant_names += (variant_names.empty() ? "" : "|") + v.name;

  // Every value is taken as text and checked below, so each message can say what is allowed.
  // The defaults shown are Options' own.
  std::string device = "auto", dtype = "auto", size = std::to_string(o.size), variant,
              wait = std::to_string(o.wait), warmup = std::to_string(o.warmup),
              active = std::to_string(o.active), warmup_calls = std::to_string(o.warmup_calls),
              out = o.out_dir, row_limit = std::to_string(o.row_limit), sort,
              seed = std::to_string(o.seed), profile_memory = lesson.profile_memory ? "on" : "off",
              profiler = o.profiler ? "on" : "off", record_shapes = o.record_shapes ? "on" : "off",
              verify = "sample";
  bool list = false;
  CLI::App app{lesson.name + ": " + lesson.description, lesson.name};
  app.set_help_flag("-h,--help", "Print this help and exit");
  // A flag given twice is refused below (CLI11's own words, "At Most 1 required but received 2",
  // would not say which values or what is allowed): keep the last while parsing, count after.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--device", device, "auto|cpu|cuda (auto: CUDA when a GPU is usable)")
      ->capture_default_str();
  app.add_option("--dtype", dtype, "auto|fp32|bf16|fp16 (auto: bf16 on a GPU, fp32 on the CPU)")
      ->capture_default_str();
  const std::string cpu_size = lesson.default_size_cpu > 0 && lesson.default_size_cpu != lesson.default_size
                                   ? ", " + std::to_string(lesson.default_size_cpu) + " on the CPU"
                                   : "";
  app.add_option("--size", size,
                 lesson.size_help + " (1 to " + std::to_string(lesson.max_size) + "; default " + size +
                     cpu_size + ")");
  app.add_option("--variant", variant, variant_names + "|all (default: " +
                                           lesson.variants.front().name + ")");
  app.add_flag("--list", list,
               "List the variants and exit; with --device, only those that would run there "
               "(for --dtype, --size and the lesson's flags)");
  app.add_option("--wait", wait, "Profiler schedule: steps run before the profiler starts")
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Profiler schedule: steps profiled and thrown away")
      ->capture_default_str();
  app.add_option("--active", active, "Profiler schedule: steps recorded (at least 1)")
      ->capture_default_str();
  app.add_option("--warmup-calls", warmup_calls, "Plain calls before the schedule starts")
      ->capture_default_str();
  // The file name's example: the lesson's first own flag at another value (04: "_seq256").
  std::string named = "named VARIANT_DEVICE_DTYPE_nSIZE";
  if (!lesson.flags.empty()) {
    const LessonFlag& f = lesson.flags.front();
    const int64_t other = !f.choices.empty() ? (f.default_value == 0 ? 1 : 0)
                          : f.default_value * 2 <= f.max ? f.default_value * 2
                                                         : f.min;
    named += " and each of the lesson's flags set away from its default (" +
             flags_in_name({f}, {}, {{f.name, other}}, false) + ")";
  }
  app.add_option("--out", out, "Folder for the trace, table and summary, " + named)->capture_default_str();
  app.add_option("--row-limit", row_limit, "Rows shown in the operator table")
      ->capture_default_str();
  app.add_option("--sort", sort, "Table order: " + trace::sort_key_names() +
                                     " (default: device_time_total on a GPU, else cpu_time_total)");
  app.add_option("--seed", seed, "Seed for the random inputs")->capture_default_str();
  std::vector<std::string> expect;
  app.add_option("--expect", expect,
                 "A prediction checked against the trace, yes or no with the figure measured; "
                 "repeatable: " + trace::expectation_keys())
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--profiler", profiler,
                 "on|off: off runs the steps with NVTX ranges but no in-process profiler (no trace "
                 "or table), for Nsight Systems or Nsight Compute")
      ->capture_default_str();
  app.add_option("--profile-memory", profile_memory,
                 "on|off: record allocations and frees (memory columns, peak per device)")
      ->capture_default_str();
  app.add_option("--verify", verify,
                 "sample|full: the float64 check of a seeded sample of rows (where the lesson's rows are "
                 "independent; the whole result still checked for NaN, infinity and all zeros), or of "
                 "the whole result")
      ->capture_default_str();
  app.add_option("--record-shapes", record_shapes,
                 "on|off: record each operator's input shapes (torch.profiler's record_shapes)")
      ->capture_default_str();
  std::map<std::string, std::string> extra_text;
  for (const auto& f : lesson.flags) {
    std::string& text = extra_text[f.name];
    text = flag_text(f, f.default_value);
    std::string allowed;
    for (const auto& c : f.choices) allowed += (allowed.empty() ? "" : "|") + c;
    const auto cpu = lesson.flag_defaults_cpu.find(f.name);
    const std::string on_cpu = cpu == lesson.flag_defaults_cpu.end() ? ""
                               : "; " + std::to_string(cpu->second) + " on the CPU";
    app.add_option(f.name, text, f.help + (allowed.empty() ? "" : " (" + allowed + ")") +
                                     " [default: " + text + on_cpu + "]");
  }

  // A value flag given without its value ("--size" last, before another flag, or "--size=") is
  // passed on as "" and refused by its own check, which says what is allowed (CLI11 would say
  // "1 required TEXT missing", or take the default for "--size=").
  std::set<std::string> takes_value;
  for (const CLI::Option* opt : app.get_options())
    if (opt->get_expected_max() > 0)
      for (const auto& n : opt->get_lnames()) takes_value.insert("--" + n);
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::vector<size_t> lacking = flags_without_value(args, takes_value);
  for (auto place = lacking.rbegin(); place != lacking.rend(); ++place) {
    if (args[*place].back() == '=') args[*place].pop_back();
    args.insert(args.begin() + std::ptrdiff_t(*place) + 1, "");
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    result.text = app.help();
    return result;
  } catch (const CLI::ExtrasError& e) {
    // CLI11 would list every word it did not take, last first ("... not expected: 4 --sizes"):
    // name the first, and the flag it was likely meant to be.
    result.exit_code = 2;
    const std::vector<std::string> left = app.remaining();
    result.text = lesson.name + ": error: " +
                  (left.empty() ? std::string(e.what()) + " (see --help)" : not_expected(left.front(), app));
    return result;
  } catch (const CLI::ParseError& e) {
    result.exit_code = 2;
    result.text = lesson.name + ": error: " + e.what() + " (see --help)";
    return result;
  }

  const auto given = [&](const char* name) { return app.get_option(name)->count() > 0; };
  try {
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->get_expected_max() != 1 || opt->count() < 2) continue;
      throw BadValue{given_more_than_once("--" + opt->get_lnames().front(), opt->results())};
    }
    o.device = one_of<DeviceChoice>("--device", device,
                                    {{"auto", DeviceChoice::Auto},
                                     {"cpu", DeviceChoice::Cpu},
                                     {"cuda", DeviceChoice::Cuda}});
    o.dtype = one_of<DTypeChoice>("--dtype", dtype,
                                  {{"auto", DTypeChoice::Auto},
                                   {"fp32", DTypeChoice::F32},
                                   {"bf16", DTypeChoice::BF16},
                                   {"fp16", DTypeChoice::F16}});
    o.size = whole_number("--size", size, 1, lesson.max_size);
    if (!given("--variant")) {
      o.variants = {lesson.variants.front().name};
    } else {
      std::vector<std::pair<std::string, std::string>> names;
      for (const auto& v : lesson.variants) names.emplace_back(v.name, v.name);
      names.emplace_back("all", "all");
      const std::string chosen = one_of<std::string>("--variant", variant, names);
      if (chosen != "all") o.variants = {chosen};
      else
        for (const auto& v : lesson.variants) o.variants.push_back(v.name);
    }
    constexpr int64_t kMaxSteps = 1000;
    o.wait = int(whole_number("--wait", wait, 0, kMaxSteps));
    o.warmup = int(whole_number("--warmup", warmup, 0, kMaxSteps));
    o.active = int(whole_number("--active", active, 1, kMaxSteps));
    o.warmup_calls = int(whole_number("--warmup-calls", warmup_calls, 0, kMaxSteps));
    o.row_limit = int(whole_number("--row-limit", row_limit, 1, 100000));
    o.seed = uint64_t(whole_number("--seed", seed, 0, std::numeric_limits<int64_t>::max()));
    o.profile_memory = one_of<bool>("--profile-memory", profile_memory, {{"on", true}, {"off", false}});
    o.profiler = one_of<bool>("--profiler", profiler, {{"on", true}, {"off", false}});
    o.record_shapes = one_of<bool>("--record-shapes", record_shapes, {{"on", true}, {"off", false}});
    o.verify_full = one_of<bool>("--verify", verify, {{"sample", false}, {"full", true}});
    for (const CLI::Option* opt : app.get_options())
      if (opt->count() > 0 && !opt->get_lnames().empty()) o.given.insert("--" + opt->get_lnames().front());
    if (!o.profiler && !expect.empty())
      throw BadValue{"--expect " + expect.front() + ": needs a trace; allowed with --profiler on"};
    for (const auto& e : expect) {
      if (e.empty()) throw BadValue{"--expect: no value given; allowed: " + trace::expectation_keys()};
      try {
        o.expect.push_back(trace::parse_expectation(e));
      } catch (const std::invalid_argument& bad) {
        throw BadValue{bad.what()};
      }
    }
    if (given("--sort")) {
      o.sort = trace::parse_sort_key(sort);
      if (!o.sort)
        throw BadValue{"--sort: " + (sort.empty() ? "no value given" : "unknown key '" + sort + "'") +
                       "; allowed: " + trace::sort_key_names()};
    }
    if (out.empty()) throw BadValue{"--out: no value given; allowed: a folder to write into"};
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec))
      throw BadValue{"--out: " + out + " exists and is not a folder; allowed: a folder to write into"};
    o.out_dir = out;
    for (const auto& f : lesson.flags) {
      const std::string& text = extra_text.at(f.name);
      if (f.choices.empty()) {
        o.extra[f.name] = whole_number(f.name, text, f.min, f.max);
      } else {
        std::vector<std::pair<std::string, int64_t>> words;
        for (size_t i = 0; i < f.choices.size(); ++i) words.emplace_back(f.choices[i], int64_t(i));
        o.extra[f.name] = one_of<int64_t>(f.name, text, words);
      }
    }
  } catch (const BadValue& bad) {
    result.exit_code = 2;
    result.text = lesson.name + ": error: " + bad.message;
    return result;
  }
  result.run = !list;
  result.list = list;
  return result;
}

std::string flag_text(const LessonFlag& flag, int64_t value) {
  return flag.choices.empty() ? std::to_string(value) : flag.choices.at(size_t(value));
}

std::string flags_in_name(const std::vector<LessonFlag>& flags, const std::map<std::string, int64_t>& cpu_defaults,
                          const std::map<std::string, int64_t>& values, bool on_cpu) {
  std::string name;
  for (const auto& f : flags) {
    const auto value = values.find(f.name);
    if (value == values.end()) continue;
    const auto cpu = cpu_defaults.find(f.name);
    const int64_t default_here = on_cpu && cpu != cpu_defaults.end() ? cpu->second : f.default_value;
    if (value->second == default_here) continue;
    name += "_" + f.name.substr(2) + (f.choices.empty() ? "" : "-") + flag_text(f, value->second);
  }
  return name;
}

}  // namespace pil
