#!/bin/bash
# bench/compact.sh - the log size at rest, printed as markdown (the tables of
# docs/PERFORMANCE.md's "Log size at rest").
#
# 1. Real programs under `memflow run --no-render --no-compact`: bench/churn
#    (1 and 2 threads), `ls -lR /usr`, a python3 json round trip, sqlite3 and
#    git when installed; then `memflow compact` of their logs, timed: bytes
#    per event live and compact.  The statistics of every log must be the
#    same before and after (the script stops otherwise).
# 2. Which form meets the target: the churn's chunks as zstd alone, the
#    dense encoding alone, and dense + zstd, at zstd levels 1, 3, 9, 19
#    (bench/compact_bench sizes).
# 3. Reading: the same log of BENCH_COMPACT_OPS churn events in both forms,
#    every chunk through mf_chunk_source_read (warm page cache, then cold:
#    dropped with posix_fadvise before each round), and `memflow stats` of
#    each form (the reader and the statistics, end to end).
#
# Usage: bench/compact.sh [BUILDDIR]   (default $top_builddir, else .)
#        `make bench-compact` runs it on the build folder.  It builds nothing.
# Knobs: BENCH_COMPACT_OPS (20000000; 0 skips part 3), BENCH_RUNS (5),
# BENCH_KEEP=1 keeps BUILDDIR/bench/out-compact (the 20M-event log is ~480 MB).
set -eu

BUILD=$(cd "${1:-${top_builddir:-.}}" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd)
CHURN=$BUILD/bench/churn
TIMEIT=$BUILD/bench/timeit
CBENCH=$BUILD/bench/compact_bench
MEMFLOW=$BUILD/memflow
OUT=$BUILD/bench/out-compact
OPS=${BENCH_COMPACT_OPS:-20000000}
RUNS=${BENCH_RUNS:-5}

die() { echo "bench: $*" >&2; exit 1; }
note() { echo "bench: $*" >&2; }

for f in "$CHURN" "$TIMEIT" "$CBENCH" "$MEMFLOW"; do
    [ -x "$f" ] || die "$f not built: run make in $BUILD"
done
# The real binaries, not libtool's build-folder wrapper scripts.
MEMFLOW_CMD=("$MEMFLOW")
if [ -x "$BUILD/.libs/memflow" ] && [ "$(head -c 2 "$MEMFLOW")" = "#!" ]; then
    export LD_LIBRARY_PATH="$BUILD/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    MEMFLOW_CMD=("$BUILD/.libs/memflow")
fi
if [ -x "$BUILD/bench/.libs/compact_bench" ] && [ "$(head -c 2 "$CBENCH")" = "#!" ]; then
    CBENCH=$BUILD/bench/.libs/compact_bench
fi
command -v python3 >/dev/null || die "python3 is not installed"
[ "${BENCH_KEEP:-0}" = 1 ] || trap 'rm -rf "$OUT"' EXIT
rm -rf "$OUT"
mkdir -p "$OUT"

# Allocations + frees the logs record (every device).
events() { # LOG...
    "${MEMFLOW_CMD[@]}" stats --format json "$@" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(x["alloc_count"] + x["free_count"] + x.get("unknown_frees", 0) for x in d["devices"]))'
}
bytes_of() { stat -c %s "$@" | awk '{ s += $1 } END { print s }'; }
per() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
seconds() { awk -v ns="$(cut -d' ' -f1 "$1")" 'BEGIN { printf "%.2f", ns / 1e9 }'; }

# Profile NAME's command, compact its logs, print a row.
workload() { # NAME CMD...
    local name=$1 dir="$OUT/$1"
    shift
    note "workload $name"
    "${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$dir" -- "$@" >/dev/null 2>"$dir.err" ||
        die "$name: memflow run failed: see $dir.err"
    local logs=("$dir"/memflow-*.mfl)
    "${MEMFLOW_CMD[@]}" stats --format json "${logs[@]}" >"$dir.before.json" 2>/dev/null || true
    local n live
    n=$(events "${logs[@]}")
    live=$(bytes_of "${logs[@]}")
    "$TIMEIT" "$dir.time" "${MEMFLOW_CMD[@]}" compact "${logs[@]}" >"$dir.compact" 2>&1 ||
        die "$name: memflow compact failed: $(cat "$dir.compact")"
    "${MEMFLOW_CMD[@]}" stats --format json "${logs[@]}" >"$dir.after.json" 2>/dev/null || true
    cmp -s "$dir.before.json" "$dir.after.json" || die "$name: statistics changed by compaction"
    local compact
    compact=$(bytes_of "${logs[@]}")
    printf '| %s | %s | %s | %s | %s | %s | %s | %sx | %s |\n' "$name" "${#logs[@]}" "$n" \
        "$live" "$(per "$live" "$n")" "$compact" "$(per "$compact" "$n")" \
        "$(per "$live" "$compact")" "$(seconds "$dir.time")"
}

