// Memory events ([memory] instants, as Kineto writes them with profile_memory): read from a
// file, attributed to operators in the table (Python's CPU Mem / Self CPU Mem columns), the
// peak and where it came from, and written back unchanged. Figures worked out by hand.
#include <gtest/gtest.h>

#include <sstream>

#include "trace/chrome_writer.h"
#include "trace/expect.h"
#include "trace/key_averages.h"
#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/svg.h"

namespace pil::trace {
namespace {

// Thread 7, times in µs:
//   ProfilerStep#0 [0,100] > attn [10,60] > aten::bmm [20,40] (allocates 4 MiB at 25, host)
//                                        > aten::softmax [45,55] (allocates 4 MiB at 46, frees
//                                          the bmm's 4 MiB at 54)
//                        > mlp [60,90] > aten::mm [65,85] (allocates 1 MiB at 70 on cuda:0)
//   the softmax's 4 MiB freed at 95, in the step but outside any operator.
std::string memory_trace() {
  auto mem = [](int ts, long long bytes, long long total, int type, int dev) {
    return R"({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 7, "ts": )" +
           std::to_string(ts) + R"(, "args": {"Total Reserved": 0, "Total Allocated": )" +
           std::to_string(total) + R"(, "Bytes": )" + std::to_string(bytes) +
           R"(, "Device Id": )" + std::to_string(dev) + R"(, "Device Type": )" + std::to_string(type) +
           R"(, "Addr": 1234}})";
  };
  auto op = [](const char* cat, const char* name, int ts, int dur, int id) {
    return std::string(R"({"ph": "X", "cat": ")") + cat + R"(", "name": ")" + name +
           R"(", "pid": 1, "tid": 7, "ts": )" + std::to_string(ts) + R"(, "dur": )" +
           std::to_string(dur) + R"(, "args": {"External id": )" + std::to_string(id) + "}}";
  };
  constexpr long long MiB = 1 << 20;
  return std::string(R"({"schemaVersion": 1, "traceEvents": [)") +
         op("user_annotation", "ProfilerStep#0", 0, 100, 1) + ",\n" +
         op("user_annotation", "attn", 10, 50, 2) + ",\n" + op("cpu_op", "aten::bmm", 20, 20, 3) +
         ",\n" + mem(25, 4 * MiB, 14 * MiB, 0, -1) + ",\n" +
         op("cpu_op", "aten::softmax", 45, 10, 4) + ",\n" + mem(46, 4 * MiB, 18 * MiB, 0, -1) +
         ",\n" + mem(54, -4 * MiB, 14 * MiB, 0, -1) + ",\n" + op("user_annotation", "mlp", 60, 30, 5) +
         ",\n" + op("cpu_op", "aten::mm", 65, 20, 6) + ",\n" + mem(70, MiB, 3 * MiB, 1, 0) + ",\n" +
         mem(95, -4 * MiB, 10 * MiB, 0, -1) + "]}";
}

constexpr int64_t MiB = 1 << 20;

// The one GPU memory event's device fields in memory_trace().
const std::string& cuda_field() {
  static const std::string f = R"("Device Id": 0, "Device Type": 1)";
  return f;
}

TEST(Memory, ChunkCutsLeaveOneRecordPerEvent) {
  // An event cut by a chunk's end is read again from the next chunk: what the first try added is
  // taken back, memory records included, at every place a cut can fall.
  std::string one = memory_trace();
  const size_t open = one.find('[') + 1, close = one.rfind(']');
  std::string big = "{\"traceEvents\": [";
  std::string body = one.substr(open, close - open);
  for (size_t at = body.find(",\n"); at != std::string::npos; at = body.find(",\n", at + 3))
    body.replace(at, 2, "\n,");  // a line break right after each event: cuts fall there too
  for (int i = 0; i < 40; ++i) big += (i ? "\n," : "") + body;
  big += "]}";
  for (size_t chunk = 4096; chunk < 4096 + 400; chunk += 7) {
    ParseOptions o;
    o.chunk_bytes = chunk;
    const Trace t = parse_trace_text(big, "big", o);
    size_t memory_events = 0;
    for (const auto& e : t.events)
      if (e.category == Category::Memory) {
        ASSERT_EQ(e.memory_info, memory_events) << "chunk " << chunk;
        ++memory_events;
      }
    ASSERT_EQ(memory_events, 200u) << "chunk " << chunk;
    ASSERT_EQ(t.memory.size(), 200u) << "chunk " << chunk;
  }
}

TEST(Memory, ChainsListSlicesNotAllocations) {
  const Trace t = parse_trace_text(memory_trace());
  const auto lines = chain_report(TraceIndex(t), "attn");
  std::vector<std::string_view> names;
  for (const auto& l : lines) names.push_back(t.events[l.event].name);
  EXPECT_EQ(names, (std::vector<std::string_view>{"attn", "aten::bmm", "aten::softmax"}));
}

TEST(Memory, EventsAreReadWithSizeDeviceAndTotal) {
  const Trace t = parse_trace_text(memory_trace());
  ASSERT_EQ(t.memory.size(), 5u);
  int64_t n = 0;
  for (const auto& e : t.events)
    if (const MemoryInfo* m = t.memory_info(e)) {
      EXPECT_EQ(e.category, Category::Memory);
      if (n == 0) {
        EXPECT_EQ(m->bytes, 4 * MiB);
        EXPECT_EQ(m->total_allocated, 14 * MiB);
        EXPECT_FALSE(m->cuda);
      }
      if (m->cuda) {
        EXPECT_EQ(m->device, 0);
      }
      ++n;
    }
  EXPECT_EQ(n, 5);
}

// ROCm builds of torch write their GPU's memory events with "Device Type" 6 (c10::DeviceType::HIP)
// in some Kineto versions (TraceLens's MI300X Qwen trace: 1,294 allocations, a 1.06 GiB peak,
// read as host memory before): GPU memory as CUDA's 1 is.
TEST(Memory, HipsDeviceTypeIsGpuMemory) {
  std::string text = memory_trace();
  const std::string cuda = R"("Device Id": 0, "Device Type": 1)";
  text.replace(text.find(cuda), cuda.size(), R"("Device Id": 0, "Device Type": 6)");
  const Trace t = parse_trace_text(text);
  int64_t gpu = 0;
  for (const auto& e : t.events)
    if (const MemoryInfo* m = t.memory_info(e)) gpu += m->cuda && m->device == 0;
  EXPECT_EQ(gpu, 1);
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[1].cuda);
}

