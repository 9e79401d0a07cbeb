"""Lesson 01 (the page cache): the experiments, and what their numbers showed, as claims.

Every function that explains takes what was measured (``measure.Measurement`` objects, a
``pagecache.Residency``, dd records) and returns the list of :class:`iolab.explain.Claim` it printed.
The sentences are chosen by the numbers, so the lesson reads right on a laptop SSD, on a VM whose
host caches the disk, on tmpfs (where nothing can be evicted) and on a cluster's network filesystem.
"""
from __future__ import annotations

import mmap
import os
import re
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .. import explain, fsinfo, measure, pagecache, readahead as ra, recordings, runner, trials, witness, workspace
from ..errors import ParseError, ToolFailed, ToolMissing
from ..explain import Claim
from ..pagecache import Residency
from ..units import KiB, MiB, format_size, parse_size
from ..tools import dd

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


def cold_warm_claims(cold: measure.Measurement, warm: measure.Measurement, device_bps: float | None, *,
              show: bool = True) -> list[Claim]:
    """What the cold read (after an eviction) and the warm read (right after it) showed: the kernel's
    witness first (bytes from storage, and whether anyone else used the device meanwhile), then the
    residency, then the rates."""
    mem = _memory_fs(cold.before, warm.before)
    before = cold.before.fraction if cold.before.reliable else None
    claims = read_witness_claims(cold, warm, show=show)
    claims.append(explain.expect(
        "the first read was cold: none of the file was in the page cache before it",
        explain.fact("nothing resident before the cold read", None if before is None else before == 0),
        yes=f"0 of {cold.before.pages:,} pages were resident",
        no=lambda ev: f"{cold.before.fraction:.0%} of its pages were resident",
        why=(f"{mem} keeps files in memory: their pages are the file, and an eviction cannot drop them"
             if mem else "the eviction was refused or undone (pages under write-back, a process that has "
                          "the file mapped, or another reader)"),
        missing="the kernel would not tell this process the file's residency", show=show))
    warm_mib, cold_mib = _mibs(warm.bytes_per_s), _mibs(cold.bytes_per_s)
    ratio = warm.bytes_per_s / cold.bytes_per_s
    claims.append(explain.expect(
        f"the warm read ran at least {FASTER:g}x as fast as the cold one",
        explain.greater("warm", warm_mib, "cold", cold_mib, by=FASTER),
        yes=f"{warm_mib:,.0f} MiB/s against {cold_mib:,.0f} MiB/s, {ratio:.1f}x",
        no=f"{warm_mib:,.0f} MiB/s against {cold_mib:,.0f} MiB/s, only {ratio:.1f}x",
        why=(f"on {mem} both reads come from memory, so there is no cold read to compare with." if mem else
             "whatever served the 'cold' read was nearly as fast as memory: a cache below this machine's page "
             "cache (a VM host's memory, a storage server's cache, the disk's own cache) or a very fast "
             "device. The residency only sees this machine's page cache, not the layers below it."),
        show=show))
    dev = _mibs(device_bps)
    no_dev = ("there is no device rate to compare with: " + (f"{mem} has no device behind it" if mem else
              "the device's uncached rate was not measured"))
    claims.append(explain.expect(
        f"the cold read was no faster than the device delivers uncached (at most {measure.TOLERANCE:g}x "
        "its rate)",
        explain.greater("device limit", None if dev is None else dev * measure.TOLERANCE, "cold", cold_mib),
        yes=lambda ev: f"{cold_mib:,.0f} MiB/s against the device's {dev:,.0f} MiB/s",
        no=lambda ev: f"it ran at {cold_mib:,.0f} MiB/s, {cold_mib / dev:.1f}x the device's {dev:,.0f} MiB/s",
        why="something below the page cache kept this file's blocks (they were written moments ago): a VM "
            "host's memory or a disk cache serves them faster than the fresh probe file the device rate "
            "was measured with.", missing=no_dev, show=show))
    claims.append(explain.expect(
        f"the warm read ran faster than any device read could (more than {measure.TOLERANCE:g}x the "
        "device's uncached rate)",
        explain.greater("warm", warm_mib, "device limit", None if dev is None else dev * measure.TOLERANCE),
        yes=lambda ev: f"{warm_mib:,.0f} MiB/s is {warm_mib / dev:.1f}x the device's {dev:,.0f} MiB/s: "
                       "memory served it",
        no=lambda ev: f"{warm_mib:,.0f} MiB/s is only {warm_mib / dev:.1f}x the device's {dev:,.0f} MiB/s",
        why="the device (or a cache in front of it) is nearly as fast as copying from memory here, so the "
            "rate alone cannot tell the two apart; the residency before the read still can.",
        missing=no_dev, show=show))
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


