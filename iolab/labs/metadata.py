"""Lesson 05 (mdtest) and the instructor's class data: the measurements turned into sentences.

Every explanation here is chosen by what was measured and by the facts of the filesystem it was
measured on (:class:`FsFacts`: its type, its mount options, whether an ext4 has a journal), live or
from a recording's meta. The mechanisms, checked in the sources:

* mdtest 3.3 and 4.0 ``-y`` sets the "fsync after each write" hint only inside the branch of
  ``create_file`` (src/mdtest.c) that writes ``-w`` bytes; with ``-w 0`` (the default) no file is
  written and none is synced (:func:`iolab.tools.mdtest.expected_fsyncs`).
* ext4 frees a block in ``ext4_mb_clear_bb`` (fs/ext4/mballoc.c). With a journal, the freed block
  waits for the transaction to commit, and a ``discard`` mount sends the device its discard (TRIM)
  after the commit, outside the system call. Without a journal there is no transaction to wait
  for: with ``discard`` the discard is issued, and waited for, inside the call that freed the
  block (``unlink`` of a file that owns a block, ``rmdir`` of a directory: every ext4 directory
  owns one). An empty file owns no block, so its ``unlink`` frees nothing.
* ext4 ``fsync`` (fs/ext4/fsync.c): with a journal it waits for the commit of the transaction that
  holds the file's metadata; without one it writes the file's data and inode itself; both then
  flush the device's write cache. tmpfs has no device: its fsync has nothing to do.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import explain, fsinfo

EXT = ("ext4", "ext3", "ext2")


# --- the facts of a filesystem ------------------------------------------------------------------

@dataclass(frozen=True)
class FsFacts:
    """What an explanation of a metadata rate needs to know about the filesystem it ran on."""

    path: str
    fstype: str
    options: tuple[str, ...] | None = None     # mount options (None: not known, e.g. an old recording)
    journal: bool | None = None                # ext2/3/4 only: has it a journal? (None: not known)

    @property
    def memory(self) -> bool:
        return self.fstype in fsinfo.MEMORY_FS

    @property
    def ext(self) -> bool:
        return self.fstype in EXT

    @property
    def discard(self) -> bool | None:
        return None if self.options is None else "discard" in self.options

    @property
    def sync_mount(self) -> bool | None:
        return None if self.options is None else bool({"sync", "dirsync"} & set(self.options))

    @property
    def discard_in_call(self) -> bool | None:
        """Does freeing a block make the system call wait for a discard sent to the device?"""
        if not self.ext:
            return False if self.memory else None
        if self.discard is None:
            return None
        if not self.discard:
            return False
        return None if self.journal is None else not self.journal

    def describe(self) -> str:
        """'ext4 without a journal, mounted with discard' and the like."""
        if self.memory:
            return f"{self.fstype} (memory)"
        bits = [self.fstype]
        if self.ext and self.journal is not None:
            bits.append("with a journal" if self.journal else "without a journal")
        if self.options is not None:
            shown = [o for o in ("discard", "sync", "dirsync") if o in self.options]
            bits.append(f"mounted with {', '.join(shown)}" if shown else "mounted without discard")
        return ", ".join(bits[:1]) + (" " + ", ".join(bits[1:]) if len(bits) > 1 else "")


def ext4_journal(mount: fsinfo.Mount) -> bool | None:
    """Whether an ext2/3/4 mount has a journal: /sys/fs/ext4/<device>/journal_task names the
    journal thread, or says ``<none>``. None when it cannot be read (not ext4, no sysfs)."""
    if mount.fstype not in EXT:
        return None
    dev = os.path.basename(os.path.realpath(mount.source)) if mount.source.startswith("/") else mount.source
    try:
        text = Path(f"/sys/fs/ext4/{dev}/journal_task").read_text().strip()
    except OSError:
        return None
    return text != "<none>"


def facts(path: str | os.PathLike[str]) -> FsFacts:
    """The facts of the filesystem that serves ``path`` on this machine."""
    m = fsinfo.mount_of(path)
    return FsFacts(str(path), m.fstype, tuple(m.options.split(",")), ext4_journal(m))


def recorded_facts(meta_fs: Mapping[str, Any], path: str | None = None) -> FsFacts:
    """The facts kept in a recording's ``filesystem`` meta (older recordings lack options/journal)."""
    opts = meta_fs.get("options")
    return FsFacts(path or str(meta_fs.get("path", "?")), str(meta_fs.get("fstype", "?")),
                   tuple(opts.split(",")) if isinstance(opts, str) else None, meta_fs.get("journal"))


