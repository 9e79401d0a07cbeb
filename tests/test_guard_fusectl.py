"""Live: the guard's way out of a FUSE mount whose daemon stopped answering (iolab/guard.py,
release_mount): fusectl's abort, else the daemon killed, and said so.

A real rclone mount of a local directory (no store needed) inside a workspace; its daemon is stopped
(SIGSTOP: a daemon waiting for a dead store answers nothing either) while a reader waits in the kernel
for it; then guard.remove_tree(workspace), the removal every cleanup path takes. The reader must get an
error instead of waiting forever, the mount must be gone, and the files behind it must all be there
(nothing deleted through the mount). As root, with fusectl mounted (the fixture mounts it when the
machine has not, and unmounts only what it mounted); as a real second user, whose own connection's
abort file is its own (fusectl makes it the mounting user's), and in a mount namespace without
fusectl, where the guard must fall back to killing the daemon and say so.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import warnings
from pathlib import Path

import psutil
import pytest

import unix_users
from conftest import is_root, own_tmp_dir, wait_until
from iolab import guard

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(300)]

RCLONE = shutil.which("rclone")
needs_fuse = pytest.mark.skipif(
    RCLONE is None or not os.path.exists("/dev/fuse") or not (shutil.which("fusermount3") or shutil.which("fusermount")),
    reason="needs rclone, /dev/fuse and fusermount")
needs_root = pytest.mark.skipif(not is_root(), reason="needs root: it mounts fusectl and makes a second user")
CLONE_NEWNS = 0x00020000


def _fusectl_mounted() -> bool:
    return any(m == guard.FUSECTL and t == "fusectl" for m, _dev, t in guard.mount_table())


@pytest.fixture
def fusectl():
    """fusectl mounted at /sys/fs/fuse/connections for the test; unmounted afterwards only if mounted here."""
    if "fusectl" not in Path("/proc/filesystems").read_text():
        pytest.skip("this kernel has no fusectl")
    mine = False
    if not _fusectl_mounted():
        r = subprocess.run(["mount", "-t", "fusectl", "none", guard.FUSECTL], capture_output=True, text=True,
                           timeout=30)
        if r.returncode:
            pytest.skip(f"cannot mount fusectl: {r.stderr.strip()}")
        mine = True
    try:
        yield guard.FUSECTL
    finally:
        if mine:
            subprocess.run(["umount", guard.FUSECTL], capture_output=True, timeout=30)


@pytest.fixture
def top():
    """A directory of the test's own in /tmp that others may pass through (a second user works below it),
    removed afterwards without walking into any mount a failed test left."""
    with own_tmp_dir("iolab-fusectl-") as d:
        yield d


def _wchan(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return ""


def _all_stopped(pid: int) -> bool:
    """Every thread of pid in the stopped state ('T' in /proc/PID/task/TID/stat)."""
    try:
        states = [Path(f"/proc/{pid}/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                  for tid in os.listdir(f"/proc/{pid}/task")]
    except (OSError, IndexError):
        return False
    return bool(states) and all(s in ("T", "t") for s in states)


def _stopped_mount_removed(base: str, relative: bool, reader_wait: float = 30) -> dict:
    """In base: back/ (two files), ws/mnt an rclone mount of back/. Stop the daemon while a reader waits on
    a file it never looked up; then guard.remove_tree(ws). What happened, as a JSON-able dict."""
    b = Path(base)
    back, ws = b / "back", b / "ws"
    back.mkdir()
    (back / "keep.txt").write_text("precious\n")
    (back / "unseen.txt").write_text("never looked up before the daemon stopped\n")
    mnt = ws / "mnt"
    mnt.mkdir(parents=True)
    # relative: the daemon's argv does not name the mount point, so the guard cannot find it, and only
    # the connection's abort can free the reader
    target = "mnt" if relative else str(mnt)
    daemon = subprocess.Popen([RCLONE, "mount", "--config", "/dev/null", "--cache-dir", str(b / "cache"),
                               str(back), target], cwd=ws, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    seen: dict = {"daemon": daemon.pid, "found": []}
    reader = None
    try:
        if not wait_until(lambda: guard.mounted(mnt) or daemon.poll() is not None, 60):
            return {**seen, "error": "rclone did not mount in 60 s"}
        if daemon.poll() is not None:
            return {**seen, "error": f"rclone ended: {daemon.stderr.read()[-500:]!r}"}
        seen["served"] = (mnt / "keep.txt").read_text()
        seen["found"] = guard.fuse_daemons(str(mnt))
        os.kill(daemon.pid, signal.SIGSTOP)
        # a signal reaches a process's threads one by one: on a busy machine a thread of rclone still
        # running could answer the reader, which then ends before the test begins; wait until every
        # thread is stopped
        if not wait_until(lambda: _all_stopped(daemon.pid), 30):
            return {**seen, "error": "rclone's threads did not all stop within 30 s of SIGSTOP"}
        reader = subprocess.Popen(["cat", str(mnt / "unseen.txt")], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        seen["blocked"] = wait_until(lambda: _wchan(reader.pid) == "request_wait_answer", 30)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            seen["left"] = guard.remove_tree(ws)
        seen["said"] = [str(w.message) for w in said]
        ended = wait_until(lambda: reader.poll() is not None, reader_wait)
        seen["reader"] = {"ended": ended, "returncode": reader.poll(),
                          "stderr": reader.stderr.read().strip() if ended else None}
        seen["mounted"] = guard.mounted(mnt)
        seen["ws"] = os.path.lexists(ws)
        seen["back"] = {p.name: p.read_text() for p in sorted(back.iterdir())}
        seen["daemon_alive"] = psutil.pid_exists(daemon.pid) and psutil.Process(daemon.pid).status() not in (
            psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
        return seen
    finally:
        for p in (reader, daemon):
            if p is not None and p.poll() is None:
                with contextlib.suppress(OSError):
                    os.kill(p.pid, signal.SIGKILL)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
        if guard.mounted(mnt):
            guard.release_mount(mnt, grace=0)


def _check(seen: dict) -> None:
    assert "error" not in seen, seen
    assert seen["served"] == "precious\n", seen
    assert seen["blocked"], f"the reader did not wait for the stopped daemon: nothing to test: {seen}"
    assert seen["reader"]["ended"], f"the reader still waits on the stopped daemon's mount: {seen}"
    assert seen["reader"]["returncode"] != 0, seen
    assert any(e in seen["reader"]["stderr"] for e in ("connection abort", "not connected")), seen
    assert not seen["mounted"] and not seen["ws"] and seen["left"] == [], seen
    assert seen["back"] == {"keep.txt": "precious\n",
                            "unseen.txt": "never looked up before the daemon stopped\n"}, \
        f"the cleanup deleted or changed files through the mount: {seen}"


@needs_fuse
@needs_root
@pytest.mark.parametrize("relative", [False, True], ids=["daemon_found", "daemon_unknown"])
def test_root_aborts_the_connection_of_a_stopped_daemon(fusectl, top, relative):
    seen = _stopped_mount_removed(str(top), relative)
    _check(seen)
    assert bool(seen["found"]) is not relative, seen
    assert seen["said"] == [], seen                     # the abort worked: nothing to say
    if not relative:
        assert not seen["daemon_alive"], seen


def _as_student(top: Path, fn, *, private_ns_without_fusectl: bool = False) -> dict:
    """fn(base) as a throwaway second user in a directory of its own (removed with the user after)."""
    with unix_users.made(1) as (student,):
        base = top / "s"
        base.mkdir(mode=0o700)
        shutil.chown(base, student.pw_name, student.pw_name)
        try:
            status, value = unix_users.as_user(
                student, lambda: fn(str(base)), env={"HOME": str(base), "TMPDIR": str(base)}, timeout=180,
                prepare=_without_fusectl if private_ns_without_fusectl else None)
        finally:
            for p in psutil.process_iter(["uids"]):
                if p.info["uids"] and p.info["uids"].real == student.pw_uid:
                    with contextlib.suppress(psutil.Error):
                        p.kill()
    assert status == "ok", value
    return value


def _without_fusectl() -> None:
    """In the child, still root: a private mount namespace of its own, where fusectl is not mounted."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True, capture_output=True, timeout=30)
    while _fusectl_mounted():
        subprocess.run(["umount", guard.FUSECTL], check=True, capture_output=True, timeout=30)


