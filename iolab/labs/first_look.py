"""Lesson 00: the storage layers of a cluster, the ones this machine has, and a first measurement."""
from __future__ import annotations

import os

import pandas as pd

from .. import doctor, explain, measure, pagecache, recordings
from ..explain import Claim
from ..units import MiB, format_size

# The storage types one cluster offers its users (seed 004, HTCF user training, 2023), with the job
# each does best. Sites differ in names and products; the layers are the same everywhere.
CLUSTER_LAYERS = recordings.published("seed004-storage-layers")
CLUSTER_LAYERS_SOURCE = str(CLUSTER_LAYERS.pop("source").iloc[0])


def this_machine() -> pd.DataFrame:
    """The directories a user of this machine can write, and the filesystem behind each."""
    frame = pd.DataFrame(doctor.survey())
    frame["free_GiB"] = (frame.pop("free_bytes") / 2**30).round(1)
    return frame


def repeat_reads(path: str | os.PathLike[str], times: int = 4, *, block_size: str = "1MiB") -> pd.DataFrame:
    """Read a file ``times`` times: first after evicting it from the page cache, then as it is.

    One row per read: read, state, bytes, seconds, mib_per_s, cache_before / cache_after (fraction of
    pages resident), the witness (from_storage: bytes the kernel counted as read from storage for this
    process; device_read: bytes the device read for everyone meanwhile; None where there is no block
    device), disturbed, and the verdict.
    """
    if times < 2:
        raise ValueError("read at least twice: once cold, once warm")
    rows = []
    for i in range(times):
        if i == 0:
            # evict, but measure whatever is left: on tmpfs nothing can be evicted, and the claims say so
            pagecache.evict(path)
        m = measure.timed_read(path, block_size=block_size)
        w = m.witness
        rows.append({"read": i + 1, "state": "cold" if i == 0 else "warm", "bytes": m.nbytes,
                     "seconds": m.seconds, "mib_per_s": m.bytes_per_s / MiB,
                     "cache_before": m.before.fraction, "cache_after": m.after.fraction,
                     "from_storage": w.own_read if w and w.device else None,
                     "device_read": w.device_read if w else None,
                     "disturbed": bool(w.disturbed) if w and w.disturbed is not None else None,
                     "verdict": m.verdict.label, "witness_note": "; ".join(w.notes) if w else ""})
    return pd.DataFrame(rows)


def speedup(frame: pd.DataFrame) -> float:
    """How many times faster the warm reads were than the cold one (median of the warm reads)."""
    cold = frame.loc[frame["state"] == "cold", "seconds"].iloc[0]
    return float(cold / frame.loc[frame["state"] == "warm", "seconds"].median())


