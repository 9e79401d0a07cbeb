"""A class on a real JupyterHub, set up the way docs/jupyterhub.md says, for tests and benchmarks.

``HubClass`` makes everything a class needs on this machine and removes it afterwards, also when a
test fails or is interrupted:

* a **class environment** that every student can use (``class_env()``): ``/usr/bin/python3 -m venv``
  plus ``pip install -e "<course>[lab,objectstore,hub]"`` from a copy of this checkout, root-owned and
  read-only for students, cached under ``/opt/iolab-hubtest/<key>`` (the key is a hash of
  ``pyproject.toml`` and the Python version: rebuilt when the dependencies change, otherwise only the
  course's files are copied again, which takes a second). Tools the lessons run that are not
  system packages (gcsfuse and toxiproxy-server, which the Makefile builds into ``.venv/bin``) are
  copied into its ``bin``; ``weed`` and ``fake-gcs-server`` come with its PyPI packages;
* real unix users (a random name prefix, a class group, homes under the run's directory) with the
  course's notebooks copied into each home, and passwords for the hub's PAM login;
* the shared ``iolab`` kernel installed with ``python -m iolab.kernel install --env ...`` (class-wide
  settings in its ``kernel.json``), per-student ``IOLAB_WORKDIR`` on a sticky scratch directory from
  the spawner, and the class results directory (setgid + sticky, group-writable);
* JupyterHub with ``LocalProcessSpawner`` and PAM, its proxy ``configurable-http-proxy``, on
  127.0.0.1 only; the kernels on unix sockets in each student's runtime directory (owner only, made by
  the hub), not on TCP ports; the instructor with a role that lists and reads users, not admin.

``Student`` drives one user as a browser would: the login form (with its ``_xsrf`` cookie), a token
made with that login (cookie + ``X-XSRFToken``), the REST API to start the server, and a kernel
websocket to run a notebook's cells in order, in the notebook's directory.

Every process the hub starts carries ``IOLAB_HUB_TEST=<run dir>`` in its environment, and every
student process runs under a uid this module made; ``stop()`` ends exactly those, by pid.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import grp
import hashlib
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import ior_dir  # where the IOR/mdtest build is (tests/ is on sys.path: pytest, bench_hub)

ROOT = Path(__file__).resolve().parent.parent
MARKER = "IOLAB_HUB_TEST"
CACHE_ROOT = Path(os.environ.get("IOLAB_HUB_ENV_CACHE", "/opt/iolab-hubtest"))
EXTRAS = "lab,objectstore,hub"
# what the class environment's copy of the course holds (an editable install of it)
COURSE_FILES = ("pyproject.toml", "README.md", "iolab", "data", "notebooks", "exercises")
# tools the lessons run that the Makefile builds into .venv/bin rather than installing system-wide
BUILT_TOOLS = ("gcsfuse", "toxiproxy-server")
SYSTEM_PYTHON = "/usr/bin/python3"
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
FORMAT = "1"        # bump to rebuild every cached class environment
TRACE = os.environ.get("IOLAB_HUB_TRACE") == "1"     # print each cell as a student starts it


# --- can it run here? ------------------------------------------------------------------------------

def proxy_command() -> list[str] | None:
    exe = shutil.which("configurable-http-proxy")
    return [exe] if exe else None


def _python_ok(python: str) -> str | None:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.match(r">=\s*(\d+)\.(\d+)", spec)
    try:
        out = subprocess.run([python, "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except OSError:
        return f"{python} is missing"
    if out.returncode != 0:
        return f"{python} cannot make a virtual environment (`apt-get install python3-venv`)"
    have = tuple(int(x) for x in out.stdout.split())
    if m and have < (int(m.group(1)), int(m.group(2))):
        return f"{python} is {'.'.join(map(str, have))}, the course needs {spec}"
    return None


def why_not() -> str | None:
    """Why a class on a real hub cannot be set up here, or None when it can."""
    if os.environ.get("IOLAB_HUB_TESTS", "").lower() == "skip":
        return "IOLAB_HUB_TESTS=skip"
    if os.geteuid() != 0:
        return ("the class on a real JupyterHub needs root: it creates unix users, and the hub starts each "
                "student's server as that user (run the tests as root)")
    for tool in ("useradd", "userdel", "groupadd", "groupdel", "chpasswd"):
        if not (shutil.which(tool) or os.access(f"/usr/sbin/{tool}", os.X_OK)):
            return f"{tool} is missing (Debian package passwd)"
    if proxy_command() is None:
        return ("JupyterHub's proxy is missing: `apt-get install node-configurable-http-proxy` "
                "(or `npm install -g configurable-http-proxy`)")
    why = _python_ok(SYSTEM_PYTHON)
    if why:
        return f"the class environment is built with {SYSTEM_PYTHON}: {why}"
    for mod in ("requests", "websocket"):
        try:
            __import__(mod)
        except ImportError:
            return f"the test needs the Python module {mod} (pip install -e '.[test]')"
    return None


# --- the class environment ------------------------------------------------------------------------

@dataclass(frozen=True)
class ClassEnv:
    root: Path
    venv: Path
    course: Path
    built_seconds: float | None     # None: it was cached
    synced_seconds: float

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"


def env_key(checkout: Path = ROOT, python: str = SYSTEM_PYTHON) -> str:
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, timeout=30).stdout
    meta = tomllib.loads((checkout / "pyproject.toml").read_text())
    # only what decides the environment's contents: a new pytest marker does not rebuild it
    deps = {k: meta["project"].get(k) for k in ("requires-python", "dependencies", "optional-dependencies")}
    h = hashlib.sha256()
    for part in (FORMAT, EXTRAS, version, json.dumps([deps, meta.get("build-system")], sort_keys=True)):
        h.update(part.encode())
    return h.hexdigest()[:12]


@contextlib.contextmanager
def _umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _course_digest(checkout: Path) -> str:
    """A digest of the course's files as _sync_course copies them (paths and contents)."""
    skip = ("__pycache__", ".ipynb_checkpoints")
    h = hashlib.sha256()
    for name in COURSE_FILES:
        src = checkout / name
        files = sorted(p for p in src.rglob("*") if p.is_file()) if src.is_dir() else [src] if src.exists() else []
        for f in files:
            rel = f.relative_to(checkout)
            if any(part in skip or part.endswith(".egg-info") for part in rel.parts) or f.suffix == ".pyc":
                continue
            h.update(str(rel).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _sync_course(checkout: Path, course: Path) -> None:
    """Copy the course's files into ``course``, replacing what was there (root-owned, world-readable).

    Another test run beside this one (a second checkout's ``make test``) may have a class running on
    this cached environment: the same files are not copied again (a digest decides), and a changed
    directory is swapped in by two renames, never removed first while that class imports from it."""
    digest = _course_digest(checkout)
    mark = course / ".synced-digest"
    if mark.exists() and mark.read_text() == digest:
        return
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")
    course.mkdir(mode=0o755, parents=True, exist_ok=True)
    for name in COURSE_FILES:
        src, dst = checkout / name, course / name
        if src.is_dir():
            tmp = course / f".{name}.new.{os.getpid()}"
            old = course / f".{name}.old.{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp, ignore=ignore)
            if dst.exists():
                os.rename(dst, old)
            os.rename(tmp, dst)
            shutil.rmtree(old, ignore_errors=True)
        elif src.exists():
            tmp = course / f".{name}.new.{os.getpid()}"
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)
    mark.write_text(digest)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _install_tools(venv_bin: Path) -> list[str]:
    """Copy the tools the Makefile built into .venv/bin (not on the system PATH) into the class env."""
    copied = []
    for tool in BUILT_TOOLS:
        system = shutil.which(tool, path=SYSTEM_PATH)
        if system:
            continue
        src = Path(sys.executable).parent / tool
        if not os.access(src, os.X_OK):
            found = shutil.which(tool)
            src = Path(found) if found else src
        if not os.access(src, os.X_OK):
            continue
        dst = venv_bin / tool
        if dst.exists() and dst.stat().st_size == src.stat().st_size and _sha256(dst) == _sha256(src):
            continue
        # a class of another test run beside this one may be running the old binary: write a new file
        # and rename it over the old one (copying into a running executable is ETXTBSY)
        tmp = venv_bin / f".{tool}.new.{os.getpid()}"
        shutil.copy2(src, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, dst)
        copied.append(tool)
    return copied


