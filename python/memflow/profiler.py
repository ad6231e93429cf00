"""memflow.profiler - MXNet's profiler API (mxnet.profiler) on memflow.

Replace ``from mxnet import profiler`` with ``from memflow import profiler``:
``set_config``, ``set_state``, ``pause``, ``resume``, ``dump``, ``dumps`` and
``scope`` take MXNet's arguments, and Domain, Task, Frame, Event, Counter and
Marker are MXNet's objects.  What they record goes into memflow's log;
``dump()`` writes memory_flow.svg, the Chrome trace (tasks and frames as
async spans, events as spans, counters, markers as instants), the
statistics and MXNet's GPU memory CSV.  Errors are ValueError or TypeError
with a message that names the key or value.
"""
import os
import sys

from . import _memflow

__all__ = ["set_config", "set_state", "pause", "resume", "dump", "dumps", "scope",
           "current_scope", "Domain", "Task", "Frame", "Event", "Counter", "Marker"]

# scope(name='<unk>:', append_mode=True): a context manager, per thread and
# per contextvars context; entering returns the name (with its ':').
scope = _memflow.scope

# MXNet keys memflow accepts with no effect (it profiles memory, not MXNet's
# engine): name -> accepted values.
_BOOLEANS = (True, False, 1, 0, "1", "0", "true", "false", "True", "False")
_MXNET_ONLY_KEYS = {
    "profile_symbolic": _BOOLEANS,
    "profile_imperative": _BOOLEANS,
    "profile_process": ("worker", "server"),
}


def _text(value):
    """A configuration value as memflow's C API takes it."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _check_process(fn, profile_process):
    if profile_process not in ("worker", "server"):
        raise ValueError("memflow.profiler.%s: bad profile_process %r; accepted: "
                         "'worker', 'server'" % (fn, profile_process))


def _error(fn, exc):
    """The C API's message with the Python name of the call in front."""
    text = str(exc)
    for c_name in ("memflow_set_config", "memflow_set_state", "memflow_dumps",
                   "memflow_dump"):
        if text.startswith(c_name + ":"):
            text = text[len(c_name) + 1:].lstrip()
    return ValueError("memflow.profiler.%s: %s" % (fn, text))


def set_config(**kwargs):
    """Set configuration keys, MXNet's profiler.set_config(**kwargs).

    memflow's keys: filename, path, format, formats, profile_all,
    profile_memory, profile_api, profile_device, continuous_dump, dump_period,
    aggregate_stats, gpu_memory_profile_filename_prefix, sample_rate,
    torch_scopes.  MXNet's profile_symbolic, profile_imperative and
    profile_process are accepted and have no effect.  All keys are applied or
    none: an unknown key or a bad value raises ValueError naming it.
    """
    keys, values = [], []
    for key, value in kwargs.items():
        accepted = _MXNET_ONLY_KEYS.get(key)
        if accepted is not None:
            if value not in accepted:
                raise ValueError("memflow.profiler.set_config: bad value %r for key %r; "
                                 "accepted: %s" % (value, key,
                                                   ", ".join(repr(a) for a in accepted)))
            continue
        keys.append(key.encode())
        values.append(_text(value).encode())
    try:
        _memflow.set_config(tuple(keys), tuple(values))
    except ValueError as e:
        raise _error("set_config", e) from None


_warned_cpu = False


def _say_once_cpu_needs_memflow_run():
    """Without CPU heap capture (not under memflow run): the log notes it
    (each start: the pictures' titles say it), stderr once."""
    global _warned_cpu
    if _memflow.cpu_capture():
        return
    _memflow.note_cpu_heap_off()
    if _warned_cpu:
        return
    _warned_cpu = True
    sys.stderr.write(
        "memflow: this process records scopes, trace objects, GPU memory (CUPTI) and "
        "record_alloc() blocks, but not its CPU heap: for that, run it as "
        "`memflow run -- %s ...`\n" % os.path.basename(sys.executable or "python3"))


def _arm_gpu_capture():
    """GPU capture in a process not under memflow run: name memflow's CUPTI
    plugin in CUDA_INJECTION64_PATH (unless set), so that the driver loads it
    when the program initializes CUDA; if CUDA is loaded already, set_state
    loads that same file (a second start of the one plugin does nothing).
    Child processes inherit the variable."""
    if not os.environ.get("CUDA_INJECTION64_PATH"):
        plugin = _memflow.gpu_plugin()
        if plugin:
            os.environ["CUDA_INJECTION64_PATH"] = plugin


