"""Lesson 05 (mdtest) and the instructor's class data: the measurements turned into sentences.

Every explanation here is chosen by what was measured and by the facts of the filesystem it was
measured on (:class:`FsFacts`: its type, its mount options, whether an ext4 has a journal), live or
from a recording's meta. The mechanisms, checked in the sources:

* mdtest 3.3 and 4.0 ``-y`` sets the "fsync after each write" hint only inside the branch of
  ``create_file`` (src/mdtest.c) that writes ``-w`` bytes; with ``-w 0`` (the default) no file is
  written and none is synced (:func:`iolab.tools.mdtest.expected_fsyncs`).
* ext4 frees a block in ``ext4_mb_clear_bb`` (fs/ext4/mballoc.c). With a journal, the freed block
  waits for the transaction to commit, and a ``discard`` mount sends the device its discard (TRIM)
  after the commit, outside the system call (from a kernel worker the commit queues,
  ``ext4_discard_work``, since Linux 5.14; from the journal's commit thread before). Without a
  journal there is no transaction to wait for: with ``discard`` the discard is issued, and waited
  for, inside the call that freed the block (``unlink`` of a file that owns a block, ``rmdir`` of a
  directory: every ext4 directory owns one). An empty file owns no block, so its ``unlink`` frees
  nothing. The device's stat file counts the discards (fields 12-15, Linux 4.18+): the lesson's
  witnessed phases (:func:`phases_claims`) show them during the remove phase or after it; a device
  whose ``queue/discard_max_bytes`` is 0 takes none, whatever the mount option.
* ext4 ``fsync`` (fs/ext4/fsync.c): with a journal it waits for the commit of the transaction that
  holds the file's metadata; without one it writes the file's data and inode itself; both then
  flush the device's write cache. tmpfs has no device: its fsync has nothing to do.

Not modelled: an ext4 mounted ``data=writeback`` frees a file's data blocks without waiting for the
commit (so with ``discard`` its unlink can wait for a discard too); :class:`FsFacts` treats every
journalled ext4 alike.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from .. import explain, fsinfo, mpi, recordings, runner, witness, workspace
from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run
from ..tools import mdtest, strace
from ..units import format_size

EXT = ("ext4", "ext3", "ext2")
# section 6's witnessed phases: the seed's command with one iteration and more items, so that the
# device's counters rise clearly above one file's noise (mdtest -n 100: each rank 100 files, 100 dirs)
PHASE_RUN = mdtest.Options(files=100, iterations=1)


# --- the facts of a filesystem ------------------------------------------------------------------

@dataclass(frozen=True)
class FsFacts:
    """What an explanation of a metadata rate needs to know about the filesystem it ran on."""

    path: str
    fstype: str
    options: tuple[str, ...] | None = None     # mount options (None: not known, e.g. an old recording)
    journal: bool | None = None                # ext2/3/4 only: has it a journal? (None: not known)
    discard_max: int | None = None             # the device's queue/discard_max_bytes (0: it takes no discard)

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
        if not self.discard or self.discard_max == 0:
            return False
        return None if self.journal is None else not self.journal

    @property
    def discards(self) -> bool | None:
        """Does freeing a block send the device a discard at all (in the call or after a commit)?"""
        if self.memory:
            return False
        if not self.ext or self.discard is None:
            return None
        return bool(self.discard) and self.discard_max != 0

    @property
    def commit_s(self) -> float | None:
        """How often a journalled ext4 commits (mount option commit=N, default 5 s); None without a journal."""
        if not (self.ext and self.journal):
            return None
        for o in self.options or ():
            if o.startswith("commit="):
                try:
                    return float(o.partition("=")[2]) or 5.0
                except ValueError:
                    pass
        return 5.0

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
        if self.discard and self.discard_max == 0:
            bits.append("on a device that takes no discard")
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


def discard_max_bytes(path: str | os.PathLike[str]) -> int | None:
    """The largest discard the block device behind ``path`` accepts (``queue/discard_max_bytes`` of
    the disk; 0: it takes none, and a ``discard`` mount option then sends nothing), or None where
    there is no block device or no such file."""
    d = witness.block_device(path)
    if d is None:
        return None
    for q in (d / "queue", d.parent / "queue"):          # a partition's queue is its disk's
        try:
            return int((q / "discard_max_bytes").read_text())
        except (OSError, ValueError):
            continue
    return None


def facts(path: str | os.PathLike[str]) -> FsFacts:
    """The facts of the filesystem that serves ``path`` on this machine."""
    m = fsinfo.mount_of(path)
    return FsFacts(str(path), m.fstype, tuple(m.options.split(",")), ext4_journal(m), discard_max_bytes(path))


def recorded_facts(meta_fs: Mapping[str, Any], path: str | None = None) -> FsFacts:
    """The facts kept in a recording's ``filesystem`` meta (older recordings lack options, journal,
    discard_max_bytes)."""
    opts = meta_fs.get("options")
    return FsFacts(path or str(meta_fs.get("path", "?")), str(meta_fs.get("fstype", "?")),
                   tuple(opts.split(",")) if isinstance(opts, str) else None, meta_fs.get("journal"),
                   meta_fs.get("discard_max_bytes"))


def facts_of(outcome, path: str | os.PathLike[str]) -> FsFacts:
    """Facts of where ``outcome`` (a live_or_recorded Outcome) ran: here when live, else its meta."""
    if outcome.mode == "live":
        return facts(path)
    return recorded_facts(outcome.recording.meta.get("filesystem", {}), str(path))


def settle_s(f: FsFacts) -> float:
    """How long to keep watching the device after the last mdtest phase: a journalled ext4 sends its
    commit (and the discards of the blocks it freed) up to one commit interval later; 0 otherwise."""
    c = f.commit_s
    return 0.0 if c is None else 1.5 * c


def fs_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``recordings.save(..., fs_facts=...)`` keeps beside the mount options: the journal and
    the device's discard_max_bytes."""
    f = facts(path)
    return {"journal": f.journal, "discard_max_bytes": f.discard_max}


# --- section 1: what -y does ---------------------------------------------------------------------

def fsyncs(counts: pd.DataFrame, name: str = "fsync") -> int:
    return int(counts.loc[counts["syscall"] == name, "calls"].sum())


def syncs_claims(seed: pd.DataFrame, with_data: pd.DataFrame, *, expected_seed: int, expected_data: int,
                  with_data_flags: str = "-w 4096", show: bool = True) -> list[explain.Claim]:
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
        no=f"strace counted {n0} fsync and {others0} other sync calls", why=why, show=show)]
    claims.append(explain.expect(
        f"with {with_data_flags} every file is written and then synced: {expected_data} fsync calls "
        "(ranks x files x iterations)",
        explain.fact("fsync count as expected", n1 == expected_data),
        yes=f"strace counted {n1}", no=f"strace counted {n1}", why=why, show=show))
    return claims


