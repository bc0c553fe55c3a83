#!/usr/bin/env bash
# CTest "docs: the library guide's projects ...": runs library_guide.py with the Python that sees
# PyTorch (tests/golden/torch_env.sh: skipped without it, failed in CI).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../golden/torch_env.sh"
OMP_NUM_THREADS=1 "$py" "$here/library_guide.py" "$here/../.."
