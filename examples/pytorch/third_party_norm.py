# A norm defined by the user, y = w * tanh(x), in every norm slot of a small pre-norm decoder.
import math

import torch
from torch import nn


class TanhGain(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * torch.tanh(x)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = TanhGain(dim), TanhGain(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


text = "the fox sees the heron by the river. " * 60
chars = sorted(set(text))
data = torch.tensor([chars.index(ch) for ch in text])
steps, ctx, batch, dim, warmup = 60, 16, 8, 32, 5
torch.manual_seed(0)
embed, pos = nn.Embedding(len(chars), dim), nn.Embedding(ctx, dim)
model = nn.ModuleList([embed, pos, Block(dim, 2), TanhGain(dim)])
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)
lr = lambda s: (s + 1) / warmup if s < warmup else 0.01 + 0.495 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup)))
schedule = torch.optim.lr_scheduler.LambdaLR(opt, lr)
losses = []
for step in range(steps):
    starts = torch.randint(len(data) - ctx - 1, (batch,))
    x = torch.stack([data[s : s + ctx] for s in starts])
    y = torch.stack([data[s + 1 : s + ctx + 1] for s in starts])
    logits = model[3](model[2](embed(x) + pos(torch.arange(ctx)))) @ embed.weight.T
    loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    schedule.step()
    losses.append(loss.item())
print(f"a decoder with tanhgain norms: loss {losses[0]:.3f} -> {losses[-1]:.3f}")
assert losses[-1] < 0.8 * losses[0]
