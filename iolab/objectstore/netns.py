"""A private network for a session's servers: their ports reachable by their owner only.

Loopback is shared by every user of a node: a server on 127.0.0.1 without credentials (SeaweedFS's
master, volume and filer ports, toxiproxy's API, fake-gcs-server) is open to the whole class. So the
servers of a session run in a network namespace of their own, made by an unprivileged user
namespace (``unshare(CLONE_NEWUSER | CLONE_NEWNET)``): every port they open is on that namespace's
loopback, which no other process of the node can reach. A small holder process
(:mod:`._netns_holder`) keeps the namespace, starts nothing itself (servers join it with
``nsenter --target PID --user --net``), and carries the few ports the clients need (the store's, the
slow link's, its API) from 127.0.0.1 of the node to the namespace, admitting only connections whose
socket belongs to the owner's uid (the kernel says whose, through sock_diag).

    with private_net(ws) as net:             # None where the kernel forbids it: today's loopback then
        inner = net.free_ports(1)[0]
        svc = Service(..., argv=net.argv([exe, "-port", str(inner)]), ...)
        port = net.expose(inner)             # the node's 127.0.0.1:port, for the owner only

Where unprivileged user namespaces are off (``kernel.unprivileged_userns_clone=0``,
``user.max_user_namespaces=0``, a container's seccomp profile), or ``IOLAB_NETNS=0``, the servers
listen on the node's loopback as before, and the first server says so in one line.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from .. import workspace as _workspace
from ..errors import IolabError, ToolFailed
from ..service import LOOPBACK, PortTaken, Service

HOLDER = Path(__file__).with_name("_netns_holder.py")

FALLBACK = ("no private network for lesson 06's servers here ({why}): they listen on 127.0.0.1, where every "
            "user of this node can reach them")

_lock = threading.Lock()
_problem: str | None = None          # why private networks cannot be made here ("" when they can), once known
_announced = False
_NETS: dict[str, "PrivateNet"] = {}   # by workspace root
_ROUTES: dict[int, tuple["PrivateNet", int]] = {}   # host port -> (its network, the port inside)


class NetnsError(IolabError):
    """The holder of a private network refused or failed a request."""


def enabled() -> bool:
    return os.environ.get("IOLAB_NETNS", "1").strip().lower() not in ("0", "off", "no", "false")


class PrivateNet:
    """A user+network namespace held by a small process; servers join it, the owner reaches them."""

    def __init__(self, ws: _workspace.Workspace):
        self.ws = ws
        self.users = 0
        self.service: Service | None = None
        self._ctl: socket.socket | None = None
        self._lock = threading.Lock()
        self._first: dict | None = None
        self.exposed: dict[int, int] = {}      # host port -> inner port
        self.tmp: Path | None = None           # what its servers see as /tmp (a directory of the owner's)

    # -- life cycle --------------------------------------------------------------------------------
    def start(self) -> "PrivateNet":
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._ctl = mine
        d = Path(self.ws.mkdir(f"objectstore/netns-{os.getpid()}-{id(self) & 0xffff:04x}"))
        os.chmod(d, 0o700)
        # the servers' /tmp: names they make there (SeaweedFS's sockets, after its ports) are ours alone
        tmp = d / "tmp"
        tmp.mkdir(mode=0o700, exist_ok=True)
        svc = Service("private network", [_python(), "-I", str(HOLDER), str(theirs.fileno()), str(tmp),
                                                   *_kept_in_tmp(self.ws.root)],
                      log_path=d / "netns.log", cwd=d, ready=self._ready, start_timeout=15, stop_grace=2,
                      pass_fds=(theirs.fileno(),))
        self.service = svc
        try:
            svc.start()
        except ToolFailed as e:
            why = (self._first or {}).get("error") or e.stderr or str(e)
            self.close()
            raise NetnsError(why.strip().splitlines()[-1] if why.strip() else "the holder stopped") from None
        finally:
            theirs.close()
        # a server must be able to join it: nsenter, and setns() into a user namespace, may be refused
        try:
            r = subprocess.run(self.argv(["true"]), capture_output=True, text=True, timeout=15)
        except (OSError, subprocess.SubprocessError) as e:
            self.close()
            raise NetnsError(f"nsenter: {e}") from None
        if r.returncode != 0:
            self.close()
            raise NetnsError(r.stderr.strip() or f"nsenter exited {r.returncode}")
        self.tmp = tmp
        return self

    def _ready(self) -> bool:
        if self._first is not None:
            return "ready" in self._first
        if not select.select([self._ctl], [], [], 0)[0]:
            return False
        data = self._ctl.recv(65536)
        self._first = json.loads(data) if data else {"error": "the holder stopped"}
        return "ready" in self._first

    @property
    def pid(self) -> int | None:
        return self.service.pid if self.service else None

    def alive(self) -> bool:
        return self.service is not None and self.service.alive()

    def close(self) -> None:
        for port in list(self.exposed):
            _ROUTES.pop(port, None)
        self.exposed.clear()
        if self._ctl is not None:
            self._ctl.close()                  # end of file: the holder exits by itself
            self._ctl = None
        if self.service is not None:
            self.service.stop()

    # -- requests to the holder ---------------------------------------------------------------------
    def _request(self, message: dict, fds: Sequence[int] = ()) -> dict:
        with self._lock:
            if self._ctl is None or not self.alive():
                raise NetnsError("the private network is not running")
            socket.send_fds(self._ctl, [json.dumps(message).encode()], list(fds))
            self._ctl.settimeout(30)
            data = self._ctl.recv(65536)
        if not data:
            raise NetnsError("the private network's holder stopped")
        answer = json.loads(data)
        if "error" in answer:
            raise NetnsError(f"the private network refused {message.get('op')}: {answer['error']}")
        return answer

    def free_ports(self, n: int, *, grpc_offset: int | None = None, avoid: Sequence[int] = ()) -> list[int]:
        """n ports free inside the namespace (with grpc_offset: each port + offset free too)."""
        return list(self._request({"op": "ports", "n": n, "offset": grpc_offset, "avoid": list(avoid)})["ports"])

    def expose(self, inner: int, port: int | None = None) -> int:
        """Carry the node's 127.0.0.1:port (a free one by default) to inner, for the owner only; the port.

        The same port on ::1 is taken too, where the node has IPv6: a client given ``localhost``
        (gcsfuse, Go) tries ::1 first, and another user listening there would be talking to it."""
        for _ in range(20):
            v4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held = [v4]
            try:
                v4.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    v4.bind((LOOPBACK, port or 0))
                except OSError:
                    raise PortTaken(f"port {port} on {LOOPBACK} is already taken (another student's server, or "
                                    "one left running?); start it without a port to get a free one") from None
                host = v4.getsockname()[1]
                v6 = _bind_v6(host)
                if v6 is False:                         # someone else has [::1]:host
                    if port is not None:
                        raise PortTaken(f"port {port} on ::1 is already taken by another program: a client "
                                        "that says localhost would reach it; start without a port")
                    continue
                held += [v6] if v6 is not None else []
                for s in held:
                    s.listen(128)
                self._request({"op": "expose", "inner": inner}, [s.fileno() for s in held])
            finally:
                for s in held:
                    s.close()                  # the holder has its own copies now
            self.exposed[host] = inner
            _ROUTES[host] = (self, inner)
            return host
        raise PortTaken("no port free on both 127.0.0.1 and ::1")

    def close_port(self, port: int) -> None:
        """Stop carrying the node's port; its connections are dropped."""
        self.exposed.pop(port, None)
        _ROUTES.pop(port, None)
        with contextlib.suppress(NetnsError, OSError):
            self._request({"op": "close", "port": port})

    def argv(self, argv: Sequence[str]) -> list[str]:
        """argv run inside the namespaces (as the same user: its uid maps to itself there), with the
        private /tmp, in the directory it is started in."""
        return [_nsenter(), f"--target={self.pid}", "--user", "--net", "--mount", "--preserve-credentials",
                "--wd=.", "--", *[os.fspath(a) for a in argv]]

    def log_tail(self, lines: int = 25) -> str:
        return self.service.log_tail(lines) if self.service else ""

    def __repr__(self) -> str:
        return f"<PrivateNet holder={self.pid} exposed={sorted(self.exposed)}>"


