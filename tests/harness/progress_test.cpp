// Progress lines: silent while a phase is quick; plain lines into a file or pipe, one line
// rewritten in place on a terminal; durations in the units people use.
#include "harness/progress.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <thread>

namespace pil {
namespace {

using namespace std::chrono_literals;

TEST(Progress, AQuickPhaseSaysNothing) {
  std::ostringstream out;
  {
    Progress p("steps", 3, out, /*terminal=*/false, 10s);
    for (int k = 1; k <= 3; ++k) p.update(k);
  }
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, ASlowPhaseIntoAPipePrintsPlainLines) {
  std::ostringstream out;
  {
    Progress p("warm-up calls", 3, out, /*terminal=*/false, 50ms);
    p.update(1);
    std::this_thread::sleep_for(300ms);  // past the quiet time: the watch shows "1/3"
    p.update(2);
    p.update(3);
    p.finish();
  }
  const std::string s = out.str();
  EXPECT_EQ(s.find('\r'), std::string::npos) << s;
  EXPECT_EQ(s.rfind("warm-up calls 1/3, ", 0), 0u) << s;  // the first line, after the quiet time
  EXPECT_NE(s.find("\nwarm-up calls 3/3, done in "), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
  // Plain lines, each whole; a duration in ms, not a count of microseconds.
  EXPECT_NE(s.find(" ms\n"), std::string::npos) << s;
  EXPECT_EQ(s.find(" us\n"), std::string::npos) << s;
}

// A phase an error ends (the destructor finishing it while the exception unwinds) is said to
// have stopped where it was, not to be done ("warm-up calls 1/3, done in 5.14 s" on a rank
// that failed).
TEST(Progress, APhaseCutShortSaysWhereItStopped) {
  std::ostringstream out;
  try {
    Progress p("warm-up calls", 3, out, /*terminal=*/false, 20ms);
    p.update(1);
    std::this_thread::sleep_for(150ms);
    throw std::runtime_error("peer gone");
  } catch (const std::runtime_error&) {
  }
  const std::string s = out.str();
  EXPECT_NE(s.find("\nwarm-up calls 1/3, stopped after "), std::string::npos) << s;
  EXPECT_EQ(s.find("done in"), std::string::npos) << s;
}

TEST(Progress, OnATerminalOneLineIsRewritten) {
  std::ostringstream out;
  {
    Progress p("reference", 0, out, /*terminal=*/true, 20ms);
    std::this_thread::sleep_for(150ms);
  }  // finished by the destructor
  const std::string s = out.str();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.rfind("\r\033[Kreference, ", 0), 0u) << s;
  EXPECT_NE(s.find("\r\033[Kreference, done in "), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), s.size() - 1) << s;  // one line in the end
}

}  // namespace
}  // namespace pil
