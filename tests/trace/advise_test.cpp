// pil-trace advise: the framework (grouping by cause, ordering by gain, the lesson links) and
// each rule on a planted trace where it must fire, with the hand-computed evidence and gain, and
// on one where it must stay quiet. Planted traces: trace_builder.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "trace/advice_lookup.h"
#include "trace/advise/advise.h"
#include "trace/advise/rules.h"
#include "trace/trace_builder.h"

namespace pil::trace {
namespace {

using test::advise_text;
using test::clean;
using test::figure;
using test::finding;
using test::has_finding;
using test::TraceBuilder;

TEST(Advise, GithubAnchorsFollowGithubsRule) {
  EXPECT_EQ(github_anchor("2. Why is the first step slow?"), "2-why-is-the-first-step-slow");
  EXPECT_EQ(github_anchor("C++'s `nn::Linear` is not Python's `F.linear`"),
            "cs-nnlinear-is-not-pythons-flinear");
  EXPECT_EQ(github_anchor("On a GPU (expected)"), "on-a-gpu-expected");
  EXPECT_EQ((LessonRef{"03_mlp", "Then look", ""}.link()), "03_mlp/README.md#then-look");
  EXPECT_EQ((LessonRef{"docs/perfetto.md", "A real GPU trace", ""}.link()),
            "docs/perfetto.md#a-real-gpu-trace");
}

// Every cause's lesson section exists in its page, spelled as the page spells it.
TEST(Advise, EveryCauseNamesASectionItsPageHas) {
  for (const advise_rules::Cause& c : advise_rules::all_causes()) {
    const LessonRef& l = c.lesson;
    const std::string page = std::string(PIL_SOURCE_DIR) + "/" + l.link().substr(0, l.link().find('#'));
    std::ifstream in(page);
    ASSERT_TRUE(in) << c.key << ": no page " << page;
    std::string line;
    bool found = false;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] != '#') continue;
      std::string title = line.substr(line.find_first_not_of('#'));
      title = title.substr(title.find_first_not_of(' '));
      title = title.substr(0, title.find(" <!--"));
      title = title.substr(0, title.find(" {#"));
      if (title == l.section) found = true;
    }
    EXPECT_TRUE(found) << c.key << ": " << page << " has no heading \"" << l.section << "\"";
    EXPECT_FALSE(l.command.empty()) << c.key;
  }
}

// Each text said otherwise on a trace without steps is still a cause's title or a rule's `what`
// (a renamed one would be said of "a step" again), and its rewrite names no step.
TEST(Advise, EveryTextSaidOfTheWindowIsStillInUse) {
  std::set<std::string> texts;
  for (const advise_rules::Cause& c : advise_rules::all_causes()) texts.insert(c.title);
  for (const auto& family : {advise_rules::gpu_rules(), advise_rules::cpu_rules(), advise_rules::operator_rules()})
    for (const advise_rules::Rule& r : family) texts.insert(r.what);
  for (const auto& [with, without] : advise_rules::step_texts()) {
    EXPECT_TRUE(texts.count(with)) << with;
    EXPECT_EQ(std::string(without).find("step"), std::string::npos) << without;
    EXPECT_STREQ(advise_rules::without_steps(with), without);
  }
  EXPECT_STREQ(advise_rules::without_steps("Memory peaks near the device's capacity"),
               "Memory peaks near the device's capacity");
}

// ProfilerStep#1..4 at 0, 1000, 1400, 1800 us: 1000, 400, 400, 400 us.
std::string slow_first_step(double first_us) {
  TraceBuilder b;
  double at = 0;
  const double durs[] = {first_us, 400, 400, 400};
  for (int s = 0; s < 4; ++s) {
    b.step(s + 1, at, durs[s]);
    b.op("aten::mm", at + 10, durs[s] - 20);
    at += durs[s];
  }
  return b.str();
}

TEST(Advise, FirstStepFarSlowerThanTheRest) {
  const Advice a = advise_text(slow_first_step(1000));
  const Finding* f = finding(a, "first_step");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->symptoms.size(), 1u);
  const Symptom& s = f->symptoms[0];
  EXPECT_DOUBLE_EQ(figure(s, "ratio"), 2.5);
  EXPECT_EQ(f->saved_ns, 600'000);  // 1000 - 400 us
  EXPECT_EQ(a.basis_ns, 2'200'000);
  EXPECT_DOUBLE_EQ(f->speedup, 2200.0 / 1600.0);
  ASSERT_EQ(s.examples.size(), 1u);
  EXPECT_EQ(s.examples[0].name, "ProfilerStep#1");
}

TEST(Advise, FirstStepNotMuchSlowerIsQuiet) {
  const Advice a = advise_text(slow_first_step(700));  // 1.75x: under the 2x threshold
  EXPECT_EQ(finding(a, "first_step"), nullptr);
  EXPECT_TRUE(clean(a, "first_step"));
}

TEST(Advise, AGpuRuleOnACpuTraceSaysWhyItDidNotRun) {
  const Advice a = advise_text(slow_first_step(700));
  EXPECT_FALSE(a.gpu);
  bool said = false;
  for (const RuleNote& r : a.unable)
    if (r.rule == "gpu_host_wait") said = r.why == "the trace has no GPU work";
  EXPECT_TRUE(said);
}

// One step of 1000 us launching 10 kernels of 10 us, each launch call 20 us long, spaced
// 100 us apart: the stream is busy 100 of its window's us, the rest waits on the host.
std::string launch_bound(double kernel_us) {
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  for (int k = 0; k < 10; ++k) {
    const double at = 10 + 100.0 * k;
    const int corr = b.call("cudaLaunchKernel", at, 20);
    b.kernel("small_kernel", corr, at + 25, kernel_us);
  }
  return b.str();
}

