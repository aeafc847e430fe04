// Files are written whole or not at all; trace files named .gz are gzip-compressed.
#include "base/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
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

// A writer that keeps a temporary of its own beside the name it is given, as Kineto's export
// writes NAME.tmp and renames it when done: a failed export (a full disk, ulimit -f) left
// ".trace.json.tmp-PID.tmp" beside a message saying nothing was written.
TEST(AtomicFile, AFailedWritersOwnTemporaryIsRemovedToo) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "trace.json";
  EXPECT_THROW(write_file_atomically(target,
                                     [](const fs::path& tmp) {
                                       std::ofstream(tmp.string() + ".tmp") << "{\"traceEvents\": [";
                                       throw std::runtime_error("File size limit exceeded");
                                     }),
               std::runtime_error);
  EXPECT_EQ(entries(dir.path()), 0u) << "the writer's temporary was left behind";
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
    EXPECT_NE(std::string(e.what()).find(": no folder " + target.parent_path().string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

// A folder's writability is found by making a file there (access(2) says yes to root
// everywhere): a writable folder leaves nothing behind; /proc/self and a plain file are refused.
TEST(AtomicFile, AFolderNoFileCanBeMadeInIsSaid) {
  test::TempDir dir;
  EXPECT_EQ(folder_unwritable_reason(dir.path()), "");
  EXPECT_EQ(entries(dir.path()), 0u) << "the probe file was left";
  write_text_atomically(fs::path(dir.path()) / "f.txt", "x");
  EXPECT_EQ(folder_unwritable_reason(fs::path(dir.path()) / "f.txt"), "not a folder");
  EXPECT_EQ(folder_unwritable_reason(fs::path(dir.path()) / "missing"), "not a folder");
  if (fs::is_directory("/proc/self")) {
    EXPECT_NE(folder_unwritable_reason("/proc/self"), "");
    // A file to write there is refused too, new or existing: the write's temporary file is made
    // beside it (an existing /proc file passed access(W_OK), and the write failed after a run).
    EXPECT_EQ(unwritable_reason("/proc/self/new.json").rfind("cannot make a file in /proc/self: ", 0), 0u)
        << unwritable_reason("/proc/self/new.json");
    EXPECT_EQ(unwritable_reason("/proc/self/comm").rfind("cannot make a file in /proc/self: ", 0), 0u)
        << unwritable_reason("/proc/self/comm");
  }
  EXPECT_EQ(unwritable_reason(fs::path(dir.path()) / "f.txt"), "");
  EXPECT_EQ(unwritable_reason(fs::path(dir.path()) / "new.txt"), "");
  EXPECT_EQ(entries(dir.path()), 1u) << "a probe file was left";
}

// An output folder is made with its parents and checked by making a file in it: a file of its
// name, a folder under a file and a folder that takes no file are each one phrase naming it.
TEST(AtomicFile, AnOutputFolderIsMadeAndCheckedInOnePhrase) {
  test::TempDir dir;
  const fs::path nested = fs::path(dir.path()) / "a" / "b";
  EXPECT_EQ(make_writable_folder(nested), "");
  EXPECT_TRUE(fs::is_directory(nested));
  EXPECT_EQ(entries(nested), 0u) << "the probe file was left";
  EXPECT_EQ(make_writable_folder(nested), "") << "an existing folder is fine";
  const fs::path file = fs::path(dir.path()) / "f.txt";
  write_text_atomically(file, "x");
  EXPECT_EQ(make_writable_folder(file).rfind("cannot create " + file.string() + ": ", 0), 0u)
      << make_writable_folder(file);
  EXPECT_EQ(make_writable_folder(file / "log").rfind("cannot create " + (file / "log").string() + ": ", 0), 0u)
      << make_writable_folder(file / "log");
  EXPECT_EQ(make_writable_folder(file).find('\n'), std::string::npos);
  if (fs::is_directory("/proc/self")) {
    EXPECT_EQ(make_writable_folder("/proc/self").rfind("cannot make a file in /proc/self: ", 0), 0u)
        << make_writable_folder("/proc/self");
  }
}

// A write renames a new file over its target: refused where that would replace something that
// is no file (a FIFO; /dev/null as root), a link's target written and the link kept (a target
// not there yet made), a name near
// the system's 255 characters written (its temporary's name was longer than allowed).
TEST(AtomicFile, WhatIsNoFileIsRefusedALinkKeptALongNameWritten) {
  test::TempDir dir;
  const fs::path fifo = fs::path(dir.path()) / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  try {
    write_text_atomically(fifo, "x");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_THROW(write_text_atomically(dir.path(), "x"), std::runtime_error);

  const fs::path real = fs::path(dir.path()) / "real.txt", link = fs::path(dir.path()) / "link.txt";
  write_text_atomically(real, "old");
  fs::create_symlink(real, link);
  write_text_atomically(link, "new");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read(real), "new");
  // A link (relative, through another) to a file not there yet: the file is made, the links kept.
  const fs::path sub = fs::path(dir.path()) / "sub", later = sub / "later.txt";
  fs::create_directory(sub);
  fs::create_symlink("sub/later.txt", fs::path(dir.path()) / "hop.txt");
  fs::create_symlink("hop.txt", fs::path(dir.path()) / "dangling.txt");
  write_text_atomically(fs::path(dir.path()) / "dangling.txt", "made");
  EXPECT_TRUE(fs::is_symlink(fs::path(dir.path()) / "dangling.txt"));
  EXPECT_TRUE(fs::is_symlink(fs::path(dir.path()) / "hop.txt"));
  EXPECT_EQ(read(later), "made");

  // A loop of links is refused as open(2) refuses it, not replaced by a file.
  const fs::path loop_a = fs::path(dir.path()) / "loop_a", loop_b = fs::path(dir.path()) / "loop_b";
  fs::create_symlink(loop_b, loop_a);
  fs::create_symlink(loop_a, loop_b);
  EXPECT_EQ(unwritable_reason(loop_a), std::strerror(ELOOP));
  EXPECT_THROW(write_text_atomically(loop_a, "x"), std::runtime_error);
  EXPECT_TRUE(fs::is_symlink(loop_a));

  const fs::path long_name = fs::path(dir.path()) / (std::string(251, 'n') + ".gz");  // 254
  write_text_atomically(long_name, "long", Gzip::ByName);
  EXPECT_EQ(entries(dir.path()), 9u) << "fifo, real, link, sub, hop, dangling, the loop's two and the long one; no temporary left";
}

std::string gunzip(const fs::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  std::string out;
  char buf[4096];
  for (int n; f && (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  if (f) gzclose(f);
  return out;
}

bool gzip_magic(const fs::path& p) {
  const std::string head = read(p).substr(0, 2);
  return head == "\x1f\x8b";
}

TEST(AtomicFile, GzipByNameCompressesANameEndingInGzOnly) {
  test::TempDir dir;
  const std::string text = "{\"traceEvents\": []}\n";
  const fs::path gz = fs::path(dir.path()) / "t.pt.trace.json.gz";
  write_text_atomically(gz, text, Gzip::ByName);
  EXPECT_TRUE(gzip_magic(gz));
  EXPECT_EQ(gunzip(gz), text);
  EXPECT_EQ(entries(dir.path()), 1u) << "the plain and compressed temporaries are gone";
  // The same bytes each time: no name or time in the gzip header.
  const std::string first = read(gz);
  write_text_atomically(gz, text, Gzip::ByName);
  EXPECT_EQ(read(gz), first);
  // Another name, or Gzip::No, is written as given.
  const fs::path plain = fs::path(dir.path()) / "t.pt.trace.json";
  write_text_atomically(plain, text, Gzip::ByName);
  EXPECT_EQ(read(plain), text);
  const fs::path asked_plain = fs::path(dir.path()) / "raw.gz";
  write_text_atomically(asked_plain, text);
  EXPECT_EQ(read(asked_plain), text);
  EXPECT_TRUE(named_gz("a/b.json.gz"));
  EXPECT_FALSE(named_gz("a.gz/b.json"));
  EXPECT_FALSE(named_gz(".gz"));
}

TEST(AtomicFile, AFailedWriteOfAGzipFileLeavesNothing) {
  test::TempDir dir;
  const fs::path target = fs::path(dir.path()) / "trace.json.gz";
  EXPECT_THROW(write_file_atomically(
                   target,
                   [](const fs::path& tmp) {
                     std::ofstream(tmp) << "{";
                     throw std::runtime_error("disk full");
                   },
                   Gzip::ByName),
               std::runtime_error);
  EXPECT_THROW(write_file_atomically(target, [](const fs::path&) {}, Gzip::ByName),
               std::runtime_error);
  EXPECT_EQ(entries(dir.path()), 0u);
}

}  // namespace
}  // namespace pil
