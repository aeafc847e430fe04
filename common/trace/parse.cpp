// The trace parser's front door: which reader a file gets (one thread through a buffer, or the
// parallel read of a private mapping) and the walk that benchmarks compare with. The stages live
// under parse/: sources.* (bytes in), numbers.cpp (times as text to nanoseconds), json_text.h,
// event_fields.* (one event's fields into the model), chunk_reader.* (the head, the event array
// a chunk at a time, the tail, and error messages), part.h and parallel_read.* (chunks read on
// several threads, merged in file order).
#include "trace/parse.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "trace/parse/chunk_reader.h"
#include "trace/parse/parallel_read.h"
#include "trace/parse/sources.h"

namespace pil::trace {

using detail::Mapping;
using detail::MemorySource;
using detail::open_file;
using detail::Reader;

namespace {

Trace new_trace(size_t file_bytes) {
  Trace t;
  // Room for every event up front (about 200 bytes of JSON each in Kineto's output): the vector
  // never reallocates, and untouched capacity costs address space, not memory.
  t.events.reserve(std::min<size_t>(file_bytes / 100, size_t(1) << 31));
  t.kernels.reserve(std::min<size_t>(file_bytes / 300, size_t(1) << 31));
  return t;
}

}  // namespace

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return unsigned(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

Trace parse_trace_file(const std::string& path, const ParseOptions& options) {
  struct stat st {};
  const bool plain = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  if (plain && options.threads > 1 && st.st_size > 0) {
    // A plain file is read in place from a private mapping: no copy through a buffer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      unsigned char magic[2] = {0, 0};
      const bool gzip = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
      std::unique_ptr<Mapping> map;
      if (!gzip) map = std::make_unique<Mapping>(fd, size_t(st.st_size));
      ::close(fd);
      if (map && map->data()) {
        Trace t = new_trace(size_t(st.st_size));
        if (detail::read_in_parallel(map->data(), size_t(st.st_size), map->capacity(), path,
                                     options, true, options.threads, t))
          return t;
      }
    }
  }
  Trace t = new_trace(plain ? size_t(st.st_size) : 0);
  Reader r(open_file(path), path, options, &t);
  r.run();
  return t;
}

Trace parse_trace_text(std::string_view json, const std::string& label, const ParseOptions& options) {
  if (options.threads > 1 && !json.empty()) {
    const size_t capacity = json.size() + 1 + simdjson::SIMDJSON_PADDING;
    std::unique_ptr<char[]> copy(new char[capacity]);
    std::memcpy(copy.get(), json.data(), json.size());
    std::memset(copy.get() + json.size(), 0, capacity - json.size());
    Trace t;
    if (detail::read_in_parallel(copy.get(), json.size(), capacity, label, options, false,
                                 options.threads, t))
      return t;
  }
  Trace t;
  Reader r(std::make_unique<MemorySource>(json), label, options, &t);
  r.run();
  return t;
}

size_t walk_trace_file(const std::string& path, const ParseOptions& options, bool every_field) {
  Trace t;
  Reader r(open_file(path), path, options, &t);
  r.walk_only_ = true;
  r.walk_fields_ = every_field;
  return r.run();
}

}  // namespace pil::trace
