#!/usr/bin/env python3
"""A lesson's Doxygen page, made from its README.md at build time (or any page of docs/).

The README is the one source of a lesson's page. It reads well on its own (GitHub shows it) and
carries markers, HTML comments that GitHub does not show, which this script turns into Doxygen.
No Doxygen-only syntax stands in the text GitHub shows (outside code): no \\ref, \\snippet,
\\verbatim, [TOC] or bare {#id} (an error: --check). A page of docs/ without runs is made the
same way with --source alone (no lesson): its snippets name their file with from=.

  <!-- snippet: NAME [from=PATH] -->  the fenced code block right after it becomes
                                \\snippet LESSON/main.cpp NAME: the code between the two
                                `// [NAME]` lines of main.cpp (of PATH, from the project's root,
                                with from=; `# [NAME]` in a .py file), so the page shows the code
                                that runs. The README's copy must equal it (checked: --check).
  <!-- run: NAME: FLAGS -->     runs the lesson on the CPU with FLAGS (into the build tree) for
                                the markers below; nothing is shown
  <!-- run: NAME runs=N: FLAGS -->
                                runs it N times (default 1). Its table, timelines and summary
                                show the median run: the run whose median profiled-step time is
                                the median of the N (the lower middle one for even N). Figures
                                in the text (fig markers) use all N runs.
  <!-- trace: NAME: PATH -->    names a committed trace (PATH from the project root: a GPU
                                fixture captured on the GPU machine) for the markers below
  <!-- timeline: NAME [step=K] [range=R] [from-us=A to-us=B] [mark=SLICE]... -->
                                a timeline picture of that run's trace (pil-trace svg); each
                                mark= (repeatable) draws an arrow and a label at the first slice
                                named SLICE in the window (pil-trace svg --mark); from-us= and
                                to-us= (together, instead of step= or range=) a window in µs
                                from the trace's first step, as svg --from-us/--to-us: a close-up
                                of a committed trace
  <!-- table: NAME [rows=N] --> its operator table (pil-trace ops)
  <!-- summary: NAME -->        what its trace says (pil-trace summary)
  <!-- advise: NAME -->         what to fix in its trace (pil-trace advise)
  <!-- ranks: NAME [step=K] --> a run of a lesson that starts its own ranks (lines prefixed
                                "[rankK] "): pil-trace ranks on that run's folder, its table and
                                its picture with a lane per rank (step K, or every step)

Markers naming a run may come before or after the run marker; every run runs before the page is
made.

The output markers (timeline, table, summary, ranks) carry, for GitHub, the output of one
reference run that --update-source committed, between the marker and its closing line:

  <!-- table: eager64 rows=8 -->
  <!-- made: sha256=0123456789abcdef -->
  ```text                        (a table, summary or ranks table) and/or
  ![caption](docs/NAME.svg)      (a timeline or ranks picture: the SVG pil-trace drew, committed
                                 in DIR/docs/, or img/ beside another --source)
  *Reference run committed with this page: COMMAND, on MACHINE (cores; load), DATE. ...*
  <!-- /table -->

The page replaces the whole block with its own run's output. made: is what made the output
(made_hash: the marker's line, its run marker's line, the lesson's main.cpp and compiled.py, the
shared models its main.cpp includes (common/models/NAME.h and .cpp) and the harness files
HASHED_COMMON, or a trace marker's committed trace: contents, never dates);
--check fails (exit 1) when a marker has none or another. A heading's page id hides from GitHub
in a comment, "# Title <!-- {#lesson01} -->", and a link to a page of the project in prose,
[text](../docs/page.md), becomes \\ref ID "text" on the page (a lesson's page goes on a nav line).

Figures, inline, anywhere in a prose line (several per line):

  <!-- fig: NAME QUERY -->45%<!-- /fig -->
                                GitHub shows the text between (the last value someone measured);
                                the page shows the median over NAME's runs and their range,
                                "45% (43–46%)" (the range left out when it is one value or when
                                there is one run). Units as in the tables: ns / µs / ms / s,
                                shares in % with no decimals, counts as integers. QUERY (words
                                split as a shell would: op="a b" for a name with a space):
      op=OPNAME self_pct        the operator's share of the profiled CPU time: the table's Self
      op=OPNAME total_pct       CPU % (self time) or CPU total % (with its children)
      op=OPNAME self_avg        per call: self CPU time / calls, or CPU total / calls (the
      op=OPNAME total_avg       table's CPU time avg)
      op=OPNAME calls           calls in all profiled steps
      step_time [step=K]        the median profiled step's duration, or the K-th step's (0-based)
      range=R time [step=K]     the named range R's time per profiled step (mean over the steps),
                                or in the K-th step (R must occur once per step)
      gap range=R op=O [step=K] from R's start to the first O inside it, in step K (default 0:
                                the first-step gap); R must occur once per step
      advise CAUSE saved        pil-trace advise's finding of that cause (naive_attention,
                                untraced, ...): its upper bound on the time saved, per profiled
                                step (the finding's saved_ns over the steps). A finding exists
                                only past its rule's threshold, which a loaded machine can move a
                                run across: the figure is over the runs that have it, followed by
                                "(named in K of N runs)" when some had not, or reads "not named
                                in these runs" when none had
      ranks rank=K FIELD        a run of a lesson that starts its own ranks: rank K's median over
                                the steps, as pil-trace ranks prints it; FIELD step_time,
                                compute, comm, overlap, exposed, collectives, or hidden_pct
                                (median overlap / median communication)
      summary KEY               a value of `pil-trace summary --json` by dotted key (list items by
                                number): steps.count, steps.median_ns, steps.first_ns,
                                steps.first_over_median, steps.durations_ns.K, self_cpu_total_ns,
                                top_ops.K.name|self_cpu_ns|share, ranges.R.calls|cpu_per_step_ns|
                                gpu_launched_per_step_ns|device_per_step_ns,
                                memory.K.peak_growth_bytes|allocations|...,
                                and on a GPU gpu.work_items_per_step, gpu.busy_share,
                                gpu.idle.host_wait_share|kernel_wait_share|other_share,
                                gpu.launches, gpu.launch_latency.median_ns|max_ns|count,
                                gpu.queueing.median_ns|count, gpu.waited.median_ns|max_ns|count,
                                gpu.kernel_launches, gpu.shorter_than_call,
                                gpu.top_kernel.name|share|calls|median_ns,
                                gpu.synchronizes.K.dur_ns|gpu_busy_ns|gpu_idle_share.
                                Keys ending in _ns are times, in _share or share are shares,
                                in _bytes are sizes; other integers are counts.
  The page's footer then says: "figures in the text: median (range) over N runs of each named
  run, on MACHINE".

  Two figures joined, of one unit:
      NAME QUERY minus NAME QUERY   the difference of the two medians (a gain: the step before a
                                fix less the step after), in brackets the least and the most over
                                every pairing of a run of each: "517 ms (471–718 ms)", "-33.0 ms
                                (-41.6 to -7.90 ms)"
      NAME QUERY over NAME QUERY    their ratio, the same way: "5.18× (4.76–6.30×)"

A comparison, inline, where the prose says which of two figures is the larger (the page's runs
decide, so a built page never says "faster" of runs that show otherwise):

  <!-- cmp: NAME QUERY vs NAME QUERY | LESS | OVERLAP | MORE -->TEXT<!-- /cmp -->
                                the page shows OVERLAP when the two figures' ranges over their
                                runs overlap, else LESS or MORE as the first's median is below
                                or above the second's; TEXT (what GitHub shows) is one of the
                                three, the one the reference run chose (--update-source writes
                                it). Both QUERYs as a fig's, of the same unit; no '|' in a text.

Lines of their own:

  <details><summary>Answer</summary>   a folded answer, as GitHub shows it; the two tag lines
  ...                                   become \\htmlonly[block]<details>...\\endhtmlonly and
  </details>                            \\htmlonly[block]</details>\\endhtmlonly (Doxygen 1.9.4
                                        breaks raw <details> spanning paragraphs)
  <!-- site: TEXT -->           TEXT on the page in place of the ONE markdown line after it,
                                which GitHub shows instead (a link to the site's own pages, such
                                as the API reference, which GitHub does not have)
  <!-- nav -->                  the ONE markdown line after it (Previous: [01_matmul_add]
                                (../01_matmul_add/README.md) · Next: ...) becomes
                                \\if full_site ... \\endif with each link to a page of the
                                project (a .md file whose heading has {#ID}) as \\ref ID: the
                                full site sets ENABLED_SECTIONS=full_site, a chapter alone
                                does not, so it never refers to other chapters.

  docs_page.py --lesson-dir DIR --exe LESSON_EXE --pil-trace PIL_TRACE --out-dir OUT --page PAGE
               [--source PATH]
  docs_page.py --source PATH --page PAGE [--full-site] [--root DIR]
                                a page of docs/ without a lesson (no runs, figures or outputs);
                                --full-site: a page of the full site only (the main page, the
                                instructor's pages), whose prose may link to the lessons' pages
  docs_page.py --github-text [FILE...] [--root DIR]
                                only checks that the markdown GitHub shows (FILE..., or every
                                .md of DIR but /build*, /traces and hidden folders) holds no
                                Doxygen-only syntax outside code and comments (exit 1 if one does)
  docs_page.py (--lesson-dir DIR [--source PATH] | --source PATH [--full-site]) --check [--skip-outputs]
                                only check the markers (snippets equal the source, every marker's
                                and fig QUERY's syntax, names declared, details, nav lines and
                                links, and each output marker's committed output and its hash,
                                unless --skip-outputs): no runs, no output

  docs_page.py --lesson-dir DIR [--source PATH] --update-source --exe LESSON_EXE
               --pil-trace PIL_TRACE --out-dir OUT [--conditions TEXT] [--only KINDS]
                                writes one reference run into the source (the text GitHub
                                shows): the figures into the fig markers and each output
                                marker's committed output, from the same runs: for a
                                maintainer, on a quiet machine (TEXT names its load)

--source PATH (default DIR/README.md) makes the page of another markdown file (docs/perfetto.md)
with the lesson's executable; its pictures are named after the source's stem
(perfetto_RUN_step0.svg) and its runs go to OUT/runs/STEM_RUN, so they never collide with the
lesson's own.

Exit codes: 0 done, 1 a snippet differs from the source, a run failed, a figure is not in the
trace, or a committed output is missing or stale, 2 bad usage or a bad marker. Every file is written whole or not at all.
"""
import argparse
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

