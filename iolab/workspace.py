"""Where experiments may write: a per-user directory with a byte budget, removed when done.

Default location: ``$IOLAB_WORKDIR`` if set, else the first disk-backed of ``$TMPDIR``, ``/tmp``,
``/var/tmp``, ``~/.cache`` (node-local scratch on most clusters), in ``iolab-<user>/``. Default budget 2 GiB, or ``$IOLAB_BUDGET`` (e.g. "512MiB").
"""
from __future__ import annotations

import atexit
import contextlib
import getpass
import os
import re
import shutil
import signal
import socket
import stat
import tempfile
import threading
import warnings
import weakref
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import numpy as np

from . import guard
from .errors import BudgetExceeded, OutsideWorkspace
from .units import MiB, format_size, parse_size
from .fsinfo import MEMORY_FS, fstype

DEFAULT_BUDGET = "2GiB"
# keep this much free on the filesystem whatever the budget says: it is shared
FREE_MARGIN = 1024 * MiB


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return str(os.getuid())


def _candidates() -> list[Path]:
    env = [os.environ.get("TMPDIR"), "/tmp", "/var/tmp", os.path.join(os.path.expanduser("~"), ".cache")]
    return [Path(p) for p in env if p]


def base_dir() -> Path:
    """The per-user directory that holds every workspace of this user.

    ``$IOLAB_WORKDIR`` when set. Otherwise the first of $TMPDIR, /tmp, /var/tmp, ~/.cache that is
    writable and disk-backed: on a tmpfs the page cache *is* the file, so nothing could be evicted
    and no cold read measured. If every candidate is memory, the first writable one is used.

    A name on the way that someone else created first in a directory everybody may write (``/tmp/iolab-<user>``,
    ``<scratch>/<user>``: anyone can predict them) is not used, nor followed if it is their symlink: a
    private directory next to it, ``<name>.<random>``, is used instead, and the user told once.
    """
    root = os.environ.get("IOLAB_WORKDIR")
    if root:
        return _claim(Path(os.path.abspath(Path(root).expanduser())))
    usable = [c for c in _candidates() if c.is_dir() and os.access(c, os.W_OK | os.X_OK)]
    if not usable:
        raise OSError("no writable scratch directory found: set IOLAB_WORKDIR")
    disk = [c for c in usable if fstype(c) not in MEMORY_FS]
    return private_dir((disk or usable)[0] / f"iolab-{_user()}")


class NameTaken(UserWarning):
    """A directory name iolab would use was taken by someone else; a private one is used instead."""


_told: dict[str, str] = {}          # a name someone else took -> the private directory used instead


def names_taken() -> dict[str, str]:
    """The names this process found taken by someone else, and the private directory used for each."""
    return dict(_told)


def _taken(st: os.stat_result) -> str:
    """Why an existing entry cannot be our directory ("" when it can: a real directory of ours)."""
    if stat.S_ISLNK(st.st_mode):
        return "a symlink"
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory"
    if st.st_uid != os.geteuid():
        return f"a directory of uid {st.st_uid}"
    return ""


def _shared(d: Path) -> bool:
    """Others may create names in d (group or other write bit)."""
    return bool(os.stat(d).st_mode & 0o022)


def _fallback(path: Path, why: str) -> Path:
    """A private directory next to ``path``, whose name someone else took: this user's existing
    ``<name>.<random>`` (so that every session finds the same one), else a new one (mode 0700)."""
    pattern = re.compile(re.escape(path.name) + r"\.[a-z0-9_]{8}")
    chosen = None
    for e in sorted(os.scandir(path.parent), key=lambda e: e.name):
        if pattern.fullmatch(e.name):
            st = os.lstat(e.path)
            if not _taken(st):
                chosen = Path(e.path)
                if st.st_mode & 0o077:
                    os.chmod(chosen, 0o700)
                break
    if chosen is None:
        chosen = Path(tempfile.mkdtemp(prefix=path.name + ".", dir=path.parent))
    if str(path) not in _told:
        _told[str(path)] = str(chosen)
        warnings.warn(f"{path} is {why}: someone else made it first (anyone on this node can create that name), "
                      f"so it is not used. Your files go to {chosen} instead, a directory of yours alone; ask an "
                      f"admin to remove {path}.", NameTaken, stacklevel=3)
    return chosen