def read_witness_claims(cold: measure.Measurement, warm: measure.Measurement, *, show: bool = True) -> list[Claim]:
    """The first ground: the kernel's count of the bytes each read took from storage, and whether
    anyone else's traffic shared the device while they ran."""
    n = cold.nbytes
    own_c, own_w = _counted(cold), _counted(warm)
    claims = [explain.expect(
        "the kernel counted the cold read's bytes as read from storage (at least 95 % of them)",
        explain.greater("from storage", own_c, "95 % of the bytes read", measure.MOSTLY * n),
        yes=lambda ev: f"{format_size(own_c)} came from storage for {format_size(n)} read",
        no=lambda ev: f"only {format_size(own_c)} of {format_size(n)} came from storage",
        why="part of the file was still in the page cache when the read began (see the residency below).",
        missing=_no_witness(cold), show=show)]
    allowance = measure.HARDLY * warm.nbytes + measure.SLACK
    claims.append(explain.expect(
        "the warm read took (next to) nothing from storage: memory served it",
        explain.greater("allowance", None if own_w is None else allowance, "from storage", own_w),
        yes=lambda ev: f"{format_size(own_w)} from storage for {format_size(warm.nbytes)} read",
        no=lambda ev: f"it took {format_size(own_w)} from storage",
        why="memory pressure evicted some of the file between the two reads, so they came from the device again.",
        missing=_no_witness(warm), show=show))
    quiet = [m.witness.disturbed for m in (cold, warm) if m.witness is not None]
    quiet_known = None if not quiet or any(q is None for q in quiet) else not any(quiet)
    others = max((max(m.witness.others_read or 0, m.witness.others_written or 0)
                  for m in (cold, warm) if m.witness is not None), default=0)
    claims.append(explain.expect(
        "nobody else used the device while the two reads ran (its counters moved only by our own bytes, "
        f"give or take {format_size(witness.DISTURBANCE_FLOOR)})",
        explain.fact("device quiet", quiet_known),
        yes="the rates above are this file's alone",
        no=lambda ev: (f"the device moved {format_size(others)} that were not ours: "
                       + "; ".join(measure.disturbance(m.witness) for m in (cold, warm)
                                   if m.witness is not None and m.witness.disturbed)),
        why="the machine is shared: other users' programs, the write-back of older dirty pages and the "
            "filesystem's journal all use the same device. The counts of our own bytes still hold; the "
            "times, and so the rates, were shared.",
        missing=_no_witness(cold), show=show))
    return claims


def cold_warm_report(cold: measure.Measurement, warm: measure.Measurement) -> str:
    """One line: this machine's warm/cold ratio beside seed 004's (a report, not an explanation)."""
    seed = seed004_ratios()
    ours = warm.bytes_per_s / cold.bytes_per_s
    theirs = ", ".join(f"{fs} {r:.2f}x" if r < 2 else f"{fs} {r:.1f}x" for fs, r in seed.items())
    return f"warm / cold here: {ours:.1f}x. Seed 004's cat, second read / first read: {theirs}."


def rates_frame(named: Sequence[tuple[str, measure.Measurement]]) -> pd.DataFrame:
    """Measurement rows labelled for :func:`iolab.plot.read_rates`."""
    return pd.DataFrame([m.row() | {"label": name} for name, m in named])


# --- 2 · see the pages arrive -------------------------------------------------------------------

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


# --- 3 · drop_caches, only when asked ------------------------------------------------------------

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


# --- 4 · write-back: fsync, dd oflag=dsync, hdparm ------------------------------------------------

WRITEBACK_SETTINGS = ("no fsync", "fsync")


def writeback_trials(ws, *, nbytes: int | str = "64MiB", repeat: int = 5, warmup: int = 1,
                     device_bps: float | None = None, name: str = "written.bin") -> trials.Trials:
    """Write ``nbytes`` without fsync and with fsync, interleaved (no fsync, fsync, no fsync, …) after
    ``warmup`` writes of each that are not counted: the first new file of a session pays for fresh
    pages (the kernel finds and zeroes them), which one run of each in a fixed order blames on the
    device. Before every trial the previous file's dirty pages are written out (fsync, outside the
    clock), so no trial's witness counts the write-back of the one before. The rates are MiB/s."""
    path = ws.root / name

    def settle() -> None:
        if path.exists():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def write(fsync: bool):
        return lambda: measure.timed_write(name, nbytes, ws=ws, fsync=fsync, device_bps=device_bps)

    return trials.run({"no fsync": write(False), "fsync": write(True)}, repeat=repeat, warmup=warmup,
                      metric=trials.mib_per_s, higher=True, unit="MiB/s", between=settle)


