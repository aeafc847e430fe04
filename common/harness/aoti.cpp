#include "harness/aoti.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/version.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "harness/error_text.h"
#include "harness/named_range.h"

namespace fs = std::filesystem;

namespace pil::aoti {
namespace {

std::string shape_str(const at::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? "," : "") + std::to_string(t.size(i));
  return s + "]";
}

/// "x[n,n] w[n,n]" -> inputs with their dims.
template <class Input>
std::vector<Input> parse_signature(const std::string& text) {
  std::vector<Input> out;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    const size_t open = word.find('[');
    if (open == std::string::npos || word.back() != ']') return {};
    Input in{word.substr(0, open), {}};
    std::istringstream dims(word.substr(open + 1, word.size() - open - 2));
    for (std::string d; std::getline(dims, d, ',');) in.dims.push_back(d);
    out.push_back(std::move(in));
  }
  return out;
}

/// Empty when `path` is a zip archive holding an AOTInductor model's metadata; else what it is:
/// one plain reason before LibTorch's package loader (which unpacks the archive into a
/// temporary folder) sees the file.
std::string not_a_package(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return "no such file";
  try {
    caffe2::serialize::PyTorchStreamReader zip(path);
    for (const std::string& record : zip.getAllRecords())
      if (record.find("data/aotinductor/model/") != std::string::npos &&
          record.size() > 14 && record.compare(record.size() - 14, 14, "_metadata.json") == 0)
        return {};
    return "a zip archive without an AOTInductor model in it";
  } catch (const std::exception& e) {
    return "not a zip archive (" + one_line(e) + ")";
  }
}

/// The build's status line beside a package: "ok 41.2" or "failed export: ...". Empty if none.
std::string read_status(const std::string& package) {
  std::ifstream f(package.substr(0, package.size() - 4) + ".status");
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace

std::string package_path(const Build& build, const Spec& spec, const Problem& p) {
  std::string name = file_device_name(p.device) + "_" + dtype_name(p.dtype);
  for (const auto& f : spec.flags) name += "_" + f.substr(2) + std::to_string(p.options.flag(f));
  return (fs::path(build.package_dir) / (name + ".pt2")).string();
}

std::string compile_command(const Build& build, const Spec& spec, const Problem& p) {
  std::string cmd = build.compile_command + " --device " + file_device_name(p.device) +
                    " --dtype " + dtype_name(p.dtype);
  for (const auto& f : spec.flags) cmd += " --flag " + f.substr(2) + "=" + std::to_string(p.options.flag(f));
  return cmd + " --out " + package_path(build, spec, p);
}

Expected expected_for(const Build& build, const Spec& spec, const Problem& p) {
  std::map<std::string, int64_t> sorted;
  for (const auto& f : spec.flags) sorted[f] = p.options.flag(f);
  std::string flags;
  for (const auto& [name, value] : sorted)
    flags += (flags.empty() ? "" : " ") + name + " " + std::to_string(value);
  return {build.lesson, file_device_name(p.device), dtype_name(p.dtype), flags};
}

bool device_matches(const c10::Device& device, const std::string& package_device) {
  return c10::DeviceTypeName(device.type(), /*lower_case=*/true) == package_device;
}

namespace {

/// The package's metadata, checked against what it must have been made for; throws
/// PackageRefused with one line naming what is wrong. Opens no library.
std::unordered_map<std::string, std::string> checked_metadata(const std::string& path,
                                                              const Expected& expected) {
  const std::string where = fs::path(path).filename().string();
  if (const std::string why = not_a_package(path); !why.empty())
    throw PackageRefused(where + ": not a readable AOTInductor package (" + why + ")");
  std::unordered_map<std::string, std::string> meta;
  try {  // the metadata first: a foreign package is refused before its library is opened
    meta = torch::inductor::AOTIModelPackageLoader::load_metadata_from_package(path, "model");
  } catch (const std::exception& e) {
    throw PackageRefused(where + ": not a readable AOTInductor package (" + one_line(e) + ")");
  }
  auto get = [&](const char* key) {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : it->second;
  };
  auto differs = [&](const char* key, const std::string& want, const char* what) {
    const std::string have = get(key);
    if (have != want)
      throw PackageRefused(where + ": made for " + what + " '" + (have.empty() ? "?" : have) +
                           "', this run needs '" + want + "'; recompile it (the lesson's README says how)");
  };
  differs("pil_lesson", expected.lesson, "lesson");
  differs("pil_torch_version", std::string(TORCH_VERSION), "torch");
  differs("pil_device", expected.device, "device");
  differs("pil_dtype", expected.dtype, "dtype");
  differs("pil_flags", expected.flags, "flags");
  return meta;
}

}  // namespace

std::string refusal(const std::string& path, const Expected& expected) {
  try {
    checked_metadata(path, expected);
    return {};
  } catch (const PackageRefused& e) {
    return e.what();
  }
}

Package::Package(const std::string& path, const Expected& expected) : path_(path), expected_(expected) {
  const std::string where = fs::path(path).filename().string();
  const auto meta = checked_metadata(path, expected);
  const auto inputs = meta.find("pil_inputs");
  inputs_ = parse_signature<Input>(inputs == meta.end() ? std::string() : inputs->second);
  if (inputs_.empty()) throw PackageRefused(where + ": its metadata names no inputs (pil_inputs)");
  try {
    loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path, "model");
  } catch (const std::exception& e) {
    throw PackageRefused(where + ": cannot be loaded: " + one_line(e));
  }
}

