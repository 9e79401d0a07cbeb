"""iolab.guard: a process killed outright (SIGKILL: nbval, the OOM killer) is cleaned up after."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import wait_until
from iolab import guard

KILLED = r"""
import json, os, sys
from iolab import guard, workspace
from iolab import service as _proc

ws = workspace.session()
ws.make_file("data.bin", "1MiB")
server = _proc.Service("sleeper", [sys.executable, "-c", "import time; time.sleep(600)"],
                       log_path=ws.path("sleeper.log"), ready=lambda: True,
                       cleanup_globs=[sys.argv[1] + "/stray-*.sock"]).start()
open(sys.argv[1] + "/stray-1.sock", "w").close()
shared = sys.argv[1] + "/shared"
os.mkdir(shared)
guard.watch_dir(shared + "/mine")
os.mkdir(shared + "/mine")
guard.watch_empty_dir(shared)
print(json.dumps({"root": str(ws.root), "server": server.pid, "guard": guard.pid()}), flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_killed_process_is_cleaned_up_after(tmp_path):
    r = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path)], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "IOLAB_WORKDIR": str(tmp_path / "wd"), "IOLAB_GUARD": "1"})
    assert r.returncode == -9, r.stderr
    seen = json.loads(r.stdout)
    assert seen["guard"] and seen["guard"] != seen["server"]
    assert wait_until(lambda: not guard._alive(seen["guard"]), 20), "the guard did not finish"
    assert not guard._alive(seen["server"]), "the server outlived the killed process"
    assert not os.path.exists(seen["root"]), "the session workspace was left behind"
    assert list(tmp_path.glob("stray-*")) == []
    assert not (tmp_path / "shared").exists()


def test_after_a_normal_exit_the_guard_ends_too(tmp_path):
    code = ("from iolab import guard, workspace; ws = workspace.session(); ws.make_file('x', '1MiB');"
            "print(guard.pid(), ws.root, flush=True)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path), "IOLAB_GUARD": "1"})
    assert r.returncode == 0, r.stderr
    pid, root = r.stdout.split()
    assert wait_until(lambda: not guard._alive(int(pid)), 20)
    assert not os.path.exists(root)


def test_switched_off(tmp_path):
    code = "from iolab import guard, workspace; workspace.session(); print(guard.pid())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path), "IOLAB_GUARD": "0"})
    assert r.stdout.strip() == "None", r.stderr


def test_a_reused_pid_is_never_signalled(tmp_path):
    # a process the guard was told about ended, and its pid now belongs to a process started later
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        guard.cleanup({}, {p.pid: "1"}, {}, {}, grace=0.5)        # "started at tick 1": not this one
        assert p.poll() is None
        guard.cleanup({}, {p.pid: guard.start_time(p.pid)}, {}, {}, grace=0.5)
        assert p.wait(timeout=10) == -15
    finally:
        p.kill()
        p.wait()


def test_remove_tree_without_mounts_is_rmtree(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    assert guard.remove_tree(tmp_path / "a") == []
    assert not (tmp_path / "a").exists()
    assert guard.remove_tree(tmp_path / "missing") == []
