"""Calls the public Python API at random with hostile arguments (a seeded, repeatable walk), as
test_api_fuzz.py runs it in a process of its own: every call must return or raise an exception a
user can act on. Prints each call before making it (a crash names the last) and, at the end, one
line "FORBIDDEN <json>" with every exception of a kind the API must never raise: SystemError (an
exception left set by the bindings), a RuntimeError that is not a tapegrad.Error (pybind's "Unable
to cast"), KeyError or IndexError from inside tapegrad (its errors name what is wrong), but an
IndexError from a container's [] (Sequential[5]), as Python's own sequences raise.
    python3 api_fuzz.py SEED CALLS"""
import json
import os
import random
import resource
import sys
import tempfile
import time
import warnings

import numpy as np

import tapegrad as tg

# A module of 2^31 weights is allowed on a large machine; here it is a MemoryError, not minutes of
# filling memory beside the other tests.
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
warnings.simplefilter("ignore")
# Calls that take a path get strings like "x" and "abc": the walk runs in a folder of its own, so
# what they write (checkpoints, reports) never lands where it was started (the source tree).
workdir = tempfile.TemporaryDirectory(prefix="tapegrad-api-fuzz-")
os.chdir(workdir.name)
seed, calls = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
data = np.random.default_rng(seed)
tg.set_num_threads(rng.choice([1, 2]))


def array():
    shape = rng.choice([(), (0,), (3,), (2, 3), (3, 3), (2, 2, 3), (1, 4), (4, 1), (2, 0, 3), (1, 1, 1, 1, 1), (6, 4)])
    dtype = rng.choice([np.float32, np.float32, np.float64, np.int64, np.int32, np.bool_, np.float16, object])
    a = np.asarray((data.standard_normal(shape) * rng.choice([1, 1e30, 1e-30])).astype(dtype))
    if rng.random() < 0.1 and a.ndim >= 1 and a.size:
        a = a[::-1]
    if rng.random() < 0.1 and a.ndim == 2:
        a = a.T
    return a


HOSTILE = [None, 0, 1, -1, 2, 3, 7, 2**31, 2**63, -2**63, 2**70, 0.5, -0.0, float("nan"), float("inf"), -float("inf"),
           True, False, "", "x", "bf16", "fp32", "layernorm", "rmsnorm", "dyt", "adamw", "cosine", ";rm -rf /", "/dev/null",
           "\x00", "é中", [], [1], [2, 3], [[1]], (2, 3), {}, {"a": 1}, b"x", np.int64(2), np.float32(1.5), slice(None),
           slice(1, None, -1), Ellipsis, object(), lambda *a, **k: None, lambda *a, **k: 1 / 0]
DUNDER = ["__getitem__", "__add__", "__sub__", "__mul__", "__truediv__", "__matmul__", "__pow__", "__neg__", "__radd__",
          "__rsub__", "__rmul__", "__rtruediv__", "__call__", "__enter__", "__exit__", "__len__", "__repr__", "__array__"]
SKIP = {"sweep", "load_plugin", "set_num_threads", "fit", "resume", "save", "register_norm", "register_run_column"}
pool = []


def value():
    r = rng.random()
    if pool and r < 0.45:
        return rng.choice(pool)
    return array() if r < 0.65 else rng.choice(HOSTILE)


def dim():
    return rng.choice([1, 2, 3, 4])


MAKERS = [
    lambda: tg.Tape(), lambda: tg.Tape64(), lambda: tg.Parameter("p", array()), lambda: tg.Tensor(array()),
    lambda: tg.nn.Linear(dim(), dim()), lambda: tg.nn.LayerNorm(rng.choice([3, 4])), lambda: tg.nn.RMSNorm(rng.choice([3, 4])),
    lambda: tg.nn.Embedding(rng.choice([3, 5]), rng.choice([3, 4])), lambda: tg.nn.GELU(), lambda: tg.nn.Dropout(0.5),
    lambda: tg.nn.MLP(4), lambda: tg.nn.CausalSelfAttention(4, rng.choice([1, 2])), lambda: tg.lm.TrainConfig(),
    lambda: tg.autocast(rng.choice(["bf16", "fp32"])), lambda: tg.nn.norm(rng.choice(tg.nn.norm_names()), 4),
    lambda: tg.nn.Sequential(tg.nn.Linear(4, 4), tg.nn.GELU()),
    lambda: tg.optim.AdamW([x for x in pool if isinstance(x, tg.Parameter)] or [tg.Parameter("q", array())]),
    lambda: tg.optim.schedule(rng.choice(tg.optim.schedule_names()), 1e-3, total=10),
]
for _ in range(3):  # the values most calls act on
    pool.append(tg.Tape())
tapes = lambda: [x for x in pool if isinstance(x, (tg.Tape, tg.Tape64))]  # noqa: E731
forbidden = []
for i in range(calls):
    if rng.random() < 0.15 or len(pool) < 4:
        try:
            pool.append(rng.choice(MAKERS)())
        except Exception:
            pass
        for t in tapes()[:2]:
            try:
                pool.append(t.constant(array().astype(np.float32 if isinstance(t, tg.Tape) else np.float64)))
            except Exception:
                pass
        continue
    # tapegrad's objects (the state dicts, lists and arrays it returns go back in as arguments only)
    target = rng.choice([x for x in pool if type(x).__module__.startswith("tapegrad")] + [tg, tg.nn, tg.optim, tg.lm,
                                                                                          tg.nn.functional])
    names = [n for n in dir(target) if (not n.startswith("_") or n in DUNDER) and n not in SKIP]
    if not names:
        continue
    name = rng.choice(names)
    try:
        f = getattr(target, name)
    except Exception:
        continue
    if not callable(f) or isinstance(f, type) and issubclass(f, BaseException):
        continue
    args = [value() for _ in range(rng.choice([0, 1, 1, 2, 2, 3]))]
    print(i, type(target).__name__, name, [type(a).__name__ for a in args], time.monotonic(), flush=True)
    try:
        out = f(*args)
        if out is not None and not isinstance(out, (str, int, float, bool, bytes)) and rng.random() < 0.7:
            pool.append(out)
            if len(pool) > 60:
                pool.pop(rng.randrange(len(pool)))
    except (SystemError, KeyError, IndexError) as e:
        if not (isinstance(e, IndexError) and name == "__getitem__"):  # a container's out-of-range index, as a list's
            forbidden.append(f"{type(target).__name__}.{name}: {type(e).__name__}: {e}"[:300])
    except RuntimeError as e:
        if not isinstance(e, (tg.Error, NotImplementedError)):  # an abstract forward/backward says so
            forbidden.append(f"{type(target).__name__}.{name}: {type(e).__name__}: {e}"[:300])
    except Exception:
        pass
    if rng.random() < 0.02:
        pool.clear()
print("FORBIDDEN", json.dumps(forbidden))
