#pragma once
/// \file
/// A lesson's call captured once into a CUDA graph and replayed: every kernel of the call in one
/// cudaGraphLaunch. For lesson code built with CUDA (PIL_LESSON_CUDA) only.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "harness/lesson.h"

namespace pil {

/// Wraps `body` (the eager call, without its named range) as a variant's run function that
/// replays it from a CUDA graph, and opens no range itself: the variant opens its range around
/// the call. The first call (and any call whose inputs moved) runs `body` once plainly on a side
/// stream, so cuBLAS and the caching allocator set up outside the capture, then captures it
/// there. The output tensor returned is the graph's own, overwritten by every replay.
inline std::function<at::Tensor(const Tensors&)> replayed_from_graph(
    std::function<at::Tensor(const Tensors&)> body) {
  struct Captured {
    std::function<at::Tensor(const Tensors&)> body;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    at::Tensor out;
    std::vector<const void*> inputs;
  };
  auto state = std::make_shared<Captured>();
  state->body = std::move(body);
  return [state](const Tensors& in) {
    std::vector<const void*> key;
    for (const auto& t : in) key.push_back(t.data_ptr());
    if (!state->graph || state->inputs != key) {
      state->graph.reset();
      const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
      c10::cuda::getCurrentCUDAStream().synchronize();  // the inputs are ready
      {
        const c10::cuda::CUDAStreamGuard guard(side);
        state->body(in);
        side.synchronize();
        state->graph = std::make_unique<at::cuda::CUDAGraph>();
        state->graph->capture_begin();
        state->out = state->body(in);
        state->graph->capture_end();
      }
      side.synchronize();
      state->inputs = std::move(key);
    }
    state->graph->replay();
    return state->out;
  };
}

}  // namespace pil