TEST(Advise, LaunchBoundSymptomsAreOneFinding) {
  const Advice a = advise_text(launch_bound(10));
  const Finding* f = finding(a, "launch_bound");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->symptoms.size(), 2u) << "host wait and short kernels: one cause";
  // Ordered by saving; the finding's saving is the largest symptom's, not their sum.
  EXPECT_GE(f->symptoms[0].saved_ns, f->symptoms[1].saved_ns);
  EXPECT_EQ(f->saved_ns, f->symptoms[0].saved_ns);
  // Short kernels: 10 launches, each call 20 us over 10 us of work: 100 us in all.
  for (const Symptom& s : f->symptoms)
    if (s.rule == "short_kernels") {
      EXPECT_EQ(s.saved_ns, 100'000);
      EXPECT_DOUBLE_EQ(figure(s, "short_share"), 1.0);
    }
  EXPECT_EQ(f->lesson.link(), "03_mlp/README.md#what-did-compiling-change");
}

TEST(Advise, AFedGpuIsNotLaunchBound) {
  // Kernels of 95 us back to back behind launches of 20 us: the stream never waits long.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  for (int k = 0; k < 10; ++k) {
    const int corr = b.call("cudaLaunchKernel", 5 + 20.0 * k, 20);
    b.kernel("big_kernel", corr, 30 + 96.0 * k, 95);
  }
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "launch_bound"), nullptr);
  EXPECT_TRUE(clean(a, "gpu_host_wait"));
  EXPECT_TRUE(clean(a, "short_kernels"));
}

TEST(Advise, FindingsAreOrderedByGain) {
  // A slow first step (saves 600 us of 2200) and no GPU: one finding; add a second cause by
  // making the trace launch-bound as well is covered in the rules' own tests. Here the order
  // of two findings of different gains.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  double at = 0;
  const double durs[] = {3000, 1000, 1000, 1000};
  for (int s = 0; s < 4; ++s) {
    b.step(s + 1, at, durs[s]);
    for (int k = 0; k < 5; ++k) {
      const int corr = b.call("cudaLaunchKernel", at + 10 + 150.0 * k, 20);
      b.kernel("small_kernel", corr, at + 35 + 150.0 * k, 5);
    }
    at += durs[s];
  }
  const Advice a = advise_text(b.str());
  ASSERT_GE(a.findings.size(), 2u);
  for (size_t i = 1; i < a.findings.size(); ++i)
    EXPECT_GE(a.findings[i - 1].saved_ns, a.findings[i].saved_ns);
}

