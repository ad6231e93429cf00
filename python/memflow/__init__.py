"""memflow - see where memory went, CPU and GPU, on one clock.

The Python front of memflow, a memory-flow profiler:

* ``memflow.profiler`` answers to MXNet's ``mxnet.profiler`` (``set_config``,
  ``set_state``, ``scope``, ``dump``, ``dumps``, ``pause``, ``resume``, and the
  Domain/Task/Frame/Event/Counter/Marker objects): change the import and the
  tutorial's calls produce memflow's outputs.
* ``memflow.Profiler`` (alias ``memflow.profile``) answers to MegEngine's
  ``Profiler(path=, format=, formats=, sample_rate=, profile_device=)``, as a
  decorator or a ``with`` block.
* ``memflow.torch`` names PyTorch modules as scopes (``net:dense0:``,
  ``backward:net:dense0:``); ``memflow run`` turns it on with no code change.

CPU heap allocations are recorded when the program runs under
``memflow run -- python3 prog.py``; GPU memory (CUPTI), scopes, trace objects
and ``record_alloc``/``record_free`` blocks are recorded in any process.
See docs/PYTHON.md.
"""
import sys

if sys.version_info < (3, 9):
    raise ImportError("memflow needs Python 3.9 or newer; this is Python %d.%d"
                      % sys.version_info[:2])

from . import _memflow
from . import profiler
from .megengine import Profiler, profile

__version__ = _memflow.VERSION
__all__ = ["profiler", "Profiler", "profile", "record_alloc", "record_free"]

ALLOC_REUSED = 0x1  # MEMFLOW_ALLOC_REUSED: the block came from a cache


def record_alloc(device, addr, requested, actual=None, name=None, reused=False):
    """Record a block of a custom allocator (a pool, a GPU sub-allocator).

    device is "cpu/0" or "gpu/N"; addr the block's address (an int);
    requested what was asked for, actual what the allocator handed out
    (default: requested); name an optional label ("weight"); reused True when
    the block came from the allocator's cache.  The block carries the current
    scope.  Recorded while the profiler runs.
    """
    _memflow.record_alloc(device, addr, requested,
                          requested if actual is None else actual, name,
                          ALLOC_REUSED if reused else 0)


def record_free(device, addr):
    """Record that a block reported by record_alloc() was freed."""
    _memflow.record_free(device, addr)
