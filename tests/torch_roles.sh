#!/bin/sh
# torch_roles.sh - names and roles of tensors inside the caching
# allocator's segments (sub-blocks), without a GPU: tests/torch_roles.py,
# under memflow run with Debian's torch, places a Linear net's parameters,
# gradients and Adam's state as tensors in a 16 MiB segment on cuda:0 (a
# synthetic allocator history, converted in process) and names them through
# memflow's own hooks.  Exactly: the tensors' bytes by role and names at
# the tensors' own peak (apart from the segment, whose counts stay the
# device's), Adam's state = 2 x the parameters, the tensors' steps, 1 MiB a
# step of growth at the growing tensor's site, the GPU CSV's attribute
# names, and the picture coloured by role (read back with librsvg).
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/python_lib.sh"
needs_torch
cd "$SCRATCH"
"$MEMFLOW" run -o run -- "$PYTHON" "$top_srcdir/tests/torch_roles.py" > out.txt 2> err.txt ||
    fail "torch_roles.py exited $?: $(cat err.txt)"
expect_eq "conversion" "entries=34 tensors=25 tensor_frees=4 segments=1" "$(cat out.txt)"
check_stats run/memflow-*.mfl "the tensors' roles differ" <<'EOF'
p = [x for x in d["at_peak"] if x["device"] == "gpu/0"][0]
# the device's own blocks: the segment, as before
eq("segment at the peak", (16 << 20, [("unknown", 16 << 20, 1)]),
   (p["peak_bytes"], [(r["role"], r["bytes"], r["blocks"]) for r in p["by_role"]]))
t = p["tensors"]
params = 256 * 128 * 4 + 128 * 4 + 128 * 16 * 4 + 16 * 4      # 139,840
eq("tensors' peak", 4096 + 4 * params + (4 << 20), t["peak_bytes"])
roles = {r["role"]: (r["bytes"], r["blocks"]) for r in t["by_role"]}
eq("tensors by role", {"other": (4 << 20, 4), "optimizer_state": (2 * params, 8),
                       "parameter": (params, 4), "gradient": (params, 4), "unknown": (4096, 1)},
   roles)
names = {n["name"]: n["bytes"] for n in t["by_name"]}
eq("fc1's weight", [131072] * 4,
   [names[n] for n in ("net:fc1:weight", "net:fc1:weight.grad", "adam:net:fc1:weight.exp_avg",
                       "adam:net:fc1:weight.exp_avg_sq")])
eq("adam's state", 2 * params, sum(b for n, b in names.items() if n.startswith("adam:")))
eq("no name", 4096 + (4 << 20), names["(no name)"])
# the tensors' steps: held at the mark, peak, allocated (steps 1-3: 1 MiB
# kept, a temporary of 64 KiB; step 1 also Adam's state)
s = [x for x in d["steps"] if x["device"] == "gpu/0"][0]
eq("segment's steps", [(16 << 20, 16 << 20, 0)] * 4,
   [(x["held_start"], x["peak_bytes"], x["alloc_bytes"]) for x in s["steps"]])
at1 = 4096 + 2 * params + (1 << 20)
eq("tensors' steps", [(1, at1, at1 + 2 * params + (1 << 20), 2 * params + 65536 + (1 << 20), 10),
                      (2, at1 + 2 * params + (1 << 20), at1 + 2 * params + (2 << 20),
                       65536 + (1 << 20), 2),
                      (3, at1 + 2 * params + (2 << 20), at1 + 2 * params + (3 << 20),
                       65536 + (1 << 20), 2),
                      (4, at1 + 2 * params + (3 << 20), at1 + 2 * params + (3 << 20), 0, 0)],
   [(x["step"], x["held_start"], x["peak_bytes"], x["alloc_bytes"], x["alloc_count"])
    for x in s["tensors"]["steps"]])
