"""A slow network between client and store, on demand: toxiproxy in front of the endpoint.

On loopback every cache looks useless (20 MiB arrive in a tenth of a second). A remote store is
tens of milliseconds away and shares a link: toxiproxy (Shopify, a TCP proxy made for this) adds a
latency to every response and caps the bandwidth, for this proxy only. Nothing else on the node
(Jupyter, other students) is slowed, unlike ``tc`` on ``lo``.

    with local_s3(ws) as store, slow_link(store, latency_ms=20, rate_kbps=20_000) as remote:
        ...  # give `remote` to the clients; `store` stays fast (for staging test data)

toxiproxy's API takes no credentials: whoever reaches it can list, change or delete the proxy. In
front of a store in a private network (:mod:`.netns`) toxiproxy runs in that network too, and both
its API and its proxy are carried to the node's 127.0.0.1 for the owner's connections only.
"""
from __future__ import annotations

import contextlib
import functools
import json
import re
import secrets
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import workspace as _workspace
from ..errors import IolabError, ParseError
from . import netns
from ..service import LOOPBACK, Service, free_ports, http_ok, port_open, resolve
from .endpoint import Endpoint

TOXIPROXY = "toxiproxy-server"


@dataclass(frozen=True)
class LinkSpec:
    """What the slow link does: latency added to each response, and a bandwidth cap (both ways)."""

    latency_ms: int = 20
    jitter_ms: int = 0
    rate_kbps: int | None = 20_000      # toxiproxy's unit: KB/s; None = no cap

    def describe(self) -> str:
        cap = f", capped at {self.rate_kbps / 1000:g} MB/s" if self.rate_kbps else ""
        jit = f" ± {self.jitter_ms} ms" if self.jitter_ms else ""
        return f"{self.latency_ms} ms{jit} per response{cap}"


def toxiproxy_path() -> str:
    return resolve(TOXIPROXY, str(Path(sys.executable).parent / TOXIPROXY))


