"""The guard's warnings reach the student: a guard cleaning up after a kernel killed outright writes
what it warns to a private per-user log (its stderr reaches nobody), and the user's next session shows
those lines once (iolab/guard.py: log_line, take_log; iolab/workspace.py: guard_log, EarlierCleanup)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import unix_users
from conftest import own_tmp_dir, wait_until
from iolab import guard, workspace

ROOT = Path(__file__).resolve().parents[1]

# a kernel whose guard will have to warn: a directory it watches is, by the time the guard cleans up,
# below a directory swapped for a symlink (removing through it would remove something else)
KILLED = r"""
import json, os, sys
from iolab import guard, workspace
top = sys.argv[1]
ws = workspace.session()
os.makedirs(top + "/a/kept")
guard.watch_dir(top + "/a/kept")
os.rename(top + "/a", top + "/b")
os.symlink(top + "/b", top + "/a")
print(json.dumps({"guard": guard.pid(), "root": str(ws.root), "pid": os.getpid()}), flush=True)
os.kill(os.getpid(), 9)
"""

# the user's next kernel: its session's warnings, as a notebook would show them under the cell
SESSION = r"""
import json, warnings
from iolab import workspace
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ws = workspace.session()
print(json.dumps({"told": [[w.category.__name__, str(w.message)] for w in caught], "wd": str(ws.root.parent)}))
"""


def _kill_then_two_sessions(argv: list[str], env: dict[str, str], top: Path, cwd: Path) -> tuple[dict, dict, dict]:
    """A kernel killed while its guard has something to warn about, then two sessions after it."""
    k = subprocess.run([*argv, KILLED, str(top)], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
    assert k.returncode == -9, k.stderr
    dead = json.loads(k.stdout.splitlines()[-1])
    assert dead["guard"], "the killed kernel had no guard: nothing to test"
    assert wait_until(lambda: not guard._alive(dead["guard"]), 60), "the guard did not finish"
    assert not os.path.lexists(dead["root"]), "the guard did not clean up after the killed kernel"
    assert (top / "b" / "kept").is_dir(), "the guard did not leave the swapped path in place: nothing to warn about"
    seen = []
    for _ in range(2):
        r = subprocess.run([*argv, SESSION], capture_output=True, text=True, timeout=120, env=env, cwd=cwd)
        assert r.returncode == 0, r.stderr
        seen.append(json.loads(r.stdout.splitlines()[-1]))
    return dead, seen[0], seen[1]


def _told_once(top: Path, first: dict, second: dict) -> None:
    told = "\n".join(text for kind, text in first["told"])
    assert f"iolab left {top}/a/kept in place" in told, first
    assert "killed" in told and "symlink" in told, told
    assert [kind for kind, text in first["told"]] == ["EarlierCleanup"], first
    assert not os.path.lexists(os.path.join(first["wd"], "guard-warnings.log")), "the log was not removed once shown"
    assert second["told"] == [], "the second session showed the same warnings again"


def test_a_killed_kernels_guard_warning_reaches_the_next_session(tmp_path):
    # the guard's stderr is /dev/null: its warning that it left a path in place was lost, and the
    # student never learned that something stayed behind after their kernel died
    env = {**os.environ, "IOLAB_WORKDIR": str(tmp_path / "wd"), "IOLAB_GUARD": "1"}
    dead, first, second = _kill_then_two_sessions([sys.executable, "-c"], env, tmp_path, tmp_path)
    _told_once(tmp_path, first, second)
    assert f"after kernel pid {dead['pid']}: iolab left" in first["told"][0][1]


def test_the_log_is_private_and_bounded(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o700)
    log = workspace.guard_log(d)
    assert log == d / guard.LOG_NAME
    old = os.umask(0)                     # the log's mode does not depend on the umask
    try:
        for i in range(2000):
            assert guard.log_line(log, f"line {i:05d} " + "x" * 40)
    finally:
        os.umask(old)
    st = os.lstat(log)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid()
    assert st.st_size <= guard.LOG_LIMIT
    lines = log.read_text().splitlines()
    assert lines[-1].startswith("line 01999 ") and not any(x.startswith("line 00000 ") for x in lines)
    assert all(x == f"line {x.split()[1]} " + "x" * 40 for x in lines), "a line was cut"
    assert len(lines) > 50                # the last lines are kept, not emptied
    guard.log_line(log, "y" * 100_000 + "\nz")      # one huge warning: one line, cut; the log stays bounded
    assert os.path.getsize(log) <= guard.LOG_LIMIT
    assert log.read_text().splitlines()[-1] == "y" * 1024 and log.read_text().splitlines()[-2] == lines[-1]
    os.chmod(log, 0o644)                  # a log made readable meanwhile is made private again
    guard.log_line(log, "again")
    assert stat.S_IMODE(os.lstat(log).st_mode) == 0o600


def test_the_log_is_given_once(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o700)
    log = d / guard.LOG_NAME
    assert guard.take_log(log) == []
    guard.log_line(log, "first\nwarning")
    guard.log_line(log, "second")
    assert guard.take_log(log) == ["first warning", "second"]
    assert not log.exists()
    assert guard.take_log(log) == []


def test_the_log_trusts_no_name_it_did_not_make(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)                  # like /tmp: anyone could have made the name first
    assert workspace.guard_log(shared) is None
    assert not guard.log_line(shared / guard.LOG_NAME, "x") and not (shared / guard.LOG_NAME).exists()
    d = tmp_path / "mine"
    d.mkdir(mode=0o700)
    target = tmp_path / "target"
    target.write_text("keep\n")
    (d / guard.LOG_NAME).symlink_to(target)
    assert not guard.log_line(d / guard.LOG_NAME, "x")
    assert guard.take_log(d / guard.LOG_NAME) == []
    assert target.read_text() == "keep\n" and (d / guard.LOG_NAME).is_symlink()
    (d / guard.LOG_NAME).unlink()
    os.mkfifo(d / guard.LOG_NAME)         # would block a plain open
    assert not guard.log_line(d / guard.LOG_NAME, "x") and guard.take_log(d / guard.LOG_NAME) == []
    (d / guard.LOG_NAME).unlink()
    os.link(target, d / guard.LOG_NAME)  # a second name of another file of ours
    assert not guard.log_line(d / guard.LOG_NAME, "x") and target.read_text() == "keep\n"
    assert guard.take_log(d / guard.LOG_NAME) == [] and target.exists()
    if os.geteuid() == 0:
        (d / guard.LOG_NAME).unlink()
        (d / guard.LOG_NAME).write_text("theirs\n")
        os.chown(d / guard.LOG_NAME, 65534, 65534)
        assert not guard.log_line(d / guard.LOG_NAME, "x")
        assert guard.take_log(d / guard.LOG_NAME) == [] and (d / guard.LOG_NAME).read_text() == "theirs\n"


def test_a_workspace_of_a_chosen_base_neither_logs_nor_shows(tmp_path):
    d = tmp_path / "mine"
    d.mkdir(mode=0o700)
    guard.log_line(d / guard.LOG_NAME, "an earlier warning")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with workspace.Workspace(base=d):
            pass
    assert not [w for w in caught if issubclass(w.category, workspace.EarlierCleanup)]
    assert (d / guard.LOG_NAME).exists()


def test_the_next_workspace_shows_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_WORKDIR", str(tmp_path / "wd"))
    parent = workspace.base_dir()
    guard.log_line(parent / guard.LOG_NAME, "2026-01-01 00:00:00 UTC on node, after kernel pid 1: iolab left /x")
    with pytest.warns(workspace.EarlierCleanup, match="iolab left /x"):
        with workspace.Workspace():
            pass
    assert not (parent / guard.LOG_NAME).exists()


@unix_users.needs_users
def test_as_a_student_the_warning_reaches_the_next_session_and_no_one_else():
    # a real unprivileged user: the guard runs as the student and logs in the student's own directory
    if not Path("/usr/bin/python3").exists() or shutil.which("runuser") is None or subprocess.run(
            ["/usr/bin/python3", "-c", f"import sys; sys.exit(sys.version_info[:2] != {tuple(sys.version_info[:2])})"]
            ).returncode:
        pytest.skip("needs runuser and a system python3 of this Python's version")
    site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    with unix_users.made(2) as (student, other), own_tmp_dir("iolab-glog-") as top:
        base = top / "t"
        base.mkdir(mode=0o700)
        shutil.chown(base, student.pw_name, student.pw_name)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(base), "TMPDIR": str(base),
               "PYTHONPATH": f"{ROOT}:{site}", "IOLAB_GUARD": "1", "IOLAB_WORKDIR": str(base / "wd")}
        argv = ["runuser", "-u", student.pw_name, "--", "/usr/bin/python3", "-c"]
        # the killed kernel's log, read before the next session takes it: the student's alone
        k = subprocess.run([*argv, KILLED, str(base)], capture_output=True, text=True, timeout=120, env=env, cwd=base)
        assert k.returncode == 128 + 9, k.stderr        # runuser says its child was killed
        dead = json.loads(k.stdout.splitlines()[-1])
        assert wait_until(lambda: not guard._alive(dead["guard"]), 60), "the guard did not finish"
        log = base / "wd" / guard.LOG_NAME
        st = os.lstat(log)
        assert st.st_uid == student.pw_uid and stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(os.lstat(base / "wd").st_mode) == 0o700
        peek = subprocess.run(["runuser", "-u", other.pw_name, "--", "/bin/cat", str(log)], capture_output=True,
                              text=True, timeout=30)
        assert peek.returncode != 0 and "left" not in peek.stdout, "another user could read the student's log"
        seen = []
        for _ in range(2):
            r = subprocess.run([*argv, SESSION], capture_output=True, text=True, timeout=120, env=env, cwd=base)
            assert r.returncode == 0, r.stderr
            seen.append(json.loads(r.stdout.splitlines()[-1]))
        _told_once(base, *seen)
        assert pwd.getpwuid(os.lstat(base / "wd").st_uid).pw_name == student.pw_name
