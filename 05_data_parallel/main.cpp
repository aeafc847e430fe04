// 05_data_parallel — training over several ranks with c10d: does the all-reduce hide behind
// backward?
// ==============================================================================================
//
// The question: lesson 03's GeGLU MLP (a few of them stacked, residual), trained data-parallel —
// every rank holds the whole model, takes its part of the global batch, and the ranks average
// their gradients with an all-reduce before each optimizer step. Done after backward, the
// all-reduce is pure waiting. Done as DistributedDataParallel does it — gradients gathered in
// buckets, each bucket all-reduced as soon as backward has produced it — it can run while
// backward still computes the earlier layers. How much of the all-reduce hides behind backward
// at this bucket size? And when one rank is slower, how long do the others wait for it?
// Guess first, then look.
//
//   per layer l: h = h + down_l(gelu(gate_l(h), tanh) * up_l(h));  loss = mean((h - target)^2)
//   x, target: [batch, seq, model] per rank (the global batch is ranks x batch)
//
// Build and run (from the project root; ./run-lesson does set-up, build and run in one go):
//   cmake --build build --target 05_data_parallel
//   ./run-lesson 05_data_parallel --ranks 2              # two processes, Gloo on the CPU
//   build/bin/05_data_parallel --ranks 2 --bucket-kb 256 # smaller buckets, more of them
//   torchrun --nproc-per-node 2 --no-python build/bin/05_data_parallel   # or any launcher that sets RANK,
//       # WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (Slurm with those exported)
//   build/bin/05_data_parallel --ranks 2 --backend nccl  # one GPU per rank (needs 2 GPUs)
// Each rank writes its trace and summary (`..._rank<k>...`); rank 0 ends each variant with the
// table across ranks (pil-trace ranks on the rank traces) and a picture with a lane per rank:
//   build/bin/pil-trace ranks traces/05_data_parallel/bucketed_cpu_fp32_n8_rank*.pt.trace.json
//
// Variants:
//   allreduce_after  forward, backward, then every gradient all-reduced in one call (one flat
//                    buffer) and waited for, then the SGD step
//   bucketed         gradients copied into buckets of --bucket-kb as backward produces them (a
//                    hook per weight); a full bucket's all-reduce starts at once, during
//                    backward; after backward the step waits for the rest (DDP's way)
// Both are checked: after every step every rank holds the same weights, and these equal a
// float64 training on the whole global batch in one process, step by step.
//
// Try this (predict first, then run):
//   - --bucket-kb 64, then 4096: how many collectives per step, and how much of them is hidden?
//   - --ranks 1: what is left of the all-reduce?
//   - PIL_TEST_RANK_FAIL=1:hang --comm-timeout-s 5: what does rank 0 say, and when?

#include <torch/torch.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <iostream>
#include <memory>

#include "harness/distributed.h"
#include "harness/lesson.h"
#include "harness/named_range.h"

namespace {

// --- The problem -----------------------------------------------------------------------------
constexpr double kLearningRate = 0.01;

int64_t seq(const pil::Problem& p) { return p.options.flag("--seq"); }
int64_t model(const pil::Problem& p) { return p.options.flag("--model"); }
int64_t hidden(const pil::Problem& p) { return p.options.flag("--hidden"); }
int64_t layers(const pil::Problem& p) { return p.options.flag("--layers"); }

/// One forward on one rank: three products of tokens x model x hidden per layer, 2 FLOP each.
double forward_flops(const pil::Problem& p) {
  return double(layers(p)) * 3 * 2.0 * double(p.options.size) * double(seq(p)) * double(model(p)) *
         double(hidden(p));
}

/// One training step: the forward's 3 products a layer and backward's 6 (each weight's gradient
/// and each product's input gradient), but for the first layer's gate and up, whose input x
/// needs no gradient: 9 L - 2 products of the forward's 3 L (not 3 times the forward).
double training_flops(const pil::Problem& p) {
  const double l = double(layers(p));
  return forward_flops(p) * (9 * l - 2) / (3 * l);
}

// The stack of GeGLU MLPs; weights per layer: gate [hidden, model], up [hidden, model],
// down [model, hidden]. The same code runs the variants and the float64 reference.
torch::Tensor forward(const torch::Tensor& x, const std::vector<torch::Tensor>& w) {
  torch::Tensor h = x;
  for (size_t l = 0; l + 2 < w.size(); l += 3)
    h = h + torch::matmul(torch::gelu(torch::matmul(h, w[l].t()), "tanh") * torch::matmul(h, w[l + 1].t()),
                          w[l + 2].t());
  return h;
}

torch::Tensor loss_of(const torch::Tensor& x, const torch::Tensor& target, const std::vector<torch::Tensor>& w) {
  return (forward(x, w) - target).pow(2).mean();
}

c10d::ProcessGroup& pg() { return *pil::dist::group().pg; }

// Waits for a collective; a peer that died or hung becomes one line naming what waited.
void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
  try {
    work->wait();
  } catch (const std::exception& e) {
    pil::dist::collective_failed(what, e);
  }
}

