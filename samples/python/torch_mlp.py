"""A PyTorch MLP that knows nothing of memflow - profiled per layer by memflow.

Run it with one command:

    memflow run -o out -- python3 samples/python/torch_mlp.py

and every nn.Module's forward runs in a scope named by its attribute path:
the model Net gives net:, its child dense0 gives net:dense0:, the loss
module mseloss:, and each backward backward:net:dense0: and so on - with no
line of this file changed (memflow run loads memflow.torch when the program
imports torch; `--set torch_scopes=0` turns it off).  CPU tensors come from
posix_memalign, which memflow run records with the thread's scope; on a GPU
the caching allocator's segments land on the module that grew them.

What one training step allocates (float32, batch 64; tensors of at least
2 KiB, exactly nbytes; Debian's torch 1.13):

    net:dense0:             output 64x256 (65536)
    net:relu0:              output 64x256 (65536)
    net:dense1:             output 64x10 (2560)
    mseloss:                the difference and its square, 64x10 each (2560, 2560)
    backward:mseloss:       gradient of the output (2560)
    backward:net:dense1:    weight gradient 10x256 (10240), input gradient 64x256 (65536)
    backward:net:relu0:     input gradient 64x256 (65536)
    backward:net:dense0:    weight gradient 256x100 (102400)

The parameters are made when the model is built, outside any forward
(<unk>:).
"""
import torch
from torch import nn

torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense0 = nn.Linear(100, 256)
        self.relu0 = nn.ReLU()
        self.dense1 = nn.Linear(256, 10)

    def forward(self, x):
        return self.dense1(self.relu0(self.dense0(x)))


net = Net()
loss_fn = nn.MSELoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
x = torch.randn(64, 100)
target = torch.randn(64, 10)

optimizer.zero_grad()
loss = loss_fn(net(x), target)
loss.backward()
optimizer.step()
print("loss %.6f" % loss.item())
