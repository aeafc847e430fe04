#!/usr/bin/env bash
# Set-up shared by ./run-lesson and ./run-tests (source it, then call pil_setup).
#
# pil_setup does, each step only when needed:
#   1. installs the Debian packages the build uses (apt-get; through sudo when not root), and
#      with "pil_setup tests" those only the tests use (chromium, for the docs' render test);
#   2. finds LibTorch: Torch_DIR, or a CMAKE_PREFIX_PATH that holds one, is used as it is and
#      nothing is downloaded; otherwise torch==2.11.0 from PyPI is installed once into a cache
#      outside the checkout (${PIL_CACHE:-~/.cache/profiling-in-libtorch}/torch-2.11.0), which
#      later runs and other clones reuse;
#   3. with "pil_setup tests", installs Holistic Trace Analysis (holistictraceanalysis==0.5.0 and
#      the packages it imports, pinned; not jupyterlab, which it lists but the comparison does not
#      use) from PyPI once into the cache (.../hta-0.5.0): scripts.hta_idle compares pil-trace with
#      it, and skips (77, saying so) where it could not be installed;
#   4. configures the build folder (build/, the "release" preset) when it is not configured yet.
# Environment: PIL_CACHE (cache folder), PIL_BUILD_DIR (default build), Torch_DIR,
# CMAKE_PREFIX_PATH, PIL_CMAKE_ARGS (extra configure arguments).

PIL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PIL_TORCH_VERSION=2.11.0
PIL_BUILD_DIR=${PIL_BUILD_DIR:-$PIL_ROOT/build}
PIL_CACHE=${PIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/profiling-in-libtorch}
PIL_DEBIAN_PACKAGES=(cmake ninja-build g++ ccache python3 libgtest-dev libgmock-dev
                     libbenchmark-dev libcli11-dev nlohmann-json3-dev libsimdjson-dev zlib1g-dev
                     libgloo-dev
                     doxygen doxygen-awesome-css)
# Only the tests need these: a headless browser that renders the docs (docs.render).
PIL_TEST_PACKAGES=(chromium)
# HTA for scripts.hta_idle (tests/scripts/hta_idle_compare.py looks in the same folder), with
# the versions of what it imports that it was compared under.
PIL_HTA_VERSION=0.5.0
PIL_HTA_IMPORTS=("pandas==2.2.3" "numpy==2.2.6" "python-dateutil==2.9.0.post0" "plotly==6.0.1"
                 "networkx==3.4.2" "pydot==3.0.4" "psutil==7.0.0")

pil_say() { echo "[setup] $*" >&2; }
pil_die() { echo "[setup] error: $*" >&2; exit 1; }

