# it_snapshot.sh - telem_client snapshot against real telemd nodes, checked
# against this machine.
#
# Two nodes on ipc/loopback.  `telem_client snapshot` in every format
# (txt, md, json, yaml) must be a valid document holding both nodes, and
# what it says must be what the machine says: the CPU count equals nproc's
# and lscpu's, sockets, cores per socket, threads per core, model name and
# NUMA nodes equal lscpu's (a real peer), memory equals /proc/meminfo's
# MemTotal, the boot time is within 1 s of /proc/stat's btime, the kernel
# release is uname -r's.  Then one node by name, a dead node (partial
# result, exit 3, named as missing) and an unknown node name.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
C=$TELEM_BIN/telem_client
command -v lscpu >/dev/null || skip "lscpu (util-linux) is not installed"
python3 -c 'import yaml' 2>/dev/null || fail "python3 yaml module missing"

# The interfaces before the nodes start and after the documents are checked:
# other tests on this machine make and remove veth pairs and bridges (their
# network namespaces) at any time, so an interface that came or went in
# between may be in a snapshot or not; every other one must be.
ls /sys/class/net >"$T/net.before"
start_node s1 --bind none
start_node s2 --bind none

for f in txt md json yaml; do
    "$C" -f "$f" snapshot >"$T/snap.$f" 2>"$T/snap.$f.err" \
        || fail "snapshot -f $f exited $?: $(cat "$T/snap.$f.err")"
done

# ---- json and yaml: the whole documents, checked against the machine ----
cat >"$T/check.py" <<'PY'
import json, subprocess, sys, os, yaml
path, fmt = sys.argv[1], sys.argv[2]
text = open(path).read()
doc = json.loads(text) if fmt == "json" else yaml.safe_load(text)
def die(msg):
    sys.exit(f"check.py {fmt}: {msg}")
if set(doc) != {"snapshots", "missing"}:
    die(f"keys {sorted(doc)}")
if doc["missing"] != []:
    die(f"missing {doc['missing']}")
nodes = [s["node"] for s in doc["snapshots"]]
if nodes != ["s1", "s2"]:
    die(f"nodes {nodes}")
lscpu = {}
for line in subprocess.run(["lscpu"], capture_output=True, text=True,
                           env=dict(os.environ, LC_ALL="C")).stdout.splitlines():
    k, _, v = line.partition(":")
    lscpu[k.strip()] = v.strip()
meminfo = dict(l.split(":", 1) for l in open("/proc/meminfo"))
memtotal = int(meminfo["MemTotal"].split()[0]) * 1024
btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime "))
nproc = os.sysconf("SC_NPROCESSORS_ONLN")
for s in doc["snapshots"]:
    d, n = s["snapshot"], s["node"]
    cpu = d["cpu"]
    # with every CPU on line, lscpu's CPU(s) counts the online ones
    offline = "Off-line CPU(s) list" in lscpu
    want = {
        "threads": int(lscpu["CPU(s)"]) if not offline else cpu["threads"],
        "sockets": int(lscpu["Socket(s)"]),
        "cores_per_socket": int(lscpu["Core(s) per socket"]),
        "threads_per_core": int(lscpu["Thread(s) per core"]),
    }
    for k, v in want.items():
        if cpu.get(k) != v:
            die(f"{n}: cpu.{k} {cpu.get(k)}, lscpu says {v}")
    if cpu["threads"] != nproc:
        die(f"{n}: {cpu['threads']} CPUs, {nproc} on line")
    if "Model name" in lscpu and cpu.get("model_name") != lscpu["Model name"]:
        die(f"{n}: model {cpu.get('model_name')!r} vs {lscpu['Model name']!r}")
    if "NUMA node(s)" in lscpu and len(d["numa"]) != int(lscpu["NUMA node(s)"]):
        die(f"{n}: {len(d['numa'])} NUMA nodes, lscpu says {lscpu['NUMA node(s)']}")
    if d["memory"]["total_bytes"] != memtotal:
        die(f"{n}: memory {d['memory']['total_bytes']} vs MemTotal {memtotal}")
    # btime is the same instant, truncated to the second by the kernel
    if not abs(d["boot"]["time_ns"] / 1e9 - btime) < 1.0:
        die(f"{n}: boot {d['boot']['time_ns']} vs btime {btime}")
    if not 0 < d["boot"]["accuracy_ns"] < 1e9:
        die(f"{n}: accuracy {d['boot']['accuracy_ns']}")
    if d["kernel"]["release"] != os.uname().release:
        die(f"{n}: kernel {d['kernel']['release']}")
    if d["node"] != n or d["telem"]["config"]["level"] != 2:
        die(f"{n}: node or config {d['node']} {d['telem']['config']}")
    names = set(x["name"] for x in d["net"])
    before = set(open(os.environ["NET_BEFORE"]).read().split())
    after = set(os.listdir("/sys/class/net"))
    if not (before & after) <= names <= (before | after):
        die(f"{n}: interfaces {sorted(names)}; before {sorted(before)}, "
            f"after {sorted(after)}")
