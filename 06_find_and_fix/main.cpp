// 06_find_and_fix — a slow training program: find what makes it slow, fix it, measure the gain
// ===========================================================================================
//
// The question: the lessons before this one each asked a prepared question. Here nobody tells
// you what is wrong. A small decoder-only language model (lesson 04's block, stacked) trains on
// text made up and tokenised on the spot, and it is slow for several reasons, each a classic the
// series taught. Find them with the table, the timeline and `pil-trace advise`; fix the top one;
// measure the gain against the estimate advise gave; repeat.
//
//   tokens [batch, seq] -> embedding + positions -> layers x block -> LayerNorm -> LM head
//   -> logits [batch, seq, vocab] -> cross-entropy against the next tokens -> backward -> AdamW
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 06_find_and_fix
//   build/bin/06_find_and_fix --variant slow                  # the program as it was handed over
//   build/bin/pil-trace advise traces/06_find_and_fix/slow_cpu_fp32_n2.pt.trace.json
//   build/bin/06_find_and_fix --variant fix1                  # one fix more, and so on
//   build/bin/06_find_and_fix --variant all                   # all of them, side by side
//   build/bin/06_find_and_fix --list
// Defaults: batch 32, sequence 1024, 8 heads of 64 (model 512), 4 layers on a GPU; on the CPU
// batch 2, sequence 1024, 4 heads of 16 (model 64), 2 layers. The weights, the optimizer and the
// products are fp32 but for the last fix, autocast, which runs the products in --dtype (bf16,
// the GPU's default); on the CPU --dtype fp32. On the CPU the model's intra-op threads leave the
// loader's workers their cores (one thread on a 2-core machine) unless OMP_NUM_THREADS says.
//
// Variants (one call = one training step; the same seeded weights and batches in every one):
//   slow   the program as handed over, with every planted problem:
//            - attention by hand: the seq x seq scores in memory       advise: naive_attention
//            - each batch made on the training thread (text generated and tokenised in plain C++:
//              no operator, so the profiler records nothing of it)             untraced
//            - the loss token by token, as the formula reads                   op_loop
//            - the causal mask made again for each block in every step        rebuilt_constant
//            and on a GPU:
//            - the loss read (.item()) in every step, before the optimizer's step: the CPU
//              waits for the GPU, then launches the optimizer to an idle GPU   host_sync
//            - batches copied from pageable memory                            pageable_copy
//            - fp32 matrix products where bf16 would do                       fp32_gemm
//   fix1 ... fix6  each one fix more than the one before, in the order above; fix5 and fix6 are
//          the GPU's (on the CPU there is nothing for them to change)
//   fast   every fix: fix6 and bf16 autocast (with --dtype bf16)
//   Each is checked twice: its losses over all its steps against a float64 replay of the same
//   training (same weights, same batches), and against slow's (the same model must compute the
//   same thing), each within the run's dtype's tolerance.
//
// Try this (predict first, then run; --expect checks a prediction against the trace):
//   - slow: how many aten::triu per step? --expect calls:aten::triu=N
//   - slow: how many aten::log_softmax per step, at the default batch 2 x sequence 1024? And in fix3?
//   - Which of slow's ranges holds most of a step? Where does the rest of the step go?
//   - fix1 against fix2 as they run (the model's threads leave the loader a core) and with
//     OMP_NUM_THREADS=2: by how much does the loader thread help each time?
//   - fast --doc 8192: what happens to its data_wait range, and to its step?

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "harness/lesson.h"
#include "harness/named_range.h"
#include "models/synthetic_text.h"
#include "models/transformer_block.h"

