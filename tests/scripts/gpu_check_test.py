#!/usr/bin/env python3
"""scripts/gpu-check.sh --dry-run against a fake nvidia-smi (an H200: compute capability 9.0) and
a fake cmake that answers only `--build DIR --target help` with a target list of the test's
own: the plan it prints configures for sm_90 with the compiled variants off, builds in one build
only targets that both are lesson folders and were in that list (with the check programs of
those with GPU checks), archives the traces before the checks run, runs the long checks after
the others, names the goal benchmarks bench_table.py gives, runs lesson 01's first-step gap
after them, and configures a fresh machine's build folder in part 2 too. The dry run
runs nothing else: the fake cmake fails any other call, and the test sees it. Then the script
for real with a fake cmake, ctest and Python torch: it configures on a warm rerun too, archives
only its own traces, cuts a trace too large to come back from the machine to its first step,
fails a part whose archive would still not come back, stops a phase that runs out of its time,
saying so, with what the phase wrote still archived, and fails at once where torch sees no GPU
or the configure found no CUDA compiler."""
import os
import re
import shutil
import stat
import subprocess
import tempfile
import unittest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPT = os.path.join(ROOT, "scripts", "gpu-check.sh")
LESSONS = sorted(d for d in os.listdir(ROOT)
                 if re.fullmatch(r"[0-9]{2}_\w+", d) and os.path.isfile(os.path.join(ROOT, d, "CMakeLists.txt")))

