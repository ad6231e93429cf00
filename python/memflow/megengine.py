"""memflow.Profiler - MegEngine's Profiler API on memflow.

Replace ``from megengine.utils.profiler import Profiler, profile`` with
``from memflow import Profiler, profile``::

    @profile()                      # every call of train_step is profiled
    def train_step(data, label): ...

    with Profiler(path="profile", formats=["memory_flow.svg", "chrome_timeline.json"]):
        train_step(data, label)

When the block (or the decorated call) ends, the requested outputs are
written into ``path``.  Recording starts when the block starts; if the
program already recorded (``memflow run``, or an outer ``set_state('run')``)
it goes on recording after the block, else it stops.  The outputs cover the
whole log so far (blocks made before the block and freed in it included).
"""
import contextlib

from . import _memflow
from . import profiler as _profiler

__all__ = ["Profiler", "profile"]

# MegEngine options memflow accepts with no effect.
_MEGENGINE_ONLY_OPTIONS = ("num_tensor_watch", "enable_cupti")

_running = None  # the Profiler whose block is open


class Profiler(_profiler.StartStopContext, contextlib.ContextDecorator):
    """Profile a block or, as a decorator, every call of a function.

    path: the folder the outputs go to (created if missing).
    format / formats: the outputs, by memflow's names: memory_flow.svg,
        memory_flow.png, memory_flow.pdf, chrome_timeline.json, profile.json,
        stats.txt, stats.json, gpu_memory_profile.csv; formats (a list) wins
        over format, as in MegEngine.
    sample_rate: after every N allocation/free events on a device, an
        occupancy snapshot (0 = off).
    profile_device: record GPU kernels, copies and sets for the trace.
    """

    CHROME_TIMELINE = "chrome_timeline.json"

    def __init__(self, path="profile", format="chrome_timeline.json", formats=None,
                 sample_rate=0, profile_device=True, **kwargs):
        unknown = [k for k in kwargs if k not in _MEGENGINE_ONLY_OPTIONS]
        if unknown:
            raise TypeError("memflow.Profiler: unknown option %r; accepted: path, format, "
                            "formats, sample_rate, profile_device, %s"
                            % (unknown[0], ", ".join(_MEGENGINE_ONLY_OPTIONS)))
        if not formats:
            formats = (format,)
        elif isinstance(formats, str):
            formats = (formats,)
        self._path = str(path)
        self._formats = tuple(formats)
        self._options = {"sample_rate": int(sample_rate), "profile_device": bool(profile_device)}
        self._recorded_before = False

    @property
    def path(self):
        return self._path

    @property
    def directory(self):
        return self._path

    @property
    def formats(self):
        return list(self._formats)

    def start(self):
        global _running
        if _running is not None:
            raise RuntimeError("memflow.Profiler: a profiler block is already open "
                               "(blocks do not nest)")
        _profiler.set_config(path=self._path, formats=self._formats, **self._options)
        self._recorded_before = bool(_memflow.recording())
        _profiler.set_state("run")
        _running = self

    def stop(self):
        """End the block: write the outputs into path."""
        global _running
        if _running is not self:
            return
        _running = None
        _profiler.dump(finished=not self._recorded_before)

    def dump(self):
        """Write the outputs now (the block goes on)."""
        _profiler.dump(finished=False)


# MegEngine's name for the decorator: @profile() or @profile(path=...).
profile = Profiler