namespace {

namespace F = torch::nn::functional;
using pil::models::Attention;
using pil::models::Backend;
using pil::models::Block;
using pil::models::OnlyBackend;
using pil::models::SyntheticText;

// --- The program's fixes, in the order the variants apply them --------------------------------
enum Fix : unsigned {
  kSdpa = 1u << 0,         // attention by scaled_dot_product_attention
  kLoader = 1u << 1,       // batches made by a loader thread, ahead of the step
  kBatchedLoss = 1u << 2,  // the loss as one batched cross-entropy
  kMaskOnce = 1u << 3,     // no causal mask made in the step (a block that needs one keeps its own)
  kLogEveryN = 1u << 4,    // the loss read every kLogEvery steps
  kPinned = 1u << 5,       // batches in pinned memory, copied with non_blocking
  kAutocast = 1u << 6,     // the products in --dtype under autocast
};
using Program = unsigned;  // the fixes applied: 0 is slow

struct FixStep {
  Fix fix;
  const char* what;
  const char* cause;  // the cause `pil-trace advise` names for the problem it fixes
  bool gpu_only;      // nothing to change on the CPU
};
// Largest estimated gain first, as advise orders its findings on slow's CPU trace.
constexpr std::array<FixStep, 7> kFixes = {{
    {kSdpa, "attention by scaled_dot_product_attention", "naive_attention", false},
    {kLoader, "batches made by a loader thread, ahead of the step", "untraced", false},
    {kBatchedLoss, "the loss as one batched cross-entropy", "op_loop", false},
    {kMaskOnce, "no causal mask made in the step (a block that needs one keeps its own)", "rebuilt_constant", false},
    {kLogEveryN, "the loss read every 10 steps, not every step", "host_sync", true},
    {kPinned, "batches in pinned memory, copied with non_blocking", "pageable_copy", true},
    {kAutocast, "the matrix products in --dtype under autocast", "fp32_gemm", true},
}};
constexpr Program kAllFixes = (1u << kFixes.size()) - 1;
constexpr int64_t kLogEvery = 10;

// --- The problem -------------------------------------------------------------------------------
struct Shape {
  int64_t batch, seq, heads, head_dim, layers, doc_words, workers;
  int64_t model() const { return heads * head_dim; }
  int64_t tokens() const { return batch * seq; }
};

Shape shape_of(const pil::Problem& p) {
  const auto& o = p.options;
  return {o.size, o.flag("--seq"), o.flag("--heads"), o.flag("--head-dim"), o.flag("--layers"),
          o.flag("--doc"), o.flag("--workers")};
}

// The language model: lesson 04's block, `layers` of them, between an embedding and a head.
struct LanguageModelImpl : torch::nn::Module {
  explicit LanguageModelImpl(const Shape& s)
      : embed(register_module("embed", torch::nn::Embedding(SyntheticText::kVocab, s.model()))),
        positions(register_module("positions", torch::nn::Embedding(s.seq, s.model()))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({s.model()})))),
        head(register_module("head", torch::nn::Linear(
                                         torch::nn::LinearOptions(s.model(), SyntheticText::kVocab).bias(false)))) {
    for (int64_t i = 0; i < s.layers; ++i) {
      blocks.push_back(register_module("block" + std::to_string(i), Block(s.model(), s.heads)));
      blocks.back()->aten_linear = true;  // torch::linear, one addmm per layer, as Python's F.linear
    }
    torch::NoGradGuard no_grad;
    torch::nn::init::normal_(embed->weight, 0.0, 0.02);  // GPT-2's initialisation
    torch::nn::init::normal_(positions->weight, 0.0, 0.01);
  }

  // [lm-forward]
  // ids [batch, seq] -> logits [batch, seq, vocab]
  torch::Tensor forward(const torch::Tensor& ids, Program f) {
    const int64_t b = ids.size(0), s = ids.size(1);
    torch::Tensor x = embed(ids) + positions->weight.narrow(0, 0, s);
    for (auto& block : blocks) {
      // The causal mask, made here for each block in every step, at the scores' full shape
      // [batch, heads, seq, seq], true above the diagonal. Fixed: none made here; a block that
      // needs one makes its own [seq, seq] once and keeps it (Block::causal_mask).
      const auto as_bool = torch::TensorOptions().dtype(torch::kBool).device(ids.device());
      const torch::Tensor mask =
          (f & kMaskOnce) ? torch::Tensor() : torch::ones({b, block->heads, s, s}, as_bool).triu(1);
      x = block->forward(x, (f & kSdpa) ? Attention() : Attention(Attention::Naive, Backend::Default, mask));
    }
    return head(norm(x));
  }
  // [lm-forward]

  torch::nn::Embedding embed, positions;
  std::vector<Block> blocks;
  torch::nn::LayerNorm norm;
  torch::nn::Linear head;
};
TORCH_MODULE(LanguageModel);

