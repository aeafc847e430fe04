#include "trace/parse/sources.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "trace/parse.h"

namespace pil::trace::detail {

namespace {

/// Reads `fd` whole, after `head`: the bytes already taken from a pipe to tell gzip by its
/// first two (a pipe cannot be read at an offset, or read again).
size_t read_fd(int fd, std::string& head, char* dst, size_t n, const std::string& label) {
  if (!head.empty()) {
    const size_t k = std::min(n, head.size());
    std::memcpy(dst, head.data(), k);
    head.erase(0, k);
    return k;
  }
  for (;;) {
    const ssize_t got = ::read(fd, dst, n);
    if (got >= 0) return size_t(got);
    if (errno != EINTR) throw ParseError(label + ": read failed: " + std::strerror(errno));
  }
}

class FileSource : public Source {
 public:
  FileSource(int fd, std::string label, std::string head = {})
      : fd_(fd), label_(std::move(label)), head_(std::move(head)) {}
  ~FileSource() override { ::close(fd_); }
  size_t read(char* dst, size_t n) override { return read_fd(fd_, head_, dst, n, label_); }

 private:
  int fd_;
  std::string label_;
  std::string head_;
};

/// Gzip from a pipe (`pil-trace summary <(gzip -c t.json)`): inflated as it is read, its first
/// two bytes already taken; several gzip members one after another, as gzread reads them.
class PipeGzipSource : public Source {
 public:
  PipeGzipSource(int fd, std::string label, std::string head)
      : fd_(fd), label_(std::move(label)), head_(std::move(head)), in_(1u << 16, '\0') {
    if (inflateInit2(&z_, 15 + 16) != Z_OK) throw ParseError(label_ + ": cannot start gzip decompression");
  }
  ~PipeGzipSource() override {
    inflateEnd(&z_);
    ::close(fd_);
  }
  size_t read(char* dst, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = unsigned(std::min<size_t>(n, 1u << 30));
    while (z_.avail_out == unsigned(std::min<size_t>(n, 1u << 30))) {
      if (z_.avail_in == 0) {
        const size_t got = read_fd(fd_, head_, in_.data(), in_.size(), label_);
        if (got == 0) {
          if (!ended_) throw ParseError(label_ + ": not a readable gzip file: the stream ends early");
          return 0;
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = unsigned(got);
      }
      if (ended_) {  // another member after the last one's end
        if (inflateReset(&z_) != Z_OK) throw ParseError(label_ + ": not a readable gzip file");
        ended_ = false;
      }
      const int r = inflate(&z_, Z_NO_FLUSH);
      if (r == Z_STREAM_END) ended_ = true;
      else if (r != Z_OK && r != Z_BUF_ERROR)
        throw ParseError(label_ + ": not a readable gzip file: " + (z_.msg ? z_.msg : "bad data"));
    }
    return std::min<size_t>(n, 1u << 30) - z_.avail_out;
  }

 private:
  int fd_;
  std::string label_;
  std::string head_;
  std::string in_;
  z_stream z_{};
  bool ended_ = false;
};

class GzipSource : public Source {
 public:
  GzipSource(gzFile f, std::string label) : f_(f), label_(std::move(label)) {}
  ~GzipSource() override { gzclose(f_); }
  size_t read(char* dst, size_t n) override {
    const unsigned want = unsigned(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f_, dst, want);
    if (got < 0) {
      int err = 0;
      throw ParseError(label_ + ": not a readable gzip file: " + gzerror(f_, &err));
    }
    return size_t(got);
  }

 private:
  gzFile f_;
  std::string label_;
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
  if (got < 0 && errno == ESPIPE) {  // a pipe: its first two bytes taken, and kept
    std::string head, none;
    char c[2];
    while (head.size() < 2) {
      const size_t n = read_fd(fd, none, c, 2 - head.size(), path);
      if (n == 0) break;
      head.append(c, n);
    }
    if (head.size() == 2 && uint8_t(head[0]) == 0x1f && uint8_t(head[1]) == 0x8b)
      return std::make_unique<PipeGzipSource>(fd, path, head);
    return std::make_unique<FileSource>(fd, path, head);
  }
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
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
