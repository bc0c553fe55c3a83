#!/usr/bin/env python3
"""Golden test: `eval_lm --sharpness` equals the top Hessian eigenvalue PyTorch computes on its own.

Loads the checkpoint into bench/torch_model.py's Decoder in float64, takes the batch eval_lm
documents (--dump-grads's metadata), and runs its own Lanczos (numpy, full reorthogonalisation)
over Hessian-vector products from torch.autograd (double backward: exact, where tapegrad's are
central differences of float64 gradients). The preconditioned eigenvalue uses Cohen et al.
2022's P = (1 - beta1^t) diag(sqrt(v / (1 - beta2^t)) + eps) from optimizer.safetensors.

    sharpness_against_pytorch.py CHECKPOINT_DIR GRADS.safetensors EVAL_LM_OUTPUT
"""
import json
import os
import re
import sys

import numpy as np

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed (Debian: apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from torch_model import Decoder, load_safetensors  # noqa: E402


def lanczos_top(matvec, n, iters, rng):
    """Largest eigenvalue of a symmetric operator: Lanczos with full reorthogonalisation."""
    q = rng.standard_normal(n)
    q /= np.linalg.norm(q)
    basis, alphas, betas = [q], [], []
    for _ in range(min(iters, n)):
        w = matvec(basis[-1])
        alphas.append(float(basis[-1] @ w))
        for b in basis:
            w -= (b @ w) * b
        beta = float(np.linalg.norm(w))
        if beta < 1e-12:
            break
        betas.append(beta)
        basis.append(w / beta)
    k = len(alphas)
    t = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    return float(np.linalg.eigvalsh(t)[-1])


def main():
    ckpt, grads_path, printed = sys.argv[1], sys.argv[2], open(sys.argv[3]).read()
    checkpoint = json.load(open(os.path.join(ckpt, "checkpoint.json")))
    config, train = checkpoint["model"], checkpoint["train"]
    weights, _ = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    moments, _ = load_safetensors(os.path.join(ckpt, "optimizer.safetensors"))
    _, meta = load_safetensors(grads_path)
    torch.set_num_threads(1)
    B, T = int(meta["batch"]), int(meta["ctx"])
    ids = torch.tensor(json.loads(meta["ids"])).view(B, T)
    targets = torch.tensor(json.loads(meta["targets"])).view(B, T)
    model = Decoder(config).double()
    model.load_state_dict({k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()}, strict=True)
    names = [name for name, _ in model.named_parameters()]
    params = [p for _, p in model.named_parameters()]
    sizes = [p.numel() for p in params]
    n = sum(sizes)

    def hvp(v):
        chunks = torch.split(torch.from_numpy(v), sizes)
        _, objective = model(ids, targets)
        grads = torch.autograd.grad(objective, params, create_graph=True)
        dot = sum((g * c.view_as(g)).sum() for g, c in zip(grads, chunks))
        return torch.cat([h.reshape(-1) for h in torch.autograd.grad(dot, params)]).numpy()

    t = checkpoint["optimizer"]["steps"]
    b1, b2, eps = train["beta1"], train["beta2"], 1e-8
    c1, c2 = 1 - b1 ** t, 1 - b2 ** t
    p = np.concatenate([c1 * (np.sqrt(moments["exp_avg_sq." + name].astype(np.float64).reshape(-1) / c2) + eps)
                        for name in names])
    d = 1 / np.sqrt(p)
    rng = np.random.default_rng(5)
    plain = lanczos_top(hvp, n, 120, rng)
    preconditioned = lanczos_top(lambda v: d * hvp(d * v), n, 120, rng)

    def shown(label):
        m = re.search(label + r"\s+([-0-9.e+]+)", printed)
        if not m:
            print(f"FAIL: eval_lm printed no '{label}' line:\n{printed}")
            sys.exit(1)
        return float(m.group(1))

    worst = 0.0
    for label, ours in (("top eigenvalue of H", plain), (r"top eigenvalue of P\^-1 H", preconditioned)):
        theirs = shown(label)
        rel = abs(theirs - ours) / abs(ours)
        worst = max(worst, rel)
        if rel > 1e-4:
            print(f"FAIL: {label.replace(chr(92), '')}: tapegrad {theirs} vs PyTorch {ours} (relative {rel:.1e}, allowed 1e-4)")
            sys.exit(1)
    print(f"OK: top eigenvalue of H {plain:.6g}, of P^-1 H {preconditioned:.6g} (PyTorch, {n} weights); "
          f"tapegrad's within {worst:.1e}")


if __name__ == "__main__":
    main()
