"""The same caching questions without FUSE: fsspec's s3fs/gcsfs with a ``cache_type``, and the
``simplecache`` / ``filecache`` / ``blockcache`` filesystems that keep copies on local disk.

Works wherever Python does (a JupyterHub without /dev/fuse included).
"""
from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .endpoint import Endpoint

CACHE_TYPES = ("none", "readahead", "blockcache", "bytes", "all")
WHOLE_FILE_CACHES = ("simplecache", "filecache", "blockcache")


def _dir_bytes(d: str | os.PathLike[str]) -> int:
    total = 0
    for root, _dirs, files in os.walk(d):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                pass
    return total


class RequestCounter(logging.Handler):
    """Counts the requests fsspec's s3fs sends (its logger says ``CALL: <operation> ...`` before each).

    ``counter.calls`` is the list of operation names (head_object, get_object, list_objects_v2 ...)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.calls: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("CALL: "):
            self.calls.append(msg[6:].split(" ", 1)[0])


@contextlib.contextmanager
def counting_requests() -> Iterator[RequestCounter]:
    """Count the S3 requests made inside the block (fsspec's s3fs only; gcsfs logs differently)."""
    log = logging.getLogger("s3fs")
    counter = RequestCounter()
    old_level, old_propagate = log.level, log.propagate
    log.setLevel(logging.DEBUG)
    log.propagate = False            # nothing printed: the records only go to the counter
    log.addHandler(counter)
    try:
        yield counter
    finally:
        log.removeHandler(counter)
        log.setLevel(old_level)
        log.propagate = old_propagate


def ready_filesystem(endpoint: Endpoint, bucket: str) -> tuple[Any, float]:
    """An fsspec filesystem for the endpoint whose client is set up and connected, and the seconds
    that took: the S3 client is built on the first request (botocore loads its service description),
    which would otherwise be timed as part of the first read."""
    t0 = time.perf_counter()
    fs = endpoint.filesystem()
    fs.ls(bucket)
    return fs, time.perf_counter() - t0


def read_with_cache_type(endpoint: Endpoint, path: str, *, cache_type: str = "readahead",
                         block_size: int = 1 << 20, read_size: int = 64 * 1024, label: str = "",
                         fs: Any = None, setup_s: float | None = None) -> dict[str, Any]:
    """Open ``bucket/key`` with fsspec's ``cache_type``, read it in ``read_size`` calls, twice in the
    same open file. Reports the time of each pass (the first includes the open, which asks the
    store for the object's size), the requests each pass sent, and the buffer's hit/miss counters."""
    if cache_type not in CACHE_TYPES:
        raise ValueError(f"cache_type is one of {CACHE_TYPES}")
    if fs is None:      # fs: a filesystem set up already (ready_filesystem), with its setup_s
        fs, setup_s = ready_filesystem(endpoint, path.split("/", 1)[0])
    setup = setup_s
    times, requests = {}, {}
    with counting_requests() as counter:
        t0 = time.perf_counter()
        f = fs.open(path, "rb", cache_type=cache_type, block_size=block_size)
        with f:
            size = f.size
            for n in (1, 2):
                f.seek(0)
                while f.read(read_size):
                    pass
                t1 = time.perf_counter()
                times[n], t0 = t1 - t0, t1
                requests[n], counter.calls = counter.calls, []
            cache = f.cache
            stats = {"hits": getattr(cache, "hit_count", 0), "misses": getattr(cache, "miss_count", 0)}
    return {"label": label or f"fsspec cache_type={cache_type}", "client": "fsspec", "cache": cache_type,
            "scope": "one open file", "nbytes": size, "read_size": read_size, "calls_per_pass": -(-size // read_size),
            "setup_s": setup, "first_s": times[1], "second_s": times[2],
            "first_mb_per_s": size / times[1] / 1e6, "second_mb_per_s": size / times[2] / 1e6,
            "first_requests": len(requests[1]), "second_requests": len(requests[2]),
            "first_gets": requests[1].count("get_object"), "second_gets": requests[2].count("get_object"), **stats}


def one_pass(fs: Any, path: str, *, cache_type: str = "readahead", block_size: int = 1 << 20,
             read_size: int = 64 * 1024) -> dict[str, Any]:
    """Open ``bucket/key`` with fsspec's ``cache_type`` on ``fs`` (a filesystem set up already:
    :func:`ready_filesystem`), read it once in ``read_size`` calls and close it: the seconds from
    before the open to the last read (the first pass of :func:`read_with_cache_type`, alone), the
    requests and GET requests it sent, and the bytes read."""
    if cache_type not in CACHE_TYPES:
        raise ValueError(f"cache_type is one of {CACHE_TYPES}")
    with counting_requests() as counter:
        t0 = time.perf_counter()
        with fs.open(path, "rb", cache_type=cache_type, block_size=block_size) as f:
            n = 0
            while chunk := f.read(read_size):
                n += len(chunk)
            seconds = time.perf_counter() - t0
    return {"seconds": seconds, "requests": len(counter.calls), "gets": counter.calls.count("get_object"),
            "nbytes": n}


def caching_filesystem(endpoint: Endpoint, kind: str, cache_dir: str | os.PathLike[str], *, fs: Any = None,
                       **kwargs: Any):
    """fsspec's ``simplecache`` / ``filecache`` / ``blockcache`` on top of the endpoint's filesystem
    (or of ``fs``, one already set up)."""
    if kind not in WHOLE_FILE_CACHES:
        raise ValueError(f"kind is one of {WHOLE_FILE_CACHES}")
    from fsspec.implementations.cached import CachingFileSystem, SimpleCacheFileSystem, WholeFileCacheFileSystem

    cls = {"simplecache": SimpleCacheFileSystem, "filecache": WholeFileCacheFileSystem,
           "blockcache": CachingFileSystem}[kind]
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    return cls(fs=fs if fs is not None else endpoint.filesystem(), cache_storage=os.fspath(cache_dir),
               skip_instance_cache=True, **kwargs)


def read_through_cache(endpoint: Endpoint, path: str, kind: str, cache_dir: str | os.PathLike[str],
                       label: str = "", *, fs: Any = None, setup_s: float | None = None) -> dict[str, Any]:
    """Open and read ``bucket/key`` twice through a caching filesystem (two separate opens).
    Reports both times, the requests each open sent, and how many bytes the cache directory holds
    after each (a miss fills it). The S3 client is set up before the clock starts (``setup_s``)."""
    if fs is None:
        fs, setup_s = ready_filesystem(endpoint, path.split("/", 1)[0])
    setup = setup_s
    fs = caching_filesystem(endpoint, kind, cache_dir, fs=fs)
    out: dict[str, Any] = {"label": label or f"fsspec {kind}", "client": "fsspec", "cache": kind,
                           "scope": "two opens", "setup_s": setup}
    for n in (1, 2):
        which = "first" if n == 1 else "second"
        before = _dir_bytes(cache_dir)
        with counting_requests() as counter:
            t0 = time.perf_counter()
            with fs.open(path, "rb") as f:
                size = 0
                while chunk := f.read(1 << 20):
                    size += len(chunk)
            out[f"{which}_s"] = time.perf_counter() - t0
        out[f"{which}_requests"] = len(counter.calls)
        out[f"{which}_gets"] = counter.calls.count("get_object")
        out[f"cache_grew_{n}"] = _dir_bytes(cache_dir) - before
    out["nbytes"] = size
    out["read_size"] = 1 << 20
    out["calls_per_pass"] = -(-size // (1 << 20))
    out["first_mb_per_s"] = size / out["first_s"] / 1e6
    out["second_mb_per_s"] = size / out["second_s"] / 1e6
    out["hits"] = int(out["cache_grew_2"] == 0)   # the second open found the copy: nothing fetched
    out["misses"] = int(out["cache_grew_1"] > 0) + int(out["cache_grew_2"] > 0)
    return out
