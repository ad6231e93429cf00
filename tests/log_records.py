#!/usr/bin/env python3
"""log_records.py - count the records of a memflow log by type and size.

An independent reading of the bytes (not the C reader), for tests that
check what the recorder wrote: prints "TYPE SIZE COUNT" lines, sorted, where
TYPE is the record type number and SIZE its size in bytes (docs/FORMAT.md).
Usage: log_records.py LOG
"""
import struct
import sys

CHUNK = 1 << 20


def main():
    data = open(sys.argv[1], "rb").read()
    counts = {}
    for base in range(CHUNK, len(data), CHUNK):
        if base + 16 > len(data) or struct.unpack_from("<I", data, base)[0] == 0:
            continue
        at = base + 16
        while at + 8 <= min(base + CHUNK, len(data)):
            word = struct.unpack_from("<Q", data, at)[0]
            if word == 0:
                break
            kind, size = word & 0xFFFF, (word >> 16) & 0xFFFF
            if size < 8:
                sys.exit("bad record at offset %d" % at)
            counts[(kind, size)] = counts.get((kind, size), 0) + 1
            at += size
    for (kind, size), n in sorted(counts.items()):
        print(kind, size, n)


main()