# --- section 3: rates on each filesystem ---------------------------------------------------------

def rate(frame: pd.DataFrame, operation: str) -> float | None:
    part = frame[(frame["operation"] == operation) & (frame["unit"] == "ops/s")]
    return float(part["mean"].iloc[0]) if len(part) else None


def rates_claims(frames: Mapping[str, pd.DataFrame], fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
    """Section 3 (the seed's command on each filesystem): stat against creation on each, and
    creation in memory against creation on each disk-backed filesystem. ``frames``/``fs`` are keyed
    by the same labels."""
    claims = []
    for label, df in frames.items():
        st, cr = rate(df, "file stat"), rate(df, "file creation")
        facts = fs.get(label)
        kind = fsinfo.KINDS.get(facts.fstype, "") if facts is not None else ""
        local = kind.startswith(("local", "memory"))
        served = ("a stat of a file just created is answered from the kernel's inode and dentry caches on this "
                  "local filesystem, a creation changes the directory" if local else
                  f"on {facts.fstype if facts else 'this filesystem'} a stat may still ask a server (NFS "
                  "revalidates attributes, Lustre glimpses the file's size, CephFS needs the inode's capabilities): "
                  "here it was cheaper than a creation all the same")
        claims.append(explain.expect(
            f"on {label}, a file stat runs at least twice as fast as a file creation",
            explain.greater("stat", st, "create", cr, by=2),
            yes=lambda e, served=served: f"{e['stat']:,.0f} stats/s against {e['create']:,.0f} creations/s: {served}",
            no=lambda e: f"it ran at {e['stat']:,.0f}/s against {e['create']:,.0f} creations/s",
            why="with 10 files per rank a phase lasts well under a millisecond, so one interruption of a "
                "rank (another job on the same cores) weighs on a whole iteration's rate", show=show))
    mem = [k for k, f in fs.items() if f.memory and k in frames]
    for label in [k for k, f in fs.items() if not f.memory and k in frames]:
        for m in mem:
            a, b = rate(frames[m], "file creation"), rate(frames[label], "file creation")
            f = fs[label]
            claims.append(explain.expect(
                f"empty files are created at least twice as fast in memory ({m}) as on {label}",
                explain.greater("memory", a, "disk", b, by=2),
                yes=lambda e, f=f: f"{e['memory']:,.0f} against {e['disk']:,.0f} per second: on {f.describe()}, "
                                   "each creation also updates the filesystem's own structures (the inode "
                                   "bitmap and table, the directory's block" + (", the journal" if f.journal else "")
                                   + ") in memory, to be written later",
                no=lambda e: f"memory created {e['memory']:,.0f} and {label} {e['disk']:,.0f} per second",
                why="without -w nothing waits for the device: an ext4 creation is memory work too, only "
                    "more of it, and a fast CPU hides the difference", show=show))
    return claims


# --- section 4: -w 4096 -y -----------------------------------------------------------------------

def fsync_cost_claims(plain: Mapping[str, pd.DataFrame], synced: Mapping[str, pd.DataFrame],
                       fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
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
                why="a busy machine: each phase of 10 files lasts a fraction of a millisecond", show=show))
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
                    "almost at once; a virtual disk's flush may never reach a physical one", show=show))
    return claims


# --- section 5: the calls behind one file --------------------------------------------------------

def _call(calls: pd.DataFrame, syscall: str, nth: int = 0) -> float | None:
    d = calls.loc[calls["syscall"] == syscall, "duration"]
    return float(d.iloc[nth]) if len(d) > nth else None


def one_file_claims(traces: Mapping[str, pd.DataFrame], fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
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
                why="strace stops the process at every call; on a busy machine any call can wait for a CPU", show=show))
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
            why=why, show=show))
        quiet = calls.loc[calls["syscall"].isin(["lseek", "close", "newfstatat"]), "duration"]
        claims.append(_unlink_claim(label, f, unlink=unlink, create=create, fsync=fsync,
                                    quiet=float(quiet.median()) if len(quiet) else None))
    return claims


def _unlink_claim(label: str, f: FsFacts, *, unlink: float | None, create: float | None,
                  fsync: float | None, quiet: float | None = None) -> explain.Claim:
    if f.discard_in_call:
        why = ("the device answered the discard quickly this time: its cost is the device's (here a "
               "virtual disk, whose host decides)")
        if None not in (unlink, create, quiet) and unlink > 3 * quiet and create >= unlink:
            why = (f"unlink did wait ({unlink * 1e6:,.0f} µs, against {quiet * 1e6:,.0f} µs for the calls that "
                   f"never wait for a device), but openat took longer still ({create * 1e6:,.0f} µs): strace -T "
                   "counts wall time, including any wait for a CPU on a busy machine")
        return explain.expect(
            f"on {label}, unlink of this file, which owns a 4 KiB block, takes longer than creating it",
            explain.greater("unlink", unlink, "openat", create),
            yes=lambda e: f"unlink {e['unlink'] * 1e6:,.0f} µs, openat(O_CREAT) {e['openat'] * 1e6:,.0f} µs: "
                          f"this is {f.describe()}, so freeing the block sends the device a discard and "
                          "waits for it inside unlink",
            no=lambda e: f"unlink took {e['unlink'] * 1e6:,.0f} µs and openat {e['openat'] * 1e6:,.0f} µs",
            why=why)
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


def removals_claim(label: str, calls: pd.DataFrame, f: FsFacts, *, files_written: bool = False, show: bool = True) -> explain.Claim:
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
                "virtual disk's depends on its host), not the filesystem's", show=show)
    if inside and files_written:
        return explain.expect(
            f"on {label}, removing a written file costs about as much as removing a directory: each frees a block",
            explain.greater("unlink", unlink, "rmdir", rmdir, by=1 / 3),
            yes=lambda e: f"{us(e)}: on {f.describe()}, both calls wait for the discard of the block they free",
            no=lambda e: us(e),
            why="discards of neighbouring blocks can be merged, and a device answers some faster than others", show=show)
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
            "a handful of slow calls moves a median of few calls", show=show)


