# it_launch_relay.sh - telem_launch --relays on local virtual nodes
# (docs/telem_launch.md, docs/relay.md).
#
# A job of 6 active nodes and a reserve with --relays 3: the relays file
# appears (beside the node file and as launch/relays, mode 0600) with two
# relays covering the six nodes; telem_client answers every node the same
# through them as directly (TELEM_RELAYS=), and the relays did serve;
# telem_watch (a detector that never fires) reconnects to the relays once
# the file is written, telem_agg uses them and reconnects when the file
# changes; a killed relay leaves the file, and every node still
# answers (directly);
# a restart that excludes a node rewrites the file with the new groups,
# without it; at the end no relay runs and no relays file is left.
# --relays off and --relays auto on 6 nodes start no relay; bad values are
# usage errors.  Every wait is for behaviour (the launcher's files and
# processes), bounded by lib.sh's wait_for.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
C=$TELEM_BIN/telem_client
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL TELEM_RELAYS TELEM_KEYS SLURM_JOB_NODELIST || true
RELAYS=$(dirname "$TELEM_NODEFILE")/relays
RELAYS2=$TELEM_RUNDIR/launch/relays

cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
# A job's program: says it runs, then waits for the test's go file.
echo $$ >"$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE.pid"
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF
chmod +x "$T/prog.sh"
export OUT

