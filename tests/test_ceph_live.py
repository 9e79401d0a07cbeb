"""The private Ceph cluster of lesson 08 (iolab.ceph), live: start, two clients, layouts, counters,
isolation from another user, the budget, teardown, an unprivileged student, and a kill of the kernel.

Skips, naming what is missing, without the Ceph packages (``make setup`` installs them as root)."""
from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import is_root, mpi_leftovers_in_tmp, needs

from iolab import BudgetExceeded, IolabError, fsinfo, guard, witness, workspace
from iolab.ceph import TOOLS, Cluster
from iolab.lessons.l08_parallel_fs import ior_runs as parallel_fs_ior
from iolab.tools import ceph as cephtools

pytestmark = [pytest.mark.live, needs(*TOOLS, "setfattr", "getfattr", "fusermount3")]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with workspace.Workspace(budget="2GiB", base=tmp_path_factory.mktemp("ceph")) as ws:
        c = Cluster(ws)
        try:
            c.start()
            c.mount("a")
            c.mount("b")
            yield c
        finally:
            c.stop()


def _listening(port: int) -> bool:
    """Does any socket of this node listen on TCP port (closed connections in TIME_WAIT do not count)?"""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def _mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


def test_cluster_is_healthy_with_two_ceph_fuse_clients_and_private_keys(cluster):
    st = cluster.status()
    assert st["fsmap"]["up"] == 1
    assert sorted(cluster.mounts) == ["a", "b"]
    for path in cluster.mounts.values():
        assert guard.mounted(path)
        assert fsinfo.mount_of(path).kind == "parallel (CephFS, FUSE)" and fsinfo.mount_of(path).parallel
        assert f" {path} " in _mounts() and "fuse.ceph-fuse" in _mounts()
    assert stat.S_IMODE(cluster.dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(cluster.keyring.stat().st_mode) == 0o600
    mem = cluster.memory()
    assert {"mon.a", "mgr.x", "mds.a", "osd.0", "osd.1", "osd.2"} <= set(mem)
    assert all(v > 0 for v in mem.values()), mem
    assert cluster.timings["cluster healthy"] > 0
    assert "resident memory" in cluster.describe()


def test_a_write_on_node_a_is_read_on_node_b_and_counted_by_the_osds(cluster):
    a, b = cluster.check_mounted("a"), cluster.check_mounted("b")
    data = os.urandom(8 << 20)
    before = {o: cephtools.parse_perf(cluster.perf(o, "osd")) for o in cluster.osd_names}
    with open(a / "shared.bin", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    after = {o: cephtools.parse_perf(cluster.perf(o, "osd")) for o in cluster.osd_names}
    written = sum(after[o]["osd.op_w_in_bytes"] - before[o]["osd.op_w_in_bytes"] for o in cluster.osd_names)
    assert written >= len(data)
    assert (b / "shared.bin").read_bytes() == data
    sessions = cephtools.parse_sessions(cluster.daemon("mds.a", "session ls"))
    assert len([s for s in sessions if s["state"] == "open"]) >= 2


def test_through_ceph_fuse_the_reader_is_charged_nothing_and_the_osds_count_it(cluster):
    # what witness.witnessable says of a ceph-fuse mount, live: the OSDs sent the bytes, read_bytes moved 0
    a, b = cluster.check_mounted("a"), cluster.check_mounted("b")
    assert witness.witnessable(b / "cold.bin").own_bytes == witness.NOT_READER
    data = os.urandom(8 << 20)
    with open(a / "cold.bin", "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    before = {o: cephtools.parse_perf(cluster.perf(o, "osd")) for o in cluster.osd_names}
    io0 = witness.task_io()
    assert (b / "cold.bin").read_bytes() == data      # node B never held it: fetched from the OSDs
    io1 = witness.task_io()
    after = {o: cephtools.parse_perf(cluster.perf(o, "osd")) for o in cluster.osd_names}
    sent = sum(after[o]["osd.op_r_out_bytes"] - before[o]["osd.op_r_out_bytes"] for o in cluster.osd_names)
    assert sent >= len(data)
    if io0 is not None and io1 is not None:
        assert io1.rchar - io0.rchar >= len(data)
        assert io1.read_bytes - io0.read_bytes == 0


def test_a_directory_layout_applies_to_new_files_and_their_objects(cluster):
    d = cluster.check_mounted("a") / "striped"
    d.mkdir()
    subprocess.run(["setfattr", "-n", "ceph.dir.layout", "-v", "stripe_unit=1048576 stripe_count=2 object_size=1048576",
                    str(d)], check=True, timeout=30)
    f = d / "f"
    f.write_bytes(os.urandom(4 << 20))
    os.sync()
    layout = cephtools.parse_layout(subprocess.run(["getfattr", "-n", "ceph.file.layout", str(f)], check=True,
                                                   capture_output=True, text=True, timeout=30).stdout)
    assert (layout["stripe_unit"], layout["stripe_count"], layout["object_size"]) == (1 << 20, 2, 1 << 20)
    objects = cephtools.parse_rados_ls(cluster.ceph("-p", "cephfs_data", "ls", tool="rados").stdout)
    assert len([o for o in objects if o["ino"] == f.stat().st_ino]) == 4


def test_a_remount_gives_a_fresh_client_at_the_same_place(cluster):
    a = cluster.check_mounted("a")
    (a / "kept").write_text("x")
    pid = cluster.fuse["a"].pid
    again = cluster.remount("a")
    assert again == a and cluster.fuse["a"].pid != pid
    assert (again / "kept").read_text() == "x"


@pytest.fixture
def other_user():
    """A throwaway system user (name, uid, gid), removed after the test."""
    if shutil.which("useradd") is None or not is_root():
        pytest.skip("needs root and useradd to act as a second user")
    name = "iolabceph" + secrets.token_hex(3)
    subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True, timeout=30)
    try:
        pw = pwd.getpwnam(name)
        yield name, pw.pw_uid, pw.pw_gid
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=30)


def _as(user: str, argv: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, **kw)


def test_ior_minus_c_across_the_two_clients_reads_from_the_osds_live(cluster, monkeypatch, ior_on_path):
    """Lesson 08's section 2b live: rank 0 on node A, rank 1 on node B; the OSDs send nothing for the
    reads of each rank's own file and every byte for the -C reads (IOR 4.0.0: /tmp/ior-4.0.0/bin here)."""
    ior_on_path("4.0.0", mpirun=True)
    monkeypatch.setenv("IOLAB_MODE", "live")
    before = mpi_leftovers_in_tmp()
    out = parallel_fs_ior.ior_two_clients(cluster, show=False)
    assert out.mode == "live" and out.witness is not None
    assert [c.held for c in out.claims[:2]] == [True, True]
    assert set(out.frame["tasks_per_node"]) == {1}
    assert mpi_leftovers_in_tmp(before) == set()        # Open MPI's session files stay in the workspace


def test_ior_cephfs_backend_live(cluster, monkeypatch):
    """Lesson 08's section 6b live: IOR's CEPHFS backend (an IOR built --with-cephfs: /tmp/ior-4.0.0-cephfs
    here) on the student's cluster; the OSDs take every byte, and two libcephfs clients on one shared
    file send them one write per 4 KiB transfer while a file each sends large ones."""
    exe = parallel_fs_ior.cephfs_ior()
    if exe is None:
        pytest.skip(f"no IOR built with the CEPHFS backend here: {parallel_fs_ior.CEPHFS_BUILD}")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed here (apt-get install openmpi-bin)")
    monkeypatch.setenv("IOLAB_MODE", "live")
    before = mpi_leftovers_in_tmp()
    out = parallel_fs_ior.ior_cephfs(cluster, show=False)
    assert out.mode == "live" and out.witness is not None and json.loads(out.text)["ior"] == exe
    assert out.claims[0].held is True
    df = out.frame
    shared, fpp = (df[df["setting"] == s] for s in list(parallel_fs_ior.CEPHFS_SETTINGS)[:2])
    assert shared["kib_per_osd_write"].median() < 16 < 32 < fpp["kib_per_osd_write"].median()
    assert mpi_leftovers_in_tmp(before) == set()        # Open MPI's session files stay in the workspace


def test_another_user_cannot_read_the_keys_enter_the_mount_or_talk_to_the_cluster(cluster, other_user):
    name, _, _ = other_user
    assert _as(name, ["cat", str(cluster.keyring)], timeout=30).returncode != 0
    assert _as(name, ["ls", str(cluster.mounts["a"])], timeout=30).returncode != 0
    v2, v1 = cluster.ports
    # the port is reachable on loopback; the monitor refuses a client without this cluster's key
    r = _as(name, ["ceph", "--connect-timeout", "10", "-m", f"127.0.0.1:{v1}", "--id", "admin",
                   "--keyring", "/dev/null", "--conf", "/dev/null", "status"], timeout=60)
    assert r.returncode != 0
    assert "fsid" not in r.stdout


def test_the_budget_is_checked_before_anything_starts(tmp_path):
    with workspace.Workspace(budget="64MiB", base=tmp_path) as ws:
        c = Cluster(ws)
        with pytest.raises(BudgetExceeded):
            c.start()
        assert c.services == {} and c.leftovers() == []


def _listening_of(pid: int) -> list[str]:
    """The local addresses (ip:port, hex as in /proc/net/tcp) of ``pid``'s listening TCP sockets."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}") if os.path.islink(f"/proc/{pid}/fd/{fd}") else ""
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(name).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and int(f[9]) in inodes:
                found.append(f[1])
    return found


def test_every_daemon_listens_on_127_0_0_1_only(cluster):
    """The OSDs' cluster and heartbeat messengers too (they bound 0.0.0.0 without cluster_addr)."""
    for name, svc in cluster.services.items():
        addrs = _listening_of(svc.pid)
        if name.startswith(("mon", "osd", "mds", "mgr")):
            assert addrs, name
        assert all(a.startswith("0100007F:") for a in addrs), (name, addrs)     # 127.0.0.1, little-endian


def test_a_workspace_path_too_long_for_the_admin_sockets_is_refused_before_anything_starts(tmp_path):
    """A unix socket's path fits in 107 bytes; Ceph skips an admin socket it cannot bind, and the lesson
    then failed mid-way (on the hub test's scratch, `AF_UNIX path too long` at ceph-fuse's socket)."""
    deep = tmp_path / ("d" * (120 - len(str(tmp_path))))
    deep.mkdir()
    with workspace.Workspace(budget="2GiB", base=deep) as ws:
        c = Cluster(ws)
        with pytest.raises(IolabError, match="IOLAB_WORKDIR"):
            c.start()
        assert c.services == {} and c.leftovers() == [] and c.dir is None


def test_the_client_admin_socket_path_fits_beside_a_hub_workspace(cluster):
    """The client's admin socket is short (c.<pid>.asok): ceph-fuse binds it and answers through it."""
    pid = cluster.fuse["a"].pid
    sock = cluster.socket_of(f"client.admin.{pid}")
    assert sock.name == f"c.{pid}.asok" and stat.S_ISSOCK(sock.stat().st_mode)
    assert "objectcacher-libcephfs" in cluster.daemon(f"client.admin.{pid}", "perf dump", logger="objectcacher-libcephfs")


def test_stop_leaves_no_process_mount_port_or_file(cluster):
    pids = [s.pid for s in [*cluster.services.values(), *cluster.fuse.values()]]
    mounts = list(cluster.mounts.values())
    d = cluster.dir
    v2, v1 = cluster.ports
    cluster.stop()
    assert cluster.leftovers() == []
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), pid
    for m in mounts:
        assert f" {m} " not in _mounts()
        assert not m.exists()
    assert not d.exists()
    assert not _listening(v2) and not _listening(v1)


