#include "base/atomic_file.h"

#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fs = std::filesystem;

namespace pil {

void write_file_atomically(const fs::path& path,
                           const std::function<void(const fs::path& tmp)>& write) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path tmp = dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  auto discard = [&] {
    std::error_code ignored;
    fs::remove(tmp, ignored);
  };
  try {
    write(tmp);
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

void write_stream_atomically(const fs::path& path, const std::function<void(std::ostream& out)>& write) {
  write_file_atomically(path, [&](const fs::path& tmp) {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open " + tmp.string() + " for writing");
    write(out);
    out.flush();
    if (!out) throw std::runtime_error("write to " + tmp.string() + " failed");
  });
}

void write_text_atomically(const fs::path& path, std::string_view text) {
  write_stream_atomically(path, [&](std::ostream& out) { out.write(text.data(), std::streamsize(text.size())); });
}

}  // namespace pil