// [buckets]
// Gradient buckets, DDP style: weights grouped in the order backward produces their gradients
// (last layer first) until a bucket holds --bucket-kb; a weight is never split.
struct Buckets {
  struct Bucket {
    std::vector<size_t> weights;
    std::vector<int64_t> offsets;
    torch::Tensor flat;  // [elements], the bucket's gradients, all-reduced in place
    int pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<Bucket> buckets;
  std::vector<std::pair<size_t, int64_t>> where;  // weight -> (bucket, offset)
  bool armed = false;

  void build(const std::vector<torch::Tensor>& w, int64_t cap_bytes) {
    buckets.clear();
    where.assign(w.size(), {0, 0});
    int64_t bytes = cap_bytes;  // start a new bucket at once
    for (size_t i = w.size(); i-- > 0;) {
      if (bytes >= cap_bytes) buckets.emplace_back(), bytes = 0;
      Bucket& b = buckets.back();
      const int64_t offset = b.offsets.empty() ? 0 : b.offsets.back() + w[b.weights.back()].numel();
      b.weights.push_back(i);
      b.offsets.push_back(offset);
      where[i] = {buckets.size() - 1, offset};
      bytes += w[i].numel() * int64_t(w[i].element_size());
    }
    for (Bucket& b : buckets)
      b.flat = torch::zeros({b.offsets.back() + w[b.weights.back()].numel()}, w[0].options().requires_grad(false));
  }

  void arm() {
    for (Bucket& b : buckets) b.pending = int(b.weights.size()), b.work.reset();
    armed = true;
  }

  // Called from weight i's gradient hook, during backward.
  void on_gradient(size_t i, const torch::Tensor& g) {
    if (!armed) return;
    Bucket& b = buckets[where[i].first];
    b.flat.narrow(0, where[i].second, g.numel()).copy_(g.reshape({-1}));
    if (--b.pending > 0) return;
    pil::NamedRange range("bucket#" + std::to_string(where[i].first) + " all_reduce");
    b.flat.div_(pil::dist::group().size);  // the mean over ranks, as DDP
    std::vector<torch::Tensor> t{b.flat};
    b.work = pg().allreduce(t);  // asynchronous: backward goes on
  }

