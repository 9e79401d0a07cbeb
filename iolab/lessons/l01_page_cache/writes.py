"""Lesson 01, section 5 (write-back): dirty pages and what fsync costs, dd with and without
oflag=dsync, and what hdparm measures (seed 002); the experiments and what their numbers showed,
as claims (the rest of lesson 01 is :mod:`iolab.lessons.l01_page_cache.reads`)."""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from ... import explain, fsinfo, measure, pagecache, recordings, runner, trials, witness, workspace
from .reads import FASTER
from ...errors import ParseError, ToolFailed, ToolMissing
from ...explain import Claim
from ...units import MiB, format_size, parse_size
from ...tools import dd

MEMORY_FS = fsinfo.MEMORY_FS


# --- 5 · write-back: fsync, dd oflag=dsync, hdparm ---------------------------------------------

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


def watched_write(ws, *, fsync: bool, nbytes: int | str = "64MiB", device_bps: float | None = None,
                  name: str = "watched.bin", after: float = 1.0) -> tuple[measure.Measurement, pd.DataFrame]:
    """One write of ``nbytes``, timed, while the machine's Dirty and Writeback (/proc/meminfo) are
    sampled every 20 ms, and for ``after`` seconds once it returned: the Measurement and the samples
    (t, Dirty, Writeback, Cached, event). The file is a new one each time (the previous one is removed
    first): ext4 (auto_da_alloc, fs/ext4/inode.c and file.c) starts writing back, at close(), a file
    that was truncated to zero and rewritten, to protect programs that replace a file's contents without
    fsync; a rewritten file would show write-back at once where a new file shows the kernel's own timing."""
    path = ws.root / name
    if path.exists():
        path.unlink()
    with pagecache.MeminfoSampler(interval=0.02) as s:
        m = measure.timed_write(name, nbytes, ws=ws, fsync=fsync, device_bps=device_bps)
        s.mark("fsync returned" if fsync else "write returned")
        time.sleep(after)
    return m, s.frame()


def writeback_claims(plain: measure.Measurement, synced: measure.Measurement, rates: trials.Trials, *,
                     show: bool = True) -> list[Claim]:
    """What timed writes without fsync and with fsync (same size, same place) showed: the device's
    counters first (what it had written when the clock stopped, for ``plain`` and ``synced``, one
    write of each), then the rates over the interleaved trials ``rates`` (settings "no fsync" and
    "fsync", :func:`writeback_trials`: the rule of :func:`iolab.explain.beyond`) and Dirty."""
    mem = next((r.fstype for r in (plain.after, synced.after) if r is not None and r.fstype in MEMORY_FS), "")
    by = 1.5

    def wrote(m: measure.Measurement) -> int | None:
        return None if m.witness is None or m.witness.device is None else m.witness.device_written

    def nodev(m: measure.Measurement) -> str:
        if mem:
            return f"{mem} has no block device: nothing is ever written to one, and nothing counts it."
        if m.witness is None:
            return f"{measure.NOT_WITNESSED}."
        return ("; ".join(m.witness.notes) or "the kernel's counters could not be read here") + "."

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


# --- 5 · replacing a file without fsync: write-back started at close() ----------------------------

NEW_FILE, REWRITTEN, RENAMED = CLOSE_SETTINGS = ("new file", "truncated and rewritten",
                                                  "new file renamed over an old one")
CLOSE_BY = 2.0      # the new file's least dirty trial must keep this many times the other one's most

