"""Lesson 00: the storage layers of a cluster, the ones this machine has, and a first measurement."""
from __future__ import annotations

import os

import pandas as pd

from ... import doctor, explain, measure, pagecache, recordings, trials
from ...explain import Claim
from ...units import format_size

# The storage types one cluster offers its users (seed 004, HTCF user training, 2023), with the job
# each does best. Sites differ in names and products; the layers are the same everywhere.
CLUSTER_LAYERS = recordings.published("seed004-storage-layers")
CLUSTER_LAYERS_SOURCE = str(CLUSTER_LAYERS.pop("source").iloc[0])


def this_machine() -> pd.DataFrame:
    """The directories a user of this machine can write, and the filesystem behind each."""
    frame = pd.DataFrame(doctor.survey())
    frame["free_GiB"] = (frame.pop("free_bytes") / 2**30).round(1)
    return frame


def repeat_reads(path: str | os.PathLike[str], times: int = 4, *, rounds: int = 3,
                 block_size: str = "1MiB") -> pd.DataFrame:
    """Read a file ``times`` times, the first after evicting it from the page cache, then as it is; and
    that ``rounds`` times over (round 1's reads, then round 2's, …), so that the cold read is a few
    trials, not one number. A read the witness found disturbed (someone else's traffic on the device)
    is run again at once, a bounded number of times (:func:`iolab.trials.run`); the table keeps it.

    One row per read, in the order they ran: read (1, 2, … over all rounds), round, state ("cold" for
    the first read of a round, else "warm"), bytes, seconds, mib_per_s, cache_before / cache_after
    (fraction of pages resident), the witness (from_storage: bytes the kernel counted as read from
    storage for this process; device_read: bytes the device read for everyone meanwhile; None where
    there is no block device), disturbed, verdict, and kept (False for a disturbed read run again).
    """
    if times < 2:
        raise ValueError("read at least twice: once cold, once warm")
    if rounds < 1:
        raise ValueError("rounds must be at least 1")

    def cold() -> measure.Measurement:
        # evict, but measure whatever is left: on tmpfs nothing can be evicted, and the claims say so
        pagecache.evict(path)
        return measure.timed_read(path, block_size=block_size)

    def warm() -> measure.Measurement:
        return measure.timed_read(path, block_size=block_size)

    reads = {f"read {i + 1}": cold if i == 0 else warm for i in range(times)}
    t = trials.run(reads, repeat=rounds, warmup=0, metric=trials.mib_per_s, higher=True, unit="MiB/s")
    rows = []
    for _, r in t.frame.iterrows():
        dev = r.get("device")
        rows.append({"read": int(r["position"]), "round": int(r["trial"]),
                     "state": "cold" if r["setting"] == "read 1" else "warm", "bytes": r["nbytes"],
                     "seconds": r["seconds"], "mib_per_s": r["mib_per_s"],
                     "cache_before": r["resident_before"], "cache_after": r["resident_after"],
                     "from_storage": r["own_read_bytes"] if isinstance(dev, str) and dev else None,
                     "device_read": r["device_read_bytes"],
                     "disturbed": None if r["disturbed"] is None or pd.isna(r["disturbed"]) else bool(r["disturbed"]),
                     "verdict": r["verdict"], "witness_note": r.get("witness_notes") or "",
                     "kept": bool(r["kept"])})
    return pd.DataFrame(rows)


def _counted(frame: pd.DataFrame) -> pd.DataFrame:
    """The reads that count: all of them, but a disturbed read that was run again."""
    return frame[frame["kept"].astype(bool)] if "kept" in frame.columns else frame


def speedup(frame: pd.DataFrame) -> float:
    """How many times faster the warm reads were than the cold ones: the median cold read's seconds over
    the median warm read's (the reads that count: a disturbed one run again is left out)."""
    f = _counted(frame)
    cold = f.loc[f["state"] == "cold", "seconds"].median()
    return float(cold / f.loc[f["state"] == "warm", "seconds"].median())


def rates_relation(frame: pd.DataFrame) -> explain.Relation:
    """The warm reads against the cold ones (MiB/s, every read that counts) by the one rule,
    :func:`iolab.explain.beyond`, at least :data:`FASTER` times."""
    f = _counted(frame)
    return explain.beyond("warm", list(f.loc[f["state"] == "warm", "mib_per_s"]),
                          "cold", list(f.loc[f["state"] == "cold", "mib_per_s"]), by=FASTER, unit="MiB/s")


FASTER = 2.0


