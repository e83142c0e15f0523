# it_push.sh - the push gateway and tau_metric_proxy's client, end to end,
# with a real telemd, push_demo processes and telem_client.
#
# 1. Sums: 16 processes push the same counter concurrently (different
#    counts each), and a gauge each; every one ends with an acknowledged
#    flush (telem_finalize() = 0).  The node series is then exactly the sum
#    of the increments each process had accepted, has no pid, is a
#    counter; the gauges are 16 series, one per pid, each at its process's
#    last value.
# 2. tau's shapes: telem_client --tau -l (md, json, txt, yaml), -v and -g
#    (name, ts as fractional seconds, value; the same field names as
#    tau's client in JSON), -g with unquoted labels as a shell leaves them,
#    -u naming the node by its directory, ctl.sock or ingest.sock, and a
#    bad -u.
# 3. Tracking: --tau -T writes a JSON list of ticks, only when the value
#    changed; a push while it runs appears as a new tick with the new
#    total; Ctrl-C (SIGINT) leaves a complete document.
# 4. Refusals: a process pushing malformed names gets TELEM_EINVAL for
#    them (counted in its stats) and its good pushes are stored; malformed
#    samples put on the wire by hand are refused by telemd and counted in
#    status "refused"; a flood of distinct label sets past the counter
#    series cap is refused and counted, with a rate-limited log (at most 5
#    lines a minute), while the existing counters and a concurrent
#    process's pushes are not lost.
# Every wait is a bounded poll on what is observed, never a guessed sleep.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN
C="$B/telem_client"
HITS='it_hits_total{scall="read"}'
NPROC=16
DELTA=3

start_node n1 --level 1
export TELEM_NODE=n1

# ---- 1. sums ---------------------------------------------------------------
pids=()
for i in $(seq 1 $NPROC); do
    TELEM_RANK=$i "$B/push_demo" --counter "$HITS" --delta $DELTA \
        --count $((20000 + i * 37)) --gauge "it_gauge{k=\"v\"}" \
        --doc "Hits by system call." >"$T/push$i.out" 2>"$T/push$i.log" &
    pids+=($!)
done
for i in $(seq 1 $NPROC); do
    wait "${pids[$((i - 1))]}" || fail "push_demo $i: $(cat "$T/push$i.out" "$T/push$i.log")"
done
want=0
for i in $(seq 1 $NPROC); do
    grep -q "finalize=ok" "$T/push$i.out" || fail "push $i not acknowledged: $(cat "$T/push$i.out")"
    acc=$(sed -n 's/.* accepted=\([0-9]*\) .*/\1/p' "$T/push$i.out")
    want=$((want + acc * DELTA))
done
[ "$want" -gt 0 ] || fail "nothing accepted"

"$C" -g it_hits_total -f json >"$T/get.json" || fail "-g it_hits_total"
python3 - "$T/get.json" "$want" <<'EOF' || fail "counter sum: $(cat "$T/get.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
s = doc["series"]
assert len(s) == 1, s
assert s[0]["tags"] == {"host": "n1", "scall": "read"}, s[0]["tags"]
assert s[0]["type"] == "counter", s[0]
got = s[0]["points"][-1][1]
assert got == int(sys.argv[2]), (got, sys.argv[2])
EOF
"$C" --tau -g it_gauge -f json >"$T/gauges.json" || fail "-g it_gauge"
python3 - "$T/gauges.json" "$T" "$NPROC" <<'EOF' || fail "gauges: $(cat "$T/gauges.json")"
import json, re, sys
rows = json.load(open(sys.argv[1]))
n = int(sys.argv[3])
assert len(rows) == n, len(rows)
last = {}
for i in range(1, n + 1):
    # push_demo sets the gauge to the step number: the last is count - 1
    last[str(20000 + i * 37 - 1)] = True
pids = set()
for r in rows:
    assert list(r) == ["name", "ts", "value"], r
    m = re.fullmatch(r'it_gauge\{k="v",pid="(\d+)",rank="(\d+)"\}', r["name"])
    assert m, r["name"]
    pids.add(m.group(1))
    assert r["value"] == 20000 + int(m.group(2)) * 37 - 1, r
