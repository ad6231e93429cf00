#!/bin/sh
# python_names.sh - PyTorch tensors' names and roles under memflow run, with
# no memflow in the program (tests/python_names.py, torch 1.13's CPU
# tensors): each parameter named by its qualified name with numel * 4 bytes
# and the role parameter, gradients and Adam's state named at each step
# (exp_avg + exp_avg_sq = 2 x the parameter's bytes), a mark per step.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
"$PYTHON" -c 'import torch' 2> /dev/null || { echo "SKIP: no torch"; exit 77; }
unset PYTHONPATH
cd "$SCRATCH"
"$MEMFLOW" run --no-render -o run -- "$PYTHON" "$top_srcdir/tests/python_names.py" ||
    fail "exited $?"
"$top_builddir/tests/blocks" --names run/memflow-*.mfl > names.txt || fail "blocks exited $?"
expect_eq "parameters" "net:fc1:weight parameter 20000
net:fc1:bias parameter 200
net:fc2:weight parameter 2000
net:fc2:bias parameter 40" "$(grep ' parameter ' names.txt)"
expect_eq "steps" "step adam 1
step adam 2" "$(grep '^step ' names.txt)"
expect_eq "gradients, each step" "2 net:fc1:bias.grad gradient 200
2 net:fc1:weight.grad gradient 20000
2 net:fc2:bias.grad gradient 40
2 net:fc2:weight.grad gradient 2000" "$(grep ' gradient ' names.txt | LC_ALL=C sort | uniq -c | sed 's/^ *//')"
# Adam's moments: twice each parameter's bytes, under adam:
for p in net:fc1:weight net:fc1:bias net:fc2:weight net:fc2:bias; do
    param=$(grep "^$p parameter " names.txt | cut -d' ' -f3)
    state=$(grep -E "^adam:$p\.exp_avg(_sq)? optimizer_state " names.txt | head -n 2 |
            awk '{ n += $3 } END { print n }')
    expect_eq "adam state of $p" "$((2 * param))" "$state"
done
echo "python_names: ok"
