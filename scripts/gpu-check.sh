#!/usr/bin/env bash
# The project's own GPU check, for a session lent the GPU machine (../shared/device/README.md).
# A session has 15 minutes of device time in all, the machine's start (1-2 minutes) included,
# and at most 10 minutes a call, so the check comes in three parts, one device call each, each
# against a budget it prints at every phase; a phase that runs out of time is stopped and what
# was done still comes back:
#
#   part 1 (tests, 470 s): configure for the GPU's own architecture (nvidia-smi's compute_cap:
#       9.0 -> 90) with the compiled variants off, build the lessons, pil-trace and the check
#       programs of the lessons with GPU checks and pil::profiler's tests in one build, run every
#       lesson's trace runs (ctest label gpu_trace, each at most PIL_TRACE_RUN_TIMEOUT s) and
#       archive their traces under $OUT at once, then run the other gpu-labelled tests and the
#       profiler-labelled ones (-j4) but the long ones, archive what a failed one kept, then the
#       long ones (label gpu_long: suites named *GpuLong, about two minutes each) with the time
#       left, where three minutes are; then, with what time is left, part 2's benchmarks are
#       built (not run; PIL_GPU_BENCH_LESSONS, where set, names them here too, and a name in it
#       that is no lesson with goals stops part 1 at once, exit 2, as it would part 2);
#   part 2 (bench, 240 s): build the benchmarks and run the rows that carry the lessons' goals
#       (scripts/bench_table.py --goal-filter names them; PIL_GPU_BENCH_LESSONS="06_find_and_fix
#       01_matmul_add" runs only those lessons', in that order) with short min-times, each lesson's JSON written
#       straight into $OUT (a call cut short keeps the lessons done), then, where 90 s
#       are left, lesson 01's first-step-gap experiment (scripts/first_step_gap.py, 3 runs a
#       condition; 01_matmul_add and pil-trace built with the benchmarks for it);
#   part 3 (aoti, only if time is left: PIL_AOTI_BUDGET seconds, default 150): turn the
#       compiled variants on (the CPU's packages left out of the build), and run each lesson's
#       `compiled` variant on the GPU in bf16, which compiles its AOTInductor CUDA package (one
#       package per dtype used; TORCHINDUCTOR_COMPILE_THREADS set) and records its trace,
#       archived after each lesson.
# A part fails at once, saying why, where torch sees no usable GPU or the configure finds no CUDA
# compiler (every GPU test would skip, exit 77, and the part would look passed).
#
# Here, once:   bash ../shared/device/prepare.sh nlohmann-json3-dev zlib1g-dev
# Then the device tool's run, carry [".device"]: part 1 with timeout_s 520, then part 2 at once
# (only while the reply's lease says warm: a fresh machine's start and build would eat the
# budget) with the time the reply's lease says is left: PIL_GPU_CHECK_BUDGET=<budget_left_s - 45>
# and timeout_s 20 more (about 14 minutes of the 15 with the machine's start and the transfers); part
# 3 only with what `status` says is left, its budget under it:
# PIL_AOTI_BUDGET=<left - 60> bash scripts/gpu-check.sh aoti
#               bash scripts/gpu-check.sh tests     (then bench, then aoti)
# The machine is held only a short while after a call (the device tool's idle_release_s, 30 s
# when this was written): send the next part at once. The build folder is kept while the machine
# is warm; a part that lands on a fresh machine configures and builds what it needs itself
# (minutes of the budget).
# Anywhere:     scripts/gpu-check.sh --dry-run tests   prints what it would run (it asks
#               nvidia-smi and the build's target list, and runs nothing else); the project's
#               CPU tests check that plan against a fake nvidia-smi (tests/scripts).
#
# The lessons are the project's lesson folders (NN_name/ with a CMakeLists.txt); every target
# built is one the configure made (`cmake --build build-gpu --target help`), not a fixed list.
# Leaves in $OUT (at most 8 files come back): gpu-check.log, traces.tar.gz, ctest.txt,
# ctest-checks.log and ctest-long-checks.log (every check's output, passed ones too) and, when a
# check failed, checks-kept.tar.gz (the traces of its lesson runs) (part 1), bench-LESSON.json
# for each lesson benchmarked (four today), bench-table.txt and first-step-gap.txt (part 2),
# aoti.tar.gz (part 3); in the archives a trace over 4 MiB is cut to its first profiled step
# (a failed check's kept traces: over 64 MiB, and over 4 MiB where the archive would not come
# back whole; see archive below). A failed build,
# check, lesson or benchmark, a missed goal or a phase out of time makes the exit status 1.
set -uo pipefail

