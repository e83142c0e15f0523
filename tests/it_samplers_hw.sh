# it_samplers_hw.sh - the ib, hw, nfs, lustre and job samplers inside a
# real telemd: started on the fixture trees of tests/data/samplers_hw/good
# (--proc-root, --sys-root), its /metrics must hold their series with the
# fixtures' values and pass `promtool check metrics` with no complaint;
# started on the malformed trees (bad/) it keeps serving.  Without promtool
# (Debian's prometheus), the test is skipped.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
unset TELEM_LEVEL SLURM_JOB_NODELIST || true
command -v promtool >/dev/null || skip "promtool is not installed"
command -v curl >/dev/null || skip "curl is not installed"
[ -x "$TELEM_BIN/telemd" ] || fail "telemd is not built"
DATA=$HERE/data/samplers_hw

# metrics_has NODE PATTERN: /metrics of NODE has a line matching PATTERN.
metrics_has() {
    local url
    url=$(awk -F'\t' '$1 == "metrics" { print $2 }' "$T/$1.out")
    curl -sf "$url" >"$T/$1.txt" && grep -Eq "$2" "$T/$1.txt"
}

start_node n1 --level 2 --http-port 0 --bind none --no-log \
    --proc-root "$DATA/good/proc" --sys-root "$DATA/good/sys"
for want in '^ib_symbol_error_total\{device="mlx5_0",host="n1",port="1"\} 3$' \
            '^ib_port_xmit_wait_total\{device="mlx5_0",host="n1",port="1"\} 123456$' \
            '^ib_rate_bytes_per_second\{device="mlx5_0",host="n1",port="1"\} 25000000000$' \
            '^hwmon_power_watts\{chip="acpi_power_meter",host="n1",hwmon="hwmon2",sensor="power1"\} 245.5$' \
            '^thermal_zone_temp_celsius\{host="n1",type="x86_pkg_temp",zone="thermal_zone0"\} 47$' \
            '^nfs_retransmissions_total\{host="n1",mountpoint="/home",server="10.0.0.1"\} 4$' \
            '^lustre_read_bytes_total\{fs="scratch",host="n1"\} 8392704$' \
            '^lustre_health_ok\{host="n1"\} 1$' \
            '^job_step_oom_kills_total\{host="n1",job="42",step="0"\} 1$'; do
    wait_for metrics_has n1 "$want" || fail "no line $want in /metrics"
done
promtool check metrics <"$T/n1.txt" >"$T/promtool.out" 2>&1 \
    || fail "promtool check metrics: $(cat "$T/promtool.out")"
[ ! -s "$T/promtool.out" ] || fail "promtool: $(cat "$T/promtool.out")"
for s in ib hw nfs lustre job; do
    grep -q "sampler $s not available" "$T/n1.log" \
        && fail "sampler $s skipped on the fixtures"
done

# Malformed trees: what parses is served, telemd keeps serving.
start_node n2 --level 2 --http-port 0 --bind none --no-log \
    --proc-root "$DATA/bad/proc" --sys-root "$DATA/bad/sys"
wait_for metrics_has n2 '^lustre_health_ok\{host="n2"\} 0$' \
    || fail "n2 does not serve lustre_health_ok 0"
wait_for metrics_has n2 '^ib_link_error_recovery_total\{device="mlx5_0",host="n2",port="1"\} 8$' \
    || fail "n2 does not serve the one good InfiniBand counter"
grep -q '^ib_symbol_error_total' "$T/n2.txt" && fail "garbage counter served"
promtool check metrics <"$T/n2.txt" >"$T/promtool2.out" 2>&1 \
    || fail "promtool on n2: $(cat "$T/promtool2.out")"
kill -0 "${NODE_PID[n2]}" || fail "telemd n2 died"
echo "PASS: it_samplers_hw"
