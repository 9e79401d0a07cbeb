"""Lesson 09's figures side by side: seed 004's manual staging against the Snakemake workflow over S3
(-c 1 and -c 3), each run repeated, the runs interleaved (before, -c 1, -c 3, before, ...), with what
the store counted, the scratch high-water mark and the wall time's spread.

    .venv/bin/python benchmarks/bench_workflows.py [--repeat 3]
    .venv/bin/python benchmarks/bench_workflows.py --slurm-recorded

Needs what the lesson needs live (make setup). Prints the machine's load before and after: on a
shared machine the wall times move with it; the bytes, requests and peaks do not.

Local against Slurm: where a private Slurm can start (root, slurm-wlm, munge), the rounds also run the
workflow as Slurm jobs on a private 2-node Slurm (iolab.slurm_cluster, started for each run),
grouped per sample, with cluster-generic and with the slurm plugin (its squeue status command), and
without a shared filesystem (each job fetching its own inputs on its node). ``--slurm-recorded``
prints the recorded Slurm runs (data/recorded/workflows/slurm-*) side by side instead, running nothing:
executor, grouping, who fetched the inputs, wall time and load, bytes, PUTs and per-node placement,
and the interleaved grouped trials of the two executors compared by their spreads.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

from iolab import explain, slurm_cluster, workspace
from iolab.lessons.l09_workflows import experiments as ex
from iolab.lessons.l09_workflows import slurm
from iolab.lessons.l09_workflows.lab import open_lab

WAYS = {
    "before (stage, 3 chained jobs, copy back)": lambda lab: ex.before(lab),
    "snakemake -c 1": lambda lab: ex.workflow(lab, cores=1),
    "snakemake -c 3": lambda lab: ex.workflow(lab, cores=3),
}
# local against Slurm (issue 29, section 4): each run starts its own private 2-node Slurm
SLURM: dict = {} if slurm_cluster.why_not() else {
    "Slurm, cluster-generic, grouped": lambda lab: slurm.bench_run(lab, executor="cluster-generic"),
    "Slurm, slurm plugin (squeue), grouped": lambda lab: slurm.bench_run(lab, executor="slurm"),
    "Slurm, cluster-generic, grouped, no shared fs": lambda lab: slurm.bench_run(lab, nodes_fetch=True),
}


def slurm_recorded() -> None:
    """The recorded Slurm runs side by side, and the grouped trials of the two executors compared."""
    import pandas as pd

    pd.set_option("display.width", 200)
    df = slurm.recorded_runs()
    print(df.to_string(index=False))
    shared = df[(df["inputs fetched by"] == "submit host") & df["grouped"]]
    walls = {e: list(shared[shared["executor"] == e]["wall s"]) for e in slurm.EXECUTORS}
    rel = explain.beyond("cluster-generic", walls["cluster-generic"], "slurm plugin", walls["slurm"], higher=False,
                         unit="s")
    print()
    explain.expect("cluster-generic finishes sooner than the slurm plugin (grouped, interleaved trials)", rel)


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):6.1f} s ({min(xs):.1f}-{max(xs):.1f}, {len(xs)} runs)"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--slurm-recorded", action="store_true", help="print the recorded Slurm runs, run nothing")
    a = ap.parse_args()
    if a.slurm_recorded:
        slurm_recorded()
        return
    n = a.repeat
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
    # the copy by hand starts no Python per job (the probe found it the faster); -c 3 against -c 1 on 2 cores
    pairs = [(names[0], names[1]), (names[2], names[1])] + ([(names[2], names[3])] if SLURM else [])
    for a, b in pairs:
        rel = explain.beyond(a, [x.seconds for x in runs[a]], b, [x.seconds for x in runs[b]], higher=False, unit="s")
        explain.expect(f"{a} finishes sooner than {b}", rel)
    if not SLURM:
        print(f"\nlocal vs Slurm: not measured here ({slurm_cluster.why_not()}); recorded: --slurm-recorded")


if __name__ == "__main__":
    main()
