#!/bin/sh
# nvtx_mem_e2e.sh - the NVTX memory API: a plain C program (no memflow code,
# no GPU) registers a malloc'ed 1 MiB arena as an NVTX heap and regions
# inside it (tests/nvtx_mem_workload.c lists them); under `memflow run` the
# regions become sub-blocks, counted apart from the arena that holds them.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/nvtx_mem_workload"
LOGCHECK="$top_builddir/tests/logcheck"
CHECK="$top_builddir/tests/stacks_check"

"$MEMFLOW" run --no-render -o "$SCRATCH/run" -- "$W" check > "$SCRATCH/run.out" 2> "$SCRATCH/run.err" ||
    fail "run exited $?: $(cat "$SCRATCH/run.err")"
set -- "$SCRATCH"/run/memflow-*.mfl
[ $# -eq 1 ] || fail "expected one log, got $#"
log=$1

# The log, read by the core reader alone: five regions, four ended (one by
# unregister, one by resize, two by the heap's reset), one live at the end;
# none of them in the scopes' counts, which see the arena once.
"$LOGCHECK" "$log" > "$SCRATCH/logcheck.txt" || fail "logcheck exited $?"
expect_eq "sub-blocks in the log" "subblocks allocs=5 frees=4 bytes=160744 peak=151552 live=1000 live_count=1" \
    "$(grep '^subblocks ' "$SCRATCH/logcheck.txt")"
expect_eq "the arena" "pool: allocs=1 frees=0 bytes=1048576 actual=1048576" \
    "$(grep '^pool: ' "$SCRATCH/logcheck.txt")"
expect_eq "no scope of a region among the blocks" "" \
    "$(grep -E '^(layer1|layer2|grow|tail):' "$SCRATCH/logcheck.txt" || true)"
"$CHECK" --events "$log" > "$SCRATCH/events.txt"
arena=$(sed -n 's/^arena=0x//p' "$SCRATCH/run.out")
expect_eq "the region's name" "region_name id=$(printf %d $((0x$arena + 65536))) name=weights domain=pools" \
    "$(grep '^region_name' "$SCRATCH/events.txt" | sed 's/ thread=.*//')"

# The statistics, parsed: the sub-blocks' own line on cpu/0 (the arena is
# malloc'ed, so its regions stay on cpu/0), by scope; cpu/0's own counts and
# peak are exactly those of the log without its sub-blocks (logcheck's
# independent replay): the arena is counted once.
"$MEMFLOW" stats --format json "$log" > "$SCRATCH/stats.json" 2>/dev/null || fail "stats exited $?"
cpu="[x for x in d['devices'] if x['device'] == 'cpu/0'][0]"
expect_eq "sub-blocks of cpu/0" "5 4 160744 151552 1000 1" \
    "$(json_get "$SCRATCH/stats.json" "' '.join(str($cpu['subblocks'][k]) for k in ('alloc_count', 'free_count', 'alloc_bytes', 'peak_bytes', 'live_bytes_end', 'live_count_end'))")"
expect_eq "sub-blocks by scope" "grow: 1 16384 0|layer1: 1 4096 0|layer2: 2 139264 0|tail: 1 1000 1000" \
    "$(json_get "$SCRATCH/stats.json" "'|'.join(sorted('%s %d %d %d' % (s['scope'], s['alloc_count'], s['alloc_bytes'], s['live_bytes_end']) for s in $cpu['subblocks']['scopes']))")"
expect_eq "cpu/0 allocations without the sub-blocks" \
    "$(sed -n 's/^total allocs=\([0-9]*\) frees=\([0-9]*\) .*/\1 \2/p' "$SCRATCH/logcheck.txt")" \
    "$(json_get "$SCRATCH/stats.json" "'%d %d' % ($cpu['alloc_count'], $cpu['free_count'])")"
expect_eq "cpu/0 peak without the sub-blocks" \
    "$(sed -n 's/^peak bytes=//p' "$SCRATCH/logcheck.txt")" \
    "$(json_get "$SCRATCH/stats.json" "$cpu['peak_bytes']")"
expect_eq "no region among the scopes" "" \
    "$(json_get "$SCRATCH/stats.json" "' '.join(s['scope'] for s in d['scopes'] if s['scope'] in ('layer1:', 'layer2:', 'grow:', 'tail:'))")"
expect_eq "no region among the leaks" "" \
    "$(json_get "$SCRATCH/stats.json" "' '.join(l['scope'] for l in d['leaks'] if l['scope'] == 'tail:')")"
expect_eq "unknown frees" 0 "$(json_get "$SCRATCH/stats.json" "d['unknown_frees']")"

# memory_flow.svg, read with a real XML parser: every region has a hover
# title saying what it is (scope, name, size); read back with librsvg, the
# region live at the end (tail:) is outlined in white over the arena.
"$MEMFLOW" render "$log" -o "$SCRATCH/render" > /dev/null 2>&1 || fail "render exited $?"
"$PYTHON3" - "$SCRATCH/render/memory_flow.svg" > "$SCRATCH/hover.txt" <<'PY' || fail "hover titles (see above)"
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
subs = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None
        and r.find(NS + "title").text.endswith("a region inside another block")]
for r in sorted(subs, key=lambda r: r.find(NS + "title").text):
    t = r.find(NS + "title").text.split("\n")
    print(t[0], t[1], t[2].split(", actual")[0], r.get("x"), r.get("y"))
