# it_launch_detect.sh - a detector's data is checked before the job starts,
# slowgpu without --collect starts its collectors, and telem_collect --node
# runs one node's collectors only, with the map one local group would give.
#
# Detectors: telem_launch refuses (exit 2, one line naming the detector and
# the fix) an unknown detector, telemetry level 0, proc-threshold below
# level 2, a gpu_* metric below level 3, a collector kernel it cannot
# start, --collect options whose collectors record another kernel than the
# detector reads, and --collect options a shell could not split;
# `--detector slowgpu` alone starts `telem_collect --backend cpu
# --kernel dgemm` and its collectors record cg_dgemm_seconds on every node.
# telem_collect --node: on a node file of three nodes, `--node n2` maps only
# n2's collectors; with --local-devices its pin and phase equal the n2 line
# of the whole group's map; without, device 0 runs on device 0 at phase 0;
# a node not in the list and --node with --spawn are usage errors.
# --collector-arg and a collector program's own kernel: their bounds, and
# the launcher reading --kernel past --collector-arg's words.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
B=$TELEM_BIN

# ---- detectors checked before the job starts ----
refused() {   # refused PATTERN ARGS...: exit 2 and PATTERN on stderr
    local pat=$1 rc=0; shift
    "$B/telem_launch" --local 2 "$@" -- true >"$T/r.out" 2>"$T/r.err" || rc=$?
    [ "$rc" = 2 ] || fail "telem_launch $* exited $rc, not 2: $(cat "$T/r.err")"
    grep -q -- "$pat" "$T/r.err" || fail "telem_launch $*: no '$pat' in: $(cat "$T/r.err")"
    [ ! -e "$TELEM_RUNDIR/launch/restarts.log" ] || fail "telem_launch $* started a job"
}
refused "telem_watch has no detector 'nosuch'" --detector nosuch
refused "use --telemetry-level 1" -L 0 --detector slowgpu
refused "use --telemetry-level 2" -L 1 --detector proc-threshold
refused "use --telemetry-level 1" -L 0 --detector straggler
refused "use --telemetry-level 3" -L 2 --detector hot=threshold:metric=gpu_temperature_c,value=80
refused "add --collect '--kernel foo" --detector slowgpu:metric=cg_foo_seconds
# --collect given: its collectors must record what the detector reads.
refused "collectors of --collect (--backend cuda) record cg_fma_seconds: use --detector slowgpu:metric=cg_fma_seconds, or --collect '--backend cpu" \
    --detector slowgpu --collect "--period 1 --backend cuda"
refused "(--kernel fma) record cg_fma_seconds" --detector slowgpu --collect "-k fma"
refused "(--backend cpu) record cg_dgemm_seconds: use --detector slowgpu:metric=cg_dgemm_seconds, or --collect '--backend cuda" \
    --detector slowgpu:metric=cg_fma_seconds --collect "-bcpu"
refused "names no backend telem_collect knows" --detector slowgpu --collect "--backend=nope"
# A collector program of one's own: its --kernel decides; the words of
# --collector-arg are that program's, never telem_collect's --kernel.
refused "(--kernel eig) record cg_eig_seconds" --detector slowgpu \
    --collect "--collector /usr/bin/python3 --kernel eig --collector-arg -kdgemm"
refused "(--kernel eig) record cg_eig_seconds" \
    --detector slowgpu:metric=cg_lu_seconds \
    --collect "--collector /usr/bin/python3 --collector-arg s.py --kernel eig"
refused "invalid --collect '--kernel 'x'" --collect "--kernel 'x"
refused "invalid --collect ''" --collect ""

# ---- slowgpu alone starts its collectors ----
"$B/telem_launch" --local 2 --no-agg --detector slowgpu -- bash -c '
    for _ in $(seq 600); do
        out=$("$0/telem_client" query cg_dgemm_seconds --start -60s 2>/dev/null || true)
        n=$(awk -F" [|] " "/cg_dgemm_seconds/ { print \$1 }" <<<"$out" | sort -u | wc -l)
        [ "$n" -ge 2 ] && exit 0
        sleep 0.1
    done
    exit 1' "$B" >"$T/job.out" 2>"$T/job.log" \
    || fail "the slowgpu job did not see cg_dgemm_seconds on both nodes: $(tail -n 5 "$T/job.log")"
grep -q "starting telem_collect --backend cpu --kernel dgemm" "$T/job.log" \
    || fail "no line about the collectors started: $(head -n 3 "$T/job.log")"

# ---- straggler: accepted alone and beside slowgpu ----
for dets in "--detector straggler" "--detector straggler --detector slowgpu"; do
    # shellcheck disable=SC2086
    "$B/telem_launch" --local 2 --no-agg $dets -- true >"$T/st.out" 2>"$T/st.log" \
        || fail "telem_launch $dets -- true failed: $(tail -n 5 "$T/st.log")"
done

# ---- telem_collect --node ----
printf '# test nodes\nn1\tipc://%s/a\nn2\tipc://%s/b\nn3\tipc://%s/c\n' \
    "$T" "$T" "$T" >"$T/nodes3"
map() {   # map ARGS...: the map lines telem_collect prints, then stops it
    "$B/telem_collect" -N "$T/nodes3" --period 0.5 --devices 0 "$@" \
        >"$T/map.out" 2>"$T/map.log" &
    local pid=$!
    wait_for grep -q '^ready$' "$T/map.out" || { kill "$pid"; fail "telem_collect $* not ready: $(cat "$T/map.log")"; }
    kill -TERM "$pid"
    wait "$pid" || true
    grep '^node ' "$T/map.out" | sed 's/ pid [0-9]*$//'
}
all=$(map --local-devices 0)
[ "$(grep -c . <<<"$all")" = 3 ] || fail "whole map: $all"
one=$(map --local-devices 0 --node n2)
[ "$one" = "$(grep '^node n2 ' <<<"$all")" ] \
    || fail "--node n2 map '$one' differs from the whole group's n2 line in: $all"
own=$(map --node n2)
[ "$own" = "node n2 device 0 -> cpu device 0 (id 0) phase 0.0 ms" ] \
    || fail "--node n2 without --local-devices: '$own'"
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --node n9
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --node n2 --spawn 'ssh {node}'
expect_rc 2 "$B/telem_collect" --node 'a/b'
# --collector-arg: needs --collector, 1-4096 bytes without control
# characters, at most 16; a kernel the backend lacks needs --collector.
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector-arg x
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector /bin/true --collector-arg ""
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector /bin/true \
    --collector-arg "$(printf 'a\tb')"
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector /bin/true \
    --collector-arg "$(head -c 4097 /dev/zero | tr '\0' x)"
many=(); for _ in $(seq 17); do many+=(--collector-arg w); done
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector /bin/true "${many[@]}"
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --kernel eig
expect_rc 2 "$B/telem_collect" -N "$T/nodes3" --collector /bin/true --kernel 'e-g'
echo "it_launch_detect: ok"
