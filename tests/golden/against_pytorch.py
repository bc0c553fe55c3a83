#!/usr/bin/env python3
"""Golden test: tapegrad's loss and gradients equal PyTorch's for the same weights and batch.

Loads a checkpoint's model.safetensors into bench/torch_model.py's Decoder (same architecture, same
parameter names and layouts), runs the batch stored by `eval_lm --dump-grads` in grads.safetensors'
metadata, and compares the loss and every parameter's gradient. Exit 77 (CTest: skipped) when
PyTorch is not installed.

    against_pytorch.py CHECKPOINT_DIR GRADS.safetensors
"""
import json
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch is not installed (Debian: apt-get install python3-torch)")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from torch_model import Decoder, load_safetensors  # noqa: E402


def main():
    ckpt, grads_path = sys.argv[1], sys.argv[2]
    config = json.load(open(os.path.join(ckpt, "checkpoint.json")))["model"]
    weights, _ = load_safetensors(os.path.join(ckpt, "model.safetensors"))
    grads, meta = load_safetensors(grads_path)
    torch.set_num_threads(1)
    model = Decoder(config).double()  # double: the comparison's own error stays negligible
    state = {k: torch.tensor(v, dtype=torch.float64) for k, v in weights.items()}
    missing = set(dict(model.named_parameters())) - set(state)
    assert not missing, f"tapegrad checkpoint lacks {missing}"
    model.load_state_dict(state, strict=True)
    B, T = int(meta["batch"]), int(meta["ctx"])
    ids = torch.tensor(json.loads(meta["ids"])).view(B, T)
    targets = torch.tensor(json.loads(meta["targets"])).view(B, T)
    _, loss = model(ids, targets)
    loss.backward()
    tg_loss = float(meta["loss"])
    worst = 0.0
    for name, p in model.named_parameters():
        g_t = p.grad.numpy()
        g_tg = grads[name].astype("float64")
        err = abs(g_t - g_tg).max() / max(abs(g_t).max(), 1e-12)
        worst = max(worst, err)
        if err > 1e-4:
            print(f"FAIL: gradient of {name}: relative difference {err:.2e}")
            sys.exit(1)
    rel_loss = abs(loss.item() - tg_loss) / abs(loss.item())
    if rel_loss > 1e-5:
        print(f"FAIL: loss {tg_loss} (tapegrad) vs {loss.item()} (PyTorch)")
        sys.exit(1)
    print(f"OK: {config['norm']}/{config['placement']}: loss {tg_loss:.6f} vs {loss.item():.6f} (rel {rel_loss:.1e}); "
          f"{len(grads)} gradients, worst relative difference {worst:.1e}")


if __name__ == "__main__":
    main()
