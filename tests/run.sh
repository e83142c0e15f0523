#!/usr/bin/env bash
# run.sh - build telem and run its whole test suite.
#
#   bash tests/run.sh
#
# Installs missing Debian packages (as root), builds in build/ and runs every
# CTest, then builds again with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-sanitize/ and runs the suite there too, then the fuzz pass:
# tests/fuzz/run.sh builds the libFuzzer targets in build-fuzz/ and runs
# each for a bounded time (each target counts as one test; skipped, with
# the reason, where clang-14 and libclang-rt-14-dev are missing and cannot
# be installed).  Every pass always runs, whatever the others give; each
# prints its summary (passed, failed and skipped, with every skipped
# test's reason), and the last line totals them:
#
#   total: 80 passed, 0 failed, 4 skipped
#
# The exit status is non-zero if a build or a test failed in any pass.
# Run as root on Debian, the tests whose real peer (Slurm, Chromium,
# Prometheus, Open MPI, clang for the fuzz pass) is missing install it
# (tests/peer_install.sh).
# A skipped test is one that could not decide here (no real-time scheduling,
# a peer that could not be installed, a machine too busy to judge a live
# detection) and said why.
#
# Environment:
#   TELEM_SANITIZE=0        no sanitizer pass
#   TELEM_FUZZ_PASS=0       no fuzz pass (nor with TELEM_TEST_LABEL)
#   TELEM_TEST_STRESS=N     keep N busy loops (normal priority, not pinned)
#                           running for the whole run: the suite must pass or
#                           skip with measured reasons on a busy machine too
#   TELEM_TEST_LABEL=L      run only the tests labelled L (ctest -L), for
#                           example "live": the live-detection tests
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
stress=${TELEM_TEST_STRESS:-0}
label=${TELEM_TEST_LABEL:-}
if ! [[ $stress =~ ^[0-9]+$ ]] || ((stress > 64)); then
    echo "run: TELEM_TEST_STRESS must be a number of busy loops from 0 to 64," \
         "not '$stress'" >&2
    exit 2
fi

busy=()
stop_stress() {
    ((${#busy[@]})) || return 0
    kill "${busy[@]}" 2>/dev/null || true
    wait "${busy[@]}" 2>/dev/null || true
    busy=()
}
trap stop_stress EXIT
trap 'exit 130' INT TERM

# skip_reasons BUILD: "name: reason" for every test of the last ctest run
# that reported itself skipped (its "SKIPPED: ..." line).
skip_reasons() {
    local log=$1/Testing/Temporary/LastTest.log sum=$1.ctest.log
    [ -f "$log" ] || return 0
    [ -f "$sum" ] || sum=/dev/null
    # The skipped tests are the ones ctest's summary ("NNN - name
    # (Skipped)") names; their reasons are the lines "SKIPPED: why" of the
    # C and shell tests and "SKIPPED [1] file:line: why" of pytest's
    # summary (a pytest file that passed may skip some of its tests: those
    # are not listed).  Without the summary every reason is listed.
    awk 'FILENAME == ARGV[1] { if ($0 ~ / - [^ ]+ \(Skipped\)$/) {
                         n = $0; sub(/.* - /, "", n); sub(/ \(Skipped\)$/, "", n)
                         skipped[n] = 1; any = 1 }
                     next }
         /^[0-9]+\/[0-9]+ Testing: / { name = $3 }
         name != "" && (!any || name in skipped) && /^SKIPPED(: | \[[0-9]+\] )/ {
             sub(/^SKIPPED: /, ""); sub(/^SKIPPED \[[0-9]+\] [^:]*:[0-9]+: /, "")
             print "  " name ": " $0; name = "" }' "$sum" "$log"
}

total_pass=0 total_fail=0 total_skip=0 failed_passes=()

# run_pass NAME BUILD [cmake options]: builds in BUILD and runs ctest
# there; adds its counts to the totals and prints its summary.
run_pass() {
    local name=$1 build=$2; shift 2
    local out=$build.ctest.log
    echo "run: === $name pass: build in $build"
    if ! TELEM_BUILD_DIR=$build bash "$top/examples/setup.sh" "$@"; then
        echo "run: $name pass: the build failed"
        failed_passes+=("$name (build)")
        total_fail=$((total_fail + 1))
        return
    fi
    local args=(--output-on-failure -j"$jobs" --timeout 300)
    [ -n "$label" ] && args+=(-L "$label")
    echo "run: ctest in $build${label:+ (label $label)}"
    (cd "$build" && ctest "${args[@]}") 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]}
    local n pass fail skip
    n=$(sed -nE 's/.*tests failed out of ([0-9]+).*/\1/p' "$out" | tail -n 1)
    fail=$(sed -nE 's/.* ([0-9]+) tests failed out of.*/\1/p' "$out" | tail -n 1)
    skip=$(grep -c '(Skipped)$' "$out" || true)
    n=${n:-0} fail=${fail:-0}
    pass=$((n - fail - skip))
    ((rc == 0 && n == 0)) && { echo "run: $name pass ran no test"; rc=1; }
    echo "run: === $name pass: $pass passed, $fail failed, $skip skipped"
    skip_reasons "$build"
    total_pass=$((total_pass + pass))
    total_fail=$((total_fail + fail))
    total_skip=$((total_skip + skip))
    ((rc == 0)) || failed_passes+=("$name")
}

