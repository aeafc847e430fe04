# pil_add_lesson(<name> [DISTRIBUTED] [SOURCES files...] [CUDA_SOURCES files...] [CPU_TEST_ARGS flags...])
#   SOURCES default: main.cpp; CPU_TEST_ARGS: flags for the <name>.cpu test (a smaller shape
#   where the lesson's default takes minutes on a CPU); DISTRIBUTED: a data-parallel lesson
#   (one process per rank): no Google Benchmark suite, its tests start two ranks
#
# The one way a lesson enters the build. Called from the lesson's own folder:
#   target     = folder name (01_matmul_add), executable in <build>/bin/
#   links      = the harness in common/ (and CUDA sources only when a toolkit was found)
#   ctest      = <name>.cpu  every variant on the CPU, for real
#                <name>.gpu  every variant on CUDA; label gpu; exits 77 (skipped) without a GPU
#                <name>.*    the lesson's end-to-end checks, tests/lessons/<name>_test.cpp
#                <name>.gpu_checks  its suites named *Gpu, on CUDA; label gpu; 77 without a GPU
#                <name>.bench_smoke  the benchmark binary on the smallest CPU case
function(pil_add_lesson name)
  cmake_parse_arguments(ARG "DISTRIBUTED" "" "SOURCES;CUDA_SOURCES;CPU_TEST_ARGS" ${ARGN})
  if(NOT ARG_SOURCES)
    set(ARG_SOURCES main.cpp)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  # The CUDA parts (kernels, cuBLAS, cuBLASLt, CUDA graphs) are built whenever a toolkit and a
  # LibTorch with CUDA are there, GPU or not; PIL_LESSON_CUDA tells the sources.
  set(_cuda OFF)
  if(PIL_HAVE_CUDA AND PIL_TORCH_HAS_CUDA)
    set(_cuda ON)
    target_sources(${name} PRIVATE ${ARG_CUDA_SOURCES})
    target_link_libraries(${name} PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt)
  endif()
  target_compile_definitions(${name} PRIVATE PIL_LESSON_CUDA=$<BOOL:${_cuda}>)
  target_link_libraries(${name} PRIVATE pil::harness pil_flags)
  set_property(GLOBAL APPEND PROPERTY PIL_LESSONS ${name})

  # <name>_bench: the same lesson source built around Google Benchmark (PIL_BENCHMARK).
  if(TARGET pil_bench AND NOT ARG_DISTRIBUTED)
    add_executable(${name}_bench ${ARG_SOURCES})
    if(_cuda)
      target_sources(${name}_bench PRIVATE ${ARG_CUDA_SOURCES})
      target_link_libraries(${name}_bench PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt)
    endif()
    target_compile_definitions(${name}_bench PRIVATE PIL_BENCHMARK=1 PIL_LESSON_CUDA=$<BOOL:${_cuda}>)
    target_link_libraries(${name}_bench PRIVATE pil_bench pil_flags)
    add_test(NAME ${name}.bench_smoke
             COMMAND ${name}_bench --benchmark_filter=/cpu/fp32/ --benchmark_min_time=0.01)
    set_tests_properties(${name}.bench_smoke PROPERTIES LABELS "lesson;bench")
  endif()

  set(_out ${PROJECT_BINARY_DIR}/test-output/${name})
  add_test(NAME ${name}.cpu
           COMMAND ${name} --device cpu --variant all --active 2 ${ARG_CPU_TEST_ARGS} --out ${_out}/cpu)
  set_tests_properties(${name}.cpu PROPERTIES LABELS lesson)
  if(ARG_DISTRIBUTED)  # ranks talk over loopback ports: bounded, and not beside each other
    set_tests_properties(${name}.cpu PROPERTIES TIMEOUT 120 RESOURCE_LOCK ${name})
  endif()
  add_test(NAME ${name}.gpu
           COMMAND ${name} --device cuda --variant all --out ${_out}/gpu)
  set_tests_properties(${name}.gpu PROPERTIES LABELS "lesson;gpu" SKIP_RETURN_CODE 77)

  set(_checks ${PROJECT_SOURCE_DIR}/tests/lessons/${name}_test.cpp)
  if(EXISTS ${_checks} AND TARGET pil_test_support)
    add_executable(${name}_test ${_checks})
    target_link_libraries(${name}_test PRIVATE pil_test_support pil_flags)
    target_compile_definitions(${name}_test PRIVATE
      PIL_LESSON_EXE="$<TARGET_FILE:${name}>" PIL_LESSON_NAME="${name}"
      PIL_TRACE_EXE="$<TARGET_FILE:pil-trace>")
    add_dependencies(${name}_test ${name} pil-trace)
    # Suites named *Gpu run on a GPU: one ctest case of their own, label gpu, exit 77 without.
    gtest_discover_tests(${name}_test TEST_PREFIX "${name}." DISCOVERY_MODE PRE_TEST
                         TEST_FILTER "-*Gpu.*" PROPERTIES LABELS lesson)
    file(READ ${_checks} _text)
    if(_text MATCHES "TEST\\([A-Za-z0-9_]*Gpu,")
      add_test(NAME ${name}.gpu_checks COMMAND ${name}_test --gtest_filter=*Gpu.*)
      set_tests_properties(${name}.gpu_checks PROPERTIES LABELS "lesson;gpu" SKIP_RETURN_CODE 77)
    endif()
  endif()
endfunction()
