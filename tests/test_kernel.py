"""The course's kernel (iolab/kernel.py): no debugger, so no debugpy port another user can attach to.

The control test shows the hole on IPython's plain kernel: the student turns the debugger on and off
(JupyterLab's initialize, attach, then disconnect), and a second unix user who connects to debugpy's
port on 127.0.0.1 evaluates code as the student. The same steps on the course's kernel are refused,
and no port is ever opened."""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jupyter_client import KernelManager

from iolab import kernel

pytestmark = pytest.mark.slow

SPY = r"""
import json, socket, sys
port = int(sys.argv[1])
def send(s, seq, command, **args):
    body = json.dumps({"seq": seq, "type": "request", "command": command, "arguments": args}).encode()
    s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
def read(s, seconds):
    s.settimeout(seconds); data = b""
    try:
        while b'"command": "evaluate"' not in data:
            d = s.recv(65536)
            if not d:
                break
            data += d
    except OSError:
        pass
    return data.decode(errors="replace")
try:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
except OSError as e:
    print(json.dumps({"connected": False, "error": str(e)})); sys.exit()
send(s, 1, "initialize", adapterID="python", clientID="spy")
send(s, 2, "attach", justMyCode=False)
send(s, 3, "evaluate", expression="__import__('os').getuid()", context="repl")
text = read(s, 15)
result = None
for part in text.split("Content-Length:"):
    body = part[part.find("{"):] if "{" in part else ""
    try:
        msg = json.loads(body)
    except ValueError:
        continue
    if msg.get("command") == "evaluate" and msg.get("success"):
        result = msg["body"]["result"]
print(json.dumps({"connected": True, "evaluated": result}))
"""


@pytest.fixture
def spy_user():
    if os.geteuid() != 0 or shutil.which("useradd") is None or shutil.which("runuser") is None:
        pytest.skip("needs root, useradd and runuser to act as a second user")
    name = "iolabspy" + secrets.token_hex(3)
    subprocess.run(["useradd", "--system", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin", name],
                   check=True, capture_output=True, timeout=30)
    try:
        yield name
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=30)


def _spy(user: str, port: int) -> dict:
    # the system's Python: the spy needs nothing of the course's environment (which it may not even read)
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    out = subprocess.run(["runuser", "-u", user, "--", python, "-c", SPY, str(port)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


class Session:
    """A kernel on unix sockets (the course's transport), talked to as JupyterLab's debugger panel does."""

    def __init__(self, name: str):
        self.km = KernelManager(kernel_name=name, transport="ipc")
        self.km.start_kernel()
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        self._out: list[str] = []

    def info(self) -> dict:
        self.kc.kernel_info()
        return self.kc.get_shell_msg(timeout=60)["content"]

    def debug(self, command: str, **arguments) -> dict:
        msg = self.kc.session.msg("debug_request", {"type": "request", "seq": 1, "command": command,
                                                    "arguments": arguments})
        self.kc.control_channel.send(msg)
        return self.kc.control_channel.get_msg(timeout=60)["content"]

    def value(self, expression: str):
        reply = self.kc.execute_interactive(f"print(repr({expression}))", timeout=60, output_hook=self._keep)
        assert reply["content"]["status"] == "ok", reply["content"]
        return eval(self._out.pop())

    def _keep(self, msg):
        if msg["msg_type"] == "stream":
            self._out.append(msg["content"]["text"].strip())

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture
def course_kernel(tmp_path, monkeypatch):
    spec = kernel.install(str(tmp_path), name="iolab-test")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share" / "jupyter"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "rt"))
    (tmp_path / "rt").mkdir(mode=0o700)
    return spec


def test_the_spec_starts_this_python_on_the_course_kernel(course_kernel):
    spec = json.loads((course_kernel / "kernel.json").read_text())
    assert spec["argv"] == [sys.executable, "-m", "iolab.kernel", "-f", "{connection_file}"]
    assert spec["metadata"]["debugger"] is False and spec["language"] == "python"


def test_a_plain_kernels_debugger_lets_another_user_run_code_as_the_student(tmp_path, monkeypatch, spy_user):
    """The control: IPython's own kernel, debugger turned on then off; the spy's evaluate comes back."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    s = Session("python3")
    try:
        assert "debugger" in s.info().get("supported_features", [])
        assert s.debug("initialize", clientID="jupyterlab", adapterID="python", pathFormat="path",
                       linesStartAt1=True, columnsStartAt1=True)["success"]
        assert s.debug("attach")["success"]
        assert s.debug("disconnect", restart=False, terminateDebuggee=False)["success"]
        port = int(s.value("get_ipython().kernel.debugger.debugpy_client.debugpy_port"))
        seen = {}
        for _ in range(3):             # the adapter takes a moment to let go of the detached client
            seen = _spy(spy_user, port)
            if seen.get("evaluated") is not None:
                break
            time.sleep(2)
        assert seen.get("evaluated") == str(os.geteuid()), seen
    finally:
        s.close()


def test_the_course_kernel_refuses_the_debugger_and_opens_no_port(course_kernel, spy_user):
    s = Session("iolab-test")
    try:
        info = s.info()
        assert "debugger" not in info.get("supported_features", []) and info.get("debugger") is False
        for command in ("initialize", "attach", "disconnect"):
            reply = s.debug(command)
            assert reply["success"] is False and "debugger is off" in reply["message"], reply
        assert s.value("type(get_ipython().kernel).__module__") == "iolab.kernel"
        assert s.value("get_ipython().kernel.debugger.debugpy_initialized") is False
        assert s.value("get_ipython().kernel.debugger.debugpy_client.debugpy_port") == -1   # never picked
        # and whatever TCP port the kernel listens on (ipykernel's subprocess-output PULL) answers no spy
        pid = s.km.provisioner.process.pid
        for port in _listening_ports(pid):
            assert _spy(spy_user, port).get("evaluated") is None, port
        assert s.value("__import__('os').getuid()") == os.geteuid()      # the kernel itself still works
    finally:
        s.close()


def _listening_ports(pid: int) -> list[int]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                ports.append(int(f[1].rsplit(":", 1)[1], 16))
    return ports


def test_install_puts_the_class_settings_into_the_spec(tmp_path):
    out = subprocess.run([sys.executable, "-m", "iolab.kernel", "install", "--prefix", str(tmp_path),
                          "--env", "IOLAB_RESULTS", "/shared/r"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    path = tmp_path / "share" / "jupyter" / "kernels" / "iolab"
    spec = json.loads((path / "kernel.json").read_text())
    assert spec["env"] == {"IOLAB_RESULTS": "/shared/r"} and spec["display_name"] == kernel.DISPLAY_NAME
    assert spec["argv"][1:3] == ["-m", "iolab.kernel"] and str(path) in out.stdout
