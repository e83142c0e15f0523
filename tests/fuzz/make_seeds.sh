#!/usr/bin/env bash
# make_seeds.sh - writes the fuzz targets' seed corpus, tests/fuzz/corpus/
# (committed: run this only to make the seeds again after a format or an
# input layout changes).
#
#   bash tests/fuzz/make_seeds.sh [OUT_DIR]     (default tests/fuzz/corpus)
#
# Binary seeds (wire frames, blocks, segment and dump files, the
# dictionary's log) come from telem's own writers through fuzz_seeds, so
# build-fuzz/ must hold it (tests/fuzz/run.sh builds it, or
# cmake --build build-fuzz --target fuzz_seeds); the segment and the dump
# carry the time they were written, so they differ from run to run.  The rest are written
# here: /proc and /sys trees in the tree format of tests/fuzz/fuzz.h
# (tests/data/sysinfo's fixtures converted), node files, HTTP requests,
# OpenTSDB queries, Prometheus names and command lines, each with the
# leading bytes its target reads first (see each fuzz_*.c).
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$top/tests/fuzz/corpus}
build=${TELEM_FUZZ_BUILD:-$top/build-fuzz}
mkdir -p "$out"
"$build/bin/fuzz_seeds" "$out"

# seed TARGET NAME: stdin into OUT/TARGET/NAME.
seed() {
    mkdir -p "$out/$1"
    cat >"$out/$1/$2"
}

# tree DIR: the files under DIR in the tree format, sorted by path.
tree() {
    (cd "$1" && find . -type f | sort | while read -r f; do
        printf '@@ %s\n' "${f#./}"
        cat "$f"
        [ -z "$(tail -c 1 "$f")" ] || printf '\n'
    done)
}

# ---- /proc sampler, system snapshot, slurmd ---------------------------
for fixture in numa2 broken; do
    tree "$top/tests/data/sysinfo/$fixture" | seed sysinfo "$fixture"
done

seed proc full <<'EOF'
@@ proc/stat
cpu  4705 150 1120 16250 520 0 75 0 0 0
cpu0 2350 75 560 8125 260 0 37 0 0 0
ctxt 1990473
btime 1700000000
procs_running 3
@@ proc/meminfo
MemTotal:       16310776 kB
MemFree:         8129148 kB
MemAvailable:   12230344 kB
Buffers:          310532 kB
Cached:          3620008 kB
SwapTotal:       2097148 kB
SwapFree:        2097148 kB
@@ proc/loadavg
0.52 0.58 0.59 2/389 12345
@@ proc/uptime
35071.23 69210.10
@@ proc/net/dev
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 2776770   11307    0    0    0     0          0         0  2776770   11307    0    0    0     0       0          0
  eth0: 1215645   10987    0    0    0     0          0         0   801209    7341    0    0    0     0       0          0
@@ proc/diskstats
   8       0 sda 4573 1216 352226 2340 2571 3264 100658 3300 0 4276 5640
   8       1 sda1 4400 1216 350000 2300 2571 3264 100658 3300 0 4200 5600
 259       0 nvme0n1 981 0 52126 120 77 12 1024 8 0 140 128
 259       1 nvme0n1p1 900 0 50000 110 77 12 1024 8 0 130 118
   7       0 loop0 50 0 400 1 0 0 0 0 0 2 1
@@ proc/1234/
@@ sys/block/sda/
@@ sys/block/nvme0n1/
@@ next/stat
cpu  4805 150 1170 16400 525 0 76 0 0 0
ctxt 1991473
procs_running 1
@@ next/net/dev
  eth0: 1315645   11987    0    0    0     0          0         0   901209    8341    0    0    0     0       0          0
@@ next/diskstats
   8       0 sda 4600 1216 362226 2340 2600 3264 110658 3300 0 4276 5640
 259       0 nvme0n1 991 0 52226 120 77 12 1024 8 0 140 128
EOF

seed proc naming <<'EOF'
@@ proc/stat
cpu  10 0 5 100 0 0 0 0
@@ proc/meminfo
MemTotal:       1000 kB
MemFree:         300 kB
Buffers:         100 kB
Cached:          200 kB
@@ proc/diskstats
 179       0 mmcblk0 100 0 800 10 50 0 400 5 0 20 15
 179       1 mmcblk0p1 90 0 700 9 50 0 400 5 0 18 14
   8      16 sdb 7 0 56 1 0 0 0 0 0 1 1
   8      17 sdb1 7 0 56 1 0 0 0 0 0 1 1
  11       0 sr0 0 0 0 0 0 0 0 0 0 0 0
@@ next/diskstats
 179       0 mmcblk0 100 0 700 10 50 0 300 5 0 20 15
   8      16 sdb 9 0 72 1 1 0 8 0 0 1 1
EOF

seed slurmd two-nodes <<'EOF'
@@ proc/self/ns/net -> net:[4026531840]
@@ proc/100/stat
100 (slurmd) S 1 100 100 0 -1 4194560 1200 0 3 0 12 8 0 0 20 0 3 0 4711 1000000 200 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0
@@ proc/100/cmdline
/usr/sbin/slurmd -N n1 -D
@@ proc/100/ns/net -> net:[4026531840]
@@ proc/200/stat
200 (slurmd) S 1 200 200 0 -1 4194560 1100 0 2 0 10 7 0 0 20 0 3 0 4800 1000000 190 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 0 0 0 0 0 0
@@ proc/200/cmdline
/usr/sbin/slurmd -Nn2
@@ proc/200/ns/net -> net:[4026532001]
@@ proc/300/stat
300 (bash (x)) Z 1 300 300 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0
@@ next/100/stat
100 (slurmd) S 1 100 100 0 -1 4194560 1200 0 3 0 12 8 0 0 20 0 3 0 9999 1000000 200
EOF
# cmdline holds NUL-separated words, as /proc writes it
sed -i 's|^/usr/sbin/slurmd -N n1 -D$|/usr/sbin/slurmd\x00-N\x00n1\x00-D|;
        s|^/usr/sbin/slurmd -Nn2$|/usr/sbin/slurmd\x00-Nn2|' "$out/slurmd/two-nodes"