// --- The loss ----------------------------------------------------------------------------------
// [loss-per-token]
// The loss as the formula reads: for each position of each sequence, minus the log-probability
// the model gave the token that came next; then their mean. Some ten small operators per token,
// forward and backward.
torch::Tensor loss_per_token(const torch::Tensor& logits, const torch::Tensor& labels_on_host) {
  const std::vector<torch::Tensor> rows = logits.reshape({-1, logits.size(-1)}).unbind(0);
  const torch::Tensor next = labels_on_host.reshape({-1});
  const int64_t* next_token = next.data_ptr<int64_t>();
  torch::Tensor total;
  for (size_t i = 0; i < rows.size(); ++i) {
    const torch::Tensor nll = -torch::log_softmax(rows[i], 0)[next_token[i]];
    total = total.defined() ? total + nll : nll;
  }
  return total / double(rows.size());
}
// [loss-per-token]

// [loss-batched]
// The same mean, as one operator over every position at once.
torch::Tensor loss_batched(const torch::Tensor& logits, const torch::Tensor& labels) {
  return F::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}));
}
// [loss-batched]

// Autocast while it lives, as Python's `with torch.autocast(device, dtype)`: the products and
// the other lower-precision operators run in `dtype`; off when `on` is false.
class Autocast {
 public:
  Autocast(bool on, c10::DeviceType device, at::ScalarType dtype) : on_(on), device_(device) {
    if (!on_) return;
    was_enabled_ = at::autocast::is_autocast_enabled(device_);
    was_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, dtype);
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, was_dtype_);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_;
  c10::DeviceType device_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kFloat;
};

// --- The data ----------------------------------------------------------------------------------
// A batch on the host: the model's input ids and, one token later, the labels ([batch, seq],
// int64, both), as a data loader hands them over.
struct Batch {
  torch::Tensor ids, labels;
};

// [make-batch]
// Batch `index`: text generated and tokenised (plain C++, models/synthetic_text.h), then split
// into input ids and labels. Pinned (page-locked) where it will be copied to a GPU with
// non_blocking.
Batch make_batch(const SyntheticText& text, const Shape& s, int64_t index, bool pin) {
  const torch::Tensor tokens = text.batch(index, s.batch, s.seq, s.doc_words);  // [batch, seq + 1]
  Batch b{tokens.narrow(1, 0, s.seq).contiguous(), tokens.narrow(1, 1, s.seq).contiguous()};
  if (pin) b = {b.ids.pin_memory(), b.labels.pin_memory()};
  return b;
}
// [make-batch]

// [batch-loader]
// The fix for batches made on the training thread: `workers` threads make the batches ahead of
// the step (as a DataLoader's workers do), at most `depth` ahead (two a worker, as a
// DataLoader's prefetch_factor), and hand them over in order.
class BatchLoader {
 public:
  BatchLoader(std::function<Batch(int64_t)> make, int64_t first, int64_t workers, int64_t depth)
      : make_(std::move(make)), next_to_make_(first), next_to_hand_(first), depth_(depth) {
    for (int64_t w = 0; w < workers; ++w) threads_.emplace_back([this] { work(); });
  }
  ~BatchLoader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_) t.join();
  }
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The next batch, in order; waits while it is not ready yet.
  Batch next() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return ready_.count(next_to_hand_) || error_; });
    if (error_) std::rethrow_exception(error_);
    Batch b = std::move(ready_[next_to_hand_]);
    ready_.erase(next_to_hand_++);
    changed_.notify_all();  // room for one more
    return b;
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [&] { return stop_ || next_to_make_ < next_to_hand_ + depth_; });
      if (stop_) return;
      const int64_t index = next_to_make_++;
      lock.unlock();
      Batch b;
      std::exception_ptr error;
      try {
        b = make_(index);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error) error_ = error;
      else ready_[index] = std::move(b);
      changed_.notify_all();
    }
  }

  std::function<Batch(int64_t)> make_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int64_t, Batch> ready_;
  int64_t next_to_make_, next_to_hand_, depth_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};
// [batch-loader]

// --- The training ------------------------------------------------------------------------------
// A model, its optimizer and the losses of its steps: the run's, or a replay's (verification).
struct Trainer {
  Trainer(const Shape& s, const std::vector<torch::Tensor>& initial, c10::Device device,
          c10::ScalarType param_dtype, c10::ScalarType autocast_dtype)
      : model(s), device(device), autocast_dtype(autocast_dtype) {
    torch::NoGradGuard no_grad;
    const auto params = model->parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(initial[i]);
    model->to(device, param_dtype);
    optimizer = std::make_unique<torch::optim::AdamW>(
        model->parameters(), torch::optim::AdamWOptions(2e-3).eps(pil::adamw_eps(param_dtype)));
  }