# fuzz_pass: the libFuzzer targets of tests/fuzz (tests/fuzz/run.sh, each
# target one test) when clang-14 and libclang-rt-14-dev are installed;
# as root it installs them, otherwise the pass is skipped with the reason.
fuzz_pass() {
    local out=$top/build-fuzz.ctest.log n missing=() p why
    n=$(find "$top/tests/fuzz" -maxdepth 1 -name 'fuzz_*.c' ! -name fuzz_seeds.c | wc -l)
    for p in clang-14 libclang-rt-14-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
            || missing+=("$p")
    done
    if ((${#missing[@]})) && [ "$(id -u)" -eq 0 ] \
       && why=$(bash "$top/tests/peer_install.sh" "${missing[@]}"); then
        missing=()
    fi
    if ((${#missing[@]})); then
        echo "run: === fuzz pass: 0 passed, 0 failed, $n skipped"
        echo "  fuzz: missing ${missing[*]} (${why:-apt-get install ${missing[*]}, as root})"
        total_skip=$((total_skip + n))
        return
    fi
    echo "run: === fuzz pass: tests/fuzz/run.sh"
    bash "$top/tests/fuzz/run.sh" 2>&1 | tee "$out"
    local rc=${PIPESTATUS[0]} counts
    counts=$(sed -nE 's/^fuzz: ([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$out" | tail -n 1)
    [ -n "$counts" ] || counts="0 1"            # the build failed
    echo "run: === fuzz pass: ${counts% *} passed, ${counts#* } failed, 0 skipped"
    total_pass=$((total_pass + ${counts% *}))
    total_fail=$((total_fail + ${counts#* }))
    ((rc == 0)) || failed_passes+=("fuzz")
}

if ((stress > 0)); then
    for _ in $(seq "$stress"); do
        bash -c 'while :; do :; done' &
        busy+=("$!")
    done
    echo "run: stress mode: $stress busy loops (pids ${busy[*]}) for the whole run"
fi

run_pass normal "$top/build"
if [ "${TELEM_SANITIZE:-1}" != 0 ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_pass sanitizer "$top/build-sanitize" -DTELEM_SANITIZE=ON
fi
stop_stress
if [ "${TELEM_FUZZ_PASS:-1}" != 0 ] && [ -z "$label" ]; then
    fuzz_pass
fi

if ((${#failed_passes[@]})); then
    echo "run: failed: ${failed_passes[*]}"
    echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
    exit 1
fi
echo "total: $total_pass passed, $total_fail failed, $total_skip skipped"
