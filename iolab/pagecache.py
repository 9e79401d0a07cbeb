"""Which pages of a file are in memory, and how to get them out again (no root needed).

* :func:`residency` asks the kernel, page by page, with ``mmap`` + ``mincore(2)`` (what vmtouch and
  fincore do). Linux >= 5.2 answers truthfully only for files the caller owns or could open for
  writing; for any other file it claims every page is resident. iolab detects that case and marks
  the answer ``reliable=False`` instead of passing the false "100 %" on.
* :func:`evict` drops a file's clean pages with ``fdatasync`` + ``posix_fadvise(POSIX_FADV_DONTNEED)``
  and checks again; what stayed (dirty pages, tmpfs, pages mapped by a process) is reported.
* :func:`drop_caches` empties the whole page cache, which needs root.
* :func:`meminfo` and :class:`MeminfoSampler`: Cached / Dirty / Writeback in bytes, over time.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import mmap
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import fsinfo
from .errors import IolabError, ParseError
from .units import format_size

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

# map this many bytes of the file at a time: bounded address space and vector size for any file
_CHUNK = 1 << 30

# filesystems whose page cache is not a cache of a device

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.restype = ctypes.c_int
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
_MAP_FAILED = ctypes.c_void_p(-1).value


class NotARegularFile(IolabError, ValueError):
    """The path is a FIFO, a socket or a device: it has no page cache of its own to inspect."""


@dataclass(frozen=True)
class Residency:
    """What part of a file (or of the files under a directory) is in the page cache."""

    path: str
    size: int                       # bytes (st_size); for a directory, the sum over its files
    pages: int                      # pages the file spans: ceil(size / page_size)
    resident: int                   # pages in memory now
    page_size: int = PAGE_SIZE
    map: np.ndarray | None = field(default=None, repr=False, compare=False)   # bool, one per page
    reliable: bool = True           # False: the kernel would not tell the truth about this file
    note: str = ""                  # why it is unreliable, or what stayed after an eviction
    fstype: str = ""
    files: pd.DataFrame | None = field(default=None, repr=False, compare=False)  # directory: per file

    @property
    def fraction(self) -> float:
        """Resident pages / pages (0.0 for an empty file). NaN when unreliable."""
        if not self.reliable:
            return math.nan
        return self.resident / self.pages if self.pages else 0.0

    @property
    def resident_bytes(self) -> int:
        return min(self.resident * self.page_size, self.size) if self.pages else 0

    def __str__(self) -> str:
        if not self.reliable:
            return f"{self.path}: residency unknown ({self.note})"
        s = (f"{self.path}: {self.resident:,} of {self.pages:,} pages resident "
             f"({self.fraction:.1%}, {format_size(self.resident_bytes)} of {format_size(self.size)})")
        return s + (f" — {self.note}" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "pages": self.pages, "resident": self.resident,
                "fraction": self.fraction, "reliable": self.reliable, "note": self.note, "fstype": self.fstype}


# --- residency ---------------------------------------------------------------------------------

def check_path(path: str | os.PathLike[str]) -> tuple[Path, os.stat_result]:
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file or directory: {p}") from None
    except PermissionError:
        raise PermissionError(f"permission denied: cannot look up {p} (a directory on the way is not "
                              "searchable by you)") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a block device" if stat.S_ISBLK(st.st_mode) else "a character device"
                if stat.S_ISCHR(st.st_mode) else "not a regular file")
        raise NotARegularFile(f"{p} is {kind}: only regular files (or directories of them) have page-cache "
                              "residency to inspect")
    return p, st


def _can_see(st: os.stat_result, path: Path) -> tuple[bool, str]:
    """Would mincore(2) tell this process the truth about this file? (Linux >= 5.2 rule.)

    The kernel answers for files the caller owns (or has CAP_FOWNER over, e.g. root) or could open
    for writing; for others it reports every page as resident.
    """
    if os.geteuid() == 0 or st.st_uid == os.geteuid():
        return True, ""
    if os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
        return True, ""
    return False, ("you neither own this file nor may write it; since Linux 5.2 mincore() then reports "
                   "every page as resident, so the true residency is hidden from you")


def mincore_fd(fd: int, size: int, keep_map: bool) -> tuple[int, np.ndarray | None]:
    """Resident page count (and the per-page map) of an open file, chunk by chunk."""
    pages = -(-size // PAGE_SIZE)
    out = np.empty(pages, dtype=np.uint8) if keep_map else None
    scratch = np.empty(0 if keep_map else min(pages, _CHUNK // PAGE_SIZE), dtype=np.uint8)   # (without a map)
    resident = 0
    offset = 0
    while offset < size:
        length = min(_CHUNK, size - offset)
        first = offset // PAGE_SIZE
        n = -(-length // PAGE_SIZE)
        addr = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
        if addr is None or addr == _MAP_FAILED:
            err = ctypes.get_errno()
            raise OSError(err, f"mmap failed: {os.strerror(err)}")
        try:
            vec = out[first:first + n] if out is not None else scratch[:n]
            if _libc.mincore(addr, length, vec.ctypes.data) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"mincore failed: {os.strerror(err)}")
        finally:
            _libc.munmap(addr, length)
        vec &= 1                      # the other bits are reserved
        resident += int(np.count_nonzero(vec))
        offset += length
    return resident, (out.view(bool) if out is not None else None)


def _file_residency(p: Path, st: os.stat_result, keep_map: bool, fstype: str) -> Residency:
    reliable, why = _can_see(st, p)
    size = st.st_size
    pages = -(-size // PAGE_SIZE)
    if size == 0:
        return Residency(str(p), 0, 0, 0, map=np.zeros(0, dtype=bool) if keep_map else None,
                         reliable=reliable, note=why, fstype=fstype)
    try:
        noatime = getattr(os, "O_NOATIME", 0) if st.st_uid == os.geteuid() else 0
        fd = os.open(p, os.O_RDONLY | noatime)
    except PermissionError:
        raise PermissionError(f"permission denied: cannot open {p} for reading, so its residency cannot "
                              "be probed (mincore needs a mapping of the file)") from None
    try:
        size = os.fstat(fd).st_size          # it may have changed since stat()
        pages = -(-size // PAGE_SIZE)
        resident, pmap = mincore_fd(fd, size, keep_map) if size else (0, np.zeros(0, bool))
    finally:
        os.close(fd)
    if not reliable:
        return Residency(str(p), size, pages, resident, map=None, reliable=False, note=why, fstype=fstype)
    note = ""
    if fstype in fsinfo.MEMORY_FS:
        note = f"{fstype} keeps files in memory: their pages are the file itself, not a cache"
    return Residency(str(p), size, pages, resident, map=pmap if keep_map else None, note=note, fstype=fstype)


def residency(path: str | os.PathLike[str], *, keep_map: bool = True) -> Residency:
    """Pages of ``path`` in the page cache, via mmap + mincore(2). No root needed, nothing is read.

    A directory gives one row per regular file under it in ``.files`` and the totals in the result.
    ``keep_map=False`` skips the per-page map (memory stays bounded by one 1 GiB window's vector).
    """
    p, st = check_path(path)
    fstype = fsinfo.fstype(p)
    if stat.S_ISREG(st.st_mode):
        return _file_residency(p, st, keep_map, fstype)
    rows, maps = [], []
    unreliable = []
    for dirpath, dirnames, filenames in os.walk(p, onerror=None):
        dirnames.sort()
        for name in sorted(filenames):
            fp = Path(dirpath) / name
            try:
                fst = fp.lstat()
            except OSError:
                continue
            if not stat.S_ISREG(fst.st_mode):
                continue
            try:
                r = _file_residency(fp, fst, keep_map, fstype)
            except PermissionError as e:
                rows.append({"path": str(fp), "size": fst.st_size, "pages": -(-fst.st_size // PAGE_SIZE),
                             "resident": 0, "fraction": math.nan, "reliable": False, "note": str(e)})
                unreliable.append(str(fp))
                continue
            rows.append({k: v for k, v in r.to_dict().items() if k != "fstype"})
            if not r.reliable:
                unreliable.append(str(fp))
            if keep_map and r.map is not None:
                maps.append(r.map)
    files = pd.DataFrame(rows, columns=["path", "size", "pages", "resident", "fraction", "reliable", "note"])
    note = (f"{len(unreliable)} of {len(rows)} files could not be probed truthfully (see .files)"
            if unreliable else "")
    ok = files[files["reliable"]] if len(files) else files
    return Residency(str(p), int(files["size"].sum()) if len(files) else 0,
                     int(ok["pages"].sum()) if len(ok) else 0, int(ok["resident"].sum()) if len(ok) else 0,
                     map=np.concatenate(maps) if (keep_map and maps and not unreliable) else None,
                     reliable=not unreliable, note=note, fstype=fstype, files=files)


# --- eviction ----------------------------------------------------------------------------------

def _evict_file(p: Path, st: os.stat_result) -> None:
    try:
        fd = os.open(p, os.O_RDONLY)
    except PermissionError:
        raise PermissionError(f"permission denied: cannot open {p} for reading, so it cannot be evicted "
                              "(posix_fadvise needs an open file)") from None
    try:
        try:
            os.fdatasync(fd)        # dirty pages cannot be dropped: write them back first
        except OSError:
            pass                    # some filesystems refuse fdatasync on a read-only fd; try anyway
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def evict(path: str | os.PathLike[str], *, retries: int = 3) -> Residency:
    """Drop ``path``'s pages from the page cache without root, then check what is left.

    fdatasync first (dirty pages are never dropped), then posix_fadvise(DONTNEED). The result is the
    residency *after*; when pages stayed, ``.note`` says the likely reason instead of pretending.
    """
    p, st = check_path(path)
    fstype = fsinfo.fstype(p)
    files = [p] if stat.S_ISREG(st.st_mode) else [
        Path(d) / n for d, _, names in os.walk(p) for n in names if (Path(d) / n).is_file()]
    for _ in range(max(retries, 1)):
        for f in files:
            _evict_file(f, f.stat())
        after = residency(p, keep_map=stat.S_ISREG(st.st_mode))
        if not after.reliable or after.resident == 0 or fstype in fsinfo.MEMORY_FS:
            break
        time.sleep(0.05)            # pages under writeback finish, then go on the next try
    if not after.reliable:
        return after
    if after.resident == 0:
        return after
    if fstype in fsinfo.MEMORY_FS:
        why = (f"{fstype} has no device behind it: its pages are the file, and posix_fadvise(DONTNEED) "
               "cannot drop them. Use a directory on a disk-backed filesystem to measure cold reads")
    elif fstype.startswith("fuse"):
        why = ("FUSE: the kernel cache of this mount may be managed by the FUSE daemon, which can keep or "
               "refill pages; eviction is not under your control here")
    else:
        why = ("these pages stayed: they are dirty or under writeback (the write-back has not finished), "
               "or a process has the file mapped (mmap) or locked in memory; close it and evict again")
    return Residency(after.path, after.size, after.pages, after.resident, after.page_size, after.map,
                     after.reliable, f"eviction incomplete: {after.resident:,} pages stayed — {why}",
                     after.fstype, after.files)


def drop_caches(level: int = 3) -> None:
    """sync, then write ``level`` to /proc/sys/vm/drop_caches (1 page cache, 2 dentries+inodes, 3 both).

    Needs root; without it raises PermissionError that points to :func:`evict`, which needs no root.
    """
    if level not in (1, 2, 3) or isinstance(level, bool):
        raise ValueError(f"level must be 1 (page cache), 2 (dentries and inodes) or 3 (both), got {level!r}")
    hint = ("use iolab.pagecache.evict(path) instead: it drops one file's pages without root "
            "(posix_fadvise DONTNEED)")
    if os.geteuid() != 0:
        raise PermissionError(f"drop_caches needs root (you are uid {os.geteuid()}); {hint}")
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write(f"{level}\n")
    except OSError as e:
        raise PermissionError(f"cannot write /proc/sys/vm/drop_caches even as root ({e.strerror}: a "
                              f"container usually mounts /proc/sys read-only); {hint}") from None


# --- meminfo -----------------------------------------------------------------------------------

def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo text -> {field: bytes} ("kB" lines in bytes; HugePages_* counts stay counts).

    The kernel ends every line with a newline: a text that ends inside a line (a number that may be
    cut short) raises ParseError naming it, as does any line not of the form ``Name:  <number> [kB]``
    or a field given twice."""

    out: dict[str, int] = {}
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        name, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not name.strip() or not parts or not re.fullmatch(r"[0-9]{1,20}", parts[0]) or len(parts) > 2 or \
                (len(parts) == 2 and parts[1] != "kB"):
            raise ParseError("expected 'Name:   <number> [kB]'", line_no=no, line=line)
        if no == len(lines) and not text.endswith(("\n", "\r")):
            raise ParseError("/proc/meminfo text ends inside this line (no newline after it): cut short",
                             line_no=no, line=line)
        if name.strip() in out:
            raise ParseError(f"{name.strip()!r} is given twice", line_no=no, line=line)
        out[name.strip()] = int(parts[0]) * (1024 if len(parts) == 2 else 1)
    if not out:
        raise ParseError("empty /proc/meminfo text")
    return out


def meminfo() -> dict[str, int]:
    """This machine's /proc/meminfo in bytes: MemTotal, MemAvailable, Cached, Dirty, Writeback, ..."""
    with open("/proc/meminfo") as f:
        return parse_meminfo(f.read())


SAMPLED = ("Dirty", "Writeback", "Cached")


class MeminfoSampler:
    """Sample /proc/meminfo in a background thread while something runs.

    >>> with MeminfoSampler(interval=0.02) as s:      # doctest: +SKIP
    ...     write_something(); s.mark("written")
    ...     fsync_it(); s.mark("fsync returned")
    >>> s.frame()   # t (s), Dirty, Writeback, Cached (bytes), event
    """

    def __init__(self, interval: float = 0.05, fields: Iterable[str] = SAMPLED):
        if not interval > 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval!r}")
        self.interval = float(interval)
        self.fields = tuple(fields)
        self._rows: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()

    def _sample(self, event: str = "") -> None:
        m = meminfo()
        row = {"t": time.perf_counter() - self._t0, **{k: m.get(k, 0) for k in self.fields}, "event": event}
        with self._lock:
            self._rows.append(row)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> "MeminfoSampler":
        missing = [k for k in self.fields if k not in meminfo()]
        if missing:
            raise ValueError(f"/proc/meminfo has no {', '.join(missing)}")
        self._t0 = time.perf_counter()
        self._sample("start")
        self._thread = threading.Thread(target=self._loop, name="iolab-meminfo", daemon=True)
        self._thread.start()
        return self

    def mark(self, event: str) -> None:
        """Take a sample now, labelled (e.g. "write returned", "fsync returned")."""
        self._sample(event)

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._sample("stop")

    def __enter__(self) -> "MeminfoSampler":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def frame(self) -> pd.DataFrame:
        with self._lock:
            return pd.DataFrame(self._rows, columns=["t", *self.fields, "event"])


def sample_meminfo(fn: Callable[[], Any], *, interval: float = 0.05, tail: float = 0.0,
                   fields: Iterable[str] = SAMPLED) -> tuple[Any, pd.DataFrame]:
    """Run ``fn()`` while sampling meminfo; keep sampling ``tail`` seconds after. Returns (result, frame)."""
    with MeminfoSampler(interval, fields) as s:
        result = fn()
        s.mark("returned")
        if tail > 0:
            time.sleep(tail)
    return result, s.frame()
