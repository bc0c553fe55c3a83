# Kernels compiled once per instruction set and chosen at run time (lib/tapegrad/isa.h).
#
# On x86-64 with GCC or Clang a kernel file is compiled three times: for the library's own target
# (baseline; -march=native too when TAPEGRAD_NATIVE), for x86-64-v3 (AVX2 + FMA) and for
# x86-64-v4 (AVX-512, 512-bit vectors preferred: GCC's default for v4 is 256), each with
# TAPEGRAD_ISA_NS naming the namespace the copy's definitions go in. Elsewhere, baseline only.

set(TAPEGRAD_ISA_VARIANTS OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(TAPEGRAD_ISA_VARIANTS ON)
endif()
set(TAPEGRAD_ISA_FLAGS_baseline "")
set(TAPEGRAD_ISA_FLAGS_avx2 -march=x86-64-v3 -mtune=skylake)
set(TAPEGRAD_ISA_FLAGS_avx512 -march=x86-64-v4 -mtune=icelake-server -mprefer-vector-width=512)

# tapegrad_add_isa_kernels(<layer> DEPENDS <targets> SOURCES <kernel files>): adds the variants'
# objects to tapegrad_<layer>. DEPENDS gives the kernel files their headers (as the layer's).
function(tapegrad_add_isa_kernels layer)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  set(isas baseline)
  if(TAPEGRAD_ISA_VARIANTS)
    list(APPEND isas avx2 avx512)
  endif()
  foreach(isa IN LISTS isas)
    set(obj tapegrad_${layer}_isa_${isa})
    add_library(${obj} OBJECT ${ARG_SOURCES})
    tapegrad_set_target_options(${obj})
    target_include_directories(${obj} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${obj} PRIVATE ${ARG_DEPENDS})
    target_compile_definitions(${obj} PRIVATE TAPEGRAD_ISA_NS=isa_${isa})
    target_compile_options(${obj} PRIVATE ${TAPEGRAD_ISA_FLAGS_${isa}})
    target_sources(tapegrad_${layer} PRIVATE $<TARGET_OBJECTS:${obj}>)
    set_property(GLOBAL APPEND PROPERTY TAPEGRAD_ISA_OBJECT_LIBRARIES ${obj})
  endforeach()
endfunction()
