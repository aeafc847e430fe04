# pil_add_lesson(<name> [DISTRIBUTED] [SOURCES files...] [CUDA_SOURCES files...] [CPU_TEST_ARGS flags...]
#                [GPU_TEST_ARGS flags...] [GPU_LARGE_ARGS flags...] [COMPILED_FLAGS "flag=value ..."...]
#                [LIBRARIES libs...])
#   SOURCES default: main.cpp; LIBRARIES: what the lesson links besides the harness (pil_models,
#   the shared models: the lesson and its benchmarks); CPU_TEST_ARGS: flags for the <name>.cpu test (a smaller shape
#   where the lesson's default takes minutes on a CPU); GPU_TEST_ARGS: the same for the <name>.gpu
#   test (where the lesson's default GPU run is too long or its traces too large for the GPU
#   check's time and for what comes back from the machine: scripts/gpu-check.sh); DISTRIBUTED: a data-parallel lesson
#   (one process per rank): no Google Benchmark suite, its tests start two ranks
#
# The one way a lesson enters the build. Called from the lesson's own folder:
#   target     = folder name (01_matmul_add), executable in <build>/bin/
#   links      = the harness in common/ (and CUDA sources only when a toolkit was found)
#   ctest      = <name>.cpu  every variant on the CPU, for real
#                <name>.gpu  every variant on CUDA; labels gpu, gpu_trace; exits 77 (skipped)
#                            without a GPU; <name>.gpu_large the same with GPU_LARGE_ARGS
#                <name>.*    the lesson's end-to-end checks, tests/lessons/<name>_test.cpp
#                <name>.gpu_checks  its suites named *Gpu, on CUDA; label gpu; 77 without a GPU
#                <name>.gpu_long_checks  its suites named *GpuLong (minutes on a GPU: the GPU
#                            check runs them after the others); labels gpu, gpu_long; 77 without a GPU
#                <name>.bench_smoke  the benchmark binary on the smallest CPU case
#   compiled   = where the lesson has a compiled.py: <name>_aoti compiles its workload with
#                AOTInductor for the CPU (fp32) into <build>/aoti/<name>/cpu_fp32[_FLAGS].pt2,
#                once per flag set in COMPILED_FLAGS ("heads=4 head-dim=32": lesson flags that
#                fix the weights' shapes), redone when compiled.py or the compile script changes;
#                a failed compile writes its reason (.status) and the build goes on
function(pil_add_lesson name)
  cmake_parse_arguments(ARG "DISTRIBUTED" "" "SOURCES;CUDA_SOURCES;CPU_TEST_ARGS;GPU_TEST_ARGS;GPU_LARGE_ARGS;COMPILED_FLAGS;LIBRARIES"
                        ${ARGN})
  if(NOT ARG_SOURCES)
    set(ARG_SOURCES main.cpp)
  endif()
  set_property(GLOBAL PROPERTY PIL_AOTI_FLAGS_${name} "${ARG_COMPILED_FLAGS}")
  add_executable(${name} ${ARG_SOURCES})
  # The CUDA parts (kernels, cuBLAS, cuBLASLt, CUDA graphs) are built whenever a toolkit and a
  # LibTorch with CUDA are there, GPU or not; PIL_LESSON_CUDA tells the sources.
  set(_cuda ${PIL_LESSONS_CUDA})  # toolkit, cuBLAS, cuBLASLt and a LibTorch with CUDA
  if(_cuda)
    target_sources(${name} PRIVATE ${ARG_CUDA_SOURCES})
    target_link_libraries(${name} PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt)
  endif()
  target_compile_definitions(${name} PRIVATE PIL_LESSON_CUDA=$<BOOL:${_cuda}>)
  target_link_libraries(${name} PRIVATE pil::harness ${ARG_LIBRARIES} pil_flags)
  set_property(GLOBAL APPEND PROPERTY PIL_LESSONS ${name})
  _pil_lesson_compiled(${name} "${ARG_COMPILED_FLAGS}")
  # The lesson's target builds what its page uses: pil-trace, and the compiled variant's package
  # (./run-lesson builds this target alone).
  add_dependencies(${name} pil-trace)
  if(TARGET ${name}_aoti AND PIL_AOTI_BUILD_PACKAGES)
    add_dependencies(${name} ${name}_aoti)
  endif()

  # <name>_bench: the same lesson source built around Google Benchmark (PIL_BENCHMARK).
  if(TARGET pil_bench AND NOT ARG_DISTRIBUTED)
    add_executable(${name}_bench ${ARG_SOURCES})
    if(_cuda)
      target_sources(${name}_bench PRIVATE ${ARG_CUDA_SOURCES})
      target_link_libraries(${name}_bench PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt)
    endif()
    target_compile_definitions(${name}_bench PRIVATE PIL_BENCHMARK=1 PIL_LESSON_CUDA=$<BOOL:${_cuda}>)
    target_link_libraries(${name}_bench PRIVATE pil_bench ${ARG_LIBRARIES} pil_flags)
    _pil_aoti_definitions(${name}_bench ${name})
    add_test(NAME ${name}.bench_smoke
             COMMAND ${name}_bench --benchmark_filter=/cpu/fp32/ --benchmark_min_time=0.01)
    set_tests_properties(${name}.bench_smoke PROPERTIES LABELS "lesson;bench")
    # A case is decided when it runs: one the build has no package for reports itself skipped,
    # with the reason, and is no failure.
    if(EXISTS ${PROJECT_SOURCE_DIR}/${name}/compiled.py)
      add_test(NAME ${name}.bench_skip
               COMMAND ${name}_bench --benchmark_filter=^compiled/cpu/bf16/ --benchmark_min_time=0.01)
      set_tests_properties(${name}.bench_skip PROPERTIES LABELS "lesson;bench"
        PASS_REGULAR_EXPRESSION "skipped: unavailable here: [^\n]*AOTInductor"
        FAIL_REGULAR_EXPRESSION "benchmark\\(s\\) failed|no benchmark matched|selects no benchmark")
    endif()
  endif()

  set(_out ${PROJECT_BINARY_DIR}/test-output/${name})
  add_test(NAME ${name}.cpu
           COMMAND ${name} --device cpu --variant all --active 2 --verify full ${ARG_CPU_TEST_ARGS} --out ${_out}/cpu)
  set_tests_properties(${name}.cpu PROPERTIES LABELS lesson)
  if(ARG_DISTRIBUTED)  # ranks talk over loopback ports: bounded, and not beside each other
    set_tests_properties(${name}.cpu PROPERTIES TIMEOUT 120 RESOURCE_LOCK ${name})
  endif()
  # The GPU trace runs (label gpu_trace: scripts/gpu-check.sh runs them first and keeps their
  # traces), at the lesson's defaults (or GPU_TEST_ARGS) and, with GPU_LARGE_ARGS, once more at
  # a large shape.
  add_test(NAME ${name}.gpu
           COMMAND ${name} --device cuda --variant all --verify full ${ARG_GPU_TEST_ARGS} --out ${_out}/gpu)
  set_tests_properties(${name}.gpu PROPERTIES LABELS "lesson;gpu;gpu_trace" SKIP_RETURN_CODE 77)
  if(ARG_GPU_LARGE_ARGS)
    add_test(NAME ${name}.gpu_large
             COMMAND ${name} --device cuda --variant all --verify full ${ARG_GPU_LARGE_ARGS} --out ${_out}/gpu_large)
    set_tests_properties(${name}.gpu_large PROPERTIES LABELS "lesson;gpu;gpu_trace" SKIP_RETURN_CODE 77)
  endif()

  set(_checks ${PROJECT_SOURCE_DIR}/tests/lessons/${name}_test.cpp)
  if(EXISTS ${_checks} AND TARGET pil_test_support)
    add_executable(${name}_test ${_checks})
    target_link_libraries(${name}_test PRIVATE pil_test_support pil_flags)
    _pil_aoti_definitions(${name}_test ${name})
    target_compile_definitions(${name}_test PRIVATE
      PIL_LESSON_EXE="$<TARGET_FILE:${name}>" PIL_LESSON_NAME="${name}"
      PIL_TRACE_EXE="$<TARGET_FILE:pil-trace>")
    add_dependencies(${name}_test ${name} pil-trace)
    # Suites named *Gpu run on a GPU: one ctest case of their own, label gpu, exit 77 without
    # (scripts/gpu-check.sh builds the check programs with such suites by the same pattern).
    # Suites named *GpuLong too, in a case of their own (label gpu_long), which the GPU check
    # runs after the others, so that a check of minutes does not hold back the others' results.
    gtest_discover_tests(${name}_test TEST_PREFIX "${name}." DISCOVERY_MODE PRE_TEST
                         TEST_FILTER "-*Gpu.*:*GpuLong.*" PROPERTIES LABELS lesson)
    file(READ ${_checks} _text)
    if(_text MATCHES "TEST\\([A-Za-z0-9_]*Gpu,")
      add_test(NAME ${name}.gpu_checks COMMAND ${name}_test --gtest_filter=*Gpu.*)
      # COST: started first among the GPU check's parallel tests (a lesson's checks take a minute
      # or two on a GPU, pil::profiler's tests seconds), so they do not end the part last.
      set_tests_properties(${name}.gpu_checks PROPERTIES LABELS "lesson;gpu" SKIP_RETURN_CODE 77 COST 100)
    endif()
    if(_text MATCHES "TEST\\([A-Za-z0-9_]*GpuLong,")
      add_test(NAME ${name}.gpu_long_checks COMMAND ${name}_test --gtest_filter=*GpuLong.*)
      set_tests_properties(${name}.gpu_long_checks PROPERTIES LABELS "lesson;gpu;gpu_long" SKIP_RETURN_CODE 77)
    endif()
  endif()
