#!/usr/bin/env bash
# THE TEST COMMAND: installs what is missing, builds everything, runs the whole test suite.
#   bash scripts/test.sh              # Release build in build/
#   bash scripts/test.sh --sanitize   # the same suite under AddressSanitizer + UndefinedBehaviorSanitizer
#                                     # (LeakSanitizer included) in build-asan/
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh" --test
if [[ "${1:-}" == "--sanitize" ]]; then
  export TAPEGRAD_BUILD_DIR="${TAPEGRAD_BUILD_DIR:-$root/build-asan}"
  "$root/scripts/build.sh" -DTAPEGRAD_SANITIZE=ON -DTAPEGRAD_BUILD_TESTS=ON -DTAPEGRAD_BUILD_EXAMPLES=ON \
    -DTAPEGRAD_BUILD_BENCH=OFF
  # Fail on the first sanitizer report, and check for leaks at exit.
  # detect_stack_use_after_return: closures that point into a returned frame are caught, and every
  # stack buffer moves from call to call (fake stacks) — a stress for address-independent kernels.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
else
  "$root/scripts/build.sh" -DTAPEGRAD_BUILD_TESTS=ON -DTAPEGRAD_BUILD_EXAMPLES=ON -DTAPEGRAD_BUILD_BENCH=ON
fi
# Tests write under the build tree or a temporary folder, never into the sources: what the suite
# leaves beside them (a checkpoint a test saved by a relative path) fails the run, by name.
source_status() { git -C "$root" status --porcelain --untracked-files=all 2>/dev/null | sort || true; }
before="$(source_status)"
cd "${TAPEGRAD_BUILD_DIR:-$root/build}"
ctest -j "$(nproc)" --output-on-failure --timeout 900
left="$(comm -13 <(printf '%s\n' "$before") <(printf '%s\n' "$(source_status)"))"
if [[ -n "$left" ]]; then
  printf 'test.sh: the tests left files in the source tree %s (they belong in the build tree or a temporary folder):\n%s\n' \
    "$root" "$left" >&2
  exit 1
fi