# What the kernel's sources (torvalds/linux) say a filesystem does at the last close() of a file that
# was truncated to size 0 and written again without fsync: it starts the write-back of its dirty pages,
# without waiting for it (filemap_flush: WB_SYNC_NONE).
#  ext4: ext4_truncate() (fs/ext4/inode.c) sets EXT4_STATE_DA_ALLOC_CLOSE on an inode truncated to size 0
#        unless the filesystem is mounted noauto_da_alloc; at the last close, ext4_release_file()
#        (fs/ext4/file.c) calls ext4_alloc_da_blocks() (inode.c), which returns at once without delayed-
#        allocation blocks (i_reserved_data_blocks: none under nodelalloc, or data=journal, which clears
#        DELALLOC in fs/ext4/super.c) and otherwise
#        "cheat[s] by calling filemap_flush(), which will map the blocks, and start the I/O, but not
#        actually wait for the I/O to complete". ext4_rename() (fs/ext4/namei.c) calls it too, at
#        rename(), for a file renamed over an existing one. Documentation/admin-guide/ext4.rst,
#        "auto_da_alloc(*), noauto_da_alloc" (the default): for the replace-via-truncate and
#        replace-via-rename patterns of applications that do not fsync; it avoids the "zero-length" files
#        a crash leaves when delayed allocation has not yet written the new data.
#  xfs:  xfs_setattr_size() (fs/xfs/xfs_iops.c) sets XFS_ITRUNCATED on a truncate down; xfs_file_release()
#        (fs/xfs/xfs_file.c) then calls filemap_flush() when delayed blocks are outstanding ("the
#        notorious NULL files problem"). No mount option.
#  btrfs: btrfs_setsize() (fs/btrfs/inode.c) sets BTRFS_INODE_FLUSH_ON_CLOSE on a truncate from a non-zero
#        size to zero; btrfs_release_file() (fs/btrfs/file.c) starts the write-back. No mount option.
# A new file (O_CREAT on a name that did not exist) is never truncated: the VFS drops O_TRUNC for a file
# it has just created (do_open, fs/namei.c), so none of the three flags is set and its pages wait for the
# kernel's own timing.
# rename() of a new file over an existing one, at rename() itself: ext4_rename() (fs/ext4/namei.c) calls
# ext4_alloc_da_blocks() on the renamed file unless the mount says noauto_da_alloc; btrfs_rename()
# (fs/btrfs/inode.c) starts the write-back of a regular file renamed over a non-empty one. iolab found
# no such call in XFS's rename.
FLUSH_AT_CLOSE = {
    "ext4": "ext4, mounted with auto_da_alloc (the default): ext4_truncate() marks a file truncated to size 0, "
            "and its last close() starts the write-back of its delayed-allocation blocks "
            "(ext4_release_file -> ext4_alloc_da_blocks -> filemap_flush, fs/ext4/file.c and inode.c)",
    "xfs": "XFS: a truncate down marks the file (XFS_ITRUNCATED), and its last close() starts the write-back "
           "of its delayed blocks (xfs_file_release -> filemap_flush, fs/xfs/xfs_file.c); there is no option",
    "btrfs": "btrfs: a truncate to size 0 marks the file (BTRFS_INODE_FLUSH_ON_CLOSE), and its last close() "
             "starts its write-back (btrfs_release_file, fs/btrfs/file.c); there is no option",
}


def _ext4_off(options: str) -> str | None:
    """Which of an ext4 mount's options turns its flush at close() and rename() off, or None."""
    opts = {o.strip() for o in options.split(",")}
    if "noauto_da_alloc" in opts:
        return "noauto_da_alloc"
    if "nodelalloc" in opts or "data=journal" in opts:
        return "nodelalloc"
    return None


def close_flush_rule(fstype: str, options: str = "") -> tuple[bool | None, str]:
    """Does ``fstype`` (mounted with ``options``, as /proc/self/mountinfo lists them) start the write-back
    of a file truncated to size 0 and rewritten at its last close()? True, False, or None when iolab
    knows no rule of that filesystem; and why, in words (what the kernel's sources say: see above)."""
    if fstype in MEMORY_FS:
        return None, (f"{fstype} keeps files in memory: no page of it is ever dirty or written back, so there "
                      "is nothing for close() to start and nothing this run could show")
    if fstype == "ext4":
        off = _ext4_off(options)
        if off == "noauto_da_alloc":
            return False, ("this ext4 is mounted noauto_da_alloc: close() leaves a truncated and rewritten "
                           "file's pages to the kernel's own write-back")
        if off:
            return False, ("this ext4 does not delay allocation (nodelalloc or data=journal): there are no "
                           "delayed-allocation blocks for close() to allocate, so it starts no write-back")
        return True, FLUSH_AT_CLOSE["ext4"]
    if fstype in FLUSH_AT_CLOSE:
        return True, FLUSH_AT_CLOSE[fstype]
    if fstype == "overlay":
        return None, ("overlay passes the file to the filesystem beneath it, whose own rule (if any) decides: "
                      "this run shows what it does")
    return None, (f"iolab knows no rule of {fstype or 'this filesystem'} that starts write-back at close(): "
                  "this run shows what it does")


