"""torch_roles.py - tensor names and roles on a GPU with the caching
allocator, without a GPU (run under memflow run by tests/torch_roles.sh).

On a GPU the parameters, gradients and Adam's state are tensors inside the
allocator's segments: sub-blocks, from its history.  Here the history is
built as tests/torch_live.py builds it (dicts with time_us from the wall
clock, handed to the extension as pickle.dumps(snapshot), as
memflow.torch_history does), and the tensors are named by memflow's own
hooks, as on a GPU: the parameters by the global forward pre-hook at the
root's first forward, the gradients when a step begins, Adam's state when
it ends, each step a mark (torch 1.13: the wrapped step; >= 2.0: the global
step hooks).  Only the tensors stand in for CUDA ones: they say they are on
cuda:0 at the address the history gave them (data_ptr), over CPU memory of
the same size.

Net: fc1 Linear(256, 128), fc2 Linear(128, 16): parameters 139,840 bytes,
gradients the same, Adam's exp_avg and exp_avg_sq twice that.  Before the
first forward a 4,096-byte batch (no role: before training); each of 4
iterations a 65,536-byte tensor made and freed (a temporary), then 1 MiB
kept at train.py:42 (growth: 1 MiB a step), then the step.
"""
import pickle
import sys
import time

import torch
from torch import nn

import memflow.torch_history as history
from memflow import _memflow

MiB = 1 << 20
SEG = 0x7F0000000000
CUDA0 = torch.device("cuda", 0)
trace = []
free_at = [SEG]


def now_us():
    time.sleep(0.002)       # entries 2 ms apart: their order on the log's clock is certain
    return time.time_ns() // 1000


def entry(action, addr, size, line=7, name="step"):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": now_us(),
            "user_metadata": "", "compile_context": "N/A",
            "frames": [{"name": name, "filename": "/home/user/train.py", "line": line}]}


def place(nbytes, line=7, name="step"):
    """The allocator hands out a tensor of nbytes in the segment: its address."""
    addr = free_at[0]
    free_at[0] += (nbytes + 511) // 512 * 512
    trace.append(entry("alloc", addr, nbytes, line, name))
    return addr


class OnGpu:
    """A tensor that says it is on cuda:0 at the address the history gave it."""
    @property
    def device(self):
        return CUDA0

    def data_ptr(self):
        return self.gpu_addr


class GpuParameter(OnGpu, nn.Parameter):
    pass


class GpuTensor(OnGpu, torch.Tensor):
    pass


def gpu_tensor(shape):
    t = torch.Tensor._make_subclass(GpuTensor, torch.zeros(shape))
    t.gpu_addr = place(t.numel() * 4)
    return t


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(256, 128)
        self.fc2 = nn.Linear(128, 16)
        for m in (self.fc1, self.fc2):
            for key, p in list(m.named_parameters()):
                g = GpuParameter(p.detach().clone())
                g.gpu_addr = place(g.numel() * 4)
                setattr(m, key, g)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Adam(torch.optim.Optimizer):
    """Adam's state as the allocator places it on the GPU (the update itself
    does not matter here)."""
    def __init__(self, params):
        super().__init__(params, {})

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["exp_avg"] = gpu_tensor(p.shape)
                    state["exp_avg_sq"] = gpu_tensor(p.shape)


history._start()
trace.append(entry("segment_alloc", SEG, 16 * MiB))
place(4096)                                   # a batch, before training: no role
net = Net()
opt = Adam(net.parameters())
net(torch.zeros(2, 256))                      # the root's first forward names the parameters
for step in range(4):
    tmp = place(65536)                        # made and freed within the step: a temporary
    trace.append(entry("free_requested", tmp, 65536))
    trace.append(entry("free_completed", tmp, 65536))
    free_at[0] = tmp
    place(MiB, 42, "grow")                    # kept: 1 MiB more at every mark
    if step == 0:
        for p in net.parameters():            # backward's gradients
            p.grad = gpu_tensor(p.shape)
    opt.step()
now_us()
r = _memflow.torch_history(pickle.dumps({"segments": [], "device_traces": [trace]},
                                        protocol=4))
print(" ".join("%s=%d" % (k, r[k]) for k in ("entries", "tensors", "tensor_frees", "segments")))
sys.stdout.flush()
