# Sourced by CLI test scripts: strict mode, the programs' folder (the script's first argument) as
# $bin_dir, a scratch folder $work removed on exit, and fail MESSAGE.
set -euo pipefail
bin_dir="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
