#!/bin/sh
# stacks_e2e.sh - call stacks end to end: unmodified -O2 -fomit-frame-pointer
# programs (C and C++) under `memflow run --stacks`, every allocation's site
# symbolised, counts and bytes exact per allocating function; inline
# functions, a shared library's function, a stripped library as
# module+offset, a rebuilt or missing library said so; stacks off writes no
# stack records and the usual record sizes.
. "$top_srcdir/tests/lib.sh"
needs_preload
W="$top_builddir/tests/stacks_workload"
CHECK="$top_builddir/tests/stacks_check"
LIBS="$top_builddir/tests"

# site OUT PATTERN: the stacks_check line of the site matching PATTERN (grep -E)
site() { grep -E "^$2 allocs=" "$1" || echo "$2 (missing)"; }
one_log() { set -- "$1"/memflow-*.mfl; [ $# -eq 1 ] || fail "expected one log in $1, got $#"; echo "$1"; }

"$MEMFLOW" run --no-render --no-compact --stacks -o "$SCRATCH/c" -- "$W" "$LIBS" || fail "stacks run exited $?"
log=$(one_log "$SCRATCH/c")
"$CHECK" "$log" > "$SCRATCH/c.txt" || fail "stacks_check exited $?"
"$CHECK" --where "$log" > "$SCRATCH/c.where" || fail "stacks_check --where exited $?"
expect_eq "direct" "direct_alloc allocs=20 bytes=20000" "$(site "$SCRATCH/c.txt" direct_alloc)"
expect_eq "direct, where" "direct_alloc @stacks_workload.c:28 allocs=20 bytes=20000" \
    "$(site "$SCRATCH/c.where" "direct_alloc @[^ ]*")"
# calloc in an always_inline function: named, with the function it is inlined in
expect_eq "inline" "inline_buffer < fill_inline allocs=7 bytes=2100" \
    "$(site "$SCRATCH/c.txt" "inline_buffer < fill_inline")"
expect_eq "inline, where" "inline_buffer < fill_inline @stacks_workload.c:36 allocs=7 bytes=2100" \
    "$(site "$SCRATCH/c.where" "inline_buffer < fill_inline @[^ ]*")"
expect_eq "shared library" "lib_alloc allocs=5 bytes=1280" "$(site "$SCRATCH/c.txt" lib_alloc)"
# The stripped library: no symbol names the code, so module+offset; the
# offset is hidden_alloc's call of malloc in the unstripped twin.
line=$(site "$SCRATCH/c.txt" 'libstacks_hidden\.so\+0x[0-9a-f]+')
offset=$(echo "$line" | sed -n 's/^libstacks_hidden\.so+\(0x[0-9a-f]*\) allocs=3 bytes=12288$/\1/p')
[ -n "$offset" ] || fail "stripped library: got '$line'"
expect_eq "stripped offset" hidden_alloc \
    "$(addr2line -f -e "$LIBS/libstacks_hidden_full.so" "$(printf '0x%x' $((offset - 1)))" | head -n 1)"
total=$(grep '^total ' "$SCRATCH/c.txt")
allocs=$(echo "$total" | sed 's/.* allocs=\([0-9]*\).*/\1/')
expect_eq "every allocation has a stack" "with_stack=$allocs" \
    "$(echo "$total" | grep -o 'with_stack=[0-9]*')"
! grep -q '^warning:' "$SCRATCH/c.txt" || fail "warnings: $(grep '^warning' "$SCRATCH/c.txt")"
# MODULE records for the modules the stacks touch: the program, libc, ld.so
# and libstdc++ (its start-up allocation) loaded at start, and the two test
# libraries dlopen'ed later; none of memflow's own.
expect_eq "modules" "modules=6" "$(echo "$total" | grep -o 'modules=[0-9]*')"

# The recorder walks only the frames that changed since the thread's last
# stack (runtime/unwind.c): one function reached from two callers in turn,
# and recursion that goes deep, unwinds and re-enters at other depths, must
# each get exactly their own stacks, one id each, with exact counts.
"$MEMFLOW" run --no-render --no-compact --stacks -o "$SCRATCH/paths" -- "$top_builddir/tests/stacks_paths" ||
    fail "paths run exited $?"
"$CHECK" --paths "$(one_log "$SCRATCH/paths")" > "$SCRATCH/paths.txt" || fail "stacks_check --paths exited $?"
climbs() { n=$1 out=site; while [ "$n" -gt 0 ]; do out="$out < climb"; n=$((n - 1)); done; echo "$out < main"; }
expect_eq "paths" "$(climbs 13) allocs=20 bytes=1280
$(climbs 9) allocs=20 bytes=1280
$(climbs 6) allocs=10 bytes=640
$(climbs 4) allocs=10 bytes=640
$(climbs 3) allocs=10 bytes=640
$(climbs 1) allocs=10 bytes=640
site < path_a < main allocs=1000 bytes=64000
site < path_b < main allocs=1000 bytes=64000" "$(grep '^site ' "$SCRATCH/paths.txt")"

# memflow stats attributes the same allocations to the same sites, exactly:
# counts, bytes, peak live, never freed and held at the peak (the workload
# frees nothing it allocates), every allocation of the device in some site.
SITES="$PYTHON3 $top_srcdir/tests/stats_sites.py"
"$MEMFLOW" stats --format json "$log" > "$SCRATCH/c.json" || fail "stats exited $?"
$SITES --frames "$SCRATCH/c.json" > "$SCRATCH/c.sites" || fail "stats json: $(head -c 300 "$SCRATCH/c.json")"
for want in "direct_alloc (stacks_workload.c:28) allocs=20 bytes=20000 peak_live=20000 live_end=20000 at_peak=20000/20" \
    "inline_buffer (stacks_workload.c:36) allocs=7 bytes=2100 peak_live=2100 live_end=2100 at_peak=2100/7" \
    "lib_alloc (stacks_lib.c:11) allocs=5 bytes=1280 peak_live=1280 live_end=1280 at_peak=1280/5" \
    "libstacks_hidden.so+$offset allocs=3 bytes=12288 peak_live=12288 live_end=12288 at_peak=12288/3"; do
    name=${want%% allocs=*}
    expect_eq "stats: $name" "$want" "$(grep -F "$name allocs=" "$SCRATCH/c.sites")"
done
# the inlined function is a frame of its own, then the one it is inlined in
expect_eq "stats: inline frames" "frames inline_buffer (stacks_workload.c:36): inline_buffer@stacks_workload.c:36 < fill_inline@stacks_workload.c:44 < main@stacks_workload.c:70" \
    "$(grep '^frames inline_buffer' "$SCRATCH/c.sites" | sed 's/ < __libc_start.*//')"
expect_eq "stats: every allocation has a site" "total allocs=$allocs sites_allocs=$allocs" \
    "$(grep '^total ' "$SCRATCH/c.sites")"
! grep -q '^(no stack)\|^(other sites)' "$SCRATCH/c.sites" || fail "allocations without a site: $(cat "$SCRATCH/c.sites")"
"$MEMFLOW" stats "$log" > "$SCRATCH/c.table" || fail "stats table exited $?"
grep -q '^Top allocation sites (6 of 6, by total)$' "$SCRATCH/c.table" || fail "no site table: $(cat "$SCRATCH/c.table")"
grep -Eq '^ +20000 bytes +[0-9.]+% +20 blocks  direct_alloc \(stacks_workload.c:28\)$' "$SCRATCH/c.table" ||
    fail "no direct_alloc at the peak: $(cat "$SCRATCH/c.table")"

# The folded stacks of what was live at the peak: the workload's lines from
# main on (what lies outside main is the C library's start-up), and every
# byte held at the peak in some line.
"$MEMFLOW" render --formats stacks.folded,flamegraph.svg -o "$SCRATCH/flame" "$log" \
    2> "$SCRATCH/flame.err" || fail "render stacks exited $?: $(cat "$SCRATCH/flame.err")"
grep -q 'into .*: stacks.folded, flamegraph.svg$' "$SCRATCH/flame.err" || fail "render said: $(cat "$SCRATCH/flame.err")"
expect_eq "folded" "main;direct_alloc 20000
main;fill_inline;inline_buffer 2100
main;lib_alloc 1280
main;stripped_entry;libstacks_hidden.so+$offset 12288" \
    "$(grep ';main;[a-z_]*alloc\|;main;fill_inline;\|;main;stripped_entry;' "$SCRATCH/flame/stacks.folded" | sed 's/^.*;main;/main;/')"
peak=$(json_get "$SCRATCH/c.json" '[p["peak_bytes"] for p in d["at_peak"] if p["device"] == "cpu/0"][0]')
expect_eq "folded: the peak's bytes" "$peak" "$(awk '{ s += $NF } END { print s }' "$SCRATCH/flame/stacks.folded")"
# The flame graph: the bottom frame is every byte of the peak, direct_alloc
# a frame as wide as its share, in its palette colour, with its title.
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" "$SCRATCH/flame/flamegraph.svg" > "$SCRATCH/flame.frames" ||
    fail "flamegraph.svg does not parse"
expect_eq "flame: all" "all|$("$PYTHON3" -c "print(format($peak, ','))") B" \
    "$(grep -o '|all|[^(]*' "$SCRATCH/flame.frames" | sed 's/^|//; s/ $//')"
frame=$(grep '|direct_alloc|' "$SCRATCH/flame.frames")
expect_eq "flame: direct_alloc title" "direct_alloc stacks_workload.c:28 20,000 B (19.5 KiB)" \
    "$(echo "$frame" | awk -F'|' '{ n = split($3, p, "/"); sub(/, [0-9.]*% of the peak$/, "", $4); print $2, p[n], $4 }')"
set -- $(echo "$frame" | cut -d'|' -f1)
# (the SVG's coordinates are Cairo's, rounded: within 0.01 px of the exact width)
expect_eq "flame: direct_alloc width" "$(awk -v p="$peak" 'BEGIN { printf "%.2f", 20000 / p * 1180 }')" \
    "$(awk -v w="$3" -v p="$peak" 'BEGIN { x = 20000 / p * 1180; d = w - x;
        printf "%.2f", (d < 0 ? -d : d) <= 0.01 ? x : w }')"
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    x=$(awk -v x="$1" -v w="$3" 'BEGIN { printf "%d", x + w - 2 }')
    y=$(awk -v y="$2" 'BEGIN { printf "%d", y + 8 }')
    "$top_builddir/tests/svg_pixel" "$SCRATCH/flame/flamegraph.svg" "$x" "$y" direct_alloc \
        > "$SCRATCH/flame.pixel" || fail "librsvg cannot read flamegraph.svg"
    grep -q ' direct_alloc: yes ' "$SCRATCH/flame.pixel" || fail "flame pixel: $(cat "$SCRATCH/flame.pixel")"
fi
# By default render adds both outputs when the log has stacks.
"$MEMFLOW" render -o "$SCRATCH/flame_default" "$log" 2> "$SCRATCH/flame_default.err" || fail "render exited $?"
grep -q 'stats.txt, stacks.folded, flamegraph.svg$' "$SCRATCH/flame_default.err" ||
    fail "default outputs: $(cat "$SCRATCH/flame_default.err")"

# memory_flow: a block's hover title names its top 3 frames; coloured by
# site, a direct_alloc block has direct_alloc's colour (read back with
# librsvg) and the legend lists the site with what it held at the peak.
"$MEMFLOW" render --color-by site --formats memory_flow.svg -o "$SCRATCH/by_site" "$log" \
    2> "$SCRATCH/by_site.err" || fail "render --color-by site exited $?: $(cat "$SCRATCH/by_site.err")"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" "$SCRATCH/by_site/memory_flow.svg" > "$SCRATCH/by_site.hover" ||
    fail "memory_flow.svg does not parse"
block=$(grep '|allocated in:|  direct_alloc (stacks_workload.c:28)|' "$SCRATCH/by_site.hover" | head -n 1)
expect_eq "hover frames" "allocated in:|  direct_alloc (stacks_workload.c:28)|  main (stacks_workload.c:69)" \
    "$(echo "$block" | grep -o 'allocated in:|[^|]*|[^|]*')"
expect_eq "hover: three frames" 3 "$(echo "$block" | sed 's/.*allocated in://' | tr '|' '\n' | grep -c '^  ')"
expect_eq "legend: direct_alloc" "direct_alloc (stacks_workload.c:28)|19.5 KiB held at the peak, 19.5 KiB allocated in all" \
    "$(grep -o '|direct_alloc (stacks_workload.c:28)|.*' "$SCRATCH/by_site.hover" | sed 's/^|//')"
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    set -- $(echo "$block" | cut -d'|' -f1)
    "$top_builddir/tests/svg_pixel" "$SCRATCH/by_site/memory_flow.svg" $(($1 + $3 / 2)) $(($2 + $4 / 2)) \
        "direct_alloc (stacks_workload.c:28)" > "$SCRATCH/by_site.pixel" || fail "librsvg cannot read memory_flow.svg"
    grep -q ': yes ' "$SCRATCH/by_site.pixel" || fail "site colour: $(cat "$SCRATCH/by_site.pixel")"
fi

# memflow serve (what memflow_dumps() asks) counts by site too.
"$PYTHON3" - "$MEMFLOW" "$log" > "$SCRATCH/serve.json" <<'PY' || fail "serve stats failed"
import subprocess, sys
p = subprocess.Popen([sys.argv[1], "serve", sys.argv[2]], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE)
p.stdin.write(b"stats\tjson\ttotal\t0\t0\n")
p.stdin.flush()
status, n = p.stdout.readline().decode().rstrip("\n").split("\t")
body = p.stdout.read(int(n))
p.stdin.close()
assert status == "ok", body
sys.stdout.write(body.decode())
PY
$SITES "$SCRATCH/serve.json" > "$SCRATCH/serve.sites" || fail "serve json: $(head -c 300 "$SCRATCH/serve.json")"
expect_eq "serve: direct_alloc" "direct_alloc (stacks_workload.c:28) allocs=20 bytes=20000 peak_live=20000 live_end=20000 at_peak=20000/20" \
    "$(grep -F "direct_alloc (stacks_workload.c:28) allocs=" "$SCRATCH/serve.sites")"

# The trace: the device's largest blocks as spans named by their site, with
# the site's frames; direct_alloc's 20 blocks of 1000 bytes, every one.
"$MEMFLOW" render --formats profile.json -o "$SCRATCH/trace" "$log" 2> /dev/null ||
    fail "render trace exited $?"
expect_eq "trace: direct_alloc blocks" "20 x 1000 bytes, frames direct_alloc < main" "$("$PYTHON3" - \
    "$SCRATCH/trace/profile.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
begins = [e for e in events if e.get("cat") == "block" and e["ph"] == "b"
          and e["name"] == "direct_alloc (stacks_workload.c:28)"]
ends = {e["id"] for e in events if e.get("cat") == "block" and e["ph"] == "e"}
assert all(e["id"] in ends and e["args"]["site"] == e["name"] for e in begins), begins[:2]
sizes = {e["args"]["bytes"] for e in begins}
frames = {" < ".join(f.split(" (")[0] for f in e["args"]["frames"][:2]) for e in begins}
print("%d x %s bytes, frames %s" % (len(begins), ",".join(map(str, sorted(sizes))), ",".join(frames)))
PY
)"