def _claim(path: Path) -> Path:
    """``path`` made ours, one component at a time: an existing directory of ours or root's is entered,
    a symlink followed only when it is ours or root's (or lies in a directory nobody else writes), a
    missing one created mode 0700; a name taken by someone else in a directory all may write is replaced
    by a private one (:func:`_fallback`). Elsewhere someone else's entry is refused (PermissionError)."""
    cur = Path(path.anchor)
    me = os.geteuid()
    for name in path.parts[1:]:
        nxt = cur / name
        try:
            st = os.lstat(nxt)
        except FileNotFoundError:
            safe_chain(cur)
            with contextlib.suppress(FileExistsError):
                nxt.mkdir(mode=0o700)
            st = os.lstat(nxt)                    # made by us, or by someone quicker: judged the same way
        if stat.S_ISLNK(st.st_mode) and (st.st_uid in (0, me) or not _shared(cur)):
            cur = Path(os.path.realpath(nxt))
            continue
        why = _taken(st) if st.st_uid != 0 or not stat.S_ISDIR(st.st_mode) else ""
        if not why:
            cur = nxt
            continue
        if not _shared(cur):
            raise PermissionError(f"{nxt} is {why}, not yours (uid {me}): its owner could replace your workspace "
                                  "with a link to your other files. Set IOLAB_WORKDIR to a directory of your own.")
        safe_chain(cur)
        cur = _fallback(nxt, why)
    safe_chain(cur)
    return cur


def safe_chain(path: str | os.PathLike[str]) -> Path:
    """Refuse a directory that someone else could swap or empty under us.

    Every directory from ``/`` down to ``path`` must belong to this user or to root, and one that
    others may write (group or other write bit) must be sticky, like ``/tmp``: in a directory that
    another user can write, that user can rename our workspace away and put a symlink in its place,
    and removing the workspace would then remove the symlink's target.
    """
    p = Path(os.path.abspath(path))
    me = os.geteuid()
    for d in [*reversed(p.parents), p]:
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            break                                   # made later by us, with mode 0700
        if stat.S_ISLNK(st.st_mode):
            raise PermissionError(f"{d} is a symlink: give the directory it points to "
                                  f"({os.path.realpath(d)}) after checking who owns it.")
        if st.st_uid not in (0, me):
            raise PermissionError(f"{d} belongs to uid {st.st_uid}, not to you (uid {me}) or root: its owner "
                                  "could replace your workspace with a link to your other files. Set "
                                  "IOLAB_WORKDIR to a directory of your own.")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise PermissionError(f"{d} can be written by other users and is not sticky (mode "
                                  f"{stat.S_IMODE(st.st_mode):o}): they could rename your workspace and put "
                                  "something else in its place. Set IOLAB_WORKDIR to a directory of your own.")
    return p


def private_dir(path: str | os.PathLike[str]) -> Path:
    """A directory of this user's own, mode 0700, at a name chosen in a directory everybody may write
    (``/tmp/iolab-<user>``, ``/dev/shm/iolab-<uid>``).

    Anyone can create that name first: when it is a symlink, not a directory, or someone else's, it is
    neither used nor followed, and a private ``<name>.<random>`` next to it is used instead (the user is
    told once). Only in a directory nobody else may write is such an entry refused (PermissionError).
    """
    p = Path(path)
    safe_chain(p.parent)
    p.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        p.mkdir(mode=0o700)
    st = os.lstat(p)
    why = _taken(st)
    if why:
        if _shared(p.parent):
            return _fallback(p, why)
        raise PermissionError(f"{p} is {why}, not a directory of yours (uid {os.geteuid()}): its owner could "
                              "read or replace your files in it. Remove it, or set IOLAB_WORKDIR to a directory "
                              "of your own.")
    if st.st_mode & 0o077:
        os.chmod(p, 0o700)
    return p


def disk_usage(path: str | os.PathLike[str]) -> int:
    """Bytes allocated under path (sparse files count what they use)."""
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total


