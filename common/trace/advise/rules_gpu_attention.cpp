// Naive attention: a score matrix materialised. Attention written by hand runs a matrix product
// (Q·Kᵀ: the [batch, heads, seq, seq] scores written to memory), a scale (mul or div) and a mask
// (masked_fill, or an add) over the scores, a softmax, then a second product (·V) that reads
// them back; at::scaled_dot_product_attention's fused kernels never write the scores.
//
// Found on the operators each thread called, where the trace has operators (a CPU trace, and
// most GPU traces): a softmax with a matrix product at most kAttentionBefore operators before it
// and another at most kAttentionAfter after it, views read through. Operators inside
// scaled_dot_product_attention (its math backend runs the same steps) are not the program's own:
// only operators no other operator holds count. Without operators, on a GPU trace: the same
// pattern in a stream's kernels (a GEMM, a softmax kernel, a GEMM). A softmax between two
// products that is not attention would be counted too; the score shape, where the trace
// records shapes, says which it is ([batch, heads, seq, seq]).
//
// nn.MultiheadAttention's fast path is one operator, aten::_native_multi_head_attention (inside
// aten::_transformer_encoder_layer_fwd for TransformerEncoderLayer's), whose children are the
// same steps when it returns the weights (need_weights, its default) and, on a CPU, always: the
// rule looks inside it as if its children were the program's own (on a GPU, self-attention with
// need_weights=False and no mask calls the fused kernel instead).
//
// The gain bound: the pattern's whole time (both products and the passes between): the fused
// kernel still does both products' arithmetic, so it saves less than that.
#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "trace/advise/names.h"
#include "trace/advise/rules_gpu.h"
#include "trace/nesting.h"

namespace pil::trace::advise_rules {
namespace {

struct Pattern {
  std::vector<size_t> items;  ///< first product .. second product, in order
  size_t softmax = 0;
  int64_t time = 0;
  std::string shape;  ///< the softmax's input ("[1, 16, 1024, 1024]"), where recorded
  std::string_view wrapper;  ///< the attention operator it runs inside (is_attention_wrapper), or ""
};

/// An operator that computes attention from its own children, the score matrix written unless
/// it picks a fused kernel: nn.MultiheadAttention's and TransformerEncoderLayer's fast paths.
bool is_attention_wrapper(std::string_view name) {
  return name == "aten::_native_multi_head_attention" || name == "aten::_transformer_encoder_layer_fwd";
}

/// Each thread's operators as the program called them: the top-level ones, with an attention
/// wrapper's children in its place (after it), and which wrapper holds each of those.
struct OpSequences {
  std::vector<std::vector<size_t>> own;
  const std::vector<std::vector<size_t>>* threads = &own;
  std::unordered_map<size_t, size_t> wrapper_of;  ///< an operator -> the wrapper directly around it
};
OpSequences op_sequences(const RuleContext& c) {
  const auto& ev = c.trace.events;
  OpSequences out;
  if (!any_name(c.trace, is_attention_wrapper)) {
    out.threads = &c.top_ops();
    return out;
  }
  for (const std::vector<size_t>& ops : c.ops_by_thread()) {
    std::vector<size_t> seq;
    std::unordered_set<size_t> opened;  // a wrapper in the sequence: its children are too
    nest(ev, ops, [&](size_t i, long parent, int) {
      if (parent >= 0) {
        if (!opened.count(size_t(parent))) return true;
        out.wrapper_of[i] = size_t(parent);
      }
      seq.push_back(i);
      if (is_attention_wrapper(ev[i].name)) opened.insert(i);
      return true;
    });
    out.own.push_back(std::move(seq));
  }
  return out;
}

/// The first dims list of an operator's recorded shapes ("[[1, 2, 16, 16], [], []]" ->
/// "[1, 2, 16, 16]"), or "".
std::string first_shape(const Trace& t, const Event& e) {
  if (e.input_shapes >= t.input_shapes.size()) return "";
  const std::string_view all = t.input_shapes[e.input_shapes];
  const size_t open = all.find('[', 1), close = all.find(']');
  if (all.empty() || all[0] != '[' || open == std::string_view::npos || close == std::string_view::npos ||
      close < open)
    return "";
  return std::string(all.substr(open, close - open + 1));
}

/// The dims of a list as first_shape writes it ("[16, 8, 128, 128]" -> {16, 8, 128, 128}).
std::vector<int64_t> dims_of(std::string_view list) {
  std::vector<int64_t> d;
  for (size_t k = 0; k < list.size(); ++k)
    if (std::isdigit(static_cast<unsigned char>(list[k]))) {
      int64_t v = 0;
      for (; k < list.size() && std::isdigit(static_cast<unsigned char>(list[k])); ++k) v = v * 10 + (list[k] - '0');
      d.push_back(v);
    }
  return d;
}

/// The same scores, viewed: as many elements, and the same last two dims (nn.MultiheadAttention's
/// fast path softmaxes [16, 8, 128, 128] and its second bmm reads them as [128, 128, 128]).
bool same_scores(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (a.size() < 2 || b.size() < 2 || a[a.size() - 1] != b[b.size() - 1] || a[a.size() - 2] != b[b.size() - 2])
    return false;
  double na = 1, nb = 1;
  for (int64_t x : a) na *= double(x);
  for (int64_t x : b) nb *= double(x);
  return na == nb;
}

/// True when one of operator `e`'s recorded inputs is the scores `shape` (as first_shape writes
/// it), or a view of them: the second product reads the scores (·V), where a softmax between two
/// products that is not attention feeds something else (a classifier's probabilities [32, 10],
/// the next step's first layer reading its input [32, 128]).
bool reads_shape(const Trace& t, const Event& e, std::string_view shape) {
  if (e.input_shapes >= t.input_shapes.size()) return false;
  const std::string_view all = t.input_shapes[e.input_shapes];
  const std::vector<int64_t> scores = dims_of(shape);
  int depth = 0;
  size_t open = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k] == '[') {
      if (++depth == 2) open = k;
    } else if (all[k] == ']') {
      if (depth-- == 2 && same_scores(dims_of(all.substr(open, k - open + 1)), scores)) return true;
    }
  }
  return false;
}

