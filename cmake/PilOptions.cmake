# Build options shared by every target of the project.

option(PIL_USE_CCACHE "Compile through ccache when it is installed" ON)
option(PIL_SANITIZE "Build the project's own code with AddressSanitizer and UBSan (ON), or with ThreadSanitizer (thread)" OFF)
option(PIL_FUZZ "Build the libFuzzer target for the trace parser (Clang only)" OFF)
option(PIL_WARNINGS_AS_ERRORS "Treat compiler warnings in the project's code as errors" OFF)

if(PIL_USE_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(PIL_CCACHE ccache)
  if(PIL_CCACHE)
    # BASEDIR: paths inside the checkout count as relative, so a fresh clone (CI clones afresh)
    # reuses the results of an earlier one. The sloppiness allows precompiled headers.
    set(_pil_launcher ${CMAKE_COMMAND} -E env
        "CCACHE_BASEDIR=${PROJECT_SOURCE_DIR}"
        "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
        ${PIL_CCACHE})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${_pil_launcher})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${_pil_launcher})
  endif()
endif()

# Flags for the project's own targets only: LibTorch and the system libraries stay as they are.
add_library(pil_flags INTERFACE)
target_compile_options(pil_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${PIL_WARNINGS_AS_ERRORS}>>:-Werror>)
if(PIL_SANITIZE STREQUAL "thread")
  target_compile_options(pil_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread -fno-omit-frame-pointer>)
  target_link_options(pil_flags INTERFACE -fsanitize=thread)
elseif(PIL_SANITIZE)
  target_compile_options(pil_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(pil_flags INTERFACE -fsanitize=address,undefined)
endif()
