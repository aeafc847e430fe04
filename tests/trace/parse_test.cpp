// The parser: both time formats, chunking, gzip, and every kind of bad input.
#include "trace/parse.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cctype>
#include <fstream>
#include <map>
#include <utility>

#include "support/run_process.h"
#include "trace/check.h"  // launch_expectations
#include "trace/key_averages.h"
#include "trace/reports.h"
#include "trace/synthetic_trace.h"
#include "trace/trace_dump.h"

namespace pil::trace {
namespace {

const Event* find(const Trace& t, std::string_view name) {
  for (const auto& e : t.events)
    if (e.name == name) return &e;
  return nullptr;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(Microseconds, TextToIntegerNanoseconds) {
  int64_t ns = 0;
  ASSERT_TRUE(microseconds_text_to_ns("1234.567", ns));
  EXPECT_EQ(ns, 1234567);
  ASSERT_TRUE(microseconds_text_to_ns("-5", ns));
  EXPECT_EQ(ns, -5000);
  ASSERT_TRUE(microseconds_text_to_ns("1.5e3", ns));
  EXPECT_EQ(ns, 1500000);
  ASSERT_TRUE(microseconds_text_to_ns("0.0004", ns));
  EXPECT_EQ(ns, 0);
  ASSERT_TRUE(microseconds_text_to_ns("0.0005", ns));
  EXPECT_EQ(ns, 1);  // rounded to the nearest
  // 19 significant digits, as old traces write absolute epoch microseconds: exact, where a
  // double would round to a multiple of 256 ns.
  ASSERT_TRUE(microseconds_text_to_ns("1700000000000001.234", ns));
  EXPECT_EQ(ns, 1700000000000001234);
  EXPECT_NE(int64_t(double(1700000000000001.234) * 1000), 1700000000000001234);
  EXPECT_FALSE(microseconds_text_to_ns("9300000000000000000", ns));  // over 2^63 ns
  EXPECT_FALSE(microseconds_text_to_ns("abc", ns));
  EXPECT_FALSE(microseconds_text_to_ns("", ns));
  EXPECT_FALSE(microseconds_text_to_ns("1.2.3", ns));
}

TEST(Parse, KinetoObjectWithItsFields) {
  const Trace t = parse_trace_text(test::synthetic_gpu_trace());
  EXPECT_EQ(t.events.size(), 20u);  // the "X" events
  EXPECT_EQ(t.flows.starts, 2);
  EXPECT_EQ(t.flows.finishes, 1);  // one arrow unpaired
  EXPECT_EQ(t.base_time_ns, 1700000000000000000);
  ASSERT_EQ(t.device_names.size(), 1u);
  EXPECT_EQ(t.device_names[0], "Test GPU");
  EXPECT_EQ(t.lane_names.at({100, 1}), "thread 1 (main)");
  const Event* gemm = find(t, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->category, Category::Kernel);
  EXPECT_EQ(gemm->start_ns, 40000);
  EXPECT_EQ(gemm->dur_ns, 100000);
  EXPECT_EQ(gemm->pid, 0);
  EXPECT_EQ(gemm->tid, 7);
  EXPECT_EQ(gemm->correlation, 7u);
  EXPECT_EQ(gemm->external_id, 4u);
  const KernelInfo* k = t.kernel_info(*gemm);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->grid[0], 64);
  EXPECT_EQ(k->block[0], 128);
  EXPECT_EQ(k->registers, 90);
  EXPECT_EQ(k->shared_memory, 4096);
  EXPECT_EQ(find(t, "matmul_add")->category, Category::UserAnnotation);
  EXPECT_EQ(find(t, "cudaGraphLaunch")->category, Category::Runtime);
  EXPECT_EQ(find(t, "Memcpy HtoD (Pageable -> Device)")->category, Category::Memcpy);
}

// Without launch shapes (summary, advise) a kernel's args are left unread after its device,
// stream and correlation: the same events, none of the shapes; a kernel whose fields come in
// another order (its stream after its grid), a CUDA and a HIP launch call alike.
// A trace that describes one GPU: its work is on that GPU whatever id it carries (ROCm's traces
// number a process's one visible GPU otherwise: TraceLens's MI300X traces, kernels on device 9
// or 2, deviceProperties id 0). With two described, an id that is neither is none of them.
TEST(Parse, OneDescribedGpuIsTheGpuOfAllTheWork) {
  const std::string one = R"({"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": 206141652992,
    "computeMajor": 9, "computeMinor": 4, "numSms": 304}], "traceEvents": []})";
  const Trace t = parse_trace_text(one, "t.json");
  ASSERT_NE(t.device_info(9), nullptr);
  EXPECT_EQ(t.device_info(9)->name, "AMD Instinct MI300X");
  EXPECT_EQ(t.compute_capability(9), 94);
  EXPECT_EQ(t.device_name(2), "AMD Instinct MI300X");
  EXPECT_EQ(t.device_info(-1), nullptr);
  const std::string two = R"({"deviceProperties": [{"id": 0, "name": "A", "computeMajor": 9, "computeMinor": 0},
    {"id": 1, "name": "B", "computeMajor": 8, "computeMinor": 0}], "traceEvents": []})";
  const Trace u = parse_trace_text(two, "t.json");
  EXPECT_EQ(u.device_name(1), "B");
  EXPECT_EQ(u.device_info(9), nullptr);
  EXPECT_EQ(u.compute_capability(9), 0);
}

