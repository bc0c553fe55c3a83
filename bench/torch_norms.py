#!/usr/bin/env python3
"""Times PyTorch's LayerNorm (torch.nn.LayerNorm, fused kernel) and an RMSNorm written from ops
(PyTorch 1.13 has no fused RMSNorm) forward + backward on a (4096, 768) float32 tensor.
Prints one JSON line per norm.

    /usr/bin/python3 bench/torch_norms.py --threads 2
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import RMSNorm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    x = torch.randn(4096, 768, requires_grad=True)
    dy = torch.randn(4096, 768)
    for name, mod in (("layernorm", torch.nn.LayerNorm(768)), ("rmsnorm", RMSNorm(768, 1e-5))):
        times = []
        for i in range(a.reps + 5):
            t0 = time.perf_counter()
            mod(x).backward(dy)
            if i >= 5:
                times.append((time.perf_counter() - t0) * 1000)
        print(json.dumps({"impl": "pytorch", "kernel": name, "threads": a.threads, "median_ms": statistics.median(times)}))


if __name__ == "__main__":
    main()
