// The first include of a kernel file: a .cpp compiled once per instruction set (isa.h), each
// time with TAPEGRAD_ISA_NS naming the namespace its definitions go in (isa_baseline, isa_avx2,
// isa_avx512) and that ISA's -march flags (cmake/TapegradIsa.cmake).
//
// The copies must share no code: inline functions and template instantiations are emitted in
// every object that uses them and the linker keeps one, so an AVX2 copy of, say, an Eigen
// expression could serve a baseline caller on a CPU without AVX2. Hence everything a kernel file
// instantiates lives in the ISA's namespace: its own code in TAPEGRAD_ISA_NS, vmath in an inline
// namespace of that name, Eigen renamed by the macro below (its templates become
// Eigen_isa_avx2::..., their own symbols). A kernel file must not call other inline library code
// (check(), cat(), containers); tests/build/isa_symbols.sh fails the suite if any object of a variant
// defines a weak symbol outside its namespaces.
#pragma once

#ifndef TAPEGRAD_ISA_NS
#error "a kernel file is compiled by tapegrad_add_isa_kernels, which defines TAPEGRAD_ISA_NS"
#endif
#ifdef EIGEN_CORE_H
#error "isa_kernel.h must come before Eigen, which it renames"
#endif

#define TAPEGRAD_ISA_CAT2_(a, b) a##b
#define TAPEGRAD_ISA_CAT_(a, b) TAPEGRAD_ISA_CAT2_(a, b)
#define Eigen TAPEGRAD_ISA_CAT_(Eigen_, TAPEGRAD_ISA_NS)

#include "tapegrad/isa.h"
