"""Benchmark: do lesson 05's rate comparisons (sections 3, 4 and 6's removal rates) survive a busy node, and
would more files per rank (-n) rescue them? Also: how long lesson 05's notebook takes.

Usage: .venv/bin/python benchmarks/bench_l05_load.py [--sizes 10 100] [--rounds 3] [--burn 2] [--notebook]

Needs mdtest on PATH (e.g. PATH=/tmp/ior-4.0.0/bin:$PATH) and mpirun. For each round, each size in turn
(interleaved: 10, 100, 10, 100, ...), runs the seed's command `-n N -i 10 -y -v` and the same with
`-w 4096` on /tmp and /dev/shm (2 ranks, the notebook's measure_on), judges the seven claims the notebook
makes from them (claims.rates_claims, fsync_cost_claims, removal_rates_claim: explain.beyond over the
iterations) and prints each verdict (YES / NO / CLOSE) with the 1-minute load average. ``--burn K`` runs K
CPU-bound processes beside the whole measurement (stress-ng --cpu K without stress-ng; stopped at the end,
also on ^C). ``--notebook`` times the notebook executed live (nbclient, the kernel's startup included).
Prints figures; not a test (CI does not gate on it).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLACES = ("/tmp", "/dev/shm")
SHORT = {"rates_claims": "stat>2x create / memory>2x disk", "fsync_cost_claims": "fsync cost",
         "removal_rates_claim": "removal rates"}


def verdicts(n: int) -> tuple[list[tuple[str, str]], float, float]:
    from iolab.lessons.l05_mdtest import claims as C
    from iolab.lessons.l05_mdtest import metadata as M
    from iolab.tools import mdtest

    opts = mdtest.Options(files=n, iterations=10, sync=True)
    t0 = time.monotonic()
    plain = {p: M.measure_on(p, opts, recording="mdtest/none", quiet=True) for p in PLACES}
    synced = {p: M.measure_on(p, replace(opts, write_bytes=4096), recording="mdtest/none", quiet=True) for p in PLACES}
    took = time.monotonic() - t0
    fs = {p: M.facts_of(m, p) for p, m in plain.items()}
    claims = (C.rates_claims(plain, fs, show=False) + C.fsync_cost_claims(plain, synced, fs, show=False)
              + [C.removal_rates_claim(p, plain[p], fs[p], show=False) for p in PLACES])
    out = [({True: "YES", False: "NO", None: "CLOSE"}[c.held], c.predicted[:70]) for c in claims]
    return out, took, os.getloadavg()[0]


def time_notebook() -> float:
    import nbformat

    from iolab import nbexec

    path = ROOT / "notebooks" / "05-mdtest-metadata.ipynb"
    nb = nbformat.read(path, 4)
    t0 = time.monotonic()
    nbexec.execute(nb, path.parent, timeout=600)
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10, 100])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--burn", type=int, default=0, help="CPU-bound processes beside the measurement")
    ap.add_argument("--notebook", action="store_true", help="only time the notebook, live")
    args = ap.parse_args()
    os.environ["IOLAB_MODE"] = "live"
    sys.path.insert(0, str(ROOT))
    burners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(args.burn)]
    try:
        print(f"cores {os.cpu_count()}, {args.burn} CPU-bound processes beside, load at start "
              f"{os.getloadavg()[0]:.2f} (1 min)")
        if args.notebook:
            print(f"notebooks/05-mdtest-metadata.ipynb, live: {time_notebook():.1f} s "
                  f"(load after {os.getloadavg()[0]:.2f})")
            return
        tally: dict[int, dict[str, int]] = {}
        for r in range(args.rounds):
            for n in args.sizes:
                out, took, load = verdicts(n)
                t = tally.setdefault(n, {"YES": 0, "NO": 0, "CLOSE": 0})
                for v, _ in out:
                    t[v] += 1
                print(f"round {r + 1}, -n {n}: {took:.1f} s, load {load:.2f}: " + " ".join(v for v, _ in out))
                for v, what in out:
                    print(f"    {v:5s} {what}")
        for n, t in tally.items():
            print(f"-n {n}: {t['YES']} YES, {t['NO']} NO, {t['CLOSE']} CLOSE over {args.rounds} rounds x 7 claims")
    finally:
        for b in burners:
            b.kill()
            b.wait()


if __name__ == "__main__":
    main()
