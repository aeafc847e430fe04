#!/usr/bin/env python3
"""Renders pages of the built Doxygen site in headless Chromium and checks them: every picture
loads (an <img> has pixels, an SVG <object> holds an <svg> document) and no link is broken (a
local href names a file that exists, a #fragment an id on its page). External links are listed,
not fetched (the test machine may have no network).

  render_test.py --html-dir build/docs/html --page index.html --page lesson04.html
               [--min-pictures N]

Exit codes: 0 all good, 1 a broken picture or link (each printed), 77 no Chromium (skipped).
"""
import argparse
import html.parser
from html import unescape as html_unescape
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

BROWSERS = ("chromium", "chromium-browser", "google-chrome")

# Loads the page in an iframe (same file:// origin with --allow-file-access-from-files), waits
# for it, and writes what it found into the harness's own DOM, which --dump-dom prints.
HARNESS = """<!doctype html><html><body><pre id="result">pending</pre>
<iframe id="f" src="%(page)s" style="width:1200px;height:900px"></iframe>
<script>
const f = document.getElementById('f');
f.addEventListener('load', () => setTimeout(() => {
  const d = f.contentDocument, out = {images: [], objects: [], title: d ? d.title : null};
  if (d) {
    for (const img of d.querySelectorAll('img'))
      out.images.push({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0});
    for (const o of d.querySelectorAll('object'))
      out.objects.push({src: o.getAttribute('data'),
                        ok: !!(o.contentDocument && o.contentDocument.documentElement &&
                               o.contentDocument.documentElement.tagName.toLowerCase() === 'svg')});
  }
  document.getElementById('result').textContent = 'RESULT ' + JSON.stringify(out);
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


def check_links(html_dir, page):
    path = os.path.join(html_dir, page)
    with open(path, encoding="utf-8") as f:
        parser = Links()
        parser.feed(f.read())
    broken, external, checked = [], [], 0
    for tag, ref in parser.refs:
        url = urllib.parse.urlsplit(ref)
        if url.scheme in ("http", "https", "mailto"):
            external.append(ref)
            continue
        if url.scheme == "javascript":
            continue
        checked += 1
        if not url.path:  # a fragment on this page
            if url.fragment and url.fragment not in parser.ids:
                broken.append("%s: <%s> #%s: no such id on the page" % (page, tag, url.fragment))
            continue
        target = os.path.normpath(os.path.join(os.path.dirname(path), urllib.parse.unquote(url.path)))
        if not os.path.isfile(target):
            broken.append("%s: <%s> %s: no such file" % (page, tag, ref))
    return broken, external, checked


def render(browser, html_dir, page):
    fd, harness = tempfile.mkstemp(dir=html_dir, prefix="_render_check_", suffix=".html")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(HARNESS % {"page": page})
        with tempfile.TemporaryDirectory() as profile:
            r = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                "--allow-file-access-from-files", "--user-data-dir=" + profile,
                                "--virtual-time-budget=20000", "--dump-dom", "file://" + os.path.abspath(harness)],
                               capture_output=True, text=True, timeout=120)
    finally:
        os.unlink(harness)
    marker = '<pre id="result">RESULT '
    at = r.stdout.find(marker)
    if at < 0:
        raise RuntimeError("Chromium printed no result for %s (exit %d): %s" % (page, r.returncode, r.stderr[-500:]))
    text = html_unescape(r.stdout[at + len(marker):].split("</pre>")[0])
    return json.loads(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--html-dir", required=True)
    p.add_argument("--page", action="append", required=True)
    p.add_argument("--min-pictures", type=int, default=0,
                   help="pictures (besides Doxygen's own) each page must have after the first")
    args = p.parse_args()
    browser = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
    if not browser:
        print("render_test: SKIPPED: no Chromium found (install Debian's chromium; ./run-tests does)")
        return 77
    failures = 0
    for i, page in enumerate(args.page):
        if not os.path.isfile(os.path.join(args.html_dir, page)):
            print("FAIL %s: the page was not built" % page)
            failures += 1
            continue
        broken, external, checked = check_links(args.html_dir, page)
        for b in broken:
            print("FAIL " + b)
        failures += len(broken)
        result = render(browser, args.html_dir, page)
        if result["title"] is None:
            print("FAIL %s: the page could not be read in the browser (file access refused?)" % page)
            failures += 1
            continue
        pictures = [x for x in result["images"] + result["objects"] if "doxygen.svg" not in (x["src"] or "")]
        for x in result["images"] + result["objects"]:
            if not x["ok"]:
                print("FAIL %s: picture %s did not load" % (page, x["src"]))
                failures += 1
        if i > 0 and len(pictures) < args.min_pictures:
            print("FAIL %s: %d pictures, expected at least %d" % (page, len(pictures), args.min_pictures))
            failures += 1
        print("%s: title %r, %d pictures loaded, %d local links checked, %d external links not fetched"
              % (page, result["title"], sum(x["ok"] for x in result["images"] + result["objects"]),
                 checked, len(external)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
