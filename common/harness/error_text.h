#pragma once
/// \file
/// An exception as one line for the user: LibTorch's errors without their C++ backtrace (c10's
/// what() carries one after the first line), anything else's what() up to its first line break.
#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace pil {

inline std::string one_line(const std::exception& e) {
  const auto* c10 = dynamic_cast<const c10::Error*>(&e);
  const std::string s = c10 ? c10->what_without_backtrace() : e.what();
  return s.substr(0, s.find('\n'));
}

}  // namespace pil