def repeat_reads_claims(frame: pd.DataFrame, *, fstype: str | None = None, show: bool = True) -> list[Claim]:
    """What the four reads of :func:`repeat_reads` showed, as :mod:`iolab.explain` claims.

    The sentences depend on this run: a workspace in memory (tmpfs) cannot be evicted, and on a VM
    whose host caches the disk, or on a fast NVMe device, a cold read can be nearly as fast as a warm one.
    """
    cold = frame[frame["state"] == "cold"].iloc[0]
    warm = frame[frame["state"] == "warm"]
    in_memory = fstype in ("tmpfs", "ramfs")
    claims = witness_claims(frame, fstype=fstype, show=show)
    claims.append(explain.expect(
        "the first read starts with none of the file in memory",
        explain.fact("evicted", float(cold["cache_before"]) <= measure.HARDLY),
        yes=f"{cold['cache_before']:.0%} of its pages were resident when it began, so its data came from "
            "below the page cache",
        no=f"{cold['cache_before']:.0%} of its pages were still resident when it began",
        why=("the workspace is on tmpfs, which is memory: there is nothing below the page cache to evict "
             "to, so every read here is a memory read" if in_memory else
             "eviction is only advice: pages that are dirty, mapped or on a memory filesystem stay"), show=show))
    claims.append(explain.expect(
        "the later reads find the whole file in memory",
        explain.fact("resident", bool((warm["cache_before"] >= measure.MOSTLY).all())),
        yes="cache_before was 100 % for each of them: the first read left every page in the page cache",
        no=f"cache_before of the later reads was {', '.join(f'{v:.0%}' for v in warm['cache_before'])}",
        why="memory pressure (other users' files, a small node) can evict pages between two reads", show=show))
    ratio = speedup(frame)
    claims.append(explain.expect(
        "the warm reads are clearly faster than the cold one (at least 2x)",
        explain.greater("speedup", ratio, "two", 2.0),
        yes=f"they were {ratio:.1f}x faster: the rate of memory against the rate of the layer below",
        no=f"they were only {ratio:.2f}x faster",
        why=("the cold read was a memory read too (tmpfs)" if in_memory else
             "another program's traffic on the same device slowed one of the reads (the table's disturbed "
             "column says when the witness saw some). Or " if frame.get("disturbed", pd.Series(dtype=object))
             .fillna(False).astype(bool).any() else
             "something below this machine's page cache answered the cold read quickly: on a virtual "
             "machine the host keeps the virtual disk in its own memory, and a fast NVMe device can "
             "deliver several GB/s. Lesson 01 measures the device's uncached rate to tell these apart"),
        show=show))
    return claims


def _no_witness(frame: pd.DataFrame, fstype: str | None) -> str:
    notes = [n for n in frame.get("witness_note", pd.Series(dtype=object)).fillna("") if n]
    if "from_storage" not in frame.columns:
        return "this table has no witness columns (it was made without the kernel's counters)."
    if fstype in ("tmpfs", "ramfs"):
        return (f"{fstype} has no block device: the kernel counts no storage bytes for a memory filesystem, "
                "so it cannot witness these reads (its files are always in memory).")
    return (notes[0] if notes else "the kernel's counters could not be read here") + "."


def witness_claims(frame: pd.DataFrame, *, fstype: str | None = None, show: bool = True) -> list[Claim]:
    """The first ground, the kernel's own count: the cold read fetched the file from storage, the
    warm ones nothing. A filesystem without a block device (tmpfs, NFS, FUSE) cannot witness either."""

    cold = frame[frame["state"] == "cold"].iloc[0]
    warm = frame[frame["state"] == "warm"]
    has = "from_storage" in frame.columns and frame["from_storage"].notna().all()
    missing = _no_witness(frame, fstype)
    n = float(cold["bytes"]) if "bytes" in frame.columns else None
    own_cold = float(cold["from_storage"]) if has else None
    claims = [explain.expect(
        "the kernel counted the first read's bytes as read from storage (at least 95 % of the file)",
        explain.greater("from storage", own_cold, "95 % of the file", None if n is None else measure.MOSTLY * n),
        yes=lambda ev: f"{format_size(own_cold)} came from storage for the {format_size(n)} file",
        no=lambda ev: f"only {format_size(own_cold)} of the {format_size(n)} came from storage",
        why="part of the file was still in the page cache when it began (see cache_before): the eviction "
            "was refused or undone.", missing=missing, show=show)]
    own_warm = float(warm["from_storage"].max()) if has else None
    allowance = None if n is None else measure.HARDLY * n + measure.SLACK
    claims.append(explain.expect(
        "the later reads fetched (next to) nothing from storage: memory served them",
        explain.greater("allowance", allowance, "most from storage in a warm read", own_warm),
        yes=lambda ev: (f"at most {format_size(own_warm)} came from storage in each of them, while "
                        f"{format_size(n)} were read each time"),
        no=lambda ev: f"one of them fetched {format_size(own_warm)} from storage",
        why="memory pressure evicted pages between the reads (other users' files, a small node), so "
            "they had to come from the device again.", missing=missing, show=show))
    return claims
