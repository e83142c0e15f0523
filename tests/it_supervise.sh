# it_supervise.sh - telem_launch supervises the node daemons: a daemon that
# dies is restarted on its node with a growing back-off, without restarting
# the job, and paused (and reported) when it keeps dying.
#
#   job A  kill -9 of n2's telemd: restarted on n2 (new pid, same query
#          endpoint, node file entry valid, it answers telem_client and
#          telem_agg, a client holding its connection finds it again,
#          telem_watch keeps running); then its port taken while
#          it is down: the next try takes a new port, the node files are
#          rewritten, telem_client and telem_agg find it there and
#          telem_watch is started again; kill -9 of n2's telem_dictd:
#          restarted, rejoins the dictionary, every key reads back; a
#          collector that exits at once (a bad flag) is paused after
#          --daemon-restarts deaths and the job still completes, never
#          restarted (no restart line, the program's first run ends it).
#   job B  the same collector with a short pause: tried again after it,
#          the back-off grows within each window (order, never durations).
#   job C  --daemon-failure exclude: today's rule, the node is restarted
#          away (trigger daemon, the reserve promoted).
# Every step waits for behaviour (lines, files, answers), never for time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
L=$TELEM_BIN/telem_launch
C=$TELEM_BIN/telem_client
OUT=$T/out
mkdir "$OUT"
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
export TELEM_DICT_NODEFILE=$TELEM_RUNDIR/dict_nodes

cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
# The job's program: one file per run and node, then waits for the test.
echo $$ >"$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE.pid"
while [ ! -e "$OUT/go" ]; do sleep 0.05; done
EOF
chmod +x "$T/prog.sh"
export OUT

launch() {   # launch NAME [options]: the launcher in the background
    local name=$1; shift
    rm -f "$OUT/go" "$OUT"/run-*
    "$L" --rundir "$TELEM_RUNDIR" --grace 2 "$@" -- "$T/prog.sh" \
        >"$T/$name.out" 2>"$T/$name.log" &
    LPID=$!
    EXTRA_PIDS+=("$LPID")
}

finish() {   # finish NAME RC: lets the program end, checks the exit code
    touch "$OUT/go"
    local rc=0
    wait "$LPID" || rc=$?
    [ "$rc" = "$2" ] || fail "$1: telem_launch exited $rc, expected $2: $(tail -n 5 "$T/$1.log")"
}

ep() {       # ep NODE KIND: a line of the node's endpoints file
    sed -n "s/^$2\t//p" "$TELEM_RUNDIR/$1/endpoints"
}
nodefile_ep() { sed -n "s/^$1\t//p" "$TELEM_NODEFILE"; }
has() { grep -q -- "$2" "$T/$1.log"; }
watch_pid() { pgrep -f "telem_watch .*$TELEM_RUNDIR/launch/restart.sock" | head -n 1; }

# node_answers NODE PID: telem_client, reading the node file afresh, gets
# NODE's status from telemd PID and its series.
node_answers() {
    "$C" --timeout 2000 -f txt status >"$T/status.txt" 2>&1 || return 1
    awk -v n="$1" -v p="$2" '$0 ~ "(^|[| \t])" n "([| \t]|$)" && $0 ~ p' \
        "$T/status.txt" | grep -q . || return 1
    "$C" --timeout 2000 -f json query cpu_percent >"$T/query.json" 2>&1 \
        || return 1
    grep -q "\"$1\"" "$T/query.json"
}

# agg_answers: telem_agg (which follows the launcher's node files) answers
# a query with n2's series and no node missing.
agg_answers() {
    python3 - "$(cat "$TELEM_RUNDIR/telem_agg/url")" \
        "$(cat "$TELEM_RUNDIR/keys/agg.token")" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1].rstrip("/")
                            + "/api/query?start=5m-ago&m=none:cpu_percent"
                            + "&token=" + sys.argv[2], timeout=10) as r:
    missing = r.headers.get("X-Telem-Missing", "")
    hosts = {s["tags"].get("host") for s in json.loads(r.read())}
sys.exit(0 if "n2" in hosts and not missing else 1)
EOF
}

# --- command line --------------------------------------------------------
"$L" --help >"$T/help.txt" && grep -q -- "--daemon-failure" "$T/help.txt" \
    || fail "--help does not describe --daemon-failure"
expect_rc 2 "$L" --daemon-failure sometimes -- true 2>"$T/bad.err"
grep -q "restart or exclude" "$T/bad.err" || fail "no clear message: $(cat "$T/bad.err")"
expect_rc 2 "$L" --daemon-restarts 0 -- true 2>/dev/null
expect_rc 2 "$L" --daemon-pause -1 -- true 2>/dev/null

