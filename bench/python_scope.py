"""bench/python_scope.py - what a scope push + pop costs from Python.

Compares, while the profiler records (every push and pop writes a SCOPE
record into the log):

  with profiler.scope(name)     memflow.profiler.scope: the extension module,
                                contextvars-aware (what programs use)
  scope_push/scope_pop          the extension's functions without an object
                                (what the PyTorch hooks call)
  ctypes push/pop               libmemflow's C API through ctypes (argtypes
                                set): the binding memflow did not choose
  ctypes in a with block        the same behind a minimal Python context
                                manager, what a ctypes binding's scope() is
  empty with block              a Python class whose __enter__/__exit__ do
                                nothing: Python's own share

Each figure is nanoseconds per push + pop, the best of REPEATS runs of N
iterations (the best is the least disturbed by other load).  Usage:

    PYTHONPATH=python python3 bench/python_scope.py [N] [REPEATS]

prints a markdown table (docs/PERFORMANCE.md).
"""
import ctypes
import sys

from memflow import profiler, _memflow
from python_bench import best_seconds, recording


def with_scope(n):
    scope = profiler.scope
    for _ in range(n):
        with scope("layer"):
            pass


def push_pop(n):
    push, pop = _memflow.scope_push, _memflow.scope_pop
    for _ in range(n):
        push("layer")
        pop()


def libmemflow():
    """libmemflow through ctypes: the copy the extension loaded."""
    with open("/proc/self/maps") as maps:
        paths = [line.split()[-1] for line in maps if "libmemflow.so" in line]
    lib = ctypes.CDLL(paths[0] if paths else "libmemflow.so.0")
    lib.memflow_scope_push.argtypes = [ctypes.c_char_p, ctypes.c_int]
    lib.memflow_scope_push.restype = ctypes.c_int
    lib.memflow_scope_pop.argtypes = []
    lib.memflow_scope_pop.restype = ctypes.c_int
    return lib


LIB = libmemflow()


def ctypes_push_pop(n):
    push, pop = LIB.memflow_scope_push, LIB.memflow_scope_pop
    for _ in range(n):
        push(b"layer", 1)
        pop()


class CtypesScope:
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name.encode()

    def __enter__(self):
        LIB.memflow_scope_push(self.name, 1)
        return self

    def __exit__(self, *exc):
        LIB.memflow_scope_pop()
        return False


def ctypes_with(n):
    for _ in range(n):
        with CtypesScope("layer"):
            pass


class Empty:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def empty_with(n):
    for _ in range(n):
        with Empty():
            pass


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    rows = [("`with profiler.scope(name)` (extension, contextvars)", with_scope),
            ("`scope_push(name)` + `scope_pop()` (extension)", push_pop),
            ("ctypes `memflow_scope_push` + `memflow_scope_pop`", ctypes_push_pop),
            ("ctypes behind a `with` block", ctypes_with),
            ("empty `with` block (Python alone)", empty_with)]
    print("| one scope push + pop, while recording (Python %d.%d) | ns |"
          % sys.version_info[:2])
    print("|---|---:|")
    with recording():
        for label, fn in rows:
            fn(1000)  # warm up
            print("| %s | %.0f |" % (label, best_seconds(fn, n, repeats) * 1e9))


if __name__ == "__main__":
    main()
