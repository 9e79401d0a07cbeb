"""The kernel's own accounting of which layer served an I/O: the witnesses beside a measured number.

A rate compared with the device's is inference. The kernel keeps direct evidence, most of it
readable without root:

* **task I/O accounting** (``/proc/<pid>/io``): ``read_bytes`` / ``write_bytes`` are the bytes this
  process made the storage layer fetch or send (block-device I/O it caused, readahead included);
  ``rchar`` / ``wchar`` are the bytes that passed through read()/write()-like calls, whoever served
  them. Reads served by the page cache add to ``rchar`` and not to ``read_bytes``. ``read_bytes`` is
  charged when a read request is sent to the block layer (``submit_bio``), O_DIRECT included, and by
  the kernel's network clients when they fetch pages from their server (NFS's ``nfs_readahead``; the
  netfs clients); a FUSE filesystem's reads are never charged to the reader: its daemon is charged
  what it reads from a local disk, and a network daemon (ceph-fuse, s3fs) shows 0 for everyone (0 there
  proves nothing; :func:`witnessable` says what can be witnessed where). ``write_bytes`` is charged when a page is first dirtied (``folio_account_dirtied``),
  not when it reaches the device; an O_DIRECT write dirties no page and is charged when it is
  submitted to the device (``task_io_account_write`` in ``fs/iomap/direct-io.c``); truncating dirty pages adds to ``cancelled_write_bytes``. When a child is reaped, the kernel adds its counters to the parent's, so a tool run and
  waited for (dd, fio, mpirun and its ranks) is in ``/proc/self/io`` too, and in
  ``getrusage(RUSAGE_CHILDREN)`` (``ru_inblock`` / ``ru_oublock``, 512-byte units, the same counters:
  without task I/O accounting both are missing or 0, and the own bytes are unknown);
* **the device's counters** (``/sys/dev/block/<major>:<minor>/stat``): sectors read and written by
  everybody on the machine. Device bytes beyond this process's own are someone else's traffic:
  another user, write-back of older dirty pages, the journal;
* **page-cache state of a file** in one call: ``cachestat(2)`` (Linux >= 6.5): cached, dirty,
  writeback, evicted and *recently evicted* pages. "Evicted" counts pages that reclaim (memory
  pressure) pushed out and remembers as shadow entries; pages dropped on request
  (``POSIX_FADV_DONTNEED``, ``drop_caches``) are not counted: so evicted pages are memory pressure's
  signature, not the student's.

:class:`Witness` takes the snapshots before and after a measurement; :meth:`Witness.result` gives the
deltas and says in words what could not be read.
"""
from __future__ import annotations

import ctypes
import errno
import os
import resource
import stat as stat_
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import fsinfo
from .units import format_size

SECTOR = 512            # /sys/block/*/stat counts 512-byte sectors whatever the device's block size
RUSAGE_BLOCK = 512      # ru_inblock / ru_oublock count 512-byte blocks
# device bytes beyond our own that still count as "quiet": metadata, the journal, a log line
DISTURBANCE_FLOOR = 1024 * 1024


# --- task I/O accounting ---------------------------------------------------------------------------

@dataclass(frozen=True)
class TaskIO:
    rchar: int
    wchar: int
    syscr: int
    syscw: int
    read_bytes: int
    write_bytes: int
    cancelled_write_bytes: int


def task_io(pid: int | str = "self") -> TaskIO | None:
    """``/proc/<pid>/io``, or None where it cannot be read (no task I/O accounting in this kernel,
    another user's process)."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if value.strip().isdigit():
            values[key.strip()] = int(value)
    try:
        return TaskIO(**{k: values[k] for k in TaskIO.__dataclass_fields__})
    except KeyError:
        return None


def children_blocks() -> tuple[int, int]:
    """Bytes read and written from storage by this process's children that were waited for."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_inblock * RUSAGE_BLOCK, ru.ru_oublock * RUSAGE_BLOCK