MARKER_KINDS = "snippet|run|trace|timeline|table|summary|advise|ranks"
MARKER = re.compile(r"^<!--\s*(%s):\s*(.*?)\s*-->\s*$" % MARKER_KINDS)
MAYBE_MARKER = re.compile(r"^\s*<!--\s*(%s)\b" % MARKER_KINDS)
FIG = re.compile(r"<!--\s*fig:\s*(.*?)\s*-->(.*?)<!--\s*/fig\s*-->")
FIG_START = re.compile(r"<!--\s*/?fig\b")
CMP = re.compile(r"<!--\s*cmp:\s*(.*?)\s*-->(.*?)<!--\s*/cmp\s*-->")
CMP_START = re.compile(r"<!--\s*/?cmp\b")
NAV = re.compile(r"^<!--\s*nav\s*-->\s*$")
DETAILS_OPEN = re.compile(r"^\s*<details>\s*<summary>(.*?)</summary>\s*$")
DETAILS_CLOSE = re.compile(r"^\s*</details>\s*$")
DETAILS_ANY = re.compile(r"^\s*</?details\b")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
# A Markdown link to a page whose text runs over a line break: "[the Perfetto" then
# "page](../docs/perfetto.md)" (GitHub joins them; the page's \\ref conversion, line by line, cannot).
SPLIT_LINK_START = re.compile(r"\[[^\]]*$")
SPLIT_LINK_END = re.compile(r"^[^\[]*\]\([^)]*\.md(#[^)]*)?\)")
ANCHOR = re.compile(r"\{#([A-Za-z0-9_]+)\}")
# A heading's page id hidden from GitHub: "# Title <!-- {#lesson01} -->" (the site gets "{#lesson01}").
HIDDEN_ANCHOR = re.compile(r"<!--\s*(\{#[A-Za-z0-9_]+\})\s*-->")
# What only Doxygen reads, and GitHub shows as it is (outside code, inline code and comments): a
# command (\\ref, \\snippet, \\verbatim, ...), [TOC], a page id {#id} not hidden in a comment.
DOXYGEN_ONLY = re.compile(r"(?<![\\\w])[\\@](?:ref|subpage|snippet\w*|include\w*|image|verbatim|endverbatim|"
                          r"htmlonly|endhtmlonly|latexonly|endlatexonly|if|ifnot|elseif|endif|cond|endcond|"
                          r"page|mainpage|section|subsection|subsubsection|paragraph|anchor|copydoc|code|endcode|"
                          r"note|warning|brief|tableofcontents|dot|enddot|details|since|see)(?!\w)"
                          r"|\[TOC\]|\{#[A-Za-z0-9_]+\}")
DOXYGEN_ONLY_HELP = ("write it for GitHub and let this script make it Doxygen's: a page id as '# Title <!-- {#id} -->', "
                     "a link to a page as [text](page.md), a snippet as <!-- snippet: NAME from=PATH --> and its copy, "
                     "a verbatim block as ```text; the page gets its [TOC]")
INLINE_CODE = re.compile(r"(`+).*?\1")
COMMENT = re.compile(r"<!--.*?-->")
# A line of the site's own, hidden from GitHub: "<!-- site: TEXT -->" then the one line GitHub shows
# in its place (a link to the site's API reference, which GitHub does not have).
SITE = re.compile(r"^<!--\s*site:\s*(.*?)\s*-->\s*$")
# The markers whose output is committed with the source (--update-source), between the marker and
# its closing line, the first line of the block naming the hash of what made it.
OUTPUT_KINDS = ("timeline", "table", "summary", "advise", "ranks")
CLOSE = re.compile(r"^<!--\s*/(%s)\s*-->\s*$" % "|".join(OUTPUT_KINDS))
MADE = re.compile(r"^<!--\s*made:\s*sha256=([0-9a-f]{16})\s*-->\s*$")
MAYBE_OUTPUT = re.compile(r"^\s*<!--\s*(/(%s)\b|made\b)" % "|".join(OUTPUT_KINDS))
# Besides the lesson's own folder (main.cpp, compiled.py: the model, its variants and flags), the
# harness files whose change changes a committed output: lesson.cpp (the steps, the profiler's
# schedule, the named ranges around a step), options.cpp (the defaults of the flags a run marker
# does not name) and distributed.cpp (the ranks' launcher and their collectives, for ranks markers).
HASHED_COMMON = ("common/harness/lesson.cpp", "common/harness/options.cpp", "common/harness/distributed.cpp")
HASHED_LESSON = ("main.cpp", "compiled.py")
# The shared models a lesson's main.cpp includes (#include "models/NAME.h": lesson 04's block,
# which 06 stacks into a language model) are its code too: common/models/NAME.h and NAME.cpp.
MODEL_INCLUDE = re.compile(r'^\s*#\s*include\s+"(models/[A-Za-z0-9_]+)\.h"', re.M)

# The options each marker takes (mark= may repeat).
MARKER_OPTIONS = {"snippet": {"from"}, "run": {"runs"}, "trace": set(),
                  "timeline": {"step", "range", "from-us", "to-us", "mark"}, "table": {"rows"}, "summary": set(),
                  "advise": set(),
                  "ranks": {"step"}}
OP_FIELDS = ("self_pct", "total_pct", "self_avg", "total_avg", "calls")
RANK_FIELDS = ("step_time", "compute", "comm", "overlap", "exposed", "hidden_pct", "collectives")
QUERY_HELP = ("op=NAME self_pct|total_pct|self_avg|total_avg|calls, step_time [step=K], "
              "range=R time [step=K], gap range=R op=O [step=K], summary KEY, advise CAUSE saved, "
              "ranks rank=K step_time|compute|comm|overlap|exposed|hidden_pct|collectives")


