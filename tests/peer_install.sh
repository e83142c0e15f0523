#!/usr/bin/env bash
# peer_install.sh - installs the Debian packages of a test's real peer
# (slurm-wlm and munge, prometheus, chromium, Open MPI), one install at a
# time on the machine.
#
#   bash tests/peer_install.sh [--opt-out VAR] PACKAGE...
#
# A test whose peer is missing calls this, with CI or without: run as root
# on Debian, the suite installs what it needs.  It declines, with the
# reason, only where installing cannot or must not happen: VAR=0 in the
# environment (TELEM_SLURM_INSTALL, TELEM_PROMETHEUS_INSTALL,
# TELEM_BROWSER_INSTALL, TELEM_MPI_INSTALL: a root user who wants that
# peer left alone), no apt-get or dpkg on the machine, not root (it never
# uses sudo), or apt failed.
#
# Why: ctest runs tests side by side, and several may find their peer
# missing at once.  apt-get and dpkg hold exclusive locks, so a second
# install started beside the first failed at once ("Could not get lock")
# and its test reported itself skipped on a machine that could run it.
# Every test's install goes through here: one flock serialises them, the
# packages the install before this one brought are not asked for again,
# and dpkg's own lock is waited for (another package manager at work).
#
# Exit status 0 when every PACKAGE is installed; otherwise 1 with one line
# on stdout saying why (apt's last lines), for the test's skip reason.
set -uo pipefail
optout=
if [ "${1:-}" = --opt-out ]; then
    optout=${2:-}
    shift 2 || shift $#
fi
if (($# == 0)) || ! [[ $optout =~ ^([A-Z_][A-Z0-9_]*)?$ ]]; then
    echo "usage: peer_install.sh [--opt-out VAR] PACKAGE..." >&2
    exit 2
fi
if [ -n "$optout" ] && [ "${!optout:-}" = 0 ]; then
    echo "$optout=0 keeps the test from installing $*"
    exit 1
fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
    echo "installing $* needs apt-get and dpkg (Debian), not found here"
    exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "installing $* needs root"
    exit 1
fi
lock=/run/lock/telem-peer-install.lock
[ -d /run/lock ] && [ -w /run/lock ] || lock=/tmp/telem-peer-install.lock
if ! exec 9>>"$lock"; then
    echo "cannot open the install lock $lock"
    exit 1
fi
if ! flock -w 900 9; then
    echo "another test's install held $lock for 900 s"
    exit 1
fi
installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'
}
missing=()
for p in "$@"; do
    installed "$p" || missing+=("$p")
done
((${#missing[@]})) || exit 0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
apt=(apt-get -o DPkg::Lock::Timeout=300 -qq)
if { "${apt[@]}" update && DEBIAN_FRONTEND=noninteractive \
        "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } \
        >"$out" 2>&1; then
    exit 0
fi
echo "installing ${missing[*]} failed: $(tail -n 3 "$out" | tr '\n' ' ')"
exit 1
