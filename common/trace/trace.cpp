#include "trace/trace.h"

#include <algorithm>
#include <cstring>

namespace pil::trace {

std::string_view NamePool::intern(std::string_view s) {
  if (s.empty()) return {};
  uint64_t head = 0, tail = 0;
  std::memcpy(&head, s.data(), std::min<size_t>(8, s.size()));
  std::memcpy(&tail, s.data() + s.size() - std::min<size_t>(8, s.size()), std::min<size_t>(8, s.size()));
  std::string_view& slot = recent_[(head * 0x9E3779B97F4A7C15ull ^ tail * 31 ^ s.size()) >> 54];
  if (slot.size() == s.size() && std::memcmp(slot.data(), s.data(), s.size()) == 0) return slot;
  if (auto it = views_.find(s); it != views_.end()) return slot = *it;
  if (blocks_.empty() || block_used_ + s.size() > block_size_) {
    block_size_ = std::max<size_t>(size_t(1) << 20, s.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  return slot = *views_.insert(std::string_view(dst, s.size())).first;
}

}  // namespace pil::trace
