"""MegEngine's profiler example - a decorated training step - profiled by memflow.

MegEngine's guide profiles a training step with its Profiler as a
decorator (every call is profiled) or as a `with` block, asking for the
Chrome timeline and the memory_flow.svg picture.  This is that code with one
change - the import:

    from megengine.utils.profiler import Profiler, profile
        ->  from memflow import Profiler, profile

The step (numpy, float32, batch 32) runs a two-layer perceptron forward and
backward; each layer's buffers are made in its scope (linear0:,
backward:linear0:, ...).  Per call it allocates (arrays of at least 1 KiB):

    linear0:            output 32x512 (65536)
    linear1:            output 32x64 (8192)
    backward:linear1:   weight gradient 64x512 (131072), input gradient 32x512 (65536)
    backward:linear0:   weight gradient 512x128 (262144)

The decorated step runs twice (outputs in profile/ after each call), then a
`with` block runs it once more with a sample_rate (outputs in
profile_block/).  Run it with one command:

    python3 samples/python/megengine_profiler.py     (after `make install`;
        or PYTHONPATH=python from the build tree)

or under `memflow run -o out -- python3 ...` to see the CPU heap too.
"""
import numpy as np

from memflow import Profiler, profile  # was: from megengine.utils.profiler import ...
from memflow import profiler

BATCH, IN, HIDDEN, OUT = 32, 128, 512, 64
rng = np.random.default_rng(1)
w0 = rng.standard_normal((HIDDEN, IN), dtype=np.float32) * np.float32(0.05)
w1 = rng.standard_normal((OUT, HIDDEN), dtype=np.float32) * np.float32(0.05)


def linear(name, x, w):
    with profiler.scope(name, append_mode=False):
        y = np.empty((x.shape[0], w.shape[0]), dtype=np.float32)
        np.dot(x, w.T, out=y)
    return y


def linear_backward(name, x, w, dy, need_dx):
    with profiler.scope("backward:" + name, append_mode=False):
        dw = np.empty(w.shape, dtype=np.float32)
        np.dot(dy.T, x, out=dw)
        dx = None
        if need_dx:
            dx = np.empty(x.shape, dtype=np.float32)
            np.dot(dy, w, out=dx)
    return dw, dx


def step(data, label, lr=0.001):
    """One forward and backward pass of the perceptron and an SGD update."""
    hidden = linear("linear0", data, w0)
    out = linear("linear1", hidden, w1)
    dout = out - label  # the L2 loss's gradient (made in <unk>:)
    dw1, dhidden = linear_backward("linear1", hidden, w1, dout, True)
    dw0, _ = linear_backward("linear0", data, w0, dhidden, False)
    w1[...] -= lr * dw1
    w0[...] -= lr * dw0
    return float(np.mean(dout * dout))


@profile(path="profile", formats=["memory_flow.svg", "chrome_timeline.json", "stats.txt"])
def train_step(data, label):
    return step(data, label)


data = rng.standard_normal((BATCH, IN), dtype=np.float32)
label = rng.standard_normal((BATCH, OUT), dtype=np.float32)
for i in range(2):
    print("step %d loss %.6f" % (i, train_step(data, label)))

# the same as a with block, with MegEngine's sample_rate
with Profiler(path="profile_block", formats=["memory_flow.svg", "chrome_timeline.json"],
              sample_rate=16):
    print("block loss %.6f" % step(data, label))
