// The operator table on hand-built events, with every figure worked out by hand.
#include "trace/key_averages.h"
#include "trace/python_flops.h"
#include "trace/text_table.h"

#include <gtest/gtest.h>

#include "trace/parse.h"

#include <algorithm>
#include <random>

namespace pil::trace {
namespace {

constexpr int64_t us = 1000;  // events are written in microseconds, stored in nanoseconds

Event cpu(const char* name, Category c, int64_t start_us, int64_t end_us, uint64_t id,
          int64_t tid = 1) {
  Event e;
  e.name = name;
  e.category = c;
  e.start_ns = start_us * us;
  e.dur_ns = (end_us - start_us) * us;
  e.pid = 100;
  e.tid = tid;
  e.external_id = id;
  return e;
}

Event runtime(int64_t start_us, int64_t end_us, uint64_t correlation, uint64_t op) {
  Event e = cpu("cudaLaunchKernel", Category::Runtime, start_us, end_us, op);
  e.correlation = correlation;
  return e;
}

Event gpu(const char* name, Category c, int64_t start_us, int64_t end_us, uint64_t correlation,
          uint64_t op, int64_t stream = 7) {
  Event e;
  e.name = name;
  e.category = c;
  e.start_ns = start_us * us;
  e.dur_ns = (end_us - start_us) * us;
  e.pid = 0;
  e.tid = stream;
  e.correlation = correlation;
  e.external_id = op;
  return e;
}

// One profiler step of matmul + bias on a GPU (times in µs):
//
//   thread 1  ProfilerStep#2 [0,100] > matmul_add [10,90] > aten::matmul [20,60] > aten::mm [25,55]
//             > cudaLaunchKernel [30,35];  matmul_add > aten::add [65,85] > cudaLaunchKernel [70,74]
//   stream 7  gemm [40,140] (launched by aten::mm, id 4), add_kernel [150,160] (aten::add, id 5),
//             and the range mirrored on the GPU, matmul_add [40,160], which must not count.
std::vector<Event> one_step() {
  return {
      cpu("ProfilerStep#2", Category::UserAnnotation, 0, 100, 1),
      cpu("matmul_add", Category::UserAnnotation, 10, 90, 2),
      cpu("aten::matmul", Category::CpuOp, 20, 60, 3),
      cpu("aten::mm", Category::CpuOp, 25, 55, 4),
      runtime(30, 35, 7, 4),
      cpu("aten::add", Category::CpuOp, 65, 85, 5),
      runtime(70, 74, 8, 5),
      gpu("gemm", Category::Kernel, 40, 140, 7, 4),
      gpu("add_kernel", Category::Kernel, 150, 160, 8, 5),
      gpu("matmul_add", Category::GpuUserAnnotation, 40, 160, 0, 0),
  };
}

TEST(KeyAverages, SelfAndTotalCpuTimeByHand) {
  const KeyAverages t = key_averages(one_step());
  // self = duration - direct children
  EXPECT_EQ(t.find("ProfilerStep*")->self_cpu_ns, 20 * us);  // 100 - 80
  EXPECT_EQ(t.find("matmul_add")->self_cpu_ns, 20 * us);     // 80 - 40 - 20
  EXPECT_EQ(t.find("aten::matmul")->self_cpu_ns, 10 * us);   // 40 - 30
  EXPECT_EQ(t.find("aten::mm")->self_cpu_ns, 25 * us);       // 30 - 5
  EXPECT_EQ(t.find("aten::add")->self_cpu_ns, 16 * us);      // 20 - 4
  EXPECT_EQ(t.find("cudaLaunchKernel")->self_cpu_ns, 9 * us);  // 5 + 4
  EXPECT_EQ(t.find("cudaLaunchKernel")->calls, 2);
  EXPECT_EQ(t.find("matmul_add")->cpu_total_ns, 80 * us);
  // Self CPU over all rows adds up to the outermost range: nothing counted twice.
  EXPECT_EQ(t.self_cpu_total_ns, 100 * us);
}

TEST(KeyAverages, DeviceTimeGoesToTheLaunchingOperatorAndUpItsParents) {
  const KeyAverages t = key_averages(one_step());
  EXPECT_EQ(t.find("aten::mm")->self_device_ns, 100 * us);
  EXPECT_EQ(t.find("aten::mm")->device_total_ns, 100 * us);
  EXPECT_EQ(t.find("aten::matmul")->self_device_ns, 0);
  EXPECT_EQ(t.find("aten::matmul")->device_total_ns, 100 * us);
  EXPECT_EQ(t.find("aten::add")->self_device_ns, 10 * us);
  EXPECT_EQ(t.find("matmul_add")->device_total_ns, 110 * us);
  EXPECT_EQ(t.find("ProfilerStep*")->device_total_ns, 110 * us);
  EXPECT_EQ(t.find("cudaLaunchKernel")->device_total_ns, 0);  // the op, not the call, owns it
  EXPECT_EQ(t.find("gemm")->self_device_ns, 100 * us);
  EXPECT_TRUE(t.find("gemm")->device_work);
  // The mirrored range adds no device time: 100 + 10, not 100 + 10 + 120.
  EXPECT_EQ(t.self_device_total_ns, 110 * us);
  EXPECT_TRUE(t.has_device_time());
}

// torch 2.0-2.2's Kineto wrote a runtime call's and its GPU work's own correlation id as their
// External id (kineto b96fe09, October 2022, to #873, February 2024). Here the correlation ids 3
// and 5 are also the ids of aten::matmul and aten::add: by External id the gemm would go to
// aten::matmul (it encloses the launch, but is not the innermost operator) and the add's kernel
// to aten::add by luck. By the launch call's innermost operator or range, as before 2.0 and
// since 2.3: aten::mm and aten::add, the figures of one_step().
TEST(KeyAverages, SelfLinkedGpuWorkGoesToTheOperatorAroundItsLaunch) {
  const std::vector<Event> events = {
      cpu("ProfilerStep#2", Category::UserAnnotation, 0, 100, 1),
      cpu("matmul_add", Category::UserAnnotation, 10, 90, 2),
      cpu("aten::matmul", Category::CpuOp, 20, 60, 3),
      cpu("aten::mm", Category::CpuOp, 25, 55, 4),
      runtime(30, 35, 3, 3),
      cpu("aten::add", Category::CpuOp, 65, 85, 5),
      runtime(70, 74, 5, 5),
      runtime(92, 95, 9, 9),  // outside every operator but the step: the step owns its work
      gpu("gemm", Category::Kernel, 40, 140, 3, 3),
      gpu("add_kernel", Category::Kernel, 150, 160, 5, 5),
      gpu("copy", Category::Memcpy, 160, 170, 9, 9),
      gpu("lost", Category::Kernel, 170, 171, 11, 11),  // its launch call is not in the trace
  };
  const KeyAverages t = key_averages(events);
  EXPECT_EQ(t.find("aten::mm")->self_device_ns, 100 * us);
  EXPECT_EQ(t.find("aten::matmul")->self_device_ns, 0);
  EXPECT_EQ(t.find("aten::matmul")->device_total_ns, 100 * us);
  EXPECT_EQ(t.find("aten::add")->self_device_ns, 10 * us);
  EXPECT_EQ(t.find("matmul_add")->device_total_ns, 110 * us);
  EXPECT_EQ(t.find("ProfilerStep*")->self_device_ns, 10 * us);
  EXPECT_EQ(t.find("ProfilerStep*")->device_total_ns, 120 * us);
  EXPECT_EQ(t.find("lost")->self_device_ns, 1 * us);  // in its own row, in no operator's
  EXPECT_EQ(t.self_device_total_ns, 121 * us);

  // A trace where only some work is self-linked (torch 2.3-2.5 wrote an unlinked launch's own
  // correlation id): the rest still goes by External id, even where nesting would disagree
  // (here the gemm's External id names aten::matmul, around aten::mm).
  std::vector<Event> mixed = one_step();
  for (Event& e : mixed)
    if (e.correlation == 7) e.external_id = 3;
  mixed.push_back(runtime(92, 95, 9, 9));
  mixed.push_back(gpu("copy", Category::Memcpy, 160, 170, 9, 9));
  const KeyAverages m = key_averages(mixed);
  EXPECT_EQ(m.find("aten::matmul")->self_device_ns, 100 * us);
  EXPECT_EQ(m.find("aten::mm")->self_device_ns, 0);
  EXPECT_EQ(m.find("aten::add")->self_device_ns, 10 * us);
  EXPECT_EQ(m.find("ProfilerStep*")->self_device_ns, 10 * us);
}

TEST(KeyAverages, EventOrderDoesNotMatter) {
  std::vector<Event> events = one_step();
  std::mt19937 rng(3);
  for (int round = 0; round < 5; ++round) {
    std::shuffle(events.begin(), events.end(), rng);
    const KeyAverages t = key_averages(events);
    EXPECT_EQ(t.find("matmul_add")->self_cpu_ns, 20 * us);
    EXPECT_EQ(t.find("aten::mm")->self_cpu_ns, 25 * us);
    EXPECT_EQ(t.find("ProfilerStep*")->device_total_ns, 110 * us);
    EXPECT_EQ(t.self_cpu_total_ns, 100 * us);
  }
}

TEST(KeyAverages, RowsComeInOrderOfFirstAppearanceTiesByFirstEventInTheTrace) {
  // Every group first appears at 10 us; the rows then follow each group's first event in the
  // trace (A: event 0, the kernel: 1, B: 2), as Python's table does. Nesting visits them in
  // another order (thread 1: A, B; then the kernel): the order must not come from there.
  const std::vector<Event> events = {
      cpu("A", Category::CpuOp, 50, 60, 1, 2),
      gpu("K", Category::Kernel, 10, 12, 9, 1),
      cpu("B", Category::CpuOp, 10, 20, 2, 1),
      cpu("A", Category::CpuOp, 10, 30, 3, 1),
  };
  const KeyAverages t = key_averages(events);
  std::vector<std::string> names;
  for (const auto& r : t.rows) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"A", "K", "B"}));
  EXPECT_EQ(t.find("A")->self_cpu_ns, 20 * us);  // (30 - 10 - 10) + 10
}

