#!/usr/bin/env bash
# The API reference of the installed headers, from their own comments (Doxygen, docs/api/Doxyfile):
#   bash scripts/api-docs.sh [OUT_DIR]    # default build/api; then open OUT_DIR/html/index.html
# Installs doxygen with apt when it is missing. Any Doxygen warning on the public headers (a broken
# reference, a command typed by mistake) fails the run and is printed; the test suite runs this.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh" --docs
out="$(mkdir -p "${1:-$root/build/api}" && cd "${1:-$root/build/api}" && pwd)"
rm -rf "$out/html" "$out/warnings.log"
cd "$root"
if ! TAPEGRAD_API_OUT="$out" doxygen docs/api/Doxyfile >/dev/null || [[ -s "$out/warnings.log" ]]; then
  cat "$out/warnings.log" >&2
  echo "FAIL: Doxygen warnings on the public headers (above)" >&2
  exit 1
fi
echo "OK: API reference of $(ls lib/tapegrad/*.h lib/tapegrad/*/*.h nn/tapegrad/nn/*.h lm/tapegrad/lm/*.h | wc -l) headers, no warnings: $out/html/index.html"
