#!/usr/bin/env python3
"""Every field of a checkpoint.json, replaced in turn by values of every wrong kind, must give a
one-line error that names the file (or load, where the value is valid) — never a crash, a raw
library exception ("json.exception"), or a hang.

    checkpoint_fields.py BIN_DIR [--stride N]    # every case, or every N-th (the sanitizer build)
"""
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile

TINY = ["--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "16", "--batch", "2", "--eval-every", "0", "--threads", "1"]
VALUES = [None, True, -1, 0, 2 ** 63, 2 ** 64 - 1, 1e300, -1e300, 0.5, "", "x" * 3, "../../etc/passwd", [], [1, 2], {}, {"a": 1}]
CRASH_SIGNS = ["terminate called", "Aborted", "Segmentation fault", "core dumped", "AddressSanitizer", "runtime error:",
               "what():", "Traceback", "json.exception"]


def paths(j, prefix=()):
    """Every (path) to a value in j, leaves and containers alike, except the roots."""
    if isinstance(j, dict):
        for k, v in j.items():
            yield prefix + (k,)
            yield from paths(v, prefix + (k,))
    elif isinstance(j, list) and len(j) <= 8:  # long lists (tokenizer chars) are alike: their first items
        for i, v in enumerate(j[:3]):
            yield prefix + (i,)
            yield from paths(v, prefix + (i,))


def set_at(j, path, value):
    for k in path[:-1]:
        j = j[k]
    j[path[-1]] = value


def main():
    bin_dir = sys.argv[1]
    stride = int(sys.argv[sys.argv.index("--stride") + 1]) if "--stride" in sys.argv else 1
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.txt")
        open(text, "w").write("the quick brown fox jumps over the lazy dog. " * 40)
        base = os.path.join(tmp, "base")
        subprocess.run([os.path.join(bin_dir, "train_lm"), "--data", text, "--steps", "2", "--out", base] + TINY,
                       check=True, capture_output=True)
        meta = json.load(open(os.path.join(base, "checkpoint.json")))
        run = os.path.join(tmp, "run")
        cases = failures = seen = 0
        for path in paths(meta):
            for value in VALUES:
                edited = copy.deepcopy(meta)
                set_at(edited, path, value)
                seen += 1
                if edited == meta or seen % stride:
                    continue
                shutil.rmtree(run, ignore_errors=True)
                shutil.copytree(base, run)
                json.dump(edited, open(os.path.join(run, "checkpoint.json"), "w"))
                for args in (["sample_lm", "--checkpoint", run, "--tokens", "4", "--prompt", "the"],
                             ["train_lm", "--resume", run, "--steps", "3"]):
                    cases += 1
                    r = subprocess.run([os.path.join(bin_dir, args[0])] + args[1:], capture_output=True, text=True,
                                       timeout=60)
                    err = [l for l in r.stderr.splitlines() if l.strip() and ": error: " in l]
                    problems = []
                    if any(s in r.stderr for s in CRASH_SIGNS):
                        problems.append("crash or raw exception")
                    if r.returncode not in (0, 1):
                        problems.append(f"exit {r.returncode}")
                    if r.returncode == 1 and (len(err) != 1 or "checkpoint.json" not in err[0] and "model.safetensors" not in err[0]):
                        problems.append("error does not name the file")
                    if problems:
                        failures += 1
                        where = ".".join(map(str, path))
                        print(f"FAIL {args[0]} with {where} = {json.dumps(value)[:40]}: {'; '.join(problems)}\n"
                              f"  stderr: {r.stderr.strip()[-300:]}")
        print(f"{cases - failures} of {cases} checkpoint.json mutations give a clear error or load")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
