"""Benchmark: lesson 08's private Ceph cluster: time to a mounted CephFS, memory, teardown.

Usage: .venv/bin/python benchmarks/bench_ceph.py [--runs 3] [--lesson]

Each run starts iolab.ceph.Cluster (3 OSDs, fixed 128 MiB BlueStore cache) in a fresh workspace,
mounts node A and node B with ceph-fuse, reads every daemon's resident memory, optionally runs the
lesson's sections (--lesson: the memory at their end, the two ceph-fuse clients' share of it, the workspace
used; IOR's section needs ior and mpirun on PATH), and stops it. Prints
each stage's seconds per run and their range, and the node's load average beside them (the figures
move with it). Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import os
import time

from iolab import workspace
from iolab.ceph import Cluster
from iolab.lessons.l08_parallel_fs import sections as parallel_fs, ior_runs as parallel_fs_ior
from iolab.units import format_size

SECTIONS = (parallel_fs.where_bytes_live, parallel_fs.client_caches, parallel_fs_ior.ior_two_clients,
            parallel_fs.metadata, parallel_fs.coherence, parallel_fs.shared_file, parallel_fs.replication)


def one(lesson: bool) -> dict:
    with workspace.Workspace(budget="4GiB") as ws:
        t = time.monotonic()
        c = Cluster(ws)
        try:
            c.start()
            c.mount("a")
            c.mount("b")
            row = {"mounted_s": time.monotonic() - t, "healthy_s": c.timings["cluster healthy"],
                   "rss_start": sum(c.memory().values())}
            if lesson:
                t = time.monotonic()
                for f in SECTIONS:
                    f(c, show=False)
                mem = c.memory()
                # what a student would still cost on a class cluster: their own two ceph-fuse clients
                row.update(sections_s=time.monotonic() - t, rss_end=sum(mem.values()),
                           rss_end_clients=sum(v for k, v in mem.items() if k.startswith("ceph-fuse")), used=ws.used)
        finally:
            c.stop()
        row.update(teardown_s=c.timings["teardown"], load=os.getloadavg()[0])
        return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lesson", action="store_true")
    a = ap.parse_args()
    os.environ["IOLAB_MODE"] = "live"
    rows = []
    for i in range(a.runs):
        r = one(a.lesson)
        rows.append(r)
        print(f"run {i + 1}: " + ", ".join(f"{k} {format_size(v) if k.startswith(('rss', 'used')) else f'{v:.1f}'}"
                                         for k, v in r.items()), flush=True)
    for k in rows[0]:
        vals = [r[k] for r in rows]
        fmt = (lambda v: format_size(v)) if k.startswith(("rss", "used")) else (lambda v: f"{v:.1f}")
        print(f"{k:12s} {fmt(min(vals))} – {fmt(max(vals))}")


if __name__ == "__main__":
    main()