def rename_flush_rule(fstype: str, options: str = "") -> tuple[bool | None, str]:
    """Does ``fstype`` start the write-back of a new file at the rename() that puts it over an existing
    (non-empty) one? True, False, or None when iolab knows no rule; and why (see the sources above)."""
    if fstype in MEMORY_FS:
        return close_flush_rule(fstype, options)
    if fstype == "ext4":
        off = _ext4_off(options)
        if off == "noauto_da_alloc":
            return False, "this ext4 is mounted noauto_da_alloc: rename() starts no write-back"
        if off:
            return False, ("this ext4 does not delay allocation (nodelalloc or data=journal): rename() has no "
                           "delayed-allocation blocks to allocate")
        return True, ("ext4 with auto_da_alloc: rename() over an existing file starts the renamed file's "
                      "write-back (ext4_rename -> ext4_alloc_da_blocks, fs/ext4/namei.c)")
    if fstype == "btrfs":
        return True, ("btrfs: rename() of a file over a non-empty one starts the renamed file's write-back "
                      "(btrfs_rename, fs/btrfs/inode.c)")
    return None, (f"iolab knows no rule of {fstype or 'this filesystem'} that starts write-back at rename(): "
                  "this run shows what it does")


@dataclass
class CloseWrite:
    """One write of :func:`close_flush_trials`: the Measurement (measure.timed_write) and what was still
    dirty of it right after close()."""

    measurement: measure.Measurement
    event: str = "close()"               # what the counts were read right after: close(), or rename()

    @property
    def cachestat(self) -> bool:
        """The file's own pages were counted (cachestat(2), Linux >= 6.5)."""
        return self.measurement.options.get("dirty_pages_after") is not None

    @property
    def still_dirty(self) -> int:
        """Bytes of the write still dirty right after close(): the file's own dirty pages (cachestat), or,
        without cachestat, the machine's Dirty after close() less its Dirty when the file was opened,
        within 0 and the bytes written (a neighbour's writes and the kernel's write-back move it)."""
        o, n = self.measurement.options, self.measurement.nbytes
        if self.cachestat:
            return int(o["dirty_pages_after"]) * pagecache.PAGE_SIZE
        return max(0, min(n, int(o["dirty_after_close"]) - int(o["dirty_at_open"])))

    def row(self) -> dict[str, Any]:
        o = self.measurement.options
        mib = lambda k: None if o.get(k) is None else o[k] / MiB    # noqa: E731
        wb = o.get("writeback_pages_after")
        return {"read after": self.event, "still dirty (MiB)": self.still_dirty / MiB,
                "under write-back (MiB)": None if wb is None else wb * pagecache.PAGE_SIZE / MiB,
                "counted by": "cachestat (this file)" if self.cachestat else "/proc/meminfo (the whole machine)",
                "machine Dirty across it (MiB)": (None if o.get("dirty_after_close") is None else
                                                  (o["dirty_after_close"] - o["dirty_before_close"]) / MiB),
                "machine Writeback across it (MiB)": (None if o.get("writeback_after_close") is None else
                                                      (o["writeback_after_close"] - o["writeback_before_close"])
                                                      / MiB),
                "machine Dirty after it (MiB)": mib("dirty_after_close")}


CLOSE_COLUMNS = ("setting", "trial", "read after", "still dirty (MiB)", "under write-back (MiB)", "counted by",
                 "machine Dirty across it (MiB)", "machine Writeback across it (MiB)")


@dataclass
class CloseFlush(recordings.Outcome):
    """:func:`close_flush_trials`' outcome: ``trials`` (what was still dirty right after each close(), MiB;
    None when it was not run), ``frame`` one row per write, and the filesystem it ran on with its rule."""

    trials: trials.Trials | None = None
    fstype: str = ""
    options: str = ""                    # the mount's options (/proc/self/mountinfo)
    expected: bool | None = None         # close_flush_rule: the filesystem starts write-back at close()
    why: str = ""                        # the rule in words, or why this run cannot show it
    expected_rename: bool | None = None  # rename_flush_rule: ... at rename() over an existing file
    why_rename: str = ""
    nbytes: int = 0
    cachestat: bool = False              # every write's own pages were counted (cachestat(2), Linux >= 6.5)

    @property
    def ran(self) -> bool:
        return self.trials is not None


