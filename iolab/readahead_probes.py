"""Readahead probes: the instruments lessons 01-03 (and the widgets) measure readahead and small reads
with; why small reads are slow, and how much the kernel reads for you. Lesson 02's experiments and
the claims they support are :mod:`iolab.lessons.l02_readahead.readahead`.

* :func:`read_size_sweep` reads a whole file with unbuffered ``read()`` calls of each size, cold or
  warm, and counts the calls: the cost of a 1-byte read is the system call, not the disk.
* :func:`window` evicts a file, reads a few bytes with a ``posix_fadvise`` hint and returns what the
  kernel brought into the page cache: the readahead window.
* :func:`window_growth` follows the window as sequential reads go on.
* :func:`read_ahead_kb` tells the readahead setting of the device (or bdi) behind a path.
* :func:`window_witnessed` is :func:`window` with the kernel's witness: the bytes the one small read
  made the storage layer fetch (task I/O accounting), and what the device read meanwhile.
* :func:`trace_growth` traces, with bpftrace (root), every readahead window and every folio the
  kernel added to the page cache during a sequential cold read; :func:`growth_frames` tabulates it.
"""
from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import fsinfo, pagecache
from .errors import IolabError
from .witness import Witness, Witnessed
from .pagecache import PAGE_SIZE, Residency
from .units import MiB, parse_size
from .tools import bpftrace

ADVICE = {"normal": os.POSIX_FADV_NORMAL, "sequential": os.POSIX_FADV_SEQUENTIAL,
          "random": os.POSIX_FADV_RANDOM}

# a sweep that would make more read() calls than this is refused (about 20 s of Python here)
MAX_CALLS = 20_000_000

SWEEP_COLUMNS = ["read_size", "file_size", "seconds", "calls", "bytes_per_s", "mib_per_s",
                 "us_per_call", "cache", "resident_before", "from_storage", "device_read"]


