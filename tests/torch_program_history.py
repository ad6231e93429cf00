"""torch_program_history.py - a program that calls torch's
_record_memory_history itself while memflow's live history is on (run under
memflow run by tests/torch_program_history.sh).

Seen on an H100 with torch 2.11: a program that turned the history on with
its own settings and off again before exiting left memflow's log without a
single tensor (the ring was cleared, memflow wrote it only at exit).  No
torch here has a timed history (Debian's is 1.13, CPU), so the allocator's
side is played by a stand-in module with torch 2.11's interface: a ring of
entries with time_us that every _record_memory_history call clears (the worst
case), and _snapshot.  memflow's side - arming, the program's calls, flushes,
the conversion into the log - is memflow's own code.
"""
import sys
import time
import types

import memflow.torch_history as history

MiB = 1 << 20
SEG = 0x7F0000200000
ring, calls = [], []
recording = {"on": False}


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize,
                           device=None, clear_history=False):
    calls.append((enabled, stacks, max_entries))
    del ring[:]
    recording["on"] = enabled == "all"


def _snapshot():
    live = [(e["addr"], e["size"]) for e in ring if e["action"] == "alloc"]
    return {"segments": [{"device": 0, "address": SEG, "total_size": 2 * MiB, "stream": 0,
                          "segment_type": "large", "is_expandable": False, "frames": [],
                          "blocks": [{"address": a, "size": n, "requested_size": n,
                                      "state": "active_allocated", "frames": []}
                                     for a, n in live]}],
            "device_traces": [list(ring)]}


def event(action, addr, size):
    time.sleep(0.002)   # 2 ms apart: their order on the log's clock is certain
    if recording["on"]:
        ring.append({"action": action, "addr": addr, "size": size, "stream": 0,
                     "time_us": time.time_ns() // 1000, "frames": []})


memory = types.SimpleNamespace(_record_memory_history=_record_memory_history,
                               _snapshot=_snapshot)
cuda = types.SimpleNamespace(memory=memory, is_initialized=lambda: True,
                             _lazy_call=lambda f: f())
torch = types.SimpleNamespace(__version__="2.11.0+cu130", cuda=cuda, _C=types.SimpleNamespace())

history.arm(torch)
from_import = memory._record_memory_history   # as `from torch.cuda.memory import ...` would
event("segment_alloc", SEG, 2 * MiB)
event("alloc", SEG, 4096)
event("alloc", SEG + 4096, 8192)
from_import(max_entries=200000)               # the program's own settings: the ring restarts
event("alloc", SEG + 16384, 1024)
event("free_requested", SEG, 4096)
event("free_completed", SEG, 4096)
from_import(enabled=None)                     # the program stops the trace
event("alloc", SEG + 32768, 512)
print("calls=%s" % calls)
print("retaken=%d on=%s" % (history.state()["retaken"], history.state()["on"]))
sys.stdout.flush()
