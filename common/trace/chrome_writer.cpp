#include "trace/chrome_writer.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <algorithm>

#include "base/atomic_file.h"
#include "trace/first_by_id.h"
#include "trace/text_table.h"  // trace_ts

namespace pil::trace {

const char* kineto_category(Category c) {
  for (const auto& n : kCategoryNames)
    if (n.category == c) return n.kineto;
  return "other";
}

namespace {

std::string quoted(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

}  // namespace

void write_chrome_trace(const Trace& t, std::ostream& out, const WriterOptions& options) {
  out << "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  for (size_t i = 0; i < t.device_names.size(); ++i) {
    out << (i ? ", " : "") << "{\"id\": " << i << ", \"name\": " << quoted(t.device_names[i]);
    if (i < t.devices.size()) {  // the fields the trace gave, as Kineto names them
      const DeviceInfo& d = t.devices[i];
      if (d.total_global_mem) out << ", \"totalGlobalMem\": " << d.total_global_mem;
      if (d.compute_major >= 0) out << ", \"computeMajor\": " << d.compute_major;
      if (d.compute_minor >= 0) out << ", \"computeMinor\": " << d.compute_minor;
      if (d.warp_size) out << ", \"warpSize\": " << d.warp_size;
      if (d.num_sms) out << ", \"numSms\": " << d.num_sms;
    }
    out << "}";
  }
  out << "],\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " << t.base_time_ns
      << ",\n  \"traceName\": " << quoted(options.trace_name)
      << ",\n  \"producer\": " << quoted(options.producer) << ",\n  \"traceEvents\": [\n";
  bool first = true;
  auto begin_event = [&]() -> std::ostream& {
    out << (first ? "  " : ",\n  ");
    first = false;
    return out;
  };
  uint64_t max_correlation = 0;
  for (const auto& e : t.events)
    if (is_launch_call(e.category)) max_correlation = std::max(max_correlation, e.correlation);
  FirstById launch_by_correlation(max_correlation, t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i)
    if (const Event& e = t.events[i]; is_launch_call(e.category)) {
      if (const long held = launch_by_correlation[e.correlation];
          held >= 0 && takes_correlation(t.events[size_t(held)].name, e.name))
        launch_by_correlation.replace(e.correlation, long(i));
      else
        launch_by_correlation.add(e.correlation, long(i));
    }

  for (const auto& e : t.events) {
    if (const MemoryInfo* m = t.memory_info(e)) {  // an instant event, as Kineto writes it
      begin_event() << "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
                    << "\"name\": \"[memory]\", \"pid\": " << e.pid << ", \"tid\": " << e.tid
                    << ", \"ts\": " << trace_ts(e.start_ns) << ", \"args\": {\"Total Allocated\": "
                    << m->total_allocated << ", \"Bytes\": " << m->bytes << ", \"Device Id\": "
                    << m->device << ", \"Device Type\": " << int(m->device_type) << "}}";
      continue;
    }
    begin_event() << "{\"ph\": \"X\", \"cat\": \"" << kineto_category(e.category)
                  << "\", \"name\": " << quoted(e.name) << ", \"pid\": " << e.pid
                  << ", \"tid\": " << e.tid << ", \"ts\": " << trace_ts(e.start_ns)
                  << ", \"dur\": " << trace_ts(e.dur_ns) << ", \"args\": {";
    std::string args;
    auto arg = [&](const std::string& kv) { args += (args.empty() ? "" : ", ") + kv; };
    if (e.external_id) arg("\"External id\": " + std::to_string(e.external_id));
    if (e.correlation) arg("\"correlation\": " + std::to_string(e.correlation));
    if (e.on_device()) {
      arg("\"device\": " + std::to_string(e.pid));
      arg("\"stream\": " + std::to_string(e.tid));
    }
    if (const KernelInfo* k = t.kernel_info(e)) {
      auto dims = [](const int32_t d[3]) {
        return "[" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " +
               std::to_string(d[2]) + "]";
      };
      arg("\"grid\": " + dims(k->grid));
      arg("\"block\": " + dims(k->block));
      arg("\"registers per thread\": " + std::to_string(k->registers));
      arg("\"shared memory\": " + std::to_string(k->shared_memory));
      char buf[64];
      if (k->blocks_per_sm >= 0) {
        std::snprintf(buf, sizeof buf, "\"blocks per SM\": %.6g", k->blocks_per_sm);
        arg(buf);
      }
      if (k->est_occupancy_pct >= 0) {
        std::snprintf(buf, sizeof buf, "\"est. achieved occupancy %%\": %.6g", k->est_occupancy_pct);
        arg(buf);
      }
    }
    out << args << "}}";
    // The flow arrow from the launch call to this GPU work, as Kineto draws it.
    if (is_device_work(e.category) && e.correlation) {
      if (const long launch = launch_by_correlation[e.correlation]; launch >= 0) {
        const Event& l = t.events[size_t(launch)];
        begin_event() << "{\"ph\": \"s\", \"id\": " << e.correlation << ", \"pid\": " << l.pid
                      << ", \"tid\": " << l.tid << ", \"ts\": " << trace_ts(l.start_ns)
                      << ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}";
        begin_event() << "{\"ph\": \"f\", \"id\": " << e.correlation << ", \"pid\": " << e.pid
                      << ", \"tid\": " << e.tid << ", \"ts\": " << trace_ts(e.start_ns)
                      << ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}";
      }
    }
  }
  for (const auto& [lane, name] : t.lane_names) {
    const bool process = lane.second == -1;
    begin_event() << "{\"ph\": \"M\", \"name\": \"" << (process ? "process_name" : "thread_name")
                  << "\", \"pid\": " << lane.first << ", \"tid\": " << (process ? 0 : lane.second)
                  << ", \"args\": {\"name\": " << quoted(name) << "}}";
  }
  out << "\n  ]\n}\n";
}

void write_chrome_trace_file(const Trace& trace, const std::filesystem::path& path,
                             const WriterOptions& options) {
  write_stream_atomically(
      path, [&](std::ostream& out) { write_chrome_trace(trace, out, options); }, Gzip::ByName);
}

}  // namespace pil::trace
