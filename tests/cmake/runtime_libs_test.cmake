# cmake -DEXE=<a lesson> -DDIR=<the wheel's CUDA libraries> -P runtime_libs_test.cmake
# The lesson loads LibTorch's own cuBLAS, cuBLASLt and CUPTI (the wheel's, DIR), not the toolkit's
# older ones that linking put in its RUNPATH too: the first library of a name loaded is the one
# LibTorch gets (cmake/PilDependencies.cmake).
execute_process(COMMAND ldd "${EXE}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${EXE} failed (${rc})")
endif()
foreach(lib cublas cublasLt cupti)
  if(NOT out MATCHES "lib${lib}\\.so\\.[0-9]+ => ([^ \n]+)")
    message(FATAL_ERROR "${EXE} does not load lib${lib}:\n${out}")
  endif()
  set(found "${CMAKE_MATCH_1}")
  get_filename_component(found_dir "${found}" DIRECTORY)
  get_filename_component(found_dir "${found_dir}" REALPATH)
  get_filename_component(want_dir "${DIR}" REALPATH)
  if(NOT found_dir STREQUAL want_dir)
    message(FATAL_ERROR "lib${lib} resolves to ${found}, not LibTorch's own in ${DIR}")
  endif()
  message(STATUS "lib${lib}: ${found}")
endforeach()
