#pragma once
/// \file
/// Small integer ids for event names, for grouping millions of events by name quickly: interned
/// names share one address, so the address is tried first; the text decides for a new address.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace pil::trace {

class NameIds {
 public:
  uint32_t operator()(std::string_view s) {
    if (auto it = by_address_.find(s.data()); it != by_address_.end() && names_[it->second].size() == s.size())
      return it->second;
    auto [it, fresh] = by_text_.emplace(s, uint32_t(names_.size()));
    if (fresh) names_.push_back(s);
    by_address_[s.data()] = it->second;
    return it->second;
  }
  size_t size() const { return names_.size(); }
  std::string_view name(uint32_t id) const { return names_[id]; }

 private:
  std::unordered_map<const char*, uint32_t> by_address_;
  std::unordered_map<std::string_view, uint32_t> by_text_;
  std::vector<std::string_view> names_;
};

}  // namespace pil::trace
