#pragma once
/// \file
/// A lesson's call captured once into a CUDA graph and replayed: every kernel of the call in one
/// cudaGraphLaunch. For lesson code built with CUDA (PIL_LESSON_CUDA) only.
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/lesson.h"
#include "harness/named_range.h"

namespace pil {

/// The one side stream graphs are captured on, per device, for the process's life. LibTorch
/// keeps a cuBLAS and a cuBLASLt workspace per (handle, stream) until exit: a new pool stream
/// per capture (each benchmark case re-captures) would leave a workspace behind for each.
inline c10::cuda::CUDAStream capture_stream(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = streams.find(device);
  if (it == streams.end()) it = streams.emplace(device, c10::cuda::getStreamFromPool(false, device)).first;
  return it->second;
}

/// Wraps `body` (the eager call, without its named range) as a variant's run function that
/// opens the named range `range` and replays the body from a CUDA graph inside it. The first call — and any call whose inputs moved or changed shape, strides or
/// dtype — runs `body` once plainly on a side stream, so cuBLAS and the caching allocator set up
/// outside the capture, then captures it there. The output tensor returned is the graph's own,
/// overwritten by every replay.
///
/// The graph lives for one variant run or one benchmark case (released by after_variant): the
/// weights a body reads (a module's, built with the inputs) stay put for that long, so only the
/// inputs are checked per call, which keeps the check out of the replay's time.
inline std::function<at::Tensor(const Tensors&)> replayed_from_graph(
    std::string range, std::function<at::Tensor(const Tensors&)> body) {
  struct Captured {
    std::function<at::Tensor(const Tensors&)> body;
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    at::Tensor out;
    std::vector<int64_t> key;
    bool release_registered = false;  // one after_variant release per variant, however many captures
  };
  auto state = std::make_shared<Captured>();
  state->body = std::move(body);
  // What the captured kernels depend on: every input's address, dtype, shape and strides.
  auto key_of = [](const Tensors& in) {
    std::vector<int64_t> key;
    auto add = [&key](const at::Tensor& t) {
      key.push_back(reinterpret_cast<int64_t>(t.data_ptr()));
      key.push_back(int64_t(t.scalar_type()));
      key.push_back(t.dim());
      for (const int64_t d : t.sizes()) key.push_back(d);
      for (const int64_t s : t.strides()) key.push_back(s);
    };
    for (const auto& t : in) add(t);
    return key;
  };
  return [state, key_of, range = std::move(range)](const Tensors& in) {
    const NamedRange named(range);
    std::vector<int64_t> key = key_of(in);
    if (!state->graph || state->key != key) {
      state->graph.reset();
      state->out = at::Tensor();
      const c10::cuda::CUDAStream side = capture_stream(c10::cuda::current_device());
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
