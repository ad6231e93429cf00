"""memflow.torch_history - PyTorch's CUDA allocator history in memflow's log.

With the caching allocator on, the GPU capture (CUPTI) sees only the
allocator's segments.  When a profiled program initialises CUDA, this module
turns on the allocator's history (``torch.cuda.memory._record_memory_history``,
a ring of ``torch_history`` entries, 100000 by default) and writes it into
memflow's log - at ``dump()``, at exit and at an out-of-memory error - as the
tensors inside their segments: ``pickle.dumps(torch.cuda.memory._snapshot())``
handed to the extension, which reads it as data with the same conversion as
``memflow import`` (no unpickling in Python).

Tensor scopes are the module scopes (``net:dense0:``): where torch has
``_set_memory_metadata``, the allocator's metadata is set to the module scope
whenever it changes, so every entry carries it (exact); otherwise each entry
takes the scope current at its time on the thread that runs the modules.  The
log says which (NOTE 41).

The program may call ``_record_memory_history`` itself (to dump its own
snapshot): memflow writes what it recorded before each such call, and when
the call turns the trace off, turns it back on for itself (one line on
stderr), so the log's history has no gap.

It stays off, in one line on stderr, when another tool already records the
history (its entries are there before memflow turns it on) or when torch is
older than 2.2 (no ``time_us``): GPU memory is then the segments CUPTI sees.
``memflow run`` arms it when the program imports torch (unless torch_scopes or
torch_history is 0); ``memflow.profiler.set_state('run')`` and
``memflow.Profiler`` arm it when torch is imported already.
"""
import atexit
import functools
import inspect
import pickle
import sys
import threading

from . import _memflow

__all__ = ["arm", "flush", "state"]

NOTE_SCOPES, NOTE_HISTORY, NOTE_OFF = 41, 42, 43
NOTE_PROFILER_NO_CUDA = 45   # written by memflow.torch when torch.profiler starts
SCOPES_METADATA, SCOPES_BY_TIME = 1, 2
OFF_OTHER_TOOL, OFF_TOO_OLD, OFF_FAILED = 1, 2, 3

_lock = threading.Lock()
_state = {"armed": False, "on": False, "scopes": None, "off": None, "retaken": 0}
_torch = None


def state():
    """What the history does in this process: a dict with armed, on,
    scopes ('metadata', 'by_time' or None), off (why it is off, or None) and
    retaken (how many times the program turned it off and memflow back on)."""
    return dict(_state)


def _say(text):
    sys.stderr.write("memflow: %s\n" % text)


def _off(code, why):
    _state["off"] = why
    _say("PyTorch's allocator history is off: %s; GPU memory is recorded at the segment "
         "level (CUPTI)" % why)
    try:
        _memflow.torch_history_note(NOTE_OFF, code)
    except ValueError:
        pass


def _version(torch):
    try:
        return tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    except ValueError:
        return (0, 0)


def _scopes(mem):
    """Tensor scopes: the allocator's metadata follows the module scope, or
    the scope changes of this thread are remembered by time."""
    setter = getattr(mem, "_set_memory_metadata", None)
    if setter is not None:
        _memflow.torch_scope_listener(setter, False)
        _state["scopes"] = "metadata"
        _memflow.torch_history_note(NOTE_SCOPES, SCOPES_METADATA)
    else:
        _memflow.torch_scope_listener(None, True)
        _state["scopes"] = "by_time"
        _memflow.torch_history_note(NOTE_SCOPES, SCOPES_BY_TIME)


def _on_oom(device, requested, device_limit, device_free):
    """torch's out-of-memory observer: the history (with its oom entry) goes
    into the log now; without the history, the failure itself."""
    if _state["on"]:
        flush()
    else:
        _memflow.torch_oom(int(device), int(requested), int(device_limit), int(device_free))


def _observe_oom(torch):
    attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
    if attach is not None:
        attach(_on_oom)


def _start():
    """CUDA is initialised: turn the history on (or say why not)."""
    torch = _torch
    entries = _memflow.torch_history_entries()
    mem = torch.cuda.memory
    record = getattr(mem, "_record_memory_history", None)
    snapshot = getattr(mem, "_snapshot", None)
    try:
        _observe_oom(torch)
    except Exception:  # an observer is a help, never a requirement
        pass
    if record is None or snapshot is None or _version(torch) < (2, 2) or \
            "max_entries" not in inspect.signature(record).parameters:
        return _off(OFF_TOO_OLD, "torch %s has no timed history (torch >= 2.2 has it)"
                    % torch.__version__)
    try:
        if any(snapshot().get("device_traces") or []):
            return _off(OFF_OTHER_TOOL, "another tool already records it")
        _record_own(record)
        _scopes(mem)
    except Exception as e:  # never break the program
        return _off(OFF_FAILED, "turning it on failed (%s)" % e)
    _state["on"] = True
    _memflow.torch_history_note(NOTE_HISTORY, entries)
    atexit.register(flush)


def _record_own(record):
    """The history with memflow's settings (a ring of torch_history entries)."""
    record(enabled="all", context="all", stacks="python",
           max_entries=_memflow.torch_history_entries())


def _program_record(original):
    """torch.cuda.memory._record_memory_history as the program calls it once
    memflow has armed: while memflow's history is on, what it recorded goes
    into the log first (the call may clear the ring), then the program's call
    runs as given; a call that stops the trace (enabled None or "state") is
    followed by memflow's own, so the history in the log has no gap."""
    @functools.wraps(original)
    def _record_memory_history(enabled="all", *args, **kwargs):
        if not _state["on"]:
            return original(enabled, *args, **kwargs)
        flush()
        result = original(enabled, *args, **kwargs)
        if enabled not in ("all", True):
            _record_own(original)
            if not _state["retaken"]:
                _say("the program turned PyTorch's allocator history off (enabled=%r): "
                     "memflow wrote what it had recorded and turned it back on for "
                     "itself" % (enabled,))
            _state["retaken"] += 1
        return result
    _record_memory_history.memflow_original = original
    return _record_memory_history


def _watch_program_calls(mem):
    """Put _program_record in place of torch.cuda.memory._record_memory_history
    (at arm time: before the program's own `from torch.cuda.memory import`)."""
    record = getattr(mem, "_record_memory_history", None)
    if record is not None and not hasattr(record, "memflow_original"):
        mem._record_memory_history = _program_record(record)


def arm(torch=None):
    """Turn the history on when this process initialises CUDA (now if it
    has); once.  Does nothing when the torch_history key is 0."""
    global _torch
    if _state["armed"] or not _memflow.torch_history_entries():
        return
    torch = torch or sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not hasattr(cuda, "_lazy_call"):
        return
    _state["armed"] = True
    _torch = torch
    try:
        _watch_program_calls(getattr(cuda, "memory", None))
        if cuda.is_initialized():
            _start()
        else:
            cuda._lazy_call(_start)
    except Exception as e:  # never break the program
        _off(OFF_FAILED, "arming it failed (%s)" % e)


def flush():
    """Write the history entries not yet in the log (at dump(), at exit, at
    an out-of-memory error).  Returns what the conversion did (a dict), or
    None when the history is off."""
    if not _state["on"] or _memflow.log_path() is None:
        return None
    with _lock:
        try:
            data = pickle.dumps(_torch.cuda.memory._snapshot(), protocol=4)
            return _memflow.torch_history(data)
        except Exception as e:  # never break the program
            _say("PyTorch's allocator history could not be written: %s" % e)
            return None
