"""Lesson 00: the storage layers of a cluster, the ones this machine has, and a first measurement."""
from __future__ import annotations

import os

import pandas as pd

from . import fsinfo, measure, pagecache
from .units import MiB

# The storage types one cluster offers its users (seed 004, HTCF user training, 2023), with the job
# each does best. Sites differ in names and products; the layers are the same everywhere.
CLUSTER_LAYERS = pd.DataFrame([
    {"layer": "node-local disk", "example": "/tmp", "filesystem": "ext4 / xfs on the node's SSD",
     "shared": "no (one node)", "good for": "small and random reads, temporary files of one job"},
    {"layer": "network filesystem", "example": "/home", "filesystem": "NFS",
     "shared": "all nodes", "good for": "scripts, configuration, small files read rarely"},
    {"layer": "parallel filesystem", "example": "/scratch", "filesystem": "BeeGFS (Lustre, GPFS elsewhere)",
     "shared": "all nodes", "good for": "large sequential I/O of running jobs; staged input"},
    {"layer": "block storage", "example": "/lts", "filesystem": "Ceph RBD", "shared": "login nodes",
     "good for": "long-term storage of raw data and results"},
    {"layer": "distributed filesystem", "example": "/ref", "filesystem": "CephFS", "shared": "all nodes",
     "good for": "reference data: written once, read by many"},
    {"layer": "object storage", "example": "LTOS (S3 API)", "filesystem": "none: Ceph RADOS Gateway",
     "shared": "anywhere, by HTTP", "good for": "get/put whole objects; streaming into workflows"},
])
CLUSTER_LAYERS_SOURCE = "seed 004: HTCF 'Understanding I/O: Storage Types and Use' slides, Sep 2023"


def this_machine() -> pd.DataFrame:
    """The directories a user of this machine can write, and the filesystem behind each."""
    frame = pd.DataFrame(fsinfo.survey())
    frame["free_GiB"] = (frame.pop("free_bytes") / 2**30).round(1)
    return frame


def repeat_reads(path: str | os.PathLike[str], times: int = 4, *, block_size: str = "1MiB") -> pd.DataFrame:
    """Read a file ``times`` times: first after evicting it from the page cache, then as it is.

    One row per read: read, cache_before (fraction of pages resident), seconds, mib_per_s, verdict.
    """
    if times < 2:
        raise ValueError("read at least twice: once cold, once warm")
    rows = []
    for i in range(times):
        if i == 0:
            # evict, but measure whatever is left: on tmpfs nothing can be evicted, and the claims say so
            pagecache.evict(path)
        m = measure.timed_read(path, block_size=block_size)
        rows.append({"read": i + 1, "state": "cold" if i == 0 else "warm", "bytes": m.nbytes,
                     "seconds": m.seconds, "mib_per_s": m.bytes_per_s / MiB,
                     "cache_before": m.before.fraction, "cache_after": m.after.fraction,
                     "verdict": m.verdict.label})
    return pd.DataFrame(rows)


def speedup(frame: pd.DataFrame) -> float:
    """How many times faster the warm reads were than the cold one (median of the warm reads)."""
    cold = frame.loc[frame["state"] == "cold", "seconds"].iloc[0]
    return float(cold / frame.loc[frame["state"] == "warm", "seconds"].median())


def explain_reads(frame: pd.DataFrame, *, fstype: str | None = None) -> list:
    """What the four reads of :func:`repeat_reads` showed, as :mod:`iolab.explain` claims.

    The sentences depend on this run: a workspace in memory (tmpfs) cannot be evicted, and on a VM
    whose host caches the disk, or on a fast NVMe device, a cold read can be nearly as fast as a warm one.
    """
    from . import explain

    cold = frame[frame["state"] == "cold"].iloc[0]
    warm = frame[frame["state"] == "warm"]
    in_memory = fstype in ("tmpfs", "ramfs")
    claims = [explain.expect(
        "the first read starts with none of the file in memory",
        explain.fact("evicted", float(cold["cache_before"]) <= measure.HARDLY),
        yes=f"{cold['cache_before']:.0%} of its pages were resident when it began, so its data came from "
            "below the page cache",
        no=f"{cold['cache_before']:.0%} of its pages were still resident when it began",
        why=("the workspace is on tmpfs, which is memory: there is nothing below the page cache to evict "
             "to, so every read here is a memory read" if in_memory else
             "eviction is only advice: pages that are dirty, mapped or on a memory filesystem stay"))]
    claims.append(explain.expect(
        "the later reads find the whole file in memory",
        explain.fact("resident", bool((warm["cache_before"] >= measure.MOSTLY).all())),
        yes="cache_before was 100 % for each of them: the first read left every page in the page cache",
        no=f"cache_before of the later reads was {', '.join(f'{v:.0%}' for v in warm['cache_before'])}",
        why="memory pressure (other users' files, a small node) can evict pages between two reads"))
    ratio = speedup(frame)
    claims.append(explain.expect(
        "the warm reads are clearly faster than the cold one (at least 2x)",
        explain.greater("speedup", ratio, "two", 2.0),
        yes=f"they were {ratio:.1f}x faster: the rate of memory against the rate of the layer below",
        no=f"they were only {ratio:.2f}x faster",
        why=("the cold read was a memory read too (tmpfs)" if in_memory else
             "something below this machine's page cache answered the cold read quickly: on a virtual "
             "machine the host keeps the virtual disk in its own memory, and a fast NVMe device can "
             "deliver several GB/s. Lesson 01 measures the device's uncached rate to tell these apart")))
    return claims
