#!/usr/bin/env bash
# CTest "cli: sample_lm prints valid UTF-8 with a byte-level tokenizer": a BPE token may end inside
# a character, so printing tokens as they come splits Chinese into invalid bytes. An untrained
# model sampled hot draws byte tokens >= 0x80 in any order: the output must still decode strictly,
# and with the char tokenizer (whole characters by construction) nothing may be replaced.
source "$(dirname "${BASH_SOURCE[0]}")/test_env.sh"
for _ in $(seq 30); do printf '小明今天在公园打乒乓球。乒乓球拍卖完了。the fox runs. 🙂\n'; done > "$work/zh.txt"
tiny=(--data "$work/zh.txt" --steps 2 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 --eval-every 0 --threads 1)
"$bin_dir/train_lm" "${tiny[@]}" --tokenizer bpe --vocab-size 270 --out "$work/bpe" 2> "$work/log" || fail "train_lm (bpe)"
"$bin_dir/train_lm" "${tiny[@]}" --out "$work/char" 2> "$work/log" || fail "train_lm (char)"
check_utf8() {  # FILE, WHAT, REPLACEMENTS_ALLOWED
  python3 - "$1" "$2" "$3" <<'PY' || exit 1
import sys
path, what, replacements_allowed = sys.argv[1], sys.argv[2], sys.argv[3] == "yes"
data = open(path, "rb").read()
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit(f"FAIL: {what}: invalid UTF-8 at byte {e.start}: {data[max(0, e.start - 8):e.start + 8]!r}")
if not text.startswith("乒乓"):
    sys.exit(f"FAIL: {what}: the prompt is not echoed first: {text[:20]!r}")
if not replacements_allowed and "\ufffd" in text:
    sys.exit(f"FAIL: {what}: U+FFFD in the output of a char tokenizer")
print(f"{what}: {len(data)} bytes, {len(text)} characters, {text.count(chr(0xFFFD))} replaced; valid UTF-8")
PY
}
for seed in 1 2 3; do
  "$bin_dir/sample_lm" --checkpoint "$work/bpe" --prompt "乒乓" --tokens 300 --temperature 3 --seed "$seed" > "$work/out_bpe" ||
    fail "sample_lm (bpe)"
  check_utf8 "$work/out_bpe" "bpe, seed $seed" yes
done
"$bin_dir/sample_lm" --checkpoint "$work/char" --prompt "乒乓" --tokens 300 --temperature 3 > "$work/out_char" || fail "sample_lm (char)"
check_utf8 "$work/out_char" "char" no
echo "OK: sample_lm prints whole characters"
