// Predictions checked against the synthetic GPU trace (tests/trace/synthetic_trace.h): every
// key answers yes when right and no when wrong, with the figure; bad predictions are refused
// with one line.
#include "trace/expect.h"

#include <gtest/gtest.h>

#include "trace/parse.h"
#include "trace/synthetic_trace.h"

namespace pil::trace {
namespace {

struct Expect : ::testing::Test {
  Trace t = parse_trace_text(test::synthetic_gpu_trace());
  TraceIndex index{t};
  ExpectAnswer ask(const char* text) { return check_expectation(index, parse_expectation(text)); }
};

TEST_F(Expect, StepsKernelsAndCallsAnswerYesAndNo) {
  EXPECT_TRUE(ask("steps=1").yes);
  EXPECT_FALSE(ask("steps=2").yes);
  const ExpectAnswer k = ask("kernels=2");
  EXPECT_FALSE(k.measured.empty());
  // The synthetic step launches all its kernels from inside the step, by hand: gemm, add_kernel,
  // graph_k1, graph_k2 on stream 7, kernel_a and kernel_b on stream 9.
  EXPECT_TRUE(ask("kernels=6").yes) << k.line();
  EXPECT_FALSE(ask("kernels=7").yes);
  EXPECT_TRUE(ask("calls:aten::mm=1").yes);
  const ExpectAnswer no = ask("calls:aten::mm=2");
  EXPECT_FALSE(no.yes);
  EXPECT_EQ(no.line(), "expect calls:aten::mm=2: no (measured 1 per step: 1 call in 1 profiled step)");
  EXPECT_TRUE(ask("calls:aten::nothing=0").yes) << "a name not in the trace ran 0 times";
  EXPECT_FALSE(ask("calls:aten::nothing=1").yes);
}

TEST(ExpectCpu, NoKernelsInACpuTraceIsZero) {
  const Trace t = parse_trace_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]})");
  const TraceIndex index(t);
  EXPECT_TRUE(check_expectation(index, parse_expectation("kernels=0")).yes);
  EXPECT_FALSE(check_expectation(index, parse_expectation("kernels=2")).yes);
}

// Without profiled steps the figure is the trace's count, said so ("15 per step: 15 calls in the
// whole trace" spoke of steps the trace does not have).
TEST(ExpectCpu, WithoutStepsTheCountIsTheTraces) {
  const Trace t = parse_trace_text(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5}]})");
  const TraceIndex index(t);
  const ExpectAnswer a = check_expectation(index, parse_expectation("calls:aten::mm=2"));
  EXPECT_TRUE(a.yes);
  EXPECT_EQ(a.line(), "expect calls:aten::mm=2: yes (measured 2 calls in the whole trace, which has no profiled steps)");
}

// top-op is an operator of any namespace, never a named range: one annotated as such, or in old
// traces (every slice an "Operator", torch 1.10's) a name without a namespace, whose self time
// summary's "most self CPU time" lists all the same.
TEST(ExpectCpu, TopOpIsAnOperatorOfAnyNamespaceNotARange) {
  const Trace t = parse_trace_text(R"({"traceEvents": [
{"ph": "X", "cat": "Operator", "name": "model_inference", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
{"ph": "X", "cat": "Operator", "name": "torchvision::nms", "pid": 1, "tid": 1, "ts": 40, "dur": 30},
{"ph": "X", "cat": "user_annotation", "name": "post::process", "pid": 1, "tid": 1, "ts": 200, "dur": 90}]})");
  const TraceIndex index(t);
  const ExpectAnswer a = check_expectation(index, parse_expectation("top-op=torchvision::nms"));
  EXPECT_TRUE(a.yes) << a.line();
  EXPECT_EQ(a.measured, "torchvision::nms, 30.0 us self CPU");
  EXPECT_FALSE(check_expectation(index, parse_expectation("top-op=model_inference")).yes);
  // A no to a range or a CUDA call says why: summary's "most self CPU time" counts them.
  const ExpectAnswer range = check_expectation(index, parse_expectation("top-op=post::process"));
  EXPECT_FALSE(range.yes);
  EXPECT_EQ(range.measured,
            "torchvision::nms, 30.0 us self CPU; post::process is a named range: top-op compares operators alone, "
            "names in a namespace such as aten::mm");
  const ExpectAnswer call = check_expectation(index, parse_expectation("top-op=cudaDeviceSynchronize"));
  EXPECT_NE(call.measured.find("; cudaDeviceSynchronize is no operator's name: top-op compares operators alone"),
            std::string::npos)
      << call.measured;
}

TEST_F(Expect, PeakRangeWithoutMemoryEventsSaysSo) {
  const ExpectAnswer a = ask("peak-range=attn");
  EXPECT_FALSE(a.yes);
  EXPECT_NE(a.measured.find("no memory events"), std::string::npos) << a.measured;
}

TEST(ExpectParse, BadPredictionsAreOneLineWithWhatIsAllowed) {
  for (const char* bad : {"kernels", "=5", "kernels=", "kernels=five", "calls:=3", "speed=fast", "steps=-1"}) {
    try {
      parse_expectation(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_NE(m.find(bad), std::string::npos) << m;
    }
  }
  const Expectation e = parse_expectation("calls:aten::mm=3");
  EXPECT_EQ(e.key, "calls");
  EXPECT_EQ(e.arg, "aten::mm");
  EXPECT_EQ(e.value, "3");
  EXPECT_EQ(e.count, 3);
}

// A count past int64's end is a whole number out of range, said with the range (it read "takes a
// whole number, not '...'", and a 13-digit count was no whole number).
TEST(ExpectParse, ACountSaysTheRangeItMustBeIn) {
  try {
    parse_expectation("steps=99999999999999999999999");
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "--expect steps=99999999999999999999999: steps: 99999999999999999999999 is out of "
                                     "range; allowed: a whole number from 0 up to 9223372036854775807");
  }
  try {
    parse_expectation("kernels=-1");
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "--expect kernels=-1: kernels: -1 is out of range; allowed: a whole number from 0 up");
  }
  EXPECT_EQ(parse_expectation("calls:aten::mm=1000000000000").count, 1000000000000);
}

}  // namespace
}  // namespace pil::trace
