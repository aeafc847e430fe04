// libFuzzer target: any bytes into the trace parser and every report. A ParseError is the
// expected answer to bad input; anything else (a crash, a sanitizer report, another exception)
// is a finding.
#include <cstdint>
#include <string_view>

#include "trace/key_averages.h"
#include "trace/parse.h"
#include "trace/reports.h"
#include "trace/svg.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pil::trace;
  try {
    ParseOptions small;
    small.chunk_bytes = 4096;  // exercise the chunk boundaries
    const Trace t = parse_trace_text(std::string_view(reinterpret_cast<const char*>(data), size),
                                     "fuzz", small);
    const TraceIndex index(t);
    key_averages(t.events);
    kernel_report(index);
    api_report(index);
    launch_report(index);
    stream_report(index);
    chain_report(index, "matmul_add");
    diff_report(t, t);
    explain(index);
    SvgOptions o;
    o.width = 600;
    render_svg(index, o);
  } catch (const ParseError&) {
  }
  return 0;
}
