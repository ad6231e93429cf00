# tests/sanitize.mk - the unit suites of the analysis half built again with
# AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer (stopping at
# the first report), by FUZZ_CC (configure: the compiler that links
# -fsanitize=fuzzer also has these); tests/sanitize.sh runs them, or skips
# and says why.  The library sources are compiled once into
# tests/san/obj/, each suite links them.
SAN_FLAGS = -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_LIB_FILES = $(libmemflow_la_SOURCES) $(libmemflow_analysis_la_SOURCES)
SAN_SUITES = tests/san/check_model tests/san/check_reader tests/san/check_parts \
	tests/san/check_escape tests/san/check_svg
TESTS += tests/sanitize.sh
EXTRA_DIST += tests/sanitize.sh
if HAVE_FUZZER
check_SCRIPTS += $(SAN_SUITES)
CLEANFILES += $(SAN_SUITES) tests/san/obj.stamp tests/san/obj/*.o
tests/san/obj.stamp: $(SAN_LIB_FILES)
	@rm -rf tests/san/obj && $(MKDIR_P) tests/san/obj
	$(AM_V_CC)top=`cd $(srcdir) && pwd`; build=`pwd`; srcs=; for f in $(SAN_LIB_FILES); do \
	  case $$f in *.c) case " $$srcs " in *" $$top/$$f "*) ;; \
	    *) srcs="$$srcs $$top/$$f" ;; esac ;; esac; done; \
	cd tests/san/obj && $(FUZZ_CC) -c $(SAN_FLAGS) -D_GNU_SOURCE -I$$build/include -I$$top/include \
	  -I$$top/common -I$$top/runtime $(ANALYZE_INCLUDES:-I$(srcdir)/%=-I$$top/%) -I$$top/render -DMEMFLOW_PKGLIBDIR='"$(pkglibdir)"' -DMEMFLOW_BINDIR='"$(bindir)"' -DMEMFLOW_PYTHONDIR='"$(pythondir)"' \
	  -DMF_LIBUNWIND_SONAME='"$(LIBUNWIND_SONAME)"' $(LIBUNWIND_CFLAGS) \
	  -pthread $(CAIRO_CFLAGS) $(LIBDW_CFLAGS) $(ZSTD_CFLAGS) $$srcs
	@touch $@
SAN_LINK = $(FUZZ_CC) $(SAN_FLAGS) $(AM_CPPFLAGS) $(CHECK_CFLAGS) $(CAIRO_CFLAGS) -pthread -o $@
SAN_LIBS = tests/san/obj/*.o $(CHECK_LIBS) $(CAIRO_LIBS) $(LIBDW_LIBS) $(ZSTD_LIBS) -lstdc++ -lm -ldl -pthread
tests/san/check_model: tests/check_model.c tests/san/obj.stamp
	$(AM_V_CCLD)$(SAN_LINK) $(srcdir)/tests/check_model.c $(SAN_LIBS)
tests/san/check_reader: tests/check_reader.c tests/san/obj.stamp
	$(AM_V_CCLD)$(SAN_LINK) $(srcdir)/tests/check_reader.c $(SAN_LIBS)
tests/san/check_parts: tests/check_parts.c tests/san/obj.stamp
	$(AM_V_CCLD)$(SAN_LINK) $(srcdir)/tests/check_parts.c $(SAN_LIBS)
tests/san/check_escape: tests/check_escape.c tests/san/obj.stamp
	$(AM_V_CCLD)$(SAN_LINK) $(srcdir)/tests/check_escape.c $(SAN_LIBS)
tests/san/check_svg: tests/check_svg.c tests/svg_models.c tests/san/obj.stamp
	$(AM_V_CCLD)$(SAN_LINK) $(RSVG_CFLAGS) $(srcdir)/tests/check_svg.c \
	  $(srcdir)/tests/svg_models.c $(SAN_LIBS) $(RSVG_LIBS)
endif
