#pragma once
// Writes small traces in Kineto's JSON shape for tests whose answers are worked out by hand
// (the planted traces of `pil-trace advise`'s rules, each with one where the rule must fire and
// one where it must not). Times are microseconds (written with three decimals, as Kineto does);
// the CPU thread is pid 100 tid 1 unless given; GPU work is on device 0.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace pil::test {

class TraceBuilder {
 public:
  /// deviceProperties of device 0 (name, SMs, memory, compute capability), for GPU traces;
  /// `major` < 0 leaves the compute capability out.
  TraceBuilder& device(const std::string& name, int sms = 132, int64_t memory = 80LL << 30,
                       int major = 9, int minor = 0) {
    device_ = "{\"id\": 0, \"name\": \"" + name + "\", \"totalGlobalMem\": " + std::to_string(memory) +
              (major < 0 ? std::string()
                         : ", \"computeMajor\": " + std::to_string(major) + ", \"computeMinor\": " +
                               std::to_string(minor)) +
              ", \"numSms\": " + std::to_string(sms) + "}";
    return *this;
  }
  /// From here on, runtime calls and GPU work carry their own correlation id as External id, as
  /// torch 2.0-2.2's Kineto wrote them (kineto b96fe09 to #873), whatever `ext` says.
  TraceBuilder& correlation_as_external_id() {
    self_linked_ = true;
    return *this;
  }
  /// Launch calls from here on get correlation ids from `first` up: GPU work given a smaller id
  /// and no call was launched before recording began.
  TraceBuilder& correlations_from(int first) {
    next_corr_ = first;
    return *this;
  }
  /// distributedInfo of one rank.
  TraceBuilder& rank(int rank, int world, const std::string& backend = "nccl") {
    distributed_ = "{\"backend\": \"" + backend + "\", \"rank\": " + std::to_string(rank) +
                   ", \"world_size\": " + std::to_string(world) + "}";
    return *this;
  }
  /// ProfilerStep#n over [ts, ts + dur).
  TraceBuilder& step(int n, double ts, double dur, int tid = 1) {
    return cpu("user_annotation", "ProfilerStep#" + std::to_string(n), ts, dur, tid);
  }
  /// A named range (record_function).
  TraceBuilder& range(const std::string& name, double ts, double dur, int tid = 1) {
    return cpu("user_annotation", name, ts, dur, tid);
  }
  /// An operator; with `dims`/`types` (JSON arrays as text: "[[64, 64], [64, 64]]",
  /// "[\"float\", \"float\"]") its recorded shapes. Returns its External id via `id` if given.
  TraceBuilder& op(const std::string& name, double ts, double dur, const std::string& dims = "",
                   const std::string& types = "", int tid = 1, int64_t* id = nullptr) {
    std::string extra;
    if (!dims.empty()) extra += ", \"Input Dims\": " + dims;
    if (!types.empty()) extra += ", \"Input type\": " + types;
    if (id) *id = next_id_;
    return cpu("cpu_op", name, ts, dur, tid, extra);
  }
  /// An operator with all three of its recorded inputs, as torch.profiler writes them with
  /// record_shapes: "Input Dims", "Input type" and "Concrete Inputs" (JSON arrays as text; the
  /// last is one string per argument: "[\"[2, 4]\", \"11\", \"\"]" for aten::ones).
  TraceBuilder& op_with_inputs(const std::string& name, double ts, double dur, const std::string& dims,
                          const std::string& types, const std::string& concrete, int tid = 1) {
    return cpu("cpu_op", name, ts, dur, tid,
               ", \"Concrete Inputs\": " + concrete + ", \"Input type\": " + types +
                   ", \"Input Dims\": " + dims);
  }
  /// Any CPU slice under the category its trace writes: torch 1.8-1.9's Kineto wrote every CPU
  /// slice as "Operator", Python's ranges ("enumerate(DataLoader)#...") included.
  TraceBuilder& slice(const char* cat, const std::string& name, double ts, double dur, int tid = 1) {
    return cpu(cat, name, ts, dur, tid);
  }
  /// A runtime call (cudaLaunchKernel, cudaMemcpyAsync, cudaStreamSynchronize...) with its
  /// correlation id; `ext` is the operator it ran in (0: none). Returns the correlation.
  int call(const std::string& name, double ts, double dur, int64_t ext = 0, int tid = 1) {
    const int corr = next_corr_++;
    add("cuda_runtime", name, "100", std::to_string(tid), ts, dur,
        "\"External id\": " + std::to_string(self_linked_ ? corr : ext) + ", \"correlation\": " +
            std::to_string(corr));
    return corr;
  }
  /// A kernel launched by call `corr` (launch shape grid 4 x 1 x 1, block 256 x 1 x 1), on
  /// device `device`.
  TraceBuilder& kernel(const std::string& name, int corr, double ts, double dur, int stream = 7,
                       int64_t ext = 0, int device = 0) {
    add("kernel", name, std::to_string(device), std::to_string(stream), ts, dur,
        gpu_args(corr, stream, ext, device) +
            ", \"grid\": [4, 1, 1], \"block\": [256, 1, 1], \"registers per thread\": 32, "
            "\"shared memory\": 0");
    return *this;
  }
  /// A kernel of grid [grid, 1, 1] (block [256, 1, 1], 32 registers, no shared memory).
  TraceBuilder& kernel_with_grid(const std::string& name, int corr, double ts, double dur, int grid, int stream = 7) {
    add("kernel", name, "0", std::to_string(stream), ts, dur,
        gpu_args(corr, stream, 0, 0) + ", \"grid\": [" + std::to_string(grid) +
            ", 1, 1], \"block\": [256, 1, 1], \"registers per thread\": 32, \"shared memory\": 0");
    return *this;
  }
  /// A copy ("Memcpy HtoD (Pageable -> Device)"...) of `bytes` (< 0: the size left out, as
  /// ROCm's traces do), launched by call `corr`.
  TraceBuilder& memcpy(const std::string& name, int corr, double ts, double dur, int64_t bytes,
                       int stream = 7) {
    add("gpu_memcpy", name, "0", std::to_string(stream), ts, dur,
        gpu_args(corr, stream, 0) + (bytes < 0 ? "" : ", \"bytes\": " + std::to_string(bytes)));
    return *this;
  }
  /// A set ("Memset (Device)") launched by call `corr`.
  TraceBuilder& memset(int corr, double ts, double dur, int64_t bytes = 4096, int stream = 7) {
    add("gpu_memset", "Memset (Device)", "0", std::to_string(stream), ts, dur,
        gpu_args(corr, stream, 0) + ", \"bytes\": " + std::to_string(bytes));
    return *this;
  }
  /// One of CUPTI's overhead records as Kineto writes it ("Activity Buffer Request": category
  /// overhead, on a lane of its own, pid -1, tid 0, no arguments).
  TraceBuilder& overhead(const std::string& name, double ts, double dur) {
    add("overhead", name, "-1", "0", ts, dur, "");
    return *this;
  }
  /// An allocation (bytes > 0) or free (bytes < 0) on device `device` (-1: host), with the
  /// allocator's total after it.
  TraceBuilder& memory(double ts, int64_t bytes, int64_t total, int device = 0, int tid = 1) {
    events_.push_back("{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": "
                      "\"[memory]\", \"pid\": 100, \"tid\": " + std::to_string(tid) + ", \"ts\": " +
                      num(ts) + ", \"args\": {\"Total Reserved\": " + std::to_string(total) +
                      ", \"Total Allocated\": " + std::to_string(total) + ", \"Bytes\": " +
                      std::to_string(bytes) + ", \"Addr\": 1, \"Device Id\": " +
                      std::to_string(device) + ", \"Device Type\": " + (device >= 0 ? "1" : "0") +
                      "}}");
    return *this;
  }
  std::string str() const {
    std::string out = "{\n  \"schemaVersion\": 1,\n";
    if (!device_.empty()) out += "  \"deviceProperties\": [" + device_ + "],\n";
    if (!distributed_.empty()) out += "  \"distributedInfo\": " + distributed_ + ",\n";
    out += "  \"baseTimeNanoseconds\": 1700000000000000000,\n  \"traceEvents\": [\n";
    for (size_t i = 0; i < events_.size(); ++i)
      out += "  " + events_[i] + (i + 1 < events_.size() ? ",\n" : "\n");
    return out + "  ]\n}\n";
  }

 private:
  TraceBuilder& cpu(const char* cat, const std::string& name, double ts, double dur, int tid,
                    const std::string& extra = "") {
    add(cat, name, "100", std::to_string(tid), ts, dur,
        "\"External id\": " + std::to_string(next_id_++) + extra);
    return *this;
  }
  std::string gpu_args(int corr, int stream, int64_t ext, int device = 0) const {
    return "\"External id\": " + std::to_string(self_linked_ ? corr : ext) + ", \"device\": " +
           std::to_string(device) + ", \"stream\": " + std::to_string(stream) + ", \"correlation\": " +
           std::to_string(corr);
  }
  void add(const char* cat, const std::string& name, const std::string& pid, const std::string& tid,
           double ts, double dur, const std::string& args) {
    events_.push_back(std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
                      "\", \"pid\": " + pid + ", \"tid\": " + tid + ", \"ts\": " + num(ts) +
                      ", \"dur\": " + num(dur) + ", \"args\": {" + args + "}}");
  }
  static std::string num(double us) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f", us);
    return buf;
  }
  std::string device_, distributed_;
  std::vector<std::string> events_;
  int64_t next_id_ = 1;
  int next_corr_ = 1;
  bool self_linked_ = false;
};

}  // namespace pil::test
