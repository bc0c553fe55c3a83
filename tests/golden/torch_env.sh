# Sourced by the golden tests: `py` is the interpreter that sees Debian's python3-torch
# (/usr/bin/python3; the first python3 on PATH may be another build), and a missing PyTorch skips
# the test (exit 77) — except in CI, where a skipped golden test would hide a missing install step.
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3
if ! "$py" -c "import torch, numpy" 2>/dev/null; then
  [[ "${CI:-}" == "true" ]] && { echo "FAIL: PyTorch is not installed (scripts/install-deps.sh --test installs it)"; exit 1; }
  echo "SKIP: PyTorch is not installed (scripts/install-deps.sh --test)"; exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