endfunction()

# A CPU package's name and compile flags for one of COMPILED_FLAGS' sets ("heads=4 head-dim=32",
# or "-" for none): cpu_fp32_heads4_head-dim32 and "--flag heads=4 --flag head-dim=32", the
# name common/harness/aoti.cpp's package_path() gives the same problem.
function(_pil_aoti_stem set stem_var args_var)
  set(_stem cpu_fp32)
  set(_args)
  if(NOT set STREQUAL "-")
    separate_arguments(_flags UNIX_COMMAND "${set}")
    foreach(_f IN LISTS _flags)
      string(REGEX REPLACE "^([^=]+)=(.*)$" "\\1\\2" _part "${_f}")
      string(APPEND _stem "_${_part}")
      list(APPEND _args --flag ${_f})
    endforeach()
  endif()
  set(${stem_var} ${_stem} PARENT_SCOPE)
  set(${args_var} ${_args} PARENT_SCOPE)
endfunction()

# The AOTInductor packages of a lesson with a compiled.py (see pil_add_lesson), and the
# definitions its `compiled` variant reads (common/harness/aoti.h, PIL_AOTI_BUILD).
function(_pil_aoti_definitions target lesson)
  set(_src ${PROJECT_SOURCE_DIR}/${lesson})
  set(_cmd "")
  if(PIL_AOTI_COMMAND AND EXISTS ${_src}/compiled.py)
    list(JOIN PIL_AOTI_COMMAND " " _cmd)
    string(APPEND _cmd " ${PROJECT_SOURCE_DIR}/scripts/aoti_compile.py --lesson-dir ${_src}")
  endif()
  set(_why "${PIL_AOTI_NO_COMPILER}")
  if(NOT EXISTS ${_src}/compiled.py)
    set(_why "${lesson} has no compiled.py")
  endif()
  # The packages the build itself makes (cpu_fp32[_FLAGS]), and the command that makes them.
  set(_built "")
  if(_cmd)
    get_property(_sets GLOBAL PROPERTY PIL_AOTI_FLAGS_${lesson})
    if(NOT _sets)
      set(_sets "-")
    endif()
    foreach(_set IN LISTS _sets)
      _pil_aoti_stem("${_set}" _stem _args)
      string(APPEND _built " ${_stem}.pt2")
    endforeach()
    string(STRIP "${_built}" _built)
  endif()
  target_compile_definitions(${target} PRIVATE PIL_AOTI_LESSON="${lesson}"
    PIL_AOTI_DIR="${PROJECT_BINARY_DIR}/aoti/${lesson}" PIL_AOTI_COMPILE="${_cmd}"
    PIL_AOTI_NO_COMPILER="${_why}" PIL_AOTI_BUILT="${_built}"
    PIL_AOTI_BUILD_TARGET="cmake --build ${PROJECT_BINARY_DIR} --target ${lesson}_aoti")