# the workspaces this process has open, so that a tool run can find the budget its output falls in
_open: "weakref.WeakSet[Workspace]" = weakref.WeakSet()
_HOST = socket.gethostname().split(".")[0].replace("-", "_") or "host"
PREFIXES = ("ws-", "session-")
# private workspaces made right on a filesystem under test (mdtest on /tmp, /dev/shm, $HOME, ...),
# next to everybody else's files: hidden, and reaped there like the others
SCRATCH_PREFIXES = (".iolab-mdtest-",)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_of(name: str, prefixes: tuple[str, ...] = PREFIXES + SCRATCH_PREFIXES) -> tuple[str, int] | None:
    """(host, pid) from a workspace directory's name (<prefix><host>-<pid>-<random>), or None."""
    for prefix in prefixes:
        if name.startswith(prefix):
            parts = name[len(prefix):].rsplit("-", 2)
            if len(parts) == 3 and parts[1].isdigit():
                return parts[0], int(parts[1])
    return None


def ours(parent: str | os.PathLike[str], prefixes: tuple[str, ...] = PREFIXES + SCRATCH_PREFIXES) -> list[Path]:
    """This user's workspace directories of this host directly under parent (hidden ones included)."""
    found: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return found
    for e in entries:
        who = owner_of(e.name, prefixes)
        try:
            mine = e.is_dir(follow_symlinks=False) and e.stat(follow_symlinks=False).st_uid == os.geteuid()
        except OSError:
            continue
        if who is not None and who[0] == _HOST and mine:
            found.append(Path(e.path))
    return sorted(found)


class EarlierCleanup(UserWarning):
    """What the guard of an earlier kernel of this user, killed outright, warned while cleaning up after it
    (its own stderr reaches nobody): shown once, by the user's next workspace."""


def guard_log(parent: str | os.PathLike[str]) -> Path | None:
    """Where the guards of this user's kernels write the warnings of their cleanup: a file in the user's
    workspace directory (:func:`base_dir`), when that is a directory of the user's that nobody else may
    create names in; else None (no log: a predictable name in a shared directory is anyone's)."""
    p = Path(os.path.abspath(parent))
    return p / guard.LOG_NAME if guard.private_dir(p) else None


def _earlier_warnings(parent: Path) -> None:
    """Tell this process's guard where to log, and show once what earlier guards logged there."""
    log = guard_log(parent)
    if log is None:
        return
    guard.log_to(log)
    lines = guard.take_log(log)
    if lines:
        warnings.warn("the cleanup after an earlier kernel of yours, killed before it could clean up itself "
                      "(SIGKILL: the OOM killer, a forced shutdown), warned when nobody could see it:\n"
                      + "\n".join(f"  {x}" for x in lines), EarlierCleanup, stacklevel=4)


def reap_orphans(parent: Path, prefixes: tuple[str, ...] = PREFIXES) -> list[Path]:
    """Remove workspaces under parent whose process on this host no longer runs (a killed kernel's).

    Workspaces of other hosts (a shared IOLAB_WORKDIR), of other users and of live processes are left
    alone. A mount still inside (a FUSE client outlives its kernel) is ended first, never walked into
    (:func:`iolab.guard.remove_tree`); one that will not end is left in place, with its workspace.
    """
    removed = []
    for d in ours(parent, prefixes):
        who = owner_of(d.name, prefixes)
        if who is not None and not _alive(who[1]):
            d = Path(os.path.realpath(d.parent)) / d.name     # $HOME may be a symlink: not a swap
            guard.remove_tree(d)
            if not os.path.lexists(d):
                removed.append(d)
    return removed


def holding(path: str | os.PathLike[str]) -> "Workspace | None":
    """The open workspace of this process that ``path`` lies in (the innermost one), or None. A
    directory outside every tree that a workspace counts (:meth:`Workspace.count_dir`: a cache in
    /dev/shm) is held by that workspace."""
    p = Path(os.path.realpath(path))
    found = [(r, ws) for ws in list(_open) if not ws._closed for r in (ws.root, *ws._counted)
             if p == r or r in p.parents]
    return max(found, key=lambda f: len(f[0].parts), default=(None, None))[1]