# The formats key names the stack outputs too: memflow run writes them.
"$MEMFLOW" run --stacks --set formats=stacks.folded,stats.txt -o "$SCRATCH/key" -- "$W" "$LIBS" \
    > /dev/null 2> "$SCRATCH/key.err" || fail "formats key run exited $?: $(cat "$SCRATCH/key.err")"
expect_eq "formats key: direct_alloc folded" "main;direct_alloc 20000" \
    "$(grep ';main;direct_alloc ' "$SCRATCH/key/stacks.folded" | sed 's/^.*;main;/main;/')"
test ! -e "$SCRATCH/key/memory_flow.svg" || fail "formats key: memory_flow.svg written though not asked for"

# --stacks=DEPTH keeps the DEPTH innermost frames.
"$MEMFLOW" run --no-render --stacks=2 -o "$SCRATCH/depth" -- "$W" "$LIBS" || fail "depth run exited $?"
"$CHECK" --full "$(one_log "$SCRATCH/depth")" > "$SCRATCH/depth.txt"
expect_eq "depth 2" "direct_alloc allocs=20 bytes=20000
    #0 direct_alloc
    #1 main" "$(grep -A2 '^direct_alloc ' "$SCRATCH/depth.txt")"
! grep -q '    #2 ' "$SCRATCH/depth.txt" || fail "a stack deeper than 2 frames"

