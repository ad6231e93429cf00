"""bench/python_stacks_torch.py - a PyTorch CPU training loop (a conv and two
linear layers, Adam, 60 steps of batch 32, one thread) for Python call
stacks' cost (bench/python_stacks.sh).  Prints the loop's and the whole
process's CPU time."""
import time, os
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.fc1 = nn.Linear(8 * 26 * 26, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))

torch.manual_seed(0)
torch.set_num_threads(1)
net = Net()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(32, 1, 28, 28)
y = torch.randint(0, 10, (32,))
t0 = time.process_time()
for step in range(60):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
print("loop_cpu %.3f total_cpu %.3f" % (time.process_time() - t0, sum(os.times()[:2])))
