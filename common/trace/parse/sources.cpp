#include "trace/parse/sources.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "trace/parse.h"

namespace pil::trace::detail {

namespace {

class FileSource : public Source {
 public:
  FileSource(int fd, std::string label) : fd_(fd), label_(std::move(label)) {}
  ~FileSource() override { ::close(fd_); }
  size_t read(char* dst, size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return size_t(got);
      if (errno != EINTR) throw ParseError(label_ + ": read failed: " + std::strerror(errno));
    }
  }

 private:
  int fd_;
  std::string label_;
};

class GzipSource : public Source {
 public:
  GzipSource(gzFile f, std::string label) : f_(f), label_(std::move(label)) {}
  ~GzipSource() override { gzclose(f_); }
  size_t read(char* dst, size_t n) override {
    const unsigned want = unsigned(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f_, dst, want);
    int err = Z_OK;
    const char* why = gzerror(f_, &err);
    if (got < 0) {
      // zlib names the stream by its descriptor ("<fd:3>: incorrect data check"): the file is
      // named already.
      std::string reason = why ? why : "read error";
      if (reason.rfind("<fd:", 0) == 0 && reason.find(">: ") != std::string::npos)
        reason = reason.substr(reason.find(">: ") + 3);
      throw ParseError(label_ + ": not a readable gzip file: " + reason + " (the file is damaged)");
    }
    // At the end, zlib's reader returns 0 and keeps a cut stream's error to be asked for: a
    // stream cut before any of its text read as an empty file. Cut later, the JSON reader says
    // where (the event it ends inside).
    if (got == 0 && err == Z_BUF_ERROR && !any_)
      throw ParseError(label_ + ": not a readable gzip file: the stream ends early");
    any_ = any_ || got > 0;
    return size_t(got);
  }

 private:
  gzFile f_;
  std::string label_;
  bool any_ = false;  ///< some text came out
};

}  // namespace

std::unique_ptr<Source> open_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw ParseError(path + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw ParseError(path + ": is a folder, not a trace file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ParseError(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const ssize_t got = ::pread(fd, magic, 2, 0);
  // A pipe (`pil-trace summary <(gzip -c t.json)`) cannot be read at an offset to tell gzip by
  // its first bytes: zlib's reader tells it as it reads, and passes plain text through as it is.
  const bool pipe = got < 0 && errno == ESPIPE;
  if (pipe || (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b)) {
    gzFile f = gzdopen(fd, "rb");
    if (!f) {
      ::close(fd);
      throw ParseError(path + ": cannot open as gzip");
    }
    gzbuffer(f, 1u << 20);
    return std::make_unique<GzipSource>(f, path);
  }
  return std::make_unique<FileSource>(fd, path);
}

Mapping::Mapping(int fd, size_t size) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  length_ = (size + 1 + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
  void* base = mmap(nullptr, length_, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return;
  if (mmap(base, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    munmap(base, length_);
    return;
  }
  base_ = static_cast<char*>(base);
}

Mapping::~Mapping() {
  if (base_) munmap(base_, length_);
}

}  // namespace pil::trace::detail
