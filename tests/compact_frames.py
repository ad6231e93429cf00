#!/usr/bin/env python3
"""compact_frames.py - compare two compact logs (layout 2) frame by frame.

Usage: compact_frames.py A B

Reads each file's trailer, index and every frame the index names (and the
frame of chunk 0's rest), and prints "same frames N" when both hold the
same header prefix, the same index (every entry, its frame's place in the
file aside) and byte for byte the same frames; else what differs, exit 1.
The compaction during `memflow run` writes the frames in the order chunks
became final, `memflow compact` in index order: only the offsets differ.
"""
import struct
import sys

TRAILER = struct.Struct("<8sQIIII")
INDEX = struct.Struct("<QQIIQII")
ENTRY = struct.Struct("<QQIIIHHQQII")


def read(path):
    data = open(path, "rb").read()
    magic, ix_off, ix_size, _ix_check, layout, _check = TRAILER.unpack_from(data, len(data) - 32)
    assert magic == b"MFCOMPCT" and layout == 2, (path, magic, layout)
    live_size, events, prefix_len, header_len, head_off, head_size, n = INDEX.unpack_from(data, ix_off)
    entries, frames = [], {}
    for i in range(n):
        e = ENTRY.unpack_from(data, ix_off + INDEX.size + i * ENTRY.size)
        index, frame_off, frame_size = e[0], e[1], e[2]
        entries.append((index,) + e[2:])
        frames[index] = data[frame_off:frame_off + frame_size]
    head = data[head_off:head_off + head_size]
    return {
        "prefix": data[:prefix_len],
        "index": (live_size, events, prefix_len, header_len, head_size, n),
        "entries": entries,
        "frames": frames,
        "head": head,
    }


def main():
    a, b = read(sys.argv[1]), read(sys.argv[2])
    bad = [k for k in ("prefix", "index", "entries", "head") if a[k] != b[k]]
    bad += ["frame of chunk %d" % i for i in a["frames"] if a["frames"][i] != b["frames"].get(i)]
    if bad:
        print("differ: " + ", ".join(bad[:10]))
        return 1
    print("same frames %d" % len(a["frames"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