# --- the block device behind a path ----------------------------------------------------------------

@dataclass(frozen=True)
class DeviceStat:
    device: str                 # e.g. "vda", "dm-0", "nvme0n1p2"
    reads: int
    sectors_read: int
    writes: int
    sectors_written: int
    in_flight: int
    busy_ms: int
    discards: int | None = None
    sectors_discarded: int | None = None


def block_device(path: str | os.PathLike[str]) -> Path | None:
    """The sysfs directory of the block device that holds ``path``, or None (tmpfs, NFS, FUSE, overlay:
    filesystems without a block device of their own)."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    if major != 0:
        d = Path(f"/sys/dev/block/{major}:{minor}")
        return d.resolve() if (d / "stat").exists() else None
    # an anonymous device number: memory and network filesystems, but also btrfs, whose mount names
    # the block device that does the I/O
    try:
        source = fsinfo.mount_of(path).source
    except Exception:           # noqa: BLE001 (no mount table: nothing to count)
        return None
    if not source or not source.startswith("/dev/"):
        return None
    d = Path("/sys/class/block") / os.path.basename(os.path.realpath(source))
    return d.resolve() if (d / "stat").exists() else None


def device_stat(sysdir: Path) -> DeviceStat:
    """Counters of a block device (or partition) from its ``stat`` file (Documentation/block/stat.rst)."""
    fields = [int(x) for x in (sysdir / "stat").read_text().split()]
    extra = {"discards": fields[11], "sectors_discarded": fields[13]} if len(fields) >= 15 else {}
    return DeviceStat(sysdir.name, fields[0], fields[2], fields[4], fields[6], fields[8], fields[9], **extra)


# --- cachestat(2) ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CacheStat:
    cached: int
    dirty: int
    writeback: int
    evicted: int
    recently_evicted: int


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted",
                                                 "nr_recently_evicted")]


_SYS_CACHESTAT = {"x86_64": 451, "aarch64": 451, "riscv64": 451, "ppc64le": 451, "s390x": 451}
_libc = ctypes.CDLL(None, use_errno=True)


def cachestat(path: str | os.PathLike[str], offset: int = 0, length: int = 0) -> CacheStat | None:
    """Page-cache state of a file range, in pages (``length=0``: to the end), or None where the kernel
    has no cachestat(2) (Linux < 6.5) or refuses it."""
    nr = _SYS_CACHESTAT.get(os.uname().machine)
    if nr is None:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        rng, out = _Range(offset, length), _Stat()
        if _libc.syscall(nr, fd, ctypes.byref(rng), ctypes.byref(out), 0) != 0:
            e = ctypes.get_errno()
            if e in (errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP, errno.EINVAL):
                return None
            raise OSError(e, os.strerror(e), os.fspath(path))
        return CacheStat(out.nr_cache, out.nr_dirty, out.nr_writeback, out.nr_evicted, out.nr_recently_evicted)
    finally:
        os.close(fd)


SYNC_FILE_RANGE_WRITE = 2


def start_writeback(fd: int, offset: int = 0, nbytes: int = 0) -> bool:
    """Start writing a file's dirty pages back without waiting (``sync_file_range(2)`` with
    ``SYNC_FILE_RANGE_WRITE``): the pages move from dirty to writeback. False where the call is missing."""
    fn = getattr(_libc, "sync_file_range", None)
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    if fn(fd, offset, nbytes, SYNC_FILE_RANGE_WRITE) != 0:
        e = ctypes.get_errno()
        if e in (errno.ENOSYS, errno.EINVAL, errno.ESPIPE):
            return False
        raise OSError(e, os.strerror(e))
    return True


# --- a witness around one measurement ----------------------------------------------------------------

@dataclass(frozen=True)
class Witnessed:
    """What the kernel saw during one measurement. Byte counts are None where they could not be read;
    ``notes`` says why."""

    own_read: int | None            # this process (task I/O accounting) + waited-for children (rusage)
    own_written: int | None
    device: str | None
    device_read: int | None
    device_written: int | None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def others_read(self) -> int | None:
        if self.device_read is None or self.own_read is None:
            return None
        return max(self.device_read - self.own_read, 0)

    @property
    def others_written(self) -> int | None:
        if self.device_written is None or self.own_written is None:
            return None
        return max(self.device_written - self.own_written, 0)

    @property
    def disturbed(self) -> bool | None:
        """Did the device move clearly more than we did (someone else's traffic, write-back, journal)?"""
        extra = [x for x in (self.others_read, self.others_written) if x is not None]
        if not extra:
            return None
        return max(extra) > DISTURBANCE_FLOOR

    def row(self) -> dict[str, object]:
        return {"own_read_bytes": self.own_read, "own_write_bytes": self.own_written, "device": self.device,
                "device_read_bytes": self.device_read, "device_write_bytes": self.device_written,
                "disturbed": self.disturbed, "witness_notes": "; ".join(self.notes)}

    def meta(self) -> dict[str, object]:
        """The form kept in a recording's ``.meta.json`` (``meta["witness"][label]``): the row's byte
        counts and device, ``disturbed`` as computed when saved, and ``notes`` as a list."""
        row = self.row()
        row.pop("witness_notes")
        return {**row, "notes": list(self.notes)}

    @classmethod
    def from_meta(cls, d: dict[str, object]) -> "Witnessed":
        """The inverse of :meth:`meta` (``disturbed`` is computed again from the bytes)."""
        def count(key: str) -> int | None:
            v = d.get(key)
            if v is None:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"witness {key} must be a byte count or null, got {v!r}")
            return v
        device = d.get("device")
        if device is not None and not isinstance(device, str):
            raise ValueError(f"witness device must be a device's name or null, got {device!r}")
        notes = d.get("notes") or []
        if isinstance(notes, str):
            notes = [notes]
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise ValueError(f"witness notes must be a list of sentences, got {notes!r}")
        return cls(count("own_read_bytes"), count("own_write_bytes"), device,
                   count("device_read_bytes"), count("device_write_bytes"), tuple(notes))

    def __str__(self) -> str:
        parts = []
        if self.own_read is not None:
            parts.append(f"{format_size(self.own_read)} read from storage and {format_size(self.own_written or 0)} "
                         "written by this measurement")
        if self.device_read is not None:
            parts.append(f"device {self.device}: {format_size(self.device_read)} read, "
                         f"{format_size(self.device_written or 0)} written by everyone")
        if self.disturbed:
            parts.append(f"DISTURBED: {format_size(max(self.others_read or 0, self.others_written or 0))} "
                         "of the device's traffic was not ours")
        return "; ".join(parts + list(self.notes))


