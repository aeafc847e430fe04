# The package test (ctest package.find_package): install the project into a folder of the build
# tree, configure and build tests/package/ (an outside project) against it with
# find_package(ProfilingInLibTorch), run the example it builds, and check its table and trace.
# Arguments (-D): BUILD_DIR, SOURCE_DIR, WORK_DIR, TORCH_DIR, GENERATOR, LAUNCHER, CXX, PIL_TRACE.
foreach(_v BUILD_DIR SOURCE_DIR WORK_DIR TORCH_DIR GENERATOR CXX PIL_TRACE)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "package_test.cmake: -D${_v}=... is missing")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
set(_prefix ${WORK_DIR}/prefix)

function(_run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${_rc}):\n${_out}\n${_err}")
  endif()
  set(_last_out "${_out}" PARENT_SCOPE)
endfunction()

_run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${_prefix})
set(_launcher)
if(LAUNCHER)
  set(_launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
endif()
_run("configuring the outside project" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/package
     -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
     "-DCMAKE_PREFIX_PATH=${_prefix}" -DTorch_DIR=${TORCH_DIR} ${_launcher})
_run("building the outside project" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
_run("running the example" ${WORK_DIR}/build/profile_your_program ${WORK_DIR}/log)
set(_table "${_last_out}")
# Three recorded steps, each one forward of two Linear layers and a ReLU.
foreach(_row "ProfilerStep\\*=3" "forward=3" "aten::t=6" "aten::addmm=6" "aten::relu=3")
  string(REPLACE "=" ";" _pair "${_row}")
  list(GET _pair 0 _name)
  list(GET _pair 1 _calls)
  if(NOT _table MATCHES "${_name} +[^\n]* ${_calls}  \n")
    message(FATAL_ERROR "the example's table lacks a row '${_name}' with ${_calls} calls:\n${_table}")
  endif()
endforeach()
file(GLOB _traces ${WORK_DIR}/log/*.pt.trace.json)
list(LENGTH _traces _n)
if(NOT _n EQUAL 1)
  message(FATAL_ERROR "expected one <worker>.<time>.pt.trace.json in ${WORK_DIR}/log, found ${_n}")
endif()
_run("pil-trace expect on the example's trace" ${PIL_TRACE} expect ${_traces}
     steps=3 calls:forward=1 calls:aten::addmm=2)
# A trace folder that cannot be made: one line on stderr and exit 1, not an abort.
execute_process(COMMAND ${WORK_DIR}/build/profile_your_program /proc/no-such-folder/log
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
string(REGEX MATCHALL "\n" _lines "${_err}")
list(LENGTH _lines _n_lines)
if(NOT _rc EQUAL 1 OR NOT _err MATCHES "^profile_your_program: " OR NOT _n_lines EQUAL 1)
  message(FATAL_ERROR "the example on an unwritable trace folder: exit ${_rc} (expected 1), stderr:\n${_err}")
endif()
message(STATUS "package test passed:\n${_table}${_last_out}")