# --- job A ---------------------------------------------------------------
SUP=(--daemon-backoff 0.05)
launch a --local 3 --nodes 2 --resilient --agg-port 0 "${SUP[@]}" --daemon-restarts 5 \
    --daemon-pause 600 --collect "--no-such-flag" \
    --detector "never=threshold:metric=it_never,op=>,value=0,severity=warn"
wait_for test -f "$OUT/run-0-n1.pid" -a -f "$OUT/run-0-n2.pid" \
    || fail "job A did not start"
wait_for test -s "$TELEM_RUNDIR/telem_agg/url" || fail "no telem_agg"
wait_for agg_answers || fail "telem_agg before any restart"
wait_for watch_pid || fail "no telem_watch"
watch0=$(watch_pid)
prog0=$(cat "$OUT/run-0-n2.pid")

# The collector dies at once, every time: paused at the 3rd death.
wait_for has a "daemon telem_collect on n1 exited 2: paused for 600.000 s after 5 deaths" \
    || fail "collector not paused: $(grep daemon "$T/a.log")"
grep -q "^n1	collect	paused	" "$TELEM_RUNDIR/launch/daemons" \
    || fail "state file: $(cat "$TELEM_RUNDIR/launch/daemons")"
grep -q "daemon telem_collect on n1 exited 2: paused for" \
    "$TELEM_RUNDIR/launch/daemons.log" || fail "pause not in daemons.log"

# kill -9 of n2's telemd: restarted on n2 with the same endpoint.  A
# client holding one connection all along (telem_client -T) sees n2 go and
# come back (the launcher is held while n2 is down, so the client's ticks
# see it missing whatever their timing).
old=$(ep n2 pid)
oldq=$(ep n2 query)
[ -n "$oldq" ] && [ "$(nodefile_ep n2)" = "$oldq" ] || fail "node file before: $(cat "$TELEM_NODEFILE")"
"$C" --timeout 500 -f txt -T cpu_percent -F 5 -d 3600 >"$T/track.out" 2>"$T/track.err" &
TRACK=$!
EXTRA_PIDS+=("$TRACK")
wait_for grep -q n2 "$T/track.out" || fail "the tracking client sees no n2"
kill -STOP "$LPID"
kill -9 "$old"
wait_for grep -q "node 'n2' did not answer" "$T/track.err" \
    || fail "the tracking client did not miss n2: $(cat "$T/track.err")"
kill -CONT "$LPID"
wait_for has a "daemon telemd on n2 restarted (pid [0-9]*, restart 1); same query endpoint $oldq" \
    || fail "telemd not restarted: $(grep daemon "$T/a.log")"
has a "daemon telemd on n2 killed by signal 9 (Killed); restarting it in" \
    || fail "death line"
new=$(ep n2 pid)
[ -n "$new" ] && [ "$new" != "$old" ] && kill -0 "$new" || fail "no new telemd pid ($old -> $new)"
[ "$(nodefile_ep n2)" = "$(ep n2 query)" ] || fail "node file entry: $(cat "$TELEM_NODEFILE") vs $(ep n2 query)"
grep -q "^n2	" "$TELEM_RUNDIR/launch/telemd_nodes" || fail "telemd_nodes lost n2"
wait_for node_answers n2 "$new" || fail "n2 does not answer: $(cat "$T/status.txt")"
wait_for agg_answers || fail "telem_agg does not find n2 again"
[ "$(watch_pid)" = "$watch0" ] || fail "telem_watch restarted though the endpoint stayed"
wait_for grep -q "every node answers again" "$T/track.err" \
    || fail "the tracking client did not find n2 again: $(cat "$T/track.err")"
kill "$TRACK"

