"""python_steps.py - a PyTorch loop of 6 steps with two known allocations a
step, run by tests/python_steps.sh under memflow run (no memflow in it): a
list that keeps 1 MiB more each step (GROW), and one block a step that the
next step frees (STEP).  Lines that matter are marked."""
import torch
from torch import nn

keep = [None] * 8
net = nn.Linear(10, 10)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(4, 10)
inside = None
for step in range(6):
    keep[step] = bytearray(1 << 20)  # GROW
    opt.zero_grad()
    net(x).sum().backward()
    inside = bytearray(3_000_000 + step)  # STEP
    opt.step()
