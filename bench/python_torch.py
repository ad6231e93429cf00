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
import sys

import torch
from torch import nn

import memflow.torch
from python_bench import best_seconds, recording

M = 100


def per_module_us(fn, n, repeats):
    """Microseconds per module call of fn over the chain of M modules."""
    fn()  # warm up
    return best_seconds(lambda k: [fn() for _ in range(k)], n, repeats) / M * 1e6


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    torch.set_num_threads(1)
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
    with recording():
        for label, fn in cases:
            memflow.torch.disable()
            off = per_module_us(fn, n, repeats)
            memflow.torch.enable()
            on = per_module_us(fn, n, repeats)
            print("| %s | %.2f | %.2f | %.2f |" % (label, off, on, on - off))
        memflow.torch.disable()


if __name__ == "__main__":
    main()
