#!/usr/bin/env python3
"""Every shell command a page shows runs as written (a page is a program).

Reads the fenced ```sh blocks of each page, in the page's order, and runs each block with bash
(-e -u -o pipefail) from the checkout's root, where a reader runs them, on the build the pages'
path makes (./run-lesson and ./run-tests configure and build `build/`), each page starting with
no `traces/` folder, so a page stands on the commands it shows. A block must exit 0 (or the code
its marker gives) and print the line its marker expects. A comment on the line before a block
says what it is:

  <!-- sh: expect TEXT -->          run it; TEXT must appear in a line of what it prints
  <!-- sh: expect TEXT exit=N -->   the same, exit code N
  <!-- sh: gpu REASON -->           needs a GPU: skipped without one (--gpu runs it)
  <!-- sh: placeholder REASON -->   names the reader's own files, LibTorch or prediction: never run here
  <!-- sh: slow REASON -->          minutes: run with --slow
  <!-- sh: self REASON -->          the project's own test commands (./run-tests, presets)

A block without a marker is an error: every command either runs or says why it does not. So is
a page whose commands use `build/` before one of its blocks makes it (`./run-lesson LESSON`,
`./run-tests` or `cmake --preset`; a placeholder's command counts, as the reader runs it with
their own value): a reader who starts the page on a fresh clone has no `build/` yet, though
this script, running the pages one after another on one build, would not notice.

  page_commands.py --root DIR [--page PAGE]... [--slow] [--gpu] [--list]

It makes and removes `traces/` in the checkout, and refuses to start where a `traces/` it did not
make is there (move yours away first).

Exit codes: 0 every block ran as its marker says, 1 one did not, 2 bad usage or a page's markers.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

# The pages, in the order a learner takes them (the README first, then the lessons, then the rest).
PAGES = ["README.md", "01_matmul_add/README.md", "02_linear/README.md", "03_mlp/README.md",
         "04_transformer/README.md", "05_data_parallel/README.md", "06_find_and_fix/README.md", "docs/index.md", "docs/perfetto.md",
         "docs/pil-trace.md", "docs/pil-trace-performance.md", "docs/troubleshooting.md", "docs/profile_your_program.md",
         "docs/cheatsheet.md", "docs/workshop.md", "docs/answer_key.md"]
MARKER = re.compile(r"^<!--\s*sh:\s*(expect|gpu|placeholder|slow|self)\b\s*(.*?)\s*-->\s*$")
SKIP_KINDS = ("gpu", "placeholder", "slow", "self")
BLOCK_SECONDS = 600


class PageError(Exception):
    pass


def blocks(path):
    """The page's ```sh blocks: (line, marker kind, marker text, code)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            if j >= len(lines):
                raise PageError("%s:%d: unterminated ```sh block" % (path, i + 1))
            k = i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            m = MARKER.match(lines[k].strip()) if k >= 0 else None
            if not m:
                raise PageError("%s:%d: a ```sh block without a marker before it (<!-- sh: expect TEXT -->, or "
                                "gpu|placeholder|slow|self REASON)" % (path, i + 1))
            kind, text = m.group(1), m.group(2)
            if not text:
                raise PageError("%s:%d: the marker says %s but not %s" % (
                    path, k + 1, kind, "what line to expect" if kind == "expect" else "why"))
            out.append((i + 1, kind, text, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


# A command that makes build/ on a fresh clone (set-up, configure, build), and a use of build/
# (build/bin/..., cmake --build build).
MAKES_BUILD = re.compile(r"(?:^|[\s;&|(])(?:\./run-lesson\s+\d\d_|\./run-tests\b|cmake\s+--preset\b)")
USES_BUILD = re.compile(r"(?:^|[\s=(\"'])build(?:/|\s|$)")


def build_before_use(path, page_blocks):
    """Raises PageError where a page's commands use build/ before a command of the page made it.
    Comments are not commands; a placeholder block's commands make it but are not run."""
    for line, kind, _, code in page_blocks:
        for i, command in enumerate(code.splitlines()):
            command = command.split("#", 1)[0]
            if MAKES_BUILD.search(command):
                return
            if kind != "placeholder" and USES_BUILD.search(command):
                raise PageError("%s:%d: uses build/ before any command of the page made it (%s): on a fresh "
                                "clone a reader has none yet; run ./run-lesson LESSON (or ./run-tests) first"
                                % (path, line + 1 + i, command.strip()))


TRACES_MARK = ".made-by-page-commands"


def fresh_traces(root):
    """An empty traces/ for the next page (one this script made, or none there)."""
    traces = os.path.join(root, "traces")
    if os.path.lexists(traces):
        if not os.path.exists(os.path.join(traces, TRACES_MARK)):
            raise PageError("%s exists and was not made by this test: move it away first "
                            "(the pages' runs write there)" % traces)
        shutil.rmtree(traces)
    os.makedirs(traces)
    open(os.path.join(traces, TRACES_MARK), "w").close()
    return traces


def run_block(code, cwd, expect, want_exit):
    t0 = time.monotonic()
    try:
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, capture_output=True, text=True,
                           timeout=BLOCK_SECONDS, stdin=subprocess.DEVNULL)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")), 124
    seconds = time.monotonic() - t0
    problems = []
    if rc != want_exit:
        problems.append("exit %d, want %d" % (rc, want_exit))
    if expect not in out:
        problems.append("no line with %r" % expect)
    return problems, out, seconds


def main():
    ap = argparse.ArgumentParser(description="Run every shell command the pages show, as written.")
    ap.add_argument("--root", required=True, help="the checkout")
    ap.add_argument("--page", action="append", help="a page (relative to --root); default: all")
    ap.add_argument("--slow", action="store_true", help="run the blocks marked slow too")
    ap.add_argument("--gpu", action="store_true", help="run the blocks marked gpu too")
    ap.add_argument("--list", action="store_true", help="list the blocks and their markers; run nothing")
    try:
        a = ap.parse_args()
    except SystemExit as e:
        return 2 if e.code else 0
    root = os.path.abspath(a.root)
    pages = a.page or PAGES
    failed = ran = skipped = 0
    try:
        plan = [(page, blocks(os.path.join(root, page))) for page in pages]
        for page, page_blocks in plan:
            build_before_use(page, page_blocks)
        if not a.list:
            fresh_traces(root)
    except (OSError, PageError) as e:
        print("page_commands.py: %s" % e, file=sys.stderr)
        return 2
    for page, page_blocks in plan:
        if not page_blocks:
            continue
        print("== %s (%d blocks)" % (page, len(page_blocks)), flush=True)
        if not a.list:
            fresh_traces(root)
        cwd = root
        for line, kind, text, code in page_blocks:
            first = code.strip().splitlines()[0] if code.strip() else ""
            run_it = kind == "expect" or (kind == "slow" and a.slow) or (kind == "gpu" and a.gpu)
            if a.list or not run_it:
                print("  %s:%d  %s  %s: %s" % (page, line, "LIST" if a.list else "SKIP", kind, text))
                skipped += not a.list
                continue
            m = re.match(r"^(.*?)(?:\s+exit=(\d+))?$", text) if kind == "expect" else None
            expect, want = (m.group(1), int(m.group(2) or 0)) if m else ("", 0)
            problems, out, seconds = run_block(code, cwd, expect, want)
            ran += 1
            if problems:
                failed += 1
                print("  %s:%d  FAILED (%s) in %.1f s: %s" % (page, line, "; ".join(problems), seconds, first))
                print("    " + "\n    ".join(out.strip().splitlines()[-25:]))
            else:
                print("  %s:%d  ok in %.1f s: %s" % (page, line, seconds, first), flush=True)
    if a.list:
        return 0
    shutil.rmtree(os.path.join(root, "traces"), ignore_errors=True)
    print("%d passed, %d failed, %d skipped" % (ran - failed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
