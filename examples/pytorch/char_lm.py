# A character-level language model on a text: train a small pre-norm decoder, checkpoint it halfway,
# resume it, and sample from it.
import math
import os
import tempfile

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))

    def forward(self, x):
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), 1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, vocab, dim, heads, layers, ctx):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(layers)], nn.LayerNorm(dim))

    def forward(self, ids):
        return self.blocks(self.embed(ids) + self.pos(torch.arange(ids.shape[1]))) @ self.embed.weight.T


text = "the fox sees the heron by the river. " * 60
chars = sorted(set(text))
data = torch.tensor([chars.index(ch) for ch in text])
steps, ctx, batch, warmup = 80, 16, 8, 8
torch.manual_seed(0)
model = Decoder(len(chars), 32, 2, 2, ctx)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1)
lr = lambda s: (s + 1) / warmup if s < warmup else 0.01 + 0.495 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup)))
schedule = torch.optim.lr_scheduler.LambdaLR(opt, lr)


def train_step():
    starts = torch.randint(len(data) - ctx - 1, (batch,))
    x = torch.stack([data[s : s + ctx] for s in starts])
    y = torch.stack([data[s + 1 : s + ctx + 1] for s in starts])
    loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    schedule.step()
    return loss.item()


for step in range(steps // 2):
    train_step()
path = os.path.join(tempfile.gettempdir(), "char_lm.pt")
torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "schedule": schedule.state_dict(),
            "rng": torch.get_rng_state()}, path)
saved = torch.load(path)
model.load_state_dict(saved["model"])
opt.load_state_dict(saved["opt"])
schedule.load_state_dict(saved["schedule"])
torch.set_rng_state(saved["rng"])
for step in range(steps // 2, steps):
    loss = train_step()
ids = [chars.index(ch) for ch in "the fox"]
with torch.no_grad():
    for _ in range(30):
        ids.append(model(torch.tensor([ids[-ctx:]])).argmax(-1)[0, -1].item())
print(f"char lm: loss {loss:.3f} after {steps} steps; \"{''.join(chars[i] for i in ids)}\"")
os.remove(path)
assert loss < 0.5
