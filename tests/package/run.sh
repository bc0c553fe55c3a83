#!/usr/bin/env bash
# CTest "package: find_package(tapegrad) from an install tree": installs the build tree into a
# temporary prefix, then configures, builds and runs tests/package as an outside project —
# including the code blocks of the docs marked "compiled": docs/engine.md's custom-op example (which
# must also be examples/custom_op.cpp, byte for byte) and the README's ten-line example.
set -euo pipefail
build_dir="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cp -r "$here" "$work/src"
# The fenced block after a "<!-- compiled: NAME -->" line of a doc, as written there.
extract() {  # FILE NAME OUT
  awk -v marker="<!-- compiled: $2 -->" '$0 == marker {found = 1; next}
       found == 1 && /^```cpp$/ {found = 2; next}
       found == 2 && /^```$/ {exit}
       found == 2 {print}' "$1" > "$3"
  [[ -s "$3" ]] || { echo "FAIL: no block marked '$2' in $1"; exit 1; }
}
extract "$root/docs/engine.md" examples/custom_op.cpp "$work/src/docs_custom_op.cpp"
cmp -s "$work/src/docs_custom_op.cpp" "$root/examples/custom_op.cpp" ||
  { diff "$work/src/docs_custom_op.cpp" "$root/examples/custom_op.cpp" | head -20;
    echo "FAIL: docs/engine.md's custom-op example differs from examples/custom_op.cpp"; exit 1; }
extract "$root/README.md" "tests/package readme_quickstart.cpp" "$work/src/readme_quickstart.cpp"
# The consumer uses the compiler tapegrad was built with: the static libraries carry that
# compiler's OpenMP runtime calls (libgomp for GCC, libomp for clang).
cxx="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")"
cmake -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/consumer_lm"
"$work/build/consumer_mlp"
"$work/build/docs_custom_op"
"$work/build/readme_quickstart"
echo "OK: package consumers"