NVIDIA_SMI = """#!/bin/sh
case "$*" in
  *compute_cap*) echo "${FAKE_COMPUTE_CAP}" ;;
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;
  *) echo "name, driver_version, memory.total [MiB], clocks.max.sm [MHz]"
     echo "NVIDIA H200, 580.95.05, 143771 MiB, 1980 MHz" ;;
esac
"""
CMAKE = """#!/bin/sh
case "$*" in
  "--build "*" --target help") echo "[1/1] All primary targets available:"; cat "$FAKE_TARGETS" ;;
  *) echo "fake cmake: not a dry run: cmake $*" >&2; exit 3 ;;
esac
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


class GpuCheckDryRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.mkdir(bin_dir)
        executable(os.path.join(bin_dir, "nvidia-smi"), NVIDIA_SMI)
        executable(os.path.join(bin_dir, "cmake"), CMAKE)
        # The configure made: two of the lessons (the first and the third), their checks and
        # benchmarks, pil-trace, and a target that is no lesson folder.
        self.made = [LESSONS[0], LESSONS[2]]
        names = ["pil-trace", "99_not_a_lesson", "99_not_a_lesson_test", "docs", LESSONS[0] + "/test", "profiler_test"]
        for lesson in self.made:
            names += [lesson, lesson + "_test", lesson + "_bench"]
        self.targets = os.path.join(self.tmp.name, "targets.txt")
        with open(self.targets, "w") as f:
            f.write("".join(n + ": phony\n" for n in names))
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], FAKE_TARGETS=self.targets,
                        FAKE_COMPUTE_CAP="9.0", OUT=os.path.join(self.tmp.name, "out"),
                        PIL_GPU_BUILD_DIR=os.path.join(self.tmp.name, "build-gpu"), PIL_TORCH_PREFIX="/torch")

    def tearDown(self):
        self.tmp.cleanup()

    def plan(self, part, **env):
        p = subprocess.run(["bash", SCRIPT, "--dry-run", part], capture_output=True, text=True, cwd=ROOT,
                           env=dict(self.env, **env), timeout=120)
        return p

    def commands(self, out):
        """The commands the plan names, without their time limits ("[at most 120s] ")."""
        return [re.sub(r"^\[at most \d+s\] ", "", line[2:]) for line in out.splitlines() if line.startswith("+ ")]

    def index(self, commands, pattern):
        found = [i for i, c in enumerate(commands) if re.search(pattern, c)]
        self.assertEqual(len(found), 1, "one command matching %r in:\n%s" % (pattern, "\n".join(commands)))
        return found[0]

    def test_part1_configures_for_the_gpu_and_keeps_the_traces_before_the_checks(self):
        p = self.plan("tests")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cmds = self.commands(p.stdout)
        configure = cmds[self.index(cmds, r"^cmake -S \. -B ")]
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=90 ", configure)
        self.assertIn("-DPIL_WITH_AOTI=OFF", configure)
        # One build: pil-trace, the lessons, the check programs of the lessons with GPU checks and
        # pil::profiler's tests (their GPU branches).
        build_at = self.index(cmds, r"cmake --build .* --target pil-trace")
        def has_gpu_checks(lesson):
            with open(os.path.join(ROOT, "tests", "lessons", lesson + "_test.cpp")) as f:
                return re.search(r"TEST\([A-Za-z0-9_]*Gpu(Long)?,", f.read()) is not None
        with_gpu_checks = [m for m in self.made if has_gpu_checks(m)]
        self.assertTrue(with_gpu_checks)
        self.assertEqual(cmds[build_at].split("--target ")[1].split(),
                         ["pil-trace"] + self.made + [m + "_test" for m in with_gpu_checks] +
                         ["profiler_test", "--", "-k", "0"])
        traces = self.index(cmds, r"ctest .*--timeout 120 -L gpu_trace -j 1")
        archive = self.index(cmds, r"^tar -czf \S+/traces\.tar\.gz ")
        ctest = self.index(cmds, r"ctest .*-j 4 -L gpu\|profiler -LE gpu_trace\|gpu_long$")
        long_checks = self.index(cmds, r"ctest .*-j 1 -L gpu_long$")
        self.assertLess(build_at, traces)
        self.assertLess(traces, archive)
        self.assertLess(archive, ctest)
        self.assertLess(ctest, long_checks)  # the long checks with the time the others left
        self.assertFalse([c for c in cmds if "first_step_gap" in c], "the gap is part 2's")
        # With the time left, part 2's benchmarks are built (the lessons with goals), not run.
        with_goals = [m for m in self.made if subprocess.run(
            ["python3", os.path.join(ROOT, "scripts", "bench_table.py"), "--goal-filter", m],
            capture_output=True, text=True).stdout.strip()]
        bench_build = self.index(cmds, r"cmake --build .* --target \S+_bench")
        self.assertLess(long_checks, bench_build)
        self.assertEqual(cmds[bench_build].split("--target ")[1].split(), [m + "_bench" for m in with_goals])
        self.assertFalse([c for c in cmds if "--benchmark_filter" in c], "the benchmarks run in part 2")
        only = self.commands(self.plan("tests", PIL_GPU_BENCH_LESSONS=with_goals[-1]).stdout)
        self.assertEqual(only[self.index(only, r"cmake --build .* --target \S+_bench")].split("--target ")[1].split(),
                         [with_goals[-1] + "_bench"])
        for c in (cmds[traces], cmds[ctest]):
            self.assertIn("--no-tests=error", c)
        for c in cmds:
            self.assertNotIn("99_not_a_lesson", c)
        # Each phase prints the budget left.
        self.assertRegex(p.stdout, r"== \[tests \d+s of 470s, \d+s left\] the lessons' trace runs")

    def test_the_architecture_is_the_gpus_own(self):
        p = self.plan("tests", FAKE_COMPUTE_CAP="8.6")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=86 ", p.stdout)
        bad = self.plan("tests", FAKE_COMPUTE_CAP="[N/A]")
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("nvidia-smi gave no compute capability", bad.stderr)

    def test_part2_runs_the_goal_rows_of_the_benchmarks_built(self):
        p = self.plan("bench")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cmds = self.commands(p.stdout)
        with_goals = [m for m in self.made if subprocess.run(
            ["python3", os.path.join(ROOT, "scripts", "bench_table.py"), "--goal-filter", m],
            capture_output=True, text=True).stdout.strip()]
        build_at = self.index(cmds, r"cmake --build .* --target \S+_bench")
        self.assertEqual(cmds[build_at].split("--target ")[1].split(), [m + "_bench" for m in with_goals])
        benches = [self.index(cmds, r"bin/%s_bench --benchmark_filter=" % m) for m in with_goals]
        # Each lesson's JSON straight into $OUT: a call cut short keeps the lessons done.
        for m, at in zip(with_goals, benches):
            self.assertIn("--benchmark_out=%s/bench-%s.json " % (self.env["OUT"], m), cmds[at])
        # Then what the first-step gap runs, built apart (a failure there loses no benchmark),
        # and the experiment with the time the benchmarks left.
        gap_build = self.index(cmds, r"cmake --build .* --target %s pil-trace$" % LESSONS[0])
        gap = self.index(cmds, r"python3 scripts/first_step_gap\.py ")
        self.assertLess(max(benches), gap_build)
        self.assertLess(gap_build, gap)
        self.assertIn("--device cuda --dtype bf16 --size 64", cmds[gap])
        # A fresh machine (no build folder): configured first; a warm one's folder is used.
        self.assertLess(self.index(cmds, r"^cmake -S \. -B "), build_at)
        os.makedirs(self.env["PIL_GPU_BUILD_DIR"])
        open(os.path.join(self.env["PIL_GPU_BUILD_DIR"], "build.ninja"), "w").close()
        warm = self.commands(self.plan("bench").stdout)
        self.assertFalse([c for c in warm if c.startswith("cmake -S ")], "\n".join(warm))

    def test_part2_runs_only_the_lessons_asked_for(self):
        with_goals = [m for m in self.made if subprocess.run(
            ["python3", os.path.join(ROOT, "scripts", "bench_table.py"), "--goal-filter", m],
            capture_output=True, text=True).stdout.strip()]
        self.assertGreaterEqual(len(with_goals), 2)
        # Only those, in the order given (commas or blanks between).
        p = self.plan("bench", PIL_GPU_BENCH_LESSONS="%s, %s" % (with_goals[-1], with_goals[0]))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cmds = self.commands(p.stdout)
        runs = [c for c in cmds if "_bench --benchmark_filter=" in c]
        self.assertEqual(len(runs), 2, "\n".join(cmds))
        self.assertIn("bin/%s_bench " % with_goals[-1], runs[0])
        self.assertIn("bin/%s_bench " % with_goals[0], runs[1])
        # A name that is none of them (a typo beside a good name too) is a usage error, before any build.
        for asked in ("05_data_parallel", "%s,06_find_and_fx" % with_goals[0], " , "):
            bad = self.plan("bench", PIL_GPU_BENCH_LESSONS=asked)
            self.assertEqual(bad.returncode, 2, asked + bad.stdout + bad.stderr)
            self.assertEqual(len(bad.stderr.strip().splitlines()), 1, bad.stderr)
            self.assertIn("gpu-check: PIL_GPU_BENCH_LESSONS", bad.stderr)
            self.assertIn("allowed: " + " ".join(with_goals), bad.stderr)
            self.assertFalse([c for c in self.commands(bad.stdout) if c.startswith("cmake --build")])

    def test_part3_compiles_the_packages_with_the_compiled_variants_on(self):
        p = self.plan("aoti")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cmds = self.commands(p.stdout)
        configure = cmds[self.index(cmds, r"^cmake -S ")]
        self.assertIn("-DPIL_WITH_AOTI=ON", configure)
        self.assertIn("-DPIL_AOTI_BUILD_PACKAGES=OFF", configure)  # no minute for the CPU's packages
        runs = [c for c in cmds if "--variant compiled" in c]
        expected = [m for m in self.made if os.path.isfile(os.path.join(ROOT, m, "compiled.py"))]
        self.assertEqual([os.path.basename(r.split()[0]) for r in runs], expected)
        for r in runs:
            self.assertIn("--device cuda --dtype bf16", r)

    def test_a_bad_part_is_a_usage_error(self):
        p = self.plan("everything")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


FAKE_CMAKE_REAL = """#!/bin/sh
echo "cmake $*" >> "$FAKE_LOG"
case "$*" in
  "--build "*" --target help") echo "[1/1] All primary targets available:"; cat "$FAKE_TARGETS" ;;
  "-S "*) build=$(echo "$*" | sed 's/.*-B \\([^ ]*\\).*/\\1/'); mkdir -p "$build"; touch "$build/build.ninja"
          echo "CMAKE_CUDA_COMPILER:FILEPATH=${FAKE_NVCC-/usr/local/cuda/bin/nvcc}" > "$build/CMakeCache.txt" ;;
  "--build "*) ;;
  *) echo "fake cmake: unexpected: $*" >&2; exit 3 ;;
