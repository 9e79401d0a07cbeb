"""FUSE mounts of a bucket: s3fs-fuse, gcsfuse and rclone, each a context manager.

    with s3fs_fuse(ep, "lesson06", cache=ws.mkdir("s3fs-cache")) as m:
        data = (m.path / "file.bin").read_bytes()

The client runs in the foreground in a process group of its own (so it is ours to stop); on exit,
error or KeyboardInterrupt the mount is unmounted (``fusermount -u``, lazily with ``-uz`` when busy),
the client stopped, its credential file removed. When FUSE is not allowed here (no ``/dev/fuse``, no
``fusermount``: a JupyterHub container, say) they raise :class:`FuseUnavailable`, and the lesson
uses fsspec instead.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import fsinfo, guard
from .. import workspace as _workspace
from ..errors import IolabError, ToolFailed, ToolMissing
from ._proc import Service, resolve
from .endpoint import Endpoint

CLIENTS = ("s3fs", "gcsfuse", "rclone")
FSTYPES = {"s3fs": "fuse.s3fs", "gcsfuse": "fuse.gcsfuse", "rclone": "fuse.rclone"}


class FuseUnavailable(ToolMissing):
    """FUSE mounts are not possible here; the lesson falls back to fsspec or to recordings.

    A ToolMissing, so that ``recordings.live_or_recorded`` replays a recording instead."""

    def __init__(self, message: str):
        IolabError.__init__(self, message)
        self.tool = "FUSE"
        self.hint = message


class MountError(IolabError, OSError):
    """A mount could not be made (busy or non-empty mount point, refused credentials, missing bucket)."""


def fusermount() -> str | None:
    return shutil.which("fusermount3") or shutil.which("fusermount")


def fuse_problem() -> str:
    """Why FUSE cannot be used here, or "" when it can."""
    if not os.path.exists("/dev/fuse"):
        return "there is no /dev/fuse on this machine (a container without FUSE?)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return "/dev/fuse exists but this user may not open it"
    if fusermount() is None:
        return "fusermount is not installed (apt-get install fuse3)"
    return ""


def fuse_available() -> bool:
    return fuse_problem() == ""


def client_binary(client: str) -> str:
    if client not in CLIENTS:
        raise ValueError(f"client is one of {CLIENTS}")
    return resolve(client, str(Path(sys.executable).parent / client))


def clients_here() -> dict[str, bool]:
    """Which FUSE clients can mount here (FUSE allowed and the client installed)."""
    ok = fuse_available()
    out = {}
    for c in CLIENTS:
        try:
            client_binary(c)
            out[c] = ok
        except IolabError:
            out[c] = False
    return out


def is_mounted(path: str | os.PathLike[str]) -> bool:
    """Whether path is a mount point, from the mount table: a mount point is never stat'ed (a stat of a
    FUSE mount whose daemon waits for a dead store waits with it, beyond the reach of SIGKILL)."""
    return guard.mounted(path)


def mounts_under(root: str | os.PathLike[str]) -> list[fsinfo.Mount]:
    under = set(guard.mountpoints_under(root))
    return [m for m in fsinfo.mounts() if m.mountpoint in under]


def unmount(path: str | os.PathLike[str], timeout: float = 15, *, daemons: tuple[int, ...] = (),
            grace: float = 3.0) -> bool:
    """``fusermount -u``; if busy (or the daemon is gone), ``fusermount -uz`` (lazy); a daemon that does
    not end within grace seconds (waiting for a dead store) is killed (:func:`iolab.guard.release_mount`).
    True when it is no longer mounted."""
    return guard.release_mount(path, daemons=daemons, grace=grace, timeout=timeout + grace)


def _answers(path: Path, timeout: float = 5.0) -> bool:
    """Whether a new mount's client answers a stat of it (s3fs checks the bucket and the keys only then,
    and exits when they are wrong). The stat runs in a thread of its own, waited for timeout s: a client
    that never answers would hold the caller in the kernel; the thread is let go when the client that
    failed to start is stopped."""
    answer: list[bool] = []

    def probe() -> None:
        try:
            os.stat(path)
            answer.append(True)
        except OSError:
            answer.append(False)

    t = threading.Thread(target=probe, name="iolab-mount-probe", daemon=True)
    t.start()
    t.join(timeout)
    return answer == [True]


def _check_mountpoint(mnt: Path) -> None:
    if is_mounted(mnt):
        raise MountError(f"{mnt} is already a mount point (busy): unmount it first (fusermount -u {mnt})")
    if mnt.exists():
        if not mnt.is_dir():
            raise MountError(f"{mnt} is not a directory")
        if any(mnt.iterdir()):
            raise MountError(f"{mnt} is not empty: a mount would hide its files; use an empty directory")


@dataclass
class Mount:
    """A live FUSE mount: where, by which client, with which cache, and its log."""

    client: str
    bucket: str
    path: Path
    endpoint: Endpoint
    cache_dir: Path | None
    options: dict[str, Any]
    service: Service = field(repr=False)
    private_dir: Path = field(repr=False)

    @property
    def argv(self) -> list[str]:
        return list(self.service.argv)

    def log_tail(self, lines: int = 25) -> str:
        return self.service.log_tail(lines)

    def describe(self) -> str:
        cache = f"cache in {self.cache_dir} ({fsinfo.mount_of(self.cache_dir).kind})" if self.cache_dir else "no cache"
        return f"{self.client} mount of {self.bucket} at {self.path}, {cache}"

    def alive(self) -> bool:
        return self.service.alive() and is_mounted(self.path)


@contextlib.contextmanager
def _mount(client: str, argv: list[str], *, endpoint: Endpoint, bucket: str, mnt: Path, private: Path,
           cache: Path | None, options: dict[str, Any], env: Mapping[str, str | None] | None = None,
           start_timeout: float = 30, flush_timeout: float = 30) -> Iterator[Mount]:
    svc = Service(client, argv, log_path=private / f"{client}.log", env=env,
                  ready=lambda: is_mounted(mnt) and _answers(mnt), start_timeout=start_timeout, stop_grace=3)
    try:
        try:
            svc.start()
        except ToolFailed as e:
            raise MountError(f"{client} could not mount bucket {bucket!r} from {endpoint.url}: "
                             f"{_diagnose(svc.log_tail())}\n{e}") from None
        guard.watch_mount(mnt, daemon=svc.pid)
        yield Mount(client, bucket, mnt, endpoint, cache, options, svc, private)
    finally:
        try:
            # a client exits by itself once unmounted, after uploading what is still dirty: it is given
            # flush_timeout s for that; one waiting for a dead store is killed then. The mount point is
            # never stat'ed meanwhile.
            unmount(mnt, daemons=(svc.pid,) if svc.pid else (), grace=flush_timeout)
            if svc.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    svc.proc.wait(timeout=flush_timeout)
        finally:
            svc.stop()
            unmount(mnt)   # the daemon is gone: a dead mount ("Transport endpoint is not connected") goes too
            guard.remove_tree(private)
            if not is_mounted(mnt):
                with contextlib.suppress(OSError):
                    mnt.rmdir()
                guard.forget_mount(mnt)


def _diagnose(log: str) -> str:
    low = log.lower()
    if "signaturedoesnotmatch" in low or "invalidaccesskeyid" in low or "access denied" in low or \
            "accessdenied" in low or "403" in low:
        return "the store refused the credentials"
    if "nosuchbucket" in low or "bucket not found" in low or "404" in low or "does not exist" in low:
        return "the bucket does not exist"
    if "connection refused" in low or "couldn't connect" in low or "could not connect" in low:
        return "nothing answers at that address (is the server running?)"
    return "see the client's log below"


def _prepare(ws: _workspace.Workspace | None, client: str, mountpoint: str | os.PathLike[str] | None
             ) -> tuple[_workspace.Workspace, Path, Path]:
    problem = fuse_problem()
    if problem:
        raise FuseUnavailable(f"cannot mount with {client}: {problem}. Use the fsspec functions instead "
                              "(iolab.objectstore.caches).")
    w = ws if ws is not None else _workspace.session()
    tag = secrets.token_hex(3)
    mnt = Path(mountpoint) if mountpoint is not None else w.inside(f"mnt/{client}-{tag}")
    mnt = mnt.absolute()
    _check_mountpoint(mnt)
    mnt.mkdir(parents=True, exist_ok=True)
    private = Path(w.mkdir(f"objectstore/{client}-{tag}"))
    os.chmod(private, 0o700)
    return w, mnt, private


def _cache_dir(cache: str | os.PathLike[str] | None) -> Path | None:
    if cache is None:
        return None
    c = Path(cache).absolute()
    c.mkdir(parents=True, exist_ok=True)
    return c


@contextlib.contextmanager
def s3fs_fuse(endpoint: Endpoint, bucket: str, *, cache: str | os.PathLike[str] | None = None,
              ws: _workspace.Workspace | None = None, mountpoint: str | os.PathLike[str] | None = None,
              **opts: Any) -> Iterator[Mount]:
    """Mount bucket with s3fs-fuse. cache: a directory for ``use_cache`` (None: no file cache).

    opts become ``-o name=value`` (``True`` -> ``-o name``): e.g. ``del_cache=True``,
    ``stat_cache_expire=1``, ``max_stat_cache_size=0``, ``parallel_count=5``, ``multireq_max=50``.
    """
    if endpoint.kind != "s3":
        raise ValueError("s3fs-fuse mounts S3 endpoints")
    exe = client_binary("s3fs")
    _w, mnt, private = _prepare(ws, "s3fs", mountpoint)
    cdir = _cache_dir(cache)
    passwd = endpoint.s3fs_passwd_file(private)
    argv = [exe, bucket, str(mnt), "-f", "-o", f"url={endpoint.url}", "-o", "use_path_request_style",
            "-o", f"passwd_file={passwd}", "-o", f"endpoint={endpoint.region}"]
    if cdir is not None:
        argv += ["-o", f"use_cache={cdir}"]
    for k, v in opts.items():
        if v is False or v is None:
            continue
        argv += ["-o", k if v is True else f"{k}={v}"]
    with _mount("s3fs", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private, cache=cdir,
                options=dict(opts)) as m:
        yield m


@contextlib.contextmanager
def gcsfuse(endpoint: Endpoint, bucket: str, *, cache: str | os.PathLike[str] | None = None,
            file_cache_max_size_mb: int = -1, metadata_cache_ttl_secs: int | None = None,
            ws: _workspace.Workspace | None = None, mountpoint: str | os.PathLike[str] | None = None,
            extra: tuple[str, ...] = ()) -> Iterator[Mount]:
    """Mount bucket with gcsfuse; cache: a directory for its file cache (``--cache-dir``)."""
    if endpoint.kind != "gcs":
        raise ValueError("gcsfuse mounts GCS endpoints")
    exe = client_binary("gcsfuse")
    _w, mnt, private = _prepare(ws, "gcsfuse", mountpoint)
    cdir = _cache_dir(cache)
    argv = [exe, "--foreground", "--implicit-dirs", f"--temp-dir={private}",
            f"--custom-endpoint={endpoint.localhost_url}/storage/v1/", "--log-severity=warning"]
    argv += [f"--key-file={endpoint.token_file}"] if endpoint.token_file else ["--anonymous-access"]
    if cdir is not None:
        argv += [f"--cache-dir={cdir}", f"--file-cache-max-size-mb={file_cache_max_size_mb}"]
    if metadata_cache_ttl_secs is not None:
        argv += [f"--metadata-cache-ttl-secs={metadata_cache_ttl_secs}"]
    argv += [*extra, bucket, str(mnt)]
    opts = {"file_cache_max_size_mb": file_cache_max_size_mb if cdir else None,
            "metadata_cache_ttl_secs": metadata_cache_ttl_secs}
    with _mount("gcsfuse", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private, cache=cdir,
                options=opts) as m:
        yield m


@contextlib.contextmanager
def rclone(endpoint: Endpoint, bucket: str, *, vfs_cache_mode: str = "off",
           cache: str | os.PathLike[str] | None = None, ws: _workspace.Workspace | None = None,
           mountpoint: str | os.PathLike[str] | None = None, extra: tuple[str, ...] = ()) -> Iterator[Mount]:
    """Mount bucket with ``rclone mount`` and ``--vfs-cache-mode`` off / minimal / writes / full."""
    if vfs_cache_mode not in ("off", "minimal", "writes", "full"):
        raise ValueError("vfs_cache_mode is off, minimal, writes or full")
    exe = client_binary("rclone")
    _w, mnt, private = _prepare(ws, "rclone", mountpoint)
    try:
        _bucket_exists(endpoint, bucket)
    except MountError:
        guard.remove_tree(private)
        with contextlib.suppress(OSError):
            mnt.rmdir()
        raise
    cdir = _cache_dir(cache) or (private / "cache")
    conf = endpoint.rclone_config(private)
    argv = [exe, "mount", f"store:{bucket}", str(mnt), "--config", str(conf), "--vfs-cache-mode", vfs_cache_mode,
            "--cache-dir", str(cdir), "--dir-cache-time", "5s", "--vfs-write-back", "0s", "--log-level", "NOTICE",
            *extra]
    # this environment's AWS_CA_BUNDLE breaks rclone's S3 backend on plain http
    env = {"AWS_CA_BUNDLE": None, "RCLONE_CONFIG": str(conf)}
    with _mount("rclone", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private,
                cache=cdir if vfs_cache_mode != "off" else None, options={"vfs_cache_mode": vfs_cache_mode},
                env=env) as m:
        yield m


def _bucket_exists(endpoint: Endpoint, bucket: str) -> None:
    """rclone mounts a missing bucket as an empty directory (and would create it on the first
    write), and it checks no credentials at mount time: ask the store first."""
    try:
        fs = endpoint.filesystem()
        found = fs.exists(bucket)
    except PermissionError:
        raise MountError(f"the store at {endpoint.url} refused the credentials") from None
    except OSError as e:
        raise MountError(f"cannot reach the store at {endpoint.url}: {e}") from None
    if not found:
        raise MountError(f"bucket {bucket!r} does not exist at {endpoint.url}")