// Another device's memory (an Apple GPU's: "Device Type" 13, c10::DeviceType::MPS) is that
// device's, named as torch names it, and device memory in the table, not the host's; written back
// with its type.
TEST(Memory, AnotherDevicesMemoryIsNamedAsTorchNamesIt) {
  std::string text = memory_trace();
  const std::string cuda = R"("Device Id": 0, "Device Type": 1)";
  text.replace(text.find(cuda), cuda.size(), R"("Device Id": 0, "Device Type": 13)");
  const Trace t = parse_trace_text(text);
  const TraceIndex index(t);
  const auto& rows = index.memory();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_FALSE(rows[1].cuda);
  EXPECT_EQ(device_label(rows[0]), "cpu");
  EXPECT_EQ(device_label(rows[1]), "mps:0");
  EXPECT_EQ(memory_name(rows[1]), "mps:0 memory");
  EXPECT_EQ(rows[1].peak_growth, MiB);
  EXPECT_EQ(key_averages(t).find("aten::mm")->self_device_mem, MiB);
  EXPECT_EQ(key_averages(t).find("aten::mm")->self_cpu_mem, 0);
  EXPECT_NE(explain(index).find("mps:0 memory: peak 1.00 MB"), std::string::npos) << explain(index);
  std::ostringstream written;
  write_chrome_trace(t, written, WriterOptions{});
  EXPECT_NE(written.str().find(R"("Device Id": 0, "Device Type": 13)"), std::string::npos);
  EXPECT_EQ(device_type_name(20), "privateuseone");
  EXPECT_EQ(device_type_name(6), "cuda");
  EXPECT_EQ(device_type_name(42), "device type 42");
}

