"""bench/python_torch.py - what memflow.torch's module scopes cost per module call.

A chain of M small modules is run with memflow.torch off and on, while the
profiler records; the difference divided by M is the cost of one module
call's scopes:

  no_grad, nn.Identity        forward scopes only (pre-hook push, hook pop)
  grad, nn.Linear(8, 8)       forward scopes + the hook on each output that
                              starts its backward scope
  grad, forward + backward    the above plus one backward scope per module

Each figure is the best of REPEATS runs of N passes.  Usage:

    PYTHONPATH=python python3 bench/python_torch.py [N] [REPEATS]

prints a markdown table (docs/PERFORMANCE.md).
"""
import os
import sys
import tempfile
import time

import torch
from torch import nn

import memflow.torch
from memflow import profiler

M = 100


def best_s(fn, n, repeats):
    best = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = (time.perf_counter() - t0) / n
        best = dt if best is None or dt < best else best
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_num_threads(1)
    out = tempfile.mkdtemp(prefix="memflow-bench-")
    profiler.set_config(path=out)
    profiler.set_state("run")
    identity = nn.Sequential(*[nn.Identity() for _ in range(M)])
    linear = nn.Sequential(*[nn.Linear(8, 8) for _ in range(M)])
    x = torch.randn(4, 8)

    def no_grad_identity():
        with torch.no_grad():
            identity(x)

    def grad_forward():
        linear(x)

    def grad_forward_backward():
        linear(x).sum().backward()

    cases = [("no_grad, `nn.Identity`", no_grad_identity),
             ("grad, `nn.Linear(8, 8)`, forward", grad_forward),
             ("grad, `nn.Linear(8, 8)`, forward + backward", grad_forward_backward)]
    print("| %d modules, torch %s, Python %d.%d | off (us/module) | on (us/module) "
          "| cost (us/module call) |" % ((M, torch.__version__) + sys.version_info[:2]))
    print("|---|---:|---:|---:|")
    for label, fn in cases:
        memflow.torch.disable()
        fn()
        off = best_s(fn, n, repeats) / M * 1e6
        memflow.torch.enable()
        fn()
        on = best_s(fn, n, repeats) / M * 1e6
        print("| %s | %.2f | %.2f | %.2f |" % (label, off, on, on - off))
    memflow.torch.disable()
    profiler.set_state("stop")
    for name in os.listdir(out):
        os.unlink(os.path.join(out, name))
    os.rmdir(out)


if __name__ == "__main__":
    main()
