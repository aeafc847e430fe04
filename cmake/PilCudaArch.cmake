# pil_torch_arch_list(<out-var> <cmake-architectures> [<native-architectures>])
#
# Spells CMAKE_CUDA_ARCHITECTURES the way Torch's CMake config wants TORCH_CUDA_ARCH_LIST
# (Caffe2's select_compute_arch.cmake accepts "7.5", "9.0a", "9.0+PTX", "All", "Auto" and
# family names, and stops the configure on anything else, "native" included):
#   75;90        -> 7.5+PTX;9.0+PTX    (CMake's plain number builds the code and its PTX)
#   90a-real     -> 9.0a               (-real: the code only)
#   90-virtual   -> 9.0+PTX
#   all, all-major -> All
#   native       -> what CMake detected on this machine (CMAKE_CUDA_ARCHITECTURES_NATIVE, e.g.
#                   "90-real" on an H200), mapped as above; "Auto" when CMake detected nothing
# Torch uses the list only for its own flags, which the project puts back after find_package:
# the point is a configure that does not stop, and no GPU probe of Torch's own.
# An entry none of these rules knows is a FATAL_ERROR that names it.
function(pil_torch_arch_list out archs)
  set(_native_archs "${ARGV2}")
  set(result "")
  foreach(arch IN LISTS archs)
    if(arch STREQUAL "native")
      if(_native_archs STREQUAL "")
        list(APPEND result "Auto")
      else()
        pil_torch_arch_list(_detected "${_native_archs}")
        list(APPEND result ${_detected})
      endif()
    elseif(arch STREQUAL "all" OR arch STREQUAL "all-major")
      list(APPEND result "All")
    elseif(arch MATCHES "^([0-9]+)([0-9])([af]?)(-real|-virtual)?$")
      set(entry "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}${CMAKE_MATCH_3}")
      if(NOT CMAKE_MATCH_4 STREQUAL "-real")
        string(APPEND entry "+PTX")
      endif()
      list(APPEND result "${entry}")
    else()
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES entry '${arch}' is not one the project can "
        "pass to Torch; allowed: numbers such as 75, 90, 90a (optionally -real or -virtual), "
        "native, all, all-major")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES result)
  set(${out} "${result}" PARENT_SCOPE)
endfunction()
