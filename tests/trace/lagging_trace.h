#pragma once
// Small GPU traces whose answers are worked out by hand, each written two ways: as Kineto writes
// it on CUDA, and as Kineto writes it on ROCm (HIP names in the runtime events; "stream" given
// as a pointer in hex on the CPU side, "size" and "kind" as decimal strings, the GPU work's
// "kind" as text, as libkineto's RoctracerActivity writes them). A ROCm trace and its CUDA twin
// must give the same answers, up to the API names.
//
// lagging_gpu_trace(): the GPU runs 1.5 steps behind the CPU. Times in microseconds.
//   CPU thread (pid 100, tid 1):
//     cudaLaunchKernel [20,25] corr 90                  (before the steps: outside every step)
//     ProfilerStep#1 [100,200)  ProfilerStep#2 [200,300)  ProfilerStep#3 [300,400)
//     in each step s: cudaLaunchKernel [s+10,s+15] and [s+60,s+65], one kernel each
//     in step 2 also: cudaMemcpyAsync [270,272] corr 60 (a copy on stream 8)
//     cudaDeviceSynchronize [400,560] corr 99
//   GPU 0 stream 7: warmup [30,40] corr 90;
//                   step 1's k1 [250,300] k2 [300,350]; step 2's [350,400] [400,450];
//                   step 3's [450,500] [500,550] (each kernel 50 us, back to back)
//   GPU 0 stream 8: Memcpy DtoD [420,440] corr 60 (overlaps stream 7's [400,450] by 20 us)
//   GPU 0 stream 9: orphan [220,230] corr 77 (no launch call in the trace: placed by its start;
//                   no launch shape either, as on ROCm, where the shape is on the call)
//   GPU 0 stream 7: a gpu_user_annotation "step_range" [250,550] (not busy time)
//
// two_stream_trace(): no steps; GPU 0 stream 7 kernel a [0,100] corr 1, stream 8 kernel b
//   [50,150] corr 2 and kernel c [160,170] corr 3, launched by calls on pid 100 tid 1 at [0,1],
//   [0,1], [1,2].
#include <cstdint>
#include <string>
#include <vector>

