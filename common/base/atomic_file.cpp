#include "base/atomic_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fs = std::filesystem;

namespace pil {

bool named_gz(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0;
}

namespace {

/// The folder a file is made in, as an error line names it ("." for a bare name).
std::string folder_of(const fs::path& file) {
  return file.has_parent_path() ? file.parent_path().string() : std::string(".");
}

/// Copies file `from` into `to`, gzip-compressed or as it is (zlib's default level; no name or
/// time in the gzip header, so the same content gives the same bytes).
void copy_file(const fs::path& from, const fs::path& to, bool compress) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (!in) throw std::runtime_error("cannot read " + from.string());
  std::FILE* plain = compress ? nullptr : std::fopen(to.c_str(), "wb");
  gzFile gz = compress ? gzopen(to.c_str(), "wb") : nullptr;
  if (!plain && !gz) {
    const int err = errno;
    std::fclose(in);
    throw std::runtime_error("cannot make a file in " + folder_of(to) + ": " + std::strerror(err));
  }
  std::string chunk(1 << 20, '\0');
  bool ok = true;
  errno = 0;
  for (size_t n; ok && (n = std::fread(chunk.data(), 1, chunk.size(), in)) > 0;)
    ok = gz ? gzwrite(gz, chunk.data(), unsigned(n)) == int(n) : std::fwrite(chunk.data(), 1, n, plain) == n;
  ok = ok && !std::ferror(in);
  std::fclose(in);
  if (gz ? gzclose(gz) != Z_OK : std::fclose(plain) != 0) ok = false;
  if (!ok) throw std::runtime_error("copying " + from.string() + " failed" + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

}  // namespace

namespace {

/// The file a write to `asked` replaces: a link's target (the link stays a link), else `asked`.
/// A link to a file not there yet is followed too (its target is created), link after link, as
/// open(2) follows them (up to 40: past that, a loop, and an empty path).
fs::path write_target(const fs::path& asked) {
  std::error_code ec;
  fs::path at = asked;
  int hops = 0;
  for (; hops < 40 && fs::is_symlink(fs::symlink_status(at, ec)); ++hops) {
    const fs::path next = fs::read_symlink(at, ec);
    if (ec) return asked;
    at = next.is_absolute() ? next : at.parent_path() / next;
  }
  if (hops == 40 && fs::is_symlink(fs::symlink_status(at, ec))) return fs::path();  // a loop: none
  if (at == asked) return asked;
  const fs::path target = fs::weakly_canonical(at, ec);
  return ec ? at : target;
}

/// What the target itself says against a write, without making anything: unwritable_reason
/// less its folder probe (a write makes its own temporary file there, and says when it cannot).
std::string target_problem(const fs::path& path) {
  if (path.empty()) return std::strerror(ELOOP);  // "Too many levels of symbolic links"
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st)) return "a folder, not a file";
    if (!fs::is_regular_file(st)) return "not a regular file (a device, FIFO or socket), which writing would replace";
    if (::access(path.c_str(), W_OK) != 0) return std::strerror(errno);
  }
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) return "no folder " + dir.string();
  return "";
}

}  // namespace

std::string unwritable_reason(const fs::path& asked) {
  const fs::path path = write_target(asked);
  if (const std::string why = target_problem(path); !why.empty()) return why;
  // The write makes its temporary file in that folder, an existing target or not.
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (const std::string why = folder_unwritable_reason(dir); !why.empty())
    return "cannot make a file in " + dir.string() + ": " + why;
  return "";
}

std::string folder_unwritable_reason(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "not a folder";
  // A name no other run takes (mkstemp: a leftover of a killed run, or another machine's run
  // of the same pid in a shared folder, is passed over).
  std::string probe = (dir / ".pil-write-check-XXXXXX").string();
  const int fd = ::mkstemp(probe.data());
  // ENOENT from an existing folder (/proc's) read as "no such folder": said as what it is.
  if (fd < 0)
    return errno == ENOENT ? std::string("the folder takes no new file (making one: ") + std::strerror(errno) + ")"
                           : std::string(std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
  return "";
}

std::string make_writable_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return "cannot create " + dir.string() + ": " + ec.message();
  if (!fs::is_directory(dir, ec)) return "cannot create " + dir.string() + ": a file of that name exists";
  if (const std::string why = folder_unwritable_reason(dir); !why.empty())
    return "cannot make a file in " + dir.string() + ": " + why;
  return "";
}

void write_file_atomically(const fs::path& asked,
                           const std::function<void(const fs::path& tmp)>& write, Gzip gzip) {
  const fs::path path = write_target(asked);
  if (const std::string why = target_problem(path); !why.empty())
    throw std::runtime_error("cannot write " + asked.string() + ": " + why);
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  // Hidden beside the target, named after it (at most 64 characters of its name, so that a
  // name near the system's 255 still has room).
  const fs::path tmp = dir / ("." + path.filename().string().substr(0, 64) + ".tmp-" + std::to_string(::getpid()));
  const bool compress = gzip == Gzip::ByName && named_gz(path);
  const fs::path plain = compress ? fs::path(tmp.string() + ".plain") : tmp;
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    if (compress) fs::remove(plain, ignored);
    // A writer with a temporary of its own beside the name it was given: Kineto's trace export
    // writes NAME.tmp and renames it when done, and a failed export (a full disk) leaves it.
    fs::remove(fs::path(plain.string() + ".tmp"), ignored);
  };
  try {
    write(plain);
    if (compress) {
      std::error_code ec;
      if (fs::file_size(plain, ec) == 0 || ec) throw std::runtime_error("nothing was written");
      copy_file(plain, tmp, /*compress=*/true);
      fs::remove(plain, ec);
    }
  } catch (const std::exception& e) {
    discard();
    throw std::runtime_error("cannot write " + asked.string() + ": " + e.what());
  }
  std::error_code ec;
  const auto size = fs::file_size(tmp, ec);
  if (ec || size == 0) {
    discard();
    throw std::runtime_error("cannot write " + asked.string() + ": nothing was written");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw std::runtime_error("cannot write " + asked.string() + ": " + ec.message());
  }
}

void copy_file_atomically(const fs::path& from, const fs::path& path, Gzip gzip) {
  const bool compress = gzip == Gzip::ByName && named_gz(path);
  write_file_atomically(path, [&](const fs::path& tmp) { copy_file(from, tmp, compress); });
}

void write_stream_atomically(const fs::path& path, const std::function<void(std::ostream& out)>& write,
                             Gzip gzip) {
  write_file_atomically(path, [&](const fs::path& tmp) {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot make a file in " + folder_of(tmp) + (errno ? std::string(": ") + std::strerror(errno) : ""));
    write(out);
    out.flush();
    if (!out) throw std::runtime_error(std::string("writing failed") + (errno ? std::string(": ") + std::strerror(errno) : ""));
  }, gzip);
}

void write_text_atomically(const fs::path& path, std::string_view text, Gzip gzip) {
  write_stream_atomically(
      path, [&](std::ostream& out) { out.write(text.data(), std::streamsize(text.size())); }, gzip);
}

}  // namespace pil
