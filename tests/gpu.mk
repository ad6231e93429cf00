# tests/gpu.mk - GPU capture proven without a GPU: synthetic CUPTI records
# and API callbacks through the production code (check_gpu), CUPTI's answers
# this machine cannot give (check_gpu_cupti), and the CUDA plugin's
# InitializeInjection on this driver-less machine (gpu_injection.sh), and
# the real-GPU procedure's checker on a capture made up here (gpu_check.sh).
EXTRA_DIST += tests/gpu_injection.sh tests/gpu_no_driver.sh tests/gpu_remote.sh tests/gpu_check.sh
if HAVE_CUPTI
if HAVE_CHECK
check_PROGRAMS += tests/check_gpu
TESTS += tests/check_gpu
# The capture sources are compiled in: their internals are tested too.
tests_check_gpu_SOURCES = tests/check_gpu.c tests/gpu_test_log.c tests/gpu_test_log.h \
	$(GPU_CAPTURE_SOURCES)
tests_check_gpu_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/gpu $(CUPTI_CFLAGS)
tests_check_gpu_CFLAGS = $(AM_CFLAGS) -pthread $(CHECK_CFLAGS)
tests_check_gpu_LDADD = libmemflow-analysis.la libmemflow.la $(CUPTI_LIBS) -ldl -lm $(CHECK_LIBS)
tests_check_gpu_LDFLAGS = $(TEST_LINK_FLAGS) -pthread
# CUPTI's answers a driver-less machine cannot give, given at link time.
check_PROGRAMS += tests/check_gpu_cupti
TESTS += tests/check_gpu_cupti
tests_check_gpu_cupti_SOURCES = tests/check_gpu_cupti.c tests/gpu_test_log.c \
	tests/gpu_test_log.h $(GPU_CAPTURE_SOURCES)
tests_check_gpu_cupti_CPPFLAGS = $(tests_check_gpu_CPPFLAGS)
tests_check_gpu_cupti_CFLAGS = $(tests_check_gpu_CFLAGS)
tests_check_gpu_cupti_LDADD = $(tests_check_gpu_LDADD)
tests_check_gpu_cupti_LDFLAGS = $(tests_check_gpu_LDFLAGS) \
	-Wl,--wrap=cuptiGetVersion,--wrap=cuptiSubscribe_v2,--wrap=cuptiUnsubscribe \
	-Wl,--wrap=cuptiEnableCallback,--wrap=cuptiActivityRegisterTimestampCallback \
	-Wl,--wrap=cuptiActivityRegisterCallbacks,--wrap=cuptiActivityEnable \
	-Wl,--wrap=cuptiActivityEnableAndDump,--wrap=cuptiActivityEnableAllocationSource \
	-Wl,--wrap=cuptiActivityFlushAll
endif
check_PROGRAMS += tests/gpu_inject_probe tests/gpu_log_summary
TESTS += tests/gpu_injection.sh tests/gpu_no_driver.sh tests/gpu_remote.sh tests/gpu_check.sh
# gpu_inject_probe links neither libmemflow nor CUPTI: the plugin brings them.
tests_gpu_inject_probe_SOURCES = tests/gpu_inject_probe.c
tests_gpu_inject_probe_LDADD = -ldl
tests_gpu_log_summary_SOURCES = tests/gpu_log_summary.c
tests_gpu_log_summary_CPPFLAGS = $(AM_CPPFLAGS) $(CUPTI_CFLAGS)
tests_gpu_log_summary_LDADD = libmemflow-analysis.la libmemflow.la $(CUPTI_LIBS)
tests_gpu_log_summary_LDFLAGS = $(TEST_LINK_FLAGS)
# alloc_loop as plain `nvcc` builds it, the CUDA runtime linked in
# statically (nvcc's default), for gpu_no_driver.sh.
if HAVE_NVCC
check_SCRIPTS += tests/alloc_loop_static
tests/alloc_loop_static: $(srcdir)/samples/cuda/alloc_loop.cu
	$(AM_V_GEN)$(NVCC) -o $@ $(srcdir)/samples/cuda/alloc_loop.cu
CLEANFILES += tests/alloc_loop_static
endif
endif
