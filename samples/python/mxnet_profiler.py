"""The MXNet profiler tutorial's example, profiled by memflow.

MXNet's tutorial ("Profiling MXNet Models") configures the profiler, runs a
training iteration of a small multi-layer perceptron between
set_state('run') and set_state('stop'), dumps the outputs and prints the
aggregate statistics; it scopes memory by layer and marks the iteration with
the profiler's objects.  This is that code with one change - the import:

    from mxnet import profiler      ->      from memflow import profiler

The network (float32, batch 64): Dense(256, relu) -> Dense(10), an L2
loss, one SGD step, written with numpy so that no MXNet is needed.  Every
buffer is allocated inside the scope of the layer it belongs to, as MXNet's
Gluon names them (net_dense0:, backward:net_dense0:, ...).  What it
allocates (numpy arrays of at least 1 KiB, exactly nbytes; float32 = 4 B):

    <unk>:                  input 64x100 (25600), target 64x10 (2560)
    net_dense0:             weight 256x100 (102400), bias 256 (1024), output 64x256 (65536),
                            and a scratch bytearray(3_000_000) (3000001 bytes)
    net_relu0:              output 64x256 (65536)
    net_dense1:             weight 10x256 (10240), output 64x10 (2560)
    backward:               loss gradient 64x10 (2560)
    backward:net_dense1:    weight gradient (10240), input gradient 64x256 (65536)
    backward:net_relu0:     input gradient 64x256 (65536)
    backward:net_dense0:    weight gradient (102400), bias gradient (1024)

Run it with one command:  memflow run -o out -- python3 samples/python/mxnet_profiler.py
(or without `memflow run`, after `make install`: then memflow records the
scopes and the profiler objects, and says that the CPU heap needs memflow run).
Outputs: out/memory_flow.svg, out/profile_output.json, out/stats.txt; the
statistics are printed at the end.
"""
import sys

import numpy as np

from memflow import profiler  # was: from mxnet import profiler

BATCH, IN, HIDDEN, OUT = 64, 100, 256, 10


def empty(*shape):
    return np.empty(shape, dtype=np.float32)


class Dense:
    def __init__(self, name, n_in, n_out, rng):
        self.name = name
        with profiler.scope(name, append_mode=False):
            self.weight = empty(n_out, n_in)
            rng.standard_normal(dtype=np.float32, out=self.weight)
            self.weight *= 0.1
            self.bias = empty(n_out)
            self.bias[...] = 0.01

    def forward(self, x):
        self.x = x
        with profiler.scope(self.name, append_mode=False):
            self.y = empty(x.shape[0], self.weight.shape[0])
            np.dot(x, self.weight.T, out=self.y)
            for row in self.y:  # row by row: no broadcasting buffer
                row += self.bias
        return self.y

    def backward(self, dy, need_dx=True):
        with profiler.scope(self.name):  # appended to backward:
            self.dweight = empty(*self.weight.shape)
            np.dot(dy.T, self.x, out=self.dweight)
            dx = None
            if need_dx:
                dx = empty(*self.x.shape)
                np.dot(dy, self.weight, out=dx)
            else:
                self.dbias = empty(*self.bias.shape)
                ones = np.ones(dy.shape[0], dtype=np.float32)
                np.dot(ones, dy, out=self.dbias)  # the sum over the batch
        return dx


def relu_forward(x):
    with profiler.scope("net_relu0", append_mode=False):
        y = empty(*x.shape)
        np.maximum(x, 0, out=y)
    return y


def relu_backward(x, dy):
    with profiler.scope("net_relu0"):
        dx = empty(*x.shape)
        np.maximum(x, 0, out=dx)
        np.sign(dx, out=dx)  # 1 where x > 0, else 0
        dx *= dy
    return dx


def run_training_iteration(x, target, net):
    dense0, dense1 = net
    iteration = profiler.Frame(domain, "iteration")
    iteration.start()
    hidden = dense0.forward(x)
    with profiler.scope("net_dense0", append_mode=False):
        scratch = bytearray(3_000_000)  # a scratch buffer of the layer
    out = dense1.forward(relu_forward(hidden))
    with profiler.scope("backward", append_mode=False):
        dout = empty(*out.shape)
        np.subtract(out, target, out=dout)
        flat = dout.ravel()
        loss = float(0.5 * np.dot(flat, flat) / BATCH)
        dout /= BATCH
        dhidden = relu_backward(hidden, dense1.backward(dout))
        dense0.backward(dhidden, need_dx=False)
    for layer in net:
        layer.dweight *= 0.1
        layer.weight -= layer.dweight
    batches.increment()
    iteration.stop()
    del scratch
    return loss


profiler.set_config(profile_all=True,
                    aggregate_stats=True,
                    continuous_dump=True,
                    filename='profile_output.json')

# The profiler's objects: a domain for the training loop, a task around it,
# a frame per iteration, a counter of batches, a marker at the end.
domain = profiler.Domain(name='MyDomain')
training = profiler.Task(domain, 'training')
batches = profiler.Counter(domain, 'batches', value=0)
done = profiler.Marker(domain, 'done')

rng = np.random.default_rng(0)
x = rng.standard_normal((BATCH, IN), dtype=np.float32)
target = rng.standard_normal((BATCH, OUT), dtype=np.float32)

# Ask the profiler to start recording
profiler.set_state('run')
training.start()
net = (Dense("net_dense0", IN, HIDDEN, rng), Dense("net_dense1", HIDDEN, OUT, rng))
loss = run_training_iteration(x, target, net)
training.stop()
done.mark()
# Ask the profiler to stop recording
profiler.set_state('stop')
# Dump all results to log file before download
profiler.dump()
print("loss %.6f" % loss)
print(profiler.dumps())
sys.stdout.flush()