# ---- node file: a name line, an endpoint line, then the file --------------
seed relays plain <<'EOF'
# relays of a job
r1	tcp://127.0.0.1:5001	n1,n2,n3
r2	ipc:///tmp/telem/r2.sock	n4

r3	tcp://[::1]:7	node five,n6
EOF
printf 'r1\ttcp://127.0.0.1:5001\tn1,n2\nr2\ttcp://127.0.0.1:5002\tn2' \
    | seed relays node-twice

seed nodefile plain <<'EOF'
n3
ipc:///run/telem/n3/ctl.sock
# nodes of job 42
n1	ipc:///run/telem/n1/ctl.sock
n2	tcp://10.0.0.2:7100

n 4	 tcp://10.0.0.4:7100 
EOF
printf 'n9\ntcp://h:1\nn1\tipc:///a/n1/ctl.sock\r\nn2\tipc:///a/n2/ctl.sock' \
    | seed nodefile crlf-no-final-newline

# ---- HTTP: a method byte (0 GET, 1 POST), path, query string, body ----------
q='{"start":1700000000,"end":1700000100,"msResolution":true,"showQuery":true,'
q+='"queries":[{"metric":"cpu_percent","aggregator":"avg","downsample":"10s-avg-zero",'
q+='"rate":true,"rateOptions":{"counter":true,"counterMax":100,"resetValue":0},'
q+='"filters":[{"type":"wildcard","tagk":"host","filter":"n*","groupBy":true}]},'
q+='{"metric":"gpu.util","aggregator":"none","tags":{"gpu":"0"}}]}'
printf '\001/api/query\narrays=true\n%s' "$q" | seed http query-post
printf '\000/api/query/\nstart=1700000000&end=1700000100&m=sum:10s-max:rate{counter,,1}:cpu_percent%%7Bhost=n1%%7D%%7Bgpu=*%%7D&show_query\n' \
    | seed http query-get
printf '\000/api/suggest\ntype=metrics&q=cpu&max=1000\n' | seed http suggest
printf '\000/api/search/lookup\nm=cpu_percent%%7Bhost=*%%7D&limit=10\n' | seed http lookup
printf '\000/telem/job\n\n' | seed http job
printf '\000/telem/snapshot\nnode=n1\n' | seed http snapshot
printf '\000/api/aggregators\n\n' | seed http aggregators
printf '\000/\n\n' | seed http dashboard
p='[{"metric":"sys.cpu","timestamp":1700000000,"value":"42.5","tags":{"host":"n1","cpu":"0"}},'
p+='{"metric":"sys.cpu","timestamp":1700000000123,"value":1,"tags":{"host":"n9"}}]'
printf '\001/api/put\ndetails\n%s' "$p" | seed http put

# ---- OpenTSDB parsers: a mode byte, then the text ----------------------------
printf '\000%s' "$q" | seed tsdb json
printf '\001start=1h-ago\nend=now\nm=sum:10s-avg-nan:rate{dropcounter,1000,0}:explicit_tags:cpu{host=n1|n2}{gpu=regexp(0%%7C1)}\narrays\nms\n' \
    | seed tsdb uri
printf '\002%s' '2013/03/27-12:42:04' | seed tsdb time-date
printf '\002%s' '1364410924.250' | seed tsdb time-fraction
printf '\003%s' '30s' | seed tsdb duration
printf '\004%s' '1m-p99-null' | seed tsdb downsample
printf '\005iliteral_or\nhost\nN1|n2|web01\n' | seed tsdb filter
printf '\006host\nwildcard(n*)\n' | seed tsdb filter-tag

# ---- Prometheus names: a flag byte, name, Accept, Accept-Encoding, tag ------
printf '\001%s\n%s\n%s\ngpu\n0\n' 'strace_hits_total{scall="read",path="a\\"b\\\\c\\n"}' \
    'application/openmetrics-text;version=1.0.0;q=0.8,text/plain;q=0.5,*/*;q=0.1' \
    'gzip;q=0.5, x-gzip, *;q=0' | seed promname labels
printf '\003%s\n\n\nhost\nn1\n' 'train.loss{rank=3,host=n1,}' | seed promname bare-own
printf '\000%s\ntext/plain\nidentity\n9key\nv\n' '0bad:name.with-dots' | seed promname mapped

# ---- command lines: a mode byte, a variant byte, NUL-separated words ---------
printf '\000\001%s' '-2.5e3' | seed cli number
printf '\001\007%s' '-4711' | seed cli int64
printf '\002\002%s' '0.000000001' | seed cli seconds
printf '\003\000%s' 'debug' | seed cli log-level
printf '\004\077--period=0.5\000-c\00010\000--name\000-jn\000--log-level=info\000op\000--\000-x' \
    | seed cli spec
printf '\005\000-g\000strace_hits_total{scall=read},cpu_percent\000--start\000-60\000--max-points\0005\000-n\000n1' \
    | seed cli client
echo "make_seeds: wrote $(find "$out" -type f | wc -l) seeds in $out"
