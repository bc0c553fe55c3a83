#!/usr/bin/env bash
# THE MAIN COMMAND: installs what is missing, builds, and runs the main job.
#   bash scripts/lab.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
TAPEGRAD_TARGETS="spiral_mlp" "$root/scripts/build.sh" -DTAPEGRAD_BUILD_EXAMPLES=ON
build="${TAPEGRAD_BUILD_DIR:-$root/build}"
"$build/examples/spiral_mlp" "$@"
