"""What a norm written in Python costs per training step against the built-in one.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_norm_cost.py [--threads N] [--rounds R]

Trains the default-sized decoder (L4 C64 H4 T64 B8) with the built-in RMSNorm, with the same norm
composed in Python from tape ops, and with a Python norm around tg.nn.functional.rms_norm (the
fused node), both registered with tapegrad.nn.register_norm (examples/python/my_norms.py),
alternating rounds of 20 steps so that the machine's drift falls on all; prints the median step
time of each and its ratio to the built-in.
"""
import argparse
import os
import statistics
import sys
import time

import tapegrad as tg


sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "python"))
from my_norms import FusedRMSNorm, PyRMSNorm  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    tg.nn.register_norm("py-rmsnorm", PyRMSNorm)
    tg.nn.register_norm("py-fused-rmsnorm", FusedRMSNorm)
    trainers = {norm: tg.lm.Trainer(tg.lm.TrainConfig(norm=norm, dim=64, heads=4, layers=4, ctx=64, batch=8,
                                                      steps=10**6, warmup=10, eval_every=0, threads=a.threads))
                for norm in ("rmsnorm", "py-rmsnorm", "py-fused-rmsnorm")}
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
        print(f"{norm:>16}: median step {m:.2f} ms over {len(times[norm])} steps, "
              f"{m / med['rmsnorm']:.2f}x the built-in on {a.threads} thread(s)")


if __name__ == "__main__":
    main()