def facts_of(outcome, path: str | os.PathLike[str]) -> FsFacts:
    """Facts of where ``outcome`` (a live_or_recorded Outcome) ran: here when live, else its meta."""
    if outcome.mode == "live":
        return facts(path)
    return recorded_facts(outcome.recording.meta.get("filesystem", {}), str(path))


def fs_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``recordings.save(..., fs_facts=...)`` keeps beside the mount options: the journal."""
    return {"journal": facts(path).journal}


# --- section 1: what -y does ---------------------------------------------------------------------

def fsyncs(counts: pd.DataFrame, name: str = "fsync") -> int:
    return int(counts.loc[counts["syscall"] == name, "calls"].sum())


def explain_syncs(seed: pd.DataFrame, with_data: pd.DataFrame, *, expected_seed: int, expected_data: int,
                  with_data_flags: str = "-w 4096") -> list[explain.Claim]:
    """strace's fsync counts of the seed's command and of the same command with ``-w``, against what
    mdtest's source says they are (:func:`iolab.tools.mdtest.expected_fsyncs`)."""
    n0, n1 = fsyncs(seed), fsyncs(with_data)
    others0 = int(seed.loc[seed["syscall"].isin(["fdatasync", "sync", "syncfs", "sync_file_range"]), "calls"].sum())
    removals = int(seed.loc[seed["syscall"].isin(["unlink", "rmdir"]), "calls"].sum())
    why = ("this mdtest is not 3.3 or 4.0, or not the POSIX backend: read create_file() in its "
           "src/mdtest.c to see where it syncs")
    claims = [explain.expect(
        f"the seed's command makes {expected_seed} fsync calls: -y syncs only a file mdtest wrote, and "
        "without -w it writes none",
        explain.fact("fsync count as expected", n0 == expected_seed and others0 == 0),
        yes=f"strace counted {n0} fsync and {others0} other sync calls, among {removals} unlink and rmdir "
            "calls: the -y in this command asked for nothing",
        no=f"strace counted {n0} fsync and {others0} other sync calls", why=why)]
    claims.append(explain.expect(
        f"with {with_data_flags} every file is written and then synced: {expected_data} fsync calls "
        "(ranks x files x iterations)",
        explain.fact("fsync count as expected", n1 == expected_data),
        yes=f"strace counted {n1}", no=f"strace counted {n1}", why=why))
    return claims


# --- section 3: rates on each filesystem ---------------------------------------------------------

def rate(frame: pd.DataFrame, operation: str) -> float | None:
    part = frame[(frame["operation"] == operation) & (frame["unit"] == "ops/s")]
    return float(part["mean"].iloc[0]) if len(part) else None


def explain_rates(frames: Mapping[str, pd.DataFrame], fs: Mapping[str, FsFacts]) -> list[explain.Claim]:
    """Section 3 (the seed's command on each filesystem): stat against creation on each, and
    creation in memory against creation on each disk-backed filesystem. ``frames``/``fs`` are keyed
    by the same labels."""
    claims = []
    for label, df in frames.items():
        st, cr = rate(df, "file stat"), rate(df, "file creation")
        claims.append(explain.expect(
            f"on {label}, a file stat runs at least twice as fast as a file creation",
            explain.greater("stat", st, "create", cr, by=2),
            yes=lambda e: f"{e['stat']:,.0f} stats/s against {e['create']:,.0f} creations/s: a stat of a file "
                          "just created is answered from the kernel's inode and dentry caches, a creation "
                          "changes the directory",
            no=lambda e: f"it ran at {e['stat']:,.0f}/s against {e['create']:,.0f} creations/s",
            why="with 10 files per rank a phase lasts well under a millisecond, so one interruption of a "
                "rank (another job on the same cores) weighs on a whole iteration's rate"))
    mem = [k for k, f in fs.items() if f.memory and k in frames]
    for label in [k for k, f in fs.items() if not f.memory and k in frames]:
        for m in mem:
            a, b = rate(frames[m], "file creation"), rate(frames[label], "file creation")
            f = fs[label]
            claims.append(explain.expect(
                f"empty files are created at least twice as fast in memory ({m}) as on {label}",
                explain.greater("memory", a, "disk", b, by=2),
                yes=lambda e, f=f: f"{e['memory']:,.0f} against {e['disk']:,.0f} per second: on {f.describe()}, "
                                   "each creation also updates the filesystem's own structures (inode and "
                                   "block bitmaps, the directory's block" + (", the journal" if f.journal else "")
                                   + ") in memory, to be written later",
                no=lambda e: f"memory created {e['memory']:,.0f} and {label} {e['disk']:,.0f} per second",
                why="without -w nothing waits for the device: an ext4 creation is memory work too, only "
                    "more of it, and a fast CPU hides the difference"))
    return claims


