#!/usr/bin/env bash
# The kernel variants' objects (tapegrad/isa_kernel.h) must share no code with each other or with
# the library: every symbol they define for the linker (global or weak — the weak ones are
# inline functions and template instantiations the linker merges across objects) must lie in an
# ISA namespace. An AVX2 copy of a shared inline function could otherwise serve a baseline caller.
#   isa_symbols.sh OBJECT...
set -euo pipefail
(( $# > 0 )) || { echo "isa_symbols.sh: no object files given" >&2; exit 2; }
bad=0 tables=0
for o in "$@"; do
  [[ -f "$o" ]] || { echo "isa_symbols.sh: no object file '$o'" >&2; exit 2; }
  while IFS= read -r line; do
    case "$line" in
      *isa_baseline::*|*isa_avx2::*|*isa_avx512::*|*Eigen_isa_*) [[ "$line" == *_table ]] && tables=$((tables + 1)) ;;
      # Data the compiler makes, never code: the exception personality's address (one per
      # object that can unwind) and AddressSanitizer's one-definition-rule markers.
      DW.ref.__gxx_personality_v0|__odr_asan.*) ;;
      *) echo "$o: shared symbol outside the ISA namespaces: $line"; bad=1 ;;
    esac
  done < <(nm -C --defined-only "$o" | awk '$2 ~ /^[WVuTDBRvw]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }')
done
(( tables > 0 )) || { echo "isa_symbols.sh: no kernel table (name ending in _table) in $# objects" >&2; exit 1; }
(( bad == 0 )) || exit 1
echo "ok: $# objects, $tables kernel tables, every shared symbol in its ISA's namespace"
