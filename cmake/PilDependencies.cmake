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
# The lessons' CUDA parts (kernels, cuBLAS and cuBLASLt variants, CUDA graphs) need both
# libraries; a toolkit without one builds the lessons for the CPU and says so in the summary.
set(PIL_LESSONS_CUDA OFF)
set(PIL_LESSONS_CUDA_WHY "")
if(PIL_HAVE_CUDA)
  foreach(_lib cublas cublasLt)
    if(NOT PIL_HAVE_${_lib})
      string(APPEND PIL_LESSONS_CUDA_WHY " ${_lib}")
    endif()
  endforeach()
  if(PIL_LESSONS_CUDA_WHY STREQUAL "")
    set(PIL_LESSONS_CUDA ON)
  else()
    set(PIL_LESSONS_CUDA_WHY "the toolkit lacks${PIL_LESSONS_CUDA_WHY}")
  endif()
endif()

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
if(PIL_HAVE_CUDA AND NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  # Torch's spelling of ours ("7.5+PTX;9.0+PTX" for "75;90", the detected list for "native"),
  # so its configure neither stops on our spelling nor probes for a GPU; only its own flags see
  # it, and those are put back below.
  include(PilCudaArch)
  pil_torch_arch_list(TORCH_CUDA_ARCH_LIST "${_pil_cuda_archs}" "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")
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
if(PIL_LESSONS_CUDA AND NOT PIL_TORCH_HAS_CUDA)
  set(PIL_LESSONS_CUDA OFF)
  set(PIL_LESSONS_CUDA_WHY "this LibTorch is built without CUDA")
endif()
get_filename_component(PIL_TORCH_PREFIX "${Torch_DIR}/../../.." ABSOLUTE)

# Which CUDA libraries the executables load. Linking the toolkit's cuBLAS puts the toolkit's lib
# folder in their RUNPATH ahead of LibTorch's, so LibTorch from the wheel would run on the
# toolkit's cuBLAS (13.0 here) instead of its own (13.1, in the wheel's nvidia/cu13/lib): the
# first library of a name loaded is the one every other library gets. When LibTorch is the
# wheel's, its CUDA libraries' folders come first (CUDA 13 wheels: nvidia/cu13/lib; CUDA 12
# wheels: one folder a library, nvidia/cublas/lib, nvidia/cuda_cupti/lib, ...); otherwise the
# order stays as CMake makes it.
set(PIL_CUDA_RUNTIME_LIBS "")
if(PIL_TORCH_HAS_CUDA)
  get_filename_component(_pil_wheel_nvidia "${PIL_TORCH_PREFIX}/../nvidia" ABSOLUTE)
  file(GLOB _pil_wheel_cuda_libs LIST_DIRECTORIES true "${_pil_wheel_nvidia}/cu[0-9]*/lib"
       "${_pil_wheel_nvidia}/cublas/lib" "${_pil_wheel_nvidia}/cuda_cupti/lib"
       "${_pil_wheel_nvidia}/cuda_runtime/lib")
  set(PIL_CUDA_RUNTIME_LIBS ${_pil_wheel_cuda_libs})
  if(PIL_CUDA_RUNTIME_LIBS)
    list(PREPEND CMAKE_BUILD_RPATH ${PIL_CUDA_RUNTIME_LIBS})
  elseif(IS_DIRECTORY "${_pil_wheel_nvidia}")
    message(WARNING "LibTorch at ${PIL_TORCH_PREFIX} comes with CUDA libraries (${_pil_wheel_nvidia}) in a "
      "layout this project does not know: the lessons may load the toolkit's cuBLAS and CUPTI instead of "
      "LibTorch's own (cmake/PilDependencies.cmake)")
  endif()
endif()

# --- A Python torch for AOTInductor (the lessons' `compiled` variants) ----------------------
# The packages are compiled by the Python torch of LibTorch's own version: the set-up's cache is
# a full Python torch (its folder goes on PYTHONPATH), else the user's python3 with torch
# installed. Found by reading torch/version.py, not by importing torch (seconds, not minutes).
# None: the compiled variants say so (exit 77) and everything else builds.
option(PIL_WITH_AOTI "Compile the lessons' AOTInductor packages at build time" ON)
# OFF: the CPU packages are left out of the default build and of the lessons' targets (each
# still has its <lesson>_aoti target); a `compiled` variant on a GPU compiles its own package at
# its first run anyway (scripts/gpu-check.sh's part 3, which has no minute for the CPU's).
option(PIL_AOTI_BUILD_PACKAGES "With PIL_WITH_AOTI: build the CPU packages with the lessons" ON)
set(PIL_AOTI_COMMAND "")
set(PIL_AOTI_NO_COMPILER "")
set(PIL_AOTI_PYTHON_SUMMARY "")
find_package(Python3 COMPONENTS Interpreter)
function(_pil_torch_version_at site out)
  set(${out} "" PARENT_SCOPE)
  if(EXISTS "${site}/torch/version.py")
    file(STRINGS "${site}/torch/version.py" _line REGEX "^__version__")
    if(_line MATCHES "['\"]([0-9.]+)")
      set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
    endif()
  endif()
endfunction()
if(NOT PIL_WITH_AOTI)
  set(PIL_AOTI_NO_COMPILER "this build was configured with -DPIL_WITH_AOTI=OFF")
elseif(NOT Python3_Interpreter_FOUND)
  set(PIL_AOTI_NO_COMPILER "the build found no python3 to compile it with (torch ${Torch_VERSION})")
else()
  get_filename_component(_site "${PIL_TORCH_PREFIX}/.." ABSOLUTE)
  _pil_torch_version_at("${_site}" _v)
  if(_v STREQUAL Torch_VERSION)
    set(PIL_AOTI_COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${_site} ${Python3_EXECUTABLE})
    set(PIL_AOTI_PYTHON_SUMMARY "${Python3_EXECUTABLE} with the torch at ${_site}")
  else()
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
                    "import importlib.util as u, os; s = u.find_spec('torch'); print(os.path.dirname(os.path.dirname(s.origin)) if s else '')"
                    OUTPUT_VARIABLE _user_site OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET TIMEOUT 60)
    _pil_torch_version_at("${_user_site}" _uv)
    if(_uv STREQUAL Torch_VERSION)
      set(PIL_AOTI_COMMAND ${Python3_EXECUTABLE})
      set(PIL_AOTI_PYTHON_SUMMARY "${Python3_EXECUTABLE} with its torch ${_uv}")
    elseif(_uv)
      set(PIL_AOTI_NO_COMPILER "${Python3_EXECUTABLE} has torch ${_uv}, LibTorch is ${Torch_VERSION}: a package must be compiled by the same version")
    else()
      set(PIL_AOTI_NO_COMPILER "no Python torch ${Torch_VERSION} found (LibTorch at ${PIL_TORCH_PREFIX} is not a Python torch, and ${Python3_EXECUTABLE} has none)")
    endif()
  endif()