# the test's venv may sit on an interpreter under /root, which a student cannot run: the system's
# Python of the same version, with the venv's packages and this checkout on its path
STUDENT_PYTHON = shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin:/bin") or sys.executable
STUDENT_PATH = os.pathsep.join([*(p for p in sys.path if p.endswith("site-packages")), str(ROOT)])
STUDENT = r"""
import json, os, sys, time
from iolab import workspace
from iolab.ceph import Cluster
c = Cluster(workspace.session()).start()
a = c.mount("a")
(a / "mine").write_text("written by " + str(os.getuid()))      # the root of the file system is the student's
print(json.dumps({"dir": str(c.dir), "mount": str(a), "pids": [s.pid for s in [*c.services.values(), *c.fuse.values()]],
                  "ports": list(c.ports), "uid": os.stat(a / "mine").st_uid, "memory": c.memory()}), flush=True)
time.sleep(600)
"""


def test_an_unprivileged_student_runs_the_cluster_and_a_killed_kernel_leaves_nothing(other_user):
    name, uid, gid = other_user
    if not os.path.exists("/dev/fuse") or os.stat("/dev/fuse").st_mode & 0o006 != 0o006:
        pytest.skip("/dev/fuse is not open to other users here (a student could not mount): mode "
                    f"{stat.filemode(os.stat('/dev/fuse').st_mode) if os.path.exists('/dev/fuse') else 'absent'}")
    base = Path(tempfile.mkdtemp(prefix="iolab-ceph-student-", dir="/tmp"))
    os.chown(base, uid, gid)
    env = ["env", f"HOME={base}", f"IOLAB_WORKDIR={base}", "IOLAB_GUARD=1", f"PATH={os.environ['PATH']}",
           f"PYTHONPATH={STUDENT_PATH}"]
    p = subprocess.Popen(["runuser", "-u", name, "--", *env, STUDENT_PYTHON, "-c", STUDENT], cwd=base,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    info: dict = {}
    try:
        line = p.stdout.readline()
        assert line, p.stderr.read()[-3000:]
        info = json.loads(line)
        assert info["uid"] == uid
        for pid in info["pids"]:
            assert os.stat(f"/proc/{pid}").st_uid == uid
        assert f" {info['mount']} " in _mounts()
        os.killpg(p.pid, signal.SIGKILL)        # the kernel dies outright: its guard cleans up
        p.wait(timeout=30)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (any(Path(f"/proc/{x}").exists() for x in info["pids"])
                                               or f" {info['mount']} " in _mounts() or Path(info["dir"]).exists()):
            time.sleep(0.5)
        assert [x for x in info["pids"] if Path(f"/proc/{x}").exists()] == []
        assert f" {info['mount']} " not in _mounts()
        assert not Path(info["dir"]).exists()
        assert not any(_listening(x) for x in info["ports"])
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        for pid in info.get("pids", []):        # only what this test's student started, by its id
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for m in guard.mountpoints_under(base):
            subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
        shutil.rmtree(base, ignore_errors=True)
