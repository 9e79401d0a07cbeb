"""A guard that cleans up after a Python process killed before its exit handlers could run.

A kernel cleans up when it exits: the workspace is removed, servers are stopped, FUSE mounts are
unmounted. A kernel killed with SIGKILL runs none of that: ``nbval`` and ``shutdown_kernel(now=True)``
kill kernels that way, and so does the OOM killer. Its workspace would wait for the next session
(:func:`iolab.workspace.reap_orphans`), and its object-store servers, proxies and mounts would run on.

So the first session of a process starts a guard: a small stdlib-only Python, detached from the
process (nobody's child, in a session of its own, so a signal to the kernel's process group does not
reach it), that holds the read end of a pipe whose write end only the process has. The process
tells it what to clean as it goes, one JSON line each::

    ["dir", path]            remove this directory tree (a workspace, a cache in /dev/shm)
    ["proc", pid, start]     SIGTERM, then SIGKILL, this process group (start: its start time, so a
                             reused pid is never hit)
    ["mount", path]          unmount this FUSE mount point (fusermount -u, then -uz)
    ["files", pattern]       remove the files matching this glob (stray sockets)
    ["emptydir", path]       remove this directory if it is empty by then (a parent shared by sessions)
    ["forget", kind, key]    the process cleaned it itself

When the pipe reaches end of file, the process is gone, however it ended. The guard then unmounts,
stops the process groups, removes the files and directories still listed, and exits. After a
normal exit every entry has been forgotten and there is nothing left to do.

``IOLAB_GUARD=0`` turns the guard off (tests of the fallback do this).
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import warnings

_lock = threading.Lock()
_fd: int | None = None
_owner: int | None = None      # the pid that started the guard: a forked child must not talk to it
_pid: int | None = None        # the guard's own pid


def enabled() -> bool:
    return os.environ.get("IOLAB_GUARD", "1").strip().lower() not in ("0", "off", "no", "false")


def running() -> bool:
    return _fd is not None and _owner == os.getpid()


def pid() -> int | None:
    """The pid of this process's guard, or None when there is none."""
    return _pid if running() else None


def ensure() -> bool:
    """Start this process's guard unless it runs already; False when it cannot (nothing else changes:
    the exit handlers and the reaping of orphans still work)."""
    global _fd, _owner, _pid
    with _lock:
        if running():
            return True
        if not enabled() or not sys.executable:
            return False
        r, w = os.pipe()          # both ends non-inheritable: no other child of ours gets the write end
        try:
            launcher = subprocess.Popen([sys.executable, "-I", os.path.abspath(__file__)], stdin=r,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        start_new_session=True, close_fds=True)
            out, _ = launcher.communicate(timeout=30)     # it forks the guard, says its pid, exits
            guard_pid = int(out) if launcher.returncode == 0 else None
        except (OSError, ValueError, subprocess.SubprocessError):
            guard_pid = None
        finally:
            os.close(r)
        if guard_pid is None:
            os.close(w)
            return False
        _fd, _owner, _pid = w, os.getpid(), guard_pid
        return True


def _send(*message: object) -> None:
    if not running():
        return
    line = (json.dumps(message) + "\n").encode()
    try:
        os.write(_fd, line)       # one write of less than PIPE_BUF bytes: never interleaved
    except OSError:
        pass                      # the guard is gone; the exit handlers still do the work


