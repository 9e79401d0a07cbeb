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
    ["mount", path, pid, start]  end this FUSE mount (fusermount -u, -uz; its daemon pid killed if it
                             hangs on a dead store; see remove_tree)
    ["files", pattern]       remove the files matching this glob (stray sockets)
    ["emptydir", path]       remove this directory if it is empty by then (a parent shared by sessions)
    ["forget", kind, key]    the process cleaned it itself
    ["log", path]            where to write the warnings of its cleanup (see below)

When the pipe reaches end of file, the process is gone, however it ended. The guard then unmounts,
stops the process groups, removes the files and directories still listed, and exits. After a
normal exit every entry has been forgotten and there is nothing left to do.

The guard's stderr leads nowhere (nobody reads it once its kernel is dead), so a warning of its cleanup
(a mount it could only detach, a directory it left in place) is written to the log it was given: a file
of the user's alone (0600, in the user's private workspace directory, :func:`iolab.workspace.guard_log`),
one line per warning with the time, the host and the kernel's pid, bounded to its last
:data:`LOG_LIMIT` bytes (:func:`log_line`). The user's next session shows those lines once, as a
warning, and removes the log (:func:`take_log`). A log that cannot be written is skipped, never an error.

``IOLAB_GUARD=0`` turns the guard off (tests of the fallback do this).
"""
from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import warnings

_lock = threading.Lock()
_fd: int | None = None
_owner: int | None = None      # the pid that started the guard: a forked child must not talk to it
_pid: int | None = None        # the guard's own pid
_DAEMONS: dict[str, tuple[int, str | None]] = {}   # mount point -> (pid, start) of its daemon, this process's


def enabled() -> bool:
    return os.environ.get("IOLAB_GUARD", "1").strip().lower() not in ("0", "off", "no", "false")


def _pipe() -> int | None:
    """The write end of the pipe to this process's guard, or None when it has none (never started,
    or this is a child forked after the start: the guard is its parent's)."""
    return _fd if _owner == os.getpid() else None


def running() -> bool:
    return _pipe() is not None


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
    fd = _pipe()
    if fd is None:
        return
    line = (json.dumps(message) + "\n").encode()
    try:
        os.write(fd, line)       # one write of less than PIPE_BUF bytes: never interleaved
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


def watch_mount(path: str | os.PathLike[str], daemon: int | None = None) -> None:
    """A FUSE mount, and the pid of the daemon that serves it (killed if the mount will not end)."""
    p = os.path.abspath(path)
    if daemon is not None:
        _DAEMONS[p] = (int(daemon), start_time(daemon))
    _send("mount", p, *(_DAEMONS[p] if daemon is not None else ()))


def forget_mount(path: str | os.PathLike[str]) -> None:
    _DAEMONS.pop(os.path.abspath(path), None)
    _send("forget", "mount", os.path.abspath(path))


def watch_empty_dir(path: str | os.PathLike[str]) -> None:
    """Remove path at the end only if it is empty then (a directory several sessions share)."""
    _send("emptydir", os.fspath(path))


def log_to(path: str | os.PathLike[str]) -> None:
    """Where the guard writes the warnings of its cleanup (a file in a directory of this user's alone)."""
    _send("log", os.path.abspath(path))


def watch_files(pattern: str) -> None:
    _send("files", pattern)


def forget_files(pattern: str) -> None:
    _send("forget", "files", pattern)


# --- removing a tree that may hold FUSE mounts (here and in the guard process) -------------------
#
# Every removal of a directory tree goes through remove_tree(). It finds the mounts under the tree in
# /proc/self/mountinfo, as text: it never stats a mount point, because a stat of a FUSE mount whose
# daemon waits for a dead store waits too, uninterruptibly (D state: not even SIGKILL ends it). Each
# FUSE mount is unmounted (fusermount -u, which stats nothing either), lazily when busy (-u -z: the
# tree below no longer leads into it); a connection that still stands after a grace period (a daemon
# that will never answer) is aborted (/sys/fs/fuse/connections/<dev>/abort, where fusectl is mounted:
# fusectl gives the file to the user who mounted it) and its daemon killed; where it cannot be aborted
# (fusectl not mounted, which only root can change) a warning says so and what was done instead. Only
# then is the tree removed, and never inside a path that is still a mount point: such a path is skipped
# and reported.