endfunction()

function(_pil_lesson_compiled name flag_sets)
  _pil_aoti_definitions(${name} ${name})
  set(_src ${PROJECT_SOURCE_DIR}/${name})
  if(NOT PIL_AOTI_COMMAND OR NOT EXISTS ${_src}/compiled.py)
    return()
  endif()
  if(NOT flag_sets)
    set(flag_sets "")  # one package, no fixed flags
    set(_sets "-")  # shown in the COMMENT: no fixed flags
  else()
    set(_sets ${flag_sets})
  endif()
  set(_dir ${PROJECT_BINARY_DIR}/aoti/${name})
  set(_outputs)
  foreach(_set IN LISTS _sets)
    _pil_aoti_stem("${_set}" _stem _args)
    add_custom_command(
      OUTPUT ${_dir}/${_stem}.status
      BYPRODUCTS ${_dir}/${_stem}.pt2
      COMMAND ${PIL_AOTI_COMMAND} ${PROJECT_SOURCE_DIR}/scripts/aoti_compile.py --lesson-dir ${_src}
              --device cpu --dtype fp32 ${_args} --out ${_dir}/${_stem}.pt2 --keep-going
      DEPENDS ${_src}/compiled.py ${PROJECT_SOURCE_DIR}/scripts/aoti_compile.py ${PROJECT_SOURCE_DIR}/scripts/folder_check.py
      JOB_POOL pil_aoti
      COMMENT "AOTInductor: compiling ${name}'s workload for cpu fp32 ${_set} (a minute the first time)"
      VERBATIM)
    list(APPEND _outputs ${_dir}/${_stem}.status)
  endforeach()
  if(PIL_AOTI_BUILD_PACKAGES)
    add_custom_target(${name}_aoti ALL DEPENDS ${_outputs})
  else()
    add_custom_target(${name}_aoti DEPENDS ${_outputs})
  endif()
endfunction()