# --- section 4: -w 4096 -y -----------------------------------------------------------------------

def explain_fsync_cost(plain: Mapping[str, pd.DataFrame], synced: Mapping[str, pd.DataFrame],
                       fs: Mapping[str, FsFacts]) -> list[explain.Claim]:
    """Creation rate without data (the seed's command: 0 fsync) against ``-w 4096 -y`` (one write
    and one fsync per file), per filesystem label."""
    claims = []
    for label in [k for k in synced if k in plain]:
        f = fs[label]
        a, b = rate(plain[label], "file creation"), rate(synced[label], "file creation")
        if f.memory:
            claims.append(explain.expect(
                f"on {label}, a write and an fsync per file cost little: creation stays within 3x of the "
                "rate without them",
                explain.greater("with", b, "without", a, by=1 / 3),
                yes=lambda e: f"{e['without']:,.0f} -> {e['with']:,.0f} creations/s: tmpfs has no device, its "
                              "fsync returns at once; what is left is copying 4 KiB into a new page",
                no=lambda e: f"creation fell from {e['without']:,.0f} to {e['with']:,.0f} per second",
                why="a busy machine: each phase of 10 files lasts a fraction of a millisecond"))
        else:
            how = ("it waits for the journal to commit the file's metadata, then flushes the device's cache"
                   if f.journal else
                   "this ext4 has no journal: fsync writes the file's data block and its inode itself, then "
                   "flushes the device's cache" if f.journal is False and f.ext else
                   "it returns only when the file's data and metadata are on the device")
            claims.append(explain.expect(
                f"on {label}, file creation is at least twice as slow when each file is written and fsynced",
                explain.greater("without", a, "with", b, by=2),
                yes=lambda e, how=how: f"{e['without']:,.0f} -> {e['with']:,.0f} creations/s: each fsync "
                                       f"is a round trip to the device ({how})",
                no=lambda e: f"creation went from {e['without']:,.0f} to {e['with']:,.0f} per second",
                why="a device with a fast, battery-backed or host-side write cache acknowledges a flush "
                    "almost at once; a virtual disk's flush may never reach a physical one"))
    return claims


# --- section 5: the calls behind one file --------------------------------------------------------

def _call(calls: pd.DataFrame, syscall: str, nth: int = 0) -> float | None:
    d = calls.loc[calls["syscall"] == syscall, "duration"]
    return float(d.iloc[nth]) if len(d) > nth else None


