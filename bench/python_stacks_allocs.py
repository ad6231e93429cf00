"""bench/python_stacks_allocs.py - an allocation-heavy pure Python loop for
Python call stacks' cost (bench/python_stacks.sh): 200,000 times a call chain
9 deep makes a bytearray, a list and a dict (about 4 mallocs each).  Prints
the loop's and the whole process's CPU time."""
import os, time

def leaf(i):
    b = bytearray(600 + (i & 1023))      # malloc: above pymalloc's 512 bytes
    l = [i] * (80 + (i & 63))            # a list's array of pointers: malloc
    d = {j: j for j in range(12)}        # a dict that grows past its first table
    return len(b) + len(l) + len(d)

def level(depth, i):
    if depth == 0:
        return leaf(i)
    return level(depth - 1, i)

t0 = time.process_time()
total = 0
for i in range(200_000):
    total += level(8, i)
print("loop_cpu %.3f total_cpu %.3f" % (time.process_time() - t0, sum(os.times()[:2])))
