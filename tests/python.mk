# tests/python.mk - tests of the trace-object API (runtime/objects.c) and of
# the Python package (python/): the API in-process, under `memflow run`,
# PyTorch module scopes, other interpreters.
check_PROGRAMS += tests/tracecheck
tests_tracecheck_SOURCES = tests/tracecheck.c
if HAVE_CHECK
check_PROGRAMS += tests/check_objects
tests_check_objects_SOURCES = tests/check_objects.c
tests_check_objects_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_objects_LDADD = libmemflow.la $(CHECK_LIBS) -lpthread
tests_check_objects_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/check_objects
endif
check_PROGRAMS += tests/blocks
tests_blocks_SOURCES = tests/blocks.c
tests_blocks_LDADD = libmemflow-analysis.la libmemflow.la
tests_blocks_LDFLAGS = $(TEST_LINK_FLAGS)

# The Python tests run the interpreter configure chose (PYTHON), the system
# python3 by default.
AM_TESTS_ENVIRONMENT += PYTHON='$(PYTHON)'; export PYTHON;
TESTS += tests/python_api.sh tests/python_samples.sh tests/python_torch.sh \
	tests/python_interpreters.sh tests/python_trace_chrome.sh tests/python_stacks.sh tests/python_names.sh \
	tests/torch_live.sh tests/torch_roles.sh tests/torch_program_history.sh tests/python_steps.sh \
	tests/torch_profiler_cupti.sh \
	tests/launcher_summary.sh
EXTRA_DIST += tests/python_lib.sh tests/python_api.py tests/python_api.sh \
	tests/python_samples.sh tests/python_torch.py tests/python_torch.sh \
	tests/python_interpreters.sh tests/python_trace_chrome.sh tests/python_stacks.sh \
	tests/python_stacks.py tests/python_names.sh tests/python_names.py tests/torch_live.sh \
	tests/torch_live.py tests/torch_program_history.sh tests/torch_program_history.py tests/torch_roles.sh tests/torch_roles.py tests/python_steps.sh \
	tests/python_steps.py tests/python_exit.py tests/torch_profiler_cupti.sh tests/torch_profiler_cupti.py \
	tests/launcher_summary.sh tests/launcher.sh