esac
"""
# The trace runs write a trace, then take FAKE_TRACE_SECONDS; the checks pass at once.
FAKE_CTEST = """#!/bin/sh
echo "ctest $*" >> "$FAKE_LOG"
case "$*" in
  *"-L gpu_trace"*) build=$(echo "$*" | sed 's/.*--test-dir \\([^ ]*\\).*/\\1/')
                    mkdir -p "$build/test-output/01_matmul_add/gpu"
                    echo '{"traceEvents": []}' > "$build/test-output/01_matmul_add/gpu/eager.pt.trace.json"
                    sleep "$FAKE_TRACE_SECONDS" ;;
  *) build=$(echo "$*" | sed 's/.*--test-dir \\([^ ]*\\).*/\\1/')
     if [ -n "$FAKE_FAILED_CHECK" ]; then
       mkdir -p "$PIL_GPU_KEEP_DIR"
       echo '{"traceEvents": []}' > "$PIL_GPU_KEEP_DIR/Suite.Check.1.fix2.pt.trace.json"
     fi
     mkdir -p "$build/Testing/Temporary"
     echo "advice: what a passed check printed" > "$build/Testing/Temporary/LastTest.log"
     echo "100% tests passed, 0 tests failed out of 3" ;;
esac
"""


# The Python torch: its version, whether it sees a GPU (FAKE_GPU_USABLE), its CMake prefix; any
# other python3 call is the real one's.
FAKE_PYTHON = """#!/bin/sh
case "$2" in
  *"import torch"*) echo "torch 2.11.0 CUDA 13.0 GPU usable: ${FAKE_GPU_USABLE:-True}"; echo /torch ;;
  *) exec %s "$@" ;;