assert len(pids) == n
EOF

# ---- 2. tau's shapes -------------------------------------------------------
"$C" --tau -l >"$T/l.md" || fail "--tau -l"
grep -qxF '* **it_hits_total{scall="read"}** (TAU_METRIC_COUNTER) : Hits by system call.' "$T/l.md" \
    || fail "-l md: $(cat "$T/l.md")"
grep -qx '# List of telem Metrics' "$T/l.md" || fail "-l md title"
"$C" --tau -l -f json >"$T/l.json" || fail "--tau -l -f json"
python3 - "$T/l.json" <<'EOF' || fail "-l json: $(cat "$T/l.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
hits = [r for r in rows if r["name"] == 'it_hits_total{scall="read"}']
assert hits == [{"name": 'it_hits_total{scall="read"}',
                 "doc": "Hits by system call.",
                 "type": "TAU_METRIC_COUNTER"}], hits
for r in rows:
    assert list(r) == ["name", "doc", "type"], r
    assert r["type"] in ("TAU_METRIC_COUNTER", "TAU_METRIC_GAUGE")
EOF
"$C" --tau -l -f txt >"$T/l.txt" || fail "--tau -l -f txt"
head -n 1 "$T/l.txt" | grep -qx '# name doc type' || fail "-l txt header"
grep -qxF 'it_hits_total{scall="read"} "Hits by system call." TAU_METRIC_COUNTER' "$T/l.txt" \
    || fail "-l txt: $(cat "$T/l.txt")"
"$C" --tau -l -f yaml >"$T/l.yaml" || fail "--tau -l -f yaml"
grep -qxF -e '- name: "it_hits_total{scall=\"read\"}"' "$T/l.yaml" || fail "-l yaml: $(cat "$T/l.yaml")"

for u in "$TELEM_RUNDIR/n1" "$TELEM_RUNDIR/n1/ctl.sock" "$TELEM_RUNDIR/n1/ingest.sock"; do
    # unquoted label values, as a shell leaves `-g x{scall="read"}`
    "$C" -u "$u" --tau -g 'it_hits_total{scall=read}' -f json >"$T/g.json" \
        || fail "-u $u -g"
    python3 - "$T/g.json" "$want" <<'EOF' || fail "-u -g json: $(cat "$T/g.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 1, rows
r = rows[0]
assert list(r) == ["name", "ts", "value"], r
assert r["name"] == 'it_hits_total{scall="read"}', r
assert r["value"] == int(sys.argv[2]), r
assert isinstance(r["ts"], float) and r["ts"] > 1.6e9, r
EOF
done
"$C" --tau -v -f txt >"$T/v.txt" || fail "--tau -v -f txt"
head -n 1 "$T/v.txt" | grep -qx '# name ts value' || fail "-v txt header"
grep -qE "^it_hits_total\\{scall=\"read\"\\} [0-9]+\\.[0-9]{9} $want\$" "$T/v.txt" \
    || fail "-v txt: $(cat "$T/v.txt")"
"$C" --tau -v >"$T/v.md" || fail "--tau -v"
grep -qE "^\\* it_hits_total\\{scall=\"read\"\\} = \\*\\*$want\\*\\* @ [0-9]+\\.[0-9]{9}\$" "$T/v.md" \
    || fail "-v md: $(cat "$T/v.md")"
expect_rc 1 "$C" -u "$T/nowhere" --tau -l
expect_rc 1 "$C" --tau -g 'it_hits_total{scall=nope}'
expect_rc 2 "$C" --tau status
expect_rc 2 "$C" -g 'it_hits_total{scall="read"'

