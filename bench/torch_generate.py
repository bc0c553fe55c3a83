#!/usr/bin/env python3
"""PyTorch's sampling of the reference model (bench/torch_model.py, L4 H4 C128, 65 tokens) the
way nanoGPT's generate() does it: the whole window recomputed for every token, under no_grad,
temperature 1 — the counterpart of bench_generate's kv_cache:0 rows. Continues a one-token
prompt to the full context, as bench_generate does; prints one JSON line per context.

    /usr/bin/python3 bench/torch_generate.py --threads 1 --ctx 64 256
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_model import Decoder, default_config  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for ctx in a.ctx:
        model = Decoder(default_config(ctx=ctx)).eval()
        rates = []
        for _ in range(a.repeats):
            ids = torch.zeros((1, 1), dtype=torch.long)
            t0 = time.perf_counter()
            with torch.no_grad():
                for _ in range(ctx - 1):
                    logits, _ = model(ids[:, -ctx:])
                    probs = torch.softmax(logits[:, -1, :], dim=-1)
                    ids = torch.cat([ids, torch.multinomial(probs, 1)], dim=1)
            rates.append((ctx - 1) / (time.perf_counter() - t0))
        print(json.dumps({"impl": "pytorch", "torch": torch.__version__, "threads": a.threads, "ctx": ctx,
                          "tokens_per_s": statistics.median(rates)}))


if __name__ == "__main__":
    main()