PY
expect_eq "sub-block hover titles" "scope: grow: name: unknown requested 16,384 B (16.0 KiB)
scope: layer1: name: unknown requested 4,096 B (4.00 KiB)
scope: layer2: name: unknown requested 8,192 B (8.00 KiB)
scope: layer2: name: weights requested 131,072 B (128 KiB)
scope: tail: name: unknown requested 1,000 B" "$(sed "s/ [0-9]* [0-9]*$//" "$SCRATCH/hover.txt")"
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    set -- $(grep '^scope: tail:' "$SCRATCH/hover.txt" | awk '{print $(NF-1), $NF}')
    expect_eq "the outline of the live region" "#ffffff" \
        "$("$top_builddir/tests/svg_pixel" "$SCRATCH/render/memory_flow.svg" "$1" "$2")"
fi

# The trace (a real JSON parser): the regions are async spans of the block
# category on cpu/0's track, marked as sub-blocks; the heap's life is three
# instants with its address and size.
expect_eq "sub-block spans" "grow: 16384 -|layer1: 4096 -|layer2: 131072 weights|layer2: 8192 -|tail: 1000 -" \
    "$(json_get "$SCRATCH/render/profile.json" "'|'.join(sorted('%s %d %s' % (e['name'], e['args']['bytes'], e['args'].get('region_name', '-')) for e in d['traceEvents'] if e['ph'] == 'b' and e['cat'] == 'block' and 'subblock' in e['args']))")"
expect_eq "heap instants" "NVTX heap registered 1048576|NVTX heap reset 0|NVTX heap unregistered 0" \
    "$(json_get "$SCRATCH/render/profile.json" "'|'.join('%s %d' % (e['name'], e['args']['size']) for e in d['traceEvents'] if e.get('cat') == 'pool')")"

# With call stacks, sub-blocks count towards no allocation site: the sites
# of cpu/0 add up to its own allocations, the regions apart.
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/stacks" -- "$W" > /dev/null 2>&1 || fail "stacks run exited $?"
"$MEMFLOW" stats --format json "$SCRATCH"/stacks/memflow-*.mfl > "$SCRATCH/stacks.json" 2>/dev/null ||
    fail "stacks stats exited $?"
expect_eq "sites without the sub-blocks" \
    "$(json_get "$SCRATCH/stacks.json" "'%d 5' % $cpu['alloc_count']")" \
    "$(json_get "$SCRATCH/stacks.json" "'%d %d' % (sum(x['alloc_count'] for x in d['sites'] if x['device'] == 'cpu/0'), $cpu['subblocks']['alloc_count'])")"
# A region carries the stack of the program's NVTX call: its hover title
# names the program's function first among the frames it was allocated in
# (the NVTX header's inline nvtxMemRegionsRegister, an entry point of the
# API, is left out as malloc is).
"$MEMFLOW" render "$SCRATCH"/stacks/memflow-*.mfl -o "$SCRATCH/stacks.render" > /dev/null 2>&1 ||
    fail "stacks render exited $?"
expect_eq "a region's site" "register_regions (nvtx_mem_workload.c" \
    "$("$PYTHON3" -c "
import sys, xml.etree.ElementTree as ET
t = [e.text for e in ET.parse(sys.argv[1]).getroot().iter('{http://www.w3.org/2000/svg}title')
     if e.text and e.text.startswith('scope: layer1:')][0]
print(t.split('allocated in:\n')[1].split('\n')[0].split(':')[0].strip())" "$SCRATCH/stacks.render/memory_flow.svg")"

# Compaction keeps sub-blocks losslessly: the log above is the compact one
# `memflow run` leaves; a live log gives the same statistics before and
# after `memflow compact`.
[ $(( $(od -An -tu4 -j20 -N4 "$log" | tr -d ' ') & 4 )) -ne 0 ] || fail "the run's log is not compact"
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/live" -- "$W" > /dev/null 2>&1 || fail "live run exited $?"
live=$(echo "$SCRATCH"/live/memflow-*.mfl)
"$MEMFLOW" stats --format json "$live" > "$SCRATCH/live.json" 2>/dev/null || fail "live stats exited $?"
"$MEMFLOW" compact "$live" > /dev/null || fail "memflow compact exited $?"
"$MEMFLOW" stats --format json "$live" > "$SCRATCH/compacted.json" 2>/dev/null || fail "compact stats exited $?"
cmp -s "$SCRATCH/live.json" "$SCRATCH/compacted.json" || fail "statistics changed by compaction"
expect_eq "sub-blocks after compaction" 5 \
    "$(json_get "$SCRATCH/compacted.json" "$cpu['subblocks']['alloc_count']")"

# sample_rate=1: a snapshot after every allocation and free that changes a
# device's occupancy - the program's own (compact CPU records, types 12 and
# 13) - and none after the 5 + 4 region events (full ALLOC and FREE records
# with the sub-block flag, types 1 and 2).
"$MEMFLOW" run --no-render --no-compact --set sample_rate=1 -o "$SCRATCH/sampled" -- "$W" check \
    > /dev/null 2> "$SCRATCH/sampled.err" || fail "sampled run exited $?: $(cat "$SCRATCH/sampled.err")"
"$PYTHON3" "$top_srcdir/tests/log_records.py" "$SCRATCH"/sampled/memflow-*.mfl > "$SCRATCH/sampled.rec"
count() { awk -v t="$1" '$1 == t { n += $3 } END { print n + 0 }' "$SCRATCH/sampled.rec"; }
expect_eq "sampled: region events" "5 4" "$(count 1) $(count 2)"
expect_eq "sampled: one snapshot per event of the program" "$(( $(count 12) + $(count 13) ))" "$(count 5)"
echo "nvtx_mem_e2e: ok"
