#!/usr/bin/env bash
# THE TEST COMMAND: installs what is missing, builds everything, runs the whole test suite.
#   bash scripts/test.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" -DTAPEGRAD_BUILD_TESTS=ON -DTAPEGRAD_BUILD_EXAMPLES=ON -DTAPEGRAD_BUILD_BENCH=ON
cd "${TAPEGRAD_BUILD_DIR:-$root/build}"
ctest -j "$(nproc)" --output-on-failure --timeout 600