esac
""" % shutil.which("python3")


class GpuCheckRun(unittest.TestCase):
    """The script for real, with fake tools: the configure every time, traces archived, a phase
    that runs out of its time stopped and said, and what was done still archived."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.mkdir(bin_dir)
        executable(os.path.join(bin_dir, "nvidia-smi"), NVIDIA_SMI)
        executable(os.path.join(bin_dir, "cmake"), FAKE_CMAKE_REAL)
        executable(os.path.join(bin_dir, "ctest"), FAKE_CTEST)
        executable(os.path.join(bin_dir, "python3"), FAKE_PYTHON)
        executable(os.path.join(bin_dir, "nvcc"), "#!/bin/sh\necho 'Cuda compilation tools, release 13.0'\n")
        self.targets = os.path.join(self.tmp.name, "targets.txt")
        with open(self.targets, "w") as f:
            f.write("pil-trace: phony\n%s: phony\n%s_test: phony\n" % (LESSONS[0], LESSONS[0]))
        self.log = os.path.join(self.tmp.name, "calls.log")
        self.out = os.path.join(self.tmp.name, "out")
        self.env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"], FAKE_TARGETS=self.targets,
                        FAKE_COMPUTE_CAP="9.0", FAKE_LOG=self.log, FAKE_TRACE_SECONDS="0", OUT=self.out,
                        PIL_GPU_BUILD_DIR=os.path.join(self.tmp.name, "build-gpu"), PIL_TORCH_PREFIX="/torch")

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, part="tests", **env):
        return subprocess.run(["bash", SCRIPT, part], capture_output=True, text=True, cwd=ROOT,
                              env=dict(self.env, **env), timeout=300)

    def archived(self):
        listing = subprocess.run(["tar", "-tzf", os.path.join(self.out, "traces.tar.gz")], capture_output=True,
                                 text=True)
        return listing.stdout

    def test_a_warm_rerun_configures_again_and_archives_only_its_own_traces(self):
        first = self.check()
        self.assertEqual(first.returncode, 0, first.stdout + first.stderr)
        self.assertIn("eager.pt.trace.json", self.archived())
        self.assertTrue(os.path.isfile(os.path.join(self.out, "ctest.txt")))
        for log in ("ctest-checks.log", "ctest-long-checks.log"):  # what passed checks printed
            with open(os.path.join(self.out, log)) as f:
                self.assertIn("advice: what a passed check printed", f.read())
        with open(os.path.join(self.out, "ctest.txt")) as f:  # both runs' lines
            self.assertEqual(f.read().count("100% tests passed"), 2)
        stale = os.path.join(self.env["PIL_GPU_BUILD_DIR"], "test-output", "stale.json")
        with open(stale, "w") as f:
            f.write("{}")
        second = self.check()
        self.assertEqual(second.returncode, 0, second.stdout + second.stderr)
        with open(self.log) as f:
            configures = [c for c in f.read().splitlines() if c.startswith("cmake -S ")]
        self.assertEqual(len(configures), 2, "configured on the warm rerun too")
        self.assertNotIn("stale.json", self.archived())

    def test_the_first_step_gap_runs_with_the_time_left_and_comes_back(self):
        # Part 2's, after the benchmarks. Not built: said, and the part not failed by it. (This
        # build has no _bench target: the part fails on that, said, and goes on to the gap.)
        p = self.check("bench")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("gpu-check: no benchmark to run: no lesson with goals has a _bench target", p.stdout)
        self.assertIn("not run: the first-step gap needs 01_matmul_add and pil-trace, not built", p.stdout)
        # Built (fakes: a lesson 01 that writes a summary of three steps, a pil-trace whose chain
        # puts matmul 5 us into its range): the script's table comes back as first-step-gap.txt.
        bin_dir = os.path.join(self.env["PIL_GPU_BUILD_DIR"], "bin")
        os.makedirs(bin_dir, exist_ok=True)
        executable(os.path.join(bin_dir, "01_matmul_add"), """#!/bin/sh
while [ "$1" != --out ]; do shift; done
mkdir -p "$2"
echo '{"steps": [{"cpu_ns": 9000}, {"cpu_ns": 3000}, {"cpu_ns": 3000}]}' > "$2/s.json"
echo "trace: $2/t.json"
echo "summary: $2/s.json"
""")
        executable(os.path.join(bin_dir, "pil-trace"), """#!/bin/sh
echo '[{"depth": 0, "offset_ns": 0}, {"depth": 1, "offset_ns": 5000}]'
""")
        p = self.check("bench")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)  # no _bench target, as above
        self.assertRegex(p.stdout, r"\+ \[at most \d+s\] python3 scripts/first_step_gap\.py --build \S+ --device cuda")
        with open(os.path.join(self.out, "first-step-gap.txt")) as f:
            table = f.read()
        self.assertIn("--device cuda --dtype bf16 --size 64, 3 runs per condition", table)
        self.assertIn("| default | `(none)` | 5 (5-5) | 5 (5-5) | 9 (9-9) | 3 (3-3) |", table)
        # Short of time: said, not run, not failed.
        p = self.check("bench", PIL_GPU_CHECK_BUDGET="95")
        self.assertRegex(p.stdout, r"not run: the first-step gap needs 90 s; -?\d+s left")

    def test_a_failed_checks_traces_come_back_and_only_then(self):
        p = self.check()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.out, "checks-kept.tar.gz")))
        p = self.check(FAKE_FAILED_CHECK="1")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        listing = subprocess.run(["tar", "-tzf", os.path.join(self.out, "checks-kept.tar.gz")], capture_output=True,
                                 text=True)
        self.assertIn("kept-traces/Suite.Check.1.fix2.pt.trace.json", listing.stdout)
        # Archived before the long checks (a call cut short in them keeps it), and not again after
        # them when they kept nothing more.
        self.assertEqual(p.stdout.count("archive the failed checks' traces"), 1, p.stdout)
        self.assertLess(p.stdout.index("archive the failed checks' traces"), p.stdout.index("the long checks"))

    def test_a_failed_checks_traces_come_back_whole_up_to_their_own_limit(self):
        # Whole over the 4 MiB that cuts the lessons' traces (a check reads all their steps),
        # cut over PIL_KEPT_CUT_BYTES, and cut where the whole archive would not come back.
        self.fake_pil_trace()
        kept = lambda: subprocess.run(["tar", "-tzf", os.path.join(self.out, "checks-kept.tar.gz")],
                                      capture_output=True, text=True).stdout
        p = self.check(FAKE_FAILED_CHECK="1", PIL_TRACE_CUT_BYTES="10")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("kept-traces/Suite.Check.1.fix2.pt.trace.json", kept())
        p = self.check(FAKE_FAILED_CHECK="1", PIL_TRACE_CUT_BYTES="10", PIL_KEPT_CUT_BYTES="10")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("kept-traces/Suite.Check.1.fix2.step0.pt.trace.json", kept())
        self.assertNotIn("kept-traces/Suite.Check.1.fix2.pt.trace.json", kept())
        self.assertNotIn("whole, it would not come back", p.stdout)
        # Too large whole: cut and tried again; too large cut too: the part fails, no file left.
        os.remove(os.path.join(self.out, "checks-kept.tar.gz"))
        p = self.check(FAKE_FAILED_CHECK="1", PIL_ARCHIVE_MAX_BYTES="10")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("archive checks-kept.tar.gz: whole, it would not come back: again, each trace over", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.out, "checks-kept.tar.gz")))

    def fake_pil_trace(self):
        bin_dir = os.path.join(self.env["PIL_GPU_BUILD_DIR"], "bin")
        os.makedirs(bin_dir, exist_ok=True)
        # pil-trace slice TRACE --step 0 --out CUT: writes a small trace at CUT.
        executable(os.path.join(bin_dir, "pil-trace"),
                   '#!/bin/sh\nwhile [ "$1" != --out ]; do shift; done\necho \'{"traceEvents": []}\' > "$2"\n')

    def test_a_trace_too_large_to_come_back_goes_in_cut_to_its_first_step(self):
        self.fake_pil_trace()
        p = self.check(PIL_TRACE_CUT_BYTES="10")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("eager.step0.pt.trace.json", self.archived())
        self.assertNotIn("eager.pt.trace.json", self.archived())
        self.assertRegex(p.stdout, r"archive traces\.tar\.gz: test-output/01_matmul_add/gpu/eager\.pt\.trace\.json "
                                   r"is \d+ bytes: cut to its first profiled step")
        # The whole trace stays on the machine.
        self.assertTrue(os.path.isfile(os.path.join(self.env["PIL_GPU_BUILD_DIR"], "test-output", "01_matmul_add",
                                                    "gpu", "eager.pt.trace.json")))

    def test_an_archive_too_large_to_come_back_fails_the_part_saying_so(self):
        p = self.check(PIL_ARCHIVE_MAX_BYTES="10")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"archive traces\.tar\.gz: \d+ bytes, over the 10 a file may have to come back")

    def test_a_phase_out_of_time_is_stopped_and_what_it_wrote_comes_back(self):
        # Budget 165 s: the trace runs get 15 s (the budget less 150 for the checks), and take 60.
        p = self.check(PIL_GPU_CHECK_BUDGET="165", FAKE_TRACE_SECONDS="60")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"out of time after 1[0-5]s: ctest .*-L gpu_trace")
        self.assertIn("eager.pt.trace.json", self.archived())
        self.assertIn("gpu-check tests exit: 1", p.stdout)


    def test_no_gpu_for_torch_or_no_cuda_compiler_fails_at_once_saying_so(self):
        # Every GPU test would skip (exit 77) and the part look passed: it fails, before any build.
        p = self.check(FAKE_GPU_USABLE="False")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("gpu-check: torch sees no usable GPU", p.stdout)  # the log: stdout and stderr
        self.assertFalse(os.path.exists(self.log))  # no cmake or ctest called
        p = self.check(FAKE_NVCC="")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("the configure found no CUDA compiler", p.stdout)
        with open(self.log) as f:
            self.assertNotIn("cmake --build", f.read())


if __name__ == "__main__":
    unittest.main()
