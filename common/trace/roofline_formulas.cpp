#include "trace/roofline_formulas.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace pil::trace {

namespace {

struct TypeInfo {
  std::string_view name;  // as torch writes it (TypeMeta's name)
  int bytes;
  std::string_view family;  // for the peak: "fp64", "fp32", "bf16", "fp16", "fp8", ""
  int rank;                 // type promotion: higher wins (floats above integers)
};

constexpr TypeInfo kTypes[] = {
    {"bool", 1, "", 0},
    {"unsigned char", 1, "", 1},
    {"signed char", 1, "", 2},
    {"short int", 2, "", 3},
    {"short unsigned int", 2, "", 3},
    {"int", 4, "", 4},
    {"unsigned int", 4, "", 4},
    {"long int", 8, "", 5},
    {"long unsigned int", 8, "", 5},
    // Other compilers' spellings of the same (GCC's above; Clang's "long", 8 bytes on Linux and
    // macOS; MSVC's "__int64"): HTA's NCCL test traces hold an all_to_all of 'long'.
    {"short", 2, "", 3},
    {"unsigned short", 2, "", 3},
    {"long", 8, "", 5},
    {"unsigned long", 8, "", 5},
    {"long long", 8, "", 5},
    {"unsigned long long", 8, "", 5},
    {"__int64", 8, "", 5},
    {"c10::Float8_e4m3fn", 1, "fp8", 10},
    {"c10::Float8_e5m2", 1, "fp8", 10},
    {"c10::Float8_e4m3fnuz", 1, "fp8", 10},
    {"c10::Float8_e5m2fnuz", 1, "fp8", 10},
    {"c10::Half", 2, "fp16", 11},
    {"c10::BFloat16", 2, "bf16", 11},
    {"float", 4, "fp32", 13},
    {"double", 8, "fp64", 14},
    {"c10::complex<c10::Half>", 4, "", 15},
    {"c10::complex<float>", 8, "", 16},
    {"c10::complex<double>", 16, "", 17},
};

const TypeInfo* type_info(std::string_view type) {
  for (const TypeInfo& t : kTypes)
    if (t.name == type) return &t;
  return nullptr;
}

using Dims = std::vector<int64_t>;

double numel(const Dims& d) {
  double n = 1;
  for (int64_t x : d) n *= double(x);
  return n;
}

bool is_tensor(const InputArg& a) { return !a.is_list && dtype_bytes(a.type) > 0; }

/// Bytes of every tensor input (a TensorList's tensors included), each read once.
double input_bytes(const OpInputs& in) {
  double b = 0;
  for (const InputArg& a : in.args) {
    const int size = dtype_bytes(a.type);
    if (!a.is_list && size > 0) b += numel(a.dims) * size;
  }
  return b;
}

/// The i-th tensor argument, or null.
const InputArg* tensor_arg(const OpInputs& in, size_t i) {
  return i < in.args.size() && is_tensor(in.args[i]) ? &in.args[i] : nullptr;
}

/// The result type of tensors combined elementwise: the highest of the tensors with dimensions
/// (a 0-d tensor does not raise them, as in torch's promotion), half with bfloat16 making float.
std::string_view promoted(const std::vector<const InputArg*>& tensors) {
  bool any_dims = false;
  for (const InputArg* a : tensors) any_dims = any_dims || !a->dims.empty();
  const TypeInfo* best = nullptr;
  bool half = false, bf16 = false;
  for (const InputArg* a : tensors) {
    if (any_dims && a->dims.empty()) continue;
    const TypeInfo* t = type_info(a->type);
    if (!t) continue;
    half = half || t->family == "fp16";
    bf16 = bf16 || t->family == "bf16";
    if (!best || t->rank > best->rank) best = t;
  }
  if (half && bf16 && best && best->rank <= 11) return "float";
  return best ? best->name : std::string_view();
}

/// Broadcast of shapes (numpy rules); false when they do not broadcast.
bool broadcast(const std::vector<const Dims*>& shapes, Dims& out) {
  size_t rank = 0;
  for (const Dims* d : shapes) rank = std::max(rank, d->size());
  out.assign(rank, 1);
  for (const Dims* d : shapes)
    for (size_t i = 0; i < d->size(); ++i) {
      int64_t& o = out[rank - d->size() + i];
      const int64_t x = (*d)[i];
      if (x == o || x == 1) continue;
      if (o != 1) return false;
      o = x;
    }
  return true;
}

// --- Matrix products -------------------------------------------------------------------------

/// [.., M, K] x [.., K, N] with given batch: 2 * batch * M * N * K; bytes of the inputs given
/// and the output (batch * M * N at the first operand's type).
std::optional<OpWork> product(const OpInputs& in, const InputArg& a, double batch, int64_t m,
                              int64_t k, int64_t n) {
  OpWork w;
  w.flops = 2.0 * batch * double(m) * double(n) * double(k);
  w.dtype = a.type;
  w.bytes = input_bytes(in) + batch * double(m) * double(n) * dtype_bytes(a.type);
  w.matrix = true;
  return w;
}

std::optional<OpWork> mm(const OpInputs& in, size_t first) {  // [M,K] x [K,N] at args first, first+1
  const InputArg *a = tensor_arg(in, first), *b = tensor_arg(in, first + 1);
  if (!a || !b || a->dims.size() != 2 || b->dims.size() != 2 || a->dims[1] != b->dims[0]) return {};
  return product(in, *a, 1, a->dims[0], a->dims[1], b->dims[1]);
}

std::optional<OpWork> bmm(const OpInputs& in, size_t first) {  // [B,M,K] x [B,K,N]
  const InputArg *a = tensor_arg(in, first), *b = tensor_arg(in, first + 1);
  if (!a || !b || a->dims.size() != 3 || b->dims.size() != 3 || a->dims[0] != b->dims[0] ||
      a->dims[2] != b->dims[1])
    return {};
  return product(in, *a, double(a->dims[0]), a->dims[1], a->dims[2], b->dims[2]);
}

std::optional<OpWork> matmul(const OpInputs& in) {
  const InputArg *a = tensor_arg(in, 0), *b = tensor_arg(in, 1);
  if (!a || !b || a->dims.empty() || b->dims.empty()) return {};
  Dims x = a->dims, y = b->dims;
  const bool row = x.size() == 1, column = y.size() == 1;
  if (row) x.insert(x.begin(), 1);  // a vector is one row ...
  if (column) y.push_back(1);       // ... or one column
  const int64_t m = x[x.size() - 2], k = x.back(), n = y.back();
  if (y[y.size() - 2] != k) return {};
  const Dims xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
  Dims batch;
  if (!broadcast({&xb, &yb}, batch)) return {};
  return product(in, *a, numel(batch), m, k, n);
}

std::optional<OpWork> linear(const OpInputs& in) {  // x [..., K], w [N, K], b [N]
  const InputArg *x = tensor_arg(in, 0), *w = tensor_arg(in, 1);
  if (!x || !w || x->dims.empty() || w->dims.size() != 2 || x->dims.back() != w->dims[1]) return {};
  const Dims rows(x->dims.begin(), x->dims.end() - 1);
  return product(in, *x, numel(rows), 1, w->dims[1], w->dims[0]);
}

// --- Attention -------------------------------------------------------------------------------

struct Attention {
  double batch = 0;  // the leading dimensions: batch x heads
  int64_t l = 0, s = 0, e = 0, ev = 0;
};

/// q [..., L, E], k [..., S, E], v [..., S, Ev] at args first..first+2.
std::optional<Attention> attention(const OpInputs& in, size_t first) {
  const InputArg *q = tensor_arg(in, first), *k = tensor_arg(in, first + 1), *v = tensor_arg(in, first + 2);
  if (!q || !k || !v || q->dims.size() < 2 || k->dims.size() < 2 || v->dims.size() < 2) return {};
  Attention a;
  a.batch = numel(Dims(q->dims.begin(), q->dims.end() - 2));
  a.l = q->dims[q->dims.size() - 2];
  a.e = q->dims.back();
  a.s = k->dims[k->dims.size() - 2];
  a.ev = v->dims.back();
  if (k->dims.back() != a.e || v->dims[v->dims.size() - 2] != a.s) return {};
  return a;
}

/// The score entries a call computes: L x S, or, for a fused kernel's causal attention
/// (is_causal True in the recorded "Concrete Inputs", argument `causal_at`; -1: never, as the
/// math backend, which computes them all and masks), the mask's: top-left aligned, row i sees
/// keys 0..i, sum of min(i + 1, S) over the L rows.
double score_entries(const OpInputs& in, const Attention& a, int causal_at) {
  const double l = double(a.l), s = double(a.s);
  const bool causal = causal_at >= 0 && in.has_concrete && size_t(causal_at) < in.args.size() &&
                      in.args[size_t(causal_at)].concrete == "True";
  if (!causal) return l * s;
  return l <= s ? l * (l + 1) / 2 : s * (s + 1) / 2 + (l - s) * s;
}

std::optional<OpWork> attention_forward(const OpInputs& in, int causal_at) {
  const std::optional<Attention> a = attention(in, 0);
  if (!a) return {};
  OpWork w;
  const double b = a->batch, l = double(a->l), scores = score_entries(in, *a, causal_at);
  w.flops = 2 * b * scores * double(a->e) + 2 * b * scores * double(a->ev);
  w.dtype = in.args[0].type;
  w.bytes = input_bytes(in) + b * l * double(a->ev) * dtype_bytes(w.dtype);  // + the output
  w.matrix = true;
  return w;
}

std::optional<OpWork> attention_backward(const OpInputs& in, int causal_at) {  // grad_out, q, k, v, ...
  const std::optional<Attention> a = attention(in, 1);
  if (!a) return {};
  OpWork w;
  const double b = a->batch, scores = score_entries(in, *a, causal_at);
  w.flops = 2 * b * scores * (3 * double(a->e) + 2 * double(a->ev));
  w.dtype = in.args[1].type;
  double grads = 0;  // dq, dk, dv: the sizes of q, k, v
  for (size_t i = 1; i <= 3; ++i) grads += numel(in.args[i].dims) * dtype_bytes(in.args[i].type);
  w.bytes = input_bytes(in) + grads;
  w.matrix = true;
  return w;
}

// --- Elementwise and normalisation -----------------------------------------------------------

enum class Elementwise { OutOfPlace, InPlace, Copy };

/// One FLOP per output element (none for copy_); the output is the broadcast of the tensor
/// inputs at their promoted type, or the first input itself (in place, copy_).
std::optional<OpWork> elementwise(const OpInputs& in, Elementwise how, bool condition_first = false) {
  std::vector<const InputArg*> tensors;
  std::vector<const Dims*> shapes;
  for (size_t i = 0; i < in.args.size(); ++i) {
    const InputArg& a = in.args[i];
    if (!is_tensor(a)) continue;
    shapes.push_back(&a.dims);
    if (!(condition_first && i == 0)) tensors.push_back(&a);  // where's condition: not promoted
  }
  if (tensors.empty()) return {};
  OpWork w;
  if (how == Elementwise::OutOfPlace) {
    Dims out;
    if (!broadcast(shapes, out)) return {};
    w.dtype = promoted(tensors);
    w.flops = numel(out);
    w.bytes = input_bytes(in) + numel(out) * dtype_bytes(w.dtype);
  } else {
    const InputArg& self = *tensors.front();
    if (&self != &in.args[0]) return {};
    w.dtype = self.type;
    const double written = numel(self.dims) * dtype_bytes(self.type);
    if (how == Elementwise::Copy) {  // reads the source, writes self (which it does not read)
      w.flops = 0;
      w.bytes = input_bytes(in);
    } else {
      w.flops = numel(self.dims);
      w.bytes = input_bytes(in) + written;
    }
  }
  return w;
}

/// A norm or softmax over its first input: `per_element` FLOPs per element (`with_weight` more
/// when the weight argument is a tensor); reads the tensor inputs, writes one output like the
/// first.
std::optional<OpWork> normalisation(const OpInputs& in, double per_element, double with_weight = 0,
                                    size_t weight_arg = 0) {
  const InputArg* x = tensor_arg(in, 0);
  if (!x) return {};
  OpWork w;
  const bool weight = weight_arg && tensor_arg(in, weight_arg);
  w.flops = numel(x->dims) * (per_element + (weight ? with_weight : 0));
  w.dtype = x->type;
  w.bytes = input_bytes(in) + numel(x->dims) * dtype_bytes(x->type);
  return w;
}

using Formula = std::optional<OpWork> (*)(const OpInputs&);

struct Entry {
  std::string_view name;
  FormulaKind kind;
  Formula work;
};

const Entry kEntries[] = {
    {"aten::mm", FormulaKind::Own, [](const OpInputs& in) { return mm(in, 0); }},
    {"aten::addmm", FormulaKind::Own, [](const OpInputs& in) { return mm(in, 1); }},
    {"aten::_scaled_mm", FormulaKind::Own, [](const OpInputs& in) { return mm(in, 0); }},
    {"aten::bmm", FormulaKind::Own, [](const OpInputs& in) { return bmm(in, 0); }},
    {"aten::baddbmm", FormulaKind::Own, [](const OpInputs& in) { return bmm(in, 1); }},
    {"aten::matmul", FormulaKind::Composite, matmul},
    {"aten::linear", FormulaKind::Composite, linear},
    // The fused kernels' is_causal, by its place in their schemas (torch 2.11); the composite
    // and the math backend compute every score (their children carry the work anyway).
    {"aten::scaled_dot_product_attention", FormulaKind::Composite, [](const OpInputs& in) { return attention_forward(in, -1); }},
    {"aten::_scaled_dot_product_attention_math", FormulaKind::Composite, [](const OpInputs& in) { return attention_forward(in, -1); }},
    {"aten::_scaled_dot_product_flash_attention", FormulaKind::Own, [](const OpInputs& in) { return attention_forward(in, 4); }},
    {"aten::_scaled_dot_product_efficient_attention", FormulaKind::Own, [](const OpInputs& in) { return attention_forward(in, 6); }},
    {"aten::_scaled_dot_product_cudnn_attention", FormulaKind::Own, [](const OpInputs& in) { return attention_forward(in, 6); }},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", FormulaKind::Own, [](const OpInputs& in) { return attention_forward(in, 4); }},
    {"aten::_scaled_dot_product_flash_attention_backward", FormulaKind::Own, [](const OpInputs& in) { return attention_backward(in, 11); }},
    {"aten::_scaled_dot_product_efficient_attention_backward", FormulaKind::Own, [](const OpInputs& in) { return attention_backward(in, 11); }},
    {"aten::_scaled_dot_product_cudnn_attention_backward", FormulaKind::Own, [](const OpInputs& in) { return attention_backward(in, 14); }},
    {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", FormulaKind::Own, [](const OpInputs& in) { return attention_backward(in, 7); }},
    {"aten::copy_", FormulaKind::Own, [](const OpInputs& in) { return elementwise(in, Elementwise::Copy); }},
    {"aten::where", FormulaKind::Own,
     [](const OpInputs& in) { return elementwise(in, Elementwise::OutOfPlace, /*condition_first=*/true); }},
    {"aten::relu", FormulaKind::Composite, [](const OpInputs& in) { return elementwise(in, Elementwise::OutOfPlace); }},
    {"aten::relu_", FormulaKind::Composite, [](const OpInputs& in) { return elementwise(in, Elementwise::InPlace); }},
    {"aten::native_layer_norm", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 4, 1, 2); }},
    {"aten::layer_norm", FormulaKind::Composite, [](const OpInputs& in) { return normalisation(in, 4, 1, 2); }},
    {"aten::native_batch_norm", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 4, 1, 1); }},
    {"aten::cudnn_batch_norm", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 4, 1, 1); }},
    {"aten::batch_norm", FormulaKind::Composite, [](const OpInputs& in) { return normalisation(in, 4, 1, 1); }},
    {"aten::_batch_norm_impl_index", FormulaKind::Composite,
     [](const OpInputs& in) { return normalisation(in, 4, 1, 1); }},
    {"aten::_fused_rms_norm", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 3, 1, 2); }},
    {"aten::rms_norm", FormulaKind::Composite, [](const OpInputs& in) { return normalisation(in, 3, 1, 2); }},
    {"aten::_softmax", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 5); }},
    {"aten::softmax", FormulaKind::Composite, [](const OpInputs& in) { return normalisation(in, 5); }},
    {"aten::_log_softmax", FormulaKind::Own, [](const OpInputs& in) { return normalisation(in, 5); }},
    {"aten::log_softmax", FormulaKind::Composite, [](const OpInputs& in) { return normalisation(in, 5); }},
};