def class_env(checkout: Path = ROOT, *, python: str = SYSTEM_PYTHON, log=print) -> ClassEnv:
    """The read-only class environment, built once per dependency set and cached (see the module doc)."""
    key = env_key(checkout, python)
    with _umask(0o022):
        CACHE_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chown(CACHE_ROOT, 0, 0)
        os.chmod(CACHE_ROOT, 0o755)
        with open(CACHE_ROOT / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            root = CACHE_ROOT / key
            venv, course = root / "venv", root / "course"
            built = None
            if not (root / "ready").exists():
                for old in CACHE_ROOT.iterdir():
                    if old.is_dir() and old.name != key:     # stale: built for other dependencies
                        shutil.rmtree(old, ignore_errors=True)
                shutil.rmtree(root, ignore_errors=True)
                t0 = time.monotonic()
                log(f"building the class environment in {root} (once per pyproject.toml; a few minutes)")
                root.mkdir(mode=0o755)
                _sync_course(checkout, course)
                subprocess.run([python, "-m", "venv", str(venv)], check=True, timeout=300, umask=0o022)
                pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
                # Debian 12's pip 23.0 was still resolving this set after 15 minutes of CPU; a current
                # pip installs it all in about 1.5 minutes
                subprocess.run([*pip, "--upgrade", "pip>=24"], check=True, capture_output=True, timeout=300,
                               umask=0o022)
                out = subprocess.run([*pip, "-e", f"{course}[{EXTRAS}]"], capture_output=True,
                                     text=True, timeout=1500, umask=0o022)
                if out.returncode != 0:
                    raise RuntimeError(f"pip install of the class environment failed:\n{out.stderr[-3000:]}")
                built = time.monotonic() - t0
                (root / "ready").write_text(f"built in {built:.0f} s\n")
            t0 = time.monotonic()
            _sync_course(checkout, course)
            _install_tools(venv / "bin")
            synced = time.monotonic() - t0
    return ClassEnv(root, venv, course, built, synced)


# --- processes, sockets, mounts ---------------------------------------------------------------------

def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _uid_of(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _has_marker(pid: int, value: str) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{MARKER}={value}".encode() in env.split(b"\0")


def processes_of(uids: set[int], marker: str | None = None) -> list[int]:
    """Pids running as one of ``uids``, or carrying ``MARKER=marker`` in their environment."""
    me = os.getpid()
    return [p for p in _pids() if p != me and (_uid_of(p) in uids or (marker and _has_marker(p, marker)))]


def _cmdline(pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def _listening() -> dict[int, tuple[str, int]]:
    """socket inode -> (local address, port) of every listening TCP socket."""
    out = {}
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) < 10 or f[3] != "0A":
                continue
            addr, port = f[1].split(":")
            raw = bytes.fromhex(addr)
            if v6:
                words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
                ip = socket.inet_ntop(socket.AF_INET6, b"".join(words))
            else:
                ip = socket.inet_ntop(socket.AF_INET, raw[::-1])
            out[int(f[9])] = (ip, int(port, 16))
    return out


def _listening_uids() -> dict[tuple[str, int], int]:
    """(local address, port) -> uid of every listening TCP socket (/proc/net/tcp{,6} name the owner
    even when the process is gone or in no /proc of ours)."""
    listening = _listening()
    out = {}
    for name in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
                f = line.split()
                if len(f) >= 10 and f[3] == "0A" and int(f[9]) in listening:
                    out[listening[int(f[9])]] = int(f[7])
    return out


def _socket_inodes(pid: int) -> set[int]:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                found.add(int(link[8:-1]))
    except OSError:
        pass
    return found


@dataclass(frozen=True)
class Mount:
    mountpoint: str
    fstype: str
    source: str
    options: str

    @property
    def user_id(self) -> int | None:
        m = re.search(r"(?:^|,)user_id=(\d+)", self.options)
        return int(m.group(1)) if m else None


def mounts() -> list[Mount]:
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f, g = left.split(), right.split()
        if len(f) < 5 or len(g) < 3:
            continue
        unescape = lambda s: re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1), 8)), s)  # noqa: E731
        out.append(Mount(unescape(f[4]), g[0], g[1], g[2]))
    return out