  // [train-step]
  torch::Tensor step(Program f, const Batch& batch) {
    torch::Tensor ids = batch.ids, labels = batch.labels;
    if (device.is_cuda()) {  // pageable: a synchronous copy; pinned + non_blocking: queued
      pil::NamedRange range("to_device");
      const bool non_blocking = (f & kPinned) != 0;
      ids = ids.to(ids.options().device(device), non_blocking);
      labels = labels.to(labels.options().device(device), non_blocking);
    }
    optimizer->zero_grad();
    torch::Tensor logits, loss;
    {
      const Autocast autocast((f & kAutocast) && autocast_dtype != at::kFloat, device.type(), autocast_dtype);
      {
        pil::NamedRange range("model_fwd");
        logits = model->forward(ids, f);
      }
      pil::NamedRange range("loss");
      loss = (f & kBatchedLoss) ? loss_batched(logits, labels) : loss_per_token(logits, batch.labels);
    }
    {
      pil::NamedRange range("model_bwd");
      loss.backward();
    }
    // The loss logged once backward is done, before the optimizer's step. On a GPU .item() waits
    // for every kernel queued, backward's included; then the optimizer's hundreds of small
    // kernels are launched one by one to an idle GPU, where without the wait they would have
    // queued behind backward's.
    if (!(f & kLogEveryN) || steps % kLogEvery == 0) {
      pil::NamedRange range("log_loss");
      logged = loss.item<double>();
    }
    {
      pil::NamedRange range("optimizer_step");
      optimizer->step();
    }
    losses.push_back(loss.detach());
    ++steps;
    return losses.back();
  }
  // [train-step]

  LanguageModel model;
  c10::Device device;
  c10::ScalarType autocast_dtype;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  std::vector<torch::Tensor> losses;  // each step's, on the device
  int64_t steps = 0;
  double logged = 0;
};

// Everything a run keeps between its calls: made by make_inputs (seeded), used by the variants.
struct State {
  State(const pil::Problem& p, const Shape& s)
      : shape(s), device(p.device), dtype(p.dtype), text(p.options.seed) {
    LanguageModel init(s);  // the seeded initial weights, kept for the replays
    for (const auto& t : init->parameters()) initial.push_back(t.detach().clone());
    trainer = std::make_unique<Trainer>(s, initial, device, at::kFloat, dtype);
  }
  Shape shape;
  c10::Device device;
  c10::ScalarType dtype;
  SyntheticText text;
  std::vector<torch::Tensor> initial;  // parameters at the start (CPU, fp32)
  std::unique_ptr<Trainer> trainer;
  std::vector<Batch> batches;          // every batch the run used, in order, for the replays
  Program program = 0;                 // the variant whose steps `trainer` ran
  std::unique_ptr<BatchLoader> loader;  // last: stopped before what its threads read
};
std::shared_ptr<State> g_state;

// The losses are printed by the lesson, not by its benchmarks (which verify every case many times).
#if PIL_BENCHMARK
constexpr bool kPrintLosses = false;
#else
constexpr bool kPrintLosses = true;
#endif

// slow's losses over n steps, once computed, for the other variants' checks in the same run (on
// the host: kept to the process's end, past the CUDA runtime's).
std::map<std::string, torch::Tensor> g_slow_losses;

std::string config_key(const State& st, size_t steps) {
  const Shape& s = st.shape;
  std::ostringstream k;
  k << st.device << " " << c10::toString(st.dtype) << " " << s.batch << "x" << s.seq << " " << s.heads << "x"
    << s.head_dim << " L" << s.layers << " doc" << s.doc_words << " steps " << steps;
  return k.str();
}

// [variant-step]
// One call of a variant: one training step, its batch made here (slow) or by the loader.
torch::Tensor training_step(Program f) {
  State& st = *g_state;
  st.program = f;
  const bool pin = (f & kPinned) && st.device.is_cuda();
  Batch batch;
  if (f & kLoader) {
    if (!st.loader) {
      st.loader = std::make_unique<BatchLoader>(
          [&st, pin](int64_t k) { return make_batch(st.text, st.shape, k, pin); }, st.trainer->steps,
          st.shape.workers, /*depth=*/2 * st.shape.workers);
    }
    pil::NamedRange range("data_wait");
    batch = st.loader->next();
  } else {
    batch = make_batch(st.text, st.shape, st.trainer->steps, pin);  // on this thread, in the step
  }
  st.batches.push_back(batch);
  return st.trainer->step(f, batch);
}
// [variant-step]