TEST(Parse, LaunchShapesOnlyWhenAsked) {
  ParseOptions without;
  without.read_launch_shapes = false;
  const std::string shuffled = R"json({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 5, "dur": 2,
   "args": {"External id": 3, "grid": [8, 1, 1], "block": [64, 1, 1], "device": 1, "correlation": 9, "stream": 13}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 3,
   "args": {"External id": 3, "correlation": 9, "grid": [8, 1, 1], "block": [64, 1, 1]}}
 ]})json";
  for (const std::string& json : {test::synthetic_gpu_trace(), shuffled}) {
    const Trace all = parse_trace_text(json), few = parse_trace_text(json, "<memory>", without);
    EXPECT_FALSE(all.kernels.empty());
    EXPECT_TRUE(few.kernels.empty());
    ASSERT_EQ(few.events.size(), all.events.size());
    for (size_t i = 0; i < all.events.size(); ++i) {
      const Event &a = all.events[i], &f = few.events[i];
      SCOPED_TRACE(a.name);
      EXPECT_EQ(f.name, a.name);
      EXPECT_EQ(f.category, a.category);
      EXPECT_EQ(f.pid, a.pid);
      EXPECT_EQ(f.tid, a.tid);
      EXPECT_EQ(f.correlation, a.correlation);
      EXPECT_EQ(f.external_id, a.external_id);
      EXPECT_EQ(f.start_ns, a.start_ns);
      EXPECT_EQ(f.dur_ns, a.dur_ns);
    }
  }
  const Trace f = parse_trace_text(shuffled, "<memory>", without);
  EXPECT_EQ(f.events[0].pid, 1);   // the device
  EXPECT_EQ(f.events[0].tid, 13);  // the stream, after the shape
}

// A flow arrow is only counted: its ts is checked, what follows it is passed over unread (a name
// that is no string included), its lanes are not kept; the events around it read as before.
TEST(Parse, AnArrowIsCountedAndPassedOver) {
  const Trace t = parse_trace_text(R"json({"traceEvents": [
  {"ph": "s", "id": 1, "pid": "odd lane", "tid": 1, "ts": 5, "cat": "ac2g", "name": 7},
  {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 9, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9, "dur": 2, "args": {"device": 0, "stream": 7}}
 ]})json");
  EXPECT_EQ(t.flows.starts, 1);
  EXPECT_EQ(t.flows.finishes, 1);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.events[0].name, "k");
  EXPECT_EQ(t.events[0].tid, 7);
  // Its ts is still read, and a bad one refuses the event as before.
  EXPECT_THROW(parse_trace_text(R"json([{"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": "soon"}])json"), ParseError);
}

// torch 1.8-1.9's Kineto wrote a kernel's and a runtime call's link to their operator as
// "external id" (the operators' own as "External id"): read as the same, so the operator table
// gives the operators their GPU time (it gave none on such a trace).
TEST(Parse, TheLowerCaseExternalIdOfOldTracesLinksToo) {
  const Trace t = parse_trace_text(R"json({"traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "aten::cudnn_batch_norm", "pid": 1, "tid": 1, "ts": 10, "dur": 20,
   "args": {"External id": 42}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 5,
   "args": {"cbid": 211, "correlation": 7, "external id": 42, "external ts": 10}},
  {"ph": "X", "cat": "Kernel", "name": "bn_fw", "pid": 0, "tid": 7, "ts": 30, "dur": 9,
   "args": {"queued": 0, "device": 0, "context": 1, "stream": 7, "correlation": 7, "external id": 42}}
 ]})json");
  ASSERT_EQ(t.events.size(), 3u);
  for (const Event& e : t.events) EXPECT_EQ(e.external_id, 42u) << e.name;
  const KeyAverages table = key_averages(t);
  bool found = false;
  for (const KeyAverage& r : table.rows)
    if (r.name == "aten::cudnn_batch_norm") {
      found = true;
      EXPECT_EQ(r.self_device_ns, 9000);
    }
  EXPECT_TRUE(found);
  // The committed ResNet-50 step (torch 1.8, V100): its convolutions have GPU time.
  const Trace resnet = parse_trace_file(std::string(PIL_SOURCE_DIR) +
                                        "/docs/traces/kineto-samples/resnet50_v100_step.pt.trace.json.gz");
  int64_t conv = 0, conv_memory = 0;
  for (const KeyAverage& r : key_averages(resnet).rows)
    if (r.name == "aten::cudnn_convolution") conv = r.device_total_ns, conv_memory = r.device_mem;
  EXPECT_GT(conv, 0);
  // Its operators' tids are strings ("25738"), its memory events' numbers: the same threads, so
  // the convolutions' outputs are theirs.
  EXPECT_GT(conv_memory, 0);
}