_PATH_IN_ARG = re.compile(r"(/[^\s,=:]+)")


class Sampler:
    """Samples, while a class runs, what the students' processes hold: listening sockets (address and
    port), FUSE mounts, and the absolute paths in their command lines (cache and data directories)."""

    def __init__(self, uids: dict[int, str], interval: float = 0.3):
        self.uids = uids
        self.interval = interval
        self.listeners: set[tuple[int, str, int, str]] = set()     # (uid, ip, port, command)
        self.fuse: set[tuple[str, str, int | None]] = set()         # (mountpoint, fstype, user_id)
        self.paths: set[tuple[int, str, str]] = set()               # (uid, path, command)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        listening = _listening()
        for pid in _pids():
            uid = _uid_of(pid)
            if uid not in self.uids:
                continue
            argv = _cmdline(pid)
            if not argv:
                continue
            cmd = os.path.basename(argv[0])
            for ino in _socket_inodes(pid):
                if ino in listening:
                    ip, port = listening[ino]
                    self.listeners.add((uid, ip, port, cmd))
            for a in argv[1:]:
                for p in _PATH_IN_ARG.findall(a):
                    if p.startswith(("/tmp", "/var/tmp", "/dev/shm")):
                        self.paths.add((uid, p, cmd))
        for m in mounts():
            if m.fstype.startswith("fuse") and m.user_id in self.uids:
                self.fuse.add((m.mountpoint, m.fstype, m.user_id))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception:       # noqa: BLE001 (a process vanished mid-read)
                pass
            self._stop.wait(self.interval)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


# --- the kernel protocol over the server's websocket -----------------------------------------------

@dataclass
class CellRun:
    source: str
    status: str                     # "ok" or "error" (execute_reply), "timeout"
    seconds: float
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        bits = []
        for o in self.outputs:
            if o["output_type"] == "stream":
                bits.append(o["text"])
            elif o["output_type"] in ("execute_result", "display_data"):
                bits.append(str(o["data"].get("text/plain", "")))
            elif o["output_type"] == "error":
                bits.append(f"{o['ename']}: {o['evalue']}")
        return "".join(b if b.endswith("\n") else b + "\n" for b in bits)

    @property
    def mimetypes(self) -> set[str]:
        return {m for o in self.outputs for m in o.get("data", {})}

    @property
    def error(self) -> str | None:
        for o in self.outputs:
            if o["output_type"] == "error":
                return f"{o['ename']}: {o['evalue']}\n" + "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", t)
                                                                  for t in o.get("traceback", []))[-3000:]
        return None if self.status == "ok" else self.status


@dataclass
class NotebookRun:
    student: str
    path: str
    kernel: str
    cells: list[CellRun]
    seconds: float
    started: float                  # time.time()

    @property
    def ok(self) -> bool:
        return all(c.status == "ok" for c in self.cells)

    def failure(self) -> str:
        bad = next((c for c in self.cells if c.status != "ok"), None)
        if bad is None:
            return ""
        return f"{self.student} {self.path}: cell\n{bad.source[:400]}\n-> {bad.error}"

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.cells)


def _decode(frame: str | bytes) -> dict[str, Any]:
    if isinstance(frame, str):
        return json.loads(frame)
    # jupyter_server's legacy binary frame: n, n offsets, then the JSON message and its buffers
    n = int.from_bytes(frame[:4], "big")
    offsets = [int.from_bytes(frame[4 * (i + 1):4 * (i + 2)], "big") for i in range(n)] + [len(frame)]
    return json.loads(frame[offsets[0]:offsets[1]])