// A GPU run traced without the GPU's activity: no kernel and no CUDA call, its memory events on
// cuda:0 and a cuDNN operator. Not a CPU run: summary and advise say the GPU's side was not
// recorded, and advise does not take the host's time for the run's cost.
TEST(Memory, AGpuRunTracedWithoutItsGpuIsNotACpuRun) {
  std::string text = memory_trace();
  text.replace(text.find("aten::bmm"), 9, "aten::cudnn_convolution");
  const Trace t = parse_trace_text(text);
  const TraceIndex index(t);
  const DeviceUseWithoutWork use = device_use_without_work(index);
  EXPECT_EQ(use.device, "cuda:0");
  EXPECT_EQ(use.allocations, 1);
  EXPECT_EQ(use.op, "aten::cudnn_convolution");
  EXPECT_EQ(use.op_calls, 1);
  EXPECT_EQ(t.events[use.first_op].name, "aten::cudnn_convolution");
  EXPECT_EQ(t.events[use.first_memory].start_ns, 70'000);
  EXPECT_EQ(use.evidence(), "1 allocation on cuda:0; aten::cudnn_convolution called once");
  const std::string said = explain(index);
  EXPECT_EQ(said.find("(a CPU run)"), std::string::npos) << said;
  EXPECT_NE(said.find("no GPU work in this trace, though the run used cuda:0 (1 allocation on cuda:0; "
                      "aten::cudnn_convolution called once): the profiler recorded the CPU's side only"),
            std::string::npos)
      << said;
  // What runs on a GPU only: cuDNN's and MIOpen's operators by their prefix, not a name that
  // merely holds "cudnn", nor the operators that only ask whether cuDNN could run.
  // torch.compile's Triton kernels too, recorded by Inductor's launcher under their own names
  // (its CPU code is C++: cpp_fused_*).
  for (const char* gpu : {"aten::cudnn_convolution", "aten::_cudnn_rnn", "aten::miopen_batch_norm",
                          "triton_per_fused_cumsum_0", "triton_poi_fused_add_mul_1"})
    EXPECT_TRUE(is_gpu_only_operator(gpu)) << gpu;
  for (const char* not_gpu : {"my_cudnn_helper", "aten::_use_cudnn_ctc_loss", "aten::cudnn_is_acceptable",
                              "cpp_fused_add_0", "my_triton_wrapper"})
    EXPECT_FALSE(is_gpu_only_operator(not_gpu)) << not_gpu;
  // A compiled run's Triton kernels with no memory events: the GPU said by its kernels.
  std::string compiled = memory_trace();
  compiled.replace(compiled.find("aten::bmm"), 9, "triton_per_fused_cumsum_0");
  compiled.replace(compiled.find(cuda_field()), cuda_field().size(), R"("Device Id": -1, "Device Type": 0)");
  const Trace triton = parse_trace_text(compiled);
  const DeviceUseWithoutWork u3 = device_use_without_work(TraceIndex(triton));
  EXPECT_EQ(u3.device, "");
  EXPECT_EQ(u3.evidence(), "triton_per_fused_cumsum_0 called once");
  EXPECT_NE(explain(TraceIndex(triton)).find("though the run used a GPU (triton_per_fused_cumsum_0 called once)"),
            std::string::npos)
      << explain(TraceIndex(triton));
  // Two devices' memory, an MPS event first in time: the device said is the first row's (cuda:0),
  // and its first event is that device's earliest.
  std::string two = text;
  two.insert(two.rfind(']'), R"(, {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, )"
                             R"("tid": 7, "ts": 1, "args": {"Total Allocated": 64, "Bytes": 64, "Device Id": 0, )"
                             R"("Device Type": 13}})");
  const Trace both = parse_trace_text(two);
  const DeviceUseWithoutWork u2 = device_use_without_work(TraceIndex(both));
  EXPECT_EQ(u2.device, "cuda:0");
  EXPECT_EQ(both.events[u2.first_memory].start_ns, 70'000);
  EXPECT_EQ(u2.activity(), "the profiler's activities without ProfilerActivity.CUDA");
  // Host memory alone, and no GPU-only operator: a CPU run.
  std::string host = memory_trace();
  host.replace(host.find(cuda_field()), cuda_field().size(), R"("Device Id": -1, "Device Type": 0)");
  const Trace cpu = parse_trace_text(host);
  EXPECT_FALSE(device_use_without_work(TraceIndex(cpu)).found());
  EXPECT_NE(explain(TraceIndex(cpu)).find("(a CPU run)"), std::string::npos);
  // Its backward's operators on the autograd engine's thread for device 0: a device was used (the
  // engine runs a CPU backward on the calling thread). Named only where the thread ran operators.
  auto with_thread = [&](bool ops) {
    std::string text = host;
    const std::string thread = R"J({"ph": "M", "name": "thread_name", "pid": 1, "tid": 9, "args": {"name": "thread 9 (pt_autograd_0)"}})J";
    const std::string node = R"({"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: MmBackward0", )"
                             R"("pid": 1, "tid": 9, "ts": 91, "dur": 5, "args": {"External id": 9}})";
    text.insert(text.rfind(']'), ", " + thread + (ops ? ", " + node : std::string()));
    return text;
  };
  const Trace backward = parse_trace_text(with_thread(true));
  const DeviceUseWithoutWork u4 = device_use_without_work(TraceIndex(backward));
  EXPECT_EQ(u4.autograd_thread, "pt_autograd_0");
  EXPECT_EQ(u4.evidence(), "1 operator on autograd's device thread pt_autograd_0");
  EXPECT_EQ(backward.events[u4.first_autograd_op].name, "autograd::engine::evaluate_function: MmBackward0");
  EXPECT_EQ(explain(TraceIndex(backward)).find("(a CPU run)"), std::string::npos);
  EXPECT_FALSE(device_use_without_work(TraceIndex(parse_trace_text(with_thread(false)))).found());
}

TEST(Memory, TableAttributesBytesToTheInnermostOperatorAndItsAncestors) {
  const KeyAverages k = key_averages(parse_trace_text(memory_trace()));
  EXPECT_TRUE(k.has_cpu_memory);
  EXPECT_TRUE(k.has_device_memory);
  const KeyAverage* bmm = k.find("aten::bmm");
  const KeyAverage* softmax = k.find("aten::softmax");
  const KeyAverage* attn = k.find("attn");
  const KeyAverage* step = k.find("ProfilerStep*");
  const KeyAverage* mm = k.find("aten::mm");
  ASSERT_TRUE(bmm && softmax && attn && step && mm);
  EXPECT_EQ(bmm->self_cpu_mem, 4 * MiB);
  EXPECT_EQ(softmax->self_cpu_mem, 0) << "allocates 4 MiB, frees 4 MiB";
  EXPECT_EQ(attn->self_cpu_mem, 0);
  EXPECT_EQ(attn->cpu_mem, 4 * MiB);
  EXPECT_EQ(step->self_cpu_mem, -4 * MiB) << "the free at 95 µs";
  EXPECT_EQ(step->cpu_mem, 0);
  EXPECT_EQ(mm->self_device_mem, MiB);
  EXPECT_EQ(mm->self_cpu_mem, 0);
  TableOptions o;
  const std::string text = format_table(k, o);
  for (const char* column : {"CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem"})
    EXPECT_NE(text.find(column), std::string::npos) << column << "\n" << text;
  EXPECT_NE(text.find("4.00 MB"), std::string::npos) << text;
  EXPECT_NE(text.find("-4.00 MB"), std::string::npos) << text;
}

TEST(Memory, TableHasNoMemoryColumnsWithoutMemoryEvents) {
  const std::string no_memory = R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})";
  const std::string text = format_table(key_averages(parse_trace_text(no_memory)), TableOptions{});
  EXPECT_EQ(text.find("Mem"), std::string::npos) << text;
}

