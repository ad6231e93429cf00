#!/usr/bin/env python3
"""compact_damage.py LIVE COMPACT WORKDIR [SEED N] - cut a compact log at many lengths
and flip bytes in each of its frames; every reader must keep every intact frame.

LIVE is a live log, COMPACT the same log compacted (docs/FORMAT.md, "Compact
form").  This script reads both with its own parser (not memflow's reader):
the events of each live chunk (allocations, frees), and the compact file's
frames (walking their 64-byte headers from the end of the file header), its
index and its trailer.  Then, for each trial, it damages a copy in WORKDIR
and runs tests/logcheck and `memflow stats` on it:
  * cuts at every frame boundary, inside every frame, inside the index and
    the trailer, and at 30 random offsets (seed 19): logcheck must read
    exactly the events of the frames wholly before the cut; both exit 3 (0
    for the whole file; 1 for a cut inside the file header, which is refused)
    and name the cut (offset = the file's size) and the frame cut short;
  * a flipped byte in each frame's header and in its payload: exactly the
    events of every other frame, the damaged frame named by its offset;
  * a flipped byte in the index, in the trailer, in the header's COMPACT flag,
    and the trailer cut off with a frame header damaged (found by walking):
    the events of every intact frame.
Prints "trials N, events recovered E" at the end; exits 1 on the first
mismatch.  With SEED and N (bench/faults.sh), N trials instead, each a cut at
a random offset and a flipped byte at a random place of a random frame, and
one line: "events E held H destroyed D failed F" (E: the undamaged log's
events, times the trials; H: what logcheck read; D: the events of the frames
the fault destroyed; F: trials whose reading or messages were wrong).
Needs the environment of tests/lib.sh (MEMFLOW, top_builddir).
"""
import os
import random
import shlex
import struct
import subprocess
import sys

CHUNK = 1 << 20
FRAME = 64
ALLOCS = (1, 12, 16)
FREES = (2, 13)


