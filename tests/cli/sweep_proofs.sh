#!/usr/bin/env bash
# CTest "lab: a sweep folder reports only runs its proofs vouch for": a run whose record was
# edited, whose curve was deleted or had a row appended trains again; runs.csv and curves.csv never
# carry the edited values; a folder written before proofs existed is adopted once, with a message.
set -euo pipefail
bin="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
id=layernorm_pre_lr0.001_s1_L1_w30
run() { "$bin/compare_norms" --norm layernorm --lr 1e-3 --seed 1 --layers 1 --heads 2 --dim 16 --ctx 16 --batch 2 \
          --steps 4 --evals 1 --eval-iters 1 --threads 1 --no-plot --out D "$@" >/dev/null 2>log; }
fail() { echo "FAIL: $*"; cat log; exit 1; }
run
[[ -f D/records/$id.json ]] || fail "no proof records/$id.json after the run"
want="$(cut -d, -f13 D/runs.csv | tail -1)"   # final_val_loss

# An edited record trains again, and the edit reaches neither runs.csv nor the report.
sed -i "2s/,$want,/,1.234,/" D/records/$id.csv
run
grep -q "records/$id.csv changed after its run wrote it: training run $id again" log || fail "an edited record was reused"
! grep -q "1.234" D/runs.csv D/report.md || fail "the edited value was reported"
[[ "$(cut -d, -f13 D/runs.csv | tail -1)" == "$want" ]] || fail "retrained run gave another loss"

# A deleted curve, then a garbage row appended to one: the run is not done.
rm D/curves/$id.csv
run
grep -q "curves/$id.csv is missing: training run $id again" log || fail "a run without its curve counted as done"
echo "garbage,row" >> D/curves/$id.csv
run
grep -q "curves/$id.csv changed after its run wrote it" log || fail "a damaged curve was reused"
! grep -q garbage D/curves.csv || fail "a garbage curve row reached curves.csv"

# Untouched: nothing trains again.
run
! grep -q "again" log || fail "an intact run trained again"

# A proof from before a setting existed (its key missing): the run had the setting's default, so it
# stays done; a proof that names another value than the grid's is refused.
py="$(command -v /usr/bin/python3 || command -v python3)"
"$py" - "D/records/$id.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); del p["config"]["weight-decay-mode"]; json.dump(p, open(sys.argv[1], "w"))
PY
run
! grep -q "again" log || fail "a run whose proof predates a setting (at its default) trained again"
"$py" - "D/records/$id.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["config"]["weight-decay-mode"] = "independent"; json.dump(p, open(sys.argv[1], "w"))
PY
! run || fail "a proof with another weight-decay-mode than the grid's was accepted"
grep -q 'trained with weight-decay-mode = "independent"' log || fail "the changed setting was not named"
"$py" - "D/records/$id.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); p["config"]["weight-decay-mode"] = "coupled"; json.dump(p, open(sys.argv[1], "w"))
PY
# "coupled" is the decay mode's former name (now lr-scaled): a proof written before the rename holds.
run
! grep -q "again" log || fail "a proof naming the decay mode by its former name 'coupled' was not accepted"

# A run without a proof in a folder of proofs (killed before its proof, or copied in) trains again.
cp D/records/$id.csv "$work/record.csv"
rm D/records/$id.json
run
grep -q "records/$id.json (its proof) is missing: training run $id again" log || fail "a proof-less run was adopted"
[[ -f D/records/$id.json ]] || fail "the retrained run got no proof"

# A folder from before proofs (sweep.json unmarked, no proof anywhere): adopted, once its record
# agrees with the grid, and hashed from then on; one whose record says other steps trains again.
unmark() { "$py" - D/sweep.json <<'PY'
import json, sys
g = json.load(open(sys.argv[1])); g.pop("run_proofs", None); json.dump(g, open(sys.argv[1], "w"))
PY
}
rm D/records/$id.json; unmark
run
grep -q "1 run(s) recorded before runs carried proofs" log || fail "a folder without proofs was not adopted with a message"
[[ -f D/records/$id.json ]] || fail "the adopted run got no proof"
grep -q '"run_proofs": true' D/sweep.json || fail "sweep.json was not marked as a folder of proofs"
rm D/records/$id.json; unmark
sed -i "2s/,4,4,/,3,3,/" D/records/$id.csv
run
grep -q "records/$id.csv says 3 of 3 steps, the grid gives 4: training run $id again" log ||
  fail "an old record with other steps than the grid's was adopted"
echo "OK: sweep proofs"
