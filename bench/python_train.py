"""bench/python_train.py - a PyTorch CPU training loop for bench/wait.sh.

A small multi-layer perceptron trained with SGD on random data, STEPS steps
of a batch of 64: every step allocates the activations, gradients and
optimizer temporaries of its tensors (CPU memory, through malloc), as a
training run does.  THREADS intra-op threads (torch.set_num_threads).  At
the end it writes CLOCK_MONOTONIC (ns) into END_FILE: bench/wait.sh takes
the time from the program's exit to memflow run's exit from it.

    python3 bench/python_train.py STEPS END_FILE [THREADS]
"""
import sys
import time

import torch
from torch import nn


def main():
    steps = int(sys.argv[1])
    end_file = sys.argv[2]
    threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x + 0.01 * torch.randn(64, 256)), y)
        loss.backward()
        opt.step()
    with open(end_file, "w") as f:
        f.write("%d\n" % time.clock_gettime_ns(time.CLOCK_MONOTONIC))


if __name__ == "__main__":
    main()
