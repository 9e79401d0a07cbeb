"""What the owner-only path costs: a streaming read straight from a server, and through the private
network's forwarder (iolab.objectstore.netns), on this machine.

Usage: .venv/bin/python benchmarks/bench_objectstore_path.py [--size 256MiB] [--repeat 3]

Three figures, each the best of --repeat runs (MiB/s):

  socket   a plain TCP sink server that sends --size bytes: on the node's loopback, and inside a private
           network reached through the forwarder (the forwarder's own ceiling);
  S3 GET   one object of --size read with fsspec/s3fs from SeaweedFS (or moto): the server on the node's
           loopback (IOLAB_NETNS=0, today's way), and in a private network behind the forwarder;
  s3fs     the same object read through an s3fs-fuse mount of the store (no cache), both ways;
  link     the same object through lesson 06's slow link (toxiproxy, 12 MB/s cap), both ways: the link
           is the ceiling there, whatever the path.

It prints figures; it asserts nothing (CI does not gate on speed).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import time

from iolab import workspace
from iolab.objectstore import mounts, netns, slowlink
from iolab.objectstore import store as objstore
from iolab.service import LOOPBACK, Service
from iolab.units import MiB, format_rate, parse_size

SINK = r"""
import socket, sys
n = int(sys.argv[2]); buf = b"\0" * (1 << 20)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
while True:
    c, _ = s.accept(); c.recv(16); left = n
    try:
        while left > 0:
            k = c.send(buf[:min(left, len(buf))]); left -= k
    except OSError:
        pass
    c.close()
"""


def read_socket(port: int) -> int:
    total = 0
    with socket.create_connection((LOOPBACK, port)) as c:
        c.sendall(b"go")
        buf = bytearray(1 << 20)
        while True:
            k = c.recv_into(buf)
            if not k:
                return total
            total += k


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = fn()
        out.append(n / (time.perf_counter() - t0))
    return max(out)


@contextlib.contextmanager
def sink(ws, size: int, private: bool):
    d = ws.mkdir(f"sink-{'p' if private else 'n'}")
    if private:
        with netns.private_net(ws) as net:
            assert net is not None, f"no private network here: {netns.problem()}"
            inner = net.free_ports(1)[0]
            port = net.expose(inner)
            svc = Service("sink", net.argv([sys.executable, "-c", SINK, str(inner), str(size)]), log_path=d / "log",
                          ready=lambda: _answers(port), start_timeout=10)
            with svc:
                yield port
            net.close_port(port)
    else:
        s = socket.socket()
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
        s.close()
        svc = Service("sink", [sys.executable, "-c", SINK, str(port), str(size)], log_path=d / "log",
                      ready=lambda: _answers(port), start_timeout=10)
        with svc:
            yield port


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as c:
            c.sendall(b"x")
            return bool(c.recv(1))
    except OSError:
        return False


def s3_read(ws, size: int, repeat: int, private: bool, link: bool, fuse: bool = False) -> tuple[float, str]:
    os.environ["IOLAB_NETNS"] = "1" if private else "0"
    spec = objstore.DEFAULT_LINK if link else None
    with objstore.remote_store("s3", ws=ws, spec=spec) as st:
        (key,) = objstore.put_files(st, "bench", n=1, size=size)
        ep = st.remote if link else st.direct
        if fuse:
            with mounts.s3fs_fuse(ep, st.bucket, ws=ws) as m:
                rate = best(lambda: _read_file(m.path / key), repeat)
            return rate, ep.describe()
        fs = ep.filesystem()
        path = f"{st.bucket}/{key}"
        fs.info(path)
        rate = best(lambda: len(fs.cat(path)), repeat)
        return rate, ep.describe()


def _read_file(path) -> int:
    n = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(1 << 20):
            n += len(chunk)
    return n


def _path(private: bool) -> str:
    return f"{'private network, forwarder' if private else 'node loopback, direct':32s}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="256MiB")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    size = parse_size(a.size)
    print(f"host {os.uname().nodename}, {os.cpu_count()} cpus; reads of {a.size}, best of {a.repeat}")
    with workspace.Workspace(budget=4 * size + 256 * MiB) as ws:
        for private in (False, True):
            with sink(ws, size, private) as port:
                r = best(lambda: read_socket(port), a.repeat)
            print(f"socket  {_path(private)} {format_rate(r)}")
        for private in (False, True):
            r, what = s3_read(ws, size, a.repeat, private, link=False)
            print(f"S3 GET  {_path(private)} {format_rate(r)}   ({what})")
        if mounts.clients_here().get("s3fs"):
            for private in (False, True):
                r, what = s3_read(ws, size, a.repeat, private, link=False, fuse=True)
                print(f"s3fs    {_path(private)} {format_rate(r)}   ({what})")
        if slowlink.available():
            small = min(size, 16 * MiB)
            for private in (False, True):
                r, what = s3_read(ws, small, a.repeat, private, link=True)
                print(f"link    {_path(private)} {format_rate(r)}   ({what}; {small // MiB} MiB)")


if __name__ == "__main__":
    main()
