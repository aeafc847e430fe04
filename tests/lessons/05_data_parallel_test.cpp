// Lesson 05 end to end: two ranks on the CPU (Gloo) agree with each other and with the float64
// single-process training; each rank writes its own trace and summary; rank 0 prints the table
// across ranks. A rank that dies or hangs stops the run within the timeout; a port in use and an
// unreachable store are one line each.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/lesson_run.h"

namespace {

using pil::test::count_lines_starting_with;
using pil::test::ProcessResult;
using pil::test::run_process;
using pil::test::TempDir;

const std::string kLesson = PIL_LESSON_EXE;
// Small enough for seconds on two shared cores.
const std::vector<std::string> kShape{"--seq", "16", "--model", "64", "--hidden", "256", "--layers", "2",
                                      "--bucket-kb", "64", "--active", "2", "--warmup-calls", "1"};
// What the runs' file names carry after "<variant>_cpu_fp32_n8": the shape's lesson flags.
const std::string kShapeInName = "_seq16_model64_hidden256_layers2_bucket-kb64";

/// Sets an environment variable for one run of the lesson (its ranks inherit it).
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

struct RanksRun {
  TempDir dir;
  ProcessResult r;
  double seconds = 0;
  explicit RanksRun(std::vector<std::string> args) {
    args.insert(args.end(), kShape.begin(), kShape.end());
    args.insert(args.end(), {"--out", dir.path()});
    const auto t0 = std::chrono::steady_clock::now();
    r = run_process(kLesson, args);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  bool has(const std::string& file) const { return std::filesystem::exists(dir.path() + "/" + file); }
};

/// A TCP port with a listener on it for the test's life.
struct BusyPort {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  BusyPort() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 1);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~BusyPort() { ::close(fd); }
};

TEST(DataParallel, TwoRanksAgreeWithTheFloat64TrainingAndEachOther) {
  const RanksRun run({"--ranks", "2", "--variant", "all", "--comm-timeout-s", "30"});
  ASSERT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED (2 ranks)"), 1);
  // Both variants on both ranks: verified, and the ranks' weights identical.
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank0] RESULT: PASSED"), 2);
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank1] RESULT: PASSED"), 2);
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank1] ranks agree: the largest difference between the ranks' "
                                                 "weights over 5 steps is 0"), 2) << run.r.out;
  for (const char* v : {"allreduce_after", "bucketed"})
    for (const char* r : {"rank0", "rank1"}) {
      const std::string stem = std::string(v) + "_cpu_fp32_n8" + kShapeInName + "_" + r;
      EXPECT_TRUE(run.has(stem + ".pt.trace.json")) << stem;
      EXPECT_TRUE(run.has(stem + ".summary.json")) << stem;
    }
  std::ifstream summary(run.dir.path() + "/bucketed_cpu_fp32_n8" + kShapeInName + "_rank1.summary.json");
  const auto j = nlohmann::json::parse(summary);
  EXPECT_EQ(j["distributed"]["rank"], 1);
  EXPECT_EQ(j["distributed"]["world_size"], 2);
  EXPECT_EQ(j["distributed"]["backend"], "gloo");
  EXPECT_EQ(j["flags"]["bucket-kb"], 64);
  EXPECT_EQ(j["flags"]["layers"], 2);
  // The table across ranks, once per variant, from rank 0; its picture.
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank0] == across ranks"), 2);
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank1] == across ranks"), 0);
  EXPECT_NE(run.r.out.find("gloo:all_reduce"), std::string::npos);
  EXPECT_TRUE(run.has("bucketed_cpu_fp32_n8" + kShapeInName + "_ranks.svg"));
  // Bucketed: 64 KiB buckets of the 2 x 3 weights (64 KiB each) are six all-reduces per step;
  // after backward: one.
  const auto pil = run_process(PIL_TRACE_EXE, {"ranks", run.dir.path() + "/bucketed_cpu_fp32_n8" + kShapeInName + "_rank0.pt.trace.json",
                                               run.dir.path() + "/bucketed_cpu_fp32_n8" + kShapeInName + "_rank1.pt.trace.json", "--json"});
  ASSERT_EQ(pil.exit_code, 0) << pil.err;
  const auto report = nlohmann::json::parse(pil.out);
  for (const auto& step : report["ranks"][0]["steps"]) EXPECT_EQ(step["collectives"], 6);
  for (const auto& c : report["ranks"][0]["collectives"]) EXPECT_EQ(c["bytes"], 64 * 1024);
  const auto after = run_process(PIL_TRACE_EXE, {"ranks", run.dir.path() + "/allreduce_after_cpu_fp32_n8" + kShapeInName + "_rank0.pt.trace.json",
                                                 run.dir.path() + "/allreduce_after_cpu_fp32_n8" + kShapeInName + "_rank1.pt.trace.json", "--json"});
  const auto a = nlohmann::json::parse(after.out);
  for (const auto& step : a["ranks"][1]["steps"]) {
    EXPECT_EQ(step["collectives"], 1);
    EXPECT_EQ(step["overlap_ns"], 0);  // nothing computes while the one all-reduce runs
  }
}

