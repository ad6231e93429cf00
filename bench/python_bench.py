"""bench/python_bench.py - what the Python benchmarks share: recording into
a scratch folder for the length of a block, and the best-of-N timer."""
import contextlib
import shutil
import tempfile
import time

from memflow import profiler


@contextlib.contextmanager
def recording():
    """Record (as a program under memflow would) into a scratch log, removed after."""
    out = tempfile.mkdtemp(prefix="memflow-bench-")
    profiler.set_config(path=out)
    profiler.set_state("run")
    try:
        yield
    finally:
        profiler.set_state("stop")
        shutil.rmtree(out)


def best_seconds(fn, n, repeats):
    """The best of repeats runs of fn(n), in seconds of this thread's CPU
    time per iteration: time when other programs had the CPU does not count,
    and the best run is the one least disturbed by them (caches, clocks)."""
    best = None
    for _ in range(repeats):
        t0 = time.thread_time()
        fn(n)
        dt = (time.thread_time() - t0) / n
        best = dt if best is None or dt < best else best
    return best