def writeback_claims(plain: measure.Measurement, synced: measure.Measurement, rates: trials.Trials, *,
              show: bool = True) -> list[Claim]:
    """What timed writes without fsync and with fsync (same size, same place) showed: the device's
    counters first (what it had written when the clock stopped, for ``plain`` and ``synced``, one
    write of each), then the rates over the interleaved trials ``rates`` (settings "no fsync" and
    "fsync", :func:`writeback_trials`: the rule of :func:`iolab.explain.beyond`) and Dirty."""
    mem = _memory_fs(plain.after, synced.after)
    by = 1.5

    def wrote(m: measure.Measurement) -> int | None:
        return None if m.witness is None or m.witness.device is None else m.witness.device_written

    def nodev(m: measure.Measurement) -> str:
        if mem:
            return f"{mem} has no block device: nothing is ever written to one, and nothing counts it."
        return _no_witness(m)

    w_plain, w_synced = wrote(plain), wrote(synced)
    claims = [explain.expect(
        "when write() returned, the device had written (next to) none of it: the data was in memory, dirty",
        explain.greater("allowance", None if w_plain is None else measure.HARDLY * plain.nbytes + measure.SLACK,
                        "device wrote", w_plain),
        yes=lambda ev: f"the device wrote {format_size(w_plain)} while {format_size(plain.nbytes)} were written",
        no=lambda ev: f"the device wrote {format_size(w_plain)} while {format_size(plain.nbytes)} were written",
        why="the device counts everyone's writes (another program, the write-back of older dirty pages, the "
            "journal), and the kernel starts write-back early when dirty memory piles up.",
        missing=nodev(plain), show=show)]
    claims.append(explain.expect(
        "when fsync() returned, the device had written all of it",
        explain.greater("device wrote", w_synced, "95 % of the write",
                        None if w_synced is None else measure.MOSTLY * synced.nbytes),
        yes=lambda ev: f"the device wrote {format_size(w_synced)} for {format_size(synced.nbytes)}",
        no=lambda ev: f"the device wrote only {format_size(w_synced)} for {format_size(synced.nbytes)}",
        why="the filesystem compresses or deduplicates what it writes, or wrote part of it before the clock "
            "started.", missing=nodev(synced), show=show))
    rel = rates.relation("no fsync", "fsync", by=by)
    ratio = lambda ev: ev["no fsync"] / ev["fsync"] if ev["fsync"] else float("inf")   # noqa: E731
    claims.append(explain.expect(
        f"write() without fsync returned at least {by:g}x sooner than write + fsync",
        rel,
        yes=lambda ev: f"{explain.spread_text(rel)}: even the slowest write without fsync beat the fastest "
                       f"with fsync by {by:g}x (medians {ratio(ev):.1f}x apart)",
        no=lambda ev: f"{explain.spread_text(rel)}: even the fastest write without fsync was not {by:g}x the "
                      f"slowest with fsync (medians {ratio(ev):.1f}x apart)",
        why=(f"{mem} has no device: fsync has nothing to wait for." if mem else
             "the device said 'written' almost as fast as memory takes a copy: fsync waits until the device "
             "reports the data safe, and a write cache below this machine (a VM's host, a RAID controller, "
             "the disk's own) can report that early; fsync cannot see past that answer. The trials were "
             "interleaved after a warm-up, so the order they ran in is not the reason."),
        close=("what would separate them: more trials, a larger write, an idle machine. Each write lasts "
               "only tens of milliseconds, so anything else running here moves both rates; write() itself "
               "waits when the machine's dirty pages pile up (other programs' writes count too)"),
        show=show))
    growth = plain.options.get("dirty_growth")
    claims.append(explain.expect(
        "Dirty (the machine's not-yet-written pages) grew by about what was written when write() returned",
        explain.within("Dirty growth", None if growth is None else growth / MiB, "written", plain.nbytes / MiB,
                       rel=0.5),
        yes=lambda ev: f"+{growth / MiB:,.0f} MiB for {plain.nbytes / MiB:,.0f} MiB written",
        no=lambda ev: f"Dirty moved by {growth / MiB:+,.0f} MiB for {plain.nbytes / MiB:,.0f} MiB written",
        why=(f"{mem} pages are never written back, so they are not counted as Dirty." if mem else
             "Dirty counts the whole machine: other programs' writes raise it and the kernel's background "
             "write-back lowers it while you watch (it starts early once dirty memory passes "
             "vm.dirty_background_ratio)."),
        missing="Dirty was not sampled around the write", show=show))
    return claims


@dataclass
class DdWrite(recordings.Outcome):
    """:func:`dd_write`'s outcome: ``data`` dd's parsed summary, and where it wrote."""

    fstype: str = ""                     # the filesystem it wrote to (here, or the recording's)


def dd_write(src: str, dst: str | os.PathLike[str], *, count: int, block: str = "1MiB", dsync: bool,
             recording: str, ws=None, quiet: bool = False) -> DdWrite:
    """dd if=/dev/zero of=DST bs=1M count=N [oflag=dsync], within the workspace budget; the file is removed
    afterwards. Live when dd is here, else (or with IOLAB_MODE=replay) the recording."""

    ws = ws or workspace.session()
    target = ws.inside(dst)

    def live():
        ws.reserve(count * parse_size(block))
        try:
            r = dd.run(src, target, bs=block, count=count, oflag=["dsync"] if dsync else ())
        finally:
            target.unlink(missing_ok=True)
        return replace(r, stdout=r.stderr)   # dd's summary

    out = recordings.live_or_recorded(live, recording, requires=("dd",), parse=dd.parse, quiet=quiet, cls=DdWrite)
    if out.recording is not None and out.recording.witness_note:
        out.witness_note = out.recording.witness_note
    out.fstype = (out.recording.meta.get("filesystem", {}).get("fstype", "") if out.recording
                  else fstype_of(ws.root))
    return out