class Kernel:
    """A notebook session on a student's server and its kernel websocket, as JupyterLab opens them."""

    def __init__(self, student: "Student", path: str, kernel: str | None = "iolab", timeout: float = 120):
        self.student = student
        body: dict[str, Any] = {"path": path, "type": "notebook", "name": os.path.basename(path)}
        if kernel:
            body["kernel"] = {"name": kernel}
        s = student.server_api("POST", "api/sessions", json=body)
        self.session_id, self.kernel_id, self.kernel_name = s["id"], s["kernel"]["id"], s["kernel"]["name"]
        self.client_session = uuid.uuid4().hex
        import websocket

        url = (f"ws://127.0.0.1:{student.hub.port}/user/{student.name}/api/kernels/{self.kernel_id}/channels"
               f"?session_id={self.client_session}")
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.ws = websocket.create_connection(url, header=[f"Authorization: token {student.token}"],
                                                      timeout=30)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self.request("kernel_info_request", {}, timeout=timeout)

    def _send(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> str:
        msg_id = uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": self.student.name, "session": self.client_session,
                       "msg_type": msg_type, "version": "5.3",
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat()},
            "parent_header": {}, "metadata": {}, "content": content, "channel": channel, "buffers": []}))
        return msg_id

    def request(self, msg_type: str, content: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        msg_id = self._send(msg_type, content)
        deadline = time.monotonic() + timeout
        while True:
            self.ws.settimeout(max(deadline - time.monotonic(), 0.1))
            msg = _decode(self.ws.recv())
            if msg.get("channel") == "shell" and msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg

    def execute(self, code: str, timeout: float = 180) -> CellRun:
        t0 = time.monotonic()
        msg_id = self._send("execute_request", {"code": code, "silent": False, "store_history": True,
                                                "user_expressions": {}, "allow_stdin": False,
                                                "stop_on_error": True})
        outputs: list[dict[str, Any]] = []
        reply = idle = None
        deadline = t0 + timeout
        import websocket

        while reply is None or not idle:
            left = deadline - time.monotonic()
            if left <= 0:
                return CellRun(code, "timeout", time.monotonic() - t0, outputs)
            self.ws.settimeout(left)
            try:
                msg = _decode(self.ws.recv())
            except websocket.WebSocketTimeoutException:
                continue
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["header"]["msg_type"], msg["content"]
            if msg.get("channel") == "shell" and kind == "execute_reply":
                reply = content
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
            elif kind == "stream":
                outputs.append({"output_type": "stream", "name": content["name"], "text": content["text"]})
            elif kind in ("display_data", "execute_result"):
                outputs.append({"output_type": kind, "data": content.get("data", {})})
            elif kind == "error":
                outputs.append({"output_type": "error", **{k: content.get(k) for k in ("ename", "evalue", "traceback")}})
        return CellRun(code, reply.get("status", "error"), time.monotonic() - t0, outputs)

    def value(self, code: str, timeout: float = 120) -> Any:
        """Run ``code`` whose last line prints one JSON document; return it parsed."""
        cell = self.execute(code, timeout=timeout)
        if cell.status != "ok":
            raise AssertionError(f"{self.student.name}: {cell.error}")
        lines = [ln for ln in cell.text.splitlines() if ln.strip()]
        return json.loads(lines[-1])

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()
        with contextlib.suppress(Exception):
            self.student.server_api("DELETE", f"api/sessions/{self.session_id}")

    def __enter__(self) -> "Kernel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def together(fn, items: list[Any], timeout: float | None = None) -> list[Any]:
    """``fn`` on every item at the same time (a thread each), results in order. On an error or an
    interrupt it does not wait for the others: the class's tear-down ends what they are waiting on."""
    pool = ThreadPoolExecutor(max(len(items), 1))
    try:
        futures = [pool.submit(fn, x) for x in items]
        return [f.result(timeout=timeout) for f in futures]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def code_cells(notebook: Path) -> list[str]:
    nb = json.loads(notebook.read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


# --- one user of the hub ----------------------------------------------------------------------------

class Student:
    def __init__(self, hub: "HubClass", name: str, password: str):
        import requests

        self.hub, self.name, self.password = hub, name, password
        self.http = requests.Session()
        self.token: str | None = None
        self.spawn_seconds: float | None = None

    # the account
    @property
    def pw(self) -> pwd.struct_passwd:
        return pwd.getpwnam(self.name)

    @property
    def uid(self) -> int:
        return self.pw.pw_uid

    @property
    def home(self) -> Path:
        return Path(self.pw.pw_dir)

    @property
    def workdir(self) -> Path:
        return self.hub.scratch / self.name / "iolab"

    # the browser's way in
    def login(self) -> None:
        """The login form with its _xsrf cookie, then a token made with that login (cookie + X-XSRFToken)."""
        base = self.hub.url
        r = self.http.get(f"{base}/hub/login", timeout=30)
        r.raise_for_status()
        xsrf = self.http.cookies.get("_xsrf", path="/hub/")
        r = self.http.post(f"{base}/hub/login", data={"username": self.name, "password": self.password,
                                                      "_xsrf": xsrf}, allow_redirects=False, timeout=60)
        if r.status_code != 302:
            raise AssertionError(f"login of {self.name} failed: HTTP {r.status_code}\n{r.text[-500:]}")
        # the page after login sets an _xsrf cookie bound to this user; API calls with the cookie need it
        self.http.get(f"{base}/hub/token", timeout=30).raise_for_status()
        xsrf = self.http.cookies.get("_xsrf", path="/hub/")
        r = self.http.post(f"{base}/hub/api/users/{self.name}/tokens", json={"note": "iolab hub test"},
                           headers={"X-XSRFToken": xsrf}, timeout=30)
        if r.status_code != 201:
            raise AssertionError(f"{self.name} could not make a token: HTTP {r.status_code} {r.text[-300:]}")
        self.token = r.json()["token"]

    def hub_api(self, method: str, path: str, *, ok=(200, 201, 202, 204), **kw) -> Any:
        r = self.http.request(method, f"{self.hub.url}/hub/api/{path}",
                              headers={"Authorization": f"token {self.token}"}, timeout=60, **kw)
        if r.status_code not in ok:
            raise AssertionError(f"{method} /hub/api/{path} as {self.name}: HTTP {r.status_code} {r.text[-300:]}")
        return r.json() if r.content else None

    def server_api(self, method: str, path: str, *, ok=(200, 201, 204), as_user: str | None = None, **kw) -> Any:
        r = self.server_request(method, path, as_user=as_user, **kw)
        if r.status_code not in ok:
            raise AssertionError(f"{method} {path} on {as_user or self.name}'s server: HTTP {r.status_code} "
                                 f"{r.text[-300:]}")
        return r.json() if r.content else None

    def server_request(self, method: str, path: str, *, as_user: str | None = None, **kw):
        import requests

        # a fresh request with only the token: no hub cookie rides along
        return requests.request(method, f"{self.hub.url}/user/{as_user or self.name}/{path}",
                                headers={"Authorization": f"token {self.token}"}, timeout=60,
                                allow_redirects=False, **kw)

    def spawn(self, timeout: float = 180) -> float:
        """Start this user's server through the REST API; seconds until the hub says it is ready."""
        t0 = time.monotonic()
        self.hub_api("POST", f"users/{self.name}/server", ok=(201, 202))
        while True:
            model = self.hub_api("GET", f"users/{self.name}")
            server = (model.get("servers") or {}).get("")
            if server and server.get("ready"):
                break
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"{self.name}'s server did not start in {timeout:.0f} s:\n{self.hub.log_tail()}")
            time.sleep(0.2)
        self.spawn_seconds = time.monotonic() - t0
        return self.spawn_seconds

    def stop_server(self, timeout: float = 90) -> None:
        self.hub_api("DELETE", f"users/{self.name}/server", ok=(202, 204, 400, 404))
        t0 = time.monotonic()
        while (self.hub_api("GET", f"users/{self.name}").get("servers") or {}).get(""):
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"{self.name}'s server did not stop in {timeout:.0f} s")
            time.sleep(0.3)

    def kernel(self, path: str, kernel: str | None = "iolab") -> Kernel:
        return Kernel(self, path, kernel)

    def run_notebook(self, path: str, *, cells: list[str] | None = None, after: list[str] = (),
                     timeout: float = 180) -> NotebookRun:
        """Run every code cell of ``path`` (relative to the home, the server's root) in order, in a new
        session on the course's kernel, stopping at the first error; then the ``after`` cells."""
        sources = (cells if cells is not None else code_cells(self.home / path)) + list(after)
        t0, started = time.monotonic(), time.time()
        runs: list[CellRun] = []
        with self.kernel(path) as k:
            for i, src in enumerate(sources):
                if TRACE:
                    print(f"{time.strftime('%X')} {self.name} {path} cell {i}: {src[:60]!r}", flush=True)
                runs.append(k.execute(src, timeout=timeout))
                if runs[-1].status != "ok":
                    break
            kernel_name = k.kernel_name
        return NotebookRun(self.name, path, kernel_name, runs, time.monotonic() - t0, started)


