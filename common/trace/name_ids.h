#pragma once
/// \file
/// Small integer ids for event names, for grouping millions of events by name quickly: interned
/// names share one address, so a small direct-mapped cache keyed by the address answers almost
/// every call; the text decides on a miss.
#include <array>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pil::trace {

class NameIds {
 public:
  uint32_t operator()(std::string_view s) {
    Slot& slot = cache_[(reinterpret_cast<uintptr_t>(s.data()) * 0x9E3779B97F4A7C15ull) >> 54];
    if (slot.data == s.data() && slot.size == s.size() && slot.filled) return slot.id;
    auto [it, fresh] = by_text_.emplace(s, uint32_t(names_.size()));
    if (fresh) names_.push_back(s);
    slot = {s.data(), s.size(), it->second, true};
    return it->second;
  }
  size_t size() const { return names_.size(); }
  std::string_view name(uint32_t id) const { return names_[id]; }

 private:
  struct Slot {
    const char* data = nullptr;
    size_t size = 0;
    uint32_t id = 0;
    bool filled = false;
  };
  std::array<Slot, 1024> cache_{};  // 2^10 slots: the hash's top 10 bits
  std::unordered_map<std::string_view, uint32_t> by_text_;
  std::vector<std::string_view> names_;
};

}  // namespace pil::trace