TEST(TraceInputs, ReadOnlyWhenAsked) {
  // Python's torch.profiler with record_shapes=True (tests/trace/fixtures/make_python_trace.py):
  // y = x @ w + b, 16 x 16, three steps.
  const std::string path = std::string(PIL_TRACE_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json";
  const Trace plain = parse_trace_file(path);
  EXPECT_TRUE(plain.op_inputs.empty());
  EXPECT_TRUE(plain.input_shapes.empty());
  ParseOptions o;
  o.read_shapes = true;
  const Trace t = parse_trace_file(path, o);
  ASSERT_EQ(t.events.size(), plain.events.size());
  const Event* mm = find(t, "aten::mm");
  ASSERT_NE(mm, nullptr);
  const OpInputs* in = t.inputs_of(*mm);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->dims_text, "[[16, 16], [16, 16]]");
  EXPECT_EQ(t.input_shapes[mm->input_shapes], in->dims_text);
  ASSERT_EQ(in->args.size(), 2u);
  EXPECT_EQ(in->args[0].type, "float");
  EXPECT_EQ(in->args[0].dims, (std::vector<int64_t>{16, 16}));
  EXPECT_FALSE(in->args[0].is_list);
  // aten::add(x @ w, b, alpha=1): a tensor, a broadcast bias and a Scalar.
  const OpInputs* add = t.inputs_of(*find(t, "aten::add"));
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->dims_text, "[[16, 16], [16], []]");
  ASSERT_EQ(add->args.size(), 3u);
  EXPECT_EQ(add->args[1].dims, (std::vector<int64_t>{16}));
  EXPECT_EQ(add->args[2].type, "Scalar");
  EXPECT_TRUE(add->args[2].dims.empty());
  // Each distinct inputs once: every step's aten::mm points at the same entry.
  size_t mms = 0;
  for (const Event& e : t.events)
    if (e.name == "aten::mm") {
      ++mms;
      EXPECT_EQ(e.input_shapes, mm->input_shapes);
    }
  EXPECT_EQ(mms, 3u);
  EXPECT_LT(t.op_inputs.size(), 6u);
  // A range has none.
  EXPECT_EQ(t.inputs_of(*find(t, "matmul_add")), nullptr);
  // With the text, the table groups by input shapes as Python's group_by_input_shape does.
  const KeyAverages by_shape = key_averages(t, /*group_by_input_shape=*/true);
  bool found = false;
  for (const KeyAverage& r : by_shape.rows)
    if (r.name == "aten::mm") found = r.input_shapes == "[[16, 16], [16, 16]]" && r.calls == 3;
  EXPECT_TRUE(found);
}

TEST(TraceInputs, TensorListsNoneAndEscapedTypes) {
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::cat", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
     "args": {"External id": 1, "Input type": ["TensorList", "Scalar"],
              "Input Dims": [[[8, 16], [8, 16]], []]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::layer_norm", "pid": 1, "tid": 1, "ts": 5, "dur": 2,
     "args": {"External id": 2, "Input Dims": [[4, 8], [], [], []],
              "Input type": ["c10::BFloat16", "ScalarList", "", "float"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 9, "dur": 2,
     "args": {"External id": 3, "Input Dims": [[4, 8]]}}
  ]})";
  ParseOptions o;
  o.read_shapes = true;
  const Trace t = parse_trace_text(text, "t.json", o);
  ASSERT_EQ(t.op_inputs.size(), 3u);
  const OpInputs& cat = t.op_inputs[0];
  EXPECT_EQ(cat.dims_text, "[[[8, 16], [8, 16]], []]");
  ASSERT_EQ(cat.args.size(), 2u);
  EXPECT_TRUE(cat.args[0].is_list);
  EXPECT_EQ(cat.args[0].type, "TensorList");
  ASSERT_EQ(cat.args[0].list.size(), 2u);
  EXPECT_EQ(cat.args[0].list[1], (std::vector<int64_t>{8, 16}));
  EXPECT_TRUE(cat.args[0].dims.empty());
  const OpInputs& ln = t.op_inputs[1];
  ASSERT_EQ(ln.args.size(), 4u);
  EXPECT_EQ(ln.args[0].type, "c10::BFloat16");
  EXPECT_EQ(ln.args[2].type, "");  // None
  EXPECT_EQ(ln.args[3].type, "float");  // written with an escape
  const OpInputs& relu = t.op_inputs[2];  // no "Input type": types read as ""
  ASSERT_EQ(relu.args.size(), 1u);
  EXPECT_EQ(relu.args[0].type, "");
  EXPECT_EQ(relu.args[0].dims, (std::vector<int64_t>{4, 8}));
}

// "Concrete Inputs" (read_concrete): a factory's sizes, which its Input Dims do not give.
// aten::ones twice of one size, once of another; a mask's triu (a tensor: "", a Scalar: "1").
std::string concrete_trace(const std::string& odd_concrete) {
  auto ones = [](int id, int ts, const char* sizes) {
    return std::string(R"({"ph": "X", "cat": "cpu_op", "name": "aten::ones", "pid": 1, "tid": 1, "ts": )") +
           std::to_string(ts) + R"(, "dur": 2, "args": {"External id": )" + std::to_string(id) +
           R"(, "Concrete Inputs": [")" + sizes + R"(", "11", "", "", ""],)" +
           R"( "Input type": ["ScalarList", "Scalar", "", "", ""], "Input Dims": [[], [], [], [], []]}})";
  };
  return std::string(R"({"traceEvents": [
    )") + ones(1, 1, "[2, 4, 1024, 1024]") + ",\n    " + ones(2, 5, "[3, 4, 1024, 1024]") +
         ",\n    " + ones(3, 9, "[2, 4, 1024, 1024]") + R"(,
    {"ph": "X", "cat": "cpu_op", "name": "aten::triu", "pid": 1, "tid": 1, "ts": 13, "dur": 2,
     "args": {"External id": 4, "Input Dims": [[1024, 1024], []], "Input type": ["bool", "Scalar"],
              "Concrete Inputs": ["", "1"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::full", "pid": 1, "tid": 1, "ts": 17, "dur": 2,
     "args": {"External id": 5, "Input Dims": [[], [], []], "Input type": ["ScalarList", "Scalar", "Scalar"],
              "Concrete Inputs": )" + odd_concrete + R"(}}
  ]})";
}

