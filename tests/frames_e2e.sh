#!/bin/sh
# frames_e2e.sh - symbolic frames (FRAME records, tagged STACK entries)
# written through the recorder's API by tests/frames_api.c, read back
# exactly: the records, each stack's site (the first Python frame in the
# program's own code; else the first frame no allocator), the frames of each
# site from the site outward (Python, C++ frames known by name and a real
# return address, symbolised), explicit past times, a forked child's log.
. "$top_srcdir/tests/lib.sh"
P="$top_builddir/tests/frames_api"
SITES="$PYTHON3 $top_srcdir/tests/stats_sites.py"
mkdir -p "$SCRATCH/out"
"$P" "$SCRATCH/out" || fail "frames_api exited $?"
parent=$(ls "$SCRATCH"/out/memflow-*.mfl | head -n 1)
child=$(ls "$SCRATCH"/out/memflow-*.mfl | tail -n 1)
[ "$parent" != "$child" ] || fail "expected two logs: $(ls "$SCRATCH/out")"
# the log with the parent's blocks comes first whichever pid is larger
if "$MEMFLOW" stats --format json "$parent" | grep -q '"alloc_count": 1,'; then
    t=$parent parent=$child child=$t
fi

# One FRAME record (type 20, 24 bytes) per distinct frame, each asked for
# twice: 9 in the parent; the child writes again the 4 it uses.
count() { $PYTHON3 "$top_srcdir/tests/log_records.py" "$1" | awk -v t="$2" '$1 == t { n += $3 } END { print n + 0 }'; }
expect_eq "parent frames" 9 "$(count "$parent" 20)"
expect_eq "child frames" 4 "$(count "$child" 20)"
expect_eq "parent stacks" 4 "$(count "$parent" 15)"
expect_eq "child stacks" 1 "$(count "$child" 15)"

"$MEMFLOW" stats --format json "$parent" > "$SCRATCH/p.json" || fail "stats exited $?"
$SITES --frames "$SCRATCH/p.json" > "$SCRATCH/p.sites" || fail "stats json: $(head -c 300 "$SCRATCH/p.json")"
line=$(grep -n 'MARK: embedder call' "$top_srcdir/tests/frames_api.c" | cut -d: -f1)
expect_eq "sites" "_find_and_load (<frozen importlib._bootstrap>:1178) allocs=2 bytes=1000 peak_live=1000 live_end=1000 at_peak=1000/2
frames _find_and_load (<frozen importlib._bootstrap>:1178): _find_and_load@<frozen importlib._bootstrap>:1178 < <module>@site.py:80
c10::alloc_cpu(unsigned long) allocs=1 bytes=4096 peak_live=4096 live_end=0 at_peak=0/0
frames c10::alloc_cpu(unsigned long): c10::alloc_cpu(unsigned long)@?:0 < at::empty_cpu@EmptyTensor.cpp:40
train_step (train.py:12) allocs=3 bytes=3000 peak_live=3000 live_end=3000 at_peak=3000/3
frames train_step (train.py:12): train_step@train.py:12 < <module>@train.py:40
train_step (train.py:15) allocs=2 bytes=600 peak_live=600 live_end=600 at_peak=600/2
frames train_step (train.py:15): train_step@train.py:15 < embedder@frames_api.c:$line < <module>@train.py:40
total allocs=8 sites_allocs=8" "$(cat "$SCRATCH/p.sites")"

"$MEMFLOW" stats --format json "$child" > "$SCRATCH/c.json" || fail "child stats exited $?"
expect_eq "child site" "train_step (train.py:12) allocs=1 bytes=1000 peak_live=1000 live_end=1000 at_peak=1000/1" \
    "$($SITES "$SCRATCH/c.json" | grep '^train_step')"

# the folded stacks name the same frames by function, outermost first
"$MEMFLOW" render --formats stacks.folded -o "$SCRATCH/r" "$parent" || fail "render exited $?"
expect_eq "folded" "<module>;_find_and_load 1000
<module>;embedder;train_step 600
<module>;train_step 3000" "$(grep -v '^#' "$SCRATCH/r/stacks.folded" | LC_ALL=C sort)"
echo "frames_e2e: ok"
