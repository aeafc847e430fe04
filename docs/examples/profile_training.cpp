// Profile a small training program in C++, beside its Python twin (profile_training.py): the
// example of docs/profile_your_program.md's section "The same program in Python and C++".
// A convolution, batch norm, ReLU and a linear layer, cross-entropy loss and plain SGD, on the
// CPU, profiled through pil::profiler with Python's schedule (wait 1, warmup 1, active 3) and
// record_shapes on. It prints the operator table and writes a trace for Perfetto.
//
//   cmake --build build --target profile_training
//   build/bin/profile_training [--name-optimizer] [trace folder]      (default folder: log)
//
// --name-optimizer wraps the optimizer's calls in the ranges Python's optimizers record
// (Optimizer.zero_grad#SGD.zero_grad, Optimizer.step#SGD.step), so the two tables share those
// rows; without it they are missing from C++'s table. scripts/compare_training.py runs this
// program and its twin and checks where their tables and traces differ (ctest -R compare_training).
#include <torch/torch.h>

#include <iostream>
#include <optional>
#include <string>

#include "profiler/profiler.h"

namespace pp = pil::profiler;

// [optimizer_ranges]
// Python's optimizers record each call as a range named Optimizer.<call>#<class>.<call>;
// LibTorch's record none. The same names by hand, so the two tables share these rows:
void zero_grad(torch::optim::SGD& sgd, bool name_it) {
  std::optional<pp::record_function> range;
  if (name_it) range.emplace("Optimizer.zero_grad#SGD.zero_grad");
  sgd.zero_grad();  // set_to_none = true, as Python's default
}

void step(torch::optim::SGD& sgd, bool name_it) {
  std::optional<pp::record_function> range;
  if (name_it) range.emplace("Optimizer.step#SGD.step");
  sgd.step();
}
// [optimizer_ranges]

/// The training loop, profiled: its table printed, its trace written into `folder`.
void train(const std::string& folder, bool name_optimizer) {
  // [training]
  torch::manual_seed(0);
  namespace nn = torch::nn;
  // x: [32, 3, 16, 16] -> conv [32, 8, 16, 16] -> flatten [32, 2048] -> linear [32, 10]
  nn::Sequential model(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::BatchNorm2d(8),
                       nn::ReLU(), nn::Flatten(), nn::Linear(8 * 16 * 16, 10));
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(/*lr=*/0.01));
  const torch::Tensor x = torch::randn({32, 3, 16, 16});
  const torch::Tensor y = torch::randint(0, 10, {32});  // class labels, int64

  pp::ProfileOptions options;
  options.activities = {pp::ProfilerActivity::CPU};
  options.schedule = pp::schedule(/*wait=*/1, /*warmup=*/1, /*active=*/3, /*repeat=*/1);
  options.on_trace_ready = pp::tensorboard_trace_handler(folder);
  options.record_shapes = true;
  pp::profile prof(std::move(options));

  prof.start();
  for (int i = 0; i < 5; ++i) {
    zero_grad(sgd, name_optimizer);
    const torch::Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    step(sgd, name_optimizer);
    prof.step();
  }
  prof.stop();
  std::cout << prof.key_averages().table("cpu_time_total", 15);
  // [training]
}

int main(int argc, char** argv) {
  const std::string usage = "profile_training [--name-optimizer] [trace folder] (default folder: log)";
  bool name_optimizer = false;
  std::string folder = "log";
  int folders = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: " << usage << "\n";
      return 0;
    }
    if (arg == "--name-optimizer") {
      name_optimizer = true;
    } else if (arg.empty() || arg[0] == '-' || ++folders > 1) {
      std::cerr << "profile_training: '" << arg << "': allowed: [--name-optimizer] [trace folder]\n";
      return 2;
    } else {
      folder = arg;
    }
  }
  try {  // a folder that cannot be made or written is the user's to fix: one line, exit 2
    (void)pp::tensorboard_trace_handler(folder);
  } catch (const std::exception& e) {
    std::cerr << "profile_training: " << e.what() << "; allowed: a folder that can be made and written\n";
    return 2;
  }
  try {
    train(folder, name_optimizer);
  } catch (const std::exception& e) {
    std::cerr << "profile_training: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
