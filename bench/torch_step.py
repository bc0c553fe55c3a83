#!/usr/bin/env python3
"""Times the PyTorch training step of the reference model (bench/torch_model.py): forward,
cross-entropy, backward, AdamW — the same work as tapegrad's bench_step. Prints one JSON line.

    /usr/bin/python3 bench/torch_step.py --threads 1 --norm layernorm --steps 60
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Decoder, default_config, openblas_core  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--norm", default="layernorm")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=65)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Decoder(default_config(vocab_size=a.vocab, ctx=a.ctx, layers=a.layers, heads=a.heads, dim=a.dim,
                                   norm=a.norm))
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.99))
    times = []
    for i in range(a.warmup + a.steps):
        ids = torch.randint(0, a.vocab, (a.batch, a.ctx))
        targets = torch.randint(0, a.vocab, (a.batch, a.ctx))
        t0 = time.perf_counter()
        _, loss = model(ids, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1000)
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS")  # unset: OpenBLAS uses every core
    print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads,
                      "blas_threads": int(blas_threads) if blas_threads and blas_threads.isdigit() else None, "norm": a.norm,
                      "median_ms": statistics.median(times), "min_ms": min(times), "steps": a.steps,
                      "blas_core": openblas_core()}))


if __name__ == "__main__":
    main()
