#include "trace/profiler_log.h"

#include <charconv>
#include <string_view>

namespace pil::trace {

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

// The phrases libkineto logs (init.cpp, CuptiActivityApi.cpp, GenericActivityProfiler.cpp and
// their earlier forms) and CUPTI's error for a user without access to the GPU's profiling.
bool says_gpu_loss(const std::string& m, bool gpu_work) {
  return contains(m, "CUPTI initialization failed") || (contains(m, "Dropped ") && contains(m, "activity records")) ||
         contains(m, "Exceeded max GPU buffer count") ||
         ((contains(m, "CollectTrace stopped by") || contains(m, "Warmup stopped by")) &&
          (contains(m, "stopped by CUPTI") || contains(m, "stopped by GPU profiler"))) ||
         (!gpu_work && contains(m, "INSUFFICIENT_PRIVILEGES"));
}

}  // namespace

ProfilerCounts profiler_counts(const std::string& line) {
  ProfilerCounts c;
  const size_t at = line.find("Record counts: ");
  if (at == std::string::npos) return c;
  const std::string_view rest = std::string_view(line).substr(at);
  // "Label = N": the whole number after the label's " = ", or -1 where the label is not there or
  // its value is no whole number int64_t holds.
  auto value = [&](std::string_view label) -> int64_t {
    const size_t k = rest.find(label);
    if (k == std::string_view::npos || rest.substr(k + label.size(), 3) != " = ") return -1;
    const char* from = rest.data() + k + label.size() + 3;
    int64_t n = -1;
    const auto [end, ec] = std::from_chars(from, rest.data() + rest.size(), n);
    return ec == std::errc() && end != from && n >= 0 ? n : -1;
  };
  c.out_of_range = value("Out-of-range");
  c.blocklisted = value("Blocklisted runtime");
  c.invalid_correlations = value("Invalid ext correlations");
  c.out_of_order = value("CPU GPU out-of-order");
  c.unexpected = value("Unexpected CUDA events");
  c.stopped_early = value("CUPTI stopped early?");
  if (c.stopped_early < 0) c.stopped_early = value("GPU stopped early?");  // libkineto's name since 2026
  for (int64_t n : {c.out_of_range, c.blocklisted, c.invalid_correlations, c.out_of_order, c.unexpected,
                    c.stopped_early})
    c.read = c.read || n >= 0;
  return c;
}

std::string profiler_message(const std::string& logged) {
  // "WARNING:2026-07-31 13:43:58 7535:7535 init.cpp:156] CUPTI initialization failed - ..."
  const size_t colon = logged.find(':'), close = logged.find("] ");
  if (colon == std::string::npos || close == std::string::npos || colon > close) return logged;
  const std::string level = logged.substr(0, colon);
  for (char ch : level)
    if (ch < 'A' || ch > 'Z') return logged;
  const size_t space = logged.rfind(' ', close);
  const std::string source = space != std::string::npos && space > colon ? logged.substr(space + 1, close - space - 1) : "";
  return level + ": " + logged.substr(close + 2) + (source.empty() ? "" : " (" + source + ")");
}

ProfilerMessages profiler_messages(const Trace& t, bool gpu_work) {
  ProfilerMessages out;
  for (const auto* list : {&t.profiler_log.errors, &t.profiler_log.warnings})
    for (const std::string& m : *list)
      (says_gpu_loss(m, gpu_work) ? out.gpu_loss : out.other).push_back(profiler_message(m));
  if (profiler_counts(t.profiler_log.record_counts).stopped_early > 0)
    out.gpu_loss.push_back(profiler_message(t.profiler_log.record_counts));
  return out;
}

std::string gpu_loss_said(const std::vector<std::string>& gpu_loss) {
  if (gpu_loss.empty()) return "";
  return "the profiler logged that GPU events are missing (" + gpu_loss.front() +
         (gpu_loss.size() > 1 ? "; " + std::to_string(gpu_loss.size() - 1) + " more" : std::string()) + ")";
}

}  // namespace pil::trace
