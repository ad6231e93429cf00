#!/bin/sh
# cli_run.sh - `memflow` and `memflow run` usage, errors and exit statuses.
. "$top_srcdir/tests/lib.sh"
W="$top_builddir/tests/alloc_workload"

# status CMD...: run, print the exit status (stderr kept in $SCRATCH/err)
status() { s=0; "$@" > "$SCRATCH/out" 2> "$SCRATCH/err" || s=$?; echo "$s"; }
err_has() { grep -q -- "$1" "$SCRATCH/err" || fail "stderr lacks '$1': $(cat "$SCRATCH/err")"; }

expect_eq "no arguments" 2 "$(status "$MEMFLOW")"
err_has "usage: memflow COMMAND"
expect_eq "--help" 0 "$(status "$MEMFLOW" --help)"
grep -q "memflow run" "$SCRATCH/out" || fail "--help does not list run"
expect_eq "--version" 0 "$(status "$MEMFLOW" --version)"
expect_eq "unknown command" 2 "$(status "$MEMFLOW" frobnicate)"
err_has "unknown command 'frobnicate'"
expect_eq "run --help" 0 "$(status "$MEMFLOW" run --help)"
grep -q -- "--sample-rate N" "$SCRATCH/out" || fail "run --help lacks --sample-rate"
expect_eq "stats --help" 0 "$(status "$MEMFLOW" stats --help)"
expect_eq "render --help" 0 "$(status "$MEMFLOW" render --help)"

expect_eq "run without a command" 125 "$(status "$MEMFLOW" run -o "$SCRATCH/x")"
err_has "no command to run"
expect_eq "run unknown option" 125 "$(status "$MEMFLOW" run --frob -- true)"
err_has "unknown or incomplete option '--frob'"
expect_eq "run unknown key" 125 "$(status "$MEMFLOW" run --set profile_everything=1 -- true)"
err_has "unknown key 'profile_everything'"
err_has "sample_rate"
expect_eq "run bad value" 125 "$(status "$MEMFLOW" run --sample-rate lots -- true)"
err_has "bad value 'lots' for key 'sample_rate'"
expect_eq "run --set without =" 125 "$(status "$MEMFLOW" run --set sample_rate -- true)"
err_has "KEY=VALUE"
expect_eq "bad MEMFLOW_ variable" 125 "$(status env MEMFLOW_PROFILE_MEMORY=perhaps "$MEMFLOW" run -o "$SCRATCH/env" -- true)"
err_has "MEMFLOW_PROFILE_MEMORY"
# A bad value is the same error from --set and from the environment.
expect_eq "--set dump_period=1e300" 125 "$(status "$MEMFLOW" run --set dump_period=1e300 -- true)"
err_has "bad value '1e300' for key 'dump_period'; accepted: a number of seconds from 0.001 to 86400"
expect_eq "MEMFLOW_DUMP_PERIOD=1e300" 125 "$(status env MEMFLOW_DUMP_PERIOD=1e300 "$MEMFLOW" run -- true)"
err_has "MEMFLOW_DUMP_PERIOD: bad value '1e300' for key 'dump_period'; accepted: a number of seconds from 0.001 to 86400"
expect_eq "unknown MEMFLOW_ variable" 125 "$(status env MEMFLOW_SAMPEL_RATE=5 "$MEMFLOW" run -o "$SCRATCH/typo" -- true)"
err_has "unknown variable MEMFLOW_SAMPEL_RATE"
expect_eq "-o and --set path differ" 125 "$(status "$MEMFLOW" run -o "$SCRATCH/a" --set path="$SCRATCH/b" -- true)"
err_has "name different output folders"
expect_eq "filename with a path" 125 "$(status "$MEMFLOW" run --set filename=../../x -- true)"
err_has "bad value '../../x' for key 'filename'; accepted: a file name"
expect_eq "CSV prefix with a path" 125 "$(status "$MEMFLOW" run --set gpu_memory_profile_filename_prefix=a/b -- true)"
err_has "key 'gpu_memory_profile_filename_prefix'"
# An output's name must fit a file name with the temporary file's ".NAME.XXXXXX"
# around it: checked before the program runs, not after (it exited 1 then).
name247=$(printf "%0247d" 0)
expect_eq "filename of 248 bytes" 125 "$(status "$MEMFLOW" run -o "$SCRATCH/long" --set filename=${name247}1 -- true)"
err_has "bad value '${name247}1' for key 'filename'; accepted: a file name (no '/', not '.' or '..') of at most 247 bytes"
expect_eq "MEMFLOW_FILENAME of 248 bytes" 125 "$(status env MEMFLOW_FILENAME=${name247}1 "$MEMFLOW" run -o "$SCRATCH/long" -- true)"
err_has "of at most 247 bytes"
expect_eq "CSV prefix of 229 bytes" 125 "$(status "$MEMFLOW" run -o "$SCRATCH/long" --set gpu_memory_profile_filename_prefix=$(printf "%0229d" 0) -- true)"
err_has "of at most 228 bytes"
expect_eq "what the refused runs left" "" "$(ls -A "$SCRATCH/long" 2>/dev/null || true)"
expect_eq "unwritable output" 125 "$(status "$MEMFLOW" run -o /proc/memflow-out -- true)"
err_has "/proc/memflow-out"
# memflow's own failures before the program runs are 125, a command that
# cannot be executed 126, one that does not exist 127 (as env and timeout).
expect_eq "missing program" 127 "$(status "$MEMFLOW" run -o "$SCRATCH/missing" -- ./no-such-program)"
err_has "'./no-such-program': no such file"
grep -q "statically\|wrote no log" "$SCRATCH/err" && fail "missing program: $(cat "$SCRATCH/err")"
expect_eq "missing command" 127 "$(status "$MEMFLOW" run -o "$SCRATCH/missing" -- no-such-command-memflow)"
err_has "'no-such-command-memflow': command not found"
printf 'not a program\n' > "$SCRATCH/not-executable"
chmod 644 "$SCRATCH/not-executable"
expect_eq "not executable" 126 "$(status "$MEMFLOW" run -o "$SCRATCH/noexec" -- "$SCRATCH/not-executable")"
err_has "cannot run '.*not-executable': Permission denied"
# A program that never started leaves nothing in the output folder: not
# the staging file made for it (32 MiB), staged by default or by name, nor
# anything without one.
expect_eq "what a missing program left in its folder" "" "$(ls -A "$SCRATCH/missing")"
expect_eq "what a program that cannot run left in its folder" "" "$(ls -A "$SCRATCH/noexec")"
for stage in 1 0; do
    expect_eq "missing program, MEMFLOW_STAGE=$stage" 127 \
        "$(status env MEMFLOW_STAGE=$stage "$MEMFLOW" run -o "$SCRATCH/missing$stage" -- ./no-such-program)"
    expect_eq "not executable, MEMFLOW_STAGE=$stage" 126 \
        "$(status env MEMFLOW_STAGE=$stage "$MEMFLOW" run -o "$SCRATCH/noexec$stage" -- "$SCRATCH/not-executable")"
    expect_eq "what they left, MEMFLOW_STAGE=$stage" "" \
        "$(ls -A "$SCRATCH/missing$stage" "$SCRATCH/noexec$stage" | grep -v -e '^$' -e ':$' || true)"
