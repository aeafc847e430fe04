#pragma once
/// \file
/// Files written whole or not at all: the content goes to a temporary file beside the target,
/// which is renamed over the target only once it is complete. A trace file may be asked to be
/// gzip-compressed where its name ends in ".gz", as torch.profiler's export_chrome_trace writes
/// one (Gzip::ByName).
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace pil {

/// Whether the file is gzip-compressed: never, or where its name ends in ".gz" (HTA, Perfetto
/// and Python read such a name as gzip).
enum class Gzip { No, ByName };

/// True for a name ending in ".gz".
bool named_gz(const std::filesystem::path& path);

/// Why `path` cannot be written whole in place (the new file renamed over it), or "": a folder;
/// a device, FIFO or socket (renamed over, /dev/null would become a plain file); a file this
/// process may not write; a folder that does not exist, or that takes no new file (the write's
/// temporary one: "cannot make a file in /proc: ...", folder_unwritable_reason). A link is judged
/// by its target, which is what a write replaces (the link stays).
std::string unwritable_reason(const std::filesystem::path& path);

/// Why no file can be made in folder `dir`, or "": found by making (and removing) an empty hidden
/// file there, as a write will, so that a folder this process may not write, a read-only file
/// system or a /proc folder is said before a long run rather than after it (access(2) says yes
/// to root everywhere).
std::string folder_unwritable_reason(const std::filesystem::path& dir);

/// Makes folder `dir` where missing (with its parents) and checks that it takes a new file
/// (folder_unwritable_reason): "" when it does, else one phrase naming the folder: "cannot create
/// DIR: ..." (a file of that name, no permission) or "cannot make a file in DIR: ...". What an
/// output folder is checked with before a run (a lesson's --out, tensorboard_trace_handler's).
std::string make_writable_folder(const std::filesystem::path& dir);

/// Calls `write(tmp)` to fill a temporary file in the target's folder, then renames it to
/// `path`. If `write` throws or leaves no non-empty file, the temporary file is removed, `path`
/// is left as it was, and std::runtime_error says what went wrong in one line. With
/// Gzip::ByName and a `path` ending in ".gz", what `write` wrote is gzip-compressed into it.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::filesystem::path& tmp)>& write,
                           Gzip gzip = Gzip::No);

/// Copies file `from` to `path` whole or not at all (see write_file_atomically), in one pass:
/// gzip-compressed with Gzip::ByName where `path` ends in ".gz".
void copy_file_atomically(const std::filesystem::path& from, const std::filesystem::path& path,
                          Gzip gzip = Gzip::No);

/// Calls `write(out)` with a stream into the temporary file, then renames it to `path` (see
/// write_file_atomically); a failed write or flush of the stream is an error too.
void write_stream_atomically(const std::filesystem::path& path,
                             const std::function<void(std::ostream& out)>& write,
                             Gzip gzip = Gzip::No);

/// Writes `text` to `path` whole or not at all (see write_file_atomically).
void write_text_atomically(const std::filesystem::path& path, std::string_view text,
                           Gzip gzip = Gzip::No);

}  // namespace pil
