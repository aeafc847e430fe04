#!/usr/bin/env python3
"""Puts back the code font in the tables of contents of a Doxygen site.

Doxygen 1.9.4 (Debian 12's) writes a heading's title into the page's table of contents as
escaped text: "What does `advise` say?" shows there as "What does <tt>advise</tt> say?", the tags
as letters (its navigation tree and the heading itself are right). This rewrites, in each
table-of-contents entry (<li class="levelN"><a ...>TITLE</a>) of every .html file of the folder,
the escaped <tt> and </tt> back into tags; nothing else (a title's own "<" stays escaped). A file
is rewritten whole (a temporary file renamed over it) or left as it was.

  docs_toc.py HTML_DIR

Exit codes: 0 done (prints how many entries it changed), 2 no such folder.
"""
import os
import re
import sys
import tempfile

ENTRY = re.compile(r'(<li class="level\d+"><a href="[^"]*">)(.*?)(</a>)')


def fix_entry(m):
    title = m.group(2).replace("&lt;tt&gt;", "<tt>").replace("&lt;/tt&gt;", "</tt>")
    return m.group(1) + title + m.group(3)


def fix_text(text):
    """(the text with its table-of-contents entries fixed, how many entries changed)."""
    changed = 0

    def one(m):
        nonlocal changed
        out = fix_entry(m)
        changed += out != m.group(0)
        return out
    return ENTRY.sub(one, text), changed


def fix_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fixed, changed = fix_text(text)
    if not changed:
        return 0
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".toc-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(fixed)
        os.chmod(tmp, os.stat(path).st_mode & 0o777)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return changed


def main(argv):
    if len(argv) == 2 and argv[1] in ("--help", "-h"):
        print(__doc__.strip())
        return 0
    if len(argv) != 2:
        print("usage: docs_toc.py HTML_DIR", file=sys.stderr)
        return 2
    root = argv[1]
    if not os.path.isdir(root):
        why = "not a folder" if os.path.exists(root) else "no such folder"
        print("docs_toc.py: %s: %s; allowed: the Doxygen site's html folder (build the site first)"
              % (root, why), file=sys.stderr)
        return 2
    entries = files = 0
    for name in sorted(os.listdir(root)):
        if name.endswith(".html"):
            n = fix_file(os.path.join(root, name))
            entries += n
            files += n > 0
    print("docs_toc.py: %s: %d table-of-contents entries in %d pages given their code font back"
          % (root, entries, files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
