#!/usr/bin/env bash
# Fuzzes tapegrad's input parsers with libFuzzer (clang), each for SECONDS (default 600):
#   safetensors      the checkpoint weight/optimizer file reader
#   tokenizer_json   saved tokenizers (char and BPE)
#   encoders         the BPE and char tokenizers on arbitrary bytes (exact round trips)
#   checkpoint_json  the model and training configs of checkpoint.json
#   sweep_records    a sweep folder's run records (records/<id>.csv, runs.csv) and run proofs
# Crashing inputs land in tests/fuzz/crashes/<target>/ — commit them: ctest replays them.
#   bash scripts/fuzz.sh [SECONDS] [target ...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-600}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(safetensors tokenizer_json encoders checkpoint_json sweep_records)
"$root/scripts/install-deps.sh"
command -v clang++ >/dev/null || { sudo_=""; [[ $(id -u) -ne 0 ]] && sudo_=sudo; $sudo_ apt-get install -y -qq clang libclang-rt-dev libomp-dev >/dev/null; }
build="$root/build-fuzz"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTAPEGRAD_FUZZ=ON \
  -DTAPEGRAD_BUILD_TESTS=OFF -DTAPEGRAD_BUILD_BENCH=OFF -DTAPEGRAD_BUILD_EXAMPLES=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
cmake --build "$build" -j "$(nproc)" --target $(printf "fuzz_%s " "${targets[@]}") >/dev/null
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work" "$root/tests/fuzz/crashes/$t"
  cp -n "$root/tests/fuzz/corpus/$t"/* "$work/" 2>/dev/null || true
  echo "== fuzz_$t for ${seconds}s" >&2
  "$build/tests/fuzz/fuzz_$t" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$root/tests/fuzz/crashes/$t/" -print_final_stats=1 2>&1 |
    grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb|#[0-9]+ +DONE)|ERROR|SUMMARY|crash-|leak-|timeout-" || true
done