dry=0
if [[ ${1:-} == --dry-run ]]; then
  dry=1
  shift
fi
part=${1:-}
case $part in
  tests) budget=470 ;;
  bench) budget=240 ;;
  aoti) budget=${PIL_AOTI_BUDGET:-150} ;;
  *) echo "usage: scripts/gpu-check.sh [--dry-run] tests|bench|aoti (part 1: build, traces and checks;" \
          "part 2: benchmarks; part 3: the AOTInductor CUDA packages)" >&2
     exit 2 ;;
esac
budget=${PIL_GPU_CHECK_BUDGET:-$budget}  # the tests' own, to run a phase out of time
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${PIL_GPU_BUILD_DIR:-build-gpu}
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
if ((!dry)); then exec > >(tee -a "$out/gpu-check.log") 2>&1; fi

t_start=$SECONDS
status=0
left() { echo $((budget - (SECONDS - t_start))); }
phase() {  # phase NAME: the time used so far and what is left of the part's budget
  echo "== [$part $((SECONDS - t_start))s of ${budget}s, $(left)s left] $*"
}
# run CMD...: prints the command, and runs it unless this is a dry run.
run() {
  echo "+ $*"
  ((dry)) || "$@"
}
# within SECONDS CMD...: run with a time limit (exit 124 when it ran out: said, not fatal here).
within() {
  local limit=$1
  shift
  if ((limit < 10)); then
    echo "out of time: not run: $*"
    status=1
    return 124
  fi
  echo "+ [at most ${limit}s] $*"
  ((dry)) && return 0
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  if ((rc == 124 || rc == 137)); then
    echo "out of time after ${limit}s: $*"
    status=1
  fi
  return "$rc"
}

# The GPU's architecture for CMAKE_CUDA_ARCHITECTURES: nvidia-smi's compute_cap "9.0" -> "90".
arch_from_compute_cap() {
  if [[ $1 =~ ^([0-9]+)\.([0-9])$ ]]; then
    echo "${BASH_REMATCH[1]}${BASH_REMATCH[2]}"
  else
    return 1
  fi
}

