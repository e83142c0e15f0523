# it_client.sh - telem_client against two real nodes.
#
# Every mode (-l, -v, -g, query, status, nodes, level, shutdown) in every
# format (md, json, yaml, txt), to stdout and with -o FILE: each output must
# be a valid document of its format, and all eight must say the same thing
# (a checker below reads each format back into one canonical form).  Then
# tag filters and time ranges, tracking (-T, -t) stopped by SIGINT with only
# changed values in a valid document, control requests, bad input, and the
# two C examples of docs/api.md compiled and run exactly as printed there.
# Assertions are on behaviour only; waits are bounded by lib.sh's wait_for.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${TELEM_SRC:?TELEM_SRC must name the source tree}"
C=$TELEM_BIN/telem_client
python3 -c 'import yaml' 2>/dev/null || fail "python3 yaml module missing"

# ---- the checker: outputs -> canonical rows --------------------------------
cat >"$T/check.py" <<'PY'
# check.py KEY COLUMNS MISSING EXPR FORMAT:FILE...: validates telem_client
# outputs, requires that they all hold the same rows, that the Python
# expression EXPR ("" for none) holds for them (`rows`), and prints those
# rows, reduced to COLUMNS, as canonical JSON.
# json/yaml: exactly {KEY: [rows], "missing": [...]} with missing equal to
# the comma list MISSING.  md: header, separator, rows of as many cells.
# txt: non-empty lines aligned under a header.  "series" documents become
# one row per point (md and txt already write them so).
import json, sys

key, cols, want_missing, expr = sys.argv[1:5]
fmt = path = None

def die(msg):
    sys.exit(f"check.py: {path} ({fmt}): {msg}")

def norm(col, v):
    if v is None or v == "" or v == "-":
        return None
    if isinstance(v, dict):
        return ",".join(f"{k}={v[k]}" for k in sorted(v))
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    try:
        if col == "value":
            return float(v)
        if col in ("time_ns", "level", "series", "points", "pid"):
            return int(v)
    except (TypeError, ValueError):
        die(f"{col} {v!r} is not a number")
    return str(v)

def from_doc(doc):
    if not isinstance(doc, dict) or set(doc) != {key, "missing"}:
        die(f"not a {{{key}, missing}} mapping: {str(doc)[:200]}")
    want = [m for m in want_missing.split(",") if m]
    if doc["missing"] != want:
        die(f"missing is {doc['missing']!r}, expected {want!r}")
    if not isinstance(doc[key], list):
        die(f"{key} is not a list")
    rows = []
    for r in doc[key]:
        if not isinstance(r, dict):
            die(f"row {r!r} is not a mapping")
        if key != "series":
            rows.append(r)
            continue
        if not isinstance(r.get("points"), list) or not r["points"]:
            die(f"series without points: {r!r}")
        for p in r["points"]:
            if not isinstance(p, list) or len(p) != 2:
                die(f"point {p!r} is not [time_ns, value]")
            rows.append(dict(r, time_ns=p[0], value=p[1]))
    return rows

def md_cells(line):
    if not (line.startswith("| ") and line.endswith(" |")):
        die(f"not a table line: {line!r}")
    return [c.strip() for c in line[1:-1].split(" | ")]

def from_md(lines):
    if len(lines) < 2:
        die("no header and separator line")
    head = md_cells(lines[0])
    if md_cells(lines[1]) != ["---"] * len(head):
        die(f"bad separator line {lines[1]!r}")
    rows = []
    for line in lines[2:]:
        c = md_cells(line)
        if len(c) != len(head):
            die(f"{len(c)} cells under {len(head)} columns: {line!r}")
        rows.append(dict(zip(head, c)))
    return rows

def from_txt(lines):
    if not lines or any(not l.strip() for l in lines):
        die("empty output or an empty line")
    head, starts, pos = lines[0].split(), [], 0
    for name in head:
        pos = lines[0].index(name, pos)
        starts.append(pos)
        pos += len(name)
    rows = []
    for line in lines[1:]:
        cells = []
        for i, s in enumerate(starts):
            if i and line[s - 1:s] != " ":
                die(f"column {head[i]} not aligned: {line!r}")
            end = starts[i + 1] if i + 1 < len(starts) else len(line)
            cells.append(line[s:end].strip())
        rows.append(dict(zip(head, cells)))
    return rows