@needs_fuse
@needs_root
@unix_users.needs_users
def test_a_student_aborts_the_connection_of_its_own_stopped_daemon(fusectl, top):
    # fusectl gives a connection's abort file to the user who mounted it: the student's guard aborts
    seen = _as_student(top, lambda base: _stopped_mount_removed(base, relative=True))
    _check(seen)
    assert seen["said"] == [], seen


@needs_fuse
@needs_root
@unix_users.needs_users
def test_without_fusectl_a_student_kills_the_daemon_and_says_so(top):
    seen = _as_student(top, lambda base: _stopped_mount_removed(base, relative=False),
                       private_ns_without_fusectl=True)
    _check(seen)
    assert not seen["daemon_alive"], seen
    assert len(seen["said"]) == 1, seen
    assert "could not abort the FUSE connection" in seen["said"][0] and "fusectl is not mounted" in seen["said"][0]
    assert f"killing its daemon (pid {seen['daemon']})" in seen["said"][0], seen


@needs_fuse
@needs_root
@unix_users.needs_users
def test_without_fusectl_and_no_daemon_to_kill_the_guard_says_the_reader_waits(top):
    seen = _as_student(top, lambda base: _stopped_mount_removed(base, relative=True, reader_wait=2),
                       private_ns_without_fusectl=True)
    # nothing can free this reader but the daemon: the test's own clean-up kills it
    assert seen["blocked"] and seen["left"] == [] and not seen["mounted"], seen
    assert seen["back"]["keep.txt"] == "precious\n" and len(seen["back"]) == 2, seen
    assert len(seen["said"]) == 1 and "found no daemon of yours" in seen["said"][0], seen
