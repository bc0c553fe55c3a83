# Sourced by CLI test scripts: strict mode, the programs' folder (the script's first argument) as
# $bin_dir, a scratch folder $work removed on exit, and fail MESSAGE, which also prints $work/log
# (where the scripts send the output of the program under test) when there is one.
set -euo pipefail
bin_dir="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; [[ -f "$work/log" ]] && cat "$work/log"; exit 1; }