Package::~Package() = default;

std::string Package::check_inputs(const Tensors& inputs) const {
  if (inputs.size() != inputs_.size())
    return fs::path(path_).filename().string() + " takes " + std::to_string(inputs_.size()) +
           " inputs, given " + std::to_string(inputs.size());
  std::map<std::string, int64_t> dynamic;  // a dynamic dim's size, from its first input
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    const Input& in = inputs_[i];
    auto refuse = [&](const std::string& why) {  // the signature is spelled out only then
      std::string sig = in.name + "[";
      for (size_t d = 0; d < in.dims.size(); ++d) sig += (d ? "," : "") + in.dims[d];
      sig += "]";
      return "package input " + in.name + ": " + why + "; the package takes " + sig +
             " (a number fixed, a name the same size wherever it appears)";
    };
    if (std::string(dtype_name(t.scalar_type())) != expected_.dtype || !device_matches(t.device(), expected_.device))
      return refuse(std::string("is ") + dtype_name(t.scalar_type()) + " on " + t.device().str() +
                    ", not " + expected_.dtype + " on " + expected_.device);
    if (size_t(t.dim()) != in.dims.size()) return refuse("has shape " + shape_str(t));
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const std::string& dim = in.dims[d];
      const int64_t size = t.size(int64_t(d));
      const bool fixed = !dim.empty() && std::isdigit(static_cast<unsigned char>(dim[0]));
      if (fixed ? std::stoll(dim) != size : dynamic.emplace(dim, size).first->second != size)
        return refuse("has shape " + shape_str(t));
    }
  }
  return {};
}

at::Tensor Package::run(const Tensors& inputs) { return loader_->run(inputs).at(0); }

