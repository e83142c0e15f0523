#!/usr/bin/env bash
# run.sh - builds telem's libFuzzer targets and runs each for a bounded time.
#
#   bash tests/fuzz/run.sh [SECONDS_PER_TARGET]        (default 10)
#
# Configures and builds build-fuzz/ (clang-14, -DTELEM_FUZZ=ON,
# RelWithDebInfo; only the targets and what they link), replays every
# crash reproducer of tests/fuzz/regress/<target>/ through its target, then
# fuzzes each target for SECONDS_PER_TARGET on a copy of its seed corpus
# (tests/fuzz/corpus/<target>/: the repository is not modified) at nice 19.
# Prints one line per target - executions, exec/s, coverage (cov, ft),
# corpus size, or what it found and where the input was saved - and a
# last line
#
#   fuzz: 12 passed, 0 failed
#
# that tests/run.sh reads.  The exit status is non-zero when the build
# failed (2) or a target crashed, leaked, ran past its time limit or out
# of memory, or a reproducer failed again (1).
#
# Environment:
#   TELEM_FUZZ_JOBS=N      targets fuzzed side by side (default 2 under
#                          CI=true, else 1)
#   TELEM_FUZZ_TARGETS=... names to run (default: every fuzz_* built)
#   TELEM_FUZZ_KEEP=DIR    keep each target's grown corpus in DIR/<target>
#                          (and start from it when it exists)
# Inputs that failed are kept in build-fuzz/artifacts/.  docs/testing.md,
# "Fuzzing", says more.
set -uo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$top/build-fuzz
secs=${1:-10}
jobs=${TELEM_FUZZ_JOBS:-$([ "${CI:-}" = true ] && echo 2 || echo 1)}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs < 1)); then
    echo "fuzz: SECONDS_PER_TARGET must be a whole number of seconds, not '$secs'" >&2
    exit 2
fi

# The options of each target beyond the common ones: fuzz_proto runs under
# a malloc limit far below what msgpack-c's unpacker would ask for a
# claimed count (tests/fuzz/fuzz_proto.c); fuzz_cli's parsers print on
# stdout and stderr for every bad command line.
s_opts() {
    case $1 in
    proto) echo "-malloc_limit_mb=64 -rss_limit_mb=1024" ;;
    cli) echo "-close_fd_mask=3" ;;
    *) echo "" ;;
    esac
}
common=(-timeout=25 -rss_limit_mb=2048 -print_final_stats=1)

echo "fuzz: build in $build"
start_build=$SECONDS
mkdir -p "$build"
blog=$build/build-fuzz.log
if ! cmake -S "$top" -B "$build" -DCMAKE_C_COMPILER=clang-14 -DTELEM_FUZZ=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$blog" 2>&1 \
   || ! cmake --build "$build" --target fuzz_all -j"$(nproc 2>/dev/null || echo 2)" \
        >>"$blog" 2>&1; then
    grep -Ev '^\[ *[0-9]+%\]' "$blog" | tail -n 30 >&2
    echo "fuzz: the build failed (log: $blog)"
    exit 2
fi
echo "fuzz: built in $((SECONDS - start_build)) s"

targets=()
if [ -n "${TELEM_FUZZ_TARGETS:-}" ]; then
    read -ra targets <<<"$TELEM_FUZZ_TARGETS"