// In bf16 (a GPU's default dtype) the SGD step goes to an fp32 copy of the weights: taken on the
// bf16 weights, lr x gradient is under half a bf16 step of most weights and rounds away, and the
// weights' change falls outside bf16's tolerance of the float64 training (as it did before).
TEST(DataParallel, Bf16TrainsWithFp32MasterWeights) {
  const RanksRun run({"--ranks", "2", "--dtype", "bf16", "--variant", "bucketed", "--comm-timeout-s", "30"});
  EXPECT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED (2 ranks)"), 1) << run.r.out;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "[rank0] ranks agree: the largest difference between the ranks' "
                                                 "weights over 5 steps is 0"),
            1)
      << run.r.out;
}

// One rank (the page's Try this): counted as one, not "1 ranks".
TEST(DataParallel, OneRankIsCountedInWords) {
  const RanksRun run({"--ranks", "1", "--variant", "bucketed", "--comm-timeout-s", "30"});
  EXPECT_EQ(run.r.exit_code, 0) << run.r.out << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "launcher: 1 rank, store at "), 1) << run.r.out;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: PASSED (1 rank)"), 1) << run.r.out;
  EXPECT_NE(run.r.out.find("(pil-trace ranks on the one trace)"), std::string::npos) << run.r.out;
}

TEST(DataParallel, ARankThatExitsStopsTheOthers) {
  const ScopedEnv fail("PIL_TEST_RANK_FAIL", "1:exit");
  const RanksRun run({"--ranks", "2", "--comm-timeout-s", "10"});
  EXPECT_EQ(run.r.exit_code, 1);
  EXPECT_LT(run.seconds, 60);
  // Rank 1 fails first; rank 0 fails on the closed connection a moment later, sometimes before
  // the launcher looks again: then it reports both at once, without an order.
  const bool first = run.r.err.find("launcher: rank 1 failed (exit code 3)") != std::string::npos;
  const bool at_once = run.r.err.find("launcher: rank 0 (exit code 1) and rank 1 (exit code 3) failed at once") !=
                       std::string::npos;
  EXPECT_TRUE(first || at_once) << run.r.err;
  EXPECT_EQ(run.r.err.find("launcher: rank 0 failed ("), std::string::npos) << "rank 0 is never first: " << run.r.err;
  EXPECT_NE(run.r.err.find("rank 0: the all-reduce of the gradients failed"), std::string::npos) << run.r.err;
  EXPECT_EQ(count_lines_starting_with(run.r.out, "RESULT: FAILED"), 1);
}

TEST(DataParallel, ARankThatHangsIsTimedOut) {
  const ScopedEnv fail("PIL_TEST_RANK_FAIL", "1:hang");
  const RanksRun run({"--ranks", "2", "--comm-timeout-s", "2"});
  EXPECT_EQ(run.r.exit_code, 1);
  EXPECT_LT(run.seconds, 60);  // 2 s timeout, 7 s grace, start-up
  EXPECT_NE(run.r.err.find("another rank died or hung"), std::string::npos) << run.r.err;
  EXPECT_NE(run.r.err.find("rank 1 killed after hanging"), std::string::npos) << run.r.err;
}

TEST(DataParallel, APortInUseIsOneLine) {
  const BusyPort busy;
  const ScopedEnv rank("RANK", "0"), world("WORLD_SIZE", "1"), port("MASTER_PORT", std::to_string(busy.port));
  const RanksRun run({});
  EXPECT_EQ(run.r.exit_code, 2);
  EXPECT_EQ(run.r.err, "05_data_parallel: error: MASTER_PORT=" + std::to_string(busy.port) +
                           ": port already in use on 127.0.0.1; allowed: a free port (unset MASTER_PORT "
                           "and --ranks picks one)\n");
}

TEST(DataParallel, AnUnreachableStoreIsOneLine) {
  int free_port = 0;
  { free_port = BusyPort().port; }  // nobody listens there any more
  const ScopedEnv rank("RANK", "1"), world("WORLD_SIZE", "2"), port("MASTER_PORT", std::to_string(free_port));
  const RanksRun run({"--comm-timeout-s", "2"});
  EXPECT_EQ(run.r.exit_code, 2);
  EXPECT_EQ(count_lines_starting_with(run.r.err, "05_data_parallel: error: rank 1: cannot reach the c10d store"), 1)
      << run.r.err;
  EXPECT_EQ(std::count(run.r.err.begin(), run.r.err.end(), '\n'), 1) << run.r.err;
}