TEST(KeyAverages, ARowSharedByAKernelAndAnOperatorIsWhatItsFirstEventIs) {
  // One name, a kernel first in the trace, then an operator: one row, GPU work, as when the rows
  // were made in trace order (its totals count under the device, not the CPU).
  const std::vector<Event> events = {
      gpu("aten::add", Category::Kernel, 0, 5, 9, 999),
      cpu("aten::add", Category::CpuOp, 10, 20, 1),
  };
  const KeyAverages t = key_averages(events);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_TRUE(t.rows[0].device_work);
  EXPECT_EQ(t.rows[0].calls, 2);
  EXPECT_EQ(t.self_device_total_ns, 5 * us);
  EXPECT_EQ(t.self_cpu_total_ns, 0);
}

TEST(KeyAverages, NestedSameNameRangesAndZeroLengthEvents) {
  // thread 2: outer [0,50] > outer [10,20]; outer [0,50] > aten::empty [30,30] (zero length)
  const std::vector<Event> events = {
      cpu("outer", Category::UserAnnotation, 0, 50, 1, 2),
      cpu("outer", Category::UserAnnotation, 10, 20, 2, 2),
      cpu("aten::empty", Category::CpuOp, 30, 30, 3, 2),
  };
  const KeyAverages t = key_averages(events);
  const KeyAverage* outer = t.find("outer");
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->calls, 2);
  EXPECT_EQ(outer->self_cpu_ns, 50 * us);   // (50 - 10 - 0) + 10
  EXPECT_EQ(outer->cpu_total_ns, 60 * us);  // each call counted, as Python does
  EXPECT_EQ(t.find("aten::empty")->self_cpu_ns, 0);
  EXPECT_EQ(t.find("aten::empty")->calls, 1);
  EXPECT_EQ(t.self_cpu_total_ns, 50 * us);
  EXPECT_FALSE(t.has_device_time());
}