class Witness:
    """Snapshots of the kernel's counters around a measurement::

        with Witness(path) as w:
            ...                      # read or write, or run a tool and wait for it
        print(w.result)              # own bytes from storage, the device's bytes, disturbed?

    ``children=True``: the own bytes are those of the tools this process ran and waited for during
    the measurement, alone (``getrusage(RUSAGE_CHILDREN)``: the same task I/O accounting, summed over
    reaped children and their own reaped children, so an mpirun's ranks are in; writes net of
    cancelled ones, 512-byte units), so that the notebook's own threads do not count.
    """

    def __init__(self, path: str | os.PathLike[str], *, children: bool = False):
        self.path = Path(path)
        self.children = children
        self.result: Witnessed | None = None

    def __enter__(self) -> "Witness":
        self._dev = block_device(self.path)
        self._io0 = task_io()
        self._kids0 = children_blocks()
        self._dev0 = device_stat(self._dev) if self._dev else None
        return self

    def __exit__(self, *exc: object) -> None:
        dev1 = device_stat(self._dev) if self._dev else None
        io1 = task_io()
        kids1 = children_blocks()
        notes = []
        own_r = own_w = None
        if self._io0 is None or io1 is None:
            # no task I/O accounting in this kernel: getrusage's block counts come from the same
            # counters (task_io_get_inblock), so they are 0 too. 0 would read as "memory served it":
            # the own bytes are unknown, and the device's counters are only an upper bound
            notes.append("no task I/O accounting here (/proc/self/io is missing, and getrusage's block "
                         "counts come from the same counters): this measurement's own storage bytes "
                         "cannot be counted")
        elif self.children:
            own_r, own_w = kids1[0] - self._kids0[0], kids1[1] - self._kids0[1]
        else:
            # a reaped child's counters are added to its parent's (wait_task_zombie): these include
            # every tool this process ran and waited for
            own_r = io1.read_bytes - self._io0.read_bytes
            own_w = io1.write_bytes - self._io0.write_bytes
        dev_r = dev_w = None
        if self._dev0 is not None and dev1 is not None:
            dev_r = (dev1.sectors_read - self._dev0.sectors_read) * SECTOR
            dev_w = (dev1.sectors_written - self._dev0.sectors_written) * SECTOR
        else:
            mode = os.stat(self.path).st_mode
            what = "directory" if stat_.S_ISDIR(mode) else "file"
            notes.append(f"no block device behind this {what} (memory, network or FUSE filesystem): the "
                         "device's counters cannot witness it")
        self.result = Witnessed(own_r, own_w, self._dev.name if self._dev else None, dev_r, dev_w, tuple(notes))


