// The summary JSON carries what a script needs to compare runs.
#include "harness/summary.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace pil {
namespace {

TEST(Summary, IsValidJsonWithTheRunAndItsOperators) {
  RunSummary s;
  s.lesson = "01_matmul_add";
  s.variant = "eager";
  s.libtorch_version = "2.11.0";
  s.device = "cpu";
  s.device_name = "Some \"quoted\" CPU";
  s.dtype = "fp32";
  s.size = 512;
  s.active = 3;
  s.result = "PASSED";
  s.steps = {{"ProfilerStep#2", 1500}};
  s.flags = {{"seq", 128, ""}, {"tf32", 1, "off"}};
  trace::KeyAverage mm;
  mm.name = "aten::mm";
  mm.calls = 3;
  mm.self_cpu_ns = 900;
  mm.cpu_total_ns = 1000;
  s.operators.rows.push_back(mm);
  s.operators.self_cpu_total_ns = 900;
  const auto j = nlohmann::json::parse(to_json(s));
  EXPECT_EQ(j["lesson"], "01_matmul_add");
  EXPECT_EQ(j["device"]["name"], "Some \"quoted\" CPU");
  EXPECT_EQ(j["size"], 512);
  EXPECT_EQ(j["flags"]["seq"], 128);
  EXPECT_EQ(j["flags"]["tf32"], "off");
  EXPECT_EQ(j["schedule"]["active"], 3);
  EXPECT_EQ(j["verification"]["result"], "PASSED");
  EXPECT_EQ(j["steps"][0]["cpu_ns"], 1500);
  ASSERT_EQ(j["operators"].size(), 1u);
  EXPECT_EQ(j["operators"][0]["name"], "aten::mm");
  EXPECT_EQ(j["operators"][0]["calls"], 3);
  EXPECT_EQ(j["operators"][0]["self_cpu_ns"], 900);
  EXPECT_EQ(j["totals"]["self_cpu_ns"], 900);
}

}  // namespace
}  // namespace pil
