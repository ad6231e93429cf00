#!/usr/bin/env python3
"""torch_import_snapshots.py OUT_DIR - PyTorch memory snapshots for memflow import.

One scenario, written as PyTorch's _snapshot() writes it, with the standard
library's pickle only (no torch):

  current.pickle   torch >= 2.2: time_us, user_metadata, expandable segments
                   (segment_map/unmap), protocol 4
  old.pickle       torch 2.1: the same entries without time_us or
                   user_metadata, no expandable segments, protocol 2

and hostile or broken pickles for the refusals:

  refused-global.pickle  a snapshot whose entry holds os.system (STACK_GLOBAL)
  refused-system.pickle  a snapshot whose entry runs os.system when unpickled
                         (GLOBAL, then REDUCE): it would write OUT_DIR/pwned
  refused-reduce.pickle  a call without a global (REDUCE at offset 5)
  cut.pickle             current.pickle cut in the middle of the trace
  not-snapshot.pickle    plain data, not a snapshot (a dict of other keys)
  damaged.pickle         a trace with two damaged entries (an alloc without
                         size, a free_completed whose addr is a str) and two
                         contradictory ones (an alloc where a tensor is
                         live, a segment_alloc where a segment is), among
                         four sound ones (see damaged() below)

The scenario (times in us after T0; tests/torch_import.sh has every number
it implies, worked out by hand):

gpu/0, plain segments of 2 MiB:
  SEG_A  final, never in the trace: blocks A0 (512, live before, no frames)
         and A1 (1024, allocated at 0 from the cache, net:dense0:)
  SEG_B  segment_alloc at 10 (net:dense1:), segment_free at 100
         B0  alloc at 20 (1 MiB, fresh, net:dense1 -> "net:dense1:"),
             free_requested 30, free_completed 40
         B0' alloc at 65 at B0's address (512 KiB, from the cache,
             backward:net:dense0:), free_requested 80, free_completed 90
         P   free_completed at 60 at SEG_B + 1 MiB, never allocated: live
             before (256 KiB)
  SEG_C  final, never in the trace: C0 (4096, live before)
  SEG_D  segment_free at 110, never allocated: live before
  oom at 70: 4 GiB asked, 1 MiB free, net:dense1:
gpu/1, one expandable segment SEG_E:
  segment_map at 5 (6 MiB, net:); E0 alloc at 15 (2 MiB, fresh, net:), E1
  alloc at 25 (2 MiB, from the cache), E1 free_completed at 35;
  segment_unmap at 45 of its last 2 MiB; final: 4 MiB mapped, E0 active

Frames: S_USER (torch's linear.py, the program's model.py:17, train.py:42),
S_CPP (c10, at::, then MyNet::forward in /src/mynet.cpp:30, main), S_LIB
(linear.py and the standard library's runpy.py only, with c10 and
_PyEval frames): sites forward (model.py:17), MyNet::forward(at::Tensor)
(mynet.cpp:30) and forward (linear.py:114).
"""
import os
import pickle
import sys

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)

MiB = 1 << 20
T0 = 1_700_000_000_000_000


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


LINEAR = frame("forward", "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", 114)
MODEL = frame("forward", "/home/user/model.py", 17)
TRAIN = frame("main", "/home/user/train.py", 42)
RUNPY = frame("_run_code", "/usr/lib/python3.11/runpy.py", 86)
C10 = frame("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int, "
            "unsigned long, CUstream_st*)", "??", 0)
ATEN = frame("at::native::empty_cuda(c10::ArrayRef<long>)", "/pytorch/aten/src/ATen/native/"
             "cuda/EmptyTensor.cpp", 44)
PYEVAL = frame("_PyEval_EvalFrameDefault", "??", 0)
MYNET = frame("MyNet::forward(at::Tensor)", "/src/mynet.cpp", 30)
MAIN = frame("main", "/src/main.cpp", 12)

S_USER = [LINEAR, MODEL, TRAIN]
S_CPP = [C10, ATEN, MYNET, MAIN]
S_LIB = [C10, PYEVAL, LINEAR, RUNPY]
EMPTY = []

SEG_A = 0x7F0000000000
SEG_B = 0x7F0000200000
SEG_C = 0x7F0000400000
SEG_D = 0x7F0000600000
SEG_E = 0x7F1000000000


def entry(action, addr, size, t, frames, md=""):
    d = {"action": action}
    d["device_free" if action == "oom" else "addr"] = addr
    d.update(size=size, stream=0, time_us=T0 + t, compile_context="N/A", user_metadata=md,
             frames=frames)
    return d


def block(addr, size, state, frames=EMPTY, requested=None):
    return {"address": addr, "size": size,
            "requested_size": size if requested is None else requested,
            "state": state, "frames": frames}


