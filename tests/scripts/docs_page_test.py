#!/usr/bin/env python3
"""scripts/docs_page.py on a hand-made lesson folder: a README whose snippet equals the source
passes and becomes \\snippet; one that differs fails (exit 1) naming the snippet; a marker
without a code block, or a figure naming an undeclared run, is a usage error (exit 2). With a fake
lesson and a fake pil-trace: fig markers render the median and range of a run made N times, the
table and picture come from the median run, bad queries are one line and exit 2, timeline marks,
--source's prefix, folded answers and the previous/next line."""
import os
import subprocess
import sys
import tempfile
import unittest

# Every folder a test makes lies under this one, removed when the tests end (pass or fail).
_FOLDERS = tempfile.TemporaryDirectory(prefix="docs_page_test-")


def new_folder():
    return tempfile.mkdtemp(dir=_FOLDERS.name)


SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "docs_page.py")

SOURCE = """int helper();
// [variant-x]
int x() {
  return helper();
}
// [variant-x]
"""


def lesson(readme):
    d = new_folder()
    lesson_dir = os.path.join(d, "09_demo")
    os.makedirs(lesson_dir)
    with open(os.path.join(lesson_dir, "main.cpp"), "w") as f:
        f.write(SOURCE)
    with open(os.path.join(lesson_dir, "README.md"), "w") as f:
        f.write(readme)
    return lesson_dir


def run(*args):
    # Without the thread variables a reference run's command would name (a CI may set them).
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True, env=env)


class DocsPage(unittest.TestCase):
    def page_of(self, d):
        """The page docs_page.py makes of lesson folder d (no runs: the README has none)."""
        page = os.path.join(d, "out", "page.md")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", "/bin/false", "--out-dir",
                os.path.join(d, "out"), "--page", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            return f.read()

    def test_matching_snippet_becomes_a_doxygen_snippet(self):
        d = lesson("# Demo <!-- {#demo} -->\n\n<!-- snippet: variant-x -->\n```cpp\nint x() {\n  return helper();\n}\n```\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        text = self.page_of(d)
        self.assertIn("\\snippet 09_demo/main.cpp variant-x", text)
        self.assertNotIn("return helper();", text)

    def test_a_snippet_from_another_source_of_the_project(self):
        d = lesson("<!-- snippet: calls from=common/h.cpp -->\n```cpp\nprof.step();\n```\n")
        os.makedirs(os.path.join(d, "..", "common"))
        with open(os.path.join(d, "..", "common", "h.cpp"), "w") as f:
            f.write("void f() {\n  // [calls]\n  prof.step();\n  // [calls]\n}\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        self.assertIn("\\snippet common/h.cpp calls", self.page_of(d))
        with open(os.path.join(d, "..", "common", "h.cpp"), "w") as f:
            f.write("// [calls]\nprof.stop();\n// [calls]\n")
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("common/h.cpp", r.stderr)

    def test_a_copy_that_differs_from_the_source_fails(self):
        d = lesson("<!-- snippet: variant-x -->\n```cpp\nint x() {\n  return 42;\n}\n```\n")
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("snippet variant-x", r.stderr)
        self.assertIn("README.md:1", r.stderr)

    def test_bad_markers_are_usage_errors(self):
        for readme in ("<!-- snippet: variant-x -->\nno code here\n",
                       "<!-- snippet: variant-y -->\n```cpp\n```\n",
                       "<!-- table: never-ran -->\n"):
            d = lesson(readme)
            r = run("--lesson-dir", d, "--exe", "/bin/true", "--pil-trace", "/bin/true", "--out-dir",
                    os.path.join(d, "out"), "--page", os.path.join(d, "out", "p.md"))
            self.assertEqual(r.returncode, 2, readme + r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out", "p.md")), "nothing written")

    def test_a_committed_trace_is_drawn_and_tabled(self):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        fixture = "tests/fuzz/corpus/gpu_small.json"
        d = lesson("<!-- trace: gpu: %s -->\n<!-- table: gpu rows=3 -->\n<!-- timeline: gpu step=0 -->\n" % fixture)
        fake = os.path.join(d, "fake-pil-trace")
        with open(fake, "w") as f:  # stands in for pil-trace: prints its arguments, writes the svg
            f.write("#!/bin/sh\necho \"$@\"\nif [ \"$1\" = svg ]; then : > \"$4\"; fi\n")
        os.chmod(fake, 0o755)
        page = os.path.join(d, "out", "p.md")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", fake, "--out-dir",
                os.path.join(d, "out"), "--page", page, "--root", root)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            text = f.read()
        self.assertIn("ops " + os.path.join(root, fixture) + " --row-limit 3", text)
        self.assertIn("\\image html 09_demo_gpu_step0.svg", text)
        r = run("--lesson-dir", lesson("<!-- trace: gpu: no/such.json -->\n"), "--exe", "/bin/false",
                "--pil-trace", fake, "--out-dir", os.path.join(d, "o2"), "--page", os.path.join(d, "o2", "p.md"))
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_a_close_up_of_a_committed_trace(self):
        # A window in µs (from-us= to-us=) drawn from a committed trace, with its marks; the page
        # says the picture is of that committed trace, not of a run of the lesson.
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        fixture = "tests/fuzz/corpus/gpu_small.json"
        d = lesson("<!-- trace: gpu: %s -->\n"
                   "<!-- timeline: gpu from-us=12.5 to-us=40 mark=cudaLaunchKernel -->\n" % fixture)
        fake = os.path.join(d, "fake-pil-trace")
        with open(fake, "w") as f:  # stands in for pil-trace: prints its arguments, writes the svg
            f.write("#!/bin/sh\necho \"$@\" >> \"$0.log\"\nif [ \"$1\" = svg ]; then : > \"$4\"; fi\n")
        os.chmod(fake, 0o755)
        page = os.path.join(d, "out", "p.md")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", fake, "--out-dir",
                os.path.join(d, "out"), "--page", page, "--root", root)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            text = f.read()
        with open(fake + ".log") as f:
            call = f.read()
        self.assertIn("--from-us 12.5 --to-us 40 --mark cudaLaunchKernel", call)
        self.assertIn("--title committed trace %s" % fixture, call)
        self.assertIn("\\image html 09_demo_gpu_us12_5_40_cudaLaunchKernel.svg", text)
        self.assertIn("12.5–40 µs from its first step", text)
        self.assertIn("Committed traces drawn or tabled on this page (not runs of the lesson): `gpu` from %s"
                      % fixture, text)
        self.assertNotIn("from traces of the lesson run then", text)
        self.assertTrue(os.path.isfile(os.path.join(root, fixture)), "a committed trace is never removed")
        for bad in ("from-us=5", "to-us=5", "step=0 from-us=1 to-us=2", "from-us=3 to-us=2", "from-us=a to-us=2"):
            r = run("--lesson-dir", lesson("<!-- trace: gpu: %s -->\n<!-- timeline: gpu %s -->\n" % (fixture, bad)),
                    "--check")
            self.assertEqual(r.returncode, 2, bad + r.stderr)

    def test_a_failing_run_fails_and_writes_nothing(self):
        d = lesson("<!-- run: a: --size 1 -->\n")
        r = run("--lesson-dir", d, "--exe", "/bin/false", "--pil-trace", "/bin/true", "--out-dir",
                os.path.join(d, "out"), "--page", os.path.join(d, "out", "p.md"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "out", "p.md")))