# --- the class --------------------------------------------------------------------------------------

GECOS = "iolab hub test"


def reap_stale(log=print) -> list[str]:
    """Remove what a class left behind when its test process was killed outright (no finalizer ran):
    users made by this module whose run directory's hub no longer runs. Returns the users removed."""
    stale: dict[Path, list[pwd.struct_passwd]] = {}
    for pw in pwd.getpwall():
        home = Path(pw.pw_dir)
        if pw.pw_gecos == GECOS and home.parent.name == "home" and home.parent.parent.name.startswith("iolab-hub-"):
            stale.setdefault(home.parent.parent, []).append(pw)
    removed = []
    for run_dir, users in stale.items():
        # a hub whose test process still runs is another run's class, in use; a hub whose parent died
        # was orphaned (re-parented to init or a subreaper)
        in_use = any(_has_marker(p, str(run_dir)) and "jupyterhub" in " ".join(_cmdline(p)) and _uid_of(p) == 0
                     and _parent_is_python(p) for p in _pids())
        if in_use:
            continue
        log(f"removing a class left behind by a killed run: {run_dir} ({', '.join(u.pw_name for u in users)})")
        old = HubClass.__new__(HubClass)
        HubClass.__init__(old, students=0, instructor=False, log=log)
        old.dir, old.users = run_dir, [u.pw_name for u in users]
        old.uids = {u.pw_uid: u.pw_name for u in users}
        groups = {grp.getgrgid(u.pw_gid).gr_name for u in users if _has_group(u.pw_gid)}
        old.group, old._group_made = (groups.pop(), True) if len(groups) == 1 else ("", False)
        old.stop()
        removed += old.users
    return removed


def _parent_is_python(pid: int) -> bool:
    try:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return ppid > 1 and "python" in os.path.basename((_cmdline(ppid) or [""])[0])


def _has_group(gid: int) -> bool:
    try:
        grp.getgrgid(gid)
        return True
    except KeyError:
        return False


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 120), **kw)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return out


OPENMPI_PARAMS = """\
# single-node lessons: ranks talk through shared memory and open no TCP port (Open MPI's TCP BTL and
# its libfabric MTL listen on every interface)
pml = ob1
btl = self,vader
"""

