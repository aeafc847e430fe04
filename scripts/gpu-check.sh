#!/usr/bin/env bash
# The project's own GPU check, for a session lent the GPU machine (../shared/device/README.md).
#
# Here, once:   bash ../shared/device/prepare.sh nlohmann-json3-dev zlib1g-dev
# Then the device tool's run, with carry [".device"] and the command:
#               bash scripts/gpu-check.sh
#
# There it configures against the machine's own LibTorch (torch 2.11, CUDA 13) and the carried
# Debian libraries, builds for the GPU's architecture, runs every test (the gpu label included;
# the <lesson>.gpu runs are the ones below, which keep their traces, so ctest leaves them out),
# runs every lesson's variants on CUDA in bf16 (small traces) and every lesson's GPU benchmarks,
# and leaves in $OUT: gpu-check.log, ctest.txt, traces.tar.gz, bench.tar.gz and
# bench-table.txt (at most 8 files come back). The last lines printed are the benchmark table;
# a failed test, lesson or benchmark, or a missed benchmark goal, makes the exit status 1.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
out=${OUT:-$root/gpu-out}
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1

carried=$root/.device/root
export LD_LIBRARY_PATH="$carried/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'

cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=native \
  -DPIL_USE_CCACHE=OFF -DCMAKE_PREFIX_PATH="$torch_prefix;$carried/usr" || exit 1
cmake --build build-gpu -j "$(nproc)" || exit 1
ctest --test-dir build-gpu --output-on-failure -j 4 -E '[.]gpu$' | tee "$out/ctest.txt"
status=${PIPESTATUS[0]}

# Small traces of every variant of every lesson (bf16), for the docs and CPU-only tests.
traces=$(mktemp -d)
# Runs one lesson command, keeps its key lines, and marks the check failed if the lesson did.
run() {
  local log rc
  log=$(mktemp)
  "$@" > "$log" 2>&1
  rc=$?
  grep -E '^(RESULT|trace|tracer|verify|agrees|memory|==)' "$log"
  if [[ $rc != 0 ]]; then
    echo "FAILED (exit $rc): $*"
    tail -20 "$log"
    status=1
  fi
  rm -f "$log"
}
for size in 64 4096; do
  run build-gpu/bin/01_matmul_add --device cuda --dtype bf16 --size "$size" --variant all \
    --active 3 --out "$traces/01_matmul_add"
done
run build-gpu/bin/02_linear --device cuda --dtype bf16 --variant all --active 3 --out "$traces/02_linear"
run build-gpu/bin/03_mlp --device cuda --dtype bf16 --variant all --active 3 --out "$traces/03_mlp"
run build-gpu/bin/04_transformer --device cuda --dtype bf16 --size 2 --seq 512 --variant all \
  --active 3 --out "$traces/04_transformer"
# 05_data_parallel needs one GPU per rank for NCCL (two NCCL ranks cannot share one GPU): on a
# one-GPU machine it is left out here, and its CPU run (Gloo) is part of ./run-tests.
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if ((gpus >= 2)); then
  run build-gpu/bin/05_data_parallel --ranks 2 --backend nccl --variant all --active 3 \
    --out "$traces/05_data_parallel"
else
  echo "05_data_parallel: skipped: NCCL needs one GPU per rank and this machine has $gpus"
fi
tar -czf "$out/traces.tar.gz" -C "$traces" .

# Benchmarks: each lesson's GPU rows, and its table (which checks the lesson's goals).
: > "$out/bench-table.txt"
for lesson in 01_matmul_add 02_linear 03_mlp 04_transformer; do
  build-gpu/bin/${lesson}_bench --benchmark_filter=/cuda/ --benchmark_min_time=0.2 \
    --benchmark_out="$traces/bench-$lesson.json" --benchmark_out_format=json > /dev/null || status=1
  echo "== $lesson" | tee -a "$out/bench-table.txt"
  python3 scripts/bench_table.py "$traces/bench-$lesson.json" | tee -a "$out/bench-table.txt"
  [[ ${PIPESTATUS[0]} == 0 ]] || status=1
done
tar -czf "$out/bench.tar.gz" -C "$traces" $(cd "$traces" && ls bench-*.json)
echo "gpu-check exit: $status"
exit "$status"
