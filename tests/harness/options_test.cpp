// The shared flags: defaults, every kind of bad value, help and --list.
#include "harness/options.h"

#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "support/run_process.h"

namespace pil {
namespace {

LessonInfo lesson() {
  LessonInfo l{"00_demo", "a demo lesson", 64, 4096, {{"eager", "two ops"}, {"fused", "one op"}},
               "Problem size N", {}, false, 0, {}};
  l.flags.push_back({"--in-features", "Columns of x", 32, 1, 1024, {}});
  l.flags.push_back({"--bias", "Bias term", 0, 0, 1, {"on", "off"}});
  return l;
}

ParsedArgs parse(std::vector<std::string> args) {
  std::vector<const char*> argv{"00_demo"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_options(lesson(), int(argv.size()), argv.data());
}

TEST(Options, DefaultsFollowTheSeries) {
  const ParsedArgs p = parse({});
  ASSERT_TRUE(p.run) << p.text;
  EXPECT_EQ(p.options.device, DeviceChoice::Auto);
  EXPECT_EQ(p.options.dtype, DTypeChoice::Auto);
  EXPECT_EQ(p.options.size, 64);
  EXPECT_EQ(p.options.variants, std::vector<std::string>{"eager"});
  EXPECT_EQ(p.options.wait, 1);
  EXPECT_EQ(p.options.warmup, 1);
  EXPECT_EQ(p.options.active, 3);
  EXPECT_EQ(p.options.warmup_calls, 3);
  EXPECT_EQ(p.options.out_dir, "traces/00_demo");
  EXPECT_FALSE(p.options.sort.has_value());
  EXPECT_EQ(p.options.seed, 0u);
  EXPECT_TRUE(p.options.record_shapes);
}

TEST(Options, RecordShapesCanBeSwitchedOff) {
  const ParsedArgs p = parse({"--record-shapes", "off"});
  ASSERT_TRUE(p.run) << p.text;
  EXPECT_FALSE(p.options.record_shapes);
}

TEST(Options, GoodValuesAreTaken) {
  const ParsedArgs p = parse({"--device", "cpu", "--dtype", "bf16", "--size=512", "--variant",
                              "fused", "--wait", "0", "--warmup", "0", "--active", "7",
                              "--warmup-calls", "0", "--out", "somewhere", "--row-limit", "3",
                              "--sort", "self_cpu_time_total", "--seed", "42"});
  ASSERT_TRUE(p.run) << p.text;
  EXPECT_EQ(p.options.device, DeviceChoice::Cpu);
  EXPECT_EQ(p.options.dtype, DTypeChoice::BF16);
  EXPECT_EQ(p.options.size, 512);
  EXPECT_EQ(p.options.variants, std::vector<std::string>{"fused"});
  EXPECT_EQ(p.options.wait, 0);
  EXPECT_EQ(p.options.warmup, 0);
  EXPECT_EQ(p.options.active, 7);
  EXPECT_EQ(p.options.warmup_calls, 0);
  EXPECT_EQ(p.options.out_dir, "somewhere");
  EXPECT_EQ(p.options.row_limit, 3);
  EXPECT_EQ(p.options.sort, trace::SortKey::SelfCpu);
  EXPECT_EQ(p.options.seed, 42u);
}

TEST(Options, LessonFlagsHaveDefaultsAndAreChecked) {
  const ParsedArgs d = parse({});
  ASSERT_TRUE(d.run);
  EXPECT_EQ(d.options.flag("--in-features"), 32);
  EXPECT_EQ(d.options.flag("--bias"), 0);
  const ParsedArgs p = parse({"--in-features", "7", "--bias", "off"});
  ASSERT_TRUE(p.run) << p.text;
  EXPECT_EQ(p.options.flag("--in-features"), 7);
  EXPECT_EQ(p.options.flag("--bias"), 1);
  const ParsedArgs bad = parse({"--in-features", "0"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.text.find("--in-features: 0 is out of range"), std::string::npos) << bad.text;
  const ParsedArgs word = parse({"--bias", "maybe"});
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.text.find("--bias: unknown value 'maybe'; allowed: on|off"), std::string::npos)
      << word.text;
}

TEST(Options, VariantAllSelectsEveryVariantInOrder) {
  const ParsedArgs p = parse({"--variant", "all"});
  ASSERT_TRUE(p.run);
  EXPECT_EQ(p.options.variants, (std::vector<std::string>{"eager", "fused"}));
}

TEST(Options, AWordIsTakenInAnyCaseAndATypoGetsItsNearestName) {
  const ParsedArgs p = parse({"--variant", "FUSED", "--device", "CPU", "--bias", "Off"});
  ASSERT_TRUE(p.run) << p.text;
  EXPECT_EQ(p.options.variants, std::vector<std::string>{"fused"}) << "the variant's own name, for the out folder";
  EXPECT_EQ(p.options.device, DeviceChoice::Cpu);
  EXPECT_EQ(p.options.flag("--bias"), 1);
  const ParsedArgs all = parse({"--variant", "All"});
  ASSERT_TRUE(all.run) << all.text;
  EXPECT_EQ(all.options.variants, (std::vector<std::string>{"eager", "fused"}));
  const ParsedArgs typo = parse({"--variant", "fuesd"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.text, "00_demo: error: --variant: unknown value 'fuesd' (did you mean fused?); allowed: eager|fused|all");
}

struct BadCase {
  std::vector<std::string> args;
  std::string must_name;  // the flag (or word) the message must name
};

void PrintTo(const BadCase& c, std::ostream* os) {
  for (const auto& a : c.args) *os << "'" << a << "' ";
}

std::string case_name(const ::testing::TestParamInfo<BadCase>& info) {
  std::string name;
  for (char ch : info.param.must_name)
    if (std::isalnum(static_cast<unsigned char>(ch))) name += ch;
  return name + "_" + std::to_string(info.index);
}

class BadFlag : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadFlag, GetsOneLineNamingTheFlagAndExit2) {
  const ParsedArgs p = parse(GetParam().args);
  EXPECT_FALSE(p.run);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_EQ(p.text.find('\n'), std::string::npos) << "more than one line: " << p.text;
  EXPECT_NE(p.text.find(GetParam().must_name), std::string::npos) << p.text;
  EXPECT_EQ(p.text.rfind("00_demo: error: ", 0), 0u) << p.text;
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, BadFlag,
    ::testing::Values(BadCase{{"--size", "0"}, "--size"}, BadCase{{"--size", "-5"}, "--size"},
                      BadCase{{"--size", "abc"}, "--size"}, BadCase{{"--size", "1e3"}, "--size"},
                      BadCase{{"--size", "12x"}, "--size"}, BadCase{{"--size", ""}, "--size"},
                      BadCase{{"--size", "99999999999999999999999"}, "--size"},
                      BadCase{{"--size", "4097"}, "--size"},
                      BadCase{{"--device", "gpu"}, "--device"},
                      BadCase{{"--dtype", "fp64"}, "--dtype"},
                      BadCase{{"--variant", "nope"}, "--variant"},
                      BadCase{{"--active", "0"}, "--active"}, BadCase{{"--wait", "-1"}, "--wait"},
                      BadCase{{"--warmup", "x"}, "--warmup"},
                      BadCase{{"--warmup-calls", "-2"}, "--warmup-calls"},
                      BadCase{{"--row-limit", "0"}, "--row-limit"},
                      BadCase{{"--sort", "fastest"}, "--sort"},
                      BadCase{{"--seed", "-1"}, "--seed"}, BadCase{{"--record-shapes", "no"}, "--record-shapes"}, BadCase{{"--out", ""}, "--out"},
                      BadCase{{"--bogus"}, "--bogus"}, BadCase{{"--size"}, "--size"},
                      BadCase{{"--size", "4", "--size", "8"}, "--size"},
                      BadCase{{"--device", "--size", "4"}, "--device"}, BadCase{{"--out="}, "--out"},
                      BadCase{{"--bias", "on", "--bias", "off"}, "--bias"}, BadCase{{"--expect"}, "--expect"}),
    case_name);

TEST(Options, BadValueMessagesSayWhatIsAllowed) {
  EXPECT_NE(parse({"--size", "0"}).text.find("allowed: a whole number from 1 to 4096"),
            std::string::npos);
  EXPECT_NE(parse({"--device", "gpu"}).text.find("allowed: auto|cpu|cuda"), std::string::npos);
  EXPECT_NE(parse({"--variant", "x"}).text.find("allowed: eager|fused|all"), std::string::npos);
}

// A flag given twice names both values (CLI11 said "At Most 1 required but received 2"); one
// given without its value says so with what is allowed, and "--device=" is not taken as the
// default (CLI11 would take it so).
TEST(Options, AFlagGivenTwiceOrWithoutItsValueSaysSo) {
  EXPECT_EQ(parse({"--size", "4", "--size=8"}).text, "00_demo: error: --size: given 2 times (4, 8); allowed: once");
  EXPECT_EQ(parse({"--size"}).text, "00_demo: error: --size: no value given; allowed: a whole number from 1 to 4096");
  EXPECT_EQ(parse({"--device", "--size", "4"}).text, "00_demo: error: --device: no value given; allowed: auto|cpu|cuda");
  EXPECT_EQ(parse({"--device="}).text, "00_demo: error: --device: no value given; allowed: auto|cpu|cuda");
  EXPECT_EQ(parse({"--variant"}).text, "00_demo: error: --variant: no value given; allowed: eager|fused|all");
  EXPECT_EQ(parse({"--out"}).text, "00_demo: error: --out: no value given; allowed: a folder to write into");
  EXPECT_NE(parse({"--sort"}).text.find("--sort: no value given; allowed: cpu_time_total"), std::string::npos);
  EXPECT_NE(parse({"--expect"}).text.find("--expect: no value given; allowed: steps=N"), std::string::npos);
  // --expect is repeatable, and a value may start with one dash.
  const ParsedArgs two = parse({"--expect", "steps=3", "--expect", "kernels=0"});
  ASSERT_TRUE(two.run) << two.text;
  EXPECT_EQ(two.options.expect.size(), 2u);
  EXPECT_NE(parse({"--size", "-5"}).text.find("--size: -5 is out of range"), std::string::npos);
}

// A word the parser did not take is named first (CLI11 listed every one, last first: "not
// expected: 4 --sizes"), with the flag a typo away where there is one.
TEST(Options, AnUnknownFlagIsNamedWithTheFlagItWasLikelyMeantToBe) {
  EXPECT_EQ(parse({"--sizes", "4"}).text,
            "00_demo: error: --sizes: not a flag of this lesson (did you mean --size?); allowed: the flags --help lists");
  EXPECT_EQ(parse({"--in-feature=4"}).text,
            "00_demo: error: --in-feature: not a flag of this lesson (did you mean --in-features?); allowed: the flags "
            "--help lists");
  EXPECT_EQ(parse({"--bogus", "1", "--more"}).text,
            "00_demo: error: --bogus: not a flag of this lesson; allowed: the flags --help lists");
  EXPECT_EQ(parse({"--size", "4", "extra"}).text,
            "00_demo: error: 'extra': a value with no flag before it; allowed: the flags --help lists, each with its "
            "value");
  EXPECT_EQ(parse({"--list", "x"}).exit_code, 2);
}

// A run's files carry the lesson flags set away from their default on its device, so runs that
// differ only by one keep their own files; the defaults add nothing.
TEST(Options, FileNamesCarryTheLessonFlagsAwayFromTheirDefault) {
  const LessonInfo l = lesson();
  const std::map<std::string, int64_t> cpu{{"--in-features", 8}};
  EXPECT_EQ(flags_in_name(l.flags, {}, {{"--in-features", 32}, {"--bias", 0}}, false), "");
  EXPECT_EQ(flags_in_name(l.flags, {}, {{"--in-features", 7}, {"--bias", 0}}, false), "_in-features7");
  EXPECT_EQ(flags_in_name(l.flags, {}, {{"--in-features", 7}, {"--bias", 1}}, true), "_in-features7_bias-off");
  EXPECT_EQ(flags_in_name(l.flags, cpu, {{"--in-features", 8}, {"--bias", 0}}, true), "");
  EXPECT_EQ(flags_in_name(l.flags, cpu, {{"--in-features", 8}, {"--bias", 0}}, false), "_in-features8");
  EXPECT_EQ(flags_in_name(l.flags, cpu, {{"--in-features", 32}, {"--bias", 0}}, true), "_in-features32");
  EXPECT_EQ(flag_text(l.flags[1], 1), "off");
  EXPECT_EQ(flag_text(l.flags[0], 32), "32");
}

TEST(Options, OutThatIsAFileIsRejected) {
  test::TempDir dir;
  const std::string file = dir.path() + "/a-file";
  std::ofstream(file) << "x";
  const ParsedArgs p = parse({"--out", file});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.text.find("--out"), std::string::npos);
}

TEST(Options, HelpListsEveryFlagAndExits0) {
  const ParsedArgs p = parse({"--help"});
  EXPECT_FALSE(p.run);
  EXPECT_EQ(p.exit_code, 0);
  for (const char* flag : {"--device", "--dtype", "--size", "--variant", "--list", "--wait",
                           "--warmup", "--active", "--warmup-calls", "--out", "--row-limit",
                           "--sort", "--seed", "--help"})
    EXPECT_NE(p.text.find(flag), std::string::npos) << flag;
}

// --out's help shows a file name with the lesson's own first flag changed, as a run names it
// (it read "_seq128" in every lesson, 02 with no --seq), and none where the lesson has no flags.
TEST(Options, OutHelpNamesTheLessonsOwnFlag) {
  const ParsedArgs p = parse({"--help"});
  EXPECT_NE(p.text.find("set away from its default (_in-features64)"), std::string::npos) << p.text;
  EXPECT_EQ(p.text.find("_seq128"), std::string::npos) << p.text;
  LessonInfo plain = lesson();
  plain.flags.clear();
  const char* argv[] = {"00_demo", "--help"};
  const ParsedArgs q = parse_options(plain, 2, argv);
  EXPECT_NE(q.text.find("named VARIANT_DEVICE_DTYPE_nSIZE"), std::string::npos) << q.text;
  EXPECT_EQ(q.text.find("set away from its default"), std::string::npos) << q.text;
}

// --list is the lesson's to print (it knows which variants would run); parsing checks the flags
// it is given with, so a bad one is still a usage error.
TEST(Options, ListIsAskedWithTheOptionsChecked) {
  const ParsedArgs p = parse({"--list", "--device", "cuda", "--dtype", "fp16", "--size", "8"});
  EXPECT_FALSE(p.run);
  EXPECT_TRUE(p.list);
  EXPECT_EQ(p.exit_code, 0);
  EXPECT_EQ(p.options.device, DeviceChoice::Cuda);
  EXPECT_EQ(p.options.dtype, DTypeChoice::F16);
  EXPECT_EQ(p.options.size, 8);
  const ParsedArgs bad = parse({"--list", "--device", "tpu"});
  EXPECT_FALSE(bad.list);
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace pil