class DocsError(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def snippet_mark(path, name):
    """A snippet's marker line in a compiled source: `// [name]`, or `# [name]` in Python."""
    return "%s [%s]" % ("#" if path.endswith(".py") else "//", name)


def source_region(source_text, name, path="main.cpp"):
    """The lines between the two marker lines of `name` (snippet_mark), dedented, trailing
    spaces dropped."""
    lines = source_text.splitlines()
    mark = snippet_mark(path, name)
    marks = [i for i, l in enumerate(lines) if l.strip() == mark]
    if len(marks) != 2:
        raise DocsError("snippet %s: expected two '%s' lines in %s, found %d" % (name, mark, path, len(marks)), 2)
    body = lines[marks[0] + 1:marks[1]]
    indent = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return [l[indent:].rstrip() for l in body]


def fenced_block(lines, start):
    """The fenced code block starting at or right after `start`: (its lines, index after it)."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines) or not lines[i].startswith("```"):
        raise DocsError("line %d: a snippet marker must be followed by a fenced code block" % (start + 1), 2)
    j = i + 1
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    if j >= len(lines):
        raise DocsError("line %d: unterminated code block" % (i + 1), 2)
    return [l.rstrip() for l in lines[i + 1:j]], j + 1


def options(text, kind=None):
    """'NAME key=value ...' -> (NAME, {key: value}); mark= collects a list."""
    parts = text.split()
    if not parts:
        raise DocsError("empty marker", 2)
    opts = {}
    for p in parts[1:]:
        if "=" not in p:
            raise DocsError("marker option %r is not key=value" % p, 2)
        k, v = p.split("=", 1)
        if kind is not None and k not in MARKER_OPTIONS.get(kind, set()):
            raise DocsError("%s marker: unknown option %r (allowed: %s)" % (
                kind, k, ", ".join(sorted(MARKER_OPTIONS[kind])) or "none"), 2)
        if not v:
            raise DocsError("marker option %r has no value" % p, 2)
        if k == "mark":
            opts.setdefault("mark", []).append(v)
        elif k in opts:
            raise DocsError("marker option %r given twice" % k, 2)
        else:
            opts[k] = v
    if kind == "timeline":
        window = [k for k in ("step", "range", "from-us") if k in opts]
        if ("from-us" in opts) != ("to-us" in opts) or len(window) > 1:
            raise DocsError("timeline marker: one window: step=K, range=R, or from-us=A with to-us=B", 2)
        if "from-us" in opts:
            if not all(re.match(r"^[0-9]+(\.[0-9]+)?$", opts[k]) for k in ("from-us", "to-us")) or \
                    float(opts["to-us"]) <= float(opts["from-us"]):
                raise DocsError("timeline marker: from-us=%s to-us=%s: expected two numbers, from-us < to-us"
                                % (opts["from-us"], opts["to-us"]), 2)
    for k in ("step", "rows", "runs"):
        if k in opts and not (opts[k].isdigit() and (k == "step" or int(opts[k]) > 0)):
            raise DocsError("marker option %s=%s: expected a %s integer" % (
                k, opts[k], "non-negative" if k == "step" else "positive"), 2)
    return parts[0], opts


def parse_compare(text, shown):
    """A cmp marker's body 'NAME QUERY vs NAME QUERY | LESS | OVERLAP | MORE' and the text GitHub
    shows -> (first NAME, query dict of kind cmp). Raises DocsError (2) when bad."""
    parts = [p.strip() for p in text.split("|")]
    sides = parts[0].split(" vs ")
    if len(parts) != 4 or len(sides) != 2 or not all(parts[1:]):
        raise DocsError("cmp %r: expected 'NAME QUERY vs NAME QUERY | LESS | OVERLAP | MORE', three texts "
                        "none empty" % text, 2)
    (a_name, a_q), (b_name, b_q) = parse_query(sides[0]), parse_query(sides[1])
    if shown not in parts[1:]:
        raise DocsError("cmp %r: the text it shows, %r, is none of its three; run docs_page.py --update-source"
                        % (parts[0], shown), 2)
    return a_name, {"kind": "cmp", "text": parts[0], "a": a_q, "b_name": b_name, "b": b_q,
                    "texts": tuple(parts[1:])}


def two_figures(q, runs, a_name, marker):
    """A cmp's or a minus's or over's two figures over their runs: (their kind, (least, most,
    median) of the first, the same of the second). Raises DocsError (1) when a figure is in no
    run or the two are not numbers of one unit."""
    sides = []
    for name, query in ((a_name, q["a"]), (q["b_name"], q["b"])):
        values = [figure_value(rep, query) for rep in runs[name]["reports"]]
        present = sorted(v for _, v in values if v is not None)
        if not present:
            raise DocsError("%s %r: %s %s is in none of its runs" % (marker, q["text"], name, query["text"]))
        sides.append((values[0][0], (present[0], present[-1], median_of(present))))
    (ka, a), (kb, b) = sides
    if ka != kb or ka == "text":
        raise DocsError("%s %r: its two figures must be numbers of one unit (%s, %s)" % (marker, q["text"], ka, kb))
    return ka, a, b


def compare_figures(q, runs, a_name):
    """The text a cmp marker shows: its OVERLAP text when the two figures' ranges over their runs
    overlap, else LESS or MORE by the medians (format_figure's median); two_figures' errors."""
    _, (lo_a, hi_a, med_a), (lo_b, hi_b, med_b) = two_figures(q, runs, a_name, "cmp")
    less, overlap, more = q["texts"]
    if lo_a <= hi_b and lo_b <= hi_a:
        return overlap
    return less if med_a < med_b else more


def parse_figure(text):
    """A fig marker's body: 'NAME QUERY', or two of them joined by 'minus' or 'over' (a difference
    or a ratio of medians) -> (NAME, query dict). Raises DocsError (2) when bad."""
    words = text.split()
    ops = [w for w in words if w in ("minus", "over")]
    if not ops:
        return parse_query(text)
    if len(ops) > 1:
        raise DocsError("fig %r: one 'minus' or 'over' joins two figures, not more" % text, 2)
    a_text, b_text = (" ".join(side) for side in (words[:words.index(ops[0])], words[words.index(ops[0]) + 1:]))
    (a_name, a_q), (b_name, b_q) = parse_query(a_text), parse_query(b_text)
    return a_name, {"kind": ops[0], "text": text, "a": a_q, "b_name": b_name, "b": b_q}


def parse_query(text):
    """A fig marker's body 'NAME QUERY' -> (NAME, query dict). Raises DocsError (2) when bad."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise DocsError("fig %r: %s" % (text, e), 2)
    if len(words) < 2:
        raise DocsError("fig %r: expected 'NAME QUERY', QUERY one of: %s" % (text, QUERY_HELP), 2)
    name, rest = words[0], words[1:]
    keys, bare = {}, []
    for w in rest:
        if "=" in w:
            k, v = w.split("=", 1)
            if k in keys or not v:
                raise DocsError("fig %r: %s" % (text, "%s= given twice" % k if k in keys else "%s= has no value" % k), 2)
            keys[k] = v
        else:
            bare.append(w)

    def bad(why):
        return DocsError("fig %r: %s; QUERY is one of: %s" % (text, why, QUERY_HELP), 2)

    def only(allowed):
        extra = sorted(set(keys) - set(allowed))
        if extra:
            raise bad("unexpected %s=" % extra[0])
        if "step" in keys and not keys["step"].isdigit():
            raise bad("step=%s is not a non-negative integer" % keys["step"])

    q = {"text": " ".join(rest)}
    if bare[:1] == ["summary"]:
        if len(bare) != 2 or keys:
            raise bad("summary takes one KEY and nothing else")
        if not re.match(r"^[A-Za-z0-9_:.\-]+$", bare[1]) or ".." in bare[1] or bare[1].startswith("."):
            raise bad("summary KEY %r is not a dotted key" % bare[1])
        q.update(kind="summary", key=bare[1])
    elif bare[:1] == ["advise"]:
        if len(bare) != 3 or keys or bare[2] != "saved" or not re.match(r"^[a-z0-9_]+$", bare[1]):
            raise bad("advise takes a cause's key and 'saved'")
        q.update(kind="advise", cause=bare[1], field=bare[2])
    elif bare[:1] == ["ranks"]:
        only(("rank",))
        if len(bare) != 2 or bare[1] not in RANK_FIELDS or not keys.get("rank", "").isdigit():
            raise bad("ranks needs rank=K and one of %s" % "|".join(RANK_FIELDS))
        q.update(kind="ranks", rank=int(keys["rank"]), field=bare[1])
    elif bare == ["gap"]:
        only(("range", "op", "step"))
        if "range" not in keys or "op" not in keys:
            raise bad("gap needs range=R and op=O")
        q.update(kind="gap", range=keys["range"], op=keys["op"], step=int(keys.get("step", 0)))
    elif bare == ["step_time"]:
        only(("step",))
        q.update(kind="step_time", step=int(keys["step"]) if "step" in keys else None)
    elif bare == ["time"] and "range" in keys:
        only(("range", "step"))
        q.update(kind="range_time", range=keys["range"], step=int(keys["step"]) if "step" in keys else None)
    elif "op" in keys and len(bare) == 1 and bare[0] in OP_FIELDS:
        only(("op",))
        q.update(kind="op", op=keys["op"], field=bare[0])
    else:
        raise bad("not understood")
    return name, q


class Skipped(Exception):
    """A lesson run that exited 77: this build or machine lacks what it needs (a compiled variant
    without its package, say); its markers say so instead of failing the page."""


def run(cmd, skip_ok=False):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if skip_ok and r.returncode == 77:
        why = re.search(r"^(?:\[rank\d+\] )?\S+: (--variant .*|--device .*)$", r.stdout, re.M)
        raise Skipped(why.group(1) if why else "skipped (exit 77)")
    if r.returncode != 0:
        raise DocsError("%s exited %d:\n%s%s" % (" ".join(map(shlex.quote, cmd)), r.returncode, r.stdout[-2000:],
                                                r.stderr[-2000:]))
    return r.stdout


def write_whole(path, text):
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # as any file of the checkout, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def verbatim(text):
    return "\\verbatim\n" + text.rstrip("\n") + "\n\\endverbatim\n"


# --- Figures --------------------------------------------------------------------------------------

def number(v, decimals_for_small=True):
    """Three significant figures, as the tables' durations: 1.23, 12.3, 123."""
    a = abs(v)
    d = 0 if a >= 100 else 1 if a >= 10 else 2
    if not decimals_for_small:
        d = 0
    return "%.*f" % (d, v)


def time_unit(ns):
    """The unit the tables would print `ns` in: (divisor, name)."""
    a = abs(ns)
    for div, name in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        # The unit moves up when rounding to three figures reaches 1000 ("999.7 µs" reads "1.00 ms").
        if float(number(a / (div / 1000))) >= 1000:
            return div, name
    return 1, "ns"


def size_unit(b):
    a = abs(b)
    for div, name in ((1024 ** 3, "GB"), (1024 ** 2, "MB"), (1024, "KB")):
        if a >= div:
            return div, name
    return 1, "B"


def median_of(ordered):
    """The median of sorted values: the middle one, or the mean of the two middle ones."""
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def query_runs(name, q):
    """The runs a figure's or a comparison's query reads: its run, and a cmp's, a minus's or an
    over's second."""
    return [name, q["b_name"]] if "b_name" in q else [name]


