"""tests/torch_profiler_cupti.py - run by tests/torch_profiler_cupti.sh under
memflow run: torch.profiler starts, three ways, with Kineto's set-up
(_prepare_profiler) played by a recorder of the activities it is given
(Debian's torch 1.13 is a CPU build: its profiler drops CUDA by itself).

1. CPU activities only: memflow says nothing.
2. CUDA activities, memflow's GPU capture off (no GPU here): nothing.
3. CUDA activities while memflow's GPU capture holds CUPTI (as on a GPU
   machine; played here by the extension's answer): memflow says so once,
   for two profilers, and notes it in the log.
Prints the activities Kineto's set-up got, in order.
"""
import torch
from torch.autograd import profiler as autograd_profiler
from torch.profiler import ProfilerActivity

import memflow._memflow as extension

prepared = []
autograd_profiler._prepare_profiler = lambda config, activities: prepared.append(
    sorted(a.name for a in activities))


def start(cuda):
    p = autograd_profiler.profile(use_cpu=True)
    if cuda:
        p.kineto_activities.add(ProfilerActivity.CUDA)
    p._prepare_trace()


start(cuda=False)
start(cuda=True)
extension.gpu_capture_on = lambda: True
start(cuda=False)
start(cuda=True)
start(cuda=True)
print(prepared)
