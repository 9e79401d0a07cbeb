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
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import fsinfo, guard
from .. import workspace as _workspace
from ..errors import BudgetExceeded, IolabError, ToolFailed, ToolMissing
from ..units import MiB
from ..service import Service, resolve
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


def lists(path: str | os.PathLike[str], timeout: float = 30) -> bool:
    """Whether a listing of path succeeds within timeout: the positive proof that a FUSE mount works.

    A mount appears in the mount table before its client has checked anything: s3fs checks the bucket
    in its FUSE init, and on a missing bucket or refused keys leaves its event loop (exit status 0)
    moments later; under load, long after the mount point showed up. A listing of the root is served
    only after that init, and it lists the bucket: it fails for a missing one. The listing runs in a
    thread, so that a client that hangs cannot hang the caller."""
    result: list[bool] = []

    def probe() -> None:
        try:
            os.listdir(path)
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, name=f"list {path}", daemon=True)
    t.start()
    t.join(timeout)
    return result == [True]


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

    def pending_uploads(self) -> list[str]:
        """Files written through the mount that the client has not uploaded yet, from its own record
        (rclone: the ``Dirty`` flag of each file's metadata in ``<cache>/vfsMeta``, cleared once the
        store has the file). Empty for a client that uploads before close returns (no such record)."""
        if self.client != "rclone" or self.cache_dir is None:
            return []
        meta = self.cache_dir / "vfsMeta"
        pending = []
        for dirpath, _dirs, files in os.walk(meta):
            for name in files:
                p = Path(dirpath) / name
                try:
                    dirty = json.loads(p.read_text()).get("Dirty")
                except (OSError, ValueError, AttributeError):
                    dirty = True               # being rewritten: not known to be uploaded
                if dirty:
                    pending.append(str(p.relative_to(meta)))
        return pending

    def wait_uploaded(self, stall: float = 60) -> None:
        """Wait until the client has uploaded every file written through the mount (rclone uploads
        after close, in the background, and drops what is not uploaded when it is unmounted). Fails
        with MountError only when no upload finishes for ``stall`` seconds, or the client is gone."""
        last, changed = None, time.monotonic()
        while True:
            pending = self.pending_uploads()
            if not pending:
                return
            if not self.service.alive():
                raise MountError(f"{self.client} stopped before uploading {pending}:\n{self.log_tail()}")
            if pending != last:
                last, changed = pending, time.monotonic()
            elif time.monotonic() - changed > stall:
                raise MountError(f"{self.client} uploaded nothing of {pending} in {stall:.0f} s:\n{self.log_tail()}")
            time.sleep(0.1)


@contextlib.contextmanager
def _mount(client: str, argv: list[str], *, endpoint: Endpoint, bucket: str, mnt: Path, private: Path,
           cache: Path | None, options: dict[str, Any], env: Mapping[str, str | None] | None = None,
           start_timeout: float = 30, flush_timeout: float = 30) -> Iterator[Mount]:
    svc = Service(client, argv, log_path=private / f"{client}.log", env=env,
                  # ready: mounted, its root listed (the bucket is there, the keys work), the client alive
                  ready=lambda: is_mounted(mnt) and lists(mnt, timeout=start_timeout) and svc.alive(),
                  start_timeout=start_timeout, stop_grace=3)
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
    if "nosuchbucket" in low or "bucket not found" in low or "404" in low or "does not exist" in low or \
            "bucket or key not found" in low:
        return "the bucket does not exist"
    if "no enough disk space" in low or "not enough disk space" in low:
        return ("what is left of the workspace's budget is too small for s3fs's cache (ensure_diskfree keeps the "
                "rest free, and s3fs wants room for parallel_count x multipart_size beyond it): free some of the "
                "workspace or raise IOLAB_BUDGET")
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
    w, mnt, private = _prepare(ws, "s3fs", mountpoint)
    cdir = _cache_dir(cache)
    passwd = endpoint.s3fs_passwd_file(private)
    # its temporary files (uploads without a cache) in the workspace, not in the node's /tmp
    argv = [exe, bucket, str(mnt), "-f", "-o", f"url={endpoint.url}", "-o", "use_path_request_style",
            "-o", f"passwd_file={passwd}", "-o", f"endpoint={endpoint.region}", "-o", f"tmpdir={private}"]
    if cdir is not None:
        # s3fs has no cache size limit, only a free space it keeps on the cache's filesystem: what is
        # free there now less what is left of the budget (and no less than the caller asked for)
        opts = {**opts, "ensure_diskfree": max(ensure_diskfree_mb(cdir, w.left),
                                               int(opts.get("ensure_diskfree") or 0))}
        argv += ["-o", f"use_cache={cdir}"]
    for k, v in opts.items():
        if v is False or v is None:
            continue
        argv += ["-o", k if v is True else f"{k}={v}"]
    with _counted(w, cdir), _mount("s3fs", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private,
                                   cache=cdir, options=dict(opts)) as m:
        yield m


