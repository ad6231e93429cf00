#!/usr/bin/env python3
"""torch_snapshots.py OUT_DIR - PyTorch memory snapshots as the test suite's fixtures.

Writes, with the standard library's pickle only (no torch), snapshots in the
formats torch.cuda.memory._snapshot() had over the versions, each pickled as
pickle.dump writes it (the C pickler) with several protocols, and as the
pure-Python pickler writes it:

  v1_13-P.pickle    1.13: a list of segments; blocks with history, no address
  v2_0-P.pickle     2.0: {segments, device_traces}; blocks with history; no time_us
  v2_1-P.pickle     2.1: blocks with address, requested_size, frames; no time_us
  current-P.pickle  2.8 on: time_us, compile_context, user_metadata, expandable
                    segments (segment_map/unmap), an oom entry, pool_id, the
                    annotate action, an unknown action, three devices of which
                    the middle one idle, allocator_settings,
                    external_annotations, host_segments/host_traces
  (P: 2, 4 or 5; py4 is protocol 4 from pickle._dumps)

Frame dicts and frames lists are shared objects, as PyTorch shares them, so
the pickles refer back to them with GET.  Next to each NAME.pickle goes
NAME.expect: the callbacks common/torch/torch_snapshot.c must make, one a line,
computed here by a small model of the documented rules (the walk in file
order, frames and stacks numbered as first seen).  Also:

  cuts.txt          current-4.pickle cut at many offsets: "OFFSET<TAB>message"
  refused-*.pickle  hostile pickles, with refused.txt: "NAME<TAB>message"
"""
import os
import pickle
import pickletools
import sys

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)

MiB = 1 << 20
T0 = 1_700_000_000_000_000      # time_us: Unix-epoch microseconds


def frame(name, filename, line, order="nfl"):
    if order == "nfl":          # memory_snapshot.cpp's order
        return {"name": name, "filename": filename, "line": line}
    return {"filename": filename, "line": line, "name": name}


TRAIN = frame("main", "/home/user/train.py", 42, "fln")
MODEL = frame("forward", "/home/user/model.py", 17)
LINEAR = frame("forward", "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", 114)
CPP = frame("c10::cuda::CUDACachingAllocator::malloc", "??", 0)
# the same frame as MODEL by content, another object: one frame id
MODEL_AGAIN = frame("forward", "/home/user/model.py", 17)

S1 = [LINEAR, MODEL, TRAIN]               # innermost first
S2 = [CPP, LINEAR, MODEL, TRAIN]
S3 = [MODEL_AGAIN, TRAIN]                 # frames equal to S1's tail
EMPTY = []                                # one shared empty list, as PyTorch's empty_frames

SEG0 = 0x7F0000000000
SEG2 = 0x7F2000000000
LIVE = SEG0 + 1536 + 4096                 # freed in the trace, never allocated there