echo "## Machine"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "- memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
echo "- zstd $(pkg-config --modversion libzstd 2>/dev/null || echo '?'); kernel $(uname -r)"
echo "- load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "## Bytes per event, live and compact"
echo
echo "Events: allocations + frees the logs hold (\`memflow stats\`); bytes: the log files."
echo
echo "| workload | logs | events | live bytes | live B/event | compact bytes | compact B/event | smaller | compaction wall (s) |"
echo "|---|---|---|---|---|---|---|---|---|"
workload churn "$CHURN" -q
workload churn-2-threads "$CHURN" -q -t 2
workload ls-lR-usr sh -c 'ls -lR /usr >/dev/null 2>&1; true'
workload python3-json /usr/bin/python3 -c 'import json
d = [{"id": i, "name": "n%d" % i, "tags": ["a", "b"], "x": i / 7} for i in range(200000)]
s = json.dumps(d)
assert len(json.loads(s)) == 200000'
if command -v sqlite3 >/dev/null; then
    workload sqlite3 sqlite3 :memory: "create table t(a integer primary key, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 200000)
insert into t select x, hex(randomblob(16)) from c;
create index i on t(b); select count(*) from t where b like 'A%';"
fi
if command -v git >/dev/null && git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
    workload git-log-p git -C "$SRC" log -p --stat
fi
echo
"${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$OUT/forms" -- "$CHURN" -q >/dev/null 2>&1 ||
    die "memflow run of churn failed"
echo "## Which form: the churn's chunks ($(events "$OUT"/forms/memflow-*.mfl) events)"
echo
"$CBENCH" sizes "$OUT"/forms/memflow-*.mfl | sed '/^$/,$d'
echo
[ "$OPS" -gt 0 ] || exit 0

echo "## Reading both forms of one log of $OPS churn events"
echo
note "making the $OPS-event log"
"${MEMFLOW_CMD[@]}" run --no-render --no-compact -o "$OUT/read" -- "$CHURN" -q -n "$OPS" \
    >/dev/null 2>&1 || die "memflow run of churn -n $OPS failed"
mv "$OUT"/read/memflow-*.mfl "$OUT/read/live.mfl"
cp --sparse=always "$OUT/read/live.mfl" "$OUT/read/compact.mfl"
"$TIMEIT" "$OUT/read/compact.time" "${MEMFLOW_CMD[@]}" compact "$OUT/read/compact.mfl" \
    >/dev/null || die "memflow compact of the $OPS-event log failed"
echo "Compacting it took $(seconds "$OUT/read/compact.time") s;" \
    "$(bytes_of "$OUT/read/live.mfl") bytes live, $(bytes_of "$OUT/read/compact.mfl") compact."
echo
echo "Every chunk through \`mf_chunk_source_read\` (bench/compact_bench read), median of" \
    "$RUNS rounds (cold: 3); the compact form decodes ahead on $(( $(nproc) > 5 ? 4 : $(nproc) - 1 ))" \
    "thread(s) beside the reader, or on none (MEMFLOW_READ_THREADS=0)."
echo
# compact.mfl once more with MEMFLOW_READ_THREADS=0: no read-ahead threads
single() { sed 's/^| compact.mfl |/| compact.mfl, no read-ahead |/'; }
(cd "$OUT/read" && "$CBENCH" read "$RUNS" live.mfl compact.mfl)
(cd "$OUT/read" && MEMFLOW_READ_THREADS=0 "$CBENCH" read "$RUNS" compact.mfl | tail -n 1 | single)
(cd "$OUT/read" && "$CBENCH" read --cold 3 live.mfl compact.mfl | tail -n 2)
(cd "$OUT/read" && MEMFLOW_READ_THREADS=0 "$CBENCH" read --cold 3 compact.mfl | tail -n 1 | single)
echo
echo "\`memflow stats --format json\` of each form (reader + statistics), rounds interleaved:"
echo
for round in $(seq "$RUNS"); do
    for form in live compact; do
        note "stats round $round: $form"
        "$TIMEIT" "$OUT/read/stats-$form" "${MEMFLOW_CMD[@]}" stats --format json \
            "$OUT/read/$form.mfl" >"$OUT/read/stats-$form.json" || die "memflow stats failed"
    done
done
python3 - "$OUT/read/stats-live.json" "$OUT/read/stats-compact.json" <<'EOF' ||
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    for p in d["processes"]:
        p.pop("log")  # the file names differ, nothing else may
sys.exit(0 if a == b else 1)
EOF
    die "the two forms give different statistics"
median() { cut -d' ' -f"$2" "$1" | sort -n | awk '{v[NR] = $1}
    END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| form | median wall (s) | median CPU (s) | max RSS (MiB) |"
echo "|---|---|---|---|"
for form in live compact; do
    f="$OUT/read/stats-$form"
    printf '| %s | %s | %s | %s |\n' "$form" \
        "$(awk -v n="$(median "$f" 1)" 'BEGIN { printf "%.2f", n / 1e9 }')" \
        "$(awk -v n="$(median "$f" 3)" 'BEGIN { printf "%.2f", n / 1e9 }')" \
        "$(awk -v k="$(median "$f" 2)" 'BEGIN { printf "%.0f", k / 1024 }')"
done
