#!/bin/sh
# run_oom_kill.sh - a program a cgroup's OOM killer kills under memflow
# run: the real thing, in a memory cgroup of its own with a limit of 96 MiB
# (memory and swap), where alloc_workload hogs 8 MiB chunks until the
# kernel kills it.  memflow run says so on stderr and in the header's end
# (end_how 5, signal 9); the statistics and the picture lead with the
# post-mortem of what it held.  Needs root and a writable cgroup memory
# controller (v1 or v2), else skipped.
. "$top_srcdir/tests/lib.sh"
needs_preload
HEADER="$top_builddir/tests/logheader"
W="$top_builddir/tests/alloc_workload"
skip() { echo "SKIP: $TEST_NAME: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root to make a memory cgroup"

# Our memory cgroup (v1's memory controller, else v2's unified tree).
v1=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
v2=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
if [ -n "$v1" ] && [ -w "/sys/fs/cgroup/memory$v1" ]; then
    CG="/sys/fs/cgroup/memory${v1%/}/memflow-oom-$$"
    mkdir "$CG" 2> /dev/null || skip "cannot make a cgroup under /sys/fs/cgroup/memory$v1"
    echo $((96 << 20)) > "$CG/memory.limit_in_bytes"
    [ ! -e "$CG/memory.memsw.limit_in_bytes" ] ||
        echo $((96 << 20)) > "$CG/memory.memsw.limit_in_bytes"
elif [ -n "$v2" ] && grep -qw memory "/sys/fs/cgroup${v2%/}/cgroup.subtree_control" 2> /dev/null; then
    CG="/sys/fs/cgroup${v2%/}/memflow-oom-$$"
    mkdir "$CG" 2> /dev/null || skip "cannot make a cgroup under /sys/fs/cgroup$v2"
    echo $((96 << 20)) > "$CG/memory.max"
    echo 0 > "$CG/memory.swap.max" 2> /dev/null || true
else
    skip "no writable memory cgroup"
fi
trap 'rmdir "$CG" 2> /dev/null || true' EXIT

# memflow run (and so the program) in the cgroup: a shell that moves itself
# there, then becomes memflow run.
status=0
sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
    "$MEMFLOW" run -o "$SCRATCH/run" -- "$W" hog 8 > /dev/null 2> "$SCRATCH/run.err" ||
    status=$?
expect_eq "memflow run's status (SIGKILL)" 137 "$status"
pid=$(sed -n 's/^memflow run: process \([0-9]*\) was killed by the OOM killer .*/\1/p' \
    "$SCRATCH/run.err")
[ -n "$pid" ] || fail "memflow run did not say the OOM killer killed the program: $(cat "$SCRATCH/run.err")"
log="$SCRATCH/run/memflow-$pid.mfl"
"$HEADER" "$log" > "$SCRATCH/header"
expect_eq "the header's end" "end_how=5 end_status=9" \
    "$(grep -E '^end_(how|status)=' "$SCRATCH/header" | tr '\n' ' ' | sed 's/ $//')"
"$MEMFLOW" stats "$log" > "$SCRATCH/stats.txt" 2> /dev/null || true
expect_eq "stats: the first section" "Out of memory at" "$(sed -n 5p "$SCRATCH/stats.txt" | cut -c1-16)"
"$MEMFLOW" stats --format json "$log" > "$SCRATCH/stats.json" 2> /dev/null || true
"$PYTHON3" - "$SCRATCH/stats.json" "$pid" <<'EOF' || fail "the post-mortem of the OOM kill differs"
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
p = [p for p in d["processes"] if p["pid"] == pid][0]
if (p["end"]["how"], p["end"]["status"], p["abnormal"]) != ("oom_killed", 9, True):
    sys.exit("end: %r" % p["end"])
o = d["ooms"]
if len(o) != 1 or o[0]["route"] != "oom_killer" or o[0]["device"] != "cpu/0" or \
        o[0]["pid"] != pid or o[0]["requested"] != 0:
    sys.exit("ooms: %r" % o)
hog = [s for s in o[0]["by_scope"] if s["scope"] == "hog:"]
# what it held: whole 8 MiB chunks, as many as fitted under the limit
if len(hog) != 1 or hog[0]["bytes"] != hog[0]["count"] * (8 << 20) or hog[0]["count"] < 1 or \
        hog[0]["count"] > 12:
    sys.exit("hog: %r" % hog)
if o[0]["by_scope"][0]["scope"] != "hog:":
    sys.exit("the hog is not first: %r" % o[0]["by_scope"])
EOF
exit 0
