#pragma once
/// \file
/// torch.compile from C++: a lesson's `compiled` variant runs its workload as an AOTInductor
/// package (.pt2). The lesson's `compiled.py` writes the workload once more as a
/// torch.nn.Module; scripts/aoti_compile.py exports it (torch.export) and compiles it (Inductor)
/// ahead of time, at build time for the CPU, at the first run for a GPU; this adapter loads the
/// package with torch::inductor::AOTIModelPackageLoader, checks that it was made for this lesson,
/// torch version, device, dtype and shape, and runs it inside the lesson's named range.
///
/// A lesson adds the variant with:
/// \code
///   pil::Variant compiled = pil::aoti::compiled_variant(
///       {"mlp_fwd", {}, [](const pil::Tensors& in) { return pil::Tensors{in[0], ...weights}; }},
///       PIL_AOTI_BUILD);
/// \endcode
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "harness/lesson.h"

namespace torch::inductor {
class AOTIModelPackageLoader;
}

namespace pil::aoti {

/// Where a lesson's packages live and how one is made; the build says (pil_add_lesson's
/// COMPILED option defines the macros PIL_AOTI_BUILD reads).
struct Build {
  std::string lesson;           ///< "03_mlp": the package must say it was made for it
  std::string package_dir;      ///< `<build>/aoti/<lesson>`
  /// The compile command up to its per-package flags (python, scripts/aoti_compile.py,
  /// --lesson-dir); empty when the build found no usable Python torch.
  std::string compile_command;
  std::string no_compiler_reason;  ///< why compile_command is empty
  /// The packages the build itself makes ("cpu_fp32.pt2 ..."), and the command that makes them
  /// (`cmake --build <build> --target <lesson>_aoti`): a missing one is named as such.
  std::string built_packages;
  std::string build_command;
};

/// What the lesson tells the adapter about its workload.
struct Spec {
  std::string range;  ///< the lesson's named range the call opens ("mlp_fwd")
  /// Lesson flags the package is made per (they fix the weights' shapes: {"--heads",
  /// "--head-dim"}); the other dimensions are dynamic in the package.
  std::vector<std::string> flags;
  /// The package's inputs in compiled.py's INPUTS order, from the lesson's inputs (and its
  /// weights, passed as inputs: the package computes on the very values eager uses).
  std::function<Tensors(const Tensors& inputs)> inputs;
};

/// The package a problem runs with: `<package_dir>/<device>_<dtype>[_<flag><value>...].pt2`.
std::string package_path(const Build& build, const Spec& spec, const Problem& p);

/// The command that compiles that package.
std::string compile_command(const Build& build, const Spec& spec, const Problem& p);

/// What a package must have been made for.
struct Expected {
  std::string lesson, device, dtype, flags;  ///< flags: "--head-dim 32 --heads 4" (sorted)
};
Expected expected_for(const Build& build, const Spec& spec, const Problem& p);

/// Whether a tensor on `device` is one a package made for `package_device` ("cpu", "cuda")
/// takes: the device's type decides, whatever its index (a tensor on "cuda:0" is on a "cuda"
/// device).
bool device_matches(const c10::Device& device, const std::string& package_device);

/// Empty when the file at `path` is a package made for `expected` (its metadata read, its
/// library not opened: a quick look); else the one-line reason, as Package would refuse it.
std::string refusal(const std::string& path, const Expected& expected);

/// A loaded package, checked against what it must run. Throws PackageRefused with one line
/// naming what is wrong and what the package takes; never aborts on a bad file.
class Package {
 public:
  Package(const std::string& path, const Expected& expected);
  ~Package();
  Package(const Package&) = delete;
  Package& operator=(const Package&) = delete;

  /// Empty when `inputs` have the sizes, dtype and device the package takes; else why not.
  std::string check_inputs(const Tensors& inputs) const;
  /// Runs the package on `inputs`; returns its first output.
  at::Tensor run(const Tensors& inputs);

 private:
  struct Input {
    std::string name;
    std::vector<std::string> dims;  ///< a number: fixed; a name: dynamic, equal where equal
  };
  std::string path_;
  Expected expected_;
  std::vector<Input> inputs_;
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
};

struct PackageRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The lesson's `compiled` variant: agrees_with is the lesson's to set. Its unavailable() looks
/// for the package (a CPU package the build did not make, a failed or foreign one: why, and the
/// command that makes it); its prepare() compiles a missing GPU package (Inductor compiles for
/// the device it sees) and loads it, throwing VariantUnavailable when that fails.
Variant compiled_variant(Spec spec, Build build);

}  // namespace pil::aoti

/// The Build of the lesson being compiled (its target carries the definitions).
#define PIL_AOTI_BUILD                                                                   \
  pil::aoti::Build {                                                                     \
    PIL_AOTI_LESSON, PIL_AOTI_DIR, PIL_AOTI_COMPILE, PIL_AOTI_NO_COMPILER, PIL_AOTI_BUILT, \
        PIL_AOTI_BUILD_TARGET                                                              \
  }
