// libFuzzer target: any bytes into the trace parser, every report (`check` and `advise` among
// them: advise read as pil-trace reads for it, its rules on one thread and on three) and `slice`. A ParseError is
// the expected answer to bad input; anything else (a crash, a sanitizer report, another
// exception) is a finding, and so is a slice of a readable trace that does not read back.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "trace/advise/advise.h"
#include "trace/check.h"
#include "trace/key_averages.h"
#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/roofline_format.h"
#include "trace/slice.h"
#include "trace/svg.h"
#include "../trace/trace_dump.h"

namespace {

// Bytes that are valid JSON, as simdjson's validating (DOM) parser reads them.
bool valid_json(std::string_view text) {
  simdjson::dom::parser parser;
  return !parser.parse(simdjson::padded_string(text)).error();
}

// pil-trace slice in memory: the trace read again with the element sources slice needs, cut
// by its step 0 and last step where it has steps and by the middle third of its window, and
// each slice read back. Called on a trace that reads: a ParseError anywhere here (the reading
// with sources, the cut, the slice read back) is a finding where the bytes are valid JSON; a
// trace with no event array elements has nothing to slice, and a span with nothing in it is
// refused (EmptySlice).
void slice_and_read_back(std::string_view text) try {
  using namespace pil::trace;
  ParseOptions o;
  o.chunk_bytes = 4096;
  o.keep_sources = true;
  const Trace t = parse_trace_text(text, "fuzz", o);
  if (t.sources.empty()) return;
  const TraceIndex index(t);
  std::vector<std::pair<int64_t, int64_t>> spans;
  int64_t from = 0, to = 0;
  if (step_window(index, 0, from, to)) spans.push_back({from, to});
  if (index.steps.size() > 1 && step_window(index, index.steps.size() - 1, from, to))
    spans.push_back({from, to});
  // Unsigned: fuzzed times may lie far apart (a signed difference would overflow).
  const int64_t third =
      int64_t((uint64_t(index.window_end) - uint64_t(index.window_start)) / 3);
  spans.push_back({index.window_start + third, index.window_end - third});
  for (const auto& [a, b] : spans) {
    std::string slice;
    try {
      slice = slice_text(index, text, a, b);
    } catch (const EmptySlice&) {
      continue;  // nothing in the span: refused (one line, exit 2 from the tool), not written
    }
    ParseOptions back;
    back.chunk_bytes = 4096;
    const Trace s = parse_trace_text(slice, "fuzz slice", back);
    if (s.events.size() > t.events.size()) std::abort();  // a finding: the slice grew
  }
} catch (const pil::trace::ParseError& e) {
  // A finding: a readable trace that does not slice, or a slice that does not read. Where the
  // bytes are not valid JSON the reader reads past garbage in one setting and trips on it in
  // another (an element whose extra '}' the whole trace's reading went past is copied whole,
  // and read again on its own): either answer is allowed there, as for the parallel read.
  if (!valid_json(text)) return;
  std::fprintf(stderr, "slice finding: %s\n", e.what());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pil::trace;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The parallel reader (3 threads, chunks cut every 64 to 575 bytes) must read what one thread
  // reads, or refuse what it refuses; every other input with the operators' inputs (and their
  // concrete values) read too.
  const bool shapes = size % 2 == 1;
  std::string parallel;
  try {
    ParseOptions o;
    o.threads = 3;
    o.chunk_bytes = 64 + size % 512;
    o.read_shapes = o.read_concrete = shapes;
    parallel = pil::test::dump(parse_trace_text(text, "fuzz", o));
  } catch (const ParseError&) {
    parallel = "error";
  }
  try {
    ParseOptions small;
    small.chunk_bytes = 4096;  // exercise the chunk boundaries
    small.read_shapes = small.read_concrete = shapes;
    const Trace t = parse_trace_text(text, "fuzz", small);
    // A finding: the parallel read differs. Where the bytes are not valid JSON, garbage inside
    // a value the reader skips (an operator's args after its External id) is not looked at:
    // one reading may go past it where another, cut elsewhere, trips on it; either answer is
    // allowed there (a crash is not).
    if (pil::test::dump(t) != parallel && valid_json(text)) std::abort();
    const TraceIndex index(t);
    key_averages(t.events);
    kernel_report(index);
    api_report(index);
    launch_report(index);
    stream_report(index);
    chain_report(index, "matmul_add");
    roofline_json(roofline_report(index), RooflineOptions{});  // rows only with the inputs read
    diff_report(t, t);
    const std::string said = explain(index);
    // The same answers from an index that computes its operator table and stream report on
    // threads of their own.
    if (explain(TraceIndex(t, 3, /*table_ahead=*/true)) != said) std::abort();  // a finding: the threads changed it
    SvgOptions o;
    o.width = 600;
    render_svg(index, o);
    memory_report(index);
    format_check(check_trace(index), "fuzz");
    slice_and_read_back(text);
    // advise as pil-trace runs it: the trace read with the inputs its rules judge by, its rules
    // on one thread and on three, which must agree.
    const Trace ta = parse_trace_text(text, "fuzz", advise_read_options(small));
    const TraceIndex ia(ta);
    AdviseOptions one;
    AdviseOptions three;
    three.threads = 3;
    three.min_saved_share = one.min_saved_share = 0;  // every symptom, however small
    const Advice advice = advise(ia, one);
    if (advice_json(advise(ia, three)).dump() != advice_json(advice).dump()) std::abort();  // threads changed it
    format_advice(advice, "fuzz");
  } catch (const ParseError&) {
    if (parallel != "error" && valid_json(text)) std::abort();  // the parallel read took bad input
  }
  return 0;
}