// Python's nesting rule (EventList._populate_cpu_children): a slice holds no slice that starts
// at or after its end. Integer-microsecond traces (a MacBook's) have zero-length calls at one
// time: two aten::empty at 10 are siblings, not a parent and its duplicate child (merged, one
// call: Python counted 1,902 where pil-trace counted 1,786); aten::resolve_conj [20, 20], which
// starts where aten::mm [10, 20] ends, is no child of it.
TEST(KeyAverages, ASliceHoldsNothingThatStartsAtItsEnd) {
  const std::vector<Event> events = {
      cpu("aten::linear", Category::CpuOp, 0, 30, 1, 1),
      cpu("aten::empty", Category::CpuOp, 10, 10, 2, 1),
      cpu("aten::empty", Category::CpuOp, 10, 10, 3, 1),
      cpu("aten::mm", Category::CpuOp, 10, 20, 4, 1),
      cpu("aten::resolve_conj", Category::CpuOp, 20, 20, 5, 1),
  };
  const KeyAverages t = key_averages(events);
  EXPECT_EQ(t.find("aten::empty")->calls, 2);
  EXPECT_EQ(t.find("aten::resolve_conj")->calls, 1);
  EXPECT_EQ(t.find("aten::mm")->self_cpu_ns, 10 * us);
  EXPECT_EQ(t.find("aten::linear")->self_cpu_ns, 20 * us);
  EXPECT_TRUE(t.dropped.empty());
}

