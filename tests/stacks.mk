# tests/stacks.mk - call stacks (memflow run --stacks) and NVTX scopes.
# stacks_workload and stacks_cxx are unmodified programs built as
# distributions build (-O2 -fomit-frame-pointer, with -g for the analysis);
# the two shared libraries they load are built here with plain rules, one of
# them stripped.  stacks_check prints the allocations of a log per
# symbolised site (analyze/symbols/symbols.c).
STACKS_TEST_CFLAGS = -O2 -fomit-frame-pointer -g
check_PROGRAMS += tests/stacks_workload tests/stacks_cxx tests/stacks_api tests/stacks_check \
	tests/stacks_paths tests/many_sites tests/frames_api
tests_stacks_workload_SOURCES = tests/stacks_workload.c
tests_stacks_workload_CFLAGS = $(AM_CFLAGS) $(STACKS_TEST_CFLAGS)
tests_stacks_workload_LDADD = -ldl
tests_stacks_paths_SOURCES = tests/stacks_paths.c
tests_stacks_paths_CFLAGS = $(AM_CFLAGS) $(STACKS_TEST_CFLAGS)
tests_many_sites_SOURCES = tests/many_sites.c
tests_many_sites_CFLAGS = $(AM_CFLAGS) $(STACKS_TEST_CFLAGS)
tests_stacks_cxx_SOURCES = tests/stacks_cxx.cc
tests_stacks_cxx_CXXFLAGS = $(STACKS_TEST_CFLAGS)
tests_stacks_api_SOURCES = tests/stacks_api.c
tests_stacks_api_CFLAGS = $(AM_CFLAGS) $(STACKS_TEST_CFLAGS)
tests_stacks_api_LDADD = libmemflow.la
tests_stacks_api_LDFLAGS = $(TEST_LINK_FLAGS)
tests_frames_api_SOURCES = tests/frames_api.c
tests_frames_api_CFLAGS = $(AM_CFLAGS) -O1 -g
tests_frames_api_LDADD = libmemflow.la
tests_frames_api_LDFLAGS = $(TEST_LINK_FLAGS)
tests_stacks_check_SOURCES = tests/stacks_check.c
tests_stacks_check_LDADD = libmemflow-analysis.la libmemflow.la
tests_stacks_check_LDFLAGS = $(TEST_LINK_FLAGS)

# The libraries stacks_workload dlopens: one with symbols, one stripped
# (its unstripped twin stays for the test to map the offset back).
STACKS_TEST_LIBS = tests/libstacks_lib.so tests/libstacks_hidden.so tests/libstacks_hidden_full.so
check_DATA = $(STACKS_TEST_LIBS)
CLEANFILES += $(STACKS_TEST_LIBS)
tests/libstacks_lib.so: tests/stacks_lib.c
	@$(MKDIR_P) tests
	$(AM_V_CC)$(CC) $(STACKS_TEST_CFLAGS) -fPIC -shared -o $@ $(srcdir)/tests/stacks_lib.c
tests/libstacks_hidden_full.so: tests/stacks_hidden.c
	@$(MKDIR_P) tests
	$(AM_V_CC)$(CC) $(STACKS_TEST_CFLAGS) -fPIC -shared -o $@ $(srcdir)/tests/stacks_hidden.c
tests/libstacks_hidden.so: tests/libstacks_hidden_full.so
	$(AM_V_GEN)$(STRIP) --strip-all -o $@ tests/libstacks_hidden_full.so

TESTS += tests/stacks_e2e.sh tests/frames_e2e.sh

# svg_pixel: librsvg reads back the pictures drawn from the stacks logs.
if HAVE_RSVG
check_PROGRAMS += tests/svg_pixel
tests_svg_pixel_SOURCES = tests/svg_pixel.c
tests_svg_pixel_CFLAGS = $(AM_CFLAGS) $(RSVG_CFLAGS) $(CAIRO_CFLAGS)
tests_svg_pixel_LDADD = libmemflow-analysis.la libmemflow.la $(RSVG_LIBS) $(CAIRO_LIBS)
tests_svg_pixel_LDFLAGS = $(TEST_LINK_FLAGS)
endif
EXTRA_DIST += tests/stacks_e2e.sh tests/frames_e2e.sh tests/stacks_lib.c tests/stacks_hidden.c tests/log_records.py \
	tests/stats_sites.py tests/flame_frames.py

# NVTX: a plain C program using the NVTX v3 headers runs under memflow run;
# its ranges must come back as scopes and trace spans.
if HAVE_NVTX
check_PROGRAMS += tests/nvtx_workload
tests_nvtx_workload_SOURCES = tests/nvtx_workload.c
tests_nvtx_workload_CPPFLAGS = $(NVTX_CFLAGS)
tests_nvtx_workload_CFLAGS = $(AM_CFLAGS) -pthread
tests_nvtx_workload_LDADD = -ldl -lpthread
TESTS += tests/nvtx_e2e.sh
# The NVTX memory API: an arena's regions become sub-blocks.
check_PROGRAMS += tests/nvtx_mem_workload
tests_nvtx_mem_workload_SOURCES = tests/nvtx_mem_workload.c
tests_nvtx_mem_workload_CPPFLAGS = $(NVTX_CFLAGS)
tests_nvtx_mem_workload_LDADD = -ldl
TESTS += tests/nvtx_mem_e2e.sh
endif
EXTRA_DIST += tests/nvtx_e2e.sh tests/nvtx_mem_e2e.sh

# check_stacks: the stack table at its bound, with its own copy of the
# runtime built for a table of 8 stacks (and the reader to read it back).
if HAVE_CHECK
check_PROGRAMS += tests/check_stacks
TESTS += tests/check_stacks
tests_check_stacks_SOURCES = tests/check_stacks.c $(RUNTIME_SOURCES)
tests_check_stacks_CPPFLAGS = $(RUNTIME_CPPFLAGS) -DMF_STACKS_MAX=8
tests_check_stacks_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) -pthread
tests_check_stacks_LDADD = libmemflow-analysis.la $(CHECK_LIBS) -ldl -lpthread
endif

# check_unwind: the recorder's own stack walk (runtime/unwind.c) against
# libunwind's, frame for frame, built as distributions build.
if HAVE_CHECK
check_PROGRAMS += tests/check_unwind
TESTS += tests/check_unwind
tests_check_unwind_SOURCES = tests/check_unwind.c runtime/unwind.c runtime/unwind.h
tests_check_unwind_CPPFLAGS = $(RUNTIME_CPPFLAGS)
tests_check_unwind_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(STACKS_TEST_CFLAGS) -pthread
tests_check_unwind_LDADD = $(CHECK_LIBS) $(LIBUNWIND_LIBS) -lpthread
endif
