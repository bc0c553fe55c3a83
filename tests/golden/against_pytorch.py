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
    B, T = int(meta["batch"]), int(meta["ctx"])
    ids = torch.tensor(json.loads(meta["ids"])).view(B, T)
    targets = torch.tensor(json.loads(meta["targets"])).view(B, T)

    def run(dtype, autocast=False):
        model = Decoder(config).to(dtype)
        state = {k: torch.tensor(v, dtype=dtype) for k, v in weights.items()}
        missing = set(dict(model.named_parameters())) - set(state)
        assert not missing, f"tapegrad checkpoint lacks {missing}"
        model.load_state_dict(state, strict=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            logits, objective = model(ids, targets)
        objective.backward()
        ce = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return (ce.item(), objective.item()), {name: p.grad.double().numpy() for name, p in model.named_parameters()}

    # The reference in double, so the comparison's own error stays negligible. PyTorch's float32
    # run of the same batch measures how much float32 rounding the gradient itself carries: a
    # gradient that is a sum with heavy cancellation (a scalar gain's, say: ScaleNorm's g) can be
    # off by 1e-4 relative in any float32 implementation (PyTorch's own: 1.45e-4 on one such
    # case), so the bound is 1e-4 or ten times PyTorch's own float32 error, whichever is larger.
    # A wrong backward is off by O(1), far above either.
    (loss, objective), reference = run(torch.float64)
    _, float32 = run(torch.float32)
    tg_loss, tg_objective = float(meta["loss"]), float(meta["objective"])
    if config.get("precision", "fp32") == "bf16":
        return compare_mixed(config, grads, reference, float32, (loss, objective), (tg_loss, tg_objective),
                             run(torch.float32, autocast=True))
    worst = 0.0
    for name, g_t in reference.items():
        g_tg = grads[name].astype("float64")
        scale = max(abs(g_t).max(), 1e-12)
        err = abs(g_t - g_tg).max() / scale
        bound = max(1e-4, 10 * abs(g_t - float32[name]).max() / scale)
        worst = max(worst, err)
        if err > bound:
            print(f"FAIL: gradient of {name}: relative difference {err:.2e}, allowed {bound:.2e} "
                  f"(1e-4, or 10x PyTorch's own float32 error)")
            sys.exit(1)
    # "loss" is the cross-entropy alone; the gradients are of the objective (+ z-loss, if any).
    rel_loss = abs(loss - tg_loss) / abs(loss)
    rel_objective = abs(objective - tg_objective) / abs(objective)
    if rel_loss > 1e-5 or rel_objective > 1e-5:
        print(f"FAIL: loss {tg_loss} / objective {tg_objective} (tapegrad) vs {loss} / {objective} (PyTorch)")
        sys.exit(1)
    print(f"OK: {config['norm']}/{config['placement']}: loss {tg_loss:.6f} vs {loss:.6f} (rel {rel_loss:.1e}), "
          f"objective {tg_objective:.6f} vs {objective:.6f}; "
          f"{len(grads)} gradients, worst relative difference {worst:.1e}")


def compare_mixed(config, grads, reference, float32, exact, tapegrad, autocast):
    """tapegrad's bf16 step against torch.autocast's, both measured from the float64 reference.

    A bf16 product carries 2^-8 relative rounding in each operand, so neither implementation can
    match float64 better than that allows, and the two round different tensors (autocast also rounds
    every linear's output to bf16 and runs the attention core in bf16; tapegrad keeps both float32),
    so they cannot match each other bitwise. What can be asked: tapegrad's distance from float64
    is of bf16's own size — at most twice autocast's distance, or 8 units of bf16's rounding
    (8 x 2^-8 = 3.1e-2 of the gradient's scale: a gradient passes through a chain of bf16 products,
    one per layer and direction, each adding its operands' rounding), whichever is larger; a wrong
    backward is off by O(1) — and it is clearly more than float32 rounding (ten times PyTorch's
    float32 run's distance), or the bf16 path was not taken.
    """
    (ac_loss, ac_objective), ac_grads = autocast
    worst, worst_ac, above_fp32 = 0.0, 0.0, 0
    for name, g_ref in reference.items():
        scale = max(abs(g_ref).max(), 1e-12)
        err = abs(g_ref - grads[name].astype("float64")).max() / scale
        err_ac = abs(g_ref - ac_grads[name]).max() / scale
        err_32 = abs(g_ref - float32[name]).max() / scale
        worst, worst_ac = max(worst, err), max(worst_ac, err_ac)
        above_fp32 += err > 10 * err_32
        if err > max(2 * err_ac, 8 * 2.0 ** -8):
            print(f"FAIL: bf16 gradient of {name}: {err:.2e} from float64, autocast's {err_ac:.2e} "
                  f"(allowed twice that or 8 x 2^-8)")
            sys.exit(1)
    if above_fp32 < len(reference) // 2:
        print(f"FAIL: only {above_fp32} of {len(reference)} bf16 gradients differ from float64 by more than "
              f"float32 rounding: was the bf16 path taken?")
        sys.exit(1)
    loss, objective = exact
    rel, rel_ac = abs(tapegrad[0] - loss) / abs(loss), abs(ac_loss - loss) / abs(loss)
    if rel > max(2 * rel_ac, 2.0 ** -8):
        print(f"FAIL: bf16 loss {tapegrad[0]} vs float64 {loss} (rel {rel:.1e}); autocast {ac_loss} (rel {rel_ac:.1e})")
        sys.exit(1)
    print(f"OK: {config['norm']}/{config['placement']} bf16 (norms {config.get('norm_precision', 'fp32')}): loss "
          f"{tapegrad[0]:.6f} vs autocast {ac_loss:.6f} vs float64 {loss:.6f}; {len(grads)} gradients, worst "
          f"relative distance from float64 {worst:.1e} (autocast's {worst_ac:.1e}); {above_fp32} beyond float32 "
          f"rounding")


if __name__ == "__main__":
    main()