def removal_rates_claim(label: str, frame: pd.DataFrame, f: FsFacts, *, show: bool = True) -> explain.Claim:
    """mdtest's own removal rates (section 3) read the same way as the trace."""
    d, fr = rate(frame, "directory removal"), rate(frame, "file removal")
    if f.discard_in_call:
        return explain.expect(
            f"mdtest's rates on {label} agree: directory removal at least 3x slower than file removal",
            explain.greater("files", fr, "directories", d, by=3),
            yes=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
            no=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
            why="the discards were cheap during this run", show=show)
    return explain.expect(
        f"mdtest's rates on {label} agree: directory removal within 3x of file removal",
        explain.greater("directories", d, "files", fr, by=1 / 3),
        yes=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
        no=lambda e: f"{e['files']:,.0f} files/s against {e['directories']:,.0f} directories/s",
        why="with 10 items per rank a phase lasts well under a millisecond: one slow call, or another "
            "job on the same cores, weighs on a whole iteration", show=show)


# --- section 6, witnessed: what the device did during each phase ---------------------------------

BLOCK = 4096       # an ext4 directory's first block (mkfs.ext4's default block size)


def _dev(d: Mapping[str, Any] | None, key: str) -> Any:
    return None if d is None else d.get(key)


def phases_claims(label: str, ph: Any, f: FsFacts, *, show: bool = True) -> list[explain.Claim]:
    """mdtest's create, stat and remove phases run one at a time (:func:`measure_phases`),
    each witnessed: what mdtest's processes read from storage during the stat phase, what the device
    wrote during the create phase, and the discards the device received during the remove phase (and,
    for a journalled ext4, after it), against what this filesystem's facts predict."""
    dev = ph.device
    dirs, items = ph.directories, ph.items
    stat = ph.phases.get("stat")
    own_r = stat.witness.own_read if stat is not None and stat.witness is not None else None
    claims = [explain.expect(
        f"on {label}, the stat phase read (next to) nothing from storage: the inode and dentry caches answered",
        explain.greater("a 4 KiB block per 10 items stat-ed", 2 * items / 10 * BLOCK,
                        "read from storage by mdtest's processes", own_r),
        yes=lambda e: f"mdtest's processes read {format_size(own_r)} from storage (task I/O accounting) to stat "
                      f"{2 * items:,} files and directories",
        no=lambda e: f"mdtest's processes read {format_size(own_r)} from storage to stat {2 * items:,} items",
        why="memory was short, and the inodes had been evicted between the phases (each phase is a separate run, "
            "so mdtest's own program and libraries are loaded again too: a cold start reads them from disk)",
        missing="this run was not witnessed.", show=show)]
    if f.memory or (dev.get("remove") is None and dev.get("create") is None and ph.phases
                    and all(m.witness is not None and m.witness.device is None for m in ph.phases.values())):
        claims.append(explain.expect(
            f"on {label}, creating and removing asked no device anything",
            explain.fact("no block device behind it (the witness's note)", f.memory or None),
            yes=f"{f.describe()}: the witness found no block device to count; files and directories are memory",
            no="", missing="the witness found no block device here, but this filesystem is not one kept in memory: "
                           "a network or FUSE filesystem's requests are not block I/O.", show=show))
        return claims
    create, remove, after = dev.get("create"), dev.get("remove"), dev.get("after")
    written = _dev(create, "written_bytes")
    own_w = ph.phases["create"].witness.own_written if ph.phases.get("create") and \
        ph.phases["create"].witness is not None else None
    dirtied = f"mdtest's processes dirtied {format_size(own_w)} of it in memory, " if own_w else ""
    claims.append(explain.expect(
        f"on {label}, the create phase wrote less to the device than one {BLOCK // 1024} KiB block per directory "
        "it made: without -w and fsync, creating is memory work, written back later",
        explain.greater("one block per directory", dirs * BLOCK, "written by the device", written),
        yes=lambda e: f"{dirs:,} directories and {items:,} files; {dirtied}the device wrote {format_size(written)} "
                      "while the phase ran",
        no=lambda e: f"the device wrote {format_size(written)} while {dirs:,} directories were made",
        why="the device's counters are everybody's (another program, the write-back of older dirty pages), and a "
            "journal that commits during the phase writes it then.",
        missing="the device's counters were not read for this run.", show=show))
    d_rem, d_after = _dev(remove, "discards"), _dev(after, "discards")
    rw = ph.phases["remove"].witness if ph.phases.get("remove") is not None else None
    crowd = ""
    if rw is not None and rw.disturbed:
        crowd = (f" (the device also read {format_size(rw.others_read or 0)} and wrote "
                 f"{format_size(rw.others_written or 0)} that were not mdtest's meanwhile: its counters are "
                 "everybody's, so some of these discards can be someone else's)")
    if f.discard_in_call:
        more = d_rem is not None and d_rem > dirs
        claims.append(explain.expect(
            f"on {label}, the remove phase sent the device about one discard per directory it removed (within a "
            "quarter): each rmdir frees the directory's block and waits for its discard",
            explain.within("discards during the remove phase", d_rem, "directories removed", dirs, rel=0.25),
            yes=lambda e: f"{d_rem:,} discards ({format_size(_dev(remove, 'discarded_bytes'))}) while {dirs:,} "
                          f"directories were removed, {_dev(create, 'discards'):,} during the create phase; this is "
                          f"{f.describe()}{crowd}",
            no=lambda e: f"the device counted {d_rem:,} discards while {dirs:,} directories were removed{crowd}",
            why=("the device's counters are everybody's: other programs removing files on a filesystem of this "
                 "device mounted with discard send discards too." if more else
                 "the block layer merged neighbouring discards into fewer requests, or this ext4 frees directory "
                 "blocks in another way than the lesson read in its source."),
            missing="this kernel's stat file has no discard counters (before Linux 4.18).", show=show))
    elif f.discards and f.journal:
        settle = ph.settle_s
        claims.append(explain.expect(
            f"on {label}, the remove phase itself sent (next to) no discard: the journal keeps the freed blocks "
            "until its commit",
            explain.greater("directories removed", dirs, "discards during the remove phase", d_rem, by=10),
            yes=lambda e: f"{d_rem:,} discards while {dirs:,} directories were removed; this is {f.describe()}",
            no=lambda e: f"the device counted {d_rem:,} discards while {dirs:,} directories were removed",
            why="the device's counters are everybody's: another program removing files on this device sends "
                "discards too; and a commit can fall inside the phase.",
            missing="this kernel's stat file has no discard counters (before Linux 4.18).", show=show))
        claims.append(explain.expect(
            f"on {label}, the discards came after the phase, once the journal had committed (a kernel worker sends "
            "them, not rmdir)",
            explain.greater("discards after the phase", d_after, "none", 0),
            yes=lambda e: f"{d_after:,} discard request{'s' * (d_after != 1)} "
                          f"({format_size(_dev(after, 'discarded_bytes'))}) in the {settle:g} s after the last phase, "
                          f"with {format_size(_dev(after, 'written_bytes'))} written (the commit)",
            no=lambda e: f"no discard in the {settle:g} s after the last phase",
            why="the journal had not committed yet when the watch ended (mount option commit=, or a busy journal).",
            missing="the device was not watched after the last phase (settle_s=0).", show=show))
    elif f.ext and f.discards is False:
        total = sum(x for x in (_dev(dev.get(k), "discards") for k in ("create", "stat", "remove", "after"))
                    if x is not None) if d_rem is not None else None
        claims.append(explain.expect(
            f"on {label}, removing sent the device (next to) no discard: without the discard option a freed block "
            "is only marked free in the bitmap",
            explain.greater("directories removed", dirs, "discards (every phase)", total, by=10),
            yes=lambda e: f"{total:,} discards in all while {dirs:,} directories were removed; this is {f.describe()}",
            no=lambda e: f"the device counted {total:,} discards while {dirs:,} directories were removed",
            why="the device's counters are everybody's: another program removing files on a filesystem of this device "
                "mounted with discard sends discards too.",
            missing="this kernel's stat file has no discard counters (before Linux 4.18).", show=show))
    else:
        claims.append(explain.expect(
            f"on {label}, the device's discards follow the filesystem's facts",
            explain.fact("the facts are known", None),
            missing=f"the lesson does not know how {f.describe()} frees a block (its journal, its discard option).", show=show))
    return claims


