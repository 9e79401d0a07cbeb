"""Lesson 01 (the page cache): reading a file cold and warm, the pages readahead brings in, eviction
and drop_caches, O_DIRECT (sections 1, 3, 4 and 6 of the notebook); and what their numbers showed,
as claims. Section 2, the kernel's own counters, is :mod:`iolab.lessons.l01_page_cache.counters`; section 5,
write-back and fsync, is :mod:`iolab.lessons.l01_page_cache.writes`.

Every function that explains takes what was measured (``measure.Measurement`` objects, a
``pagecache.Residency``) and returns the list of :class:`iolab.explain.Claim` it printed.
The sentences are chosen by the numbers, so the lesson reads right on a laptop SSD, on a VM whose
host caches the disk, on tmpfs (where nothing can be evicted) and on a cluster's network filesystem.
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, fsinfo, measure, pagecache, readahead_probes as ra, recordings, trials, witness
from ...explain import Claim
from ...pagecache import Residency
from ...units import KiB, MiB, format_size, parse_size

MEMORY_FS = fsinfo.MEMORY_FS

# what "faster" has to mean before the lesson calls it faster: rates on a shared machine are noisy
FASTER = 2.0


def _mibs(bytes_per_s: float | None) -> float | None:
    return None if bytes_per_s is None else bytes_per_s / MiB


def _memory_fs(*residencies: Residency | None) -> str:
    for r in residencies:
        if r is not None and r.fstype in MEMORY_FS:
            return r.fstype
    return ""


# --- 1 · cold and warm --------------------------------------------------------------------------

def after_write_claims(res: Residency, *, show: bool = True) -> list[Claim]:
    """Right after a file was written (and fsync'd): is all of it in the page cache?"""
    return [explain.expect(
        "every page of a file you just wrote is still in the page cache",
        explain.fact("all pages resident", res.resident == res.pages if res.reliable else None),
        yes=f"{res.resident:,} of {res.pages:,} pages",
        no=f"only {res.resident:,} of {res.pages:,} pages ({res.fraction:.0%}) are",
        why="memory is short and the kernel already reclaimed some of them, or the filesystem does not keep "
            "written pages (some network and FUSE filesystems, or a file written with O_DIRECT).",
        missing="the kernel would not tell this process the file's residency", show=show)]


def seed004_ratios() -> dict[str, float]:
    """Seed 004's `time cat *` after drop_caches: cold seconds / warm seconds, per filesystem."""
    pub = recordings.published("seed004-cold-warm-cat")
    out = {}
    for fs, part in pub.groupby("filesystem", sort=False):
        cold = float(part[part["state"].str.startswith("cold")]["seconds"].iloc[0])
        warm = float(part[part["state"].str.startswith("warm")]["seconds"].iloc[0])
        out[str(fs)] = cold / warm
    return out


READ_SETTINGS = ("cold", "warm")


def cold_warm_trials(path: str | os.PathLike[str], *, device_bps: float | None = None, repeat: int = 5,
                     warmup: int = 1) -> trials.Trials:
    """Read ``path`` cold (evicted first, outside the clock) and warm (right after a cold read), in turn:
    cold, warm, cold, warm, … ``repeat`` times after ``warmup`` reads of each that are not counted; every
    read a :class:`iolab.measure.Measurement` with its witness, kept in ``.frame`` (rates in MiB/s).
    A read the witness found disturbed (someone else's traffic on the device) is run again at once,
    a bounded number of times (:func:`iolab.trials.run`)."""

    def cold() -> measure.Measurement:
        pagecache.evict(path)          # outside the clock: timed_read times the read alone
        return measure.timed_read(path, device_bps=device_bps)

    def warm() -> measure.Measurement:
        return measure.timed_read(path, device_bps=device_bps)

    return trials.run({"cold": cold, "warm": warm}, repeat=repeat, warmup=warmup, metric=trials.mib_per_s,
                      higher=True, unit="MiB/s")


def _limits(device_rates: Sequence[float] | None) -> list[float] | None:
    """The device's uncached reads (bytes/s), each times measure.TOLERANCE, in MiB/s: the rates a read
    must beat to be "faster than any device read could be"."""
    return None if not device_rates else [r / MiB * measure.TOLERANCE for r in device_rates]


LIMIT = f"{measure.TOLERANCE:g}x the device's uncached reads"


def _no_device(mem: str) -> str:
    return "there is no device rate to compare with: " + (f"{mem} has no device behind it" if mem else
                                                          "the device's uncached rate was not measured")


def cold_warm_claims(reads: trials.Trials, device_rates: Sequence[float] | None, *,
                     show: bool = True) -> list[Claim]:
    """What the interleaved cold and warm reads of :func:`cold_warm_trials` showed (settings "cold" and
    "warm"; ``device_rates``: every uncached read of :func:`iolab.measure.device_rates`, bytes/s): the
    kernel's witness first (bytes from storage, and whether anyone else used the device meanwhile),
    then the residency, then the rates, each comparison by the one rule of
    :func:`iolab.explain.beyond` over every counted trial ("Too close to call here" when they overlap)."""
    cold, warm = reads.results.get("cold", []), reads.results.get("warm", [])
    mem = _memory_fs(*(m.before for m in cold + warm))
    claims = read_witness_claims(reads, show=show)
    known = [m.before for m in cold if m.before.reliable]
    left = [r.fraction for r in known]
    n_cold = len(cold)
    claims.append(explain.expect(
        "the cold read was cold: none of the file was in the page cache before it" if n_cold == 1 else
        f"every cold read was cold: none of the file was in the page cache before it (each of the {n_cold})",
        explain.fact("nothing resident before any cold read",
                     None if not cold or len(known) < n_cold else all(r.resident == 0 for r in known)),
        yes=f"0 of {cold[0].before.pages:,} pages were resident before each" if cold else "",
        no=lambda ev: "the pages resident before them: " + ", ".join(f"{f:.0%}" for f in left),
        why=(f"{mem} keeps files in memory: their pages are the file, and an eviction cannot drop them"
             if mem else "the eviction was refused or undone (pages under write-back, a process that has "
                          "the file mapped, or another reader)"),
        missing="the kernel would not tell this process the file's residency", show=show))
    rel = reads.relation("warm", "cold", by=FASTER)

    def apart(ev) -> str:
        return f"medians {ev['warm'] / ev['cold']:.1f}x apart" if ev["cold"] else ""
    claims.append(explain.expect(
        f"the warm reads ran at least {FASTER:g}x as fast as the cold ones: even the slowest warm read "
        "against the fastest cold one",
        rel,
        yes=lambda ev: f"{explain.spread_text(rel)} ({apart(ev)})",
        no=lambda ev: (f"{explain.spread_text(rel)}: even the fastest warm read was not {FASTER:g}x the "
                       f"slowest cold one ({apart(ev)})"),
        why=(f"on {mem} both reads come from memory, so there is no cold read to compare with." if mem else
             "whatever served the 'cold' reads was nearly as fast as memory: a cache below this machine's "
             "page cache (a VM host's memory, a storage server's cache, the disk's own cache) or a very fast "
             "device. The residency only sees this machine's page cache, not the layers below it."),
        close=(f"on {mem} both come from memory: there is no cold read to compare with, and nothing to "
               "separate" if mem else
               "what would separate them: more trials, a bigger file (a longer read) or an idle machine. "
               "Which layer served each read does not rest on the rates: the witness above counted it"),
        show=show))
    limits = _limits(device_rates)
    c_vals = reads.values("cold")
    dev_cold = explain.beyond(LIMIT, limits, "cold", c_vals, unit="MiB/s")
    claims.append(explain.expect(
        f"the cold reads were no faster than the device delivers uncached: every one below {LIMIT}",
        dev_cold,
        yes=lambda ev: explain.spread_text(dev_cold),
        no=lambda ev: f"even the slowest cold read was beyond them: {explain.spread_text(dev_cold)}",
        why="something below the page cache kept this file's blocks (they were written moments ago): a VM "
            "host's memory or a disk cache serves them faster than the fresh probe file the device rate "
            "was measured with.",
        close=("what would separate them: more trials of both (the device's rate is measured by 3 reads), a "
               "bigger file, an idle machine"),
        missing=_no_device(mem), show=show))
    dev_warm = explain.beyond("warm", reads.values("warm"), LIMIT, limits, unit="MiB/s")
    claims.append(explain.expect(
        f"the warm reads ran faster than any device read could: even the slowest beyond {LIMIT}",
        dev_warm,
        yes=lambda ev: f"{explain.spread_text(dev_warm)}: memory served them",
        no=lambda ev: f"even the fastest warm read was not beyond them: {explain.spread_text(dev_warm)}",
        why="the device (or a cache in front of it) is nearly as fast as copying from memory here, so the "
            "rate alone cannot tell the two apart; the residency before the reads, and the witness, still can.",
        close=("what would separate them: more trials of both, a bigger file, an idle machine; the residency "
               "before the reads, and the witness above, already say which layer served the warm reads"),
        missing=_no_device(mem), show=show))
    return claims


def _no_witness(m: measure.Measurement) -> str:
    mem = _memory_fs(m.before)
    if mem:
        return (f"{mem} has no block device: the kernel counts no storage bytes for a memory filesystem, so "
                "nothing witnesses these reads.")
    if m.witness is None:
        return f"{measure.NOT_WITNESSED}."
    return ("; ".join(m.witness.notes) or "the kernel's counters could not be read here") + "."


def _counted(m: measure.Measurement) -> int | None:
    """The bytes the kernel counted as read from storage, where they mean something (a block device)."""
    w = m.witness
    return None if w is None or w.device is None else w.own_read


def read_witness_claims(reads: trials.Trials, *, show: bool = True) -> list[Claim]:
    """The first ground, over every counted cold and warm read of :func:`cold_warm_trials`: the kernel's
    count of the bytes each took from storage, and whether anyone else's traffic shared the device
    while they ran (a disturbed read was run again; ``reads.frame`` keeps it, not counted)."""
    cold, warm = reads.results.get("cold", []), reads.results.get("warm", [])
    if not cold or not warm:
        raise ValueError("need counted trials of both 'cold' and 'warm' (lab.cold_warm_trials)")
    n = cold[0].nbytes
    owns_c, owns_w = [_counted(m) for m in cold], [_counted(m) for m in warm]
    own_c = None if None in owns_c else min(owns_c)
    own_w = None if None in owns_w else max(owns_w)
    claims = [explain.expect(
        "the kernel counted the cold read's bytes as read from storage (at least 95 % of them)" if len(cold) == 1
        else f"the kernel counted each cold read's bytes as read from storage (at least 95 % of them, in each of "
             f"the {len(cold)})",
        explain.greater("least from storage", own_c, "95 % of the bytes read", measure.MOSTLY * n),
        yes=lambda ev: f"at least {format_size(own_c)} came from storage for each {format_size(n)} read",
        no=lambda ev: f"one took only {format_size(own_c)} of {format_size(n)} from storage",
        why="part of the file was still in the page cache when the read began (see the residency below).",
        missing=_no_witness(cold[0]), show=show)]
    allowance = measure.HARDLY * warm[0].nbytes + measure.SLACK
    claims.append(explain.expect(
        "the warm read took (next to) nothing from storage: memory served it" if len(warm) == 1 else
        f"the warm reads took (next to) nothing from storage: memory served them (each of the {len(warm)})",
        explain.greater("allowance", None if own_w is None else allowance, "most from storage", own_w),
        yes=lambda ev: f"at most {format_size(own_w)} from storage for each {format_size(warm[0].nbytes)} read",
        no=lambda ev: f"one took {format_size(own_w)} from storage",
        why="memory pressure evicted some of the file between a cold read and the warm one after it, so "
            "those pages came from the device again.",
        missing=_no_witness(warm[0]), show=show))
    counted = cold + warm
    quiet = [m.witness.disturbed for m in counted if m.witness is not None]
    quiet_known = None if len(quiet) < len(counted) or any(q is None for q in quiet) else not any(quiet)
    others = max((max(m.witness.others_read or 0, m.witness.others_written or 0)
                  for m in counted if m.witness is not None), default=0)
    f = reads.frame
    reran = int(f["rerun"].sum()) if "rerun" in f.columns else 0
    again = (f" ({reran} read(s) the witness found disturbed were run again: the chart keeps them, not counted)"
             if reran else "")
    claims.append(explain.expect(
        "nobody else used the device while the counted reads ran (its counters moved only by our own "
        f"bytes, give or take {format_size(witness.DISTURBANCE_FLOOR)})",
        explain.fact("device quiet", quiet_known),
        yes="the rates below are this file's alone" + again,
        no=lambda ev: (f"the device moved up to {format_size(others)} that were not ours during a read: "
                       + "; ".join(dict.fromkeys(measure.disturbance(m.witness) for m in counted
                                                 if m.witness is not None and m.witness.disturbed))
                       + again),
        why="the machine is shared: other users' programs, the write-back of older dirty pages and the "
            "filesystem's journal all use the same device. The counts of our own bytes still hold; the "
            "times, and so the rates, were shared.",
        missing=_no_witness(cold[0]), show=show))
    return claims


def cold_warm_report(reads: trials.Trials) -> str:
    """One line: this machine's warm/cold ratio (medians, and each side's range) beside seed 004's
    (a report, not an explanation)."""
    seed = seed004_ratios()
    s = reads.summary()
    ours = s.loc["warm", "median"] / s.loc["cold", "median"]
    theirs = ", ".join(f"{fs} {r:.2f}x" if r < 2 else f"{fs} {r:.1f}x" for fs, r in seed.items())
    side = ", ".join(f"{name} {r['min']:,.0f}–{r['max']:,.0f} MiB/s over {r['trials']}" for name, r in s.iterrows())
    return (f"warm / cold here: {ours:.1f}x (medians; {side} trials). "
            f"Seed 004's cat, second read / first read (one run each): {theirs}.")


def rates_frame(reads: trials.Trials) -> pd.DataFrame:
    """Every read of a :class:`iolab.trials.Trials` run of timed reads (its ``frame``: warm-ups and
    disturbed reads run again included), labelled in the order they ran for :func:`iolab.lessons.l01_page_cache.plots.verdicts`:
    "cold 1", "warm 1", …, "cold (warm-up)", "cold, run 7 (disturbed)"."""
    f = reads.frame.copy()

    def label(r) -> str:
        if r["warmup"]:
            return f"{r['setting']} (warm-up)"
        if not r["kept"]:
            return f"{r['setting']}, run {r['position']} (disturbed)"
        return f"{r['setting']} {r['trial']}"
    f["label"] = [label(r) for _, r in f.iterrows()]
    return f


# --- 3 · see the pages arrive -------------------------------------------------------------------

@dataclass(frozen=True)
class RegionsRun:
    """Reads of a few regions of one evicted file, and the residency they left behind."""

    evicted: Residency              # right after the eviction, before the reads
    after: Residency                # after the reads (and a short wait for readahead to land)
    reads: tuple[tuple[int, int], ...]   # (offset, length) in bytes, in the order they were made
    read_ahead_kb: int | None       # the readahead maximum of the device behind the file


def read_regions(path: str | os.PathLike[str], reads: Sequence[tuple[int | str, int | str]], *,
                 settle: float = 0.25) -> RegionsRun:
    """Evict ``path``, pread each (offset, length) in turn on ONE open file, wait ``settle`` seconds
    (readahead runs in the background and a page counts as resident only once its read completed),
    then take the residency."""

    regions = tuple((parse_size(o), parse_size(n)) for o, n in reads)
    evicted = pagecache.evict(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, n in regions:
            os.pread(fd, n, off)
    finally:
        os.close(fd)
    if settle > 0:
        time.sleep(settle)
    kb = ra.read_ahead_kb(path).kb
    return RegionsRun(evicted, pagecache.residency(path), regions, kb)


def regions_frame(run: RegionsRun) -> pd.DataFrame:
    """Per region read: pages asked for, how many of them are resident, and ``ahead``: the run of
    resident pages that starts right after the region's end (stopping at the next region read)."""
    res, reads = run.after, run.reads
    if res.map is None:
        raise ValueError("need a residency with its per-page map (pagecache.residency(path))")
    pmap = res.map
    ps = res.page_size
    starts = sorted(off // ps for off, _ in reads)
    rows = []
    for i, (off, n) in enumerate(reads):
        first, end = off // ps, -(-(off + n) // ps)
        limit = min([s for s in starts if s >= end] + [len(pmap)])
        ahead = 0
        while end + ahead < limit and pmap[end + ahead]:
            ahead += 1
        rows.append({"region": i + 1, "offset": off, "length": n, "pages_asked": end - first,
                     "resident_in_region": int(pmap[first:end].sum()), "ahead": ahead,
                     "ahead_bytes": ahead * ps})
    return pd.DataFrame(rows)


def expects_readahead(index: int, reads: Sequence[tuple[int, int]], read_ahead_kb: int | None,
                      page_size: int = pagecache.PAGE_SIZE) -> tuple[bool | None, str]:
    """Does Linux's readahead (mm/readahead.c, page_cache_sync_ra) open a window for read ``index``
    of ``reads`` on one freshly opened, fully evicted file? (answer, reason in words).

    A cache miss gets a readahead window when the read starts at offset 0, starts where the previous
    read on the same open file ended, or is larger than the readahead maximum ("oversize"). Otherwise
    it is taken for a random read and exactly the pages asked for are read. (The kernel also looks at
    cached pages just before the read; on an evicted file there are none.)
    """
    if read_ahead_kb is None:
        return None, "there is no readahead setting for this file"
    if read_ahead_kb == 0:
        return False, "readahead is switched off for this device (read_ahead_kb = 0)"
    off, n = reads[index]
    req_pages = -(-(off % page_size + n) // page_size)
    max_pages = read_ahead_kb * KiB // page_size
    if off == 0:
        return True, "it starts at offset 0, which the kernel takes for the start of a sequential read"
    if index > 0:
        p_off, p_n = reads[index - 1]
        if (off // page_size) - ((p_off + p_n) // page_size) <= 1 and off >= p_off:
            return True, "it starts where the previous read ended: a sequential read"
    if req_pages > max_pages:
        return True, (f"at {format_size(n)} it is larger than the readahead maximum ({read_ahead_kb:,} KiB), "
                      "and the kernel reads ahead for such 'oversize' reads too")
    return False, (f"it neither starts the file nor continues the previous read, and its {format_size(n)} is "
                   f"within the readahead maximum ({read_ahead_kb:,} KiB): the kernel takes it for a random "
                   "read and reads only the pages asked for")


def regions_claims(run: RegionsRun, *, show: bool = True) -> list[Claim]:
    """For each region read: did readahead bring in pages after it, as the kernel's rule predicts?
    (:func:`regions_frame` is the table they are read from.)"""
    frame = regions_frame(run)
    mem = _memory_fs(run.evicted, run.after)
    evicted_ok = run.evicted.reliable and run.evicted.resident == 0
    claims = []
    for i, row in frame.iterrows():
        where = f"the read of {format_size(row.length)} at offset {format_size(row.offset) if row.offset else 0}"
        predicted, because = expects_readahead(i, run.reads, run.read_ahead_kb, run.after.page_size)
        ahead = int(row.ahead)
        missing = ""
        if not evicted_ok:
            value = None
            missing = ("the file could not be evicted first (" + (f"{mem} keeps files in memory" if mem else
                       run.evicted.note or "pages stayed") + "), so resident pages say nothing about readahead.")
        elif predicted is None:
            value = None
            missing = because + "."
        else:
            value = (ahead > 0) if predicted else (ahead == 0)
        if predicted is False:
            text = f"no page after {where}, because {because}"
        elif predicted is None:
            text = f"the kernel's readahead rule to show in the pages after {where}"
        else:
            text = f"pages read ahead after {where}, because {because}"
        claims.append(explain.expect(
            text, explain.fact(f"region {i + 1}: {'some' if predicted is not False else 'no'} pages ahead", value),
            yes=(f"{ahead:,} pages ({format_size(ahead * run.after.page_size)}) beyond its end" if ahead else
                 "the resident pages end exactly where the read ended"),
            no=(f"{ahead:,} pages ({format_size(ahead * run.after.page_size)}) were resident beyond its end"
                if ahead else "no page beyond its end was resident"),
            why=("readahead runs in the background and a page counts as resident only once its read has "
                 "completed: on a slow device it may still be on its way. Other kernels, and filesystems "
                 "with their own readahead (NFS, Lustre, FUSE daemons), decide differently."),
            missing=missing, show=show))
    return claims


# --- 4 · drop_caches, only when asked ---------------------------------------------------------

def drop_all_caches(allowed: bool) -> dict[str, Any]:
    """Empty this machine's whole page cache (drop_caches=1) only when ``allowed`` and root.

    Prints what was done, or what would be done and to whom. Returns Cached before/after (bytes).
    """
    cached = pagecache.meminfo()["Cached"]
    out: dict[str, Any] = {"cached_before": cached, "cached_after": None, "dropped": False}
    if not allowed:
        print(f"Not done. The page cache holds {format_size(cached)} right now, most of it other people's "
              "and other programs' files. drop_caches would throw all of it away, and their next reads "
              "would go to the disk. Set DROP_ALL_CACHES = True only on a machine of your own.")
        return out
    if os.geteuid() != 0:
        print(f"DROP_ALL_CACHES is set, but you are uid {os.geteuid()}, not root: drop_caches needs root. "
              "pagecache.evict(path) above is the way without it.")
        return out
    try:
        pagecache.drop_caches(1)
    except PermissionError as e:
        print(f"DROP_ALL_CACHES is set, but the kernel refused: {e}")
        return out
    after = pagecache.meminfo()["Cached"]
    out.update(cached_after=after, dropped=True)
    print(f"Done, as root: Cached went from {format_size(cached)} to {format_size(after)}, for every user "
          "of this machine.")
    return out


# --- 6 · O_DIRECT -------------------------------------------------------------------------------

def odirect_trials(path: str | os.PathLike[str], *, device_bps: float | None = None, repeat: int = 5,
                   warmup: int = 1) -> trials.Trials:
    """Read ``path`` with O_DIRECT and as it is (warm: the warm-ups leave every page cached), in turn,
    ``repeat`` times after ``warmup`` reads of each (MiB/s). Raises IolabError when the filesystem refuses
    O_DIRECT."""
    return trials.run({"O_DIRECT": lambda: measure.timed_read(path, direct=True, device_bps=device_bps),
                       "warm": lambda: measure.timed_read(path, device_bps=device_bps)},
                      repeat=repeat, warmup=warmup, metric=trials.mib_per_s, higher=True, unit="MiB/s")


def odirect_claims(direct: trials.Trials | None, device_rates: Sequence[float] | None, *,
                   show: bool = True) -> list[Claim]:
    """O_DIRECT reads of a file that is entirely in the page cache, against warm reads of it (the
    interleaved trials of :func:`odirect_trials`, None when the filesystem refused O_DIRECT) and against
    the device's uncached reads (bytes/s), by the one rule of :func:`iolab.explain.beyond`."""
    results = [] if direct is None else direct.results.get("O_DIRECT", []) + direct.results.get("warm", [])
    mem = _memory_fs(*(m.before for m in results))
    refused = "this filesystem refused O_DIRECT" if direct is None else ""
    d_vals = [] if direct is None else direct.values("O_DIRECT")
    rel = explain.beyond("warm", [] if direct is None else direct.values("warm"), "O_DIRECT", d_vals,
                         by=FASTER, unit="MiB/s")
    claims = [explain.expect(
        "O_DIRECT went around the page cache: every O_DIRECT read at most half as fast as every warm read, "
        "although every page was cached",
        rel,
        why=(f"on {mem} the file's pages are the file: O_DIRECT reads the same memory." if mem else
             "what O_DIRECT read from is as fast as the page cache: a cache below this machine (a VM "
             "host's memory, a server's cache) holding this file."),
        missing=refused, show=show)]
    dev = explain.beyond(LIMIT, _limits(device_rates), "O_DIRECT", d_vals, unit="MiB/s")
    claims.append(explain.expect(
        f"the O_DIRECT reads were no faster than the device delivers uncached: every one below {LIMIT}",
        dev,
        no=lambda ev: f"even the slowest O_DIRECT read was beyond them: {explain.spread_text(dev)}",
        why="a cache below this machine's page cache served it: the host of a VM, a storage server, a "
            "controller. O_DIRECT skips only the cache of the machine that reads.",
        close=("what would separate them: more trials of both (the device's rate is measured by 3 reads), a "
               "bigger file, an idle machine"),
        missing=refused or ("there is no device rate to compare with" + (f": {mem} has no device" if mem else "")),
        show=show))
    return claims


def fstype_of(path: str | os.PathLike[str]) -> str:
    return fsinfo.fstype(Path(path))
