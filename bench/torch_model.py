"""The tapegrad Decoder written in PyTorch, parameter for parameter (same names, same (out, in)
layouts), so that a tapegrad checkpoint loads into it unchanged. Used by bench/torch_step.py (the
PyTorch side of the speed comparison) and tests/golden (gradients compared with tapegrad's).

Matches nn/tapegrad/nn/*: pre- or post-norm blocks; LayerNorm (torch.nn.LayerNorm), RMSNorm
(eps inside the square root; written from ops, PyTorch 1.13 has no nn.RMSNorm) or none; fused qkv
projection; causal softmax attention with 1/sqrt(HS); GELU with the tanh approximation; learned
positions; final norm; LM head tied to the token embedding unless tie_head is false.
"""
import json
import math
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class ScaleNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.full((1,), math.sqrt(dim)))

    def forward(self, x):
        return self.g * x / x.norm(dim=-1, keepdim=True).clamp(min=self.eps)


class DyT(nn.Module):  # Zhu et al. 2025, as their reference code; eps unused; their LLM recipe has no bias
    def __init__(self, dim, eps, alpha_init=0.5, bias=True):
        super().__init__()
        self.alpha = nn.Parameter(torch.full((1,), alpha_init))
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def forward(self, x):
        y = self.weight * torch.tanh(self.alpha * x)
        return y if self.bias is None else y + self.bias


class Scale(nn.Module):  # one learned scalar: y = s x (tapegrad's LearnedScale)
    def __init__(self, init):
        super().__init__()
        self.weight = nn.Parameter(torch.full((1,), float(init)))

    def forward(self, x):
        return self.weight * x


# tapegrad's registered norms (nn/tapegrad/nn/norm.cpp), by name. A name missing here is an error,
# never a silent Identity: add the PyTorch counterpart when you register a norm.
NORMS = {
    "layernorm": lambda dim, eps: nn.LayerNorm(dim, eps=eps),
    "rmsnorm": lambda dim, eps: RMSNorm(dim, eps),
    "scalenorm": lambda dim, eps: ScaleNorm(dim, eps),
    "dyt": lambda dim, eps, beta=True: DyT(dim, eps, bias=beta),
    "none": lambda dim, eps: nn.Identity(),
}


def make_norm(kind, dim, eps, c=None):
    if kind not in NORMS:
        raise SystemExit(f"torch_model.py: no PyTorch counterpart for norm '{kind}' (known: {', '.join(NORMS)}); "
                         "add one to NORMS")
    if kind == "dyt" and c is not None and not c.get("dyt_beta", True):
        norm = NORMS[kind](dim, eps, False)
    else:
        norm = NORMS[kind](dim, eps)
    if c is not None and c.get("norm_precision", "fp32") == "bf16":
        # tapegrad's --norm-precision bf16 under autocast: the norm's input and output are bf16
        # tensors (the casts' backward rounds the gradient crossing them), its math float32.
        def bf16(t):
            return t.to(torch.bfloat16).to(t.dtype) if torch.is_autocast_cpu_enabled() else t
        norm.register_forward_pre_hook(lambda m, args: (bf16(args[0]),))
        norm.register_forward_hook(lambda m, args, out: bf16(out))
    return norm