def set_state(state="stop", profile_process="worker"):
    """Start ('run') or stop ('stop') recording, MXNet's profiler.set_state.

    The first 'run' opens the log <path>/memflow-<pid>.mfl.
    """
    _check_process("set_state", profile_process)
    if state not in ("run", "stop"):
        raise ValueError("memflow.profiler.set_state: bad state %r; accepted: 'run', 'stop'"
                         % (state,))
    if state == "run":
        _arm_gpu_capture()
    try:
        _memflow.set_state(state == "run")
    except ValueError as e:
        raise _error("set_state", e) from None
    if state == "run":
        _say_once_cpu_needs_memflow_run()
        if "torch" in sys.modules:  # PyTorch's allocator history (tensors)
            from . import torch_history
            torch_history.arm()


def pause(profile_process="worker"):
    """Pause recording without closing anything."""
    _check_process("pause", profile_process)
    _memflow.pause(True)


def resume(profile_process="worker"):
    """Resume recording after pause()."""
    _check_process("resume", profile_process)
    _memflow.pause(False)


def dump(finished=True, profile_process="worker"):
    """Flush the log and write the configured outputs into the path key's folder.

    finished=True (MXNet's default) also marks the log complete and stops
    recording.
    """
    _check_process("dump", profile_process)
    if "memflow.torch_history" in sys.modules:  # the tensors so far
        sys.modules["memflow.torch_history"].flush()
    try:
        _memflow.dump(bool(finished))
    except ValueError as e:
        raise _error("dump", e) from None


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The statistics so far as a str, MXNet's profiler.dumps.

    format 'table' or 'json'; sort_by 'total', 'avg', 'min', 'max' or
    'count'; ascending sorts small first; reset=True starts the statistics
    afresh afterwards.
    """
    try:
        return _memflow.dumps(bool(reset), format, sort_by, bool(ascending))
    except ValueError as e:
        raise _error("dumps", e) from None


def current_scope():
    """The current scope of this thread and context ('<unk>:' by default)."""
    return _memflow.current_scope()


# MXNet's older names.
profiler_set_config = set_config
profiler_set_state = set_state
dump_profile = dump


class Domain:
    """A category for tasks, frames, counters and markers (MXNet's Domain)."""

    def __init__(self, name):
        self.name = name
        self.handle = _memflow.domain_create(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


def _domain_handle(domain):
    if domain is None:
        return None
    if not isinstance(domain, Domain):
        raise TypeError("domain must be a memflow.profiler.Domain, not %s"
                        % type(domain).__name__)
    return domain.handle


class StartStopContext:
    """`with x:` calls x.start() and, however the block ends, x.stop()."""

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False


class _Span(StartStopContext):
    """A task, frame or event: each start() .. stop() is one span.  Also a
    context manager (a memflow addition)."""
    _kind = None

    def __init__(self, domain, name):
        self.name = name
        self.domain = domain
        self.handle = _memflow.object_create(self._kind, _domain_handle(domain), name)

    def start(self):
        _memflow.object_span(self.handle, True)

    def stop(self):
        _memflow.object_span(self.handle, False)

    def __str__(self):
        return self.name


class Task(_Span):
    """A task in a domain: an async span in the trace (MXNet's Task)."""
    _kind = 0


class Frame(_Span):
    """A frame in a domain: an async span in the trace (MXNet's Frame)."""
    _kind = 1


class Event(_Span):
    """An event: a span on the thread that starts and stops it (MXNet's Event)."""
    _kind = 2

    def __init__(self, name):
        super().__init__(None, name)


class Counter:
    """A counter in a domain: a series of values in the trace (MXNet's Counter)."""

    def __init__(self, domain, name, value=None):
        self.name = name
        self.domain = domain
        self.handle = _memflow.object_create(3, _domain_handle(domain), name)
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        _memflow.counter_change(self.handle, int(value), False)

    def increment(self, delta=1):
        _memflow.counter_change(self.handle, int(delta), True)

    def decrement(self, delta=1):
        _memflow.counter_change(self.handle, -int(delta), True)

    @property
    def value(self):
        """The counter's current value (a memflow addition)."""
        return _memflow.counter_value(self.handle)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


# MXNet's marker scopes; "task" and "marker" show on the thread.
_MARKER_SCOPES = {"thread": 0, "process": 1, "global": 2, "task": 0, "marker": 0}


class Marker:
    """A named instant in a domain (MXNet's Marker)."""

    def __init__(self, domain, name):
        self.name = name
        self.domain = domain
        self._domain_handle = _domain_handle(domain)

    def mark(self, scope="process"):
        """Record the instant, shown on the 'thread', the 'process' or 'global'."""
        code = _MARKER_SCOPES.get(scope)
        if code is None:
            raise ValueError("memflow.profiler.Marker.mark: bad scope %r; accepted: %s"
                             % (scope, ", ".join(repr(s) for s in _MARKER_SCOPES)))
        _memflow.mark(self._domain_handle, self.name, code)

    def __str__(self):
        return self.name