# A fake lesson: each run writes a trace holding its run number k (counted in the lesson folder)
# and prints the lines docs_page.py reads.
# What every fake lesson does first: take --out, count its run (k, from 0), make the folder.
FAKE_LESSON_HEAD = """#!/bin/sh
out=
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
n=$(ls "%(counter)s" | wc -l)
: > "%(counter)s/run$n"
mkdir -p "$out"
"""
FAKE_LESSON = FAKE_LESSON_HEAD + """echo $n > "$out/t.json"
echo "== 09_demo | cpu (Fake CPU 9000) | fp32"
echo "trace: $out/t.json"
"""

# A fake lesson whose variant this build cannot run (a compiled variant without its package):
# exit 77 with the lesson's one-line reason.
FAKE_SKIPPING_LESSON = FAKE_LESSON_HEAD + """echo "09_demo: --variant compiled: no AOTInductor package: this build was configured with -DPIL_WITH_AOTI=OFF"
echo "RESULT: SKIPPED"
exit 77
"""



# A fake pil-trace: JSON reports whose figures depend on the trace's run number k; every call
# logged. Per run k: aten::mm's self share, the median step, the first-step gap.
FAKE_PIL_TRACE = """#!%(python)s
import json, sys
MM = [0.44, 0.45, 0.43, 0.46, 0.45]
STEP = [100000, 120000, 90000, 110000, 105000]
GAP = [300000, 290000, 475000, 310000, 280000]
args = sys.argv[1:]
with open("%(log)s", "a") as f:
    f.write(" ".join(args) + "\\n")
sub, trace = args[0], args[1]
k = int(open(trace).read().strip())
if sub == "svg":
    open(args[args.index("--out") + 1], "w").close()
    print("svg")
elif "--json" not in args:
    print("%%s of %%s" %% (sub, trace))
    if sub == "advise":  # advise names the trace in its header and in a command
        print("   see the effect: build/bin/pil-trace ops %%s" %% trace)
elif sub == "summary":
    print(json.dumps({"steps": {"count": 3, "median_ns": STEP[k], "first_ns": 2 * STEP[k],
                                "durations_ns": [2 * STEP[k], STEP[k], STEP[k]]},
                      "top_ops": [{"name": "aten::mm", "share": MM[k], "self_cpu_ns": 1}], "gpu": None}))
elif sub == "ops":
    print(json.dumps({"self_cpu_total_ns": 1000000, "operators": [
        {"name": "aten::mm", "calls": 3, "self_cpu_ns": int(MM[k] * 1000000), "cpu_total_ns": 600000},
        {"name": "matmul_add", "calls": 3, "self_cpu_ns": 1000, "cpu_total_ns": 3 * STEP[k] // 2},
        {"name": "autograd::engine::evaluate_function: AddmmBackward0", "calls": 6, "self_cpu_ns": 10,
         "cpu_total_ns": 10}]}))
elif sub == "advise":
    print(json.dumps({"steps": 3, "findings": [{"cause": "naive_attention", "saved_ns": 3 * STEP[k] // 2}]}))
elif sub == "chain":
    i = int(args[args.index("--instance") + 1])
    print(json.dumps([{"depth": 0, "name": "matmul_add", "gpu": False, "offset_ns": 0, "dur_ns": STEP[k] // 2},
                      {"depth": 1, "name": "aten::matmul", "gpu": False, "offset_ns": GAP[k] if i == 0 else 3000,
                       "dur_ns": 10}]))
"""


# The same, but advise names its finding in run 1 only (a threshold a loaded machine can cross).
FAKE_PIL_TRACE_SOME_ADVICE = FAKE_PIL_TRACE.replace(
    '"findings": [{"cause": "naive_attention", "saved_ns": 3 * STEP[k] // 2}]',
    '"findings": [{"cause": "naive_attention", "saved_ns": 150000}] if k == 1 else []')


def one_line_usage_errors(test, readmes):
    """Each README's markers are refused by --check: exit 2, one line on stderr."""
    for bad in readmes:
        r = run("--lesson-dir", lesson(bad), "--check")
        test.assertEqual(r.returncode, 2, bad + r.stderr)
        test.assertEqual(r.stderr.count("\n"), 1, r.stderr)


def fake_tools(test, lesson_src, pil_trace_src):
    """Writes a fake lesson and a fake pil-trace into a new folder: test.d, .counter (one file per
    run), .log (pil-trace's calls), .exe and .pil."""
    test.d = new_folder()
    test.counter = os.path.join(test.d, "counter")
    os.makedirs(test.counter)
    test.log = os.path.join(test.d, "pil-trace.log")
    test.exe = os.path.join(test.d, "fake-lesson")
    test.pil = os.path.join(test.d, "fake-pil-trace")
    with open(test.exe, "w") as f:
        f.write(lesson_src % {"counter": test.counter})
    with open(test.pil, "w") as f:
        f.write(pil_trace_src % {"python": sys.executable, "log": test.log})
    os.chmod(test.exe, 0o755)
    os.chmod(test.pil, 0o755)