// torch 1.7's profiler (pytorch/kineto's 2020 ResNet-50 sample, a bare event array) spelt the
// shapes "Input dims": read as "Input Dims" (the roofline and advise said the trace had none).
TEST(TraceInputs, TheOldInputDimsSpellingIsRead) {
  ParseOptions o;
  o.read_shapes = true;
  const Trace t = parse_trace_text(R"([{"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "1", "ts": 1,
    "dur": 2, "args": {"Input dims": [[4, 8], [8, 2]], "Input type": [], "External id": 2}}])", "t.json", o);
  ASSERT_EQ(t.op_inputs.size(), 1u);
  EXPECT_EQ(t.op_inputs[0].dims_text, "[[4, 8], [8, 2]]");
}

TEST(TraceInputs, ConcreteInputsTellFactorySizesApart) {
  const std::string text = concrete_trace(R"(["[8]", "0.5"])");  // one short: the last reads ""
  ParseOptions o;
  o.read_shapes = true;
  const Trace dims_only = parse_trace_text(text, "t.json", o);
  o.read_concrete = true;
  const Trace t = parse_trace_text(text, "t.json", o);
  ASSERT_EQ(t.events.size(), 5u);
  // Without them the three ones look the same; with them the two sizes have entries of their own.
  EXPECT_EQ(dims_only.op_inputs.size(), 3u);
  EXPECT_EQ(dims_only.events[0].input_shapes, dims_only.events[1].input_shapes);
  EXPECT_FALSE(dims_only.op_inputs[0].has_concrete);
  EXPECT_EQ(dims_only.op_inputs[0].args[0].concrete, "");
  ASSERT_EQ(t.op_inputs.size(), 4u);
  const Event &a = t.events[0], &b = t.events[1], &c = t.events[2];
  EXPECT_EQ(a.input_shapes, c.input_shapes) << "the same call: one entry";
  EXPECT_NE(a.input_shapes, b.input_shapes);
  const OpInputs* in = t.inputs_of(a);
  ASSERT_NE(in, nullptr);
  EXPECT_TRUE(in->has_concrete);
  EXPECT_EQ(in->dims_text, "[[], [], [], [], []]");
  EXPECT_EQ(t.input_shapes[b.input_shapes], "[[], [], [], [], []]") << "the same text";
  ASSERT_EQ(in->args.size(), 5u);
  EXPECT_EQ(in->args[0].type, "ScalarList");
  EXPECT_EQ(in->args[0].concrete, "[2, 4, 1024, 1024]");
  EXPECT_EQ(in->args[1].concrete, "11");
  EXPECT_EQ(in->args[4].concrete, "");
  EXPECT_EQ(t.inputs_of(b)->args[0].concrete, "[3, 4, 1024, 1024]");
  EXPECT_EQ(t.inputs_of(b)->args[1].type, "Scalar");
  const OpInputs* triu = t.inputs_of(t.events[3]);
  ASSERT_NE(triu, nullptr);
  EXPECT_EQ(triu->args[0].dims, (std::vector<int64_t>{1024, 1024}));
  EXPECT_EQ(triu->args[0].concrete, "");
  EXPECT_EQ(triu->args[1].concrete, "1");
  const OpInputs* full = t.inputs_of(t.events[4]);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->args[1].concrete, "0.5");
  EXPECT_EQ(full->args[2].concrete, "");
  // The table grouped by input shapes is Python's: one row for the three ones, as without them.
  for (const Trace* read : {&dims_only, &t}) {
    const KeyAverages by_shape = key_averages(*read, /*group_by_input_shape=*/true);
    size_t ones_rows = 0;
    for (const KeyAverage& r : by_shape.rows)
      if (r.name == "aten::ones") {
        ++ones_rows;
        EXPECT_EQ(r.input_shapes, "[[], [], [], [], []]");
        EXPECT_EQ(r.calls, 3);
      }
    EXPECT_EQ(ones_rows, 1u);
  }
  // Read on three threads in small chunks: the same entries, the views moved to the trace's keys.
  ParseOptions p = o;
  p.threads = 3;
  p.chunk_bytes = 64;
  EXPECT_EQ(test::dump(parse_trace_text(text, "t.json", p)), test::dump(t));
}

TEST(TraceInputs, MalformedConcreteInputsReadAsAbsent) {
  ParseOptions o;
  o.read_shapes = o.read_concrete = true;
  // Not an array: none read (the call keeps its dims and types).
  for (const char* odd : {R"("[8]")", "null", "7", R"({"a": "[8]"})"}) {
    SCOPED_TRACE(odd);
    const Trace t = parse_trace_text(concrete_trace(odd), "t.json", o);
    ASSERT_EQ(t.events.size(), 5u);
    const OpInputs* full = t.inputs_of(t.events[4]);
    ASSERT_NE(full, nullptr);
    EXPECT_FALSE(full->has_concrete);
    EXPECT_EQ(full->dims_text, "[[], [], []]");
    EXPECT_EQ(full->args[1].type, "Scalar");
    EXPECT_EQ(full->args[0].concrete, "");
    EXPECT_FALSE(t.skipped.any());
  }
  // Items that are not strings read as "", a string with an escape as its text, one too many is
  // left out.
  const Trace t = parse_trace_text(concrete_trace(R"([8, null, "0.5", ["x"]])"), "t.json", o);
  const OpInputs* full = t.inputs_of(t.events[4]);
  ASSERT_NE(full, nullptr);
  EXPECT_TRUE(full->has_concrete);
  ASSERT_EQ(full->args.size(), 3u);
  EXPECT_EQ(full->args[0].concrete, "");
  EXPECT_EQ(full->args[1].concrete, "");
  EXPECT_EQ(full->args[2].concrete, "0.5");
  // An array that is not valid JSON refuses the event, as a bad "Input Dims" does: reading on
  // past it would read what follows from the wrong place.
  EXPECT_THROW(parse_trace_text(concrete_trace(R"(["[8]" "0.5"])"), "t.json", o), ParseError);
}