// Memory by Python's rule: an operator's is every allocation and free in its span, ends included,
// on any thread of its process (Python profiles one), and what no span holds is the "[memory]"
// row. pid 1: aten::mm [10, 20] on thread 1; allocations at 20 (its end) on thread 2, and at 30.
// pid 2 (a second process merged into the file): an allocation at 15, inside pid 1's aten::mm
// in time but not in its process.
TEST(KeyAverages, MemoryIsEveryAllocationInTheSpanOnAnyThreadOfItsProcess) {
  auto mem = [](int pid, int tid, int ts, int bytes) {
    return "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": " +
           std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::to_string(ts) +
           ", \"args\": {\"Bytes\": " + std::to_string(bytes) + ", \"Device Id\": -1, \"Device Type\": 0}}";
  };
  const Trace t = parse_trace_text(
      "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 10, "
      "\"dur\": 10, \"args\": {}}, " +
      mem(1, 2, 20, 1024) + ", " + mem(1, 1, 30, 4096) + ", " + mem(2, 1, 15, 2048) + "]");
  const KeyAverages k = key_averages(t);
  ASSERT_NE(k.find("aten::mm"), nullptr);
  EXPECT_EQ(k.find("aten::mm")->cpu_mem, 1024);
  EXPECT_EQ(k.find("aten::mm")->self_cpu_mem, 1024);
  const KeyAverage* loose = k.find("[memory]");
  ASSERT_NE(loose, nullptr);
  EXPECT_EQ(loose->calls, 2);
  EXPECT_EQ(loose->cpu_mem, 4096 + 2048);
  EXPECT_EQ(loose->cpu_total_ns, 0);
}

TEST(KeyAverages, ThreadsNestSeparately) {
  // Same interval on two threads: neither is the other's child.
  const std::vector<Event> events = {
      cpu("a", Category::CpuOp, 0, 10, 1, 1),
      cpu("b", Category::CpuOp, 2, 8, 2, 2),
  };
  const KeyAverages t = key_averages(events);
  EXPECT_EQ(t.find("a")->self_cpu_ns, 10 * us);
  EXPECT_EQ(t.find("b")->self_cpu_ns, 6 * us);
}

TEST(KeyAverages, GpuWorkWithoutAKnownOperatorStillCounts) {
  const std::vector<Event> events = {gpu("lonely", Category::Memcpy, 0, 5, 1, 999)};
  const KeyAverages t = key_averages(events);
  EXPECT_EQ(t.find("lonely")->self_device_ns, 5 * us);
  EXPECT_EQ(t.self_device_total_ns, 5 * us);
}

