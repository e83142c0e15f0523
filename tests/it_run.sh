# it_run.sh - telem_run against a real telemd: launch counts, exact
# system-call counts, exit statuses, signals, attach and detach, no telemd.
#
# The traced programs are test_run_trace's workloads (`test_run_trace
# child MODE ...`, described in tests/test_run_trace.c): N write() calls of
# K bytes to /dev/null, in one thread, in several, in forked children.
# Counters are node sums, so every check reads the node's running total
# after the runs so far; each telem_run waits for telemd's acknowledgement
# of its counts before it exits, so the totals are final when it returns.
# Checked: strace_hits_total{scall="write"} and strace_size_total are
# exact; telem_run_total counts every launch and attach; telem_run exits
# with the program's status (128+N for signal N, 126/127 when it cannot be
# run, 2 for bad usage); signals sent to telem_run reach the program and
# the program's own signals work traced; -S attaches to a running
# three-thread program, Ctrl-C (SIGINT) detaches, the program goes on and
# its output is unchanged; -u names the node by endpoint or directory;
# without telemd telem_run says so once and the program still runs.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
R=$TELEM_BIN/telem_run
C=$TELEM_BIN/telem_client
for f in "$R" "$C" "$TELEM_BIN/test_run_trace"; do
    [ -x "$f" ] || fail "$f is not built"
done
P=("$TELEM_BIN/test_run_trace")
# A sanitizer build's programs cannot check for leaks while traced (the
# leak checker uses ptrace itself): the traced workloads run without it.
if [ "$(build_cache TELEM_SANITIZE)" = ON ]; then
    P=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "${P[@]}")
fi
unset TELEM_INGEST TELEM_CTL TELEM_LEVEL || true

# value METRIC TAG=V: the node total of one counter series ("" if none).
value() {
    "$C" -g "$1" --tag "$2" -f json | python3 -c '
import json, sys
s = json.load(sys.stdin)["series"]
print("" if not s else "%d" % s[0]["points"][-1][1])'
}

# grown FILE SIZE: FILE is larger than SIZE bytes (for wait_for).
grown() {
    [ "$(stat -c %s "$1")" -gt "$2" ]
}

# expect_value METRIC TAG=V WANT
expect_value() {
    local got
    got=$(value "$1" "$2")
    [ "$got" = "$3" ] || fail "$1{$2} is '$got', expected $3"
}

start_node n1
export TELEM_NODE=n1

# ---- exact counts --------------------------------------------------------
"$R" -s -- "${P[@]}" child write 1000 100 || fail "telem_run -s write failed"
expect_value strace_hits_total scall=write 1000
expect_value strace_size_total scall=write 100000
expect_value telem_run_total operation=exec 1
"$R" -s -- "${P[@]}" child threads 4 250 64 || fail "telem_run -s threads failed"
expect_value strace_hits_total scall=write 2000
expect_value strace_size_total scall=write 164000
"$R" -s -- "${P[@]}" child fork 3 100 10 || fail "telem_run -s fork failed"
"$R" -s -F 1000 -- "${P[@]}" child vfork 2 50 10 || fail "telem_run -s vfork failed"
expect_value strace_hits_total scall=write 2400
expect_value strace_size_total scall=write 168000
expect_value telem_run_total operation=exec 4
# Every process ends with one exit_group: 1 + 1 + (1 + 3) + (1 + 2).
expect_value strace_hits_total scall=exit_group 9
# Without -s the launch is counted and nothing else.
"$R" -- "${P[@]}" child write 10 1 || fail "telem_run without -s failed"
expect_value strace_hits_total scall=write 2400
expect_value telem_run_total operation=exec 5

# ---- exit statuses ----------------------------------------------------------
expect_rc 7 "$R" -- "${P[@]}" child exit 7
expect_rc 7 "$R" -s -- "${P[@]}" child exit 7
expect_rc 143 "$R" -- "${P[@]}" child kill 15
expect_rc 143 "$R" -s -- "${P[@]}" child kill 15
expect_rc 127 "$R" -- no-such-program-anywhere
expect_rc 127 "$R" -s -- no-such-program-anywhere
printf 'not a program\n' >"$T/plain.txt"
chmod +x "$T/plain.txt"
expect_rc 126 "$R" -- "$T/plain.txt"
expect_rc 126 "$R" -s -- "$T/plain.txt"
expect_rc 0 "$R" -s -- "${P[@]}" child signals 100
expect_rc 2 "$R"
expect_rc 2 "$R" -S 1 -- true
expect_rc 2 "$R" -m -S 1
expect_rc 2 "$R" -F 0 -- true
expect_rc 2 "$R" --no-such-option -- true
"$R" --help | grep -q '^Usage: telem_run' || fail "no usage from --help"