else
    for b in "$build"/bin/fuzz_*; do
        name=${b##*/fuzz_}
        [ "$name" = seeds ] || targets+=("$name")
    done
fi

scratch=$(mktemp -d -p "$([ -w /dev/shm ] && echo /dev/shm || echo /tmp)" telem-fuzz-run.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
trap 'exit 130' INT TERM
mkdir -p "$build/artifacts"

# s_what LOG: what a failed run found, from its log.
s_what() {
    if grep -qa 'ERROR: libFuzzer: timeout' "$1"; then echo "timeout"
    elif grep -qa 'out-of-memory' "$1"; then echo "out of memory"
    elif grep -qa 'LeakSanitizer' "$1"; then echo "leak"
    elif grep -qa 'fuzz check failed' "$1"; then
        grep -a -m1 'fuzz check failed' "$1" | sed 's/^.*fuzz check failed: /oracle: /'
    elif grep -qa 'ERROR: .*Sanitizer\|runtime error' "$1"; then
        grep -a -m1 -o 'ERROR: [A-Za-z]*Sanitizer: [a-z-]*\|runtime error: .*' "$1"
    else echo "crash"
    fi
}

# s_replay NAME: the reproducers of regress/NAME through fuzz_NAME.
# Prints "ok", or what failed.
s_replay() {
    local name=$1 dir=$top/tests/fuzz/regress/$1 log=$scratch/$1.regress.log
    local files=("$dir"/*)
    [ -e "${files[0]}" ] || { echo "ok (none)"; return 0; }
    # shellcheck disable=SC2046
    if (cd "$scratch" && TMPDIR=$scratch TELEM_FUZZ_HEAVY=1 "$build/bin/fuzz_$name" \
            "${common[@]}" $(s_opts "$name") "${files[@]}") >"$log" 2>&1; then
        echo "ok (${#files[@]})"
        return 0
    fi
    echo "FAILED: $(s_what "$log") (log $build/artifacts/$name.regress.log)"
    cp "$log" "$build/artifacts/"
    return 1
}

# s_fuzz NAME: fuzzes fuzz_NAME for $secs; writes its result line to
# $scratch/NAME.result ("ok ..." or "FAILED ...").
s_fuzz() {
    local name=$1 log=$scratch/$1.log corpus=$scratch/corpus/$1
    mkdir -p "$corpus"
    cp -r "$top/tests/fuzz/corpus/$name/." "$corpus/" 2>/dev/null
    [ -n "${TELEM_FUZZ_KEEP:-}" ] && [ -d "$TELEM_FUZZ_KEEP/$name" ] \
        && cp -r "$TELEM_FUZZ_KEEP/$name/." "$corpus/"
    local rc
    # shellcheck disable=SC2046
    (cd "$scratch" && TMPDIR=$scratch nice -n 19 "$build/bin/fuzz_$name" \
        "${common[@]}" $(s_opts "$name") -max_total_time="$secs" \
        -artifact_prefix="$build/artifacts/$name-" "$corpus") >"$log" 2>&1
    rc=$?
    local runs stat corp
    runs=$(sed -nE 's/^Done ([0-9]+) runs in ([0-9]+) second.*/\1 \2/p' "$log" | tail -n 1)
    stat=$(grep -a -E '^#[0-9]+.*cov: ' "$log" | tail -n 1)
    corp=$(find "$corpus" -type f | wc -l)
    if [ -n "${TELEM_FUZZ_KEEP:-}" ]; then
        mkdir -p "$TELEM_FUZZ_KEEP/$name"
        cp -r "$corpus/." "$TELEM_FUZZ_KEEP/$name/"
    fi
    if ((rc != 0)); then
        cp "$log" "$build/artifacts/$name.log"
        echo "FAILED: $(s_what "$log"); input and log in $build/artifacts/$name-*" \
            >"$scratch/$name.result"
        return
    fi
    local n=${runs%% *} t=${runs##* }
    printf 'ok: %s execs in %s s (%s/s), cov %s ft %s, corpus %s\n' "${n:-?}" \
        "${t:-?}" "$(( ${n:-0} / (${t:-1} > 0 ? ${t:-1} : 1) ))" \
        "$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$stat")" \
        "$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$stat")" "$corp" \
        >"$scratch/$name.result"
}

pass=0 fail=0
declare -A replay_bad=()
for name in "${targets[@]}"; do
    r=$(s_replay "$name") || replay_bad[$name]=1
    echo "fuzz: $name: reproducers $r"
done

echo "fuzz: $((${#targets[@]})) targets, ${secs} s each, $jobs at a time"
running=()
for name in "${targets[@]}"; do
    s_fuzz "$name" &
    running+=("$!")
    if ((${#running[@]} >= jobs)); then
        wait "${running[0]}"
        running=("${running[@]:1}")
    fi
done
wait

for name in "${targets[@]}"; do
    result=$(cat "$scratch/$name.result" 2>/dev/null || echo "FAILED: no result")
    echo "fuzz: $name: $result"
    if [[ $result == ok* ]] && [ -z "${replay_bad[$name]:-}" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
    fi
done
echo "fuzz: $pass passed, $fail failed"
((fail == 0))
