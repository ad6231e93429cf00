#!/bin/sh
# python_steps.sh - steps and windows of a PyTorch loop under memflow run,
# with no memflow in the program (tests/python_steps.py: 6 SGD steps; the
# line GROW keeps 1 MiB more each step, the line STEP makes one block a
# step that the next step frees): the growth per step at GROW's line,
# exactly; a window of steps (--from step:2 --to step:3) counts exactly the
# blocks made inside it, and the same window given as times counts the
# same; each step's numbers; the picture's window and its band of memory
# held from before training; a step the log lacks is an error.  Leaks: what
# grew step after step; what an interpreter held at exit is not a leak
# unless the program's own line allocated it (tests/python_exit.py).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
"$PYTHON" -c 'import torch' 2> /dev/null || { echo "SKIP: no torch"; exit 77; }
unset PYTHONPATH
cd "$SCRATCH"
P="$top_srcdir/tests/python_steps.py"
at() { grep -n "# $1\$" "$P" | cut -d: -f1; }
GROW="<module> (python_steps.py:$(at GROW))"
STEP="<module> (python_steps.py:$(at STEP))"
"$MEMFLOW" run --no-render -o run -- "$PYTHON" "$P" || fail "exited $?"

# sites NAME.json: "SITE allocs=N bytes=N" of GROW's and STEP's lines
sites() {
    "$PYTHON3" - "$1" "$GROW" "$STEP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for s in sorted(d["sites"], key=lambda s: s["site"]):
    if s["site"] in sys.argv[2:] and s["device"] == "cpu/0":
        print("%s allocs=%d bytes=%d" % (s["site"], s["alloc_count"], s["alloc_bytes"]))
PY
}

# the whole run: 1 MiB (+1: bytearray's) more at GROW's line at every mark
"$MEMFLOW" stats --format json run/memflow-*.mfl > all.json || fail "stats exited $?"
expect_eq "growth at GROW" "1048577.0 6 5 1048577 6291462" "$(json_get all.json "
' '.join(str(x) for g in d['growth'] if g['site'] == '$GROW'
         for x in (g['bytes_per_step'], g['marks'], g['marks_grew'], g['held_first_mark'],
                   g['held_last_mark']))")"
expect_eq "the largest growth" "$GROW" "$(json_get all.json "d['growth'][0]['site']")"
expect_eq "steps" "1 2 3 4 5 6" "$(json_get all.json "' '.join(str(s['step']) for s in d['steps'][0]['steps'])")"
expect_eq "no window" "None" "$(json_get all.json "d['window']")"

# a window of steps: steps 2 and 3, from step 2's mark to step 4's
"$MEMFLOW" stats --format json --from step:2 --to step:3 run/memflow-*.mfl > steps.json ||
    fail "stats --from step:2 --to step:3 exited $?"
expect_eq "window of steps: sites" "$GROW allocs=2 bytes=2097154
$STEP allocs=2 bytes=6000007" "$(sites steps.json)"
expect_eq "window of steps" "2 3 2 3" "$(json_get steps.json "
'%d %d %s' % (d['window']['from_step'], d['window']['to_step'],
              ' '.join(str(s['step']) for s in d['steps'][0]['steps']))")"
expect_eq "window of steps: growth" "1048577.0 2" "$(json_get steps.json "
' '.join(str(x) for g in d['growth'] if g['site'] == '$GROW' for x in (g['bytes_per_step'], g['marks']))")"
entered=$(json_get steps.json "d['devices'][0]['live_on_entry_count']")
[ "$entered" -gt 0 ] || fail "no block live on entry"
# the same window as times (step 2's and step 4's marks since the logs' start)
from=$(json_get steps.json "d['window']['start_ns']")
to=$(json_get steps.json "d['window']['end_ns']")
"$MEMFLOW" stats --format json --from "${from}ns" --to "$to" run/memflow-*.mfl > times.json ||
    fail "stats --from ${from}ns --to $to exited $?"
