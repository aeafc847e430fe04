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
/// the call. The first call — and any call whose inputs, or the tensors `also_read` names (a
/// module's weights the body reads), moved, changed shape or dtype — runs `body` once plainly on
/// a side stream, so cuBLAS and the caching allocator set up outside the capture, then captures
/// it there. The output tensor returned is the graph's own, overwritten by every replay.
inline std::function<at::Tensor(const Tensors&)> replayed_from_graph(
    std::function<at::Tensor(const Tensors&)> body,
    std::function<std::vector<at::Tensor>()> also_read = {}) {
  struct Captured {
    std::function<at::Tensor(const Tensors&)> body;
    std::function<std::vector<at::Tensor>()> also_read;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    at::Tensor out;
    std::vector<int64_t> key;
    bool release_registered = false;  // one after_variant release per variant, however many captures
  };
  auto state = std::make_shared<Captured>();
  state->body = std::move(body);
  state->also_read = std::move(also_read);
  // What the captured kernels depend on: every tensor's address, dtype, shape and strides.
  auto key_of = [state](const Tensors& in) {
    std::vector<int64_t> key;
    auto add = [&key](const at::Tensor& t) {
      key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
      key.push_back(int64_t(t.scalar_type()));
      key.push_back(t.dim());
      for (const int64_t d : t.sizes()) key.push_back(d);
      for (const int64_t s : t.strides()) key.push_back(s);
    };
    for (const auto& t : in) add(t);
    if (state->also_read)
      for (const auto& t : state->also_read()) add(t);
    return key;
  };
  return [state, key_of](const Tensors& in) {
    std::vector<int64_t> key = key_of(in);
    if (!state->graph || state->key != key) {
      state->graph.reset();
      state->out = at::Tensor();
      const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
      c10::cuda::getCurrentCUDAStream().synchronize();  // the inputs are ready
      {
        const c10::cuda::CUDAStreamGuard guard(side);
        state->body(in);
        side.synchronize();
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        graph->capture_begin();
        try {
          state->out = state->body(in);
        } catch (...) {
          // End the capture whatever happened, or the stream (and every later CUDA call in the
          // process) stays in capture mode.
          try {
            graph->capture_end();
          } catch (...) {
          }
          state->out = at::Tensor();
          throw;
        }
        graph->capture_end();
        state->graph = std::move(graph);
        // Let the graph and its pool go once the variant is done, not at exit (after the CUDA
        // runtime may be gone).
        if (!state->release_registered) {
          state->release_registered = true;
          pil::after_variant([state] {
            state->graph.reset();
            state->out = at::Tensor();
            state->key.clear();
            state->release_registered = false;
          });
        }
      }
      side.synchronize();
      state->key = std::move(key);
    }
    state->graph->replay();
    return state->out;
  };
}

}  // namespace pil
