# tests/pickle.mk - tests of the pickle reader, the snapshot walker and
# the conversion (common/torch/local.mk): torch_import.sh (memflow import,
# every figure exact, and its refusals), check_torch_convert (Check: the
# conversion's records through a transcript sink), check_pickle (Check; fixtures written by
# tests/torch_snapshots.py with Python's own pickle), pickle.sh (the
# reader against CPython's unpickler on random data, under the sanitizers
# where configure found them; hostile pickles run nothing; no libpython),
# torch_big.sh (a million trace entries in bounded memory), and the
# libFuzzer target (tests/fuzz/pickle.mk).
if HAVE_CHECK
check_PROGRAMS += tests/check_pickle
TESTS += tests/check_pickle
tests_check_pickle_SOURCES = tests/check_pickle.c
tests_check_pickle_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_pickle_LDADD = libmemflow-torch.la $(CHECK_LIBS)
tests_check_pickle_LDFLAGS = $(TEST_LINK_FLAGS)
check_PROGRAMS += tests/check_torch_convert
TESTS += tests/check_torch_convert
tests_check_torch_convert_SOURCES = tests/check_torch_convert.c
tests_check_torch_convert_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
tests_check_torch_convert_LDADD = libmemflow-torch.la $(CHECK_LIBS)
tests_check_torch_convert_LDFLAGS = $(TEST_LINK_FLAGS)
endif
check_PROGRAMS += tests/pickle_dump tests/torch_walk tests/torch_snapshot_gen
tests_pickle_dump_SOURCES = tests/pickle_dump.c
tests_pickle_dump_LDADD = libmemflow-torch.la
tests_torch_walk_SOURCES = tests/torch_walk.c
tests_torch_walk_LDADD = libmemflow-torch.la
tests_torch_snapshot_gen_SOURCES = tests/torch_snapshot_gen.c
TESTS += tests/pickle.sh tests/torch_big.sh tests/torch_import.sh
EXTRA_DIST += tests/pickle.sh tests/torch_big.sh tests/torch_snapshots.py \
	tests/pickle_roundtrip.py tests/torch_import.sh tests/torch_import_snapshots.py

# The same tools built with AddressSanitizer and UndefinedBehaviorSanitizer
# by FUZZ_CC (the flags of tests/sanitize.mk), for pickle.sh and torch_big.sh.
PICKLE_SAN_FILES = common/torch/pickle.c common/torch/torch_snapshot.c
if HAVE_FUZZER
check_SCRIPTS += tests/san/pickle_dump tests/san/check_pickle tests/san/torch_walk
CLEANFILES += tests/san/pickle_dump tests/san/check_pickle tests/san/torch_walk
tests/san/pickle_dump: tests/pickle_dump.c $(TORCH_SOURCES)
	@$(MKDIR_P) tests/san
	$(AM_V_CCLD)$(FUZZ_CC) $(SAN_FLAGS) $(AM_CPPFLAGS) -o $@ $(srcdir)/tests/pickle_dump.c \
	  $(PICKLE_SAN_FILES:%=$(srcdir)/%)
tests/san/torch_walk: tests/torch_walk.c $(TORCH_SOURCES)
	@$(MKDIR_P) tests/san
	$(AM_V_CCLD)$(FUZZ_CC) $(SAN_FLAGS) $(AM_CPPFLAGS) -o $@ $(srcdir)/tests/torch_walk.c \
	  $(PICKLE_SAN_FILES:%=$(srcdir)/%)
tests/san/check_pickle: tests/check_pickle.c $(TORCH_SOURCES)
	@$(MKDIR_P) tests/san
	$(AM_V_CCLD)$(FUZZ_CC) $(SAN_FLAGS) $(AM_CPPFLAGS) $(CHECK_CFLAGS) -o $@ \
	  $(srcdir)/tests/check_pickle.c $(PICKLE_SAN_FILES:%=$(srcdir)/%) $(CHECK_LIBS)
endif
include $(srcdir)/tests/fuzz/pickle.mk
