#!/bin/sh
# bench/view_screenshot.sh [OUT.png] - the README's picture of `memflow
# view` (default docs/view-mlp.png): samples/mlp under `memflow run
# --stacks`, served by `memflow view`, photographed by
# bench/view_screenshot.js in headless Chromium with the range before the
# peak selected and the largest block at the peak hovered.  Run from the
# build folder after `make` (needs node, chromium, tests/view/node_modules).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
png=${1:-$src/docs/view-mlp.png}
dir=$(mktemp -d "${TMPDIR:-/tmp}/memflow-view-shot.XXXXXX")
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
./memflow run --stacks --no-render -o "$dir/run" -- ./samples/mlp > /dev/null
./memflow view "$dir/run" --no-open > "$dir/view.out" 2> "$dir/view.err" &
pid=$!
for i in $(seq 1 100); do
    grep -q 'http://' "$dir/view.out" 2>/dev/null && break
    sleep 0.1
done
NODE_PATH="$src/tests/view/node_modules" CHROMIUM=${CHROMIUM:-/usr/bin/chromium} \
    node "$src/bench/view_screenshot.js" "$(grep -o 'http://[^ ]*' "$dir/view.out")" "$png"
echo "$png"
