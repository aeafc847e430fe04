#!/usr/bin/env python3
"""./run-lesson with a lesson name it does not know: one line naming the word, the lesson it most
likely meant where the word begins exactly one (01, 1, 01_matmul, 01_matmul_ad), and the lessons
there are, exit 2, before any set-up or build; a folder's trailing slash (a shell's completion)
is not part of the name; no lesson or a flag first is the usage line (exit 2), --help the usage
with what each form does (exit 0)."""
import os
import re
import subprocess
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
LESSONS = sorted(d for d in os.listdir(ROOT)
                 if re.fullmatch(r"[0-9]{2}_\w+", d) and os.path.isfile(os.path.join(ROOT, d, "CMakeLists.txt")))


def run(*args):
    # PIL_BUILD_DIR somewhere that is not there: a call that went on to set up would say so.
    env = dict(os.environ, PIL_BUILD_DIR=os.path.join(ROOT, "no-such-build-folder"))
    return subprocess.run([os.path.join(ROOT, "run-lesson"), *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)


class RunLessonNames(unittest.TestCase):
    def test_a_word_that_begins_one_lesson_names_it(self):
        first = LESSONS[0]
        for word in (first[:2], first[1:2] if first[0] == "0" else first[:2], first[:-1], first.rsplit("_", 1)[0]):
            with self.subTest(word=word):
                p = run(word, "--device", "cpu")
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(p.stderr, "./run-lesson: %s: not a lesson (did you mean %s?); allowed: %s\n"
                                 % (word, first, " ".join(LESSONS)))

    def test_a_word_that_begins_none_is_named_alone_and_a_trailing_slash_is_dropped(self):
        p = run("nope/")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertEqual(p.stderr, "./run-lesson: nope: not a lesson; allowed: %s\n" % " ".join(LESSONS))

    def test_a_folder_with_a_cmakelists_that_is_no_lesson_is_refused_before_any_set_up(self):
        # common/ and docs/ have a CMakeLists.txt: they went on to the set-up and the build
        # ("ninja: error: unknown target 'common'", exit 1).
        for word in ("common", "docs", "tests"):
            with self.subTest(word=word):
                p = run(word)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(p.stdout, "")
                self.assertEqual(p.stderr, "./run-lesson: %s: not a lesson; allowed: %s\n" % (word, " ".join(LESSONS)))

    def test_help_is_the_usage_on_stdout_and_exit_0(self):
        for flag in ("--help", "-h"):
            with self.subTest(flag=flag):
                p = run(flag)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
                self.assertEqual(p.stderr, "")
                self.assertTrue(p.stdout.startswith("usage: ./run-lesson <lesson> [flags...] | --check; lessons: %s\n"
                                                    % " ".join(LESSONS)), p.stdout)
                self.assertIn("--check", p.stdout.splitlines()[-1])

    def test_no_lesson_or_a_flag_first_is_the_usage_line(self):
        for args in ((), ("--device", "cpu")):
            with self.subTest(args=args):
                p = run(*args)
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertEqual(p.stderr, "usage: ./run-lesson <lesson> [flags...] | --check; lessons: %s\n"
                                 % " ".join(LESSONS))


if __name__ == "__main__":
    unittest.main()
