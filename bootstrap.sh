#!/bin/sh
# bootstrap.sh - set up memflow on a fresh Debian 12 machine and build it.
#
# Installs every missing build and test dependency with apt-get (when run as
# root; otherwise it says which packages are missing), then runs
# autoreconf -fi && ./configure && make.  Extra arguments go to configure
# (e.g. ./bootstrap.sh --without-cuda).
set -eu
cd "$(dirname "$0")"

PACKAGES="build-essential autoconf automake libtool pkg-config \
libjemalloc-dev libcairo2-dev libpng-dev libzstd-dev librsvg2-dev check python3 \
libunwind-dev libdw-dev libmicrohttpd-dev binutils \
chromium valgrind heaptrack poppler-utils strace groff-base clang libclang-rt-dev \
python3-dev python3-numpy python3-torch"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# Node.js and npm count by their commands, not by Debian's packages: a
# machine whose nodejs comes from elsewhere (NodeSource's bundles npm, and
# conflicts with Debian's npm package) already has both.
command -v node > /dev/null 2>&1 || missing="$missing nodejs"
command -v npm > /dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "bootstrap: installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing
    else
        echo "bootstrap: missing packages:$missing" >&2
        echo "bootstrap: run as root, or: sudo apt-get install$missing" >&2
        exit 1
    fi
fi

# playwright-core (npm) drives Debian's chromium in `memflow view`'s browser
# tests; eslint checks the page's JavaScript (tests/view_lint.sh); no browser
# is downloaded (tests/view/package-lock.json pins them).
(cd tests/view && npm ci --no-audit --no-fund --ignore-scripts > /dev/null) ||
    echo "bootstrap: npm could not install playwright-core and eslint: the browser tests skip" >&2

autoreconf -fi
./configure "$@"
make -j"$(nproc)"
