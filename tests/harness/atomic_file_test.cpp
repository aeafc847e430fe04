// Files are written whole or not at all.
#include "base/atomic_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "support/run_process.h"

namespace fs = std::filesystem;

namespace pil {
namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, WritesTheWholeTextAndLeavesNoTemporary) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "table.txt";
  write_text_atomically(target, "hello\n");
  EXPECT_EQ(read(target), "hello\n");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(AtomicFile, FailedWriteLeavesNoFile) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "trace.json";
  EXPECT_THROW(write_file_atomically(target,
                                     [](const fs::path& tmp) {
                                       std::ofstream(tmp) << "{\"traceEvents\": [";  // half
                                       throw std::runtime_error("disk full");
                                     }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(entries(dir.path()), 0u) << "a temporary file was left behind";
}

TEST(AtomicFile, FailedWriteKeepsThePreviousFile) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "trace.json";
  write_text_atomically(target, "old");
  EXPECT_THROW(write_file_atomically(target, [](const fs::path&) { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(AtomicFile, AWriterThatWritesNothingIsAnError) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "empty.json";
  EXPECT_THROW(write_file_atomically(target, [](const fs::path&) {}), std::runtime_error);
  EXPECT_FALSE(fs::exists(target));
}

TEST(AtomicFile, MissingFolderIsAnErrorNamingThePath) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "no" / "such" / "folder" / "t.txt";
  try {
    write_text_atomically(target, "x");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

}  // namespace
}  // namespace pil
