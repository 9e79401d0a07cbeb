"""Background processes owned by a context manager (a daemon with a port and a log: lesson 06's servers,
proxies and FUSE daemons, lesson 08's Ceph daemons), and the loopback ports they listen on.

Every process starts in a session (process group) of its own, writes its log to a file in the
workspace, and is stopped on exit, on error, on KeyboardInterrupt and, as a last resort, when the
Python process exits: SIGTERM to the whole group, a grace period, then SIGKILL.
"""
from __future__ import annotations

import atexit
import glob
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from . import guard
from .errors import IolabError, ToolFailed, ToolMissing, ToolTimeout
from .runner import install_hint, which

LOOPBACK = "127.0.0.1"


class PortTaken(IolabError, OSError):
    """A port asked for explicitly is already in use on this node."""


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def require_free(port: int, what: str) -> int:
    if not port_is_free(port):
        raise PortTaken(f"port {port} on {LOOPBACK} is already taken (another student's server, or one left "
                        f"running?); start {what} without a port to get a free one")
    return port


def free_ports(n: int, *, grpc_offset: int | None = None) -> list[int]:
    """n distinct free ports on 127.0.0.1 (with grpc_offset: each port + offset is free too)."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        tries = 0
        while len(ports) < n:
            tries += 1
            if tries > 2000:
                raise PortTaken("could not find enough free ports on 127.0.0.1")
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((LOOPBACK, 0))
            p = s.getsockname()[1]
            if grpc_offset is not None:
                if p + grpc_offset > 65535 or not port_is_free(p + grpc_offset) or (p + grpc_offset) in ports:
                    s.close()
                    continue
                g = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                g.bind((LOOPBACK, p + grpc_offset))
                held.append(g)
            held.append(s)
            ports.append(p)
    finally:
        for s in held:
            s.close()
    return ports


def port_open(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True when something answers HTTP at url (any status: 403 from an S3 server counts)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, ValueError):
        return False


def resolve(tool: str, *candidates: str | os.PathLike[str]) -> str:
    """The executable for tool: on PATH, or one of candidates; else ToolMissing with the install hint."""
    found = which(tool)
    if found:
        return found
    for c in candidates:
        if c and os.access(c, os.X_OK) and Path(c).is_file():
            return os.fspath(c)
    raise ToolMissing(tool, install_hint(tool))


LIVE: set["Service"] = set()
# every service started in this process, newest last (tests check what each one left behind)
STARTED: list["Service"] = []


_O = TypeVar("_O", bound="Owned")


class Owned:
    """What a ``with`` block owns: started on entering unless it runs already (:meth:`running`), stopped
    however the block ends. A subclass gives ``start()``, ``stop()`` and ``running()``."""

    def start(self) -> object:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    def stop(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def running(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def __enter__(self: _O) -> _O:
        if not self.running():
            self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@atexit.register
def _stop_all() -> None:
    for svc in list(LIVE):
        svc.stop()


class Service(Owned):
    """One background process in its own process group; a context manager (:class:`Owned`)."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: str | os.PathLike[str],
                 ready: Callable[[], bool], cwd: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str | None] | None = None, start_timeout: float = 30.0,
                 stop_grace: float = 5.0, cleanup_globs: Sequence[str] = (), pass_fds: Sequence[int] = (),
                 umask: int = -1):
        self.name = name
        self.argv = [os.fspath(a) for a in argv]
        self.log_path = Path(log_path)
        self.ready = ready
        self.cwd = cwd
        self.env = env
        self.start_timeout = start_timeout
        self.stop_grace = stop_grace
        self.cleanup_globs = list(cleanup_globs)
        self.pass_fds = tuple(pass_fds)
        self.umask = umask          # e.g. 0o077: the sockets and files it makes are its owner's only
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None

    # -- life cycle ------------------------------------------------------------------------------
    def start(self) -> "Service":
        full_env = dict(os.environ)
        for k, v in (self.env or {}).items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=full_env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         pass_fds=self.pass_fds, umask=self.umask)
        except FileNotFoundError as e:
            raise ToolMissing(self.argv[0], install_hint(Path(self.argv[0]).name)) from e
        finally:
            log.close()
        # a kernel killed outright runs no exit handler: its guard stops the server then
        guard.ensure()
        guard.watch_process_group(self.proc.pid)
        for pattern in self.cleanup_globs:
            guard.watch_files(pattern)
        LIVE.add(self)
        STARTED.append(self)
        del STARTED[:-200]
        self.started_at = time.monotonic()
        try:
            deadline = time.monotonic() + self.start_timeout
            while True:
                if self.proc.poll() is not None:
                    raise ToolFailed(self.argv, self.proc.returncode, self.log_tail(),
                                     f"{self.name} stopped while starting (exit status {self.proc.returncode})")
                if self.ready():
                    return self
                if time.monotonic() > deadline:
                    raise ToolTimeout(self.argv, None, self.log_tail(),
                                      f"{self.name} was not ready within {self.start_timeout:.0f} s")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM the process group, wait stop_grace s, SIGKILL it, reap; remove stray sockets."""
        proc = self.proc
        if proc is not None:
            for sig, wait in ((signal.SIGTERM, self.stop_grace), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            # the leader may be gone while children of its group linger: finish them off
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pattern in self.cleanup_globs:
            for p in glob.glob(pattern):
                try:
                    if os.lstat(p).st_uid == os.geteuid():      # never another user's file of that name
                        os.unlink(p)
                except OSError:
                    pass
            guard.forget_files(pattern)
        if proc is not None:
            guard.forget_process_group(proc.pid)
        LIVE.discard(self)

    def leftovers(self) -> list[str]:
        """What of this service is still there: its process, or files matching its cleanup globs."""
        left = [f"process {self.pid}"] if self.alive() else []
        return left + [p for pattern in self.cleanup_globs for p in glob.glob(pattern)]

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def running(self) -> bool:
        """Started (its process may have ended since: :meth:`alive` says)."""
        return self.proc is not None

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<{self.name} pid={self.pid} {state}>"