def explain_one_file(traces: Mapping[str, pd.DataFrame], fs: Mapping[str, FsFacts]) -> list[explain.Claim]:
    """One mdtest file (4 KiB, -y) traced with strace -T on each filesystem."""
    claims = []
    for label, calls in traces.items():
        f = fs[label]
        fsync, unlink, create = _call(calls, "fsync"), _call(calls, "unlink"), _call(calls, "openat")
        rest = float(calls.loc[calls["syscall"].isin(["openat", "lseek", "write", "close"]), "duration"].sum())
        if f.memory:
            claims.append(explain.expect(
                f"on {label}, fsync costs no more than the file's other calls together: there is no device",
                explain.greater("others", rest, "fsync", fsync),
                yes=lambda e: f"fsync {e['fsync'] * 1e6:,.0f} µs, openat + lseek + write + close "
                              f"{e['others'] * 1e6:,.0f} µs",
                no=lambda e: f"fsync took {e['fsync'] * 1e6:,.0f} µs, the other calls {e['others'] * 1e6:,.0f} µs",
                why="strace stops the process at every call; on a busy machine any call can wait for a CPU"))
            continue
        creating = calls[calls["syscall"].isin(["openat", "lseek", "write", "close"])]
        slowest = creating.loc[creating["duration"].idxmax()] if len(creating) else None
        cpu = slowest is not None and slowest["syscall"] in ("lseek", "close") and fsync is not None \
            and slowest["duration"] > fsync
        why = (f"the slowest of the other calls was {slowest['syscall']} ({slowest['duration'] * 1e6:,.0f} µs), "
               "which never waits for a device: the process waited for a CPU (strace -T counts that time too, "
               "and a busy machine makes any call wait)" if cpu else
               "a device (or a VM host) that acknowledges a cache flush at once makes fsync cheap")
        claims.append(explain.expect(
            f"on {label}, fsync takes longer than creating, writing and closing the file together",
            explain.greater("fsync", fsync, "others", rest),
            yes=lambda e: f"fsync {e['fsync'] * 1e6:,.0f} µs, openat + lseek + write + close "
                          f"{e['others'] * 1e6:,.0f} µs: only fsync waits for the device",
            no=lambda e: f"fsync took {e['fsync'] * 1e6:,.0f} µs, the other calls {e['others'] * 1e6:,.0f} µs",
            why=why))
        claims.append(_unlink_claim(label, f, unlink=unlink, create=create, fsync=fsync))
    return claims


def _unlink_claim(label: str, f: FsFacts, *, unlink: float | None, create: float | None,
                  fsync: float | None) -> explain.Claim:
    if f.discard_in_call:
        return explain.expect(
            f"on {label}, unlink of this file, which owns a 4 KiB block, takes longer than creating it",
            explain.greater("unlink", unlink, "openat", create),
            yes=lambda e: f"unlink {e['unlink'] * 1e6:,.0f} µs, openat(O_CREAT) {e['openat'] * 1e6:,.0f} µs: "
                          f"this is {f.describe()}, so freeing the block sends the device a discard and "
                          "waits for it inside unlink",
            no=lambda e: f"unlink took {e['unlink'] * 1e6:,.0f} µs and openat {e['openat'] * 1e6:,.0f} µs",
            why="the device answered the discard quickly this time: its cost is the device's (here a "
                "virtual disk, whose host decides)")
    reason = (f"this is {f.describe()}: " + (
        "the journal holds the freed block until its commit, and the discard is sent after it, outside "
        "the call" if f.journal and f.discard else
        "a freed block is only marked free in the block bitmap, to be written later" if f.discard is False else
        "how it frees blocks is not known here"))
    return explain.expect(
        f"on {label}, unlink of this file costs less than its fsync",
        explain.greater("fsync", fsync, "unlink", unlink),
        yes=lambda e: f"unlink {e['unlink'] * 1e6:,.0f} µs, fsync {e['fsync'] * 1e6:,.0f} µs; {reason}",
        no=lambda e: f"unlink took {e['unlink'] * 1e6:,.0f} µs and fsync {e['fsync'] * 1e6:,.0f} µs",
        why="when a filesystem's facts are not what this lesson read (its journal, its discard "
            "option), the freed block can cost a request to the device inside unlink; the mount "
            "options are in iolab.fsinfo.mount_of(path).options")


# --- section 6: what removal costs ---------------------------------------------------------------

def removal_summary(calls: pd.DataFrame) -> pd.DataFrame:
    """Per syscall and item (file, directory, tree directory): how many calls, median and max µs."""
    g = calls.groupby(["syscall", "item"], sort=False)["duration"]
    out = g.agg(calls="count", median_us="median", max_us="max").reset_index()
    out[["median_us", "max_us"]] *= 1e6
    return out


def _median(calls: pd.DataFrame, syscall: str, item: str) -> float | None:
    d = calls.loc[(calls["syscall"] == syscall) & (calls["item"] == item), "duration"]
    return float(d.median()) if len(d) else None


