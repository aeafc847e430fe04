#pragma once
/// \file
/// Where a trace's bytes come from: a plain file, a gzip file, memory, or a trace held whole in
/// memory with the parallel reader's stand-in brackets put back. Internal to the trace parser.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pil::trace::detail {

class Source {
 public:
  virtual ~Source() = default;
  /// Reads up to n bytes; 0 at the end. Throws ParseError on a read error.
  virtual size_t read(char* dst, size_t n) = 0;
};

/// A plain or gzip file, told apart by its first two bytes. Throws ParseError (cannot open, a
/// folder).
std::unique_ptr<Source> open_file(const std::string& path);

class MemorySource : public Source {
 public:
  explicit MemorySource(std::string_view s) : s_(s) {}
  size_t read(char* dst, size_t n) override {
    n = std::min(n, s_.size());
    std::memcpy(dst, s_.data(), n);
    s_.remove_prefix(n);
    return n;
  }

 private:
  std::string_view s_;
};

/// The bytes of a trace in memory, read from `from` on, with the bytes the chunks' stand-ins
/// replaced put back (sorted by offset).
class PatchedSource : public Source {
 public:
  PatchedSource(const char* data, size_t size, size_t from,
                const std::vector<std::pair<size_t, char>>* patches)
      : data_(data), size_(size), pos_(from), patches_(patches) {}
  size_t read(char* dst, size_t n) override {
    n = std::min(n, size_ - pos_);
    std::memcpy(dst, data_ + pos_, n);
    if (patches_) {
      auto it = std::lower_bound(patches_->begin(), patches_->end(), std::make_pair(pos_, '\0'));
      for (; it != patches_->end() && it->first < pos_ + n; ++it) dst[it->first - pos_] = it->second;
    }
    pos_ += n;
    return n;
  }

 private:
  const char* data_;
  size_t size_, pos_;
  const std::vector<std::pair<size_t, char>>* patches_;
};

/// A plain file mapped privately (stand-ins written there stay in this process), with zeroed
/// room after it for simdjson's padding. data() is null when the file could not be mapped.
class Mapping {
 public:
  Mapping(int fd, size_t size);
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* data() const { return base_; }
  size_t capacity() const { return length_; }

 private:
  char* base_ = nullptr;
  size_t length_ = 0;
};

}  // namespace pil::trace::detail
