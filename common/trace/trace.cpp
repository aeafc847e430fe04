#include "trace/trace.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace pil::trace {

size_t NamePool::recent_slot(std::string_view s) {
  uint64_t head = 0, tail = 0;
  const size_t n = std::min<size_t>(8, s.size());
  std::memcpy(&head, s.data(), n);
  std::memcpy(&tail, s.data() + s.size() - n, n);
  return size_t((head * 0x9E3779B97F4A7C15ull ^ tail * 31 ^ s.size()) >> 54);
}

std::string_view NamePool::intern(std::string_view s) {
  if (s.empty()) return {};
  std::string_view& slot = recent_[recent_slot(s)];
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
  order_.push_back(std::string_view(dst, s.size()));
  return slot = *views_.insert(order_.back()).first;
}

std::string device_type_name(int type) {
  // c10::DeviceType's numbers and c10::DeviceTypeName's lower-case names.
  static constexpr const char* kNames[] = {"cpu",    "cuda", "mkldnn", "opengl", "opencl", "ideep", "cuda",
                                           "fpga",   "maia", "xla",    "vulkan", "metal",  "xpu",   "mps",
                                           "meta",   "hpu",  "ve",     "lazy",   "ipu",    "mtia",  "privateuseone"};
  if (type >= 0 && size_t(type) < std::size(kNames)) return kNames[type];
  return "device type " + std::to_string(type);
}

}  // namespace pil::trace