/// How many arguments the functional form of an operator takes, where its out= form ("bmm.out":
/// [self, mat2, out]) is met in real traces: a trace records the out= form under the same name,
/// one tensor more, which the formulas would read as an input (read) besides the output they
/// count as written. An H100 trace's bmm.out came out at 104% of the memory peak, _softmax.out at
/// 150%.
constexpr std::pair<std::string_view, size_t> kFunctionalArgs[] = {
    {"aten::mm", 2},          {"aten::addmm", 5},        {"aten::bmm", 2},
    {"aten::baddbmm", 5},     {"aten::matmul", 2},       {"aten::linear", 3},
    {"aten::_softmax", 3},    {"aten::_log_softmax", 3}, {"aten::softmax", 3},
    {"aten::log_softmax", 3},
    // The elementwise operators' (add's and sub's alpha, div's and gelu's string, clamp's bounds
    // count): a real A100 trace's mul.out of [4, 2798, 2798] by a 0-d tensor read 127% of the peak.
    {"aten::add", 3},         {"aten::sub", 3},          {"aten::mul", 2},
    {"aten::div", 2},         {"aten::neg", 1},          {"aten::gelu", 2},
    {"aten::silu", 1},        {"aten::sigmoid", 1},      {"aten::tanh", 1},
    {"aten::exp", 1},         {"aten::pow", 2},          {"aten::sqrt", 1},
    {"aten::rsqrt", 1},       {"aten::clamp", 3},        {"aten::clamp_min", 2},
    {"aten::clamp_max", 2},
};