# ---- 3. tracking -----------------------------------------------------------
"$C" --tau -T "$HITS" -F 20 -f json -o "$T/track.json" 2>"$T/track.log" &
tracker=$!
EXTRA_PIDS+=("$tracker")
wait_for grep -q "\"value\": $want}" "$T/track.json" || fail "first tick: $(cat "$T/track.json")"
"$B/push_demo" --counter "$HITS" --delta $DELTA --count 5 --quiet || fail "push 5"
after=$((want + 5 * DELTA))
wait_for grep -q "\"value\": $after}" "$T/track.json" || fail "tick after the push: $(cat "$T/track.json")"
kill -INT "$tracker"
wait "$tracker" || fail "tracker exit $?: $(cat "$T/track.log")"
python3 - "$T/track.json" "$want" "$after" <<'EOF' || fail "track json: $(cat "$T/track.json")"
import json, sys
ticks = json.load(open(sys.argv[1]))
vals = []
for tick in ticks:
    assert isinstance(tick, list) and tick, tick
    for r in tick:
        assert list(r) == ["name", "ts", "value"], r
        vals.append(r["value"])
# only changes: every value differs from the one before
assert vals[0] == int(sys.argv[2]) and vals[-1] == int(sys.argv[3]), vals
assert all(b > a for a, b in zip(vals, vals[1:])), vals
EOF
"$C" --tau -t -d 0.2 -f txt >"$T/t.txt" || fail "--tau -t"
head -n 1 "$T/t.txt" | grep -qx '# name ts value' || fail "-t txt header"
grep -qF "it_hits_total{scall=\"read\"} " "$T/t.txt" || fail "-t txt: $(cat "$T/t.txt")"

# ---- 4. refusals -----------------------------------------------------------
"$B/push_demo" --counter "$HITS" --count 10 --bad 'x{a=1}' --bad 'bad-name' \
    --bad 'x{host="h"}' --bad 'x{a="1",a="2"}' >"$T/bad.out" \
    || fail "push_demo --bad: $(cat "$T/bad.out")"
grep -q "invalid=4 bad_refused=4 .* finalize=ok" "$T/bad.out" || fail "bad pushes: $(cat "$T/bad.out")"
after=$((after + 10))

refused() {
    "$C" status -f json | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"][0]["refused"])'
}
refused_is() { [ "$(refused)" = "$1" ]; }
[ "$(refused)" = 0 ] || fail "refused before any bad sample: $(refused)"
"$B/test_push" --send-bad "ipc://$TELEM_RUNDIR/n1/ingest.sock" >/dev/null || fail "send-bad"
wait_for refused_is 7 || fail "telemd refused $(refused) wire samples, not 7"
"$C" -g 'wire_total{scall="read"}' -f json | grep -q '"points": \[\[[0-9]*, 5.0\]\]' \
    || fail "the good samples beside the bad ones: $("$C" -g wire_total -f json)"

# A flood of label sets past the counter series cap (10,000), beside a
# process pushing an existing counter.
"$B/push_demo" --counter "$HITS" --count 0 --flood 12000 --quiet &
flood=$!
"$B/push_demo" --counter "$HITS" --count 1000 --quiet || fail "push beside the flood"
wait "$flood" || fail "flood pusher"
after=$((after + 1000))
# 10,000 counter series at most: it_hits_total and wire_total leave 9,998.
wait_for refused_is $((7 + 12000 - 9998)) || fail "flood refused $(refused)"
"$C" -g "$HITS" -f json | grep -q "\"points\": \\[\\[[0-9]*, $after.0\\]\\]" \
    || fail "the counter beside the flood: want $after, $("$C" -g "$HITS" -f json)"
lines=$(grep -c "refused a pushed sample" "$T/n1.log" || true)
[ "$lines" -le 5 ] || fail "$lines refusal lines in the log; at most 5 a minute"
[ "$lines" -ge 1 ] || fail "no refusal logged"
"$C" status -f json | python3 -c '
import json, sys
st = json.load(sys.stdin)["nodes"][0]
assert st["series"] < 10100 + 100, st
' || fail "series after the flood: $("$C" status)"
echo "it_push: ok (sum $want from $NPROC processes, tau shapes, tracking, refusals)"
