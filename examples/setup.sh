#!/usr/bin/env bash
# setup.sh - install telem's Debian packages when missing, then build telem.
#
#   bash examples/setup.sh [extra cmake -D options]
#
# Builds into $TELEM_BUILD_DIR (default: build/ at the top of the source
# tree).  Run as root on a fresh Debian 12 machine, or as a user once the
# packages are installed.  Used by examples/demo.sh and tests/run.sh.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TELEM_BUILD_DIR:-$top/build}
packages=(build-essential cmake pkg-config libzmq3-dev libczmq-dev
          libmsgpack-dev libgsl-dev libmicrohttpd-dev libjansson-dev
          zlib1g-dev libseccomp-dev python3 python3-yaml procps
          python3-dev python3-numpy python3-pytest python3-setuptools
          python3-pip)
# examples/python: SciPy's image filters, PyTorch (CPU), matplotlib's plots
packages+=(python3-scipy python3-torch python3-matplotlib)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: these Debian packages are missing and installing them needs root:" >&2
        echo "  apt-get install ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "setup: building telem in $build"
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
if ! cmake --build "$build" -j"$jobs" >"$build/build.log" 2>&1; then
    grep -Ev '^\[ *[0-9]+%\]' "$build/build.log" >&2 || true
    echo "setup: build failed (full log: $build/build.log)" >&2
    exit 1
fi
echo "setup: done; programs are in $build/bin"
