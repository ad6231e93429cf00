#!/usr/bin/env python3
"""log_holes.py - zero one 4 KiB page of a live memflow log, and say what a
reader must make of it: an independent reading of the bytes (not the C
reader) for tests/log_holes.sh.

Usage: log_holes.py LOG CHUNK zero PAGE | garbage | info
Prints one line about chunk CHUNK of LOG:
  "sealed=S end=E hole=X resume=R lost_allocs=A lost_frees=F"
S is the chunk header's seal (docs/FORMAT.md), E where the chunk's records
end.  "zero PAGE" zeroes page PAGE (0-255) of the chunk: X is then the first
record start at or after the page (the zero word a reader meets), R the
first record start at or after the page's end (where reading resumes; 0 when
the records end inside the page), A and F the allocations and frees whose
records started in [X, R) (with R = 0: in [X, E)), which are lost; page 0
holds the chunk header: X and R are then 0, and every record of the chunk is
lost.
"garbage" writes a record's payload without its word right after the last
record (a record the writer was killed in the middle of storing): nothing is
lost.  "info" changes nothing.
"""
import struct
import sys

CHUNK = 1 << 20
PAGE = 4096
ALLOCS = (1, 12, 16)     # ALLOC, CPU_ALLOC, CPU_ALLOC_STACK
FREES = (2, 13)          # FREE, CPU_FREE


def records(data, base):
    """(offset in chunk, type) of every record of the chunk at base."""
    out = []
    at = 16
    while at + 8 <= CHUNK:
        word = struct.unpack_from("<Q", data, base + at)[0]
        if word == 0:
            break
        out.append((at, word & 0xFFFF))
        at += (word >> 16) & 0xFFFF
    return out, at


def main():
    path, chunk, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, "r+b") as f:
        data = f.read()
        base = chunk * CHUNK
        sealed = struct.unpack_from("<I", data, base + 12)[0]
        recs, end = records(data, base)
        hole = resume = 0
        lost = []
        if mode == "garbage":
            # addr, requested_flags, slack | scope of a CPU_ALLOC whose word was never stored
            f.seek(base + end + 8)
            f.write(struct.pack("<QQII", 0x7F3A1C8A4E40, 100, 12, 1))
        elif mode == "zero":
            first = int(sys.argv[4]) * PAGE
            f.seek(base + first)
            f.write(bytes(PAGE))
            if first == 0:        # the chunk header: the whole chunk is lost
                lost = [kind for _, kind in recs]
            else:
                hole = next(at for at, _ in recs if at >= first)
                resume = next((at for at, _ in recs if at >= first + PAGE), 0)
                stop = resume if resume else end
                lost = [kind for at, kind in recs if hole <= at < stop]
    print("sealed=%d end=%d hole=%d resume=%d lost_allocs=%d lost_frees=%d" % (
        sealed, end, hole, resume, sum(k in ALLOCS for k in lost),
        sum(k in FREES for k in lost)))


main()