# Its port taken while it is down: a new port, the files follow.
kill -STOP "$LPID"
kill -9 "$new"
port=${oldq##*:}
python3 - "$port" "$T/held" <<'EOF' &
import socket, sys, time, os
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
open(sys.argv[2], "w").close()
time.sleep(600)
EOF
HOLD=$!
EXTRA_PIDS+=("$HOLD")
wait_for test -e "$T/held" || fail "could not take port $port"
kill -CONT "$LPID"
wait_for has a "daemon telemd on n2 restarted (pid [0-9]*, restart 3); new query endpoint" \
    || fail "no restart on a new port: $(grep daemon "$T/a.log")"
has a "daemon telemd on n2 exited 1; restarting it in" || fail "the failed try is not reported"
newq=$(ep n2 query)
[ "$newq" != "$oldq" ] || fail "the port did not change"
[ "$(nodefile_ep n2)" = "$newq" ] || fail "node file not rewritten: $(cat "$TELEM_NODEFILE")"
grep -q "^n2	$newq$" "$TELEM_RUNDIR/launch/telemd_nodes" || fail "telemd_nodes not rewritten"
wait_for node_answers n2 "$(ep n2 pid)" || fail "n2 on its new port: $(cat "$T/status.txt")"
wait_for agg_answers || fail "telem_agg does not follow the new port"
wait_for sh -c "pid=\$(pgrep -f 'telem_watch .*$TELEM_RUNDIR/launch/restart.sock' | head -n 1); [ -n \"\$pid\" ] && [ \"\$pid\" != $watch0 ]" \
    || fail "telem_watch not started again after the endpoint changed"
kill "$HOLD"

# kill -9 of n2's telem_dictd: restarted, rejoins, every key reads back.
for i in $(seq 20); do "$TELEM_BIN/telem_dict" put "k$i" "v$i" || fail "put k$i"; done
dpid=$(pgrep -f "telem_dictd --node n2 --rundir $TELEM_RUNDIR ") || fail "no telem_dictd on n2"
kill -9 "$dpid"
wait_for has a "daemon telem_dictd on n2 rejoined the dictionary" \
    || fail "telem_dictd did not rejoin: $(grep daemon "$T/a.log")"
for i in $(seq 20); do
    [ "$("$TELEM_BIN/telem_dict" get "k$i")" = "v$i" ] || fail "k$i after the dictd restart"
done

# The job was never restarted and completes.
finish a 0
! grep -q "restart [0-9]* (of at most\|restart refused" "$T/a.log" || fail "the job was restarted: $(grep "of at most" "$T/a.log")"
[ ! -s "$TELEM_RUNDIR/launch/restarts.log" ] || fail "restarts.log: $(cat "$TELEM_RUNDIR/launch/restarts.log")"
[ ! -e "$OUT/run-1-n2.pid" ] && [ ! -e "$OUT/run-1-n3.pid" ] || fail "the program ran again"
[ "$(cat "$OUT/run-0-n2.pid")" = "$prog0" ] || fail "n2's program was replaced"
has a "job ends (exit 0): the program finished on every node" || fail "end line"

# --- job B: paused, tried again; the back-off grows ---------------------
launch b --local 1 "${SUP[@]}" --daemon-restarts 3 --daemon-pause 0.2 --no-agg --collect "--no-such-flag"
wait_for has b "daemon telem_collect on n1: pause over, starting it again" \
    || fail "not tried again after the pause: $(grep daemon "$T/b.log")"
wait_for sh -c "[ \$(grep -c 'paused for 0.200 s after 3 deaths' '$T/b.log') -ge 2 ]" \
    || fail "no second pause"
finish b 0
# Within each window: death 1, then 2, delays strictly growing.
sed -n 's/.*telem_collect on n1 exited 2; restarting it in \([0-9.]*\) s (death \([0-9]*\) .*/\2 \1/p' \
    "$T/b.log" >"$T/delays.txt"
[ "$(wc -l <"$T/delays.txt")" -ge 4 ] || fail "delays: $(cat "$T/delays.txt")"
awk '$1 == 1 { prev = $2; next }
     { if (!($2 > prev)) { print "not growing: " $0; bad = 1 } prev = $2 }
     END { exit bad }' "$T/delays.txt" || fail "back-off does not grow: $(cat "$T/delays.txt")"
grep -q "^1 " "$T/delays.txt" && grep -q "^2 " "$T/delays.txt" || fail "delays: $(cat "$T/delays.txt")"

# --- job C: --daemon-failure exclude keeps the old rule -----------------
launch c --local 3 --nodes 2 --resilient --no-agg --daemon-failure exclude
wait_for test -f "$OUT/run-0-n2.pid" || fail "job C did not start"
kill -9 "$(ep n2 pid)"
wait_for test -f "$OUT/run-1-n3.pid" || fail "exclude: no restart on the reserve"
finish c 0
has c "restart 1 (of at most 10): trigger daemon; nodes n2; promoted n3" \
    || fail "exclude: $(grep restart "$T/c.log")"
! has c "daemon telemd on n2 restarted" || fail "exclude restarted the daemon"

if pgrep -f "$T/" >"$T/left.txt"; then
    grep -v "^$HOLD$" "$T/left.txt" >"$T/left2.txt" || true
    [ ! -s "$T/left2.txt" ] || fail "processes left: $(xargs -r ps -o pid,args -p <"$T/left2.txt")"
fi
echo "it_supervise: ok"
