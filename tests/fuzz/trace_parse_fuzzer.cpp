// libFuzzer target: any bytes into the trace parser and every report. A ParseError is the
// expected answer to bad input; anything else (a crash, a sanitizer report, another exception)
// is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "trace/key_averages.h"
#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/svg.h"
#include "../trace/trace_dump.h"

namespace {

// Bytes that are valid JSON, as simdjson's validating (DOM) parser reads them.
bool valid_json(std::string_view text) {
  simdjson::dom::parser parser;
  return !parser.parse(simdjson::padded_string(text)).error();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pil::trace;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The parallel reader (3 threads, chunks cut every 64 to 575 bytes) must read what one thread
  // reads, or refuse what it refuses.
  std::string parallel;
  try {
    ParseOptions o;
    o.threads = 3;
    o.chunk_bytes = 64 + size % 512;
    parallel = pil::test::dump(parse_trace_text(text, "fuzz", o));
  } catch (const ParseError&) {
    parallel = "error";
  }
  try {
    ParseOptions small;
    small.chunk_bytes = 4096;  // exercise the chunk boundaries
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
    diff_report(t, t);
    const std::string said = explain(index);
    // The same answers from an index that computes its operator table and stream report on
    // threads of their own.
    if (explain(TraceIndex(t, 3, /*table_ahead=*/true)) != said) std::abort();  // a finding: the threads changed it
    SvgOptions o;
    o.width = 600;
    render_svg(index, o);
  } catch (const ParseError&) {
    if (parallel != "error" && valid_json(text)) std::abort();  // the parallel read took bad input
  }
  return 0;
}
