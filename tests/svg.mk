# tests/svg.mk - tests of the memory_flow renderer (render/svg*.c).
# check_svg: Check suite; librsvg renders each SVG back to pixels.  The
# layout and text helpers are compiled in to test them directly.
# svg_fixture writes the pictures the hover (python3 XML) and browser
# (headless Chromium) tests look at; svg_workload is the real program the
# end-to-end test runs under `memflow run`.
check_PROGRAMS += tests/svg_fixture tests/svg_workload
tests_svg_workload_SOURCES = tests/svg_workload.c
tests_svg_workload_LDADD = libmemflow-analysis.la libmemflow.la
tests_svg_workload_LDFLAGS = $(TEST_LINK_FLAGS)
tests_svg_fixture_SOURCES = tests/svg_fixture.c tests/svg_models.c tests/svg_models.h
tests_svg_fixture_CFLAGS = $(AM_CFLAGS) $(CAIRO_CFLAGS)
tests_svg_fixture_LDADD = libmemflow-analysis.la libmemflow.la
tests_svg_fixture_LDFLAGS = $(TEST_LINK_FLAGS)
TESTS += tests/svg_hover.sh tests/svg_browser.sh tests/svg_e2e.sh
EXTRA_DIST += tests/svg_hover.sh tests/svg_browser.sh tests/svg_browser.js tests/svg_e2e.sh
if HAVE_CHECK
if HAVE_RSVG
check_PROGRAMS += tests/check_svg
TESTS += tests/check_svg
tests_check_svg_SOURCES = tests/check_svg.c tests/svg_models.c tests/svg_models.h \
	render/svg_layout.c render/svg_color.c
tests_check_svg_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS) $(RSVG_CFLAGS) $(CAIRO_CFLAGS)
tests_check_svg_LDADD = libmemflow-analysis.la libmemflow.la $(CHECK_LIBS) $(RSVG_LIBS) $(CAIRO_LIBS) -lm
tests_check_svg_LDFLAGS = $(TEST_LINK_FLAGS)
endif
endif
