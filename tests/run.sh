#!/usr/bin/env bash
# run.sh - build telem and run its whole test suite.
#
#   bash tests/run.sh
#
# Installs missing Debian packages (as root), builds in build/ and runs every
# CTest, then builds again with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-sanitize/ and runs the suite there too (TELEM_SANITIZE=0 skips
# that pass).  Exits non-zero if any test fails.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

run_suite() {
    local build=$1; shift
    TELEM_BUILD_DIR=$build bash "$top/examples/setup.sh" "$@"
    echo "run: ctest in $build"
    (cd "$build" && ctest --output-on-failure -j"$jobs" --timeout 300)
}

run_suite "$top/build"
if [ "${TELEM_SANITIZE:-1}" != 0 ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suite "$top/build-sanitize" -DTELEM_SANITIZE=ON
fi
echo "run: all tests passed"