def canonical():
    text = open(path, encoding="utf-8").read()
    if fmt == "json":
        try:
            rows = from_doc(json.loads(text))
        except ValueError as e:
            die(f"invalid JSON: {e}")
    elif fmt == "yaml":
        import yaml
        try:
            rows = from_doc(yaml.safe_load(text))
        except yaml.YAMLError as e:
            die(f"invalid YAML: {e}")
    elif fmt == "md":
        rows = from_md(text.splitlines())
    else:
        rows = from_txt(text.splitlines())
    keep = cols.split(",")
    for r in rows:
        if any(c not in r for c in keep):
            die(f"row lacks one of {keep}: {r!r}")
    return [[norm(c, r[c]) for c in keep] for r in rows]

first = None
for arg in sys.argv[5:]:
    fmt, path = arg.split(":", 1)
    rows = canonical()
    if first is None:
        first = (path, rows)
    elif rows != first[1]:
        die(f"rows differ from {first[0]}: {rows} vs {first[1]}")
rows, loss, l = first[1], [], 1.0
for _ in range(100):
    l *= 0.97
    loss.append(l)
if expr and not eval("(" + expr + ")"):
    sys.exit(f"check.py: rows are not as expected: {expr.strip()}\n  rows: {rows}")
print(json.dumps(rows))
PY

# every_format KEY COLUMNS MISSING RC EXPR ARGS...: runs telem_client ARGS
# in each format, to stdout and with -o; each run must exit RC, each output
# must check, all eight must agree, and the Python expression EXPR must hold
# for their canonical `rows` (`loss` holds the values the record example
# writes).  Leaves the rows in $T/rows.json, the last stderr in $T/err.
every_format() {
    local key=$1 cols=$2 missing=$3 want=$4 expr=$5; shift 5
    local f rc outs=()
    for f in md json yaml txt; do
        rc=0; "$C" -f "$f" "$@" >"$T/out.$f" 2>"$T/err" || rc=$?
        [ "$rc" = "$want" ] || fail "-f $f $*: exit $rc, expected $want: $(cat "$T/err")"
        rc=0; "$C" -o "$T/file.$f" -f "$f" "$@" >"$T/stdout" 2>"$T/err" || rc=$?
        [ "$rc" = "$want" ] || fail "-o -f $f $*: exit $rc, expected $want: $(cat "$T/err")"
        [ ! -s "$T/stdout" ] || fail "-o -f $f $*: wrote to stdout too"
        outs+=("$f:$T/out.$f" "$f:$T/file.$f")
    done
    python3 "$T/check.py" "$key" "$cols" "$missing" "$expr" "${outs[@]}" \
        >"$T/rows.json" || fail "telem_client $*: outputs invalid, differ or wrong"
}

# has_lines FILE PATTERN N: FILE has at least N lines matching PATTERN.
has_lines() {
    [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] 2>/dev/null
}

# exited PID: the process has exited (gone, or a zombie not yet reaped).
exited() {
    local st
    st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
    [ "$st" = Z ]
}

# ---- the C examples of docs/api.md ----------------------------------------
# Installed into a private prefix, then built with the commands the doc
# gives (pkg-config), so the install rules are checked along with the examples.
install_tree
python3 - "$TELEM_SRC/docs/api.md" "$T" <<'PY' || fail "examples not found in docs/api.md"
import re, sys
doc = open(sys.argv[1]).read()
blocks = re.findall(r"```c\n(/\* example: (\w+)\.c .*?)```", doc, re.S)
names = [n for _, n in blocks]
assert names == ["record", "query"], names
for text, name in blocks:
    open(f"{sys.argv[2]}/{name}.c", "w").write(text)
PY
ccx() {  # ccx NAME ARGS...: compiles $T/NAME.c as the doc says
    local name=$1; shift
    # shellcheck disable=SC2068
    "$cc" -std=c11 -Wall -Wextra -Werror "${san[@]}" "$T/$name.c" "$@" \
        2>"$T/cc.log" || fail "$name.c does not build: $(cat "$T/cc.log")"
}
static_libs=$(pkg-config --static --libs-only-l telem | sed 's/^-ltelem //')
# shellcheck disable=SC2046,SC2086
{
    ccx record -o "$T/record" $(pkg-config --cflags --libs telem) -Wl,-rpath,"$lib"
    ccx record -o "$T/record_static" $(pkg-config --cflags telem) "$lib/libtelem.a" $static_libs
    ccx query -o "$T/query" $(pkg-config --cflags --libs telem) -Wl,-rpath,"$lib"
}

