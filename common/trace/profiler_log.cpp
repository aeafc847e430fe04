#include "trace/profiler_log.h"

#include <algorithm>
#include <string_view>

namespace pil::trace {

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

}  // namespace

// A message of the profiler that says GPU events are missing (profiler_gpu_loss): the phrases
// libkineto logs (init.cpp, CuptiActivityApi.cpp, GenericActivityProfiler.cpp) and CUPTI's
// error for a user without access to the GPU's counters.
bool says_gpu_loss(const std::string& m) {
  return contains(m, "CUPTI initialization failed") || contains(m, "INSUFFICIENT_PRIVILEGES") ||
         contains(m, "ERR_NVGPUCTRPERM") || (contains(m, "Dropped ") && contains(m, "activity records")) ||
         contains(m, "Exceeded max GPU buffer count") || contains(m, "CollectTrace stopped by GPU profiler");
}

// The profiler's messages: its errors, then its warnings.
std::vector<const std::string*> logged_messages(const Trace& t) {
  std::vector<const std::string*> out;
  for (const std::string& m : t.profiler_log.errors) out.push_back(&m);
  for (const std::string& m : t.profiler_log.warnings) out.push_back(&m);
  return out;
}

ProfilerCounts profiler_counts(const std::string& line) {
  ProfilerCounts c;
  const size_t at = line.find("Record counts: ");
  if (at == std::string::npos) return c;
  const std::string_view rest = std::string_view(line).substr(at);
  // "Label = N": the number after the label's " = ", or -1 where the label is not there.
  auto value = [&](std::string_view label) -> int64_t {
    const size_t k = rest.find(label);
    if (k == std::string_view::npos) return -1;
    size_t i = k + label.size();
    if (rest.substr(i, 3) != " = ") return -1;
    i += 3;
    int64_t n = 0;
    bool any = false;
    for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; ++i) n = n * 10 + (rest[i] - '0'), any = true;
    return any ? n : -1;
  };
  const int64_t range = value("Out-of-range"), blocked = value("Blocklisted runtime"),
                invalid = value("Invalid ext correlations"), order = value("CPU GPU out-of-order"),
                unexpected = value("Unexpected CUDA events");
  int64_t stopped = value("CUPTI stopped early?");
  if (stopped < 0) stopped = value("GPU stopped early?");  // libkineto's name since 2026
  if (range < 0 || blocked < 0) return c;  // not the line we know
  c.read = true;
  c.out_of_range = range;
  c.blocklisted = blocked;
  c.invalid_correlations = std::max<int64_t>(invalid, 0);
  c.out_of_order = std::max<int64_t>(order, 0);
  c.unexpected = std::max<int64_t>(unexpected, 0);
  c.stopped_early = stopped > 0;
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

std::vector<std::string> profiler_gpu_loss(const Trace& t) {
  std::vector<std::string> out;
  for (const std::string* m : logged_messages(t))
    if (says_gpu_loss(*m)) out.push_back(profiler_message(*m));
  if (profiler_counts(t.profiler_log.record_counts).stopped_early)
    out.push_back(profiler_message(t.profiler_log.record_counts));
  return out;
}

}  // namespace pil::trace
