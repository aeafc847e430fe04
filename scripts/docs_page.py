#!/usr/bin/env python3
"""A lesson's Doxygen page, made from its README.md at build time.

The README is the one source of a lesson's page. It reads well on its own (GitHub shows it) and
carries markers, HTML comments that GitHub does not show, which this script turns into Doxygen:

  <!-- snippet: NAME [from=PATH] -->  the fenced code block right after it becomes
                                \\snippet LESSON/main.cpp NAME: the code between the two
                                `// [NAME]` lines of main.cpp (of PATH, from the project's root,
                                with from=), so the page shows the code that runs. The README's copy must equal it (checked: --check).
  <!-- run: NAME: FLAGS -->     runs the lesson on the CPU with FLAGS (into the build tree) for
                                the markers below; nothing is shown
  <!-- trace: NAME: PATH -->    names a committed trace (PATH from the project root: a GPU
                                fixture captured on the GPU machine) for the markers below
  <!-- timeline: NAME [step=K] [range=R] -->
                                a timeline picture of that run's trace (pil-trace svg)
  <!-- table: NAME [rows=N] --> its operator table (pil-trace ops)
  <!-- summary: NAME -->        what its trace says (pil-trace summary)

  docs_page.py --lesson-dir DIR --exe LESSON_EXE --pil-trace PIL_TRACE --out-dir OUT --page PAGE
  docs_page.py --lesson-dir DIR --check        only check the snippets (no runs, no output)

Exit codes: 0 done, 1 a snippet differs from the source or a run failed, 2 bad usage or a bad
marker. Every file is written whole or not at all.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

MARKER = re.compile(r"^<!--\s*(snippet|run|trace|timeline|table|summary):\s*(.*?)\s*-->\s*$")


class DocsError(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def source_region(source_text, name):
    """The lines between the two `[name]` marker lines, dedented, trailing spaces dropped."""
    lines = source_text.splitlines()
    marks = [i for i, l in enumerate(lines) if l.strip() == "// [%s]" % name]
    if len(marks) != 2:
        raise DocsError("snippet %s: expected two '// [%s]' lines in the source, found %d" % (name, name, len(marks)), 2)
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


def options(text):
    """'NAME key=value ...' -> (NAME, {key: value})."""
    parts = text.split()
    if not parts:
        raise DocsError("empty marker", 2)
    opts = {}
    for p in parts[1:]:
        if "=" not in p:
            raise DocsError("marker option %r is not key=value" % p, 2)
        k, v = p.split("=", 1)
        opts[k] = v
    return parts[0], opts


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
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
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def verbatim(text):
    return "\\verbatim\n" + text.rstrip("\n") + "\n\\endverbatim\n"


def make_page(args):
    lesson = os.path.basename(os.path.normpath(args.lesson_dir))
    readme = os.path.join(args.lesson_dir, "README.md")
    with open(readme) as f:
        lines = f.read().splitlines()
    with open(os.path.join(args.lesson_dir, "main.cpp")) as f:
        source = f.read()

    if not args.check:
        os.makedirs(args.out_dir, exist_ok=True)
    out, runs, machine = [], {}, None
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        kind, body = m.group(1), m.group(2)
        where = "%s:%d" % (readme, i + 1)
        try:
            if kind == "snippet":
                name, opts = options(body)
                # from=PATH: a region of another compiled source of the project (the harness's
                # profiler calls), PATH relative to the project's root; else the lesson's main.cpp.
                src_path, text = "%s/main.cpp" % lesson, source
                if "from" in opts:
                    src_path = opts["from"]
                    with open(os.path.join(args.lesson_dir, os.pardir, src_path)) as f:
                        text = f.read()
                shown, i = fenced_block(lines, i + 1)
                if shown != source_region(text, name):
                    raise DocsError("snippet %s: the README's copy differs from %s's `// [%s]` region; "
                                    "copy the region into the README" % (name, src_path, name))
                out.append("\\snippet %s %s" % (src_path, name))
                continue
            i += 1
            if args.check:
                continue
            if kind == "run":
                name, _, flags = body.partition(":")
                name = name.strip()
                run_dir = os.path.join(args.out_dir, "runs", name)
                cmd = [args.exe, "--device", "cpu", "--seed", "0", "--out", run_dir] + shlex.split(flags)
                text = run(cmd)
                trace = re.search(r"^trace: (.*)$", text, re.M)
                if not trace:
                    raise DocsError("run %s printed no 'trace:' line" % name)
                head = re.search(r"^== .*\| cpu \((.*?)\) \|", text, re.M)
                machine = machine or (head.group(1) if head else "this machine's CPU")
                runs[name] = {"trace": trace.group(1), "cmd": "build/bin/%s %s" % (lesson, flags.strip())}
                continue
            if kind == "trace":
                name, _, rel = body.partition(":")
                path = os.path.join(args.root, rel.strip())
                if not rel.strip() or not os.path.isfile(path):
                    raise DocsError("trace %s: no such file %r" % (name.strip(), rel.strip()), 2)
                runs[name.strip()] = {"trace": path, "cmd": rel.strip()}
                continue
            name, opts = options(body)
            if name not in runs:
                raise DocsError("%s marker names run %r, which no earlier run marker declares" % (kind, name), 2)
            r = runs[name]
            if kind == "timeline":
                window_name = ("range_" + re.sub(r"[^A-Za-z0-9_]+", "_", opts["range"]) if "range" in opts
                               else "step%s" % opts.get("step", "0"))
                svg_name = "%s_%s_%s.svg" % (lesson, name, window_name)
                window = ["--range", opts["range"]] if "range" in opts else ["--step", opts.get("step", "0")]
                title = "%s: %s%s" % (lesson, r["cmd"], " (CPU)" if r["cmd"].startswith("build/") else "")
                run([args.pil_trace, "svg", r["trace"], "--out", os.path.join(args.out_dir, svg_name), "--title", title,
                     "--width", "900"] + window)
                out.append("\\image html %s \"Timeline of `%s` (%s), generated at build time by pil-trace svg\""
                           % (svg_name, r["cmd"], "range " + opts["range"] if "range" in opts else "step " + opts.get("step", "0")))
            elif kind == "table":
                out.append(verbatim(run([args.pil_trace, "ops", r["trace"], "--row-limit", opts.get("rows", "12")])))
                out.append("<em>The operator table of `%s`, generated at build time by pil-trace ops.</em>\n" % r["cmd"])
            elif kind == "summary":
                out.append(verbatim(run([args.pil_trace, "summary", r["trace"]])))
        except DocsError as e:
            raise DocsError("%s: %s" % (where, e), e.code)
    if args.check:
        return
    out.append("")
    out.append("See also: \\ref cheatsheet (what you see in a trace, and what it usually means) and "
               "\\ref pil_trace (the analyzer).")
    if runs:
        out.append("")
        out.append("<em>The pictures and tables of this page were generated when the documentation was built, "
                   "from traces of the lesson run then on %s; the figures in the text come from the runs named "
                   "there.</em>" % (machine or "the CPU"))
    write_whole(args.page, "\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lesson-dir", required=True)
    p.add_argument("--check", action="store_true", help="only check that the README's snippets equal the source")
    p.add_argument("--exe")
    p.add_argument("--pil-trace")
    p.add_argument("--out-dir")
    p.add_argument("--page")
    p.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                   help="the project root, for trace markers' paths (default: this script's project)")
    args = p.parse_args()
    if not args.check and not (args.exe and args.pil_trace and args.out_dir and args.page):
        p.error("--exe, --pil-trace, --out-dir and --page are needed unless --check")
    try:
        make_page(args)
    except DocsError as e:
        print("docs_page.py: error: %s" % e, file=sys.stderr)
        return e.code
    except OSError as e:
        print("docs_page.py: error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
