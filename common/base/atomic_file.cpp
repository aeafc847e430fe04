#include "base/atomic_file.h"

#include <unistd.h>
#include <zlib.h>

#include <cstdio>
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

/// Copies file `from` into `to`, gzip-compressed or as it is (zlib's default level; no name or
/// time in the gzip header, so the same content gives the same bytes).
void copy_file(const fs::path& from, const fs::path& to, bool compress) {
  std::FILE* in = std::fopen(from.c_str(), "rb");
  if (!in) throw std::runtime_error("cannot read " + from.string());
  std::FILE* plain = compress ? nullptr : std::fopen(to.c_str(), "wb");
  gzFile gz = compress ? gzopen(to.c_str(), "wb") : nullptr;
  if (!plain && !gz) {
    std::fclose(in);
    throw std::runtime_error("cannot open " + to.string() + " for writing");
  }
  std::string chunk(1 << 20, '\0');
  bool ok = true;
  for (size_t n; ok && (n = std::fread(chunk.data(), 1, chunk.size(), in)) > 0;)
    ok = gz ? gzwrite(gz, chunk.data(), unsigned(n)) == int(n) : std::fwrite(chunk.data(), 1, n, plain) == n;
  ok = ok && !std::ferror(in);
  std::fclose(in);
  if (gz ? gzclose(gz) != Z_OK : std::fclose(plain) != 0) ok = false;
  if (!ok) throw std::runtime_error("copy of " + from.string() + " to " + to.string() + " failed");
}

}  // namespace

void write_file_atomically(const fs::path& path,
                           const std::function<void(const fs::path& tmp)>& write, Gzip gzip) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path tmp = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  const bool compress = gzip == Gzip::ByName && named_gz(path);
  const fs::path plain = compress ? fs::path(tmp.string() + ".plain") : tmp;
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    if (compress) fs::remove(plain, ignored);
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
    throw std::runtime_error("cannot write " + path.string() + ": " + e.what());
  }
  std::error_code ec;
  const auto size = fs::file_size(tmp, ec);
  if (ec || size == 0) {
    discard();
    throw std::runtime_error("cannot write " + path.string() + ": nothing was written");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw std::runtime_error("cannot write " + path.string() + ": " + ec.message());
  }
}

void copy_file_atomically(const fs::path& from, const fs::path& path, Gzip gzip) {
  const bool compress = gzip == Gzip::ByName && named_gz(path);
  write_file_atomically(path, [&](const fs::path& tmp) { copy_file(from, tmp, compress); });
}

void write_stream_atomically(const fs::path& path, const std::function<void(std::ostream& out)>& write,
                             Gzip gzip) {
  write_file_atomically(path, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + tmp.string() + " for writing");
    write(out);
    out.flush();
    if (!out) throw std::runtime_error("write to " + tmp.string() + " failed");
  }, gzip);
}

void write_text_atomically(const fs::path& path, std::string_view text, Gzip gzip) {
  write_stream_atomically(
      path, [&](std::ostream& out) { out.write(text.data(), std::streamsize(text.size())); }, gzip);
}

}  // namespace pil
