"""Benchmark: lesson 08's cluster when a daemon dies, and its RADOS Gateway's start.

Usage: .venv/bin/python benchmarks/bench_ceph_faults.py [--runs 4]

Each run starts iolab.ceph.Cluster (3 OSDs) in a fresh workspace, mounts node A, starts the RADOS
Gateway (iolab.ceph.rgw.Gateway: seconds to HTTP, its resident memory), writes 16 MiB on node A and
remounts it; then freezes the daemon a reader will wait on (SIGSTOP: the OSD holding the file's first
object on odd runs, the MDS on even ones), starts the reader (a read of the file, or an ls of a
directory), kills the daemon (SIGKILL), and prints the seconds from the kill to the cluster's message
(Cluster.failure) and to the reader's end. Prints each figure per run and its range, and the node's
load average beside them. Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from iolab import workspace
from iolab.ceph import Cluster, rgw
from iolab.tools import ceph as cephtools
from iolab.units import format_size

READ = "import sys; print('go', flush=True); open(sys.argv[1], 'rb').read()"
LS = "import os, sys; print('go', flush=True); os.listdir(sys.argv[1])"


def one(i: int) -> dict:
    with workspace.Workspace(budget="2GiB") as ws, Cluster(ws) as c:
        a = c.mount("a")
        with rgw.Gateway(c) as gw:
            row = {"load": os.getloadavg()[0], "rgw_http_s": gw.timings["HTTP answers"], "rgw_rss": gw.memory()}
        f = a / "f.bin"
        f.write_bytes(os.urandom(16 << 20))
        (a / "d").mkdir()
        os.sync()
        obj = f"{f.stat().st_ino:x}.00000000"
        osd = "osd.%d" % cephtools.parse_osd_map(c.ceph("osd", "map", "cephfs_data", obj, "--format", "json").stdout)["primary"]
        victim, code, target = (osd, READ, f.name) if i % 2 == 0 else ("mds.a", LS, "d")
        a = c.remount("a")
        pid = c.services[victim].pid
        os.kill(pid, signal.SIGSTOP)
        p = subprocess.Popen([sys.executable, "-c", code, str(a / target)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        p.stdout.readline()
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        t = time.monotonic()
        message = ended = None
        while time.monotonic() - t < 120 and (message is None or ended is None):
            if message is None and c.failure is not None:
                message = time.monotonic() - t
            if ended is None and p.poll() is not None:
                ended = time.monotonic() - t
            time.sleep(0.01)
        if p.poll() is None:
            p.kill()
        row.update(victim=victim, message_s=message, reader_end_s=ended)
        return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4)
    a = ap.parse_args()
    os.environ["IOLAB_MODE"] = "live"
    rows = []
    for i in range(a.runs):
        r = one(i)
        rows.append(r)
        print(f"run {i + 1}: " + ", ".join(f"{k} {format_size(v) if k.endswith('rss') else v if isinstance(v, str) else f'{v:.2f}'}"
                                         for k, v in r.items()), flush=True)
    for k in ("load", "rgw_http_s", "rgw_rss", "message_s", "reader_end_s"):
        for kind in ("osd", "mds"):
            vals = [r[k] for r in rows if r["victim"].startswith(kind) and r[k] is not None]
            if vals:
                fmt = format_size if k.endswith("rss") else (lambda v: f"{v:.2f}")
                print(f"{k:13s} ({kind} runs) {fmt(min(vals))} – {fmt(max(vals))}")


if __name__ == "__main__":
    main()
