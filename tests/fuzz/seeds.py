#!/usr/bin/env python3
"""seeds.py OUT_DIR LOG... - memflow logs as inputs of tests/fuzz/fuzz_reader.

Each log becomes its chunks cut to their first 4096 bytes, one after another
(the fuzz target places piece k at k MiB again), and a few damaged copies of
it: a flipped byte in the header's argv_len, the last chunk missing (a log
cut at a chunk boundary), a flipped byte in the first data chunk, the last
chunk cut short.
"""
import os
import struct
import sys

CHUNK = 1 << 20
PIECE = 4096
ARGV_LEN = 68     # offsetof(mf_file_header, argv_len), common/log_format.h


def pieces(data):
    out = bytearray()
    n = (len(data) + CHUNK - 1) // CHUNK
    for k in range(n):
        p = data[k * CHUNK:k * CHUNK + PIECE]
        out += p + bytes(PIECE - len(p))
    return out


def variants(inp):
    yield "whole", inp
    # mf_file_header.argv_len (offset 68): one bit flipped
    e = bytearray(inp)
    e[ARGV_LEN] ^= 0x10
    yield "argv_len", e
    if len(inp) > PIECE:
        yield "cut", inp[:-PIECE]
        e = bytearray(inp)
        e[PIECE + 40] ^= 0xff
        yield "record", e
        yield "short", inp[:-PIECE // 2]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for i, path in enumerate(sys.argv[2:]):
        with open(path, "rb") as f:
            inp = pieces(f.read())
        base = os.path.basename(path).replace(".mfl", "")
        for name, v in variants(inp):
            with open(os.path.join(out, "%02d-%s-%s" % (i, base, name)), "wb") as f:
                f.write(v)


main()