TEST(Advise, JsonCarriesTheSameFindings) {
  const Advice a = advise_text(slow_first_step(1000));
  const auto j = advice_json(a);
  ASSERT_EQ(j["findings"].size(), a.findings.size());
  EXPECT_EQ(j["findings"][0]["cause"], "first_step");
  EXPECT_EQ(j["findings"][0]["saved_ns"], 600'000);
  EXPECT_EQ(j["findings"][0]["lesson"]["link"], "01_matmul_add/README.md#2-why-is-the-first-step-slow");
  EXPECT_EQ(j["findings"][0]["symptoms"][0]["examples"][0]["ts"], "0.000");
  const std::string text = format_advice(a, "t.json");
  EXPECT_NE(text.find("1. The first step is far slower than the rest"), std::string::npos) << text;
  EXPECT_NE(text.find("at most 1.38x faster"), std::string::npos) << text;
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

using test::TraceBuilder;

// Three steps of 100 us; in each a range holding aten::matmul [10, 40) (with aten::mm inside),
// then `after` [40, 40 + after_us), then aten::sum [70, 80).
std::string gemm_then(const std::string& after, double after_us) {
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    const double at = 100.0 * s;
    b.step(s + 2, at, 100);
    b.range("matmul_add", at + 5, 90);
    b.op("aten::matmul", at + 10, 30);
    b.op("aten::mm", at + 12, 26);
    b.op(after, at + 40, after_us);
    b.op("aten::sum", at + 70, 10);
  }
  return b.str();
}

TEST(AdviseEpilogue, ABiasAddAfterAProductIsAPassTheProductCouldDo) {
  const Advice a = advise_text(gemm_then("aten::add", 20));
  const Finding* f = finding(a, "gemm_epilogue");
  ASSERT_NE(f, nullptr);
  const Symptom& s = f->symptoms.at(0);
  EXPECT_EQ(f->saved_ns, 60'000);  // 3 x 20 us of aten::add
  EXPECT_DOUBLE_EQ(figure(s, "epilogue_share"), 0.2);
  EXPECT_NE(s.text.find("aten::matmul -> aten::add (3 calls, 60.0 us)"), std::string::npos) << s.text;
  EXPECT_EQ(s.examples.size(), 3u);
  EXPECT_EQ(f->lesson.link(), "01_matmul_add/README.md#3-what-does-addmm-change");
  // A CPU run: the fix names no GPU-only remedy.
  EXPECT_NE(f->fix.find("addmm for a bias"), std::string::npos) << f->fix;
  EXPECT_EQ(f->fix.find("cuBLASLt"), std::string::npos) << f->fix;
}

// A fix said of a CPU run names no GPU remedy: gemm_epilogue's cause names cuBLASLt's
// epilogues, its finding on a CPU trace does not.
TEST(AdviseEpilogue, AFixSaidOfACpuRunNamesNoGpuRemedy) {
  const Advice a = advise_text(gemm_then("aten::add", 20));
  const Finding* f = finding(a, "gemm_epilogue");
  ASSERT_NE(f, nullptr);
  for (const char* word : {"GPU", "cuBLAS", "CUDA", "kernel"})
    EXPECT_EQ(f->fix.find(word), std::string::npos) << word << ": " << f->fix;
  EXPECT_NE(std::string(advise_rules::cause("gemm_epilogue").fix).find("cuBLASLt"), std::string::npos);
  EXPECT_NE(f->fix, advise_rules::cause("gemm_epilogue").fix);
}

TEST(AdviseEpilogue, AProductOfTwoTensorsOrAnAddmmIsNot) {
  // gelu(a) * b: the mul is not an epilogue; an addmm already holds its bias.
  EXPECT_FALSE(has_finding(advise_text(gemm_then("aten::mul", 20)), "gemm_epilogue"));
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    b.step(s + 2, 100.0 * s, 100);
    b.op("aten::addmm", 100.0 * s + 10, 50);
    b.op("aten::sum", 100.0 * s + 70, 10);  // not an epilogue op
  }
  const Advice a = advise_text(b.str());
  EXPECT_EQ(finding(a, "gemm_epilogue"), nullptr);
  EXPECT_TRUE(clean(a, "gemm_epilogue"));
}

// A pass inside another operator than a product is that operator's own: SDPA's math backend
// adds its mask after its matmul (an H200 trace of lesson 04 read it as a bias for addmm), a
// library's module its bias. Inside aten::linear (a 3-D input: matmul, then add_) it is the
// user's product's, and counted.
TEST(AdviseEpilogue, APassInsideALibrarysOperatorIsNotTheUsers) {
  for (const char* around : {"aten::_native_multi_head_attention", "aten::linear"}) {
    SCOPED_TRACE(around);
    TraceBuilder b;
    for (int s = 0; s < 3; ++s) {
      const double at = 100.0 * s;
      b.step(s + 2, at, 100);
      b.op(around, at + 5, 60);
      b.op("aten::matmul", at + 10, 30);
      b.op("aten::mm", at + 12, 26);
      b.op("aten::add_", at + 40, 20);
      b.op("aten::sum", at + 70, 10);
    }
    const Advice a = advise_text(b.str());
    EXPECT_EQ(finding(a, "gemm_epilogue") != nullptr, std::string(around) == "aten::linear");
  }
}

// An add followed by a softmax and, a dropout later, a product is attention's mask or scale
// (naive_attention's pattern), not a bias for the product; a classifier's bias before its
// softmax, with no product after, stays an epilogue.
TEST(AdviseEpilogue, AnAddBeforeASoftmaxAndAProductIsAttentionsMask) {
  for (bool product_after : {true, false}) {
    SCOPED_TRACE(product_after ? "attention" : "a classifier");
    TraceBuilder b;
    for (int s = 0; s < 3; ++s) {
      const double at = 100.0 * s;
      b.step(s + 2, at, 100);
      b.op("aten::matmul", at + 10, 30);
      b.op("aten::mm", at + 12, 26);
      b.op("aten::add", at + 40, 20);
      b.op("aten::softmax", at + 61, 8);
      b.op("aten::dropout", at + 70, 2);
      b.op(product_after ? "aten::matmul" : "aten::sum", at + 73, 10);
    }
    const Advice a = advise_text(b.str());
    EXPECT_EQ(finding(a, "gemm_epilogue") == nullptr, product_after);
  }
}

TEST(AdviseEpilogue, ATinyPassIsNotWorthAFinding) {
  // 3 x 1 us of 300 us: 1%, under the 2% floor.
  EXPECT_FALSE(has_finding(advise_text(gemm_then("aten::add", 1)), "gemm_epilogue"));
}

TEST(AdviseEpilogue, OnAGpuItCostsItsKernelsTime) {
  // One step of 1000 us: aten::mm launches a 100 us GEMM, aten::gelu a 30 us kernel.
  TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3");
  b.step(1, 0, 1000);
  int64_t mm = 0, gelu = 0;
  b.op("aten::mm", 10, 20, "", "", 1, &mm);
  const int c1 = b.call("cudaLaunchKernel", 12, 5, mm);
  b.op("aten::gelu", 40, 20, "", "", 1, &gelu);
  const int c2 = b.call("cudaLaunchKernel", 42, 5, gelu);
  b.kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nt", c1, 20, 100, 7, mm);
  b.kernel("vectorized_elementwise_kernel<gelu>", c2, 125, 30, 7, gelu);
  const Advice a = advise_text(b.str());
  const Finding* f = finding(a, "gemm_epilogue");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->saved_ns, 30'000);
  EXPECT_NE(f->fix.find("cuBLASLt's epilogues"), std::string::npos) << f->fix;  // a GPU run: its remedy too
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

// The lessons close the loop: on their own committed traces (tests/trace/fixtures/lessons, made
// by the lessons' runs, see its README), the slow variant gets the advice and the variant that
// applies the fix does not.
std::string fixture(const std::string& path) { return std::string(PIL_SOURCE_DIR) + "/tests/trace/fixtures/" + path; }

// Read as `pil-trace advise` reads them (advise_read_options).
Advice advise_file(const std::string& name) {
  const Trace t = parse_trace_file(fixture("lessons/" + name), advise_read_options());
  const TraceIndex index(t);
  return advise(index);
}

TEST(AdviseLessons, Lesson01EagerAddsTheBiasInAPassAddmmAndCompiledDoNot) {
  const Advice eager = advise_file("01_matmul_add_eager_n64.pt.trace.json");
  const Finding* f = finding(eager, "gemm_epilogue");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->symptoms.at(0).text.find("aten::matmul -> aten::add (3 calls"), std::string::npos);
  for (const char* fixed : {"01_matmul_add_addmm_n64.pt.trace.json", "01_matmul_add_compiled_n64.pt.trace.json"})
    EXPECT_FALSE(has_finding(advise_file(fixed), "gemm_epilogue")) << fixed;
}

TEST(AdviseLessons, Lesson03EagerGeluAndMulAreAChainForFusionNotAnEpilogue) {
  // gelu follows a product, but mul follows gelu: a chain, the fusion rule's (one fused kernel),
  // not an epilogue of the product.
  const Advice eager = advise_file("03_mlp_eager_n8.pt.trace.json");
  EXPECT_EQ(finding(eager, "gemm_epilogue"), nullptr);
  EXPECT_NE(finding(eager, "fusion"), nullptr);
}

// Lesson 06, the capstone: each planted CPU problem is the largest finding left in the variant
// just before its fix, and gone from its fix on; slow leads with the attention and the batch made
// on the training thread and names the loss's loop too; fast names nothing. The mask is the one
// slow hides at batch 1: 0.9% of its steps, under the 2% a finding needs (at the page's batch 2
// it is 2.1%, named); it is named from fix1 on, when the larger problems are gone. On the lesson's own traces at batch 1 (two recorded
// steps each, gzipped; fixtures/lessons/README.md), so a loaded machine cannot move a finding
// across its threshold: the lesson's tests check the program (the mask, the loader, the per-token
// loss, the score matrix) on live runs, this one what advise makes of it.
TEST(AdviseLessons, Lesson06EachPlantedProblemLeadsBeforeItsFixAndIsGoneFromItOn) {
  const std::vector<std::string> order = {"slow", "fix1", "fix2", "fix3", "fix4", "fast"};
  std::map<std::string, std::vector<std::string>> causes;
  for (const std::string& v : order)
    for (const Finding& f : advise_file("06_find_and_fix_" + v + "_cpu_n1.pt.trace.json.gz").findings)
      causes[v].push_back(f.cause);
  struct Planted {
    std::string cause, fixed_by;
  };
  const std::vector<Planted> planted = {{"naive_attention", "fix1"},
                                        {"untraced", "fix2"},
                                        {"op_loop", "fix3"},
                                        {"rebuilt_constant", "fix4"}};
  for (const Planted& p : planted) {
    SCOPED_TRACE(p.cause);
    const size_t fix = size_t(std::find(order.begin(), order.end(), p.fixed_by) - order.begin());
    ASSERT_FALSE(causes[order[fix - 1]].empty()) << order[fix - 1];
    EXPECT_EQ(causes[order[fix - 1]].front(), p.cause) << "the largest finding in " << order[fix - 1];
    for (size_t i = fix; i < order.size(); ++i) {
      const auto& c = causes[order[i]];
      EXPECT_EQ(std::count(c.begin(), c.end(), p.cause), 0) << "still named in " << order[i];
    }
  }
  ASSERT_GE(causes["slow"].size(), 2u);
  EXPECT_EQ(causes["slow"][1], "untraced");
  for (const char* c : {"naive_attention", "untraced", "op_loop"})
    EXPECT_EQ(std::count(causes["slow"].begin(), causes["slow"].end(), c), 1) << c << " in slow";
  EXPECT_EQ(std::count(causes["fix1"].begin(), causes["fix1"].end(), "rebuilt_constant"), 1);
  for (const std::string& v : order)  // the loss's overhead is the loop's, not the program's
    EXPECT_EQ(std::count(causes[v].begin(), causes[v].end(), "op_overhead"), 0) << v;
  EXPECT_TRUE(causes["fast"].empty()) << causes["fast"].front();
}

// With the floor under every finding lowered to 0.5% (advise --min-share 0.5), slow names each
// of its four CPU problems, the mask among them; fast still names none of them.
TEST(AdviseLessons, Lesson06SlowNamesEveryPlantedProblemAboveAHalfPercentFloor) {
  AdviseOptions low;
  low.min_saved_share = 0.005;
  auto causes = [&](const std::string& v) {
    const Trace t = parse_trace_file(fixture("lessons/06_find_and_fix_" + v + "_cpu_n1.pt.trace.json.gz"),
                                     advise_read_options({}, low));
    const TraceIndex index(t);
    std::vector<std::string> c;
    for (const Finding& f : advise(index, low).findings) c.push_back(f.cause);
    return c;
  };
  const auto slow = causes("slow"), fast = causes("fast");
  for (const char* planted : {"naive_attention", "untraced", "op_loop", "rebuilt_constant"}) {
    EXPECT_EQ(std::count(slow.begin(), slow.end(), planted), 1) << planted << " in slow";
    EXPECT_EQ(std::count(fast.begin(), fast.end(), planted), 0) << planted << " in fast";
  }
}

// The mask lesson 06 builds every step until fix4 (torch::ones then triu), as its evidence shows
// it: the sizes from aten::ones' Concrete Inputs, not its Input Dims ([[], [], [], [], []]).
TEST(AdviseLessons, Lesson06RebuiltMaskShowsItsSizes) {
  const Advice a = advise_file("06_find_and_fix_fix3_cpu_n1.pt.trace.json.gz");
  const Symptom* s = test::symptom(a, "rebuilt_constant");
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(test::figure(*s, "rebuilt"), 2);
  EXPECT_NE(s->text.find("aten::triu([1, 4, 1024, 1024], diagonal=1)"), std::string::npos) << s->text;
  EXPECT_NE(s->text.find("aten::ones([1, 4, 1024, 1024], dtype=torch.bool)"), std::string::npos) << s->text;
  EXPECT_EQ(s->text.find("[[], [], [], [], []]"), std::string::npos) << s->text;
}

// The lessons on a real GPU: the traces the GPU check recorded on the H200 machine on
// 2026-12-04 (docs/gpu-runs/2026-12-04-h200, its README: the commands, the machine, the cuts).
// What advise makes of them, on the CPU, from the committed files: a rule that stops finding its
// problem in a GPU trace, or starts finding one in the variant that fixed it, fails here.
std::set<std::string> h200_causes(const std::string& name, double min_share = advise_rules::threshold::kMinSavedShare,
                                  const std::string& run = "2026-12-04-h200") {
  AdviseOptions options;
  options.min_saved_share = min_share;
  const Trace t = parse_trace_file(std::string(PIL_SOURCE_DIR) + "/docs/gpu-runs/" + run + "/traces/" + name,
                                   advise_read_options({}, options));
  const TraceIndex index(t);
  std::set<std::string> out;
  for (const Finding& f : advise(index, options).findings) out.insert(f.cause);
  return out;
}

// The finding advise ranks first ("" for none).
std::string h200_first_cause(const std::string& name, const std::string& run = "2026-12-04-h200") {
  const Trace t = parse_trace_file(std::string(PIL_SOURCE_DIR) + "/docs/gpu-runs/" + run + "/traces/" + name,
                                   advise_read_options({}, AdviseOptions{}));
  const TraceIndex index(t);
  const Advice a = advise(index, AdviseOptions{});
  return a.findings.empty() ? std::string() : a.findings.front().cause;
}

// Lesson 06 at 2 x 128 tokens (each variant's first recorded step): the per-token loss is a
// loop on the GPU too, in slow, fix1 and fix2, gone from fix3 on; fp32 products without tensor
// cores until fast, which autocasts to bf16; the score matrix in slow alone, under the 2% a
// finding needs at sequence 128, named with no floor. At 2 x 256
// (fix2 and fix3, a step each) the loop again, and only before its fix. Where the loop is, it
// leads: its backward (evaluate_function calls, medians of 22 to 48 us less their launches on that
// machine, past the CPU's 20 us) is the loop's, not left to the launch-bound rule.
TEST(AdviseH200, Lesson06TheGpusProblemsBeforeTheirFixesAndNotAfter) {
  const std::vector<std::string> order = {"slow", "fix1", "fix2", "fix3", "fix4", "fix5", "fix6", "fast"};
  std::map<std::string, std::set<std::string>> causes, unfloored;
  for (const std::string& v : order) {
    const std::string name = "06_find_and_fix/" + v + "_cuda_bf16_n2.step0.pt.trace.json.gz";
    causes[v] = h200_causes(name);
    unfloored[v] = h200_causes(name, 0);
  }
  auto named_until = [&](std::map<std::string, std::set<std::string>>& in, const std::string& cause,
                         const std::string& fixed_by) {
    bool fixed = false;
    for (const std::string& v : order) {
      fixed |= v == fixed_by;
      EXPECT_EQ(in[v].count(cause), fixed ? 0u : 1u) << cause << " in " << v;
    }
  };
  named_until(causes, "op_loop", "fix3");
  named_until(unfloored, "naive_attention", "fix1");
  EXPECT_EQ(causes["slow"].count("naive_attention"), 0u) << "under the floor at sequence 128";
  EXPECT_EQ(causes["slow"].count("fp32_gemm"), 1u);
  EXPECT_EQ(causes["fix6"].count("fp32_gemm"), 1u);
  EXPECT_EQ(causes["fast"].count("fp32_gemm"), 0u);
  EXPECT_EQ(h200_causes("06_find_and_fix/fix2_cuda_bf16_n2_seq256.step1.pt.trace.json.gz").count("op_loop"), 1u);
  for (const std::string v : {"slow_cuda_bf16_n2.step0", "fix1_cuda_bf16_n2.step0", "fix2_cuda_bf16_n2.step0",
                              "fix2_cuda_bf16_n2_seq256.step1"}) {
    EXPECT_EQ(h200_first_cause("06_find_and_fix/" + v + ".pt.trace.json.gz"), "op_loop") << v;
  }
  EXPECT_EQ(h200_causes("06_find_and_fix/fix3_cuda_bf16_n2_seq256.step1.pt.trace.json.gz").count("op_loop"), 0u);
}

// The second run on the H200 machine, the same day (docs/gpu-runs/2026-12-04-h200-run2): fast at
// the GPU's default size, 32 x 1024 tokens (two recorded steps, whole), names none of the planted
// problems at any floor, and is launch-bound; fix2 at 2 x 256 (three recorded steps): the loop
// leads, with three quarters of the steps, forward and backward together.
TEST(AdviseH200, Lesson06AtTheDefaultSizeFastNamesNoPlantedProblem) {
  const std::string run = "2026-12-04-h200-run2";
  const auto fast = h200_causes("06_find_and_fix/fast_cuda_bf16_n32.pt.trace.json.gz", 0, run);
  for (const char* planted : {"op_loop", "naive_attention", "rebuilt_constant", "host_sync", "pageable_copy",
                              "fp32_gemm", "host_stall"})
    EXPECT_EQ(fast.count(planted), 0u) << planted;
  EXPECT_EQ(fast.count("launch_bound"), 1u);
  const std::string fix2 = "06_find_and_fix/fix2_cuda_bf16_n2_seq256.pt.trace.json.gz";
  EXPECT_EQ(h200_first_cause(fix2, run), "op_loop");
  const Trace t = parse_trace_file(std::string(PIL_SOURCE_DIR) + "/docs/gpu-runs/" + run + "/traces/" + fix2,
                                   advise_read_options({}, AdviseOptions{}));
  const TraceIndex index(t);
  const Advice a = advise(index, AdviseOptions{});
  const Finding* loop = test::finding(a, "op_loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_GT(double(loop->saved_ns), 0.5 * double(a.basis_ns));
  bool backward = false;  // the backward's calls among the loop's examples
  for (const auto& e : loop->symptoms.at(0).examples) backward |= e.name.find("Backward0") != std::string::npos;
  EXPECT_TRUE(backward) << loop->symptoms.at(0).text;
}

// Lesson 01 at 4096: eager adds the bias in a pass of its own after the product, which addmm,
// cuBLASLt's epilogue, the bias kernel and the graph do not; at 64 every variant leaves the GPU
// waiting on the host, the graph's one replay a step too. Lesson 04: the naive attention materialises its scores, no SDPA
// backend does.
TEST(AdviseH200, Lessons01And04NameWhatTheirVariantsFix) {
  EXPECT_EQ(h200_causes("01_matmul_add/eager_cuda_bf16_n4096.pt.trace.json.gz").count("gemm_epilogue"), 1u);
  for (const char* v : {"addmm", "lt_bias", "cublas_bias_kernel", "graph"}) {
    EXPECT_EQ(h200_causes("01_matmul_add/" + std::string(v) + "_cuda_bf16_n4096.pt.trace.json.gz").count("gemm_epilogue"), 0u)
        << v;
    EXPECT_EQ(h200_causes("01_matmul_add/" + std::string(v) + "_cuda_bf16_n64.pt.trace.json.gz").count("launch_bound"), 1u)
        << v;
  }
  EXPECT_EQ(h200_causes("01_matmul_add/eager_cuda_bf16_n64.pt.trace.json.gz").count("launch_bound"), 1u);
  for (const char* v : {"naive", "naive_inplace"})
    EXPECT_EQ(h200_causes("04_transformer/" + std::string(v) + "_cuda_bf16_n8.pt.trace.json.gz").count("naive_attention"), 1u)
        << v;
  for (const char* v : {"sdpa_flash", "sdpa_mem_efficient", "sdpa_cudnn", "sdpa_math", "compiled"})
    EXPECT_EQ(h200_causes("04_transformer/" + std::string(v) + "_cuda_bf16_n8.pt.trace.json.gz").count("naive_attention"), 0u)
        << v;
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

// pil-trace advise reads the inputs of the few operators its rules judge by them
// (needs_input_shapes), not every operator's: the same advice, word for word, on the lessons'
// traces (the constant factories and the softmax of 04's and 06's).
TEST(AdviseLessons, ReadingOnlyTheInputsAdviseNeedsGivesTheSameAdvice) {
  for (const char* name : {"04_transformer_naive_cpu.pt.trace.json", "06_find_and_fix_slow_cpu_n1.pt.trace.json.gz",
                           "06_find_and_fix_fix3_cpu_n1.pt.trace.json.gz", "01_matmul_add_eager_n64.pt.trace.json"}) {
    SCOPED_TRACE(name);
    const std::string path = fixture(std::string("lessons/") + name);
    const ParseOptions few = advise_read_options();
    ParseOptions all = few;
    all.shapes_for = nullptr;  // every operator's inputs
    const Trace ta = parse_trace_file(path, all), tf = parse_trace_file(path, few);
    EXPECT_LT(tf.op_inputs.size(), ta.op_inputs.size()) << "fewer inputs read";
    const Advice a = advise(TraceIndex(ta)), f = advise(TraceIndex(tf));
    EXPECT_FALSE(a.findings.empty());
    EXPECT_EQ(format_advice(a, name), format_advice(f, name));
    EXPECT_EQ(advice_json(a).dump(), advice_json(f).dump());
  }
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

// The rules run on several threads as on one: the same advice, in the same order (the lessons'
// traces, and a GPU one where the GPU and the CPU rules share their reports).
TEST(AdviseLessons, TheRulesOnFourThreadsGiveWhatOneGives) {
  for (const char* name : {"lessons/06_find_and_fix_slow_cpu_n1.pt.trace.json.gz",
                           "lessons/04_transformer_naive_cpu.pt.trace.json",
                           "lessons/05_data_parallel_allreduce_after_cpu_rank0.pt.trace.json.gz",
                           "hta/alexnet_two_streams.json.gz", "hta/mi250_rocm6_2_train.json.gz"}) {
    SCOPED_TRACE(name);
    const Trace t = parse_trace_file(fixture(name), advise_read_options());
    const TraceIndex index(t);
    AdviseOptions one, four;
    four.threads = 4;
    const std::string serial = advice_json(advise(index, one)).dump();
    for (int run = 0; run < 3; ++run) EXPECT_EQ(advice_json(advise(TraceIndex(t), four)).dump(), serial);
  }
}

// docs/pil-trace.md's table of rules names every rule the code runs (and no other).
TEST(AdvisePage, ThePilTracePageListsEveryRule) {
  std::ifstream in(std::string(PIL_SOURCE_DIR) + "/docs/pil-trace.md");
  ASSERT_TRUE(in);
  std::stringstream page;
  page << in.rdbuf();
  std::vector<advise_rules::Rule> rules = advise_rules::gpu_rules();
  for (auto family : {advise_rules::cpu_rules(), advise_rules::operator_rules()})
    rules.insert(rules.end(), family.begin(), family.end());
  for (const advise_rules::Rule& r : rules) {
    EXPECT_NE(page.str().find("| `" + std::string(r.key) + "` |"), std::string::npos)
        << "docs/pil-trace.md's table of advise's rules has no row for " << r.key;
    // A rule reporting under another cause than its own name: the page says which.
    const std::string cause = "`" + std::string(r.cause) + "`";
    if (std::string(r.key) != r.cause) {
      EXPECT_TRUE(page.str().find("report " + cause) != std::string::npos ||
                  page.str().find("reports " + cause) != std::string::npos)
          << r.key << " reports " << r.cause << ": docs/pil-trace.md does not say so";
    }
  }
}

}  // namespace
}  // namespace pil::trace

namespace pil::trace {
namespace {

using test::symptom;
using test::TraceBuilder;

// --- roofline figures in the evidence -----------------------------------------------------------

/// Read as `pil-trace advise` reads a trace with these options (advise_read_options), on one
/// thread or, with small chunks, on two.
Advice advise_as_the_tool(const std::string& json, const AdviseOptions& o = {}, unsigned threads = 1) {
  ParseOptions p;
  p.threads = threads;
  if (threads > 1) p.chunk_bytes = 256;
  const Trace t = parse_trace_text(json, "<test>", advise_read_options(p, o));
  return advise(TraceIndex(t), o);
}

// A launch-bound GPU step [0, 5000] on `device`: one aten::mm of bf16 [8192, 8192]x[8192, 8192]
// (2 * 8192^3 = 1.0995e12 FLOPs) whose kernel runs 2000 us, then ten aten::mm of bf16
// [256, 256]x[256, 256] (2 * 256^3 = 33,554,432 FLOPs) whose launch call (20 us) is longer than
// its kernel (5 us, on an idle stream): 10 of 11 launches short, 150 us beyond their work.
// On an H100 SXM (in the table: bf16 tensor peak 989.5 TFLOP/s, 3350 GB/s, ridge 295 FLOP/byte):
// the small ones move 3 x 256^2 x 2 = 393,216 bytes a call (85.3 FLOP/byte: memory-bound),
// 10 calls in 50 us = 78.6 GB/s, 2.3% of the bandwidth; the large one (2731 FLOP/byte:
// compute-bound) 549,755.8 GFLOP/s, 55.6% of the bf16 tensor peak.
std::string launch_bound_gemms(const std::string& device) {
  TraceBuilder b;
  b.device(device);
  b.step(1, 0, 5000);
  auto mm = [&](double at, int n, double kernel_us) {
    int64_t id = 0;
    const std::string d = std::to_string(n);
    b.op("aten::mm", at, 30, "[[" + d + ", " + d + "], [" + d + ", " + d + "]]",
         "[\"c10::BFloat16\", \"c10::BFloat16\"]", 1, &id);
    b.kernel("nvjet_hsh_64x8_64x16_2x1_v_bz_TNN", b.call("cudaLaunchKernel", at + 5, 20, id), at + 30, kernel_us);
  };
  mm(1000, 8192, 2000);
  for (int k = 0; k < 10; ++k) mm(3100 + 50.0 * k, 256, 5);
  return b.str();
}

TEST(AdviseRoofline, ShortProductsOfALaunchBoundLoopCiteTheirShareOfThePeak) {
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(threads);
    const Advice a = advise_as_the_tool(launch_bound_gemms("NVIDIA H100 80GB HBM3"), {}, threads);
    const Symptom* s = symptom(a, "short_kernels");
    ASSERT_NE(s, nullptr);
    ASSERT_EQ(s->roofline.size(), 2u);
    const RooflineCite& small = s->roofline[0];
    EXPECT_EQ(small.op, "aten::mm");
    EXPECT_EQ(small.tensors, "[256, 256]x[256, 256]");
    EXPECT_EQ(small.calls, 10);
    EXPECT_EQ(small.time_ns, 50'000);
    EXPECT_DOUBLE_EQ(small.gflops, 10 * 33'554'432.0 / 50'000);
    EXPECT_DOUBLE_EQ(small.gbps, 10 * 393'216.0 / 50'000);
    EXPECT_EQ(small.bound, "memory");
    EXPECT_DOUBLE_EQ(small.peak_gbps, 3350);
    EXPECT_DOUBLE_EQ(small.share, small.gbps / 3350);
    EXPECT_EQ(small.peak, "H100 SXM5 80GB");
    EXPECT_FALSE(small.comparison);
    EXPECT_EQ(small.text,
              "aten::mm [256, 256]x[256, 256] c10::BFloat16: 2.3% of the H100 SXM5 80GB's memory bandwidth "
              "(78.6 of 3350 GB/s)");
    const RooflineCite& large = s->roofline[1];  // the best-placed product, for comparison
    EXPECT_TRUE(large.comparison);
    EXPECT_EQ(large.tensors, "[8192, 8192]x[8192, 8192]");
    EXPECT_EQ(large.bound, "compute");
    EXPECT_DOUBLE_EQ(large.share, 2.0 * 8192 * 8192 * 8192 / 2'000'000 / 989'500);
    const std::string text = format_advice(a, "t.json");
    EXPECT_NE(text.find("       roofline: aten::mm [256, 256]x[256, 256]"), std::string::npos) << text;
    EXPECT_NE(text.find("       roofline, for comparison: aten::mm [8192, 8192]x[8192, 8192] c10::BFloat16: 56%"),
              std::string::npos) << text;
    const auto j = advice_json(a);
    bool found = false;
    for (const auto& f : j["findings"])
      for (const auto& js : f["symptoms"])
        if (js["rule"] == "short_kernels") {
          found = true;
          ASSERT_EQ(js["roofline"].size(), 2u);
          EXPECT_EQ(js["roofline"][0]["operator"], "aten::mm");
          EXPECT_EQ(js["roofline"][0]["calls"], 10);
          EXPECT_EQ(js["roofline"][1]["comparison"], true);
        }
    EXPECT_TRUE(found);
  }
}

// The decision is taken on the trace's head, before any event: the parallel read (chunks cut
// small, on two threads) reads the same inputs as the sequential one.
TEST(AdviseRoofline, ThePeakIsJudgedOnTheHeadAlikeInAParallelRead) {
  for (const char* device : {"NVIDIA H100 80GB HBM3", "Synthetic GPU"}) {
    SCOPED_TRACE(device);
    const std::string json = launch_bound_gemms(device);
    ParseOptions two;
    two.threads = 2;
    two.chunk_bytes = 256;
    const Trace one_thread = parse_trace_text(json, "<test>", advise_read_options());
    const Trace parallel = parse_trace_text(json, "<test>", advise_read_options(two));
    EXPECT_EQ(one_thread.op_inputs.size(), std::string(device) == "Synthetic GPU" ? 0u : 2u);
    EXPECT_EQ(parallel.op_inputs.size(), one_thread.op_inputs.size());
    for (size_t i = 0; i < one_thread.events.size(); ++i)
      EXPECT_EQ(parallel.events[i].input_shapes, one_thread.events[i].input_shapes);
  }
}

TEST(AdviseRoofline, WithoutAPeakTheProductsShapesAreNotRead) {
  // A GPU the table does not know: nothing to hold the products against, so their inputs are
  // left unread (as summary leaves them) and nothing is cited; a peak given brings them back.
  const std::string json = launch_bound_gemms("Synthetic GPU");
  const Trace t = parse_trace_text(json, "<test>", advise_read_options());
  EXPECT_TRUE(t.op_inputs.empty());
  const Advice a = advise_as_the_tool(json);
  const Symptom* s = symptom(a, "short_kernels");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->roofline.empty());
  EXPECT_EQ(advice_json(a).dump().find("\"roofline\""), std::string::npos);

  AdviseOptions measured;
  measured.gpu_peak_tflops = 500;
  EXPECT_FALSE(parse_trace_text(json, "<test>", advise_read_options({}, measured)).op_inputs.empty());
  const Advice m = advise_as_the_tool(json, measured);
  const Symptom* ms = symptom(m, "short_kernels");
  ASSERT_NE(ms, nullptr);
  ASSERT_FALSE(ms->roofline.empty());
  EXPECT_EQ(ms->roofline[0].peak, "--gpu-peak-tflops");
  // A compute ceiling alone (no bandwidth for a GPU the table does not know): its share.
  EXPECT_EQ(ms->roofline[0].bound, "compute");
  EXPECT_DOUBLE_EQ(ms->roofline[0].share, 10 * 33'554'432.0 / 50'000 / 500'000);
}

// fp32 GEMMs without tensor cores on an A100 (fp32 peak 19.5 TFLOP/s): one aten::mm of float
// [4096, 4096]x[4096, 4096] (2 * 4096^3 = 137,438,953,472 FLOPs) whose sgemm runs 10,000 us:
// 13,743.9 GFLOP/s, 70% of the fp32 peak: the evidence that fp32 is what bounds it.
TEST(AdviseRoofline, Fp32GemmsCiteTheirShareOfTheFp32Peak) {
  TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 0);
  b.step(1, 0, 12000);
  int64_t id = 0;
  b.op("aten::mm", 10, 30, "[[4096, 4096], [4096, 4096]]", "[\"float\", \"float\"]", 1, &id);
  b.kernel("ampere_sgemm_128x64_nn", b.call("cudaLaunchKernel", 15, 10, id), 40, 10000);
  const Advice a = advise_as_the_tool(b.str());
  const Symptom* s = symptom(a, "fp32_gemm");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->roofline.size(), 1u);
  EXPECT_DOUBLE_EQ(s->roofline[0].peak_gflops, 19'500);
  EXPECT_DOUBLE_EQ(s->roofline[0].share, 2.0 * 4096 * 4096 * 4096 / 10'000'000 / 19'500);
  EXPECT_NE(s->roofline[0].text.find("70% of the A100"), std::string::npos) << s->roofline[0].text;
  EXPECT_NE(s->roofline[0].text.find("fp32 peak"), std::string::npos) << s->roofline[0].text;
}

// Operator overhead on the CPU, two steps of 200 us: in each, one aten::mm of float [256, 256]
// x[256, 256] (33,554,432 FLOPs) of 80 us and ten of [64, 64]x[64, 64] (524,288 FLOPs) of 10 us:
// 200 of 400 us in short calls (50%). Against a CPU peak of 1000 GFLOP/s given: the short ones
// 20 x 524,288 FLOPs in 200 us = 52.4 GFLOP/s, 5.2%; the long one 419.4 GFLOP/s, 42%.
std::string cpu_products() {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double at = 200.0 * k;
    b.step(k + 1, at, 200);
    b.op("aten::mm", at + 5, 80, "[[256, 256], [256, 256]]", "[\"float\", \"float\"]");
    for (int m = 0; m < 10; ++m)
      b.op("aten::mm", at + 90 + 11.0 * m, 10, "[[64, 64], [64, 64]]", "[\"float\", \"float\"]");
  }
  return b.str();
}

TEST(AdviseRoofline, OperatorOverheadCitesTheCpusShareWhenAPeakIsGiven) {
  AdviseOptions o;
  o.cpu_peak_gflops = 1000;
  const Advice a = advise_as_the_tool(cpu_products(), o);
  const Symptom* s = symptom(a, "op_overhead");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->roofline.size(), 2u);
  EXPECT_EQ(s->roofline[0].tensors, "[64, 64]x[64, 64]");
  EXPECT_EQ(s->roofline[0].calls, 20);
  EXPECT_DOUBLE_EQ(s->roofline[0].share, 20 * 524'288.0 / 200'000 / 1000);
  EXPECT_EQ(s->roofline[0].text, "aten::mm [64, 64]x[64, 64] float: 5.2% of the CPU's peak (52.4 of 1000 GFLOP/s)");
  EXPECT_TRUE(s->roofline[1].comparison);
  EXPECT_DOUBLE_EQ(s->roofline[1].share, 2 * 33'554'432.0 / 160'000 / 1000);

  // No peak given: a CPU trace carries none, so nothing is cited (and the products' inputs are
  // not read); the finding is the same.
  const Advice none = advise_as_the_tool(cpu_products());
  const Symptom* n = symptom(none, "op_overhead");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(n->roofline.empty());
  EXPECT_EQ(n->saved_ns, s->saved_ns);
}

}  // namespace
}  // namespace pil::trace