pil_install_packages() {
  local missing=() p
  for p in "${PIL_DEBIAN_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
  ((${#missing[@]})) || return 0
  pil_say "installing Debian packages: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || pil_die "need root or sudo to install: ${missing[*]}"
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq || pil_die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null || pil_die "apt-get install ${missing[*]} failed"
}

# Prints the configure argument that names LibTorch (nothing when CMAKE_PREFIX_PATH has one).
pil_torch_arg() {
  if [[ -n ${Torch_DIR:-} ]]; then
    echo "-DTorch_DIR=$Torch_DIR"
    return
  fi
  local entry
  IFS=':;' read -r -a entries <<<"${CMAKE_PREFIX_PATH:-}"
  for entry in "${entries[@]}"; do
    if [[ -n $entry && ( -f $entry/share/cmake/Torch/TorchConfig.cmake ||
                         -f $entry/Torch/TorchConfig.cmake || -f $entry/TorchConfig.cmake ) ]]; then
      return  # the user's LibTorch; CMake reads CMAKE_PREFIX_PATH itself
    fi
  done
  local dir=$PIL_CACHE/torch-$PIL_TORCH_VERSION
  if [[ ! -f $dir/torch/share/cmake/Torch/TorchConfig.cmake ]]; then
    mkdir -p "$PIL_CACHE"
    exec 9>"$PIL_CACHE/.lock"
    flock 9  # one installer at a time; the others wait, then find it done
    if [[ ! -f $dir/torch/share/cmake/Torch/TorchConfig.cmake ]]; then
      pil_say "installing torch==$PIL_TORCH_VERSION from PyPI into $dir (once; about 4.5 GB)"
      local tmp
      tmp=$(mktemp -d "$PIL_CACHE/.torch-$PIL_TORCH_VERSION.XXXXXX")
      if ! python3 -m pip install --quiet --no-compile --disable-pip-version-check \
             --target "$tmp" "torch==$PIL_TORCH_VERSION" >&2; then
        rm -rf "$tmp"
        pil_die "pip install torch==$PIL_TORCH_VERSION failed (set Torch_DIR to use another LibTorch)"
      fi
      # mktemp made the folder private (0700); the cache is meant to be shared (PIL_CACHE on a
      # shared disk, a room of laptops): readable by everyone, as pip's own files are.
      chmod 755 "$tmp"
      rm -rf "$dir"
      mv -T "$tmp" "$dir"  # whole or not at all
    fi
    exec 9>&-
  fi
  echo "-DTorch_DIR=$dir/torch/share/cmake/Torch"
}

# Installs HTA into $PIL_CACHE/hta-$PIL_HTA_VERSION once (whole or not at all). Not fatal: the
# comparison it serves is one test, which then skips saying why.
pil_install_hta() {
  local dir=$PIL_CACHE/hta-$PIL_HTA_VERSION
  [[ -f $dir/hta/trace_analysis.py ]] && return 0
  local skip="scripts.hta_idle will skip"
  # A cache only read (a room's shared folder, mounted read-only) holds torch; HTA is not a reason
  # to stop the tests there.
  if ! mkdir -p "$PIL_CACHE" 2>/dev/null || [[ ! -w $PIL_CACHE ]]; then
    pil_say "warning: $PIL_CACHE is not writable, holistictraceanalysis not installed: $skip"
    return 0
  fi
  exec 8>"$PIL_CACHE/.lock-hta"
  flock 8
  if [[ ! -f $dir/hta/trace_analysis.py ]]; then
    pil_say "installing holistictraceanalysis==$PIL_HTA_VERSION from PyPI into $dir (once; about 220 MB)"
    local tmp pip=(python3 -m pip install --quiet --no-compile --disable-pip-version-check)
    tmp=$(mktemp -d "$PIL_CACHE/.hta-$PIL_HTA_VERSION.XXXXXX") || tmp=
    if [[ -n $tmp ]] && "${pip[@]}" --target "$tmp" "${PIL_HTA_IMPORTS[@]}" >&2 &&
       "${pip[@]}" --target "$tmp" --no-deps "holistictraceanalysis==$PIL_HTA_VERSION" >&2; then
      chmod 755 "$tmp"
      rm -rf "$dir"
      mv -T "$tmp" "$dir"
    else
      [[ -z $tmp ]] || rm -rf "$tmp"
      pil_say "warning: could not install holistictraceanalysis==$PIL_HTA_VERSION: $skip"
    fi
  fi
  exec 8>&-
}

pil_configure() {
  local torch_arg
  torch_arg=$(pil_torch_arg) || exit 1
  if [[ -f $PIL_BUILD_DIR/CMakeCache.txt && -f $PIL_BUILD_DIR/build.ninja ]]; then
    return 0  # configured; the build re-runs CMake itself when a CMakeLists changes
  fi
  pil_say "configuring $PIL_BUILD_DIR"
  # shellcheck disable=SC2086
  cmake -S "$PIL_ROOT" -B "$PIL_BUILD_DIR" --preset release $torch_arg ${PIL_CMAKE_ARGS:-} >&2 ||
    pil_die "configure failed"
}

# pil_setup [tests]: with "tests", the packages only the tests need are installed too.
pil_setup() {
  if [[ ${1:-} == tests ]]; then
    pil_install_packages "${PIL_TEST_PACKAGES[@]}"
    pil_install_hta
  else
    pil_install_packages
  fi
  pil_configure
}