# --- what can be witnessed on a filesystem -----------------------------------------------------------

# Checked in each client's source (the commits are those read; a later client may differ):
#   block layer: block/blk-core.c submit_bio -> task_io_account_read (the reader, O_DIRECT included)
#   NFS: fs/nfs/read.c nfs_read_folio / nfs_readahead, fs/nfs/direct.c -> task_io_account_read (the 3.x
#     client's nfs_readpage / nfs_readpages charge nothing: only its direct reads are counted)
#   CephFS kernel client: fs/ceph/addr.c ceph_aops .readahead = netfs_readahead; netfs charges the read
#     in fs/netfs/read_collect.c netfs_read_collection, "possibly running on a workqueue" (its comment)
#   Lustre (lustre/lustre-release c881f8eb, lustre/llite/rw.c): ll_io_read_page and the asynchronous
#     readahead work charge task_io_account_read(PAGE_SIZE * pages) when they submit the pages
#   BeeGFS (ThinkParQ/beegfs 87d28c1a, client_module/source/filesystem): FhgfsOpsFile.c read_common
#     charges every byte a read returns, its own cache's included (after FhgfsOpsHelper_readCached);
#     FhgfsOpsFileNative.c charges a page it fetches
#   GPFS: proprietary, its client's source is not public: not checked

COUNTED = "counted"
PARTLY = "counted, maybe short"
UPPER = "counted, maybe over"
NOT_READER = "not the reader's"
NONE = "nothing to count"
UNKNOWN = "unknown here"

_NO_ACCOUNTING = ("no task I/O accounting here (/proc/self/io is missing): this process's storage bytes "
                  "cannot be counted")


@dataclass(frozen=True)
class Witnessable:
    """What the kernel can witness on one filesystem, and what a verdict there has to infer.

    ``own_bytes``: can task I/O accounting count the bytes this process makes its filesystem fetch?
    (:data:`COUNTED`, :data:`PARTLY`, :data:`UPPER`, :data:`NOT_READER`, :data:`NONE`, :data:`UNKNOWN`),
    ``own_why`` says why; ``device``: the block device whose counters witness the bytes, or None,
    ``device_why`` says why; ``counters``: where else the bytes can be counted (the servers', the
    client's own), or None; ``inferred``: what is left to inference there."""

    mountpoint: str
    fstype: str
    kind: str
    own_bytes: str
    own_why: str
    device: str | None
    device_why: str
    counters: str | None
    inferred: str
    path: str = ""

    def row(self) -> dict[str, object]:
        return {"mount": self.mountpoint, "fstype": self.fstype, "kind": self.kind, "own bytes": self.own_bytes,
                "device": self.device, "other counters": self.counters, "inferred": self.inferred}

    def __str__(self) -> str:
        return "\n".join([
            (f"{self.path} is on {self.mountpoint}: " if self.path else f"{self.mountpoint}: ")
            + f"{self.fstype} ({self.kind})",
            f"  this process's own bytes: {self.own_bytes}: {self.own_why}",
            f"  device counters: {self.device or 'none'}: {self.device_why}",
            f"  other counters: {self.counters or 'none'}",
            f"  inferred: {self.inferred}",
        ])