HUB_CONFIG = """\
# written by tests/hub_class.py, as docs/jupyterhub.md sets up a class
c = get_config()  # noqa: F821

c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = {proxy!r}
c.JupyterHub.db_url = "sqlite:///{dir}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{dir}/jupyterhub_cookie_secret"
c.JupyterHub.cleanup_servers = True

c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allowed_users = {students!r}
# no admin: JupyterHub's admin role may open every student's server and run code in it. The
# instructor's results notebook reads files; the hub lets them list the class and read its users
c.JupyterHub.load_roles = [
    {{"name": "instructor", "users": {instructors!r}, "scopes": ["list:users", "read:users"]}},
    # the test's own service: reads users and servers, starts and stops them (never a student's files)
    {{"name": "iolab-test", "services": ["iolab-test"],
     "scopes": ["list:users", "read:users", "read:servers", "admin:servers"]}},
]
c.JupyterHub.services = [{{"name": "iolab-test", "api_token": {service_token!r}}}]
"""

LOCAL_SPAWNER = """
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 180
c.Spawner.http_timeout = 180
# every notebook opens on the course's kernel (the lessons name "python3")
c.Spawner.args = ["--KernelSpecManager.allowed_kernelspecs=iolab",
                  "--MappingKernelManager.default_kernel_name=iolab",
                  # kernels talk to the server over unix sockets in the student's runtime directory,
                  # not TCP ports on 127.0.0.1 that any user of the node can subscribe to
                  "--KernelManager.transport=ipc"]


# the student's Jupyter runtime directory (connection files, the kernels' sockets): made by the hub
# (root) in a root-owned directory, so that nobody else can make or swap it; owner only, 0700
def private_runtime_dir(spawner):
    import os, pwd
    pw = pwd.getpwnam(spawner.user.name)
    os.makedirs({run!r}, mode=0o755, exist_ok=True)
    path = os.path.join({run!r}, spawner.user.name)
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.chown(path, pw.pw_uid, pw.pw_gid)
    os.chmod(path, 0o700)


c.Spawner.pre_spawn_hook = private_runtime_dir
c.Spawner.environment = {{
    # short: a unix socket's path must fit in 107 bytes (<runtime>/kernel-<uuid>-ipc-<n>)
    "JUPYTER_RUNTIME_DIR": lambda spawner: f"{run}/{{spawner.user.name}}",
    # a callable gets the spawner: one directory per user on the node's scratch disk
    "IOLAB_WORKDIR": lambda spawner: f"{scratch}/{{spawner.user.name}}/iolab",
    "IOLAB_BUDGET": {budget!r},
    # where the kernel's kernel.json is (the test keeps it in its own prefix, not /usr/local)
    "JUPYTER_PATH": {jupyter_path!r},
    "PATH": {path!r},
    "{marker}": {marker_value!r},
}}
"""


# the class on Slurm (docs/jupyterhub.md section 9): the course's one configuration, iolab.hubslurm's
SLURM_SPAWNER = """
from iolab import hubslurm
hubslurm.configure(
    c, venv={venv!r}, partition={partition!r}, runtime="00:30:00", profiles={profiles!r},
    prologue={prologue!r},
    # fake nodes are this host: the server listens on loopback, and the hub reaches it there
    server_ip="127.0.0.1", exechost="127.0.0.1",
    environment={{
        "SLURM_CONF": {slurm_conf!r},
        "IOLAB_BUDGET": {budget!r},
        "JUPYTER_PATH": {jupyter_path!r},
        "PATH": {path!r},
        "{marker}": {marker_value!r},
    }},
    start_timeout={start_timeout!r}, poll_interval=5, dead_job_poll=2)
"""