def close_flush_trials(ws=None, *, nbytes: int | str = "32MiB", repeat: int = 3) -> CloseFlush:
    """Write ``nbytes`` without fsync (a) to a new file, (b) over an existing file opened with O_TRUNC
    (truncated, then rewritten), (c) to a new file then renamed over an existing one, in turn, ``repeat``
    times each (no warm-up: nothing is timed), and read right after each close() (for (c): right after
    the rename()) what is still dirty of it: the file's own pages (cachestat(2)), and the machine's Dirty
    and Writeback (/proc/meminfo, everyone's). Before every write the new files are removed (their dirty
    pages go with them, never written) and the existing ones fsync'd (clean, still cached). Not run on a
    memory filesystem (tmpfs), which never writes back: ``.why`` says so. The experiment needs no tool:
    it runs here in every mode, like the rest of section 5."""
    ws = ws or workspace.session()
    mount = fsinfo.mount_of(ws.root)
    expected, why = close_flush_rule(mount.fstype, mount.options)
    expected_rename, why_rename = rename_flush_rule(mount.fstype, mount.options)
    n = parse_size(nbytes)
    fields = dict(fstype=mount.fstype, options=mount.options, expected=expected, why=why,
                  expected_rename=expected_rename, why_rename=why_rename, nbytes=n)
    if mount.fstype in MEMORY_FS:
        out = CloseFlush("live", "", f"NOT RUN here: {why}.", frame=pd.DataFrame(columns=list(CLOSE_COLUMNS)),
                         **fields)
        print(out.provenance)
        return out
    new, old = ws.inside("new.bin"), ws.inside("replaced.bin")
    tmp, target = ws.inside("renamed.tmp"), ws.inside("renamed.bin")
    made = (new, old, tmp, target)
    for f in (new, tmp):
        f.unlink(missing_ok=True)
    try:
        for f in (old, target):
            ws.make_file(f.name, n)      # the existing files: written and fsync'd

        def settle() -> None:
            for f in (new, tmp):
                f.unlink(missing_ok=True)
            for f in (old, target):     # the previous trial's write-back finished: every page clean
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

        def write(path):
            return lambda: CloseWrite(measure.timed_write(path.name, n, ws=ws))

        def write_and_rename() -> CloseWrite:
            m = measure.timed_write(tmp.name, n, ws=ws)
            before = pagecache.meminfo()
            os.rename(tmp, target)
            after = pagecache.meminfo()     # right after rename(): what rename() itself started
            state = witness.cachestat(target)
            o = dict(m.options, dirty_before_close=before["Dirty"], writeback_before_close=before.get("Writeback"),
                     dirty_after_close=after["Dirty"], writeback_after_close=after.get("Writeback"),
                     dirty_pages_after=None if state is None else state.dirty,
                     writeback_pages_after=None if state is None else state.writeback)
            return CloseWrite(replace(m, path=str(target), options=o), event="rename()")

        t = trials.run({NEW_FILE: write(new), REWRITTEN: write(old), RENAMED: write_and_rename},
                       repeat=repeat, warmup=0, metric=lambda w: w.still_dirty / MiB, higher=True, unit="MiB",
                       disturbed=lambda w: None, between=settle)
    finally:
        for f in made:
            f.unlink(missing_ok=True)
    frame = t.frame[list(CLOSE_COLUMNS)].reset_index(drop=True).round(1)
    out = CloseFlush("live", "", f"LIVE here: {repeat} writes of {format_size(n)} of each kind, in turn, on "
                                 f"{mount.fstype} ({mount.source}) in {ws.root}",
                     frame=frame, trials=t, cachestat=all(w.cachestat for r in t.results.values() for w in r),
                     **fields)
    print(out.provenance)
    return out


def close_flush_claims(result: CloseFlush, *, show: bool = True) -> list[Claim]:
    """What :func:`close_flush_trials` showed, by the one rule (:func:`iolab.explain.beyond`), for the
    file truncated and rewritten (at close()) and for the one renamed over an old one (at rename()), each
    against the new file: where the filesystem's rule starts write-back (or iolab knows none), the new
    file must keep even in its least dirty trial :data:`CLOSE_BY` times what the other kept in its most;
    where the rule is off (noauto_da_alloc, nodelalloc), the two must keep alike
    (:func:`iolab.explain.alike`)."""
    return [_close_claim(result, REWRITTEN, "close() of the file truncated and rewritten", "close()",
                         result.expected, result.why, "ext4 (auto_da_alloc), XFS and btrfs", show=show),
            _close_claim(result, RENAMED, "rename() of a new file over an old one", "rename()",
                         result.expected_rename, result.why_rename, "ext4 (auto_da_alloc) and btrfs", show=show)]


