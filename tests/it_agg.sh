# it_agg.sh - telem_agg over real telemd nodes: OpenTSDB 2.4's HTTP API
# with golden answers (points put through /api/put at exact times, so every
# aggregation, filter, downsample and rate has a hand-computed answer),
# Grafana's request shapes, bad input of every kind, a stopped node (a
# partial answer within the deadline, named in X-Telem-Missing), the body
# limit, the bearer token, /api/reboot with and without a launcher, and
# telem_launch starting telem_agg for a job and stopping it at the end.
#
# The requests and the JSON comparisons are in agg_client.py; this script
# starts and stops the processes.  Every wait is for behaviour.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[ -x "$TELEM_BIN/telem_agg" ] || fail "telem_agg is not built"
command -v python3 >/dev/null || skip "python3 is not installed"
CLIENT="python3 $(dirname "${BASH_SOURCE[0]}")/agg_client.py"
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
unset TELEM_LEVEL SLURM_JOB_NODELIST TELEM_LAUNCH_ENDPOINT || true
declare -A AGG_PID=()

# start_agg NAME [telem_agg options]: starts telem_agg on an ephemeral
# port, waits for its "serving" line and sets URL.
start_agg() {
    local name=$1; shift
    "$TELEM_BIN/telem_agg" --port 0 --nodefile "$TELEM_NODEFILE" "$@" \
        >"$T/$name.out" 2>"$T/$name.log" &
    AGG_PID[$name]=$!
    EXTRA_PIDS+=("$!")
    wait_for grep -q '^telem_agg: serving' "$T/$name.out" \
        || fail "telem_agg $name did not start"
    URL=$(sed -n 's/^telem_agg: serving \([^ ]*\) .*/\1/p' "$T/$name.out")
}

# --- three nodes with a day of retention, the data put through telem_agg --
for n in n1 n2 n3; do start_node "$n" --level 1 --window 86400; done
# T0: a whole hour, two hours ago (inside the window; buckets align on it)
T0=$(( $(date +%s) / 3600 * 3600 - 7200 ))

# Writes need a token: the data set goes in through one that has it.
(umask 077 && echo "main-token-for-it" >"$T/main.token")
export TELEM_AGG_TOKEN_FILE=$T/main.token
start_agg main --rundir "$TELEM_RUNDIR" --token-file "$T/main.token"
[ "$(cat "$TELEM_RUNDIR/telem_agg/url")" = "$URL" ] \
    || fail "url file: $(cat "$TELEM_RUNDIR/telem_agg/url") vs $URL"
$CLIENT golden "$URL" "$T0" || fail "golden checks (above)"
kill -0 "${AGG_PID[main]}" || fail "telem_agg died under bad input"

# --- the body limit --------------------------------------------------------
mkdir -m 700 "$T/big"
start_agg big --rundir "$T/big" --max-body 4096
$CLIENT big "$URL" || fail "body limit"

# --- the bearer token ------------------------------------------------------
mkdir -m 700 "$T/tok"
echo "s3cret-token-for-it" >"$T/token"
chmod 644 "$T/token"
expect_rc 2 "$TELEM_BIN/telem_agg" --port 0 --rundir "$T/tok" \
    --token-file "$T/token"
chmod 600 "$T/token"
start_agg tok --rundir "$T/tok" --token-file "$T/token"
$CLIENT token "$URL" "s3cret-token-for-it" || fail "token checks"

# --- no token: reads only ---------------------------------------------------
mkdir -m 700 "$T/open"
start_agg open --rundir "$T/open"
$CLIENT tokenless "$URL" || fail "telem_agg without a token"

# --- a stopped node: a partial answer within the deadline --------------------
mkdir -m 700 "$T/dead"
start_agg dead --rundir "$T/dead" --timeout 500 --token-file "$T/main.token"
$CLIENT reboot-none "$URL" 500 || fail "/api/reboot without a launcher"
kill -STOP "${NODE_PID[n3]}"
rc=0
$CLIENT dead "$URL" n3 500 || rc=$?
kill -CONT "${NODE_PID[n3]}"
[ "$rc" = 0 ] || fail "partial answer with n3 stopped"
$CLIENT alive "$URL" || fail "telem_agg after the stopped node"
for n in n1 n2 n3; do stop_node "$n"; done
for a in main big tok open dead; do
    kill -TERM "${AGG_PID[$a]}"
    wait "${AGG_PID[$a]}" || fail "telem_agg $a did not stop cleanly"
done
[ ! -e "$TELEM_RUNDIR/telem_agg/url" ] || fail "url file left after exit"

