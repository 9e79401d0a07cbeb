"""Lesson 09's figures side by side: seed 004's manual staging against the Snakemake workflow over S3
(-c 1 and -c 3), each run repeated, the runs interleaved (before, -c 1, -c 3, before, ...), with what
the store counted, the scratch high-water mark and the wall time's spread.

    .venv/bin/python benchmarks/bench_workflows.py [--repeat 3]

Needs what the lesson needs live (make setup). Prints the machine's load before and after: on a
shared machine the wall times move with it; the bytes, requests and peaks do not.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from iolab import explain, workspace
from iolab.lessons.l09_workflows import experiments as ex
from iolab.lessons.l09_workflows.lab import open_lab

WAYS = {
    "before (stage, 3 chained jobs, copy back)": lambda lab: ex.before(lab),
    "snakemake -c 1": lambda lab: ex.workflow(lab, cores=1),
    "snakemake -c 3": lambda lab: ex.workflow(lab, cores=3),
}
# local against Slurm: the Slurm engineer's runs go here (issue 29, section 4), e.g.
# "snakemake --executor slurm": lambda lab: slurm.workflow(lab, ...)
SLURM: dict = {}


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):6.1f} s ({min(xs):.1f}-{max(xs):.1f}, {len(xs)} runs)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    n = ap.parse_args().repeat
    ways = {**WAYS, **SLURM}
    runs: dict[str, list] = {k: [] for k in ways}
    load0 = os.getloadavg()
    t0 = time.time()
    with workspace.Workspace(budget="1GiB") as ws, open_lab(ws) as lab:
        for i in range(n):
            for name, fn in ways.items():             # interleaved: one of each, then again
                runs[name].append(fn(lab))
    load1 = os.getloadavg()
    print(f"{n} rounds in {time.time() - t0:.0f} s; load {load0[0]:.2f} -> {load1[0]:.2f} "
          f"(1-min), {os.cpu_count()} cpus\n")
    print(f"{'way':<44} {'from store':>12} {'to store':>10} {'GET':>4} {'HEAD':>5} {'req':>5} "
          f"{'scratch peak':>13} {'left':>11}  wall time")
    for name, rs in runs.items():
        r = rs[-1]
        same = len({x.moved.sent for x in rs}) == 1
        print(f"{name:<44} {r.moved.sent:>12,} {r.moved.received:>10,} {r.moved.gets:>4} "
              f"{statistics.median(x.moved.heads for x in rs):>5.0f} {statistics.median(x.moved.requests for x in rs):>5.0f} "
              f"{statistics.median(x.peak for x in rs) / 1e6:>10.1f} MB {r.left_bytes / 1e6:>8.2f} MB  "
              f"{spread([x.seconds for x in rs])}{'' if same else '  (bytes differ between runs!)'}")
    names = list(runs)
    print()
    for a, b in ((names[1], names[0]), (names[2], names[1])):
        rel = explain.beyond(a, [x.seconds for x in runs[a]], b, [x.seconds for x in runs[b]], higher=False, unit="s")
        explain.expect(f"{a} finishes sooner than {b}", rel)
    if not SLURM:
        print("\nlocal vs Slurm: not measured here (the Slurm runs of lesson 09 fill SLURM above)")


if __name__ == "__main__":
    main()
