#pragma once
/// \file
/// The first event added under each id (Kineto's External id, CUPTI's correlation id), for
/// joining millions of events on an id. The ids a profiler hands out are small and dense, so a
/// table indexed by id holds them when it stays compact (a few entries per event); a hash map
/// holds ids spread wider.
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace pil::trace {

class FirstById {
 public:
  /// `max_id`: the largest id that will be added; `events`: how many events there are.
  FirstById(uint64_t max_id, size_t events) : dense_(max_id <= 8 * uint64_t(events) + 1024) {
    if (dense_) table_.assign(size_t(max_id) + 1, -1);
  }
  /// Keeps `index` for `id` unless an earlier add took it. Id 0 means "none" and is ignored.
  void add(uint64_t id, long index) {
    if (id == 0) return;
    if (!dense_) {
      sparse_.emplace(id, index);
    } else if (id < table_.size() && table_[id] < 0) {
      table_[id] = index;
    }
  }
  /// Gives `id` to `index` whatever held it (an id that add() kept).
  void replace(uint64_t id, long index) {
    if (id == 0) return;
    if (!dense_) sparse_[id] = index;
    else if (id < table_.size()) table_[id] = index;
  }
  /// The index added first for `id`, or -1.
  long operator[](uint64_t id) const {
    if (id == 0) return -1;
    if (dense_) return id < table_.size() ? table_[id] : -1;
    const auto it = sparse_.find(id);
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  bool dense_;
  std::vector<long> table_;
  std::unordered_map<uint64_t, long> sparse_;
};

}  // namespace pil::trace
