#include "harness/named_range.h"

#include <ATen/record_function.h>

namespace pil {

NamedRange::NamedRange(std::string name) : name_(std::move(name)), nvtx_(name_.c_str()) {
  scope_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (scope_->isActive()) scope_->before(name_);
}

NamedRange::~NamedRange() = default;  // RecordFunction's destructor closes the scope

}  // namespace pil
