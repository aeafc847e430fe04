// The trace kit across ranks: overlap and wait worked out by hand on synthetic ranks, the bytes
// of each collective, and traces that cannot be read together refused with one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "support/run_process.h"
#include "trace/parse.h"
#include "trace/intervals.h"
#include "trace/ranks.h"
#include "trace/synthetic_ranks.h"
#include "trace/trace_builder.h"

namespace {

using namespace pil::trace;
using pil::test::synthetic_rank_trace;
using pil::test::TempDir;

/// An event of `t` [from, to), in ns.
void add_event(Trace& t, const char* name, Category c, int64_t from, int64_t to) {
  Event e;
  e.name = t.intern(name);
  e.category = c;
  e.start_ns = from;
  e.dur_ns = to - from;
  t.events.push_back(e);
}

struct Ranks : ::testing::Test {
  TempDir dir;
  std::string write(const std::string& name, const std::string& text) {
    return pil::test::write_file(dir.path(), name, text);
  }
  std::string message_of(const std::vector<std::string>& paths) {
    try {
      read_ranks(paths);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }
};

// The interval algebra the ranks report and advise count with (trace/intervals.h), by hand:
// [0,10) [20,30) [40,50) against [5,25) [45,60): [5,10) [20,25) [45,50), 15 in all.
TEST(Intervals, IntersectionAndOverlapAgree) {
  const std::vector<Interval> a{{0, 10}, {20, 30}, {40, 50}}, b{{5, 25}, {45, 60}};
  const std::vector<Interval> both = intersect(a, b);
  ASSERT_EQ(both.size(), 3u);
  EXPECT_EQ(both[0].from, 5);
  EXPECT_EQ(both[0].to, 10);
  EXPECT_EQ(both[1].from, 20);
  EXPECT_EQ(both[1].to, 25);
  EXPECT_EQ(both[2].from, 45);
  EXPECT_EQ(both[2].to, 50);
  EXPECT_EQ(length(both), 15);
  EXPECT_EQ(overlap(a, b), 15);
  EXPECT_TRUE(intersect(a, {{10, 20}}).empty());  // touching ends share nothing
}

TEST_F(Ranks, OverlapAndWaitAsWorkedOutByHand) {
  const RanksReport r = read_ranks({write("a_rank1.json", synthetic_rank_trace(1)),
                                    write("a_rank0.json", synthetic_rank_trace(0))});
  ASSERT_EQ(r.ranks.size(), 2u);
  ASSERT_EQ(r.ranks[0].steps.size(), 2u);
  const RankStep& s01 = r.ranks[0].steps[0];
  EXPECT_EQ(s01.compute_ns, 60000);  // c10d::allreduce_ is a call, not computation
  EXPECT_EQ(s01.comm_ns, 40000);
  EXPECT_EQ(s01.overlap_ns, 10000);
  EXPECT_EQ(s01.exposed_comm_ns(), 30000);
  const RankStep& s12 = r.ranks[1].steps[1];
  EXPECT_EQ(s12.compute_ns, 30000);
  EXPECT_EQ(s12.comm_ns, 76000);
  EXPECT_EQ(s12.overlap_ns, 10000);
  EXPECT_EQ(r.ranks[0].steps[1].overlap_ns, 40000);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].slowest, 1);
  EXPECT_EQ(r.steps[0].wait_ns, (std::vector<int64_t>{30000, 0}));
  EXPECT_EQ(r.steps[0].max_wait_ns(), 30000);
  EXPECT_EQ(r.steps[1].slowest, 0);
  EXPECT_EQ(r.steps[1].wait_ns, (std::vector<int64_t>{0, 30000}));
  EXPECT_EQ(r.steps[1].matched_collectives, 1);
}

TEST_F(Ranks, EachCollectiveWithItsBytesAndStep) {
  const RanksReport r = read_ranks({write("b_rank0.json", synthetic_rank_trace(0)),
                                    write("b_rank1.json", synthetic_rank_trace(1))});
  const auto& c = r.ranks[1].collectives;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].name, "gloo:all_reduce");
  EXPECT_EQ(c[0].bytes, 4000);  // Input Dims [[1000]] of float
  EXPECT_EQ(c[0].dur_ns, 15000);
  EXPECT_EQ(c[0].step, 1);
  EXPECT_EQ(c[1].step, 2);
  EXPECT_EQ(r.ranks[0].id.backend, "gloo");
  EXPECT_NE(format_ranks(r).find("3.91 KB"), std::string::npos) << format_ranks(r);
  const std::string svg = render_ranks_svg(r);
  EXPECT_NE(svg.find("rank 1"), std::string::npos);
  EXPECT_NE(svg.find("slowest in #1"), std::string::npos);
}