# C++: operator new and new[] in a method and a template, demangled.
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/cxx" -- "$top_builddir/tests/stacks_cxx" \
    > /dev/null || fail "C++ run exited $?"
"$CHECK" "$(one_log "$SCRATCH/cxx")" > "$SCRATCH/cxx.txt"
expect_eq "new" "shapes::Factory::make_circles(int) allocs=11 bytes=440" \
    "$(site "$SCRATCH/cxx.txt" 'shapes::Factory::make_circles\(int\)')"
expect_eq "new[]" "double* make_array<double>(int) allocs=4 bytes=800" \
    "$(site "$SCRATCH/cxx.txt" 'double\* make_array<double>\(int\)')"

# memflow_record_alloc: the reported blocks carry the reporting code's stack.
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/api" -- "$top_builddir/tests/stacks_api" record ||
    fail "API run exited $?"
"$CHECK" "$(one_log "$SCRATCH/api")" > "$SCRATCH/api.txt"
expect_eq "record_alloc" "pool_grab allocs=6 bytes=30720" "$(site "$SCRATCH/api.txt" pool_grab)"

# mf_recorder_stack(skip), for the GPU capture: skip 0 starts at its caller,
# skip 1 one frame further out.
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/skip" -- "$top_builddir/tests/stacks_api" skip ||
    fail "skip run exited $?"