TEST(Table, LayoutOfPythonsKeyAveragesTable) {
  TableOptions o;
  o.sort = SortKey::DeviceTotal;
  o.row_limit = 3;
  const std::string text = format_table(key_averages(one_step()), o);
  for (const char* h : {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total",
                        "CPU time avg", "Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg",
                        "# of Calls"})
    EXPECT_NE(text.find(h), std::string::npos) << h;
  EXPECT_NE(text.find("Self CPU time total: 100.000us"), std::string::npos) << text;
  EXPECT_NE(text.find("Self CUDA time total: 110.000us"), std::string::npos) << text;
  // Rows: the three with the most device time; ties keep first-seen order.
  const auto step = text.find("ProfilerStep*"), range = text.find(" matmul_add"),
             matmul = text.find("aten::matmul");
  EXPECT_LT(step, range);
  EXPECT_LT(range, matmul);
  EXPECT_EQ(text.find("aten::add"), std::string::npos) << "row limit not applied";
}

// The name column is as wide as the longest name of every row, the rows a row limit leaves out
// too (Python's _build_table measures before it applies row_limit): 25 + 4 = 29 here, though the
// one row shown is named "a".
TEST(Table, TheNameColumnFitsRowsTheLimitLeavesOut) {
  const std::vector<Event> events = {
      cpu("a", Category::CpuOp, 0, 50, 1, 1),
      cpu("a_very_long_operator_name", Category::CpuOp, 60, 61, 2, 2),
  };
  TableOptions o;
  o.row_limit = 1;
  const std::string text = format_table(key_averages(events), o);
  EXPECT_EQ(text.rfind(std::string(29, '-') + "  ", 0), 0u) << text;
  EXPECT_EQ(text.find("a_very_long"), std::string::npos) << text;
}

TEST(KeyAverages, StepsGroupIntoOneProfilerStepRowAsPythonsTable) {
  // Python's table rewrites ProfilerStep#N to one ProfilerStep* row (profiler_util.py); the
  // project's old traces named them ProfileStep#N, read as steps too.
  const std::vector<Event> events = {cpu("ProfilerStep#2", Category::UserAnnotation, 0, 100, 1),
                                     cpu("ProfilerStep#3", Category::UserAnnotation, 100, 150, 2),
                                     cpu("ProfileStep#4", Category::UserAnnotation, 150, 180, 3)};
  const KeyAverages t = key_averages(events);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].name, "ProfilerStep*");
  EXPECT_EQ(t.rows[0].calls, 3);
  EXPECT_EQ(t.rows[0].cpu_total_ns, 180 * us);
  for (const auto& e : events) EXPECT_TRUE(is_step(e)) << e.name;
  EXPECT_FALSE(is_step_name("ProfilerStep*"));
  EXPECT_TRUE(is_step_row("ProfilerStep*"));
  EXPECT_FALSE(is_step_name("MyStep#1"));
  EXPECT_EQ(step_name(7), "ProfilerStep#7");
}

TEST(KeyAverages, GroupByInputShapeSplitsRowsAndAddsTheColumn) {
  std::vector<Event> events = {cpu("aten::mm", Category::CpuOp, 0, 10, 1),
                               cpu("aten::mm", Category::CpuOp, 20, 30, 2),
                               cpu("aten::mm", Category::CpuOp, 40, 50, 3)};
  const std::vector<std::string_view> shapes = {"[[2, 3], [3, 4]]", "[[5, 3], [3, 4]]"};
  events[0].input_shapes = 0;
  events[1].input_shapes = 1;
  events[2].input_shapes = 0;
  EXPECT_EQ(key_averages(events).rows.size(), 1u);
  const KeyAverages t = key_averages(events, {}, &shapes);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].input_shapes, "[[2, 3], [3, 4]]");
  EXPECT_EQ(t.rows[0].calls, 2);
  EXPECT_EQ(t.rows[1].input_shapes, "[[5, 3], [3, 4]]");
  EXPECT_EQ(t.rows[1].calls, 1);
  TableOptions o;
  o.sort = SortKey::Unsorted;
  const std::string text = format_table(t, o);
  const auto calls = text.find("# of Calls"), column = text.find("Input Shapes");
  ASSERT_NE(column, std::string::npos) << text;
  EXPECT_LT(calls, column);
  EXPECT_EQ(text.find('\n', calls), text.find('\n', column)) << "one header line";
  EXPECT_LT(text.find("[[2, 3], [3, 4]]"), text.find("[[5, 3], [3, 4]]")) << text;
}

