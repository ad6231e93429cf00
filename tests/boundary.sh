#!/bin/sh
# boundary.sh - the runtime/analysis boundary: a profiled program's
# memflow_dump() runs the analysis in `memflow serve`, never in-process;
# continuous dumps work in a program linked with --as-needed; a program that
# closes memflow's socket and reuses its number gets its dumps from a new
# server and its own file untouched; the installed libraries export only the
# documented API; include directions follow the layering.
. "$top_srcdir/tests/lib.sh"
C="$top_builddir/tests/dump_client"

"$C" "$SCRATCH/maps" maps > "$SCRATCH/maps.out"
expect_eq "Cairo in the profiled process" "cairo absent" "$(sed -n 1p "$SCRATCH/maps.out")"
expect_eq "librsvg in the profiled process" "rsvg absent" "$(sed -n 2p "$SCRATCH/maps.out")"
grep -q "boundary:" "$SCRATCH/maps/stats.txt" || fail "memflow_dump wrote no stats.txt"

"$C" "$SCRATCH/cont" continuous > "$SCRATCH/cont.out" || fail "$(cat "$SCRATCH/cont.out")"
expect_eq "continuous dump with --as-needed" "continuous dump seen" "$(cat "$SCRATCH/cont.out")"

"$C" "$SCRATCH/reuse" reuse > "$SCRATCH/reuse.out" || fail "$(cat "$SCRATCH/reuse.out")"
expect_eq "socket number reused" "dumps ok, own file 0 bytes" "$(cat "$SCRATCH/reuse.out")"

# Exports: libmemflow.so has the memflow_* functions of memflow.h (public
# node) and the private node for memflow's plugins, exactly as
# runtime/libmemflow.map lists it; nothing else.
lib="$top_builddir/.libs/libmemflow.so"
private=$(sed -n '/^MEMFLOW_PRIVATE/,/^}/s/^ *\([a-z_*]*\);$/\1/p' "$top_srcdir/runtime/libmemflow.map")
[ -n "$private" ] || fail "no private node in runtime/libmemflow.map"
nm -D --defined-only "$lib" | awk '$3 !~ /^MEMFLOW_/ {print $3}' > "$SCRATCH/exports"
while read -r sym; do
    name=${sym%%@*} version=${sym##*@}
    case "$version:$name" in
    MEMFLOW_1.0:memflow_*)
        grep -q "[ *]$name(" "$top_builddir/include/memflow.h" ||
            fail "libmemflow.so exports $name, which memflow.h does not declare" ;;
    MEMFLOW_PRIVATE:*)
        listed=no; set -f
        for pattern in $private; do
            # shellcheck disable=SC2254
            case "$name" in $pattern) listed=yes ;; esac
        done
        set +f
        [ "$listed" = yes ] || fail "libmemflow.so exports $name, not in the private node" ;;
    *) fail "libmemflow.so exports $sym, outside the documented API" ;;
    esac
done < "$SCRATCH/exports"
for fn in $(sed -n 's/^[a-z].* \**\(memflow_[a-z_]*\)(.*/\1/p' "$top_builddir/include/memflow.h"); do
    grep -q "^$fn@@MEMFLOW_1.0$" "$SCRATCH/exports" || fail "memflow.h declares $fn, not exported"
done
# (not in a sanitizer build: it links the sanitizers' runtimes and theirs)
if preload_works; then
    readelf -d "$lib" | grep NEEDED | grep -v -e 'libc\.so' -e 'ld-linux' -e 'libdl' -e 'libpthread' \
        > "$SCRATCH/needed" || true
    [ ! -s "$SCRATCH/needed" ] || fail "libmemflow.so needs more than libc: $(cat "$SCRATCH/needed")"
fi

# Layering: runtime/ is libmemflow, and only libmemflow and its plugins
# include its headers; common/, the analysis and the memflow program include
# common/ ones and their own (the program links no libmemflow:
# cli_no_recorder.sh).
# The runtime never includes the analysis' headers.
cd "$top_srcdir"
runtime_headers=$(cd runtime && ls -- *.h | sed 's/\./\\./' | paste -sd'|' -)
[ -n "$runtime_headers" ] || fail "no header in runtime/"
find common analyze render cli -name '*.[ch]' -exec grep -lE "#include \"($runtime_headers)\"" {} + \
    > "$SCRATCH/bad" || true
if [ -s "$SCRATCH/bad" ]; then
    fail "common/, the analysis or the memflow program includes libmemflow's headers: $(cat "$SCRATCH/bad")"
fi
find runtime common alloc gpu -name '*.[ch]' -exec grep -l \
    '#include "\(log_in_memory\|model\|chunk_source\|outputs\|stats\|svg\|chrome_trace\|csv\|escape\)\.h"' {} + \
    > "$SCRATCH/bad" || true
if [ -s "$SCRATCH/bad" ]; then
    fail "runtime includes analysis headers: $(cat "$SCRATCH/bad")"
fi
exit 0