def live_events(path):
    """{chunk index: (allocs, frees)} of a live log."""
    data = open(path, "rb").read()
    out = {}
    for base in range(CHUNK, len(data), CHUNK):
        if struct.unpack_from("<I", data, base)[0] != 0x4B43464D:
            continue
        a = f = 0
        at = base + 16
        while at + 8 <= min(base + CHUNK, len(data)):
            word = struct.unpack_from("<Q", data, at)[0]
            if word == 0:
                break
            kind = word & 0xFFFF
            a += kind in ALLOCS
            f += kind in FREES
            at += (word >> 16) & 0xFFFF
        out[base // CHUNK] = (a, f)
    return out


def compact_frames(data):
    """(prefix_len, [(offset, size, chunk index)], index_offset)."""
    argv_len = struct.unpack_from("<I", data, 68)[0]
    at = prefix = 184 + argv_len
    index_offset = struct.unpack_from("<Q", data, len(data) - 24)[0]
    frames = []
    while at < index_offset:
        assert data[at:at + 4] == b"MFCF", "no frame header at %d" % at
        index, payload = struct.unpack_from("<QI", data, at + 8)
        frames.append((at, FRAME + payload, index))
        at += FRAME + payload
    assert at == index_offset
    return prefix, frames, index_offset


class Trials:
    def __init__(self, live, compact, work):
        self.events = live_events(live)
        self.data = open(compact, "rb").read()
        self.prefix, self.frames, self.index_offset = compact_frames(self.data)
        self.work = work
        self.path = os.path.join(work, "damaged.mfl")
        self.trials = 0
        self.recovered = 0
        self.expected = 0
        self.failed = 0
        self.exit_on_failure = True
        top = os.environ["top_builddir"]
        self.logcheck = os.path.join(top, "tests", "logcheck")
        memflow = os.environ["MEMFLOW"]   # a path, or a command line (bench/faults.sh)
        self.memflow = [memflow] if os.path.exists(memflow) else shlex.split(memflow)

    def expect(self, chunks):
        a = sum(self.events[c][0] for c in chunks)
        f = sum(self.events[c][1] for c in chunks)
        return a, f

    def run(self, what, data, chunks, rc, lines):
        """Read data as a log: logcheck's counts are those of chunks, both
        readers exit rc, and memflow stats says every line (after 'PATH: offset ')."""
        with open(self.path, "wb") as f:
            f.write(data)
        check = subprocess.run([self.logcheck, self.path], capture_output=True, text=True)
        stats = subprocess.run(self.memflow + ["stats", self.path], capture_output=True,
                               text=True)
        fail = []
        if check.returncode != rc or stats.returncode != rc:
            fail.append("exit %d and %d, expected %d" % (check.returncode, stats.returncode, rc))
        if rc != 1:
            got = [l for l in check.stdout.splitlines() if l.startswith("total ")]
            want = "total allocs=%d frees=%d" % self.expect(chunks)
            self.expected += sum(self.expect(chunks))
            if not got or not got[0].startswith(want + " "):
                fail.append("logcheck read %s, expected %s" % (got, want))
            else:
                self.recovered += sum(self.expect(chunks))
        for line in lines:
            if "memflow: warning: %s: offset %s" % (self.path, line) not in stats.stderr:
                fail.append("no line 'offset %s'" % line)
        self.trials += 1
        if fail and self.exit_on_failure:
            sys.exit("FAIL: compact_damage: %s: %s\nstderr: %s" % (what, "; ".join(fail),
                                                                   stats.stderr))
        if fail:
            print("compact_damage: %s: %s" % (what, "; ".join(fail)), file=sys.stderr)
            self.failed += 1

    def data_frames(self):
        return [(o, s, i) for o, s, i in self.frames if i > 0]

    def cut(self, length):
        data = self.data[:length]
        if length == len(self.data):
            return self.run("whole", data, self.events, 0, [])
        if length < 184:     # inside the file header: not a log any more
            return self.run("cut at %d" % length, data, [], 1, [])
        if length < self.prefix:
            return self.run("cut at %d" % length, data, [], 3,
                            ["%d: compact log: no MFCOMPCT trailer" % length])
        whole = [i for o, s, i in self.data_frames() if o + s <= length]
        lines = ["%d: compact log: no MFCOMPCT trailer" % length]
        for o, s, i in self.frames:
            if o < length < o + s and length - o >= FRAME:
                lines.append("%d: compact log: the frame of chunk %d is cut short" % (o, i))
            elif o < length < o + FRAME:
                lines.append("%d: compact log: the file ends inside a frame header" % o)
        self.run("cut at %d" % length, data, whole, 3, lines)

    def frame_flip(self, o, s, i, offset):
        """Flip the byte at offset, inside the frame (o, s) of chunk i."""
        if i == 0:
            return self.flip("chunk 0's frame", offset, None,
                             "%d: compact log: chunk 0's frame is damaged" % o)
        if offset < o + FRAME:
            return self.flip("frame header of chunk %d" % i, offset, i,
                             "%d: compact log: chunk %d: its frame header is damaged" % (o, i))
        self.flip("frame payload of chunk %d" % i, offset, i,
                  "%d: compact log: chunk %d: its frame fails its CRC-32C" % (o, i))

    def flip(self, what, offset, lost, line, bit=0x40):
        data = bytearray(self.data)
        data[offset] ^= bit
        kept = [i for o, s, i in self.data_frames() if i != lost]
        self.run("%s (byte %d)" % (what, offset), bytes(data), kept, 3, [line])


def random_trials(t, seed, n):
    """bench/faults.sh: n random cuts and n random flips, counted."""
    rng = random.Random(seed)
    t.exit_on_failure = False
    whole = sum(t.expect(t.events))
    for _ in range(n):
        t.cut(rng.randrange(t.prefix, len(t.data)))
        o, s, i = rng.choice(t.frames)
        t.frame_flip(o, s, i, o + rng.randrange(0, s))
    print("events %d held %d destroyed %d failed %d" % (
        whole * t.trials, t.recovered, whole * t.trials - t.expected, t.failed))


def main():
    t = Trials(sys.argv[1], sys.argv[2], sys.argv[3])
    if len(sys.argv) > 5:
        return random_trials(t, int(sys.argv[4]), int(sys.argv[5]))
    rng = random.Random(19)
    size = len(t.data)
    cuts = {t.prefix, t.index_offset, t.index_offset + 40, size - 32, size - 1, size,
            t.prefix - 1, 100}
    for o, s, i in t.frames:
        cuts |= {o, o + 1, o + FRAME - 1, o + FRAME, o + FRAME + s // 2, o + s - 1, o + s}
    cuts |= {rng.randrange(t.prefix, size) for _ in range(30)}
    for length in sorted(cuts):
        t.cut(length)
    for o, s, i in t.frames:
        head = o + rng.randrange(8, FRAME) if rng.random() < 0.5 else o + rng.randrange(0, 4)
        t.frame_flip(o, s, i, head)
        t.frame_flip(o, s, i, o + FRAME + rng.randrange(0, s - FRAME))
    t.flip("index", t.index_offset + 40 + rng.randrange(0, size - 32 - t.index_offset - 40),
           None, "%d: compact log: index fails its CRC-32C" % t.index_offset)
    t.flip("trailer", size - 32 + rng.randrange(8, 28), None,
           "%d: compact log: trailer fails its CRC-32C" % (size - 32))
    t.flip("COMPACT flag", 20, None, "20: the header's flags say the live form", bit=0x04)
    # no trailer, and a frame header damaged: the walk looks for the next frame
    o, s, i = t.data_frames()[1]
    data = bytearray(t.data[:t.index_offset])
    data[o + 12] ^= 0x40
    kept = [j for _, _, j in t.data_frames() if j != i]
    t.run("no trailer, header of chunk %d damaged" % i, bytes(data), kept, 3,
          ["%d: compact log: no MFCOMPCT trailer" % t.index_offset,
           "%d: compact log: %d bytes that are no frame (damaged): the chunks they held are "
           "lost; frames go on after them" % (o, s)])
    print("trials %d, events recovered %d" % (t.trials, t.recovered))


main()
