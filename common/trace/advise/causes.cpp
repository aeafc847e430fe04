// The root causes `pil-trace advise` groups symptoms under: what each means, what to do, and the
// lesson section that teaches the fix (a test checks that each section exists in its page).
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/advise/rules.h"

namespace pil::trace::advise_rules {

const std::vector<Cause>& all_causes() {
  static const std::vector<Cause> causes = {
      {"launch_bound", "The GPU waits on the host: a launch-bound loop",
       "Fewer, larger launches: fuse operators (the compiled variant: AOTInductor, torch.compile's "
       "C++ route), capture the step in a CUDA graph, or give each kernel more work (a larger "
       "batch).",
       {"03_mlp", "What did compiling change?", "./run-lesson 03_mlp --device cuda --variant all"}},
      {"host_stall", "The GPU idles for long stretches while the host does other work",
       "See what the host did in the longest gaps (the evidence names the range, operator or call "
       "on the launching thread): data preparation on the training thread belongs on a loader "
       "thread that fills pinned buffers ahead of the step; a tensor made on the CPU only to be "
       "copied to the GPU (randn(...).cuda(): a random or factory operator, then a Memcpy HtoD) is "
       "made on the GPU directly (device cuda); a first call that loads a kernel or a "
       "library, or setup, belongs before the recorded steps (warm up, then record a schedule of "
       "steps); a slow call of your own belongs outside the loop.",
       {"06_find_and_fix", "3. The batch on the training thread: `fix2`",
        "./run-lesson 06_find_and_fix --variant fix2"}},
      {"one_time_stall", "The GPU idles while the host pays one-time costs: first launches, first calls, compiling",
       "Record the steady state: warm up before recording (a schedule's warmup steps, or a step or two "
       "run before the profiler starts). A kernel's first launch loads its code, a library's first call "
       "sets it up, and torch.compile compiles at a function's first call; none of it recurs, and the "
       "recorded window that holds it says little about a step. Lesson 01 takes the first step's costs "
       "apart.",
       {"01_matmul_add", "2. Why is the first step slow?", "./run-lesson 01_matmul_add"}},
      {"host_sync", "The CPU stops inside a step to wait for the GPU",
       "Keep values on the GPU until the step ends: a loss read with .item() or copied to the CPU "
       "every step, or an explicit synchronize, makes the CPU wait for every kernel launched "
       "before it; read them every N steps, or after the step.",
       {"01_matmul_add", "How to read the GPU trace",
        "./run-lesson 01_matmul_add --device cuda"}},
      {"pageable_copy", "Copies between host and GPU from pageable memory",
       "Copy from pinned (page-locked) host memory, with non_blocking = true: "
       "tensor.pin_memory(), or a data loader that pins. A pageable copy holds the CPU for the "
       "whole copy and cannot overlap GPU work.",
       {"docs/perfetto.md", "A real GPU trace",
        "build/bin/pil-trace svg docs/traces/kineto-samples/resnet50_v100_step.pt.trace.json.gz "
        "--out copy.svg"}},
      {"fp32_gemm", "fp32 matrix products without tensor cores",
       "Let the GEMMs use tensor cores: TF32 for fp32 (at::globalContext()."
       "setFloat32MatmulPrecision(\"high\"), torch.set_float32_matmul_precision(\"high\") in "
       "Python, the lessons' --tf32 on), or bf16/fp16 under autocast "
       "where the accuracy allows.",
       {"02_linear", "On a GPU", "./run-lesson 02_linear --device cuda --tf32 on"}},
      {"fusion", "Chains of elementwise passes between the matrix products",
       "Fuse them: the compiled variant (AOTInductor) or a fused operator makes one kernel of a "
       "chain, one pass over memory instead of one per operator.",
       {"03_mlp", "What did compiling change?", "./run-lesson 03_mlp --size 8 --variant all"}},
      {"gemm_epilogue", "A separate elementwise pass right after a matrix product",
       "Let the product apply it on its way out: addmm for a bias (torch::linear on a 2-D "
       "input), cuBLASLt's epilogues for a bias, relu or gelu on a GPU, or the compiled "
       "variant, which fuses it.",
       {"01_matmul_add", "3. What does addmm change?", "./run-lesson 01_matmul_add --variant all"}},
      {"naive_attention", "Attention materialises its score matrix",
       "Use at::scaled_dot_product_attention (F.scaled_dot_product_attention in Python): its fused kernels (flash, memory-efficient) never "
       "write the [batch, heads, seq, seq] scores to memory.",
       {"04_transformer", "Then look", "./run-lesson 04_transformer --variant all"}},
      {"exposed_comm", "The step waits for communication: the all-reduce is not hidden",
       "Overlap the all-reduce with backward: gradients in buckets reduced as soon as each is "
       "ready (DDP's bucket_cap_mb; the lesson's bucketed variant), not one all-reduce after "
       "backward.",
       {"05_data_parallel", "Bucket sizes", "./run-lesson 05_data_parallel --variant all"}},
      {"exposed_forward", "The step waits for all-reduces that are not gradients' (no backward pass)",
       "All-reduces in a forward pass (tensor parallelism's, between a layer's matrix products, "
       "or an evaluation's) hold up the operator that needs their result: the buckets that hide "
       "gradients' behind backward are no fix. Hide them behind other work (an asynchronous, "
       "micro-pipelined tensor parallel that reduces one piece of a product while the next "
       "computes, or two micro-batches interleaved), make them cheaper (fewer ranks per layer; an "
       "all-reduce made for small messages), or make fewer (sequence parallelism's "
       "reduce-scatter and all-gather in their place).",
       {"docs/pil-trace.md", "Several ranks at once", "build/bin/pil-trace ranks TRACES_FOLDER"}},
      {"exposed_sharded", "The step waits for all-gathers and reduce-scatters that nothing hides",
       "Start each before its result is needed: FSDP's prefetch of the next layer's parameters "
       "(forward_prefetch and backward_prefetch; FSDP2's explicit prefetching), the gradients' "
       "reduce-scatters overlapped with the rest of backward. Tensor or sequence parallelism's, "
       "between a layer's matrix products, hide behind those products cut into pieces (an "
       "asynchronous, micro-pipelined tensor parallel), or shrink with fewer ranks per layer.",
       {"docs/pil-trace.md", "Several ranks at once", "build/bin/pil-trace ranks TRACES_FOLDER"}},
      {"exposed_exchange", "The step waits for exchanges (all-to-all, send/receive) that nothing hides",
       "Start the next exchange while this one's work computes. Sharded embeddings: a pipelined "
       "input distribution (TorchRec's TrainPipelineSparseDist runs the next batch's all-to-all "
       "beside the current step's forward and backward), and sharding balanced so that fewer "
       "rows cross ranks. Pipeline stages' send/receive: more micro-batches, or an interleaved "
       "schedule, so that each stage computes while it sends. The exchange of one batch cannot "
       "overlap the work that needs its result.",
       {"docs/pil-trace.md", "Several ranks at once", "build/bin/pil-trace ranks TRACES_FOLDER"}},
      {"first_step", "The first step is far slower than the rest",
       "Measure the steady state: more warm-up steps in the profiler's schedule, and the median "
       "step rather than the mean. The first steps pay for the allocator, loading kernels and "
       "libraries, compiling, and the profiler's own start-up, which lesson 01 takes apart.",
       {"01_matmul_add", "2. Why is the first step slow?", "./run-lesson 01_matmul_add"}},
      {"op_overhead", "Operator overhead dominates: the tensors are small",
       "Each operator costs dispatch time whatever its size: fewer, larger operators (a fused "
       "operator such as addmm, a larger batch, the compiled variant).",
       {"01_matmul_add", "3. What does addmm change?", "./run-lesson 01_matmul_add --variant all"}},
      {"op_loop", "A loop calls small operators one row or element at a time",
       "Do the loop's work as one operator over the whole tensor: the loss over every token "
       "at once (cross_entropy on [tokens, vocab]), an operation on every row at once instead "
       "of one row per call; for an optimizer's loop over its parameters, its foreach or fused "
       "implementation.",
       {"06_find_and_fix", "4. An operator per token: `fix3`",
        "./run-lesson 06_find_and_fix --variant fix3"}},
      {"copies", "Copies take a large share of the time",
       "See who asks for them (the evidence's \"called from\"; the command below lists what the "
       "first caller runs): a layout change (contiguous), a dtype or device change (to), an "
       "out-of-place operator that could work in place, or bookkeeping of your own (a copy for a "
       "check or a log), which belongs outside the recorded steps or in every Nth step.",
       {"05_data_parallel", "What does `advise` say?",
        "build/bin/pil-trace chain traces/TRACE.pt.trace.json --range aten::copy_"}},
      {"optimizer", "The optimizer takes a large share of the step",
       "Fewer, larger parameter tensors, a fused optimizer where the API has one, or fewer "
       "optimizer steps (gradient accumulation).",
       {"03_mlp", "Then look", "./run-lesson 03_mlp --size 8 --variant training"}},
      {"untraced", "Time in the step outside the model's operators: untraced work, data loading",
       "Work the profiler does not see ran on the training thread: data preparation, Python or "
       "C++ code between operators. Wrap it in a named range (pil::profiler::record_function; "
       "torch.profiler.record_function in Python) to "
       "see it, and move data preparation to a loader thread.",
       {"06_find_and_fix", "3. The batch on the training thread: `fix2`",
        "./run-lesson 06_find_and_fix --variant fix2"}},
      {"loader_behind", "The DataLoader's worker processes do not keep up with the steps",
       "Give the loader more ahead of the step: more worker processes (num_workers, up to the "
       "cores training leaves free), persistent_workers=True (workers kept between epochs), a "
       "larger prefetch_factor, and less work per sample in __getitem__ (decode, tokenize or "
       "augment once, ahead of training); on a GPU, pin_memory=True. Workers that keep up leave "
       "only the hand-off of a ready batch on the step.",
       {"06_find_and_fix", "3. The batch on the training thread: `fix2`",
        "./run-lesson 06_find_and_fix --variant fix2"}},
      {"loader_startup", "The DataLoader's worker processes start inside the recorded steps",
       "Start them once: persistent_workers=True keeps them between epochs (each epoch starts "
       "them again otherwise), and record after the first batch (the profiler's schedule, a warm-up "
       "step). On Windows and macOS workers start by spawn, importing the program again in each: "
       "keep the module's top level light, or use fewer workers where the steps allow.",
       {"06_find_and_fix", "3. The batch on the training thread: `fix2`",
        "./run-lesson 06_find_and_fix --variant fix2"}},
      {"rebuilt_constant", "The same constant tensor is built in every step",
       "Build it once, outside the loop, and keep it (a buffer of the module): a causal mask, "
       "positions, a ones tensor.",
       {"04_transformer", "Then look", "./run-lesson 04_transformer"}},
      {"memory_peak", "Memory peaks near the device's capacity",
       "Lower the peak: activation checkpointing, a smaller batch, a fused attention that "
       "does not keep the scores, or freeing what is held across steps.",
       {"04_transformer", "Then look", "./run-lesson 04_transformer --variant all"}},
  };
  return causes;
}

const Cause& cause(const std::string& key) {
  for (const Cause& c : all_causes())
    if (key == c.key) return c;
  throw std::logic_error("pil-trace advise: no cause named '" + key + "'");
}

const std::vector<std::pair<const char*, const char*>>& step_texts() {
  static const std::vector<std::pair<const char*, const char*>> texts = {
      {"The CPU stops inside a step to wait for the GPU",
       "The CPU stops inside the recorded window to wait for the GPU"},
      {"The step waits for communication: the all-reduce is not hidden",
       "The recorded window waits for communication: the all-reduce is not hidden"},
      {"The step waits for all-reduces that are not gradients' (no backward pass)",
       "The recorded window waits for all-reduces that are not gradients' (no backward pass)"},
      {"The step waits for all-gathers and reduce-scatters that nothing hides",
       "The recorded window waits for all-gathers and reduce-scatters that nothing hides"},
      {"The step waits for exchanges (all-to-all, send/receive) that nothing hides",
       "The recorded window waits for exchanges (all-to-all, send/receive) that nothing hides"},
      {"The optimizer takes a large share of the step",
       "The optimizer takes a large share of the recorded window"},
      {"host synchronizes inside a step", "host synchronizes inside the recorded window"},
      {"the optimizer's share of the step", "the optimizer's share of the recorded window"},
      {"Time in the step outside the model's operators: untraced work, data loading",
       "Time in the recorded window outside the model's operators: untraced work, data loading"},
      {"time in a step outside every operator and range", "time in the recorded window outside every operator and range"},
  };
  return texts;
}

const char* without_steps(const char* text) {
  for (const auto& [with, without] : step_texts())
    if (std::string_view(text) == with) return without;
  return text;
}

}  // namespace pil::trace::advise_rules
