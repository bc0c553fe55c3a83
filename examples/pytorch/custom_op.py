# A custom op with two inputs, end to end: define it with autograd.Function, prove its gradients with
# gradcheck, train with it.
#   y = softmax(beta x), dL/dx = beta s (g - <s, g>), dL/dbeta = sum over rows of <x, s (g - <s, g>)>.
import torch


class TemperatureSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, beta):
        if x.dim() != 2 or beta.shape != (1,):
            raise ValueError(f"temperature_softmax: x {tuple(x.shape)} must be (N, C) and beta {tuple(beta.shape)} must be (1)")
        s = torch.softmax(beta * x, dim=-1)
        ctx.save_for_backward(x, beta, s)
        return s

    @staticmethod
    def backward(ctx, g):
        x, beta, s = ctx.saved_tensors
        dz = s * (g - (s * g).sum(-1, keepdim=True))
        return beta * dz, (x * dz).sum().reshape(1)


# 1. Prove the gradients: finite differences in double.
torch.manual_seed(1)
x = torch.randn(4, 6, dtype=torch.double, requires_grad=True)
beta = torch.tensor([0.7], dtype=torch.double, requires_grad=True)
print("gradcheck:", torch.autograd.gradcheck(TemperatureSoftmax.apply, (x, beta)))
# 2. Train with it: recover the temperature behind sharpened targets, softmax(3 x).
x = torch.randn(64, 5)
p = TemperatureSoftmax.apply(x, torch.tensor([3.0]))
beta = torch.nn.Parameter(torch.tensor([1.0]))
opt = torch.optim.AdamW([beta], lr=0.05, weight_decay=0)
for step in range(1, 301):
    loss = torch.nn.functional.mse_loss(TemperatureSoftmax.apply(x, beta), p)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 60 == 0:
        print(f"step {step:3d}  loss {loss.item():.3e}  beta {beta.item():.4f}")
learned = abs(beta.item() - 3) < 0.01
print(f"{'OK' if learned else 'FAILED'}: beta = {beta.item():.4f} (target 3)")
assert learned
