#include "trace/trace.h"

#include <algorithm>
#include <cstring>

namespace pil::trace {

std::string_view NamePool::intern(std::string_view s) {
  if (auto it = views_.find(s); it != views_.end()) return *it;
  if (block_used_ + s.size() > block_size_) {
    block_size_ = std::max<size_t>(size_t(1) << 20, s.size());
    blocks_.push_back(std::make_unique<char[]>(block_size_));
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  if (!s.empty()) std::memcpy(dst, s.data(), s.size());
  block_used_ += s.size();
  return *views_.insert(std::string_view(dst, s.size())).first;
}

}  // namespace pil::trace
