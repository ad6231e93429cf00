"""memflow run's Python start-up (not a module to import yourself).

`memflow run` puts this file's folder first on PYTHONPATH and names the
folder that holds the memflow package in MEMFLOW_PYTHONPATH.  Every Python
interpreter the program starts then, at start-up:

1. finds `import memflow` in that folder, whatever the interpreter (system,
   pyenv, venv), without putting the folder's other packages on its path;
2. records the Python call stack of every allocation: it loads the
   extension memflow._memflow (alone, not the package) and starts its
   profile function, unless the configuration key python_stacks is off;
3. when the program imports torch (never before: a program that does not
   use torch pays nothing), names its modules as scopes (memflow.torch),
   unless the configuration key torch_scopes is off;
4. runs the sitecustomize this file hides (Debian ships one), as if this
   file were not there.

Python < 3.9 (memflow does not support it) only gets step 4.  This file
keeps to syntax that Python 2.7 parses.
"""
import os
import sys


def _memflow_finder_class(package_parent):
    import importlib.machinery

    class MemflowFinder(object):
        """Finds the top-level memflow package in memflow run's folder."""

        def find_spec(self, name, path=None, target=None):
            if name != "memflow":
                return None
            return importlib.machinery.PathFinder.find_spec(name, [package_parent])

    return MemflowFinder


def _torch_watcher_class():
    class TorchWatcher(object):
        """Turns memflow.torch on right after `import torch` has finished."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch" or getattr(self, "busy", False):
                return None
            self.busy = True
            try:
                spec = self.spec_from_others(name, path, target)
            finally:
                self.busy = False
            if spec is not None and spec.loader is not None and \
                    hasattr(spec.loader, "exec_module"):
                spec.loader = WatchedLoader(spec.loader, self)
            return spec

        def spec_from_others(self, name, path, target):
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    return spec
            return None

    class WatchedLoader(object):
        def __init__(self, loader, watcher):
            self.loader = loader
            self.watcher = watcher

        def create_module(self, spec):
            return self.loader.create_module(spec)

        def exec_module(self, module):
            self.loader.exec_module(module)
            if self.watcher in sys.meta_path:
                sys.meta_path.remove(self.watcher)
            import memflow.torch
            memflow.torch._enable_at_import()

        def __getattr__(self, name):
            return getattr(self.loader, name)

    return TorchWatcher


def _memflow_python_stacks(package_parent):
    """Load memflow._memflow by itself and start Python stacks (key python_stacks)."""
    import importlib.machinery
    import importlib.util
    package = os.path.join(package_parent, "memflow")
    spec = importlib.machinery.PathFinder.find_spec("_memflow", [package])
    if spec is None or spec.origin is None:
        return
    spec = importlib.util.spec_from_file_location("memflow._memflow", spec.origin)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["memflow._memflow"] = module
    mode = module.python_stacks()  # 0 off, 1 where cheap (3.11's walker), 2 everywhere
    if not mode:
        return
    how = module.python_stacks_start((package, os.path.dirname(os.path.abspath(__file__))),
                                     mode == 2)
    if how == "profile":  # threads started later install the profile function too
        import threading
        threading.setprofile(module._thread_profile_bootstrap)


def _memflow_install():
    package_parent = os.environ.get("MEMFLOW_PYTHONPATH")
    if sys.version_info < (3, 9) or not package_parent:
        return
    sys.meta_path.insert(0, _memflow_finder_class(package_parent)())
    sys.meta_path.insert(0, _torch_watcher_class()())
    try:
        _memflow_python_stacks(package_parent)
    except Exception as e:  # never break the program
        sys.stderr.write("memflow: Python stacks are off: %s\n" % (e,))


def _memflow_run_hidden_sitecustomize():
    here = os.path.dirname(os.path.realpath(__file__))
    path = [p for p in sys.path if os.path.realpath(p or ".") != here]
    if sys.version_info >= (3, 4):
        import importlib.machinery
        import importlib.util
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None or (
                spec.origin and os.path.realpath(spec.origin) == os.path.realpath(__file__)):
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        import imp
        try:
            found = imp.find_module("sitecustomize", path)
        except ImportError:
            return
        try:
            imp.load_module("_memflow_hidden_sitecustomize", *found)
        finally:
            if found[0]:
                found[0].close()


_memflow_install()
_memflow_run_hidden_sitecustomize()
