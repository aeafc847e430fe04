// pil::profiler, the C++ face of torch.profiler, on the CPU: steps named and numbered as
// Python's, one grouped ProfilerStep* row, the handler's files, input shapes, FLOPs
// (with_flops), and clear exceptions on bad use.
#include "profiler/profiler.h"

#include <ATen/ThreadLocalState.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "trace/parse.h"
#include "trace/python_flops.h"

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

// A trace named .gz is written gzip-compressed, as Python's export_chrome_trace and
// tensorboard_trace_handler(use_gzip=True) write it; it reads back as the plain one. The trace
// is exported twice here, by the handler and by hand: LibTorch's result saves once (a second
// save throws "Trace is already saved." with a C++ backtrace; Python's second export fails with
// that line); pil::profiler copies that one save.
TEST(Profile, ATraceNamedGzIsGzipCompressed) {
  const fs::path dir = fresh_dir("gzip");
  ProfileOptions o;
  o.schedule = schedule(/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/1);
  o.on_trace_ready = tensorboard_trace_handler(dir, "worker0", /*use_gzip=*/true);
  profile prof(std::move(o));
  prof.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  prof.step();
  prof.stop();
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(dir)) files.push_back(f.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(std::regex_match(files[0].filename().string(),
                               std::regex(R"(worker0\.[0-9]+\.pt\.trace\.json\.gz)")))
      << files[0];
  const fs::path plain = dir / "again.pt.trace.json";
  prof.export_chrome_trace(plain);
  for (const fs::path& f : {files[0], plain}) {
    std::ifstream in(f, std::ios::binary);
    char magic[2] = {};
    in.read(magic, 2);
    EXPECT_EQ(std::string(magic, 2) == "\x1f\x8b", f == files[0]) << f;
  }
  const trace::Trace gz = trace::parse_trace_file(files[0].string()),
                     json = trace::parse_trace_file(plain.string());
  EXPECT_EQ(gz.events.size(), json.events.size());
  EXPECT_EQ(step_names(gz), (std::vector<std::string>{"ProfilerStep#0"}));
  remove_tree(dir);
}

// The "traceName" Kineto writes (the file it saved to) is the file the trace is: the first
// export's, plain or .gz, and each copy of a .gz export's private file (the saves went through
// a temporary file whose path it held, gone since), as JSON even where the path has a quote
// (Kineto wrote it unescaped: the file did not parse). A later export copied from a plain first
// one keeps the first's name (renaming it would write a trace of gigabytes twice).
TEST(Profile, TheTraceIsNamedAfterItsFile) {
  const fs::path dir = fresh_dir("named");
  fs::create_directories(dir);
  profile prof{ProfileOptions{}};
  prof.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  prof.stop();
  auto trace_name = [](const fs::path& file) {
    std::string text;
    gzFile in = gzopen(file.c_str(), "rb");  // reads a plain file as it is
    char chunk[4096];
    for (int n; in && (n = gzread(in, chunk, sizeof chunk)) > 0;) text.append(chunk, size_t(n));
    if (in) gzclose(in);
    return nlohmann::json::parse(text).value("traceName", std::string("(none)"));
  };
  const fs::path gz = dir / "a \"quoted\" name.pt.trace.json.gz", plain = dir / "b.pt.trace.json";
  prof.export_chrome_trace(gz);
  prof.export_chrome_trace(plain);
  EXPECT_EQ(trace_name(gz), gz.string());
  EXPECT_EQ(trace_name(plain), plain.string());
  profile again{ProfileOptions{}};
  again.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  again.stop();
  const fs::path first = dir / "c \"q\".pt.trace.json", copy = dir / "d.pt.trace.json";
  again.export_chrome_trace(first);
  EXPECT_EQ(trace_name(first), first.string());
  again.export_chrome_trace(copy);
  EXPECT_EQ(trace_name(copy), first.string());
  remove_tree(dir);
}