# ---- two nodes with known data --------------------------------------------
# ipc endpoints only (--bind none): a TCP port freed by the shutdown below
# could be taken by another program's socket before the next query.
start_node n1 --level 1 --bind none
start_node n2 --level 1 --bind none --interval 0.05
for n in n1 n2; do
    tag=phase=fwd; [ "$n" = n2 ] && tag=phase=bwd
    TELEM_NODE=$n "$TELEM_BIN/add_data_demo" --count 5 --interval-ms 2 \
        --metric demo --tag "$tag" >"$T/demo-$n.log" 2>&1 \
        || fail "add_data_demo on $n: $(cat "$T/demo-$n.log")"
    TELEM_NODE=$n "$T/record" >"$T/record-$n.log" 2>&1 \
        || fail "record on $n: $(cat "$T/record-$n.log")"
    grep -q "dropped=0 filtered=0 finalize=ok" "$T/record-$n.log" \
        || fail "record on $n: $(cat "$T/record-$n.log")"
done

# -l: every metric with its type, unit and doc (telem_describe), per node.
every_format metrics metric,type,unit,doc,series,nodes "" 0 'rows == [
  ["demo", "gauge", None, "Step number of add_data_demo.", 2.0, "n1,n2"],
  ["loss", "gauge", None, "Training loss after each step.", 2.0, "n1,n2"],
  ["samples_seen", "counter", "samples", "Training samples processed so far.", 2.0, "n1,n2"]]' \
    -l

# -v: the newest point of every series.
every_format series node,metric,tags,type,value "" 0 '
  [(r[0], r[1], r[4]) for r in rows] == [
    ("n1", "demo", 4.0), ("n2", "demo", 4.0), ("n1", "loss", loss[-1]),
    ("n2", "loss", loss[-1]), ("n1", "samples_seen", 3200.0),
    ("n2", "samples_seen", 3200.0)]
  and rows[1][2].startswith("host=n2,phase=bwd,pid=") and rows[1][3] == "gauge"
  and rows[4][2].startswith("host=n1,phase=train,pid=") and rows[4][3] == "counter"' \
    -v

# -g a,b, and -g with a tag filter.
every_format series node,metric,value "" 0 'sorted(rows) == [["n1", "demo", 4.0], ["n1", "samples_seen", 3200.0],
  ["n2", "demo", 4.0], ["n2", "samples_seen", 3200.0]]' \
    -g samples_seen,demo
every_format series node,metric,value "" 0 'rows == [["n1", "demo", 4.0]]' \
    -v --tag phase=fwd
every_format series node,metric "" 0 'sorted(rows) == [["n1", "demo"], ["n1", "samples_seen"],
  ["n2", "demo"], ["n2", "samples_seen"]]' \
    -v --tag 'phase=*'

# query: every point, across both nodes, with tags and time ranges.
every_format series node,metric,tags,time_ns,value "" 0 '
  [(r[0], r[4]) for r in rows] == [(n, float(v)) for n in ("n1", "n2") for v in range(5)]' \
    query demo
python3 -c "import json; print(' '.join(str(int(r[3])) for r in json.load(open('$T/rows.json'))[:5]))" \
    >"$T/ts"
read -r _ t1 _ t3 _ <"$T/ts"
every_format series node,value "" 0 'rows == [["n1", 1.0], ["n1", 2.0], ["n1", 3.0]]' \
    query demo --tag host=n1 --start "$t1" --end "$t3"
every_format series node,value "" 0 'rows == [["n2", float(v)] for v in range(5)]' \
    query demo --tag phase=bwd --start -1h --end now
every_format series node,value "" 0 'rows == [["n1", 3.0], ["n1", 4.0], ["n1", loss[-2]], ["n1", loss[-1]]]' \
    query demo,loss --tag host=n1 --start -10m --max-points 2
every_format series node,metric,value "" 0 'rows == []' \
    query --start -2h --end -1h
every_format series node,metric "" 0 'len(rows) == 2 * (5 + 100 + 100)' \
    query

# status and nodes.
every_format nodes node,state,level,series,points "" 0 '
  rows == [["n1", "ok", 1, 3, 205], ["n2", "ok", 1, 3, 205]]' \
    status
every_format nodes node,endpoint "" 0 '[r[0] for r in rows] == ["n1", "n2"] and all(r[1].startswith("ipc://")
  and r[1].endswith(f"/run/{r[0]}/ctl.sock") for r in rows)' \
    nodes

