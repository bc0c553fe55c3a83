#!/usr/bin/env bash
# Configures and builds tapegrad (Release) into build/ (or $TAPEGRAD_BUILD_DIR).
# Arguments go to the CMake configure step (e.g. -DTAPEGRAD_SANITIZE=ON);
# TAPEGRAD_TARGETS="a b" builds only those targets.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TAPEGRAD_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${TAPEGRAD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