// A trace exported to a plain name is written once, straight into its file (no private copy
// in TMPDIR: a GPU trace of gigabytes was written twice); a second export copies that file, a
// third to the same name leaves it as it is, and one after the first file changed or went
// throws saying so and writes nothing. A first export that cannot make its file fails before
// LibTorch's one save is spent.
TEST(Profile, APlainExportIsWrittenOnceAndALaterOneCopiesIt) {
  const fs::path dir = fresh_dir("once"), tmpdir = fresh_dir("once_tmpdir");
  fs::create_directories(dir);
  fs::create_directories(tmpdir);
  const char* old_tmpdir = std::getenv("TMPDIR");
  const std::string kept = old_tmpdir ? old_tmpdir : "";
  ::setenv("TMPDIR", tmpdir.c_str(), 1);
  ProfileOptions o;
  profile prof(std::move(o));
  prof.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  prof.stop();
  const fs::path first = dir / "first.pt.trace.json", second = dir / "second.pt.trace.json.gz";
  // A folder that does not exist: the export fails saying so, and the recording is not spent
  // (LibTorch counts a save it could not open a file for as done).
  const std::string missing = message_of([&] { prof.export_chrome_trace(dir / "no" / "such.pt.trace.json"); });
  EXPECT_NE(missing.find("cannot write " + (dir / "no" / "such.pt.trace.json").string() + ": "), std::string::npos)
      << missing;
  prof.export_chrome_trace(first);
  EXPECT_EQ(fs::directory_iterator(tmpdir), fs::directory_iterator()) << "a private copy was written";
  prof.export_chrome_trace(second);
  prof.export_chrome_trace(first);
  EXPECT_EQ(trace::parse_trace_file(first.string()).events.size(),
            trace::parse_trace_file(second.string()).events.size());
  {
    std::ofstream edit(first, std::ios::app);
    edit << "\n";
  }
  const fs::path third = dir / "third.pt.trace.json";
  const std::string changed = message_of([&] { prof.export_chrome_trace(third); });
  EXPECT_NE(changed.find("cannot write " + third.string() + ": LibTorch saves a trace once; it went to " +
                         first.string() + ", which has changed or gone since"),
            std::string::npos)
      << changed;
  ::unlink(first.c_str());
  EXPECT_NE(message_of([&] { prof.export_chrome_trace(third); }).find("changed or gone"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(third));
  std::vector<std::string> left;
  for (const auto& f : fs::directory_iterator(dir)) left.push_back(f.path().filename().string());
  EXPECT_EQ(left, (std::vector<std::string>{"second.pt.trace.json.gz"}));
  if (old_tmpdir)
    ::setenv("TMPDIR", kept.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  remove_tree(dir);
  remove_tree(tmpdir);
}

// Metadata as Python's: add_metadata_json (JSON text), add_metadata (a string), and
// preset_metadata_json (set before recording, written into each cycle's trace). What Kineto's
// writer would break (it writes every backslash as '/': no JSON escape survives) is refused.
TEST(Profile, MetadataKeysReachTheSavedTrace) {
  const fs::path dir = fresh_dir("metadata");
  ProfileOptions o;
  o.schedule = schedule(/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/2);
  o.on_trace_ready = tensorboard_trace_handler(dir, "w");
  profile prof(std::move(o));
  prof.preset_metadata_json("run", R"({"lr": 0.01, "tags": ["a"]})");
  prof.start();
  prof.add_metadata_json("model", R"({"layers": 2})");
  prof.add_metadata("note", "batch 32, d\u00e9j\u00e0 vu, C:\\data");  // read back C:/data
  EXPECT_NE(message_of([&] { prof.add_metadata("quoted", "say \"hi\""); })
                .find("add_metadata(): the value of 'quoted' holds a quote, backslash or "
                      "control character inside a string (Kineto's writer turns every backslash "
                      "into '/'"),
            std::string::npos);
  EXPECT_NE(message_of([&] { prof.add_metadata_json("broken", "{oops"); })
                .find("the value of 'broken' is not JSON text: {oops"),
            std::string::npos);
  torch::relu(torch::ones({4}));
  prof.step();  // the first cycle saved; the second begins, with the preset again
  torch::relu(torch::ones({4}));
  prof.step();
  prof.stop();
  std::vector<nlohmann::json> traces;
  for (const auto& f : fs::directory_iterator(dir)) {
    std::ifstream in(f.path());
    traces.push_back(nlohmann::json::parse(in));  // throws on a file that is not JSON
  }
  ASSERT_EQ(traces.size(), 2u);
  int with_note = 0;
  for (const auto& t : traces) {
    EXPECT_EQ(t["run"], nlohmann::json::parse(R"({"lr": 0.01, "tags": ["a"]})"));
    EXPECT_FALSE(t.contains("quoted") || t.contains("broken"));
    if (t.contains("note")) {
      ++with_note;
      EXPECT_EQ(t["note"], "batch 32, d\u00e9j\u00e0 vu, C:/data");
      EXPECT_EQ(t["model"]["layers"], 2);
    }
  }
  EXPECT_EQ(with_note, 1) << "added while the first cycle recorded: in its trace only";
  EXPECT_NE(message_of([&] { prof.add_metadata("x", "y"); }).find("only while recording"),
            std::string::npos);
  remove_tree(dir);
}

TEST(Profile, MetadataProblemNamesWhatATraceCouldNotKeep) {
  EXPECT_EQ(metadata_problem("k", R"({"a": [1, 2.5, "x y"], "b": null})"), "");
  EXPECT_EQ(metadata_problem("k", "\"caf\u00e9\""), "") << "UTF-8 needs no escape";
  EXPECT_NE(metadata_problem("k", R"("a\\b")").find("inside a string"), std::string::npos);
  EXPECT_NE(metadata_problem("k", R"("tab\there")").find("inside a string"), std::string::npos);
  EXPECT_NE(metadata_problem("k", "1 2").find("is not JSON text"), std::string::npos);
  EXPECT_NE(metadata_problem("k", "").find("is not JSON text"), std::string::npos);
  EXPECT_NE(metadata_problem("a\"b", "1").find("the key 'a\"b' holds a quote"), std::string::npos);
  EXPECT_EQ(metadata_problem("", "1"), "the key is empty");
  profile prof;
  EXPECT_NE(message_of([&] { prof.preset_metadata_json("k", "nope"); })
                .find("preset_metadata_json(): the value of 'k' is not JSON text"),
            std::string::npos);
}

TEST(Profile, WithoutAScheduleRecordsFromStartToStopWithNoSteps) {
  profile prof;
  prof.start();
  torch::add(torch::ones({4}), 1);
  prof.stop();
  EXPECT_TRUE(step_names(prof.events()).empty());
  ASSERT_NE(prof.key_averages().find("aten::add"), nullptr);
}

// Python walks `for e in prof.key_averages():`; the C++ loops over the temporary list must not
// read a list that is gone: the list itself is a range, and rows() of a temporary is a value.
static_assert(!std::is_reference_v<decltype(std::declval<EventList>().rows())>,
              "rows() of a temporary returns the rows, not a reference into it");
static_assert(std::is_reference_v<decltype(std::declval<const EventList&>().rows())>);

TEST(Profile, KeyAveragesIsARangeOfRows) {
  profile prof;
  prof.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  torch::relu(torch::ones({4}));
  prof.stop();
  std::vector<std::string> walked, from_rows;
  for (const auto& row : prof.key_averages()) walked.push_back(row.name);
  for (const auto& row : prof.key_averages().rows()) from_rows.push_back(row.name);
  EXPECT_EQ(walked, from_rows);
  EXPECT_EQ(walked.size(), prof.key_averages().size());
  EXPECT_NE(std::find(walked.begin(), walked.end(), "aten::mm"), walked.end());
  EXPECT_NE(std::find(walked.begin(), walked.end(), "aten::relu"), walked.end());
}

// Work on a thread the program starts itself is not recorded (Python's threading.Thread's
// neither): the profiler's state belongs to the thread that started recording, and LibTorch hands
// it on to its own threads only (the intra-op pool, autograd's). A thread started while recording
// joins it with that thread's state, as LibTorch's at::launch passes it on.
TEST(Profile, AThreadOfYourOwnIsRecordedWithTheRecordingThreadsState) {
  namespace pp = pil::profiler;
  profile prof;
  prof.start();
  std::thread plain([] {
    pp::record_function range("plain_thread");
    torch::relu(torch::ones({8}));
  });
  plain.join();
  // [own_thread]
  at::ThreadLocalState state;  // this thread's state, the recording's included
  std::thread worker([state] {
    at::ThreadLocalStateGuard guard(state);  // from here this thread records into it too
    pp::record_function range("worker");
    torch::relu(torch::ones({8}));
  });
  worker.join();
  // [own_thread]
  torch::mm(torch::ones({2, 2}), torch::ones({2, 2}));
  prof.stop();
  const EventList k = prof.key_averages();
  EXPECT_EQ(k.find("plain_thread"), nullptr) << "a plain thread of the program: not recorded";
  ASSERT_NE(k.find("worker"), nullptr) << k.table();
  EXPECT_EQ(k.find("worker")->calls, 1);
  EXPECT_EQ(k.find("aten::relu")->calls, 1) << "the worker's, not the plain thread's";
  int64_t worker_tid = -1, main_tid = -1;
  for (const auto& e : prof.events().events) {
    if (e.name == "worker") worker_tid = e.tid;
    if (e.name == "aten::mm") main_tid = e.tid;
  }
  EXPECT_NE(worker_tid, main_tid) << "each on its own thread's lane";
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

uint64_t flops_of(const EventList& k, std::string_view name) {
  const trace::KeyAverage* r = k.find(name);
  return r ? r->flops : ~uint64_t(0);
}

// with_flops: the table adds up what torch counted for each call (Python's FunctionEvent.flops),
// record_shapes is turned on, and the saved trace says "with_flops" before its events, so a reader
// of the file (pil-trace ops) counts the same FLOPs from the recorded inputs.
TEST(Profile, WithFlopsCountsWhatTorchCountsAndTheSavedTraceAgrees) {
  const fs::path dir = fresh_dir("flops");
  ProfileOptions o;
  o.with_flops = true;  // record_shapes left off: with_flops turns it on
  profile prof(std::move(o));
  prof.start();
  torch::mm(torch::ones({64, 32}), torch::ones({32, 16}));  // 2 * 64 * 32 * 16 = 65536
  torch::mm(torch::ones({8, 32}), torch::ones({32, 16}));   // 2 * 8 * 32 * 16 = 8192
  torch::addmm(torch::ones({16}), torch::ones({4, 8}), torch::ones({8, 16}));  // 2*4*8*16 = 1024
  torch::bmm(torch::ones({2, 4, 8}), torch::ones({2, 8, 3}));  // 2 * 2 * 4 * 8 * 3 = 384
  // Input [1, 3, 10, 10], weight [4, 3, 3, 3], stride 2, padding 1: output 5 x 5;
  // 2 * 1 * 5 * 5 * 3 * 3 * 3 * 4 = 5400. torch counts a conv2d only when its stride, padding
  // and dilation name both dimensions, as torch::nn::Conv2d passes them ...
  torch::conv2d(torch::ones({1, 3, 10, 10}), torch::ones({4, 3, 3, 3}), {}, /*stride=*/{2, 2},
                /*padding=*/{1, 1}, /*dilation=*/{1, 1});
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(3, 4, 3).stride(2).padding(1).bias(false));
  conv->forward(torch::ones({1, 3, 10, 10}));  // 5400 more
  // ... not with torch::conv2d's defaults, one number each (IntArrayRef{1}): 0, and a warning.
  torch::conv2d(torch::ones({1, 3, 10, 10}), torch::ones({4, 3, 3, 3}));
  torch::add(torch::ones({10}), torch::ones({10}));  // the first input's elements: 10
  torch::mul(torch::ones({3, 5}), torch::ones({3, 5}));  // 15
  torch::relu(torch::ones({7}));                          // not counted
  prof.stop();

  const EventList k = prof.key_averages();
  EXPECT_TRUE(k.averages().has_flops) << k.table();
  EXPECT_EQ(flops_of(k, "aten::mm"), 65536u + 8192u);
  EXPECT_EQ(flops_of(k, "aten::addmm"), 1024u);
  EXPECT_EQ(flops_of(k, "aten::bmm"), 384u);
  EXPECT_EQ(flops_of(k, "aten::conv2d"), 5400u + 5400u);
  EXPECT_EQ(flops_of(k, "aten::add"), 10u);
  EXPECT_EQ(flops_of(k, "aten::mul"), 15u);
  EXPECT_EQ(flops_of(k, "aten::relu"), 0u);
  EXPECT_NE(k.table("count").find("Total FLOPs"), std::string::npos) << k.table("count");
  EXPECT_FALSE(prof.events().input_shapes.empty()) << "with_flops records the inputs";

  // The saved trace, read as pil-trace ops reads it: the FLOPs from the inputs equal torch's.
  fs::create_directories(dir);
  const fs::path file = dir / "flops.pt.trace.json";
  prof.export_chrome_trace(file);
  trace::ParseOptions read;
  read.read_shapes = read.read_concrete = true;
  read.shapes_for = [](std::string_view) { return false; };
  read.shapes_also_for = trace::counts_python_flops;
  read.shapes_also_if = [](const trace::Trace& head) { return head.with_flops; };
  const trace::Trace saved = trace::parse_trace_file(file.string(), read);
  EXPECT_TRUE(saved.with_flops) << "the header says with_flops";
  const EventList from_file(trace::key_averages(saved));
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d", "aten::add",
                         "aten::mul", "aten::relu"})
    EXPECT_EQ(flops_of(from_file, op), flops_of(k, op)) << op;
  remove_tree(dir);
}