def current():
    seg0 = {"device": 0, "address": SEG0, "total_size": 2 * MiB, "allocated_size": 1536,
            "active_size": 1536, "requested_size": 1500, "stream": 0, "segment_type": "small",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": EMPTY,
            "blocks": [
                {"address": SEG0, "size": 512, "requested_size": 500,
                 "state": "active_allocated", "frames": S1},
                {"address": SEG0 + 512, "size": 1024, "requested_size": 1000,
                 "state": "active_allocated", "frames": S2},
                {"address": SEG0 + 1536, "size": 2 * MiB - 1536, "requested_size": 0,
                 "state": "inactive", "frames": EMPTY}]}
    seg2 = {"device": 2, "address": SEG2, "total_size": 20 * MiB, "allocated_size": 4 * MiB,
            "active_size": 4 * MiB, "requested_size": 4 * MiB, "stream": 140245, "segment_type":
            "large", "segment_pool_id": (1, 2), "is_expandable": True,
            "blocks": [
                {"address": SEG2, "size": 4 * MiB, "requested_size": 4 * MiB,
                 "state": "active_pending_free", "frames": S3},
                {"address": SEG2 + 4 * MiB, "size": 16 * MiB, "requested_size": 0,
                 "state": "inactive", "frames": EMPTY}],
            "frames": S1}          # frames after blocks: PyTorch adds them last

    def e(action, addr, size, t, frames, md="", stream=0, **extra):
        d = {"action": action}
        d["device_free" if action == "oom" else "addr"] = addr
        d.update(size=size, stream=stream, time_us=T0 + t, compile_context="", user_metadata=md)
        d.update(extra)
        if frames is not None:
            d["frames"] = frames
        return d

    dev0 = [
        e("segment_alloc", SEG0, 2 * MiB, 0, S2),
        e("alloc", SEG0, 512, 10, S1, "net:dense0:"),
        e("alloc", SEG0 + 512, 1024, 20, S2, "net:dense1:", pool_id=(0, 0)),
        e("alloc", SEG0 + 1536, 4096, 30, S3, "backward:net:dense0:"),
        e("free_requested", SEG0 + 1536, 4096, 40, S3),
        e("free_completed", SEG0 + 1536, 4096, 50, EMPTY),
        e("free_requested", LIVE, 256, 55, None),      # allocated before recording
        e("free_completed", LIVE, 256, 56, None),
        e("oom", 1 * MiB, 1 << 30, 60, S1, "net:dense1:"),
        e("snapshot", 0, 0, 70, None),
        e("frobnicate", 0, 0, 75, None),               # an action memflow does not know
        e("annotate", SEG0, 0, 80, None, "step=3"),
        {"addr": SEG0, "size": 1},                     # no action: skipped
        e("frobnicate", 0, 0, 85, None),
    ]
    dev0[3]["compile_context"] = "torch/_dynamo: frame 0"
    dev2 = [
        e("segment_map", SEG2, 2 * MiB, 100, S2, stream=140245),
        e("segment_map", SEG2 + 2 * MiB, 18 * MiB, 101, S2, stream=140245),
        e("alloc", SEG2, 4 * MiB, 110, S3, "net:dense0:", stream=140245),
        e("free_requested", SEG2, 4 * MiB, 120, S3, stream=140245),
        e("segment_unmap", SEG2 + 18 * MiB, 2 * MiB, 130, EMPTY, stream=140245),
    ]
    return {"segments": [seg0, seg2], "device_traces": [dev0, [], dev2],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                   "max_split_size": -1, "expandable_segments": True,
                                   "roundup_power2_divisions": {"1": 0, "2": 0}},
            "external_annotations": [{"stage": "forward", "device": 0, "time_us": T0 + 5}],
            "host_segments": [], "host_traces": []}


def v2_1():
    snap = current()
    for seg in snap["segments"]:
        seg.pop("is_expandable")
    traces = []
    for dev in snap["device_traces"]:
        kept = []
        for ent in dev:
            if ent.get("action") in ("segment_map", "segment_unmap", "annotate", "frobnicate"):
                continue
            for k in ("time_us", "compile_context", "user_metadata", "pool_id"):
                ent.pop(k, None)
            kept.append(ent)
        traces.append(kept)
    return {"segments": snap["segments"], "device_traces": traces}


def legacy_blocks(seg):
    """2.0 and 1.13 blocks: no address; the allocation in a history list."""
    out = []
    for b in seg["blocks"]:
        nb = {"size": b["size"], "state": b["state"]}
        if b["state"] != "inactive":
            nb["history"] = [{"addr": b["address"], "real_size": b["requested_size"],
                              "frames": b["frames"]},
                             {"addr": b["address"], "real_size": 1, "frames": S2}]
        out.append(nb)
    return out


def v2_0():
    snap = v2_1()
    for seg in snap["segments"]:
        seg["blocks"] = legacy_blocks(seg)
        seg.pop("frames", None)
    return snap


def v1_13():
    segs = []
    for seg in v2_0()["segments"]:
        segs.append({k: seg[k] for k in ("device", "address", "total_size", "allocated_size",
                                          "active_size", "stream", "segment_type", "blocks")})
    return segs


# ---- the model of the walker's callbacks ----

