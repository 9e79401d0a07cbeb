"""Benchmark: lesson 09's figures side by side. This part: local against Slurm.

Usage: .venv/bin/python benchmarks/bench_workflows.py [--slurm-live N]

Without options it prints the recorded runs (data/recorded/workflows/): the local ``-c 1`` and ``-c 3``
runs when their recordings are there, and every Slurm run (the private 2-node Slurm, both executors,
grouped per sample and one job per rule). With ``--slurm-live N`` it first records N more interleaved
grouped trials of each executor (``recorders.workflows_slurm``: root, Slurm, the lesson's tools).
For each run: wall seconds with the 1-minute load beside them (they move with it), bytes from and to
the store and its PUT and GET/HEAD requests (its own counters), and which node ran how many jobs.
Wall times are compared only by ``explain.beyond`` over the trials (worst against best), never by one
pair. Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from iolab import explain, recordings  # noqa: E402
from iolab.lessons.l09_workflows import slurm as l09slurm  # noqa: E402


def _local_rows() -> list[dict]:
    rows = []
    for ref in recordings.available("workflows"):
        name = ref.split("/", 1)[1]
        if not name.startswith("snakemake-c"):
            continue
        try:
            from iolab.lessons.l09_workflows import experiments
            w = experiments.workflow(None, cores=int(name.removeprefix("snakemake-c").split("-")[0]), recording=name)
            m = w.moved
            rows.append({"run": f"local {name}", "wall_s": w.seconds, "load": w.load, "sent": m.sent,
                         "received": m.received, "PUT": m.puts, "GET": m.gets, "HEAD": m.heads, "nodes": "-"})
        except Exception as e:          # the local recordings are lesson09's: say why one is not read
            rows.append({"run": f"local {name}", "note": f"not read here: {e}"})
    return rows


def _slurm_rows() -> list[dict]:
    rows = []
    for ref in recordings.available("workflows"):
        name = ref.split("/", 1)[1]
        if not name.startswith("slurm-") or name in ("slurm-accounting", "slurm-before-chain"):
            continue
        r = l09slurm.SlurmRun.from_json(recordings.load(ref).text)
        c = r.counters
        placed = Counter(r.jobs["node"])
        rows.append({"run": name.removeprefix("slurm-"), "executor": r.executor, "grouped": r.grouped,
                     "wall_s": r.seconds, "load": f"{r.load[0]:.1f}->{r.load[1]:.1f}",
                     "sent": c.bytes_sent(r.bucket), "received": c.bytes_received(r.bucket),
                     "PUT": c.count("PUT", bucket=r.bucket), "GET": c.gets_with_body(r.bucket),
                     "HEAD": c.heads(r.bucket), "jobs": len(r.jobs),
                     "nodes": " ".join(f"{n}:{k}" for n, k in sorted(placed.items()))})
    return rows


def _before_row() -> dict | None:
    try:
        doc = json.loads(recordings.load("workflows/slurm-before-chain").text)
    except FileNotFoundError:
        return None
    return {"run": "before: 3 sbatch, afterok", "wall_s": doc["stage_seconds"] + doc["chain_seconds"]
            + doc["copy_back_seconds"], "load": f"{doc['load']:.1f}", "left_on_scratch": doc["left_on_scratch_bytes"],
            "nodes": " ".join(f"{j['job']}:{j['nodes']}" for j in doc["jobs"])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slurm-live", type=int, default=0, help="record N more interleaved grouped trials first")
    a = ap.parse_args()
    if a.slurm_live:
        subprocess.run([sys.executable, "-m", "recorders.workflows_slurm", "--trials", str(a.slurm_live),
                        "--only", "grouped,plugin"], cwd=ROOT, check=True)
    import pandas as pd

    pd.set_option("display.width", 200)
    rows = _local_rows() + _slurm_rows()
    b = _before_row()
    if b:
        rows.append(b)
    print(pd.DataFrame(rows).to_string(index=False))
    slurm = _slurm_rows()
    walls = {ex: [r["wall_s"] for r in slurm if r["executor"] == ex and r["grouped"]] for ex in l09slurm.EXECUTORS}
    rel = explain.beyond("cluster-generic", walls["cluster-generic"], "slurm plugin", walls["slurm"], higher=False,
                         unit="s")
    verdict = {True: "cluster-generic is faster beyond the spread", False: "the slurm plugin is faster beyond the spread",
               None: "too close to call here"}[rel.holds()]
    print(f"\ngrouped wall, cluster-generic vs slurm plugin: {verdict} ({explain.spread_text(rel)})")


if __name__ == "__main__":
    main()