class HubClass:
    """Students (and an instructor) on a real JupyterHub on 127.0.0.1; a context manager.

    ``students``: how many student users; ``instructor``: one more user, who reads the class results
    (JupyterHub role ``instructor``: list and read users, not the hub's admin). Everything made is
    removed on exit, on error and on KeyboardInterrupt.
    """

    def __init__(self, students: int = 2, *, instructor: bool = True, budget: str = "1GiB",
                 env: ClassEnv | None = None, fuse: bool = True, log=print, slurm: Any = None,
                 profiles: dict[str, str] | None = None, prologue: tuple[str, ...] = (), start_timeout: int = 120):
        self.n = students
        self.with_instructor = instructor
        self.budget = budget
        self.env = env
        self.log = log
        self.prefix = "iol" + secrets.token_hex(3)
        self.group = f"{self.prefix}cls"
        self.dir: Path | None = None
        self.users: list[str] = []
        self.students: list[Student] = []
        self.instructor: Student | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.hub_start_seconds: float | None = None
        self.uids: dict[int, str] = {}
        self._group_made = False
        self.fuse = fuse
        self._fuse_mode: int | None = None
        # a running iolab.slurm_cluster.SlurmCluster: each student's server a job (iolab.hubslurm)
        self.slurm = slurm
        self.profiles = profiles
        self.prologue = tuple(prologue)
        self.start_timeout = start_timeout

    # -- paths ------------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def scratch(self) -> Path:
        assert self.dir is not None
        return self.dir / "scratch"

    @property
    def results(self) -> Path:
        assert self.dir is not None
        return self.dir / "class" / "results"

    @property
    def runtime_root(self) -> Path:
        """Where the hub makes each student's Jupyter runtime directory (``/run/jupyter`` on a node)."""
        assert self.dir is not None
        return self.dir / "run"

    def runtime_dir(self, user: str) -> Path:
        return self.runtime_root / user

    @property
    def shared(self) -> Path:
        """A class data directory every student can read (root-owned, 0755)."""
        assert self.dir is not None
        return self.dir / "class" / "data"

    def log_tail(self, lines: int = 40) -> str:
        if self.dir is None or not (self.dir / "hub" / "hub.log").exists():
            return ""
        return "\n".join((self.dir / "hub" / "hub.log").read_text(errors="replace").splitlines()[-lines:])

    # -- set-up -----------------------------------------------------------------------------------
    def start(self) -> "HubClass":
        why = why_not()
        if why:
            raise RuntimeError(why)
        reap_stale(self.log)
        if self.env is None:
            self.env = class_env(log=self.log)
        with _umask(0o022):
            self.dir = Path(tempfile.mkdtemp(prefix="iolab-hub-", dir="/tmp"))
            os.chmod(self.dir, 0o755)
            self._open_fuse()
            self._make_users()
            self._make_directories()
            self._install_kernel()
            self._start_hub()
        return self

    def _open_fuse(self) -> None:
        """Students mount with the setuid fusermount3, which opens /dev/fuse as the student: Debian's udev
        makes it 0666, some VMs and containers create it 0600 (root only). For the class's duration it
        gets Debian's mode; stop() puts the old one back."""
        dev = Path("/dev/fuse")
        if not self.fuse or not dev.exists():
            return
        mode = stat.S_IMODE(dev.stat().st_mode)
        if mode & 0o006 != 0o006:
            self._fuse_mode = mode
            os.chmod(dev, 0o666)

    def _make_users(self) -> None:
        assert self.dir is not None
        homes = self.dir / "home"
        homes.mkdir(mode=0o755)
        _run(["groupadd", self.group])
        self._group_made = True
        names = [(f"{self.prefix}s{i + 1}", False) for i in range(self.n)]
        if self.with_instructor:
            names.append((f"{self.prefix}in", True))
        lines = []
        for name, instructor in names:
            password = secrets.token_urlsafe(12)
            _run(["useradd", "--create-home", "--home-dir", str(homes / name), "--shell", "/bin/bash",
                  "--gid", self.group, "--comment", GECOS, name])
            self.users.append(name)
            lines.append(f"{name}:{password}")
            st = Student(self, name, password)
            os.chmod(st.home, 0o700)
            self.uids[st.uid] = name
            if instructor:
                self.instructor = st
            else:
                self.students.append(st)
        _run(["chpasswd"], input="\n".join(lines) + "\n")
        # the course for each student: a copy of the notebooks and exercises in the home, as the guide
        # says (nbgitpuller would do the same); the finished exercise 01 stands for a student's work
        for st in [*self.students, *([self.instructor] if self.instructor else [])]:
            for d in ("notebooks", "exercises"):
                shutil.copytree(ROOT / d, st.home / d, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
            shutil.copyfile(ROOT / "exercises" / "solutions" / "01-page-cache.ipynb",
                            st.home / "exercises" / "01-page-cache.ipynb")
            shutil.rmtree(st.home / "exercises" / "solutions")
            # the lessons start MPI ranks on the student's own node only: shared memory between them, no
            # TCP port of theirs on the node's network (docs/jupyterhub.md; node-wide, this is
            # /etc/openmpi/openmpi-mca-params.conf, left alone here)
            (st.home / ".openmpi").mkdir()
            (st.home / ".openmpi" / "mca-params.conf").write_text(OPENMPI_PARAMS)
            _run(["chown", "-R", f"{st.name}:{self.group}", str(st.home)])

    def _make_directories(self) -> None:
        # node-local scratch: sticky and world-writable like /tmp, so each student makes their own
        self.scratch.mkdir(mode=0o755)
        os.chmod(self.scratch, 0o1777)
        # the class results directory: setgid + sticky, group rwx (docs/jupyterhub.md section 4)
        self.results.parent.mkdir(mode=0o755)
        _run(["install", "-d", "-m", "3770", "-o", "root", "-g", self.group, str(self.results)])
        self.shared.mkdir(mode=0o755)

    @property
    def kernel_path(self) -> str:
        ior = [d for d in (ior_dir("4.0.0"),) if os.access(d, os.X_OK)]
        assert self.env is not None
        return ":".join([*ior, str(self.env.bin), SYSTEM_PATH])

    def _install_kernel(self) -> None:
        assert self.env is not None and self.dir is not None
        _run([str(self.env.python), "-m", "iolab.kernel", "install", "--prefix", str(self.dir / "jupyter"),
              "--name", "iolab", "--display-name", "iolab (HPC storage I/O)",
              "--env", "IOLAB_RESULTS", str(self.results), "--env", "PATH", self.kernel_path], timeout=120)

    def _start_hub(self) -> None:
        assert self.env is not None and self.dir is not None
        hubdir = self.dir / "hub"
        hubdir.mkdir(mode=0o700)
        self.port, hub_port, api_port = _free_ports(3)
        self.service_token = secrets.token_hex(32)
        config = HUB_CONFIG.format(
            port=self.port, hub_port=hub_port, proxy_api_port=api_port, proxy=proxy_command(), dir=hubdir,
            students=sorted(s.name for s in self.students) + ([self.instructor.name] if self.instructor else []),
            instructors=[self.instructor.name] if self.instructor else [], service_token=self.service_token,
            run=str(self.runtime_root),
            singleuser=str(self.env.bin / "jupyterhub-singleuser"), scratch=self.scratch, budget=self.budget,
            jupyter_path=str(self.dir / "jupyter" / "share" / "jupyter"), path=f"{self.env.bin}:{SYSTEM_PATH}",
            marker=MARKER, marker_value=str(self.dir))
        if self.slurm is None:
            config += LOCAL_SPAWNER.format(
                run=str(self.runtime_root), singleuser=str(self.env.bin / "jupyterhub-singleuser"),
                scratch=self.scratch, budget=self.budget, jupyter_path=str(self.dir / "jupyter" / "share" / "jupyter"),
                path=f"{self.env.bin}:{SYSTEM_PATH}", marker=MARKER, marker_value=str(self.dir))
        else:
            config += SLURM_SPAWNER.format(
                venv=str(self.env.venv), partition=self.slurm.partition, profiles=self.profiles,
                prologue=list(self.prologue), slurm_conf=str(self.slurm.conf), budget=self.budget,
                jupyter_path=str(self.dir / "jupyter" / "share" / "jupyter"), path=f"{self.env.bin}:{SYSTEM_PATH}",
                marker=MARKER, marker_value=str(self.dir), start_timeout=self.start_timeout)
        (hubdir / "jupyterhub_config.py").write_text(config)
        os.chmod(hubdir / "jupyterhub_config.py", 0o600)
        env = {"PATH": f"{self.env.bin}:/usr/local/sbin:/usr/sbin:/sbin:{SYSTEM_PATH}", "LANG": "C.UTF-8",
               "HOME": str(hubdir), MARKER: str(self.dir),
               "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(32)}
        if self.slurm is not None:
            env["SLURM_CONF"] = str(self.slurm.conf)      # the hub's squeue and scancel inherit it
        if Path("/usr/share/nodejs").is_dir():
            env["NODE_PATH"] = "/usr/share/nodejs"      # Debian's proxy with a node from elsewhere
        log = open(hubdir / "hub.log", "wb")
        t0 = time.monotonic()
        self.proc = subprocess.Popen([str(self.env.bin / "jupyterhub"), "-f", str(hubdir / "jupyterhub_config.py")],
                                     cwd=hubdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        import requests

        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterHub exited ({self.proc.returncode}):\n{self.log_tail()}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() - t0 > 120:
                raise RuntimeError(f"JupyterHub did not answer in 120 s:\n{self.log_tail()}")
            time.sleep(0.2)
        self.hub_start_seconds = time.monotonic() - t0

    def service_api(self, method: str, path: str, **kw) -> Any:
        import requests

        r = requests.request(method, f"{self.url}/hub/api/{path}",
                             headers={"Authorization": f"token {self.service_token}"}, timeout=60, **kw)
        r.raise_for_status()
        return r.json() if r.content else None

    # -- what is left -------------------------------------------------------------------------------
    def leftovers(self) -> dict[str, list[str]]:
        """What the students' sessions left on the machine: processes, FUSE mounts, listening sockets,
        workspaces, files of theirs in the shared temporary directories."""
        uids = set(self.uids)
        procs = [f"{p} {self.uids.get(_uid_of(p) or -1, '?')}: {' '.join(_cmdline(p))[:200]}"
                 for p in processes_of(uids)]
        fuse = [m.mountpoint for m in mounts() if m.fstype.startswith("fuse") and
                (m.user_id in uids or (self.dir is not None and m.mountpoint.startswith(str(self.dir))))]
        workspaces = []
        for st in self.students + ([self.instructor] if self.instructor else []):
            if st.workdir.is_dir():
                workspaces += [str(p) for p in st.workdir.iterdir()]
        strays = []
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            with contextlib.suppress(OSError):
                for e in os.scandir(d):
                    with contextlib.suppress(OSError):
                        if e.stat(follow_symlinks=False).st_uid in uids:
                            strays.append(e.path)
        ports = sorted(f"{ip}:{port} uid {uid}" for (ip, port), uid in _listening_uids().items() if uid in uids)
        return {"processes": procs, "fuse mounts": fuse, "listening ports": ports, "workspaces": workspaces,
                "files in /tmp etc.": strays}

    # -- tear-down ----------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the hub (it stops the servers and the proxy), end whatever is left of ours by pid, unmount,
        remove the users, their files and the run's directory."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        uids = set(self.uids)
        marker = str(self.dir) if self.dir else None
        for sig in (signal.SIGTERM, signal.SIGKILL):
            left = processes_of(uids, marker)
            for pid in left:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + 5
            while processes_of(uids, marker) and time.monotonic() < deadline:
                time.sleep(0.1)
        for m in mounts():
            if m.fstype.startswith("fuse") and (m.user_id in uids or (marker and m.mountpoint.startswith(marker))):
                subprocess.run(["umount", "-l", m.mountpoint], capture_output=True, timeout=30)
        for d in ("/tmp", "/var/tmp", "/dev/shm"):
            with contextlib.suppress(OSError):
                for e in os.scandir(d):
                    with contextlib.suppress(OSError):
                        if e.stat(follow_symlinks=False).st_uid in uids:
                            if e.is_dir(follow_symlinks=False):
                                shutil.rmtree(e.path, ignore_errors=True)
                            else:
                                os.unlink(e.path)
        for name in self.users:
            subprocess.run(["userdel", "--remove", name], capture_output=True, timeout=60)
        if self._group_made:
            subprocess.run(["groupdel", self.group], capture_output=True, timeout=60)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        if self._fuse_mode is not None:
            with contextlib.suppress(OSError):
                os.chmod("/dev/fuse", self._fuse_mode)
            self._fuse_mode = None

    def gone(self) -> list[str]:
        """What of this class still exists after stop() (should be nothing)."""
        left = []
        for name in self.users:
            with contextlib.suppress(KeyError):
                pwd.getpwnam(name)
                left.append(f"user {name}")
        with contextlib.suppress(KeyError):
            grp.getgrnam(self.group)
            left.append(f"group {self.group}")
        if self.dir is not None and self.dir.exists():
            left.append(str(self.dir))
        left += [f"process {p}" for p in processes_of(set(self.uids), str(self.dir) if self.dir else None)]
        return left

    def __enter__(self) -> "HubClass":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
