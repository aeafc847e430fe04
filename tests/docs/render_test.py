#!/usr/bin/env python3
"""Renders the pages of the built Doxygen site in headless Chromium and checks them.

On every page it checks:
  - pictures: every <img> has pixels, every SVG <object> holds an <svg> document;
  - links: a local href names a file that exists, a #fragment an id on its page (on this page or
    on the walkthrough page it points to); external links are listed, not fetched (the test
    machine may have no network);
  - folded answers: every <details> opens when its <summary> is clicked (the click is simulated:
    `open` is then set and what the <summary> folded is now shown), and lesson pages hold at
    least --min-details of them;
  - scripts: none throws an uncaught error (Chromium's console);
  - with --theme, doxygen-awesome-css: its style sheets apply (the CSS variables only the theme
    and its sidebar-only layout set), and its extensions ran: the dark-mode toggle is there, each
    code fragment has a copy button, a table of contents is interactive.

The pages checked: each --page (it must exist), and with --crawl every walkthrough page (a
Doxygen page, not the API reference) reachable by links from them and from Doxygen's list of
pages (pages.html), so a page added to the site is checked without being named here.

  render_test.py --html-dir build/docs/html --page index.html --crawl [--theme]
                 [--min-pictures N|PAGE=N]... [--min-details N|PAGE=N]... [--lesson-pages REGEX]
                 [--expect-page PAGE]...

Exit codes: 0 all good, 1 something broken (each printed as FAIL), 77 no Chromium (skipped).
"""
import argparse
import html.parser
from html import unescape as html_unescape
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

BROWSERS = ("chromium", "chromium-browser", "google-chrome")

# Doxygen (1.9.x) closes the contents of a page written from a .md file or a \page, and of the
# main page, with this comment; the API reference's pages (classes, files, namespaces, sources,
# indexes) do not have it.
PAGE_MARK = "<!-- PageDoc -->"

