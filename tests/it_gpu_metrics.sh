# it_gpu_metrics.sh - every series a level 3 telemd serves on /metrics,
# NVIDIA, AMD and Intel GPUs at once, documented and promtool-clean.
#
# One real telemd at level 3 loads the three test-only vendor libraries
# (tests/nvml_test, tests/rsmi_test, tests/ze_test: --nvml-lib,
# --rocm-smi-lib, --ze-lib), each scripted with two GPUs and every field it
# answers, and reads the node samplers' fixture trees (tests/data/node/good
# and tests/data/samplers_hw/good, merged into one --proc-root and
# --sys-root), so the InfiniBand, hwmon, thermal, NFS, Lustre, job, memory,
# pressure and NUMA series are there too.  Then:
#   - `promtool check metrics` passes on the text with no warning;
#   - every family served has a non-empty # HELP and a # TYPE that is not
#     untyped (the samplers' descriptions reached /metrics);
#   - each vendor's GPUs are there with their scripted values and tags
#     (vendor="amd" and "intel" beside gpu; NVIDIA's without vendor), so
#     the three samplers ran side by side; none of them logged a failure;
#     AMD's GPU 0 answers as rocm_smi 6 does (the larger gpu_metrics
#     struct, with the ASIC-independent throttle bits), GPU 1 as 5.2;
#   - OpenMetrics (Prometheus's Accept header) parses in prometheus_client's
#     strict parser where Debian's python3-prometheus-client is installed.
# Without promtool (Debian's prometheus; installed by
# tests/peer_install.sh where the suite runs as root) the test is skipped
# with the reason.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
BUILD=$(dirname "$TELEM_BIN")
NVML=$BUILD/tests/nvml_test/libnvml_test.so
RSMI=$BUILD/tests/rsmi_test/librsmi_test.so
ZE=$BUILD/tests/ze_test/libze_test.so
for f in "$NVML" "$RSMI" "$ZE"; do
    [ -f "$f" ] || fail "a test GPU library is not built: $f"
done
[ -x "$TELEM_BIN/telemd" ] || fail "telemd is not built"
command -v curl >/dev/null || skip "curl is not installed"
if ! command -v promtool >/dev/null; then
    why=$(bash "$HERE/peer_install.sh" --opt-out TELEM_PROMETHEUS_INSTALL \
          prometheus) || skip "promtool is not installed: $why"
    command -v promtool >/dev/null || skip "promtool is not on PATH"
fi

# One root for the proc and sys fixtures of both sampler families.
mkdir -p "$T/root"
cp -R "$HERE/data/node/good/." "$HERE/data/samplers_hw/good/." "$T/root/"

cat >"$T/nvml.script" <<'SCRIPT'
gpus 2
driver 550.54.15
gpu 0 util 87 45
gpu 0 power_mw 350125
gpu 0 power_limit_mw 700000
gpu 0 temp 61
gpu 0 memory 85899345920 1073741824
gpu 0 clock_sm_mhz 1980
gpu 0 clock_mem_mhz 2619
gpu 0 clocks_event 0x40
gpu 0 ecc 3 1
gpu 0 retired 1 2 0
gpu 0 remapped 5 1 0 1
gpu 0 energy_mj 123456789
gpu 0 pcie_replay 7
gpu 0 nvlink 2 1 4 5 6 7
gpu 0 recovery 1
gpu 1 temp 40
gpu 1 util 3 1
xid 0 79 300
SCRIPT
cat >"$T/rsmi.script" <<'SCRIPT'
gpus 2
driver 6.2.4
gpu 0 busy 93
gpu 0 mem_busy 41
gpu 0 vram 68702699520 1073741824
gpu 0 power_uw 287000000
gpu 0 cap_uw 300000000
gpu 0 energy 1000000 15259
gpu 0 temp_edge 45000
gpu 0 temp_junction 61500
gpu 0 temp_memory 53000
gpu 0 clk_sys 1700000000
gpu 0 clk_mem 1600000000
gpu 0 throttle 0x5 0x1000000000
gpu 0 ecc 0 3 0
gpu 0 ecc 2 4 1
gpu 1 temp_junction 70000
gpu 1 busy 12
gpu 1 throttle 0
SCRIPT
cat >"$T/ze.script" <<'SCRIPT'
gpus 2
gpu 0 engine 1000 0 750000 1000000
gpu 0 energy 5000000 0 400000000 1000000
gpu 0 mem 68719476736 34359738368
gpu 0 temp 1 63
gpu 0 temp 2 48
gpu 0 freq 0 1600 0x9
gpu 0 freq 1 3200 0
gpu 0 ras 0 0 0 0 2 0 5 0
gpu 0 ras 1 1 0 0 0 0 3 0
gpu 1 temp 1 50
SCRIPT
export TELEM_NVML_TEST_SCRIPT=$T/nvml.script
export TELEM_RSMI_TEST_SCRIPT=$T/rsmi.script
export TELEM_ZE_TEST_SCRIPT=$T/ze.script
start_node n1 --level 3 --interval 0.2 --http-port 0 --bind none --no-log \
    --proc-root "$T/root/proc" --sys-root "$T/root/sys" \
    --nvml-lib "$NVML" --rocm-smi-lib "$RSMI" --ze-lib "$ZE"
