# it_auth.sh - only the job's owner gets in (docs/security.md).
#
# 1. A resilient job of three nodes on loopback addresses (127.0.0.1-3,
#    through a command template, so that every daemon and the launcher's
#    restart socket listen on TCP as on a cluster), with the job's key
#    made by telem_launch.  A client without the key (a plain ZeroMQ
#    DEALER, the probe's) is refused on every TCP socket: telemd's query
#    and control (status, SET_LEVEL 0, SET_WINDOW 1 ns, SHUTDOWN), the
#    dictionary (a put) and the restart endpoint: no answer, and nothing
#    changed (read back with the key: level, window, the key absent, no
#    restart, every node still up).  A client holding another job's key
#    is refused too.  A client holding the key is served.
# 2. telemd started by hand without keys: plain TCP on loopback answers
#    queries and refuses control (TELEM_EPERM) and nothing changes; a
#    bind off loopback without keys is refused at start (telemd,
#    telem_dictd), and so is a watcher's control on plain TCP; with keys
#    from telem_keygen the same telemd obeys the key's holder only.
# 3. As root: a second user created for the test can neither read the
#    key, nor reach the job over TCP (no answer) or ipc (the run
#    directory is closed to it), nor read telem_agg's answers (401).
#    Skipped, with the reason, where the test cannot create a user.
# Waits are for behaviour; all traffic is on 127.0.0.0/8 or ipc.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
P=$TELEM_BIN/probe
L=$TELEM_BIN/telem_launch
[ -x "$P" ] || fail "$P missing"
unset TELEM_KEYS TELEM_LEVEL SLURM_JOB_NODELIST || true

# ---- 1. the job ---------------------------------------------------------
R=$T/job
OUT=$T/out
mkdir -m 700 "$R"
mkdir "$OUT"
cat >"$T/prog.sh" <<'EOF'
#!/usr/bin/env bash
touch "$OUT/run-$TELEM_RESTART_COUNT-$TELEM_NODE"
while [ ! -e "$OUT/go" ]; do sleep 0.05; done
EOF
chmod +x "$T/prog.sh"
export OUT
env -u TELEM_RUNDIR -u TELEM_NODEFILE "$L" --rundir "$R" --grace 2 \
    --exec-template "env TELEM_VIA={node}" \
    --hosts 127.0.0.1,127.0.0.2,127.0.0.3 --bind 127.0.0.1 --nodes 2 \
    --resilient \
    --agg-port 0 -- "$T/prog.sh" >"$T/launch.out" 2>"$T/launch.log" &
LPID=$!
EXTRA_PIDS+=("$LPID")
wait_for test -e "$OUT/run-0-127.0.0.1" -a -e "$OUT/run-0-127.0.0.2" \
    || fail "the job did not start"
[ "$(stat -c %a "$R/keys")" = 700 ] && [ "$(stat -c %a "$R/keys/job.key")" = 600 ] \
    || fail "key modes: $(ls -la "$R/keys")"