TEST(Table, NoDeviceColumnsWithoutDeviceTime) {
  const std::vector<Event> events = {cpu("aten::mm", Category::CpuOp, 0, 1500, 1)};
  const std::string text = format_table(key_averages(events), TableOptions{});
  EXPECT_EQ(text.find("CUDA"), std::string::npos);
  EXPECT_NE(text.find("1.500ms"), std::string::npos);
  EXPECT_NE(text.find("100.00%"), std::string::npos);
}

TEST(Table, TimesPrintLikePython) {
  EXPECT_EQ(format_time_ns(812000), "812.000us");
  EXPECT_EQ(format_time_ns(999999), "999.999us");
  EXPECT_EQ(format_time_ns(1234000), "1.234ms");
  EXPECT_EQ(format_time_ns(2500000000), "2.500s");
  EXPECT_EQ(format_time_ns(0), "0.000us");
}

TEST(FormatDuration, ThreeFiguresInTheUnitPeopleUse) {
  EXPECT_EQ(format_duration(0), "0 ns");
  EXPECT_EQ(format_duration(812), "812 ns");
  EXPECT_EQ(format_duration(26'000), "26.0 us");
  EXPECT_EQ(format_duration(7'500), "7.50 us");
  EXPECT_EQ(format_duration(1'535'000), "1.53 ms");  // the README's "median 1535.0 us"
  EXPECT_EQ(format_duration(1'780'000), "1.78 ms");
  EXPECT_EQ(format_duration(3'188'102'700), "3.19 s");  // not "3188102.7 us"
  EXPECT_EQ(format_duration(999'700), "1.00 ms");    // rounding moves the unit up
  EXPECT_EQ(format_duration(999'999'999), "1.00 s");
  EXPECT_EQ(format_duration(192'700'000), "193 ms");
  EXPECT_EQ(format_duration(4'000'000'000'000), "4000 s");
  EXPECT_EQ(format_duration(-2'500), "-2.50 us");
}

TEST(Table, SortKeysUsePythonsNames) {
  EXPECT_EQ(parse_sort_key("cpu_time_total"), SortKey::CpuTotal);
  EXPECT_EQ(parse_sort_key("self_cuda_time_total"), SortKey::SelfDevice);
  EXPECT_EQ(parse_sort_key("count"), SortKey::Count);
  EXPECT_FALSE(parse_sort_key("fastest").has_value());
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

// Python's EventList drops a slice whose parent has its name and no other child (_remove_dup_
// nodes): aten::sum [0, 30] holding aten::sum [2, 28] holding aten::fill_ [5, 7], the inner sum
// launching a kernel of 4 us: one call of 30 us, self 30 - 2 = 28 us, and the kernel its own.
// A second outer sum [40, 60] with two children, aten::sum [41, 45] and aten::view [50, 52], keeps
// both: the sum row then counts 3 calls (30 + 20 + 4 = 54 us).
TEST(KeyAverages, ASliceNamedAsItsOnlyParentIsDroppedIntoIt) {
  std::vector<Event> ev = {
      cpu("aten::sum", Category::CpuOp, 0, 30, 1),   cpu("aten::sum", Category::CpuOp, 2, 28, 2),
      cpu("aten::fill_", Category::CpuOp, 5, 7, 3),  runtime(10, 12, 9, 2),
      gpu("reduce_kernel", Category::Kernel, 15, 19, 9, 2),
      cpu("aten::sum", Category::CpuOp, 40, 60, 4),  cpu("aten::sum", Category::CpuOp, 41, 45, 5),
      cpu("aten::view", Category::CpuOp, 50, 52, 6),
  };
  const KeyAverages k = key_averages(ev);
  const KeyAverage* sum = k.find("aten::sum");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->calls, 3);
  EXPECT_EQ(sum->cpu_total_ns, (30 + 20 + 4) * us);
  // Self: 30 - 2 (fill_) - 2 (the launch) in the first; 20 - 4 - 2 and 4 in the second.
  EXPECT_EQ(sum->self_cpu_ns, (26 + 14 + 4) * us);
  EXPECT_EQ(sum->self_device_ns, 4 * us);
  EXPECT_EQ(sum->device_total_ns, 4 * us);
  ASSERT_EQ(k.dropped.size(), 1u);
  EXPECT_EQ(k.dropped[0], 1u);
  EXPECT_EQ(k.self_cpu_total_ns, (26 + 2 + 2 + 14 + 4 + 2) * us);  // every slice's self, once
}

// The FLOPs Python counts with with_flops (torch/csrc/profiler/util.cpp), by hand.
TEST(PythonFlops, TheSevenOperatorsTorchCounts) {
  auto in = [](std::vector<std::vector<int64_t>> dims, std::vector<std::string_view> concrete = {}) {
    OpInputs o;
    for (size_t i = 0; i < dims.size(); ++i) {
      InputArg a;
      a.dims = dims[i];
      a.type = "float";
      if (i < concrete.size() && !concrete[i].empty()) a.type = "ScalarList", a.concrete = concrete[i];
      o.args.push_back(a);
    }
    return o;
  };
  EXPECT_EQ(python_flops("aten::mm", in({{16, 8}, {8, 32}})), 2u * 16 * 8 * 32);
  EXPECT_EQ(python_flops("aten::addmm", in({{32}, {16, 8}, {8, 32}})), 2u * 16 * 8 * 32);
  EXPECT_EQ(python_flops("aten::bmm", in({{4, 16, 8}, {4, 8, 32}})), 2u * 4 * 16 * 8 * 32);
  EXPECT_EQ(python_flops("aten::baddbmm", in({{4, 16, 32}, {4, 16, 8}, {4, 8, 32}})), 2u * 4 * 16 * 8 * 32);
  EXPECT_EQ(python_flops("aten::mul", in({{4, 16, 32}, {}})), 4u * 16 * 32);
  EXPECT_EQ(python_flops("aten::add", in({{4, 16, 32}, {}})), 4u * 16 * 32);
  EXPECT_EQ(python_flops("aten::mul_", in({{4, 16, 32}, {}})), 0u);  // in place: not counted
  // conv2d: input [2, 3, 32, 32], weight [8, 3, 3, 3], stride 2, padding 1: out 16 x 16;
  // 2 * 2 * 16 * 16 * 3 * 3 * 3 * 8 / 1.
  EXPECT_EQ(python_flops("aten::conv2d", in({{2, 3, 32, 32}, {8, 3, 3, 3}, {8}, {}, {}, {}, {}},
                                            {"", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"})),
            2u * 2 * 16 * 16 * 3 * 3 * 3 * 8);
  // dilation 2, padding 2, groups 2 on [2, 8, 16, 16] with [8, 4, 3, 3]: out 16 x 16.
  EXPECT_EQ(python_flops("aten::conv2d", in({{2, 8, 16, 16}, {8, 4, 3, 3}, {8}, {}, {}, {}, {}},
                                            {"", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "2"})),
            2u * 2 * 16 * 16 * 3 * 3 * 8 * 8 / 2);
  // Without its values (a trace read without Concrete Inputs) a conv2d counts none.
  EXPECT_EQ(python_flops("aten::conv2d", in({{2, 3, 32, 32}, {8, 3, 3, 3}, {8}, {}, {}, {}, {}})), 0u);
  // A non-tensor where torch wants a tensor: none.
  OpInputs scalar = in({{}, {8, 32}});
  scalar.args[0].type = "Scalar";
  EXPECT_EQ(python_flops("aten::mm", scalar), 0u);
}

}  // namespace
}  // namespace pil::trace
