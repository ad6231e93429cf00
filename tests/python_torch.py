"""Tests of memflow.torch in one process: module scopes after enable().

Run by tests/python_torch.sh (skipped without torch).  Modules here record
the scope they run in (memflow.profiler.current_scope() in forward, and in
the backward of a custom autograd function), and the SCOPE records of the
log are read back with tests/tracecheck.
"""
import os
import subprocess
import threading
import unittest

import torch
from torch import nn

import memflow
import memflow.torch
from memflow import profiler

SCRATCH = os.environ["SCRATCH"]
TRACECHECK = os.path.join(os.environ["top_builddir"], "tests", "tracecheck")
seen = []  # scopes recorded by Probe and ProbeFunction


def setUpModule():
    torch.set_num_threads(1)
    profiler.set_config(path=os.path.join(SCRATCH, "log"))
    profiler.set_state("run")
    memflow.torch.enable()


class ProbeFunction(torch.autograd.Function):
    """Identity whose backward notes the scope it runs in."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        seen.append("bw " + profiler.current_scope())
        return grad


class Probe(nn.Module):
    """Notes its forward's scope; its output's backward notes that scope too."""

    def forward(self, x):
        seen.append("fw " + profiler.current_scope())
        return ProbeFunction.apply(x)


class Fails(nn.Module):
    def forward(self, x):
        seen.append("fw " + profiler.current_scope())
        raise RuntimeError("out of memory (pretend)")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense0 = nn.Linear(4, 4)
        self.probe = Probe()

    def forward(self, x):
        return self.probe(self.dense0(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = Probe()
        self.fails = Fails()
        self.catch = False

    def forward(self, x):
        x = self.block(x)
        if self.catch:
            try:
                self.fails(x)
            except RuntimeError:
                seen.append("caught " + profiler.current_scope())
        return self.head(x)


class ModuleScopes(unittest.TestCase):
    def setUp(self):
        del seen[:]
        memflow.torch.enable()  # idempotent

    def test_forward_and_backward_names(self):
        net = Net()
        out = net(torch.ones(2, 4, requires_grad=True))
        self.assertEqual(seen, ["fw net:block:probe:", "fw net:head:"])
        del seen[:]
        out.sum().backward()
        self.assertEqual(seen, ["bw backward:net:head:", "bw backward:net:block:probe:"])
        self.assertEqual(profiler.current_scope(), "<unk>:")
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")

    def test_user_scope_around_the_model(self):
        net = Net()
        with profiler.scope("train"):
            out = net(torch.ones(2, 4))
            self.assertEqual(profiler.current_scope(), "train:")
        self.assertEqual(seen, ["fw train:net:block:probe:", "fw train:net:head:"])
        del seen[:]
        with profiler.scope("step"):
            out.sum().backward()
        self.assertEqual(seen, ["bw backward:train:net:head:",
                                "bw backward:train:net:block:probe:"])

    def test_sequential_and_unowned_modules(self):
        shared = Probe()
        model = nn.Sequential(nn.Linear(4, 4), Probe())
        model(torch.ones(1, 4))
        self.assertEqual(seen, ["fw sequential:1:"])
        del seen[:]

        class Caller(nn.Module):
            def forward(self, x):  # calls a module that is not its child
                return shared(x)

        Caller()(torch.ones(1, 4))
        self.assertEqual(seen, ["fw caller:probe:"])

    def test_deeper_child_called_directly(self):
        class Skips(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block.probe(x)  # skips block's forward

        Skips()(torch.ones(1, 4))
        self.assertEqual(seen, ["fw skips:block:probe:"])

    def test_exception_caught_inside_the_model(self):
        net = Net()
        net.catch = True
        net(torch.ones(1, 4))
        # torch >= 2.1 calls the forward hook of a module that raised; before,
        # its scope stays until the thread's next module call
        caught = "net:" if memflow.torch.HOOK_ON_EXCEPTION else "net:fails:"
        self.assertEqual(seen, ["fw net:block:probe:", "fw net:fails:", "caught " + caught,
                                "fw net:head:"])
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")

    def test_exception_out_of_the_model(self):
        class Outer(nn.Module):
            def __init__(self):
                super().__init__()
                self.fails = Fails()

            def forward(self, x):
                return self.fails(x)

        outer = Outer()
        with self.assertRaises(RuntimeError):
            outer(torch.ones(1, 4))
        # the failed modules' scopes stay until the thread's next module call...
        self.assertEqual(memflow._memflow.thread_scope(),
                         "<unk>:" if memflow.torch.HOOK_ON_EXCEPTION else "outer:fails:")
        with self.assertRaises(RuntimeError):
            outer(torch.ones(1, 4))  # ...which leaves them first
        Net()(torch.ones(1, 4))
        self.assertEqual(seen, ["fw outer:fails:", "fw outer:fails:", "fw net:block:probe:",
                                "fw net:head:"])
        self.assertEqual(memflow._memflow.thread_scope(), "<unk>:")

    def test_threads_have_their_own_modules(self):
        net = Net()
        with profiler.scope("main"):
            t = threading.Thread(target=lambda: net(torch.ones(1, 4)))
            t.start()
            t.join()
        self.assertEqual(seen, ["fw net:block:probe:", "fw net:head:"])

    def test_disable(self):
        memflow.torch.disable()
        self.assertFalse(memflow.torch.enabled())
        Net()(torch.ones(1, 4))
        self.assertEqual(seen, ["fw <unk>:", "fw <unk>:"])

    def test_scope_records(self):
        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.dense0 = nn.Linear(2, 2)

            def forward(self, x):
                return self.dense0(x)

        Tiny()(torch.ones(1, 2))
        out = subprocess.run([TRACECHECK, "-s", memflow._memflow.log_path()], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        # (the parameters' naming records: tests/python_names.sh)
        self.assertEqual([l for l in out.splitlines() if "tiny" in l and " - tiny:" not in l],
                         ["push tiny: 1 t0", "push tiny:dense0: 2 t0",
                          "pop tiny:dense0: 1 t0", "pop tiny: 0 t0"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