def dd_sync_claims(buffered: DdWrite, dsync: DdWrite, *, show: bool = True) -> list[Claim]:
    """Buffered dd against dd oflag=dsync (each write waits for the device), from :func:`dd_write`."""
    a = buffered.data["bytes_per_s"] / 1e6
    b = dsync.data["bytes_per_s"] / 1e6
    mixed = buffered.mode != dsync.mode
    fstype = dsync.fstype
    mem = fstype if fstype in MEMORY_FS else ""
    return [explain.expect(
        "dd with oflag=dsync wrote at most half as fast as plain dd",
        explain.greater("buffered", None if mixed else a, "dsync", b, by=FASTER),
        yes=f"{b:,.1f} MB/s with dsync against {a:,.1f} MB/s without ({a / b:.1f}x)",
        no=f"{b:,.1f} MB/s with dsync against {a:,.1f} MB/s without, only {a / b:.1f}x",
        why=(f"{mem} has no device: a synchronous write has nothing to wait for." if mem else
             "each synchronous write waits until the device reports the data safe, and a write cache below "
             "the page cache (a VM's host, a RAID controller, the disk) can report that at once."),
        missing="one of the two runs was replayed and the other ran here: they are not comparable.",
        show=show)]


# seed 002: `hdparm -Tt` and dd on a cloud VM's local disk (data/published/seed002-local-disk.csv)

def seed002() -> pd.DataFrame:
    return recordings.published("seed002-local-disk")


def seed002_dd_read_verdict() -> measure.Verdict:
    """Seed 002 read back with dd the file it had just written; hdparm -t gave the disk's uncached rate."""
    pub = seed002().set_index("test")
    return measure.judge(float(pub.loc["dd read", "mb_per_s"]) * 1e6,
                         device_bps=float(pub.loc["hdparm -t", "mb_per_s"]) * 1e6)


_HDPARM_RE = re.compile(r"\s*Timing (cached|buffered disk) reads:\s+(\d{1,15}(?:\.\d{1,6})?) MB in\s+"
                        r"(\d{1,9}\.\d{1,6}) seconds = (\d{1,15}\.\d{1,6}) (k|M|G)B/sec\s*")


def parse_hdparm(text: str) -> list[dict[str, Any]]:
    """hdparm -T/-t lines -> [{"test": "hdparm -T"|"hdparm -t", "mb": .., "seconds": .., "mb_per_s": ..}].

    Lines that are not timings (the device's name, hdparm's notes) are skipped; a timing line that
    does not read whole (cut short, a number that is not one), a time of 0 seconds, or a text with no
    timing at all raises ParseError."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if "Timing" not in line[:40]:
            continue
        m = _HDPARM_RE.fullmatch(line) if len(line) < 200 else None
        if not m:
            raise ParseError("not a whole hdparm timing line (Timing ... reads: N MB in S seconds = R MB/sec)",
                             line_no=no, line=line)
        mb, seconds, rate = float(m.group(2)), float(m.group(3)), float(m.group(4))
        rate *= {"k": 1e-3, "M": 1.0, "G": 1e3}[m.group(5)]
        if seconds <= 0 or rate <= 0:
            raise ParseError("an hdparm timing of no time or no rate", line_no=no, line=line)
        out.append({"test": "hdparm -T" if m.group(1) == "cached" else "hdparm -t", "mb": mb,
                    "seconds": seconds, "mb_per_s": rate})
    if not out:
        raise ParseError("no hdparm timing line (Timing cached reads / Timing buffered disk reads)")
    return out


def device_path(path: str | os.PathLike[str]) -> str | None:
    """The /dev/... device behind ``path``'s filesystem, or None (tmpfs, overlay, network)."""
    src = fsinfo.mount_of(path).source
    return src if src.startswith("/dev/") else None


def hdparm(path: str | os.PathLike[str], allowed: bool) -> list[dict[str, Any]] | None:
    """Run ``hdparm -Tt`` on the device behind ``path`` when ``allowed``, root, and the device opens;
    otherwise print why not. hdparm flushes the device's buffer cache and reads it for several seconds."""
    dev = device_path(path)
    if dev is None:
        print(f"{path} is not on a local block device: hdparm has nothing to measure here.")
        return None
    if runner.which("hdparm") is None:
        print(f"hdparm is not installed here ({runner.install_hint('hdparm')})")
        return None
    if os.geteuid() != 0:
        print(f"hdparm needs root to open {dev}; you are uid {os.geteuid()}.")
        return None
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        print(f"This machine does not let even root open {dev} ({e.strerror}), so hdparm cannot run here; "
              "a VM or container often keeps its disk device to itself.")
        return None
    os.close(fd)
    if not allowed:
        print(f"hdparm could run here on {dev}. It flushes the device's buffer cache and reads the disk for "
              "about 6 seconds: set RUN_HDPARM = True to run it.")
        return None
    try:
        r = runner.run(["hdparm", "-Tt", dev], timeout=60)
    except (ToolFailed, ToolMissing) as e:
        print(f"hdparm failed: {e}")
        return None
    print(r.stdout.strip())
    return parse_hdparm(r.stdout)


# --- 5 · O_DIRECT -------------------------------------------------------------------------------

