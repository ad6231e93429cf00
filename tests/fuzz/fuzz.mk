# tests/fuzz/fuzz.mk - the libFuzzer target of the reader, the model and
# every output (tests/fuzz/fuzz_reader.c), built with FUZZ_CC (configure)
# from the sources of the analysis library (analyze/local.mk, with the few
# runtime files it shares), all instrumented.  fuzz.sh runs it a
# bounded number of times in `make check`, or skips and says why.
FUZZ_READER_FILES = tests/fuzz/fuzz_reader.c $(libmemflow_analysis_la_SOURCES)
TESTS += tests/fuzz/fuzz.sh
EXTRA_DIST += tests/fuzz/fuzz.sh tests/fuzz/seeds.py tests/fuzz/fuzz_reader.c tests/fuzz/lsan.supp
if HAVE_FUZZER
check_SCRIPTS += tests/fuzz/fuzz_reader
CLEANFILES += tests/fuzz/fuzz_reader
tests/fuzz/fuzz_reader: $(FUZZ_READER_FILES)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)srcs=; for f in $(FUZZ_READER_FILES); do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f" ;; esac; done; \
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(AM_CPPFLAGS) \
	  $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS) \
	  -o $@ $$srcs $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm -pthread
endif
