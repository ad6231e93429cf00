"""torch_live.py - the live path of PyTorch's allocator history, in process,
without a GPU (run under memflow run by tests/torch_live.sh).

The snapshots torch.cuda.memory._snapshot() would return are built here as
dicts, with time_us taken from the wall clock as the program goes, and
handed to the extension as pickle.dumps(snapshot), as memflow.torch_history
does: three snapshots of one growing ring (each conversion adds only what
the previous ones did not have), tensor scopes from user_metadata, then by
time on this thread, the metadata listener, torch's OOM observer without
the history, and torch 1.13 (Debian's) found too old for the live history.
Prints what the conversions returned, one line each, for the script.
"""
import pickle
import sys
import threading
import time

import torch  # noqa: F401  (memflow run's start-up arms the history at import)

import memflow.torch_history as history
from memflow import _memflow, profiler

MiB = 1 << 20
SEG1, SEG2 = 0x7F0000000000, 0x7F0000200000


def now_us():
    time.sleep(0.002)       # entries 2 ms apart: their order on the log's clock is certain
    return time.time_ns() // 1000


def entry(action, addr, size, t, md=""):
    d = {"action": action, "size": size, "stream": 0, "time_us": t, "user_metadata": md,
         "compile_context": "N/A",
         "frames": [{"name": "step", "filename": "/home/user/train.py", "line": 7}]}
    d["device_free" if action == "oom" else "addr"] = addr
    return d


def segment(addr, blocks):
    return {"device": 0, "address": addr, "total_size": 2 * MiB, "stream": 0,
            "segment_type": "large", "is_expandable": False, "frames": [],
            "blocks": [{"address": a, "size": s, "requested_size": s,
                        "state": "active_allocated", "frames": []} for a, s in blocks]}


def convert(snapshot):
    r = _memflow.torch_history(pickle.dumps(snapshot, protocol=4))
    print(" ".join("%s=%d" % (k, r[k]) for k in (
        "entries", "skipped", "tensors", "tensor_frees", "segments", "before_tensors",
        "before_segments", "ooms")))


# torch 1.13 has no timed history: one line, and the log says why.
print("armed=%s" % history.state()["armed"])
history._start()

# 1: a segment, two tensors, a free of a tensor allocated before the history
trace = [entry("segment_alloc", SEG2, 2 * MiB, now_us(), "net:"),
         entry("alloc", SEG2, 4096, now_us(), "net:dense0:"),
         entry("alloc", SEG2 + 4096, 8192, now_us(), "net:dense0:"),
         entry("free_requested", SEG2 + 4096, 8192, now_us(), "net:dense0:"),
         entry("free_completed", SEG2 + 4096, 8192, now_us(), "net:dense0:"),
         entry("free_completed", SEG2 + 65536, 1024, now_us())]
convert({"segments": [segment(SEG1, [(SEG1, 2048)]), segment(SEG2, [(SEG2, 4096)])],
         "device_traces": [list(trace)]})

# 2: the ring grew: a tensor, the free of one of snapshot 1, an OOM
trace += [entry("alloc", SEG2 + 8192, 16384, now_us(), "net:dense1:"),
          entry("free_completed", SEG2, 4096, now_us(), "net:dense0:"),
          entry("oom", 1 * MiB, 1 << 30, now_us(), "net:dense1:")]
convert({"segments": [segment(SEG1, [(SEG1, 2048)]), segment(SEG2, [(SEG2 + 8192, 16384)])],
         "device_traces": [list(trace)]})

# 3: a torch without _set_memory_metadata: scopes by time on this thread
_memflow.torch_scope_listener(None, True)
_memflow.torch_history_note(history.NOTE_SCOPES, history.SCOPES_BY_TIME)
with profiler.scope("net"):
    t_net = now_us()
    with profiler.scope("dense0"):
        t_dense0 = now_us()
        now_us()
    now_us()
t_after = now_us()
trace += [entry("alloc", SEG2 + 32768, 1024, t_net),
          entry("alloc", SEG2 + 40960, 2048, t_dense0),
          entry("alloc", SEG2 + 49152, 512, t_after)]
convert({"segments": [segment(SEG1, [(SEG1, 2048)]),
                      segment(SEG2, [(SEG2 + 8192, 16384), (SEG2 + 32768, 1024),
                                     (SEG2 + 40960, 2048), (SEG2 + 49152, 512)])],
         "device_traces": [list(trace)]})

# the allocator's metadata follows the module scope (a torch that has it)
told = []
_memflow.torch_scope_listener(told.append, False)
_memflow.scope_push("net")
_memflow.scope_push("dense0")
_memflow.scope_pop()
_memflow.scope_pop()


def backward():
    """autograd's thread: the backward's scope, while this thread waits (the
    allocator's metadata is one per device: it follows this thread too)"""
    _memflow.scope_push_whole("backward:net:dense0:")
    _memflow.scope_pop()


autograd = threading.Thread(target=backward)
autograd.start()
autograd.join()
_memflow.torch_scope_listener(None, False)
print("metadata=%s" % ",".join(repr(t) for t in told))

# torch's OOM observer with the history off: the failure itself
history._on_oom(0, 1 << 30, 8 << 30, 1 << 20)

# a refused snapshot: the message with its offset, a ValueError
try:
    _memflow.torch_history(b"\x80\x02K\x01)R.")
except ValueError as e:
    print("refused=%s" % e)
sys.stdout.flush()