TEST(Memory, PeakPerDeviceAndWhereItCameFrom) {
  const Trace t = parse_trace_text(memory_trace());
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 2u);
  const MemoryRow& host = rows[0];
  EXPECT_FALSE(host.cuda);
  EXPECT_EQ(host.allocations, 2);
  EXPECT_EQ(host.frees, 2);
  EXPECT_EQ(host.allocated_bytes, 8 * MiB);
  EXPECT_EQ(host.peak_growth, 8 * MiB) << "bmm's and softmax's outputs both alive at 46 µs";
  EXPECT_EQ(host.end_growth, 0);
  EXPECT_EQ(host.peak_total, 18 * MiB);
  EXPECT_EQ(host.peak_at_ns, 46000);
  EXPECT_EQ(host.peak_range, "attn");
  EXPECT_EQ(host.peak_op, "aten::softmax");
  const MemoryRow& gpu = rows[1];
  EXPECT_TRUE(gpu.cuda);
  EXPECT_EQ(gpu.peak_growth, MiB);
  EXPECT_EQ(gpu.peak_range, "mlp");
  EXPECT_EQ(gpu.peak_op, "aten::mm");
  const std::string said = explain(TraceIndex(t));
  EXPECT_NE(said.find("host memory: peak 8.00 MB above what was held when recording began in `attn`, "
                      "aten::softmax (allocator total then 18.00 MB)"),
            std::string::npos)
      << said;
}

// A host memory event as Kineto writes it: its bytes (a free below 0) and the allocator's total.
std::string host_memory(int ts, long long bytes, long long total) {
  return R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": )" +
         std::to_string(ts) + R"(, "args": {"Bytes": )" + std::to_string(bytes) + R"(, "Total Allocated": )" +
         std::to_string(total) + R"(, "Device Type": 0, "Device Id": -1}})";
}