def odirect_claims(direct: measure.Measurement | None, warm: measure.Measurement, device_bps: float | None, *,
            show: bool = True) -> list[Claim]:
    """An O_DIRECT read of a file that is entirely in the page cache, against the warm read and the device."""
    mem = _memory_fs(warm.before)
    d = None if direct is None else _mibs(direct.bytes_per_s)
    w = _mibs(warm.bytes_per_s)
    dev = _mibs(device_bps)
    refused = "this filesystem refused O_DIRECT" if direct is None else ""
    claims = [explain.expect(
        "O_DIRECT went around the page cache: at most half the warm read's rate, although every page was cached",
        explain.greater("warm", w, "O_DIRECT", d, by=FASTER),
        yes=lambda ev: f"{d:,.0f} MiB/s with O_DIRECT against {w:,.0f} MiB/s from the page cache",
        no=lambda ev: f"{d:,.0f} MiB/s with O_DIRECT against {w:,.0f} MiB/s from the page cache",
        why=(f"on {mem} the file's pages are the file: O_DIRECT reads the same memory." if mem else
             "what O_DIRECT read from is as fast as the page cache: a cache below this machine (a VM "
             "host's memory, a server's cache) holding this file."),
        missing=refused, show=show)]
    claims.append(explain.expect(
        f"the O_DIRECT read was no faster than the device delivers uncached (at most {measure.TOLERANCE:g}x)",
        explain.greater("device limit", None if dev is None else dev * measure.TOLERANCE, "O_DIRECT", d),
        yes=lambda ev: f"{d:,.0f} MiB/s against the device's {dev:,.0f} MiB/s",
        no=lambda ev: f"{d:,.0f} MiB/s is {d / dev:.1f}x the device's uncached {dev:,.0f} MiB/s",
        why="a cache below this machine's page cache served it: the host of a VM, a storage server, a "
            "controller. O_DIRECT skips only the cache of the machine that reads.",
        missing=refused or ("there is no device rate to compare with" + (f": {mem} has no device" if mem else "")),
        show=show))
    return claims


def fstype_of(path: str | os.PathLike[str]) -> str:
    return fsinfo.fstype(Path(path))


# --- 1b · the kernel's witnesses: task I/O accounting, the device's counters, cachestat -------------

COUNTERS = ("rchar", "wchar", "read_bytes", "write_bytes", "cancelled_write_bytes")


def _snapshot(sysdir: Path | None) -> tuple[witness.TaskIO | None, witness.DeviceStat | None]:
    return witness.task_io(), (witness.device_stat(sysdir) if sysdir is not None else None)


def _delta(label: str, before: tuple, after: tuple, note: str = "") -> dict[str, Any]:
    (io0, d0), (io1, d1) = before, after
    row: dict[str, Any] = {"step": label}
    for k in COUNTERS:
        row[k] = None if io0 is None or io1 is None else getattr(io1, k) - getattr(io0, k)
    row["device_read"] = None if d0 is None else (d1.sectors_read - d0.sectors_read) * witness.SECTOR
    row["device_written"] = None if d0 is None else (d1.sectors_written - d0.sectors_written) * witness.SECTOR
    row["note"] = note
    return row


@dataclass
class TaskIO(recordings.Outcome):
    """:func:`task_io_steps`'s steps (``frame``), run here, and what they depend on."""

    file_bytes: int = 0                  # the file read
    write_bytes: int = 0                 # each write
    fstype: str = ""
    device: str | None = None            # the block device behind the file (None: none, tmpfs)


def task_io_steps(data: str | os.PathLike[str], ws=None, *, nbytes: int | str = "32MiB") -> TaskIO:
    """Seven steps, each between two snapshots of this process's ``/proc/self/io`` and of the counters
    of the device behind ``data``: a cold read of ``data`` (evicted first), a warm read, an O_DIRECT
    read of the (cached) file, a write of ``nbytes`` without fsync, its fsync, the same write again,
    and a truncate of that dirty file before write-back. Bytes; None where a counter cannot be read."""

    ws = ws or workspace.session()
    n = parse_size(nbytes)
    p = Path(data)
    size = p.stat().st_size
    sysdir = witness.block_device(p)
    rows = []

    def step(label: str, fn, note: str = "") -> None:
        before = _snapshot(sysdir)
        fn()
        rows.append(_delta(label, before, _snapshot(sysdir), note))

    def read(direct: bool = False) -> None:
        fd = os.open(p, os.O_RDONLY | (os.O_DIRECT if direct else 0))
        try:
            measure._read_all(fd, MiB, buf=mmap.mmap(-1, MiB) if direct else None)
        finally:
            os.close(fd)

    pagecache.evict(p)
    step(f"read {format_size(size)} cold (evicted first)", read)
    step(f"read {format_size(size)} warm", read)
    try:
        step(f"read {format_size(size)} with O_DIRECT (all cached)", lambda: read(direct=True))
    except OSError as e:
        rows.append({"step": f"read {format_size(size)} with O_DIRECT", **{k: None for k in COUNTERS},
                     "device_read": None, "device_written": None,
                     "note": f"this filesystem refuses O_DIRECT ({e.strerror})"})
    scratch = ws.inside(ws.root / "witnessed-write.bin")
    ws.reserve(n)
    block = os.urandom(MiB)
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        def write() -> None:
            left = n
            while left > 0:
                left -= os.write(fd, block[:min(left, MiB)])

        step(f"write {format_size(n)}, no fsync", write)
        step("fsync() that file", lambda: os.fsync(fd))
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        step(f"write {format_size(n)} again, no fsync", write)
        step("truncate it to 0 B before write-back", lambda: os.ftruncate(fd, 0))
    finally:
        os.close(fd)
        scratch.unlink(missing_ok=True)
    frame = pd.DataFrame(rows, columns=["step", *COUNTERS, "device_read", "device_written", "note"])
    return TaskIO("live", "", f"LIVE run here ({socket.gethostname()})", frame=frame, file_bytes=size,
                  write_bytes=n, fstype=fsinfo.fstype(p), device=sysdir.name if sysdir is not None else None)