expect_eq "window of times: sites" "$(sites steps.json)" "$(sites times.json)"
expect_eq "window of times: live on entry" "$entered" \
    "$(json_get times.json "d['devices'][0]['live_on_entry_count']")"
expect_eq "window of times" "0 0 $from $to" "$(json_get times.json "
'%d %d %d %d' % (d['window']['from_step'], d['window']['to_step'], d['window']['start_ns'],
                 d['window']['end_ns'])")"

# the picture of the window: its title says so; the memory held from before
# training is one legend row
"$MEMFLOW" render --from step:2 --to step:3 --formats memory_flow.svg -o pic run/memflow-*.mfl \
    2> pic.err || fail "render exited $?: $(cat pic.err)"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" pic/memory_flow.svg > pic.hover ||
    fail "memory_flow.svg does not parse"
grep -q '|before training|[0-9.]* MiB held at the peak, ' pic.hover ||
    fail "no legend row 'before training': $(grep -v '^[0-9]* [0-9]* [0-9]* 1|' pic.hover | head -n 5)"
grep -q "^12 6 [0-9]* 40|memflow: .*|duration .*window from step 2 to the end of step 3" pic.hover ||
    fail "the title does not say the window"

# a step the log lacks, a malformed one
"$MEMFLOW" stats --from step:9 run/memflow-*.mfl > /dev/null 2> missing.err && fail "step:9 accepted"
expect_eq "missing step" "memflow: --from step:9: the logs have no step 9 (no optimizer step marked it: see docs/PYTHON.md)" \
    "$(cat missing.err)"
rc=0; "$MEMFLOW" stats --from step:0 run/memflow-*.mfl > /dev/null 2>&1 || rc=$?
expect_eq "step:0" 2 $rc
rc=0; "$MEMFLOW" render --from step:3 --to step:2 run/memflow-*.mfl > /dev/null 2>&1 || rc=$?
expect_eq "--to before --from" 2 $rc
# held at exit vs leaks (tests/python_exit.py leaves with os._exit): what
# torch's import holds is held at exit, grouped by site, not a leak; the
# blocks of the program's own lines never released are the leaks
X="$top_srcdir/tests/python_exit.py"
xat() { grep -n "# $1\$" "$X" | cut -d: -f1; }
"$MEMFLOW" run --no-render -o exit -- "$PYTHON" "$X" || fail "python_exit exited $?"
"$MEMFLOW" stats --format json exit/memflow-*.mfl > exit.json || fail "stats of exit: $?"
expect_eq "the largest leaks" "2000001 <module> (python_exit.py:$(xat OWN))
1000000 <module> (python_exit.py:$(xat TENSOR))" "$(json_get exit.json "'\\n'.join(
    '%d %s' % (l['requested'], l['site']) for l in d['leaks'][:2])")"
expect_eq "leaks only at the program's own lines" "$(xat OWN) $(xat TENSOR)" "$(json_get exit.json "' '.join(sorted(set(
    l['site'].rsplit(':', 1)[1].rstrip(')') for l in d['leaks'] if 'python_exit.py' in l['site'])))")"
expect_eq "no leak at the import" "0" "$(json_get exit.json "len([l for l in d['leaks'] if l['site'] == '<module> (python_exit.py:$(xat IMPORT))'])")"
expect_eq "held at exit: the import first" "<module> (python_exit.py:$(xat IMPORT))" \
    "$(json_get exit.json "d['held_at_exit'][0]['site']")"
held=$(json_get exit.json "d['held_at_exit'][0]['bytes']")
[ "$held" -gt 10000000 ] || fail "the import held $held bytes at exit"
# the loop of 6 steps: what grew at every step is the leak, listed first
expect_eq "growing" "$GROW 1048577.0 5" "$(json_get all.json "' '.join(
    str(x) for g in d['growing'] for x in (g['site'], g['bytes_per_step'], g['marks_grew']))")"
echo "python_steps: ok"