/// Softmax between two products in `seq` (a thread's top-level operators without views, or a
/// stream's work).
template <typename IsProduct, typename IsSoftmax>
void find_patterns(const RuleContext& c, const std::vector<size_t>& seq, IsProduct is_product,
                   IsSoftmax is_softmax, std::vector<Pattern>& out) {
  const auto& ev = c.trace.events;
  for (size_t k = 0; k < seq.size(); ++k) {
    if (!is_softmax(ev[seq[k]])) continue;
    long first = -1, last = -1;
    for (size_t j = k; j-- > 0 && k - j <= size_t(threshold::kAttentionBefore);) {
      if (is_softmax(ev[seq[j]])) break;
      if (is_product(ev[seq[j]])) {
        first = long(j);
        break;
      }
    }
    for (size_t j = k + 1; j < seq.size() && j - k <= size_t(threshold::kAttentionAfter); ++j) {
      if (is_softmax(ev[seq[j]])) break;
      if (is_product(ev[seq[j]])) {
        last = long(j);
        break;
      }
    }
    if (first < 0 || last < 0) continue;
    Pattern p;
    p.items.assign(seq.begin() + first, seq.begin() + last + 1);
    p.softmax = seq[k];
    out.push_back(std::move(p));
  }
}

/// The GPU time of the work launched from thread (pid, tid) by calls starting in [from, to).
int64_t gpu_time_launched(const RuleContext& c, const Event& on, int64_t from, int64_t to) {
  const auto it = c.calls_by_thread().find({on.pid, on.tid});
  if (it == c.calls_by_thread().end()) return 0;
  const auto& calls = it->second;
  auto k = std::lower_bound(calls.begin(), calls.end(), from,
                            [&](size_t a, int64_t t) { return c.trace.events[a].start_ns < t; });
  int64_t sum = 0;
  for (; k != calls.end() && c.trace.events[*k].start_ns < to; ++k)
    for (size_t w : c.index.work_of(*k)) sum += c.trace.events[w].dur_ns;
  return sum;
}

}  // namespace