# The analysis client example: the catalog, the newest loss, the status.
"$T/query" >"$T/query.out" 2>&1 || fail "query example: $(cat "$T/query.out")"
python3 - "$T/query.out" <<'PY' || fail "query example output: $(cat "$T/query.out")"
import sys
out = open(sys.argv[1]).read().splitlines()
l = 1.0
for _ in range(100):
    l *= 0.97
last = [float(x.split("last=")[1]) for x in out if x.startswith("series n1 loss points=1 last=")]
assert last == [l], last
assert sum(x.startswith("series n2 loss points=1 ") for x in out) == 1
assert 'metric n1 samples_seen counter "Training samples processed so far."' in out
assert "node n1 level=1 points=205" in out and "node n2 level=1 points=205" in out
assert not any(x.startswith("missing") for x in out)
PY

# ---- unknown names and bad input ------------------------------------------
every_format series node "" 0 'rows == []' \
    query no_such_metric
every_format series node "" 0 'rows == []' \
    -v --tag host=no_such_node
# -g names what it could not find and exits 1, with a valid, empty document.
every_format series node "" 1 'rows == []' -g no_such_metric
grep -q "no series for metric 'no_such_metric'" "$T/err" || fail "-g: $(cat "$T/err")"

bad() {  # bad WORD ARGS...: exit 2 and a message containing WORD
    local word=$1; shift
    expect_rc 2 "$C" "$@" 2>"$T/err"
    grep -q -- "$word" "$T/err" || fail "$*: message lacks '$word': $(cat "$T/err")"
}
bad "unknown format 'xml'" -f xml -l
bad "unknown format" -f "" -l
for hz in 0 -5 abc 1e9 ""; do bad "bad -F" -T demo -F "$hz"; done
bad "go with -t or -T" -l -F 10
bad "bad time" query --start yesterday
bad "--start is after --end" query --start -1h --end -2h
bad "--start is after --end" query --end -1h
bad "bad metric list" -g a,,b
bad "bad --tag" -v --tag novalue
bad "bad level" level 9
bad "choose one mode" -l -v
expect_rc 0 "$C" --help
expect_rc 0 "$C" query --help

# No node file: a clear error, exit 1.
expect_rc 1 "$C" --nodefile "$T/no-such-file" -l 2>"$T/err"
grep -q "cannot open node file $T/no-such-file" "$T/err" || fail "no node file: $(cat "$T/err")"
(unset TELEM_NODEFILE; export TELEM_RUNDIR=$T/empty-rundir
 expect_rc 1 "$C" status 2>"$T/err"
 grep -q "cannot open node file $T/empty-rundir/nodes" "$T/err") \
    || fail "default node file: $(cat "$T/err")"
printf 'n1 tcp://127.0.0.1:1\n' >"$T/badnodes"
expect_rc 1 "$C" --nodefile "$T/badnodes" -l 2>"$T/err"
grep -q "badnodes:1: no tab" "$T/err" || fail "malformed node file: $(cat "$T/err")"
expect_rc 1 "$C" -o "$T/no-such-dir/out" -l 2>"$T/err"
grep -q "cannot open" "$T/err" || fail "unwritable -o: $(cat "$T/err")"

# ---- tracking --------------------------------------------------------------
# check_changes FMT FILE: a valid document in which no series shows the same
# value twice in a row and every static series shows up exactly once.
check_changes() {
    python3 "$T/check.py" changes node,metric,tags,time_ns,value "" "" "$1:$2" \
        >"$T/rows.json" || fail "tracking output invalid: $(head -c 800 "$2")"
    python3 - "$T/rows.json" <<'PY' || fail "tracking wrote unchanged values: $(cat "$T/rows.json" | head -c 2000)"
import json, sys
rows = json.load(open(sys.argv[1]))
last, seen = {}, {}
for node, metric, tags, ts, value in rows:
    k = (node, metric, tags)
    assert last.get(k) != value, (k, value)
    last[k] = value
    seen[k] = seen.get(k, 0) + 1
for k, n in seen.items():
    if k[1] in ("demo", "loss", "samples_seen"):
        assert n == 1, (k, n)
PY
}

# -T with -o, json, 20 Hz, while a writer changes one metric; SIGINT ends it.
TELEM_NODE=n1 "$TELEM_BIN/add_data_demo" --count 100000000 --interval-ms 20 \
    --metric wv --quiet >"$T/wv.log" 2>&1 &
writer=$!; EXTRA_PIDS+=("$writer")
"$C" -T wv,loss -F 20 -f json -o "$T/track.json" 2>"$T/track.err" &
tracker=$!; EXTRA_PIDS+=("$tracker")
wait_for has_lines "$T/track.json" '"metric": "wv"' 10 \
    || fail "-T wrote no changes: $(cat "$T/track.json" "$T/track.err")"
