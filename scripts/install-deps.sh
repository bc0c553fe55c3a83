#!/usr/bin/env bash
# Installs, with apt, whatever tapegrad needs that this Debian/Ubuntu machine lacks. Idempotent:
# when everything is present it only asks dpkg (well under a second) and installs nothing.
#   scripts/install-deps.sh            build and lab dependencies
#   scripts/install-deps.sh --test     also PyTorch (python3-torch): the golden tests compare against it;
#                                      clang (clang, libomp-dev): every source must compile with it too;
#                                      pytest (python3-pytest) for the Python front-end's suite, pandas
#                                      (python3-pandas) for its dataframe(), nbconvert and ipykernel
#                                      (python3-nbconvert, python3-ipykernel) to execute its notebook,
#                                      headless Chromium (chromium-headless-shell) to open report.html
#   scripts/install-deps.sh --bench    also PyTorch, for bench/compare_pytorch.sh
#   scripts/install-deps.sh --docs     only doxygen (scripts/api-docs.sh), which --test includes
set -euo pipefail

packages=(
  cmake g++ make                 # toolchain
  libeigen3-dev libopenblas-dev  # Eigen 3.4, OpenBLAS (GEMM)
  catch2 libbenchmark-dev        # tests, benchmarks
  libcli11-dev nlohmann-json3-dev
  python3 python3-matplotlib python3-numpy  # plots (lab/plot_lab.py)
  python3-plotly                 # the report as a web page (report.html, plotly.js inside)
  python3-dev pybind11-dev       # the Python front-end (import tapegrad)
  libopenmpi-dev openmpi-bin     # data-parallel training and distributed sweeps (optional at build time)
)
# libxsmm's generated GEMM kernels (lib/tapegrad/libxsmm_gemm.h) exist for x86-64 only.
[[ "$(dpkg --print-architecture 2>/dev/null)" == "amd64" ]] && packages+=(libxsmm-dev)
[[ "${1:-}" == "--bench" || "${1:-}" == "--test" ]] && packages+=(python3-torch)
[[ "${1:-}" == "--test" ]] && packages+=(clang libomp-dev doxygen python3-pytest python3-pandas python3-nbconvert python3-ipykernel
                                         chromium-headless-shell)
[[ "${1:-}" == "--docs" ]] && packages=(doxygen)

missing=()
for p in "${packages[@]}"; do
  [[ "$p" == \#* ]] && continue
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when an install fails with the current ones.
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
  { $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