TEST(TraceDevices, PropertiesInFull) {
  // HTA's AlexNet trace (A100s) and its ROCm one (MI250, ROCm 6.2): Kineto writes the same
  // fields on both (libkineto/src/DeviceProperties.cpp), CUs as numSms on ROCm.
  const std::string dir = std::string(PIL_TRACE_FIXTURES_DIR) + "/hta/";
  const Trace a100 = parse_trace_file(dir + "alexnet_two_streams.json.gz");
  ASSERT_FALSE(a100.devices.empty());
  EXPECT_EQ(a100.devices.size(), a100.device_names.size());
  const DeviceInfo& d = a100.devices[0];
  EXPECT_EQ(d.id, 0);
  EXPECT_EQ(d.name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(d.total_global_mem, 42297524224);
  EXPECT_EQ(d.num_sms, 108);
  EXPECT_EQ(d.compute_major, 8);
  EXPECT_EQ(d.compute_minor, 0);
  EXPECT_EQ(d.warp_size, 32);
  const Trace mi250 = parse_trace_file(dir + "mi250_rocm6_2_train.json.gz");
  ASSERT_EQ(mi250.devices.size(), 4u);
  EXPECT_EQ(mi250.devices[1].id, 1);
  EXPECT_EQ(mi250.devices[1].name, "AMD Radeon Graphics");
  EXPECT_EQ(mi250.devices[1].num_sms, 104);
  EXPECT_EQ(mi250.devices[1].compute_major, 9);
  EXPECT_EQ(mi250.devices[1].total_global_mem, 68702699520);
  EXPECT_EQ(mi250.devices[1].warp_size, 64);
}

// Each operator's self GPU time, worked out the slow and plain way: each piece of GPU work to the
// innermost operator or range around its launch call (same process and thread), the call found
// by correlation id. What torch's table gives, and what the External id names where it is an
// operator's (before torch 2.0 and since 2.3).
std::map<std::string, int64_t> self_device_by_nesting(const Trace& t) {
  std::map<uint64_t, const Event*> call_of;
  for (const Event& e : t.events)
    if (is_launch_call(e.category) && e.correlation) call_of.emplace(e.correlation, &e);
  std::map<std::string, int64_t> out;
  for (const Event& w : t.events) {
    if (!is_device_work(w.category)) continue;
    const auto call = call_of.find(w.correlation);
    if (call == call_of.end()) continue;
    const Event& c = *call->second;
    const Event* inner = nullptr;
    for (const Event& o : t.events)
      if (is_torch_scope(o.category) && o.pid == c.pid && o.tid == c.tid && o.start_ns <= c.start_ns &&
          c.end_ns() <= o.end_ns() && (!inner || o.dur_ns < inner->dur_ns))
        inner = &o;
    if (inner) out[std::string(table_name(inner->name))] += w.dur_ns;
  }
  return out;
}

// Real traces other projects wrote, each operator's self GPU time against the plain count above:
// HTA's AlexNet (torch 2.1, Kineto of September 2023, which wrote each launch's and kernel's own
// correlation id as its External id: by that id, aten::view and aten::reshape had GPU time),
// PARAM's DLRM rank (torch 2.1 as well, with NCCL), HTA's MI250 (ROCm 6.2, linked by External
// id) and the committed ResNet-50 step (torch 1.8).
TEST(Parse, EachOperatorsGpuTimeIsWhatItsLaunchesRanOnRealTraces) {
  const std::string hta = std::string(PIL_TRACE_FIXTURES_DIR) + "/hta/";
  for (const std::string& path :
       {hta + "alexnet_two_streams.json.gz", hta + "mi250_rocm6_2_train.json.gz",
        std::string(PIL_TRACE_FIXTURES_DIR) + "/param/dlrm_rank0.pt.trace.json.gz",
        std::string(PIL_SOURCE_DIR) + "/docs/traces/kineto-samples/resnet50_v100_step.pt.trace.json.gz"}) {
    SCOPED_TRACE(path);
    const Trace t = parse_trace_file(path);
    const std::map<std::string, int64_t> want = self_device_by_nesting(t);
    ASSERT_FALSE(want.empty());
    std::map<std::string, int64_t> got;
    for (const KeyAverage& r : key_averages(t).rows)
      if (!r.device_work && r.self_device_ns) got[r.name] = r.self_device_ns;
    EXPECT_EQ(got, want);
  }
}

TEST(Parse, AbsoluteEpochTimesKeepEveryNanosecond) {
  const int64_t offset_us = 1700000000000000;  // old traces: epoch microseconds
  const Trace t = parse_trace_text(test::synthetic_gpu_trace(offset_us, false, false));
  const Event* gemm = find(t, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->start_ns, offset_us * 1000 + 40000);
  EXPECT_EQ(gemm->dur_ns, 100000);
  // The table is the same whichever clock the trace uses.
  const auto rel = key_averages(parse_trace_text(test::synthetic_gpu_trace()).events);
  const auto abs = key_averages(t.events);
  EXPECT_EQ(rel.self_cpu_total_ns, abs.self_cpu_total_ns);
  EXPECT_EQ(rel.self_device_total_ns, abs.self_device_total_ns);
}

TEST(Parse, BareArrayAndUnsortedEvents) {
  const std::string full = test::synthetic_gpu_trace(0, true);
  const size_t open = full.find('[', full.find("traceEvents"));
  const size_t close = full.rfind(']');
  const Trace t = parse_trace_text(full.substr(open, close - open + 1));
  EXPECT_EQ(t.events.size(), 20u);
  EXPECT_EQ(key_averages(t.events).find("matmul_add")->self_cpu_ns, 17000);
}

TEST(Parse, ChunkSizeDoesNotChangeTheResult) {
  test::TempDir dir;
  // Many copies of the synthetic events, so the file spans many small chunks.
  std::string one = test::synthetic_gpu_trace();
  const size_t open = one.find('[', one.find("traceEvents")) + 1, close = one.rfind(']');
  const std::string body = one.substr(open, close - open);
  std::string big = "{\"traceEvents\": [";
  for (int i = 0; i < 300; ++i) big += (i ? "," : "") + body;
  big += "], \"baseTimeNanoseconds\": 42}";
  const std::string path = dir.path() + "/big.json";
  write(path, big);
  ParseOptions small;
  small.chunk_bytes = 4096;
  const Trace a = parse_trace_file(path, small), b = parse_trace_file(path);
  EXPECT_EQ(a.events.size(), 6000u);
  EXPECT_EQ(b.events.size(), 6000u);
  EXPECT_EQ(a.base_time_ns, 42);
  EXPECT_EQ(key_averages(a.events).self_cpu_total_ns, key_averages(b.events).self_cpu_total_ns);
  EXPECT_EQ(walk_trace_file(path, small), 300u * 24u);
}

TEST(Parse, GzipFilesAreReadByContent) {
  test::TempDir dir;
  const std::string path = dir.path() + "/trace.json.gz";
  const std::string text = test::synthetic_gpu_trace();
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), unsigned(text.size()));
  gzclose(f);
  EXPECT_EQ(parse_trace_file(path).events.size(), 20u);
}

