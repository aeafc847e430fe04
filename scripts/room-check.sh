#!/usr/bin/env bash
# A workshop room's pre-flight check, for each laptop once set up (./run-lesson --check runs it):
# in seconds, says whether each lesson, pil-trace and the compiled packages are built, and
# whether a trace can be written and read. Installs nothing, builds nothing; each missing part
# is one line with the one command that builds it. Exit 0 ready, 1 something missing.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
build=$PIL_BUILD_DIR
problems=0
row() {  # row STATUS WHAT [FIX]
  printf '  %-8s %s\n' "$1" "$2${3:+  ->  $3}"
  [[ $1 == ok ]] || problems=$((problems + 1))
}
echo "room check: $PIL_ROOT (build folder $build)"
if [[ ! -f $build/CMakeCache.txt ]]; then
  row missing "the build folder is not configured" "./run-lesson 01_matmul_add --help"
  echo "room check: not ready (1 problem)"
  exit 1
fi
for dir in "$PIL_ROOT"/[0-9][0-9]_*/; do
  lesson=$(basename "$dir")
  [[ -f $dir/CMakeLists.txt ]] || continue
  if [[ -x $build/bin/$lesson ]] && "$build/bin/$lesson" --list > /dev/null 2>&1; then
    row ok "$lesson"
  else
    row missing "$lesson" "cmake --build $build --target $lesson"
  fi
  if [[ -f $dir/compiled.py ]]; then
    built=$(cat "$build"/aoti/"$lesson"/cpu_fp32*.status 2>/dev/null | head -1)
    if [[ $built == ok* ]] && ls "$build"/aoti/"$lesson"/cpu_fp32*.pt2 > /dev/null 2>&1; then
      row ok "$lesson's compiled package"
    elif [[ $built == failed* ]]; then
      row failed "$lesson's compiled package: ${built#failed }" "cmake --build $build --target ${lesson}_aoti"
    else
      row missing "$lesson's compiled package" "cmake --build $build --target ${lesson}_aoti"
    fi
  fi
done
if [[ -x $build/bin/pil-trace ]] && "$build/bin/pil-trace" --help > /dev/null 2>&1; then
  row ok "pil-trace"
else
  row missing "pil-trace" "cmake --build $build --target pil-trace"
fi
# A trace written by a lesson and read back by pil-trace.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -x $build/bin/01_matmul_add ]] &&
   "$build/bin/01_matmul_add" --device cpu --size 16 --warmup-calls 1 --active 1 --out "$tmp" > "$tmp/run.txt" 2>&1 &&
   [[ -x $build/bin/pil-trace ]] &&
   "$build/bin/pil-trace" summary "$tmp/eager_cpu_fp32_n16.pt.trace.json" > /dev/null 2>&1; then
  row ok "a trace written (01_matmul_add --size 16) and read (pil-trace summary)"
else
  row failed "a trace written and read" "./run-lesson 01_matmul_add --device cpu --size 16 (and read what it says)"
fi
if ((problems)); then
  echo "room check: not ready ($problems problem(s))"
  exit 1
fi
echo "room check: ready"