URL=$(sed -n 's/^metrics\t//p' "$T/n1.out")
[[ $URL == http://127.0.0.1:*/metrics ]] || fail "no metrics URL: $URL"

# Every vendor's rates and events need a few samples: wait for the last
# of them (Intel's power is a rate over two samples, NVIDIA's XID comes
# from the event thread).
all_there() {
    curl -sf "$URL" >"$T/m.txt" || return 1
    local want
    for want in '^gpu_xid_total\{gpu="0",host="n1",xid="79"\} 1$' \
                '^gpu_power_w\{gpu="0",host="n1",vendor="intel"\} 400$' \
                '^gpu_utilization\{gpu="0",host="n1",vendor="amd"\} 93$' \
                '^ib_symbol_error_total\{device="mlx5_0",host="n1",port="1"\} 3$' \
                '^mem_total_bytes\{host="n1"\} '; do
        grep -Eq "$want" "$T/m.txt" || return 1
    done
}
wait_for all_there || fail "/metrics never held every vendor's series: $(grep -c . "$T/m.txt") lines"

promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1 \
    || fail "promtool check metrics: $(cat "$T/promtool.out")"
[ ! -s "$T/promtool.out" ] || fail "promtool warns: $(cat "$T/promtool.out")"

# Every family has a HELP with text and a TYPE other than untyped.
awk '/^# HELP / { if (NF > 3) help[$3] = 1; next }
     /^# TYPE / { type[$3] = $4; next }
     /^#/ { next }
     { n = $1; sub(/\{.*/, "", n); fam[n] = 1 }
     END { for (f in fam) {
               if (!(f in help)) print f ": no HELP"
               if (!(f in type)) print f ": no TYPE"
               else if (type[f] == "untyped") print f ": untyped" } }' \
    "$T/m.txt" | sort >"$T/undocumented"
[ ! -s "$T/undocumented" ] || fail "undocumented series: $(cat "$T/undocumented")"
nfam=$(grep -c '^# TYPE ' "$T/m.txt")
((nfam >= 150)) || fail "only $nfam families on /metrics"

has() { grep -Fqx -- "$1" "$T/m.txt" || fail "/metrics lacks: $1"; }
# NVIDIA (no vendor tag)
has 'gpu_temperature_c{gpu="0",host="n1"} 61'
has 'gpu_clocks_event{gpu="0",host="n1",reason="hw_thermal_slowdown"} 1'
has 'gpu_remapped_rows_failure{gpu="0",host="n1"} 1'
has 'gpu_pcie_replays_total{gpu="0",host="n1"} 7'
# AMD
has 'gpu_temperature_c{gpu="0",host="n1",vendor="amd"} 45'
has 'gpu_temperature_c{gpu="1",host="n1",vendor="amd"} 70'
has 'gpu_throttled{gpu="0",host="n1",vendor="amd"} 1'
has 'gpu_clocks_event{gpu="0",host="n1",reason="temp_hotspot",vendor="amd"} 1'
has 'gpu_clocks_event{gpu="0",host="n1",reason="ppt0",vendor="amd"} 0'
has 'gpu_throttled{gpu="1",host="n1",vendor="amd"} 0'
has 'gpu_ecc_uncorrected_errors_total{gpu="0",host="n1",vendor="amd"} 1'
has 'gpu_ecc_block_corrected_errors_total{block="umc",gpu="0",host="n1",vendor="amd"} 3'
has 'gpu_lost{gpu="0",host="n1",vendor="amd"} 0'
# Intel
has 'gpu_temperature_c{gpu="0",host="n1",vendor="intel"} 63'
has 'gpu_clocks_event{gpu="0",host="n1",reason="thermal_limit",vendor="intel"} 1'
has 'gpu_ras_errors_total{category="cache_errors",gpu="0",host="n1",type="uncorrectable",vendor="intel"} 3'
has 'gpu_lost{gpu="1",host="n1",vendor="intel"} 0'
# the node samplers
has 'hwmon_power_watts{chip="acpi_power_meter",host="n1",hwmon="hwmon2",sensor="power1"} 245.5'
has 'lustre_health_ok{host="n1"} 1'
has 'job_step_oom_kills_total{host="n1",job="42",step="0"} 1'
# shared names are described once, for every vendor
has '# TYPE gpu_energy_joules_total counter'
grep -q '^# HELP gpu_temperature_c GPU temperature (NVIDIA: the die; AMD: ' "$T/m.txt" \
    || fail "gpu_temperature_c's help: $(grep '^# HELP gpu_temperature_c ' "$T/m.txt")"

for s in nvml rsmi ze ib hw; do
    grep -q "sampler $s not available" "$T/n1.log" \
        && fail "sampler $s did not open: $(grep "sampler $s" "$T/n1.log")"
done
grep -E "warn: sampler (nvml|rsmi|ze):" "$T/n1.log" \
    && fail "a GPU sampler failed while sampling"

# OpenMetrics, through Prometheus's client parser where it is installed.
if /usr/bin/python3 -c 'import prometheus_client.openmetrics.parser' 2>/dev/null; then
    st=$(/usr/bin/python3 "$HERE/prom_client.py" get "$URL" "$T/m.om" --om)
    [[ $st == 200$'\t'application/openmetrics-text* ]] \
        || fail "no OpenMetrics with Prometheus's Accept header: $st"
    /usr/bin/python3 "$HERE/prom_client.py" om "$T/m.om" >"$T/om.out" 2>&1 \
        || fail "OpenMetrics parser: $(tail -n 5 "$T/om.out")"
    grep -q '^gpu_xid counter' "$T/om.out" \
        || fail "OpenMetrics families: $(head -n 5 "$T/om.out")"
else
    echo "note: python3-prometheus-client is not installed: OpenMetrics not parsed"
fi
kill -0 "${NODE_PID[n1]}" || fail "telemd died"
echo "it_gpu_metrics: ok ($nfam families)"