kill -INT "$tracker"
wait_for exited "$tracker" || fail "tracking did not stop on SIGINT"
rc=0; wait "$tracker" || rc=$?
[ "$rc" = 0 ] || fail "-T after SIGINT exited $rc: $(cat "$T/track.err")"
check_changes json "$T/track.json"
python3 - "$T/rows.json" <<'PY' || fail "-T rows wrong: $(head -c 2000 "$T/rows.json")"
import json, sys
rows = json.load(open(sys.argv[1]))
wv = [r[4] for r in rows if r[1] == "wv"]
assert len(wv) >= 10 and wv == sorted(set(wv)), wv
assert sorted((r[0], r[1]) for r in rows if r[1] != "wv") == [("n1", "loss"), ("n2", "loss")]
assert all(r[0] == "n1" and r[2].startswith("host=n1,pid=") for r in rows if r[1] == "wv")
PY

# Well above 10 Hz, stopped by -d: a complete document.
expect_rc 0 "$C" -T wv -F 1000 -d 0.3 -f yaml -o "$T/fast.yaml"
check_changes yaml "$T/fast.yaml"

# level: n2 to level 2 (its node metrics start), -t in yaml on stdout.
every_format nodes node,level "" 0 'rows == [["n2", 2.0]]' \
    level 2 n2
every_format nodes node,level "" 0 'rows == [["n1", 1.0], ["n2", 2.0]]' \
    status
"$C" -t -F 20 -f yaml >"$T/trackall.yaml" 2>"$T/trackall.err" &
tracker=$!; EXTRA_PIDS+=("$tracker")
# Several ticks with changes: the writer's metric changed four times.
wait_for has_lines "$T/trackall.yaml" 'metric: "wv"' 4 \
    || fail "-t wrote no changes: $(tail -n 20 "$T/trackall.yaml" "$T/trackall.err")"
kill -INT "$tracker"
wait_for exited "$tracker" || fail "tracking did not stop on SIGINT"
rc=0; wait "$tracker" || rc=$?
[ "$rc" = 0 ] || fail "-t after SIGINT exited $rc: $(cat "$T/trackall.err")"
check_changes yaml "$T/trackall.yaml"
python3 - "$T/rows.json" <<'PY' || fail "-t rows wrong"
import json, sys
rows = json.load(open(sys.argv[1]))
static = sorted((r[0], r[1]) for r in rows if r[1] in ("demo", "loss", "samples_seen"))
assert static == sorted([(n, m) for n in ("n1", "n2") for m in ("demo", "loss", "samples_seen")]), static
assert any(r[0] == "n2" and r[1] == "num_running_processes" for r in rows)
PY
kill -TERM "$writer"; wait "$writer" 2>/dev/null || true

# ---- shutdown: the node exits; then it is reported missing -----------------
pid=${NODE_PID[n2]}
expect_rc 0 "$C" -f json -o "$T/shutdown.json" shutdown n2
python3 "$T/check.py" nodes node,state "" 'rows == [["n2", "ok"]]' \
    "json:$T/shutdown.json" >"$T/rows.json" \
    || fail "shutdown output: $(cat "$T/shutdown.json")"
wait_for exited "$pid" || fail "n2 did not exit after shutdown"
rc=0; wait "$pid" || rc=$?
unset "NODE_PID[n2]"
[ "$rc" = 0 ] || fail "n2 exited $rc after shutdown"
test ! -e "$TELEM_RUNDIR/n2/ctl.sock" || fail "n2 left its socket behind"

# Partial answers: exit 3, what came is printed, the dead node is named.
every_format nodes node,level n2 3 'rows == [["n1", 1.0], ["n2", None]]' \
    --timeout 200 status
grep -q "node 'n2' did not answer" "$T/err" || fail "status: n2 not named: $(cat "$T/err")"
every_format metrics metric,nodes n2 3 '
  rows == [[m, "n1"] for m in ("demo", "loss", "samples_seen", "wv")]' \
    --timeout 200 -l
rc=0; "$T/query" >"$T/query.out" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "query example with n2 down exited $rc: $(cat "$T/query.out")"
grep -q "^missing n2: " "$T/query.out" && grep -q "^node n2 down: " "$T/query.out" \
    && grep -q "^series n1 loss points=1 " "$T/query.out" \
    || fail "query example with n2 down: $(cat "$T/query.out")"
echo "it_client: ok"