def _bind_v6(port: int) -> "socket.socket | None | bool":
    """A socket bound to [::1]:port; None when this node has no IPv6 loopback; False when it is taken."""
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::1", port))
        return s
    except OSError as e:
        s.close()
        return False if e.errno == errno.EADDRINUSE else None


def _python() -> str:
    """A Python to run the holder (standard library only): this one, or python3 on PATH when this one
    sits where the user may not run it from a child (a venv linked into another user's home)."""
    if sys.executable and os.access(sys.executable, os.X_OK):
        return sys.executable
    return shutil.which("python3") or sys.executable


def _kept_in_tmp(root: Path) -> list[str]:
    """The directories right under the node's /tmp that the servers still need behind their private
    /tmp: the workspace's, and those of this Python, its path and PATH (a checkout or venv in /tmp)."""
    places = [root, sys.prefix, sys.executable, *sys.path, *os.environ.get("PATH", "").split(os.pathsep)]
    tmp = Path(os.path.realpath("/tmp"))
    keep = set()
    for p in places:
        if not p:
            continue
        real = Path(os.path.realpath(p))
        if tmp in real.parents:
            keep.add(str(tmp / real.relative_to(tmp).parts[0]))
    return sorted(keep)


def _nsenter() -> str:
    found = shutil.which("nsenter") or next((p for p in ("/usr/bin/nsenter", "/bin/nsenter") if os.path.exists(p)),
                                            None)
    if not found:
        raise NetnsError("nsenter is not installed (util-linux)")
    return found


