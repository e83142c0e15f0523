#!/usr/bin/env python3
"""slow_gpu_noise.py - could slowgpu have told this slowdown from the noise?

    telem_client -f json query cg_dgemm_seconds --start -600s \\
        | python3 slow_gpu_noise.py NODE LOAD_START_NS [EFFECT Z]

Reads the collectors' per-round figures (telem_client's JSON query output)
and measures, the way the slowgpu detector does:
- each device's log ratio to the median of the other devices of its round;
- the noise: the median absolute change of that ratio between consecutive
  rounds, as a standard deviation (divided by 0.6745 x sqrt 2), the median
  over every device but NODE (NODE's own before the load too);
- the slowdown: NODE's median ratio to its peers in the rounds that began
  after LOAD_START_NS (realtime nanoseconds).
The detector acts on a slowdown of at least max(EFFECT, Z x noise) (its
defaults: 0.06 and 3).  Prints one line with the figures and exits 0 when
the slowdown cleared that bar with a margin of 1.5 over at least 30 rounds
(a detection should have happened), 3 when it did not (the machine is too
noisy to decide), 1 when there is no data to judge.
"""
import json
import math
import statistics
import sys

MARGIN = 1.5
MIN_ROUNDS = 30


def rounds_of(doc, load_ns):
    """{ts: {device: seconds}} for rounds where every device reported, the
    devices being those that reported under the load: a device of an
    earlier run of the job (a node taken out before the load) is left out,
    and so are rounds from before a device started."""
    by_ts = {}
    for s in doc.get("series", []):
        if s.get("metric") != "cg_dgemm_seconds":
            continue
        dev = (s.get("node") or s["tags"].get("host", "?"),
               s["tags"].get("gpu", ""))
        for ts, v in s.get("points", []):
            if v and v > 0 and math.isfinite(v):
                by_ts.setdefault(ts, {})[dev] = v
    devices = {d for ts, r in by_ts.items() if ts >= load_ns for d in r}
    full = {ts: {d: r[d] for d in devices} for ts, r in by_ts.items()
            if devices <= r.keys()}
    return full, sorted(devices)


def log_ratios(rounds, devices):
    """{device: [(ts, log(x / median of the others))]} in time order."""
    out = {d: [] for d in devices}
    for ts in sorted(rounds):
        r = rounds[ts]
        for d in devices:
            others = [r[o] for o in devices if o != d]
            out[d].append((ts, math.log(r[d] / statistics.median(others))))
    return out


def wander(seq):
    """Median absolute successive change, as a standard deviation."""
    steps = [abs(b - a) for a, b in zip(seq, seq[1:])]
    if len(steps) < 6:
        return None
    return statistics.median(steps) / (0.6744897501960817 * math.sqrt(2))


def main(argv):
    if len(argv) not in (3, 5):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    node, load_ns = argv[1], int(argv[2])
    effect, z = (float(argv[3]), float(argv[4])) if len(argv) == 5 else (0.06, 3.0)
    try:
        doc = json.load(sys.stdin)
    except ValueError as e:
        print(f"no figures to judge: the query's output is not JSON ({e})")
        return 1
    rounds, devices = rounds_of(doc, load_ns)
    slow = [d for d in devices if d[0] == node]
    if len(devices) < 2 or len(slow) != 1 or len(rounds) < 8:
        print(f"no figures to judge: {len(devices)} device(s), "
              f"{len(rounds)} complete round(s)")
        return 1
    lr = log_ratios(rounds, devices)
    noises = [wander([x for _, x in lr[d]]) for d in devices if d != slow[0]]
    noises.append(wander([x for ts, x in lr[slow[0]] if ts < load_ns]))
    noises = [n for n in noises if n is not None]
    loaded = [math.exp(x) for ts, x in lr[slow[0]] if ts >= load_ns + 10**9]
    if not noises or not loaded:
        print(f"no figures to judge: {len(loaded)} round(s) under the load")
        return 1
    noise = statistics.median(noises)
    ratio = statistics.median(loaded)
    need = max(effect, z * math.expm1(noise))
    decidable = ratio - 1 >= MARGIN * need and len(loaded) >= MIN_ROUNDS
    print(f"{node}'s device ran {ratio:.3f}x its peers' time over "
          f"{len(loaded)} rounds under the load; the devices' round-to-round "
          f"noise is {100 * math.expm1(noise):.2f} %, so slowgpu needs a "
          f"slowdown of at least {100 * need:.1f} % (effect {effect:g}, "
          f"z {z:g} x noise); "
          + ("that was clear: it should have been named" if decidable else
             f"that is not clear by a margin of {MARGIN:g} over "
             f"{MIN_ROUNDS} rounds"))
    return 0 if decidable else 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