_LOCAL = ("a read is charged to the reader when its request goes to the block layer "
          "(submit_bio), O_DIRECT included; a write when a page is first dirtied")
_SERVERS_INFER = ("whether a server answered from its memory or its disks, and which server: unless its "
                  "counters can be read, a rate compared with what the servers and network can deliver")


def _by_kind(m: fsinfo.Mount) -> tuple[str, str, str, str | None, str]:
    """(own_bytes, own_why, device_why, counters, inferred) for a mount, from its filesystem type."""
    t, kind = m.fstype, m.kind
    if t in fsinfo.MEMORY_FS or kind.startswith("memory"):
        return (NONE, "the file lives in memory: reading it fetches nothing from storage, so read_bytes "
                      "stays 0 and that 0 is true (unless its pages were swapped out)",
                "memory: there is no device below", None, "nothing: there is no storage below to infer")
    if t == "ceph":
        return (PARTLY, "the kernel client reads through netfs (ceph_aops: netfs_readahead), which charges "
                        "read_bytes to the task that collects a finished read (netfs_read_collection): the "
                        "reader, or a kernel worker thread, so the reader's count can be short",
                "CephFS: the bytes are on the OSDs' disks, across the network; no local block device",
                "the OSDs' perf counters (bytes and ops per OSD, as lesson 08 reads them) and the MDS's request counts, "
                "with the cluster's key", _SERVERS_INFER)
    if t in ("fuse.ceph-fuse", "fuse.ceph"):
        return (NOT_READER, "ceph-fuse answers in user space: it fetches objects from the OSDs over sockets, "
                            "which task I/O accounting does not count, and its own object cache answers with "
                            "no fetch at all; the reader's read_bytes stays 0 whatever served it (0 proves "
                            "nothing)",
                "CephFS through FUSE: the bytes are on the OSDs' disks, across the network; no local "
                "block device",
                "the OSDs' perf counters (bytes and ops per OSD, as lesson 08 reads them), the MDS's request counts and "
                "ceph-fuse's own (its admin socket), with the cluster's key", _SERVERS_INFER)
    if t == "lustre":
        return (PARTLY, "Lustre's client (llite, outside the kernel tree) charges read_bytes when it submits "
                        "pages to read (lustre/llite/rw.c); its asynchronous readahead is charged to the "
                        "worker thread that submits it, so the reader's count can be short",
                "Lustre: the bytes are on OSTs on storage servers, across the network; no local block "
                "device", "the servers' own statistics, kept by Lustre: how to read them here is unknown",
                _SERVERS_INFER)
    if t == "beegfs":
        return (UPPER, "BeeGFS's client module charges read_bytes itself: in its buffered mode for every "
                       "byte a read returns, its own cache's included (FhgfsOpsFile.c), in its native mode "
                       "for each page it fetches (FhgfsOpsFileNative.c): a count that can include bytes no "
                       "server sent",
                "BeeGFS: the bytes are on storage targets on servers, across the network; no local block "
                "device", "the servers' own statistics, kept by BeeGFS: how to read them here is unknown",
                _SERVERS_INFER)
    if t == "gpfs":
        return (UNKNOWN, "GPFS (IBM Storage Scale) is proprietary; whether its client charges read_bytes "
                         "could not be checked, so a 0 proves nothing",
                "GPFS: its daemon reads its disks (NSDs) itself, locally or through NSD servers; the mount "
                "names no block device", "GPFS's own monitor (mmpmon), run by its administrators",
                _SERVERS_INFER)
    if kind.startswith("network (NFS)"):
        return (COUNTED, "the NFS client of recent kernels charges read_bytes when it fetches pages from "
                         "the server (nfs_read_folio, nfs_readahead) and for O_DIRECT reads; older ones "
                         "(Linux 3.x, checked) charged only O_DIRECT reads, so there a 0 proves nothing",
                "NFS: the bytes are on the server, across the network; no local block device",
                "the client's byte counts per mount (/proc/self/mountstats); the server's are the server's",
                "whether the server answered from its memory or its disks")
    if t.startswith("fuse") or kind == "FUSE" or kind.startswith("object storage"):
        return (NOT_READER, "a FUSE filesystem answers in user space: what its daemon reads from a local "
                            "disk is charged to the daemon, what it fetches over the network to no one's "
                            "read_bytes; the reader's 0 proves nothing",
                "FUSE: the daemon decides where the bytes come from; the mount has no block device",
                "the daemon's or its server's own counts, if they keep any (lesson 06 counts bytes at a "
                "proxy in front of the store)", "where the daemon got the bytes: its cache, a disk or a server")
    if t == "overlay":
        return (COUNTED, "an overlay passes each read to the filesystem below it: counted there when that is "
                         "a local disk",
                "an overlay has no device number of its own", None,
                "the device: which disk is below, and its counters")
    if kind == "local disk" or m.source.startswith("/dev/"):
        return (COUNTED, _LOCAL, "", None,
                "who moved the device's other bytes (another user, write-back, the journal): its "
                "counters say only that this process did not")
    return (UNKNOWN, f"a {t} filesystem: whether its client charges read_bytes is not known to iolab",
            "no block device found for this filesystem", None, "everything beyond the measured rate")


