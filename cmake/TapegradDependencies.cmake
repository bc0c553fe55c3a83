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

# libxsmm (optional): JIT-generated GEMM kernels (lib/tapegrad/libxsmm_gemm.h). TAPEGRAD_LIBXSMM is
# AUTO, ON or OFF in the build; the installed package config sets it to what the build used, since
# Debian ships libxsmm as a static archive that a consumer links as well. libxsmm falls back to the
# BLAS's sgemm_ for what it does not generate, so OpenBLAS follows it on the link line.
if(NOT DEFINED TAPEGRAD_LIBXSMM)
  set(TAPEGRAD_LIBXSMM OFF)
endif()
if(NOT TARGET tapegrad::libxsmm AND NOT TAPEGRAD_LIBXSMM STREQUAL "OFF")
  find_path(_tapegrad_xsmm_inc libxsmm.h)
  find_library(_tapegrad_xsmm_lib NAMES libxsmm.a xsmm)
  if(_tapegrad_xsmm_inc AND _tapegrad_xsmm_lib AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
    find_dependency(Threads)
    add_library(tapegrad::libxsmm INTERFACE IMPORTED)
    set_target_properties(tapegrad::libxsmm PROPERTIES
      INTERFACE_LINK_LIBRARIES "${_tapegrad_xsmm_lib};tapegrad::openblas;Threads::Threads;${CMAKE_DL_LIBS};m"
      INTERFACE_INCLUDE_DIRECTORIES "${_tapegrad_xsmm_inc}")
  elseif(TAPEGRAD_LIBXSMM STREQUAL "ON")
    message(FATAL_ERROR "tapegrad: libxsmm not found and TAPEGRAD_LIBXSMM=ON (Debian/Ubuntu on x86-64: apt-get install libxsmm-dev)")
  endif()
endif()
