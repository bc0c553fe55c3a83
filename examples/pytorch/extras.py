# Around a model: a frozen parameter, hooks that read a layer's activations and gradients, a data
# loader, progress lines, tensor arithmetic and comparisons, argmax and top-k. The task: which of
# 8 features is the largest.
import torch
from torch import nn

torch.manual_seed(0)
x = torch.randn(1024, 8)
labels = x.argmax(-1)
model = nn.Sequential(nn.Linear(8, 64), nn.GELU(approximate="tanh"), nn.Linear(64, 8))
frozen = model[0].bias
frozen.requires_grad_(False)  # the optimizer neither updates nor decays it
before = frozen.clone()
stats = {}
model[1].register_forward_hook(lambda m, inp, out: stats.update(act_rms=out.pow(2).mean().sqrt().item()))
model[1].register_full_backward_hook(lambda m, gin, gout: stats.update(grad_rms=gout[0].pow(2).mean().sqrt().item()))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, labels), batch_size=128, shuffle=True, drop_last=True)
epochs = 30
for epoch in range(1, epochs + 1):
    for inputs, targets in loader:
        loss = nn.functional.cross_entropy(model(inputs), targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    if epoch % 10 == 0:
        print(f"epoch {epoch}/{epochs} loss {loss.item():.4f}: GELU output RMS {stats['act_rms']:.6f}, gradient RMS {stats['grad_rms']:.6f}")
with torch.no_grad():
    top2 = model(x).topk(2, -1).indices
top1, in_top2 = (top2[:, 0] == labels).sum().item(), (top2 == labels[:, None]).any(-1).sum().item()
unchanged = bool((before == frozen).all())
print(f"accuracy {top1} / 1024, in the top 2: {in_top2}; frozen bias unchanged: {'yes' if unchanged else 'no'}")
assert top1 > 900 and unchanged
