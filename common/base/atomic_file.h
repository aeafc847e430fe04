#pragma once
/// \file
/// Files written whole or not at all: the content goes to a temporary file beside the target,
/// which is renamed over the target only once it is complete.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string_view>

namespace pil {

/// Calls `write(tmp)` to fill a temporary file in the target's folder, then renames it to
/// `path`. If `write` throws or leaves no non-empty file, the temporary file is removed, `path`
/// is left as it was, and std::runtime_error says what went wrong in one line.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::filesystem::path& tmp)>& write);

/// Calls `write(out)` with a stream into the temporary file, then renames it to `path` (see
/// write_file_atomically); a failed write or flush of the stream is an error too.
void write_stream_atomically(const std::filesystem::path& path,
                             const std::function<void(std::ostream& out)>& write);

/// Writes `text` to `path` whole or not at all (see write_file_atomically).
void write_text_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace pil