TEST_F(Ranks, ACollectiveCalledInsideAnOperatorIsNotComputation) {
  // Each rank: aten::mm [0,40); AccumulateGrad [40,95) calls c10d::allreduce_ [45,90) from its
  // hook, while Gloo's thread all-reduces [45,90). The call blocks: computation is 40 + 5 + 5,
  // communication 45, none of it hidden (the enclosing operator computes nothing meanwhile).
  auto trace = [&](int rank) {
    std::string ev;
    auto x = [&](const char* cat, const char* name, int tid, int ts, int dur) {
      ev += std::string(ev.empty() ? "" : ",") + "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
            "\", \"pid\": " + std::to_string(1 + rank) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " + std::to_string(ts) +
            ", \"dur\": " + std::to_string(dur) + ", \"args\": {}}";
    };
    x("user_annotation", (pil::test::step_prefix() + "1").c_str(), 1, 0, 100);
    x("cpu_op", "aten::mm", 1, 0, 40);
    x("cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 1, 40, 55);
    x("cpu_op", "c10d::allreduce_", 1, 45, 45);
    x("user_annotation", "gloo:all_reduce", 2, 45, 45);
    return "{\"distributedInfo\": {\"backend\": \"gloo\", \"rank\": " + std::to_string(rank) +
           ", \"world_size\": 2, \"pil_run_id\": \"h\"}, \"baseTimeNanoseconds\": 0, \"traceEvents\": [" + ev +
           "]}";
  };
  const RanksReport r = read_ranks({write("h_rank0.json", trace(0)), write("h_rank1.json", trace(1))});
  ASSERT_EQ(r.ranks.size(), 2u);
  ASSERT_EQ(r.ranks[0].steps.size(), 1u);
  const RankStep& s = r.ranks[0].steps[0];
  EXPECT_EQ(s.compute_ns, 50000);
  EXPECT_EQ(s.comm_ns, 45000);
  EXPECT_EQ(s.overlap_ns, 0);
  EXPECT_EQ(s.exposed_comm_ns(), 45000);
}

TEST_F(Ranks, TheSameReportWhateverTheThreads) {
  // --threads is every reader thread: 1 reads the files one after another, 2 two at once, 8
  // two at once with 4 threads each. The report must not depend on it.
  const std::vector<std::string> paths = {write("t_rank0.json", synthetic_rank_trace(0)),
                                          write("t_rank1.json", synthetic_rank_trace(1))};
  const std::string one = format_ranks(read_ranks(paths, 1));
  for (unsigned threads : {2u, 3u, 8u, 0u}) EXPECT_EQ(format_ranks(read_ranks(paths, threads)), one) << threads;
}

TEST_F(Ranks, AFolderIsReadWithoutTheSummaries) {
  write("c_rank0.pt.trace.json", synthetic_rank_trace(0));
  write("c_rank1.pt.trace.json", synthetic_rank_trace(1));
  write("c_rank0.summary.json", "{}");
  write("notes.json", "{}");  // not a rank: left out, since the others' names say their rank
  EXPECT_EQ(read_ranks({dir.path()}, 1).ranks.size(), 2u);
}

// A folder per worker (run/rank0/..., run/rank1/..., as a tensorboard_trace_handler per rank
// writes them) was refused, "no trace files": the folders in it are read, one level down, and a
// trace without distributedInfo takes its rank from its folder's name.
TEST_F(Ranks, AFolderOfFoldersPerWorkerIsRead) {
  namespace fs = std::filesystem;
  for (bool info : {true, false}) {
    const std::string run = dir.path() + (info ? "/run" : "/run_no_info");
    for (int r = 0; r < 2; ++r) {
      std::string text = synthetic_rank_trace(r);
      if (!info) text = std::regex_replace(text, std::regex("\"distributedInfo\": \\{[^}]*\\},"), "");
      fs::create_directories(run + "/rank" + std::to_string(r));
      pil::test::write_file(run + "/rank" + std::to_string(r), "host.123.pt.trace.json", text);
    }
    const RanksReport report = read_ranks({run}, 1);
    ASSERT_EQ(report.ranks.size(), 2u) << info;
    EXPECT_EQ(report.rank_of(0), 0) << info;
    EXPECT_EQ(report.rank_of(1), 1) << info;
  }
  // Only there: a lone trace without distributedInfo in a folder whose name holds "rank8" (a
  // LoRA of rank 8) is rank 0 of 1, given as a file or as its folder.
  fs::create_directories(dir.path() + "/lora_rank8");
  const std::string lone = pil::test::write_file(
      dir.path() + "/lora_rank8", "trace.json",
      std::regex_replace(synthetic_rank_trace(0), std::regex("\"distributedInfo\": \\{[^}]*\\},"), ""));
  for (const std::string& given : {lone, dir.path() + "/lora_rank8"}) {
    const RanksReport r = read_ranks({given}, 1);
    EXPECT_TRUE(r.single_process) << given;
    EXPECT_EQ(r.rank_of(0), 0) << given;
  }
  // A worker's folder over two profiling cycles: two traces of one rank, said so.
  fs::create_directories(dir.path() + "/cycles/rank0");
  fs::create_directories(dir.path() + "/cycles/rank1");
  for (const char* name : {"host.1.pt.trace.json", "host.2.pt.trace.json"})
    pil::test::write_file(dir.path() + "/cycles/rank0", name, synthetic_rank_trace(0));
  pil::test::write_file(dir.path() + "/cycles/rank1", "host.1.pt.trace.json", synthetic_rank_trace(1));
  const std::string cycles = message_of({dir.path() + "/cycles"});
  EXPECT_NE(cycles.find("are both rank 0 (two profiling cycles of one worker, or two runs or variants, in one "
                        "folder?); allowed: each rank once: give one trace per rank"),
            std::string::npos)
      << cycles;
  fs::create_directories(dir.path() + "/empty/rank0");
  EXPECT_NE(message_of({dir.path() + "/empty"}).find("no trace files (*.json, *.json.gz) in this folder or the "
                                                     "folders in it"),
            std::string::npos);
}

TEST_F(Ranks, TracesOfDifferentRunsAreRefused) {
  const std::string m = message_of({write("d_rank0.json", synthetic_rank_trace(0, 2, "run1")),
                                    write("d_rank1.json", synthetic_rank_trace(1, 2, "run2"))});
  EXPECT_NE(m.find("ranks of different runs"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
  const std::string w = message_of({write("e_rank0.json", synthetic_rank_trace(0, 2)),
                                    write("e_rank1.json", synthetic_rank_trace(1, 4))});
  EXPECT_NE(w.find("world_size"), std::string::npos) << w;
  // One rank's trace copied under another rank's name (torch.profiler's traces say no rank
  // without torch.distributed): the same steps, computation and communication to the nanosecond.
  std::string copy = synthetic_rank_trace(0, 2);
  const std::string rank0 = "\"rank\": 0";
  copy.replace(copy.find(rank0), rank0.size(), "\"rank\": 1");
  const std::string twice = message_of({write("n_rank0.json", synthetic_rank_trace(0, 2)), write("n_rank1.json", copy)});
  EXPECT_NE(twice.find("n_rank0.json and n_rank1.json hold the same trace (all 2 of their steps start and end at "
                       "the same nanosecond: one rank's trace given twice, under two names?)"),
            std::string::npos)
      << twice;
}

// Ranks missing from the run: the ranks given are analysed, the missing ones listed, and the
// figures across ranks marked partial. A repeated rank is still refused.
TEST_F(Ranks, AMissingRankMakesThePartialFiguresARepeatedOneIsRefused) {
  const RanksReport r = read_ranks({write("f_rank0.json", synthetic_rank_trace(0, 3)),
                                    write("f_rank1.json", synthetic_rank_trace(1, 3))});
  EXPECT_EQ(r.world_size, 3);
  EXPECT_EQ(r.missing, std::vector<int>{2});
  EXPECT_TRUE(r.partial());
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.rank_of(1), 1);
  EXPECT_FALSE(r.steps.empty());
  const RanksReport one = read_ranks({write("e_rank1.json", synthetic_rank_trace(1, 3))});
  EXPECT_EQ(one.missing, (std::vector<int>{0, 2}));
  EXPECT_EQ(one.rank_of(0), 1);
  EXPECT_NE(format_ranks(one).find("missing rank 0, 2 of 3: PARTIAL"), std::string::npos) << format_ranks(one);
  // Runs of three or more missing ranks are said as "first–last" (HTA's two sampled ranks of
  // 128 listed the other 126 one by one).
  const RanksReport few = read_ranks({write("g_rank1.json", synthetic_rank_trace(1, 8)),
                                      write("g_rank5.json", synthetic_rank_trace(5, 8))});
  EXPECT_NE(format_ranks(few).find("missing rank 0, 2–4, 6, 7 of 8 (6 ranks): PARTIAL"), std::string::npos)
      << format_ranks(few);
  EXPECT_TRUE(one.clock_notes.empty());
  // Clocks that disagree: rank 1's base time 80 us off (steps of 100 us, 200 us recorded).
  const std::string base = "\"baseTimeNanoseconds\": 1700000000000000000";
  auto shifted = [&](const char* to) {
    std::string text = synthetic_rank_trace(1, 2);
    return text.replace(text.find(base), base.size(), std::string("\"baseTimeNanoseconds\": ") + to);
  };
  const RanksReport skew = read_ranks({write("k_rank0.json", synthetic_rank_trace(0, 2)),
                                       write("k_rank1.json", shifted("1700000000000080000"))});
  EXPECT_FALSE(skew.partial());
  ASSERT_EQ(skew.clock_notes.size(), 1u);
  EXPECT_NE(skew.clock_notes[0].find("clock disagrees"), std::string::npos) << skew.clock_notes[0];
  // A second off: more than the whole window recorded; the ranks never ran at the same time.
  const RanksReport apart = read_ranks({write("m_rank0.json", synthetic_rank_trace(0, 2)),
                                        write("m_rank1.json", shifted("1700000001000000000"))});
  ASSERT_EQ(apart.clock_notes.size(), 1u);
  EXPECT_NE(apart.clock_notes[0].find("rank 0's steps start 1.00 s before the others', more than its whole "
                                      "recorded window (200 us): not one run's ranks"),
            std::string::npos)
      << apart.clock_notes[0];
  const RanksReport same = read_ranks({write("l_rank0.json", synthetic_rank_trace(0, 2)),
                                       write("l_rank1.json", synthetic_rank_trace(1, 2))});
  EXPECT_TRUE(same.clock_notes.empty());
  const std::string d = message_of({write("g_rank0.json", synthetic_rank_trace(0)),
                                    write("h_rank0.json", synthetic_rank_trace(0))});
  EXPECT_NE(d.find("both rank 0"), std::string::npos) << d;
}

// A distributedInfo that names no rank is said to, not read as none: a rank that is text or out
// of range, a value that is not an object (the next '{' in the file used to be taken for it),
// broken JSON. One trace alone is rank 0 of 1, with the reason; one of several is refused.
TEST_F(Ranks, ADistributedInfoWithoutARankSaysWhatIsWrong) {
  const std::string good = synthetic_rank_trace(0, 2);
  const std::string info = "\"distributedInfo\": ";
  const size_t at = good.find(info);
  ASSERT_NE(at, std::string::npos);
  const size_t close = good.find('}', at);
  auto with_info = [&](const std::string& value) {
    return good.substr(0, at) + info + value + good.substr(close + 1);
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{\"backend\": \"gloo\", \"rank\": \"1\", \"world_size\": 2}", "has \"rank\": \"1\", not a whole number"},
      {"{\"backend\": \"gloo\", \"rank\": 3000000000, \"world_size\": 2}", "has \"rank\": 3000000000, not a whole number from 0 to 999999"},
      {"{\"backend\": \"gloo\", \"rank\": -1}", "has \"rank\": -1"},
      {"{\"backend\": \"gloo\", \"world_size\": 2}", "has no \"rank\""},
      {"null", "is not an object"},
      {"{\"rank\": 1,, \"world_size\": 2}", "is not valid JSON"},
  };
  int n = 0;
  for (const auto& [value, says] : cases) {
    const std::string name = "m" + std::to_string(n++) + ".json";
    const std::string bad = write(name, with_info(value));
    const std::string m = message_of({write("m_rank0.json", good), bad});
    EXPECT_NE(m.find(name + ": cannot tell which rank this is (its distributedInfo " + says), std::string::npos)
        << value << ": " << m;
    const RanksReport alone = read_ranks({bad});
    EXPECT_TRUE(alone.single_process);
    EXPECT_NE(format_ranks(alone).find("one process: no rank in the distributedInfo in " + name +
                                       ", read as rank 0 of 1 (it " + says),
              std::string::npos)
        << format_ranks(alone);
  }
  // Without one: as before.
  std::string none = good;
  none.erase(at, close + 1 - at);
  const size_t comma = none.find_first_not_of(" ,", at);
  none.erase(at, comma - at);
  const std::string plain = write("plain.json", none);
  EXPECT_NE(format_ranks(read_ranks({plain})).find("one process: no distributedInfo in plain.json"), std::string::npos);
  // Two such traces (a schedule's two cycles of one process) are not two ranks: said, with what
  // a rank's trace holds, not "allowed: traces written by torch.profiler" (they were).
  const std::string m = message_of({plain, write("plain2.json", none)});
  EXPECT_NE(m.find("plain.json: cannot tell which rank this is (no distributedInfo in the trace, no 'rank<k>' in "
                   "its name: not a rank of a torch.distributed run?); allowed: one trace per rank of one run"),
            std::string::npos) << m;
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 0) << m;
  // The CPU's computation: the operators of the threads that run no backend slice (one trace of
  // one thread: its own).
  EXPECT_NE(format_ranks(read_ranks({plain})).find("computation from the operators on the threads that run none"),
            std::string::npos);
}

// Collectives are matched by their order in the step: where the k-th is another kind, or a
// reduction of another size, on some rank, the report says so for that step (and not for the
// steps that agree).
TEST_F(Ranks, CollectivesThatDoNotMatchAcrossRanksAreSaid) {
  std::string other = synthetic_rank_trace(1, 2);
  const std::string dims = "\"Input Dims\": [[1000]]";
  other.replace(other.find(dims), dims.size(), "\"Input Dims\": [[10]]");  // its first all-reduce
  const RanksReport r = read_ranks({write("n_rank0.json", synthetic_rank_trace(0, 2)), write("n_rank1.json", other)});
  ASSERT_EQ(r.match_notes.size(), 1u);
  EXPECT_NE(r.match_notes[0].find("collective 1 is gloo:all_reduce of 4000 bytes on rank 0, gloo:all_reduce of 40 "
                                  "bytes on rank 1"),
            std::string::npos)
      << r.match_notes[0];
  EXPECT_NE(format_ranks(r).find("matching: step #"), std::string::npos);
  std::string kind = synthetic_rank_trace(1, 2);
  kind.replace(kind.find("gloo:all_reduce"), 15, "gloo:broadcast");
  const RanksReport k = read_ranks({write("o_rank0.json", synthetic_rank_trace(0, 2)), write("o_rank1.json", kind)});
  ASSERT_EQ(k.match_notes.size(), 1u);
  EXPECT_NE(k.match_notes[0].find("gloo:broadcast"), std::string::npos) << k.match_notes[0];
  EXPECT_TRUE(read_ranks({write("p_rank0.json", synthetic_rank_trace(0, 2)),
                          write("p_rank1.json", synthetic_rank_trace(1, 2))})
                  .match_notes.empty());
}

TEST_F(Ranks, ATruncatedTraceNamesItsFile) {
  const std::string full = synthetic_rank_trace(1);
  const std::string cut = write("i_rank1.json", full.substr(0, full.size() / 2));
  const std::string m = message_of({write("i_rank0.json", synthetic_rank_trace(0)), cut});
  EXPECT_NE(m.find("i_rank1.json"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

// A real DLRM step (PARAM's test data; torch 2.1, September 2023, 8 V100 ranks, two of them
// here): the sizes of its NCCL collectives are only on the "nccl:*" slices around their kernels'
// launches, each slice's "Input Dims" and "Input type". By hand, in the kernels' order on rank 0:
// all_to_all [6144] float, [24] long, [384] int, [3392] int; all_reduce [394241] float;
// all_to_all [6144] float; all_reduce [112] float, [226960] float. Rank 7 moves the same sizes.
TEST_F(Ranks, BytesOfNcclCollectivesFromTheSliceAroundTheirLaunch) {
  const std::string dir = std::string(PIL_TRACE_FIXTURES_DIR) + "/param/";
  const RanksReport r = read_ranks({dir + "dlrm_rank0.pt.trace.json.gz", dir + "dlrm_rank7.pt.trace.json.gz"});
  ASSERT_EQ(r.ranks.size(), 2u);
  const std::vector<int64_t> want = {6144 * 4, 24 * 8, 384 * 4, 3392 * 4, 394241 * 4, 6144 * 4, 112 * 4, 226960 * 4};
  for (const RankProfile& p : r.ranks) {
    SCOPED_TRACE(p.label);
    EXPECT_TRUE(p.gpu);
    std::vector<int64_t> got;
    for (const Collective& c : p.collectives) got.push_back(c.bytes);
    EXPECT_EQ(got, want);
  }
}

// Two ranks' traces without ProfilerStep ranges (tugot17/tokenomics-from-first-principles: one
// forward with an NCCL all-reduce each, RTX 4090s): each rank's whole trace is its step 0, as the
// one-trace reports take a trace without steps. Rank 1 launched its all-reduce 11.26 ms before
// rank 0 (its kernel ran 11,264,642 ns, rank 0's 7,424 ns): it waited for rank 0, from its
// kernel's start to rank 0's (on the two clocks), 11,255,765 ns. Before, both ranks showed zeros and "no
// collectives inside the steps".
TEST_F(Ranks, TracesWithoutStepsAreOneStepEach) {
  const std::string dir = std::string(PIL_TRACE_FIXTURES_DIR) + "/tokenomics/";
  const RanksReport r = read_ranks({dir + "trace0.json.gz", dir + "trace1.json.gz"});
  ASSERT_EQ(r.ranks.size(), 2u);
  for (const RankProfile& p : r.ranks) {
    EXPECT_TRUE(p.whole_trace);
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].collectives, 1);
  }
  EXPECT_EQ(r.ranks[0].steps[0].comm_ns, 7'424);
  EXPECT_EQ(r.ranks[1].steps[0].comm_ns, 11'264'642);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].slowest, 0);
  EXPECT_EQ(r.steps[0].wait_ns[0], 0);
  EXPECT_EQ(r.steps[0].wait_ns[1], 11'255'765);
  const std::string text = format_ranks(r);
  EXPECT_NE(text.find("1 step (no ProfilerStep ranges: a rank's whole trace is its step 0)"), std::string::npos)
      << text;
}

// Two ranks without steps and without collectives: nothing to compare across them (how long
// each recorded is no wait, when it began no clock), so no step across ranks and no clock note;
// the profiler's own span ("PyTorch Profiler (0)", 5 ms on rank 1) is not the rank's window.
// A rank with steps beside one without is refused, saying so.
TEST_F(Ranks, WholeTracesWithoutCollectivesCompareNothing) {
  auto trace = [](int rank, double start, double profiler_dur) {
    return std::string("{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": ") + std::to_string(rank) +
           ", \"world_size\": 2}, \"traceEvents\": [" +
           "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": 1, \"tid\": 1, "
           "\"ts\": " + std::to_string(start - 100) + ", \"dur\": " + std::to_string(profiler_dur) + "}, " +
           "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": " +
           std::to_string(start) + ", \"dur\": 300}]}";
  };
  const RanksReport r = read_ranks({write("w_rank0.json", trace(0, 1000, 500)),
                                    write("w_rank1.json", trace(1, 30000, 5000))});
  ASSERT_EQ(r.ranks.size(), 2u);
  for (const RankProfile& p : r.ranks) {
    EXPECT_TRUE(p.whole_trace);
    ASSERT_EQ(p.steps.size(), 1u);
    EXPECT_EQ(p.steps[0].dur_ns, 300'000);  // aten::mm alone, not the profiler's span
  }
  EXPECT_TRUE(r.steps.empty());
  EXPECT_TRUE(r.clock_notes.empty());
  // The header counts the step each rank recorded, not the steps compared (none: no collective).
  const std::string text = format_ranks(r);
  EXPECT_NE(text.find("2 ranks, backend nccl, 1 step (no ProfilerStep ranges"), std::string::npos) << text;
  const std::string alone = format_ranks(read_ranks({write("w1_rank0.json", trace(0, 1000, 500))}));
  EXPECT_NE(alone.find("1 rank of 2, backend nccl, 1 step ("), std::string::npos) << alone;
  // One rank with collectives in its steps: none to be the slowest among (it read "the slowest
  // in 2 of 2 steps").
  const std::string one = format_ranks(read_ranks({write("w3_rank0.json", synthetic_rank_trace(0))}));
  EXPECT_NE(one.find("rank 0 alone: no other rank's trace to compare its steps with"), std::string::npos) << one;
  EXPECT_EQ(one.find("the slowest in"), std::string::npos) << one;
  const std::string with_steps = write("w2_rank1.json", synthetic_rank_trace(1));
  const std::string msg = message_of({write("w2_rank0.json", trace(0, 1000, 500)), with_steps});
  EXPECT_NE(msg.find("recorded steps no ProfilerStep ranges"), std::string::npos) << msg;
}

// Steps but no collective in them (two runs' traces put side by side): no rank waited in one, and
// the report says the "waits" are shortfalls against the slowest step, not waits.
TEST_F(Ranks, StepsWithoutCollectivesHaveShortfallsNotWaits) {
  auto alone = [](int rank) {
    return std::regex_replace(synthetic_rank_trace(rank), std::regex("gloo:all_reduce"), "load_batch");
  };
  const RanksReport r = read_ranks({write("n_rank0.json", alone(0)), write("n_rank1.json", alone(1))});
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].matched_collectives, 0);
  const std::string text = format_ranks(r);
  EXPECT_NE(text.find("(no collective matched: there a rank's wait is its step's shortfall against the slowest rank's"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 1: the slowest in "), std::string::npos) << text;
  EXPECT_NE(text.find(" steps; shorter than the slowest by "), std::string::npos) << text;
  EXPECT_EQ(text.find("for others in all"), std::string::npos) << text;
  // With collectives, waits (OverlapAndWaitAsWorkedOutByHand's figures).
  const std::string with = format_ranks(read_ranks({write("c_rank0.json", synthetic_rank_trace(0)),
                                                    write("c_rank1.json", synthetic_rank_trace(1))}));
  EXPECT_NE(with.find("for others in all"), std::string::npos) << with;
  EXPECT_EQ(with.find("no collective matched"), std::string::npos) << with;
}

TEST_F(Ranks, GpuTracesReadNcclKernelsAsCommunication) {
  Trace t;
  auto ev = [&](const char* name, Category c, int64_t from, int64_t to) { add_event(t, name, c, from, to); };
  ev((pil::test::step_prefix() + "0").c_str(), Category::UserAnnotation, 0, 1000);
  ev("sm90_xmma_gemm", Category::Kernel, 100, 600);
  ev("ncclDevKernel_AllReduce_Sum_f32_RING_LL", Category::Kernel, 400, 900);
  ev("aten::mm", Category::CpuOp, 0, 50);  // CPU time is not the GPU's computation
  const RankProfile p = rank_profile(t);
  EXPECT_TRUE(p.gpu);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].compute_ns, 500);
  EXPECT_EQ(p.steps[0].comm_ns, 500);
  EXPECT_EQ(p.steps[0].overlap_ns, 200);
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].step, 0);
}

