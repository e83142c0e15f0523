# browser.sh - headless Chromium for the browser tests (it_browser.sh,
# it_browser_rows.sh), sourced after lib.sh.
#
# Finds the browser ($TELEM_CHROMIUM, else chromium on PATH), installing
# Debian's chromium where there is none (tests/peer_install.sh, as root on
# Debian) and skipping the test, with the reason, only where it cannot (not
# root, no apt, the install failed, or TELEM_BROWSER_INSTALL=0).  Sets B
# (the browser), CH (its directory under $T) and BROWSER_FLAGS, ends every
# Chromium process of the test however the test ends (an EXIT trap that
# also runs lib.sh's cleanup), and defines browse().
find_browser() { command -v chromium || command -v chromium-browser || true; }
B=${TELEM_CHROMIUM:-$(find_browser)}
if [ -z "$B" ]; then
    why=$(bash "$(dirname "${BASH_SOURCE[0]}")/peer_install.sh" \
          --opt-out TELEM_BROWSER_INSTALL chromium) \
        || skip "chromium is not installed: $why"
    B=$(find_browser)
    [ -n "$B" ] || skip "chromium was installed but is not on PATH"
fi

# Chromium keeps everything under $T/chrome (its profile, and a HOME for
# the files it writes there); its crash handlers detach from it, so the
# clean-up finds every process of ours by that path in its command line.
CH=$T/chrome
mkdir -p "$CH/home" "$CH/profile"
BROWSER_FLAGS=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage
    --no-first-run --no-default-browser-check --disable-extensions
    --disable-background-networking --disable-component-update --disable-sync
    --mute-audio --hide-scrollbars --user-data-dir="$CH/profile")
CHROME_PID=
browser_pids() {
    ps -eo pid=,args= | D="$CH/" awk 'index($0, ENVIRON["D"]) { print $1 }'
}
browser_cleanup() {
    [ -n "$CHROME_PID" ] && kill -TERM "$CHROME_PID" 2>/dev/null
    local p
    for p in $(browser_pids); do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 100); do [ -z "$(browser_pids)" ] && break; sleep 0.05; done
    for p in $(browser_pids); do kill -KILL "$p" 2>/dev/null || true; done
    cleanup
}
trap browser_cleanup EXIT

# browse FILE ARGS...: one headless Chromium run, its standard output to
# FILE, bounded by what is left of PAGE_END (in $SECONDS).  `timeout` puts
# it in a process group of its own and ends the whole group.
browse() {
    local out=$1 left=$((PAGE_END - SECONDS)) rc=0
    shift
    ((left > 0)) || return 1
    HOME=$CH/home XDG_CONFIG_HOME=$CH/home/.config XDG_CACHE_HOME=$CH/home/.cache \
        timeout -k 5 "$left" "$B" "${BROWSER_FLAGS[@]}" "$@" \
        >"$out" 2>>"$T/chromium.out" &
    CHROME_PID=$!
    wait "$CHROME_PID" || rc=$?
    CHROME_PID=
    return "$rc"
}
