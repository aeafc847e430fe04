#!/usr/bin/env bash
# The project's own GPU check, for a session lent the GPU machine (../shared/device/README.md).
# A session has 15 minutes of device time in all and at most 10 minutes a call, so the check
# comes in two parts, one device call each:
#
#   part 1 (tests):  configure for the GPU's own architecture (native), build only what the GPU
#                    runs (the lessons, their checks, pil-trace: no docs, no benchmarks), run the
#                    gpu-labelled checks, and every lesson's variants at their default shapes in
#                    bf16, keeping small traces;                              budget: 480 s
#   part 2 (bench):  build the benchmarks and run the rows that carry the lessons' goals with
#                    short min-times (lesson 02 has no goal and is left out); budget: 300 s
#
# Here, once:   bash ../shared/device/prepare.sh nlohmann-json3-dev zlib1g-dev
# Then the device tool's run, carry [".device"], timeout_s 540:
#               bash scripts/gpu-check.sh tests
# and, while the machine is warm (its build folder is kept), timeout_s 360:
#               bash scripts/gpu-check.sh bench
#
# The time budget, measured on this project's 2-core machine (2026-11-30, ccache off, nice'd
# under other builds, so CPU time is the figure that holds): a clean build of what part 1
# needs (50 steps, the CUDA kernels included) took 614 CPU-seconds (user 581 s + sys 33 s);
# part 2's three benchmark binaries 244 CPU-seconds more. On the GPU machine's 16 cores that is
# about 40 s of compiling spread ideally; the heaviest single step (a lesson's main.cpp with
# LibTorch's headers, about a minute) bounds it from below: expect 1.5-2 minutes for part 1's
# build and under a minute for part 2's. The script prints each phase's time and the budget
# left, so the first GPU run replaces these estimates with measurements.
#
# Leaves in $OUT (at most 8 files come back): gpu-check.log, ctest.txt, traces.tar.gz (part 1);
# bench.tar.gz and bench-table.txt (part 2). A failed build, check, lesson or benchmark, or a
# missed benchmark goal, makes the exit status 1.
set -uo pipefail
part=${1:-tests}
case $part in
  tests) budget=480 ;;
  bench) budget=300 ;;
  *) echo "usage: scripts/gpu-check.sh tests|bench (part 1: build and checks; part 2: benchmarks)" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
exec > >(tee -a "$out/gpu-check.log") 2>&1

t_start=$SECONDS
phase() {  # phase NAME: prints the time so far and what is left of the budget
  local used=$((SECONDS - t_start))
  echo "== [$part ${used}s of ${budget}s] $*"
}

carried=$root/.device/root
export LD_LIBRARY_PATH="$carried/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
nvcc --version | tail -1

status=0
lessons=(01_matmul_add 02_linear 03_mlp 04_transformer)
phase "configure"
if [[ ! -f build-gpu/build.ninja ]]; then
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
    -DPIL_USE_CCACHE=OFF -DCMAKE_PREFIX_PATH="$torch_prefix;$carried/usr" || exit 1
fi

if [[ $part == tests ]]; then
  targets=(pil-trace)
  for lesson in "${lessons[@]}"; do targets+=("$lesson" "${lesson}_test"); done
  if (($(nvidia-smi -L 2>/dev/null | wc -l) >= 2)); then targets+=(05_data_parallel); fi
  phase "build: ${targets[*]}"
  cmake --build build-gpu -j "$(nproc)" --target "${targets[@]}" || exit 1

  # The gpu-labelled checks; the <lesson>.gpu runs are the ones below, which keep their traces.
  phase "ctest -L gpu"
  ctest --test-dir build-gpu --output-on-failure -j 2 -L gpu -E '[.]gpu$' | tee "$out/ctest.txt"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1

  # Small traces of every variant of every lesson (bf16), for the docs and CPU-only tests.
  traces=$(mktemp -d)
  # Runs one lesson command, keeps its key lines, and marks the check failed if the lesson did.
  run() {
    local log rc
    log=$(mktemp)
    "$@" > "$log" 2>&1
    rc=$?
    grep -E '^(RESULT|trace|tracer|verify|agrees|memory|==|.* left out)' "$log"
    if [[ $rc != 0 ]]; then
      echo "FAILED (exit $rc): $*"
      tail -20 "$log"
      status=1
    fi
    rm -f "$log"
  }
  for size in 64 4096; do
    phase "01_matmul_add --size $size"
    run build-gpu/bin/01_matmul_add --device cuda --dtype bf16 --size "$size" --variant all \
      --active 3 --out "$traces/01_matmul_add"
  done
  phase "02_linear"
  run build-gpu/bin/02_linear --device cuda --dtype bf16 --variant all --active 3 --out "$traces/02_linear"
  phase "03_mlp"
  run build-gpu/bin/03_mlp --device cuda --dtype bf16 --variant all --active 3 --out "$traces/03_mlp"
  phase "04_transformer"
  run build-gpu/bin/04_transformer --device cuda --dtype bf16 --size 2 --seq 512 --variant all \
    --active 3 --out "$traces/04_transformer"
  # 05_data_parallel needs one GPU per rank for NCCL (two NCCL ranks cannot share one GPU): on a
  # one-GPU machine it is left out here, and its CPU run (Gloo) is part of ./run-tests.
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
  if ((gpus >= 2)); then
    phase "05_data_parallel"
    run build-gpu/bin/05_data_parallel --ranks 2 --backend nccl --variant all --active 3 \
      --out "$traces/05_data_parallel"
  else
    echo "05_data_parallel: left out: NCCL needs one GPU per rank and this machine has $gpus"
  fi
  tar -czf "$out/traces.tar.gz" -C "$traces" .
else
  targets=()
  for lesson in 01_matmul_add 03_mlp 04_transformer; do targets+=("${lesson}_bench"); done
  phase "build: ${targets[*]}"
  cmake --build build-gpu -j "$(nproc)" --target "${targets[@]}" || exit 1
  # Each lesson's rows that carry its goals (scripts/bench_table.py), verified, then timed.
  declare -A filter=(
    [01_matmul_add]='/cuda/bf16/(64|8192)(/|$)'
    [03_mlp]='^(kernel_.*|ceiling_copy)/cuda/'
    [04_transformer]='^(attention_.*|training|ceiling_gemm)/cuda/bf16/'
  )
  benches=$(mktemp -d)
  : > "$out/bench-table.txt"
  for lesson in 01_matmul_add 03_mlp 04_transformer; do
    phase "${lesson}_bench ${filter[$lesson]}"
    build-gpu/bin/${lesson}_bench --benchmark_filter="${filter[$lesson]}" --benchmark_min_time=0.05 \
      --benchmark_out="$benches/bench-$lesson.json" --benchmark_out_format=json > /dev/null || status=1
    echo "== $lesson" | tee -a "$out/bench-table.txt"
    python3 scripts/bench_table.py "$benches/bench-$lesson.json" | tee -a "$out/bench-table.txt"
    [[ ${PIPESTATUS[0]} == 0 ]] || status=1
  done
  tar -czf "$out/bench.tar.gz" -C "$benches" .
fi
phase "done"
if ((SECONDS - t_start > budget)); then
  echo "note: part $part took $((SECONDS - t_start)) s, over its budget of $budget s: shorten it"
fi
echo "gpu-check $part exit: $status"
exit "$status"