# --- section 7: many small files against one stream ----------------------------------------------

def small_files_claim(n: int, size: int, per_second: float, stream_mib_s: float, *, show: bool = True) -> explain.Claim:
    small, stream = n / per_second, n * size / (stream_mib_s * 2 ** 20)
    return explain.expect(
        f"{n:,} small files, each created, written and fsynced, take at least 10x longer than the same "
        "bytes written as one stream",
        explain.greater("small files", small, "one stream", stream, by=10),
        yes=lambda e: f"{e['small files']:,.1f} s against {e['one stream']:,.1f} s",
        no=lambda e: f"{e['small files']:,.1f} s against {e['one stream']:,.1f} s",
        why="a device that acknowledges each flush at once makes an fsync per file almost free; "
            "on a parallel filesystem the metadata server's round trip stays", show=show)


# --- the instructor's class data -----------------------------------------------------------------

CONFIG = ("options", "tasks", "nodes")


def _flags(options: str) -> dict[str, str | bool]:
    """'-n 10 -i 20 -y -w 4096' -> {'-n': '10', '-i': '20', '-y': True, '-w': '4096'}."""
    out: dict[str, str | bool] = {}
    words = str(options).split()
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            out[w] = words[i + 1]
            i += 2
        else:
            out[w] = True
            i += 1
    return out


def syncs_each_file(options: str) -> bool:
    """Does this mdtest command line (3.3/4.0) fsync each file? Only -y with -w > 0 does."""
    f = _flags(options)
    try:
        return bool(f.get("-y")) and int(f.get("-w", 0)) > 0
    except (TypeError, ValueError):
        return False


def class_configs(md: pd.DataFrame) -> pd.DataFrame:
    """One row per student: options, tasks, nodes, and whether that command fsyncs each file."""
    cols = [c for c in CONFIG if c in md.columns]
    per = md.groupby("user")[cols].first().reset_index()
    per["fsync_per_file"] = per["options"].map(syncs_each_file)
    return per


def common_config(md: pd.DataFrame) -> dict[str, Any]:
    """The configuration most students ran (options, tasks, nodes)."""
    per = class_configs(md)
    cols = [c for c in CONFIG if c in per.columns]
    top = per.groupby(cols, dropna=False).size().idxmax()
    return dict(zip(cols, top if isinstance(top, tuple) else (top,)))


def _differences(row: Mapping[str, Any], common: Mapping[str, Any]) -> list[str]:
    out = []
    mine, theirs = _flags(row.get("options", "")), _flags(common.get("options", ""))
    for flag in sorted(set(mine) | set(theirs)):
        if mine.get(flag) != theirs.get(flag):
            if flag not in mine:
                out.append(f"no {flag}")
            elif mine[flag] is True:
                out.append(f"added {flag}")
            else:
                out.append(f"{flag} {mine[flag]}" + (f" (class: {theirs[flag]})" if flag in theirs else ""))
    for k, word in (("tasks", "tasks"), ("nodes", "nodes")):
        if k in row and k in common and row[k] != common[k]:
            out.append(f"{row[k]:g} {word} (class: {common[k]:g})")
    return out


def neighbours(md: pd.DataFrame) -> pd.DataFrame:
    """For each student's mdtest run on each filesystem: how many other students' mdtest runs overlapped
    it in time, on the same filesystem (``same_fs``) and on any (``any_fs``). Needs ``started`` and
    ``finished`` columns (mdtest's own "-- started at" / "-- finished at" lines); NaN without them."""
    cols = ["user", "filesystem", "same_fs", "any_fs"]
    if not {"started", "finished"} <= set(md.columns):
        runs = md[["user", "filesystem"]].drop_duplicates()
        return runs.assign(same_fs=float("nan"), any_fs=float("nan"))[cols]
    runs = md.groupby(["user", "filesystem"])[["started", "finished"]].first().reset_index()
    runs["t0"], runs["t1"] = pd.to_datetime(runs["started"]), pd.to_datetime(runs["finished"])
    same, anyfs = [], []
    for r in runs.itertuples():
        others = runs[(runs["user"] != r.user) & (runs["t0"] < r.t1) & (r.t0 < runs["t1"])]
        same.append(int(others.loc[others["filesystem"] == r.filesystem, "user"].nunique()))
        anyfs.append(int(others["user"].nunique()))
    return runs.assign(same_fs=same, any_fs=anyfs)[cols]


def outlier_causes(md: pd.DataFrame, out: pd.DataFrame) -> pd.DataFrame:
    """Each flagged measurement with what its student did differently from the class's most common
    configuration (computed from the saved options, tasks and nodes), what that difference does to
    mdtest, and the spread of its own iterations (max / min)."""
    common = common_config(md)
    rows = []
    for r in out.to_dict("records"):
        diff = _differences(r, common)
        if syncs_each_file(r.get("options", "")) and not syncs_each_file(common.get("options", "")):
            effect = "writes -w bytes into each file, so -y fsyncs each one"
            if r.get("operation") == "file removal":
                effect += ("; each file then owns a block when it is removed, and freeing a block can cost "
                           "a discard inside unlink (lesson 05, section 6)")
        elif diff and set(diff) <= {"no -y", "added -y"}:
            effect = "none expected: without -w, -y syncs nothing"
        elif any(d.endswith("(class: 1)") and "nodes" in d for d in diff):
            effect = ("ranks on two (fake) nodes of one host: they talk over TCP and share its cores and disk; "
                      "a phase lasts as long as its slowest rank")
        elif any("tasks" in d for d in diff):
            effect = "two ranks share the node's cores; a phase lasts as long as its slowest rank"
        elif diff:
            effect = "a different command"
        else:
            effect = "same command, tasks and nodes: neighbours or noise"
        spread = r["max"] / r["min"] if r.get("min") else float("nan")
        rows.append({"user": r["user"], "filesystem": r["filesystem"], "operation": r["operation"],
                     "x_median": r.get("x_median"), "differs": "; ".join(diff) or "nothing",
                     "what it does": effect, "iteration_spread": spread})
    table = pd.DataFrame(rows, columns=["user", "filesystem", "operation", "x_median", "differs", "what it does",
                                        "iteration_spread"])
    near = neighbours(md).rename(columns={"same_fs": "neighbours_same_fs", "any_fs": "neighbours_any_fs"})
    return table.merge(near, on=["user", "filesystem"], how="left")