def start_time(pid: int) -> str | None:
    """The start time of a process (field 22 of /proc/<pid>/stat), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def watch_dir(path: str | os.PathLike[str]) -> None:
    _send("dir", os.fspath(path))


def forget_dir(path: str | os.PathLike[str]) -> None:
    _send("forget", "dir", os.fspath(path))


def watch_process_group(pid: int) -> None:
    """A process that leads a process group of its own (``start_new_session=True``)."""
    _send("proc", int(pid), start_time(pid))


def forget_process_group(pid: int) -> None:
    _send("forget", "proc", int(pid))


def watch_mount(path: str | os.PathLike[str]) -> None:
    _send("mount", os.fspath(path))


def forget_mount(path: str | os.PathLike[str]) -> None:
    _send("forget", "mount", os.fspath(path))


def watch_empty_dir(path: str | os.PathLike[str]) -> None:
    """Remove path at the end only if it is empty then (a directory several sessions share)."""
    _send("emptydir", os.fspath(path))


def watch_files(pattern: str) -> None:
    _send("files", pattern)


def forget_files(pattern: str) -> None:
    _send("forget", "files", pattern)


# --- removing a tree that may hold FUSE mounts (here and in the guard process) -------------------

def _mountinfo_points() -> list[str]:
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        fields = line.split()
        if len(fields) > 4:
            out.append(fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
                       .replace("\\134", "\\"))
    return out


def mounted(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path) in _mountinfo_points()


def mountpoints_under(root: str | os.PathLike[str]) -> list[str]:
    """Mount points at or below root, deepest first."""
    r = os.path.realpath(root)
    found = {m for m in _mountinfo_points() if m == r or m.startswith(r.rstrip("/") + "/")}
    return sorted(found, key=lambda m: (-m.count("/"), m))


def unmount(path: str | os.PathLike[str], *, lazy: bool = False, timeout: float = 30) -> bool:
    """Unmount a FUSE mount of this user (``fusermount -u``, then ``-uz`` when busy or dead).
    True when it is not mounted any more."""
    p = os.fspath(path)
    fm = shutil.which("fusermount3") or shutil.which("fusermount")
    if fm is None or not mounted(p):
        return not mounted(p)
    for flag in (["-uz"] if lazy else ["-u", "-uz"]):
        try:
            subprocess.run([fm, flag, p], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout)
        except (OSError, subprocess.SubprocessError):
            pass
        if not mounted(p):
            return True
    return False


def _remove_except(path: str, keep: set[str], dir_fd: int | None = None) -> None:
    """Remove what is under path except the directories in keep (and those above them), relative to
    open directory descriptors: a directory swapped for a symlink meanwhile is not followed."""
    try:
        fd = os.open(path if dir_fd is None else os.path.basename(path),
                     os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return
    try:
        for e in list(os.scandir(fd)):
            full = os.path.join(path, e.name)
            if full in keep:
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    _remove_except(full, keep, dir_fd=fd)
                    os.rmdir(e.name, dir_fd=fd)
                else:
                    os.unlink(e.name, dir_fd=fd)
            except OSError:
                pass
    finally:
        os.close(fd)


def remove_tree(root: str | os.PathLike[str]) -> list[str]:
    """Remove a directory tree without ever descending into a mount point inside it.

    ``shutil.rmtree`` walks into a FUSE mount like into any directory: through a mount of a bucket it
    deletes the bucket's objects. So the mounts under root are unmounted first; one that cannot be
    is left in place (with the directories above it). Returns the mount points left.
    """
    r = os.path.abspath(root)
    if not os.path.lexists(r):
        return []
    if os.path.islink(r):
        os.unlink(r)              # swapped for a symlink: remove the link, never what it points to
        return []
    if os.path.realpath(r) != r:
        # a directory above it was swapped for a symlink since the tree was made: removing through it
        # would remove something else
        warnings.warn(f"iolab left {r} in place: a directory on its path is now a symlink (it leads to "
                      f"{os.path.realpath(r)}), and removing through it would remove something else")
        return [r]
    left = [m for m in mountpoints_under(r) if not unmount(m)]
    if not left:
        shutil.rmtree(r, ignore_errors=True)
        return []
    if r not in left:
        _remove_except(r, set(left))  # the directories above a mount that stayed are not empty: kept
    return left


# --- the guard process ---------------------------------------------------------------------------

def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False              # not ours (any more): leave it alone
    return True


def cleanup(dirs: dict[str, None], procs: dict[int, str | None], mounts: dict[str, None],
            files: dict[str, None], empty_dirs: dict[str, None] | None = None, grace: float = 5.0) -> None:
    """What the guard does at end of file; idempotent, so also safe when nothing is left."""
    for m in mounts:
        unmount(m)                # a FUSE client exits by itself once unmounted
    # a pid whose process has another start time now is not ours any more; one whose leader is gone
    # may still have group members, and its number cannot be reused while the group exists
    groups = [pid for pid, start in procs.items() if start_time(pid) in (None, start)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        groups = [g for g in groups if _group_alive(g)]
        for g in groups:
            try:
                os.killpg(g, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while groups and time.monotonic() < deadline:
            groups = [g for g in groups if _group_alive(g)]
            time.sleep(0.05)
    for m in mounts:
        unmount(m, lazy=True)     # its daemon is dead: "Transport endpoint is not connected"
    for pattern in files:
        for p in glob.glob(pattern):
            try:
                if os.lstat(p).st_uid == os.getuid():
                    os.unlink(p)
            except OSError:
                pass
    for d in dirs:
        remove_tree(d)
    for d in empty_dirs or {}:
        try:
            os.rmdir(d)
        except OSError:
            pass


def main() -> None:
    child = os.fork()
    if child > 0:                 # the launcher returns at once: the guard is nobody's child
        os.write(1, f"{child}\n".encode())
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):             # let go of the launcher's stdout: its reader is waiting for the end
        os.dup2(devnull, fd)
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    os.chdir("/")
    tables: dict[str, dict] = {"dir": {}, "proc": {}, "mount": {}, "files": {}, "emptydir": {}}
    for raw in sys.stdin.buffer:
        try:
            kind, *args = json.loads(raw)
            if kind == "forget":
                key = int(args[1]) if args[0] == "proc" else args[1]
                tables[args[0]].pop(key, None)
            elif kind == "proc":
                tables["proc"][int(args[0])] = args[1]
            else:
                tables[kind][args[0]] = None
        except (ValueError, KeyError, IndexError, TypeError):
            continue
    cleanup(tables["dir"], tables["proc"], tables["mount"], tables["files"], tables["emptydir"])


if __name__ == "__main__":
    main()
