import os
import subprocess
import sys
import warnings

import pytest

from iolab import BudgetExceeded, OutsideWorkspace, workspace
from iolab.units import MiB


def test_make_file_and_budget(ws):
    p = ws.make_file("data.bin", "8MiB")
    assert p.stat().st_size == 8 * MiB and p.parent == ws.root
    assert ws.used >= 8 * MiB
    with pytest.raises(BudgetExceeded, match="budget"):
        ws.make_file("huge.bin", "600MiB")
    assert not (ws.root / "huge.bin").exists()
    ws.remove("data.bin")
    assert ws.used == 0


def test_data_is_not_compressible_zeros(ws):
    data = ws.make_file("r.bin", "1MiB").read_bytes()
    assert data.count(0) < len(data) // 100


def test_paths_outside_are_refused_after_resolving_symlinks(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.root / "link").symlink_to(outside)
    with pytest.raises(OutsideWorkspace):
        ws.inside("link/x")
    with pytest.raises(OutsideWorkspace):
        ws.inside("../escape")
    with pytest.raises(OutsideWorkspace):
        ws.inside("/etc/passwd")
    assert ws.inside("sub/file") == ws.root / "sub" / "file"


def test_removed_on_exit_and_on_error(tmp_path):
    with workspace.Workspace(base=tmp_path) as w:
        root = w.root
        w.make_file("a", "1MiB")
    assert not root.exists()
    with pytest.raises(KeyboardInterrupt):
        with workspace.Workspace(base=tmp_path) as w:
            root = w.root
            w.make_file("a", "1MiB")
            raise KeyboardInterrupt
    assert not root.exists()


def test_default_location_and_budget_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("IOLAB_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("IOLAB_BUDGET", "3MiB")
    with workspace.Workspace() as w:
        assert w.root.parent == (tmp_path / "wd").resolve()
        assert w.budget == 3 * MiB
        assert oct(os.stat(tmp_path / "wd").st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("how", ["exit", "sigterm"])
def test_session_workspace_is_removed_when_the_process_ends(tmp_path, how):
    code = ("import os, signal, time, sys; from iolab import workspace; ws = workspace.session();"
            " ws.make_file('x', '1MiB'); print(ws.root, flush=True);"
            + ("os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)" if how == "sigterm" else ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path)})
    root = r.stdout.strip()
    assert root.startswith(str(tmp_path)), r.stderr
    assert not os.path.exists(root)


def test_default_base_avoids_memory_backed_tmp(monkeypatch, tmp_path):
    monkeypatch.delenv("IOLAB_WORKDIR", raising=False)
    monkeypatch.setenv("TMPDIR", "/dev/shm")          # tmpfs: cold reads impossible there
    base = workspace.base_dir()
    from iolab import fsinfo
    assert fsinfo.fstype(base) not in ("tmpfs", "ramfs"), base


def test_a_killed_kernels_workspace_is_reaped_by_the_next_one(tmp_path):
    code = ("import os, sys; from iolab import workspace; ws = workspace.session(); ws.make_file('x', '1MiB');"
            " print(ws.root, flush=True); os.kill(os.getpid(), 9)")
    # without its guard (iolab.guard, tested in test_guard.py), as when the guard was killed too
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path), "IOLAB_GUARD": "0"})
    orphan = r.stdout.strip()
    assert r.returncode == -9 and os.path.isdir(orphan)          # SIGKILL: no atexit ran
    other_host = tmp_path / "session-otherhost-1-abc"              # a shared workdir: not ours to judge
    other_host.mkdir()
    with workspace.Workspace(base=tmp_path) as w:
        assert not os.path.exists(orphan)
        assert other_host.exists()
        assert w.root.exists()                                     # and a live one is kept
        assert workspace.reap_orphans(tmp_path) == []


def _killed(code: str, env: dict[str, str]) -> str:
    """Run code in a Python that prints a path and is then SIGKILLed (no atexit, no guard); return the path."""
    r = subprocess.run([sys.executable, "-c", code + "; print(w.root, flush=True); os.kill(os.getpid(), 9)"],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "IOLAB_GUARD": "0", **env})
    assert r.returncode == -9, r.stderr
    return r.stdout.strip()


