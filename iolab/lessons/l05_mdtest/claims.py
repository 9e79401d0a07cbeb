"""Lesson 05 (mdtest): the measurements turned into sentences.

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

import os
import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ... import explain, fsinfo
from ...units import format_size
from .metadata import FsFacts, trials, trials_unit

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
# Each comparison is judged on mdtest's iterations (``-i N`` with ``-v``: metadata.trials), by the one rule,
# explain.beyond: a side beats the other only when its worst iteration beats the other's best. Within one
# run the iterations of two phases are interleaved (create, stat, ..., remove, then the next iteration);
# two runs (two filesystems, with and without -w) ran one after the other, and the sentence says so.

NO_TRIALS = ("this run printed only mdtest's summary (it ran without -v): its iterations are not known, and no "
             "trial is made up from the summary's Max, Min and Mean.")
ONE_RUN = "{n} iterations of one run, the phases in turn in each"
CLOSE = ("each iteration's rate is one phase of a few files per rank, so one interruption of a rank (another "
         "job on the same cores) weighs on a whole iteration; an idle machine narrows the spreads, more "
         "iterations cannot (each adds a chance of a slow one), and more files per rank lengthen a phase but do not stop "
         "another job from taking the rank's CPU")
# what was counted, beside each rate comparison: the evidence that does not depend on how busy the CPUs are
COUNTED = {
    "stat": "the counts do not depend on how busy the CPUs are: section 6 counts the bytes the stat phase read from storage",
    "create": "the counts do not depend on how busy the CPUs are: section 6 counts what the device wrote while the files "
              "were created",
    "fsync": "the counts do not depend on how busy the CPUs are: section 1 counted one fsync per file with -w, none "
             "without it",
    "remove": "the counts do not depend on how busy the CPUs are: section 6 counts the discards the device received while "
              "directories and files were removed",
}


def _runs(first: str, second: str, n: int) -> str:
    return (f"{n} iterations of each of two runs taken one after the other ({first} first), not interleaved: "
            "a change of load between them weighs on one side only")


def _n(*sides: list[float]) -> int:
    return min((len(s) for s in sides), default=0)


def rates_claims(runs: Mapping[str, Any], fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
    """Section 3 (the seed's command on each filesystem): stat against creation on each (one run's
    iterations), and creation in memory against creation on each disk-backed filesystem (two runs).
    ``runs``: per label a :class:`~iolab.lessons.l05_mdtest.metadata.Rates` (or its ``.iterations`` frame), in the
    order they ran; ``fs`` is keyed by the same labels. Judged by :func:`iolab.explain.beyond`."""
    claims = []
    for label, r in runs.items():
        st, cr = trials(r, "file stat"), trials(r, "file creation")
        facts = fs.get(label)
        kind = fsinfo.KINDS.get(facts.fstype, "") if facts is not None else ""
        local = kind.startswith(("local", "memory"))
        served = ("a stat of a file just created is answered from the kernel's inode and dentry caches on this "
                  "local filesystem, a creation changes the directory" if local else
                  f"on {facts.fstype if facts else 'this filesystem'} a stat may still ask a server (NFS "
                  "revalidates attributes, Lustre glimpses the file's size, CephFS needs the inode's capabilities): "
                  "here it was cheaper than a creation all the same")
        rel = explain.beyond("stat", st, "create", cr, by=2, unit=trials_unit(r, "file creation"))
        how = ONE_RUN.format(n=_n(st, cr))
        claims.append(explain.expect(
            f"on {label}, a file stat runs at least twice as fast as a file creation (every iteration)", rel,
            yes=f"{explain.spread_text(rel)} ({how}): {served}",
            no=f"{explain.spread_text(rel)} ({how})",
            why="with 10 files per rank a phase lasts well under a millisecond, so one interruption of a "
                "rank (another job on the same cores) weighs on a whole iteration's rate",
            close=f"{how}; {CLOSE}; {COUNTED['stat']}", missing=NO_TRIALS, show=show))
    order = list(runs)
    mem = [k for k, f in fs.items() if f.memory and k in runs]
    for label in [k for k, f in fs.items() if not f.memory and k in runs]:
        for m in mem:
            a, b = trials(runs[m], "file creation"), trials(runs[label], "file creation")
            f = fs[label]
            first = m if order.index(m) < order.index(label) else label
            how = _runs(first, label if first == m else m, _n(a, b))
            rel = explain.beyond("memory", a, "disk", b, by=2, unit=trials_unit(runs[m], "file creation"))
            claims.append(explain.expect(
                f"empty files are created at least twice as fast in memory ({m}) as on {label}", rel,
                yes=f"{explain.spread_text(rel)} ({how}): on {f.describe()}, each creation also updates the "
                    "filesystem's own structures (the inode bitmap and table, the directory's block"
                    + (", the journal" if f.journal else "") + ") in memory, to be written later",
                no=f"{explain.spread_text(rel)} ({how})",
                why="without -w nothing waits for the device: an ext4 creation is memory work too, only "
                    "more of it, and a fast CPU hides the difference",
                close=f"{how}; {CLOSE}; {COUNTED['create']}", missing=NO_TRIALS, show=show))
    return claims


# --- section 4: -w 4096 -y -----------------------------------------------------------------------

def fsync_cost_claims(plain: Mapping[str, Any], synced: Mapping[str, Any],
                       fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
    """Creation rate without data (the seed's command: 0 fsync) against ``-w 4096 -y`` (one write
    and one fsync per file), per filesystem label: each side's iterations (two runs, ``plain``'s
    first), judged by :func:`iolab.explain.beyond`."""
    claims = []
    for label in [k for k in synced if k in plain]:
        f = fs[label]
        a, b = trials(plain[label], "file creation"), trials(synced[label], "file creation")
        how = _runs("the one without -w", "the one with", _n(a, b))
        if f.memory:
            rel = explain.beyond("with", b, "without", a, by=1 / 3, unit=trials_unit(plain[label], "file creation"))
            claims.append(explain.expect(
                f"on {label}, a write and an fsync per file cost little: creation stays within 3x of the "
                "rate without them (every iteration)", rel,
                yes=f"{explain.spread_text(rel)} ({how}): tmpfs has no device, its fsync returns at once; what "
                    "is left is copying 4 KiB into a new page",
                no=f"{explain.spread_text(rel)} ({how})",
                why="a busy machine: each phase of 10 files lasts a fraction of a millisecond",
                close=f"{how}; {CLOSE}; {COUNTED['fsync']}", missing=NO_TRIALS, show=show))
        else:
            mech = ("it waits for the journal to commit the file's metadata, then flushes the device's cache"
                    if f.journal else
                    "this ext4 has no journal: fsync writes the file's data block and its inode itself, then "
                    "flushes the device's cache" if f.journal is False and f.ext else
                    "it returns only when the file's data and metadata are on the device")
            rel = explain.beyond("without", a, "with", b, by=2, unit=trials_unit(plain[label], "file creation"))
            claims.append(explain.expect(
                f"on {label}, file creation is at least twice as slow when each file is written and fsynced "
                "(every iteration)", rel,
                yes=f"{explain.spread_text(rel)} ({how}): each fsync is a round trip to the device ({mech})",
                no=f"{explain.spread_text(rel)} ({how})",
                why="a device with a fast, battery-backed or host-side write cache acknowledges a flush "
                    "almost at once; a virtual disk's flush may never reach a physical one",
                close=f"{how}; {CLOSE}; {COUNTED['fsync']}", missing=NO_TRIALS, show=show))
    return claims


def load_text(runs: Mapping[str, Any]) -> str:
    """The highest 1-minute load average of ``runs`` (each a :class:`~iolab.lessons.l05_mdtest.metadata.Rates`),
    in words: when they ran here, or when they were recorded (from the recordings' notes)."""
    loads = [r.load for r in runs.values() if getattr(r, "load", None) is not None]
    modes = {getattr(r, "mode", "") for r in runs.values()}
    when = "when they ran here" if modes == {"live"} else "when they were recorded" if modes == {"replay"} else \
        "when they ran or were recorded"
    if not loads:
        return f"the load average {when} is not known"
    return f"load average up to {max(loads):.2f} (1 min) on {os.cpu_count()} cores {when}" if modes == {"live"} else \
        f"load average up to {max(loads):.2f} (1 min) {when}"


def rates_summary(claims: list[explain.Claim], runs: Mapping[str, Any]) -> str:
    """One sentence over the rate comparisons of sections 3 and 4: how many this run called, how many were too
    close to call (with the load the runs saw), and what the lesson counted instead (the evidence that does
    not depend on the load)."""
    rated = [c for c in claims if c.relation.kind in ("beyond", "alike")]
    close = [c for c in rated if c.held is None and c.relation.too_close()]
    called = [c for c in rated if c.held is not None]
    load = load_text(runs)
    def were(n: int) -> str:
        return f"{n} {'was' if n == 1 else 'were'}"
    head = (f"Of the {len(rated)} comparisons of mdtest's rates above, {were(len(called))} called and "
            f"{were(len(close))} too close to call ({load})")
    if not close:
        return head + "."
    return (head + ": too close to call says only that these iterations cannot rank the two sides, not that they "
            "perform alike. The evidence that another job's use of the CPUs does not change is counted: strace's fsync calls "
            "(section 1: one per file with -w, none without), the bytes the stat phase read from storage, "
            "what the device wrote and the discards it received (section 6).")


# --- section 5: the calls behind one file --------------------------------------------------------

CREATING = ("openat", "lseek", "write", "close")    # a file's calls before and after its fsync (steps 0-4)
NO_DEVICE = ("lseek", "close", "newfstatat")        # calls on a file that never wait for a device here


def _trials(calls: pd.DataFrame) -> pd.DataFrame:
    """The measured trials of a one-file trace (its warm-up left out); a frame without trials (one file) is
    one trial."""
    if "trial" not in calls:
        calls = calls.assign(trial=0, warmup=False)
    return calls[~calls["warmup"].astype(bool)]


def _per_trial(calls: pd.DataFrame, syscalls: tuple[str, ...]) -> list[float]:
    """Per trial, the µs of the first call of each of ``syscalls`` in it, summed (None-free)."""
    out = []
    for _, tr in calls.groupby("trial", sort=True):
        first = tr.drop_duplicates("syscall").set_index("syscall")["duration"]
        if all(s in first.index for s in syscalls):
            out.append(float(first[list(syscalls)].sum()) * 1e6)
    return out


def one_file_claims(traces: Mapping[str, pd.DataFrame], fs: Mapping[str, FsFacts], *, show: bool = True) -> list[explain.Claim]:
    """One mdtest file (4 KiB, -y) at a time, traced with strace -T on each filesystem: per trial (a file;
    the warm-up left out) fsync against the creating calls together, and unlink against what it is
    predicted to beat, by :func:`iolab.explain.beyond` (a side's worst trial against the other's best)."""
    claims = []
    for label, calls in traces.items():
        f = fs[label]
        m = _trials(calls)
        fsync, others = _per_trial(m, ("fsync",)), _per_trial(m, CREATING)
        if f.memory:
            claims.append(explain.expect(
                f"on {label}, fsync costs no more than the file's other calls together: there is no device",
                explain.beyond("openat + lseek + write + close", others, "fsync", fsync, unit="µs"),
                why="strace stops the process at every call; on a busy machine any call can wait for a CPU",
                show=show))
            continue
        creating = m[m["syscall"].isin(CREATING)]
        slowest = creating.loc[creating["duration"].idxmax()] if len(creating) else None
        med_fsync = sorted(fsync)[len(fsync) // 2] if fsync else None
        cpu = slowest is not None and slowest["syscall"] in NO_DEVICE and med_fsync is not None \
            and slowest["duration"] * 1e6 > med_fsync
        outlier = (f"the slowest of the other calls was {slowest['syscall']} ({slowest['duration'] * 1e6:,.0f} µs), "
                   "which never waits for a device: the process waited for a CPU (strace -T counts that time too, "
                   "and a busy machine makes any call wait)") if cpu else ""
        rel = explain.beyond("fsync", fsync, "openat + lseek + write + close", others, unit="µs")
        claims.append(explain.expect(
            f"on {label}, fsync takes longer than creating, writing and closing the file together", rel,
            yes=f"{explain.spread_text(rel)}: only fsync waits for the device",
            why=outlier or "a device (or a VM host) that acknowledges a cache flush at once makes fsync cheap",
            close=f"{outlier}; {explain.SEPARATE}" if outlier else "", show=show))
        quiet = m.loc[m["syscall"].isin(NO_DEVICE), "duration"]
        claims.append(_unlink_claim(label, f, unlink=_per_trial(m, ("unlink",)), create=_per_trial(m, ("openat",)),
                                    fsync=fsync, quiet=float(quiet.median()) * 1e6 if len(quiet) else None, show=show))
    return claims


def _median_of(values: list[float]) -> float | None:
    return float(pd.Series(values).median()) if values else None


def _unlink_claim(label: str, f: FsFacts, *, unlink: list[float], create: list[float], fsync: list[float],
                  quiet: float | None = None, show: bool = True) -> explain.Claim:
    """unlink of a written file against what this filesystem's facts say it beats (µs per trial)."""
    if f.discard_in_call:
        u, c = _median_of(unlink), _median_of(create)
        why = ("the device answered the discard quickly this time: its cost is the device's (here a "
               "virtual disk, whose host decides)")
        if None not in (u, c, quiet) and u > 3 * quiet and c >= u:
            why = (f"unlink did wait (median {u:,.0f} µs, against {quiet:,.0f} µs for the calls that never wait "
                   f"for a device), but openat took longer still (median {c:,.0f} µs): creating a file is work of "
                   "its own (a new inode, a directory entry), and strace -T counts wall time, including any wait "
                   "for a CPU on a busy machine")
        rel = explain.beyond("unlink", unlink, "openat(O_CREAT)", create, unit="µs")
        return explain.expect(
            f"on {label}, unlink of this file, which owns a 4 KiB block, takes longer than creating it", rel,
            yes=f"{explain.spread_text(rel)}: this is {f.describe()}, so freeing the block sends the device a "
                "discard and waits for it inside unlink",
            why=why, show=show)
    reason = (f"this is {f.describe()}: " + (
        "the journal holds the freed block until its commit, and the discard is sent after it, outside "
        "the call" if f.journal and f.discard else
        "a freed block is only marked free in the block bitmap, to be written later" if f.discard is False else
        "how it frees blocks is not known here"))
    rel = explain.beyond("fsync", fsync, "unlink", unlink, unit="µs")
    return explain.expect(
        f"on {label}, unlink of this file costs less than its fsync", rel,
        yes=f"{explain.spread_text(rel)}; {reason}",
        why="when a filesystem's facts are not what this lesson read (its journal, its discard "
            "option), the freed block can cost a request to the device inside unlink; the mount "
            "options are in iolab.fsinfo.mount_of(path).options", show=show)


# --- section 6: what removal costs ---------------------------------------------------------------

_TEST_DIR = re.compile(r"/test-dir\.(\d{1,9})-\d{1,9}(?:/|$)")


def per_iteration(calls: pd.DataFrame, syscall: str, item: str) -> list[float]:
    """Per mdtest iteration (its tree ``test-dir.<iteration>-0`` in the call's path), the median µs of
    ``syscall`` on ``item``: one trial per iteration. Calls whose path names no iteration are one trial."""
    d = calls.loc[(calls["syscall"] == syscall) & (calls["item"] == item)]
    if not len(d):
        return []
    paths = d["path"] if "path" in d else pd.Series("", index=d.index)
    it = paths.astype(str).map(lambda p: (m.group(1) if (m := _TEST_DIR.search(p[:4096])) else ""))
    return [float(g.median()) * 1e6 for _, g in d["duration"].groupby(it, sort=True)]


def removals_claim(label: str, calls: pd.DataFrame, f: FsFacts, *, files_written: bool = False, show: bool = True) -> explain.Claim:
    """rmdir of mdtest's directories against unlink of its files, from a -T trace of the whole run: per
    iteration the median call of each (:func:`per_iteration`; the iterations of one run, each removing its
    directories and then its files), judged by :func:`iolab.explain.beyond`.

    ``files_written``: the files got -w bytes and an fsync, so each owns a block too (then the
    unlinks are expected to cost what the rmdirs cost wherever a freed block costs a discard).
    """
    rmdir, unlink = per_iteration(calls, "rmdir", "directory"), per_iteration(calls, "unlink", "file")
    how = (f"each iteration's median call, {min(len(rmdir), len(unlink))} iterations of one run, each removing its "
           "directories, then its files")
    close = (f"{how}; what would separate them: more items per rank (-n: each iteration's median of more calls) or "
             "an idle machine (strace -T counts a wait for a CPU inside the call), not more iterations (each adds a "
             "chance of a slow one); the counts do not depend on how busy the CPUs are: the witnessed phases below count "
             "the discards the device received")
    inside = f.discard_in_call
    if inside and not files_written:
        rel = explain.beyond("rmdir", rmdir, "unlink", unlink, by=3, unit="µs")
        return explain.expect(
            f"on {label}, removing a directory takes at least 3x as long as removing an empty file (every iteration)",
            rel,
            yes=f"{explain.spread_text(rel)} ({how}). This is {f.describe()}: every ext4 directory owns a block, and "
                "freeing it sends the device a discard (TRIM) that rmdir waits for; an empty "
                "file owns no block, so its unlink frees nothing",
            no=f"{explain.spread_text(rel)} ({how})",
            why="the device answered its discards quickly this time: the cost is the device's (a "
                "virtual disk's depends on its host), not the filesystem's", close=close, show=show)
    rel = explain.beyond("unlink", unlink, "rmdir", rmdir, by=1 / 3, unit="µs")
    if inside and files_written:
        return explain.expect(
            f"on {label}, removing a written file costs about as much as removing a directory: each frees a block "
            "(unlink above a third of rmdir in every iteration)", rel,
            yes=f"{explain.spread_text(rel)} ({how}): on {f.describe()}, both calls wait for the discard of the "
                "block they free",
            no=f"{explain.spread_text(rel)} ({how})",
            why="discards of neighbouring blocks can be merged, and a device answers some faster than others",
            close=close, show=show)
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
        f"on {label}, removing a directory takes less than 3x as long as removing a file (every iteration)", rel,
        yes=f"{explain.spread_text(rel)} ({how}); {reason}",
        no=f"{explain.spread_text(rel)} ({how})",
        why=("something else waits inside rmdir here: on a network or parallel filesystem each removal is "
             "a request to a server, and a directory's can take more of them") if not (f.ext or f.memory) else
            "a directory's removal updates the parent's link count and its own inode too; on a busy machine "
            "a handful of slow calls moves a median of few calls", close=close, show=show)


def removal_rates_claim(label: str, run: Any, f: FsFacts, *, show: bool = True) -> explain.Claim:
    """mdtest's own removal rates (section 3) read the same way as the trace: each iteration's file
    removal against its directory removal (one run, the phases in turn), by :func:`iolab.explain.beyond`."""
    d, fr = trials(run, "directory removal"), trials(run, "file removal")
    how = ONE_RUN.format(n=_n(d, fr))
    if f.discard_in_call:
        rel = explain.beyond("files", fr, "directories", d, by=3, unit=trials_unit(run, "file removal"))
        return explain.expect(
            f"mdtest's rates on {label} agree: directory removal at least 3x slower than file removal "
            "(every iteration)", rel,
            yes=f"{explain.spread_text(rel)} ({how})", no=f"{explain.spread_text(rel)} ({how})",
            why="the discards were cheap during this run", close=f"{how}; {CLOSE}; {COUNTED['remove']}", missing=NO_TRIALS,
            show=show)
    rel = explain.beyond("directories", d, "files", fr, by=1 / 3, unit=trials_unit(run, "file removal"))
    return explain.expect(
        f"mdtest's rates on {label} agree: directory removal within 3x of file removal (every iteration)", rel,
        yes=f"{explain.spread_text(rel)} ({how})", no=f"{explain.spread_text(rel)} ({how})",
        why="with 10 items per rank a phase lasts well under a millisecond: one slow call, or another "
            "job on the same cores, weighs on a whole iteration", close=f"{how}; {CLOSE}; {COUNTED['remove']}", missing=NO_TRIALS,
            show=show)


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
        predicted = (f"on {label}, the remove phase sent the device about one discard per directory it removed "
                     "(within a quarter): each rmdir frees the directory's block and waits for its discard")
        relation = explain.within("discards during the remove phase", d_rem, "directories removed", dirs, rel=0.25)
        d_bytes, own = _dev(remove, "discarded_bytes"), dirs * BLOCK
        if d_bytes is not None and dirs and d_bytes > 2 * own:
            # the bytes say that others' discards are in the count: it can neither confirm nor refute
            quiet = [f"{_dev(dev.get(k), 'discards'):,} during the {k} phase" for k in ("create", "stat")
                     if _dev(dev.get(k), "discards")]
            claims.append(explain.expect(
                predicted, explain.fact("discards that are mdtest's alone", None),
                missing=f"the device counted {d_rem:,} discards of {format_size(d_bytes)} while {dirs:,} directories "
                        f"were removed, and {dirs:,} directory blocks of {BLOCK // 1024} KiB are {format_size(own)}: "
                        f"at least {format_size(d_bytes - own)} of those discards were someone else's"
                        + (f" (as were the {' and '.join(quiet)}, when mdtest freed nothing)" if quiet else "")
                        + (f"; meanwhile the device also read {format_size(rw.others_read or 0)} and wrote "
                           f"{format_size(rw.others_written or 0)} that were not mdtest's" if crowd else "")
                        + ". Other programs' removals on this device were counted with mdtest's, so this run cannot "
                        "say how many discards were mdtest's; the ext4 images below, each on a device of its own, "
                        "can.", show=show))
            return claims
        claims.append(explain.expect(
            predicted, relation,
            yes=lambda e: f"{d_rem:,} discards ({format_size(d_bytes)}) while {dirs:,} "
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