class Figures(unittest.TestCase):
    """run runs=N, fig markers, the median run, timeline mark=, --source, details and nav."""

    def setUp(self):
        fake_tools(self, FAKE_LESSON, FAKE_PIL_TRACE)

    def make(self, lesson_dir, *extra):
        out = os.path.join(self.d, "out")
        page = os.path.join(out, "page.md")
        r = run("--lesson-dir", lesson_dir, "--exe", self.exe, "--pil-trace", self.pil, "--out-dir", out,
                "--page", page, *extra)
        text = None
        if os.path.exists(page):
            with open(page) as f:
                text = f.read()
        return r, text

    def calls(self):
        with open(self.log) as f:
            return f.read().splitlines()

    def refused_each(self, *markers):
        """Each marker, on a page of runs a and b, refused by --check: one line, exit 2."""
        for bad in markers:
            d = lesson("<!-- run: a: --size 1 -->\n<!-- run: b: --size 2 -->\nText " + bad + ".\n")
            r = run("--lesson-dir", d, "--check")
            self.assertEqual(r.returncode, 2, bad + ": " + r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)

    def refused_as_two_units(self, marker):
        """A marker that sets two units against each other: only the runs can tell, so the build
        fails (exit 1, "one unit") and writes no page."""
        fake_tools(self, FAKE_LESSON, FAKE_PIL_TRACE)
        r, text = self.make(lesson("<!-- run: a: --size 1 -->\nText " + marker + ".\n"))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("one unit", r.stderr)
        self.assertIsNone(text)

    def test_a_figure_is_the_median_and_range_of_the_runs(self):
        d = lesson("<!-- run: eager runs=5: --size 64 -->\n"
                   "At size 64 mm took <!-- fig: eager op=aten::mm self_pct -->29%<!-- /fig --> of the time, "
                   "a step <!-- fig: eager step_time -->1 ms<!-- /fig -->; the gap "
                   "<!-- fig: eager gap range=matmul_add op=aten::matmul -->9 µs<!-- /fig --> then "
                   "<!-- fig: eager gap range=matmul_add op=aten::matmul step=1 -->1 µs<!-- /fig -->.\n"
                   "Calls <!-- fig: eager op=aten::mm calls --><!-- /fig -->, range "
                   "<!-- fig: eager range=matmul_add time --><!-- /fig -->, top "
                   "<!-- fig: eager summary top_ops.0.share --><!-- /fig --> "
                   "<!-- fig: eager summary top_ops.0.name --><!-- /fig -->, backward "
                   "<!-- fig: eager op=\"autograd::engine::evaluate_function: AddmmBackward0\" calls --><!-- /fig -->.\n"
                   "<!-- table: eager rows=3 -->\n")
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(os.listdir(self.counter)), 5, "five runs")
        self.assertIn("mm took 45% (43–46%) of the time", text)
        self.assertIn("a step 105 µs (90.0–120 µs);", text)
        self.assertIn("the gap 300 µs (280–475 µs) then 3.00 µs.", text)
        self.assertIn("Calls 3, range 52.5 µs (45.0–60.0 µs), top 45% (43–46%) aten::mm, backward 6.", text)
        self.assertNotIn("29%", text)
        self.assertNotIn("fig:", text)
        # The table is the median run's: the run whose median step (105 µs) is the median, run 5.
        self.assertIn("ops %s --row-limit 3" % os.path.join(self.d, "out", "runs", "eager", "run5", "t.json"), self.calls())
        self.assertIn("(the median run of 5)", text)
        self.assertIn("Figures in the text: median (range) over 5 runs of each named run (`eager`), on Fake CPU 9000.",
                      text)
        # The page written, the runs' traces go (every build runs them again); their folders stay.
        for k in range(1, 6):
            run_dir = os.path.join(self.d, "out", "runs", "eager", "run%d" % k)
            self.assertTrue(os.path.isdir(run_dir))
            self.assertFalse(os.path.exists(os.path.join(run_dir, "t.json")), run_dir)

    def test_an_advise_figure_is_its_findings_gain_per_step(self):
        d = lesson("<!-- run: eager runs=5: --size 64 -->\n"
                   "Attention: <!-- fig: eager advise naive_attention saved -->1 ms<!-- /fig --> a step.\n")
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Attention: 52.5 µs (45.0–60.0 µs) a step.", text)  # half a step: 3 x STEP / 2 over 3 steps
        # A finding exists only past its threshold: runs without it are left out, and said so.
        fake_tools(self, FAKE_LESSON, FAKE_PIL_TRACE_SOME_ADVICE)
        d = lesson("<!-- run: eager runs=3: --size 64 -->\nSome: <!-- fig: eager advise naive_attention saved --><!-- /fig -->;"
                   " none: <!-- fig: eager advise untraced saved --><!-- /fig -->.\n")
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("Some: 50.0 µs (named in 1 of 3 runs); none: not named in these runs.", text)
        for bad in ("<!-- run: e: -x -->\n<!-- fig: e advise untraced --><!-- /fig -->\n",
                    "<!-- run: e: -x -->\n<!-- fig: e advise untraced speed --><!-- /fig -->\n",
                    "<!-- run: e: -x -->\n<!-- fig: e advise untraced saved step=1 --><!-- /fig -->\n"):
            r = run("--lesson-dir", lesson(bad), "--check")
            self.assertEqual(r.returncode, 2, bad + r.stderr)

    def test_a_difference_or_a_ratio_is_of_the_medians_with_the_pairings_ends(self):
        # Per run (k counts runs across the page): a's median steps 100 and 120 us, its first
        # steps 200 and 240 us; b's median steps 90 and 110 us.
        d = lesson("<!-- run: a runs=2: --size 1 -->\n<!-- run: b runs=2: --size 2 -->\n"
                   "First <!-- fig: a step_time step=0 minus a step_time -->1 ms<!-- /fig -->, gain "
                   "<!-- fig: a step_time minus b step_time --><!-- /fig -->, back "
                   "<!-- fig: a step_time minus a step_time step=0 --><!-- /fig -->, ratio "
                   "<!-- fig: a step_time over b step_time --><!-- /fig -->.\n")
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("First 110 µs (80.0–140 µs), gain 10.0 µs (-10.0 to 30.0 µs), back -110 µs (-140 to -80.0 µs), "
                      "ratio 1.10× (0.91–1.33×).", text)
        # Both figures of one unit, one operator, each side a query: else one line, exit 2 (or 1
        # where only the runs can tell).
        self.refused_each("<!-- fig: a step_time minus b step_time over a step_time --><!-- /fig -->",
                          "<!-- fig: a step_time minus --><!-- /fig -->",
                          "<!-- fig: a step_time minus c step_time --><!-- /fig -->",
                          "<!-- fig: a step_time over b bogus --><!-- /fig -->")
        self.refused_as_two_units("<!-- fig: a step_time minus a op=aten::mm self_pct --><!-- /fig -->")

    def test_a_run_the_build_cannot_make_is_said_not_fatal(self):
        fake_tools(self, FAKE_SKIPPING_LESSON, FAKE_PIL_TRACE)
        d = lesson("<!-- run: compiled runs=3: --variant compiled -->\n"
                   "It took <!-- fig: compiled step_time -->1.00 ms<!-- /fig --> a step.\n"
                   "<!-- table: compiled rows=3 -->\n")
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("It took (not run in this build) a step.", text)
        self.assertIn("Not run in this build (`build/bin/09_demo --variant compiled`): --variant compiled: no "
                      "AOTInductor package: this build was configured with -DPIL_WITH_AOTI=OFF", text)
        self.assertEqual(len(os.listdir(self.counter)), 1, "one try, not three")
        # The source keeps the figure it had.
        out = os.path.join(self.d, "upd")
        u = run("--lesson-dir", d, "--update-source", "--exe", self.exe, "--pil-trace", self.pil, "--out-dir", out)
        self.assertEqual(u.returncode, 0, u.stderr)
        with open(os.path.join(d, "README.md")) as f:
            self.assertIn("<!-- fig: compiled step_time -->1.00 ms<!-- /fig -->", f.read())

    def test_a_comparison_says_what_the_runs_show(self):
        # Per run (k counts runs across the page): a's steps 100 and 120 us, b's first-step gaps
        # 475 and 310 us: apart, a the less; a against itself overlaps.
        cmp = "<!-- cmp: a step_time vs b gap range=matmul_add op=aten::matmul | shorter | as long | longer -->%s<!-- /cmp -->"
        back = "<!-- cmp: b gap range=matmul_add op=aten::matmul vs a step_time | shorter | as long | longer -->longer<!-- /cmp -->"
        same = "<!-- cmp: a step_time vs a step_time | shorter | as long | longer -->as long<!-- /cmp -->"
        d = lesson("<!-- run: a runs=2: --size 1 -->\n<!-- run: b runs=2: --size 2 -->\n"
                   "A step was " + cmp % "longer" + " than the gap (<!-- fig: a step_time --><!-- /fig -->); "
                   + back + "; " + same + ".\n")
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("A step was shorter than the gap (110 µs (100–120 µs)); longer; as long.", text)
        self.assertNotIn("cmp:", text)
        # --update-source writes the runs' choice into the text GitHub shows (the same runs again).
        fake_tools(self, FAKE_LESSON, FAKE_PIL_TRACE)
        u = run("--lesson-dir", d, "--update-source", "--exe", self.exe, "--pil-trace", self.pil, "--out-dir",
                os.path.join(self.d, "upd"))
        self.assertEqual(u.returncode, 0, u.stderr)
        with open(os.path.join(d, "README.md")) as f:
            self.assertIn(cmp % "shorter", f.read())
        # A text that is none of the three, a bad shape or query: one line, exit 2.
        self.refused_each(cmp % "quicker", "<!-- cmp: a step_time vs b step_time | x | y -->x<!-- /cmp -->",
                          "<!-- cmp: a step_time | x | y | z -->x<!-- /cmp -->",
                          "<!-- cmp: a step_time vs c step_time | x | y | z -->x<!-- /cmp -->",
                          "<!-- cmp: a step_time vs b bogus | x | y | z -->x<!-- /cmp -->",
                          "<!-- cmp: a step_time vs b step_time | x | | z -->x<!-- /cmp -->",
                          "<!-- cmp: a step_time vs b step_time | x | y | z -->x with no end")
        # Two units cannot be compared: the build fails and writes nothing.
        self.refused_as_two_units("<!-- cmp: a step_time vs a op=aten::mm self_pct | x | y | z -->x<!-- /cmp -->")

    def test_bad_fig_markers_are_one_line_and_exit_2(self):
        for body in ("a op=aten::mm bogus", "a op=aten::mm", "a step_time step=x", "a gap range=r",
                     "a summary", "a summary ..x", "a range=r time op=x", "b step_time", "a", "a frobnicate"):
            d = lesson("<!-- run: a: --size 1 -->\nText <!-- fig: %s -->1<!-- /fig -->.\n" % body)
            r = run("--lesson-dir", d, "--check")
            self.assertEqual(r.returncode, 2, body + ": " + r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn("README.md:2", r.stderr)
        d = lesson("<!-- run: a: --size 1 -->\nText <!-- fig: a step_time -->1 with no end.\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 2)
        d = lesson("<!-- run: a runs=0: --size 1 -->\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 2)

    def test_a_figure_not_in_the_trace_fails_and_writes_nothing(self):
        d = lesson("<!-- run: a runs=2: --size 1 -->\nText <!-- fig: a op=aten::nope calls -->1<!-- /fig -->.\n")
        r, text = self.make(d)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("aten::nope", r.stderr)
        self.assertIsNone(text)

    def test_timeline_marks_and_the_median_run(self):
        d = lesson("<!-- timeline: e step=0 mark=aten::matmul mark=aten::copy_ -->\n<!-- run: e runs=3: --size 64 -->\n")
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        svg = [c for c in self.calls() if c.startswith("svg ")]
        self.assertEqual(len(svg), 1)
        # Medians 100, 120, 90 µs: the median run is run 1.
        self.assertIn(os.path.join("runs", "e", "run1", "t.json"), svg[0])
        self.assertIn("--step 0 --mark aten::matmul --mark aten::copy_", svg[0])
        self.assertIn("\\image html 09_demo_e_step0_aten_matmul_aten_copy_.svg", text)
        self.assertIn("(step 0 of the median run of 3; arrows at aten::matmul, aten::copy_)", text)

    def test_another_source_takes_its_stem_as_prefix(self):
        d = lesson("# Demo <!-- {#lesson09} -->\n")
        os.makedirs(os.path.join(d, "..", "docs"))
        src = os.path.join(d, "..", "docs", "perfetto.md")
        with open(src, "w") as f:
            f.write("# Perfetto <!-- {#perfetto} -->\n<!-- run: a: --size 64 -->\n<!-- timeline: a step=1 -->\n"
                    "<!-- snippet: variant-x -->\n```cpp\nint x() {\n  return helper();\n}\n```\n")
        self.assertEqual(run("--lesson-dir", d, "--source", src, "--check", "--skip-outputs").returncode, 0)
        r, text = self.make(d, "--source", src)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\\image html perfetto_a_step1.svg", text)
        self.assertIn("# Perfetto {#perfetto}", text)
        self.assertIn("\\snippet 09_demo/main.cpp variant-x", text)
        self.assertTrue(os.path.isfile(os.path.join(self.d, "out", "perfetto_a_step1.svg")))
        self.assertTrue(os.path.isdir(os.path.join(self.d, "out", "runs", "perfetto_a")))

    def update(self, d, *extra):
        return run("--lesson-dir", d, "--update-source", "--exe", self.exe, "--pil-trace", self.pil, "--out-dir",
                   os.path.join(self.d, "upd"), *extra)

    def test_update_source_commits_the_outputs_and_check_asks_for_them(self):
        d = lesson("# Demo\n\n<!-- run: e runs=3: --size 64 -->\n"
                   "A step took <!-- fig: e step_time -->1 ms<!-- /fig -->.\n"
                   "<!-- table: e rows=3 -->\n\nProse.\n<!-- timeline: e step=1 mark=aten::mm -->\n<!-- summary: e -->\n"
                   "<!-- advise: e -->\n")
        readme = os.path.join(d, "README.md")
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("README.md:5: table e: no committed output", r.stderr)
        u = self.update(d, "--conditions", "2 shared cores, a build beside")
        self.assertEqual(u.returncode, 0, u.stderr)
        self.assertEqual(len(os.listdir(self.counter)), 3, "one set of runs for figures and outputs")
        with open(readme) as f:
            text = f.read()
        # The figure and the outputs from the same runs: the median run (run 1, 100 µs) for the outputs.
        self.assertIn("A step took <!-- fig: e step_time -->100 µs (90.0–120 µs)<!-- /fig -->.", text)
        self.assertRegex(text, r"<!-- table: e rows=3 -->\n<!-- made: sha256=[0-9a-f]{16} -->\n```text\n"
                               r"ops of .*/runs/e/run1/t.json\n```\n\*Reference run committed with this page: "
                               r"`build/bin/09_demo --device cpu --seed 0 --size 64` \(of 3 runs, the one with the median step "
                               r"time\), on Fake CPU 9000 \(\d+ cores; 2 shared cores, a build beside; load average [0-9.]+ "
                               r"when the runs began\), \d{4}-\d\d-\d\d\. The table's first 3 rows \(`pil-trace ops "
                               r"--row-limit 3` on its trace; the run prints up to 15\)\. The built site shows its own "
                               r"runs\.\*\n<!-- /table -->\n\nProse\.\n")
        self.assertIn("![Timeline of build/bin/09_demo --size 64 (step 1 of the median run of 3; an arrow at aten::mm)]"
                      "(docs/09_demo_e_step1_aten_mm.svg)", text)
        self.assertTrue(os.path.isfile(os.path.join(d, "docs", "09_demo_e_step1_aten_mm.svg")))
        self.assertIn("<!-- summary: e -->\n<!-- made: sha256=", text)
        self.assertIn("summary of ", text)
        # advise's text names its trace as the reader's build names it, wherever it names it.
        advice = text[text.index("<!-- advise: e -->"):]
        self.assertIn("advise of traces/", advice)
        self.assertRegex(advice, r"see the effect: build/bin/pil-trace ops traces/[^/\s]+/t\.json\n")
        self.assertNotIn("/runs/", advice)
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        # The site replaces the committed outputs with its own runs'.
        for f in os.listdir(self.counter):
            os.unlink(os.path.join(self.counter, f))
        r, page = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("made:", page)
        self.assertNotIn("Reference run", page)
        self.assertNotIn("```text", page)
        self.assertIn("\\image html 09_demo_e_step1_aten_mm.svg", page)
        self.assertIn("ops of " + os.path.join(self.d, "out", "runs", "e"), page)
        # Updating again replaces the outputs, not adds to them.
        for f in os.listdir(self.counter):
            os.unlink(os.path.join(self.counter, f))
        self.assertEqual(self.update(d).returncode, 0)
        with open(readme) as f:
            again = f.read()
        self.assertEqual(again.count("<!-- made:"), 4)
        self.assertEqual(again.count("<!-- /table -->"), 1)

    def test_the_command_named_holds_the_thread_variables(self):
        d = lesson("<!-- run: e: --size 64 -->\n<!-- table: e rows=3 -->\n")
        r = subprocess.run([sys.executable, SCRIPT, "--lesson-dir", d, "--update-source", "--exe", self.exe,
                            "--pil-trace", self.pil, "--out-dir", os.path.join(self.d, "upd")],
                           capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "README.md")) as f:
            self.assertIn("`OMP_NUM_THREADS=1 build/bin/09_demo --device cpu --seed 0 --size 64`, on Fake CPU", f.read())

    def test_check_fails_when_the_marker_flags_or_code_change(self):
        d = lesson("<!-- run: e: --size 64 -->\n<!-- table: e rows=3 -->\n<!-- timeline: e step=0 -->\n")
        readme = os.path.join(d, "README.md")
        self.assertEqual(self.update(d).returncode, 0)
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        with open(readme) as f:
            committed = f.read()

        def stale(edit_readme=None, edit_file=None):
            with open(readme, "w") as f:
                f.write(edit_readme(committed) if edit_readme else committed)
            r = run("--lesson-dir", d, "--check")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn("made from another version", r.stderr)
            return r.stderr

        self.assertIn("README.md:2: table e", stale(lambda t: t.replace("rows=3", "rows=4")))
        self.assertIn("README.md:2: table e", stale(lambda t: t.replace("--size 64", "--size 32")))
        self.assertIn("README.md:2: table e", stale(lambda t: t.replace("run: e:", "run: e runs=2:")))
        with open(os.path.join(d, "main.cpp"), "a") as f:
            f.write("// a change of the lesson's code\n")
        stale()
        self.assertEqual(self.update(d).returncode, 0)
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        # A file's date is not its content: touched, the output stays current.
        os.utime(os.path.join(d, "main.cpp"), (0, 0))
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        # A committed picture that went missing fails too.
        os.unlink(os.path.join(d, "docs", "09_demo_e_step0.svg"))
        r = run("--lesson-dir", d, "--check")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("09_demo_e_step0.svg is missing", r.stderr)
        # --skip-outputs asks for none.
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)

    def test_the_shared_models_a_lesson_includes_are_its_code_too(self):
        d = lesson("<!-- run: e: --size 64 -->\n<!-- table: e rows=3 -->\n")
        models = os.path.join(d, os.pardir, "common", "models")
        os.makedirs(models)
        for name in ("block.h", "block.cpp", "other.cpp"):
            with open(os.path.join(models, name), "w") as f:
                f.write("// %s\n" % name)
        with open(os.path.join(d, "main.cpp"), "a") as f:
            f.write('#include "models/block.h"\n')
        self.assertEqual(self.update(d).returncode, 0)
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        # A model the lesson does not include is not its code.
        with open(os.path.join(models, "other.cpp"), "a") as f:
            f.write("// changed\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        for name in ("block.cpp", "block.h"):
            with open(os.path.join(models, name), "a") as f:
                f.write("// changed\n")
            r = run("--lesson-dir", d, "--check")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("made from another version", r.stderr)
            self.assertEqual(self.update(d).returncode, 0)
            self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)

    def test_bad_output_blocks_are_one_line_and_exit_2(self):
        one_line_usage_errors(self, (
            "<!-- run: e: -x -->\n<!-- table: e -->\n<!-- made: sha256=0123456789abcdef -->\nno end\n",
            "<!-- run: e: -x -->\n<!-- table: e -->\n<!-- made: sha256=0123456789abcdef -->\n<!-- /timeline -->\n",
            "<!-- run: e: -x -->\n<!-- /table -->\n",
            "<!-- run: e: -x -->\n<!-- made: sha256=0123456789abcdef -->\n",
            "<!-- ranks: never-ran -->\n"))

    def test_links_to_pages_become_refs_and_page_ids_hide_from_github(self):
        d = lesson("# Demo <!-- {#lesson09} -->\n\nSee [the cheat sheet](../docs/cheat.md#the-rows) and "
                   "[a picture](docs/x.svg).\n\n```sh\ncat [x](../docs/cheat.md)\n```\n")
        os.makedirs(os.path.join(d, "..", "docs"))
        with open(os.path.join(d, "..", "docs", "cheat.md"), "w") as f:
            f.write("# Cheat sheet <!-- {#cheatsheet} -->\n\n## The rows <!-- {#cheat_rows} -->\n\n## No id\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# Demo {#lesson09}\n", text)
        # A link to a section refers to that heading's id (found by GitHub's anchor of its title).
        self.assertIn('See \\ref cheat_rows "the cheat sheet" and [a picture](docs/x.svg).', text)
        self.assertIn("cat [x](../docs/cheat.md)", text)  # code stays code
        one_line_usage_errors(self, ("See [08](../08_prev/README.md).\n", "See [none](../docs/none.md).\n",
                                     "See [a section](../docs/cheat.md#no-id).\n",
                                     "See [a section](../docs/cheat.md#none-such).\n",
                                     # GitHub joins a link's text over a line break; the \\ref, line by
                                     # line, cannot: the chapter's Doxygen build failed on one.
                                     "See [the cheat\nsheet](../docs/cheat.md) here.\n"))

    def test_details_become_htmlonly_blocks(self):
        d = lesson("Guess.\n\n<details><summary>Answer</summary>\n\nTwo operators.\n\n- a list\n</details>\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\\htmlonly[block]<details><summary>Answer</summary>\\endhtmlonly\n\nTwo operators.\n", text)
        self.assertIn("- a list\n\\htmlonly[block]</details>\\endhtmlonly\n", text)
        one_line_usage_errors(self, ("<details><summary>Answer</summary>\nno end\n", "</details>\n",
                    "<details><summary>A</summary>\n<details><summary>B</summary>\n</details>\n</details>\n",
                    "<details>\nno summary\n</details>\n"))

    def test_nav_links_become_refs_inside_full_site(self):
        d = lesson("# Demo <!-- {#lesson09} -->\n\n<!-- nav -->\n"
                   "Previous: [08_prev](../08_prev/README.md) · Next: [the cheat sheet](../docs/cheat.md)\n\nEnd.\n")
        os.makedirs(os.path.join(d, "..", "08_prev"))
        with open(os.path.join(d, "..", "08_prev", "README.md"), "w") as f:
            f.write("# 08_prev — before <!-- {#lesson08} -->\n")
        os.makedirs(os.path.join(d, "..", "docs"))
        with open(os.path.join(d, "..", "docs", "cheat.md"), "w") as f:
            f.write("# Cheat sheet <!-- {#cheatsheet} -->\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\\if full_site\nPrevious: \\ref lesson08 · Next: \\ref cheatsheet\n\\endif\n\nEnd.", text)
        self.assertNotIn("README.md", text)
        one_line_usage_errors(self, ("<!-- nav -->\nPrevious: [x](../07_none/README.md)\n", "<!-- nav -->\nno links\n",
                    "<!-- nav -->\n[site](https://example.com)\n", "<!-- nav -->\n"))

    def test_a_nav_link_to_a_section_refers_to_its_heading(self):
        # Another lesson's section: the site refers to the heading's id and shows its title
        # (lesson 03 named lesson 01's section in words, with a link to the page's top).
        d = lesson("# Demo <!-- {#lesson09} -->\n\n<!-- nav -->\n"
                   "The map: lesson 08's section [Compiled: the map](../08_prev/README.md#compiled-the-map).\n")
        os.makedirs(os.path.join(d, "..", "08_prev"))
        with open(os.path.join(d, "..", "08_prev", "README.md"), "w") as f:
            f.write("# 08_prev — before <!-- {#lesson08} -->\n\n### Compiled: the map <!-- {#lesson08_map} -->\n\n"
                    "### No id\n")
        self.assertEqual(run("--lesson-dir", d, "--check").returncode, 0)
        r, text = self.make(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\\if full_site\nThe map: lesson 08's section \\ref lesson08_map.\n\\endif\n", text)
        for fragment, said in (("no-id", "give that heading a page id"), ("none-such", "no heading with that GitHub anchor")):
            with open(os.path.join(d, "README.md"), "w") as f:
                f.write("# Demo <!-- {#lesson09} -->\n\n<!-- nav -->\nSee [x](../08_prev/README.md#%s)\n" % fragment)
            r = run("--lesson-dir", d, "--check")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn(said, r.stderr)



class PageOfItsOwn(unittest.TestCase):
    """A page of docs/ without a lesson (--source alone): written for GitHub, made for Doxygen;
    its snippets name their file (// [name] in C++, # [name] in Python); Doxygen-only syntax in
    the text GitHub shows is an error, here and in --github-text."""

    def setUp(self):
        self.root = new_folder()
        os.makedirs(os.path.join(self.root, "docs", "examples"))
        os.makedirs(os.path.join(self.root, "09_demo"))
        self.write("docs/examples/ex.cpp", "int main() {\n  // [body]\n  return 0;\n  // [body]\n}\n")
        self.write("docs/examples/ex.py", "def f():\n    # [body]\n    return 0\n    # [body]\n")
        self.write("docs/cheat.md", "# Cheat sheet <!-- {#cheatsheet} -->\n")
        self.write("09_demo/README.md", "# 09_demo <!-- {#lesson09} -->\n")

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)

    def page(self, text, *flags):
        self.write("docs/page.md", text)
        out = os.path.join(self.root, "out", "page.md")
        r = run("--source", os.path.join(self.root, "docs", "page.md"), "--root", self.root, "--page", out, *flags)
        if r.returncode:
            return r, None
        with open(out) as f:
            return r, f.read()

    def check(self, text, *flags):
        self.write("docs/page.md", text)
        return run("--source", os.path.join(self.root, "docs", "page.md"), "--root", self.root, "--check", *flags)

    def test_a_page_for_github_made_for_doxygen(self):
        source = ("# A page <!-- {#a_page} -->\n\nIntro, see [the cheat sheet](cheat.md).\n\n"
                  "<!-- snippet: body from=docs/examples/ex.cpp -->\n```cpp\nreturn 0;\n```\n\n"
                  "<!-- snippet: body from=docs/examples/ex.py -->\n```python\nreturn 0\n```\n\n"
                  "<!-- site: The <a href=\"annotated.html\">API reference</a>. -->\n"
                  "The headers, in [common/](../common/).\n\n"
                  "```sh\necho '\\ref is code here' [TOC]\n```\n")
        self.assertEqual(self.check(source).returncode, 0, self.check(source).stderr)
        r, text = self.page(source)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(text.startswith("# A page {#a_page}\n\n[TOC]\n"), text)
        self.assertIn('Intro, see \\ref cheatsheet "the cheat sheet".', text)
        self.assertIn("\\snippet docs/examples/ex.cpp body", text)
        self.assertIn("\\snippet docs/examples/ex.py body", text)
        self.assertIn('The <a href="annotated.html">API reference</a>.\n', text)
        self.assertNotIn("common/", text)
        self.assertIn("echo '\\ref is code here' [TOC]", text)
        self.assertNotIn("See also", text)  # a lesson's page's footer

    def test_a_stale_snippet_copy_fails(self):
        r = self.check("<!-- snippet: body from=docs/examples/ex.py -->\n```python\nreturn 1\n```\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("docs/examples/ex.py's `# [body]` region", r.stderr)
        r = self.check("<!-- snippet: body -->\n```cpp\nreturn 0;\n```\n")  # no lesson: from= needed
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_doxygen_only_syntax_in_the_github_text_fails(self):
        for text in ("# Title {#a_page}\n", "See \\ref cheatsheet.\n", "[TOC]\n",
                     "\\snippet docs/examples/ex.cpp body\n", "\\verbatim\nx\n\\endverbatim\n",
                     "<!-- nav -->\nSee \\ref lesson09 and [x](cheat.md).\n"):
            r = self.check(text)
            self.assertEqual(r.returncode, 2, text + r.stderr)
            self.assertIn("Doxygen's syntax", r.stderr)
        for text in ("Code: `\\ref x` and `[TOC]`.\n", "<!-- \\ref hidden -->\n", "```text\n\\ref x {#y}\n```\n"):
            self.assertEqual(self.check(text).returncode, 0, text)

    def test_a_run_marker_needs_a_lesson(self):
        r = self.check("<!-- run: a: --size 1 -->\n")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--lesson-dir", r.stderr)

    def test_lessons_are_linked_from_full_site_pages_only(self):
        text = "Start with [09_demo](../09_demo/README.md).\n"
        self.assertEqual(self.check(text).returncode, 2)
        r, page = self.page(text, "--full-site")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('Start with \\ref lesson09 "09_demo".', page)

    def test_github_text_checks_every_markdown_file(self):
        self.write("docs/page.md", "# Page <!-- {#page} -->\nSee [x](cheat.md).\n<!--\n\\ref in a comment\n-->\n")
        os.makedirs(os.path.join(self.root, "build", "docs"))
        self.write("build/docs/made.md", "# Made {#made}\n\\ref x\n")  # the build's pages are Doxygen's
        r = run("--github-text", "--root", self.root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.write("09_demo/README.md", "# 09_demo {#lesson09}\n\nSee \\ref cheatsheet.\n")
        r = run("--github-text", "--root", self.root)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("09_demo/README.md:1: {#lesson09}", r.stderr)
        self.assertIn("09_demo/README.md:3: \\ref", r.stderr)
        self.assertNotIn("build", r.stderr.replace(self.root, ""))

    def test_a_file_that_is_not_utf8_text_is_one_line_and_exit_2(self):
        # It ended in a UnicodeDecodeError traceback.
        bad = os.path.join(self.root, "binary.md")
        with open(bad, "wb") as f:
            f.write(b"# x\n\xd0\x88\xff\n")
        r = run("--github-text", bad)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertEqual(r.stderr, "docs_page.py: error: %s: not UTF-8 text; allowed: markdown pages\n" % bad)
        r = run("--check", "--source", bad)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)


# A fake lesson that starts two ranks: its launcher prefixes each rank's lines with "[rankK] ".
FAKE_RANKS_LESSON = FAKE_LESSON_HEAD + """for r in 0 1; do echo $n > "$out/t_rank$r.json"; done
echo "[rank0] == 09_demo | cpu (Fake CPU 9000) | fp32"
echo "[rank0] trace: $out/t_rank0.json"
echo "[rank1] trace: $out/t_rank1.json"
"""

# A fake pil-trace for it: `ranks DIR --json` with rank 0's overlap and communication per run k
# (hidden 50, 60, 40%), the table and picture otherwise; summary --json for the median run.
FAKE_RANKS_PIL_TRACE = """#!%(python)s
import json, os, sys
args = sys.argv[1:]
with open("%(log)s", "a") as f:
    f.write(" ".join(args) + "\\n")
sub, where = args[0], args[1]
k = int(open(os.path.join(where, "t_rank0.json") if os.path.isdir(where) else where).read().strip())
OVER, COMM = [5, 6, 4], [10, 10, 10]
if sub == "ranks" and "--json" in args:
    steps = [{"duration_ns": 100, "compute_ns": 80, "comm_ns": COMM[k] * 1000, "overlap_ns": OVER[k] * 1000,
              "exposed_comm_ns": (COMM[k] - OVER[k]) * 1000, "collectives": 3}] * 3
    print(json.dumps({"ranks": [{"steps": steps}, {"steps": steps}]}))
elif sub == "ranks":
    open(args[args.index("--svg") + 1], "w").close()
    print("ranks table of " + where)
    print("svg: " + args[args.index("--svg") + 1])
elif sub == "summary":
    print(json.dumps({"steps": {"count": 3, "median_ns": 100 + k, "durations_ns": [100, 100, 100]}}))
"""


class Ranks(unittest.TestCase):
    """A lesson that starts its own ranks: the [rankK] prefix, the ranks marker and its figures."""

    def setUp(self):
        fake_tools(self, FAKE_RANKS_LESSON, FAKE_RANKS_PIL_TRACE)

    def test_ranks_table_picture_and_hidden_share(self):
        d = lesson("<!-- run: b runs=3: --ranks 2 -->\n"
                   "Hidden <!-- fig: b ranks rank=0 hidden_pct -->1%<!-- /fig -->, "
                   "<!-- fig: b ranks rank=1 collectives -->9<!-- /fig --> calls.\n"
                   "<!-- ranks: b step=1 -->\n")
        self.assertEqual(run("--lesson-dir", d, "--check", "--skip-outputs").returncode, 0)
        out = os.path.join(self.d, "out")
        page = os.path.join(out, "page.md")
        r = run("--lesson-dir", d, "--exe", self.exe, "--pil-trace", self.pil, "--out-dir", out, "--page", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            text = f.read()
        self.assertIn("Hidden 50% (40–60%), 3 calls.", text)
        self.assertIn("ranks table of " + os.path.join(out, "runs", "b", "run2"), text)  # the median run
        self.assertNotIn("svg: ", text)
        self.assertIn("\\image html 09_demo_b_ranks_step1.svg", text)
        self.assertIn("on Fake CPU 9000", text)
        one_line_usage_errors(self, ("<!-- run: b: -x -->\nHidden <!-- fig: b ranks hidden_pct --><!-- /fig -->\n",
                                     "<!-- run: b: -x -->\nHidden <!-- fig: b ranks rank=0 waits --><!-- /fig -->\n"))

    def test_the_median_run_is_rank_0s_whichever_rank_printed_first(self):
        # Rank 1 prints its trace first (as lesson 05's does: rank 0 prints the across-ranks table
        # before its own line) and its steps order the runs otherwise: run 1 would be the median.
        with open(self.exe, "w") as f:
            f.write((FAKE_LESSON_HEAD % {"counter": self.counter}) +
                    'echo $n > "$out/t_rank0.json"; echo $n > "$out/t_rank0.pt.trace.json"\n'
                    'echo $(( (n + 1) % 3 )) > "$out/t_rank1.pt.trace.json"\n'
                    'echo "[rank1] trace: $out/t_rank1.pt.trace.json"\n'
                    'echo "[rank0] == 09_demo | cpu (Fake CPU 9000) | fp32"\n'
                    'echo "[rank0] trace: $out/t_rank0.pt.trace.json"\n')
        d = lesson("<!-- run: b runs=3: --ranks 2 -->\n<!-- ranks: b step=1 -->\n")
        out = os.path.join(self.d, "out")
        page = os.path.join(out, "page.md")
        r = run("--lesson-dir", d, "--exe", self.exe, "--pil-trace", self.pil, "--out-dir", out, "--page", page)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(page) as f:
            self.assertIn("ranks table of " + os.path.join(out, "runs", "b", "run2"), f.read())

    def test_update_source_writes_the_figures_into_the_readme(self):
        d = lesson("<!-- run: b runs=3: --ranks 2 -->\n"
                   "Hidden <!-- fig: b ranks rank=0 hidden_pct -->1%<!-- /fig --> here.\n<!-- ranks: b -->\n")
        r = run("--lesson-dir", d, "--update-source", "--exe", self.exe, "--pil-trace", self.pil, "--out-dir",
                os.path.join(self.d, "out"))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(d, "README.md")) as f:
            self.assertIn("Hidden <!-- fig: b ranks rank=0 hidden_pct -->50% (40–60%)<!-- /fig --> here.", f.read())
        r = run("--lesson-dir", d, "--update-source", "--exe", self.exe)
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    unittest.main()