done

# A program that links only the API runs unprofiled and unchanged.
expect_eq "API-only program" 0 "$(status "$top_builddir/samples/mlp")"
grep -q "loss" "$SCRATCH/out" || fail "samples/mlp printed no result"

if ! preload_works; then
    echo "cli_run: ok; SKIP the runs of programs under the preload library (sanitizer build)"
    exit 0
fi
expect_eq "--set path= as the output folder" 0 "$(status "$MEMFLOW" run --no-render --set path="$SCRATCH/setpath" -- "$W" fns)"
expect_eq "log in the --set path folder" 1 "$(ls "$SCRATCH"/setpath/memflow-*.mfl | wc -l)"

# The program's own status comes back; 128+N when killed by signal N.
expect_eq "exit status" 3 "$(status "$MEMFLOW" run --no-render -o "$SCRATCH/exit" -- "$W" exit 1)"
expect_eq "signal status" 134 "$(status "$MEMFLOW" run --no-render -o "$SCRATCH/abort" -- "$W" abort 1)"

# The longest output name works; a folder with control characters in its
# name is escaped in the line that says where the outputs went (\n \r \x1b).
expect_eq "filename of 247 bytes" 0 "$(status "$MEMFLOW" run -o "$SCRATCH/long" --set filename=$name247 --set formats=profile.json -- "$W" fns)"
test -s "$SCRATCH/long/$name247" || fail "no trace named with 247 bytes: $(ls "$SCRATCH/long")"
odd="$SCRATCH/a$(printf '\nb\rc\033')[31md"
expect_eq "output folder with control characters" 0 "$(status "$MEMFLOW" run -o "$odd" --no-compact --set formats=stats.txt -- "$W" fns)"
expect_eq "the rendered line, escaped" "memflow: 1 log rendered into $SCRATCH/a\\nb\\rc\\x1b[31md (stats.txt)" "$(cat "$SCRATCH/err")"
expect_eq "render's line, escaped" 0 "$(status "$MEMFLOW" render "$odd"/memflow-*.mfl --formats stats.json)"
expect_eq "the render line, escaped" "memflow render: into $SCRATCH/a\\nb\\rc\\x1b[31md: stats.json" "$(cat "$SCRATCH/err")"

# --sample-rate reaches the program: 4 threads x 200 events / 100 = 8 snapshots
# at least (startup allocations add events on cpu/0).
expect_eq "sampled run" 0 "$(status "$MEMFLOW" run -o "$SCRATCH/sampled" --sample-rate 100 --set formats=stats.json -- "$W" threads 4 100)"
test -s "$SCRATCH/sampled/stats.json" || fail "--set formats=stats.json wrote no stats.json"
test ! -e "$SCRATCH/sampled/memory_flow.svg" || fail "--set formats still wrote memory_flow.svg"
snaps=$(json_get "$SCRATCH/sampled/stats.json" "d['devices'][0]['snapshots']")
[ "$snaps" -ge 8 ] || fail "expected at least 8 snapshots, got $snaps"
echo "cli_run: ok"