launch() {   # launch NAME [options]: the launcher in the background
    local name=$1; shift
    "$L" --rundir "$TELEM_RUNDIR" --grace 2 --agg-port 0 "$@" \
        -- "$T/prog.sh" >"$T/$name.out" 2>"$T/$name.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}
finish() {
    local rc=0
    wait "$LPID" || rc=$?
    [ "$rc" = "$1" ] || fail "telem_launch exited $rc, expected $1"
}
relay_lines() { grep -v '^#' "$RELAYS" 2>/dev/null | grep -c . || true; }
groups() { grep -v '^#' "$RELAYS" | cut -f3 | sort | tr '\n' ' '; }
has_groups() { [ "$(groups 2>/dev/null)" = "$1" ]; }
relay_pids() { pgrep -f "telem_relay .*$TELEM_RUNDIR" || true; }
no_relay_left() {
    [ -z "$(relay_pids)" ] && [ ! -e "$RELAYS" ] && [ ! -e "$RELAYS2" ]
}
telemd_pid() { sed -n 's/^pid\t//p' "$TELEM_RUNDIR/$1/endpoints"; }

# --- command line ----------------------------------------------------------
expect_rc 2 "$L" --relays 1 --local 2 -- true 2>"$T/usage.err"
grep -q -- "--relays" "$T/usage.err" || fail "no clear message for --relays 1"
expect_rc 2 "$L" --relays some --local 2 -- true 2>/dev/null
"$L" --help >"$T/help.txt" && grep -q -- "--relays auto|off|K" "$T/help.txt" \
    || fail "--help does not show --relays"

# --- --relays 3: two relays over six nodes ----------------------------------
# A detector that never fires: telem_watch runs, and must follow the file.
launch r --local 7 --nodes 6 --relays 3 --resilient --daemon-failure exclude \
    --detector "quiet=threshold:metric=it_none,op=>,value=0,severity=warn"
wait_for test -f "$OUT/run-0-n6.pid" || fail "the program did not start"
wait_for has_groups "n1,n2,n3 n4,n5,n6 " \
    || fail "relays file: $(cat "$RELAYS" 2>&1)"
cmp -s "$RELAYS" "$RELAYS2" || fail "launch/relays differs from $RELAYS"
[ "$(stat -c %a "$RELAYS")" = 600 ] || fail "relays file mode $(stat -c %a "$RELAYS")"
grep -v '^#' "$RELAYS" | cut -f2 | grep -qv '^tcp://127\.0\.0\.1:' \
    && fail "a relay endpoint is not loopback TCP: $(cat "$RELAYS")"
[ "$(relay_pids | wc -l)" = 2 ] || fail "$(relay_pids | wc -l) relay processes, 2 expected"
echo "relays file: $(groups)"
watch_saw() {   # watch_saw N K: telem_watch took K relays up N times (at
                # its start when the file was there, else when it came)
    [ "$(grep -c "telem_watch.*relays file [a-z]*: $2 relay(s) in use" \
         "$T/r.log")" -ge "$1" ]
}
wait_for watch_saw 1 2 || fail "telem_watch did not take the relays file up"

# Status through the relays and directly: the same nodes, the same states.
cols() { awk -F'|' 'NR > 2 { print $2, $3 }' "$1" | sort; }
"$C" --timeout 10000 status >"$T/st.relay" || fail "status through relays"
TELEM_RELAYS= "$C" --timeout 10000 status >"$T/st.direct" \
    || fail "status directly"
cols "$T/st.relay" >"$T/c.relay"
cols "$T/st.direct" >"$T/c.direct"
cmp -s "$T/c.relay" "$T/c.direct" \
    || fail "status differs: $(diff "$T/c.relay" "$T/c.direct")"
[ "$(grep -c ' ok' "$T/c.relay")" = 6 ] || fail "not 6 nodes ok: $(cat "$T/st.relay")"

# telem_agg (started before the file existed) reads launch/relays: one of
# its requests holds a connection to each relay.
agg_ask() {   # one read through telem_agg that asks every node
    local url
    url=$(cat "$TELEM_RUNDIR/telem_agg/url")
    curl -sf -H "Authorization: Bearer $(cat "$TELEM_RUNDIR/keys/agg.token")" \
        "${url%/}/api/suggest?type=metrics&q=&max=5" >/dev/null
}
agg_conns() {   # agg_conns PORT: telem_agg's connections to that port
    ss -tnp state established "( dport = :$1 )" | grep "pid=$AGG," \
        | awk '{ print $3 }' || true
}
relay_port() {
    grep -v '^#' "$RELAYS" | awk -F'\t' -v g="$1" '$3 == g { print $2 }' \
        | sed 's/.*://'
}
AGG=
if command -v curl >/dev/null && command -v ss >/dev/null; then
    AGG=$(pgrep -f "telem_agg --rundir $TELEM_RUNDIR " | head -n 1)
    [ -n "$AGG" ] || fail "no telem_agg in the job"
    agg_ask || fail "a read through telem_agg"
    p1=$(relay_port n1,n2,n3)
    [ -n "$(agg_conns "$p1")" ] && [ -n "$(agg_conns "$(relay_port n4,n5,n6)")" ] \
        || fail "telem_agg holds no connection to the relays: $(ss -tnp | grep "pid=$AGG,")"
    agg_before=$(agg_conns "$p1")
else
    echo "curl or ss missing: telem_agg's use of the relays not checked"
fi

# --- a relay killed: its group leaves the file, its nodes answer directly ---
r2=$(grep -v '^#' "$RELAYS" | awk -F'\t' '$3 == "n4,n5,n6" { print $1 }')
kill -KILL "$(pgrep -f "telem_relay .*--rundir $TELEM_RUNDIR .*--name $r2( |\$)")" \
    || fail "no relay $r2"
wait_for has_groups "n1,n2,n3 " || fail "after killing $r2: $(cat "$RELAYS")"
"$C" --timeout 10000 status >"$T/st.dead" || fail "status without $r2"
[ "$(grep -Ec '^\| n[1-6] +\| ok' "$T/st.dead")" = 6 ] \
    || fail "not every node answered without $r2: $(cat "$T/st.dead")"
# telem_agg's client is made again from the rewritten file (its node file
# did not change): a new connection to the relay left.
if [ -n "$AGG" ]; then
    agg_ask || fail "a read through telem_agg without $r2"
    agg_after=$(agg_conns "$p1")
    [ -n "$agg_after" ] && [ "$agg_after" != "$agg_before" ] \
        || fail "telem_agg did not reconnect after the relays file changed ($agg_before, then $agg_after)"
fi
echo "relay $r2 killed: file $(groups), every node answers"

# --- a restart excluding n2 (n7 promoted): new groups -----------------------
kill -9 "$(telemd_pid n2)"
wait_for test -f "$OUT/run-1-n7.pid" || fail "no restart onto n7"
wait_for has_groups "n1,n3,n4 n5,n6,n7 " \
    || fail "relays file after the restart: $(cat "$RELAYS" 2>&1)"
grep -q 'n2' "$RELAYS" && fail "n2 still in the relays file"
cmp -s "$RELAYS" "$RELAYS2" || fail "launch/relays not rewritten"
relays_running() { [ "$(relay_pids | wc -l)" = "$1" ]; }
wait_for relays_running 2 \
    || fail "$(relay_pids | wc -l) relay processes after the restart"
"$C" --timeout 10000 status >"$T/st.after" || fail "status after the restart"
[ "$(grep -Ec '^\| n[134567] +\| ok' "$T/st.after")" = 6 ] \
    || fail "after the restart: $(cat "$T/st.after")"
wait_for watch_saw 2 2 \
    || fail "the restarted telem_watch did not take the new relays file up"
echo "restart: relays file $(groups)"

touch "$OUT/go-1"
finish 0
no_relay_left || fail "relays left: $(relay_pids) $(ls "$RELAYS" "$RELAYS2" 2>&1)"
cat "$TELEM_RUNDIR"/launch/*.relay.log >"$T/relays.log"
grep -Eq 'relay r[0-9]+ stopping: [0-9]+ requests, [1-9][0-9]* served' \
    "$T/relays.log" || fail "no relay served a request: $(cat "$T/relays.log")"

# --- off, and auto on six nodes: no relay -------------------------------------
for mode in off auto; do
    rm -rf "$OUT"; mkdir "$OUT"
    launch "$mode" --local 6 --relays "$mode"
    wait_for test -f "$OUT/run-0-n6.pid" || fail "--relays $mode: no start"
    # Relays are spawned with the program, before it writes its pid.
    [ -z "$(relay_pids)" ] || fail "--relays $mode started relays"
    [ ! -e "$RELAYS" ] || fail "--relays $mode wrote a relays file"
    touch "$OUT/go-0"
    finish 0
done
echo "it_launch_relay: ok"
