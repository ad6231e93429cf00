# tests/fuzz/fuzz.mk - the libFuzzer targets of the reader, the model and
# every output (tests/fuzz/fuzz_reader.c: fuzz_reader, whose input is a live
# log's chunk starts or a whole compact log; fuzz_compact, whose input is
# the file whole) and of the dense encoding of chunks (fuzz_codec.c),
# built with FUZZ_CC (configure) from the sources of the
# analysis library (analyze/local.mk, with the few runtime files it shares),
# all instrumented.  fuzz.sh runs each a bounded number of times in `make
# check`, or skips and says why.
FUZZ_READER_FILES = tests/fuzz/fuzz_reader.c $(libmemflow_analysis_la_SOURCES)
TESTS += tests/fuzz/fuzz.sh
EXTRA_DIST += tests/fuzz/fuzz.sh tests/fuzz/seeds.py tests/fuzz/fuzz_reader.c \
	tests/fuzz/fuzz_codec.c tests/fuzz/lsan.supp
if HAVE_FUZZER
check_SCRIPTS += tests/fuzz/fuzz_reader tests/fuzz/fuzz_compact tests/fuzz/fuzz_codec
CLEANFILES += tests/fuzz/fuzz_reader tests/fuzz/fuzz_compact tests/fuzz/fuzz_codec
FUZZ_BUILD = $(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	$(AM_CPPFLAGS) $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS)
FUZZ_LINK = $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm -pthread
tests/fuzz/fuzz_reader tests/fuzz/fuzz_compact tests/fuzz/fuzz_codec: $(FUZZ_READER_FILES) \
		tests/fuzz/fuzz_codec.c
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)srcs=; for f in $(libmemflow_analysis_la_SOURCES); do \
	  case $$f in *.c) srcs="$$srcs $(srcdir)/$$f" ;; esac; done; \
	case $@ in \
	  *compact) main="-DFUZZ_WHOLE_FILE $(srcdir)/tests/fuzz/fuzz_reader.c" ;; \
	  *codec) main=$(srcdir)/tests/fuzz/fuzz_codec.c ;; \
	  *) main=$(srcdir)/tests/fuzz/fuzz_reader.c ;; esac; \
	$(FUZZ_BUILD) -o $@ $$main $$srcs $(FUZZ_LINK)
endif

# The request parser of `memflow view` (cli/view_request.c), on its own.
TESTS += tests/fuzz/fuzz_view.sh
EXTRA_DIST += tests/fuzz/fuzz_view.sh tests/fuzz/fuzz_view_request.c
if HAVE_FUZZER
check_SCRIPTS += tests/fuzz/fuzz_view_request
CLEANFILES += tests/fuzz/fuzz_view_request
tests/fuzz/fuzz_view_request: tests/fuzz/fuzz_view_request.c cli/view_request.c cli/view_request.h
	@$(MKDIR_P) tests/fuzz
	$(AM_V_CCLD)$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	  $(AM_CPPFLAGS) -I$(srcdir)/cli -o $@ $(srcdir)/tests/fuzz/fuzz_view_request.c \
	  $(srcdir)/cli/view_request.c
endif
