#!/bin/sh
# torch_program_history.sh - the program turns PyTorch's allocator history
# on with its own settings, then off, while memflow's live history is on
# (tests/torch_program_history.py, torch 2.11's interface played by a
# stand-in): nothing memflow recorded is lost, the program's calls run as
# given, memflow takes the history back after the "off", and the log holds
# every tensor, exactly.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
cd "$SCRATCH"
"$MEMFLOW" run --no-render -o run -- "$PYTHON" "$top_srcdir/tests/torch_program_history.py" > out.txt \
    2> err.txt || fail "torch_program_history.py exited $?: $(cat err.txt)"
expect_eq "the history's calls" "calls=[('all', 'python', 100000), ('all', 'all', 200000), (None, 'all', 9223372036854775807), ('all', 'python', 100000)]
retaken=1 on=True" "$(cat out.txt)"
expect_eq "stderr" "memflow: the program turned PyTorch's allocator history off (enabled=None): memflow wrote what it had recorded and turned it back on for itself" \
    "$(sed -n 1p err.txt)"
check_stats run/memflow-*.mfl "the log's tensors differ" <<'PY'
g = [x for x in d["devices"] if x["device"] == "gpu/0"][0]
eq("segments", (1, 0, 2 << 20), (g["alloc_count"], g["free_count"], g["live_bytes_end"]))
s = g["subblocks"]
eq("tensors", (4, 1, 4096 + 8192 + 1024 + 512, 8192 + 1024 + 512, 3, 0),
   tuple(s[k] for k in ("alloc_count", "free_count", "alloc_bytes", "live_bytes_end",
                        "live_count_end", "before_count")))
PY
exit 0