# Loads the page in an iframe (same file:// origin with --allow-file-access-from-files), waits
# for it, inspects it, clicks every <summary>, and writes what it found into the harness's own
# DOM, which --dump-dom prints.
HARNESS = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="f" src="%(page)s" style="width:1400px;height:900px"></iframe>
<script>
const f = document.getElementById('f');
// Shown = a reader could see it: scrolled into view, it has a size and a hit test at its middle
// lands on it (a closed <details> lays out its content but paints none of it).
function shown(d, el) {
  el.scrollIntoView({block: 'center'});
  const r = el.getBoundingClientRect();
  if (r.width < 1 || r.height < 1) return false;
  const hit = d.elementFromPoint(r.left + Math.min(r.width / 2, 20), r.top + Math.min(r.height / 2, 8));
  return !!hit && (hit === el || el.contains(hit));
}
function folded(det) {
  const out = [];
  for (const c of det.children) if (c.tagName.toLowerCase() !== 'summary') out.push(c);
  return out;
}
f.addEventListener('load', () => setTimeout(() => {
  const d = f.contentDocument;
  const out = {images: [], objects: [], details: [], title: d ? d.title : null};
  if (!d) {
    document.getElementById('result').textContent = 'RESULT ' + JSON.stringify(out);
    return;
  }
  // The folded answers first, opened as a reader opens them; then the pictures, some of which
  // sit in an answer (an SVG <object> in a closed <details> loads only once it is shown).
  d.querySelectorAll('details').forEach((det, i) => {
    const r = {index: i, summary: null, open_before: det.open, open_after: false,
               content: folded(det).length, hidden_before: true, shown_after: false};
    const s = det.querySelector(':scope > summary');
    if (s) {
      r.summary = s.textContent.trim();
      r.hidden_before = det.open || folded(det).every(c => !shown(d, c));
      if (!det.open) s.click();
      r.open_after = det.open;
      r.shown_after = folded(det).some(c => shown(d, c));
    }
    out.details.push(r);
  });
  setTimeout(() => {
    for (const img of d.querySelectorAll('img'))
      out.images.push({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0,
                       text: !!img.closest('.contents')});
    for (const o of d.querySelectorAll('object'))
      out.objects.push({src: o.getAttribute('data'),
                        ok: !!(o.contentDocument && o.contentDocument.documentElement &&
                               o.contentDocument.documentElement.tagName.toLowerCase() === 'svg'),
                        text: !!o.closest('.contents')});
    const root = d.defaultView.getComputedStyle(d.documentElement);
    const fragments = d.querySelectorAll('.fragment');  // code (div) and verbatim tables (pre)
    const toc = d.querySelector('.contents > .toc');
    // An HTML tag a reader sees as letters in the table of contents ("<tt>advise</tt>").
    out.toc_tags_as_text = toc ? (toc.textContent.match(/<\/?[a-z][a-z0-9]*>/gi) || []) : [];
    out.theme = {
      primary_color: root.getPropertyValue('--primary-color').trim(),
      side_nav_width: root.getPropertyValue('--side-nav-fixed-width').trim(),
      dark_mode_toggle: d.querySelectorAll('doxygen-awesome-dark-mode-toggle').length,
      fragments: fragments.length,
      copy_buttons: d.querySelectorAll('doxygen-awesome-fragment-copy-button').length,
      fragments_with_button: Array.from(fragments).filter(x =>
        x.parentNode.classList.contains('doxygen-awesome-fragment-wrapper')).length,
      toc: !!toc, toc_interactive: !!(toc && toc.classList.contains('interactive')),
      heading_anchors: d.querySelectorAll('.contents a.anchor[id]').length,
      paragraph_links: d.querySelectorAll('.contents a.anchorlink').length,
    };
    document.getElementById('result').textContent = 'RESULT ' + JSON.stringify(out);
  }, 1500);
}, 1500));
</script></body></html>
"""


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
        for tag_name, attr in (("a", "href"), ("img", "src"), ("object", "data"), ("script", "src"),
                               ("link", "href"), ("iframe", "src")):
            if tag == tag_name and a.get(attr):
                self.refs.append((tag, a[attr]))


class Site:
    """The built pages, parsed once each."""

    def __init__(self, html_dir):
        self.html_dir = os.path.abspath(html_dir)
        self._parsed = {}

    def rel(self, path):
        return os.path.relpath(path, self.html_dir)

    def parse(self, path):
        if path not in self._parsed:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            parser = Links()
            parser.feed(text)
            self._parsed[path] = (parser, PAGE_MARK in text)
        return self._parsed[path]

    def check_links(self, page):
        """(broken, external, checked, walkthrough pages it links to)."""
        path = os.path.join(self.html_dir, page)
        parser, _ = self.parse(path)
        broken, external, linked, checked = [], [], [], 0
        for tag, ref in parser.refs:
            url = urllib.parse.urlsplit(ref)
            if url.scheme in ("http", "https", "mailto"):
                external.append(ref)
                continue
            if url.scheme == "javascript":
                continue
            if url.scheme and url.scheme != "file":
                broken.append("%s: <%s> %s: a scheme the site cannot serve" % (page, tag, ref))
                continue
            checked += 1
            if not url.path:  # a fragment on this page
                if url.fragment and url.fragment not in parser.ids:
                    broken.append("%s: <%s> #%s: no such id on the page" % (page, tag, url.fragment))
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(path),
                                                   urllib.parse.unquote(url.path)))
            if not os.path.isfile(target):
                broken.append("%s: <%s> %s: no such file" % (page, tag, ref))
                continue
            if tag == "a" and target.endswith(".html") and target.startswith(self.html_dir + os.sep):
                target_parser, is_page = self.parse(target)
                if url.fragment and url.fragment not in target_parser.ids:
                    broken.append("%s: <a> %s: no id %r on %s"
                                  % (page, ref, url.fragment, self.rel(target)))
                if is_page:
                    linked.append(self.rel(target))
        return broken, external, checked, linked


def render(browser, html_dir, page):
    fd, harness = tempfile.mkstemp(dir=html_dir, prefix="_render_check_", suffix=".html")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(HARNESS % {"page": page})
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                "--allow-file-access-from-files", "--user-data-dir=" + profile,
                                "--enable-logging=stderr", "--v=0",  # the console, for script errors
                                "--virtual-time-budget=20000", "--dump-dom",
                                "file://" + os.path.abspath(harness)],
                               capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(harness)
    marker = '<pre id="result">RESULT '
    at = r.stdout.find(marker)
    if at < 0:
        raise RuntimeError("Chromium printed no result for %s (exit %d): %s"
                           % (page, r.returncode, r.stderr[-500:]))
    text = html_unescape(r.stdout[at + len(marker):].split("</pre>")[0])
    result = json.loads(text)
    # '[...:INFO:CONSOLE:12] "Uncaught TypeError: ...", source: file:///.../page.html (12)'
    result["script_errors"] = sorted(set(
        m.group(1) for m in re.finditer(r':CONSOLE[^\]]*\] "(Uncaught [^"]*)", source: (\S+)', r.stderr)))
    return result


def check_details(page, details, minimum):
    fails = []
    for x in details:
        what = "%s: <details> #%d%s" % (page, x["index"] + 1, " (%s)" % x["summary"] if x["summary"] else "")
        if x["summary"] is None:
            fails.append(what + ": no <summary> to click")
            continue
        if x["content"] == 0:
            fails.append(what + ": nothing folded under the <summary>")
            continue
        if x["open_before"]:
            fails.append(what + ": open before it was clicked (the answer should wait for the guess)")
        elif not x["hidden_before"]:
            fails.append(what + ": its content shows before it was clicked")
        if not x["open_after"]:
            fails.append(what + ": did not open when its <summary> was clicked")
        elif not x["shown_after"]:
            fails.append(what + ": opened, but its content is still not shown")
    if len(details) < minimum:
        fails.append("%s: %d folded answers (<details>), expected at least %d" % (page, len(details), minimum))
    return fails


def check_theme(page, t):
    fails = []
    if not t["primary_color"]:
        fails.append("doxygen-awesome.css does not apply (no --primary-color)")
    if not t["side_nav_width"]:
        fails.append("doxygen-awesome-sidebar-only.css does not apply (no --side-nav-fixed-width)")
    if t["dark_mode_toggle"] != 1:
        fails.append("%d dark-mode toggles, expected 1" % t["dark_mode_toggle"])
    if t["copy_buttons"] != t["fragments"] or t["fragments_with_button"] != t["fragments"]:
        fails.append("%d code fragments but %d copy buttons (%d wrapped)"
                     % (t["fragments"], t["copy_buttons"], t["fragments_with_button"]))
    if t["toc"] and not t["toc_interactive"]:
        fails.append("the table of contents is not interactive")
    if t["heading_anchors"] and not t["paragraph_links"]:
        fails.append("%d headings but no paragraph links" % t["heading_anchors"])
    return ["%s: theme: %s" % (page, f) for f in fails]


def minimum(values):
    """['N', 'PAGE=N', ...] -> f(page, is_lesson): PAGE=N for that page, else N for a lesson page."""
    default, pages = 0, {}
    for v in values:
        page, _, n = v.rpartition("=")
        if not n.isdigit():
            raise ValueError("expected N or PAGE=N, got %r" % v)
        if page:
            pages[os.path.normpath(page)] = int(n)
        else:
            default = int(n)
    return lambda page, lesson: pages.get(page, default if lesson else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--html-dir", required=True)
    p.add_argument("--page", action="append", required=True,
                   help="a page that must be there and is checked (and crawled from, with --crawl)")
    p.add_argument("--crawl", action="store_true",
                   help="also check every walkthrough page reachable from the --page ones and pages.html")
    p.add_argument("--expect-page", action="append", default=[],
                   help="a page the crawl must reach (e.g. perfetto.html)")
    p.add_argument("--min-pictures", action="append", default=[], metavar="N|PAGE=N",
                   help="pictures in the text (not Doxygen's icons) each lesson page (N) "
                        "or PAGE must have")
    p.add_argument("--min-details", action="append", default=[], metavar="N|PAGE=N",
                   help="folded answers (<details>) each lesson page (N) or PAGE must have")
    p.add_argument("--lesson-pages", default=r"lesson\d+\.html",
                   help="regular expression naming the lesson pages (default %(default)s)")
    p.add_argument("--theme", action="store_true", help="check doxygen-awesome-css and its extensions")
    args = p.parse_args()
    try:
        min_pictures, min_details = minimum(args.min_pictures), minimum(args.min_details)
    except ValueError as e:
        p.error(str(e))
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if not browser:
        print("render_test: SKIPPED: no Chromium found (install Debian's chromium; ./run-tests does)")
        return 77
    site = Site(args.html_dir)
    lesson_re = re.compile(args.lesson_pages + r"\Z")
    failures = []
    queue = []
    for page in args.page:
        if not os.path.isfile(os.path.join(args.html_dir, page)):
            failures.append("%s: the page was not built" % page)
        else:
            queue.append(page)
    if args.crawl and os.path.isfile(os.path.join(args.html_dir, "pages.html")):
        _, _, _, listed = site.check_links("pages.html")
        queue += listed
    seen = set()
    done = []
    while queue:
        page = os.path.normpath(queue.pop(0))
        if page in seen:
            continue
        seen.add(page)
        broken, external, checked, linked = site.check_links(page)
        if args.crawl:
            queue += [x for x in linked if x not in seen]
        page_fails = list(broken)
        try:
            result = render(browser, args.html_dir, page)
        except (RuntimeError, subprocess.TimeoutExpired) as e:  # one bad page; the crawl goes on
            failures += page_fails + ["%s: %s" % (page, str(e).splitlines()[0] if str(e) else type(e).__name__)]
            continue
        if result["title"] is None:
            failures += page_fails + ["%s: the page could not be read in the browser (file access refused?)" % page]
            continue
        everything = result["images"] + result["objects"]
        pictures = [x for x in everything if x["text"]]  # the page's own, not Doxygen's icons
        for x in everything:
            if not x["ok"]:
                page_fails.append("%s: picture %s did not load" % (page, x["src"]))
        lesson = bool(lesson_re.match(page))
        want = min_pictures(page, lesson)
        if len(pictures) < want:
            page_fails.append("%s: %d pictures, expected at least %d" % (page, len(pictures), want))
        page_fails += check_details(page, result["details"], min_details(page, lesson))
        page_fails += ["%s: script error: %s" % (page, e) for e in result["script_errors"]]
        if result.get("toc_tags_as_text"):
            page_fails.append("%s: the table of contents shows tags as text: %s"
                              % (page, " ".join(sorted(set(result["toc_tags_as_text"])))))
        if args.theme:
            page_fails += check_theme(page, result["theme"])
        failures += page_fails
        done.append(page)
        t = result["theme"]
        print("%s%s: %s %r, %d pictures in the text, %d folded answers, "
              "%d/%d code fragments with a copy button, %d local links checked, %d external not fetched"
              % ("FAILED " if page_fails else "", page, "lesson" if lesson else "page", result["title"],
                 sum(x["ok"] for x in pictures), len(result["details"]), t["copy_buttons"],
                 t["fragments"], checked, len(external)))
    for page in args.expect_page:
        if os.path.normpath(page) not in seen:
            failures.append("%s: not reached from %s" % (page, ", ".join(args.page)))
    for f in failures:
        print("FAIL " + f)
    print("render_test: %d pages checked, %d failures" % (len(done), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