// The GPU runs behind the CPU: a step's GPU work is the work it launched, wherever it ran. Step
// #1 [0, 100) launches a GEMM [80, 160) and an all-reduce [150, 210) (both run into step #2's
// range); step #2 [100, 200) launches a GEMM [220, 260) and an all-reduce [260, 300). An
// all-reduce launched before recording (a smaller correlation id, no call) runs [10, 60) inside
// step #1's range: in no step. Step #1: compute 80, comm 60, overlap 10; step #2: 40, 40, 0.
TEST_F(Ranks, OnAGpuEachStepHasTheWorkItLaunched) {
  pil::test::TraceBuilder b;
  b.device("NVIDIA H100 80GB HBM3").rank(0, 2).correlations_from(10);
  b.step(1, 0, 100).step(2, 100, 100);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3, 10, 50, 20);
  const int g1 = b.call("cudaLaunchKernel", 20, 5), a1 = b.call("cudaLaunchKernel", 40, 5);
  const int g2 = b.call("cudaLaunchKernel", 120, 5), a2 = b.call("cudaLaunchKernel", 140, 5);
  b.kernel("sm90_xmma_gemm", g1, 80, 80).kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", a1, 150, 60, 20);
  b.kernel("sm90_xmma_gemm", g2, 220, 40).kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", a2, 260, 40, 20);
  const RankProfile p = rank_profile(parse_trace_text(b.str(), "t.json"));
  ASSERT_TRUE(p.gpu);
  ASSERT_EQ(p.steps.size(), 2u);
  EXPECT_EQ(p.steps[0].compute_ns, 80'000);
  EXPECT_EQ(p.steps[0].comm_ns, 60'000);
  EXPECT_EQ(p.steps[0].overlap_ns, 10'000);
  EXPECT_EQ(p.steps[0].collectives, 1);
  EXPECT_EQ(p.steps[1].compute_ns, 40'000);
  EXPECT_EQ(p.steps[1].comm_ns, 40'000);
  EXPECT_EQ(p.steps[1].overlap_ns, 0);
  EXPECT_EQ(p.steps[1].collectives, 1);
  ASSERT_EQ(p.collectives.size(), 3u);
  EXPECT_EQ(p.collectives[0].step, -1);  // launched before recording
  EXPECT_EQ(p.collectives[1].step, 1);
  EXPECT_EQ(p.collectives[2].step, 2);
}

// Communication kernels: NCCL's and RCCL's, and torch's symmetric memory's (an anonymous
// namespace's multimem_all_reduce_kernel...), not a kernel that only has "reduce" in its name.
TEST_F(Ranks, CommunicationKernelsOfNcclAndSymmetricMemory) {
  EXPECT_TRUE(is_comm_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_TRUE(is_comm_kernel("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
                             "unsigned long, unsigned int**, unsigned long, unsigned long)"));
  EXPECT_TRUE(is_comm_kernel("void (anonymous namespace)::two_shot_all_reduce_kernel_inplace<float, 16, 8>(float**)"));
  EXPECT_FALSE(is_comm_kernel("void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)"));
  EXPECT_FALSE(is_comm_kernel("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10>(float*)"));
  Trace t;
  auto ev = [&](const char* name, Category c, int64_t from, int64_t to) { add_event(t, name, c, from, to); };
  ev((pil::test::step_prefix() + "0").c_str(), Category::UserAnnotation, 0, 1000);
  ev("sm90_xmma_gemm", Category::Kernel, 100, 600);
  ev("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)", Category::Kernel, 600, 700);
  const RankProfile p = rank_profile(t);
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.steps[0].comm_ns, 100);
  EXPECT_EQ(p.steps[0].compute_ns, 500);
}

// DeepEP's expert-parallel kernels move tokens between GPUs themselves: communication, an
// exchange (an all-to-all); its layout kernels compute. DeepSeek's own published trace (an H800
// rank of 64) names them "dpsk::ep::"; DeepEP's source, "deep_ep::".
TEST_F(Ranks, DeepEpsDispatchAndCombineAreExchanges) {
  const char* combine = "void dpsk::ep::internode::combine<false, 8, __nv_bfloat16, 8, 2, 16, 24>(int4*, float*)";
  const char* notify = "void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int)";
  const char* low_latency = "void deep_ep::internode_ll::dispatch<false, 8, 7168>(void*, float*)";
  const char* layout = "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*)";
  for (const char* k : {combine, notify, low_latency}) {
    EXPECT_TRUE(is_comm_kernel(k)) << k;
    EXPECT_TRUE(is_expert_exchange_kernel(k)) << k;
  }
  EXPECT_FALSE(is_comm_kernel(layout));
  Trace t;
  auto ev = [&](const char* name, Category c, int64_t from, int64_t to) { add_event(t, name, c, from, to); };
  ev((pil::test::step_prefix() + "0").c_str(), Category::UserAnnotation, 0, 1000);
  ev(layout, Category::Kernel, 50, 100);
  ev("sm90_xmma_gemm", Category::Kernel, 100, 600);
  ev(combine, Category::Kernel, 500, 800);
  const RankProfile p = rank_profile(t);
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_TRUE(p.collectives[0].exchange);
  EXPECT_EQ(p.steps[0].comm_ns, 300);
  EXPECT_EQ(p.steps[0].compute_ns, 550);
  EXPECT_EQ(p.steps[0].overlap_ns, 100);
}

// NCCL runs some all-reduces as SendRecv kernels: the nccl:* slice around the launch says what
// the collective is (an A100 TorchRec trace's DDP all-reduces read as all-to-all by the kernel's
// name); without one, the kernel's name.
TEST_F(Ranks, TheSliceAroundALaunchSaysWhatTheCollectiveIs) {
  pil::test::TraceBuilder b;
  b.device("NVIDIA A100-SXM4-80GB", 108, 80LL << 30, 8, 0).rank(0, 2);
  b.step(1, 0, 1000);
  b.range("nccl:all_reduce", 10, 30);
  b.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           b.call("cudaLaunchKernel", 15, 5), 100, 50, 20);
  b.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
           b.call("cudaLaunchKernel", 60, 5), 200, 50, 20);
  // A point-to-point send's slice ("nccl:send 0->1", as ProcessGroupNCCL names it) is an
  // exchange; a slice that groups several ("nccl:coalesced") leaves it to the kernel's name.
  b.range("nccl:send 0->1", 300, 30);
  b.kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", b.call("cudaLaunchKernel", 305, 5), 400, 50, 20);
  b.range("nccl:coalesced", 500, 30);
  b.kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", b.call("cudaLaunchKernel", 505, 5), 600,
           50, 20);
  const RankProfile p = rank_profile(parse_trace_text(b.str(), "t.json"));
  ASSERT_EQ(p.collectives.size(), 4u);
  EXPECT_FALSE(p.collectives[0].exchange);
  EXPECT_TRUE(p.collectives[1].exchange);
  EXPECT_TRUE(p.collectives[2].exchange);
  EXPECT_FALSE(p.collectives[3].exchange);
  // The slice that said otherwise than the kernel's name is kept, to name both; an all-gather
  // (here by its kernel's name) is sharded, neither an all-reduce nor an exchange.
  EXPECT_EQ(p.collectives[0].kind_from, "nccl:all_reduce");
  EXPECT_EQ(p.collectives[1].kind_from, "");
  EXPECT_EQ(p.collectives[2].kind_from, "");
  EXPECT_FALSE(p.collectives[0].sharded);
  EXPECT_TRUE(p.collectives[3].sharded);
  EXPECT_EQ(p.collectives[3].kind_from, "");
}

// Several ranks' traces merged into one file (TraceLens's TraceFusion: each rank's process id
// offset, its steps kept): not one rank's trace, refused with one line that says so.
TEST_F(Ranks, AMergeOfSeveralRanksIsRefused) {
  const std::string m =
      message_of({std::string(PIL_TRACE_FIXTURES_DIR) + "/tracelens/merged_ranks_first_300us.json.gz"});
  EXPECT_NE(m.find("merged_ranks_first_300us.json.gz: steps recorded by 3 processes: several ranks' traces "
                   "merged into one file"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

}  // namespace