@pytest.mark.slow
def test_a_killed_mdtest_workspace_on_a_measured_filesystem_is_reaped(tmp_path, monkeypatch):
    # mdtest.run(on="/dev/shm") makes its private workspace right there: a killed kernel's would stay
    # in memory for good if nothing looked for it
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = (f"import os; from iolab import workspace; w = workspace.Workspace(base={str(scratch)!r}, "
            "prefix='.iolab-mdtest-'); w.make_file('x', '1MiB')")
    first = _killed(code, {"IOLAB_WORKDIR": str(tmp_path / "wd")})
    assert os.path.basename(first).startswith(".iolab-mdtest-") and os.path.isdir(first)
    with workspace.Workspace(base=scratch, prefix=".iolab-mdtest-") as w:    # the next run on that filesystem
        assert not os.path.exists(first) and w.root.exists()
    second = _killed(code, {"IOLAB_WORKDIR": str(tmp_path / "wd")})
    session = _killed("import os; from iolab import workspace; w = workspace.session()",
                      {"IOLAB_WORKDIR": str(tmp_path / "wd")})
    monkeypatch.setenv("IOLAB_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("SCRATCH", str(scratch))
    from iolab import cli

    assert cli.main(["clean"]) == 0                               # `iolab clean` finds both
    assert not os.path.exists(second) and not os.path.exists(session)


def test_a_default_base_someone_else_made_is_replaced_by_a_private_one(monkeypatch, tmp_path):
    # /tmp/iolab-<user> is a name anyone on the node can create first: not used, not followed, and the
    # lesson still runs, in a private directory next to it (real second users: test_squatting.py)
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.delenv("IOLAB_WORKDIR", raising=False)
    monkeypatch.setattr(workspace, "_candidates", lambda: [shared])
    monkeypatch.setattr(workspace, "_told", {})
    mine = shared / f"iolab-{workspace._user()}"
    mine.mkdir(mode=0o777)
    os.chmod(mine, 0o777)
    assert workspace.base_dir() == mine and oct(mine.stat().st_mode & 0o777) == "0o700"   # ours: tightened
    os.rmdir(mine)
    mine.symlink_to(tmp_path)                                                          # a link to elsewhere
    with pytest.warns(workspace.NameTaken, match="symlink"):
        got = workspace.base_dir()
    assert got.parent == shared and got.name.startswith(mine.name + ".") and not got.is_symlink()
    assert oct(got.stat().st_mode & 0o777) == "0o700"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert workspace.base_dir() == got                                             # the same one, told once
    from iolab import doctor

    line = [c for c in doctor.filesystem_checks() if c.name == "a name taken"]         # and the doctor says so
    assert len(line) == 1 and line[0].status == doctor.LIMITED and str(got) in line[0].detail
    # in a directory nobody else may write, an entry that is not ours is refused as before
    os.chmod(shared, 0o700)
    with pytest.raises(PermissionError, match="symlink"):
        workspace.base_dir()


def test_a_workdir_in_a_directory_others_can_write_is_refused(monkeypatch, tmp_path):
    open_dir = tmp_path / "everyone"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)                      # writable by all, not sticky
    monkeypatch.setenv("IOLAB_WORKDIR", str(open_dir / "mine"))
    with pytest.raises(PermissionError, match="not sticky"):
        workspace.base_dir()
    os.chmod(open_dir, 0o1777)                     # sticky, like /tmp: others cannot rename our entries
    assert workspace.base_dir() == open_dir / "mine"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_workdir_owned_by_another_user_is_refused(monkeypatch, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    for workdir in (theirs, theirs / "mine"):      # their directory, or ours inside theirs
        monkeypatch.setenv("IOLAB_WORKDIR", str(workdir))
        with pytest.raises(PermissionError, match="directory of uid 65534"):
            workspace.base_dir()


def test_close_never_follows_a_workspace_swapped_for_a_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    ws = workspace.Workspace(budget="1MiB", base=tmp_path / "base")
    ws.make_file("a.bin", 4096)
    os.rename(ws.root, tmp_path / "moved-away")    # what the owner of a writable parent could do
    os.symlink(victim, ws.root)
    ws.close()
    assert (victim / "precious.txt").read_text() == "keep me"
    assert not os.path.lexists(ws.root)            # the link itself is gone


def test_close_refuses_a_path_whose_parent_became_a_symlink(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    base = tmp_path / "base"
    ws = workspace.Workspace(budget="1MiB", base=base)
    (victim / ws.root.name).mkdir()
    (victim / ws.root.name / "precious.txt").write_text("keep me")
    os.rename(base, tmp_path / "base-moved")
    os.symlink(victim, base)                       # the same path now leads into the victim
    with pytest.warns(UserWarning, match="symlink"):
        ws.close()
    assert (victim / ws.root.name / "precious.txt").read_text() == "keep me"