def witnessable_mount(m: fsinfo.Mount, device: str | None = None) -> Witnessable:
    """:class:`Witnessable` for a mount, from its type alone (``device``: the block device found for it,
    if any; without one a local disk's mount source names it when it is a /dev/ path)."""
    own, own_why, device_why, counters, inferred = _by_kind(m)
    if own == COUNTED and (m.kind == "local disk" or m.source.startswith("/dev/")) and m.fstype != "overlay":
        device = device or (os.path.basename(m.source) if m.source.startswith("/dev/") else None)
        device_why = ("its sysfs counters count every byte read and written on it, by everyone" if device
                      else "no block device found below this mount")
    else:
        device = None
    return Witnessable(m.mountpoint, m.fstype, m.kind, own, own_why, device, device_why, counters, inferred)


def witnessable(path: str | os.PathLike[str], text: str | None = None) -> Witnessable:
    """What the kernel can witness for I/O on ``path`` and what a verdict there must infer, with why.

    ``text``: a mountinfo text to read the mount from (tests); without it the live mount table, this
    machine's block device below ``path`` and whether it has task I/O accounting at all."""
    m = fsinfo.mount_of(path, text)
    if text is not None:
        return replace(witnessable_mount(m), path=str(path))
    here = Path(path).absolute()
    while not here.exists() and here != here.parent:   # a file not written yet: its directory's device
        here = here.parent
    dev = block_device(here)
    w = replace(witnessable_mount(m, device=dev.name if dev else None), path=str(path))
    if w.device is None and dev is not None and w.kind == "other":
        # a filesystem of a kind iolab does not know, on a real block device: that device witnesses it
        w = replace(w, device=dev.name,
                    device_why="its sysfs counters count every byte read and written on it, by everyone")
    if task_io() is None and w.own_bytes != NONE:
        w = replace(w, own_bytes=UNKNOWN, own_why=_NO_ACCOUNTING)
    return w