def problem() -> str | None:
    """Why private networks cannot be made here ("" when they can; None when not tried yet)."""
    if not enabled():
        return "IOLAB_NETNS=0"
    return _problem


def route(port: int) -> tuple[PrivateNet, int] | None:
    """(the private network, the port inside it) behind the node's 127.0.0.1:port, or None."""
    r = _ROUTES.get(port)
    return r if r is not None and r[0].alive() else None


def _announce(why: str) -> None:
    global _announced
    if not _announced:
        _announced = True
        print("Note: " + FALLBACK.format(why=why), flush=True)


@contextlib.contextmanager
def private_net(ws: _workspace.Workspace | None = None) -> Iterator[PrivateNet | None]:
    """The workspace's private network (started on first use, stopped when its last user leaves),
    or None where one cannot be made: then one line says so, once per process."""
    global _problem
    w = ws if ws is not None else _workspace.session()
    if not enabled():
        _announce("IOLAB_NETNS=0")
        yield None
        return
    key = str(w.root)
    with _lock:
        net = _NETS.get(key)
        if net is None or not net.alive():
            if _problem:
                net = None
            else:
                try:
                    net = PrivateNet(w).start()
                    _problem = ""
                    _NETS[key] = net
                except (NetnsError, OSError) as e:
                    _problem = str(e) or type(e).__name__
                    net = None
        if net is not None:
            net.users += 1
    if net is None:
        _announce(_problem or "unknown")
        yield None
        return
    try:
        yield net
    finally:
        _release(net)


@contextlib.contextmanager
def joined(net: PrivateNet) -> Iterator[PrivateNet]:
    """Use a running private network (another server's) for as long as the block lasts."""
    with _lock:
        net.users += 1
    try:
        yield net
    finally:
        _release(net)


def _release(net: PrivateNet) -> None:
    """One user fewer; the last one stops the holder (the namespace goes with its last process)."""
    with _lock:
        net.users -= 1
        if net.users > 0:
            return
        for k, v in list(_NETS.items()):
            if v is net:
                del _NETS[k]
    net.close()
