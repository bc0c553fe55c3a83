#!/usr/bin/env bash
# CTest "package: find_package(tapegrad) from an install tree": installs the build tree into a
# temporary prefix, then configures, builds and runs tests/package as an outside project —
# including every code block of the docs marked "compiled" (the README's ten-line example,
# docs/engine.md's custom op, which must also be examples/custom_op.cpp byte for byte, ...).
set -euo pipefail
build_dir="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cp -r "$here" "$work/src"
# Every fenced block after a "<!-- compiled: NAME -->" line of README.md or docs/*.md, as written
# there (tests/docs/code_blocks.py checks that every C++ block has such a line):
#   NAME = a path in the repository (examples/custom_op.cpp): the block must be that file, byte for
#          byte, and is built as the program named by its stem;
#   NAME = STEM.cpp: a whole program, built as STEM;
#   NAME = STEM.inc: a fragment, built inside tests/package/STEM.cpp, which #includes it.
extract() {  # FILE NAME OUT (a block may be indented, inside a list item: the indent is dropped)
  awk -v marker="<!-- compiled: $2 -->" '{line = $0; sub(/^ +/, "", line)}
       line == marker {found = 1; next}
       found == 1 && line == "```cpp" {found = 2; match($0, /^ */); indent = RLENGTH; next}
       found == 2 && line == "```" {exit}
       found == 2 {print substr($0, indent + 1)}' "$1" > "$3"
  [[ -s "$3" ]] || { echo "FAIL: no block marked '$2' in $1"; exit 1; }
}
programs=()
: > "$work/src/docs_blocks.cmake"
for page in "$root/README.md" "$root"/docs/*.md; do
  while IFS= read -r name; do
    stem="$(basename "${name%.*}")"
    case "$name" in
      */*) extract "$page" "$name" "$work/src/$stem.cpp"
           cmp -s "$work/src/$stem.cpp" "$root/$name" ||
             { diff "$work/src/$stem.cpp" "$root/$name" | head -20;
               echo "FAIL: the block marked '$name' in ${page#"$root/"} differs from $name"; exit 1; } ;;
      *.cpp) extract "$page" "$name" "$work/src/$stem.cpp" ;;
      *.inc) extract "$page" "$name" "$work/src/$name"
             [[ -f "$work/src/$stem.cpp" ]] || { echo "FAIL: tests/package/$stem.cpp, which builds $name, is missing"; exit 1; } ;;
      *) echo "FAIL: ${page#"$root/"}: '<!-- compiled: $name -->' names neither a path, STEM.cpp nor STEM.inc"; exit 1 ;;
    esac
    echo "tapegrad_docs_block($stem)" >> "$work/src/docs_blocks.cmake"
    programs+=("$stem")
  done < <(sed -n 's/^ *<!-- compiled: \(.*\) -->$/\1/p' "$page")
done
# The consumer uses the compiler tapegrad was built with: the static libraries carry that
# compiler's OpenMP runtime calls (libgomp for GCC, libomp for clang).
cxx="$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")"
# With the MPI component installed, the consumers ask for it too (find_package COMPONENTS mpi).
mpi=OFF
if compgen -G "$work/prefix/lib*/cmake/tapegrad/tapegradMpiTargets.cmake" >/dev/null; then mpi=ON; fi
cmake -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCONSUMER_MPI=$mpi ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >/dev/null
cmake --build "$work/build" >/dev/null
if [[ $mpi == ON ]]; then "$work/build/consumer_mpi"; fi
# A consumer on a machine without MPI's development files (find_package(MPI) made to fail): the
# core, nn, lm and lab layers configure, build and run without it.
cmake -S "$work/src" -B "$work/build_no_mpi" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON -DCONSUMER_MPI=OFF ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >/dev/null
cmake --build "$work/build_no_mpi" --target consumer consumer_lm >/dev/null
"$work/build_no_mpi/consumer" >/dev/null
"$work/build_no_mpi/consumer_lm" >/dev/null
echo "ok: core and lm consumers build and run with find_package(MPI) disabled"
"$work/build/consumer"
"$work/build/consumer_lm"
"$work/build/consumer_lab"
"$work/build/consumer_registries"
"$work/build/consumer_mlp"
for p in "${programs[@]}"; do "$work/build/$p"; done
echo "built and ran ${#programs[@]} code blocks of the docs: ${programs[*]}"
echo "OK: package consumers"
