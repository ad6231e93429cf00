"""python_names.py - a PyTorch MLP trained 2 steps with Adam, no memflow in it:
tests/python_names.sh checks the names and roles memflow gives its tensors."""
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(100, 50)
        self.fc2 = nn.Linear(50, 10)
    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))

net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(8, 100)
for step in range(2):
    opt.zero_grad()
    net(x).sum().backward()
    opt.step()