struct Bad {
  std::string name, text, must_say;
};

class BadTrace : public ::testing::TestWithParam<Bad> {};

TEST_P(BadTrace, IsOneClearErrorNotACrash) {
  try {
    parse_trace_text(GetParam().text, "t.json");
    FAIL() << "no error for " << GetParam().name;
  } catch (const ParseError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("t.json: ", 0), 0u) << what;
    EXPECT_NE(what.find(GetParam().must_say), std::string::npos) << what;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, BadTrace,
    ::testing::Values(
        Bad{"empty", "", "empty"}, Bad{"blank", "  \n ", "empty"},
        Bad{"not_json", "hello", "not JSON"}, Bad{"a_number", "42", "not a Chrome trace: a JSON number"},
        Bad{"a_literal", " null", "not a Chrome trace: a JSON literal"},
        Bad{"wrong_shape", "{\"events\": []}", "no \"traceEvents\""},
        Bad{"events_not_array", "{\"traceEvents\": 5}", "not an array"},
        Bad{"truncated", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1, \"dur\": 2}, {\"ph\": \"X\"",
            "event 1"},
        Bad{"truncated_after_comma", "[{\"ph\": \"X\", \"ts\": 1},", "truncated"},
        Bad{"negative_duration", "[{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": -3}]",
            "negative duration"},
        Bad{"number_too_large", "[{\"ph\": \"X\", \"ts\": 99999999999999999999999, \"dur\": 1}]",
            "too large"},
        Bad{"ts_not_number", "[{\"ph\": \"X\", \"ts\": true, \"dur\": 1}]", "'ts'"},
        Bad{"event_not_object", "[{\"ph\": \"X\", \"ts\": 1}, 7]", "event 1"},
        Bad{"missing_ts", "[{\"ph\": \"X\", \"dur\": 1}]", "without 'ts'"},
        Bad{"grid_not_valid_json",
            "[{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1, \"args\": {\"grid\": [9 ,3 1, 1]}}]",
            "'grid' is not a valid array"},
        Bad{"garbage_after", "[{\"ph\": \"X\", \"ts\": 1}] trailing", "after the event array"},
        Bad{"two_documents", "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1}]}\n{\"traceEvents\": []}\n",
            "two JSON documents in one file"},
        Bad{"text_after_the_object", "{\"traceEvents\": [], \"a\": \"}\"} x", "after the trace's closing '}'"},
        Bad{"stray_bracket_before_the_end", "{\"traceEvents\": []]}", "after the event array"},
        // torch 1.13's with_stack on Windows: paths with single backslashes, no JSON reader's.
        Bad{"windows_path_in_a_name",
            R"([{"ph": "X", "cat": "python_function", "name": "torch\profiler\profiler.py(500): step", "ts": 1, "dur": 2}])",
            "'name' holds \"\\p\", an escape JSON does not allow (a Windows path"},
        Bad{"windows_user_folder_in_a_name",
            R"([{"ph": "X", "cat": "python_function", "name": "C:\Users\a\train.py(3): <module>", "ts": 1, "dur": 2}])",
            "'name' holds \"\\U\""},
        Bad{"unicode_escape_without_hex",
            R"([{"ph": "X", "cat": "python_function", "name": "C:\users\a", "ts": 1, "dur": 2}])",
            "'name' holds \"\\u\""}),
    [](const ::testing::TestParamInfo<Bad>& i) { return i.param.name; });