endif()
# At most one package compiles at a time (Ninja): each takes a core or two and 1-2 GiB.
set_property(GLOBAL APPEND PROPERTY JOB_POOLS pil_aoti=1)

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
  if(PIL_HAVE_CUDA AND PIL_BUILD_LESSONS)
    if(PIL_CUDA_RUNTIME_LIBS)
      list(JOIN PIL_CUDA_RUNTIME_LIBS " " _dirs)
      string(APPEND _out "  CUDA at run time  LibTorch's own (its wheel's ${_dirs}: cuBLAS, "
                         "cuBLASLt, CUPTI), ahead of the toolkit's, in the executables' RUNPATH\n")
    else()
      string(APPEND _out "  CUDA at run time  the toolkit's libraries, in the order CMake links them (no "
                         "wheel's CUDA libraries found beside LibTorch)\n")
    endif()
  endif()
  if(PIL_HAVE_CUDA)
    _pil_row("cuBLAS            " PIL_HAVE_cublas)
    _pil_row("cuBLASLt          " PIL_HAVE_cublasLt)
    _pil_row("CUPTI             " PIL_HAVE_cupti)
    _pil_row("NVTX3             " PIL_HAVE_nvtx3)
    if(NOT PIL_HAVE_cupti)
      string(APPEND _out "    without CUPTI: the variants that record with CUPTI are skipped (exit 77)\n")
    endif()
    if(NOT PIL_HAVE_nvtx3)
      string(APPEND _out "    without NVTX3: named ranges reach LibTorch's profiler only, not Nsight\n")
    endif()
    if(PIL_BUILD_LESSONS)
      if(PIL_LESSONS_CUDA)
        string(APPEND _out "  lessons' CUDA parts on (GPU variants, kernels, CUDA graphs)\n")
      else()
        string(APPEND _out "  lessons' CUDA parts OFF: ${PIL_LESSONS_CUDA_WHY}; CPU variants only\n")
      endif()
    endif()
  endif()
  if(PIL_AOTI_COMMAND)
    if(PIL_AOTI_BUILD_PACKAGES)
      string(APPEND _out "  AOTInductor       packages compiled by ${PIL_AOTI_PYTHON_SUMMARY}\n")
    else()
      string(APPEND _out "  AOTInductor       packages compiled by ${PIL_AOTI_PYTHON_SUMMARY}, "
                         "the CPU's only on request (PIL_AOTI_BUILD_PACKAGES=OFF)\n")
    endif()
  elseif(PIL_BUILD_LESSONS)
    string(APPEND _out "  AOTInductor       no compiled variants: ${PIL_AOTI_NO_COMPILER}\n")
  endif()
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
  if(PIL_SANITIZE STREQUAL "thread")
    string(APPEND _out "  sanitizers        ThreadSanitizer on the project's code\n")
  elseif(PIL_SANITIZE)
    string(APPEND _out "  sanitizers        AddressSanitizer + UBSan on the project's code\n")
  endif()
  message(STATUS "${_out}")
endfunction()