namespace pil::test {

enum class Flavor { Cuda, Rocm };

namespace detail {

class EventWriter {
 public:
  explicit EventWriter(Flavor f) : f_(f) {}
  int grid = 4;  ///< the grid's x of the kernels written from now on
  /// A runtime call named by its CUDA name ("cudaLaunchKernel"); on ROCm, the HIP one.
  void call(const std::string& cuda_name, double ts, double end, int corr, int ext = 0,
            bool copy = false) {
    const bool rocm = f_ == Flavor::Rocm;
    std::string name = rocm ? "hip" + cuda_name.substr(4) : cuda_name;
    std::string args = "\"External id\": " + std::to_string(ext);
    if (rocm) {
      args += ", \"cid\": 7, \"correlation\": " + std::to_string(corr);
      if (cuda_name == "cudaLaunchKernel")
        args += ", \"stream\": \"0x5612a0c3e4f0\", \"grid\": [" + std::to_string(grid) +
                ", 1, 1], \"block\": [256, 1, 1], \"shared memory\": 0";
      if (copy)
        args += ", \"stream\": \"0x5612a0c3e4f0\", \"src\": \"0x7f3a00000000\", \"dst\": "
                "\"0x7f3a00100000\", \"size\": \"4096\", \"kind\": \"3\"";
    } else {
      args += ", \"correlation\": " + std::to_string(corr);
    }
    x("cuda_runtime", name, "100", "1", ts, end, args);
  }
  /// GPU work on device 0.
  void work(const char* cat, const std::string& name, int stream, double ts, double end, int corr,
            int ext = 0, bool shape = true) {
    const bool rocm = f_ == Flavor::Rocm;
    std::string args = "\"External id\": " + std::to_string(ext) + ", \"device\": 0, \"stream\": " +
                       std::to_string(stream) + ", \"correlation\": " + std::to_string(corr);
    if (rocm)
      args += std::string(", \"kind\": \"") +
              (std::string(cat) == "kernel" ? "Dispatch Kernel" : "DtoD") + "\"";
    else if (std::string(cat) == "kernel" && shape)  // the shape HIP gives too (no registers)
      args += ", \"grid\": [" + std::to_string(grid) + ", 1, 1], \"block\": [256, 1, 1], \"shared memory\": 0";
    x(cat, name, "0", std::to_string(stream), ts, end, args);
  }
  void range(const char* cat, const std::string& name, const char* pid, const char* tid, double ts,
             double end, int ext) {
    x(cat, name, pid, tid, ts, end, "\"External id\": " + std::to_string(ext));
  }
  std::string str() const {
    std::string out = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [{\"id\": 0, \"name\": \"";
    out += f_ == Flavor::Rocm ? "AMD Radeon Graphics" : "Test GPU";
    out += "\"}],\n  \"baseTimeNanoseconds\": 1700000000000000000,\n  \"traceEvents\": [\n";
    for (size_t i = 0; i < ev_.size(); ++i) out += "  " + ev_[i] + (i + 1 < ev_.size() ? ",\n" : "\n");
    return out + "  ]\n}\n";
  }

 private:
  void x(const char* cat, const std::string& name, const std::string& pid, const std::string& tid,
         double ts, double end, const std::string& args) {
    ev_.push_back(std::string("{\"ph\": \"X\", \"cat\": \"") + cat + "\", \"name\": \"" + name +
                  "\", \"pid\": " + pid + ", \"tid\": " + tid + ", \"ts\": " + num(ts) +
                  ", \"dur\": " + num(end - ts) + ", \"args\": {" + args + "}}");
  }
  static std::string num(double us) { return std::to_string(int64_t(us)) + ".000"; }
  Flavor f_;
  std::vector<std::string> ev_;
};

}  // namespace detail

inline std::string lagging_gpu_trace(Flavor flavor = Flavor::Cuda) {
  detail::EventWriter w(flavor);
  w.call("cudaLaunchKernel", 20, 25, 90);
  w.work("kernel", "warmup", 7, 30, 40, 90);
  int corr = 10;
  double gpu = 250;
  for (int s = 1; s <= 3; ++s) {
    const double at = 100.0 * s;
    w.range("user_annotation", "ProfilerStep#" + std::to_string(s), "100", "1", at, at + 100, s);
    for (double offset : {10.0, 60.0}) {
      w.call("cudaLaunchKernel", at + offset, at + offset + 5, corr, s);
      w.work("kernel", "step" + std::to_string(s) + "_k", 7, gpu, gpu + 50, corr, s);
      gpu += 50;
      ++corr;
    }
  }
  w.call("cudaMemcpyAsync", 270, 272, 60, 2, /*copy=*/true);
  w.work("gpu_memcpy", "Memcpy DtoD (Device -> Device)", 8, 420, 440, 60, 2);
  w.work("kernel", "orphan", 9, 220, 230, 77, 0, /*shape=*/false);  // as HIP's: no call, no shape
  w.range("gpu_user_annotation", "step_range", "0", "7", 250, 550, 2);
  w.call("cudaDeviceSynchronize", 400, 560, 99);
  return w.str();
}

/// One kernel name at two launch shapes, five calls each: 10 us at grid 1, 100 us at grid 100
/// (no outlier against its own shape; ten by name alone).
inline std::string two_shape_trace(Flavor flavor = Flavor::Cuda) {
  detail::EventWriter w(flavor);
  w.range("user_annotation", "ProfilerStep#1", "100", "1", 0, 3000, 1);
  for (int k = 0; k < 10; ++k) {
    w.grid = k < 5 ? 1 : 100;
    const double at = 10 + 200.0 * k;
    w.call("cudaLaunchKernel", at, at + 5, 10 + k, 1);
    w.work("kernel", "copy_k", 7, at + 10, at + 10 + (k < 5 ? 10 : 100), 10 + k, 1);
  }
  return w.str();
}

inline std::string two_stream_trace(Flavor flavor = Flavor::Cuda) {
  detail::EventWriter w(flavor);
  w.call("cudaLaunchKernel", 0, 1, 1);
  w.call("cudaLaunchKernel", 0, 1, 2);
  w.call("cudaLaunchKernel", 1, 2, 3);
  w.work("kernel", "a", 7, 0, 100, 1);
  w.work("kernel", "b", 8, 50, 150, 2);
  w.work("kernel", "c", 8, 160, 170, 3);
  return w.str();
}

}  // namespace pil::test