class Model:
    ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
               "segment_map", "segment_unmap", "snapshot", "oom", "annotate"]

    def __init__(self):
        self.out = []
        self.frames = {}
        self.stacks = {}
        self.unknown = set()

    def stack(self, frames):
        ids = []
        for f in frames:
            key = (f.get("filename", ""), f.get("line", -1), f.get("name", ""))
            if key not in self.frames:
                self.frames[key] = len(self.frames)
                self.out.append(f"frame {self.frames[key]} {key[0]} {key[1]} {key[2]}")
            ids.append(self.frames[key])
        if not ids:
            return "-"
        if tuple(ids) not in self.stacks:
            self.stacks[tuple(ids)] = len(self.stacks)
            self.out.append(f"stack {self.stacks[tuple(ids)]} " + " ".join(map(str, ids)))
        return str(self.stacks[tuple(ids)])

    def frames_of(self, d):
        """Frames lists in d's values, in file order (a dict's items in order)."""
        return self.stack(d["frames"]) if "frames" in d else "-"

    def segment(self, i, seg):
        stack = "-"
        blocks = []
        at = seg["address"]
        for b in seg["blocks"]:           # dict order: blocks before or after frames
            pass
        for k, v in seg.items():
            if k == "frames":
                stack = self.stack(v)
            elif k == "blocks":
                for b in v:
                    bstack = "-"
                    hist = None
                    for bk, bv in b.items():
                        if bk == "frames":
                            bstack = self.stack(bv)
                        elif bk == "history":
                            for j, h in enumerate(bv):
                                s = self.stack(h["frames"])
                                if j == 0:
                                    hist = (h["real_size"], s)
                    addr = b.get("address", at)
                    req = b.get("requested_size", hist[0] if hist else b["size"])
                    if bstack == "-" and hist:
                        bstack = hist[1]
                    state = {"active_allocated": 1, "active_pending_free": 2,
                             "inactive": 3}[b["state"]]
                    blocks.append(f"  block {addr} {b['size']} {req} {state} {bstack}")
                    at = addr + b["size"]
        pool = seg.get("segment_pool_id")
        self.out.append(
            f"segment {i} dev={seg['device']} addr={seg['address']} total={seg['total_size']} "
            f"alloc={seg['allocated_size']} active={seg['active_size']} "
            f"req={seg.get('requested_size', 0)} stream={seg['stream']} "
            f"large={1 if seg['segment_type'] == 'large' else 0} "
            f"pool={'%d,%d' % pool if pool else '-'} "
            f"exp={int(seg['is_expandable']) if 'is_expandable' in seg else '-'} stack={stack} "
            f"blocks={len(blocks)}")
        self.out.extend(blocks)

    def entry(self, dev, i, ent):
        stack = self.frames_of(ent)
        action = ent.get("action")
        if action is None:
            return
        if action not in self.ACTIONS:
            if action not in self.unknown:
                self.unknown.add(action)
                self.out.append(f"unknown {action} {dev} {i}")
            return
        addr = ent.get("addr", "-")
        free = ent.get("device_free", "-")
        t = ent.get("time_us", "-")
        pool = ent.get("pool_id")
        cc = ent.get("compile_context")
        md = ent.get("user_metadata")
        self.out.append(
            f"entry {dev} {i} {action} addr={addr} size={ent['size']} free={free} "
            f"stream={ent['stream']} time={t} pool={'%d,%d' % pool if pool else '-'} "
            f"stack={stack} cc={'-' if cc is None else repr(cc)} "
            f"md={'-' if md is None else repr(md)}")

    def walk(self, snap):
        segs = snap if isinstance(snap, list) else snap.get("segments")
        items = [("segments", segs)] if isinstance(snap, list) else list(snap.items())
        for key, val in items:
            if key == "segments":
                self.out.append("section segments begin")
                for i, seg in enumerate(val):
                    self.segment(i, seg)
                self.out.append(f"section segments end {len(val)}")
            elif key == "device_traces":
                self.out.append("section traces begin")
                for dev, entries in enumerate(val):
                    self.out.append(f"section device {dev} begin")
                    for i, ent in enumerate(entries):
                        self.entry(dev, i, ent)
                    self.out.append(f"section device {dev} end {len(entries)}")
                self.out.append(f"section traces end {len(val)}")
        return "\n".join(self.out) + "\n"


def write(name, snap, protocol, pure=False):
    dumps = pickle._dumps if pure else pickle.dumps
    data = dumps(snap, protocol=protocol)
    assert pickle.loads(data) == snap
    with open(os.path.join(OUT, name + ".pickle"), "wb") as f:
        f.write(data)
    with open(os.path.join(OUT, name + ".expect"), "w") as f:
        f.write(Model().walk(snap))
    return data


