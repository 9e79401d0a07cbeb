"""The same caching questions without FUSE: fsspec's s3fs/gcsfs with a ``cache_type``, and the
``simplecache`` / ``filecache`` / ``blockcache`` filesystems that keep copies on local disk.

Works wherever Python does (a JupyterHub without /dev/fuse included).
"""
from __future__ import annotations

import os
import time
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


def read_with_cache_type(endpoint: Endpoint, path: str, *, cache_type: str = "readahead",
                         block_size: int = 1 << 20, read_size: int = 64 * 1024, label: str = "") -> dict[str, Any]:
    """Open ``bucket/key`` with fsspec's ``cache_type``, read it in ``read_size`` calls, twice in the
    same open file. Reports the time of each pass and the buffer's hit/miss counters."""
    if cache_type not in CACHE_TYPES:
        raise ValueError(f"cache_type is one of {CACHE_TYPES}")
    fs = endpoint.filesystem()
    rows = {}
    with fs.open(path, "rb", cache_type=cache_type, block_size=block_size) as f:
        size = f.size
        for n in (1, 2):
            f.seek(0)
            t0 = time.perf_counter()
            while f.read(read_size):
                pass
            rows[n] = time.perf_counter() - t0
        cache = f.cache
        stats = {"hits": getattr(cache, "hit_count", 0), "misses": getattr(cache, "miss_count", 0),
                 "requested_bytes": getattr(cache, "total_requested_bytes", 0)}
    return {"label": label or f"fsspec cache_type={cache_type}", "client": "fsspec", "cache": cache_type,
            "nbytes": size, "first_s": rows[1], "second_s": rows[2],
            "first_mb_per_s": size / rows[1] / 1e6, "second_mb_per_s": size / rows[2] / 1e6, **stats}


def caching_filesystem(endpoint: Endpoint, kind: str, cache_dir: str | os.PathLike[str], **kwargs: Any):
    """fsspec's ``simplecache`` / ``filecache`` / ``blockcache`` on top of the endpoint's filesystem."""
    if kind not in WHOLE_FILE_CACHES:
        raise ValueError(f"kind is one of {WHOLE_FILE_CACHES}")
    from fsspec.implementations.cached import CachingFileSystem, SimpleCacheFileSystem, WholeFileCacheFileSystem

    cls = {"simplecache": SimpleCacheFileSystem, "filecache": WholeFileCacheFileSystem,
           "blockcache": CachingFileSystem}[kind]
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    return cls(fs=endpoint.filesystem(), cache_storage=os.fspath(cache_dir), skip_instance_cache=True, **kwargs)


def read_through_cache(endpoint: Endpoint, path: str, kind: str, cache_dir: str | os.PathLike[str],
                       label: str = "") -> dict[str, Any]:
    """Open and read ``bucket/key`` twice through a caching filesystem (two separate opens).
    Reports both times and how many bytes the cache directory holds after each (a miss fills it)."""
    fs = caching_filesystem(endpoint, kind, cache_dir)
    out: dict[str, Any] = {"label": label or f"fsspec {kind}", "client": "fsspec", "cache": kind}
    for n in (1, 2):
        before = _dir_bytes(cache_dir)
        t0 = time.perf_counter()
        with fs.open(path, "rb") as f:
            size = 0
            while chunk := f.read(1 << 20):
                size += len(chunk)
        out[f"{'first' if n == 1 else 'second'}_s"] = time.perf_counter() - t0
        out[f"cache_grew_{n}"] = _dir_bytes(cache_dir) - before
    out["nbytes"] = size
    out["first_mb_per_s"] = size / out["first_s"] / 1e6
    out["second_mb_per_s"] = size / out["second_s"] / 1e6
    out["hits"] = int(out["cache_grew_2"] == 0)   # the second open found the copy: nothing fetched
    out["misses"] = int(out["cache_grew_1"] > 0) + int(out["cache_grew_2"] > 0)
    return out
