# Per-target compile settings (never global flags, so a parent project keeps its own).
#
# No -ffast-math anywhere: it lets the compiler reassociate reductions, flush denormals and
# assume no NaN/Inf — and NaN detection is a feature here.

if(TAPEGRAD_SANITIZE)
  set(TAPEGRAD_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
endif()

function(tapegrad_set_target_options target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  # -Wno-maybe-uninitialized: GCC 12 reports false positives inside its own AVX-512 intrinsic
  # headers when Eigen is compiled with -march=native on AVX-512 machines.
  # -Wshadow: besides plain shadowing, it catches a statement that parses as a declaration
  # (`handle(fn)(args);` declares a function named fn: a call that silently never happens).
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  # Math functions need not set errno, so sqrt and friends can be inlined and vectorised. Unlike
  # -ffast-math this changes no result: no reassociation, NaN and Inf keep their meaning.
  target_compile_options(${target} PRIVATE -fno-math-errno)
  if(TAPEGRAD_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(TAPEGRAD_ISA_VARIANTS)
    target_compile_definitions(${target} PRIVATE TAPEGRAD_ISA_VARIANTS)
  endif()
  if(TAPEGRAD_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  if(TAPEGRAD_SANITIZE)
    # -O1 (after the build type's -O3, so it wins): the level the sanitizers' authors suggest, and
    # half the compile time of instrumented -O3 code, which made this build most of CI's time.
    target_compile_options(${target} PRIVATE ${TAPEGRAD_SANITIZER_FLAGS} -O1)
    target_link_options(${target} PUBLIC ${TAPEGRAD_SANITIZER_FLAGS})
  endif()
endfunction()

# One installed layer: tapegrad_<name> built from SOURCES, exported as tapegrad::<name>, its
# headers under this folder (tapegrad/<name>/...), linked PUBLIC to the layers below (DEPENDS).
function(tapegrad_add_layer name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  add_library(tapegrad_${name} ${ARG_SOURCES})
  add_library(tapegrad::${name} ALIAS tapegrad_${name})
  set_target_properties(tapegrad_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME tapegrad_${name})
  target_include_directories(tapegrad_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(ARG_DEPENDS)
    target_link_libraries(tapegrad_${name} PUBLIC ${ARG_DEPENDS})
  endif()
  tapegrad_set_target_options(tapegrad_${name})
endfunction()

include(TapegradIsa)  # tapegrad_add_isa_kernels()
