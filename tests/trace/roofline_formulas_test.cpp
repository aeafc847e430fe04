// FLOPs and bytes per operator call from recorded shapes, each against a hand-computed figure.
// The matrix products' and attention's FLOPs are torch.utils.flop_counter's (torch 2.11): the
// same shapes gave the same counts there (scripts/roofline_flop_check.py, side by side).
#include "trace/roofline_formulas.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace pil::trace {
namespace {

/// Inputs as a trace records them: {type, dims} per argument ("Scalar" and "" with no dims).
OpInputs inputs(std::initializer_list<std::pair<std::string_view, std::vector<int64_t>>> args) {
  OpInputs in;
  for (const auto& [type, dims] : args) {
    InputArg a;
    a.type = type;
    a.dims = dims;
    in.args.push_back(a);
  }
  return in;
}

OpWork work(std::string_view op, const OpInputs& in) {
  const auto w = op_work(op, in);
  EXPECT_TRUE(w.has_value()) << op;
  return w.value_or(OpWork{});
}

TEST(TraceRooflineFormulas, TypesAsTorchWritesThem) {
  EXPECT_EQ(dtype_bytes("float"), 4);
  EXPECT_EQ(dtype_bytes("double"), 8);
  EXPECT_EQ(dtype_bytes("c10::Half"), 2);
  EXPECT_EQ(dtype_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("long int"), 8);
  EXPECT_EQ(dtype_bytes("long"), 8);  // Clang's spelling: HTA's NCCL traces' all_to_all of 'long'
  EXPECT_EQ(dtype_bytes("unsigned short"), 2);
  EXPECT_EQ(dtype_bytes("bool"), 1);
  EXPECT_EQ(dtype_bytes("c10::Float8_e4m3fn"), 1);
  EXPECT_EQ(dtype_bytes("Scalar"), 0);
  EXPECT_EQ(dtype_bytes("TensorList"), 0);
  EXPECT_EQ(dtype_bytes(""), 0);
  EXPECT_EQ(float_family("c10::BFloat16"), "bf16");
  EXPECT_EQ(float_family("float"), "fp32");
  EXPECT_EQ(float_family("long int"), "");
}

TEST(TraceRooflineFormulas, MatrixProducts) {
  // mm [64,48] x [48,32]: 2*64*32*48 FLOPs; (64*48 + 48*32 + 64*32) * 4 bytes.
  OpWork w = work("aten::mm", inputs({{"float", {64, 48}}, {"float", {48, 32}}}));
  EXPECT_EQ(w.flops, 196608);
  EXPECT_EQ(w.bytes, 26624);
  EXPECT_EQ(w.dtype, "float");
  EXPECT_TRUE(w.matrix);
  // addmm(bias [32], [64,48], [48,32]) in bf16: the same FLOPs (the bias add not counted, as
  // torch's counter); the bias read too.
  w = work("aten::addmm", inputs({{"c10::BFloat16", {32}}, {"c10::BFloat16", {64, 48}},
                                  {"c10::BFloat16", {48, 32}}, {"Scalar", {}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 196608);
  EXPECT_EQ(w.bytes, (32 + 3072 + 1536 + 2048) * 2);
  // bmm [5,64,48] x [5,48,32]; baddbmm adds its input [5,64,32] to the bytes.
  w = work("aten::bmm", inputs({{"float", {5, 64, 48}}, {"float", {5, 48, 32}}}));
  EXPECT_EQ(w.flops, 983040);
  EXPECT_EQ(w.bytes, (15360 + 7680 + 10240) * 4);
  w = work("aten::baddbmm", inputs({{"float", {5, 64, 32}}, {"float", {5, 64, 48}}, {"float", {5, 48, 32}},
                                    {"Scalar", {}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 983040);
  EXPECT_EQ(w.bytes, (10240 + 15360 + 7680 + 10240) * 4);
  // Sizes that do not agree: no figures.
  EXPECT_FALSE(op_work("aten::mm", inputs({{"float", {3, 4}}, {"float", {5, 6}}})));
  EXPECT_FALSE(op_work("aten::bmm", inputs({{"float", {2, 3, 4}}, {"float", {3, 4, 5}}})));
  EXPECT_FALSE(op_work("aten::mm", inputs({{"float", {3, 4}}})));
}

// is_matrix_formula (what advise reads the inputs of for its roofline figures) names the
// matrix products and attention operators counted by their own formula, and no composite.
// The out= forms (bmm.out, _softmax.out) recorded under the same name, one tensor more: that
// tensor is written, not read (an H100 trace's were counted twice: 104% and 150% of its peak).
TEST(TraceRooflineFormulas, AnOutFormsLastTensorIsWrittenNotRead) {
  const OpWork plain = work("aten::bmm", inputs({{"float", {128, 128, 128}}, {"float", {128, 128, 64}}}));
  const OpWork out =
      work("aten::bmm", inputs({{"float", {128, 128, 128}}, {"float", {128, 128, 64}}, {"float", {128, 128, 64}}}));
  EXPECT_DOUBLE_EQ(plain.bytes, 4.0 * (128 * 128 * 128 + 2 * 128 * 128 * 64));  // 16.8 MB
  EXPECT_DOUBLE_EQ(out.bytes, plain.bytes);
  EXPECT_DOUBLE_EQ(out.flops, plain.flops);
  const OpWork softmax_out = work("aten::_softmax", inputs({{"float", {16, 8, 128, 128}}, {"Scalar", {}}, {"Scalar", {}},
                                                            {"float", {16, 8, 128, 128}}}));
  EXPECT_DOUBLE_EQ(softmax_out.bytes, 2 * 4.0 * 16 * 8 * 128 * 128);
  // mul.out of a float [4, 2798, 2798] by a 0-d double (a real A100 trace's): one tensor read,
  // one written, the 0-d one's 8 bytes; add.out (self, other, alpha, out) the same way.
  const double n = 4.0 * 2798 * 2798;
  const OpWork mul_out = work("aten::mul", inputs({{"float", {4, 2798, 2798}}, {"double", {}}, {"float", {4, 2798, 2798}}}));
  EXPECT_DOUBLE_EQ(mul_out.bytes, 2 * 4 * n + 8);
  EXPECT_DOUBLE_EQ(mul_out.flops, n);
  const OpWork add_out = work("aten::add", inputs({{"float", {64}}, {"float", {64}}, {"Scalar", {}}, {"float", {64}}}));
  EXPECT_DOUBLE_EQ(add_out.bytes, 3 * 4 * 64);
  const OpWork add = work("aten::add", inputs({{"float", {64}}, {"float", {64}}, {"Scalar", {}}}));
  EXPECT_DOUBLE_EQ(add.bytes, 3 * 4 * 64);
}

TEST(TraceRooflineFormulas, MatrixFormulasAreTheOwnProductsAndAttention) {
  for (const char* op : {"aten::mm", "aten::addmm", "aten::_scaled_mm", "aten::bmm", "aten::baddbmm",
                         "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
                         "aten::_scaled_dot_product_cudnn_attention",
                         "aten::_scaled_dot_product_flash_attention_for_cpu",
                         "aten::_scaled_dot_product_flash_attention_backward",
                         "aten::_scaled_dot_product_efficient_attention_backward",
                         "aten::_scaled_dot_product_cudnn_attention_backward",
                         "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}) {
    EXPECT_TRUE(is_matrix_formula(op)) << op;
    EXPECT_EQ(formula_kind(op), FormulaKind::Own) << op;
  }
  for (const char* op : {"aten::matmul", "aten::linear", "aten::scaled_dot_product_attention",
                         "aten::_scaled_dot_product_attention_math", "aten::add", "aten::softmax", "aten::mm_"})
    EXPECT_FALSE(is_matrix_formula(op)) << op;
}

TEST(TraceRooflineFormulas, MatmulAndLinear) {
  // [5,64,48] x [48,32]: batch 5.
  OpWork w = work("aten::matmul", inputs({{"float", {5, 64, 48}}, {"float", {48, 32}}}));
  EXPECT_EQ(w.flops, 983040);
  EXPECT_EQ(w.bytes, (15360 + 1536 + 10240) * 4);
  // Matrix x vector: 2*64*48; vector . vector: 2*48.
  EXPECT_EQ(work("aten::matmul", inputs({{"float", {64, 48}}, {"float", {48}}})).flops, 6144);
  EXPECT_EQ(work("aten::matmul", inputs({{"float", {48}}, {"float", {48}}})).flops, 96);
  // Batch dimensions broadcast: [2,1,4,8] x [3,8,5] -> batch [2,3]: 2*6*4*5*8.
  EXPECT_EQ(work("aten::matmul", inputs({{"float", {2, 1, 4, 8}}, {"float", {3, 8, 5}}})).flops, 1920);
  EXPECT_FALSE(op_work("aten::matmul", inputs({{"float", {2, 4, 8}}, {"float", {3, 8, 5}}})));
  // linear(x [2,10,48], w [32,48], b [32]): 2*20*32*48; x, w, b read, [2,10,32] written.
  w = work("aten::linear", inputs({{"float", {2, 10, 48}}, {"float", {32, 48}}, {"float", {32}}}));
  EXPECT_EQ(w.flops, 61440);
  EXPECT_EQ(w.bytes, (960 + 1536 + 32 + 640) * 4);
  EXPECT_EQ(formula_kind("aten::matmul"), FormulaKind::Composite);
  EXPECT_EQ(formula_kind("aten::linear"), FormulaKind::Composite);
  EXPECT_EQ(formula_kind("aten::mm"), FormulaKind::Own);
}

TEST(TraceRooflineFormulas, ScaledDotProductAttention) {
  // q [2,3,10,8], k [2,3,12,8], v [2,3,12,16]: 2*6*10*12*8 + 2*6*10*12*16 (torch's
  // sdpa_flop_count gives 34560 for these shapes).
  const auto q = std::vector<int64_t>{2, 3, 10, 8}, k = std::vector<int64_t>{2, 3, 12, 8},
             v = std::vector<int64_t>{2, 3, 12, 16};
  for (const char* op : {"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
                         "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_for_cpu",
                         "aten::scaled_dot_product_attention"}) {
    SCOPED_TRACE(op);
    const OpWork w = work(op, inputs({{"c10::Half", q}, {"c10::Half", k}, {"c10::Half", v}, {"", {}}, {"Scalar", {}}}));
    EXPECT_EQ(w.flops, 34560);
    EXPECT_EQ(w.bytes, (480 + 576 + 1152) * 2 + 960 * 2);  // q, k, v read; out [2,3,10,16] written
    EXPECT_EQ(w.dtype, "c10::Half");
    EXPECT_TRUE(w.matrix);
  }
  // Backward (grad_out, q, k, v, out, logsumexp, ...): 2*6*10*12*(3*8 + 2*16) (torch's
  // sdpa_backward_flop_count: 80640); dq, dk, dv written.
  const std::vector<int64_t> go{2, 3, 10, 16}, lse{2, 3, 10};
  for (const char* op : {"aten::_scaled_dot_product_flash_attention_backward",
                         "aten::_scaled_dot_product_efficient_attention_backward",
                         "aten::_scaled_dot_product_cudnn_attention_backward",
                         "aten::_scaled_dot_product_flash_attention_for_cpu_backward"}) {
    SCOPED_TRACE(op);
    const OpWork w = work(op, inputs({{"float", go}, {"float", q}, {"float", k}, {"float", v}, {"float", go},
                                      {"float", lse}, {"Scalar", {}}}));
    EXPECT_EQ(w.flops, 80640);
    EXPECT_EQ(w.bytes, (960 + 480 + 576 + 1152 + 960 + 60) * 4 + (480 + 576 + 1152) * 4);
  }
  EXPECT_FALSE(op_work("aten::_scaled_dot_product_flash_attention",
                       inputs({{"float", {2, 3, 10, 8}}, {"float", {2, 3, 12, 4}}, {"float", {2, 3, 12, 8}}})));
  EXPECT_EQ(formula_kind("aten::scaled_dot_product_attention"), FormulaKind::Composite);
  EXPECT_EQ(formula_kind("aten::_scaled_dot_product_attention_math"), FormulaKind::Composite);
}

// A fused kernel's causal call (is_causal True in the recorded "Concrete Inputs", at its place
// in the schema) computes the entries the mask keeps: with L = 10 query rows and S = 12 keys,
// row i sees i + 1 of them, 55 of 120; with L = 12, S = 10: 55 + 2 * 10 = 75 of 120. The
// composite and the math backend compute every score, as FlopCounterMode counts (34560).
TEST(TraceRooflineFormulas, ACausalFusedAttentionCountsTheEntriesItsMaskKeeps) {
  auto with_concrete = [](std::vector<int64_t> q, std::vector<int64_t> k, std::vector<int64_t> v, size_t causal_at,
                          std::string_view causal) {
    OpInputs in = inputs({{"c10::Half", q}, {"c10::Half", k}, {"c10::Half", v}});
    in.args.resize(std::max<size_t>(in.args.size(), causal_at + 1));
    in.args[causal_at].type = "Scalar";
    in.args[causal_at].concrete = causal;
    in.has_concrete = true;
    return in;
  };
  const std::vector<int64_t> q{2, 3, 10, 8}, k{2, 3, 12, 8}, v{2, 3, 12, 16};
  for (const auto& [op, at] : {std::pair<const char*, size_t>{"aten::_scaled_dot_product_flash_attention", 4},
                               {"aten::_scaled_dot_product_efficient_attention", 6},
                               {"aten::_scaled_dot_product_cudnn_attention", 6},
                               {"aten::_scaled_dot_product_flash_attention_for_cpu", 4}}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(work(op, with_concrete(q, k, v, at, "True")).flops, 2 * 6 * 55 * (8 + 16));
    EXPECT_EQ(work(op, with_concrete(q, k, v, at, "False")).flops, 34560);
    EXPECT_EQ(work(op, with_concrete({2, 3, 12, 8}, {2, 3, 10, 8}, {2, 3, 10, 16}, at, "True")).flops,
              2 * 6 * 75 * (8 + 16));
  }
  EXPECT_EQ(work("aten::scaled_dot_product_attention", with_concrete(q, k, v, 5, "True")).flops, 34560);
  EXPECT_EQ(work("aten::_scaled_dot_product_attention_math", with_concrete(q, k, v, 5, "True")).flops, 34560);
  // Backward: grad_out first, is_causal at 11 (flash, efficient), 14 (cudnn), 7 (the CPU's).
  const std::vector<int64_t> go{2, 3, 10, 16};
  for (const auto& [op, at] : {std::pair<const char*, size_t>{"aten::_scaled_dot_product_flash_attention_backward", 11},
                               {"aten::_scaled_dot_product_efficient_attention_backward", 11},
                               {"aten::_scaled_dot_product_cudnn_attention_backward", 14},
                               {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", 7}}) {
    SCOPED_TRACE(op);
    OpInputs in = inputs({{"float", go}, {"float", q}, {"float", k}, {"float", v}});
    in.args.resize(at + 1);
    in.args[at].type = "Scalar";
    in.args[at].concrete = "True";
    in.has_concrete = true;
    EXPECT_EQ(work(op, in).flops, 2 * 6 * 55 * (3 * 8 + 2 * 16));
  }
}

TEST(TraceRooflineFormulas, Elementwise) {
  // add([16,16], [16], alpha): one FLOP per output element; both read, [16,16] written.
  OpWork w = work("aten::add", inputs({{"float", {16, 16}}, {"float", {16}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 256);
  EXPECT_EQ(w.bytes, (256 + 16) * 4 + 256 * 4);
  EXPECT_FALSE(w.matrix);
  // In place: its first input read and written back.
  w = work("aten::add_", inputs({{"float", {8, 1}}, {"Scalar", {}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 8);
  EXPECT_EQ(w.bytes, 64);
  // A 0-d tensor (a wrapped number) does not promote the type: bf16 out.
  w = work("aten::mul", inputs({{"c10::BFloat16", {4, 8}}, {"float", {}}}));
  EXPECT_EQ(w.dtype, "c10::BFloat16");
  EXPECT_EQ(w.bytes, 64 + 4 + 64);
  // half with bfloat16 makes float.
  w = work("aten::sub", inputs({{"c10::Half", {4}}, {"c10::BFloat16", {4}}, {"Scalar", {}}}));
  EXPECT_EQ(w.dtype, "float");
  EXPECT_EQ(w.bytes, 8 + 8 + 16);
  // where(cond, a, b): the condition read, not promoted; out [8,16].
  w = work("aten::where", inputs({{"bool", {8, 16}}, {"float", {8, 16}}, {"float", {1, 16}}}));
  EXPECT_EQ(w.flops, 128);
  EXPECT_EQ(w.dtype, "float");
  EXPECT_EQ(w.bytes, 128 + 512 + 64 + 512);
  // copy_(half dst, float src): no FLOPs; the source read, the destination written.
  w = work("aten::copy_", inputs({{"c10::Half", {8, 16}}, {"float", {8, 16}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 0);
  EXPECT_EQ(w.bytes, 256 + 512);
  for (const char* op : {"aten::relu", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh", "aten::exp",
                         "aten::neg", "aten::div", "aten::pow", "aten::clamp", "aten::clamp_min", "aten::rsqrt"})
    EXPECT_EQ(work(op, inputs({{"float", {3, 5}}, {"Scalar", {}}})).flops, 15) << op;
  EXPECT_EQ(formula_kind("aten::relu"), FormulaKind::Composite);  // clamp_min does its work
  EXPECT_EQ(formula_kind("aten::gelu_"), FormulaKind::Own);
  // Shapes that do not broadcast.
  EXPECT_FALSE(op_work("aten::add", inputs({{"float", {3}}, {"float", {4}}, {"Scalar", {}}})));
  EXPECT_EQ(formula_kind("aten::empty"), FormulaKind::None);
  EXPECT_EQ(formula_kind("aten::addcmul"), FormulaKind::None);
  EXPECT_FALSE(op_work("aten::empty", inputs({{"ScalarList", {}}})));
}

TEST(TraceRooflineFormulas, Normalisation) {
  // native_layer_norm([8,16], normalized_shape, weight, bias): 4 per element, 5 with a weight.
  OpWork w = work("aten::native_layer_norm", inputs({{"float", {8, 16}}, {"ScalarList", {}}, {"", {}}, {"", {}},
                                                      {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 512);
  EXPECT_EQ(w.bytes, 1024);
  w = work("aten::native_layer_norm", inputs({{"float", {8, 16}}, {"ScalarList", {}}, {"float", {16}},
                                              {"float", {16}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 640);
  EXPECT_EQ(w.bytes, (128 + 16 + 16) * 4 + 128 * 4);
  // native_batch_norm(input, weight, bias, running_mean, running_var, ...).
  w = work("aten::native_batch_norm", inputs({{"float", {8, 16}}, {"float", {16}}, {"float", {16}}, {"float", {16}},
                                              {"float", {16}}, {"Scalar", {}}, {"Scalar", {}}, {"Scalar", {}}}));
  EXPECT_EQ(w.flops, 640);
  EXPECT_EQ(w.bytes, (128 + 64) * 4 + 128 * 4);
  // _softmax, _log_softmax: 5 per element; _fused_rms_norm: 3, 4 with a weight.
  EXPECT_EQ(work("aten::_softmax", inputs({{"float", {8, 16}}, {"Scalar", {}}, {"Scalar", {}}})).flops, 640);
  EXPECT_EQ(work("aten::_log_softmax", inputs({{"float", {8, 16}}, {"Scalar", {}}, {"Scalar", {}}})).flops, 640);
  EXPECT_EQ(work("aten::_fused_rms_norm", inputs({{"float", {8, 16}}, {"ScalarList", {}}, {"float", {16}},
                                                  {"Scalar", {}}})).flops, 512);
  EXPECT_EQ(work("aten::_fused_rms_norm", inputs({{"float", {8, 16}}, {"ScalarList", {}}, {"", {}}, {"", {}}})).flops,
            384);
  for (const char* op : {"aten::layer_norm", "aten::batch_norm", "aten::softmax", "aten::log_softmax", "aten::rms_norm"})
    EXPECT_EQ(formula_kind(op), FormulaKind::Composite) << op;
  for (const char* op : {"aten::native_layer_norm", "aten::native_batch_norm", "aten::_softmax", "aten::_fused_rms_norm"})
    EXPECT_EQ(formula_kind(op), FormulaKind::Own) << op;
}

}  // namespace
}  // namespace pil::trace
