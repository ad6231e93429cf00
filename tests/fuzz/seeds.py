#!/usr/bin/env python3
"""seeds.py [--codec] OUT_DIR LOG... - memflow logs as inputs of tests/fuzz/fuzz_reader
and tests/fuzz/fuzz_compact (or, --codec, of tests/fuzz/fuzz_codec).

A live log becomes its chunks cut to their first 4096 bytes, one after
another (fuzz_reader places piece k at k MiB again), and a few damaged copies
of it: a flipped byte in the header's argv_len, the last chunk missing (a log
cut at a chunk boundary), a flipped byte in the first data chunk, the last
chunk cut short.  A compact log (its header's flags have bit 2) is an input
as it is, whole (both targets read it so), with damaged copies: cut in its
middle, without its trailer, without its index and trailer, a flipped byte
in its first frame's header and in its payload, and its frames in reverse
order (docs/FORMAT.md, "Compact form").

--codec: each data chunk of a live log, its first 64 KiB after a 0 byte (a
chunk to encode), and each frame payload of a compact log decompressed with
the zstd command (when installed) after a 1 byte (an encoding to decode).
"""
import os
import shutil
import struct
import subprocess
import sys

CHUNK = 1 << 20
PIECE = 4096
ARGV_LEN = 68     # offsetof(mf_file_header, argv_len), common/log_format.h
FLAGS = 20        # offsetof(mf_file_header, flags)
COMPACT = 4       # MF_HEADER_COMPACT
FRAME = 64        # sizeof(mf_compact_frame)


def pieces(data):
    out = bytearray()
    n = (len(data) + CHUNK - 1) // CHUNK
    for k in range(n):
        p = data[k * CHUNK:k * CHUNK + PIECE]
        out += p + bytes(PIECE - len(p))
    return out


def live_variants(inp):
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


def compact_variants(data):
    yield "compact", data
    size = len(data)
    index_offset = struct.unpack_from("<Q", data, size - 24)[0]
    prefix = 184 + struct.unpack_from("<I", data, ARGV_LEN)[0]
    frames = []
    at = prefix
    while at + FRAME <= index_offset and data[at:at + 4] == b"MFCF":
        payload = struct.unpack_from("<I", data, at + 16)[0]
        frames.append(data[at:at + FRAME + payload])
        at += FRAME + payload
    yield "compact-half", data[:size // 2]
    yield "compact-notrailer", data[:size - 32]
    yield "compact-frames", data[:index_offset]
    if len(frames) > 1:
        first = prefix + len(frames[0])          # the first data frame (after chunk 0's)
        for name, offset in (("compact-header", first + 9),
                             ("compact-payload", first + FRAME + len(frames[1]) // 2)):
            e = bytearray(data)
            e[offset] ^= 0x40
            yield name, e
        yield "compact-reversed", data[:prefix] + frames[0] + b"".join(reversed(frames[1:]))


def codec_inputs(data, compact):
    """fuzz_codec's inputs: chunks to encode, encodings to decode."""
    if not compact:
        for base in range(CHUNK, len(data), CHUNK):
            if struct.unpack_from("<I", data, base)[0]:
                yield "chunk%d" % (base // CHUNK), b"\0" + data[base:base + 65536]
        return
    if not shutil.which("zstd"):
        return
    at = 184 + struct.unpack_from("<I", data, ARGV_LEN)[0]
    while data[at:at + 4] == b"MFCF":
        index, payload = struct.unpack_from("<QI", data, at + 8)
        encoding = struct.unpack_from("<H", data, at + 32)[0]
        plain = subprocess.run(["zstd", "-dcq"], input=data[at + FRAME:at + FRAME + payload],
                               capture_output=True).stdout
        if encoding == 1 and plain:
            yield "encoding%d" % index, b"\1" + plain
        at += FRAME + payload


def main():
    codec = sys.argv[1] == "--codec"
    out = sys.argv[1 + codec]
    os.makedirs(out, exist_ok=True)
    for i, path in enumerate(sys.argv[2 + codec:]):
        with open(path, "rb") as f:
            data = f.read()
        compact = len(data) > FLAGS and data[FLAGS] & COMPACT
        base = os.path.basename(path).replace(".mfl", "")
        if codec:
            variants = codec_inputs(data, compact)
        else:
            variants = compact_variants(data) if compact else live_variants(pieces(data))
        for name, v in variants:
            with open(os.path.join(out, "%02d-%s-%s" % (i, base, name)), "wb") as f:
                f.write(v)


main()
