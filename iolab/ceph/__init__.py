"""Lesson 08's machinery: a private Ceph cluster (mon, mgr, mds, OSDs) and its CephFS mounts.

    with ceph.Cluster(ws) as c:            # ToolMissing without the ceph packages
        a = c.mount("a")                   # ceph-fuse at <workspace>/ceph-.../node-a
        ...
        c.perf("osd.0")                    # the daemon's own counters, through its admin socket
"""
from __future__ import annotations

from .cluster import TOOLS, Cluster, DaemonDied, missing
from .ports import PortTaken

__all__ = ["TOOLS", "Cluster", "DaemonDied", "PortTaken", "missing"]