for version, build, protocols in (("v1_13", v1_13, (2, 4)), ("v2_0", v2_0, (2, 4)),
                                  ("v2_1", v2_1, (2, 4)), ("current", current, (2, 4, 5))):
    for p in protocols:
        data = write(f"{version}-{p}", build(), p)
        if version == "current":
            assert b"h" in data or b"j" in data         # GETs: frames are shared
    write(f"{version}-py4", build(), 4, pure=True)

# ---- a cut file: the message for each cut, from the opcodes pickletools finds ----

FIXED = {"uint1": 1, "uint2": 2, "int4": 4, "uint4": 4, "uint8": 8, "float8": 8}
PREFIXED = {"string1": 1, "bytes1": 1, "unicodestring1": 1, "long1": 1, "string4": 4,
            "bytes4": 4, "unicodestring4": 4, "long4": 4, "unicodestring8": 8, "bytes8": 8,
            "bytearray8": 8}


def cut_message(data, k):
    for op, arg, pos in pickletools.genops(data):
        if pos == k:
            return f"offset {k}: the data ends before STOP"
        arg_at = pos + 1
        a = op.arg
        if a is None:
            end = arg_at
        elif a.name in FIXED:
            end = arg_at + FIXED[a.name]
            if k < end:
                return (f"offset {pos}: the data ends inside {op.name} "
                        f"({FIXED[a.name]} bytes needed, {k - arg_at} left)")
        else:
            w = PREFIXED[a.name]
            if k < arg_at + w:
                return f"offset {pos}: the data ends inside {op.name} ({w} bytes needed, {k - arg_at} left)"
            n = int.from_bytes(data[arg_at:arg_at + w], "little")
            end = arg_at + w + n
            if k < end:
                return (f"offset {pos}: the data ends inside {op.name} "
                        f"({n} bytes needed, {k - arg_at - w} left)")
        if k < end:
            raise AssertionError("unreachable")
    raise AssertionError(f"cut {k} past the end")


full = open(os.path.join(OUT, "current-4.pickle"), "rb").read()
cuts = sorted(set([1, 2, 3, 11, len(full) - 1] + list(range(5, len(full) - 1, 97)) +
                  [p + 1 for _, _, p in list(pickletools.genops(full))[::37]]))
with open(os.path.join(OUT, "cuts.txt"), "w") as f:
    for k in cuts:
        f.write(f"{k}\t{cut_message(full, k)}\n")


# ---- hostile pickles ----

class Payload:
    """Unpickling this runs a shell command: the classic attack."""
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class WithPersistentId(pickle.Pickler):
    def persistent_id(self, obj):
        return "storage0" if obj == "tensor" else None


def first(data, names):
    for op, arg, pos in pickletools.genops(data):
        if op.name in names:
            return op.name, pos
    raise AssertionError(names)


REASON = {"GLOBAL": "it names a Python object", "STACK_GLOBAL": "it names a Python object",
          "BINPERSID": "it asks for a persistent object"}
marker = os.path.join(OUT, "payload-ran")
refused = []
for p in (2, 4):
    # a snapshot whose frames hold the payload: only the opcodes decide
    snap = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 2,
                                                "stream": 0, "frames": [Payload("touch " + marker)]}]]}
    data = pickle.dumps(snap, protocol=p)
    name, pos = first(data, ("GLOBAL", "STACK_GLOBAL"))
    refused.append((f"refused-global-{p}", data, f"offset {pos}: opcode {name} refused: "
                    f"{REASON[name]} (memflow reads plain data only)"))
import io
buf = io.BytesIO()
WithPersistentId(buf, protocol=2).dump({"segments": [{"blocks": ["tensor"]}]})
data = buf.getvalue()
name, pos = first(data, ("BINPERSID",))
refused.append(("refused-persid", data, f"offset {pos}: opcode {name} refused: {REASON[name]} "
                "(memflow reads plain data only)"))
with open(os.path.join(OUT, "refused.txt"), "w") as f:
    for name, data, msg in refused:
        with open(os.path.join(OUT, name + ".pickle"), "wb") as g:
            g.write(data)
        f.write(f"{name}\t{msg}\n")
