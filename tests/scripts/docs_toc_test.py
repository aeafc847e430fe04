#!/usr/bin/env python3
"""scripts/docs_toc.py on a hand-made page shaped like Doxygen 1.9.4's: the escaped <tt> tags of
its table-of-contents entries become tags again, and nothing else changes (a title's own "<",
the same escaped text outside the table of contents, a page without such entries)."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "docs_toc.py")

PAGE = ('<div class="toc"><h3>Table of Contents</h3>\n'
        '<ul><li class="level1"><a href="#autotoc_md1">Can I trust this trace? &lt;tt&gt;check&lt;/tt&gt;</a></li>\n'
        '<li class="level2"><a href="#x">a &lt; b, &lt;b&gt;not tt&lt;/b&gt;</a></li>\n'
        '</ul></div>\n<p>Text: &lt;tt&gt;as written&lt;/tt&gt;</p>\n')
FIXED = ('<div class="toc"><h3>Table of Contents</h3>\n'
         '<ul><li class="level1"><a href="#autotoc_md1">Can I trust this trace? <tt>check</tt></a></li>\n'
         '<li class="level2"><a href="#x">a &lt; b, &lt;b&gt;not tt&lt;/b&gt;</a></li>\n'
         '</ul></div>\n<p>Text: &lt;tt&gt;as written&lt;/tt&gt;</p>\n')


def run(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True)


class DocsToc(unittest.TestCase):
    def test_the_entries_get_their_tags_back_and_nothing_else_changes(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("page.html", PAGE), ("plain.html", "<p>&lt;tt&gt;</p>\n"), ("notes.txt", PAGE)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            r = run(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("1 table-of-contents entries in 1 pages", r.stdout)
            with open(os.path.join(d, "page.html")) as f:
                self.assertEqual(f.read(), FIXED)
            with open(os.path.join(d, "plain.html")) as f:
                self.assertEqual(f.read(), "<p>&lt;tt&gt;</p>\n")
            with open(os.path.join(d, "notes.txt")) as f:
                self.assertEqual(f.read(), PAGE)  # not a page
            self.assertEqual(sorted(os.listdir(d)), ["notes.txt", "page.html", "plain.html"])  # no temporary left
            r = run(d)  # a second run finds nothing to do
            self.assertIn("0 table-of-contents entries in 0 pages", r.stdout)

    def test_a_folder_that_is_not_there_is_a_usage_error(self):
        r = run(os.path.join(tempfile.gettempdir(), "no-such-site-here"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such folder", r.stderr)
        self.assertEqual(run().returncode, 2)
        # A file is not a folder (it said "no such folder"), and --help is help, not a folder.
        r = run(os.path.abspath(__file__))
        self.assertEqual(r.returncode, 2)
        self.assertIn(": not a folder; allowed: the Doxygen site's html folder", r.stderr)
        r = run("--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("docs_toc.py HTML_DIR", r.stdout)


if __name__ == "__main__":
    unittest.main()