# growth: 1 MiB a step at the growing tensor's site, a leak
g = [x for x in d["growth"] if x["site"] == "grow (train.py:42)"]
eq("growth", [("gpu/0", True, 1048576.0, 4, 3, 1 << 20, 4 << 20)],
   [(x["device"], x["tensors"], x["bytes_per_step"], x["marks"], x["marks_grew"],
     x["held_first_mark"], x["held_last_mark"]) for x in g])
eq("growing", ["grow (train.py:42)"], [x["site"] for x in d["growing"]])
EOF
# the GPU CSV: the tensors live at the end, named
expect_eq "GPU CSV" '"Attribute Name","Requested Size","Device","Actual Size","Reuse?"
"<unk>:unknown","4096","0","4096","0"
"<unk>:unknown","1048576","0","1048576","1"
"<unk>:unknown","1048576","0","1048576","1"
"<unk>:unknown","1048576","0","1048576","1"
"<unk>:unknown","1048576","0","1048576","1"
"adam:net:fc1:bias.exp_avg","512","0","512","1"
"adam:net:fc1:bias.exp_avg_sq","512","0","512","1"
"adam:net:fc1:weight.exp_avg","131072","0","131072","1"
"adam:net:fc1:weight.exp_avg_sq","131072","0","131072","1"
"adam:net:fc2:bias.exp_avg","64","0","64","1"
"adam:net:fc2:bias.exp_avg_sq","64","0","64","1"
"adam:net:fc2:weight.exp_avg","8192","0","8192","1"
"adam:net:fc2:weight.exp_avg_sq","8192","0","8192","1"
"net:fc1:bias","512","0","512","1"
"net:fc1:bias.grad","512","0","512","1"
"net:fc1:weight","131072","0","131072","1"
"net:fc1:weight.grad","131072","0","131072","1"
"net:fc2:bias","64","0","64","1"
"net:fc2:bias.grad","64","0","64","1"
"net:fc2:weight","8192","0","8192","1"
"net:fc2:weight.grad","8192","0","8192","1"' "$(cat run/gpu_memory_profile-pid_*.csv)"
# --color-by role: the tensors in their roles' colours, the legend's rows
"$MEMFLOW" render --device gpu/0 --color-by role --formats memory_flow.svg -o by_role \
    run/memflow-*.mfl 2> by_role.err || fail "render exited $?: $(cat by_role.err)"
"$PYTHON3" "$top_srcdir/tests/flame_frames.py" by_role/memory_flow.svg > by_role.hover ||
    fail "memory_flow.svg does not parse"
expect_eq "temporaries" 4 "$(grep -c '|name: unknown (temporary)|requested 65,536 B' by_role.hover)"
for row in "tensor: other|4.00 MiB held at the peak, 4.00 MiB allocated in all" \
    "tensor: parameter|137 KiB held at the peak, 137 KiB allocated in all" \
    "tensor: temporary|0 B held at the peak, 256 KiB allocated in all"; do
    grep -qF "|$row" by_role.hover || fail "no legend row '$row'"
done
# pixel at the middle of the hover rectangle of the first line matching $1
pixel() {
    set -- "$(grep -F "$1" by_role.hover | head -n 1 | cut -d'|' -f1)"
    [ -n "$1" ] || return 1
    set -- $1
    "$top_builddir/tests/svg_pixel" by_role/memory_flow.svg $(($1 + $3 / 2)) $(($2 + $4 / 2))
}
if [ -x "$top_builddir/tests/svg_pixel" ]; then
    expect_eq "parameter colour" "#1f77b4" "$(pixel '|name: net:fc1:weight (parameter)|')"
    expect_eq "optimizer state colour" "#2ca02c" \
        "$(pixel '|name: adam:net:fc1:weight.exp_avg (optimizer_state)|')"
    expect_eq "other colour" "#bcbd22" "$(pixel '|name: unknown (other)|requested 1,048,576 B')"
fi
echo "torch_roles: ok"