TEST(Parse, ATraceCutShortAtAnyByteSaysItWasTruncated) {
  // A writer stopped mid-file (the program killed while writing) is the usual bad trace: every
  // cut of a real one, before its events, inside one, between two or after the array, is said
  // to be "truncated" in one line, by one thread or several and whatever the chunk size.
  std::ifstream in(std::string(PIL_TRACE_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GT(text.size(), 5000u);
  ASSERT_NO_THROW(parse_trace_text(text, "t.json"));
  ParseOptions small_chunks;
  small_chunks.chunk_bytes = 512;
  ParseOptions two_threads = small_chunks;
  two_threads.threads = 2;
  const std::pair<const char*, ParseOptions> ways[] = {
      {"default", ParseOptions{}}, {"512-byte chunks", small_chunks}, {"two threads", two_threads}};
  size_t last_ws = text.size();  // the cut must leave something of the file out
  while (last_ws > 0 && std::isspace(static_cast<unsigned char>(text[last_ws - 1]))) --last_ws;
  const size_t first = text.find('{');  // before it, blanks: an empty file
  for (const auto& [way, options] : ways)
    for (size_t cut = first + 1; cut < last_ws; cut += 3) {
      try {
        parse_trace_text(text.substr(0, cut), "t.json", options);
        ADD_FAILURE() << way << ": no error for the first " << cut << " bytes";
      } catch (const ParseError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        EXPECT_EQ(what.rfind("t.json: truncated: ", 0), 0u) << way << ", " << cut << " bytes: " << what;
      }
    }
}

TEST(Parse, ATraceWrittenTwiceIntoOneFileIsRefusedByEveryReader) {
  // Two runs appending to one file: the second document used to be passed over, the first read
  // as the whole trace. One thread or several, the tail read in place or on its own.
  std::ifstream in(std::string(PIL_TRACE_FIXTURES_DIR) + "/python_cpu_steps.pt.trace.json");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  ParseOptions small_chunks;
  small_chunks.chunk_bytes = 512;
  ParseOptions two_threads = small_chunks;
  two_threads.threads = 2;
  for (const ParseOptions& o : {ParseOptions{}, small_chunks, two_threads}) {
    EXPECT_NO_THROW(parse_trace_text(text + "\n \n", "t.json", o));
    try {
      parse_trace_text(text + text, "t.json", o);
      ADD_FAILURE() << "no error with " << o.threads << " threads, chunks of " << o.chunk_bytes;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("two JSON documents in one file"), std::string::npos) << e.what();
    }
  }
}

TEST(Parse, BrokenEventInsideTheFirstChunkIsAnErrorNotACrash) {
  // Found by the fuzzer: a stray quote makes simdjson reject the whole first chunk.
  std::string text = "[{\"ph\": \"X\", \"ts\": 1},\n{\"ph\": \"X\"rnel\", \"ts\": 2}";
  while (text.size() < 9000) text += ",\n{\"ph\": \"X\", \"ts\": 3}";
  text += "]";
  ParseOptions small;
  small.chunk_bytes = 4096;
  EXPECT_THROW(parse_trace_text(text, "t.json", small), ParseError);
}

TEST(Parse, APhaseGivenTwiceCountsTheLastAndItsEventKeepsItsName) {
  // Found by the fuzzer: an event that said "s" (a flow arrow) before its name, then "X". JSON's
  // last key wins: it is a slice, and its name must be kept like any other (one thread and
  // several read it alike).
  std::string text = "[{\"ph\": \"s\", \"name\": \"twice\", \"ph\": \"X\", \"ts\": 1, \"dur\": 2}";
  while (text.size() < 3000) text += ",\n{\"ph\": \"X\", \"name\": \"other\", \"ts\": 3}";
  text += "]";
  for (unsigned threads : {1u, 3u}) {
    ParseOptions o;
    o.threads = threads;
    o.chunk_bytes = 256;
    const Trace t = parse_trace_text(text, "t.json", o);
    ASSERT_FALSE(t.events.empty());
    EXPECT_EQ(t.events[0].name, "twice") << threads << " threads";
    EXPECT_EQ(t.flows.starts, 0) << threads << " threads";
  }
}

TEST(Parse, EmptyNamesAreFine) {
  // Found by the fuzzer: an empty string as the first name interned.
  const Trace t = parse_trace_text("[{\"ph\": \"X\", \"cat\": \"\", \"name\": \"\", \"ts\": 1}]");
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_TRUE(t.events[0].name.empty());
}

TEST(Parse, MissingFileAndFolderAreNamed) {
  test::TempDir dir;
  try {
    parse_trace_file(dir.path() + "/nope.json");
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("nope.json: cannot open"), std::string::npos) << e.what();
  }
  try {
    parse_trace_file(dir.path());
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
}

TEST(Parse, UnpairedFlowsAndUnknownPhasesAreFine) {
  const Trace t = parse_trace_text(
      "[{\"ph\": \"s\", \"id\": 1, \"pid\": 1, \"tid\": 1, \"ts\": 5, \"cat\": \"ac2g\"},"
      " {\"ph\": \"i\", \"name\": \"mark\", \"ts\": 6, \"pid\": 1, \"tid\": 1},"
      " {\"ph\": \"X\", \"name\": \"a\", \"cat\": \"cpu_op\", \"ts\": 1, \"dur\": 0,"
      "  \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\"}]");
  EXPECT_EQ(t.flows.starts, 1);
  EXPECT_EQ(t.flows.finishes, 0);
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_LT(t.events[0].pid, 0);  // a named lane
  EXPECT_EQ(t.events[0].dur_ns, 0);
}

// HIP writes ids as strings: a stream as a pointer in hex ("0x0"), sizes and kinds in decimal.
TEST(Parse, IdsGivenAsHexOrDecimalStrings) {
  const std::string text = R"({"traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 5, "dur": 1, "args": {"device": "3", "stream": "0x1f", "correlation": "0x10", "External id": "12", "kind": "Dispatch Kernel"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipGraphLaunch", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"External id": 12, "correlation": 16, "stream": "0x5612a0c3e4f0", "size": "4096", "kind": "3"}}
  ]})";
  const Trace t = parse_trace_text(text);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].pid, 3);
  EXPECT_EQ(t.events[0].tid, 31);
  EXPECT_EQ(t.events[0].correlation, 16u);
  EXPECT_EQ(t.events[0].external_id, 12u);
  EXPECT_FALSE(t.skipped.any());
  const TraceIndex index(t);
  EXPECT_EQ(index.launch_of(0), 1);
  const LaunchReport r = launch_report(index);
  EXPECT_EQ(r.graph_launches, 1) << "hipGraphLaunch is a graph launch, as cudaGraphLaunch is";
  EXPECT_EQ(index.synchronizes().size(), 0u);
}