def repeat_reads_claims(frame: pd.DataFrame, *, fstype: str | None = None, show: bool = True) -> list[Claim]:
    """What the reads of :func:`repeat_reads` showed, as :mod:`iolab.explain` claims.

    The sentences depend on this run: a workspace in memory (tmpfs) cannot be evicted, and on a VM
    whose host caches the disk, or on a fast NVMe device, a cold read can be nearly as fast as a warm one.
    The rates are compared by the one rule (:func:`iolab.explain.beyond`): over every round, or "too
    close to call here" when the trials overlap or there are fewer than 3 cold reads.
    """
    f = _counted(frame)
    cold = f[f["state"] == "cold"]
    warm = f[f["state"] == "warm"]
    in_memory = fstype in ("tmpfs", "ramfs")
    claims = witness_claims(frame, fstype=fstype, show=show)
    n = len(cold)
    each = "it" if n == 1 else f"each of the {n} cold reads"
    claims.append(explain.expect(
        "the first read of each round starts with none of the file in memory",
        explain.fact("evicted", bool((cold["cache_before"] <= measure.HARDLY).all())),
        yes=(f"{cold['cache_before'].max():.0%} of its pages were resident when {each} began, so "
             f"{'its' if n == 1 else 'their'} data came from below the page cache"),
        no=f"cache_before of the cold reads was {', '.join(f'{v:.0%}' for v in cold['cache_before'])}",
        why=("the workspace is on tmpfs, which is memory: there is nothing below the page cache to evict "
             "to, so every read here is a memory read" if in_memory else
             "eviction is only advice: pages that are dirty, mapped or on a memory filesystem stay"), show=show))
    claims.append(explain.expect(
        "the later reads find the whole file in memory",
        explain.fact("resident", bool((warm["cache_before"] >= measure.MOSTLY).all())),
        yes="cache_before was 100 % for each of them: the first read left every page in the page cache",
        no=f"cache_before of the later reads was {', '.join(f'{v:.0%}' for v in warm['cache_before'])}",
        why="memory pressure (other users' files, a small node) can evict pages between two reads", show=show))
    rel = rates_relation(frame)
    disturbed = bool(frame.get("disturbed", pd.Series(dtype=object)).fillna(False).astype(bool).any())

    def apart(ev) -> str:
        return f"medians {ev['warm'] / ev['cold']:.1f}x apart" if ev["cold"] else ""
    claims.append(explain.expect(
        f"the warm reads are clearly faster than the cold ones: at least {FASTER:g}x, even the slowest warm "
        "read against the fastest cold one",
        rel,
        yes=lambda ev: (f"{explain.spread_text(rel)} ({apart(ev)}): the rate of memory against the rate "
                        "of the layer below"),
        no=lambda ev: (f"{explain.spread_text(rel)}: even the fastest warm read was not {FASTER:g}x the "
                       f"slowest cold one ({apart(ev)})"),
        why=("the cold reads were memory reads too (tmpfs)" if in_memory else
             ("another program's traffic on the same device slowed some of the reads (the table's disturbed "
              "column says when the witness saw some). Or " if disturbed else "")
             + "something below this machine's page cache answered the cold reads quickly: on a virtual "
               "machine the host keeps the virtual disk in its own memory, and a fast NVMe device can "
               "deliver several GB/s. Lesson 01 measures the device's uncached rate to tell these apart"),
        close=("on tmpfs every read is a memory read: there is no cold read to compare with, and nothing to "
               "separate" if in_memory else
               "what would separate them: more rounds, a bigger file (a longer read) or an idle machine. "
               "Which layer served each read does not rest on the rates: the from_storage column counts it"),
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

    f = _counted(frame)
    colds = f[f["state"] == "cold"]
    warm = f[f["state"] == "warm"]
    has = "from_storage" in frame.columns and frame["from_storage"].notna().all()
    missing = _no_witness(frame, fstype)
    n = float(colds["bytes"].iloc[0]) if "bytes" in frame.columns else None
    own_cold = float(colds["from_storage"].min()) if has else None
    first = "the first read's" if len(colds) == 1 else "each round's first read's"
    claims = [explain.expect(
        f"the kernel counted {first} bytes as read from storage (at least 95 % of the file)",
        explain.greater("from storage", own_cold, "95 % of the file", None if n is None else measure.MOSTLY * n),
        yes=lambda ev: (f"{format_size(own_cold)} came from storage for the {format_size(n)} file"
                        if len(colds) == 1 else
                        f"at least {format_size(own_cold)} came from storage for the {format_size(n)} file, "
                        f"in each of the {len(colds)}"),
        no=lambda ev: f"only {format_size(own_cold)} of the {format_size(n)} came from storage"
                      + ("" if len(colds) == 1 else " in one of them"),
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