// --- Verification ------------------------------------------------------------------------------
std::string losses_text(const torch::Tensor& losses) {
  std::string text;
  const torch::Tensor l = losses.to(torch::kCPU, torch::kDouble);
  for (int64_t i = 0; i < l.numel(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.5f", i ? " " : "", l[i].item<double>());
    text += buf;
  }
  return text;
}

// The losses of `steps` training steps of program `f` from the run's initial weights on the
// run's batches, parameters in `param_dtype`: what the checks compare a run's losses with.
torch::Tensor replay(Program f, size_t steps, c10::ScalarType param_dtype, Backend attention) {
  State& st = *g_state;
  Trainer t(st.shape, st.initial, st.device, param_dtype, st.dtype);
  const OnlyBackend only(attention);
  for (size_t k = 0; k < steps; ++k) t.step(f, st.batches.at(k));
  return torch::stack(t.losses);
}

// What every variant is verified by: the losses of all its steps (warm-up calls and recorded
// steps), on the device. Asked for another variant's program (the agreement with slow), the
// same training replayed with that program.
torch::Tensor losses_of(Program f, const char* name) {
  State& st = *g_state;
  const size_t steps = st.trainer->losses.size();
  if (st.program == f) {
    const torch::Tensor mine = torch::stack(st.trainer->losses);
    if (f == 0) g_slow_losses[config_key(st, steps)] = mine.cpu();
    if (kPrintLosses) std::cout << "losses over the " << steps << " steps: " << losses_text(mine) << "\n";
    return mine;
  }
  if (f == 0)
    if (auto it = g_slow_losses.find(config_key(st, steps)); it != g_slow_losses.end()) return it->second;
  const torch::Tensor theirs = replay(f, steps, at::kFloat, Backend::Default);
  if (f == 0) g_slow_losses[config_key(st, steps)] = theirs.cpu();
  if (kPrintLosses)
    std::cout << name << "'s losses, replayed on the same weights and batches: " << losses_text(theirs) << "\n";
  return theirs;
}

// The float64 reference: the same steps in float64, the batched cross-entropy, attention by
// LibTorch's own choice of kernel for float64 (what it computes does not depend on the kernel at
// this precision; the math backend would write float64 scores, and take most of a run), no
// autocast.
torch::Tensor reference(const pil::Tensors&) {
  const size_t steps = g_state->trainer->losses.size();
  return replay(kBatchedLoss | kSdpa | kMaskOnce | kLoader, steps, at::kDouble, Backend::Default);
}

// --- The problem's inputs and size -------------------------------------------------------------
// On the CPU the model's intra-op threads leave the loader's workers their cores, as lesson 05's
// ranks share theirs: the machine's cores less --workers, at least one (on this project's 2-core
// machine, one). OMP_NUM_THREADS, when set, decides instead. The same for every variant, so that
// slow and its fixes are compared on the same threads.
std::string share_cores(const pil::Problem& p) {
  const Shape s = shape_of(p);
  if (p.device.is_cuda() || std::getenv("OMP_NUM_THREADS")) return "";
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const int threads = int(std::max<int64_t>(1, cores - s.workers));
  if (at::get_num_threads() == threads) return "";
  at::set_num_threads(threads);
  return "intra-op threads: " + std::to_string(threads) + " of " + std::to_string(cores) +
         " cores, the rest kept for the loader's " + std::to_string(s.workers) +
         (s.workers == 1 ? " worker" : " workers") +
         " (a loader from fix2 on; every variant keeps them, so that they compare; OMP_NUM_THREADS=N "
         "decides instead)";
}

// Inputs: the first batch's input ids ([batch, seq], for reading); the steps make their own.
pil::Tensors make_inputs(const pil::Problem& p) {
  g_state.reset();  // stops the last run's loader
  g_state = std::make_shared<State>(p, shape_of(p));
  // Freed when the variant's run is over (its loader stopped first), while the CUDA runtime is
  // still up: a pinned batch a stream used records an event when freed, which fails once the
  // runtime has shut down (at the process's exit, before a global's destructor), and a
  // throwing destructor aborts.
  pil::after_variant([] { g_state.reset(); });
  return {make_batch(g_state->text, g_state->shape, 0, false).ids};
}

pil::MemoryNeed memory_need(const pil::Problem& p) {
  const Shape s = shape_of(p);
  const double m = double(s.model()), t = double(s.tokens()), v = double(SyntheticText::kVocab);
  const double params = double(s.layers) * 12 * m * m + 2 * v * m + double(s.seq) * m;
  const double scores = double(s.batch * s.heads) * double(s.seq) * double(s.seq);
  // weights, gradients, AdamW's moments and the initial copy; activations kept for backward;
  // the naive attention's scores (a copy, softmax, their gradients); logits and their gradient.
  const double elements = 5 * params + double(s.layers) * (20 * t * m + 4 * scores) + 4 * t * v;
  // fp32 for the run; the float64 replay, on the run's device, after it.
  if (p.device.is_cuda()) return {elements * (4 + 8), 0};
  return {elements * 4, elements * 8};
}

// --- The variants ------------------------------------------------------------------------------
std::string refuse_fp16(const pil::Problem& p) {
  if (p.dtype == at::kHalf)
    return "--dtype fp16: autocast in fp16 needs a gradient scaler, which this lesson does not have; "
           "allowed: fp32, bf16";
  return {};
}

pil::Variant variant(const std::string& name, const std::string& summary, Program f) {
  pil::Variant v{name, summary, [f](const pil::Tensors&) { return training_step(f); }};
  v.collect = [f, name](const pil::Tensors&) { return losses_of(f, name.c_str()); };
  v.check = refuse_fp16;
  if (f != 0) v.agrees_with = "slow";
  return v;
}

std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  v.push_back(variant("slow",
                      "every planted problem: naive attention, batches made on the training thread, the loss "
                      "token by token, the mask made every step; on a GPU also the loss read every step, "
                      "pageable copies, fp32 products",
                      0));
  Program f = 0;
  for (size_t i = 0; i + 1 < kFixes.size(); ++i) {
    f |= kFixes[i].fix;
    pil::Variant x = variant("fix" + std::to_string(i + 1),
                             std::string(i ? "fix" + std::to_string(i) : "slow") + " + " + kFixes[i].what +
                                 " (advise: " + kFixes[i].cause + ")",
                             f);
    x.needs_cuda = kFixes[i].gpu_only;
    v.push_back(std::move(x));
  }
  v.push_back(variant("fast", std::string("every fix: fix") + std::to_string(kFixes.size() - 1) + " + " +
                                  kFixes.back().what + " (advise: " + kFixes.back().cause + ")",
                      kAllFixes));
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "06_find_and_fix";
  l.description = "a slow language-model training program: find what makes it slow, fix it, measure";
  l.default_size = 32;
  l.default_size_cpu = 2;
  l.max_size = 4096;
  l.size_help = "Batch (sequences per step)";
  l.flags = {{"--seq", "Sequence length (tokens per sequence)", 1024, 2, 1 << 14, {}},
             {"--heads", "Attention heads", 8, 1, 256, {}},
             {"--head-dim", "Width of one head (model = heads x head-dim)", 64, 1, 1024, {}},
             {"--layers", "Transformer blocks", 4, 1, 64, {}},
             {"--doc", "Words in the document each sequence is cut from (generated and tokenised whole; "
                       "at least seq + 1 are)", 1024, 1, 1 << 20, {}},
             {"--workers", "Loader threads making batches (the variants with the loader)", 8, 1, 64, {}}};
  // On the CPU a model 64 wide, so that a default run takes seconds, and book-length documents,
  // so that making a batch takes about as long as the fixed program's step.
  l.flag_defaults_cpu = {{"--heads", 4}, {"--head-dim", 16}, {"--layers", 2}, {"--doc", 40960}, {"--workers", 1}};
  l.cpu_threads = share_cores;
  l.make_inputs = make_inputs;
  l.memory_need = memory_need;
  l.reference = reference;
  l.variants = variants();
  // One training step: forward, backward (twice the forward's products) and the optimizer:
  // 6 FLOPs per parameter of the blocks and the head per token, and causal attention's 2·seq·model
  // per token and layer, three times.
  l.flops = [](const pil::Problem& p) {
    const Shape s = shape_of(p);
    const double m = double(s.model());
    const double per_token = 6 * (double(s.layers) * 12 * m * m + m * double(SyntheticText::kVocab)) +
                             3 * double(s.layers) * 2 * double(s.seq) * m;
    return double(s.tokens()) * per_token;
  };
  l.items = [](const pil::Problem& p) { return double(shape_of(p).tokens()); };
  l.bench_sizes_gpu = {32};
  l.bench_sizes_cpu = {2};
  l.bench_flags_cpu = l.flag_defaults_cpu;
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
