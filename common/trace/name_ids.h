#pragma once
/// \file
/// Small integer ids for event names, for grouping millions of events by name quickly: interned
/// names share one address, so the address is tried first (in a small direct-mapped cache, then
/// a map); the text decides for a new address.
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
    if (slot.data == s.data() && slot.size == s.size() && slot.id != kNone) return slot.id;
    uint32_t id = kNone;
    if (auto it = by_address_.find(s.data()); it != by_address_.end() && names_[it->second].size() == s.size()) {
      id = it->second;
    } else {
      auto [t, fresh] = by_text_.emplace(s, uint32_t(names_.size()));
      if (fresh) names_.push_back(s);
      by_address_[s.data()] = t->second;
      id = t->second;
    }
    slot = {s.data(), s.size(), id};
    return id;
  }
  size_t size() const { return names_.size(); }
  std::string_view name(uint32_t id) const { return names_[id]; }

 private:
  static constexpr uint32_t kNone = 0xffffffffu;
  struct Slot {
    const char* data = nullptr;
    size_t size = 0;
    uint32_t id = kNone;
  };
  std::array<Slot, 1024> cache_{};
  std::unordered_map<const char*, uint32_t> by_address_;
  std::unordered_map<std::string_view, uint32_t> by_text_;
  std::vector<std::string_view> names_;
};

}  // namespace pil::trace
