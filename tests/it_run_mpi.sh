# it_run_mpi.sh - telem_run -m with Debian's Open MPI on one machine:
#
#   mpirun --oversubscribe -np 4 telem_run -m -- ring 10 100
#
# examples/mpi/ring.c makes, on each of its 4 ranks, exactly 10 MPI_Send and
# 10 MPI_Recv of 100 ints, one MPI_Allreduce of one double and one
# MPI_Barrier.  The node totals must be exactly: MPI_Send and MPI_Recv 40
# calls and 16000 bytes each, MPI_Allreduce 4 calls and 32 bytes,
# MPI_Barrier, MPI_Init and MPI_Finalize 4 calls, telem_run_total 4
# launches.  Then the walkthrough's form, `telem_run -m -s`, counts the
# same MPI calls again (the totals double) and the ranks' system calls.
#
# Open MPI is a real peer: where mpirun is missing the test installs
# openmpi-bin and libopenmpi-dev (tests/peer_install.sh, as root on
# Debian), and is skipped, with the reason, only where it cannot (not
# root, no apt, the install failed, or TELEM_MPI_INSTALL=0).
# libtelem_mpi.so and the ring are built with telem where Open MPI's
# development files were found; when they were installed after the build
# (as on a fresh machine), the test builds both from the sources with
# mpicc, as the build would.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TELEM_SRC:?TELEM_SRC must name the source tree}"
R=$TELEM_BIN/telem_run
C=$TELEM_BIN/telem_client
[ -x "$R" ] || fail "telem_run is not built"
unset TELEM_INGEST TELEM_CTL TELEM_LEVEL TELEM_MPI_LIB || true

# ---- Open MPI -----------------------------------------------------------------
if ! command -v mpirun >/dev/null || ! command -v mpicc >/dev/null; then
    why=$(bash "$(dirname "${BASH_SOURCE[0]}")/peer_install.sh" \
          --opt-out TELEM_MPI_INSTALL openmpi-bin libopenmpi-dev) \
        || skip "Open MPI is not installed: $why"
    command -v mpirun >/dev/null || skip "Open MPI was installed but mpirun is not on PATH"
fi

build=$(dirname "$TELEM_BIN")
lib=$build/lib/libtelem_mpi.so
ring=$TELEM_BIN/ring
if [ ! -f "$lib" ] || [ ! -x "$ring" ]; then
    run=$TELEM_SRC/runtime/run
    mpicc -std=c11 -O2 -D_GNU_SOURCE -fPIC -shared -fvisibility=hidden \
        -I"$run" -I"$TELEM_SRC/runtime/common" -I"$build/include" \
        "$run"/run_counts.c "$run"/run_mpi.c "$run"/run_mpi_coll.c \
        "$run"/run_mpi_io.c "$run"/run_mpi_p2p.c "$run"/run_mpi_rma.c \
        -L"$build/lib" -Wl,-rpath,"$build/lib" -ltelem -pthread \
        -o "$T/libtelem_mpi.so" >"$T/mpicc.out" 2>&1 \
        || fail "building libtelem_mpi.so with mpicc failed: $(tail -n 5 "$T/mpicc.out")"
    mpicc -O2 "$TELEM_SRC/examples/mpi/ring.c" -o "$T/ring" >>"$T/mpicc.out" 2>&1 \
        || fail "building the ring with mpicc failed: $(tail -n 5 "$T/mpicc.out")"
    export TELEM_MPI_LIB=$T/libtelem_mpi.so
    ring=$T/ring
fi

mpi=(mpirun --oversubscribe -np 4)
if [ "$(id -u)" = 0 ]; then
    mpi+=(--allow-run-as-root)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# A sanitizer build's library needs its runtime loaded first in programs
# that are not built with it (mpirun, the ring); Open MPI's own allocations
# are not this test's leaks.
if [ "$(build_cache TELEM_SANITIZE)" = ON ]; then
    asan=$("$(build_cache CMAKE_C_COMPILER)" -print-file-name=libasan.so)
    export LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0
fi

# value METRIC TAG=V: the node total of one counter series ("" if none).
value() {
    "$C" -g "$1" --tag "$2" -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)["series"]
print("" if not s else "%d" % s[0]["points"][-1][1])'
}

expect_value() {
    local got
    got=$(value "$1" "$2")
    [ "$got" = "$3" ] || fail "$1{$2} is '$got', expected $3"
}

# check_ring N: the MPI totals after N runs of the ring on 4 ranks.
check_ring() {
    local n=$1
    expect_value mpi_calls_total call=MPI_Send $((40 * n))
    expect_value mpi_bytes_total call=MPI_Send $((16000 * n))
    expect_value mpi_calls_total call=MPI_Recv $((40 * n))
    expect_value mpi_bytes_total call=MPI_Recv $((16000 * n))
    expect_value mpi_calls_total call=MPI_Allreduce $((4 * n))
    expect_value mpi_bytes_total call=MPI_Allreduce $((32 * n))
    expect_value mpi_calls_total call=MPI_Barrier $((4 * n))
    expect_value mpi_calls_total call=MPI_Init $((4 * n))
    expect_value mpi_calls_total call=MPI_Finalize $((4 * n))
    expect_value telem_run_total operation=exec $((4 * n))
    [ -z "$(value mpi_bytes_total call=MPI_Barrier)" ] \
        || fail "MPI_Barrier moved bytes"
}

start_node n1
export TELEM_NODE=n1
cd "$T"
timeout 120 "${mpi[@]}" "$R" -m -- "$ring" 10 100 >"$T/ring.out" 2>&1 \
    || fail "mpirun telem_run -m ring failed: $(tail -n 20 "$T/ring.out")"
grep -q '40 hops' "$T/ring.out" || fail "the ring did not go round: $(cat "$T/ring.out")"
check_ring 1

# The walkthrough: MPI and system calls together.
timeout 120 "${mpi[@]}" "$R" -m -s -F 20 -- "$ring" 10 100 >"$T/ring.out" 2>&1 \
    || fail "mpirun telem_run -m -s ring failed: $(tail -n 20 "$T/ring.out")"
check_ring 2
hits=$(value strace_hits_total scall=execve)
[ -n "$hits" ] && [ "$hits" -ge 4 ] || fail "telem_run -m -s counted $hits execve, expected >= 4"

# -v prints every rank's totals, here without a telemd.
TELEM_NODE=nowhere timeout 120 "${mpi[@]}" "$R" -m -v -- "$ring" 3 5 \
    >"$T/ring.out" 2>&1 || fail "telem_run -m -v without telemd failed"
[ "$(grep -Ec 'MPI_Send +calls +3 +bytes +60$' "$T/ring.out")" = 4 ] \
    || fail "no per-rank totals with -v: $(cat "$T/ring.out")"
echo "it_run_mpi: ok"