phase "the machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' ')
arch=$(arch_from_compute_cap "$cap") || {
  echo "gpu-check: nvidia-smi gave no compute capability ('$cap'): is a GPU there?" >&2
  exit 1
}
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
echo "compute capability $cap: CMAKE_CUDA_ARCHITECTURES=$arch; $gpus GPU(s)"
# The Python torch (its LibTorch is the build's): its version, whether it sees the GPU (a run
# where it does not would skip every GPU test, exit 77, and look like a pass), its CMake prefix.
torch_prefix=${PIL_TORCH_PREFIX:-}
if ((!dry)); then
  torch_info=$(python3 -c 'import torch
print("torch", torch.__version__, "CUDA", torch.version.cuda, "GPU usable:", torch.cuda.is_available())
print(torch.utils.cmake_prefix_path)') || { echo "gpu-check: python3 cannot import torch" >&2; exit 1; }
  echo "${torch_info%%$'\n'*}"
  [[ $torch_info == *"GPU usable: True"* ]] || { echo "gpu-check: torch sees no usable GPU" >&2; exit 1; }
  [[ -n $torch_prefix ]] || torch_prefix=${torch_info#*$'\n'}
  nvcc --version | tail -1 || true
fi
[[ -n $torch_prefix ]] || torch_prefix="<the Python torch's cmake_prefix_path>"

carried=$root/.device/root
export LD_LIBRARY_PATH="$carried/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"

# configure AOTI: (re)configures the build folder, compiled variants on or off (on: the CPU's
# packages left out of the build, each compiled variant compiling its CUDA package at its run).
# A configure that found no CUDA compiler would build no CUDA path: a failure, said.
configure() {
  phase "configure (compiled variants $1)"
  run cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
    -DPIL_WITH_AOTI="$1" -DPIL_AOTI_BUILD_PACKAGES=OFF -DPIL_USE_CCACHE=OFF \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$carried/usr" || exit 1
  ((dry)) && return
  grep -q '^CMAKE_CUDA_COMPILER:[A-Z]*=.*nvcc' "$build/CMakeCache.txt" || {
    echo "gpu-check: the configure found no CUDA compiler (CMAKE_CUDA_COMPILER): no CUDA path would be built" >&2
    exit 1
  }
}

# The configure's targets (Ninja's "name: phony" lines), and the lessons among them.
targets_of_build() {
  cmake --build "$build" --target help 2>/dev/null | sed -n 's/^\([A-Za-z0-9_.+-]*\): .*/\1/p' | sort -u
}
lessons=()
for dir in [0-9][0-9]_*/; do
  [[ -f $dir/CMakeLists.txt ]] && lessons+=("${dir%/}")
done
# present TARGET: whether the configure made it.
present() { grep -qxF "$1" <<<"$known"; }

# The executables' CUDA libraries (the wheel's ahead of the toolkit's: cmake/PilDependencies).
log_libraries() {
  local exe
  for exe in "$@"; do
    [[ -x $build/bin/$exe ]] || continue
    echo "$exe loads:"
    ldd "$build/bin/$exe" | grep -E 'lib(cublas|cublasLt|cupti|cudart|torch_cuda)\.so' | sed 's/^[[:space:]]*/  /'
  done
}

# archive NAME DIR [CUT]: DIR (under the build folder) as $out/NAME, or a failure when nothing is
# there. What comes back from the machine is at most 16 MiB a file (../shared/device/README.md):
# a trace over CUT bytes (PIL_TRACE_CUT_BYTES, 4 MiB) goes in cut to its first profiled step
# (`pil-trace slice --step 0`, as NAME.step0.pt.trace.json; the whole one stays on the machine),
# and an archive still over PIL_ARCHIVE_MAX_BYTES (15 MiB) is said and fails the part: it would
# not come back.
cut_bytes=${PIL_TRACE_CUT_BYTES:-$((4 << 20))}
max_bytes=${PIL_ARCHIVE_MAX_BYTES:-$((15 << 20))}
# A failed check's kept traces go in whole up to 64 MiB (a check reads all their steps: the
# per-token loop's three, 20 MB), cut as the others where that archive would not come back.
kept_cut_bytes=${PIL_KEPT_CUT_BYTES:-$((64 << 20))}
archive() {
  local limit=${3:-$cut_bytes}
  if ((dry)); then
    run tar -czf "$out/$1" -C "$build" "$2"
    return
  fi
  if [[ ! -d $build/$2 ]]; then
    echo "nothing to archive: $build/$2 was not written"
    status=1
    return
  fi
  local stage=$build/.archive/$1 big cut size bigs
  rm -rf "$stage" && mkdir -p "$stage"
  cp -al "$build/$2" "$stage/" 2>/dev/null || cp -a "$build/$2" "$stage/" || { status=1; return; }
  # The list first: the cuts are written beside them, and a cut still over the limit is no
  # trace to cut again.
  mapfile -d '' bigs < <(find "$stage" -name '*.pt.trace.json' -size +"$limit"c -print0)
  for big in "${bigs[@]}"; do
    size=$(stat -c %s "$big")
    cut=${big%.pt.trace.json}.step0.pt.trace.json
    if "$build/bin/pil-trace" slice "$big" --step 0 --out "$cut" >/dev/null; then
      echo "archive $1: ${big#"$stage"/} is $size bytes: cut to its first profiled step" \
           "($(stat -c %s "$cut") bytes); the whole trace is left on the machine"
    else
      echo "archive $1: ${big#"$stage"/} is $size bytes and could not be cut: left out"
      status=1
    fi
    rm -f "$big"
  done
  # Made beside and moved in whole, and only one that comes back: a call cut short while it is
  # written, or an archive too large, leaves the last one there was.
  local too_large=0
  run tar -czf "$stage.tar.gz" -C "$stage" "$2" || status=1
  size=$(stat -c %s "$stage.tar.gz" 2>/dev/null || echo 0)
  if ((size > max_bytes)); then
    echo "archive $1: $size bytes, over the $max_bytes a file may have to come back from the machine"
    status=1
    too_large=1
  else
    mv -f "$stage.tar.gz" "$out/$1" || status=1
  fi
  rm -rf "$stage" "$stage.tar.gz"
  return $((too_large ? 3 : 0))  # 3: too large to come back (archive_kept cuts and tries again)
}

# bench_lessons: the lessons part 2 benchmarks, into `benches` (with their filters in
# `goal_filter`): those with goals (scripts/bench_table.py) and a _bench target, or, where
# PIL_GPU_BENCH_LESSONS is set (names, blanks or commas between), only those, in the order given;
# a name that is none of them is a usage error (exit 2), said before anything is built.
bench_lessons() {
  local l filter asked
  with_goals=()
  benches=()
  declare -gA goal_filter=()
  for l in "${lessons[@]}"; do
    filter=$(python3 scripts/bench_table.py --goal-filter "$l")
    present "${l}_bench" && [[ -n $filter ]] && with_goals+=("$l") && goal_filter[$l]=$filter
  done
  benches=("${with_goals[@]}")
  if [[ -n ${PIL_GPU_BENCH_LESSONS+set} ]]; then
    asked=()
    IFS=$', \t\n' read -r -d '' -a asked <<<"$PIL_GPU_BENCH_LESSONS" || true
    benches=()
    for l in "${asked[@]}"; do
      if [[ " ${with_goals[*]} " != *" $l "* ]]; then
        echo "gpu-check: PIL_GPU_BENCH_LESSONS: '$l' is no lesson with goals and a benchmark here;" \
             "allowed: ${with_goals[*]:-none (no _bench target: was Google Benchmark found?)}" >&2
        exit 2
      fi
      benches+=("$l")
    done
    if ((${#benches[@]} == 0)); then
      echo "gpu-check: PIL_GPU_BENCH_LESSONS names no lesson; allowed: ${with_goals[*]:-none}" >&2
      exit 2
    fi
  fi
}

if [[ $part == tests ]]; then
  configure OFF  # every time: a warm machine's build folder may hold part 3's configure
  known=$(targets_of_build)
  bench_lessons  # a name PIL_GPU_BENCH_LESSONS should not have is said before the build
  targets=()
  present pil-trace && targets+=(pil-trace)
  for l in "${lessons[@]}"; do present "$l" && targets+=("$l"); done
  # The check programs of the lessons that have GPU checks (suites named *Gpu: the
  # <lesson>.gpu_checks test cmake/PilLesson.cmake adds), built with the lessons in one build (16
  # cores); -k 0: a check that fails to build leaves the rest built.
  checks=()
  for l in "${lessons[@]}"; do
    present "${l}_test" && grep -Eq 'TEST\([A-Za-z0-9_]*Gpu(Long)?,' "tests/lessons/${l}_test.cpp" 2>/dev/null &&
      checks+=("${l}_test")
  done
  # And pil::profiler's own tests (label profiler), run with the checks: on a GPU they take
  # their GPU branches (CUDA alone records the kernels), which no CPU machine runs.
  present profiler_test && checks+=(profiler_test)
  phase "build: ${targets[*]} ${checks[*]}"
  within "$(left)" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" "${checks[@]}" -- -k 0 || {
    echo "the build failed: going on with what was built"
    status=1
  }
  ((dry)) || log_libraries "${lessons[@]}"

  # Every lesson's trace runs first (one at a time: they time the GPU), archived at once; an
  # earlier run's traces are not taken for this one's.
  phase "the lessons' trace runs (ctest -L gpu_trace)"
  run rm -rf "$build/test-output"
  # Each at most PIL_TRACE_RUN_TIMEOUT seconds (default 120): one slow run does not take the
  # others' time.
  within "$(($(left) - 150))" ctest --test-dir "$build" --output-on-failure --no-tests=error \
    --timeout "${PIL_TRACE_RUN_TIMEOUT:-120}" -L gpu_trace -j 1 || status=1
  phase "archive the traces"
  archive traces.tar.gz test-output

  # A failed check's lesson runs keep their traces here (PIL_GPU_KEEP_DIR: GpuLessonRun in
  # tests/support/lesson_run.h), archived after the checks when there are any.
  run rm -rf "$build/kept-traces"
  export PIL_GPU_KEEP_DIR=$(realpath -m "$build/kept-traces")
  # run_checks LOG LIMIT CTEST-ARGS...: the checks, their ctest lines in ctest.txt (appended) and
  # what every check printed, passed ones too, in LOG (ctest shows only the failures': advice lines
  # such as lesson 02's TF32 kernel names come back only this way).
  run_checks() {
    local log=$1 limit=$2
    shift 2
    if ((dry)); then
      within "$limit" ctest --test-dir "$build" --output-on-failure "$@"
      return
    fi
    rm -f "$build/Testing/Temporary/LastTest.log"
    within "$limit" ctest --test-dir "$build" --output-on-failure "$@" | tee -a "$out/ctest.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    cp "$build/Testing/Temporary/LastTest.log" "$out/$log" 2>/dev/null || true
  }
  ((dry)) || : > "$out/ctest.txt"
  # archive_kept: what failed checks kept, whole where that archive comes back, else cut.
  archive_kept() {
    ((dry)) && return
    [[ -n $(ls -A "$build/kept-traces" 2>/dev/null) ]] || return 0
    local kept_status=$status listing
    # Once per set of kept traces (the long checks keep none of theirs: a second call finds the same).
    listing=$(find "$build/kept-traces" -type f -printf '%P %s\n' | sort)
    [[ $listing == "${kept_listing:-}" ]] && return 0
    kept_listing=$listing
    phase "archive the failed checks' traces"
    archive checks-kept.tar.gz kept-traces "$kept_cut_bytes"
    if (($? == 3)); then
      echo "archive checks-kept.tar.gz: whole, it would not come back: again, each trace over $cut_bytes bytes cut"
      status=$kept_status
      archive checks-kept.tar.gz kept-traces
    fi
  }
  phase "ctest -L \"gpu|profiler\" (the checks, the long ones after)"
  run_checks ctest-checks.log "$(left)" --no-tests=error -j 4 -L "gpu|profiler" -LE "gpu_trace|gpu_long"
  # Before the long checks: a call cut short in them keeps what the others' failures kept.
  archive_kept
  # The long checks (suites named *GpuLong: about two minutes each on an H200) last, with the
  # time left, so that one that runs out of it takes no other check's result with it. Under three
  # minutes left (it is estimated at two, and has not been timed: 06's records a 2 GB trace):
  # said, not run, and the part not failed by it (one stopped midway fails it).
  phase "ctest -L gpu_long (the long checks)"
  long_left=$(($(left) - 5))
  if ((long_left < 180)); then
    echo "not run: the long checks need three minutes at least; ${long_left}s left"
  else
    run_checks ctest-long-checks.log "$long_left" --no-tests=ignore -j 1 -L gpu_long
    archive_kept
  fi
  # What time is left builds part 2's benchmarks (PIL_GPU_BENCH_LESSONS' only, where set), so that
  # part 2, on this machine while it is warm, starts measuring at once. Nothing is measured here,
  # and a build cut short fails nothing: part 2 builds what is missing.
  phase "build part 2's benchmarks with the time left"
  bench_left=$(($(left) - 5))
  if ((${#benches[@]} == 0)); then
    echo "not built: no lesson with goals has a _bench target"
  elif ((bench_left < 20)); then
    echo "not built: ${bench_left}s left (part 2 builds them)"
  else
    kept_status=$status
    within "$bench_left" cmake --build "$build" -j "$(nproc)" --target "${benches[@]/%/_bench}" ||
      echo "not all built: part 2 builds the rest"
    status=$kept_status
  fi
elif [[ $part == bench ]]; then
  # On a fresh machine (part 1's went back: one is held only a short while after a call), the
  # build folder is configured here; on part 1's warm one its benchmarks may be built already.
  [[ -f $build/build.ninja ]] || configure OFF
  known=$(targets_of_build)
  bench_lessons
  # None at all: a part that benchmarked nothing is no pass (the configure made no _bench target).
  if ((${#benches[@]} == 0)); then
    echo "gpu-check: no benchmark to run: no lesson with goals has a _bench target (was Google Benchmark found?)"
    status=1
  fi
  targets=("${benches[@]/%/_bench}")
  if ((${#targets[@]})); then
    phase "build: ${targets[*]}"
    within "$(($(left) - 60))" cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" || exit 1
  fi
  # Each lesson's JSON straight into $out as it ends: a call cut short keeps the lessons done.
  : > "$out/bench-table.txt"
  for l in "${benches[@]}"; do
    filter=${goal_filter[$l]}
    phase "${l}_bench $filter"
    within "$(($(left) - 10))" "$build/bin/${l}_bench" --benchmark_filter="$filter" --benchmark_min_time=0.05 \
      --benchmark_out="$out/bench-$l.json" --benchmark_out_format=json || status=1
    if ((!dry)) && [[ -f $out/bench-$l.json ]]; then
      echo "== $l" | tee -a "$out/bench-table.txt"
      python3 scripts/bench_table.py "$out/bench-$l.json" | tee -a "$out/bench-table.txt"
      [[ ${PIPESTATUS[0]} == 0 ]] || status=1
    fi
  done

  # Lesson 01's page leaves one experiment to a GPU run: the first recorded step's gap with each
  # candidate cause off in turn (scripts/first_step_gap.py). With the time left only: a part
  # short of it says so and is not failed by it.
  phase "the first-step gap on the GPU (lesson 01's page)"
  # What it runs (built already on a warm machine): a build that fails or runs out of time fails
  # nothing, the benchmarks' results are in.
  gap_targets=()
  for t in 01_matmul_add pil-trace; do present "$t" && gap_targets+=("$t"); done
  if ((${#gap_targets[@]} && $(left) - 100 >= 10)); then
    kept_status=$status
    within "$(($(left) - 100))" cmake --build "$build" -j "$(nproc)" --target "${gap_targets[@]}" ||
      echo "the first-step gap's programs did not build"
    status=$kept_status
  fi
  gap_left=$(($(left) - 10))
  if ((gap_left < 90)); then
    echo "not run: the first-step gap needs 90 s; ${gap_left}s left"
  elif ((!dry)) && [[ ! -x $build/bin/01_matmul_add || ! -x $build/bin/pil-trace ]]; then
    echo "not run: the first-step gap needs 01_matmul_add and pil-trace, not built"
  elif ((dry)); then
    within "$gap_left" python3 scripts/first_step_gap.py --build "$build" --device cuda --dtype bf16 --size 64 --runs 3
  else
    within "$gap_left" python3 scripts/first_step_gap.py --build "$build" --device cuda --dtype bf16 --size 64 \
      --runs 3 | tee "$out/first-step-gap.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
  fi
else
  configure ON
  known=$(targets_of_build)
  compiled=()
  for l in "${lessons[@]}"; do
    [[ -f $l/compiled.py ]] && present "$l" && compiled+=("$l")
  done
  phase "build: ${compiled[*]}"
  within "$(($(left) - 60))" cmake --build "$build" -j "$(nproc)" --target "${compiled[@]}" || exit 1
  # One package per dtype used: bf16, the GPU's default; Inductor's compile uses every core.
  export TORCHINDUCTOR_COMPILE_THREADS=$(nproc)
  run rm -rf "$build/aoti-output"
  for l in "${compiled[@]}"; do
    phase "$l --variant compiled (compiles its CUDA package first)"
    within "$(($(left) - 10))" "$build/bin/$l" --device cuda --dtype bf16 --variant compiled --active 3 \
      --out "$build/aoti-output/$l" || status=1
    archive aoti.tar.gz aoti-output  # after each lesson: a call stopped later keeps what was done
  done
fi

phase "done"
echo "gpu-check $part exit: $status"
exit "$status"