@functools.lru_cache(maxsize=None)
def counts_bytes(exe: str) -> bool:
    """Does this toxiproxy-server have -proxy-metrics (2.5 and later)?"""
    try:
        r = subprocess.run([exe, "-help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return "proxy-metrics" in (r.stdout + r.stderr)


def available() -> bool:
    try:
        toxiproxy_path()
        return True
    except IolabError:
        return False


@dataclass(frozen=True)
class Traffic:
    """Bytes through the proxy: ``down`` from the store to the client, ``up`` from the client to the store."""

    down: int = 0
    up: int = 0

    def __sub__(self, other: "Traffic") -> "Traffic":
        return Traffic(self.down - other.down, self.up - other.up)


_METRIC = re.compile(r'^toxiproxy_proxy_sent_bytes_total\{(?P<labels>[^}]{0,1000})\}\s+(?P<value>\S{1,40})$')
_VALUE = re.compile(r'\d{1,20}(?:\.0*)?|\d(?:\.\d{1,19})?e\+?\d{1,2}')     # a count: 7593, 7593.0, 7.593e+03
_LABEL = re.compile(r'(\w{1,100})="([^"]{0,1000})"')


def parse_metrics(text: str, proxy: str = "store") -> Traffic:
    """The bytes toxiproxy has sent on to each side for one proxy, from its Prometheus text.

    ``direction="downstream"`` is what it sent to the client (the store's responses), ``"upstream"``
    what it sent to the store (the client's requests). No line yet (nothing passed): zero.
    A line of that metric cut short (the text ends without its newline), a value that is not a
    whole count of bytes, or the same proxy and direction twice raises ParseError."""
    found: dict[str, int] = {}
    lines = text.splitlines()
    cut = bool(lines) and not text.endswith(("\n", "\r"))
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if not s.startswith("toxiproxy_proxy_sent_bytes_total"):
            continue
        if cut and no == len(lines):
            raise ParseError("toxiproxy's metrics end inside a line (no newline at the end)", line_no=no, line=line)
        m = _METRIC.match(s)
        if not m:
            raise ParseError("not a line of toxiproxy_proxy_sent_bytes_total", line_no=no, line=line)
        labels = dict(_LABEL.findall(m.group("labels")))
        if labels.get("proxy") != proxy or labels.get("direction") not in ("downstream", "upstream"):
            continue
        value = m.group("value")
        if not _VALUE.fullmatch(value) or not float(value).is_integer():
            raise ParseError("a count of bytes that is not a whole number", line_no=no, line=line)
        if labels["direction"] in found:
            raise ParseError(f"proxy {proxy} {labels['direction']} appears twice", line_no=no, line=line)
        found[labels["direction"]] = int(float(value)) if "e" in value else int(value.split(".")[0])
    return Traffic(found.get("downstream", 0), found.get("upstream", 0))


class _Api:
    def __init__(self, port: int):
        self.base = f"http://{LOOPBACK}:{port}"

    def text(self, path: str) -> str:
        with urllib.request.urlopen(self.base + path, timeout=10) as r:
            return r.read().decode()

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read().decode()
        except urllib.error.HTTPError as e:
            raise IolabError(f"toxiproxy refused {method} {path}: {e.code} {e.read().decode()[:200]}") from None
        return json.loads(text) if text.strip() else None


class SlowLink:
    """A running toxiproxy with one proxy; change its toxics with :meth:`set`."""

    def __init__(self, service: Service, api: _Api, upstream: Endpoint, endpoint: Endpoint, spec: LinkSpec):
        self.service = service
        self.api = api
        self.upstream = upstream
        self.endpoint = endpoint
        self.spec = spec

    def set(self, spec: LinkSpec) -> None:
        """Replace the toxics (latency on responses, bandwidth both ways)."""
        for t in self.api.call("GET", "/proxies/store/toxics") or []:
            self.api.call("DELETE", f"/proxies/store/toxics/{t['name']}")
        if spec.latency_ms or spec.jitter_ms:
            self.api.call("POST", "/proxies/store/toxics", {
                "name": "latency", "type": "latency", "stream": "downstream",
                "attributes": {"latency": int(spec.latency_ms), "jitter": int(spec.jitter_ms)}})
        if spec.rate_kbps:
            for stream in ("downstream", "upstream"):
                self.api.call("POST", "/proxies/store/toxics", {
                    "name": f"bandwidth_{stream}", "type": "bandwidth", "stream": stream,
                    "attributes": {"rate": int(spec.rate_kbps)}})
        self.spec = spec

    counts = True      # whether this toxiproxy counts bytes (-proxy-metrics)

    def traffic(self) -> Traffic:
        """Bytes the proxy has passed so far: ``down`` (store to client) and ``up`` (client to store).

        toxiproxy adds a connection's bytes to its counters only when the connection ends, and the
        clients keep theirs open between requests: so the proxy is switched off and on first, which
        closes every connection (the clients open new ones on their next request)."""
        self.api.call("POST", "/proxies/store", {"enabled": False})
        self.api.call("POST", "/proxies/store", {"enabled": True})
        return parse_metrics(self.api.text("/metrics"))

    def __repr__(self) -> str:
        return f"<SlowLink {self.endpoint.url} -> {self.upstream.url}: {self.spec.describe()}>"


@contextlib.contextmanager
def slow_link(upstream: Endpoint, spec: LinkSpec | None = None, *, ws: _workspace.Workspace | None = None,
              listen_port: int | None = None, **kwargs: Any) -> Iterator[Endpoint]:
    """Yield a copy of upstream reached through toxiproxy with spec (or LinkSpec(**kwargs)).

    To change the link while it runs, use :func:`open_slow_link`, which yields the SlowLink.
    """
    with open_slow_link(upstream, spec, ws=ws, listen_port=listen_port, **kwargs) as link:
        yield link.endpoint


@contextlib.contextmanager
def open_slow_link(upstream: Endpoint, spec: LinkSpec | None = None, *, ws: _workspace.Workspace | None = None,
                   listen_port: int | None = None, **kwargs: Any) -> Iterator[SlowLink]:
    """Start toxiproxy in front of upstream; yield the SlowLink (its ``.endpoint`` is the slow way in).

    listen_port: the proxy's port, when the server must know it in advance (fake-gcs-server).
    """
    spec = spec or LinkSpec(**kwargs)
    exe = toxiproxy_path()
    w = ws if ws is not None else _workspace.session()
    d = Path(w.mkdir(f"objectstore/toxiproxy-{secrets.token_hex(3)}"))
    # -proxy-metrics (toxiproxy 2.5+): it counts the bytes it passes each way (Prometheus text at
    # /metrics), so a lesson can say how much of a read crossed the link
    counts = counts_bytes(exe)
    local = upstream.host in ("localhost", LOOPBACK)
    inside = netns.route(upstream.port) if local else None
    with contextlib.ExitStack() as stack:
        if inside is not None:
            # the store is in a private network: toxiproxy joins it, its two ports are carried out
            net, up_port = inside
            stack.enter_context(netns.joined(net))
            api_in, listen_in = net.free_ports(2)
            api_port = net.expose(api_in)
            stack.callback(net.close_port, api_port)
            port = net.expose(listen_in, listen_port)
            stack.callback(net.close_port, port)
            wrap = net.argv
        else:
            api_in, spare = free_ports(2)
            listen_in = port = listen_port or spare
            api_port = api_in
            up_port = upstream.port
            wrap = list
        argv = [exe, "-host", LOOPBACK, "-port", str(api_in)] + (["-proxy-metrics"] if counts else [])
        svc = Service("toxiproxy", wrap(argv), log_path=d / "toxiproxy.log", cwd=d,
                      ready=lambda: port_open(api_port) and http_ok(f"http://{LOOPBACK}:{api_port}/version"),
                      start_timeout=15, stop_grace=2, umask=0o077)
        with svc:
            api = _Api(api_port)
            up = f"{LOOPBACK}:{up_port}" if local else f"{upstream.host}:{upstream.port}"
            api.call("POST", "/proxies", {"name": "store", "listen": f"{LOOPBACK}:{listen_in}", "upstream": up,
                                          "enabled": True})
            host = "localhost" if upstream.host == "localhost" else LOOPBACK
            where = " (owner only)" if inside is not None else ""
            ep = upstream.via(f"http://{host}:{port}",
                              server=f"{upstream.server} behind toxiproxy{where} ({spec.describe()})")
            link = SlowLink(svc, api, upstream, ep, spec)
            link.counts = counts
            link.set(spec)
            yield link