def _crowding(near: pd.DataFrame, fs_label: str, user: str, base_users: set[str]) -> str | None:
    """'userX's run on fs overlapped N other students' runs on it, the class's a median of M', when the
    two differ (None when they do not, or when the runs' times are not known)."""
    here = near[near["filesystem"] == fs_label]
    me = here.loc[here["user"] == user, "same_fs"].dropna()
    base = here.loc[here["user"].isin(base_users), "same_fs"].dropna()
    if not len(me) or not len(base) or float(me.iloc[0]) == float(base.median()):
        return None
    return (f"{user}'s run on {fs_label} overlapped {int(me.iloc[0])} other students' runs on it, the class's "
            f"runs a median of {base.median():g}: runs that share one filesystem at the same time slow each "
            "other down, and here that outweighed the options")


def class_claims(md: pd.DataFrame, *, operation: str = "file creation", factor: float = 2.0, show: bool = True) -> list[explain.Claim]:
    """What each student's difference from the class predicts for ``operation``, checked against the
    median of the students who ran the class's most common configuration, on each filesystem:
    a command that fsyncs each file (-y with -w) is predicted slower on every filesystem with a
    device behind it; -y added or left out without -w is predicted to change nothing."""
    common = common_config(md)
    per = class_configs(md)
    cols = [c for c in CONFIG if c in per.columns]
    is_common = per[cols].apply(lambda r: all(r[c] == common[c] for c in cols), axis=1)
    base_users = set(per.loc[is_common, "user"])
    part = md[md["operation"] == operation]
    near = neighbours(md)
    claims = []
    for r in per[~is_common].to_dict("records"):
        diff = _differences(r, common)
        fsyncs = r["fsync_per_file"] and not syncs_each_file(common["options"])
        only_y = diff and set(diff) <= {"no -y", "added -y"}
        if not (fsyncs or only_y):
            continue
        for fs_label, g in part.groupby("filesystem", sort=True):
            base = g.loc[g["user"].isin(base_users), "mean"]
            mine = g.loc[g["user"] == r["user"], "mean"]
            if not len(mine):
                continue
            med = float(base.median()) if len(base) else None
            val = float(mine.iloc[0])
            memory = str(g["fs_kind"].iloc[0]).startswith("memory") if "fs_kind" in g else False
            crowd = _crowding(near, fs_label, r["user"], base_users)
            if fsyncs and not memory:
                claims.append(explain.expect(
                    f"{r['user']} ({'; '.join(diff)}: an fsync per file) creates files at least {factor:g}x "
                    f"slower than the class median on {fs_label}",
                    explain.greater("class median", med, r["user"], val, by=factor),
                    yes=lambda e, u=r["user"]: f"{e[u]:,.0f} against {e['class median']:,.0f} per second",
                    no=lambda e, u=r["user"]: f"{u} created {e[u]:,.0f} per second, the class median was "
                                              f"{e['class median']:,.0f}",
                    why=crowd or "the device acknowledged each flush quickly, or this filesystem already "
                                 "writes synchronously (a sync mount), or the neighbours slowed the class more "
                                 "than the fsyncs slowed this student", show=False))
            elif only_y:
                why = crowd or ("the jobs ran side by side on two shared cores and one disk: a neighbour's run "
                                "can slow or spare one student's, whatever the options")
                claims.append(explain.expect(
                    f"{r['user']} ({'; '.join(diff)}) creates files within {factor:g}x of the class median on "
                    f"{fs_label}: without -w, -y syncs nothing",
                    explain.within(r["user"], val, "class median", med, rel=1 - 1 / factor),
                    yes=lambda e, u=r["user"]: f"{e[u]:,.0f} against {e['class median']:,.0f} per second",
                    no=lambda e, u=r["user"]: f"{u} created {e[u]:,.0f} per second, the class median was "
                                              f"{e['class median']:,.0f}",
                    why=why, show=False))
    for c in claims:
        print(c.text)
    return claims


def class_filesystems_claims(md: pd.DataFrame, *, operation: str = "file creation", show: bool = True) -> list[explain.Claim]:
    """Class medians of ``operation`` on each filesystem, ordered as their layers predict: memory
    fastest, a sync-mounted filesystem slower than the same filesystem mounted normally, an object
    store through FUSE slowest. Which is which comes from the data (fs_kind, fstype, fs_options: the
    mount options results.save keeps), never from a filesystem's label."""
    part = md[md["operation"] == operation]
    med = part.groupby("filesystem")["mean"].median()
    kinds = part.groupby("filesystem")["fs_kind"].first() if "fs_kind" in part else pd.Series(dtype=str)
    mem = [f for f in med.index if str(kinds.get(f, "")).startswith("memory")]
    obj = [f for f in med.index if str(kinds.get(f, "")).startswith("object storage")]
    opts = part.groupby("filesystem")["fs_options"].first() if "fs_options" in part else pd.Series(dtype=object)
    types = part.groupby("filesystem")["fstype"].first() if "fstype" in part else pd.Series(dtype=object)
    sync = [f for f in med.index
            if isinstance(opts.get(f), str) and {"sync", "dirsync"} & set(opts[f].split(","))]
    claims = []
    for m in mem:
        for other in [f for f in med.index if f != m]:
            claims.append(explain.expect(
                f"memory ({m}) creates files faster than {other}",
                explain.greater(m, float(med[m]), other, float(med[other])),
                yes=lambda e, m=m, o=other: f"class medians {e[m]:,.0f} and {e[o]:,.0f} per second",
                no=lambda e, m=m, o=other: f"class medians {e[m]:,.0f} and {e[o]:,.0f} per second",
                why="the machine was so busy that memory work waited as long as the device did", show=False))
    for s in sync:
        plain = [f for f in med.index if f not in mem + obj + sync and types.get(f) == types.get(s)]
        for p in plain:
            claims.append(explain.expect(
                f"the sync-mounted filesystem ({s}) creates files at least 2x slower than {p}: each creation "
                "is written through to the device before the call returns",
                explain.greater(p, float(med[p]), s, float(med[s]), by=2),
                yes=lambda e, p=p, s=s: f"class medians {e[p]:,.0f} and {e[s]:,.0f} per second",
                no=lambda e, p=p, s=s: f"class medians {e[p]:,.0f} and {e[s]:,.0f} per second",
                why="the device acknowledged the writes at once (a VM host's cache)", show=False))
    for o in obj:
        for other in [f for f in med.index if f not in obj]:
            claims.append(explain.expect(
                f"the object store through FUSE ({o}) creates files slower than {other}: each creation is a "
                "FUSE round trip and an HTTP request",
                explain.greater(other, float(med[other]), o, float(med[o])),
                yes=lambda e, o=o, x=other: f"class medians {e[x]:,.0f} and {e[o]:,.0f} per second",
                no=lambda e, o=o, x=other: f"class medians {e[x]:,.0f} and {e[o]:,.0f} per second",
                why="the FUSE client answered from its own cache", show=False))
    for c in claims:
        print(c.text)
    return claims