# Endpoints: telemd's from the node file, the dictionary's, the launcher's.
tcp_of() { awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$2"; }
Q1=$(tcp_of 127.0.0.1 "$R/nodes")
Q2=$(tcp_of 127.0.0.2 "$R/nodes")
D1=$(tcp_of 127.0.0.1 "$R/dict_nodes")
RS=$(sed -n 's/.*restart requests at \(tcp:[^ ]*\).*/\1/p' "$T/launch.log")
[ -z "$RS" ] && RS=$(grep -o 'tcp://[^ ;]*' "$R/launch/job" | head -n 1 || true)
for ep in "$Q1" "$Q2" "$D1"; do
    [[ $ep == tcp://127.0.0.* ]] || fail "not a TCP endpoint: '$ep'"
done
echo "telemd $Q1 and $Q2, dictionary $D1, restart ${RS:-(none)}"
# ps shows no key.
KEY=$(sed -n 's/^secret //p' "$R/keys/job.key")
[ -n "$KEY" ] || fail "no secret key in the key file"
on_cmdline=$(ps -eo args= | K=$KEY awk 'index($0, ENVIRON["K"])')
[ -z "$on_cmdline" ] || fail "the secret key is on a command line: $on_cmdline"

nokey() { TELEM_KEYS= "$P" "$@" 1500; }
withkey() { TELEM_KEYS=$R/keys "$P" "$@" 5000; }
expect_out() {
    local want=$1 got; shift
    got=$("$@") || fail "probe $*: exit $?"
    [[ $got == $want ]] || fail "probe ${*:2}: '$got', expected '$want'"
}
for what in status level:0 window:1 shutdown handover; do
    expect_out timeout nokey "$Q2" "$what"
done
expect_out timeout nokey "$D1" put:it_auth:stolen
[ -n "$RS" ] && expect_out timeout nokey "$RS" restart:127.0.0.2
# Another job's key: refused as well.
"$TELEM_BIN/telem_keygen" "$T/other" >/dev/null || fail "telem_keygen"
got=$(TELEM_KEYS=$T/other "$P" "$Q2" level:0 1500)
[ "$got" = timeout ] || fail "another job's key: $got"
# Nothing changed: the key's holder sees level 2, a 300 s window, no key
# in the dictionary, no restart, both programs still running.
expect_out "control code=0 level=2 window=300000000000" withkey "$Q2" status
rc=0
TELEM_KEYS=$R/keys "$TELEM_BIN/telem_dict" --nodefile "$R/dict_nodes" \
    get it_auth >/dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "telem_dict get it_auth (the stolen put): exit $rc"
[ ! -e "$R/launch/restarts.log" ] || ! grep -q restart "$R/launch/restarts.log" \
    || fail "a restart happened: $(cat "$R/launch/restarts.log")"
kill -0 "$LPID" || fail "the launcher died"
# The key's holder is served, control included.
expect_out "control code=0 level=3 window=*" withkey "$Q2" level:3
TELEM_KEYS=$R/keys "$TELEM_BIN/telem_dict" --nodefile "$R/dict_nodes" \
    put it_auth mine || fail "telem_dict put with the key"
[ "$(TELEM_KEYS=$R/keys "$TELEM_BIN/telem_dict" --nodefile "$R/dict_nodes" \
     get it_auth)" = mine ] || fail "telem_dict get with the key"
# The node file beside the key is enough: no TELEM_KEYS needed.
[ "$(TELEM_KEYS= "$TELEM_BIN/telem_client" --nodefile "$R/nodes" -f txt status \
     >/dev/null 2>&1; echo $?)" != 0 ] || fail "TELEM_KEYS= still used a key"
env -u TELEM_KEYS "$TELEM_BIN/telem_client" --nodefile "$R/nodes" -f txt \
    status >"$T/status.txt" 2>&1 || fail "telem_client status beside the key"
grep -q 127.0.0.2 "$T/status.txt" || fail "status: $(cat "$T/status.txt")"

# ---- 3. a second user (root only) ----------------------------------------
# other_user: creates user U for this test (removed at exit), or sets
# WHY_NOT and returns 1.
other_user() {
    if [ "$(id -u)" != 0 ]; then
        WHY_NOT="not root: no second user can be made"; return 1
    fi
    if ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
        WHY_NOT="useradd or runuser missing"; return 1
    fi
    U=telemauth$$
    if ! useradd --system --no-create-home --shell /usr/sbin/nologin "$U" \
            2>"$T/useradd.err"; then
        WHY_NOT="useradd: $(cat "$T/useradd.err")"; return 1
    fi
    trap 'userdel "$U" 2>/dev/null || true; cleanup' EXIT
    # The probe in a directory the user may read (the test's is 0700).
    chmod 711 "$T"
    mkdir -m 755 "$T/pub"
    install -m 755 "$P" "$T/pub/probe"
}
as_u() { runuser -u "$U" -- env -i PATH=/usr/bin:/bin "$@"; }
if other_user; then
    ! as_u cat "$R/keys/job.key" >/dev/null 2>&1 \
        || fail "user $U could read the job's key"
    got=$(as_u env TELEM_KEYS="$R/keys" "$T/pub/probe" "$Q2" status 1500 \
          2>&1 || true)
    [[ $got == *"Permission denied"* ]] || fail "user $U and the key dir: $got"
    for what in status level:0 shutdown; do
        got=$(as_u env TELEM_KEYS= "$T/pub/probe" "$Q2" "$what" 1500)
        [ "$got" = timeout ] || fail "user $U over TCP ($what): $got"
    done
    got=$(as_u env TELEM_KEYS= "$T/pub/probe" "$D1" put:it_auth:u 1500)
    [ "$got" = timeout ] || fail "user $U to the dictionary: $got"
    if [ -n "$RS" ]; then
        got=$(as_u env TELEM_KEYS= "$T/pub/probe" "$RS" restart:127.0.0.2 1500)
        [ "$got" = timeout ] || fail "user $U restart request: $got"
    fi
    for ep in "ipc://$R/127.0.0.2/ctl.sock" "ipc://$R/127.0.0.1/dict.sock" \
              "ipc://$R/launch/restart.sock"; do
        got=$(as_u env TELEM_KEYS= "$T/pub/probe" "$ep" status 1500)
        [ "$got" = timeout ] || fail "user $U over $ep: $got"
    done
    AGG_URL=$(cat "$R/telem_agg/url")
    code=$(as_u python3 -c 'import sys, urllib.request, urllib.error
try:
    urllib.request.urlopen(sys.argv[1] + "api/query?start=1h-ago"
                           "&m=sum:cpu_percent", timeout=10)
    print(200)
except urllib.error.HTTPError as e:
    print(e.code)' "$AGG_URL")
    [ "$code" = 401 ] || fail "user $U read telem_agg: HTTP $code"
    expect_out "control code=0 level=3 window=*" withkey "$Q2" status
    echo "second user $U: refused everywhere"
fi
touch "$OUT/go"
rc=0
wait "$LPID" || rc=$?
[ "$rc" = 0 ] || fail "telem_launch exited $rc"
[ ! -e "$R/keys/job.key" ] || fail "the job's key outlived the job"

# ---- 2. telemd and friends started by hand --------------------------------
start_node h1 --level 2
QH=$(sed -n 's/^query\t//p' "$T/h1.out")
[[ $QH == tcp://127.0.0.1:* ]] || fail "h1's query endpoint: $QH"
grep -q "control over it is refused" "$T/h1.log" || fail "no plain-TCP line"
for what in level:0 window:1 shutdown handover; do
    expect_out "error code=-14 *" nokey "$QH" "$what"
done
expect_out "control code=0 level=2 window=300000000000" nokey "$QH" status
kill -0 "${NODE_PID[h1]}" || fail "h1 died"
stop_node h1
# Off loopback without keys: refused before anything is bound.
expect_rc 2 "$TELEM_BIN/telemd" --node h2 --bind 10.255.255.1 --no-log
expect_rc 2 "$TELEM_BIN/telem_dictd" --node h2 --bind 10.255.255.1
"$TELEM_BIN/telemd" --node h2 --bind 10.255.255.1 --no-log 2>"$T/h2.err" || true
grep -q "needs the job's keys" "$T/h2.err" || fail "no reason: $(cat "$T/h2.err")"
rc=0
TELEM_KEYS= "$TELEM_BIN/telem_watch" --nodefile "$TELEM_NODEFILE" \
    --detector "x=threshold:metric=it_x,op=>,value=0" \
    --ctl tcp://127.0.0.1:0 --count 1 >/dev/null 2>"$T/w.err" || rc=$?
[ "$rc" != 0 ] && grep -q "plain TCP" "$T/w.err" \
    || fail "telem_watch --ctl on plain TCP: rc $rc, $(cat "$T/w.err")"
# With keys from telem_keygen in the run directory, the same telemd serves
# only their holder, and obeys it.
"$TELEM_BIN/telem_keygen" >/dev/null || fail "telem_keygen in the run directory"
start_node h3 --level 2
QH=$(sed -n 's/^query\t//p' "$T/h3.out")
expect_out timeout nokey "$QH" status
got=$(TELEM_KEYS=$TELEM_RUNDIR/keys "$P" "$QH" level:1 5000)
[[ $got == "control code=0 level=1 window="* ]] || fail "h3 with its key: $got"
stop_node h3
if [ -n "${WHY_NOT:-}" ]; then
    skip "the second-user part could not run: $WHY_NOT (parts 1 and 2 passed)"
fi
echo "it_auth: ok"
