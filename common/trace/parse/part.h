#pragma once
/// \file
/// What one stretch of a parallel read adds to the trace: its events, with names and named lanes
/// numbered on its own until the merge puts them in file order. Internal to the trace parser.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace pil::trace::detail {

/// Names seen in one stretch, in the order first seen, each with a small id stored just before
/// its text (the merge finds an event's name by it in constant time).
class LocalNames {
 public:
  std::string_view intern(std::string_view s) {
    if (s.empty()) return {};
    std::string_view& slot = recent_[NamePool::recent_slot(s)];
    if (slot.size() == s.size() && std::memcmp(slot.data(), s.data(), s.size()) == 0) return slot;
    if (auto it = ids_.find(s); it != ids_.end()) return slot = order_[it->second];
    const size_t need = s.size() + sizeof(uint32_t);
    if (block_ == blocks_.size() || used_ + need > blocks_[block_].size) {
      if (block_ < blocks_.size()) ++block_;
      used_ = 0;
      if (block_ == blocks_.size() || blocks_[block_].size < need) {
        const size_t size = std::max<size_t>(size_t(64) << 10, need);
        blocks_.insert(blocks_.begin() + ptrdiff_t(block_), Block{std::unique_ptr<char[]>(new char[size]), size});
      }
    }
    char* dst = blocks_[block_].data.get() + used_;
    const uint32_t id = uint32_t(order_.size());
    std::memcpy(dst, &id, sizeof id);
    std::memcpy(dst + sizeof id, s.data(), s.size());
    used_ += need;
    const std::string_view kept(dst + sizeof id, s.size());
    order_.push_back(kept);
    ids_.emplace(kept, id);
    return slot = kept;
  }
  /// The id of a name this pool handed out (not the empty name).
  static uint32_t id_of(std::string_view kept) {
    uint32_t id = 0;
    std::memcpy(&id, kept.data() - sizeof id, sizeof id);
    return id;
  }
  const std::vector<std::string_view>& in_order() const { return order_; }
  void clear() {
    ids_.clear();
    order_.clear();
    for (auto& r : recent_) r = {};
    block_ = 0;
    used_ = 0;
  }

 private:
  struct Block {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  std::vector<Block> blocks_;  // kept for the next stretch
  size_t block_ = 0, used_ = 0;
  std::unordered_map<std::string_view, uint32_t> ids_;
  std::vector<std::string_view> order_;
  std::string_view recent_[1024];
};

/// A thread or process name from a metadata event, applied at the merge (in file order).
struct LaneMeta {
  int64_t pid = 0, tid = 0;
  uint8_t named = 0;  // bit 0: pid is a named lane of the stretch, bit 1: tid
  std::string_view name;
};

/// What one stretch of the event array adds to the trace: its events, with names and named
/// lanes numbered on its own, and how it ended.
struct Part {
  Trace t;  // events, kernels, memory, flows (names are in `names`)
  LocalNames names;
  std::vector<std::string_view> lanes;  // named lanes, in order first seen: ids -1, -2, ...
  std::vector<std::pair<uint32_t, uint8_t>> lane_fixes;  // event, which of pid/tid is named
  std::vector<LaneMeta> metas;
  /// With read_shapes: the key each of t.op_inputs was interned by (in `names`): the merge keeps
  /// each distinct inputs once over the whole trace by it.
  std::vector<std::string_view> input_keys;
  size_t elements = 0;  // array elements taken (events of every phase)
  // How a chunk read in place ended:
  bool whole = false;    // read up to its stand-in ']': the next chunk starts where it was cut
  bool closed = false;   // met the array's own ']'; what follows starts at closed_at
  uint64_t closed_at = 0;
  uint64_t resume = 0;   // else: where the sequential read takes over (after the last event)
  bool resume_first = false;  // ... at the array's '[' itself

  void clear() {
    t.events.clear();
    t.kernels.clear();
    t.memory.clear();
    t.copy_bytes.clear();
    t.sources.clear();
    t.op_inputs.clear();
    t.input_shapes.clear();
    t.flows = {};
    t.skipped = {};
    t.python_functions = 0;
    names.clear();
    lanes.clear();
    lane_fixes.clear();
    metas.clear();
    input_keys.clear();
    elements = 0;
    whole = closed = resume_first = false;
    closed_at = resume = 0;
  }
};

}  // namespace pil::trace::detail
