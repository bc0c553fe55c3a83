#!/usr/bin/env python3
"""Every way of feeding tapegrad's programs bad input, and the one-line error each must give.

Each case runs a program and requires: the exit status (2 for usage errors, 1 for bad data or
files), a message that names the problem, exactly one line on stderr, and no sign of a crash
(no "terminate called", "Aborted", "Segmentation fault", sanitizer report, or stack trace).

    bad_input.py BIN_DIR               # run every case (CTest does this)
    bad_input.py BIN_DIR --markdown    # print the table for docs/reliability.md
"""
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

TINY = ["--layers", "1", "--heads", "2", "--dim", "16", "--ctx", "16", "--batch", "2", "--eval-every", "0", "--threads", "1"]


def fixtures(tmp, bin_dir):
    """Text files and a small valid checkpoint, plus tampered copies of it."""
    f = {}

    def write(name, data):
        path = os.path.join(tmp, name)
        open(path, "wb").write(data)
        f[name] = path
        return path

    write("empty.txt", b"")
    write("binary.bin", b"\x00\x01\x02 binary \x00 data" * 10)
    write("bad_utf8.txt", b"hello world, caf\xc3(\n" * 20)
    write("short.txt", b"too short for a context of 64")
    write("text.txt", ("the quick brown fox jumps over the lazy dog. " * 40).encode())
    os.mkdir(os.path.join(tmp, "a_directory"))
    f["a_directory"] = os.path.join(tmp, "a_directory")
    ckpt = os.path.join(tmp, "ckpt")
    subprocess.run([os.path.join(bin_dir, "train_lm"), "--data", f["text.txt"], "--steps", "2", "--out", ckpt] + TINY,
                   check=True, capture_output=True)
    f["ckpt"] = ckpt

    def tampered(name, edit_model=None, edit_json=None, rehash=True):
        """A copy of the checkpoint with model.safetensors and/or checkpoint.json edited. With
        rehash, checkpoint.json records the edited file's hash (a consistent but malformed
        checkpoint, as another tool might write), so the loader's deeper checks are reached."""
        d = os.path.join(tmp, name)
        shutil.copytree(ckpt, d)
        model = os.path.join(d, "model.safetensors")
        meta = json.load(open(os.path.join(d, "checkpoint.json")))
        if edit_model:
            edited = edit_model(open(model, "rb").read())  # read before "wb" truncates the file
            open(model, "wb").write(edited)
            if rehash:
                meta["files"]["model.safetensors"] = hashlib.sha256(open(model, "rb").read()).hexdigest()
        if edit_json:
            edit_json(meta)
        json.dump(meta, open(os.path.join(d, "checkpoint.json"), "w"))
        f[name] = d

    def header(b):
        n = struct.unpack("<Q", b[:8])[0]
        return n, json.loads(b[8:8 + n])

    def with_header(b, h):
        n, _ = header(b)
        raw = json.dumps(h).encode()
        raw += b" " * ((8 - len(raw) % 8) % 8)
        return struct.pack("<Q", len(raw)) + raw + b[8 + n:]

    def first_tensor(h):
        return next(k for k in h if k != "__metadata__")

    def overlap(b):
        _, h = header(b)
        names = [k for k in h if k != "__metadata__"]
        second = min(names, key=lambda k: -h[k]["data_offsets"][0])  # the last tensor in the file
        h[second]["data_offsets"] = [h[second]["data_offsets"][0] - 4, h[second]["data_offsets"][1] - 4]
        return with_header(b, h)

    def out_of_range(b):
        _, h = header(b)
        h[first_tensor(h)]["data_offsets"][1] += 10 ** 9
        return with_header(b, h)

    def wrong_dtype(b):
        _, h = header(b)
        t = h[first_tensor(h)]
        t["dtype"] = "F64"
        t["shape"] = [t["shape"][0], t["shape"][1] // 2]  # same bytes, read as doubles
        return with_header(b, h)

    tampered("ckpt_modified", edit_model=lambda b: b[:-1] + bytes([b[-1] ^ 1]), rehash=False)
    tampered("ckpt_truncated", edit_model=lambda b: b[:-100])
    tampered("ckpt_header_len", edit_model=lambda b: struct.pack("<Q", header(b)[0] - 7) + b[8:])
    tampered("ckpt_header_past_end", edit_model=lambda b: struct.pack("<Q", len(b)) + b[8:])
    tampered("ckpt_overlap", edit_model=overlap)
    tampered("ckpt_out_of_range", edit_model=out_of_range)
    tampered("ckpt_dtype", edit_model=wrong_dtype)
    sweep = os.path.join(tmp, "sweep")
    subprocess.run([os.path.join(bin_dir, "compare_norms"), "--norm", "none", "--lr", "1e-3", "--steps", "4",
                    "--eval-iters", "1", "--no-plot", "--out", sweep] + TINY[:-4], check=True, capture_output=True)
    f["sweep"] = sweep

    def edited_grid(name, edit):
        """A copy of the sweep folder whose sweep.json `edit` changed."""
        shutil.copytree(sweep, os.path.join(tmp, name))
        grid_path = os.path.join(tmp, name, "sweep.json")
        grid = json.load(open(grid_path))
        edit(grid)
        json.dump(grid, open(grid_path, "w"))
        f[name] = os.path.join(tmp, name)

    edited_grid("sweep_bad_grid", lambda g: g["axes"].update(lr=[0.001, -1]))
    edited_grid("sweep_path_grid", lambda g: g["axes"].update({"qk-norm": ["none", "../../x"]}))
    edited_grid("sweep_bad_patience", lambda g: g["sweep"].update({"divergence-patience": -3}))
    tampered("ckpt_shape", edit_json=lambda m: (m["model"].update(dim=32), m["train"].update(dim=32)))

    # Deep nesting (200,000 '['): once a stack overflow in the error message's dump().
    deep = "[" * 200000 + "]" * 200000
    tampered("ckpt_deep_json")
    meta_path = os.path.join(f["ckpt_deep_json"], "checkpoint.json")
    meta = json.load(open(meta_path))
    meta["model"]["dim"] = "DEEP"
    open(meta_path, "w").write(json.dumps(meta).replace('"DEEP"', deep))

    def deep_shape(b):
        n, h = header(b)
        h[first_tensor(h)]["shape"] = "DEEP"
        raw = json.dumps(h).replace('"DEEP"', deep).encode()
        raw += b" " * ((8 - len(raw) % 8) % 8)
        return struct.pack("<Q", len(raw)) + raw + b[8 + n:]
    tampered("ckpt_deep_header", edit_model=deep_shape)
    write("deep_config.json", ('{"steps": ' + deep + '}').encode())

    def huge_extra_tensor(b):  # an extra tensor of shape [2^32, 2^32]: its element count overflows
        n, h = header(b)
        h["huge"] = {"dtype": "F32", "shape": [2 ** 32, 2 ** 32], "data_offsets": [0, 4]}
        return with_header(b, h)
    tampered("ckpt_huge_shape", edit_model=huge_extra_tensor)

    def nan_weight(b):  # a NaN in the last weight of the file, hash recorded: damage, not a valid model
        return b[:-4] + struct.pack("<f", float("nan"))
    tampered("ckpt_nan", edit_model=nan_weight)
    tampered("ckpt_missing_field", edit_json=lambda m: m["model"].pop("heads"))
    tampered("ckpt_zero_rng", edit_json=lambda m: m["data"].update(batch_rng=["0" * 16] * 4))
    tampered("ckpt_rng_not_hex", edit_json=lambda m: m["data"]["batch_rng"].__setitem__(0, "zzzzzzzzzzzzzzzz"))
    tampered("ckpt_step_1e300", edit_json=lambda m: m.update(step=1e300))

    def huge_dim(b):  # one dimension of 2^63: must not wrap into a negative size
        n, h = header(b)
        h[first_tensor(h)]["shape"] = [2 ** 63]
        return with_header(b, h)
    tampered("ckpt_dim_2_63", edit_model=huge_dim)

    # A byte-level BPE run, and merge lists that ask for more than its config implies.
    bpe = os.path.join(tmp, "ckpt_bpe")
    subprocess.run([os.path.join(bin_dir, "train_lm"), "--data", f["text.txt"], "--steps", "2", "--out", bpe,
                    "--tokenizer", "bpe", "--vocab-size", "260"] + TINY, check=True, capture_output=True)

    def bpe_copy(name, edit):
        d = os.path.join(tmp, name)
        shutil.copytree(bpe, d)
        meta = json.load(open(os.path.join(d, "checkpoint.json")))
        edit(meta)
        json.dump(meta, open(os.path.join(d, "checkpoint.json"), "w"))
        f[name] = d
    bomb = [[97, 97]] + [[256 + i, 256 + i] for i in range(39)]  # token 256 + i spells 2^(i + 1) bytes
    bpe_copy("ckpt_bpe_more_merges", lambda m: m["tokenizer"].update(merges=bomb))
    bpe_copy("ckpt_bpe_bomb", lambda m: (m["tokenizer"].update(merges=bomb), m["model"].update(vocab_size=296)))
    bpe_copy("ckpt_bpe_id_2_32", lambda m: m["tokenizer"]["merges"].__setitem__(0, [2 ** 32 + 97, 98]))

    # A run whose training text changed after its checkpoint (appended to, same characters).
    write("growing.txt", open(f["text.txt"], "rb").read())
    grown = os.path.join(tmp, "ckpt_grown")
    subprocess.run([os.path.join(bin_dir, "train_lm"), "--data", f["growing.txt"], "--steps", "2", "--out", grown] + TINY,
                   check=True, capture_output=True)
    open(f["growing.txt"], "ab").write(b"the lazy dog. ")
    f["ckpt_grown"] = grown
    write("unknown_key.json", b'{"stepz": 3}')
    write("bool_as_number.json", b'{"eval-train": 2}')
    write("nul_key.json", b'{"steps\\u0000x": 3}')
    write("nul_data.json", b'{"data": "text.txt\\u0000junk"}')

    # A records row whose norm is a path: it must never become one (curves/<run_id>.csv).
    evil = os.path.join(tmp, "sweep_evil")
    shutil.copytree(f["sweep"], evil)
    runs = open(os.path.join(evil, "runs.csv")).read().splitlines()
    cols = runs[1].split(",")
    cols[1] = "../../secret"
    cols[0] = cols[0].replace("none", "../../secret", 1)
    open(os.path.join(evil, "runs.csv"), "w").write("\n".join([runs[0], ",".join(cols)]) + "\n")
    f["sweep_evil"] = evil
    tampered("ckpt_extra_field", edit_json=lambda m: m["model"].update(dropout=0.1))

    # A sweep folder that must not lie: its data changed after its runs trained; its grid edited
    # (a base setting, an axis's base value); a curve replaced by a link; a record of 10 GB (sparse).
    data = write("sweep_text.txt", ("the quick brown fox jumps over the lazy dog. " * 40).encode())
    base = os.path.join(tmp, "sweep_data")
    subprocess.run([os.path.join(bin_dir, "compare_norms"), "--norm", "none", "--lr", "1e-3", "--steps", "4",
                    "--eval-iters", "1", "--no-plot", "--data", data, "--out", base] + TINY[:-4], check=True,
                   capture_output=True)
    open(data, "ab").write(b"and one more sentence. ")
    f["sweep_data"] = base
    edited_grid("sweep_steps_edited", lambda g: g["train"].update(steps=8))
    edited_grid("sweep_dim_edited", lambda g: g["axes"].update(dim=[24, 32]))
    linked = os.path.join(tmp, "sweep_linked_curve")
    shutil.copytree(sweep, linked)
    curve = [c for c in os.listdir(os.path.join(linked, "curves"))][0]
    os.replace(os.path.join(linked, "curves", curve), os.path.join(tmp, "elsewhere.csv"))
    os.symlink(os.path.join(tmp, "elsewhere.csv"), os.path.join(linked, "curves", curve))
    f["sweep_linked_curve"] = linked
    huge = os.path.join(tmp, "sweep_huge_record")
    shutil.copytree(sweep, huge)
    record = [r for r in os.listdir(os.path.join(huge, "records")) if r.endswith(".csv")][0]
    os.truncate(os.path.join(huge, "records", record), 10 ** 10)
    f["sweep_huge_record"] = huge
    return f


def cases(f):
    """(program, arguments, exit status, message fragment, what goes wrong)."""
    T = "train_lm"
    return [
        (T, ["--bogus"], 2, "The following argument was not expected: --bogus", "unknown flag"),
        (T, ["--steps"], 2, "--steps: 1 required", "missing value"),
        (T, ["--steps", "abc"], 2, "--steps: must be a whole number in decimal (an optional '-', then digits without leading zeros), got 'abc'", "value of the wrong type"),
        (T, ["--steps", "0"], 2, "--steps must be positive, got 0", "zero steps"),
        (T, ["--batch", "-3"], 2, "--batch must be positive, got -3", "negative batch"),
        (T, ["--dim", "0"], 2, "--dim must be positive, got 0", "zero size"),
        (T, ["--lr", "-0.1"], 2, "--lr must be positive, got -0.1", "negative learning rate"),
        (T, ["--heads", "3"], 2, "--heads 3 does not divide --dim 128", "heads not dividing dim"),
        (T, ["--norm", "batchnorm"], 2, "--norm: batchnorm not in {layernorm,rmsnorm,", "unknown norm"),
        (T, ["--tokenizer", "bpe", "--vocab-size", "100"], 2, "--vocab-size 100 is smaller than the 256 tokens the bpe tokenizer starts from",
         "BPE vocabulary below the byte alphabet"),
        (T, ["--data", f["short.txt"]], 1, "but each part needs at least context + 1 = 65 tokens",
         "context longer than the data"),
        (T, ["--data", "/nonexistent/corpus.txt"], 1, "cannot read '/nonexistent/corpus.txt': no such file", "missing corpus"),
        (T, ["--data", f["empty.txt"]], 1, "is empty", "empty corpus"),
        (T, ["--data", f["a_directory"]], 1, "it is a directory, not a file", "a directory instead of a file"),
        (T, ["--data", f["binary.bin"]], 1, "NUL byte at offset 0: this looks like a binary file", "binary corpus"),
        (T, ["--data", f["bad_utf8.txt"]], 1, "invalid UTF-8 at byte 16 (0xC3 0x28): bad continuation byte",
         "invalid UTF-8 (char tokenizer)"),
        (T, ["--out", "/proc/tapegrad-out"], 1, "cannot create output directory '/proc/tapegrad-out'",
         "output (metrics) directory not writable"),
        (T, ["--resume", "/nonexistent/run"], 1, "checkpoint directory '/nonexistent/run' does not exist",
         "resuming a missing run"),
        (T, ["--resume", f["ckpt"], "--lr", "0.5"], 1, "--lr cannot be changed", "changing a setting on resume"),
        ("sample_lm", [], 2, "--checkpoint is required", "missing required flag"),
        ("sample_lm", ["--checkpoint", f["ckpt"], "--prompt", "Zebra 🙂"], 1,
         "the prompt cannot be encoded: char tokenizer: character 'Z' (U+005A) at byte 0 is not in the vocabulary",
         "prompt characters unknown to the tokenizer"),
        ("sample_lm", ["--checkpoint", f["ckpt"], "--top-p", "1.5"], 2, "--top-p: must be in [0, 1], got 1.5", "top-p above 1"),
        ("eval_lm", ["--checkpoint", f["ckpt"], "--data", f["bad_utf8.txt"]], 1, "cannot be encoded with this checkpoint's tokenizer",
         "evaluation text the tokenizer cannot encode"),
        ("sample_lm", ["--checkpoint", f["ckpt_modified"]], 1, "do not match the SHA-256 recorded in checkpoint.json",
         "checkpoint file modified after saving"),
        ("sample_lm", ["--checkpoint", f["ckpt_truncated"]], 1, "lie outside the data section", "truncated checkpoint"),
        ("sample_lm", ["--checkpoint", f["ckpt_header_len"]], 1, "header: not valid JSON", "wrong header length"),
        ("sample_lm", ["--checkpoint", f["ckpt_header_past_end"]], 1, "is larger than the rest of the file",
         "header larger than the file"),
        ("sample_lm", ["--checkpoint", f["ckpt_overlap"]], 1, "overlaps tensor", "overlapping offsets"),
        ("sample_lm", ["--checkpoint", f["ckpt_out_of_range"]], 1, "lie outside the data section", "out-of-range offsets"),
        ("sample_lm", ["--checkpoint", f["ckpt_dtype"]], 1, "is F64, expected F32", "wrong dtype"),
        ("sample_lm", ["--checkpoint", f["ckpt_shape"]], 1, "but the model needs", "shape disagreeing with the config"),
        ("sample_lm", ["--checkpoint", f["ckpt_missing_field"]], 1, "config: missing field 'heads'", "config with a missing field"),
        ("sample_lm", ["--checkpoint", f["ckpt_extra_field"]], 1, "config: unknown field 'dropout'", "config with an extra field"),
        ("sample_lm", ["--checkpoint", f["ckpt_deep_json"]], 1, "checkpoint.json: JSON nested deeper than 64 levels",
         "deeply nested checkpoint.json"),
        ("sample_lm", ["--checkpoint", f["ckpt_deep_header"]], 1, "model.safetensors: header: JSON nested deeper than 64 levels",
         "deeply nested safetensors header"),
        (T, ["--config", f["deep_config.json"]], 2, "config file: JSON nested deeper than 64 levels", "deeply nested config file"),
        (T, ["--batch", str(2 ** 60)], 2, "--batch 1152921504606846976 is too large (at most 1048576)",
         "batch whose products overflow"),
        (T, ["--ctx", str(2 ** 63 - 1)], 2, "--ctx 9223372036854775807 is too large (at most 1048576)",
         "context whose products overflow"),
        (T, ["--batch", "65536", "--ctx", "65536"], 2, "is too many tokens per step (at most 2^28)", "tokens per step"),
        (T, ["--lr", "inf"], 2, "--lr must be a finite number, got inf", "infinite learning rate"),
        ("eval_lm", ["--checkpoint", f["ckpt"], "--data", f["text.txt"], "--dump-grads", os.path.join(f["a_directory"], "g.st"),
                     "--batch", str(2 ** 62)], 1, "--batch x context: 4611686018427387904 x 16 overflows a 64-bit size",
         "eval batch whose product overflows"),
        ("sample_lm", ["--checkpoint", f["ckpt_huge_shape"]], 1, "tensor 'huge' shape: (4294967296,4294967296) would hold more",
         "tensor shape whose element count overflows"),
        ("sample_lm", ["--checkpoint", f["ckpt_nan"]], 1, "holds a non-finite value (nan) at index", "NaN weights"),
        ("eval_lm", ["--checkpoint", f["ckpt_nan"], "--data", f["text.txt"]], 1, "holds a non-finite value (nan)",
         "NaN weights, evaluated"),
        ("sample_lm", ["--checkpoint", f["ckpt"], "--temperature", "nan"], 2, "--temperature: must be a finite number, got nan",
         "NaN temperature"),
        (T, ["--seed", "-1"], 2, "--seed: must be a whole number in [0, 2^64 - 1], got -1", "negative seed"),
        (T, ["--seed", str(2 ** 64)], 2, "--seed: must be a whole number in [0, 2^64 - 1], got 18446744073709551616",
         "seed past 2^64 - 1"),
        (T, ["--eval-train=-1"], 2, "--eval-train: must be true or false, got -1", "an on/off flag given a number"),
        ("sample_lm", ["--checkpoint", f["ckpt"], "--kv-cache=yes"], 2, "--kv-cache: must be true or false, got yes",
         "an on/off flag given another word"),
        (T, ["--config", f["bool_as_number.json"]], 2, "--eval-train: must be true or false, got 2",
         "an on/off setting in a config file given a number"),
        (T, ["--config", f["nul_key.json"]], 2, "unknown key 'steps\\0x'", "a NUL byte in a config file's key"),
        (T, ["--config", f["nul_data.json"]], 2, "text.txt\\0junk': a path cannot hold a NUL byte",
         "a NUL byte in a path from a config file"),
        ("compare_norms", ["--embed-scale-positions", "2"], 2, "--embed-scale-positions: must be true or false, got 2",
         "a swept on/off setting given a number"),
        ("compare_norms", ["--evals", "-1"], 2, "--evals must be in [0, 1000000000], got -1", "negative evaluations per run"),
        ("compare_norms", ["--jobs", "0"], 2, "--jobs must be in [1, 1024], got 0", "no jobs"),
        ("compare_norms", ["--lr", "1e-3", "0.001"], 2, "--lr 0.001 is given twice (in any spelling, a value of an axis is one run)",
         "an axis value given twice"),
        ("compare_norms", ["--recipe", "papers", "--norm", "dyt", "--placement", "deepnorm"], 2,
         "--recipe papers: dyt-paper-transfer (for --norm dyt) and deepnorm-paper (for --placement deepnorm) both set --embed-scale",
         "two recipes setting one setting on a run"),
        ("compare_norms", ["--divergence-factor", "nan"], 2, "--divergence-factor must be a finite number, got 'nan'",
         "NaN divergence factor"),
        ("compare_norms", ["--python", "/nonexistent/python3"], 2, "--python '/nonexistent/python3': no such file",
         "a plots interpreter that does not exist"),
        ("compare_norms", ["--python", "no-such-python-here"], 2, "--python 'no-such-python-here': not found on PATH",
         "a plots interpreter not on PATH"),
        ("compare_norms", ["--min-lr-ratio", "nan"], 2, "--min-lr-ratio must be a finite number, got 'nan'",
         "NaN min-lr ratio"),
        ("compare_norms", ["--lr", "0"], 2, "--lr must be positive, got 0", "non-positive learning rate in a sweep"),
        ("compare_norms", ["--norm", "groupnorm"], 2, "--norm: groupnorm not in {layernorm,rmsnorm,", "unknown norm in a sweep"),
        ("compare_norms", ["--norm", "none", "--lr", "1e-3", "--steps", "4", "--eval-iters", "2", "--out", f["sweep"]] + TINY[:-4], 1,
         "holds runs trained with --eval-iters 1, this sweep asks for 2: a folder's runs share it",
         "continuing a sweep with another setting its runs must share"),
        ("compare_norms", ["--dim", "16", "15", "--heads", "2"], 2, "--heads 2 does not divide --dim 15 (in the runs with dim=15)",
         "a swept combination that cannot train"),
        ("compare_norms", ["--beta2", "0.9", "nan"], 2, "--beta2 'nan': must be a finite number", "NaN among a swept setting's values"),
        ("compare_norms", ["--out", f["sweep_bad_grid"]], 1, "sweep.json: lr must be positive, got -1",
         "a sweep.json whose grid holds a negative lr"),
        ("compare_norms", ["--out", f["sweep_path_grid"]], 1, "sweep.json: axis --qk-norm '../../x': a swept value must be",
         "a sweep.json whose axis value is a path"),
        ("compare_norms", ["--out", f["sweep_bad_patience"]], 1, "sweep.json: divergence-patience must be in [1, 1000000000], got -3",
         "a sweep.json whose judgement setting is out of range"),
        (T, ["--resume", f["ckpt_zero_rng"]], 1, "data.batch_rng: random generator state: all four words are zero",
         "all-zero batch generator state"),
        (T, ["--resume", f["ckpt_rng_not_hex"]], 1, "data.batch_rng: expected 16 hex digits, got \"zzzzzzzzzzzzzzzz\"",
         "batch generator state not hex"),
        (T, ["--resume", f["ckpt_step_1e300"]], 1, "checkpoint.json: field 'step' must be an integer, got number 1e+300",
         "step that is not an integer"),
        ("sample_lm", ["--checkpoint", f["ckpt_dim_2_63"]], 1, "has a dimension of 9223372036854775808; at most",
         "tensor dimension of 2^63"),
        ("sample_lm", ["--checkpoint", f["ckpt_bpe_more_merges"]], 1,
         "40 bpe merges make 296 tokens, but the model has a vocabulary of 260", "more BPE merges than the model's vocabulary"),
        ("sample_lm", ["--checkpoint", f["ckpt_bpe_bomb"]], 1, "makes a token of 2048 bytes; tokens are at most 1024 bytes",
         "BPE merge bomb (40 chained merges ask for 2^41 bytes)"),
        ("sample_lm", ["--checkpoint", f["ckpt_bpe_id_2_32"]], 1, "merge 0 [4294967393,98] must pair two existing token ids",
         "BPE merge id of 2^32 + 97"),
        (T, ["--resume", f["ckpt_grown"], "--steps", "4"], 1, "is not the text this run was trained on",
         "resuming on a training text that changed"),
        (T, ["--config", f["unknown_key.json"]], 2, "config file '" + f["unknown_key.json"] + "': unknown key 'stepz'",
         "unknown key in a JSON config file"),
        ("sample_lm", ["--checkpoint", os.path.join(f["ckpt"], "model.safetensors")], 1,
         "model.safetensors' is a file, not a directory (give the folder that holds it", "a checkpoint file instead of its folder"),
        (T, ["--sharpness-every", "10", "--sharpness-iters", "0"], 2, "--sharpness-iters must be in [1, 1000], got 0",
         "sharpness measurement without Lanczos steps"),
        (T, ["--sharpness-every", "1", "--sharpness-batch", "1048576", "--ctx", "1024"], 2,
         "is too many tokens per measurement (at most 2^28)", "sharpness batch whose tokens overflow the bound"),
        (T, ["--dim", "99999999999999999999"], 2, "--dim: must be a whole number in [-2^63, 2^63 - 1], got 99999999999999999999",
         "an integer flag past 2^63 (once saturated to 2^63 - 1)"),
        ("compare_norms", ["--steps", "8", "-99999999999999999999"], 2,
         "--steps: must be a whole number in [-2^63, 2^63 - 1], got -99999999999999999999", "a swept integer past -2^63"),
        (T, ["--steps", "010"], 2, "--steps: must be a whole number in decimal (an optional '-', then digits without leading zeros), got '010'",
         "an integer with a leading zero (octal 8 to CLI11)"),
        (T, ["--dim", "0x10"], 2, "--dim: must be a whole number in decimal", "a hexadecimal integer"),
        (T, ["--stop-after", "+99999999999999999999"], 2, "got '+99999999999999999999'",
         "a '+' sign past 2^63 (once saturated)"),
        (T, ["--seed", "010"], 2, "--seed: must be a whole number in decimal (an optional '-', then digits without leading zeros), got '010'", "a seed with a leading zero"),
        ("sample_lm", ["--checkpoint", f["ckpt"], "--tokens", "0xffffffffffffffffffff"], 2,
         "--tokens: must be a whole number in decimal", "a hexadecimal token count past 2^64"),
        ("compare_norms", ["--dim", "16", "020"], 2, "--dim: must be a whole number in decimal",
         "a swept integer with a leading zero (once dim 16 twice)"),
        ("seed_walkthrough", ["--seed", "-1"], 2, "--seed: must be a whole number in [0, 2^64 - 1], got -1",
         "a negative walkthrough seed"),
        ("custom_op", [], 1, "custom_op: error: TAPEGRAD_BUFFER_OFFSET: 'abc'", "a bad buffer offset in the environment",
         {"TAPEGRAD_BUFFER_OFFSET": "abc"}),
        ("spiral_mlp", [], 1, "spiral_mlp: error: TAPEGRAD_BUFFER_OFFSET: 'abc'", "a bad buffer offset, spiral_mlp",
         {"TAPEGRAD_BUFFER_OFFSET": "abc"}),
        ("seed_walkthrough", [], 1, "error: TAPEGRAD_BUFFER_OFFSET: 'abc'", "a bad buffer offset, seed_walkthrough",
         {"TAPEGRAD_BUFFER_OFFSET": "abc"}),
        (T, ["--tokenizer", "char\n\x1b[2J"], 2, "char\\x0a\\x1b[2J",
         "a value with a newline and an escape sequence (printed as \\xNN, on one line)"),
        (T, ["--norm", "dyt", "--dyt-alpha", "1e-300"], 2, "--dyt-alpha 1e-300 rounds to 0 in float32",
         "a DyT alpha that rounds to 0 in float32 (once stored as 0.0)"),
        (T, ["--norm", "dyt", "--dyt-alpha", "0"], 2, "--dyt-alpha must be in (0, 100], got 0", "DyT alpha of 0 (tanh(0 x) = 0)"),
        (T, ["--allow-data-change"], 2, "--allow-data-change applies to --resume only", "a resume-only flag on a new run"),
        ("compare_norms", ["--norm", "none", "--lr", "1e-3", "--steps", "4", "--eval-iters", "1", "--no-plot", "--out",
                           f["sweep_evil"]] + TINY[:-4], 1, "runs.csv:2: column 'norm': --norm '../../secret': a swept value must be",
         "a records row whose norm is a path"),
        ("compare_norms", ["--seed", "2", "--out", f["sweep_data"]], 1, "its runs trained on",
         "continuing a sweep after its --data file changed (the size and SHA-256 of both are named)"),
        ("compare_norms", ["--out", f["sweep_steps_edited"]], 1, "trained with steps = 4, but the grid",
         "a sweep.json edited after its runs trained (steps 4 -> 8)"),
        ("compare_norms", ["--out", f["sweep_dim_edited"]], 1, "trained with dim = 16, but the grid",
         "a sweep.json whose axis now relabels trained runs (dim [16] -> [24, 32])"),
        ("compare_norms", ["--out", f["sweep_linked_curve"]], 1, "a link; a sweep reads and writes only files of its own",
         "a run's curve replaced by a link"),
        ("compare_norms", ["--out", f["sweep_huge_record"]], 1, "bytes, more than the 1048576-byte limit",
         "a run record of 10 GB (refused before reading)"),
    ]


CRASH_SIGNS = ["terminate called", "Aborted", "Segmentation fault", "core dumped", "AddressSanitizer", "runtime error:",
               "what():", "Traceback"]


def main():
    bin_dir = sys.argv[1]
    markdown = "--markdown" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        rows = cases(fixtures(tmp, bin_dir))
        if markdown:
            print("| case | example | exit | message (excerpt) |\n|---|---|---|---|")
            for prog, args, status, fragment, what, *_ in rows:
                shown = " ".join("".join(f"\\x{ord(c):02x}" if ord(c) < 32 else c for c in
                                         (a if not a.startswith(tmp) else "…/" + os.path.basename(a))) for a in args)
                print(f"| {what} | `{prog} {shown}` | {status} | {fragment} |")
            return 0
        failures = 0
        for prog, args, status, fragment, what, *env in rows:  # a sixth element: variables for the environment
            r = subprocess.run([os.path.join(bin_dir, prog)] + args, capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, **(env[0] if env else {})))
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            problems = []
            if r.returncode != status:
                problems.append(f"exit {r.returncode}, expected {status}")
            if fragment not in r.stderr:
                problems.append(f"message lacks {fragment!r}")
            if len(lines) != 1:
                problems.append(f"{len(lines)} lines on stderr, expected 1")
            if any(s in r.stderr for s in CRASH_SIGNS):
                problems.append("looks like a crash")
            if problems:
                failures += 1
                print(f"FAIL [{what}] {prog} {' '.join(args)}: {'; '.join(problems)}\n  stderr: {r.stderr.strip()}")
        print(f"{len(rows) - failures} of {len(rows)} bad-input cases give their clear error")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
