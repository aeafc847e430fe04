#!/usr/bin/env python3
"""Shows that render_test.py can fail: runs it on a small hand-made site (pages shaped like
Doxygen's) once whole, where it must pass, and once broken in each way it checks, where it must
fail and name each fault. A test that cannot fail checks nothing.

Exit codes: 0 render_test.py passed the good site and reported every fault of the broken one,
1 it did not, 77 no Chromium (skipped).
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RENDER_TEST = os.path.join(HERE, "render_test.py")

# A 1x1 PNG, so a good picture has pixels.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2a3d1"
                    "2e0000000049454e44ae426082")
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'


def page(title, body, head="", toc=""):
    return ("<!DOCTYPE html><html><head><title>%s</title>%s</head><body><div class=\"contents\">%s"
            "<div class=\"textblock\">%s</div></div><!-- PageDoc --></body></html>" % (title, head, toc, body))


def toc(title):
    """A table of contents as Doxygen writes it, with one entry."""
    return ('<div class="toc"><h3>Table of Contents</h3><ul><li class="level1"><a href="#top">%s</a></li>'
            '</ul></div>' % title)


ANSWER = ("<details><summary>Answer</summary><p>The answer.</p>"
          "<div class=\"fragment\"><div class=\"line\">echo hi</div></div></details>")

GOOD = {
    "index.html": page("Index", '<p><a href="lesson01.html">lesson</a> <a href="#top">top</a>'
                                '<a id="top"></a></p>', toc=toc("What does <tt>advise</tt> say? a &lt; b")),
    "lesson01.html": page("Lesson", ANSWER + ANSWER + '<img src="pic.png"/>'
                          '<object type="image/svg+xml" data="pic.svg"></object>'
                          '<a href="index.html#top">back</a>'),
}

BROKEN = {
    "index.html": page("Index", '<p><a href="lesson01.html">lesson</a><a id="top"></a></p>',
                       toc=toc("What does &lt;tt&gt;advise&lt;/tt&gt; say?")),
    # Reached only through the crawl: index -> lesson01 -> deep.
    "lesson01.html": page(
        "Lesson",
        ANSWER
        + '<details open><summary>Open already</summary><p>Shown before the guess.</p></details>'
        + '<details><p>No summary to click.</p></details>'
        + '<details class="stuck"><summary>Stuck</summary><p>Never shown.</p></details>'
        + '<img src="missing.png"/><a href="missing.html">dead</a><a href="#nowhere">no id</a>'
        + '<a href="index.html#gone">no id there</a><a href="deep.html">deeper</a>',
        head="<style>details.stuck > p { display: none; }</style>"),
    "deep.html": page("Deep", '<object type="image/svg+xml" data="missing.svg"></object>'
                              '<script>noSuchFunction()</script>'),
}

EXPECTED = [
    "lesson01.html: <details> #2 (Open already): open before it was clicked",
    "lesson01.html: <details> #3: no <summary> to click",
    "lesson01.html: <details> #4 (Stuck): opened, but its content is still not shown",
    "lesson01.html: 4 folded answers (<details>), expected at least 5",
    "lesson01.html: <a> missing.html: no such file",
    "lesson01.html: <a> #nowhere: no such id on the page",
    "lesson01.html: <a> index.html#gone: no id 'gone' on index.html",
    "lesson01.html: picture missing.png did not load",
    "lesson01.html: 1 pictures, expected at least 2",
    "deep.html: picture missing.svg did not load",
    "deep.html: script error: Uncaught ReferenceError: noSuchFunction is not defined",
    "lesson01.html: theme: doxygen-awesome.css does not apply",
    "lesson01.html: theme: 0 dark-mode toggles, expected 1",
    "lesson01.html: theme: 1 code fragments but 0 copy buttons",
    "absent.html: not reached from index.html",
    "index.html: the table of contents shows tags as text: </tt> <tt>",
]


def write(site, root):
    for name, text in site.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    with open(os.path.join(root, "pic.png"), "wb") as f:
        f.write(PNG)
    with open(os.path.join(root, "pic.svg"), "w") as f:
        f.write(SVG)


def run(root, *extra):
    r = subprocess.run([sys.executable, RENDER_TEST, "--html-dir", root, "--page", "index.html", "--crawl",
                        "--min-details", "2", "--min-pictures", "2"] + list(extra),
                       capture_output=True, text=True, timeout=600)
    return r.returncode, r.stdout + r.stderr


def main():
    with tempfile.TemporaryDirectory() as good, tempfile.TemporaryDirectory() as broken:
        write(GOOD, good)
        code, out = run(good)
        if code == 77:
            print(out.strip())
            return 77
        print("-- the good site:\n" + out)
        if code != 0:
            print("FAIL render_test.py failed the good site (exit %d)" % code)
            return 1
        write(BROKEN, broken)
        code, out = run(broken, "--theme", "--min-details", "5", "--expect-page", "absent.html")
        print("-- the broken site:\n" + out)
        missed = [e for e in EXPECTED if "FAIL " + e not in out]
        for e in missed:
            print("FAIL render_test.py did not report: " + e)
        if code != 1:
            print("FAIL render_test.py exited %d on the broken site, expected 1" % code)
            return 1
        if missed:
            return 1
    print("render_selftest: render_test.py passed the good site and reported all %d faults of the broken one"
          % len(EXPECTED))
    return 0


if __name__ == "__main__":
    sys.exit(main())