def ensure_diskfree_mb(cache: str | os.PathLike[str], left: int) -> int:
    """s3fs's ``ensure_diskfree`` (MiB) that lets its cache at ``cache`` grow by ``left`` bytes at most."""
    return max(shutil.disk_usage(cache).free - left, 0) // MiB + 1


def cache_limit_mb(left: int) -> int:
    """A cache size limit in MiB (gcsfuse ``--file-cache-max-size-mb``, rclone ``--vfs-cache-max-size``)
    from what is left of the budget: at least 1."""
    return max(left // MiB, 1)


@contextlib.contextmanager
def _counted(w: _workspace.Workspace, cache: Path | None) -> Iterator[None]:
    """A cache outside the workspace's tree (in /dev/shm, say) counts against its budget while mounted."""
    if cache is None or w.inside_tree(cache):
        yield
        return
    w.count_dir(cache)
    try:
        yield
    finally:
        w.uncount_dir(cache)


@contextlib.contextmanager
def gcsfuse(endpoint: Endpoint, bucket: str, *, cache: str | os.PathLike[str] | None = None,
            file_cache_max_size_mb: int | None = None, metadata_cache_ttl_secs: int | None = None,
            ws: _workspace.Workspace | None = None, mountpoint: str | os.PathLike[str] | None = None,
            extra: tuple[str, ...] = ()) -> Iterator[Mount]:
    """Mount bucket with gcsfuse; cache: a directory for its file cache (``--cache-dir``), at most
    ``file_cache_max_size_mb`` (None: what is left of the workspace's budget; more is refused)."""
    if endpoint.kind != "gcs":
        raise ValueError("gcsfuse mounts GCS endpoints")
    exe = client_binary("gcsfuse")
    w, mnt, private = _prepare(ws, "gcsfuse", mountpoint)
    cdir = _cache_dir(cache)
    limit = cache_limit_mb(w.left)
    if file_cache_max_size_mb is None or file_cache_max_size_mb < 0:
        file_cache_max_size_mb = limit
    elif file_cache_max_size_mb > limit:
        _unprepare(mnt, private)
        raise BudgetExceeded(f"a gcsfuse file cache of {file_cache_max_size_mb} MiB is more than is left of the "
                             f"workspace budget ({limit} MiB)")
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
    with _counted(w, cdir), _mount("gcsfuse", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private,
                                   cache=cdir, options=opts) as m:
        yield m


@contextlib.contextmanager
def rclone(endpoint: Endpoint, bucket: str, *, vfs_cache_mode: str = "off",
           cache: str | os.PathLike[str] | None = None, ws: _workspace.Workspace | None = None,
           mountpoint: str | os.PathLike[str] | None = None, extra: tuple[str, ...] = ()) -> Iterator[Mount]:
    """Mount bucket with ``rclone mount`` and ``--vfs-cache-mode`` off / minimal / writes / full; the
    cache is held to what is left of the workspace's budget (``--vfs-cache-max-size``, checked every
    ``--vfs-cache-poll-interval``, 5 s: rclone evicts no file that is open)."""
    if vfs_cache_mode not in ("off", "minimal", "writes", "full"):
        raise ValueError("vfs_cache_mode is off, minimal, writes or full")
    exe = client_binary("rclone")
    w, mnt, private = _prepare(ws, "rclone", mountpoint)
    try:
        _bucket_exists(endpoint, bucket)
    except MountError:
        _unprepare(mnt, private)
        raise
    cdir = _cache_dir(cache) or (private / "cache")
    conf = endpoint.rclone_config(private)
    argv = [exe, "mount", f"store:{bucket}", str(mnt), "--config", str(conf), "--vfs-cache-mode", vfs_cache_mode,
            "--cache-dir", str(cdir), "--dir-cache-time", "5s", "--vfs-write-back", "0s", "--log-level", "NOTICE",
            "--vfs-cache-max-size", f"{cache_limit_mb(w.left)}M", "--vfs-cache-poll-interval", "5s", *extra]
    # this environment's AWS_CA_BUNDLE breaks rclone's S3 backend on plain http
    env = {"AWS_CA_BUNDLE": None, "RCLONE_CONFIG": str(conf)}
    with _counted(w, cdir), _mount("rclone", argv, endpoint=endpoint, bucket=bucket, mnt=mnt, private=private,
                                   cache=cdir if vfs_cache_mode != "off" else None,
                                   options={"vfs_cache_mode": vfs_cache_mode}, env=env) as m:
        yield m
        m.wait_uploaded()         # rclone drops what it has not uploaded when unmounted (rclone#7309)


def _unprepare(mnt: Path, private: Path) -> None:
    """Undo :func:`_prepare` for a mount that is refused before its client starts."""
    guard.remove_tree(private)
    with contextlib.suppress(OSError):
        mnt.rmdir()


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