def _unescape(field: str) -> str:
    return (field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n")
            .replace("\\134", "\\"))


def mount_table() -> list[tuple[str, str, str]]:
    """(mount point, device "major:minor", filesystem type) of every mount this process sees, read from
    /proc/self/mountinfo (never by stat'ing a mount point)."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        fields = line.split()
        if len(fields) < 5:
            continue
        try:
            fstype = fields[fields.index("-", 6) + 1]
        except (ValueError, IndexError):
            fstype = ""
        out.append((_unescape(fields[4]), fields[2], fstype))
    return out


def _mountinfo_points() -> list[str]:
    return [m for m, _dev, _type in mount_table()]


def mounted(path: str | os.PathLike[str]) -> bool:
    """Whether path (absolute, as mountinfo spells it) is a mount point; stats nothing."""
    return os.path.abspath(path) in _mountinfo_points()


def mountpoints_under(root: str | os.PathLike[str]) -> list[str]:
    """Mount points at or below root, deepest first. Only the directories above root are looked at
    (to resolve a symlink among them), never root nor anything below it."""
    a = os.path.abspath(root)
    r = os.path.join(os.path.realpath(os.path.dirname(a)), os.path.basename(a)) if a != "/" else a
    found = {m for m in _mountinfo_points() for x in {a, r} if m == x or m.startswith(x.rstrip("/") + "/")}
    return sorted(found, key=lambda m: (-m.count("/"), m))


FUSECTL = "/sys/fs/fuse/connections"


def fuse_connection(dev: str) -> str:
    """The fusectl directory of the FUSE connection of a mount's device ("0:53" -> .../connections/53)."""
    major, minor = (int(x) for x in dev.split(":"))
    return f"{FUSECTL}/{(major << 20) | minor}"


def fuse_daemons(mountpoint: str) -> list[int]:
    """The processes of this user that serve the FUSE mount at mountpoint: they hold /dev/fuse open and
    name the mount point in their argv (s3fs, gcsfuse and rclone all do)."""
    me, found = os.geteuid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            if me != 0 and os.stat(f"/proc/{name}").st_uid != me:
                continue
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = [os.path.normpath(a.decode(errors="replace")) for a in f.read().split(b"\0") if a]
            if mountpoint not in argv:
                continue
            if any(os.readlink(f"/proc/{name}/fd/{fd}") == "/dev/fuse" for fd in os.listdir(f"/proc/{name}/fd")):
                found.append(int(name))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def _run_bounded(argv: list[str], timeout: float) -> None:
    """Run argv for at most timeout seconds; a child that will not die is left, never waited for."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    except OSError:
        return
    try:
        p.wait(timeout=max(timeout, 0.1))
    except subprocess.TimeoutExpired:
        p.kill()
        try:
            p.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass


def _abort_connection(dev: str) -> str | None:
    """Abort a FUSE connection through fusectl: None when it is aborted (or already gone), else why it
    cannot be here. A connection's abort file belongs to the user who mounted it (root may write any)."""
    if not any(m == FUSECTL and t == "fusectl" for m, _dev, t in mount_table()):
        return (f"fusectl is not mounted at {FUSECTL}"
                + ("" if os.geteuid() else f"; root can mount it: mount -t fusectl none {FUSECTL}"))
    try:
        abort = os.path.join(fuse_connection(dev), "abort")
    except ValueError:
        return f"the mount's device {dev!r} is not major:minor"
    try:
        with open(abort, "w") as f:
            f.write("1")
    except FileNotFoundError:
        return None                              # the connection has ended meanwhile
    except OSError as e:
        return f"{abort}: {e.strerror or e}"
    return None


