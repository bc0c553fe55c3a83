#!/usr/bin/env python3
"""The training step driven from Python against the same step in C++ and in PyTorch, in one run.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_step.py --threads 1 --layers 2 --dim 64

Three timings, alternated in rounds so the machine's drift falls on all alike (medians over rounds):
  python   wall time of tapegrad.lm.Trainer.train_step() called from Python
  c++      the same calls' step time as the C++ trainer measures it inside train_step (StepResult.step_ms):
           what a C++ program driving the Trainer pays; python / c++ is the front-end's whole cost
  bench    build/bench/bench_step, the bare C++ step of the same shape (forward, loss, backward, AdamW)
  pytorch  bench/torch_step.py on the same shape (its best configuration: see bench/RESULTS.md)
Prints one JSON line.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--steps", type=int, default=30, help="timed steps per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(here), "build"))
    a = ap.parse_args()

    import tapegrad as tg
    tg.set_num_threads(a.threads)
    shape = dict(layers=a.layers, heads=a.heads, dim=a.dim, ctx=a.ctx, batch=a.batch)
    trainer = tg.lm.Trainer(tg.lm.TrainConfig(steps=10 ** 6, warmup=10, eval_every=0, threads=a.threads, **shape))
    vocab = trainer.vocab_size
    for _ in range(5):
        trainer.train_step()
    flags = [f"--{k}={v}" for k, v in shape.items()] + [f"--threads={a.threads}", f"--vocab={vocab}", f"--steps={a.steps}", "--norm=layernorm"]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    py, cpp, bench, torch = [], [], [], []
    for _ in range(a.rounds):
        walls, inner = [], []
        for _ in range(a.steps):
            t0 = time.perf_counter()
            r = trainer.train_step()
            walls.append((time.perf_counter() - t0) * 1e3)
            inner.append(r.step_ms)
        py.append(statistics.median(walls))
        cpp.append(statistics.median(inner))
        out = subprocess.run([os.path.join(a.build, "bench", "bench_step"), "--warmup=5", *flags],
                             capture_output=True, text=True, env=env)
        if out.returncode == 0:
            bench.append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])
        out = subprocess.run([sys.executable, os.path.join(here, "torch_step.py"), *flags],
                             capture_output=True, text=True, env=env)
        if out.returncode == 0:
            torch.append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])
    med = statistics.median
    result = {"threads": a.threads, **shape, "vocab": vocab, "python_ms": med(py), "cpp_ms": med(cpp),
              "python_over_cpp": med(py) / med(cpp) - 1}
    if bench:
        result["bench_step_ms"] = med(bench)
    if torch:
        result["pytorch_ms"] = med(torch)
        result["python_over_pytorch"] = med(py) / med(torch)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
