# it_nvml.sh - telemd's GPU metrics end to end through the test-only NVML
# (tests/nvml_test, built by the tests, loaded with --nvml-lib): a real
# telemd at level 3 samples two scripted GPUs, receives two XID events on
# its event thread while it goes on sampling, and serves it all on /metrics;
# `promtool check metrics` passes on that text with no warning, and the
# values, types and tags are exactly the scripted ones.  The snapshot
# (telem_client snapshot) names the GPUs.  Without promtool (Debian's
# prometheus package) the test is skipped with the reason.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
LIB=$(dirname "$TELEM_BIN")/tests/nvml_test/libnvml_test.so
[ -f "$LIB" ] || fail "the test NVML is not built: $LIB"
[ -x "$TELEM_BIN/telemd" ] || fail "telemd is not built"
if ! command -v promtool >/dev/null; then
    why=$(bash "$HERE/peer_install.sh" --opt-out TELEM_PROMETHEUS_INSTALL \
          prometheus) || skip "promtool is not installed: $why"
    command -v promtool >/dev/null || skip "promtool is not on PATH"
fi

cat >"$T/script" <<'SCRIPT'
gpus 2
driver 550.54.15
gpu 0 name NVIDIA H100 80GB HBM3
gpu 0 uuid GPU-5a1b2c3d-0000-1111-2222-333344445555
gpu 0 pci 00000000:18:00.0
gpu 0 util 87 45
gpu 0 power_mw 350125
gpu 0 temp 61
gpu 0 memory 85899345920 1073741824
gpu 0 clock_sm_mhz 1980
gpu 0 clocks_event 0x40
gpu 0 ecc 3 1
gpu 0 remapped 5 1 0 1
gpu 0 energy_mj 123456789
gpu 0 nvlink 2 1 4 5 6 7
gpu 0 recovery 1
gpu 1 temp 40
xid 0 79 300
xid 1 48 500
SCRIPT
export TELEM_NVML_TEST_SCRIPT=$T/script
start_node n1 --level 3 --interval 0.2 --http-port 0 --nvml-lib "$LIB"
URL=$(sed -n 's/^metrics\t//p' "$T/n1.out")
[[ $URL == http://127.0.0.1:*/metrics ]] || fail "no metrics URL: $URL"
both_xids() {
    curl -sf "$URL" >"$T/m.txt" \
        && grep -q '^gpu_xid_total{gpu="1",host="n1",xid="48"} 1$' "$T/m.txt" \
        && grep -q '^gpu_xid_total{gpu="0",host="n1",xid="79"} 1$' "$T/m.txt"
}
wait_for both_xids || fail "the XIDs never reached /metrics: $(grep xid "$T/m.txt")"
promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1 \
    || fail "promtool check metrics: $(cat "$T/promtool.out")"
[ ! -s "$T/promtool.out" ] || fail "promtool warns: $(cat "$T/promtool.out")"
has() { grep -Fqx -- "$1" "$T/m.txt" || fail "/metrics lacks: $1"; }
has 'gpu_temperature_c{gpu="0",host="n1"} 61'
has 'gpu_temperature_c{gpu="1",host="n1"} 40'
has 'gpu_power_w{gpu="0",host="n1"} 350.125'
has 'gpu_sm_clock_hertz{gpu="0",host="n1"} 1980000000'
has 'gpu_clocks_event{gpu="0",host="n1",reason="hw_thermal_slowdown"} 1'
has 'gpu_clocks_event{gpu="0",host="n1",reason="sw_power_cap"} 0'
has 'gpu_ecc_uncorrected_errors_total{gpu="0",host="n1"} 1'
has 'gpu_remapped_rows_failure{gpu="0",host="n1"} 1'
has 'gpu_energy_joules_total{gpu="0",host="n1"} 123456.789'
has 'gpu_nvlink_crc_flit_errors_total{gpu="0",host="n1",link="2"} 4'
has 'gpu_recovery_action{gpu="0",host="n1"} 1'
has 'gpu_xid_last{gpu="0",host="n1"} 79'
has '# TYPE gpu_xid_total counter'
has '# TYPE gpu_ecc_uncorrected_errors_total counter'
has '# TYPE gpu_clocks_event gauge'
grep -q '^gpu_recovery_action{gpu="1"' "$T/m.txt" \
    && fail "a GPU without the recovery field has a series"
"$TELEM_BIN/telem_client" -f json snapshot n1 >"$T/sysinfo.json" 2>"$T/client.log" \
    || fail "telem_client snapshot: $(cat "$T/client.log")"
tr -d ' \n' <"$T/sysinfo.json" >"$T/sysinfo.flat"
for want in '"vendor":"NVIDIA"' '"pci_bus_id":"00000000:18:00.0"' \
            '"name":"NVIDIAH10080GBHBM3"' '"gpu_driver":"550.54.15"'; do
    grep -Fq "$want" "$T/sysinfo.flat" || fail "the snapshot lacks $want: $(cat "$T/sysinfo.json")"
done
kill -0 "${NODE_PID[n1]}" || fail "telemd died"
echo "it_nvml: ok"