# ---- signals sent to telem_run reach the program ----------------------------
for mode in "" -s; do
    out=$T/sig$mode.out
    # shellcheck disable=SC2086
    "$R" $mode -- sh -c 'trap "echo got TERM; exit 0" TERM; echo ready;
        while :; do sleep 0.05; done' >"$out" 2>&1 &
    pid=$!
    wait_for grep -q ready "$out" || fail "the program under telem_run $mode did not start"
    kill -TERM "$pid"
    got=0; wait "$pid" || got=$?
    [ "$got" = 0 ] || fail "telem_run $mode exited $got after SIGTERM, expected 0"
    grep -q 'got TERM' "$out" || fail "SIGTERM did not reach the program ($mode)"
done

# ---- -S: attach, detach with SIGINT, the program goes on unchanged ----------
"${P[@]}" child ticker 3 1 >"$T/ticker.out" &
tick=$!
EXTRA_PIDS+=("$tick")
before=$(value strace_hits_total scall=write)
wait_for test -s "$T/ticker.out" || fail "the ticker did not start"
"$R" -S "$tick" -v 2>"$T/attach.err" &
att=$!
wait_for grep -q "attached to process $tick" "$T/attach.err" \
    || fail "telem_run -S did not attach: $(cat "$T/attach.err")"
# Let it count some writes, then detach as Ctrl-C would.
size=$(stat -c %s "$T/ticker.out")
wait_for grown "$T/ticker.out" $((size + 2400)) \
    || fail "the ticker stopped writing while traced"
kill -INT "$att"
got=0; wait "$att" || got=$?
[ "$got" = 0 ] || fail "telem_run -S exited $got after SIGINT: $(cat "$T/attach.err")"
grep -q "detached from process $tick" "$T/attach.err" || fail "no detach message"
kill -0 "$tick" 2>/dev/null || fail "the ticker died at the detach"
size=$(stat -c %s "$T/ticker.out")
wait_for grown "$T/ticker.out" $((size + 2400)) \
    || fail "the ticker stopped writing after the detach"
kill -TERM "$tick"
wait "$tick" 2>/dev/null || true
python3 - "$T/ticker.out" <<'PY' || fail "the ticker's output changed under telem_run -S"
import struct, sys
data = open(sys.argv[1], "rb").read()
data = data[:len(data) // 8 * 8]
nxt = [0, 0, 0]
for t, i in struct.iter_unpack("<II", data):
    if t > 2 or i != nxt[t]:
        sys.exit(f"record {t},{i} where {t},{nxt[t] if t < 3 else '?'} was due")
    nxt[t] += 1
if min(nxt) < 100:
    sys.exit(f"too few records: {nxt}")
PY
after=$(value strace_hits_total scall=write)
[ "$after" -gt "$before" ] || fail "-S counted no write ($before -> $after)"
expect_value telem_run_total operation=attach 1
expect_rc 125 "$R" -S 999999999
expect_rc 125 "$R" -u "$T/no-such-node" -- true
expect_rc 125 "$R" -u "$T/plain.txt" -- true

# ---- -u: the node by directory and by endpoint ------------------------------
start_node n2
for where in "$TELEM_RUNDIR/n2" "$TELEM_RUNDIR/n2/ctl.sock" \
             "ipc://$TELEM_RUNDIR/n2/ingest.sock"; do
    TELEM_NODE=n1 "$R" -s -u "$where" -- "${P[@]}" child write 5 2 \
        || fail "telem_run -u $where failed"
done
TELEM_NODEFILE=$T/n2only
grep "^n2	" "$T/nodes" >"$TELEM_NODEFILE"
export TELEM_NODEFILE
expect_value strace_hits_total scall=write 15
expect_value telem_run_total operation=exec 3
export TELEM_NODEFILE=$T/nodes

# ---- no telemd: the program runs, telem_run says so once --------------------
TELEM_NODE=nowhere "$R" -s -- "${P[@]}" child write 10 1 2>"$T/none.err" \
    || fail "telem_run without telemd failed: $(cat "$T/none.err")"
[ "$(grep -c 'no telemd' "$T/none.err")" = 1 ] \
    || fail "expected one 'no telemd' line: $(cat "$T/none.err")"
[ "$(wc -l <"$T/none.err")" = 1 ] || fail "more than one line: $(cat "$T/none.err")"
TELEM_NODE=nowhere "$R" -s -v -- "${P[@]}" child write 10 1 2>"$T/none.err" \
    || fail "telem_run -v without telemd failed"
grep -Eq 'write +10 +10$' "$T/none.err" || fail "no totals with -v: $(cat "$T/none.err")"
expect_rc 3 env TELEM_NODE=nowhere "$R" -- "${P[@]}" child exit 3
echo "it_run: ok"
