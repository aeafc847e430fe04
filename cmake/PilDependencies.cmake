# Everything the project finds, found once, here. Nothing is downloaded at configure time:
# scripts/setup.sh installs what is missing before configure runs.

# --- CUDA: detected once for the whole workspace --------------------------------------------
# With a toolkit present, every CUDA part is compiled and linked, GPU or not; running it is
# decided at run time. -DPIL_WITH_CUDA=OFF builds the CPU-only project on a CUDA machine.
option(PIL_WITH_CUDA "Build the CUDA parts when a CUDA toolkit is found" ON)
set(PIL_HAVE_CUDA OFF)
if(PIL_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # The kernels are built for Turing (the toolkit's oldest) and Hopper (the H200 the GPU
    # checks run on) unless told otherwise: no JIT compile from PTX at the first launch there,
    # which lesson 01 would otherwise show as part of its slow first step.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "75;90" CACHE STRING "CUDA architectures to build for")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND)
      set(PIL_HAVE_CUDA ON)
    endif()
  endif()
endif()
foreach(_lib cublas cublasLt cupti nvtx3)
  set(PIL_HAVE_${_lib} OFF)
  if(PIL_HAVE_CUDA AND TARGET CUDA::${_lib})
    set(PIL_HAVE_${_lib} ON)
  endif()
endforeach()

# --- LibTorch -------------------------------------------------------------------------------
# PIL_BUILD_LESSONS=OFF builds only what needs no LibTorch: the trace kit, pil-trace and their
# tests (the fuzz preset does this).
option(PIL_BUILD_LESSONS "Build the harness and the lessons (needs LibTorch)" ON)
if(PIL_BUILD_LESSONS)
# Found through CMAKE_PREFIX_PATH or Torch_DIR when the user has one; otherwise in the cache
# that scripts/setup.sh fills from the torch wheel on PyPI (searched last).
set(PIL_TORCH_VERSION_WANTED 2.11.0)
if(DEFINED ENV{PIL_CACHE})
  set(_pil_cache "$ENV{PIL_CACHE}")
elseif(DEFINED ENV{XDG_CACHE_HOME})
  set(_pil_cache "$ENV{XDG_CACHE_HOME}/profiling-in-libtorch")
else()
  set(_pil_cache "$ENV{HOME}/.cache/profiling-in-libtorch")
endif()
# Torch's CMake config rewrites the CUDA flags for its own build (every architecture it knows,
# CMAKE_CUDA_ARCHITECTURES switched off): keep ours as they were.
set(_pil_cuda_flags "${CMAKE_CUDA_FLAGS}")
set(_pil_cuda_archs "${CMAKE_CUDA_ARCHITECTURES}")
unset(CMAKE_CUDA_ARCHITECTURES)
unset(CMAKE_CUDA_ARCHITECTURES CACHE)
if(PIL_HAVE_CUDA AND NOT DEFINED TORCH_CUDA_ARCH_LIST AND _pil_cuda_archs MATCHES "^[0-9a-z;]+$")
  # Torch's spelling of ours ("7.5;9.0a" for "75;90a"), so it does not probe for a GPU; only
  # its own flags see it, and those are put back below.
  string(REGEX REPLACE "([0-9]+)([0-9][a-z]?)" "\\1.\\2" TORCH_CUDA_ARCH_LIST "${_pil_cuda_archs}")
endif()
find_package(Torch REQUIRED
  PATHS "${_pil_cache}/torch-${PIL_TORCH_VERSION_WANTED}/torch/share/cmake")
if(PIL_HAVE_CUDA)
  set(CMAKE_CUDA_FLAGS "${_pil_cuda_flags}")
  set(CMAKE_CUDA_ARCHITECTURES "${_pil_cuda_archs}" CACHE STRING "CUDA architectures to build for")
endif()
set(PIL_TORCH_HAS_CUDA OFF)
if(CAFFE2_USE_CUDA OR TARGET torch_cuda)
  set(PIL_TORCH_HAS_CUDA ON)
endif()
get_filename_component(PIL_TORCH_PREFIX "${Torch_DIR}/../../.." ABSOLUTE)

# c10d, LibTorch's distributed engine, is in the wheel; Gloo's headers are not (Debian's
# libgloo-dev has them; the code is LibTorch's). NCCL's header comes with the wheel's CUDA
# libraries (nvidia/nccl), beside the torch folder.
find_path(PIL_GLOO_INCLUDE_DIR gloo/config.h)
set(PIL_HAVE_C10D_GLOO OFF)
if(PIL_GLOO_INCLUDE_DIR)
  set(PIL_HAVE_C10D_GLOO ON)
endif()
set(PIL_HAVE_C10D_NCCL OFF)
if(PIL_TORCH_HAS_CUDA)
  find_path(PIL_NCCL_INCLUDE_DIR nccl.h
            HINTS "${PIL_TORCH_PREFIX}/../nvidia/nccl/include" NO_DEFAULT_PATH)
  if(PIL_NCCL_INCLUDE_DIR)
    set(PIL_HAVE_C10D_NCCL ON)
  endif()
endif()
endif()

# --- Libraries from Debian ------------------------------------------------------------------
find_package(simdjson CONFIG REQUIRED)       # libsimdjson-dev: the trace parser (On Demand)
find_package(ZLIB REQUIRED)                  # zlib1g-dev: .json.gz traces
find_package(CLI11 CONFIG REQUIRED)          # libcli11-dev: command-line flags
find_package(nlohmann_json CONFIG REQUIRED)  # nlohmann-json3-dev: summary JSON, test checks
find_package(GTest)                          # libgtest-dev
find_package(benchmark CONFIG QUIET)         # libbenchmark-dev
find_package(Doxygen QUIET)                  # doxygen

function(pil_print_summary)
  set(_yes "found")
  set(_no "not found")
  macro(_pil_row label value)
    if(${value})
      set(_v "${_yes}")
    else()
      set(_v "${_no}")
    endif()
    string(APPEND _out "  ${label}${_v}${ARGN}\n")
  endmacro()
  set(_out "\nProfiling in LibTorch — configuration summary\n")
  if(NOT PIL_BUILD_LESSONS)
    string(APPEND _out "  LibTorch          not used (PIL_BUILD_LESSONS=OFF): trace kit only\n")
  elseif(PIL_TORCH_HAS_CUDA)
    string(APPEND _out "  LibTorch          ${Torch_VERSION} (with CUDA) at ${PIL_TORCH_PREFIX}\n")
  else()
    string(APPEND _out "  LibTorch          ${Torch_VERSION} (CPU only) at ${PIL_TORCH_PREFIX}\n")
  endif()
  if(PIL_HAVE_CUDA)
    string(APPEND _out "  CUDA toolkit      ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}/..; "
                       "architectures ${CMAKE_CUDA_ARCHITECTURES}\n")
  else()
    string(APPEND _out "  CUDA toolkit      not found (or PIL_WITH_CUDA=OFF): CPU paths only\n")
  endif()
  _pil_row("cuBLAS            " PIL_HAVE_cublas)
  _pil_row("cuBLASLt          " PIL_HAVE_cublasLt)
  _pil_row("CUPTI             " PIL_HAVE_cupti)
  _pil_row("NVTX3             " PIL_HAVE_nvtx3)
  if(PIL_BUILD_LESSONS)
    _pil_row("c10d Gloo         " PIL_HAVE_C10D_GLOO " (libgloo-dev headers; lesson 05 needs them)")
    _pil_row("c10d NCCL         " PIL_HAVE_C10D_NCCL)
  endif()
  _pil_row("GoogleTest        " GTest_FOUND " ${GTest_VERSION}")
  _pil_row("Google Benchmark  " benchmark_FOUND " ${benchmark_VERSION}")
  _pil_row("Doxygen           " DOXYGEN_FOUND " ${DOXYGEN_VERSION}")
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    string(APPEND _out "  ccache            on\n")
  endif()
  if(PIL_FUZZ)
    string(APPEND _out "  fuzzing           libFuzzer target trace_parse_fuzzer (ctest -L fuzz)\n")
  endif()
  if(PIL_SANITIZE)
    string(APPEND _out "  sanitizers        AddressSanitizer + UBSan on the project's code\n")
  endif()
  message(STATUS "${_out}")
endfunction()