# --- the experiments: mdtest live (mdtest and mpirun here) or replayed, each an Outcome -------------

def candidate_dirs(extra: Sequence[str | Path] = ()) -> list[Path]:
    """Writable directories worth comparing here: /tmp, /dev/shm, $HOME, then ``extra`` (a FUSE mount)."""
    out: list[Path] = []
    for d in ["/tmp", "/dev/shm", os.path.expanduser("~"), *extra]:
        p = Path(d)
        if p.is_dir() and os.access(p, os.W_OK) and p not in out:
            out.append(p)
    return out


WITNESS_COLUMNS = ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes", "device_write_bytes",
                   "disturbed")


def _witness_of(out: recordings.Outcome, live_witness: witness.Witnessed | None) -> None:
    """Give ``out`` the kernel's witness: the live run's, or the one its recording kept (else the note
    that it has none)."""
    if out.mode == "live":
        out.witness, out.witness_note = live_witness, ""
        return
    rec = out.recording
    out.witness = rec.witness() if rec is not None else None
    out.witness_note = "" if out.witness is not None else (rec.witness_note if rec is not None else "not witnessed")


def rates_frame(out: recordings.Outcome, path: str | os.PathLike[str], scope: str) -> pd.DataFrame:
    """mdtest's rows of ``out`` with path, fstype (here when live, else the recording's), mode and the
    witness's columns (own_read_bytes, own_write_bytes, device, device_read_bytes, device_write_bytes,
    disturbed, witness_notes, witness_scope: what the witness covers), the same on every row."""
    if out.witness is not None:
        seen = out.witness.row()
    else:
        seen = {**{k: None for k in WITNESS_COLUMNS}, "witness_notes": out.witness_note or "not witnessed"}
    if out.mode == "live":
        fstype = fsinfo.fstype(path)
    else:
        fstype = (out.recording.meta.get("filesystem", {}) if out.recording else {}).get("fstype", "?")
    return mdtest.to_frame(out.data, path=str(path), fstype=fstype, mode=out.mode, **seen, witness_scope=scope)


def measure_on(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
               launcher: str = "mpirun", timeout: float = 300, quiet: bool = False) -> recordings.Outcome:
    """mdtest on the filesystem of ``path`` (live), or the recording made there (replay).

    Live, the run is taken under :class:`iolab.witness.Witness` on ``path``: the bytes mdtest's
    processes (mpirun and its ranks, reaped) made the storage layer read and write, and what the
    block device behind ``path`` moved for everyone (``.witness``); a replay carries the witness the
    recording kept, or says that it has none (``.witness_note``). ``.data``: mdtest.parse's rows;
    ``.frame``: :func:`rates_frame`."""
    seen: dict[str, Any] = {}

    def live() -> Run:
        with witness.Witness(path, children=True) as w:
            r = mdtest.run(options, tasks, on=path, launcher=launcher, timeout=timeout)
        seen["witnessed"] = w.result
        return r

    out = recordings.live_or_recorded(live, recording, requires=("mdtest", launcher), parse=mdtest.parse, quiet=quiet)
    _witness_of(out, seen.get("witnessed"))
    iters = options.iterations
    out.frame = rates_frame(out, path, f"the whole run (every phase, {iters} iteration{'s' * (iters != 1)})")
    return out


# --- one phase per run: what the device did while mdtest created, stat-ed, removed ------------------

DEVICE_KEYS = ("device", "reads", "read_bytes", "writes", "written_bytes", "discards", "discarded_bytes",
               "busy_ms")


def device_moved(before: witness.DeviceStat, after: witness.DeviceStat) -> dict[str, Any]:
    """What a block device did between two snapshots of its stat file: requests and bytes read and
    written, discard requests and bytes discarded (None where the kernel has no discard fields, before
    4.18), milliseconds busy. Everybody's traffic."""
    sector = witness.SECTOR
    disc = after.discards is not None and before.discards is not None
    return {"device": after.device, "reads": after.reads - before.reads,
            "read_bytes": (after.sectors_read - before.sectors_read) * sector,
            "writes": after.writes - before.writes,
            "written_bytes": (after.sectors_written - before.sectors_written) * sector,
            "discards": after.discards - before.discards if disc else None,
            "discarded_bytes": (after.sectors_discarded - before.sectors_discarded) * sector if disc else None,
            "busy_ms": after.busy_ms - before.busy_ms}


@dataclass(kw_only=True)
class Phases(recordings.Outcome):
    """mdtest's phases run one at a time on one tree: each phase's outcome (``phases``: rates, witness,
    frame) and what the device did during it (``device``: :func:`device_moved`; None where there is no
    block device), and ``device["after"]`` (the ``settle_s`` seconds after the last phase: a journal
    commits later). ``frame``: one row per phase (:func:`phases_frame`)."""

    path: str = ""
    phases: dict[str, recordings.Outcome] = field(default_factory=dict)
    device: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    items: int = 0                   # files (and as many directories) the run made: tasks x -n
    directories: int = 0             # directories the remove phase removed (mdtest's items; 0 with -F)
    settle_s: float = 0.0


