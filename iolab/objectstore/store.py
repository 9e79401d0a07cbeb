"""A store to experiment with: a local S3 or GCS server with a bucket, behind a slow link (toxiproxy)
when it is here; the objects put in it counted against a workspace's budget; the bytes that cross the
link counted around a block; cache directories for the FUSE clients, on local disk or in RAM.

    with remote_store("s3", ws=ws) as store:              # store.direct: fast, store.remote: slowed
        keys = put_files(store, "data", n=2, size="2MiB")
        with metered(store) as moved:                      # moved["link_down"], moved["link_up"]
            ...

Lesson 06 (:mod:`iolab.lessons.l06_object_storage.stores`) is built on it.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import guard
from .. import workspace as _workspace
from ..units import parse_size
from . import slowlink
from .. import service
from ..service import free_ports
from .endpoint import Endpoint
from .servers import local_gcs, local_s3

# what SeaweedFS stores besides an object's bytes (its needle header, index entry, filer entry), at most
OBJECT_OVERHEAD = 64 * 1024

# A believable remote store, as slow as seed 000's uncached s3fs mount (about 10 MB/s): every
# response waits 20 ms and the link carries 12 MB/s.
DEFAULT_LINK = slowlink.LinkSpec(latency_ms=20, rate_kbps=12_000)


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


def services_running() -> int:
    """How many of this kernel's servers and proxies (object stores, toxiproxy) are still running:
    0 once every context that started one has closed."""
    return len(service.LIVE)
