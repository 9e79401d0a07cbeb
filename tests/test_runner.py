import os
import sys
import time

import pytest

from iolab import ToolFailed, ToolMissing, ToolTimeout, runner


def test_run_captures_output_and_provenance():
    r = runner.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], timeout=30)
    assert r.stdout == "out\n" and r.stderr == "err\n" and r.returncode == 0 and r.ok
    assert r.seconds > 0 and r.started.tzinfo is not None and r.host
    assert r.argv[0] == sys.executable


@pytest.mark.parametrize("bad", ["ls -l", b"ls", "rm -rf /"])
def test_shell_strings_are_refused(bad):
    with pytest.raises(TypeError, match="never a shell string"):
        runner.run(bad, timeout=1)


def test_missing_tool_says_how_to_install():
    with pytest.raises(ToolMissing) as e:
        runner.run(["ior-does-not-exist"], timeout=1)
    assert "ior-does-not-exist" in str(e.value)
    with pytest.raises(ToolMissing, match="github.com/hpc/ior"):
        raise ToolMissing("ior", runner.install_hint("ior"))


def test_failure_carries_returncode_and_stderr_tail():
    code = "import sys\nfor i in range(40): print('line', i, file=sys.stderr)\nsys.exit(3)"
    with pytest.raises(ToolFailed) as e:
        runner.run([sys.executable, "-c", code], timeout=30)
    assert e.value.returncode == 3
    assert "line 39" in str(e.value) and "line 10\n" not in str(e.value)
    r = runner.run([sys.executable, "-c", "import sys; sys.exit(4)"], timeout=30, check=False)
    assert r.returncode == 4 and not r.ok


def test_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    # the tool starts a grandchild that would outlive a plain kill of the tool
    code = (f"import subprocess, time, sys; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']);"
            f" open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    t0 = time.monotonic()
    with pytest.raises(ToolTimeout):
        runner.run([sys.executable, "-c", code], timeout=2)
    assert time.monotonic() - t0 < 30
    child = int(pidfile.read_text())
    for _ in range(50):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the grandchild survived the timeout")


def test_env_adds_and_removes_variables(monkeypatch):
    monkeypatch.setenv("IOLAB_TEST_GONE", "1")
    code = "import os; print(os.environ.get('IOLAB_TEST_SET'), os.environ.get('IOLAB_TEST_GONE'))"
    r = runner.run([sys.executable, "-c", code], timeout=30, env={"IOLAB_TEST_SET": "x", "IOLAB_TEST_GONE": None})
    assert r.stdout.split() == ["x", "None"]


def test_tool_version_of_a_missing_tool_is_none():
    assert runner.tool_version("no-such-tool-here") is None


@pytest.mark.skipif(runner.which("rclone") is None, reason="not installed here: rclone")
def test_asking_rclone_its_version_writes_nothing_in_home(monkeypatch, tmp_path):
    from iolab import doctor

    monkeypatch.setenv("HOME", str(tmp_path))
    # the doctor keeps its own cache of tool versions (~/.cache/iolab, issue 22): elsewhere, so that
    # this test sees only what rclone writes
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path.parent / f"{tmp_path.name}-cache"))
    monkeypatch.delenv("RCLONE_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    runner.tool_version.cache_clear()
    try:
        assert runner.tool_version("rclone").startswith("rclone v")
        assert next(c for c in doctor.tool_checks() if c.name == "rclone").status == doctor.OK
    finally:
        runner.tool_version.cache_clear()
    assert list(tmp_path.iterdir()) == []          # plain `rclone --version` creates ~/.config/rclone