class Attention(nn.Module):
    def __init__(self, dim, heads, bias):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.proj = nn.Linear(dim, dim, bias=bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, dim, hidden, bias):
        super().__init__()
        self.fc = nn.Linear(dim, hidden, bias=bias)
        self.proj = nn.Linear(hidden, dim, bias=bias)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.placement = c["placement"]
        assert self.placement in ("pre", "post", "peri", "deepnorm"), f"unknown placement {self.placement}"
        self.norm1 = make_norm(c["norm"], c["dim"], c["norm_eps"], c)
        self.attn = Attention(c["dim"], c["heads"], c["bias"])
        self.norm2 = make_norm(c["norm"], c["dim"], c["norm_eps"], c)
        self.mlp = MLP(c["dim"], c["mlp_hidden"] or 4 * c["dim"], c["bias"])
        if self.placement == "peri":  # Peri-LN: the sub-layers' outputs are normalised too
            self.attn_out_norm = make_norm(c["norm"], c["dim"], c["norm_eps"], c)
            self.mlp_out_norm = make_norm(c["norm"], c["dim"], c["norm_eps"], c)
        self.alpha = (2 * c["layers"]) ** 0.25  # DeepNet's residual up-weighting

    def forward(self, x):
        if self.placement == "post":
            x = self.norm1(x + self.attn(x))
            return self.norm2(x + self.mlp(x))
        if self.placement == "deepnorm":
            x = self.norm1(self.alpha * x + self.attn(x))
            return self.norm2(self.alpha * x + self.mlp(x))
        if self.placement == "peri":
            x = x + self.attn_out_norm(self.attn(self.norm1(x)))
            return x + self.mlp_out_norm(self.mlp(self.norm2(x)))
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        assert c["mlp"] == "gelu", "the reference implements the GELU MLP"
        self.c = c
        self.wte = nn.Embedding(c["vocab_size"], c["dim"])
        self.wpe = nn.Embedding(c["ctx"], c["dim"])
        # The recipes' embedding treatment: x = s * wte[token] + wpe[position] (or s * (wte + wpe) with
        # embed_scale_positions), then a norm. s0: embed_scale_init, else sqrt(dim), or with the
        # "unit-input" rule 1 / (alpha0 * init_std), alpha0 the first DyT's (1 for other norms).
        if c.get("embed_scale_rule", "sqrt-dim") == "unit-input":
            alpha0 = (c.get("dyt_alpha_attn", 0) or c["dyt_alpha"]) if c["norm"] == "dyt" else 1.0
            rule = 1.0 / (alpha0 * c["init_std"])
        else:
            rule = math.sqrt(c["dim"])
        scale = c.get("embed_scale_init", 0) or rule
        self.embed_positions = c.get("embed_scale_positions", False)
        self.embed_kind = c.get("embed_scale", "none")
        self.embed_const = scale if self.embed_kind == "fixed" else 1.0
        if self.embed_kind == "learned":
            self.embed_scale = Scale(scale)
        if c.get("embed_norm", False) and c["norm"] != "none":
            self.embed_norm = make_norm(c["norm"], c["dim"], c["norm_eps"], c)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm_f = make_norm(c["norm"], c["dim"], c["norm_eps"], c) if c["final_norm"] and c["norm"] != "none" else None
        self.lm_head = None if c["tie_head"] else nn.Linear(c["dim"], c["vocab_size"], bias=False)
        # GPT-2 initialisation, as tapegrad's (not the same random numbers: load weights to compare).
        for name, p in self.named_parameters():
            if "norm" in name:
                nn.init.ones_(p) if name.endswith("weight") else nn.init.zeros_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                residual = name.endswith("attn.proj.weight") or name.endswith("mlp.proj.weight")
                nn.init.normal_(p, 0.0, c["init_std"] / (math.sqrt(2 * c["layers"]) if residual else 1))

    def forward(self, ids, targets=None):
        T = ids.size(1)
        scaled = lambda v: self.embed_scale(v) if self.embed_kind == "learned" else self.embed_const * v
        tokens = self.wte(ids)
        if not self.embed_positions:
            tokens = scaled(tokens)
        x = tokens + self.wpe(torch.arange(T, device=ids.device))
        if self.embed_positions:
            x = scaled(x)
        if hasattr(self, "embed_norm"):
            x = self.embed_norm(x)
        for b in self.blocks:
            x = b(x)
        if self.norm_f is not None:
            x = self.norm_f(x)
        logits = self.lm_head(x) if self.lm_head is not None else x @ self.wte.weight.t()
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        if loss is not None and self.c.get("z_loss", 0):  # PaLM's z-loss, as tapegrad's fused cross-entropy
            loss = loss + self.c["z_loss"] * torch.logsumexp(logits.view(-1, logits.size(-1)), dim=-1).pow(2).mean()
        return logits, loss


def load_safetensors(path):
    """{name: numpy array}, plus the metadata dict, without the safetensors package."""
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    dtypes = {"F32": np.float32, "F64": np.float64}
    tensors = {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype=dtypes[v["dtype"]])
               .reshape(v["shape"]) for k, v in header.items()}
    return tensors, meta


def default_config(**overrides):
    c = dict(vocab_size=65, ctx=64, layers=4, heads=4, dim=128, norm="layernorm", placement="pre", mlp="gelu",
             mlp_hidden=0, tie_head=True, bias=True, final_norm=True, norm_eps=1e-5, init_std=0.02)
    c.update(overrides)
    return c


def openblas_core():
    """The kernel set of the OpenBLAS this PyTorch runs its GEMMs on (e.g. "SkylakeX"), so a
    comparison can show both sides use the same kernels (see lib/tapegrad/blas_kernels.h)."""
    import ctypes
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return "not OpenBLAS"
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib.openblas_get_corename().decode()