def _file(path: str | os.PathLike[str]) -> Path:
    p, st = pagecache.check_path(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{p} is a directory: give a file")
    return p


def _advice(advice: str) -> int:
    if advice not in ADVICE:
        raise ValueError(f"advice must be one of {', '.join(ADVICE)}, got {advice!r}")
    return ADVICE[advice]


def _make_cold(p: Path, strict: bool = True) -> Residency:
    left = pagecache.evict(p)
    if not strict:
        return left
    if not left.reliable:
        raise IolabError(f"cannot verify that {p} is out of the page cache: {left.note}")
    if left.resident:
        raise IolabError(f"cannot make {p} cold: {left.note}")
    return left


def _read_whole(p: Path, size: int) -> tuple[float, int, int]:
    """Read p to EOF with os.read(fd, size): (seconds, calls, bytes)."""
    fd = os.open(p, os.O_RDONLY)
    try:
        calls = total = 0
        read = os.read
        t0 = time.perf_counter()
        while True:
            chunk = read(fd, size)
            calls += 1
            if not chunk:
                break
            total += len(chunk)
        seconds = time.perf_counter() - t0
    finally:
        os.close(fd)
    return seconds, calls, total


def _witnessed(w: Witness) -> Witnessed:
    """What a Witness saw, once its block has ended (it always has a result then)."""
    if w.result is None:
        raise IolabError("the kernel's witness of this read has no result: its block did not end")
    return w.result


def read_size_sweep(path: str | os.PathLike[str], sizes: Iterable[int | str], *, cache: str = "cold",
                    max_calls: int = MAX_CALLS, strict: bool = True) -> pd.DataFrame:
    """Read the whole file once per read size with unbuffered ``read()`` calls, and time each pass.

    ``cache="cold"`` evicts the file before each pass (and checks it worked); ``"warm"`` reads it
    once first, so every pass is served from memory. Columns: read_size, file_size (bytes), seconds,
    calls (including the last one that returns 0 at end of file), bytes_per_s, mib_per_s,
    us_per_call, cache, resident_before (fraction), and the pass's witness: from_storage (bytes the
    kernel fetched from storage for it; None without a block device) and device_read (the device's,
    for everyone). ``strict=False``: a file that cannot be evicted
    (tmpfs) is read anyway, and ``resident_before`` says it was not cold.
    """
    if cache not in ("cold", "warm"):
        raise ValueError(f"cache must be 'cold' or 'warm', got {cache!r}")
    p = _file(path)
    sizes_b: list[int] = [parse_size(s) for s in sizes]
    if not sizes_b:
        raise ValueError("give at least one read size")
    if any(s <= 0 for s in sizes_b):
        raise ValueError("read sizes must be at least 1 byte")
    file_size = p.stat().st_size
    if file_size == 0:
        raise ValueError(f"{p} is empty: there is nothing to read")
    worst = file_size // min(sizes_b) + 1
    if worst > max_calls:
        raise ValueError(f"reading {file_size:,} bytes {min(sizes_b)} at a time takes {worst:,} read() calls, "
                         f"more than max_calls={max_calls:,}: use a smaller file or larger reads")
    rows = []
    for size in sizes_b:
        if cache == "cold":
            _make_cold(p, strict)
        else:
            _read_whole(p, MiB)
        before = pagecache.residency(p, keep_map=False)
        with Witness(p) as w:
            seconds, calls, total = _read_whole(p, size)
        seen = _witnessed(w)
        rows.append({"read_size": size, "file_size": total, "seconds": seconds, "calls": calls,
                     "bytes_per_s": total / seconds if seconds > 0 else float("inf"),
                     "mib_per_s": total / seconds / MiB if seconds > 0 else float("inf"),
                     "us_per_call": seconds / calls * 1e6, "cache": cache,
                     "resident_before": before.fraction,
                     "from_storage": seen.own_read if seen.device is not None else None,
                     "device_read": seen.device_read})
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def window(path: str | os.PathLike[str], nbytes: int | str = 1, advice: str = "normal", *,
           offset: int | str = 0, strict: bool = True) -> Residency:
    """Evict ``path``, read ``nbytes`` at ``offset`` with that posix_fadvise advice, and return
    the residency: the pages the kernel brought in for that one read (its readahead window).
    ``strict=False`` reads even when the eviction left pages (tmpfs)."""
    return window_witnessed(path, nbytes, advice, offset=offset, strict=strict)[0]


def window_witnessed(path: str | os.PathLike[str], nbytes: int | str = 1, advice: str = "normal", *,
                     offset: int | str = 0, strict: bool = True) -> tuple[Residency, Witnessed]:
    """:func:`window`, with the kernel's witness of the one read: ``own_read`` is the bytes it made
    the storage layer fetch (the readahead window included), ``device_read`` what the device read for
    everyone in that time."""
    p = _file(path)
    n = parse_size(nbytes)
    off = parse_size(offset)
    if n <= 0:
        raise ValueError("nbytes must be at least 1")
    code = _advice(advice)
    _make_cold(p, strict)
    with Witness(p) as w:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, code)
            os.pread(fd, n, off)
        finally:
            os.close(fd)
    return pagecache.residency(p), _witnessed(w)


def trace_growth(path: str | os.PathLike[str], read_size: int | str = "4KiB", *, strict: bool = True):
    """Evict ``path``, then read it sequentially in ``read_size`` calls while bpftrace traces its
    readahead windows and the folios added to the page cache (root, tracefs and bpftrace needed:
    :func:`iolab.tools.bpftrace.why_not`). Returns (the bpftrace Run, the Witnessed of the read)."""

    p = _file(path)
    rs = parse_size(read_size)
    if rs <= 0:
        raise ValueError("read_size must be at least 1 byte")
    script = bpftrace.readahead_script(p, readahead_events=bpftrace.tracepoint_exists("readahead:page_cache_ra_order"))
    _make_cold(p, strict)
    with bpftrace.Tracer(script) as tracer:
        with Witness(p) as w:
            fd = os.open(p, os.O_RDONLY)
            try:
                while os.read(fd, rs):
                    pass
            finally:
                os.close(fd)
        time.sleep(0.1)                 # let bpftrace's buffer drain before SIGINT
    return tracer.run, w.result