"$CHECK" "$(one_log "$SCRATCH/skip")" > "$SCRATCH/skip.txt"
expect_eq "skip 0" "helper allocs=2 bytes=200" "$(site "$SCRATCH/skip.txt" helper)"
expect_eq "skip 1" "outer_site allocs=3 bytes=300" "$(site "$SCRATCH/skip.txt" outer_site)"

# fork: the child's log gets the stacks (and modules) it uses again, even a
# stack the parent recorded before the fork.
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/fork" -- "$top_builddir/tests/stacks_api" fork ||
    fail "fork run exited $?"
n=0
for log in "$SCRATCH"/fork/memflow-*.mfl; do
    n=$((n + 1))
    "$CHECK" "$log" > "$SCRATCH/fork.$n.txt"
    ! grep -q '^damage:' "$SCRATCH/fork.$n.txt" || fail "fork log $n damaged"
done
expect_eq "fork logs" 2 "$n"
expect_eq "fork sites" "same_site allocs=2 bytes=666
same_site allocs=3 bytes=999" "$(cat "$SCRATCH"/fork.*.txt | grep '^same_site ' | sort)"

# A library rebuilt since the run is not read (build id), a missing one
# neither: both say so and show module+offset.
mkdir -p "$SCRATCH/libs"
cp "$LIBS/libstacks_lib.so" "$LIBS/libstacks_hidden.so" "$SCRATCH/libs/"
"$MEMFLOW" run --no-render --stacks -o "$SCRATCH/rebuilt" -- "$W" "$SCRATCH/libs" ||
    fail "rebuilt run exited $?"
