// The writer's output reads back as the same trace: every figure the reports compute survives.
#include "trace/chrome_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/synthetic_trace.h"

namespace pil::trace {
namespace {

Trace round_trip(const Trace& t) {
  std::ostringstream out;
  write_chrome_trace(t, out, {"round trip", "test"});
  return parse_trace_text(out.str(), "written");
}

TEST(ChromeWriter, WrittenTraceReadsBackTheSame) {
  const Trace a = parse_trace_text(test::synthetic_gpu_trace());
  const Trace b = round_trip(a);
  ASSERT_EQ(b.events.size(), a.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    SCOPED_TRACE(std::string(a.events[i].name));
    EXPECT_EQ(b.events[i].name, a.events[i].name);
    EXPECT_EQ(b.events[i].category, a.events[i].category);
    EXPECT_EQ(b.events[i].start_ns, a.events[i].start_ns);
    EXPECT_EQ(b.events[i].dur_ns, a.events[i].dur_ns);
    EXPECT_EQ(b.events[i].pid, a.events[i].pid);
    EXPECT_EQ(b.events[i].tid, a.events[i].tid);
    EXPECT_EQ(b.events[i].external_id, a.events[i].external_id);
    EXPECT_EQ(b.events[i].correlation, a.events[i].correlation);
  }
  EXPECT_EQ(b.base_time_ns, a.base_time_ns);
  EXPECT_EQ(b.device_names, a.device_names);
  EXPECT_EQ(b.lane_names, a.lane_names);
  const TraceIndex ia(a), ib(b);
  EXPECT_EQ(explain(ib), explain(ia));
  const auto ka = kernel_report(ia), kb = kernel_report(ib);
  ASSERT_EQ(kb.size(), ka.size());
  ASSERT_TRUE(kb[0].launch.has_value());
  EXPECT_EQ(kb[0].launch->registers, 90);
  EXPECT_DOUBLE_EQ(kb[0].launch->est_occupancy_pct, 12.0) << "occupancy written back";
  EXPECT_DOUBLE_EQ(kb[0].launch->blocks_per_sm, 0.48);
}

TEST(ChromeWriter, DevicePropertiesReadBackInFull) {
  Trace t;
  DeviceInfo d;
  d.id = 0;
  d.name = "NVIDIA H100 PCIe";
  d.total_global_mem = 85029158912;
  d.num_sms = 114;
  d.compute_major = 9;
  d.compute_minor = 0;
  d.warp_size = 32;
  t.device_names = {d.name, "named only"};
  t.devices = {d};
  Event e;  // a trace with no event at all does not read back (refused as "event 0")
  e.name = t.intern("aten::mm");
  e.category = Category::CpuOp;
  e.dur_ns = 1000;
  t.events.push_back(e);
  const Trace b = round_trip(t);
  ASSERT_EQ(b.devices.size(), 2u);
  EXPECT_EQ(b.devices[0].id, 0);
  EXPECT_EQ(b.devices[0].name, "NVIDIA H100 PCIe");
  EXPECT_EQ(b.devices[0].total_global_mem, 85029158912);
  EXPECT_EQ(b.devices[0].num_sms, 114);
  EXPECT_EQ(b.devices[0].compute_major, 9);
  EXPECT_EQ(b.devices[0].compute_minor, 0);
  EXPECT_EQ(b.devices[0].warp_size, 32);
  EXPECT_EQ(b.devices[1].name, "named only");  // a field not given stays "not given"
  EXPECT_EQ(b.devices[1].num_sms, 0);
  EXPECT_EQ(b.devices[1].compute_major, -1);
}

TEST(ChromeWriter, OneArrowPerLaunchedGpuWork) {
  const Trace b = round_trip(parse_trace_text(test::synthetic_gpu_trace()));
  // gemm, add_kernel, graph_k1, graph_k2, the memcpy, kernel_a, kernel_b
  EXPECT_EQ(b.flows.starts, 7);
  EXPECT_EQ(b.flows.finishes, 7);
}

TEST(ChromeWriter, TimesKeepEveryNanosecondAndNamesAreEscaped) {
  Trace t;
  t.base_time_ns = 1700000000000000000;
  Event e;
  e.name = t.intern("a \"quoted\" name\\with\nbreak");
  e.category = Category::CpuOp;
  e.start_ns = 1234567;  // relative to the base, as Kineto writes it
  e.dur_ns = 1;
  t.events.push_back(e);
  std::ostringstream out;
  write_chrome_trace(t, out, {"t", "p"});
  EXPECT_TRUE(nlohmann::json::accept(out.str())) << out.str();
  EXPECT_NE(out.str().find("\"ts\": 1234.567"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("\"dur\": 0.001"), std::string::npos);
  const Trace back = parse_trace_text(out.str());
  ASSERT_EQ(back.events.size(), 1u);
  EXPECT_EQ(back.events[0].name, e.name);
  EXPECT_EQ(back.events[0].dur_ns, 1);
}

}  // namespace
}  // namespace pil::trace
