#include "trace/expect.h"

#include "trace/text_table.h"
#include "base/command_line.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace pil::trace {
namespace {

struct KeyHelp {
  const char* key;
  const char* form;
  const char* meaning;
};
constexpr KeyHelp kKeys[] = {
    {"steps", "steps=N", "profiled steps in the trace"},
    {"kernels", "kernels=N", "GPU kernels per profiled step (median over steps)"},
    {"calls", "calls:NAME=N", "calls of operator or range NAME per profiled step"},
    {"top-op", "top-op=NAME", "the operator with the most self CPU time"},
    {"peak-range", "peak-range=NAME", "the named range where memory peaked (GPU memory if any)"},
};

std::string per_step(double v) {
  char buf[32];
  if (v == double(int64_t(v)))
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

std::string expectation_keys() {
  std::string out;
  for (const auto& k : kKeys) out += (out.empty() ? "" : ", ") + std::string(k.form);
  return out;
}

Expectation parse_expectation(std::string_view text) {
  Expectation e;
  e.text = std::string(text);
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size())
    throw std::invalid_argument("--expect " + e.text + ": not KEY=VALUE; allowed: " + expectation_keys());
  std::string key(text.substr(0, eq));
  e.value = std::string(text.substr(eq + 1));
  if (key.rfind("calls:", 0) == 0) {
    e.arg = key.substr(6);
    key = "calls";
    if (e.arg.empty())
      throw std::invalid_argument("--expect " + e.text + ": calls needs a name (calls:aten::mm=3)");
  }
  const bool known = std::any_of(std::begin(kKeys), std::end(kKeys), [&](const KeyHelp& k) { return key == k.key; });
  if (!known)
    throw std::invalid_argument("--expect " + e.text + ": unknown key '" + key + "'; allowed: " + expectation_keys());
  if (key == "steps" || key == "kernels" || key == "calls") {
    if (const std::string why = whole_number_problem(e.value, 0, std::numeric_limits<int64_t>::max(), e.count);
        !why.empty())
      throw std::invalid_argument("--expect " + e.text + ": " + key + ": " + why);
  }
  e.key = key;
  return e;
}

std::string ExpectAnswer::line() const {
  return "expect " + text + ": " + (yes ? "yes" : "no") + " (measured " + measured + ")";
}

ExpectAnswer check_expectation(const TraceIndex& index, const Expectation& e) {
  const Trace& t = index.trace();
  ExpectAnswer a;
  a.text = e.text;
  const size_t steps = index.steps.size();
  const std::string over =
      steps ? std::to_string(steps) + (steps == 1 ? " profiled step" : " profiled steps") : "the whole trace";
  const int64_t want = e.count;

  if (e.key == "steps") {
    a.measured = std::to_string(steps);
    a.yes = int64_t(steps) == want;
  } else if (e.key == "kernels") {
    // A kernel counts for the step its launch call ran in (a GPU may run it after the step).
    std::vector<int64_t> per(std::max<size_t>(steps, 1), 0);
    int64_t total = 0;
    for (size_t i = 0; i < t.events.size(); ++i) {
      if (t.events[i].category != Category::Kernel) continue;
      ++total;
      const long k = steps ? index.step_of_work(i) : 0;
      if (k >= 0) per[size_t(k)] += 1;
    }
    if (total == 0) {
      a.measured = index.device_work().empty()
                       ? "0: no kernels in the trace (a CPU run has none; count operators with calls:NAME)"
                       : "0: no kernels in the trace (its GPU work is copies and sets)";
      a.yes = want == 0;
    } else {
      const double median = DurationStats::of(per).median;
      a.measured = steps ? per_step(median) + " per step, the median over " + over
                         : std::to_string(total) + " in the whole trace, which has no profiled steps";
      a.yes = median == double(want);
    }
  } else if (e.key == "calls") {
    const KeyAverage* r = index.key_averages().find(e.arg);
    const double calls = r ? double(r->calls) / double(std::max<size_t>(steps, 1)) : 0.0;
    // Without steps, the trace's count is the figure ("15 per step: 15 calls in the whole trace"
    // said a step there was none of).
    a.measured = !r     ? "0: no operator or range named " + e.arg + " in the trace"
                 : steps ? per_step(calls) + " per step: " + std::to_string(r->calls) +
                               (r->calls == 1 ? " call in " : " calls in ") + over
                         : std::to_string(r->calls) + (r->calls == 1 ? " call" : " calls") +
                               " in the whole trace, which has no profiled steps";
    a.yes = calls == double(want);
  } else if (e.key == "top-op") {
    // An operator: a name in a namespace (aten::mm, torchvision::nms, a custom op's), not a
    // named range (an annotation's category, or, in old traces that file every slice as an
    // "Operator", a name without one: record_function("model_inference")).
    const std::vector<const KeyAverage*> ranges = named_range_rows(index);
    const KeyAverage* top = nullptr;
    for (const auto& r : index.key_averages().rows)
      if (!r.device_work && !is_step_row(r.name) && r.name.find("::") != std::string::npos &&
          std::find(ranges.begin(), ranges.end(), &r) == ranges.end() && (!top || r.self_cpu_ns > top->self_cpu_ns))
        top = &r;
    a.measured = top ? top->name + ", " + format_duration(top->self_cpu_ns) + " self CPU" : "no operators";
    a.yes = top && top->name == e.value;
    // A prediction of a range or a CUDA call (summary's "most self CPU time" counts them too)
    // is told why it is no, not only that it is.
    const KeyAverage* named = index.key_averages().find(e.value);
    const bool range = named && std::find(ranges.begin(), ranges.end(), named) != ranges.end();
    if (!a.yes && (range || e.value.find("::") == std::string::npos))
      a.measured += std::string("; ") + e.value + " is " +
                    (range ? "a named range" : named ? "no operator (a CUDA call or a range)" : "no operator's name") +
                    ": top-op compares operators alone, names in a namespace such as aten::mm";
  } else if (e.key == "peak-range") {
    const MemoryRow* pick = main_memory_row(index.memory());
    if (!pick) {
      a.measured = "no memory events (run with --profile-memory on)";
    } else if (pick->peak_growth <= 0) {
      a.measured = "memory never rose above what was held when recording began";
    } else {
      a.measured = (pick->peak_range.empty() ? "outside any range" : "`" + pick->peak_range + "`") + ", " +
                   format_bytes(pick->peak_growth) + " on " + device_label(*pick);
      a.yes = pick->peak_range == e.value;
    }
  }
  return a;
}

}  // namespace pil::trace
