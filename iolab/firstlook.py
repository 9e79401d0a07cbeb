"""Lesson 00: the storage layers of a cluster, the ones this machine has, and a first measurement."""
from __future__ import annotations

import os

import pandas as pd

from . import fsinfo, measure
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
    """Read a file ``times`` times: first cold (evicted from the page cache), then as it is.

    One row per read: read, cache_before (fraction of pages resident), seconds, mib_per_s, verdict.
    """
    if times < 2:
        raise ValueError("read at least twice: once cold, once warm")
    rows = []
    for i in range(times):
        m = measure.timed_read(path, block_size=block_size, cache="cold" if i == 0 else "as-is")
        rows.append({"read": i + 1, "state": "cold" if i == 0 else "warm", "bytes": m.nbytes,
                     "seconds": m.seconds, "mib_per_s": m.bytes_per_s / MiB,
                     "cache_before": m.before.fraction, "cache_after": m.after.fraction,
                     "verdict": m.verdict.label})
    return pd.DataFrame(rows)


def speedup(frame: pd.DataFrame) -> float:
    """How many times faster the warm reads were than the cold one (median of the warm reads)."""
    cold = frame.loc[frame["state"] == "cold", "seconds"].iloc[0]
    return float(cold / frame.loc[frame["state"] == "warm", "seconds"].median())
