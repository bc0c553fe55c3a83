# The libraries tapegrad's public targets link against. Included by the build and, installed
# next to tapegradConfig.cmake, by projects that find_package(tapegrad), so both resolve them the
# same way.
include(CMakeFindDependencyMacro)

find_dependency(Eigen3 3.4 NO_MODULE)
find_dependency(OpenMP)
find_dependency(nlohmann_json 3)

# Debian ships OpenBLASConfig.cmake with variables only; wrap them in an imported target.
if(NOT TARGET tapegrad::openblas)
  find_package(OpenBLAS CONFIG QUIET)
  if(OpenBLAS_FOUND)
    set(_tapegrad_blas_lib ${OpenBLAS_LIBRARIES})
    set(_tapegrad_blas_inc ${OpenBLAS_INCLUDE_DIRS})
  else()
    find_library(_tapegrad_blas_lib NAMES openblas)
    find_path(_tapegrad_blas_inc NAMES cblas.h PATH_SUFFIXES openblas openblas-pthread)
  endif()
  if(NOT _tapegrad_blas_lib OR NOT _tapegrad_blas_inc)
    message(FATAL_ERROR "tapegrad: OpenBLAS not found (Debian/Ubuntu: apt-get install libopenblas-dev)")
  endif()
  add_library(tapegrad::openblas INTERFACE IMPORTED)
  set_target_properties(tapegrad::openblas PROPERTIES
    INTERFACE_LINK_LIBRARIES "${_tapegrad_blas_lib}"
    INTERFACE_INCLUDE_DIRECTORIES "${_tapegrad_blas_inc}")
endif()