def current():
    segments = [
        {"device": 0, "address": SEG_A, "total_size": 2 * MiB, "allocated_size": 1536,
         "active_size": 1536, "requested_size": 1536, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "is_expandable": False, "frames": EMPTY,
         "blocks": [block(SEG_A, 512, "active_allocated"),
                    block(SEG_A + 512, 1024, "active_allocated", S_USER),
                    block(SEG_A + 1536, 2 * MiB - 1536, "inactive", requested=0)]},
        {"device": 0, "address": SEG_C, "total_size": 2 * MiB, "allocated_size": 4096,
         "active_size": 4096, "requested_size": 4096, "stream": 0, "segment_type": "large",
         "segment_pool_id": (0, 0), "is_expandable": False, "frames": EMPTY,
         "blocks": [block(SEG_C, 4096, "active_allocated"),
                    block(SEG_C + 4096, 2 * MiB - 4096, "inactive", requested=0)]},
        {"device": 1, "address": SEG_E, "total_size": 4 * MiB, "allocated_size": 2 * MiB,
         "active_size": 2 * MiB, "requested_size": 2 * MiB, "stream": 0,
         "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": True,
         "frames": S_CPP,
         "blocks": [block(SEG_E, 2 * MiB, "active_allocated", S_CPP),
                    block(SEG_E + 2 * MiB, 2 * MiB, "inactive", requested=0)]},
    ]
    dev0 = [
        entry("alloc", SEG_A + 512, 1024, 0, S_USER, "net:dense0:"),
        entry("segment_alloc", SEG_B, 2 * MiB, 10, S_USER, "net:dense1:"),
        entry("alloc", SEG_B, 1 * MiB, 20, S_USER, "net:dense1"),
        entry("free_requested", SEG_B, 1 * MiB, 30, S_USER, "net:dense1:"),
        entry("free_completed", SEG_B, 1 * MiB, 40, S_USER, "net:dense1:"),
        entry("free_completed", SEG_B + 1 * MiB, 256 * 1024, 60, EMPTY),
        entry("alloc", SEG_B, 512 * 1024, 65, S_LIB, "backward:net:dense0:"),
        entry("oom", 1 * MiB, 4 << 30, 70, S_USER, "net:dense1:"),
        entry("free_requested", SEG_B, 512 * 1024, 80, S_LIB, "backward:net:dense0:"),
        entry("free_completed", SEG_B, 512 * 1024, 90, S_LIB, "backward:net:dense0:"),
        entry("segment_free", SEG_B, 2 * MiB, 100, S_USER),
        entry("segment_free", SEG_D, 2 * MiB, 110, EMPTY),
    ]
    dev1 = [
        entry("segment_map", SEG_E, 6 * MiB, 5, S_CPP, "net:"),
        entry("alloc", SEG_E, 2 * MiB, 15, S_CPP, "net:"),
        entry("alloc", SEG_E + 2 * MiB, 2 * MiB, 25, S_CPP, "net:"),
        entry("free_completed", SEG_E + 2 * MiB, 2 * MiB, 35, S_CPP, "net:"),
        entry("segment_unmap", SEG_E + 4 * MiB, 2 * MiB, 45, EMPTY),
    ]
    return {"segments": segments, "device_traces": [dev0, dev1],
            "allocator_settings": {"expandable_segments": True}}


def old():
    """torch 2.1: no time_us, user_metadata or compile_context; no
    expandable segments (gpu/1's segment is a plain one of 4 MiB, allocated
    in the trace, its second tensor freed)."""
    snap = current()
    for seg in snap["segments"]:
        seg.pop("is_expandable")
    snap["segments"][2]["total_size"] = 4 * MiB
    for dev in snap["device_traces"]:
        for e in dev:
            for k in ("time_us", "user_metadata", "compile_context"):
                e.pop(k)
    dev1 = snap["device_traces"][1]
    dev1[0]["action"] = "segment_alloc"
    dev1[0]["size"] = 4 * MiB
    del dev1[4]
    snap.pop("allocator_settings")
    return snap


def damaged():
    """gpu/0, SEG_B: segment_alloc at 10; B0 alloc at 20 (1 MiB); an alloc
    at 25 without size (skipped); an alloc at 30 at B0's address (4096: B0
    ends there); a free_completed at 35 whose addr is a str (skipped); a
    segment_alloc at 40 of SEG_B again (the first ends there); the 4096
    freed at 50, SEG_B at 60."""
    dev0 = [
        entry("segment_alloc", SEG_B, 2 * MiB, 10, EMPTY),
        entry("alloc", SEG_B, 1 * MiB, 20, EMPTY),
        entry("alloc", SEG_B + MiB, 0, 25, EMPTY),
        entry("alloc", SEG_B, 4096, 30, EMPTY),
        entry("free_completed", SEG_B, 4096, 35, EMPTY),
        entry("segment_alloc", SEG_B, 2 * MiB, 40, EMPTY),
        entry("free_completed", SEG_B, 4096, 50, EMPTY),
        entry("segment_free", SEG_B, 2 * MiB, 60, EMPTY),
    ]
    del dev0[2]["size"]
    dev0[4]["addr"] = hex(SEG_B)
    return {"segments": [], "device_traces": [dev0]}


class System:
    """Unpickling this runs os.system: memflow must refuse it."""

    def __reduce__(self):
        return (os.system, ("echo pwned > " + os.path.join(OUT, "pwned"),))


def write(name, obj, protocol):
    with open(os.path.join(OUT, name), "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


write("current.pickle", current(), 4)
write("old.pickle", old(), 2)
hostile = current()
hostile["device_traces"][0][3]["frames"] = [os.system]       # a GLOBAL in the trace
write("refused-global.pickle", hostile, 4)
write("refused-system.pickle", {"segments": [], "device_traces": [[System()]]}, 2)
with open(os.path.join(OUT, "refused-reduce.pickle"), "wb") as f:
    f.write(b"\x80\x02K\x01)R.")          # PROTO 2, BININT1 1, EMPTY_TUPLE, REDUCE, STOP
with open(os.path.join(OUT, "current.pickle"), "rb") as f:
    data = f.read()
with open(os.path.join(OUT, "cut.pickle"), "wb") as f:
    f.write(data[:len(data) * 2 // 3])
write("not-snapshot.pickle", {"model": "resnet", "epoch": 3}, 4)
write("damaged.pickle", damaged(), 4)