def release_mount(path: str | os.PathLike[str], *, daemons: tuple[int, ...] = (), grace: float = 3.0,
                  timeout: float = 20.0) -> bool:
    """End the FUSE mount at path, in bounded time, without stat'ing it; True when it is no longer a
    mount point of this namespace (the directory can then be removed like any other).

    ``fusermount -u``; if busy or dead, ``fusermount -u -z`` (detached from the tree at once); then, if
    its daemon has not ended within grace seconds (one that waits for a dead store never does, and
    every process that reads through the mount waits with it), the connection is aborted where fusectl
    allows and the daemon (given, or found holding /dev/fuse with the mount point in its argv) is
    killed. A mount of another kind is left in place.
    """
    p = os.path.abspath(path)
    entry = next(((dev, t) for m, dev, t in mount_table() if m == p), None)
    if entry is None:
        return True
    dev, fstype = entry
    fm = shutil.which("fusermount3") or shutil.which("fusermount")
    if not fstype.startswith("fuse") or fm is None:
        return False
    deadline = time.monotonic() + timeout
    known = [pid for pid, start in [_DAEMONS.get(p, (0, None))] if pid and start_time(pid) in (None, start)]
    pids = list(dict.fromkeys([*daemons, *known, *fuse_daemons(p)]))
    _run_bounded([fm, "-u", p], deadline - time.monotonic())
    if not mounted(p):
        # unmounted: its daemon ends by itself, after uploading what is left (never cut short here)
        _DAEMONS.pop(p, None)
        return True
    _run_bounded([fm, "-u", "-z", p], deadline - time.monotonic())     # busy: detached from the tree
    if pids:
        # the daemon ends by itself once the last user of the mount lets go; one waiting for a dead
        # store never does (and holds every reader with it)
        end = min(time.monotonic() + grace, deadline)
        while any(_alive(q) for q in pids) and time.monotonic() < end:
            time.sleep(0.05)
        if any(_alive(q) for q in pids):
            why = _abort_connection(dev)
            if why:
                warnings.warn(f"iolab could not abort the FUSE connection of {p} ({why}): killing its daemon "
                              f"(pid {', '.join(str(q) for q in pids if _alive(q))}) instead", stacklevel=2)
            for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 3.0)):
                for q in pids:
                    if _alive(q):
                        try:
                            os.kill(q, sig)
                        except OSError:
                            pass
                end = min(time.monotonic() + wait, max(deadline, time.monotonic() + 1))
                while any(_alive(q) for q in pids) and time.monotonic() < end:
                    time.sleep(0.05)
    else:
        why = _abort_connection(dev)
        if why:
            warnings.warn(f"iolab could not abort the FUSE connection of {p} ({why}) and found no daemon of "
                          "yours serving it: it is detached from the directory tree, but a process reading "
                          "through it waits until its daemon answers or ends", stacklevel=2)
    if mounted(p):                 # the daemon is gone now: a dead mount unmounts
        _run_bounded([fm, "-u", "-z", p], max(deadline - time.monotonic(), 1.0))
    gone = not mounted(p)
    if gone:
        _DAEMONS.pop(p, None)
    return gone


def unmount(path: str | os.PathLike[str], *, lazy: bool = False, timeout: float = 30) -> bool:
    """End a FUSE mount of this user (see :func:`release_mount`). True when it is not mounted any more."""
    return release_mount(path, timeout=timeout)


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


