"""run_analysis.py - a Python program whose call stacks keep branching
while it runs, for memflow run's analysis during the run
(tests/run_analysis.sh runs it under memflow run --stacks): 300,000 blocks,
each made 12 Python calls deep through a() or b() as the bits of its
number say, so that 4,096 distinct stacks - new stack nodes, Python frames
merged with the interpreter's native ones - reach the log throughout the
run, not only at its start; every 1,000th block is kept.  No memflow in it."""
keep = []


def a(bits, depth, n):
    return step(bits, depth, n)


def b(bits, depth, n):
    return step(bits, depth, n)


def step(bits, depth, n):
    if depth == 0:
        return bytearray(n)  # LEAF
    return (a if bits & 1 else b)(bits >> 1, depth - 1, n)


for i in range(300_000):
    block = step(i % 4096, 12, 1000 + i % 7)
    if i % 1000 == 0:
        keep.append(block)
