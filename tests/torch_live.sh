#!/bin/sh
# torch_live.sh - the live path of PyTorch's allocator history without a
# GPU: tests/torch_live.py, under memflow run with Debian's torch (1.13,
# CPU), hands snapshot dicts to the extension's conversion in process;
# what each conversion did, the scopes (allocator metadata, by time), the
# OOM routes (the history's oom entry, torch's observer) and torch 1.13's
# "too old" line, then the log's tensors, exactly.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
needs_torch
cd "$SCRATCH"
"$MEMFLOW" run -o run -- "$PYTHON" "$top_srcdir/tests/torch_live.py" > out.txt 2> err.txt ||
    fail "torch_live.py exited $?: $(cat err.txt)"
expect_eq "conversions" "armed=True
entries=6 skipped=0 tensors=2 tensor_frees=2 segments=1 before_tensors=2 before_segments=1 ooms=0
entries=3 skipped=6 tensors=1 tensor_frees=1 segments=0 before_tensors=0 before_segments=0 ooms=1
entries=3 skipped=9 tensors=3 tensor_frees=0 segments=0 before_tensors=0 before_segments=0 ooms=0
metadata='','net:','net:dense0:','net:','','backward:net:dense0:',''
refused=memflow: PyTorch's allocator history: offset 5: opcode REDUCE refused: it calls Python code (memflow reads plain data only)" \
    "$(cat out.txt)"
grep -qx "memflow: PyTorch's allocator history is off: torch $("$PYTHON" -c 'import torch; print(torch.__version__)') has no timed history (torch >= 2.2 has it); GPU memory is recorded at the segment level (CUPTI)" \
    err.txt || fail "no 'too old' line: $(cat err.txt)"
check_stats run/memflow-*.mfl "the live history's tensors differ" <<'EOF'
t = d["pytorch"]
eq("pytorch", (True, "time", "by_time", "too_old"), (t["history"], t["time_axis"], t["scopes"],
                                                     t["off"]))
g = [x for x in d["devices"] if x["device"] == "gpu/0"][0]
eq("segments", (2, 0, 4 << 20), (g["alloc_count"], g["free_count"], g["live_bytes_end"]))
s = g["subblocks"]
eq("tensors", (8, 3, 35328, 22016, 5, 5, 2, 3072),
   tuple(s[k] for k in ("alloc_count", "free_count", "alloc_bytes", "live_bytes_end",
                        "live_count_end", "reused_count", "before_count", "before_bytes")))
eq("tensor scopes", {"<unk>:": (3, 1), "net:": (1, 0), "net:dense0:": (3, 2),
                     "net:dense1:": (1, 0)},
   {x["scope"]: (x["alloc_count"], x["free_count"]) for x in s["scopes"]})
eq("ooms", [("torch_trace", 1 << 30, 1 << 20, "net:dense1:", 18432, 2, 4 << 20),
            ("torch_observer", 1 << 30, 1 << 20, "<unk>:", 22016, 5, 4 << 20)],
   [(o["route"], o["requested"], o["device_free"], o["scope"], o["allocated_bytes"],
     o["allocated_count"], o["reserved_bytes"]) for o in d["ooms"]])
EOF
exit 0
