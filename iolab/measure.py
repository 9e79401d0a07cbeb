"""Timed reads and writes that say which layer served them.

A rate alone proves nothing. Each :class:`Measurement` carries what the kernel witnessed during it
(:class:`iolab.witness.Witnessed`: the bytes this process made the storage layer move, and what the
block device moved for everyone), the file's page-cache residency before and after, and a
:class:`Verdict`:

* ``"served from page cache"`` — the kernel counted (next to) no byte from storage for the bytes
  read; or, without a witness, the pages were already in memory, or the rate is beyond what the
  device behind the directory delivers uncached (a seed's 239,576 MiB/s IOR read is one of these);
* ``"from the device"`` — the kernel counted the bytes read as read from storage; without a
  witness: nothing was cached before the read and the rate is within the device's;
* ``"unclear"`` — partly from each, a measurement **disturbed** by someone else's traffic on the
  same device, nothing to compare with, or evidence that disagrees.

The witness is the first ground of a verdict (``Verdict.ground == "witness"``); the rate against the
device's is kept as a second, weaker one. Where no witness can be read (tmpfs and other filesystems
without a block device, network and FUSE filesystems whose reads are not block I/O, a kernel without
task I/O accounting) the verdict says so and why, then gives today's inference from residency and
rate, saying that it is inference (``ground == "inference"``).

:func:`device_rate` measures the device's uncached rate once per filesystem per session: it writes
a fresh file in a private workspace in that directory, evicts it, checks that nothing is resident,
and reads it.
"""
from __future__ import annotations

import math
import mmap
import os
import stat
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from . import fsinfo, pagecache, workspace
from .errors import IolabError
from .pagecache import Residency
from .units import MiB, format_rate, format_size, parse_size
from .witness import CacheStat, Witness, Witnessed, cachestat

CACHE = "served from page cache"
DEVICE = "from the device"
UNCLEAR = "unclear"
LABELS = (CACHE, DEVICE, UNCLEAR)

# a measured rate this many times the device's counts as "beyond the device" (rates are noisy)
TOLERANCE = 2.0
# resident fraction at or above which a read is served from memory, at or below which it is not
MOSTLY = 0.95
HARDLY = 0.05
# device bytes a measurement may move beyond the share above and still count as "none": an inode,
# a journal commit, an atime update
SLACK = 256 * 1024

WITNESS = "witness"
INFERENCE = "inference"
NOT_WITNESSED = "no kernel counters were taken around this measurement"


@dataclass(frozen=True)
class Verdict:
    label: str      # one of LABELS
    reason: str
    ground: str = INFERENCE     # "witness": the kernel's counts decided it; "inference": residency and rate
    # what judge / judge_write were given (bytes_per_s, device_bps, resident_fraction, nbytes, witness...),
    # so that an exercise check can compare the numbers, not only the label (issue 32); empty when a
    # Verdict is made by hand. Not part of equality.
    given: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"verdict label must be one of {LABELS}, got {self.label!r}")
        if self.ground not in (WITNESS, INFERENCE):
            raise ValueError(f"verdict ground must be {WITNESS!r} or {INFERENCE!r}, got {self.ground!r}")

    @property
    def witnessed(self) -> bool:
        return self.ground == WITNESS

    def __str__(self) -> str:
        return f"{self.label}: {self.reason}"


