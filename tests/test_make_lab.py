"""`make lab`: its kernels talk to JupyterLab over unix sockets in a private directory, not TCP ports.

A kernel's IOPub channel publishes every cell's code and output to whoever subscribes (the connection
key signs messages, it does not hide them); on a TCP port of 127.0.0.1 that is every user of the
machine. The test starts the Makefile's own recipe (its setup prerequisite taken as done), starts a
kernel through the REST API and reads the connection file the kernel was started with.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
JUPYTER = ROOT / ".venv" / "bin" / "jupyter"
CONNECTION = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _kernel_connection_file(kernel_id: str) -> Path | None:
    """The -f argument of our kernel process with this id."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid != os.getuid():
                continue
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        for i, a in enumerate(argv[:-1]):
            if a == "-f" and argv[i + 1].endswith(f"kernel-{kernel_id}.json"):
                return Path(argv[i + 1])
    return None


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.skipif(not os.access(JUPYTER, os.X_OK), reason="no .venv/bin/jupyter here: run `make setup` first")
def test_make_lab_kernels_are_on_unix_sockets_in_a_private_directory(tmp_path):
    import requests

    port, token = _free_port(), secrets.token_hex(16)
    log = open(tmp_path / "lab.log", "wb")
    # -o setup: the recipe of `lab` as it is, without re-running the set-up it depends on
    proc = subprocess.Popen(["make", "--no-print-directory", "-o", "setup", "lab", f"LAB_PORT={port}"], cwd=ROOT,
                            env={**os.environ, "JUPYTER_TOKEN": token}, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    log.close()
    base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"token {token}"}
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"make lab exited:\n{(tmp_path / 'lab.log').read_text()[-2000:]}"
            try:
                if requests.get(f"{base}/api/status", headers=auth, timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "JupyterLab did not start:\n" + (tmp_path / "lab.log").read_text()[-2000:]
            time.sleep(0.3)
        # the lessons name "python3"; the server offers the course's kernel only (no debugger: iolab/kernel.py)
        specs = requests.get(f"{base}/api/kernelspecs", headers=auth, timeout=60).json()
        assert (specs["default"], sorted(specs["kernelspecs"])) == ("iolab", ["iolab"]), specs
        kernel = requests.post(f"{base}/api/kernels", json={}, headers=auth, timeout=120).json()
        assert kernel["name"] == "iolab", kernel
        while (conn := _kernel_connection_file(kernel["id"])) is None or not conn.exists():
            assert time.monotonic() < deadline, "the kernel's process or connection file did not appear"
            time.sleep(0.3)
        info = json.loads(conn.read_text())
        runtime = conn.parent
        # the kernel's sockets are files in a directory only we can enter
        assert info["transport"] == "ipc", info["transport"]
        assert info["ip"] == str(runtime / f"kernel-{kernel['id']}-ipc")
        st = os.stat(runtime)           # (jupyter_client adds the sticky bit: /tmp cleaners leave it)
        assert (st.st_uid, st.st_mode & 0o777) == (os.getuid(), 0o700)
        sockets = [Path(f"{info['ip']}-{info[k]}") for k in CONNECTION]
        while not all(p.exists() for p in sockets):
            assert time.monotonic() < deadline, f"the kernel's sockets did not appear: {sorted(runtime.iterdir())}"
            time.sleep(0.3)
        assert all(stat.S_ISSOCK(p.stat().st_mode) for p in sockets)
        assert max(len(str(p)) for p in sockets) <= 107       # what fits in a unix socket's address
        # a cell runs over them (a client of ours, with the connection file)
        from jupyter_client import BlockingKernelClient

        kc = BlockingKernelClient(connection_file=str(conn))
        kc.load_connection_file()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
            said = []
            reply = kc.execute_interactive("print(6 * 7, type(get_ipython().kernel).__module__)", timeout=120,
                                           output_hook=lambda m: said.append(m["content"].get("text")))
        finally:
            kc.stop_channels()
        assert reply["content"]["status"] == "ok" and "42 iolab.kernel\n" in said, (reply["content"], said)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    # the recipe removes its runtime directory when the server ends
    assert not runtime.exists(), sorted(runtime.iterdir())