// Kineto's ROCm traces write a hipMemsetAsync's internal dispatch as a second call of the same
// correlation id and time, misnamed "hipArray3DCreate", before the call itself (ROCm/aorta's
// MI350X trace, correlations 45 and 80): the call that starts GPU work owns the kernel, so check
// finds no launch without work, and launches names hipMemsetAsync. Written after, the same.
TEST(Parse, OfTwoCallsOfOneCorrelationTheOneThatStartsGpuWorkOwnsIt) {
  for (const bool memset_first : {false, true}) {
    const std::string fill = R"({"ph": "X", "cat": "cuda_runtime", "name": "hipArray3DCreate", "pid": 1, "tid": 1, "ts": 10, "dur": 8, "args": {"cid": 1, "correlation": 45, "grid": [256, 1, 1], "block": [256, 1, 1]}})";
    const std::string memset = R"({"ph": "X", "cat": "cuda_runtime", "name": "hipMemsetAsync", "pid": 1, "tid": 1, "ts": 10, "dur": 9, "args": {"cid": 293, "correlation": 45}})";
    const std::string text = "{\"traceEvents\": [" + (memset_first ? memset + ", " + fill : fill + ", " + memset) +
                             R"(, {"ph": "X", "cat": "kernel", "name": "__amd_rocclr_fillBufferAligned.kd", "pid": 2, "tid": 1, "ts": 25, "dur": 2, "args": {"device": 0, "stream": 1, "correlation": 45, "kind": "Dispatch Kernel"}}]})";
    const Trace t = parse_trace_text(text);
    const TraceIndex index(t);
    const long call = index.launch_of(2);
    ASSERT_GE(call, 0);
    EXPECT_EQ(t.events[size_t(call)].name, "hipMemsetAsync") << (memset_first ? "memset first" : "memset second");
    const LaunchExpectations x = launch_expectations(index);
    ASSERT_EQ(x.expecting.size(), 1u);
    EXPECT_EQ(index.work_of(x.expecting[0]).size(), 1u) << "hipMemsetAsync found its kernel";
  }
}

// torch 1.8-1.9's Kineto (pytorch/kineto's ResNet-50 samples, docs/traces/kineto-samples/) wrote
// categories capitalised ("Operator", "Runtime", "Kernel") and the step as an operator: it is the
// step all the same; an operator of another name stays an operator.
TEST(Parse, AnOldTracesStepWrittenAsAnOperatorIsAStep) {
  const Trace t = parse_trace_text(R"({"traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 1, "tid": "1", "ts": 1, "dur": 20, "args": {"External id": 4}},
  {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": "1", "ts": 2, "dur": 5, "args": {"External id": 5}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": "1", "ts": 3, "dur": 2, "args": {"correlation": 9, "external id": 5}},
  {"ph": "X", "cat": "Kernel", "name": "gemm", "pid": 0, "tid": "stream 7", "ts": 30, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 9, "external id": 5}}
  ]})");
  ASSERT_NE(find(t, "ProfilerStep#5"), nullptr);
  EXPECT_EQ(find(t, "ProfilerStep#5")->category, Category::UserAnnotation);
  EXPECT_EQ(find(t, "aten::mm")->category, Category::CpuOp);
  EXPECT_EQ(find(t, "cudaLaunchKernel")->category, Category::Runtime);
  EXPECT_EQ(find(t, "gemm")->category, Category::Kernel);
  const TraceIndex index(t);
  EXPECT_EQ(index.steps.size(), 1u);
}

TEST(Parse, HipSynchronizesAreSynchronizes) {
  for (const char* name : {"hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize"}) {
    Event e;
    e.name = name;
    e.category = Category::Runtime;
    EXPECT_TRUE(is_synchronize(e)) << name;
  }
}

}  // namespace
}  // namespace pil::trace
