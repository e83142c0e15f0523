#!/usr/bin/env python3
"""cpu_busy.py - how busy this machine's cores are with other work.

    python3 cpu_busy.py OUT [--count-nice]

Samples /proc/stat every 0.2 s until SIGTERM or SIGINT and keeps, in the
file OUT (rewritten after every sample, so it can be read at any time),
the highest share of any one core that was busy over any whole second, in
percent, as one integer.  Time spent in processes at a positive nice value
is left out unless --count-nice is given: the example jobs run their own
work at nice 19, so what is left is the work at normal priority, which is
what competes with the collectors (telem's own processes take well under
30 % of a core).  A machine whose figure passes 70 % had other work on it.
"""
import os
import signal
import sys
import time


def cores(count_nice):
    """{core: (total jiffies, jiffies not busy)}"""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            v = line.split()
            if not v[0].startswith("cpu") or v[0] == "cpu":
                continue
            nice, idle, iowait = int(v[2]), int(v[4]), int(v[5])
            total = sum(map(int, v[1:9]))
            free = idle + iowait + (0 if count_nice else nice)
            out[v[0]] = (total, free)
    return out


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--count-nice"):
        print("usage: cpu_busy.py OUT [--count-nice]", file=sys.stderr)
        return 2
    out, count_nice = argv[1], len(argv) == 3
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    busiest, hist = 0, [(time.monotonic(), cores(count_nice))]
    try:
        while True:
            time.sleep(0.2)
            now = (time.monotonic(), cores(count_nice))
            hist.append(now)
            old = [h for h in hist if now[0] - h[0] >= 1.0]
            if old:
                c0 = old[-1][1]
                for k, (tot, free) in now[1].items():
                    dt, df = tot - c0[k][0], free - c0[k][1]
                    if dt > 0:
                        busiest = max(busiest, int(100 * (dt - df) / dt))
                hist = [h for h in hist if now[0] - h[0] < 2.0]
            with open(out + ".tmp", "w") as f:
                f.write(f"{busiest}\n")
            os.replace(out + ".tmp", out)
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