  // After backward: wait for every bucket, then the averaged gradients become the weights'.
  void finish(const std::vector<torch::Tensor>& w) {
    armed = false;
    for (Bucket& b : buckets) {
      wait(b.work, "the all-reduce of a gradient bucket");
      for (size_t k = 0; k < b.weights.size(); ++k) {
        const torch::Tensor& p = w[b.weights[k]];
        p.mutable_grad().copy_(b.flat.narrow(0, b.offsets[k], p.numel()).view_as(p));
      }
    }
  }
};
// [buckets]

// The model and its state live across the calls of a run; make_inputs builds them.
struct State {
  std::vector<torch::Tensor> weights;
  // In bf16 and fp16, an fp32 copy of each weight takes the SGD step, as mixed-precision training
  // keeps master weights: a step of lr x gradient, about 1e-3 of a weight here, is under half a
  // bf16 step of the weight (2^-8 of it) and would round away. Empty in fp32 and fp64.
  std::vector<torch::Tensor> master;
  std::vector<torch::Tensor> initial64;  // the weights at the start, float64, for the reference
  std::vector<torch::Tensor> updates;    // after each step: all weights minus the initial ones
  Buckets buckets;
};
const auto g_state = std::make_shared<State>();

// Inputs, in order: this rank's x and target [batch, seq, model], then the global batch's
// [ranks x batch, seq, model] (for the reference). Every rank draws the same global batch from
// the seed and takes its slice.
pil::Tensors make_inputs(const pil::Problem& p) {
  const int rank = pil::dist::group().rank, ranks = pil::dist::group().size;
  const int64_t b = p.options.size, m = model(p), h = hidden(p);
  const auto draw = torch::TensorOptions().dtype(torch::kFloat).device(p.device);
  State& s = *g_state;
  s.weights.clear();
  for (int64_t l = 0; l < layers(p); ++l)
    for (auto shape : {std::vector<int64_t>{h, m}, {h, m}, {m, h}})
      s.weights.push_back((torch::randn(shape, draw) / std::sqrt(double(shape[1]))).to(p.dtype));
  // Rank 0's weights everywhere, as DDP does when it wraps a model (one flat buffer).
  {
    std::vector<torch::Tensor> flat_parts;
    for (const auto& w : s.weights) flat_parts.push_back(w.reshape({-1}));
    std::vector<torch::Tensor> flat{torch::cat(flat_parts)};
    wait(pg().broadcast(flat), "the broadcast of rank 0's weights");
    int64_t offset = 0;
    for (auto& w : s.weights) {
      w.copy_(flat[0].narrow(0, offset, w.numel()).view_as(w));
      offset += w.numel();
    }
  }
  s.initial64.clear();
  s.master.clear();
  for (auto& w : s.weights) {
    w.requires_grad_(true);
    s.initial64.push_back(w.detach().to(torch::kDouble));
    if (c10::elementSize(p.dtype) < 4) s.master.push_back(w.detach().to(torch::kFloat));
  }
  s.updates.clear();
  s.buckets.build(s.weights, p.options.flag("--bucket-kb") * 1024);
  for (size_t i = 0; i < s.weights.size(); ++i)
    s.weights[i].register_hook([i](const torch::Tensor& g) { g_state->buckets.on_gradient(i, g); });
  const std::vector<int64_t> global{ranks * b, seq(p), m};
  const torch::Tensor x = torch::randn(global, draw).to(p.dtype), t = torch::randn(global, draw).to(p.dtype);
  return {x.narrow(0, rank * b, b), t.narrow(0, rank * b, b), x, t};
}

pil::MemoryNeed memory_need(const pil::Problem& p) {
  const double tokens = double(p.options.size) * double(seq(p)) * pil::dist::group().size;
  const double weights = 3.0 * double(layers(p)) * double(model(p)) * double(hidden(p));
  const double activations = tokens * (4.0 * double(model(p)) + 6.0 * double(hidden(p))) * double(layers(p));
  const double master = c10::elementSize(p.dtype) < 4 ? 4 * weights : 0;  // fp32 copies (State)
  return {(4 * weights + activations) * double(c10::elementSize(p.dtype)) + master,
          2 * (weights + activations) * 8.0};
}

// --- The reference: float64, one process, the whole global batch, step by step ---------------
// What is checked: the weights' change from the start after every step, on this rank, then the
// largest difference between ranks (0 when every rank holds the same weights).
torch::Tensor reference(const pil::Tensors& in) {
  const torch::Tensor x = in[2].to(torch::kDouble), t = in[3].to(torch::kDouble);
  std::vector<torch::Tensor> w;
  for (const auto& w0 : g_state->initial64) w.push_back(w0.clone().requires_grad_(true));
  std::vector<torch::Tensor> updates;
  for (size_t step = 0; step < g_state->updates.size(); ++step) {
    const auto grads = torch::autograd::grad({loss_of(x, t, w)}, w);
    std::vector<torch::Tensor> change;
    for (size_t i = 0; i < w.size(); ++i) {
      w[i] = (w[i] - kLearningRate * grads[i]).detach().requires_grad_(true);
      change.push_back((w[i].detach() - g_state->initial64[i]).reshape({-1}));
    }
    updates.push_back(torch::cat(change));
  }
  return torch::cat({torch::stack(updates).reshape({-1}), torch::zeros({1}, x.options())});
}

torch::Tensor collect(const pil::Tensors&) {
  const torch::Tensor mine = torch::stack(g_state->updates);
  std::vector<torch::Tensor> hi{mine.clone()}, lo{mine.clone()};
  c10d::AllreduceOptions max_op, min_op;
  max_op.reduceOp = c10d::ReduceOp::MAX;
  min_op.reduceOp = c10d::ReduceOp::MIN;
  wait(pg().allreduce(hi, max_op), "the check that every rank holds the same weights");
  wait(pg().allreduce(lo, min_op), "the check that every rank holds the same weights");
  const torch::Tensor spread = (hi[0] - lo[0]).abs().max().reshape({1});
  std::cout << "ranks agree: the largest difference between the ranks' weights over "
            << g_state->updates.size() << " steps is " << spread.item<double>() << "\n";
  return torch::cat({mine.reshape({-1}), spread.to(mine.scalar_type())});
}

// --- The variants ----------------------------------------------------------------------------
// [allreduce-after]
// Every gradient in one flat buffer, one all-reduce, waited for: nothing overlaps it.
void allreduce_after_backward(const std::vector<torch::Tensor>& w) {
  std::vector<torch::Tensor> grads;
  for (const auto& p : w) grads.push_back(p.grad().reshape({-1}));
  std::vector<torch::Tensor> flat{torch::cat(grads).div_(pil::dist::group().size)};
  wait(pg().allreduce(flat), "the all-reduce of the gradients");
  int64_t offset = 0;
  for (const auto& p : w) {
    p.mutable_grad().copy_(flat[0].narrow(0, offset, p.numel()).view_as(p));
    offset += p.numel();
  }
}
// [allreduce-after]

// [training-step]
torch::Tensor training_step(const pil::Tensors& in, bool bucketed) {
  State& s = *g_state;
  for (auto& w : s.weights) w.mutable_grad() = torch::Tensor();
  torch::Tensor loss;
  {
    pil::NamedRange range("forward");
    loss = loss_of(in[0], in[1], s.weights);
  }
  if (bucketed) s.buckets.arm();
  {
    pil::NamedRange range("backward");  // bucketed: the hooks start all-reduces in here
    loss.backward();
  }
  if (bucketed) {
    pil::NamedRange range("allreduce_wait");
    s.buckets.finish(s.weights);
  } else {
    pil::NamedRange range("allreduce");
    allreduce_after_backward(s.weights);
  }
  {
    pil::NamedRange range("optimizer_step");  // plain SGD: w -= lr * mean gradient
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < s.weights.size(); ++i) {
      torch::Tensor& w = s.weights[i];
      if (s.master.empty()) {
        w.sub_(w.grad(), kLearningRate);
      } else {  // bf16, fp16: the fp32 copy takes the step, the weight its rounding
        s.master[i].sub_(w.grad().to(torch::kFloat), kLearningRate);
        w.copy_(s.master[i]);
      }
    }
  }
  {
    pil::NamedRange range("keep_for_check");  // the weights' change, checked after the run
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> change;
    for (size_t i = 0; i < s.weights.size(); ++i) {
      const torch::Tensor& now = s.master.empty() ? s.weights[i] : s.master[i];
      change.push_back((now.to(torch::kDouble) - s.initial64[i]).reshape({-1}));
    }
    s.updates.push_back(torch::cat(change).to(s.weights[0].scalar_type()));
  }
  return loss.detach();
}
// [training-step]

