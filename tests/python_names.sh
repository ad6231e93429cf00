#!/bin/sh
# python_names.sh - PyTorch tensors' names and roles under memflow run, with
# no memflow in the program (tests/python_names.py, torch 1.13's CPU
# tensors): each parameter named by its qualified name with numel * 4 bytes
# and the role parameter, the inputs and activations of each forward,
# gradients and Adam's state named at each step (exp_avg + exp_avg_sq = 2 x
# the parameter's bytes), a mark per step.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
"$PYTHON" -c 'import torch' 2> /dev/null || { echo "SKIP: no torch"; exit 77; }
unset PYTHONPATH
cd "$SCRATCH"
"$MEMFLOW" run --no-render -o run -- "$PYTHON" "$top_srcdir/tests/python_names.py" ||
    fail "exited $?"
"$top_builddir/tests/blocks" --names run/memflow-*.mfl > names.txt || fail "blocks exited $?"
expect_eq "parameters" "net:fc1:weight parameter 2000000
net:fc1:bias parameter 2000
net:fc2:weight parameter 20000
net:fc2:bias parameter 40" "$(grep ' parameter ' names.txt)"
expect_eq "steps" "step adam 1
step adam 2" "$(grep '^step ' names.txt)"
expect_eq "gradients, at the end of each backward pass and before each step" "4 net:fc1:bias.grad gradient 2000
4 net:fc1:weight.grad gradient 2000000
4 net:fc2:bias.grad gradient 40
4 net:fc2:weight.grad gradient 20000" "$(grep ' gradient ' names.txt | LC_ALL=C sort | uniq -c | sed 's/^ *//')"
# what each forward receives (8 x 1000 floats) and what autograd saves for
# backward (relu's output, 8 x 500 floats: fc1 saves the input, fc2 its
# weight and relu's output, already named), named once each step
expect_eq "inputs and activations" "2 net:activation activation 16000
2 net:input.0 input 32000" "$(grep -E ' (input|activation) ' names.txt | LC_ALL=C sort | uniq -c | sed 's/^ *//')"
# Adam's moments: twice each parameter's bytes, under adam:
for p in net:fc1:weight net:fc1:bias net:fc2:weight net:fc2:bias; do
    param=$(grep "^$p parameter " names.txt | cut -d' ' -f3)
    state=$(grep -E "^adam:$p\.exp_avg(_sq)? optimizer_state " names.txt | head -n 2 |
            awk '{ n += $3 } END { print n }')
    expect_eq "adam state of $p" "$((2 * param))" "$state"
done
# at the peak of the second step (a window from its mark on): the bytes by
# role, exactly; Adam's moments under adam: twice the parameters' bytes
"$MEMFLOW" stats --format json --from step:2 run/memflow-*.mfl > window.json ||
    fail "stats --from step:2 exited $?"
expect_eq "by role at the peak (most bytes first)" "optimizer_state 4044096 12
parameter 2022040 4
gradient 2022040 4" "$(json_get window.json "'\\n'.join('%s %d %d' % (r['role'], r['bytes'], r['blocks'])
    for p in d['at_peak'] if p['device'] == 'cpu/0' for r in p['by_role']
    if r['role'] in ('parameter', 'gradient', 'optimizer_state'))")"
expect_eq "adam's moments at the peak" "4000000 4000" "$(json_get window.json "' '.join(str(sum(
    n['bytes'] for p in d['at_peak'] for n in p['by_name']
    if n['name'] in ('adam:net:%s.exp_avg' % w, 'adam:net:%s.exp_avg_sq' % w)))
    for w in ('fc1:weight', 'fc1:bias'))")"
# --color-by role: the first layer's weight, drawn in the parameters' colour
# (read back with librsvg), its role in its hover title
"$MEMFLOW" render --color-by role --formats memory_flow.svg -o by_role run/memflow-*.mfl \
    2> by_role.err || fail "render --color-by role exited $?: $(cat by_role.err)"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" by_role/memory_flow.svg > by_role.hover ||
    fail "memory_flow.svg does not parse"
block=$(grep '|name: net:fc1:weight (parameter)|requested 2,000,000 B' by_role.hover | head -n 1)
[ -n "$block" ] || fail "no hover of net:fc1:weight (parameter)"
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    set -- $(echo "$block" | cut -d'|' -f1)
    expect_eq "parameter colour" "#1f77b4" \
        "$("$top_builddir/tests/svg_pixel" by_role/memory_flow.svg $(($1 + $3 / 2)) $(($2 + $4 / 2)))"
fi
echo "python_names: ok"
