"""Lesson 01, section 2 (the kernel's witnesses): what task I/O accounting (/proc/self/io) counts and
when, another process's traffic in the device's counters, and a file's page states in cachestat(2);
the experiments and what their numbers showed, as claims (the rest of lesson 01 is
:mod:`iolab.lessons.l01_page_cache.reads`)."""
from __future__ import annotations

import mmap
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, fsinfo, measure, pagecache, recordings, witness, workspace
from ...explain import Claim
from ...units import MiB, format_size, parse_size
from ...tools import dd

MEMORY_FS = fsinfo.MEMORY_FS


# --- 2 · the kernel's witnesses: task I/O accounting, the device's counters, cachestat --------------

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
