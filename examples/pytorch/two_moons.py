# Two moons: an MLP classifier trained on shuffled mini-batches, scored with argmax.
import math

import torch
from torch import nn

g = torch.Generator().manual_seed(0)
n = 512
y = torch.arange(n) % 2  # moon y[i] = i % 2: a half circle, the second shifted
t, c = math.pi * torch.rand(n, generator=g), y.float()
x = torch.stack([c + (1 - 2 * c) * torch.cos(t), c / 2 + (1 - 2 * c) * torch.sin(t)], 1)
x += 0.1 * torch.randn(n, 2, generator=g)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64, shuffle=True)
for epoch in range(40):
    for inputs, labels in loader:
        loss = nn.functional.cross_entropy(model(inputs), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
with torch.no_grad():
    accuracy = (model(x).argmax(-1) == y).float().mean().item()
print(f"two moons: accuracy {100 * accuracy:.1f} %")
assert accuracy > 0.95