Variant compiled_variant(Spec spec, Build build) {
  // One package per path, loaded once per process and kept: loading opens its library. Kept
  // until the lesson's main() returns (before_exit), not to the process's end: a CUDA
  // package's constants are freed by cudaFree, whose error after the CUDA runtime's shutdown at
  // exit (the Lesson, and these with it, is a global) would throw from a destructor and abort.
  struct Loaded {
    std::map<std::string, std::shared_ptr<Package>> packages;
    std::shared_ptr<Package> current;
    bool release_registered = false;
  };
  auto state = std::make_shared<Loaded>();
  // The package whose inputs these are: the one prepare() loaded last, else another one
  // loaded in this process whose inputs match.
  auto run = [spec, state](const Tensors& in) {
    const Tensors args = spec.inputs(in);
    if (!state->current) throw PackageRefused("compiled: no AOTInductor package loaded");
    std::string why = state->current->check_inputs(args);
    for (auto it = state->packages.begin(); !why.empty() && it != state->packages.end(); ++it)
      if (it->second->check_inputs(args).empty()) {
        state->current = it->second;
        why.clear();
      }
    if (!why.empty()) throw PackageRefused(why);
    NamedRange range(spec.range);
    return state->current->run(args);
  };
  Variant v{"compiled", "the workload compiled ahead of time by AOTInductor (torch.compile's C++ route)",
            run};
  // Where the package is missing, stale or foreign: a skip (exit 77) with the reason and the
  // command that makes it. A quick look: nothing compiled or loaded (--list asks it too).
  v.unavailable = [spec, build, state](const Problem& p) -> std::string {
    if (build.compile_command.empty())
      return "no AOTInductor package: " + build.no_compiler_reason;
    const std::string path = package_path(build, spec, p);
    if (state->packages.count(path)) return {};
    const std::string cmd = compile_command(build, spec, p);
    if (!fs::exists(path)) {
      if (p.device.is_cuda()) return {};  // prepare() compiles it (again, after a failed try)
      const std::string status = read_status(path);
      if (status.rfind("failed ", 0) == 0)
        return "the build's AOTInductor compile failed at " + status.substr(7) + "; rerun it: " + cmd;
      const std::string name = fs::path(path).filename().string();
      if ((" " + build.built_packages + " ").find(" " + name + " ") != std::string::npos)
        return "its package " + name + " is one the build makes, and it has not been built yet; "
               "build it with: " + build.build_command;
      // Named by its file, device, dtype and any static flags: "for this shape" misled where
      // the export's shapes are dynamic (03: one package serves every batch in fp32).
      return "no AOTInductor package " + name + " (the build makes the ones the tests and docs use" +
             (build.built_packages.empty() ? std::string() : ": " + build.built_packages) +
             "); compile it with: " + cmd;
    }
    if (const std::string why = refusal(path, expected_for(build, spec, p)); !why.empty())
      return why + " (with: " + cmd + ")";
    return {};
  };
  // On a GPU the first run compiles the package (Inductor compiles its kernels for the device
  // it sees) and keeps it in the build folder; then it is loaded, once per process.
  // [untested here: no GPU]
  v.prepare = [spec, build, state](const Problem& p) {
    const std::string path = package_path(build, spec, p);
    if (auto it = state->packages.find(path); it != state->packages.end()) {
      state->current = it->second;
      return;
    }
    const std::string cmd = compile_command(build, spec, p);
    if (!fs::exists(path)) {
      std::cout << "compiling the AOTInductor package for " << p.device.str() << " "
                << dtype_name(p.dtype) << " (once; kept in " << build.package_dir << "): " << cmd
                << std::endl;
      const auto t0 = std::chrono::steady_clock::now();
      const int rc = std::system(cmd.c_str());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rc != 0 || !fs::exists(path)) {
        const std::string status_now = read_status(path);
        throw VariantUnavailable("the AOTInductor compile for " + p.device.str() + " failed" +
                                 (status_now.rfind("failed ", 0) == 0 ? " at " + status_now.substr(7) : "") +
                                 " (command: " + cmd + ")");
      }
      std::cout << "compiled " << path << " in " << s << " s" << std::endl;
    }
    try {
      state->current = std::make_shared<Package>(path, expected_for(build, spec, p));
    } catch (const PackageRefused& e) {
      throw VariantUnavailable(std::string(e.what()) + " (with: " + cmd + ")");
    }
    state->packages[path] = state->current;
    if (!state->release_registered) {
      state->release_registered = true;
      before_exit([state] {
        state->current.reset();
        state->packages.clear();
        state->release_registered = false;
      });
    }
  };
  return v;
}

}  // namespace pil::aoti
