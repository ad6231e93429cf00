"""python_stacks.py - a program with allocations at known lines, run by
tests/python_stacks.sh under memflow run: each line's site and bytes are
checked exactly.  No memflow in it.  Lines that matter are marked SITE."""
import sys
import threading

keep = []


def make(n):
    return bytearray(n)  # SITE make


def outer():
    return [make(1_000_000 + i) for i in range(3)]  # SITE outer


def through_c():
    return list(map(make, [2_000_000, 2_000_001]))  # SITE map


def gen():
    for i in range(2):
        yield bytearray(300_000 + i)  # SITE gen


def raiser():
    b = bytearray(500_000)  # SITE raiser
    raise ValueError(len(b))


def worker():
    keep.append(bytearray(700_000))  # SITE worker


keep.extend(outer())  # SITE call outer
keep.extend(through_c())
keep.extend(gen())  # SITE call gen
try:
    raiser()  # SITE call raiser
except ValueError:
    pass
t = threading.Thread(target=worker)
t.start()
t.join()
keep.append(bytearray(900_000))  # SITE module
if len(sys.argv) > 1 and sys.argv[1] == "torch":
    import torch
    w = torch.empty(1000, 1000)  # SITE torch
    keep.append(w)
