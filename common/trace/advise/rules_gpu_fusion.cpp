// Fusion: chains of elementwise kernels run back to back between two matrix products (GEMMs or
// convolutions) on one stream — each a pass over memory that a fused kernel would make once. On
// a trace without GPU work the same chains are read from the operators each thread called
// (elementwise operators between aten::mm/addmm/matmul/bmm/linear or a convolution, views read
// through): eager
// CPU code pays a pass over memory and a dispatch per operator, and AOTInductor's CPU loops fuse
// them too (lesson 03's compiled variant). Chains in backward (under autograd's
// evaluate_function) are not seen in the operator form; the kernel form sees them all.
//
// An elementwise kernel launched inside a matrix product's operator is that product's, not a
// pass between products: autocast's casts of a linear's weight and bias (aten::linear ->
// aten::to -> aten::copy_, every call), matmul's copy to a contiguous input. A public fp16 RTX
// A5000 trace read "aten::gelu -> aten::copy_ -> aten::copy_" as a chain to fuse: the copies
// were the next linear's weight and bias cast to fp16, which no fusion with the gelu removes.
// The operator form already sees only a thread's top-level operators.
//
// The gain bound: each chain's time minus its shortest member's. A fused kernel still reads the
// chain's inputs and writes its result, at least what the chain's first kernel moved, so it
// takes at least as long as the shortest of them. That holds where each kernel of a chain reads
// what the one before it wrote, which names cannot show: kernels back to back on unrelated
// tensors (gradients accumulated one after another) would save their launches only.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "trace/advise/names.h"
#include "trace/advise/rules_cpu.h"  // outermost_roots, CpuSlices
#include "trace/advise/rules_gpu.h"