def sizes(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table with byte counts written as sizes ("32 MiB"), for reading."""
    out = frame.copy()
    for c in out.columns:
        if c in COUNTERS or c in ("device_read", "device_written", "bytes"):
            out[c] = out[c].map(lambda v: "n/a" if v is None or pd.isna(v) else format_size(int(v)))
    return out


def _step_row(frame: pd.DataFrame, prefix: str) -> pd.Series | None:
    hit = frame[frame["step"].str.startswith(prefix)]
    return None if hit.empty else hit.iloc[0]


def _val(row: pd.Series | None, col: str) -> float | None:
    if row is None or row[col] is None or pd.isna(row[col]):
        return None
    return float(row[col])


def task_io_claims(steps: TaskIO, *, show: bool = True) -> list[Claim]:
    """What :func:`task_io_steps` showed about what task I/O accounting counts, and when."""
    frame = steps.frame
    size, n = steps.file_bytes, steps.write_bytes
    fstype = steps.fstype
    mem = fstype if fstype in MEMORY_FS else ""
    nodev = (f"{mem} has no block device: its pages are never read from or written to storage, so the kernel "
             "counts no storage bytes for it." if mem else
             f"no block device behind {fstype or 'this filesystem'}: these counters cannot witness it.")
    has_dev = steps.device is not None
    cold, warm = _step_row(frame, "read") , None
    reads = frame[frame["step"].str.startswith("read")]
    cold, warm = (reads.iloc[0], reads.iloc[1]) if len(reads) >= 2 else (None, None)
    direct = _step_row(frame, f"read {format_size(size)} with O_DIRECT")
    w1, fs = _step_row(frame, f"write {format_size(n)}, no fsync"), _step_row(frame, "fsync")
    tr = _step_row(frame, "truncate")
    allow = measure.HARDLY * n + measure.SLACK
    fmt = lambda v: "n/a" if v is None else format_size(int(v))  # noqa: E731
    claims = [explain.expect(
        "a cold read is charged to read_bytes: the bytes it made the kernel fetch from storage",
        explain.greater("read_bytes", _val(cold, "read_bytes") if has_dev else None, "95 % of the file",
                        measure.MOSTLY * size),
        yes=lambda ev: f"read_bytes grew by {fmt(_val(cold, 'read_bytes'))} for a {format_size(size)} file",
        no=lambda ev: f"read_bytes grew by only {fmt(_val(cold, 'read_bytes'))}",
        why="part of the file was still cached: the eviction did not take.", missing=nodev, show=show)]
    claims.append(explain.expect(
        "a warm read passes every byte through read() (rchar grows by the file's size) but takes none from "
        "storage (read_bytes stays put)",
        explain.greater("allowance", allow if has_dev else None, "read_bytes", _val(warm, "read_bytes")),
        yes=lambda ev: (f"rchar +{fmt(_val(warm, 'rchar'))}, read_bytes +{fmt(_val(warm, 'read_bytes'))}: a "
                        "page-cache hit is not storage I/O"),
        no=lambda ev: f"read_bytes grew by {fmt(_val(warm, 'read_bytes'))}",
        why="memory pressure evicted part of the file after the cold read.", missing=nodev, show=show))
    direct_missing = (direct["note"] if direct is not None and direct["note"] else nodev)
    claims.append(explain.expect(
        "an O_DIRECT read is charged to read_bytes in full, although every page of the file was cached",
        explain.greater("read_bytes", _val(direct, "read_bytes") if has_dev else None, "95 % of the file",
                        measure.MOSTLY * size),
        yes=lambda ev: f"read_bytes +{fmt(_val(direct, 'read_bytes'))}: O_DIRECT went to the device",
        no=lambda ev: f"read_bytes grew by only {fmt(_val(direct, 'read_bytes'))}",
        why="this filesystem serves O_DIRECT from its cache after all (some network and FUSE filesystems do).",
        missing=direct_missing, show=show))
    claims.append(explain.expect(
        "write() is charged to write_bytes at once, when it dirties the pages, not when they reach the device",
        explain.greater("write_bytes", _val(w1, "write_bytes"), "95 % of the write", measure.MOSTLY * n),
        yes=lambda ev: f"write_bytes +{fmt(_val(w1, 'write_bytes'))} as write() returned",
        no=lambda ev: f"write_bytes grew by {fmt(_val(w1, 'write_bytes'))}",
        why=(f"{mem} pages are never written back, so the kernel does not count them as dirty or charge "
             "them to anyone." if mem else "this filesystem does not dirty pages in the page cache for it "
                                           "(a network or FUSE filesystem may write through)."),
        missing="no task I/O accounting in this kernel.", show=show))
    claims.append(explain.expect(
        "the device wrote (next to) nothing while write() ran: the data sat in memory as dirty pages",
        explain.greater("allowance", allow if has_dev else None, "device wrote", _val(w1, "device_written")),
        yes=lambda ev: f"the device wrote {fmt(_val(w1, 'device_written'))}",
        no=lambda ev: f"the device wrote {fmt(_val(w1, 'device_written'))} meanwhile",
        why="the device counts everybody's writes: another program's, the write-back of older dirty pages, "
            "the journal; or the kernel started writing these pages back at once (dirty memory above "
            "vm.dirty_background_ratio).", missing=nodev, show=show))
    claims.append(explain.expect(
        "fsync() made the device write the file, and charged nothing more to write_bytes (it was charged already)",
        explain.greater("device wrote", _val(fs, "device_written") if has_dev else None, "95 % of the write",
                        measure.MOSTLY * n),
        yes=lambda ev: (f"the device wrote {fmt(_val(fs, 'device_written'))}, write_bytes "
                        f"+{fmt(_val(fs, 'write_bytes'))}"),
        no=lambda ev: f"the device wrote only {fmt(_val(fs, 'device_written'))} during fsync()",
        why="the kernel had written the pages back before fsync() was called (background write-back).",
        missing=nodev, show=show))
    claims.append(explain.expect(
        "truncating a file whose pages are still dirty is charged to cancelled_write_bytes: write-back that "
        "will never happen",
        explain.greater("cancelled", _val(tr, "cancelled_write_bytes"), "95 % of the write", measure.MOSTLY * n),
        yes=lambda ev: f"cancelled_write_bytes +{fmt(_val(tr, 'cancelled_write_bytes'))}",
        no=lambda ev: f"cancelled_write_bytes grew by {fmt(_val(tr, 'cancelled_write_bytes'))}",
        why=(f"{mem} pages are never charged as writes, so there is nothing to cancel." if mem else
             "the pages had been written back already, so there was nothing left to cancel."),
        missing="no task I/O accounting in this kernel.", show=show))
    return claims


CACHESTAT_COLUMNS = ("cached", "dirty", "writeback", "evicted", "recently_evicted")


@dataclass
class CacheSteps(recordings.Outcome):
    """:func:`cachestat_steps`'s states (``frame``), run here."""

    pages: int = 0                       # the file's pages
    fstype: str = ""
    cachestat: bool = False              # False: this kernel has no cachestat(2)


def cachestat_steps(ws=None, *, nbytes: int | str = "32MiB") -> CacheSteps:
    """A fresh file through its page-cache states, with ``cachestat(2)`` (pages) and ``mincore``
    (resident pages) after each step: written without fsync, write-back started
    (``sync_file_range``), fsync'd, evicted with ``posix_fadvise(DONTNEED)``; ``.frame`` the states.
    ``.cachestat`` is False where the kernel has no cachestat (Linux < 6.5): then only mincore's
    column is filled."""

    ws = ws or workspace.session()
    n = parse_size(nbytes)
    p = ws.inside(ws.root / "cachestat.bin")
    ws.reserve(n)
    rows = []

    def look(step: str) -> None:
        cs = witness.cachestat(p)
        res = pagecache.residency(p, keep_map=False)
        row = {"step": step, **{c: (getattr(cs, c) if cs is not None else None) for c in CACHESTAT_COLUMNS},
               "resident (mincore)": res.resident if res.reliable else None}
        rows.append(row)

    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        block = os.urandom(MiB)
        left = n
        while left > 0:
            left -= os.write(fd, block[:min(left, MiB)])
        look(f"written ({format_size(n)}), no fsync")
        started = witness.start_writeback(fd)
        look("write-back started (sync_file_range)" if started else "write-back not started (no sync_file_range)")
        os.fsync(fd)
        look("fsync() returned")
    finally:
        os.close(fd)
    pagecache.evict(p)
    look("evicted (posix_fadvise DONTNEED)")
    p.unlink(missing_ok=True)
    frame = pd.DataFrame(rows, columns=["step", *CACHESTAT_COLUMNS, "resident (mincore)"])
    return CacheSteps("live", "", f"LIVE run here ({socket.gethostname()})", frame=frame,
                      pages=-(-n // pagecache.PAGE_SIZE), fstype=fsinfo.fstype(ws.root),
                      cachestat=rows[0]["cached"] is not None)


def cachestat_claims(steps: CacheSteps, *, show: bool = True) -> list[Claim]:
    """What :func:`cachestat_steps` showed: dirty, then under write-back, then clean; dropped on
    request without counting as evicted."""
    frame = steps.frame
    pages = steps.pages
    fstype = steps.fstype
    mem = fstype if fstype in MEMORY_FS else ""
    no_cs = "this kernel has no cachestat(2) (Linux 6.5 added it): mincore sees only which pages are cached."
    have = steps.cachestat
    rows = [frame.iloc[i] for i in range(len(frame))]
    written, started, synced, evicted = rows
    num = lambda r, c: None if not have else float(r[c])  # noqa: E731
    claims = [explain.expect(
        "right after write(), every page of the file is cached and dirty (mincore sees only 'cached')",
        explain.within("dirty", num(written, "dirty"), "pages written", pages, rel=0),
        yes=f"{pages:,} of {pages:,} pages dirty",
        no=lambda ev: f"{int(written['dirty']):,} of {pages:,} pages were dirty",
        why=(f"{mem} pages are never written back, so the kernel does not keep them as dirty." if mem else
             "the kernel began writing some back at once (dirty memory above vm.dirty_background_ratio)."),
        missing=no_cs, show=show)]
    claims.append(explain.expect(
        "right after write-back was started, some pages were under write-back rather than dirty",
        explain.greater("under write-back", num(started, "writeback"), "none", 0),
        yes=lambda ev: f"{int(started['writeback']):,} under write-back, {int(started['dirty']):,} still dirty",
        no=lambda ev: (f"{int(started['writeback']):,} under write-back and {int(started['dirty']):,} dirty "
                       "when cachestat looked"),
        why=(f"{mem} has no device to write back to." if mem else
             "the device had finished writing them before cachestat looked (a fast device, or one with a "
             "write cache that says 'done' at once)."),
        missing=no_cs if not have else "sync_file_range(2) is missing here.", show=show))
    clean = None if not have else bool(int(synced["dirty"]) == 0 and int(synced["writeback"]) == 0
                                       and int(synced["cached"]) == pages)
    claims.append(explain.expect(
        "after fsync() every page is clean (not dirty, not under write-back) and still cached",
        explain.fact("clean and cached", clean),
        yes=f"{pages:,} pages cached, 0 dirty, 0 under write-back",
        no=lambda ev: (f"{int(synced['cached']):,} cached, {int(synced['dirty']):,} dirty, "
                       f"{int(synced['writeback']):,} under write-back"),
        why="memory pressure reclaimed some clean pages right away, or someone wrote to the file again.",
        missing=no_cs, show=show))
    dropped = None if not have or mem else bool(int(evicted["cached"]) == 0 and int(evicted["evicted"]) == 0)
    claims.append(explain.expect(
        "pages dropped on request leave the cache without counting as evicted: cachestat's 'evicted' counts "
        "only what memory pressure pushed out",
        explain.fact("cached 0 and evicted 0", dropped),
        yes="0 cached, 0 evicted",
        no=lambda ev: f"{int(evicted['cached']):,} cached and {int(evicted['evicted']):,} evicted",
        why="memory was short on this machine and reclaim took some of the pages before the request did.",
        missing=(f"{mem} keeps its files in memory: nothing can be dropped." if mem else no_cs), show=show))
    return claims


@dataclass(frozen=True)
class NeighbourRun:
    """Warm reads of our file while another process wrote and fsync'd a file on the same device."""

    witnessed: witness.Witnessed
    reads: int                      # whole-file reads of ours in the window
    nbytes: int                     # what the neighbour wrote
    verdict: measure.Verdict


def neighbour(data: str | os.PathLike[str], ws=None, *, nbytes: int | str = "64MiB") -> NeighbourRun:
    """Read ``data`` (warm) over and over while a neighbour, another process (dd), writes ``nbytes``
    into the workspace and fsyncs it; the witness window closes when the neighbour has finished, and
    only then is it reaped (a reaped child's counters would be added to ours: on a shared machine the
    neighbour is someone else's program, which we never reap)."""
    import subprocess

    ws = ws or workspace.session()
    n = parse_size(nbytes)
    other = ws.inside(ws.root / "neighbour.bin")
    ws.reserve(n)
    measure.timed_read(data)                                   # warm
    size = Path(data).stat().st_size
    argv = dd.argv("/dev/zero", other, bs=MiB, count=-(-n // MiB), conv=["fsync"])
    reads = 0
    proc = None
    try:
        with witness.Witness(data) as w:
            t0 = time.perf_counter()
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    start_new_session=True)
            while True:
                fd = os.open(data, os.O_RDONLY)
                try:
                    measure._read_all(fd, MiB)
                finally:
                    os.close(fd)
                reads += 1
                done = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
                if done is not None:
                    break
            seconds = time.perf_counter() - t0
    finally:
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        other.unlink(missing_ok=True)
    verdict = measure.judge(reads * size / seconds, device_bps=None, witness=w.result, nbytes=reads * size)
    return NeighbourRun(w.result, reads, n, verdict)


def neighbour_claims(run: NeighbourRun, *, show: bool = True) -> list[Claim]:
    w = run.witnessed
    nodev = "; ".join(w.notes) + "." if w.device is None else ""
    claims = [explain.expect(
        "our own counters saw (next to) nothing of the neighbour's write, the device saw all of it: the "
        "difference is someone else's traffic",
        explain.greater("others wrote", w.others_written if w.device is not None else None,
                        "95 % of the neighbour's write", measure.MOSTLY * run.nbytes),
        yes=lambda ev: (f"we read {run.reads:,} times and wrote {format_size(w.own_written or 0)}; the device "
                        f"wrote {format_size(w.device_written)}"),
        no=lambda ev: f"the device wrote only {format_size(w.device_written)} beyond our own bytes",
        why="the neighbour's data went to a different device than our file, or the counters missed it.",
        missing=nodev or "the device's counters could not be read.", show=show)]
    claims.append(explain.expect(
        "the verdict on our reads says DISTURBED, with the amount, instead of a confident label",
        explain.fact("disturbed", w.disturbed),
        yes=lambda ev: run.verdict.reason.split(", so the time")[0],
        no=lambda ev: f"it said: {run.verdict}",
        why="the neighbour's write was below the disturbance floor.",
        missing=nodev or "the device's counters could not be read.", show=show))
    return claims
