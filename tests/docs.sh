#!/bin/sh
# docs.sh - the documentation says what the program does: every subcommand,
# option and configuration key the memflow command accepts is in the README
# and in memflow(1); every output it writes (the one list of outputs,
# common/outputs_table.h) is in the README, memflow(1) and docs/OUTPUTS.md;
# every function of memflow.h is in memflow(3); the man pages format without
# warnings.
. "$top_srcdir/tests/lib.sh"
MAN1="$top_srcdir/docs/memflow.1"
MAN3="$top_srcdir/docs/memflow.3"
README="$top_srcdir/README.md"

# The keys, as the program lists them when given an unknown one.
"$MEMFLOW" run --set no_such_key=1 -- true 2> "$SCRATCH/keys.err" || true
keys=$(sed -n 's/.*accepted keys: //p' "$SCRATCH/keys.err" | tr -d ',')
[ -n "$keys" ] || fail "no key list in: $(cat "$SCRATCH/keys.err")"
for key in $keys; do
    grep -q "^\.B.* $key\b\|^\.B $key$\|^\.BR.*\b$key\b" "$MAN1" || fail "memflow(1) lacks the key $key"
    grep -q "^| .*\`$key\`" "$README" || fail "README's key table lacks $key"
done

# The outputs, as the program lists them when given an unknown one.
"$MEMFLOW" render --formats no_such_output none.mfl 2> "$SCRATCH/outputs.err" || true
outputs=$(sed -n 's/.*accepted: a comma-separated list of //p' "$SCRATCH/outputs.err" | tr -d ',')
[ -n "$outputs" ] || fail "no output list in: $(cat "$SCRATCH/outputs.err")"
grep '^| `--formats LIST`' "$README" > "$SCRATCH/formats.row" || fail "README has no --formats row"
for name in $outputs; do
    grep -qF "\`$name\`" "$SCRATCH/formats.row" || fail "README's --formats row lacks $name"
    grep -qF "$name" "$MAN1" || fail "memflow(1) lacks the output $name"
    grep -qF "$name" "$top_srcdir/docs/OUTPUTS.md" || fail "docs/OUTPUTS.md lacks the output $name"
done

# The subcommands, as `memflow --help` lists them, and each one's options.
"$MEMFLOW" --help > "$SCRATCH/help"
commands=$(sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' "$SCRATCH/help")
[ -n "$commands" ] || fail "no commands in memflow --help"
for cmd in $commands; do
    grep -q "^\.SS memflow $cmd" "$MAN1" || fail "memflow(1) lacks the command $cmd"
    grep -q "memflow $cmd" "$README" || fail "README lacks memflow $cmd"
    "$MEMFLOW" "$cmd" --help > "$SCRATCH/$cmd.help" 2>&1 || true
    for opt in $(grep -o -- '--[a-z][a-z-]*' "$SCRATCH/$cmd.help" | sort -u); do
        [ "$opt" = --help ] && continue
        # roff writes a dash in an option as \-
        roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
        grep -q -- "$roff" "$MAN1" || fail "memflow(1) lacks memflow $cmd $opt"
        grep -q -- "$opt" "$README" || fail "README lacks memflow $cmd $opt"
    done
done

# The C API.
for fn in $(sed -n 's/^[a-z].* \**\(memflow_[a-z_]*\)(.*/\1/p' "$top_builddir/include/memflow.h"); do
    grep -q "^\.BI\? .*$fn\|^$fn\|[ ,]$fn[ ,(]" "$MAN3" || fail "memflow(3) lacks $fn"
done

# Both pages format cleanly.
for page in "$MAN1" "$MAN3"; do
    groff -man -ww -z "$page" > "$SCRATCH/groff.out" 2>&1 || fail "groff failed on $page"
    [ ! -s "$SCRATCH/groff.out" ] || fail "groff warns on $page: $(cat "$SCRATCH/groff.out")"
done
exit 0
