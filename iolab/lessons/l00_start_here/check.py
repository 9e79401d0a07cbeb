"""Lesson 00 (start here): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import math
from ... import explain, fsinfo
from ...check import close_to, fail, passed
from ...recordings import published
from ...units import MB, MiB
from .first_look import rates_relation, speedup


def check_00_fstype(answer: str, path: str = "/dev/shm") -> bool:
    """Exercise 00.1: the filesystem type that serves ``path`` on this machine."""
    actual = fsinfo.fstype(path)
    if not isinstance(answer, str) or answer.strip().lower() != actual:
        fail(f"look up {path} with iolab.fsinfo.mount_of({path!r}) (or in the doctor table): "
             "the type is the short name, such as ext4, nfs or tmpfs.")
    return passed(f"{path} is served by {actual}: "
                  + ("memory. Files there live in the page cache and nowhere else." if actual == "tmpfs"
                     else "see the kind column of lab.this_machine()."))


def check_00_speedup(frame, answer: float) -> bool:
    """Exercise 00.2: how many times faster the warm reads were than the cold ones (medians)."""
    if "state" not in getattr(frame, "columns", []) or set(frame["state"]) != {"cold", "warm"}:
        fail("give the DataFrame that lab.repeat_reads returned: it needs cold and warm reads.")
    cold = frame[frame["state"] == "cold"]
    if float(cold["cache_before"].max()) > 0.01:
        fail("a cold read was not cold: the file was still in the page cache before it. If your "
             "workspace is on tmpfs (memory), nothing can be evicted there: set IOLAB_WORKDIR to a disk.")
    expected = speedup(frame)
    if "kept" in frame.columns and isinstance(answer, (int, float)) and not isinstance(answer, bool):
        every = speedup(frame.drop(columns="kept"))     # a disturbed read that was run again, counted too
        if math.isclose(answer, every, rel_tol=0.01):
            expected = every
    close_to(answer, expected, rel=0.01, what="the speed-up",
             ratio="the median cold read's seconds / the median warm read's (see lab.speedup)")
    warm_from_memory = bool((frame.loc[frame["state"] == "warm", "cache_before"] >= 0.95).all())
    where = ("they came from the page cache (cache_before = 100 %), the cold ones from the layer below it"
             if warm_from_memory else "but not every warm read found the whole file in memory: look at "
             "cache_before")
    if answer < 2:
        where += (". That is a small gap: the layer below the page cache answered fast here (a virtual "
                  "disk cached by its host, or a fast SSD)")
    rel = rates_relation(frame)
    spread = (f" Each side's spread: {explain.spread_text(rel)}." if not any(math.isnan(v) for v in rel.evidence.values())
              else "")
    return passed(f"the warm reads were {answer:.1f}x as fast as the cold ones (medians): {where}.{spread}")


def check_00_rate(answer: float) -> bool:
    """Exercise 00.3: seed 000's 10.2 MB/s (fio's decimal unit) in MiB/s."""
    pub = published("seed000-fio-s3fs-cache")
    mb_s = float(pub[(pub["configuration"] == "no cache") & (pub["direction"] == "read")]["mb_per_s"].iloc[0])
    close_to(answer, mb_s * MB / MiB, rel=0.002, what=f"{mb_s} MB/s in MiB/s", ratio="MB/s x 10**6 / 2**20")
    return passed(f"{mb_s} MB/s is {mb_s} x 10^6 bytes/s = {mb_s * MB / MiB:.2f} MiB/s: about 5 % apart. "
                  "Always check which unit a tool prints.")