${CC:-cc} -O1 -fPIC -shared -o "$SCRATCH/libs/libstacks_lib.so" "$top_srcdir/tests/stacks_lib.c"
rm "$SCRATCH/libs/libstacks_hidden.so"
"$CHECK" "$(one_log "$SCRATCH/rebuilt")" > "$SCRATCH/rebuilt.txt"
site "$SCRATCH/rebuilt.txt" 'libstacks_lib\.so\+0x[0-9a-f]+' | grep -q ' allocs=5 bytes=1280$' ||
    fail "rebuilt library: $(cat "$SCRATCH/rebuilt.txt")"
grep -q "^warning: $SCRATCH/libs/libstacks_lib.so: build id [0-9a-f]* on disk, [0-9a-f]* when recorded" \
    "$SCRATCH/rebuilt.txt" || fail "no build id warning: $(cat "$SCRATCH/rebuilt.txt")"
grep -q "^warning: $SCRATCH/libs/libstacks_hidden.so: cannot open the file" "$SCRATCH/rebuilt.txt" ||
    fail "no missing-file warning: $(cat "$SCRATCH/rebuilt.txt")"

# Stacks off (the default): no STACK, CPU_ALLOC_STACK or MODULE record, and
# the compact CPU records keep their 32 and 16 bytes.
"$MEMFLOW" run --no-render --no-compact -o "$SCRATCH/off" -- "$W" "$LIBS" || fail "off run exited $?"
log=$(one_log "$SCRATCH/off")
"$PYTHON3" "$top_srcdir/tests/log_records.py" "$log" > "$SCRATCH/off.rec"
! grep -Eq '^(15|16|17) ' "$SCRATCH/off.rec" || fail "stack records with stacks off: $(cat "$SCRATCH/off.rec")"
grep -q '^12 32 ' "$SCRATCH/off.rec" || fail "no 32-byte CPU_ALLOC: $(cat "$SCRATCH/off.rec")"
grep -q '^13 16 ' "$SCRATCH/off.rec" || fail "no 16-byte CPU_FREE: $(cat "$SCRATCH/off.rec")"
"$CHECK" "$log" > "$SCRATCH/off.txt"
expect_eq "off: sites" "(no stack)" "$(grep -v '^total ' "$SCRATCH/off.txt" | sed 's/ allocs=.*//')"
# ... and its statistics have no site section.
"$MEMFLOW" stats --format json "$log" > "$SCRATCH/off.json" || fail "stats (off) exited $?"
expect_eq "off: stats sites" "no sites" "$($SITES "$SCRATCH/off.json")"
"$MEMFLOW" stats "$log" > "$SCRATCH/off.table"
! grep -q 'allocation sites\|by site' "$SCRATCH/off.table" || fail "site section without stacks"
s=0; "$MEMFLOW" render --color-by site -o "$SCRATCH/off_site" "$log" 2> "$SCRATCH/off_site.err" || s=$?
expect_eq "off: --color-by site status" 1 "$s"
grep -q 'colouring by site needs call stacks: record with memflow run --stacks' "$SCRATCH/off_site.err" ||
    fail "--color-by site without stacks: $(cat "$SCRATCH/off_site.err")"