def explain_removals(label: str, calls: pd.DataFrame, f: FsFacts, *, files_written: bool = False) -> explain.Claim:
    """rmdir of mdtest's directories against unlink of its files, from a -T trace of the whole run.

    ``files_written``: the files got -w bytes and an fsync, so each owns a block too (then the
    unlinks are expected to cost what the rmdirs cost wherever a freed block costs a discard).
    """
    rmdir, unlink = _median(calls, "rmdir", "directory"), _median(calls, "unlink", "file")
    us = lambda e: f"median rmdir {e['rmdir'] * 1e6:,.0f} µs, median unlink {e['unlink'] * 1e6:,.0f} µs"  # noqa: E731
    inside = f.discard_in_call
    if inside and not files_written:
        return explain.expect(
            f"on {label}, removing a directory takes at least 3x as long as removing an empty file",
            explain.greater("rmdir", rmdir, "unlink", unlink, by=3),
            yes=lambda e: f"{us(e)}. This is {f.describe()}: every ext4 directory owns a block, and "
                          "freeing it sends the device a discard (TRIM) that rmdir waits for; an empty "
                          "file owns no block, so its unlink frees nothing",
            no=lambda e: us(e),
            why="the device answered its discards quickly this time: the cost is the device's (a "
                "virtual disk's depends on its host), not the filesystem's")
    if inside and files_written:
        return explain.expect(
            f"on {label}, removing a written file costs about as much as removing a directory: each frees a block",
            explain.greater("unlink", unlink, "rmdir", rmdir, by=1 / 3),
            yes=lambda e: f"{us(e)}: on {f.describe()}, both calls wait for the discard of the block they free",
            no=lambda e: us(e),
            why="discards of neighbouring blocks can be merged, and a device answers some faster than others")
    if f.memory:
        reason = "in memory nothing is freed on a device"
    elif f.ext and f.discard is False:
        reason = f"on {f.describe()}, a freed block is only marked free in the bitmap"
    elif f.ext and f.journal:
        reason = (f"on {f.describe()}, the freed block waits for the journal's commit, and so does its "
                  "discard: outside the call")
    else:
        reason = f"{f.describe()}: the lesson does not know how it frees a block"
    return explain.expect(
        f"on {label}, removing a directory takes less than 3x as long as removing a file",
        explain.greater("unlink", unlink, "rmdir", rmdir, by=1 / 3),
        yes=lambda e: f"{us(e)}; {reason}",
        no=lambda e: us(e),
        why=("something else waits inside rmdir here: on a network or parallel filesystem each removal is "
             "a request to a server, and a directory's can take more of them") if not (f.ext or f.memory) else
            "a directory's removal updates the parent's link count and its own inode too; on a busy machine "
            "a handful of slow calls moves a median of few calls")


def explain_removal_rates(label: str, frame: pd.DataFrame, f: FsFacts) -> explain.Claim:
    """mdtest's own removal rates (section 3) read the same way as the trace."""
    d, fr = rate(frame, "directory removal"), rate(frame, "file removal")
    if f.discard_in_call:
        return explain.expect(
            f"mdtest's rates on {label} agree: directory removal at least 3x slower than file removal",
            explain.greater("files", fr, "directories", d, by=3),
            yes=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
            no=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
            why="the discards were cheap during this run")
    return explain.expect(
        f"mdtest's rates on {label} agree: directory removal within 3x of file removal",
        explain.greater("directories", d, "files", fr, by=1 / 3),
        yes=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
        no=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
        why="with 10 items per rank a phase lasts well under a millisecond: one slow call, or another "
            "job on the same cores, weighs on a whole iteration")


# --- section 7: many small files against one stream ----------------------------------------------

def explain_small_files(n: int, size: int, per_second: float, stream_mib_s: float) -> explain.Claim:
    small, stream = n / per_second, n * size / (stream_mib_s * 2 ** 20)
    return explain.expect(
        f"{n:,} small files, each created, written and fsynced, take at least 10x longer than the same "
        "bytes written as one stream",
        explain.greater("small files", small, "one stream", stream, by=10),
        yes=lambda e: f"{e['small files']:,.1f} s against {e['one stream']:,.1f} s",
        no=lambda e: f"{e['small files']:,.1f} s against {e['one stream']:,.1f} s",
        why="a device that acknowledges each flush at once makes an fsync per file almost free; "
            "on a parallel filesystem the metadata server's round trip stays")
