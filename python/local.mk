# python/ - the memflow Python package: memflow.profiler (mxnet.profiler's
# API), memflow.Profiler (MegEngine's), memflow.torch (PyTorch module
# scopes) over the extension module memflow._memflow (binding.c, stable ABI:
# one _memflow.abi3.so for every CPython >= 3.9).  `make install` puts the
# package where $(PYTHON) finds it; the start-up file that `memflow run`
# puts on PYTHONPATH (python/startup/sitecustomize.py) goes to
# $(pkglibdir)/python, out of every interpreter's default path.
#
# The build tree is usable as is: python/ holds the package with the
# extension linked in (python/memflow/_memflow.abi3.so), so
# PYTHONPATH=$(builddir)/python works and `memflow run` finds both there.
MEMFLOW_PY_SOURCES = \
	python/memflow/__init__.py \
	python/memflow/profiler.py \
	python/memflow/megengine.py \
	python/memflow/torch.py
EXTRA_DIST += $(MEMFLOW_PY_SOURCES) python/startup/sitecustomize.py
# The Python samples (docs/PYTHON.md), run by tests/python_samples.sh.
EXTRA_DIST += samples/python/mxnet_profiler.py samples/python/megengine_profiler.py \
	samples/python/torch_mlp.py

if HAVE_PYTHON
memflowpydir = $(pythondir)/memflow
memflowpy_PYTHON = $(MEMFLOW_PY_SOURCES)

memflowpyexecdir = $(pyexecdir)/memflow
memflowpyexec_LTLIBRARIES = python/memflow/_memflow.la
python_memflow__memflow_la_SOURCES = python/binding.c python/pystacks.c python/pystacks.h \
	python/pywalk.c python/pywalk.h
python_memflow__memflow_la_CPPFLAGS = $(AM_CPPFLAGS) $(PYTHON_EXT_CPPFLAGS) \
	-DPy_LIMITED_API=0x03090000
python_memflow__memflow_la_CFLAGS = $(AM_CFLAGS) -pthread
python_memflow__memflow_la_LIBADD = libmemflow.la -ldl
python_memflow__memflow_la_LDFLAGS = -module -avoid-version -shared -shrext .abi3.so -pthread

memflowstartupdir = $(pkglibdir)/python
memflowstartup_DATA = python/startup/sitecustomize.py

# The build tree as a package folder: the extension next to the sources
# (copies of them when building outside the source tree).
PYTHON_LOCAL_TARGETS = python-build-tree
python-build-tree: python/memflow/_memflow.la $(MEMFLOW_PY_SOURCES) python/startup/sitecustomize.py
	$(AM_V_at)if test "$(srcdir)" != "."; then \
	  $(MKDIR_P) python/memflow python/startup && \
	  for f in $(MEMFLOW_PY_SOURCES) python/startup/sitecustomize.py; do \
	    cp -f "$(srcdir)/$$f" "$$f" || exit 1; done; fi
	$(AM_V_at)ln -sf .libs/_memflow.abi3.so python/memflow/_memflow.abi3.so

# `make installcheck`: the installed package imports from where it was put
# (on the interpreter's own path for the default prefix) and finds the
# installed libmemflow; the installed `memflow run` makes it importable and
# records a scope's bytes exactly.
PYTHON_INSTALLCHECK = python-installcheck
python-installcheck:
	rm -rf installcheck-python && mkdir installcheck-python
	cd installcheck-python && PYTHONPATH="$(pythondir)" $(PYTHON) -c \
	  "import memflow; assert memflow.__file__.startswith('$(pythondir)/'), memflow.__file__"
	cd installcheck-python && $(bindir)/memflow run --no-render -o run -- $(PYTHON) -c \
	  "from memflow import profiler, _memflow; profiler.scope('x').__enter__(); \
	   print(_memflow.thread_scope(), _memflow.__file__)" > out.txt
	grep -q "^x: $(pyexecdir)/memflow/_memflow.abi3.so$$" installcheck-python/out.txt
	rm -rf installcheck-python
endif

all-local: $(PYTHON_LOCAL_TARGETS)
installcheck-local: $(PYTHON_INSTALLCHECK)
clean-local: python-clean
python-clean:
	rm -f python/memflow/_memflow.abi3.so
	rm -rf python/memflow/__pycache__ python/startup/__pycache__
	if test "$(srcdir)" != "."; then rm -f $(MEMFLOW_PY_SOURCES) python/startup/sitecustomize.py; fi
.PHONY: python-build-tree python-installcheck python-clean