def phases_frame(phases: Mapping[str, recordings.Outcome], device: Mapping[str, Any], settle: float) -> pd.DataFrame:
    """One row per phase: phase, operation rates (mdtest's, ops/s), own_read_bytes, own_write_bytes,
    and the device's reads, read_bytes, writes, written_bytes, discards, discarded_bytes, busy_ms."""
    rows = []
    for name in [*phases, *(["after"] if "after" in device else [])]:
        m = phases.get(name)
        row: dict[str, Any] = {"phase": name}
        if m is not None:
            rates = {r["operation"]: r["mean"] for r in m.data if r["unit"] == "ops/s" and r["mean"]}
            row["rates"] = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
            w = m.witness
            row["own_read_bytes"] = w.own_read if w is not None else None
            row["own_write_bytes"] = w.own_written if w is not None else None
        else:
            row.update(rates=f"(the {settle:g} s after the last phase)", own_read_bytes=None, own_write_bytes=None)
        d = device.get(name) or {}
        row.update({k: d.get(k) for k in DEVICE_KEYS})
        rows.append(row)
    return pd.DataFrame(rows)


def run_phases(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str],
               phases: Sequence[str] = ("create", "stat", "remove"), launcher: str = "mpirun", timeout: float = 300,
               settle_s: float = 0.0, ws: workspace.Workspace | None = None) -> dict[str, Any]:
    """Run ``phases`` of ``options`` one mdtest run each, on one tree in a private workspace on ``on``,
    each under a :class:`~iolab.witness.Witness` with the device's stat file read around it. The MPI
    runtime's files go to /dev/shm when it is a tmpfs, so that they are not counted as the measured
    filesystem's I/O.
    ``settle_s``: keep watching the device that long after the last phase. Returns {phase: (Run,
    Witnessed, device_moved or None)} and "after": device_moved or None."""
    bad = [p for p in phases if p not in mdtest.PHASES]
    if bad or not phases:
        raise ValueError(f"phases are some of {', '.join(mdtest.PHASES)}, got {list(phases)}")
    if any(f in options.extra for f in mdtest.PHASES.values()):
        raise ValueError("give the phases with phases=..., not -C/-T/-E/-r in options.extra")
    owner = ws or workspace.session()
    out: dict[str, Any] = {}
    # the MPI runtime's shared-memory files (megabytes per rank) go to memory, when there is a tmpfs:
    # on the measured disk they would be writes and, once removed, discards of their own
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and fsinfo.fstype("/dev/shm") in fsinfo.MEMORY_FS else None
    with workspace.Workspace(budget=owner.budget, base=on, prefix=".iolab-mdtest-") as space, \
            workspace.Workspace(budget="1MiB", base=shm, prefix=".iolab-mpi-") as mpi_space:
        dev = witness.block_device(space.root)
        tree = replace(options, directory=str(space.path("mdtest")))
        for name in phases:
            opts = replace(tree, extra=(*tree.extra, mdtest.PHASES[name]))
            d0 = witness.device_stat(dev) if dev else None
            with witness.Witness(space.root, children=True) as w:
                r = mdtest.run(opts, tasks, ws=space, launcher=launcher, timeout=timeout, keep=True,
                               runtime_dir=mpi_space.root if shm else None)
            d1 = witness.device_stat(dev) if dev else None
            out[name] = (r, w.result, device_moved(d0, d1) if dev else None)
        d0 = witness.device_stat(dev) if dev else None
        time.sleep(settle_s)
        out["after"] = device_moved(d0, witness.device_stat(dev)) if dev and settle_s else None
    return out


def measure_phases(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                   phases: Sequence[str] = ("create", "stat", "remove"), settle_s: float = 0.0,
                   launcher: str = "mpirun", timeout: float = 300, quiet: bool = False) -> Phases:
    """:func:`run_phases` on ``path`` live (mdtest and mpirun here), or its recordings:
    ``<recording>-<phase>`` (mdtest's output, its witness in the meta) and ``<recording>-device``
    (iolab's counts of the device's stat file around each phase, JSON)."""
    done: dict[str, Any] = {}

    def live(name: str) -> Run:
        if not done:
            done.update(run_phases(options, tasks, on=path, phases=phases, launcher=launcher, timeout=timeout,
                                   settle_s=settle_s))
        return done[name][0]

    return _phases(path, recording, phases, lambda name: recordings.live_or_recorded(
        lambda: live(name), f"{recording}-{name}", requires=("mdtest", launcher), parse=mdtest.parse, quiet=quiet),
        done, settle_s)


def recorded_phases(recording: str, *, phases: Sequence[str] = ("create", "stat", "remove"),
                    path: str | None = None, quiet: bool = False) -> Phases:
    """The recordings of :func:`measure_phases`, replayed whatever tools are here (e.g. ext4 images that
    were loop-mounted as root to record them)."""
    def replay(name: str) -> recordings.Outcome:
        rec = recordings.load(f"{recording}-{name}")
        out = recordings.Outcome("replay", rec.text, f"{rec.provenance}; a recording of its own", recording=rec,
                                 data=mdtest.parse(rec.text))
        if not quiet:
            print(out.provenance)
        return out

    where = path or (recordings.load(f"{recording}-{phases[0]}").meta.get("filesystem") or {}).get("path", "?")
    return _phases(where, recording, phases, replay, {}, 0.0)


def _phases(path: str | os.PathLike[str], recording: str, phases: Sequence[str], outcome_of: Any,
            done: dict[str, Any], settle_s: float) -> Phases:
    measured: dict[str, recordings.Outcome] = {}
    for name in phases:
        out = outcome_of(name)
        _witness_of(out, done[name][1] if out.mode == "live" else None)
        out.frame = rates_frame(out, path, f"the {name} phase")
        measured[name] = out
    first = next(iter(measured.values()))
    if first.mode == "live":
        device = {name: done[name][2] for name in phases}
        if done.get("after") is not None:
            device["after"] = done["after"]
        settled = settle_s
    else:
        try:
            kept = json.loads(recordings.load(f"{recording}-device").text)
        except FileNotFoundError:
            kept = {}
        device = {k: v for k, v in (kept.get("phases") or {}).items()}
        settled = float(kept.get("settle_s") or 0.0)
    rows = first.data
    items = int(rows[0]["items"] or 0) if rows else 0
    argv = first.run.argv if first.run is not None else \
        (first.recording.meta.get("argv", []) if first.recording is not None else [])
    return recordings.combine(list(measured.values()), phases_frame(measured, device, settled), cls=Phases,
                              path=str(path), phases=measured, device=device, items=items,
                              directories=0 if "-F" in argv else items, settle_s=settled)


# --- the syscalls behind one file (lesson 03's strace, on mdtest) -------------------------------

ONE_FILE = mdtest.Options(files=1, iterations=1, files_only=True, write_bytes=4096, sync=True)