// A usage error every rank would hit is the launcher's to say, before any rank starts: exit 2 and
// one line, not a RESULT: FAILED from each rank.
TEST(DataParallel, ContradictoryBackendAndDeviceAreRefusedBeforeTheRanksStart) {
  for (const auto& [backend, device] : {std::pair<const char*, const char*>{"nccl", "cpu"}, {"gloo", "cuda"}}) {
    const RanksRun run({"--ranks", "2", "--backend", backend, "--device", device});
    EXPECT_EQ(run.r.exit_code, 2) << run.r.out << run.r.err;
    EXPECT_EQ(std::count(run.r.err.begin(), run.r.err.end(), '\n'), 1) << run.r.err;
    EXPECT_EQ(run.r.err.rfind(std::string("05_data_parallel: error: --backend ") + backend, 0), 0u) << run.r.err;
    EXPECT_EQ(run.r.out.find("[rank"), std::string::npos) << "no rank started\n" << run.r.out;
    EXPECT_EQ(run.r.out.find("RESULT:"), std::string::npos) << run.r.out;
  }
}

// What every rank would say alike is said once, before any rank starts: an --out folder that
// cannot be made (each rank said it, and the run ended FAILED, exit 1, in 8 lines), as 01 says it, and
// --device cuda without a GPU (a skip line from each rank and one more from the launcher).
TEST(DataParallel, WhatEveryRankWouldSayIsSaidOnceBeforeTheyStart) {
  if (std::filesystem::is_directory("/proc/self")) {
    const auto r = run_process(kLesson, {"--ranks", "2", "--device", "cpu", "--out", "/proc/self/x"});
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("05_data_parallel: error: --out: cannot create /proc/self/x: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out.find("[rank"), std::string::npos) << r.out;
  }
  TempDir dir;
  const auto cuda = run_process(kLesson, {"--ranks", "2", "--device", "cuda", "--out", dir.path()});
  if (cuda.exit_code != 77) GTEST_SKIP() << "a usable GPU here: --device cuda ran (exit " << cuda.exit_code << ")";
  EXPECT_EQ(cuda.out.find("[rank"), std::string::npos) << "no rank started\n" << cuda.out;
  EXPECT_EQ(cuda.out.find("RESULT: SKIPPED"), cuda.out.rfind("RESULT:")) << cuda.out;
  EXPECT_EQ(std::count(cuda.out.begin(), cuda.out.end(), '\n'), 2) << cuda.out;
}

TEST(DataParallel, BadLauncherVariablesAreOneLine) {
  const ScopedEnv rank("RANK", "3"), world("WORLD_SIZE", "2");
  const RanksRun run({});
  EXPECT_EQ(run.r.exit_code, 2);
  EXPECT_EQ(run.r.err, "05_data_parallel: error: RANK=3: 3 is out of range; allowed: a whole number from 0 to 1\n");
}

// A launcher's variable without RANK is refused in one line before any rank starts (WORLD_SIZE
// alone, even WORLD_SIZE=x, started the lesson's own ranks as if none were set).
TEST(DataParallel, ALaunchersVariableWithoutRankIsOneLine) {
  for (const char* name : {"WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}) {
    const ScopedEnv set(name, "x");
    const RanksRun run({});
    EXPECT_EQ(run.r.exit_code, 2) << name;
    EXPECT_EQ(run.r.err, "05_data_parallel: error: " + std::string(name) +
                             " is set but RANK is not; allowed: RANK and WORLD_SIZE set together (as torchrun "
                             "sets them), or neither (the lesson starts its own --ranks)\n");
    EXPECT_EQ(run.r.out.find("[rank"), std::string::npos) << run.r.out;
  }
}

// LOCAL_RANK picks the rank's GPU among its machine's LOCAL_WORLD_SIZE: one beyond them is the
// launcher's mistake, said in one line before any GPU is touched (was an abort in set-device).
TEST(DataParallel, ALocalRankBeyondTheMachinesRanksIsOneLine) {
  const ScopedEnv rank("RANK", "3"), world("WORLD_SIZE", "4"), local("LOCAL_RANK", "3"),
      local_size("LOCAL_WORLD_SIZE", "2");
  const RanksRun run({});
  EXPECT_EQ(run.r.exit_code, 2);
  EXPECT_EQ(run.r.err,
            "05_data_parallel: error: LOCAL_RANK=3: not allowed with LOCAL_WORLD_SIZE=2; allowed: a whole "
            "number from 0 to 1\n");
}

}  // namespace
