#!/usr/bin/env python3
"""How far a norm computed in bf16 lands from its float32 twin, on a trained model's own activations.

For each checkpoint: every norm of the model (each block's two, the final one) is hooked while the
model evaluates its validation batches in float32 norms; for each norm input x the hook computes the
float32 output y = Norm(x) and the bf16 implementation's y16 = bf16(Norm(bf16(x))) (--norm-precision
bf16, nn::apply_norm), and reports the relative drift rms(y16 - y) / rms(y), with the input's row
|mean| / std — what a bf16 input costs LayerNorm: rounding x at |x| ~ |mean| moves x - mean by up to
2^-9 |mean|, i.e. 2^-9 |mean|/std of the output, where RMSNorm and DyT see relative rounding only.

    11_norm_drift.py CHECKPOINT_DIR [...] [--per-layer]     # prints a Markdown table
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np

import tapegrad as tg


def bf16(a):
    """Round to nearest even on the bit pattern (lib/tapegrad/bf16.h), kept in float32."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16).astype(np.uint32)
    nan = np.isnan(a)
    r[nan] = (u[nan].astype(np.uint32) | 0x00400000) & 0xFFFF0000
    return r.view(np.float32)


def drift(checkpoint, batches):
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "ck")
        shutil.copytree(checkpoint, copy)
        path = os.path.join(copy, "checkpoint.json")
        meta = json.load(open(path))
        meta["model"]["norm_precision"] = "fp32"  # the hooks see the float32 input and output
        meta["train"]["norm-precision"] = "fp32"
        meta["train"]["eval-iters"], meta["train"]["eval-train"] = batches, False
        json.dump(meta, open(path, "w"))
        trainer = tg.lm.Trainer.resume(copy)
        norms = [(n, m) for n, m in trainer.model.named_modules() if n.split(".")[-1] in ("norm1", "norm2", "norm_f")]
        seen = {n: [] for n, _ in norms}
        inside = []

        def hook_for(name):
            def hook(module, inputs, output):
                if inside:
                    return  # the bf16 twin's own call below
                x, y = inputs[0].numpy().reshape(-1, inputs[0].numpy().shape[-1]), output.numpy()
                inside.append(1)
                try:
                    y16 = bf16(module(tg.Tape().constant(bf16(x))).numpy())
                finally:
                    inside.pop()
                y = y.reshape(y16.shape)
                mean, std = x.mean(-1), x.std(-1)
                seen[name].append((float(np.sqrt(np.mean((y16 - y) ** 2)) / np.sqrt(np.mean(y ** 2))),
                                   float(np.median(np.abs(mean) / np.maximum(std, 1e-30)))))
            return hook

        handles = [m.register_forward_hook(hook_for(n)) for n, m in norms]
        trainer.evaluate(hooks=True)  # evaluation runs no hooks unless asked
        for h in handles:
            h.remove()
        return meta["model"], {n: (np.mean([d for d, _ in v]), np.mean([r for _, r in v])) for n, v in seen.items() if v}


def main():
    per_layer = "--per-layer" in sys.argv
    lines = ["| checkpoint | norm | layer | drift rms(y16 - y) / rms(y) | input row abs(mean) / std (median) |",
             "|---|---|---|---|---|"] if per_layer else [
             "| checkpoint | norm | drift, mean over the norms | largest | input abs(mean) / std, largest |", "|---|---|---|---|---|"]
    for checkpoint in (a for a in sys.argv[1:] if a != "--per-layer"):
        model, per = drift(checkpoint, batches=4)
        name = os.path.basename(os.path.normpath(checkpoint))
        if per_layer:
            for layer, (d, r) in per.items():
                lines.append(f"| {name} | {model['norm']} | {layer} | {d:.2e} | {r:.2f} |")
        else:
            ds, rs = [d for d, _ in per.values()], [r for _, r in per.values()]
            lines.append(f"| {name} | {model['norm']} | {np.mean(ds):.2e} | {max(ds):.2e} | {max(rs):.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