// Without with_flops there is no FLOPs column, as in Python's table.
TEST(Profile, WithoutWithFlopsTheTableHasNoFlopsColumn) {
  profile prof;
  prof.start();
  torch::mm(torch::ones({4, 4}), torch::ones({4, 4}));
  prof.stop();
  EXPECT_FALSE(prof.key_averages().averages().has_flops);
  EXPECT_EQ(prof.key_averages().table().find("FLOPs"), std::string::npos);
  EXPECT_EQ(flops_of(prof.key_averages(), "aten::mm"), 0u);
}

// CUDA asked for where it is not available: Python's rule, as plain inputs (the GPU only
// confirms the available side).
TEST(Profile, ChooseActivitiesDropsCudaWithoutAGpuAsPythonDoes) {
  using A = ProfilerActivity;
  ActivityChoice both = choose_activities({A::CPU, A::CUDA}, /*cuda_available=*/true);
  EXPECT_EQ(both.activities, (std::set<A>{A::CPU, A::CUDA}));
  EXPECT_EQ(both.warning, "");
  ActivityChoice cpu = choose_activities({A::CPU, A::CUDA}, /*cuda_available=*/false);
  EXPECT_EQ(cpu.activities, (std::set<A>{A::CPU}));
  EXPECT_EQ(cpu.warning, "CUDA is not available, disabling CUDA profiling");
  EXPECT_EQ(choose_activities({A::CUDA}, true).activities, (std::set<A>{A::CUDA}));
  EXPECT_NE(message_of([] { choose_activities({A::CUDA}, false); })
                .find("activities holds only ProfilerActivity::CUDA and CUDA is not available here"),
            std::string::npos);
  EXPECT_NE(message_of([] { choose_activities({}, true); }).find("activities is empty"),
            std::string::npos);
}

