# Shared by the experiment scripts: locate (and if needed build) compare_norms.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/examples/compare_norms"
if [[ ! -x "$bin" ]]; then
  "$root/scripts/install-deps.sh"
  TAPEGRAD_TARGETS=compare_norms "$root/scripts/build.sh" -DTAPEGRAD_BUILD_EXAMPLES=ON
fi
cd "$root"
# Experiments 05-07 train on Shakespeare (../shared/data/tinyshakespeare.txt beside the project,
# or TAPEGRAD_SHAKESPEARE): a text large enough that the models do not memorise it in 300 steps.
shakespeare="${TAPEGRAD_SHAKESPEARE:-$root/../shared/data/tinyshakespeare.txt}"
need_shakespeare() {
  if [[ ! -f "$shakespeare" ]]; then
    echo "$(basename "$0"): $shakespeare not found; set TAPEGRAD_SHAKESPEARE to a copy of tinyshakespeare.txt" >&2
    exit 1
  fi
}