def remove_tree(root: str | os.PathLike[str], *, grace: float = 3.0) -> list[str]:
    """Remove a directory tree without ever descending into a mount point inside it.

    ``shutil.rmtree`` walks into a FUSE mount like into any directory: through a mount of a bucket it
    deletes the bucket's objects. So the mounts under root are ended first (:func:`release_mount`:
    bounded in time, never a stat of a mount point); one that cannot be is left in place, with the
    directories above it. Returns the paths left in place.
    """
    a = os.path.abspath(root)
    parent = os.path.dirname(a)
    if os.path.realpath(parent) != parent:
        # a directory above it was swapped for a symlink since the tree was made: removing through it
        # would remove something else
        if not os.path.lexists(a):
            return []
        warnings.warn(f"iolab left {a} in place: a directory on its path is now a symlink (it leads to "
                      f"{os.path.realpath(parent)}), and removing through it would remove something else")
        return [a]
    left = [m for m in mountpoints_under(a) if not release_mount(m, grace=grace)]
    if a in left:
        return left
    if not os.path.lexists(a):
        return left
    if os.path.islink(a):
        os.unlink(a)              # swapped for a symlink: remove the link, never what it points to
        return []
    left += [m for m in mountpoints_under(a) if m not in left]     # mounted meanwhile: kept too
    if not left:
        shutil.rmtree(a, ignore_errors=True)
    else:
        _remove_except(a, set(left))  # the directories above a mount that stayed are not empty: kept
    return left


def remove_path(path: str | os.PathLike[str], *, grace: float = 3.0) -> list[str]:
    """Remove a file or a directory tree (:func:`remove_tree`); a symlink is removed, never followed.
    Returns the paths left in place (mount points that could not be ended)."""
    a = os.path.abspath(path)
    if mountpoints_under(a):
        return remove_tree(a, grace=grace)
    try:
        st = os.lstat(a)
    except OSError:
        return []
    if stat.S_ISDIR(st.st_mode):
        return remove_tree(a, grace=grace)
    try:
        os.unlink(a)
    except FileNotFoundError:
        pass
    return []


# --- the log of the guard's warnings (written by the guard, read by the user's next session) --------

LOG_NAME = "guard-warnings.log"
LOG_LIMIT = 8192                  # bytes kept: the last lines, so that the log never grows
_LINE_LIMIT = 1024                # one warning's line at most


