# Shared by the experiment scripts: locate (and if needed build) compare_norms.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${TAPEGRAD_BUILD_DIR:-$root/build}/examples/compare_norms"
if [[ ! -x "$bin" ]]; then
  "$root/scripts/install-deps.sh"
  TAPEGRAD_TARGETS=compare_norms "$root/scripts/build.sh" -DTAPEGRAD_BUILD_EXAMPLES=ON
fi
cd "$root"