// A batch handed over by a DataLoader's worker processes comes in shared memory, which torch's
// MapAllocator reports with a total of 0: no total. Host memory: the CPU allocator's 4 MiB
// (total 4 MiB), then a 2 MiB shared batch (total 0) that makes the peak: 6 MiB in use, the
// allocator's total then still the CPU allocator's 4 MiB, not "0 B".
TEST(Memory, AnAllocatorThatKeepsNoTotalGivesNoneAtThePeak) {
  const auto host = host_memory;
  const Trace t = parse_trace_text("{\"traceEvents\": [" + host(10, 4 * MiB, 4 * MiB) + "," +
                                   host(20, 2 * MiB, 0) + "," + host(30, -2 * MiB, 0) + "," +
                                   host(40, -4 * MiB, 0) + "]}");
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_growth, 6 * MiB);
  EXPECT_EQ(rows[0].peak_at_ns, 20000);
  EXPECT_EQ(rows[0].peak_total, 4 * MiB);
  EXPECT_EQ(rows[0].end_growth, 0);
}

// Its frees are reported with a total of 0 too: one batch freed, the next (larger) one makes the
// peak, and the total then is still the CPU allocator's. A free of all the allocator held does
// leave a total of 0.
TEST(Memory, AFreeOfAnAllocatorThatKeepsNoTotalGivesNone) {
  const auto host = host_memory;
  const Trace shared = parse_trace_text("{\"traceEvents\": [" + host(10, 4 * MiB, 4 * MiB) + "," +
                                        host(20, 2 * MiB, 0) + "," + host(30, -2 * MiB, 0) + "," +
                                        host(40, 3 * MiB, 0) + "]}");
  auto rows = memory_report(TraceIndex(shared));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_growth, 7 * MiB);
  EXPECT_EQ(rows[0].peak_at_ns, 40000);
  EXPECT_EQ(rows[0].peak_total, 4 * MiB);

  const Trace emptied = parse_trace_text("{\"traceEvents\": [" + host(10, 4 * MiB, 4 * MiB) + "," +
                                         host(20, -4 * MiB, 0) + "," + host(30, 5 * MiB, 0) + "]}");
  rows = memory_report(TraceIndex(emptied));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_growth, 5 * MiB);
  EXPECT_EQ(rows[0].peak_at_ns, 30000);
  EXPECT_EQ(rows[0].peak_total, 0);
}

// A trace from a JSON event list (memory events written as Kineto does).
Trace events(const std::string& list) { return parse_trace_text("{\"traceEvents\": [" + list + "]}"); }
std::string slice(const char* cat, const char* name, int tid, int ts, int dur) {
  return std::string(R"({"ph": "X", "cat": ")") + cat + R"(", "name": ")" + name + R"(", "pid": 1, "tid": )" +
         std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "dur": )" + std::to_string(dur) + "}";
}
std::string alloc(int tid, int ts, long long bytes, const char* extra = "") {
  return R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": )" +
         std::to_string(tid) + R"(, "ts": )" + std::to_string(ts) + R"(, "args": {"Bytes": )" +
         std::to_string(bytes) + R"(, "Device Type": 1, "Device Id": 0)" + extra + "}}";
}

// torch 1.9's Kineto (pytorch/kineto's tb_plugin sample resnet50_num_workers_4) wrote the
// operators' tids as strings ("5786") and the memory events' as numbers (5786): one thread,
// whose allocations belong to its operators (they were in none: 0 B in every row).
TEST(Memory, ATidWrittenAsAStringIsThatThread) {
  const Trace t = events(R"({"ph": "X", "cat": "Operator", "name": "aten::empty", "pid": 1, "tid": "7", "ts": 10, "dur": 10},)" +
                         alloc(7, 15, 4 * MiB));
  const KeyAverages k = key_averages(t);
  const KeyAverage* empty = k.find("aten::empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->self_device_mem, 4 * MiB);
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_op, "aten::empty");
  // A name stays a name: "stream 7" is no thread 7, and "-1" no named lane's id; 19 digits are
  // the number's 19 digits.
  EXPECT_LT(events(R"({"ph": "X", "name": "k", "pid": 1, "tid": "stream 7", "ts": 1, "dur": 1})").events[0].tid, 0);
  const Trace lanes = events(R"({"ph": "X", "name": "a", "pid": 1, "tid": "loader", "ts": 1, "dur": 9},
    {"ph": "X", "name": "b", "pid": 1, "tid": "-1", "ts": 2, "dur": 1},
    {"ph": "X", "name": "c", "pid": 1, "tid": "1234567890123456789", "ts": 3, "dur": 1})");
  ASSERT_EQ(lanes.events.size(), 3u);
  EXPECT_NE(lanes.events[0].tid, lanes.events[1].tid);
  EXPECT_EQ(lanes.events[2].tid, 1234567890123456789);
}