# --- telem_launch starts telem_agg; /api/reboot restarts without n2 -------
LR=$T/lrun
OUT=$T/out
mkdir -m 700 "$LR"
mkdir "$OUT"
cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
touch "$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE"
while [ ! -e "$OUT/go-$TELEM_RESTART_COUNT" ]; do sleep 0.05; done
EOF
chmod +x "$T/prog.sh"
export OUT
env -u TELEM_RUNDIR -u TELEM_NODEFILE "$TELEM_BIN/telem_launch" \
    --rundir "$LR" --grace 2 --local 3 --nodes 2 --resilient --agg-port 0 \
    -- "$T/prog.sh" >"$T/launch.out" 2>"$T/launch.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -e "$OUT/run-0-n1" -a -e "$OUT/run-0-n2" \
    || fail "the job did not start"
wait_for test -s "$LR/telem_agg/url" || fail "no $LR/telem_agg/url"
grep -q "telem_agg on n1: dashboard and OpenTSDB API" "$T/launch.log" \
    || fail "no telem_agg line in the launcher's log"
URL=$(cat "$LR/telem_agg/url")
# The job's telem_agg has the job's token (RUNDIR/keys/agg.token, 0600),
# and the tunnel line carries it in the URL.
TOKEN=$(cat "$LR/keys/agg.token") || fail "no token file in $LR/keys"
[ "$(stat -c %a "$LR/keys/agg.token")" = 600 ] || fail "token file mode"
grep -q "open http://localhost:[0-9]*/?token=$TOKEN" "$T/launch.log" \
    || grep -q "token in $LR/keys/agg.token" "$T/launch.log" \
    || fail "the tunnel line does not carry the token"
$CLIENT url-token "$URL" "$TOKEN" || fail "the job's token"
export TELEM_AGG_TOKEN_FILE=$LR/keys/agg.token
$CLIENT job "$URL" n1,n2,n3 || fail "the job's page and state"
# The restart socket refuses a message of more frames than a request has,
# read one frame at a time, and logs it with the count.
[ "$("$TELEM_BIN/test_hostile" send "ipc://$LR/launch/restart.sock" \
    frames:5:8)" = "reply type=7 code=-3" ] || fail "a 5-frame restart request"
wait_for grep -q "restart socket: a message of 6 frames refused (1 so far)" \
    "$T/launch.log" || fail "no log of the 5-frame restart request"
# n2 has recorded its node figures and its dictionary's before it is
# taken out (the dashboard check below wants its history).
n2_has() {
    TELEM_KEYS=$LR/keys "$TELEM_BIN/telem_client" \
        --nodefile "$LR/launch/telemd_nodes" -f txt \
        -g "$N2_WANT" 2>/dev/null \
        | awk '$1 == "n2" { print $2 }' | sort -u | wc -l | grep -qx 6
}
N2_WANT=telem_dict_keys,telem_dict_bytes,cpu_percent,used_ram,load_average,num_running_processes
wait_for n2_has || fail "n2 did not record all of $N2_WANT"
$CLIENT reboot "$URL" n2 || fail "/api/reboot through the launcher"
wait_for test -e "$OUT/run-1-n1" -a -e "$OUT/run-1-n3" \
    || fail "no restart on n1 and n3 after /api/reboot"
grep -Eq "restart 1 \(of at most [0-9]+\): trigger [^;]*; nodes n2;" \
    "$T/launch.log" || fail "restart line: $(grep restart "$T/launch.log")"
# telem_agg's node stayed active: the same telem_agg serves on.
[ "$(cat "$LR/telem_agg/url")" = "$URL" ] \
    || fail "telem_agg moved: $(cat "$LR/telem_agg/url")"
$CLIENT alive "$URL" || fail "telem_agg after the restart"
# The provisioned Grafana dashboard, every panel as Grafana asks for it:
# the job's series per node, n2 included with its history though it is
# out of the job (launch/telemd_nodes), and the restart.
dash() {
    $CLIENT dashboard "$URL" "$TOP/docs/grafana/telem-job.json" \
        "$TOP/docs/grafana/datasource.yaml" \
        cpu_percent,used_ram,load_average,num_running_processes,telem_job_restarts,telem_job_restart_seconds,telem_dict_keys,telem_dict_bytes \
        n1,n2,n3
}
wait_for dash || dash 2>"$T/dash.err" \
    || fail "the Grafana dashboard: $(cat "$T/dash.err")"
pgrep -f "telem_agg --rundir $LR" >/dev/null \
    || fail "no telem_agg process of the job to look for at its end"
touch "$OUT/go-1"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
! pgrep -f "telem_agg --rundir $LR" >/dev/null \
    || fail "telem_agg left running after the job: $(pgrep -af telem_agg)"
# The job's secrets go with it.
[ ! -e "$LR/keys/job.key" ] && [ ! -e "$LR/keys/agg.token" ] \
    || fail "the job's key or token left after its end: $(ls -l "$LR/keys")"
echo "it_agg: ok"
