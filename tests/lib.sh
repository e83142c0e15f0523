# lib.sh - shared set-up for telem's integration tests (sourced, not run).
#
# Gives each test a private temporary run directory and node file, starts
# real telemd processes as virtual nodes, and kills whatever the test
# started when it exits, however it exits.
set -euo pipefail

: "${TELEM_BIN:?TELEM_BIN must name the bin directory of a telem build}"
T=$(mktemp -d /tmp/telem-it.XXXXXX)
export TELEM_RUNDIR=$T/run
export TELEM_NODEFILE=$T/nodes
mkdir -m 700 "$TELEM_RUNDIR"
declare -A NODE_PID=()
EXTRA_PIDS=()

cleanup() {
    local pids=("${NODE_PID[@]}" "${EXTRA_PIDS[@]}")
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
        kill -KILL "$p" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [ "${TELEM_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

# skip REASON...: reports the test skipped, with its measured reason, and
# exits with the code CTest counts as skipped (SKIP_RETURN_CODE 77 in
# tests/CMakeLists.txt), never as passed.
TELEM_SKIP_RC=77
skip() {
    echo "SKIPPED: $*"
    exit "$TELEM_SKIP_RC"
}

fail() {
    echo "FAIL: $*" >&2
    for f in "$T"/*.log; do
        [ -f "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}

# wait_for CMD...: runs CMD until it succeeds, for at most 20 s.
wait_for() {
    for _ in $(seq 400); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
    return 1
}

# start_node NAME [telemd options]: starts telemd as node NAME and waits
# until it has printed 'ready'.
start_node() {
    local name=$1; shift
    "$TELEM_BIN/telemd" --node "$name" --nodefile "$TELEM_NODEFILE" \
        "$@" >"$T/$name.out" 2>"$T/$name.log" &
    NODE_PID[$name]=$!
    wait_for grep -qx ready "$T/$name.out" || fail "telemd $name did not start"
}

# stop_node NAME [SIGNAL]: signals the node (default TERM) and waits for it.
stop_node() {
    local pid=${NODE_PID[$1]}
    kill -"${2:-TERM}" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "NODE_PID[$1]"
}

# expect_rc RC CMD...: runs CMD and fails the test unless it exits with RC.
expect_rc() {
    local want=$1; shift
    local got=0
    "$@" || got=$?
    [ "$got" = "$want" ] || fail "expected exit $want, got $got: $*"
}

# build_cache VAR: VAR's value in the CMake cache of the build under test.
build_cache() {
    sed -n "s/^$1:[A-Z]*=//p" "$(dirname "$TELEM_BIN")/CMakeCache.txt"
}

# install_tree: `cmake --install` of the build under test into $T/prefix,
# as an application's user would.  Sets P (the prefix), lib (its library
# directory), cc (the build's compiler), san (the flags a program linked
# with a sanitizer build's library needs) and PKG_CONFIG_PATH.
install_tree() {
    cc=$(build_cache CMAKE_C_COMPILER)
    P=$T/prefix
    lib=$P/$(build_cache CMAKE_INSTALL_LIBDIR)
    san=()
    if [ "$(build_cache TELEM_SANITIZE)" = ON ]; then
        san=(-fsanitize=address,undefined -fno-omit-frame-pointer)
    fi
    "$(build_cache CMAKE_COMMAND)" --install "$(dirname "$TELEM_BIN")" \
        --prefix "$P" >"$T/install.log" 2>&1 \
        || fail "cmake --install failed: $(tail -n 5 "$T/install.log")"
    export PKG_CONFIG_PATH=$lib/pkgconfig
}
