#!/bin/sh
# view_lint.sh - memflow view's JavaScript, checked: node --check parses
# each file, and ESLint (tests/view/package.json, installed by bootstrap.sh
# with playwright-core) holds them to its recommended rules with no
# undeclared global and no unused variable (tests/view/eslint.config.js):
# the page (view/view.js), the browser tests and the benchmark's scripts.
# Skips (77) where node or eslint is missing.
. "$top_srcdir/tests/lib.sh"
NODE=$(command -v node || true)
ESLINT="$top_srcdir/tests/view/node_modules/eslint/bin/eslint.js"
if [ -z "$NODE" ] || [ ! -f "$ESLINT" ]; then
    echo "SKIP: $TEST_NAME: needs node and eslint (bootstrap.sh installs it into tests/view)"
    exit 77
fi
cd "$top_srcdir" || fail "no source folder"
files="view/view.js tests/view_lib.js tests/view_browser.js tests/view_lod.js tests/view_oom.js bench/view_browser.js bench/view_screenshot.js"
for f in $files; do
    "$NODE" --check "$f" || fail "$f does not parse"
done
"$NODE" "$ESLINT" --no-config-lookup -c tests/view/eslint.config.js $files > "$SCRATCH/eslint.out" 2>&1 ||
    fail "eslint: $(cat "$SCRATCH/eslint.out")"
echo "$TEST_NAME: $(echo $files | wc -w) files parse and pass eslint"