def private_dir(path: str | os.PathLike[str]) -> bool:
    """Whether path is a real directory of this user's that nobody else may create names in."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def _open_log(path: str, create: bool) -> int | None:
    """The log at path opened read-write and locked (a file of this user's, regular, one link, mode made
    0600), or None (missing, someone else's, a symlink or not a file, in a directory others may write)."""
    if not private_dir(os.path.dirname(path)):
        return None
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    for _ in range(5):
        try:
            fd = os.open(path, flags, 0o600)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_nlink != 1:
                os.close(fd)
                return None
            if stat.S_IMODE(st.st_mode) != 0o600:
                os.fchmod(fd, 0o600)
            deadline = time.monotonic() + 5       # other holders only read or write a few KiB
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as e:
                    if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                        break             # no locks here (some NFS): go on without
                    time.sleep(0.05)
            if os.fstat(fd).st_nlink == 1:
                return fd
        except OSError:
            pass
        os.close(fd)                      # removed by a reader meanwhile: open the new one
    return None


def _read_tail(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    data = os.pread(fd, LOG_LIMIT, max(size - LOG_LIMIT, 0))
    if size > LOG_LIMIT and b"\n" in data:
        data = data.split(b"\n", 1)[1]     # began inside a line
    return data


def log_line(path: str | os.PathLike[str], text: str) -> bool:
    """Add one line (text, made one line and cut to 1 KiB) to the log at path, keeping only its last
    LOG_LIMIT bytes; False when it cannot be written there (never raises)."""
    try:
        line = " ".join(str(text).split()).encode(errors="replace")[:_LINE_LIMIT] + b"\n"
        fd = _open_log(os.path.abspath(path), create=True)
        if fd is None:
            return False
        try:
            data = _read_tail(fd) + line
            while len(data) > LOG_LIMIT and b"\n" in data[:-1]:
                data = data.split(b"\n", 1)[1]
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        return True
    except Exception:
        return False


def take_log(path: str | os.PathLike[str]) -> list[str]:
    """The lines of the log at path, which is removed: each is given once (an unsafe or missing log: [])."""
    p = os.path.abspath(path)
    try:
        fd = _open_log(p, create=False)
        if fd is None:
            return []
        try:
            data = _read_tail(fd)
            st, now = os.fstat(fd), os.lstat(p)
            if (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
                os.unlink(p)              # under the lock: a writer waiting for it makes a new log
        finally:
            os.close(fd)
    except OSError:
        return []
    return [x for x in data.decode(errors="replace").splitlines() if x.strip()]


def _logger(tables: dict[str, dict], owner: int):
    """warnings.showwarning for the guard process: each warning a line of the log it was given."""
    host = os.uname().nodename.split(".")[0]

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        try:
            for path in tables["log"]:
                when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
                log_line(path, f"{when} on {host}, after kernel pid {owner}: {message}")
        except Exception:
            pass
    return show


# --- the guard process ---------------------------------------------------------------------------

def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False              # not ours (any more): leave it alone
    return True


def cleanup(dirs: dict[str, None], procs: dict[int, str | None], mounts: dict[str, tuple[int, str | None] | None],
            files: dict[str, None], empty_dirs: dict[str, None] | None = None, grace: float = 5.0) -> None:
    """What the guard does at end of file; idempotent, so also safe when nothing is left."""
    for m, daemon in mounts.items():
        # a FUSE client exits by itself once unmounted; one waiting for a dead store is killed
        pid, start = daemon if daemon else (None, None)
        release_mount(m, daemons=(pid,) if pid and start_time(pid) in (None, start) else ())
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
        release_mount(m)          # its daemon is dead: "Transport endpoint is not connected"
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


def killed_but_waiting(pid: int) -> bool:
    """Whether process pid was killed (SIGKILL pending) but a thread of it still waits in the kernel:
    for the answer of a FUSE daemon whose store is dead, which SIGKILL cannot cut short. Until that
    thread ends, the process holds its end of the guard's pipe: the guard must end the mounts first."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("SigPnd:") and int(line.split()[1], 16) & (1 << (signal.SIGKILL - 1)):
                        return True
        except (OSError, ValueError, IndexError):
            continue
    return False


def _take(tables: dict[str, dict], raw: bytes) -> None:
    try:
        kind, *args = json.loads(raw)
        if kind == "forget":
            key = int(args[1]) if args[0] == "proc" else args[1]
            tables[args[0]].pop(key, None)
        elif kind == "proc":
            tables["proc"][int(args[0])] = args[1]
        elif kind == "mount":
            tables["mount"][args[0]] = (int(args[1]), args[2]) if len(args) > 2 else None
        elif kind == "log":                              # the last one given is used
            tables["log"] = {str(args[0]): None}
        else:
            tables[kind][args[0]] = None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        pass


def main() -> None:
    owner = os.getppid()          # the launcher's parent: the process this guard cleans up after
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
    tables: dict[str, dict] = {"dir": {}, "proc": {}, "mount": {}, "files": {}, "emptydir": {}, "log": {}}
    warnings.simplefilter("always")       # every warning of the cleanup goes to the user's log
    warnings.showwarning = _logger(tables, owner)
    fd, buf, waiting_since = sys.stdin.fileno(), b"", None
    while True:
        ready, _, _ = select.select([fd], [], [], 2.0)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break             # the process is gone, however it ended
            *lines, buf = (buf + chunk).split(b"\n")
            for raw in lines:
                _take(tables, raw)
            continue
        # killed, yet one of its threads waits on a mount: end the mounts (their daemons), and the
        # process can die; then the pipe ends and the rest is cleaned up as always
        if tables["mount"] and killed_but_waiting(owner):
            waiting_since = waiting_since or time.monotonic()
            if time.monotonic() - waiting_since > 4:
                for m, daemon in list(tables["mount"].items()):
                    pid, start = daemon if daemon else (None, None)
                    release_mount(m, daemons=(pid,) if pid and start_time(pid) in (None, start) else (),
                                  grace=0)
                waiting_since = None
        else:
            waiting_since = None
    cleanup(tables["dir"], tables["proc"], tables["mount"], tables["files"], tables["emptydir"])


if __name__ == "__main__":
    main()