def _positive(name: str, value: Any, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value <= 0 \
            or math.isinf(value):
        raise ValueError(f"{name} must be a positive number of bytes per second, got {value!r}")
    return float(value)


def judge(bytes_per_s: float, *, device_bps: float | None, resident_fraction: float | None = None,
          tolerance: float = TOLERANCE, witness: Witnessed | None = None, nbytes: int | None = None) -> Verdict:
    """Which layer served a read of ``nbytes`` that ran at ``bytes_per_s``?

    ``witness``: what the kernel counted during the read (:class:`iolab.witness.Witness`), the first
    ground: bytes from storage against bytes read (``nbytes``, needed with a witness). Without one,
    or where it cannot testify (no block device, a disturbed device and no count of our own), the
    verdict says why and falls back to inference from:

    ``device_bps``: the uncached rate of the device behind the file (see :func:`device_rate`), or
    None when unknown. ``resident_fraction``: the part of the file in the page cache *before* the
    read (0..1), or None when unknown. A rate above ``tolerance`` x the device's cannot come from it.
    """
    given = dict(bytes_per_s=bytes_per_s, device_bps=device_bps, resident_fraction=resident_fraction,
                 tolerance=tolerance, witness=witness, nbytes=nbytes)
    inferred = _infer_read(bytes_per_s, device_bps=device_bps, resident_fraction=resident_fraction,
                           tolerance=tolerance)
    if witness is None:
        return replace(_as_inference(inferred, NOT_WITNESSED), given=given)
    n = _nbytes(nbytes)
    return replace(_witnessed_read(witness, n, bytes_per_s, device_bps, tolerance, inferred), given=given)


def _nbytes(nbytes: Any) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
        raise ValueError(f"a witnessed verdict needs nbytes, the bytes read or written (a positive int), "
                         f"got {nbytes!r}")
    return nbytes


def _as_inference(v: Verdict, why: str) -> Verdict:
    why = why.rstrip(".")
    return Verdict(v.label, f"no witness: {why}. By inference: {v.reason}", INFERENCE)


def _rate_ground(rate: float, device_bps: float | None, tolerance: float) -> tuple[str, bool | None]:
    """The second ground in words, and whether the rate was beyond the device (None: no device rate)."""
    if device_bps is None:
        return "", None
    beyond = rate > device_bps * tolerance
    return (f"{format_rate(rate)} is {rate / device_bps:,.1f}x the device's uncached {format_rate(device_bps)}",
            beyond)


def disturbance(witness: Witnessed) -> str:
    """In words, the device traffic during a measurement that was not its own ("" when quiet)."""
    if not witness.disturbed:
        return ""
    bits = []
    if (witness.others_read or 0) > 0:
        bits.append(f"{format_size(witness.others_read)} read")
    if (witness.others_written or 0) > 0:
        bits.append(f"{format_size(witness.others_written)} written")
    return (f"DISTURBED: the device {witness.device} moved {' and '.join(bits)} beyond this measurement's own "
            "bytes while it ran (another user or program, write-back of older dirty pages, the journal)")


def _witnessed_read(w: Witnessed, n: int, bytes_per_s: float, device_bps: float | None, tolerance: float,
                    inferred: Verdict) -> Verdict:
    rate = float(bytes_per_s)
    read = format_size(n)
    second, beyond = _rate_ground(rate, _positive("device_bps", device_bps), tolerance)
    if w.device is None or w.device_read is None:
        # no block device: task accounting's 0 proves nothing (a network or FUSE filesystem's reads
        # are not block I/O), so only inference is left
        why = "; ".join(w.notes) or "no block device behind this file"
        return _as_inference(inferred, why)
    noise = HARDLY * n + SLACK
    if w.own_read is None:
        # only the device's counters: an upper bound on what this read can have fetched
        if w.device_read <= noise:
            return Verdict(CACHE, f"the device {w.device} moved {format_size(w.device_read)} for everyone while "
                                  f"{read} were read: memory served it (no count of this process's own bytes "
                                  "here, but the whole device's is an upper bound on it)"
                                  + (f"; second ground: {second}" if second else ""), WITNESS)
        return _as_inference(inferred, f"the device {w.device} moved {format_size(w.device_read)}, but without "
                                       "task I/O accounting this read's share of it cannot be told")
    own = w.own_read
    lead = f"{format_size(own)} came from storage while {read} were read"
    dev = f"the device {w.device} read {format_size(w.device_read)} in that time, for everyone"
    if own <= noise:
        label, what = CACHE, "memory served it"
    elif own >= MOSTLY * n:
        label, what = DEVICE, "the block device served it"
    else:
        label, what = UNCLEAR, (f"{own / n:.0%} came from the device and the rest from memory: the rate mixes "
                                "the two")
    reason = f"{lead}: {what} ({dev})"
    if label == DEVICE:
        if beyond:
            reason += (f"; yet {second}: below the block device a cache answered (a VM host's memory, a "
                       "controller's or the disk's own cache), which the kernel cannot see")
        else:
            reason += ("; a cache below the block device (a VM host's, the disk's) is invisible to these "
                       "counters" + (f", and {second}" if second else ""))
    elif second:
        reason += f"; second ground: {second}"
    d = disturbance(w)
    if d:
        return Verdict(UNCLEAR, f"{d}, so the time was shared and the rate is not this read's alone. Its own "
                                f"count still says: {reason}", WITNESS)
    return Verdict(label, reason, WITNESS)


def _infer_read(bytes_per_s: float, *, device_bps: float | None, resident_fraction: float | None = None,
                tolerance: float = TOLERANCE) -> Verdict:
    """Today's inference: residency before the read, and the rate against the device's."""
    rate = _positive("bytes_per_s", bytes_per_s, allow_none=False)
    dev = _positive("device_bps", device_bps)
    if resident_fraction is not None:
        if isinstance(resident_fraction, bool) or not isinstance(resident_fraction, (int, float)) \
                or not 0 <= resident_fraction <= 1:
            raise ValueError(f"resident_fraction must be between 0 and 1 (or None), got {resident_fraction!r}")
    if not tolerance >= 1:
        raise ValueError(f"tolerance must be >= 1, got {tolerance!r}")
    beyond = dev is not None and rate > dev * tolerance
    ratio = f"{rate / dev:,.1f}x" if dev else ""
    if resident_fraction is None:
        if beyond:
            return Verdict(CACHE, f"{format_rate(rate)} is {ratio} the device's uncached "
                                  f"{format_rate(dev)}: far beyond what the device delivered uncached, so most "
                                  "likely memory served it (a rule of thumb, not a proof: the witness "
                                  "would count the bytes)")
        if dev is not None:
            return Verdict(UNCLEAR, f"{format_rate(rate)} is within the device's uncached {format_rate(dev)}, "
                                    "but without the residency before the read a cache cannot be ruled out")
        return Verdict(UNCLEAR, "neither the device's uncached rate nor the residency is known: "
                                "nothing to compare the rate with")
    pct = f"{resident_fraction:.0%}"
    if resident_fraction >= MOSTLY:
        extra = f"; it ran at {ratio} the device's uncached rate" if dev else ""
        return Verdict(CACHE, f"{pct} of the file was in the page cache before the read{extra}")
    if resident_fraction <= HARDLY:
        if beyond:
            return Verdict(UNCLEAR, f"only {pct} was in this machine's page cache, yet the rate is {ratio} "
                                    "the device's uncached rate: another cache (the host's, a server's, the "
                                    "device's) served it, or the device rate is stale")
        tail = (f" and {format_rate(rate)} is within its uncached {format_rate(dev)}" if dev else "")
        return Verdict(DEVICE, f"{pct} of the file was in the page cache before the read, so the pages "
                               f"came from the device{tail}")
    return Verdict(UNCLEAR, f"{pct} of the file was in the page cache before the read: the rate mixes "
                            "memory and the device")


# --- the device's uncached rate -----------------------------------------------------------------

_device_rates: dict[tuple[int, int], tuple[float, ...]] = {}


def _read_all(fd: int, block: int, *, buf: Any = None) -> tuple[int, int]:
    """Read fd to EOF with os.readv into one reused buffer; (bytes, calls)."""
    buf = buf if buf is not None else bytearray(block)
    view = memoryview(buf)
    total = calls = 0
    while True:
        n = os.readv(fd, [view])
        calls += 1
        if n == 0:
            return total, calls
        total += n


def device_rate(path: str | os.PathLike[str], nbytes: int | str = "64MiB", *, refresh: bool = False,
                repeat: int = 3) -> float:
    """Uncached read rate (bytes/s) of the device behind directory ``path``: the fastest of
    :func:`device_rates`' ``repeat`` reads (the bound a rate must beat to be "beyond the device").
    Memoized per filesystem."""
    return max(device_rates(path, nbytes, refresh=refresh, repeat=repeat))


def device_rates(path: str | os.PathLike[str], nbytes: int | str = "64MiB", *, refresh: bool = False,
                 repeat: int = 3) -> list[float]:
    """Every uncached read of the device behind directory ``path`` (bytes/s, in the order they ran):
    the trials a comparison with the device's rate rests on. Memoized per filesystem (with
    :func:`device_rate`: the same reads).

    Writes a fresh ``nbytes`` file in a private workspace inside ``path`` (removed afterwards), evicts
    it, checks that no page of it is resident, then reads it in 1 MiB calls; ``repeat`` times (evicted
    before each).
    """
    d = Path(path)
    if not d.exists():
        raise FileNotFoundError(f"no such directory: {d}")
    if not d.is_dir():
        raise NotADirectoryError(f"{d} is not a directory: give the directory whose device you want to measure")
    n = parse_size(nbytes)
    if n < MiB:
        raise ValueError(f"nbytes={format_size(n)} is too small to time a device; use at least 1 MiB")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a positive int, got {repeat!r}")
    key = (os.stat(d).st_dev, n)
    if not refresh and key in _device_rates:
        return list(_device_rates[key])
    fstype = fsinfo.fstype(d)
    if fstype in fsinfo.MEMORY_FS:
        raise IolabError(f"{d} is on {fstype}: there is no device behind it, only memory, so there is no "
                         "uncached rate to measure")
    with workspace.Workspace(budget=n + 16 * MiB, base=d, prefix=".iolab-devrate-") as ws:
        f = ws.make_file("probe.bin", n, seed=int(time.time_ns() % 2**32))   # fresh bytes every time
        left = pagecache.evict(f)
        if not left.reliable or left.resident:
            raise IolabError(f"cannot measure the device behind {d}: the probe file could not be evicted "
                             f"({left.note or left})")
        rates = []
        for attempt in range(repeat):
            if attempt:
                pagecache.evict(f)
            fd = os.open(f, os.O_RDONLY)
            try:
                t0 = time.perf_counter()
                got, _ = _read_all(fd, MiB)
                seconds = time.perf_counter() - t0
            finally:
                os.close(fd)
            rates.append(got / seconds)
    _device_rates[key] = tuple(rates)
    return rates


# --- timed experiments --------------------------------------------------------------------------

@dataclass(frozen=True)
class Measurement:
    op: str                         # "read" or "write"
    path: str
    nbytes: int
    seconds: float
    calls: int
    block_size: int
    before: Residency
    after: Residency
    verdict: Verdict
    device_bps: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    witness: Witnessed | None = None    # what the kernel counted while the clock ran

    @property
    def bytes_per_s(self) -> float:
        return self.nbytes / self.seconds if self.seconds > 0 else math.inf

    def __str__(self) -> str:
        seen = f"witness: {self.witness}" if self.witness is not None else f"witness: none ({NOT_WITNESSED})"
        return (f"{self.op} {format_size(self.nbytes)} in {self.seconds:.3f} s = {format_rate(self.bytes_per_s)} "
                f"({self.calls:,} calls of {format_size(self.block_size)}); resident before "
                f"{_pct(self.before)}, after {_pct(self.after)}; {seen} -> {self.verdict}")

    def row(self) -> dict[str, Any]:
        """A flat dict for a DataFrame row, the witness's columns included (:data:`WITNESS_COLUMNS`)."""
        return {"op": self.op, "path": self.path, "nbytes": self.nbytes, "seconds": self.seconds,
                "bytes_per_s": self.bytes_per_s, "mib_per_s": self.bytes_per_s / MiB, "calls": self.calls,
                "block_size": self.block_size, "resident_before": self.before.fraction,
                "resident_after": self.after.fraction, **witness_row(self.witness),
                "verdict": self.verdict.label, "ground": self.verdict.ground,
                "reason": self.verdict.reason, **self.options}


WITNESS_COLUMNS = ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes", "device_write_bytes",
                   "disturbed", "witness_notes")