TEST(Memory, NoRiseNamesNoPlaceAndAnswersNo) {
  const Trace t = events(slice("user_annotation", "attn", 1, 1, 20) + "," +
                         slice("cpu_op", "aten::empty", 1, 2, 4) + "," + alloc(1, 3, -4096) + "," +
                         alloc(1, 50, -4096));
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_growth, 0);
  EXPECT_TRUE(rows[0].peak_range.empty());
  EXPECT_TRUE(rows[0].peak_op.empty());
  EXPECT_EQ(rows[0].peak_total, -1);
  const ExpectAnswer a = check_expectation(TraceIndex(t), parse_expectation("peak-range=attn"));
  EXPECT_FALSE(a.yes) << a.line();
}

TEST(Memory, PeakPlaceFollowsTheTablesRuleAndOtherThreadsRanges) {
  // aten::tiny ends at 15 where aten::next starts; the allocation at 15 is aten::next's, in the
  // table and in the report alike.
  const Trace t = events(slice("user_annotation", "block_bwd", 1, 0, 100) + "," +
                         slice("cpu_op", "aten::big", 2, 10, 40) + "," +
                         slice("cpu_op", "aten::tiny", 2, 10, 5) + "," +
                         slice("cpu_op", "aten::next", 2, 15, 20) + "," + alloc(2, 15, 1000));
  const auto rows = memory_report(TraceIndex(t));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].peak_op, "aten::next");
  EXPECT_EQ(key_averages(t).find("aten::next")->self_device_mem, 1000);
  EXPECT_EQ(rows[0].peak_range, "block_bwd") << "the range open on another thread of the process";
}

TEST(Memory, OddArgumentValuesAreIgnoredNotFatal) {
  const Trace t = events(alloc(1, 1, 64, R"(, "Total Allocated": "n/a")") + "," +
                         R"({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 2, "args": {"Bytes": "?"}})" +
                         "," + R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3, "dur": 1, "args": {"est. achieved occupancy %": "high"}})");
  ASSERT_EQ(t.memory.size(), 1u) << "the event without a numeric size is not a memory event";
  EXPECT_EQ(t.memory[0].bytes, 64);
  EXPECT_EQ(t.memory[0].total_allocated, -1);
}

TEST(Memory, TimelineDrawsMemoryInUsePerDevice) {
  const Trace t = parse_trace_text(memory_trace());
  const std::string svg = render_svg(TraceIndex(t), SvgOptions{});
  EXPECT_NE(svg.find(">host memory<"), std::string::npos);
  EXPECT_NE(svg.find(">GPU 0 memory<"), std::string::npos);
  EXPECT_NE(svg.find("0 B to 8.00 MB"), std::string::npos) << "host: nothing, then both 4 MiB outputs";
  EXPECT_NE(svg.find("memory in use"), std::string::npos) << "in the legend";
  EXPECT_EQ(svg.find(">[memory]<"), std::string::npos) << "memory events are not drawn as slices";
  const Trace none = parse_trace_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})");
  EXPECT_EQ(render_svg(TraceIndex(none), SvgOptions{}).find("memory"), std::string::npos);
}

TEST(Memory, WriterKeepsMemoryEvents) {
  const Trace t = parse_trace_text(memory_trace());
  std::ostringstream out;
  write_chrome_trace(t, out, WriterOptions{});
  const Trace back = parse_trace_text(out.str());
  ASSERT_EQ(back.memory.size(), t.memory.size());
  for (size_t i = 0; i < t.memory.size(); ++i) {
    EXPECT_EQ(back.memory[i].bytes, t.memory[i].bytes);
    EXPECT_EQ(back.memory[i].total_allocated, t.memory[i].total_allocated);
    EXPECT_EQ(back.memory[i].cuda, t.memory[i].cuda);
  }
  EXPECT_EQ(memory_report(TraceIndex(back)).front().peak_growth, 8 * MiB);
}

}  // namespace
}  // namespace pil::trace
