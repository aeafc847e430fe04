// What lives across a lesson's variants and benchmark cases (a loaded AOTInductor package),
// freed when the lesson's main() returns (lesson.h: before_exit, release_before_exit).
#include <functional>
#include <vector>

#include "harness/lesson.h"

namespace pil {
namespace {

std::vector<std::function<void()>>& exit_releases() {
  static std::vector<std::function<void()>> r;
  return r;
}

}  // namespace

void before_exit(std::function<void()> release) { exit_releases().push_back(std::move(release)); }

void release_before_exit() {
  release_after_variant();  // anything a variant left registered
  std::vector<std::function<void()>> now;
  now.swap(exit_releases());
  for (auto& r : now) r();
}

}  // namespace pil
