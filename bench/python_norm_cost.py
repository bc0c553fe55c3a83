"""What a norm written in Python costs per training step against the built-in one.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_norm_cost.py [--threads N] [--rounds R]

Trains the default-sized decoder (L4 C64 H4 T64 B8) with the built-in RMSNorm and with the same
norm composed in Python from tape ops (registered with tapegrad.nn.register_norm), alternating
rounds of 20 steps so that the machine's drift falls on both; prints the median step time of
each and their ratio.
"""
import argparse
import os
import statistics
import sys
import time

import tapegrad as tg


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "python"))
from my_norms import PyRMSNorm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tg.nn.register_norm("py-rmsnorm", PyRMSNorm)
    trainers = {norm: tg.lm.Trainer(tg.lm.TrainConfig(norm=norm, dim=64, heads=4, layers=4, ctx=64, batch=8,
                                                      steps=10**6, warmup=10, eval_every=0, threads=a.threads))
                for norm in ("rmsnorm", "py-rmsnorm")}
    times = {norm: [] for norm in trainers}
    for t in trainers.values():
        for _ in range(5):
            t.train_step()  # warm
    for _ in range(a.rounds):
        for norm, t in trainers.items():
            for _ in range(20):
                t0 = time.perf_counter()
                t.train_step()
                times[norm].append(1e3 * (time.perf_counter() - t0))
    med = {norm: statistics.median(x) for norm, x in times.items()}
    for norm, m in med.items():
        print(f"{norm:>11}: median step {m:.2f} ms over {len(times[norm])} steps")
    print(f"ratio (Python / built-in): {med['py-rmsnorm'] / med['rmsnorm']:.2f}x on {a.threads} thread(s)")


if __name__ == "__main__":
    main()