GROWTH_FOLIO_COLUMNS = ["folio", "ms", "index", "order", "pages", "window"]
GROWTH_WINDOW_COLUMNS = ["window", "ms", "trigger", "start", "size", "async_size", "order", "folios",
                         "pages_added", "max_order"]


def growth_frames(records: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The parsed trace (:func:`iolab.tools.bpftrace.parse`) as two tables.

    The events are taken in time order (by ``ns``), not in the order bpftrace printed them.
    folios: one row per folio added (ms since the first event, page index, order, pages, and the
    window it belongs to: the last ``window`` event before it, 0 when the trace has none).
    windows: one row per readahead window (what triggered it: the sync miss or the async marker;
    start page, size and async_size in pages, the folio order asked for, and what was added).
    """
    if not records:
        raise ValueError("no trace records")
    # bpftrace prints each CPU's buffer in turn: on a busy machine its lines are not in time order, so
    # the events are taken by their timestamps (stable: one CPU's events keep their order)
    records = sorted(records, key=lambda r: r["ns"])
    t0 = records[0]["ns"]
    folios: list[dict] = []
    windows: list[dict] = []
    trigger = ""
    for r in records:
        ms = (r["ns"] - t0) / 1e6
        if r["kind"] in ("sync", "async"):
            trigger = r["kind"]
        elif r["kind"] == "window":
            windows.append({"window": len(windows) + 1, "ms": ms, "trigger": trigger, "start": r["index"],
                            "size": r["size"], "async_size": r["async_size"], "order": r["order"]})
            trigger = ""
        else:
            folios.append({"folio": len(folios) + 1, "ms": ms, "index": r["index"], "order": r["order"],
                           "pages": 1 << r["order"], "window": len(windows)})
    f = pd.DataFrame(folios, columns=GROWTH_FOLIO_COLUMNS)
    w = pd.DataFrame(windows, columns=GROWTH_WINDOW_COLUMNS[:7])
    if len(w):
        added = f.groupby("window").agg(folios=("folio", "size"), pages_added=("pages", "sum"),
                                        max_order=("order", "max"))
        w = w.join(added, on="window")
        w[["folios", "pages_added"]] = w[["folios", "pages_added"]].fillna(0).astype(int)
        w["max_order"] = w["max_order"].astype("Int64")
    else:
        w = pd.DataFrame(columns=GROWTH_WINDOW_COLUMNS)
    return f, w


def window_growth(path: str | os.PathLike[str], read_size: int | str = "4KiB", reads: int = 64,
                  advice: str = "normal", *, strict: bool = True) -> pd.DataFrame:
    """Evict, then make ``reads`` sequential reads of ``read_size``, probing residency after each.

    Columns: read (1..reads), bytes_read, pages_read (pages the program asked for), resident (pages in
    the cache), ahead (resident - pages_read: what readahead fetched beyond the request).
    """
    p = _file(path)
    rs = parse_size(read_size)
    if rs <= 0:
        raise ValueError("read_size must be at least 1 byte")
    if isinstance(reads, bool) or not isinstance(reads, int) or reads < 1:
        raise ValueError(f"reads must be a positive int, got {reads!r}")
    code = _advice(advice)
    size = p.stat().st_size
    _make_cold(p, strict)
    rows = []
    fd = os.open(p, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, code)
        done = 0
        for i in range(1, reads + 1):
            got = len(os.read(fd, rs))
            done += got
            r = pagecache.residency(p, keep_map=False)
            asked = -(-done // PAGE_SIZE)
            rows.append({"read": i, "bytes_read": done, "pages_read": asked, "resident": r.resident,
                         "ahead": r.resident - asked, "advice": advice})
            if got == 0 or done >= size:
                break
    finally:
        os.close(fd)
    return pd.DataFrame(rows, columns=["read", "bytes_read", "pages_read", "resident", "ahead", "advice"])


def initial_window_pages(req_pages: int, max_pages: int) -> int:
    """The first readahead window (pages) Linux opens for a read of ``req_pages`` at the start of a
    file, with a readahead maximum of ``max_pages``: ``get_init_ra_size`` in mm/readahead.c. The
    request is rounded up to a power of two, then x4 while small (<= max/32), x2 while medium
    (<= max/4), else the maximum. (A larger page-cache folio can round it up on some filesystems.)"""
    if req_pages < 1 or max_pages < 1:
        raise ValueError("need req_pages >= 1 and max_pages >= 1")
    size = 1 << (int(req_pages) - 1).bit_length()
    if size <= max_pages / 32:
        return size * 4
    if size <= max_pages / 4:
        return size * 2
    return int(max_pages)


# the kernel's default readahead maximum: VM_READAHEAD_PAGES = SZ_128K / PAGE_SIZE (include/linux/pagemap.h)
KERNEL_DEFAULT_KB = 128


# --- the readahead setting ---------------------------------------------------------------------

@dataclass(frozen=True)
class ReadAhead:
    """The readahead setting behind a path: ``kb`` (None when there is none) and where it comes from."""

    kb: int | None
    source: str          # the sysfs file read, or "" when none applies
    reason: str          # what it means here, or why there is none
    fstype: str = ""

    def __str__(self) -> str:
        if self.kb is None:
            return f"no readahead setting: {self.reason}"
        return f"read_ahead_kb = {self.kb} ({self.source}){': ' + self.reason if self.reason else ''}"


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def read_ahead_kb(path: str | os.PathLike[str], *, sysfs: str | os.PathLike[str] = "/sys",
                  mount: fsinfo.Mount | None = None) -> ReadAhead:
    """The readahead setting (KiB) of the block device or bdi behind ``path``, with its source.

    tmpfs and overlay have none of their own (``kb=None`` and the reason). For FUSE and network
    filesystems the kernel's per-mount bdi value is returned, with a note on what else may prefetch.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file or directory: {p}") from None
    sys_root = Path(sysfs)
    m = mount or fsinfo.mount_of(p)
    fs = m.fstype
    if fs in fsinfo.MEMORY_FS:
        return ReadAhead(None, "", f"{fs} keeps files in memory: there is no device to read ahead from", fs)
    if fs == "overlay":
        return ReadAhead(None, "", "overlay has no device of its own: reads go to the filesystem under it "
                                   "(its upperdir/lowerdir), whose device's setting applies", fs)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    bdi = sys_root / "class" / "bdi" / f"{major}:{minor}" / "read_ahead_kb"
    kb = _read_int(bdi)
    if kb is not None:
        note = ""
        if fs.startswith("fuse"):
            note = ("FUSE: the kernel reads ahead up to this much per file, and the FUSE daemon "
                    "(s3fs, gcsfuse, rclone...) may cache or prefetch on its own")
        elif fs in ("nfs", "nfs4", "ceph", "lustre", "beegfs", "gpfs", "cifs", "smb3"):
            note = (f"{fs}: the client reads ahead this much per file over the network; the servers may "
                    "prefetch too")
        return ReadAhead(kb, str(bdi), note, fs)
    # btrfs and a few others use an anonymous st_dev: go through the mount's source device
    src = m.source
    if src.startswith("/dev/"):
        try:
            rdev = os.stat(src).st_rdev
        except OSError:
            rdev = None
        if rdev:
            dev = sys_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
            for q in (dev / "queue" / "read_ahead_kb", dev / ".." / "queue" / "read_ahead_kb"):
                kb = _read_int(q)
                if kb is not None:
                    return ReadAhead(kb, str(q), f"from the device {src} of this {fs} mount", fs)
    if fs.startswith("fuse"):
        return ReadAhead(None, "", "FUSE mount without a readable bdi: the FUSE daemon decides what to "
                                   "prefetch", fs)
    return ReadAhead(None, "", f"no block device or bdi found for {p} ({fs}, device {major}:{minor})", fs)