def witness_row(w: Witnessed | None, why: str = NOT_WITNESSED) -> dict[str, Any]:
    """The witness's columns of a row; all None, and ``witness_notes`` saying why, when there is none."""
    if w is None:
        return {**{c: None for c in WITNESS_COLUMNS}, "witness_notes": why}
    return w.row()


def _pct(r: Residency) -> str:
    return f"{r.fraction:.0%}" if r.reliable else "unknown"


def _regular(path: str | os.PathLike[str]) -> Path:
    p, st = pagecache.check_path(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{p} is a directory: give a file to read")
    return p


def timed_read(path: str | os.PathLike[str], *, block_size: int | str = "1MiB", cache: str = "as-is",
               direct: bool = False, device_bps: float | None = None) -> Measurement:
    """Read the whole file in ``block_size`` calls (no Python buffering) and time it.

    ``cache``: "as-is" (measure whatever state the file is in), "cold" (evict first, and fail if
    that does not work) or "warm" (read it once first). ``direct=True`` opens with O_DIRECT, which
    bypasses this machine's page cache but no cache below it (seed 003).
    """
    p = _regular(path)
    bs = parse_size(block_size)
    if bs <= 0:
        raise ValueError("block_size must be at least 1 byte")
    if cache not in ("as-is", "cold", "warm"):
        raise ValueError(f"cache must be 'as-is', 'cold' or 'warm', got {cache!r}")
    if direct and bs % pagecache.PAGE_SIZE:
        raise ValueError(f"O_DIRECT needs a block_size that is a multiple of {pagecache.PAGE_SIZE} bytes, got {bs}")
    if cache == "cold":
        left = pagecache.evict(p)
        if left.reliable and left.resident:
            raise IolabError(f"cannot make {p} cold: {left.note}")
    elif cache == "warm":
        fd = os.open(p, os.O_RDONLY)
        try:
            _read_all(fd, max(bs, MiB))
        finally:
            os.close(fd)
    before = pagecache.residency(p, keep_map=False)
    flags = os.O_RDONLY | (getattr(os, "O_DIRECT", 0) if direct else 0)
    try:
        fd = os.open(p, flags)
    except PermissionError:
        raise PermissionError(f"permission denied: cannot open {p} for reading") from None
    except OSError as e:
        if direct:
            raise IolabError(f"this filesystem refuses O_DIRECT for {p} ({e.strerror})") from None
        raise
    # O_DIRECT needs an aligned buffer: an anonymous mmap is page-aligned
    buf = mmap.mmap(-1, bs) if direct else bytearray(bs)
    try:
        with Witness(p) as w:
            t0 = time.perf_counter()
            got, calls = _read_all(fd, bs, buf=buf)
            seconds = time.perf_counter() - t0
    finally:
        os.close(fd)
        if direct:
            buf.close()
    after = pagecache.residency(p, keep_map=False)
    rate = got / seconds if seconds > 0 else math.inf
    if got == 0:
        verdict = Verdict(UNCLEAR, "the file is empty: nothing was read")
    elif not direct:
        verdict = judge(rate, device_bps=device_bps,
                        resident_fraction=before.fraction if before.reliable else None,
                        witness=w.result, nbytes=got)
    else:
        verdict = _judge_direct(rate, device_bps, before.fstype, witness=w.result, nbytes=got)
    return Measurement("read", str(p), got, seconds, calls, bs, before, after, verdict, device_bps,
                       {"cache": cache, "direct": direct}, w.result)


def _judge_direct(rate: float, device_bps: float | None, fstype: str = "", *, witness: Witnessed | None = None,
                  nbytes: int | None = None) -> Verdict:
    """O_DIRECT skips this machine's page cache, so residency says nothing; the witness counts the
    bytes (task I/O accounting counts a direct read when it is sent to the device), the rate is the
    second ground."""
    if witness is not None and witness.device is not None and nbytes:
        v = judge(rate, device_bps=device_bps, witness=witness, nbytes=nbytes)
        if v.label == DEVICE:
            return Verdict(DEVICE, "O_DIRECT bypassed this machine's page cache: " + v.reason, WITNESS)
        return v
    v = _infer_direct(rate, device_bps, fstype)
    why = ("; ".join(witness.notes) if witness is not None else NOT_WITNESSED) or "no block device"
    return _as_inference(v, why)


def _infer_direct(rate: float, device_bps: float | None, fstype: str = "") -> Verdict:
    if fstype in fsinfo.MEMORY_FS:
        return Verdict(CACHE, f"{fstype} keeps files in memory: an O_DIRECT read of it copies that memory, "
                              "there is no device below it")
    if device_bps is not None and rate > device_bps * TOLERANCE:
        return Verdict(UNCLEAR, f"O_DIRECT bypassed this machine's page cache, yet {format_rate(rate)} is "
                                f"{rate / device_bps:,.1f}x the device's uncached rate: a cache below this "
                                "machine (the host's, a server's, the device's own) served it")
    return Verdict(DEVICE, "O_DIRECT bypassed this machine's page cache, so the bytes came from below it; "
                           "a cache below it (the host's, a file server's, the disk's) can still have "
                           "served them, and O_DIRECT cannot tell")


def timed_write(path: str | os.PathLike[str], nbytes: int | str, *, block_size: int | str = "1MiB",
                fsync: bool = False, ws: workspace.Workspace | None = None,
                device_bps: float | None = None) -> Measurement:
    """Write ``nbytes`` of random bytes to ``path`` (inside the workspace) in ``block_size`` calls, timed.

    ``fsync=True`` includes an fsync() in the time, so the clock stops only when the device has the
    data; without it the clock stops when the data is in the page cache (dirty pages). The bytes count
    against the budget of the open workspace that holds ``path`` (``ws`` for a relative path; the
    session's when none is given): BudgetExceeded when they do not fit.

    ``options`` keeps the machine's Dirty (/proc/meminfo, bytes) once the file was opened
    (``dirty_at_open``), and its Dirty and Writeback when write() had returned (``*_before_close``)
    and right after close() (``*_after_close``), and, where the kernel has cachestat(2), the file's
    own dirty and under-write-back pages after close() (``dirty_pages_after``, ``writeback_pages_after``).
    """
    # an absolute path in another open workspace (a private one) is written there, within its budget
    held = workspace.holding(path) if Path(path).is_absolute() else None
    ws = held or ws or workspace.session()
    p = ws.inside(path)
    n = parse_size(nbytes)
    bs = parse_size(block_size)
    if bs <= 0:
        raise ValueError("block_size must be at least 1 byte")
    if p.is_dir():
        raise IsADirectoryError(f"{p} is a directory: give a file name to write")
    existing = p.stat().st_blocks * 512 if p.exists() else 0
    ws.reserve(max(n - existing, 0))
    import numpy as np      # before the witness starts: a first import reads from storage
    block = np.random.default_rng(n ^ bs).integers(0, 256, size=min(bs, max(n, 1)), dtype=np.uint8).tobytes()
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists():
        before = pagecache.residency(p, keep_map=False)
    else:
        before = Residency(str(p), 0, 0, 0, fstype=fsinfo.fstype(p.parent))
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    # after the truncation: the dirty pages it cancels (a previous write of the same file) are not this write's
    dirty0 = pagecache.meminfo()["Dirty"]
    calls = 0
    view = memoryview(block)
    try:
        with Witness(p) as w:
            t0 = time.perf_counter()
            left = n
            while left > 0:
                left -= os.write(fd, view[:min(left, len(block))])
                calls += 1
            if fsync:
                os.fsync(fd)
            seconds = time.perf_counter() - t0
        # read before close(): ext4 (auto_da_alloc) starts writing back a file that was truncated and
        # rewritten when it is closed, which moves its pages from Dirty to Writeback at once
        before_close = pagecache.meminfo()
        dirty1 = before_close["Dirty"]
    finally:
        os.close(fd)
    closed_mem = pagecache.meminfo()      # right after close(): what close() itself started
    state = cachestat(p)
    after = pagecache.residency(p, keep_map=False)
    rate = n / seconds if seconds > 0 else math.inf
    verdict = judge_write(rate, fsync=fsync, device_bps=device_bps, dirty_growth=dirty1 - dirty0, nbytes=n,
                          witness=w.result, cache_after=state, fstype=after.fstype or before.fstype)
    options: dict[str, Any] = {"fsync": fsync, "dirty_growth": dirty1 - dirty0, "dirty_at_open": dirty0,
                               "dirty_before_close": dirty1, "writeback_before_close": before_close.get("Writeback"),
                               "dirty_after_close": closed_mem["Dirty"],
                               "writeback_after_close": closed_mem.get("Writeback")}
    if state is not None:
        options.update(dirty_pages_after=state.dirty, writeback_pages_after=state.writeback)
    return Measurement("write", str(p), n, seconds, calls, bs, before, after, verdict, device_bps, options,
                       w.result)


def judge_write(bytes_per_s: float, *, fsync: bool, device_bps: float | None = None,
                dirty_growth: int | None = None, nbytes: int | None = None, witness: Witnessed | None = None,
                cache_after: CacheStat | None = None, fstype: str = "") -> Verdict:
    """Where did a write land when the clock stopped? The page cache, unless fsync was timed too.

    ``witness``: what the kernel counted while the clock ran, the first ground: the bytes the device
    wrote against ``nbytes`` (task I/O accounting counts a buffered write when it dirties the page,
    so this process's own ``write_bytes`` is ``nbytes`` either way: only the device tells whether
    the data reached it). ``cache_after``: cachestat of the file when the clock stopped (its dirty
    and writeback pages). Without a witness, or without a block device, the verdict says so and
    infers from ``fsync`` (and ``dirty_growth``, the machine's Dirty, and the rate). ``fstype``: the
    filesystem written to, when known (a memory filesystem has no device for fsync to wait for)."""
    given = dict(bytes_per_s=bytes_per_s, fsync=fsync, device_bps=device_bps, dirty_growth=dirty_growth,
                 nbytes=nbytes, witness=witness, cache_after=cache_after, fstype=fstype)
    return replace(_judge_write(bytes_per_s, fsync=fsync, device_bps=device_bps, dirty_growth=dirty_growth,
                                nbytes=nbytes, witness=witness, cache_after=cache_after, fstype=fstype),
                   given=given)


def _judge_write(bytes_per_s: float, *, fsync: bool, device_bps: float | None = None,
                 dirty_growth: int | None = None, nbytes: int | None = None, witness: Witnessed | None = None,
                 cache_after: CacheStat | None = None, fstype: str = "") -> Verdict:
    """The body of :func:`judge_write` (which keeps what it was given in the Verdict)."""
    inferred = _infer_write(bytes_per_s, fsync=fsync, device_bps=device_bps, dirty_growth=dirty_growth,
                            nbytes=nbytes, fstype=fstype)
    if witness is None:
        return _as_inference(inferred, NOT_WITNESSED)
    n = _nbytes(nbytes)
    if witness.device is None or witness.device_written is None:
        return _as_inference(inferred, "; ".join(witness.notes) or "no block device behind this file")
    wrote = witness.device_written
    lead = f"the device {witness.device} wrote {format_size(wrote)} while {format_size(n)} were written"
    page = ""
    if cache_after is not None:
        page = (f"; when the clock stopped, {cache_after.dirty:,} of the file's pages were dirty and "
                f"{cache_after.writeback:,} under write-back (cachestat)")
    if fsync:
        if wrote >= MOSTLY * n:
            label, reason = DEVICE, f"{lead}, before fsync() returned: the device has the data"
        else:
            label, reason = UNCLEAR, (f"{lead}: fsync() returned with less on the device than was written "
                                      "(a filesystem that compresses or deduplicates, or counters that missed it)")
    elif wrote <= HARDLY * n + SLACK:
        label, reason = CACHE, (f"{lead}: when write() returned, the data was in the page cache as dirty pages; "
                                "the device gets it later")
    else:
        label, reason = UNCLEAR, (f"{lead}: {wrote / n:.0%} of it already reached the device before write() "
                                  "returned (background write-back, or the kernel made the writer wait for it "
                                  "when dirty pages piled up), so the time mixes memory and the device")
    reason += page
    second, beyond = _rate_ground(float(bytes_per_s), _positive("device_bps", device_bps), TOLERANCE)
    if second and not fsync:
        reason += f"; second ground: {second} (its read rate)"
    d = disturbance(witness)
    if d:
        return Verdict(UNCLEAR, f"{d}, so the time was shared. Its own count still says: {reason}", WITNESS)
    return Verdict(label, reason, WITNESS)


def _infer_write(bytes_per_s: float, *, fsync: bool, device_bps: float | None = None,
                 dirty_growth: int | None = None, nbytes: int | None = None, fstype: str = "") -> Verdict:
    rate = _positive("bytes_per_s", bytes_per_s, allow_none=False)
    dev = _positive("device_bps", device_bps)
    if fstype in fsinfo.MEMORY_FS:
        return Verdict(CACHE, f"{fstype} keeps files in memory: the written pages are the file, and "
                              + ("fsync() has no device to wait for" if fsync else "no device ever gets them"))
    if fsync:
        return Verdict(DEVICE, "the time includes fsync(), which returns only once the device has the data")
    bits = ["write() returns as soon as the data is copied into the page cache (dirty pages); the device "
            "gets it later"]
    if dirty_growth is not None and nbytes:
        bits.append(f"system-wide Dirty grew by {format_size(max(dirty_growth, 0))} while writing "
                    f"{format_size(nbytes)}")
    if dev is not None and rate > dev * TOLERANCE:
        bits.append(f"{format_rate(rate)} is {rate / dev:,.1f}x the device's uncached read rate")
    return Verdict(CACHE, "; ".join(bits))
