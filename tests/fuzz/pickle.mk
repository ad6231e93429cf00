# tests/fuzz/pickle.mk - the libFuzzer target of the pickle reader and the
# snapshot walker (tests/fuzz/fuzz_pickle.c), built with FUZZ_CC from
# their sources, instrumented; fuzz_pickle.sh runs it a bounded number of
# times in `make check` from a seed corpus of snapshots, or skips and says why.
FUZZ_PICKLE_FILES = tests/fuzz/fuzz_pickle.c $(TORCH_SOURCES)
TESTS += tests/fuzz/fuzz_pickle.sh
EXTRA_DIST += tests/fuzz/fuzz_pickle.sh tests/fuzz/fuzz_pickle.c tests/fuzz/pickle_regressions.txt
if HAVE_FUZZER
check_SCRIPTS += tests/fuzz/fuzz_pickle
CLEANFILES += tests/fuzz/fuzz_pickle
tests/fuzz/fuzz_pickle: $(FUZZ_PICKLE_FILES)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)srcs=; for f in $(FUZZ_PICKLE_FILES); do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f" ;; esac; done; \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(AM_CPPFLAGS) -o $@ $$srcs
endif