/// The elementwise operators with one FLOP per output element, out of place and in place.
constexpr std::string_view kElementwise[] = {
    "add", "sub", "mul", "div", "neg", "gelu", "silu", "sigmoid", "tanh", "exp", "pow",
    "sqrt", "rsqrt", "clamp", "clamp_min", "clamp_max"};

}  // namespace

int dtype_bytes(std::string_view type) {
  const TypeInfo* t = type_info(type);
  return t ? t->bytes : 0;
}

std::string_view float_family(std::string_view type) {
  const TypeInfo* t = type_info(type);
  return t ? t->family : std::string_view();
}

namespace {

/// The elementwise operator's base name ("add" for "aten::add_") and whether it is in place.
bool elementwise_name(std::string_view op, bool& in_place) {
  constexpr std::string_view prefix = "aten::";
  if (op.substr(0, prefix.size()) != prefix) return false;
  op.remove_prefix(prefix.size());
  in_place = !op.empty() && op.back() == '_';
  if (in_place) op.remove_suffix(1);
  return std::find(std::begin(kElementwise), std::end(kElementwise), op) != std::end(kElementwise);
}

}  // namespace

FormulaKind formula_kind(std::string_view op_name) {
  for (const Entry& e : kEntries)
    if (e.name == op_name) return e.kind;
  bool in_place = false;
  return elementwise_name(op_name, in_place) ? FormulaKind::Own : FormulaKind::None;
}