namespace pil::trace::advise_rules {
namespace {

enum class Kind { Product, Elementwise, Other, Skip };

Kind kernel_kind(std::string_view name) {
  if (is_elementwise_kernel(name)) return Kind::Elementwise;
  if (is_gemm_kernel(name) || is_convolution_kernel(name)) return Kind::Product;
  return Kind::Other;
}

/// Chains in one sequence (a stream's work, or a thread's top-level operators: event indices), in
/// order; kind_of(i) is event i's kind.
template <typename KindOf>
void find_chains(const RuleContext& c, const std::vector<size_t>& seq, KindOf kind_of,
                 std::vector<FusionChain>& out) {
  bool after_product = false;
  size_t product = 0;
  std::vector<size_t> run;
  for (size_t i : seq) {
    const Kind k = kind_of(i);
    if (k == Kind::Skip) continue;
    if (k == Kind::Elementwise) {
      if (after_product) run.push_back(i);
      continue;
    }
    if (k == Kind::Product && after_product && int(run.size()) >= threshold::kElementwiseChain) {
      FusionChain ch{run, product, i, 0, 0};
      int64_t shortest = INT64_MAX;
      for (size_t r : run) {
        ch.time += c.trace.events[r].dur_ns;
        shortest = std::min(shortest, c.trace.events[r].dur_ns);
      }
      ch.saved = ch.time - shortest;
      out.push_back(std::move(ch));
    }
    run.clear();
    after_product = k == Kind::Product;
    product = i;
  }
}

bool is_product_op(std::string_view name) {
  return is_gemm_op(name) || name == "aten::conv1d" || name == "aten::conv2d" || name == "aten::conv3d" ||
         name == "aten::convolution" || name == "aten::_convolution";
}

// A thread's top-level operators: a convolution is a product as its kernels are.
Kind op_kind(std::string_view name) {
  if (is_view_op(name)) return Kind::Skip;
  if (is_product_op(name)) return Kind::Product;
  if (is_elementwise_op(name)) return Kind::Elementwise;
  return Kind::Other;
}

/// Per event: GPU work launched inside a matrix product's operator (at any depth); empty where
/// the trace has no such operator.
std::vector<char> launched_inside_products(const RuleContext& c) {
  if (!any_name(c.trace, is_product_op)) return {};
  const CpuSlices& cs = c.cpu();
  const std::vector<long> root = outermost_roots(cs, [&](size_t s) {
    const Event& e = c.trace.events[cs.event(s)];
    return is_operator(e) && is_product_op(e.name);
  });
  std::vector<char> inside(c.trace.events.size(), 0);
  for (size_t s = 0; s < cs.size(); ++s)
    if (root[s] >= 0)
      for (size_t w : c.index.work_of(cs.event(s))) inside[w] = 1;
  return inside;
}

std::vector<FusionChain> find_fusion_chains(const RuleContext& c) {
  std::vector<FusionChain> chains;
  if (!any_name(c.trace, [](std::string_view n) { return is_elementwise_kernel(n) || is_elementwise_op(n); }))
    return chains;
  const auto& ev = c.trace.events;
  const bool gpu = c.gpu();
  PerName<Kind> kinds;
  if (gpu) {
    const std::vector<char> in_product = launched_inside_products(c);
    auto kind = [&](size_t i) {
      // A copy or a set breaks a chain; an elementwise kernel of a product's operator is skipped.
      if (ev[i].category != Category::Kernel) return Kind::Other;
      const Kind k = kinds(ev[i].name, kernel_kind);
      return k == Kind::Elementwise && !in_product.empty() && in_product[i] ? Kind::Skip : k;
    };
    for (const TraceIndex::Stream& s : c.index.streams()) find_chains(c, s.work, kind, chains);
  } else {
    auto kind = [&](size_t i) { return kinds(ev[i].name, op_kind); };
    for (const std::vector<size_t>& ops : c.top_ops()) find_chains(c, ops, kind, chains);
  }
  chains.erase(std::remove_if(chains.begin(), chains.end(),
                              [&](const FusionChain& ch) {
                                const size_t first = ch.items.front();
                                return gpu ? !c.in_basis_work(first) : !c.in_basis_at(ev[first].start_ns);
                              }),
               chains.end());
  return chains;
}

}  // namespace

const std::vector<FusionChain>& RuleContext::fusion_chains() const {
  return fusion_chains_.get([&] { return find_fusion_chains(*this); });
}

void fusion(const RuleContext& c, RuleResult& out) {
  const std::vector<FusionChain>& chains = c.fusion_chains();
  if (chains.empty()) return;
  const auto& ev = c.trace.events;
  const bool gpu = c.gpu();
  int64_t time = 0, saved = 0, items = 0;
  for (const FusionChain& ch : chains) time += ch.time, saved += ch.saved, items += int64_t(ch.items.size());
  if (double(saved) < c.options.min_saved_share * double(c.basis_ns)) return;

  const std::string what = gpu ? "kernel" : "operator";
  Symptom s;
  s.text = counted(int64_t(chains.size()), "chain") + " of " +
           std::to_string(threshold::kElementwiseChain) + " or more elementwise " + what +
           "s back to back between matrix products (" + std::to_string(items) + " " + what + "s, " +
           format_duration(time) + (gpu ? " on the GPU" : " of CPU time") + ")";
  s.figures = {{"chains", double(chains.size())}, {"items", double(items)},
               {"chain_ns", double(time)}, {"saved_ns", double(saved)}};

  std::vector<const FusionChain*> worst;
  for (const FusionChain& ch : chains) worst.push_back(&ch);
  std::stable_sort(worst.begin(), worst.end(), [](const FusionChain* a, const FusionChain* b) { return a->saved > b->saved; });
  if (worst.size() > c.options.examples) worst.resize(c.options.examples);
  // Kernels are named by the operator that launched them where the trace has operators: the one
  // their External id names or, where that is their own correlation id (torch 2.0-2.2's Kineto
  // wrote it so), the innermost operator around their launch call. Only a library's operator
  // (aten::mul, fbgemm::...): compiled code launches its kernels from one autograd function
  // (CompiledFunction, CompiledFunctionBackward), whose name would label every kernel alike.
  std::unordered_map<uint64_t, std::string_view> op_names;     // by External id
  std::unordered_map<size_t, std::string_view> launched_by;    // by launch call (event index)
  if (gpu) {
    std::set<uint64_t> wanted;
    std::set<size_t> calls;  // the launch calls of those it names by their launch
    auto want = [&](size_t i) {
      if (!links_to_itself(ev[i])) {
        wanted.insert(ev[i].external_id);
      } else if (const long call = c.index.launch_of(i); call >= 0) {
        calls.insert(size_t(call));
      }
    };
    for (const FusionChain* ch : worst) {
      for (size_t i : ch->items) want(i);
      want(ch->before);
      want(ch->after);
    }
    wanted.erase(0);
    if (!wanted.empty())
      for (const Event& e : ev)
        if (e.category == Category::CpuOp && wanted.count(e.external_id)) op_names[e.external_id] = e.name;
    if (!calls.empty()) {
      const CpuSlices& cpu = c.cpu();
      for (size_t slot = 0; slot < cpu.size(); ++slot)
        if (calls.count(cpu.event(slot)))
          if (const long op = cpu.op_parent(slot); op >= 0) launched_by[cpu.event(slot)] = ev[cpu.event(size_t(op))].name;
    }
  }
  auto label = [&](size_t i) {
    if (!gpu) return std::string(ev[i].name);
    std::string_view op;
    if (links_to_itself(ev[i])) {
      const long call = c.index.launch_of(i);
      if (const auto it = call >= 0 ? launched_by.find(size_t(call)) : launched_by.end(); it != launched_by.end())
        op = it->second;
    } else if (const auto it = op_names.find(ev[i].external_id); it != op_names.end()) {
      op = it->second;
    }
    return op.find("::") != std::string_view::npos ? std::string(op) : kernel_label(ev[i].name);
  };
  for (const FusionChain* ch : worst) {
    std::string detail = std::to_string(ch->items.size()) + " " + what + "s, " +
                         format_duration(ch->time) + ": ";
    for (size_t k = 0; k < ch->items.size(); ++k) detail += (k ? " -> " : "") + label(ch->items[k]);
    detail += ", between " + label(ch->before) + " and " + label(ch->after);
    s.examples.push_back(c.example(ch->items.front(), detail));
  }
  s.saved_ns = saved;
  s.how = "each chain's time minus its shortest " + what + " (" + format_duration(saved) +
          "): one fused " + what + " still reads the chain's inputs and writes its result (where "
          "each reads what the one before wrote, which the names cannot show)";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