def _close_claim(result: CloseFlush, other: str, what: str, event: str, expected: bool | None, why: str,
                 who: str, *, show: bool) -> Claim:
    t = result.trials
    a = t.values(NEW_FILE) if t is not None else []
    b = t.values(other) if t is not None and other in t.settings else []
    fs = result.fstype or "this filesystem"
    size = format_size(result.nbytes) if result.nbytes else "the write"
    counted = ("counted by cachestat(2), the file's own pages" if result.cachestat else
               "estimated from the machine's Dirty (/proc/meminfo): everyone's pages")
    noisy = ("" if result.cachestat else
             "; the machine's Dirty (/proc/meminfo) counts every program's pages, and other writes and the "
             f"kernel's write-back move it while {event} runs (a kernel with cachestat(2), Linux 6.5, counts "
             "the file's own)")
    spread = lambda rel: lambda ev: f"still dirty of {size}: {explain.spread_text(rel)} ({counted})"  # noqa: E731
    missing = (result.why if not result.ran else "a number was not measured") + "."
    if expected is False:
        rel = explain.alike(NEW_FILE, a, other, b, by=CLOSE_BY, unit="MiB")
        return explain.expect(
            f"{what} started no write-back here ({why}): right after {event} the {other} kept about as much "
            "dirty as the new file",
            rel, yes=spread(rel), no=spread(rel),
            why="the kernel's own write-back took one file's pages (dirty memory above "
                "vm.dirty_background_ratio: other programs' writes count too)" + noisy + ".",
            close=f"what would separate them: more trials, an idle machine{noisy}", missing=missing, show=show)
    rel = explain.beyond(NEW_FILE, a, other, b, by=CLOSE_BY, unit="MiB")
    also = "" if expected else f"{fs} did what {who} do: "
    return explain.expect(
        f"{also}{what} started its write-back at once, while the new file's pages stayed dirty: right after "
        f"{event}, even the new file's least dirty trial kept {CLOSE_BY:g}x the most dirty trial of '{other}'",
        rel, yes=spread(rel), no=spread(rel),
        why=((why + ". ") if expected is None else
             f"{event} started no write-back here (an older kernel, or a mount option iolab did not read), or the "
             "kernel's own write-back took the new file's pages first (dirty memory above "
             "vm.dirty_background_ratio: other programs' writes count too)") + noisy + ".",
        close="what would separate them: more trials, an idle machine" + noisy, missing=missing, show=show)


@dataclass
class DdWrite(recordings.Outcome):
    """:func:`dd_write`'s outcome: ``data`` dd's parsed summary, and where it wrote."""

    fstype: str = ""                     # the filesystem it wrote to (here, or the recording's)

    def row(self) -> dict[str, Any]:
        """One dd run as a trial's row (:func:`iolab.trials.run`): its summary, where it ran, its witness."""
        d = self.data or {}
        return {"bytes": d.get("bytes"), "seconds": d.get("seconds"),
                "mb_per_s": d.get("bytes_per_s", 0) / 1e6, "mode": self.mode, "fstype": self.fstype,
                **measure.witness_row(self.witness, self.witness_note or measure.NOT_WITNESSED)}


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
    if out.recording is not None:
        out.witness = out.recording.witness()
        out.witness_note = out.recording.witness_note
    out.fstype = (out.recording.meta.get("filesystem", {}).get("fstype", "") if out.recording
                  else fsinfo.fstype(ws.root))
    return out


DD_SETTINGS = {"plain": "buffered", "oflag=dsync": "dsync"}     # a trial's setting -> its recording's word


@dataclass
class DdTrials(recordings.Outcome):
    """:func:`dd_trials`' outcome: ``trials`` every dd run (``.frame``: its frame, MB/s), where they wrote."""

    trials: trials.Trials | None = None
    fstype: str = ""


