// Profile your own LibTorch program: the complete example of docs/profile_your_program.md.
// A small model, torch.profiler's schedule, a step() per iteration, the operator table and a
// trace for Perfetto, through pil::profiler (profiler/profiler.h), the project's C++ face of
// Python's torch.profiler. Built and run by the package test (tests/package/), which links it
// against the installed package: find_package(ProfilingInLibTorch), target pil::profiler.
//
//   ./profile_your_program [trace folder]     (default: log)
// [example]
#include <torch/torch.h>

#include <iostream>

#include "profiler/profiler.h"

int main(int argc, char** argv) try {
  namespace pp = pil::profiler;
  torch::nn::Sequential model(torch::nn::Linear(64, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 10));
  const torch::Tensor x = torch::randn({32, 64});

  pp::ProfileOptions options;
  options.activities = {pp::ProfilerActivity::CPU};  // add CUDA for kernels on a GPU
  options.schedule = pp::schedule(/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/1);
  options.on_trace_ready = pp::tensorboard_trace_handler(argc > 1 ? argv[1] : "log");
  options.record_shapes = true;
  pp::profile prof(std::move(options));

  prof.start();
  for (int step = 0; step < 5; ++step) {
    {
      pp::record_function range("forward");  // a named range: in the trace, the table, NVTX
      torch::NoGradGuard no_grad;
      model->forward(x);
    }
    prof.step();  // ends ProfilerStep#<step>; the schedule starts and stops the recording
  }
  prof.stop();
  std::cout << prof.key_averages().table("cpu_time_total", 10);
  return 0;
} catch (const std::exception& e) {  // a trace folder that cannot be made, say: one line, exit 1
  std::cerr << "profile_your_program: " << e.what() << "\n";
  return 1;
}
// [example]