bool is_matrix_formula(std::string_view op_name) {
  // Asked of every operator while a trace is read: the names, not a walk of kEntries. Of the
  // scaled-dot-product operators in kEntries only _scaled_dot_product_attention_math is a
  // composite (counted in its bmm's).
  return op_name == "aten::mm" || op_name == "aten::addmm" || op_name == "aten::_scaled_mm" ||
         op_name == "aten::bmm" || op_name == "aten::baddbmm" ||
         (op_name.rfind("aten::_scaled_dot_product_", 0) == 0 &&
          op_name != "aten::_scaled_dot_product_attention_math");
}

std::optional<OpWork> op_work(std::string_view op_name, const OpInputs& in) {
  // The out= form: its last tensor is written (the output the formula counts), not read.
  auto less_out = [&](std::optional<OpWork> w) {
    for (const auto& [name, n] : kFunctionalArgs)
      if (w && name == op_name && in.args.size() == n + 1 && is_tensor(in.args[n]))
        w->bytes -= numel(in.args[n].dims) * dtype_bytes(in.args[n].type);
    return w;
  };
  for (const Entry& e : kEntries)
    if (e.name == op_name) return less_out(e.work(in));
  bool in_place = false;
  if (elementwise_name(op_name, in_place))
    return in_place ? elementwise(in, Elementwise::InPlace) : less_out(elementwise(in, Elementwise::OutOfPlace));
  return {};
}

}  // namespace pil::trace