def dd_trials(ws=None, *, count: int = 64, repeat: int = 5, warmup: int = 1, recording: str = "dd/write-64m-tmp",
              quiet: bool = False) -> DdTrials:
    """``dd if=/dev/zero of=F bs=1M count=N`` plain and with ``oflag=dsync``, in turn (plain, dsync, plain,
    …), ``repeat`` times after ``warmup`` runs of each that are not counted; a run the witness found
    disturbed is run again (bounded). Live when dd is here, else (or with IOLAB_MODE=replay) the recorded
    runs ``<recording>-<buffered|dsync>-t<k>`` (t0: the warm-up), in the order they ran (recorders/l01_dd.py
    makes them). ``.parts``: every run's DdWrite, in the order of ``.trials.frame``."""
    ws = ws or workspace.session()
    replay = recordings.replay_reason(("dd",)) is not None
    if replay:          # the recorded set decides how many runs there are
        warmup = 1 if _recorded(f"{recording}-buffered-t0") else 0
        repeat = 0
        while _recorded(f"{recording}-buffered-t{repeat + 1}"):
            repeat += 1
        if not repeat:
            raise FileNotFoundError(f"no recorded dd trials {recording}-buffered-t1 in {recordings.data_dir()}")
    made = {s: 0 if warmup else 1 for s in DD_SETTINGS}     # the next run's number: t0 is the warm-up
    every: list[DdWrite] = []

    def one(setting: str):
        def go() -> DdWrite:
            kind = DD_SETTINGS[setting]
            out = dd_write("/dev/zero", ws.root / "dd.bin", count=count, dsync=kind == "dsync",
                           recording=f"{recording}-{kind}-t{made[setting]}", ws=ws, quiet=True)
            made[setting] += 1
            every.append(out)
            return out
        return go

    # a replay cannot run a disturbed run again: the recording says whether it was
    t = trials.run({s: one(s) for s in DD_SETTINGS}, repeat=repeat, warmup=warmup,
                   metric=lambda o: o.data["bytes_per_s"] / 1e6, higher=True, unit="MB/s",
                   reruns=0 if replay else None)
    out = recordings.combine(every, t.frame, cls=DdTrials, trials=t, fstype=every[0].fstype)
    if out.mode == "replay":
        out.provenance = (f"{every[0].provenance}. The set: {len(every)} recorded runs ({recording}-*), plain "
                          "and oflag=dsync in turn, replayed in the order they ran")
    elif out.mode == "live":
        out.provenance = (f"LIVE here: {len(every)} dd runs of {count} MiB on {out.fstype}, plain and "
                          "oflag=dsync in turn")
    if not quiet:
        print(out.provenance)
    return out


def _recorded(name: str) -> bool:
    try:
        recordings.load(name)
    except FileNotFoundError:
        return False
    return True


def dd_sync_claims(runs: DdTrials, *, show: bool = True) -> list[Claim]:
    """Plain dd against dd oflag=dsync (each write waits for the device), over every counted run of
    :func:`dd_trials`, by the one rule of :func:`iolab.explain.beyond`."""
    t = runs.trials
    mixed = runs.mode not in ("live", "replay")
    fstype = runs.fstype
    mem = fstype if fstype in MEMORY_FS else ""
    rel = t.relation("plain", "oflag=dsync", by=FASTER)
    if mixed:
        rel = explain.beyond("plain", [], "oflag=dsync", [], by=FASTER, unit="MB/s")

    def apart(ev) -> str:
        return f"medians {ev['plain'] / ev['oflag=dsync']:.1f}x apart" if ev["oflag=dsync"] else ""
    return [explain.expect(
        "dd with oflag=dsync wrote at most half as fast as plain dd: even the fastest dsync run against the "
        "slowest plain one",
        rel,
        yes=lambda ev: f"{explain.spread_text(rel)} ({apart(ev)})",
        no=lambda ev: f"{explain.spread_text(rel)}: even the fastest plain run was not {FASTER:g}x the slowest "
                      f"with dsync ({apart(ev)})",
        why=(f"{mem} has no device: a synchronous write has nothing to wait for." if mem else
             "each synchronous write waits until the device reports the data safe, and a write cache below "
             "the page cache (a VM's host, a RAID controller, the disk) can report that at once."),
        close=(f"{mem} has no device: a synchronous write has nothing to wait for, so the two are the same "
               "work and their spreads should overlap" if mem else
               "what would separate them: more runs, a larger count (each run lasts a fraction of a second), "
               "an idle machine"),
        missing="some runs were replayed and others ran here: they are not comparable.",
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
    if recordings.replay_reason() is not None:       # the mode replays every run of a tool: hdparm has no recording
        print("IOLAB_MODE=replay: hdparm is not run (it has no recording to replay); seed 002's figures above "
              "are what it measured there.")
        return None
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