# ... no folded stacks or flame graph by default, and a note when asked for.
"$MEMFLOW" render -o "$SCRATCH/off_out" "$log" 2> "$SCRATCH/off_out.err" || fail "render (off) exited $?"
grep -q 'into .*: memory_flow.svg, profile.json, stats.txt$' "$SCRATCH/off_out.err" ||
    fail "default outputs without stacks: $(cat "$SCRATCH/off_out.err")"
"$MEMFLOW" render --formats stacks.folded -o "$SCRATCH/off_out" "$log" 2> "$SCRATCH/off_out.err" ||
    fail "render stacks.folded (off) exited $?"
grep -q 'no stacks.folded (the log has no call stacks: record with memflow run --stacks)' \
    "$SCRATCH/off_out.err" || fail "no note: $(cat "$SCRATCH/off_out.err")"
[ ! -e "$SCRATCH/off_out/stacks.folded" ] || fail "stacks.folded written without stacks"
# ... while with stacks on, allocations are CPU_ALLOC_STACK records of 40 bytes.
"$PYTHON3" "$top_srcdir/tests/log_records.py" "$(one_log "$SCRATCH/c")" > "$SCRATCH/on.rec"
grep -q '^16 40 ' "$SCRATCH/on.rec" || fail "no 40-byte CPU_ALLOC_STACK: $(cat "$SCRATCH/on.rec")"
! grep -q '^12 ' "$SCRATCH/on.rec" || fail "CPU_ALLOC records with stacks on"
grep -q '^17 64 ' "$SCRATCH/on.rec" || fail "no 64-byte MODULE records"

# 5000 distinct sites, each counted on its own: site sK holds exactly one
# block of K + 1 bytes, none is "(other sites)".
"$MEMFLOW" run --stacks --no-render -o "$SCRATCH/many" -- "$top_builddir/tests/many_sites" \
    > /dev/null || fail "many_sites run exited $?"
"$MEMFLOW" stats --format json "$(one_log "$SCRATCH/many")" > "$SCRATCH/many.json" ||
    fail "many_sites stats exited $?"
$SITES "$SCRATCH/many.json" > "$SCRATCH/many.sites" || fail "many_sites: $(head -c 300 "$SCRATCH/many.json")"
expect_eq "many sites: how many" 5000 "$(grep -c '^s[0-9]\{4\} (many_sites.c:[0-9]*) ' "$SCRATCH/many.sites")"
for k in 0 1 4095 4096 4999; do
    name=$(printf 's%04d' "$k")
    expect_eq "many sites: $name" "$name allocs=1 bytes=$((k + 1)) peak_live=$((k + 1)) live_end=$((k + 1))" \
        "$(grep "^$name (many_sites.c:[0-9]*) " "$SCRATCH/many.sites" | sed 's/ (many_sites.c:[0-9]*)//; s/ at_peak=.*//')"
done
expect_eq "many sites: their bytes" $((5000 * 5001 / 2)) \
    "$(sed -n 's/^s[0-9]\{4\} (many_sites.c:[0-9]*) allocs=1 bytes=\([0-9]*\) .*/\1/p' "$SCRATCH/many.sites" | awk '{ s += $1 } END { print s }')"
! grep -q '^(other sites)' "$SCRATCH/many.sites" || fail "many sites: $(grep '^(other sites)' "$SCRATCH/many.sites")"

# Bad depths are refused before the program starts.
s=0; "$MEMFLOW" run --stacks=300 -o "$SCRATCH/bad" -- true 2> "$SCRATCH/bad.err" || s=$?
expect_eq "--stacks=300 status" 125 "$s"
grep -q "bad value '300' for key 'stacks'; accepted: a call-stack depth from 0 (off) to 256" \
    "$SCRATCH/bad.err" || fail "--stacks=300: $(cat "$SCRATCH/bad.err")"
echo "stacks_e2e: ok"