std::vector<pil::Variant> variants() {
  std::vector<pil::Variant> v;
  pil::Variant after{"allreduce_after", "backward, then all gradients all-reduced in one call, then SGD",
                     [](const pil::Tensors& in) { return training_step(in, false); }};
  after.collect = collect;
  after.flops = training_flops;
  v.push_back(after);
  pil::Variant bucketed{"bucketed",
                        "gradients all-reduced in buckets of --bucket-kb from hooks during backward (DDP)",
                        [](const pil::Tensors& in) { return training_step(in, true); }};
  bucketed.collect = collect;
  bucketed.flops = training_flops;
  v.push_back(bucketed);
  return v;
}

pil::Lesson make_lesson() {
  pil::Lesson l;
  l.name = "05_data_parallel";
  l.description = "data-parallel training of stacked GeGLU MLPs over c10d ranks (Gloo on CPUs, NCCL on GPUs)";
  l.default_size = 8;
  l.max_size = 65536;
  l.size_help = "Batch per rank";
  l.flags = {{"--seq", "Sequence length", 32, 1, 1 << 20, {}},
             {"--model", "Model width (features in and out)", 128, 1, 1 << 16, {}},
             {"--hidden", "Hidden width of gate and up", 512, 1, 1 << 18, {}},
             {"--layers", "GeGLU MLPs stacked (3 weights each)", 4, 1, 256, {}},
             {"--bucket-kb", "Gradient bucket size in KiB (bucketed)", 1024, 1, 1 << 22, {}}};
  l.distributed = true;
  l.make_inputs = make_inputs;
  l.memory_need = memory_need;
  l.reference = reference;
  l.variants = variants();
  l.bench_sizes_cpu = {};  // several processes per run: no Google Benchmark suite
  l.bench_sizes_gpu = {};
  l.flops = forward_flops;
  l.bytes = [](const pil::Problem& p) {
    return 3.0 * double(layers(p)) * double(model(p)) * double(hidden(p)) * double(c10::elementSize(p.dtype));
  };
  return l;
}

const pil::Lesson kLesson = make_lesson();

}  // namespace

int main(int argc, char** argv) { return pil::lesson_main(kLesson, argc, argv); }
