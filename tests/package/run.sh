#!/usr/bin/env bash
# CTest "package: find_package(tapegrad) from an install tree": installs the build tree into a
# temporary prefix, then configures, builds and runs tests/package as an outside project —
# including the README's custom-op example, extracted from README.md as written (it must also be
# examples/custom_op.cpp, byte for byte, so the two cannot drift apart).
set -euo pipefail
build_dir="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cp -r "$here" "$work/src"
# The fenced block after the marker line.
awk '/<!-- readme-example: examples\/custom_op.cpp -->/ {found = 1; next}
     found == 1 && /^```cpp$/ {found = 2; next}
     found == 2 && /^```$/ {exit}
     found == 2 {print}' "$root/README.md" > "$work/src/readme_custom_op.cpp"
[[ -s "$work/src/readme_custom_op.cpp" ]] || { echo "FAIL: no custom-op example found in README.md"; exit 1; }
cmp -s "$work/src/readme_custom_op.cpp" "$root/examples/custom_op.cpp" ||
  { diff "$work/src/readme_custom_op.cpp" "$root/examples/custom_op.cpp" | head -20;
    echo "FAIL: the README's custom-op example differs from examples/custom_op.cpp"; exit 1; }
# The consumer uses the compiler tapegrad was built with: the static libraries carry that
# compiler's OpenMP runtime calls (libgomp for GCC, libomp for clang).
cxx="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")"
cmake -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/consumer_lm"
"$work/build/consumer_mlp"
"$work/build/readme_custom_op"
echo "OK: package consumers"
