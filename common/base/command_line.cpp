#include "base/command_line.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>

namespace pil {

std::string shell_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                               "0123456789_./+:=@,%-") == std::string::npos)
    return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];  // the row above, one column left
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  constexpr size_t kTypo = 2;
  std::string nearest;
  size_t best = std::min(kTypo + 1, word.size());
  const std::string word_lower = lowercase(word);  // "--SIZE" is "--size" typed with caps lock
  for (const auto& n : names) {
    const size_t d = edit_distance(word_lower, lowercase(n));
    if (d < best) best = d, nearest = n;
  }
  return nearest;
}

std::string word_not_taken(const std::string& word, const std::vector<std::string>& flags,
                           std::string_view owner, std::string_view allowed_flags,
                           std::string_view allowed_values) {
  const std::string flag = word.substr(0, word.find('='));
  if (flag.rfind('-', 0) != 0 || flag == "-" || flag == "--")
    return "'" + word + "': a value with no flag before it; allowed: " + std::string(allowed_values);
  const std::string nearest = nearest_name(flag, flags);
  return flag + ": not a flag of " + std::string(owner) +
         (nearest.empty() ? "" : " (did you mean " + nearest + "?)") + "; allowed: " + std::string(allowed_flags);
}

std::string given_more_than_once(std::string_view flag, const std::vector<std::string>& values) {
  std::string listed;
  for (const auto& v : values) listed += (listed.empty() ? "" : ", ") + (v.empty() ? "''" : v);
  return std::string(flag) + ": given " + std::to_string(values.size()) + " times (" + listed + "); allowed: once";
}

std::string choice_problem(std::string_view text, const std::vector<std::string>& names, size_t& index) {
  std::string allowed;
  for (const auto& n : names) allowed += (allowed.empty() ? "" : "|") + n;
  if (text.empty()) return "no value given; allowed: " + allowed;
  const std::string lower = lowercase(text);
  for (size_t i = 0; i < names.size(); ++i)
    if (lower == lowercase(names[i])) {
      index = i;
      return "";
    }
  const std::string nearest = nearest_name(text, names);
  return "unknown value '" + std::string(text) + "'" + (nearest.empty() ? "" : " (did you mean " + nearest + "?)") +
         "; allowed: " + allowed;
}

std::vector<size_t> flags_without_value(const std::vector<std::string>& words, const std::set<std::string>& value_flags) {
  std::vector<size_t> places;
  const auto is_flag = [](const std::string& w) { return w.rfind("--", 0) == 0 || w == "-h"; };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const bool bare_equals = w.size() > 2 && w.back() == '=' && value_flags.count(w.substr(0, w.size() - 1));
    if (bare_equals || (value_flags.count(w) && (i + 1 == words.size() || is_flag(words[i + 1]))))
      places.push_back(i);
  }
  return places;
}

std::string whole_number_problem(std::string_view text, int64_t min, int64_t max, int64_t& value) {
  const std::string allowed = "; allowed: a whole number from " + std::to_string(min) +
                              (max == std::numeric_limits<int64_t>::max() ? " up" : " to " + std::to_string(max));
  if (text.empty()) return "no value given" + allowed;
  int64_t parsed = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, parsed);
  if (ec == std::errc::invalid_argument || ptr != end) return "'" + std::string(text) + "' is not a whole number" + allowed;
  // Past the type's own end ("from 0 up" read as no end at all): the end said.
  if (ec == std::errc::result_out_of_range && max == std::numeric_limits<int64_t>::max())
    return std::string(text) + " is out of range" + allowed + " to " + std::to_string(max);
  if (ec == std::errc::result_out_of_range || parsed < min || parsed > max)
    return std::string(text) + " is out of range" + allowed;
  value = parsed;
  return "";
}

// What std::cout writes, passed on to its own buffer unchanged; the errno of the first write
// that fails is kept (std::cout's buffer writes through C's stdout, whose failure sets errno).
class StdoutCheck::Watch : public std::streambuf {
 public:
  explicit Watch(std::streambuf* to) : to_(to) {}
  std::streambuf* to() const { return to_; }
  int first_errno() const { return errno_; }

 private:
  // Calls `write`; where `failed` says so, keeps the errno it set (the first such only);
  // elsewhere errno is left as it was.
  template <class Write, class Failed>
  auto kept(Write write, Failed failed) {
    const int before = errno;
    errno = 0;
    const auto r = write();
    if (failed(r) && errno_ == 0) errno_ = errno;
    if (!failed(r)) errno = before;
    return r;
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return sync() == 0 ? traits_type::not_eof(c) : c;
    return kept([&] { return to_->sputc(traits_type::to_char_type(c)); },
                [](int_type r) { return traits_type::eq_int_type(r, traits_type::eof()); });
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    return kept([&] { return to_->sputn(s, n); }, [n](std::streamsize r) { return r < n; });
  }
  int sync() override {
    return kept([&] { return to_->pubsync(); }, [](int r) { return r != 0; });
  }

 private:
  std::streambuf* to_;
  int errno_ = 0;
};

StdoutCheck::StdoutCheck() : watch_(std::make_unique<Watch>(std::cout.rdbuf())) { std::cout.rdbuf(watch_.get()); }

StdoutCheck::~StdoutCheck() { std::cout.rdbuf(watch_->to()); }

std::string StdoutCheck::problem() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  int err = watch_->first_errno();
  if (err == 0 && !flushed) err = errno;
  if (std::cout && flushed && !std::ferror(stdout)) return "";
  return std::string("the report could not be written to standard output") +
         (err ? std::string(": ") + std::strerror(err) : std::string());
}

}  // namespace pil