def reserve_for(path: str | os.PathLike[str], nbytes: int | str) -> int:
    """Before a tool writes ``nbytes`` at ``path``: reserve them in the workspace that holds ``path``
    (:class:`BudgetExceeded` if they do not fit). A path in no workspace of ours (``/dev/null``, a
    directory the learner chose) is not ours to budget; returns nbytes either way."""
    n = parse_size(nbytes)
    ws = holding(path)
    if ws is not None and n > 0:
        ws.reserve(n, where=path)
    return n


def reserve_all(writes: "Iterable[tuple[str | os.PathLike[str], int | str]]") -> int:
    """:func:`reserve_for` of several writes of one run at once: those that fall in the same workspace
    are reserved together (each may fit alone and all of them not). Returns the bytes in all."""
    per: dict[int, tuple[Workspace, int, str | os.PathLike[str]]] = {}
    total = 0
    for path, nbytes in writes:
        n = parse_size(nbytes)
        total += n
        ws = holding(path)
        if ws is not None and n > 0:
            _ws, before, _p = per.get(id(ws), (ws, 0, path))
            per[id(ws)] = (ws, before + n, path)
    for ws, n, path in per.values():
        ws.reserve(n, where=path)
    return total


class Workspace:
    """A private directory for one session's experiments, with a byte budget.

    Use it as a context manager (removed on exit, on error and on KeyboardInterrupt), or take the
    kernel's shared one with :func:`session` (removed when the kernel exits).
    """

    def __init__(self, budget: int | str | None = None, base: str | os.PathLike[str] | None = None,
                 prefix: str = "ws-"):
        self.budget = parse_size(budget if budget is not None else os.environ.get("IOLAB_BUDGET", DEFAULT_BUDGET))
        parent = Path(base) if base is not None else base_dir()
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        guard.ensure()                    # before the directory exists: a kill right after leaves nothing
        reap_orphans(parent, tuple(dict.fromkeys((*PREFIXES, prefix))))
        if base is None:                  # the user's own directory: where killed kernels' guards log
            _earlier_warnings(parent)
        # the owner's host and pid in the name let a later session remove it if its process was killed
        self.root = Path(tempfile.mkdtemp(prefix=f"{prefix}{_HOST}-{os.getpid()}-", dir=parent)).resolve()
        self._closed = False
        # what counts against the budget besides the tree: directories outside it (a FUSE client's
        # cache in /dev/shm) and bytes in no file of ours (the objects of a store that keeps them in memory)
        self._counted: list[Path] = []
        self._held: dict[str, int] = {}
        _open.add(self)
        guard.watch_dir(self.root)        # when this process has a guard: removed even if it is killed

    # -- paths -------------------------------------------------------------------------------
    def inside(self, path: str | os.PathLike[str]) -> Path:
        """Resolve path (relative paths are taken inside the workspace) and refuse it if it escapes."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        resolved = p.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise OutsideWorkspace(f"{path} resolves to {resolved}, outside the workspace {self.root}")
        return resolved

    def inside_tree(self, path: str | os.PathLike[str]) -> bool:
        """Whether path lies in the workspace's own tree."""
        p = Path(os.path.realpath(path))
        return p == self.root or self.root in p.parents

    def path(self, name: str) -> Path:
        return self.inside(name)

    def mkdir(self, name: str) -> Path:
        d = self.inside(name)
        d.mkdir(parents=True, exist_ok=True)
        return d

    # -- budget ------------------------------------------------------------------------------
    @property
    def used(self) -> int:
        """Bytes this workspace holds: its tree, the directories it counts outside the tree, and the
        bytes held for what keeps them elsewhere (:meth:`hold`)."""
        outside = [d for d in self._counted if self.root not in d.parents]
        return disk_usage(self.root) + sum(disk_usage(d) for d in outside) + sum(self._held.values())

    @property
    def left(self) -> int:
        """Bytes of the budget not used yet (0 when over it)."""
        return max(self.budget - self.used, 0)

    def count_dir(self, path: str | os.PathLike[str]) -> Path:
        """Count a directory outside the tree against this budget (e.g. a cache in /dev/shm) until
        :meth:`uncount_dir`; a tool writing there reserves in this workspace (:func:`reserve_for`)."""
        d = Path(os.path.realpath(path))
        if d not in self._counted:
            self._counted.append(d)
        return d

    def uncount_dir(self, path: str | os.PathLike[str]) -> None:
        d = Path(os.path.realpath(path))
        if d in self._counted:
            self._counted.remove(d)

    def hold(self, key: str, nbytes: int | str) -> int:
        """Reserve nbytes (:meth:`reserve`) and count them from now on under key, for bytes that are in
        no file this workspace can see (a store that keeps its objects in memory) until :meth:`release`.
        Holding a key again adds to it."""
        n = self.reserve(nbytes)
        self._held[key] = self._held.get(key, 0) + n
        return n

    def release(self, key: str) -> int:
        """Stop counting what was held under key; returns those bytes."""
        return self._held.pop(key, 0)

    def reserve(self, nbytes: int | str, where: str | os.PathLike[str] | None = None) -> int:
        """Check that nbytes more fit in the budget and on the filesystem (of ``where``, when they go
        to a directory the workspace counts outside its tree; else of the tree); return nbytes."""
        n = parse_size(nbytes)
        used = self.used
        if used + n > self.budget:
            raise BudgetExceeded(
                f"writing {format_size(n)} would take the workspace to {format_size(used + n)}, over its "
                f"budget of {format_size(self.budget)}. Remove files (ws.remove(...)) or raise the budget "
                f"with IOLAB_BUDGET.")
        fs = Path(where) if where is not None else self.root
        while not fs.exists() and fs != fs.parent:
            fs = fs.parent
        free = shutil.disk_usage(fs).free
        if free - n < FREE_MARGIN:
            raise BudgetExceeded(
                f"writing {format_size(n)} would leave {format_size(max(free - n, 0))} free on the filesystem "
                f"of {fs}; iolab keeps {format_size(FREE_MARGIN)} free for everyone else.")
        return n

    def make_file(self, name: str, size: int | str, *, chunk: int | str = "4MiB", seed: int = 0,
                  sync: bool = True) -> Path:
        """Write a file of random (incompressible) bytes, within the budget. Returns its path."""
        n = parse_size(size)
        path = self.inside(name)
        existing = path.stat().st_blocks * 512 if path.exists() else 0
        self.reserve(max(n - existing, 0))
        path.parent.mkdir(parents=True, exist_ok=True)
        step = parse_size(chunk)
        block = np.random.default_rng(seed).integers(0, 256, size=min(step, max(n, 1)), dtype=np.uint8).tobytes()
        with open(path, "wb") as f:
            left = n
            while left > 0:
                k = min(left, len(block))
                f.write(block[:k])
                left -= k
            f.flush()
            if sync:
                os.fsync(f.fileno())
        return path

    def remove(self, name: str | os.PathLike[str]) -> None:
        """Remove a file or a directory tree of the workspace. A FUSE mount inside is unmounted, never
        walked into: removing the files of a mounted bucket would delete its objects."""
        plain = Path(os.path.abspath(self.root / name))      # a mount point is never stat'ed (resolved)
        p = plain if self.root in plain.parents and guard.mountpoints_under(plain) else self.inside(name)
        if p == self.root:
            raise OutsideWorkspace("refusing to remove the workspace root; use close()")
        guard.remove_path(p)

    # -- life cycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Remove the workspace. Mounts still inside (a lesson left without closing them) are unmounted
        first; one that will not unmount is left in place rather than emptied through."""
        if not self._closed:
            self._closed = True
            guard.remove_tree(self.root)
            guard.forget_dir(self.root)

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, budget={format_size(self.budget)})"


_session: Workspace | None = None
_lock = threading.Lock()


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def session() -> Workspace:
    """The kernel's workspace: created on first use, removed when the process exits (also on SIGTERM,
    and, by the process's :mod:`~iolab.guard`, when it is killed outright)."""
    global _session
    with _lock:
        if _session is None or _session._closed:
            guard.ensure()                # a kernel killed outright is cleaned up after too
            _session = Workspace(prefix="session-")
            atexit.register(_session.close)
            if threading.current_thread() is threading.main_thread() and \
                    signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _on_sigterm)
        return _session
