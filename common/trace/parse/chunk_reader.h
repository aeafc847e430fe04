#pragma once
/// \file
/// The chunked reader: the trace's head (the fields before "traceEvents"), its event array read
/// a buffer at a time with chunks cut at line breaks, the tail after the array, and the one
/// place that turns a bad event into a message naming it. Also reads one stretch of a parallel
/// read (a chunk in place, or sequentially between chunks). Internal to the trace parser.
#include <simdjson.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "trace/parse.h"
#include "trace/parse/event_fields.h"
#include "trace/parse/part.h"
#include "trace/parse/sources.h"
#include "trace/trace.h"

namespace pil::trace::detail {

/// ParseOptions::shapes_also_for, kept or dropped by its condition judged on the trace read so
/// far (its head); the condition is then spent. Every reader of the events judges it once,
/// before the first event.
inline void judge_shapes_also(ParseOptions& o, const Trace& head) {
  if (!o.shapes_also_if) return;
  if (!o.shapes_also_if(head)) o.shapes_also_for = nullptr;
  o.shapes_also_if = nullptr;
}

/// The error for a file cut short (its writer stopped before it finished, or a copy cut: a
/// public repository's trace of exactly 1 MiB): "LABEL: truncated: the file ends WHERE (...)",
/// WHERE "inside the event array", say. Every reader says it so.
inline ParseError cut_short(const std::string& label, const std::string& where) {
  return ParseError(label + ": truncated: the file ends " + where +
                    " (its writer was stopped before it finished, or a copy of it was cut short)");
}

class Reader {
 public:
  Reader(std::unique_ptr<Source> source, std::string label, const ParseOptions& options,
         Trace* out);

  /// Reads the whole trace from the source; returns the number of event array elements.
  size_t run();

  /// The head only: returns the file offset of the event array's '['.
  uint64_t read_head_only();
  bool bare_array() const { return bare_array_; }

  /// Reads into `part` from now on (its names and lanes numbered on their own).
  void use_part(Part* part);

  /// Reads chunk [open, close] of `data` in place (data[open] == '[', data[close] == ']', both
  /// written beforehand; `capacity` bytes readable from data). Never throws for bad input: an
  /// event it cannot read ends the chunk, and the sequential read takes over there.
  void read_chunk_in_place(char* data, size_t capacity, size_t open, size_t close,
                           size_t resume_if_none, bool first_chunk, Part* part);

  /// Starts the sequential read of a stretch at file offset `from` of the source (which begins
  /// there): at the array's '[' (first), or just after an event. Events are numbered from
  /// `element`.
  void start_stretch(uint64_t from, bool first, size_t element);
  /// Reads on until an event starts at or past `limit` (returns its offset) or the array ends
  /// (returns 0; closed_at() says where the tail starts).
  uint64_t run_stretch(uint64_t limit);
  uint64_t closed_at() const { return closed_at_; }
  size_t elements() const { return events_; }

  /// What follows the event array, from the source's first byte.
  void run_tail(bool bare_array);

  bool walk_only_ = false;
  bool walk_fields_ = false;  // with walk_only_: visit every field too

 private:
  // The buffer holds file bytes [base_, base_ + len_); data_[0] is free for a '[' when a chunk
  // starts in the middle of the event array.
  size_t offset(size_t i) const { return size_t(base_) + i; }
  std::string where(size_t i) const { return " at byte " + std::to_string(offset(i)); }
  void fill(size_t keep);
  void grow();
  void read_more(size_t& at);
  size_t safe_end(size_t from) const;
  size_t read_head(size_t start);
  size_t head_end_guess(size_t start, size_t end) const;
  simdjson::error_code read_top_field(simdjson::ondemand::raw_json_string key,
                                      simdjson::ondemand::value& v);
  void read_events(size_t at);
  void continue_events();
  void close_array(size_t after);
  [[noreturn]] void throw_bad_structure(size_t i);
  /// The error for event `index`, which begins at data_[at], is bad for `why`; at the file's
  /// end, an event whose '{' never closes is said to be cut short (the writer was stopped).
  ParseError bad_event(size_t index, size_t at, const std::string& why) const;
  /// At the file's end, the bracket at data_[at] never closes (or, with `depth` 1, the one open
  /// before data_[at]): the file was cut short there.
  bool open_to_end(size_t at, int depth = 0) const;
  size_t parse_chunk(size_t begin, size_t end, size_t& next, bool& array_closed);
  bool walk_value_fields(simdjson::ondemand::object& obj, int depth = 1);
  bool walk_value(simdjson::ondemand::value& v, int depth);
  void read_tail(size_t at);
  size_t extent_end(size_t at) const;
  bool closes_before(size_t at, size_t end) const;
  size_t close_of(size_t at, size_t end) const;

  std::unique_ptr<Source> source_;
  std::string label_;
  Trace* out_;
  EventFields fields_;
  ParseOptions shapes_also_;  // ParseOptions::shapes_also_for and _if, while not yet judged
  simdjson::ondemand::parser parser_;
  // A stretch of a parallel read: a chunk read in place, or the sequential read between chunks.
  Part* part_ = nullptr;   // names and lanes go here, numbered on their own
  bool in_place_ = false;  // data_ is the whole trace, its stand-ins already written
  bool stretch_ = false;   // stop at the array's end (closed_at_), not reading the tail
  uint64_t limit_ = std::numeric_limits<uint64_t>::max();  // stop at an event starting here+
  uint64_t stopped_at_ = 0, closed_at_ = 0;
  size_t ev_at_ = 0;
  bool ev_first_ = true;
  std::unique_ptr<char[]> buf_;
  char* data_ = nullptr;  // buf_, or the bytes of a whole trace parsed in place (one chunk)
  size_t cap_ = 0, len_ = 0;
  int64_t base_ = 0;  // file offset of data_[0]
  bool eof_ = false, bare_array_ = false;
  bool careful_ = false;  // read the next event with its extent checked first
  size_t events_ = 0;
};

}  // namespace pil::trace::detail
