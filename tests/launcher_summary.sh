#!/bin/sh
# launcher_summary.sh - a program started through a launcher (tests/
# launcher.sh: a shell that runs 12 tiny processes, then execs Python,
# which holds 30 MB): the processes that held little (under 1% of the
# largest peak) share one summary panel in memory_flow and one line of the
# statistics table, the Python process leads with its own panel, nothing
# is left out of the JSON; --summary-below 0 gives each process a panel
# again (up to the limit); the option is checked.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
unset PYTHONPATH
cd "$SCRATCH"
"$MEMFLOW" run --no-render -o run -- "$top_srcdir/tests/launcher.sh" "$PYTHON" -c \
    'b = bytearray(30_000_000); import os; print(os.getpid())' > pid.out || fail "exited $?"
pid=$(cat pid.out)

# the statistics: 13 processes in the JSON (the shell became Python: one pid)
"$MEMFLOW" stats --format json run/memflow-*.mfl > stats.json || fail "stats exited $?"
expect_eq "processes in the JSON" "13 12 1" "$(json_get stats.json "'%d %d %d' % (len(set(p['pid'] for p in d['processes'])),
    len(set(p['pid'] for p in d['processes'] if p['small'])), d['small_processes']['count'] == 12)")"
expect_eq "the Python process" "True False" "$(json_get stats.json "' '.join(str(x) for p in d['processes']
    if p['pid'] == $pid and p['program'].startswith('$PYTHON') for x in (p['interpreter'], p['small']))")"
"$MEMFLOW" stats run/memflow-*.mfl > stats.txt || fail "stats exited $?"
expect_eq "table: one line for the small ones" "12 more processes, each under 1% of the largest peak" \
    "$(grep -o '^12 more processes, each under 1% of the largest peak' stats.txt)"
expect_eq "table: their programs" " /bin/ls x12" "$(grep '^12 more processes' stats.txt | sed 's/.*most)://')"
expect_eq "table: one line, the Python image's (the shell exec'd it)" \
    "process $pid: $PYTHON -c b = bytearray(30_000_000); import os; print(os.getpid()) (exec'd by 1 image before it)" \
    "$(grep '^process ' stats.txt)"

# memory_flow: the Python process's panel first, then one summary panel
panels() {
    "$PYTHON3" "$top_srcdir/tests/flame_frames.py" "$1" | grep '|cpu/0|' | sed 's/^[^|]*|cpu\/0|//; s/:   .*//'
}
"$MEMFLOW" render --formats memory_flow.svg -o pic run/memflow-*.mfl 2> pic.err || fail "render: $(cat pic.err)"
expect_eq "panels" "pid $pid
12 other processes" "$(panels pic/memory_flow.svg | sed 's/ (.*//')"
# --summary-below 0: every process its panel, up to 8 a device (7 and the rest)
"$MEMFLOW" render --summary-below 0 --formats memory_flow.svg -o all run/memflow-*.mfl 2> all.err ||
    fail "render --summary-below 0: $(cat all.err)"
expect_eq "panels without a summary" "8 6 other processes" \
    "$(panels all/memory_flow.svg | wc -l) $(panels all/memory_flow.svg | tail -n 1)"
rc=0; "$MEMFLOW" stats --summary-below 101 run/memflow-*.mfl > /dev/null 2> bad.err || rc=$?
expect_eq "bad percent" "2 memflow stats: --summary-below needs a percent from 0 to 100" "$rc $(cat bad.err)"
echo "launcher_summary: ok"
