#!/usr/bin/env python3
"""Correlation of spot reclaims across N instances of one zone (stdlib only), for decision
0032's "all N up" chain: is a gang's reclaim hazard N times one node's (independent) or one
node's (whole-zone events)? Usage: bench/sim/gang_correlation.py [TRACES_DIR] (default
../shared/traces, the folder of spot_aws_v100_4node_preempt_2023-08.csv and the others).
Interval convention: each pair of consecutive ticks (t-1, t) in the same segment is an
interval of length dt = elapsed[t]-elapsed[t-1], spent in state count[t-1]; a drop is
count[t-1]-count[t] > 0. Gap rule: dt > 5 x median step => break (no interval, no drop,
no run across it)."""
import csv, os, statistics, sys
from collections import defaultdict, Counter

D = os.path.join(sys.argv[1] if len(sys.argv) > 1 else '../shared/traces', '')

def load(fn):
    z = defaultdict(list)
    with open(D + fn) as f:
        for r in csv.DictReader(f):
            z[r['zone']].append((float(r['elapsed_s']), int(r['available'])))
    for k in z: z[k].sort()
    return z

def segments(rows):
    steps = [b[0] - a[0] for a, b in zip(rows, rows[1:])]
    med = statistics.median(steps)
    segs, cur, nbreak = [], [rows[0]], 0
    for a, b in zip(rows, rows[1:]):
        if b[0] - a[0] > 5 * med or b[0] <= a[0]:
            segs.append(cur); cur = [b]; nbreak += 1
        else:
            cur.append(b)
    segs.append(cur)
    return segs, med, nbreak

def analyse(rows, N):
    segs, med, nbreak = segments(rows)
    H = hN = h1 = inst_h = 0.0
    lost = 0; drops = Counter(); lost_from_N = 0; drops_from_N = 0
    runs = []  # (length_h, ended)
    for s in segs:
        run_len = None
        for (t0, c0), (t1, c1) in zip(s, s[1:]):
            dt = (t1 - t0) / 3600.0
            H += dt; inst_h += c0 * dt
            if c0 == N: hN += dt
            if c0 >= 1: h1 += dt
            if c1 < c0:
                d = c0 - c1; lost += d; drops[d] += 1
                if c0 == N: lost_from_N += d; drops_from_N += 1
            if c0 == N:
                run_len = (run_len or 0.0) + dt
                if c1 < N: runs.append((run_len, True)); run_len = None
        if run_len is not None: runs.append((run_len, False))  # censored at segment end
    ended = sum(1 for _, e in runs if e)
    haz = ended / hN if hN else float('nan')
    rate = lost / inst_h if inst_h else float('nan')
    rateN = lost_from_N / (N * hN) if hN else float('nan')
    return dict(med=med, nbreak=nbreak, H=H, fN=hN / H, f1=h1 / H, hN=hN,
                nruns=len(runs), mean_run=(sum(l for l, _ in runs) / len(runs)) if runs else float('nan'),
                ended=ended, haz=haz, lost=lost, inst_h=inst_h, rate=rate, rateN=rateN,
                drops=drops, drops_from_N=drops_from_N, lost_from_N=lost_from_N)

def p(*a): print(*a)

for fn, N in [('spot_aws_v100_4node_preempt_2023-08.csv', 4), ('spot_aws_v100_16node_2023-08.csv', 16)]:
    p(f'\n=== {fn}  (N={N}) ===')
    for zone, rows in sorted(load(fn).items()):
        r = analyse(rows, N)
        big = sum(d * c for d, c in r['drops'].items() if d >= 2)
        p(f'-- {zone}: step {r["med"]:.0f}s, breaks {r["nbreak"]}, hours {r["H"]:.1f}, '
          f'frac(count==N) {r["fN"]:.3f}, frac(count>=1) {r["f1"]:.3f}')
        p(f'   all-N runs: {r["nruns"]} (ended {r["ended"]}), mean len {r["mean_run"]:.2f} h, '
          f'hours at N {r["hN"]:.1f}, all-N hazard {r["haz"]:.4f}/h')
        p(f'   per-instance loss: {r["lost"]} lost / {r["inst_h"]:.0f} inst-h = {r["rate"]:.5f}/h; '
          f'N x rate = {N * r["rate"]:.4f}/h')
        p(f'   ratio obs/(N x rate) = {r["haz"] / (N * r["rate"]):.3f};  obs/rate = {r["haz"] / r["rate"]:.2f} '
          f'(1 => whole-zone, {N} => independent)')
        p(f'   from state N only: per-inst rate {r["rateN"]:.5f}/h, obs/(N x rateN) = '
          f'{r["haz"] / (N * r["rateN"]):.3f}, mean instances lost per drop from N = '
          f'{r["lost_from_N"] / max(1, r["drops_from_N"]):.2f}')
        p(f'   drop-size histogram (size:ticks) {dict(sorted(r["drops"].items()))}; '
          f'share of lost instances in drops >=2: {big}/{r["lost"]} = {big / max(1, r["lost"]):.2f}')

fn = 'spot_aws_v100_preempt_2023-04.csv'
p(f'\n=== {fn}  (N=1, context) ===')
for zone, rows in sorted(load(fn).items()):
    r = analyse(rows, 1)
    p(f'-- {zone}: step {r["med"]:.0f}s, breaks {r["nbreak"]}, hours {r["H"]:.1f}, frac up {r["fN"]:.3f}, '
      f'up-runs {r["nruns"]} (ended {r["ended"]}), mean up {r["mean_run"]:.2f} h, '
      f'reclaim hazard {r["haz"]:.4f}/h')