def one_file_trace(on: str | os.PathLike[str] | None = None, *, exe: str = "mdtest", timeout: float = 120) -> Run:
    """strace of one mdtest rank creating, writing (4 KiB), fsyncing, stat-ing, opening and removing one
    file; only the syscalls on that file (``strace -P``), so the MPI start-up noise is left out.

    mdtest runs as a single MPI process (no mpirun). Returns the strace Run (stdout = the trace).
    """
    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    space = workspace.Workspace(budget="16MiB", base=on, prefix=".iolab-mdtest-") if on is not None \
        else workspace.Workspace(budget="16MiB")
    with space:
        target = space.path("mdtest")
        # mdtest's own naming: rank 0's first file in the tree of the first iteration
        the_file = target / "test-dir.0-0" / "mdtest_tree.0" / "file.mdtest.0.0"
        out = space.path("trace.txt")
        argv = strace.trace_argv(replace(ONE_FILE, directory=str(target)).argv(exe), output=out,
                                 paths=[the_file], strsize=16)
        return strace.run(argv, timeout=timeout, cwd=space.root)


def one_file_calls(text: str) -> pd.DataFrame:
    """The syscalls of a :func:`one_file_trace` text, in order: syscall, duration (s), result, path.
    A trace that ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`)."""
    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    return df[["syscall", "duration", "result", "path", "args"]].reset_index(drop=True)


def trace_one_file(on: str | os.PathLike[str] | None, *, recording: str, quiet: bool = False) -> recordings.Outcome:
    """:func:`one_file_trace` live (mdtest and strace here), or its recording; ``.frame`` (and ``.data``)
    is the calls."""
    return recordings.live_or_recorded(lambda: one_file_trace(on), recording, requires=("mdtest", "strace"),
                                       parse=one_file_calls, quiet=quiet)


# --- what -y really does: fsync calls counted, removals timed (strace around the MPI run) --------

# the calls that push data or metadata to the device, and the ones that create and remove mdtest's
# items (they are always there, so strace -c always has a table to print: 0 fsync is a result)
SYNC_CALLS = ("fsync", "fdatasync", "sync", "syncfs", "sync_file_range")
ITEM_CALLS = ("mkdir", "rmdir", "unlink")
REMOVAL_CALLS = ("unlink", "rmdir", "fsync")


def _traced(options: mdtest.Options, tasks: int, *, on: str | os.PathLike[str], make_argv,
            launcher: str = "mpirun", exe: str = "mdtest", timeout: float = 300) -> Run:
    """mdtest under strace (``make_argv(command, output_file)`` builds the strace argv), in a private
    workspace on ``on``. The Run's stdout is strace's output; its ``tool_version`` names both, e.g.
    "4.0.0 (under strace -- version 6.1)"."""
    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    with workspace.Workspace(budget="256MiB", base=on, prefix=".iolab-mdtest-") as space:
        opts = replace(options, directory=str(space.path("mdtest")))
        full = mpi.command(opts.argv(exe), tasks, launcher=launcher)
        env = mpi.runtime_env(space.path(f".mpi-{uuid.uuid4().hex[:8]}"))
        argv = make_argv(full, space.path("strace.txt"))
        # strace -E: the MPI runtime's session files stay in the workspace too
        argv = argv[:1] + [a for k, v in env.items() for a in ("-E", f"{k}={v}")] + argv[1:]
        r = strace.run(argv, timeout=timeout, cwd=space.root)
        if r.returncode != 0:
            raise ToolFailed(argv, r.returncode, r.stderr, message=f"mdtest under strace exited with {r.returncode}")
        version = mdtest.installed_version(exe)
        return replace(r, tool_version=f"{version} (under {r.tool_version})")


def count_syncs(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str], **kwargs: Any) -> Run:
    """``strace -f -c`` of a whole mdtest run (launcher and ranks), counting :data:`SYNC_CALLS` and
    :data:`ITEM_CALLS`. Parse with :func:`sync_counts`."""
    return _traced(options, tasks, on=on, make_argv=lambda cmd, out: strace.count_argv(
        cmd, output=out, follow=True, syscalls=[*SYNC_CALLS, *ITEM_CALLS]), **kwargs)


def sync_counts(text: str) -> pd.DataFrame:
    """An strace -c table of :func:`count_syncs` -> syscall, calls: every call of SYNC_CALLS and
    ITEM_CALLS, with 0 for those strace did not list (it prints only calls that happened)."""
    rows = {r["syscall"]: int(r["calls"]) for r in strace.parse_summary(text)}
    names = [*SYNC_CALLS, *ITEM_CALLS, *sorted(set(rows) - set(SYNC_CALLS) - set(ITEM_CALLS))]
    return pd.DataFrame({"syscall": names, "calls": [rows.get(n, 0) for n in names]})


def measure_syncs(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                  quiet: bool = False) -> recordings.Outcome:
    """:func:`count_syncs` on ``path`` live, or its recording; ``.frame`` (and ``.data``) is :func:`sync_counts`."""
    return recordings.live_or_recorded(lambda: count_syncs(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=sync_counts, quiet=quiet)


def trace_removals(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str], **kwargs: Any) -> Run:
    """``strace -f -tt -T`` of a whole mdtest run, only :data:`REMOVAL_CALLS` (each with its time).
    Parse with :func:`removal_calls`."""
    return _traced(options, tasks, on=on, make_argv=lambda cmd, out: strace.trace_argv(
        cmd, output=out, follow=True, syscalls=list(REMOVAL_CALLS), strsize=256), **kwargs)


_ITEM_KIND = (("file.mdtest.", "file"), ("dir.mdtest.", "directory"), ("mdtest_tree.", "tree directory"))


def _item_kind(path: Any) -> str | None:
    name = str(path).rstrip("/").rsplit("/", 1)[-1]
    if "/test-dir." not in str(path):
        return None                      # the MPI runtime's own files
    return next((kind for prefix, kind in _ITEM_KIND if name.startswith(prefix)), "top directory")


def removal_calls(text: str) -> pd.DataFrame:
    """The calls of a :func:`trace_removals` trace on mdtest's own items: syscall, item ("file",
    "directory", "tree directory", "top directory"), duration (s), pid, path. The MPI runtime's
    unlink/rmdir calls (its session directory, shared-memory segments) are left out. A trace that
    ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`)."""
    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    df = df.assign(item=df["path"].map(_item_kind))
    df = df[df["item"].notna()]
    if not len(df):
        raise ParseError("no call on mdtest's items (test-dir.*) in this trace", line_no=1,
                         line=text.splitlines()[0])
    return df[["syscall", "item", "duration", "pid", "path"]].reset_index(drop=True)


def measure_removals(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                     quiet: bool = False) -> recordings.Outcome:
    """:func:`trace_removals` on ``path`` live, or its recording; ``.frame`` (and ``.data``) is
    :func:`removal_calls`."""
    return recordings.live_or_recorded(lambda: trace_removals(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=removal_calls, quiet=quiet)
