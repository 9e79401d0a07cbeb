"""Names one student can predict and create must not decide where another student's files go, nor
whether their lesson runs (issue 21, item 2). As root, with real second users: one (mallory) takes
the name first, the other (alice) then starts a workspace, or a lesson 06 cache in /dev/shm."""
from __future__ import annotations

import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path

import pytest

import unix_users
from iolab import workspace
from iolab.objectstore import lab

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
        if candidates is not None:
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
                d = lab.cache_dir(ws, "ram", "t")
                st = os.lstat(d.parent)
                (d / "x").write_bytes(b"y")
                out = {"dir": str(d), "uid": st.st_uid, "mode": stat.S_IMODE(st.st_mode),
                       "told": [str(w.message) for w in caught if issubclass(w.category, workspace.NameTaken)]}
                lab.remove_cache_dir(d)
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