// profile_memory with a recorder that records no allocations: said, not silently empty.
class NoMemoryTracer : public Tracer {
 public:
  void prepare() override {}
  void start() override {}
  void stop() override {}
  const trace::Trace& trace() const override { return empty_; }
  void save(const fs::path&) const override {}
  std::string name() const override { return "a test recorder"; }

 private:
  trace::Trace empty_;
};

TEST(Profile, ProfileMemoryWithARecorderThatRecordsNoneIsSaid) {
  ProfileOptions o;
  o.profile_memory = true;
  EXPECT_EQ(unrecorded_settings(o), "");  // LibTorch's profiler records allocations
  o.tracer = std::make_shared<NoMemoryTracer>();
  EXPECT_EQ(unrecorded_settings(o),
            "profile_memory is on, but the recorder, a test recorder, records no allocations or "
            "frees: the trace will hold no memory events (LibTorch's profiler records them)");
  testing::internal::CaptureStderr();
  { profile prof(o); }
  EXPECT_NE(testing::internal::GetCapturedStderr().find("pil::profiler: warning: profile_memory is on"),
            std::string::npos);
  o.profile_memory = false;
  EXPECT_EQ(unrecorded_settings(o), "");
  EXPECT_TRUE(libtorch_tracer({ProfilerActivity::CPU}, false, true, false)->records_memory());
}

