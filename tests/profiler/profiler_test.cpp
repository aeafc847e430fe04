// pil::profiler, the C++ face of torch.profiler, on the CPU: steps named and numbered as
// Python's, one grouped ProfilerStep* row, the handler's files, input shapes, and clear
// exceptions on bad use.
#include "profiler/profiler.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace pil::profiler {
namespace {

std::vector<std::string> step_names(const trace::Trace& t) {
  std::vector<std::string> out;
  for (const auto& e : t.events)
    if (trace::is_step(e)) out.emplace_back(e.name);
  std::sort(out.begin(), out.end());
  return out;
}

// Not fs::remove_all: linked with libtorch.so, the call resolves to LibTorch's own copy of
// std::filesystem, which crashes (LibTorch 2.11.0 wheel).
void remove_tree(const fs::path& d) { std::system(("rm -rf '" + d.string() + "'").c_str()); }

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("pil_profiler_test_" + name + "_" +
                                                  std::to_string(::getpid()));
  remove_tree(d);
  return d;
}

template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(Profile, StepsAreNamedAndNumberedAsTorchProfiler) {
  ProfileOptions o;
  o.schedule = schedule(/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/1);
  int ready = 0;
  o.on_trace_ready = [&](profile&) { ++ready; };
  profile prof(std::move(o));
  const auto x = torch::randn({16, 16});
  prof.start();
  for (int i = 0; i < 5; ++i) {
    record_function r("my_range");
    torch::mm(x, x);
    if (i < 4) prof.step();
  }
  prof.stop();
  EXPECT_EQ(ready, 1);
  EXPECT_EQ(step_names(prof.events()),
            (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"}));
  const EventList k = prof.key_averages();
  const trace::KeyAverage* steps = k.find("ProfilerStep*");
  ASSERT_NE(steps, nullptr) << k.table();
  EXPECT_EQ(steps->calls, 3);
  EXPECT_EQ(k.find("ProfilerStep#2"), nullptr) << "steps grouped into one row, as Python's";
  ASSERT_NE(k.find("my_range"), nullptr);
  EXPECT_EQ(k.find("my_range")->calls, 3);
  ASSERT_NE(k.find("aten::mm"), nullptr);
  EXPECT_EQ(k.find("aten::mm")->calls, 3);
  const std::string table = k.table("self_cpu_time_total", 5);
  EXPECT_NE(table.find("ProfilerStep*"), std::string::npos) << table;
  EXPECT_NE(table.find("# of Calls"), std::string::npos) << table;
}

TEST(Profile, RepeatedCyclesEachMakeATraceTheHandlerWrites) {
  const fs::path dir = fresh_dir("handler");
  ProfileOptions o;
  o.schedule = schedule(0, 1, 2, /*repeat=*/2);
  o.on_trace_ready = tensorboard_trace_handler(dir, "worker0");
  profile prof(std::move(o));
  const auto x = torch::randn({8, 8});
  prof.start();
  for (int i = 0; i < 6; ++i) {
    torch::relu(x);
    prof.step();
  }
  prof.stop();
  std::vector<std::string> files;
  for (const auto& f : fs::directory_iterator(dir)) files.push_back(f.path().filename().string());
  ASSERT_EQ(files.size(), 2u);
  for (const auto& f : files)
    EXPECT_TRUE(std::regex_match(f, std::regex(R"(worker0\.[0-9]+\.pt\.trace\.json)"))) << f;
  // The latest cycle: steps 4 and 5 (wait 0, warmup 1, active 2: 0 W, 1-2 R, 3 W, 4-5 R).
  EXPECT_EQ(step_names(prof.events()),
            (std::vector<std::string>{"ProfilerStep#4", "ProfilerStep#5"}));
  remove_tree(dir);
}

TEST(Profile, WithoutAScheduleRecordsFromStartToStopWithNoSteps) {
  profile prof;
  prof.start();
  torch::add(torch::ones({4}), 1);
  prof.stop();
  EXPECT_TRUE(step_names(prof.events()).empty());
  ASSERT_NE(prof.key_averages().find("aten::add"), nullptr);
}

TEST(Profile, KeyAveragesGroupByInputShape) {
  ProfileOptions o;
  o.record_shapes = true;
  profile prof(std::move(o));
  prof.start();
  torch::mm(torch::ones({2, 3}), torch::ones({3, 4}));
  torch::mm(torch::ones({5, 3}), torch::ones({3, 4}));
  prof.stop();
  EXPECT_EQ(prof.key_averages().find("aten::mm")->calls, 2);
  const EventList by_shape = prof.key_averages(/*group_by_input_shape=*/true);
  std::vector<std::string> mm;
  for (const auto& r : by_shape.rows())
    if (r.name == "aten::mm") mm.push_back(r.input_shapes);
  EXPECT_EQ(mm, (std::vector<std::string>{"[[2, 3], [3, 4]]", "[[5, 3], [3, 4]]"}));
  const std::string table = by_shape.table("count");
  EXPECT_NE(table.find("Input Shapes"), std::string::npos) << table;
  EXPECT_NE(table.find("[[5, 3], [3, 4]]"), std::string::npos) << table;
}

TEST(Profile, BadUseThrowsAClearMessage) {
  profile prof;
  EXPECT_NE(message_of([&] { prof.step(); }).find("step(): called before start()"),
            std::string::npos);
  EXPECT_NE(message_of([&] { prof.stop(); }).find("stop(): called before start()"),
            std::string::npos);
  EXPECT_NE(message_of([&] { prof.key_averages(); }).find("no trace is ready yet"),
            std::string::npos);
  prof.start();
  EXPECT_NE(message_of([&] { prof.start(); }).find("already started"), std::string::npos);
  prof.stop();
  EXPECT_NE(message_of([&] { prof.step(); }).find("step(): called after stop()"),
            std::string::npos);
  EXPECT_NE(message_of([&] { prof.key_averages().table("cpu_time"); })
                .find("sort_by \"cpu_time\" is not a column; allowed: cpu_time_total"),
            std::string::npos);
  EXPECT_NE(message_of([] { schedule(1, 1, 0); }).find("active=0 (need > 0)"), std::string::npos);
  EXPECT_NE(message_of([] {
              ProfileOptions none;
              none.activities.clear();
              profile p(std::move(none));
            }).find("activities is empty"),
            std::string::npos);
  // A folder under a file cannot be made, whoever runs the test (root included).
  const fs::path file = fresh_dir("file");
  { std::ofstream(file.string()) << "x"; }
  EXPECT_NE(message_of([&] { tensorboard_trace_handler(file / "log"); })
                .find("tensorboard_trace_handler: cannot create the folder"),
            std::string::npos);
  remove_tree(file);
}

}  // namespace
}  // namespace pil::profiler