print(json.dumps([s["snapshot"]["cpu"]["threads"] for s in doc["snapshots"]]))
PY
NET_BEFORE=$T/net.before python3 "$T/check.py" "$T/snap.json" json \
    || fail "json snapshot"
NET_BEFORE=$T/net.before python3 "$T/check.py" "$T/snap.yaml" yaml \
    || fail "yaml snapshot"

# ---- txt: lscpu's own labels carry lscpu's values ------------------------
lscpu_val() { LC_ALL=C lscpu | sed -n "s/^$1:[[:space:]]*//p"; }
txt_vals() { sed -n "s/^$1:[[:space:]]*//p" "$T/snap.txt"; }
[ "$(grep -c '^Node:' "$T/snap.txt")" = 2 ] || fail "txt: not two nodes"
for label in 'CPU(s)' 'Socket(s)' 'Core(s) per socket' 'Thread(s) per core' \
             'Model name' 'NUMA node(s)'; do
    # (parentheses are literal in sed's basic expressions)
    want=$(lscpu_val "$label")
    [ -n "$want" ] || { [ "$label" = 'CPU(s)' ] && fail "lscpu shows no CPU(s)"; continue; }
    got=$(txt_vals "$label" | sort -u)
    [ "$got" = "$want" ] || fail "txt: $label '$got', lscpu says '$want'"
done
[ "$(txt_vals 'CPU(s)' | head -1)" = "$(nproc --all)" ] || fail "txt: CPU(s) != nproc"

# ---- md: a table with node, field, value; the same CPU count -------------
head -1 "$T/snap.md" | grep -qx '| node | field | value |' || fail "md header"
[ "$(grep -c '^| s[12] | CPU(s) | '"$(nproc --all)"' |$' "$T/snap.md")" = 2 ] \
    || fail "md: CPU(s) rows"

# ---- one node, a dead node, an unknown node --------------------------------
"$C" -f json snapshot s2 >"$T/one.json" || fail "snapshot s2"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [s["node"] for s in d["snapshots"]]==["s2"], d' "$T/one.json" \
    || fail "snapshot s2 gave other nodes"
kill -KILL "${NODE_PID[s1]}"
wait "${NODE_PID[s1]}" 2>/dev/null || true
unset 'NODE_PID[s1]'
rc=0
"$C" --timeout 500 -f json snapshot >"$T/part.json" 2>"$T/part.err" || rc=$?
[ "$rc" = 3 ] || fail "a dead node: exit $rc, expected 3"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["missing"]==["s1"] and [s["node"] for s in d["snapshots"]]==["s2"], d' "$T/part.json" \
    || fail "a dead node is not named missing"
grep -q "node 's1' did not answer" "$T/part.err" || fail "no stderr line for s1"
rc=0
"$C" snapshot nosuch 2>"$T/bad.err" || rc=$?
[ "$rc" = 1 ] && grep -q "no node 'nosuch'" "$T/bad.err" || fail "unknown node: exit $rc"
"$C" snapshot --help | grep -q "telem_client snapshot \[NODE\]" || fail "snapshot --help"
echo "it_snapshot: ok"