// On this machine: CUDA alone records kernels where a GPU is, and is refused where none is.
TEST(Profile, CudaAloneOnThisMachine) {
  ProfileOptions o;
  o.activities = {ProfilerActivity::CUDA};
  if (torch::cuda::is_available()) {
    profile prof(std::move(o));
    prof.start();
    torch::mm(torch::ones({64, 64}, torch::kCUDA), torch::ones({64, 64}, torch::kCUDA));
    torch::cuda::synchronize();
    prof.stop();
    bool kernel = false;
    for (const auto& e : prof.events().events) kernel = kernel || e.category == trace::Category::Kernel;
    EXPECT_TRUE(kernel) << "a GPU: CUDA alone records the kernels";
  } else {
    EXPECT_NE(message_of([&] { profile p(std::move(o)); })
                  .find("CUDA is not available here (no GPU, or a CPU build of LibTorch)"),
              std::string::npos);
  }
}

// LibTorch's profiler is the process's: a second profile is refused while one holds it, and
// nothing of either is lost; once the first stops, the second records.
TEST(Profile, OneProfileHoldsTheProfilerAtATime) {
  const auto x = torch::ones({8, 8});
  profile a;
  profile b;
  a.start();
  EXPECT_NE(message_of([&] { b.start(); }).find("another profile is recording or warming up"),
            std::string::npos);
  EXPECT_FALSE(b.running()) << "refused: b is as it was";
  torch::mm(x, x);
  a.stop();
  ASSERT_NE(a.key_averages().find("aten::mm"), nullptr);
  b.start();
  torch::relu(x);
  b.stop();
  EXPECT_NE(b.key_averages().find("aten::relu"), nullptr);
  EXPECT_EQ(b.key_averages().find("aten::mm"), nullptr);

  // With schedules: c warms up at its step 1; d's step into recording is refused, step number
  // kept, until c's cycle is saved and c stops.
  ProfileOptions oc;
  oc.schedule = schedule(/*wait=*/1, /*warmup=*/1, /*active=*/1, /*repeat=*/1);
  profile c(std::move(oc));
  ProfileOptions od;
  od.schedule = schedule(/*wait=*/0, /*warmup=*/0, /*active=*/1, /*repeat=*/1);
  profile d(std::move(od));
  c.start();
  c.step();  // WARMUP: c holds the profiler
  EXPECT_NE(message_of([&] { d.start(); }).find("another profile"), std::string::npos);
  c.step();  // RECORD_AND_SAVE
  torch::mm(x, x);
  c.step();  // saved; NONE from here
  c.stop();
  d.start();
  torch::relu(x);
  d.stop();
  EXPECT_EQ(step_names(c.events()), (std::vector<std::string>{"ProfilerStep#2"}));
  EXPECT_EQ(step_names(d.events()), (std::vector<std::string>{"ProfilerStep#0"}));

  // Refused at step(): e waits (holds nothing) while f records; its step into recording throws
  // and leaves its step number; once f stops, the same step() records.
  ProfileOptions oe;
  oe.schedule = schedule(/*wait=*/1, /*warmup=*/0, /*active=*/1, /*repeat=*/1);
  profile e(std::move(oe));
  profile f;
  f.start();
  e.start();  // step 0: NONE
  EXPECT_NE(message_of([&] { e.step(); }).find("another profile"), std::string::npos);
  EXPECT_EQ(e.step_num(), 0);
  f.stop();
  e.step();  // step 1: RECORD_AND_SAVE
  torch::relu(x);
  e.stop();
  EXPECT_EQ(step_names(e.events()), (std::vector<std::string>{"ProfilerStep#1"}));
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
                .find("tensorboard_trace_handler: cannot create " + (file / "log").string() + ": "),
            std::string::npos);
  remove_tree(file);
  // A folder that exists but takes no file, root or not (/proc/self: access(W_OK) passed for
  // root at /sys/kernel, and the run failed only when its trace was written).
  if (fs::is_directory("/proc/self")) {
    EXPECT_NE(message_of([] { tensorboard_trace_handler("/proc/self"); })
                  .find("tensorboard_trace_handler: cannot make a file in /proc/self: "),
              std::string::npos);
  }
}

}  // namespace
}  // namespace pil::profiler