def format_figure(kind, values):
    """values: one per run. 'median (min–max)' in the kind's unit; the median alone when every
    run rounds to the same text or there is one run."""
    if kind == "text":
        return str(values[len(values) // 2])
    ordered = sorted(values)
    return format_span(kind, median_of(ordered), ordered[0], ordered[-1])


def format_span(kind, med, lo, hi):
    """'med (lo–hi)' in the kind's unit (the median's), or med alone where lo and hi print alike;
    'lo to hi' where one is negative (a difference)."""
    if kind == "ratio":
        f = lambda v: number(v)
        unit = "×"
    elif kind == "pct":
        f = lambda v: "%.0f" % (100 * v)
        unit = "%"
    elif kind == "ns":
        div, unit = time_unit(med)
        f = lambda v: number(v / div) if div > 1 else "%.0f" % v
        unit = " " + unit
    elif kind == "bytes":
        div, unit = size_unit(med)
        f = lambda v: number(v / div) if div > 1 else "%.0f" % v
        unit = " " + unit
    elif kind == "count":
        f = lambda v: "%.0f" % v
        unit = ""
    else:
        f = lambda v: number(v)
        unit = ""
    m, a, b = f(med), f(lo), f(hi)
    if a == b:
        return m + unit
    return "%s%s (%s%s%s%s)" % (m, unit, a, " to " if min(lo, hi) < 0 else "–", b, unit)


def combine_figures(q, runs, a_name):
    """A 'minus' or 'over' figure: the first figure's median less (or over) the second's, in
    brackets the least and most over every pairing of a run of each (the ranges' ends);
    two_figures' errors, and a ratio's of a figure that reaches zero."""
    ka, (lo_a, hi_a, med_a), (lo_b, hi_b, med_b) = two_figures(q, runs, a_name, "fig")
    if q["kind"] == "minus":
        return format_span(ka, med_a - med_b, lo_a - hi_b, hi_a - lo_b)
    if min(lo_a, lo_b) <= 0:
        raise DocsError("fig %r: a ratio of figures that reach zero" % q["text"])
    return format_span("ratio", med_a / med_b, lo_a / hi_b, hi_a / lo_b)


class Reports:
    """pil-trace's JSON reports of one trace, each asked for once."""

    def __init__(self, pil_trace, trace, run_dir=None):
        self.pil_trace, self.trace, self.run_dir, self.cache = pil_trace, trace, run_dir, {}

    def ranks(self):
        """pil-trace ranks --json on the run's folder (a lesson that starts its own ranks)."""
        if "ranks" not in self.cache:
            if not self.run_dir:
                raise DocsError("a ranks figure needs a run of the lesson (its folder of rank traces), not a committed trace")
            try:
                self.cache["ranks"] = json.loads(run([self.pil_trace, "ranks", self.run_dir, "--json"]))
            except ValueError as e:
                raise DocsError("pil-trace ranks --json printed no JSON: %s" % e)
        return self.cache["ranks"]

    def get(self, *args):
        if args not in self.cache:
            out = run([self.pil_trace] + list(args[:1]) + [self.trace] + list(args[1:]) + ["--json"])
            try:
                self.cache[args] = json.loads(out)
            except ValueError as e:
                raise DocsError("pil-trace %s --json printed no JSON: %s" % (args[0], e))
        return self.cache[args]

    def ops(self):
        return self.get("ops")

    def summary(self):
        return self.get("summary")

    def op_row(self, name):
        for row in self.ops()["operators"]:
            if row["name"] == name:
                return row
        raise DocsError("no row named %r in the operator table of %s" % (name, self.trace))

    def steps(self):
        return self.summary()["steps"]

    def step_count(self):
        n = self.steps().get("count", 0)
        if not n:
            raise DocsError("%s has no profiled steps" % self.trace)
        return n

    def instance_in_step(self, rng, step):
        """The instance of range `rng` in profiled step `step`: the ranges must occur once per step."""
        calls, steps = self.op_row(rng)["calls"], self.step_count()
        if calls != steps:
            raise DocsError("range %r occurs %d times in %d profiled steps of %s: step= needs one per step"
                            % (rng, calls, steps, self.trace))
        if step >= steps:
            raise DocsError("step=%d: %s has %d profiled steps (0 to %d)" % (step, self.trace, steps, steps - 1))
        return step


def figure_value(rep, q):
    """(kind, value) of query q on one run's reports."""
    k = q["kind"]
    if k == "op":
        row = rep.op_row(q["op"])
        total = rep.ops()["self_cpu_total_ns"] or 1
        f = q["field"]
        if f == "self_pct":
            return "pct", row["self_cpu_ns"] / total
        if f == "total_pct":
            return "pct", row["cpu_total_ns"] / total
        if f == "calls":
            return "count", row["calls"]
        calls = row["calls"] or 1
        return "ns", (row["self_cpu_ns"] if f == "self_avg" else row["cpu_total_ns"]) / calls
    if k == "step_time":
        steps = rep.steps()
        rep.step_count()
        if q["step"] is None:
            return "ns", steps["median_ns"]
        d = steps["durations_ns"]
        if q["step"] >= len(d):
            raise DocsError("step=%d: %s has %d profiled steps (0 to %d)" % (q["step"], rep.trace, len(d), len(d) - 1))
        return "ns", d[q["step"]]
    if k == "range_time":
        if q["step"] is None:
            return "ns", rep.op_row(q["range"])["cpu_total_ns"] / rep.step_count()
        chain = rep.get("chain", "--range", q["range"], "--instance", str(rep.instance_in_step(q["range"], q["step"])))
        return "ns", chain[0]["dur_ns"]
    if k == "gap":
        chain = rep.get("chain", "--range", q["range"], "--instance", str(rep.instance_in_step(q["range"], q["step"])))
        for line in chain[1:]:
            if not line.get("gpu") and line["name"] == q["op"]:
                return "ns", line["offset_ns"]
        raise DocsError("no %r inside %r in step %d of %s" % (q["op"], q["range"], q["step"], rep.trace))
    if k == "advise":
        advice = rep.get("advise")
        for f in advice.get("findings", []):
            if f.get("cause") == q["cause"]:
                return "ns", f["saved_ns"] / max(1, advice.get("steps") or 1)
        return "ns", None  # not past its threshold in this run (see advise CAUSE saved)
    if k == "ranks":
        # As the table of pil-trace ranks: each column's median over the steps (the upper one for
        # an even count), hidden = median overlap / median communication.
        ranks = rep.ranks()["ranks"]
        if q["rank"] >= len(ranks):
            raise DocsError("rank=%d: %s holds %d ranks" % (q["rank"], rep.run_dir, len(ranks)))
        steps = ranks[q["rank"]]["steps"]
        if not steps:
            raise DocsError("rank %d of %s recorded no steps" % (q["rank"], rep.run_dir))
        med = lambda key: sorted(st[key] for st in steps)[len(steps) // 2]
        f = q["field"]
        if f == "hidden_pct":
            return "pct", med("overlap_ns") / med("comm_ns") if med("comm_ns") else 0.0
        if f == "collectives":
            return "count", med("collectives")
        key = {"step_time": "duration_ns", "compute": "compute_ns", "comm": "comm_ns", "overlap": "overlap_ns",
               "exposed": "exposed_comm_ns"}[f]
        return "ns", med(key)
    if k == "summary":
        v = rep.summary()
        for part in q["key"].split("."):
            if isinstance(v, list) and part.isdigit() and int(part) < len(v):
                v = v[int(part)]
            elif isinstance(v, dict) and part in v:
                v = v[part]
            else:
                raise DocsError("summary key %r: no %r in pil-trace summary --json of %s" % (q["key"], part, rep.trace))
        last = q["key"].rsplit(".", 1)[-1]
        if isinstance(v, str):
            return "text", v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise DocsError("summary key %r is not a number or a name in %s" % (q["key"], rep.trace))
        if last.endswith("_ns"):
            return "ns", v
        if last == "share" or last.endswith("_share"):
            return "pct", v
        if last.endswith("_bytes"):
            return "bytes", v
        return ("count" if isinstance(v, int) else "number"), v
    raise AssertionError(k)


def doxygen_only(line):
    """The first Doxygen-only syntax in a line of prose (outside inline code and comments), or None."""
    m = DOXYGEN_ONLY.search(COMMENT.sub("", INLINE_CODE.sub("", line)))
    return m.group(0) if m else None


def github_text_problems(path):
    """Each line of a markdown file GitHub shows that holds Doxygen-only syntax outside code and
    comments: ["PATH:LINE: SYNTAX"]."""
    problems, in_fence, in_comment = [], False, False
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            if in_comment:  # a comment over several lines: GitHub shows none of it
                if "-->" not in line:
                    continue
                line, in_comment = line.split("-->", 1)[1], False
            line = COMMENT.sub("", line)
            if "<!--" in line:
                line, in_comment = line.split("<!--", 1)[0], True
            found = doxygen_only(line)
            if found:
                problems.append("%s:%d: %s" % (path, n, found))
    return problems


def github_pages(root):
    """Every markdown file of the checkout (GitHub shows each), but the build folders' and the
    lessons' output (/build*, /traces) and hidden folders."""
    out = []
    for d, dirs, files in os.walk(root):
        top = os.path.relpath(d, root) == "."
        dirs[:] = sorted(x for x in dirs if not x.startswith(".")
                         and not (top and (x == "traces" or x == "build" or x.startswith("build-"))))
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".md")]
    return out


# --- Links ----------------------------------------------------------------------------------------

def anchor_of(path):
    """The {#ID} of a markdown page's first heading, or None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#"):
                    m = ANCHOR.search(line)
                    return m.group(1) if m else None
    except OSError:
        return None
    return None


def github_anchor(heading):
    """GitHub's anchor for a heading, as pil-trace advise writes its links: lower case, letters,
    digits, '-' and '_' kept, spaces to '-', the rest dropped."""
    return "".join(c.lower() if c.isalnum() else "-" if c in " -" else "_" if c == "_" else ""
                   for c in heading if c.isascii())


def section_id(path, fragment):
    """The hidden id ({#ID} in a comment) of the heading of page `path` whose GitHub anchor is
    `fragment`: a link to a section refers to it on the site. Raises DocsError without one."""
    try:
        with open(path) as f:
            for line in f:
                if not line.startswith("#"):
                    continue
                title = ANCHOR.sub("", HIDDEN_ANCHOR.sub("", line)).lstrip("#").strip()
                if github_anchor(title) == fragment:
                    m = ANCHOR.search(line)
                    if not m:
                        raise DocsError("link to %s#%s: give that heading a page id (<!-- {#ID} --> at its end) "
                                        "for the site to refer to" % (path, fragment), 2)
                    return m.group(1)
    except OSError:
        pass
    raise DocsError("link to %s#%s: the page has no heading with that GitHub anchor" % (path, fragment), 2)


def nav_line(line, source_dir):
    """A nav line's links to pages of the project as \\ref ID (link text dropped: the site shows
    the page's title, or the section's for a link to one: [..](../01_x/README.md#a-section) refers
    to that heading's id, as a link in prose does)."""
    def ref(m):
        target, _, fragment = m.group(2).partition("#")
        if "://" in target or not target.endswith(".md"):
            raise DocsError("nav: link %r is not to a page of the project (a .md file)" % m.group(2), 2)
        path = os.path.normpath(os.path.join(source_dir, target))
        anchor = section_id(path, fragment) if fragment else anchor_of(path)
        if not anchor:
            raise DocsError("nav: %r has no page id ({#ID} in its first heading) to refer to" % target, 2)
        return "\\ref %s" % anchor
    if not LINK.search(line):
        raise DocsError("nav: the line after <!-- nav --> has no link", 2)
    return LINK.sub(ref, line)


def links(line, source_dir, full_site=False):
    """A prose line's Markdown links to pages of the project ([text](../docs/page.md)) as
    \\ref ID "text" (Doxygen 1.9.4 cannot resolve a Markdown link to a .md page outside the
    generated folder); other links as they are. A link to another lesson's page goes on a nav
    line: a chapter alone does not hold the other lessons; a page of the full site only
    (full_site: the main page, the instructor's pages) links to them in prose."""
    def ref(m):
        target = m.group(2).split("#", 1)[0]
        if "://" in target or not target.endswith(".md") or m.start() > 0 and line[m.start() - 1] == "!":
            return m.group(0)
        path = os.path.normpath(os.path.join(source_dir, target))
        if os.path.basename(path) == "README.md" and not full_site:
            raise DocsError("link %r: a link to a lesson's page goes on a <!-- nav --> line (the site shows it "
                            "only where that page is, a chapter alone does not hold it)" % m.group(2), 2)
        fragment = m.group(2).split("#", 1)[1] if "#" in m.group(2) else ""
        anchor = section_id(path, fragment) if fragment else anchor_of(path)
        if not anchor:
            raise DocsError("link %r: %s has no page id ({#ID} in its first heading) to refer to" % (m.group(2), target), 2)
        if '"' in m.group(1):
            raise DocsError("link %r: a link's text to a page cannot hold '\"'" % m.group(0), 2)
        return '\\ref %s "%s"' % (anchor, m.group(1))
    return LINK.sub(ref, line)


# --- The page -------------------------------------------------------------------------------------

def scan(lines, readme, lesson, root, source, source_dir, full_site=False):
    """Every marker checked and parsed, nothing run: a list of items (kind, line index, data) and
    the runs declared {name: {...}}. lesson and source are None for a page without a lesson
    (docs/cheatsheet.md): its snippets name their file, and it has no runs."""
    items, runs, figs = [], {}, []
    in_details = None
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        where = "%s:%d" % (readme, i + 1)
        try:
            m = MARKER.match(line)
            if m:
                kind, body = m.group(1), m.group(2)
                if kind == "snippet":
                    name, opts = options(body, kind)
                    # from=PATH: a region of another compiled source of the project (the harness's
                    # profiler calls, docs/examples/), PATH relative to the project's root; else the
                    # lesson's main.cpp.
                    src_path, text = "%s/main.cpp" % lesson, source
                    if "from" in opts:
                        src_path = opts["from"]
                        with open(os.path.join(root, src_path)) as f:
                            text = f.read()
                    elif lesson is None:
                        raise DocsError("snippet %s: a page without a lesson names its file: from=PATH" % name, 2)
                    shown, nxt = fenced_block(lines, i + 1)
                    if shown != source_region(text, name, src_path):
                        raise DocsError("snippet %s: the page's copy differs from %s's `%s` region; "
                                        "copy the region into the page" % (name, src_path, snippet_mark(src_path, name)))
                    items.append(("snippet", i, nxt, "\\snippet %s %s" % (src_path, name)))
                    i = nxt
                    continue
                if lesson is None:
                    raise DocsError("a %s marker needs the lesson whose runs it uses (--lesson-dir)" % kind, 2)
                if kind in ("run", "trace"):
                    head, sep, rest = body.partition(":")
                    if not sep:
                        raise DocsError("%s marker: expected '%s: NAME: %s'" % (kind, kind, "FLAGS" if kind == "run" else "PATH"), 2)
                    name, opts = options(head, kind)
                    if name in runs:
                        raise DocsError("run %r is declared twice" % name, 2)
                    runs[name] = {"kind": kind, "arg": rest.strip(), "count": int(opts.get("runs", 1)), "where": where,
                                  "line": line.strip()}
                    if kind == "run":
                        try:
                            shlex.split(rest)
                        except ValueError as e:
                            raise DocsError("run %s: flags: %s" % (name, e), 2)
                    items.append((kind, i, i + 1, name))
                else:
                    name, opts = options(body, kind)
                    # The committed output (--update-source): its made line right after the marker,
                    # then the output, then <!-- /KIND -->. None when there is none.
                    made, nxt = None, i + 1
                    if i + 1 < len(lines) and MADE.match(lines[i + 1]):
                        made = MADE.match(lines[i + 1]).group(1)
                        close = next((k for k in range(i + 2, len(lines)) if CLOSE.match(lines[k])), None)
                        if close is None or CLOSE.match(lines[close]).group(1) != kind:
                            raise DocsError("%s marker: its committed output has no <!-- /%s --> line" % (kind, kind), 2)
                        nxt = close + 1
                    items.append((kind, i, nxt, (name, opts, made, lines[i + 1:nxt])))
                    i = nxt
                    continue
                i += 1
                continue
            if MAYBE_OUTPUT.match(line):
                raise DocsError("%s without the marker whose committed output it ends or names: "
                                "an output goes right after its marker, '<!-- made: ... -->' first" % line.strip(), 2)
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            elif not in_fence:
                found = doxygen_only(line)
                if found:
                    raise DocsError("%r is Doxygen's syntax, which GitHub shows as it is: %s" % (found, DOXYGEN_ONLY_HELP), 2)
            if not in_fence and LINK.search(line):
                links(line, source_dir, full_site)  # checked: the page turns them into \\ref
            if (not in_fence and SPLIT_LINK_START.search(line) and i + 1 < len(lines)
                    and SPLIT_LINK_END.match(lines[i + 1])):
                raise DocsError("line %d: a link to a page runs over two lines (%r ...); the page turns a link "
                                "into \\ref on one line only: keep [text](page.md) on one line" % (i + 1, line.strip()[-40:]), 2)
            if not in_fence and SITE.match(line):
                if i + 1 >= len(lines) or not lines[i + 1].strip():
                    raise DocsError("<!-- site: TEXT --> must be followed by the one markdown line GitHub shows instead", 2)
                text = SITE.match(line).group(1)
                links(text, source_dir, full_site)
                links(lines[i + 1], source_dir, full_site)
                items.append(("site", i, i + 2, text))
                i += 2
                continue
            if NAV.match(line):
                if i + 1 >= len(lines) or not lines[i + 1].strip():
                    raise DocsError("<!-- nav --> must be followed by one markdown line of links", 2)
                if doxygen_only(lines[i + 1]):
                    raise DocsError("%r is Doxygen's syntax, which GitHub shows as it is: %s"
                                    % (doxygen_only(lines[i + 1]), DOXYGEN_ONLY_HELP), 2)
                items.append(("nav", i, i + 2, nav_line(lines[i + 1], source_dir)))
                i += 2
                continue
            if DETAILS_OPEN.match(line):
                if in_details is not None:
                    raise DocsError("<details> inside the <details> of line %d: fold one answer at a time" % (in_details + 1), 2)
                in_details = i
                summary = DETAILS_OPEN.match(line).group(1)
                items.append(("html", i, i + 1, "\\htmlonly[block]<details><summary>%s</summary>\\endhtmlonly" % summary))
                i += 1
                continue
            if DETAILS_CLOSE.match(line):
                if in_details is None:
                    raise DocsError("</details> without a <details><summary>...</summary> line before it", 2)
                in_details = None
                items.append(("html", i, i + 1, "\\htmlonly[block]</details>\\endhtmlonly"))
                i += 1
                continue
            if DETAILS_ANY.search(line):
                raise DocsError("<details> and </details> go on lines of their own: "
                                "'<details><summary>Answer</summary>' ... '</details>'", 2)
            if MAYBE_MARKER.match(line):
                raise DocsError("marker not understood: %s" % line.strip(), 2)
            spans = list(FIG.finditer(line))
            if len(FIG_START.findall(line)) != 2 * len(spans):
                raise DocsError("a fig marker must be '<!-- fig: NAME QUERY -->TEXT<!-- /fig -->' on one line", 2)
            compares = list(CMP.finditer(line))
            if len(CMP_START.findall(line)) != 2 * len(compares):
                raise DocsError("a cmp marker must be '<!-- cmp: NAME QUERY vs NAME QUERY | LESS | OVERLAP | MORE "
                                "-->TEXT<!-- /cmp -->' on one line", 2)
            if spans or compares:
                parsed = []
                for s in spans:
                    name, q = parse_figure(s.group(1))
                    parsed.append((s, name, q))
                    figs.extend((where, n) for n in query_runs(name, q))
                for s in compares:
                    name, q = parse_compare(s.group(1), s.group(2))
                    parsed.append((s, name, q))
                    figs.extend((where, n) for n in query_runs(name, q))
                parsed.sort(key=lambda p: p[0].start())
                items.append(("figs", i, i + 1, parsed))
        except DocsError as e:
            raise DocsError("%s: %s" % (where, e), e.code)
        i += 1
    if in_details is not None:
        raise DocsError("%s:%d: <details> without its </details>" % (readme, in_details + 1), 2)
    for kind, i, _, data in items:
        name = data[0] if kind in OUTPUT_KINDS else None
        if name is not None and name not in runs:
            raise DocsError("%s:%d: %s marker names run %r, which no run or trace marker declares"
                            % (readme, i + 1, kind, name), 2)
    for where, name in figs:
        if name not in runs:
            raise DocsError("%s: fig marker names run %r, which no run or trace marker declares" % (where, name), 2)
    return items, runs


def median_index(values):
    """The index of the median of values (the lower middle one for an even count)."""
    order = sorted(range(len(values)), key=lambda k: values[k])
    return order[(len(order) - 1) // 2]


def do_runs(args, runs, lesson, prefix):
    """Runs each run marker's lesson N times; fills in traces, the median run and the machine."""
    machine = None
    for name, r in runs.items():
        if r["kind"] == "trace":
            path = os.path.join(args.root, r["arg"])
            if not r["arg"] or not os.path.isfile(path):
                raise DocsError("%s: trace %s: no such file %r" % (r["where"], name, r["arg"]), 2)
            r.update(traces=[path], median=0, cmd=r["arg"])
            continue
        run_dir = os.path.join(args.out_dir, "runs", name if prefix == lesson else "%s_%s" % (prefix, name))
        # A fresh folder: traces of an earlier build with other flags (other file names) would be
        # read again by the ranks marker, which reads every trace of the folder.
        shutil.rmtree(run_dir, ignore_errors=True)
        traces, dirs = [], []
        for k in range(r["count"]):
            d = run_dir if r["count"] == 1 else os.path.join(run_dir, "run%d" % (k + 1))
            cmd = [args.exe, "--device", "cpu", "--seed", "0", "--out", d] + shlex.split(r["arg"])
            try:
                text = run(cmd, skip_ok=True)
            except Skipped as e:
                r["skipped"] = str(e)
                break
            except DocsError as e:
                raise DocsError("%s: run %s: %s" % (r["where"], name, e))
            # A lesson that starts its own ranks prefixes each rank's lines with "[rankK] ": rank
            # 0's trace is the run's (whichever rank printed its path first: rank 1's usually
            # does, rank 0 printing the across-ranks table before its own), by which the median
            # run is chosen; the ranks marker reads them all.
            trace = re.search(r"^(?:\[rank\d+\] )?trace: (.*)$", text, re.M)
            if not trace:
                raise DocsError("%s: run %s printed no 'trace:' line" % (r["where"], name))
            head = re.search(r"^(?:\[rank\d+\] )?== .*\| cpu \((.*?)\) \|", text, re.M)
            machine = machine or (head.group(1) if head else None)
            rank0 = re.sub(r"_rank\d+(\.pt\.trace\.json)$", r"_rank0\1", trace.group(1))
            traces.append(rank0 if os.path.isfile(rank0) else trace.group(1))
            dirs.append(d)
        r.update(traces=traces, dirs=dirs, cmd="build/bin/%s %s" % (lesson, r["arg"]))
        if "skipped" in r:
            r.update(traces=[], dirs=[], reports=[], median=0)
            continue
        r["reports"] = [Reports(args.pil_trace, t, d) for t, d in zip(traces, dirs)]
        if len(traces) > 1:
            medians = [rep.summary()["steps"].get("median_ns", 0) for rep in r["reports"]]
            r["median"] = median_index(medians)
        else:
            r["median"] = 0
    for r in runs.values():
        r.setdefault("reports", [Reports(args.pil_trace, t) for t in r["traces"]])
    return machine


def fill_figures(line, figs, runs, keep_markers):
    """A prose line with each fig marker's figure computed from its runs: the whole marker replaced
    (the page), or only the text between its two comments (the source, --update-source). Returns
    the line and [(the runs it read, query, figure shown)]."""
    group = 2 if keep_markers else 0
    text, pos, shown = "", 0, []
    for span, name, q in figs:
        names = query_runs(name, q)
        if any("skipped" in runs[n] for n in names):  # the source keeps what it had; the page says why not
            value = span.group(2) if keep_markers else "(not run in this build)"
        elif q["kind"] == "cmp":
            value = compare_figures(q, runs, name)
        elif q["kind"] in ("minus", "over"):
            value = combine_figures(q, runs, name)
        else:
            values = [figure_value(rep, q) for rep in runs[name]["reports"]]
            present = [v for _, v in values if v is not None]
            if not present:
                value = "not named in these runs"
            else:
                value = format_figure(values[0][0], present)
                if len(present) < len(values):
                    value += " (named in %d of %d runs)" % (len(present), len(values))
        shown.append((names, q, value))
        text += line[pos:span.start(group)] + value
        pos = span.end(group)
    return text + line[pos:], shown


def read_page(args):
    """The page's source, read and its markers checked: (lesson, source path, picture prefix,
    lines, items, runs)."""
    lesson = os.path.basename(os.path.normpath(args.lesson_dir)) if args.lesson_dir else None
    readme = args.source or os.path.join(args.lesson_dir, "README.md")
    # Pictures of another page take its stem as their prefix, so they never collide with the lesson's.
    prefix = lesson if not args.source else os.path.splitext(os.path.basename(readme))[0]
    with open(readme) as f:
        lines = f.read().splitlines()
    source = None
    if lesson:
        with open(os.path.join(args.lesson_dir, "main.cpp")) as f:
            source = f.read()
    # Snippets' from= paths start at the project's root: the lesson's parent folder, or --root.
    root = os.path.join(args.lesson_dir, os.pardir) if lesson else args.root
    items, runs = scan(lines, readme, lesson, root, source, os.path.dirname(os.path.abspath(readme)),
                       args.full_site)
    return lesson, readme, prefix, lines, items, runs


def model_files(lesson_dir):
    """The shared model sources the lesson's main.cpp includes, from the project's root, sorted:
    ("common/models/transformer_block.h", "common/models/transformer_block.cpp") for lesson 04. A
    lesson that includes none hashes as before."""
    try:
        with open(os.path.join(lesson_dir, "main.cpp")) as f:
            stems = sorted(set(MODEL_INCLUDE.findall(f.read())))
    except FileNotFoundError:
        return ()
    return tuple("common/%s%s" % (stem, ext) for stem in stems for ext in (".h", ".cpp"))


def made_hash(args, marker_line, r):
    """What a committed output was made from, hashed (the first 16 hex digits of a sha256): the
    marker's line, its run marker's line (the flags and the number of runs) and the files the run
    depends on: the lesson's HASHED_LESSON and the project's HASHED_COMMON, or a trace marker's
    committed trace. File contents, never dates."""
    parts = [" ".join(marker_line.split()), " ".join(r["line"].split())]
    if r["kind"] == "trace":
        files = [(r["arg"], os.path.join(args.root, r["arg"]))]
    else:
        lesson = os.path.basename(os.path.normpath(args.lesson_dir))
        files = [("%s/%s" % (lesson, f), os.path.join(args.lesson_dir, f)) for f in HASHED_LESSON]
        files += [(f, os.path.join(args.lesson_dir, os.pardir, f)) for f in HASHED_COMMON + model_files(args.lesson_dir)]
    for name, path in files:
        try:
            with open(path, "rb") as f:
                parts.append("%s %s" % (name, hashlib.sha256(f.read()).hexdigest()))
        except FileNotFoundError:
            parts.append("%s absent" % name)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def output_problem(args, lines, item, runs, source_dir):
    """Why a marker's committed output is not this marker's (None when it is)."""
    kind, i, _, (name, opts, made, block) = item
    if made is None:
        return "no committed output"
    want = made_hash(args, lines[i], runs[name])
    if made != want:
        return ("its committed output was made from another version of the marker, its run's flags or the "
                "lesson's code (sha256=%s, now %s)" % (made, want))
    for picture in IMAGE.findall("\n".join(block)):
        if not os.path.isfile(os.path.join(source_dir, picture)):
            raise DocsError("its committed picture %s is missing" % picture)
    return None


def check_outputs(args, readme, lines, items, runs):
    """--check: every output marker has its committed output, made from this marker, its run's flags
    and the lesson's code as they are now. Raises DocsError (1) naming the first that has not."""
    source_dir = os.path.dirname(os.path.abspath(readme))
    for item in items:
        if item[0] in OUTPUT_KINDS:
            try:
                why = output_problem(args, lines, item, runs, source_dir)
            except DocsError as e:
                why = str(e)
            if why:
                raise DocsError("%s:%d: %s %s: %s; run docs_page.py --update-source"
                                % (readme, item[1] + 1, item[0], item[3][0], why))


def produce(args, kind, name, opts, r, lesson, prefix):
    """An output marker's output from its run's median trace, drawn by pil-trace into args.out_dir:
    a list of ("text", TEXT, CAPTION or None) and ("picture", SVG NAME, CAPTION)."""
    trace = r["traces"][r["median"]]
    n_runs = len(r["traces"])
    of_median = (" (the median run of %d)" % n_runs) if n_runs > 1 else ""
    if kind == "timeline":
        window_name = ("range_" + re.sub(r"[^A-Za-z0-9_]+", "_", opts["range"]) if "range" in opts
                       else "us%s_%s" % (opts["from-us"], opts["to-us"]) if "from-us" in opts
                       else "step%s" % opts.get("step", "0"))
        window_name = window_name.replace(".", "_")
        marks = opts.get("mark", [])
        if marks:
            window_name += "_" + "_".join(re.sub(r"[^A-Za-z0-9_]+", "_", m) for m in marks)
        svg_name = "%s_%s_%s.svg" % (prefix, name, window_name)
        window = (["--range", opts["range"]] if "range" in opts
                  else ["--from-us", opts["from-us"], "--to-us", opts["to-us"]] if "from-us" in opts
                  else ["--step", opts.get("step", "0")])
        for m in marks:
            window += ["--mark", m]
        title = ("%s: %s (CPU)" % (lesson, r["cmd"]) if r["kind"] == "run"
                 else "committed trace %s" % r["cmd"])
        run([args.pil_trace, "svg", trace, "--out", os.path.join(args.out_dir, svg_name), "--title", title,
             "--width", "900"] + window)
        what = ("range " + opts["range"] if "range" in opts
                else "%s–%s µs from its first step" % (opts["from-us"], opts["to-us"]) if "from-us" in opts
                else "step " + opts.get("step", "0"))
        if n_runs > 1:
            what += " of the median run of %d" % n_runs
        if marks:
            what += "; %s at %s" % ("an arrow" if len(marks) == 1 else "arrows", ", ".join(marks))
        return [("picture", svg_name, "Timeline of `%s` (%s)" % (r["cmd"], what))]
    if kind == "table":
        return [("text", run([args.pil_trace, "ops", trace, "--row-limit", opts.get("rows", "12")]),
                 "The operator table of `%s`%s" % (r["cmd"], of_median))]
    if kind == "summary":
        return [("text", run([args.pil_trace, "summary", trace]), None)]
    if kind == "advise":
        # The trace as the reader's run names it, in the header and in any command that reads it,
        # and pil-trace as the page runs it (a command that reads the trace names the program as
        # it was run: this build's path).
        text = run([args.pil_trace, "advise", trace]).replace(args.pil_trace + " ", "build/bin/pil-trace ")
        text = text.replace(trace, "traces/%s/%s" % (lesson, os.path.basename(trace)))
        return [("text", text, "What `pil-trace advise` says on `%s`%s" % (r["cmd"], of_median))]
    if "dirs" not in r:
        raise DocsError("ranks marker: %s is a committed trace, not a run of the lesson's ranks" % name, 2)
    svg_name = "%s_%s_ranks%s.svg" % (prefix, name, "_step" + opts["step"] if "step" in opts else "")
    cmd = [args.pil_trace, "ranks", r["dirs"][r["median"]], "--svg", os.path.join(args.out_dir, svg_name),
           "--title", "%s: %s (CPU)" % (lesson, r["cmd"])]
    if "step" in opts:
        cmd += ["--step", opts["step"]]
    table = [l for l in run(cmd).splitlines() if not l.startswith("svg: ")]
    return [("text", "\n".join(table) + "\n", "The ranks of `%s`%s side by side" % (r["cmd"], of_median)),
            ("picture", svg_name, "The ranks of `%s`, one lane each (%s)"
             % (r["cmd"], "step " + opts["step"] if "step" in opts else "every step"))]


def drop_run_traces(args, runs):
    """Once the page is written, the runs' trace files go: every build makes its runs again, and
    lesson 06's alone come to some 600 MB (the runs' tables, summaries and output stay). Only files
    under OUT/runs, never a committed trace a trace marker names."""
    top = os.path.realpath(os.path.join(args.out_dir, "runs"))
    for r in runs.values():
        if r["kind"] != "run":
            continue
        for d in r.get("dirs", []):
            for name in os.listdir(d) if os.path.isdir(d) else []:
                path = os.path.join(d, name)
                if (name.endswith(".pt.trace.json") or path in r["traces"]) and \
                        os.path.realpath(path).startswith(top + os.sep):
                    os.remove(path)


def make_page(args):
    """Makes the page; returns its runs (None with --check)."""
    lesson, readme, prefix, lines, items, runs = read_page(args)
    if args.check:
        if not args.skip_outputs:
            check_outputs(args, readme, lines, items, runs)
        return None
    machine = None
    if runs:
        os.makedirs(args.out_dir, exist_ok=True)
        machine = do_runs(args, runs, lesson, prefix)

    out = []
    at = {it[1]: it for it in items}
    used_figs, used_traces = set(), set()
    source_dir = os.path.dirname(os.path.abspath(readme))
    in_fence = False
    i = 0
    while i < len(lines):
        it = at.get(i)
        if it is None:
            line = lines[i]
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
            elif not in_fence:
                # What GitHub must not show, for Doxygen: a heading's page id, links to pages as \\ref.
                if line.startswith("#"):
                    line = HIDDEN_ANCHOR.sub(r"\1", line)
                line = links(line, source_dir, args.full_site)
            out.append(line)
            i += 1
            continue
        kind, _, nxt, data = it
        where = "%s:%d" % (readme, i + 1)
        i = nxt
        try:
            if kind in ("snippet", "nav", "html", "site"):
                if kind == "nav":
                    out.extend(["\\if full_site", data, "\\endif"])
                elif kind == "site":
                    out.append(links(data, source_dir, args.full_site))
                else:
                    out.append(data)
            elif kind in ("run", "trace"):
                pass
            elif kind == "figs":
                text, shown = fill_figures(lines[it[1]], data, runs, keep_markers=False)
                used_figs.update(n for names, _, _ in shown for n in names)
                out.append(links(text, source_dir, args.full_site))
            else:
                name, opts = data[:2]
                r = runs[name]
                if "skipped" in r:
                    out.append("<em>Not run in this build (`%s`): %s</em>\n" % (r["cmd"], r["skipped"]))
                    continue
                used_traces.add(name)
                for part, body, what in produce(args, kind, name, opts, r, lesson, prefix):
                    if part == "text":
                        out.append(verbatim(body))
                        if what:
                            out.append("<em>%s, generated at build time by pil-trace %s.</em>\n"
                                       % (what, "ops" if kind == "table" else kind))
                    else:
                        out.append("\\image html %s \"%s, generated at build time by pil-trace %s\""
                                   % (body, what, "svg" if kind == "timeline" else "ranks --svg"))
        except DocsError as e:
            raise DocsError("%s: %s" % (where, e), e.code)
    # The theme's interactive table of contents works on Doxygen's [TOC], right under the title.
    title = next((k for k, l in enumerate(out) if l.startswith("# ")), None)
    if title is not None and "[TOC]" not in out:
        out[title + 1:title + 1] = ["", "[TOC]"]
    if lesson is None:  # a page of its own: no lesson's runs to name
        write_whole(args.page, "\n".join(out) + "\n")
        return runs
    out.append("")
    out.append("See also: \\ref cheatsheet (what you see in a trace, and what it usually means) and "
               "\\ref pil_trace (the analyzer).")
    ran = [n for n, r in runs.items() if r["kind"] == "run"]
    drawn = [n for n, r in runs.items() if r["kind"] == "trace" and n in used_traces]
    if drawn:
        out.append("")
        out.append("<em>Committed traces drawn or tabled on this page (not runs of the lesson): %s.</em>"
                   % ", ".join("`%s` from %s" % (n, runs[n]["arg"]) for n in drawn))
    where = machine or "the CPU"
    if ran:
        out.append("")
        text = ("<em>The pictures and tables of this page were generated when the documentation was built, "
                "from traces of the lesson run then on %s" % where)
        multi = [n for n in ran if runs[n]["count"] > 1]
        if multi:
            text += ("; a run made several times shows its median run (by median step time)")
        text += ".</em>"
        out.append(text)
    counts = sorted({runs[n]["count"] for n in used_figs if runs[n]["kind"] == "run"})
    if counts:
        named = ", ".join("`%s`" % n for n in runs if n in used_figs and runs[n]["kind"] == "run")
        over = ("%d runs" % counts[0]) if len(counts) == 1 else "the runs its marker asks for"
        out.append("")
        out.append("<em>Figures in the text: median (range) over %s of each named run (%s), on %s.</em>"
                   % (over, named, where))
    committed = [n for n in runs if n in used_figs and runs[n]["kind"] == "trace"]
    if committed:
        out.append("")
        out.append("<em>Figures from committed traces: %s.</em>"
                   % ", ".join("`%s` from %s" % (n, runs[n]["arg"]) for n in committed))
    write_whole(args.page, "\n".join(out) + "\n")
    return runs


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def update_source(args):
    """Writes one reference run into the source (the text GitHub shows): the figures into its fig
    markers, and each output marker's output between the marker and its closing line (tables as
    text, pictures as SVG files in the folder beside the page: DIR/docs for a lesson's README,
    img/ beside another source), each with the hash of what made it and a line naming the run,
    the machine, its load and the date. Every run the figures and outputs name runs once, so they
    all come from the same runs. Prints each figure. For a maintainer: the built page runs its own."""
    lesson, readme, prefix, lines, items, runs = read_page(args)
    # --only KINDS: only those output markers are made again (from their own runs); the rest of
    # the page, its figures included, keeps what it had.
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= set(OUTPUT_KINDS):
        raise DocsError("--only %s: the output markers are %s" % (args.only, ", ".join(OUTPUT_KINDS)), 2)
    updated = lambda kind: kind in OUTPUT_KINDS if only is None else kind in only
    used = set() if only else {n for kind, _, _, data in items if kind == "figs" for (_, name, q) in data
                               for n in query_runs(name, q)}
    used |= {data[0] for kind, _, _, data in items if updated(kind)}
    runs = {n: r for n, r in runs.items() if n in used}
    os.makedirs(args.out_dir, exist_ok=True)
    load = os.getloadavg()[0]
    machine = do_runs(args, runs, lesson, prefix)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    # The threads asked of the runs, part of the command named (an idle machine's runs need none).
    env = "".join("%s=%s " % (k, os.environ[k]) for k in THREAD_VARIABLES if k in os.environ)
    on = "on %s (%d cores%s; load average %.1f when the runs began), %s" % (
        machine or "this machine's CPU", os.cpu_count() or 1, "; " + args.conditions if args.conditions else "",
        load, date)
    print("machine: %s" % on)
    source_dir = os.path.dirname(os.path.abspath(readme))
    folder = "docs" if not args.source else "img"
    old_pictures, out, pictures, pos = set(), [], {}, 0
    for kind, i, nxt, data in sorted(items, key=lambda it: it[1]):
        out.extend(lines[pos:i])
        pos = nxt
        if kind == "figs" and only:
            out.extend(lines[i:nxt])
            continue
        if kind == "figs":
            line, shown = fill_figures(lines[i], data, runs, keep_markers=True)
            out.append(line)
            for names, q, value in shown:
                print("%-12s %-50s %s" % (names[0], q["text"], value))
            continue
        if not updated(kind):
            out.extend(lines[i:nxt])
            continue
        name, opts, made, block = data
        r = runs[name]
        old_pictures.update(IMAGE.findall("\n".join(block)))
        if "skipped" in r:  # keeps what it had
            print("%s:%d: %s %s: not run here (%s): its committed output kept" % (readme, i + 1, kind, name, r["skipped"]),
                  file=sys.stderr)
            out.extend(lines[i:nxt])
            continue
        what = ("the committed trace %s" % r["arg"] if r["kind"] == "trace" else
                "`%sbuild/bin/%s --device cpu --seed 0 %s`%s" % (env, lesson, r["arg"], " (of %d runs, the one with the median step time)"
                                                                 % len(r["traces"]) if len(r["traces"]) > 1 else ""))
        out.append(lines[i])
        out.append("<!-- made: sha256=%s -->" % made_hash(args, lines[i], r))
        for part, body, caption in produce(args, kind, name, opts, r, lesson, prefix):
            if part == "text":
                # Each line without its trailing blanks (the table pads its last column): what
                # GitHub shows is the same, and the source stays clean for `git diff --check`.
                out.extend(["```text"] + [l.rstrip() for l in body.rstrip("\n").splitlines()] + ["```"])
            else:
                rel = "%s/%s" % (folder, body)
                pictures[rel] = os.path.join(args.out_dir, body)
                out.extend(["![%s](%s)" % (caption.replace("`", ""), rel), ""])  # the line below its own paragraph
        # A table is cut to its first rows (the run's own table has up to --row-limit, 15): said.
        rows = (" The table's first %s rows (`pil-trace ops --row-limit %s` on its trace; the run prints up to 15)."
                % (opts.get("rows", "12"), opts.get("rows", "12")) if kind == "table" else "")
        out.append("*Reference run committed with this page: %s, %s.%s The built site shows its own runs.*"
                   % (what, on, rows))
        out.append("<!-- /%s -->" % kind)
    out.extend(lines[pos:])
    for rel, made_at in pictures.items():
        with open(made_at) as f:
            write_whole(os.path.join(source_dir, rel), f.read())
    write_whole(readme, "\n".join(out) + "\n")
    shown = set(IMAGE.findall("\n".join(out)))
    for rel in old_pictures - shown:
        if rel.startswith(folder + "/") and os.path.isfile(os.path.join(source_dir, rel)):
            os.unlink(os.path.join(source_dir, rel))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lesson-dir", help="the lesson whose code and runs the page uses (none for a page of its own, "
                                        "with --source)")
    p.add_argument("--source", help="the markdown page to make (default: the lesson's README.md)")
    p.add_argument("--full-site", action="store_true",
                   help="the page is in the full site only (the main page, the instructor's pages): its prose "
                        "may link to the lessons' pages")
    p.add_argument("--github-text", nargs="*", metavar="PAGE",
                   help="only check that the markdown GitHub shows (these files; none named: every .md of --root "
                        "but the build folders and traces/) holds no Doxygen-only syntax outside code")
    p.add_argument("--only", help="with --update-source: only these output markers (comma-separated kinds, "
                   "e.g. advise), from their own runs; the rest of the page is kept")
    p.add_argument("--check", action="store_true",
                   help="only check the markers (snippets, fig queries, details, nav): no runs, no output")
    p.add_argument("--exe")
    p.add_argument("--pil-trace")
    p.add_argument("--out-dir")
    p.add_argument("--page")
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="the project root, for trace markers' and snippets' from= paths (default: this script's project)")
    p.add_argument("--update-source", action="store_true",
                   help="write one reference run's figures and outputs into the source (the text GitHub "
                        "shows) instead of making a page; needs --exe, --pil-trace, --out-dir")
    p.add_argument("--skip-outputs", action="store_true",
                   help="with --check: do not ask for committed outputs (a page whose outputs are not "
                        "committed yet)")
    p.add_argument("--conditions",
                   help="with --update-source: how loaded the machine was, in words, named beside it in each "
                        "committed output (the load average is named anyway)")
    args = p.parse_args()
    if args.github_text is not None:
        problems = []
        for page in args.github_text or github_pages(args.root):
            try:
                problems += github_text_problems(page)
            except OSError as e:
                print("docs_page.py: error: %s" % e, file=sys.stderr)
                return 2
            except UnicodeDecodeError:
                print("docs_page.py: error: %s: not UTF-8 text; allowed: markdown pages" % page, file=sys.stderr)
                return 2
        for x in problems:
            print("docs_page.py: %s: Doxygen's syntax, which GitHub shows as it is" % x, file=sys.stderr)
        if problems:
            print("docs_page.py: %s" % DOXYGEN_ONLY_HELP, file=sys.stderr)
        return 1 if problems else 0
    if not args.lesson_dir and not args.source:
        p.error("--lesson-dir, --source or both are needed")
    if args.update_source and not args.lesson_dir:
        p.error("--update-source needs --lesson-dir (the runs it writes in are the lesson's)")
    if not args.lesson_dir and not args.check and not args.page:
        p.error("--page is needed unless --check")
    elif args.update_source:
        if not (args.exe and args.pil_trace and args.out_dir):
            p.error("--update-source needs --exe, --pil-trace and --out-dir")
    elif args.lesson_dir and not args.check and not (args.exe and args.pil_trace and args.out_dir and args.page):
        p.error("--exe, --pil-trace, --out-dir and --page are needed unless --check")
    try:
        if args.update_source:
            update_source(args)
            return 0
        runs = make_page(args)
        if runs:
            drop_run_traces(args, runs)
    except DocsError as e:
        print("docs_page.py: error: %s" % e, file=sys.stderr)
        return e.code
    except OSError as e:
        print("docs_page.py: error: %s" % e, file=sys.stderr)
        return 2
    except UnicodeDecodeError as e:
        print("docs_page.py: error: a page or file it reads is not UTF-8 text (%s); allowed: markdown pages"
              % e.reason, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