void naive_attention(const RuleContext& c, RuleResult& out) {
  if (!any_name(c.trace, [](std::string_view n) { return is_softmax_op(n) || is_softmax_kernel(n); }))
    return;
  const auto& ev = c.trace.events;
  const bool gpu = c.gpu();
  std::vector<Pattern> found;
  bool have_ops = false;
  // What each name is, once per name: a view, a product, a softmax.
  enum Kind { kView = 1, kProduct = 2, kSoftmax = 4 };
  PerName<int> kinds;
  auto op_kind = [&](std::string_view n) {
    return kinds(n, [](std::string_view name) {
      return (is_view_op(name) ? kView : 0) | (is_gemm_op(name) ? kProduct : 0) |
             (is_softmax_op(name) ? kSoftmax : 0);
    });
  };
  auto kernel_kind = [&](const Event& e) {
    if (e.category != Category::Kernel) return 0;
    return kinds(e.name, [](std::string_view name) {
      return (is_gemm_kernel(name) ? kProduct : 0) | (is_softmax_kernel(name) ? kSoftmax : 0);
    });
  };
  // On a GPU trace whose work is not linked to its launches, the operators' pattern cannot be
  // costed (the work each launched): the kernels' form, as on a trace without operators.
  const bool ops_costed = !(gpu && c.links_missing());
  const OpSequences sequences = op_sequences(c);
  for (const std::vector<size_t>& ops : *sequences.threads) {
    if (ops.empty() || !ops_costed) continue;
    have_ops = true;
    std::vector<size_t> seq;
    for (size_t i : ops)
      if (!(op_kind(ev[i].name) & kView)) seq.push_back(i);
    const size_t before = found.size();
    find_patterns(
        c, seq, [&](const Event& e) { return (op_kind(e.name) & kProduct) != 0; },
        [&](const Event& e) { return (op_kind(e.name) & kSoftmax) != 0; }, found);
    for (size_t k = before; k < found.size(); ++k) {
      Pattern& p = found[k];
      const Event& a = ev[p.items.front()];
      const Event& b = ev[p.items.back()];
      p.time = gpu ? gpu_time_launched(c, a, a.start_ns, b.end_ns()) : b.end_ns() - a.start_ns;
      p.shape = first_shape(c.trace, ev[p.softmax]);
      const auto w = sequences.wrapper_of.find(p.softmax);
      if (w != sequences.wrapper_of.end()) p.wrapper = ev[w->second].name;
    }
  }
  if (!have_ops && gpu) {
    for (const TraceIndex::Stream& s : c.index.streams())
      find_patterns(
          c, s.work, [&](const Event& e) { return (kernel_kind(e) & kProduct) != 0; },
          [&](const Event& e) { return (kernel_kind(e) & kSoftmax) != 0; }, found);
    for (Pattern& p : found)
      for (size_t i : p.items) p.time += ev[i].dur_ns;
  }
  // Attention is one step's: a pattern whose products are in two steps is the end of one step
  // and the start of the next (a classifier's softmax, then the next step's first layer). Where
  // shapes were recorded, the second product reads the scores.
  found.erase(std::remove_if(found.begin(), found.end(),
                             [&](const Pattern& p) {
                               const size_t first = p.items.front(), last = p.items.back();
                               if (ev[first].on_device() ? !c.in_basis_work(first)
                                                         : !c.in_basis_at(ev[first].start_ns))
                                 return true;
                               const bool one_step =
                                   ev[first].on_device()
                                       ? c.index.step_of_work(first) == c.index.step_of_work(last)
                                       : c.index.step_at(ev[first].start_ns) == c.index.step_at(ev[last].start_ns);
                               return !one_step || (!p.shape.empty() && ev[last].input_shapes < c.trace.input_shapes.size() &&
                                                    !reads_shape(c.trace, ev[last], p.shape));
                             }),
              found.end());
  if (found.empty()) return;
  // The time, and the score shape of the patterns that took the most of it.
  int64_t time = 0;
  std::map<std::string, int64_t> by_shape;
  for (const Pattern& p : found) {
    time += p.time;
    if (!p.shape.empty()) by_shape[p.shape] += p.time;
  }
  std::string shape;
  int64_t most = -1;
  for (const auto& [sh, t] : by_shape)
    if (t > most) most = t, shape = sh;
  if (double(time) < c.options.min_saved_share * double(c.basis_ns)) return;

  const bool on_ops = have_ops;
  Symptom s;
  s.text = counted(int64_t(found.size()), "attention") +
           " computed by hand: a softmax between two matrix products (" +
           (on_ops ? "operators" : "kernels") + "), the score matrix " +
           (shape.empty() ? "" : shape + " ") + "written and read back; " + format_duration(time) +
           (gpu ? " of GPU time" : " of CPU time") + " in all";
  const auto wrapped = std::find_if(found.begin(), found.end(), [](const Pattern& p) { return !p.wrapper.empty(); });
  if (wrapped != found.end()) {
    const auto inside = std::count_if(found.begin(), found.end(), [](const Pattern& p) { return !p.wrapper.empty(); });
    s.text += "; " + (size_t(inside) == found.size() ? std::string("all") : std::to_string(inside)) + " inside " +
              std::string(wrapped->wrapper) +
              " (nn.MultiheadAttention's fast path), which writes the scores whenever it returns the "
              "weights (need_weights=True, the default) and on a CPU always: need_weights=False "
              "lets self-attention without a mask take the fused kernel on a GPU";
  }
  s.figures = {{"patterns", double(found.size())}, {"pattern_ns", double(time)}};
  std::vector<const Pattern*> worst;
  for (const Pattern& p : found) worst.push_back(&p);
  std::stable_sort(worst.begin(), worst.end(), [](const Pattern* a, const Pattern* b) { return a->time > b->time; });
  for (size_t k = 0; k < worst.size() && k < c.options.examples; ++k) {
    std::string detail;
    for (size_t j = 0; j < worst[k]->items.size(); ++j) {
      const Event& e = ev[worst[k]->items[j]];
      detail += (j ? " -> " : "") + (e.on_device() ? kernel_label(e.name) : std::string(e.name));
    }
    if (!worst[k]->shape.empty()) detail += "; scores " + worst[k]->shape;
    if (!worst[k]->wrapper.empty()) detail += "; inside " + std::string(worst[k]->wrapper);
    detail += "; " + format_duration(worst[k]->time);
    s.examples.push_back(c.example(worst[k]->items.front(), detail));
  }
  s.saved_ns = time;
  s.how = "the patterns' whole time (" + format_duration(time) +
          "), an upper bound: the fused kernel still does both products' arithmetic";
  out.symptom(std::move(s));
}

}  // namespace pil::trace::advise_rules
