"""The process that holds a student's private network namespace and lets only its owner in.

Started by :mod:`iolab.objectstore.netns` as ``python -I _netns_holder.py FD [TMP [KEEP...]]`` (standard
library only), where FD is its end of a SOCK_SEQPACKET socket pair, TMP a private directory of the
owner's and each KEEP a directory under /tmp that must stay where it is (the workspace's). It:

1. opens a NETLINK_SOCK_DIAG socket while it is still in the node's network namespace;
2. makes a user namespace (the owner's uid and gid map to themselves) and a network namespace of its
   own, and brings that namespace's loopback up: servers started in it (``nsenter --target PID
   --user --net --mount``) listen on a 127.0.0.1 that no other process of the node can reach;
   with TMP, a mount namespace too, where TMP is mounted on /tmp (and each KEEP on its own place in
   it): the names servers make in /tmp (SeaweedFS's sockets, named after its ports) are the owner's
   alone, and nobody else's files there can stand in their way;
3. answers requests on FD, one JSON message each:

   ``{"op": "ports", "n": N, "offset": K, "avoid": [...]}`` -> ``{"ports": [...]}``: N ports free
   in the namespace (each port + K free too, none in avoid);
   ``{"op": "expose", "inner": P}`` with listening TCP sockets of the node's loopback passed along
   (SCM_RIGHTS; 127.0.0.1 and, when the node has it, ::1 on the same port) -> ``{"ok": true}``: from
   now on every connection to them whose peer socket belongs to the owner's uid (asked of the kernel
   with sock_diag, an exact 4-tuple lookup) is joined to 127.0.0.1:P inside the namespace; any
   other is reset without a byte;
   ``{"op": "close", "port": HOST_PORT}`` -> ``{"ok": true}``: stop exposing it, drop its connections;

4. exits when FD reaches end of file: the process that started it is gone, however it ended.

The kernel accepts a TCP connection before any program can look at it, so another user's connect()
completes; the connection is then reset at once, before any request is read.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import socket
import struct
import sys
import threading
import time

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, NLMSG_ERROR = 4, 20, 1, 2
BUFFER = 1 << 18
F_SETPIPE_SZ = 1031


def log(*words: object) -> None:
    print(time.strftime("%H:%M:%S"), *words, flush=True)


def enter_private_net(tmp: str | None = None, keep: list[str] | None = None) -> None:
    """A new user namespace (uid and gid mapped to themselves) and network namespace, loopback up;
    with tmp, a mount namespace too, where tmp is mounted on /tmp and each of keep (directories under
    /tmp) on its own path again."""
    uid, gid = os.geteuid(), os.getegid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET | (CLONE_NEWNS if tmp else 0)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"unshare(CLONE_NEWUSER|CLONE_NEWNET{'|CLONE_NEWNS' if tmp else ''}): {os.strerror(e)}")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh14x", b"lo", 0))
        flags = struct.unpack("16sh14x", ifr)[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))
    if tmp:
        def mount(src: str | None, target: str, flags: int) -> None:
            if libc.mount(src.encode() if src else None, target.encode(), None, flags, None) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"mount {src!r} on {target!r}: {os.strerror(e)}")
        mount(None, "/", MS_REC | MS_PRIVATE)
        kept = []                                # opened in this namespace, before /tmp is covered
        for k in keep or []:
            with contextlib.suppress(OSError):  # gone, or not a directory: nothing to keep
                kept.append((k, os.open(k, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
        mount(tmp, "/tmp", MS_BIND | MS_REC)
        for k, fd in kept:                       # the workspace, where it was: its files are under /tmp
            os.makedirs(k, mode=0o700, exist_ok=True)     # in the private /tmp, a directory of ours
            mount(f"/proc/self/fd/{fd}", k, MS_BIND | MS_REC)
            os.close(fd)


class PeerUids:
    """The uid that owns the socket at the other end of a loopback TCP connection (sock_diag)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
        self.sock.settimeout(2)
        self.lock = threading.Lock()
        self.seq = 0

    def uid(self, src: str, sport: int, dst: str, dport: int) -> int | None:
        """The uid of the TCP socket src:sport connected to dst:dport (IPv4 or IPv6), or None."""
        family = socket.AF_INET6 if ":" in src else socket.AF_INET

        def addr(a: str) -> bytes:
            raw = socket.inet_pton(family, a)
            return raw + bytes(16 - len(raw))

        # struct inet_diag_req_v2 {family, protocol, ext, pad, states; struct inet_diag_sockid id}
        sockid = (struct.pack("!HH", sport, dport) + addr(src) + addr(dst)
                  + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF))   # any interface, any cookie
        req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
        with self.lock:
            self.seq += 1
            self.sock.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, self.seq, 0)
                           + req)
            while True:
                data = self.sock.recv(65536)
                length, kind, _flags, seq, _pid = struct.unpack_from("=IHHII", data)
                if seq == self.seq:
                    break
        if kind == NLMSG_ERROR or len(data) < 16 + 4 + 48 + 20:
            return None
        # struct inet_diag_msg {family, state, timer, retrans; id (48 bytes); expires, rqueue, wqueue, uid, inode}
        return struct.unpack_from("=IIIII", data, 16 + 4 + 48)[3]


class Connection:
    """A client's connection joined to a server inside the namespace: two pumps, one each way."""

    def __init__(self, client: socket.socket, server: socket.socket, exposure: "Exposure"):
        self.client, self.server, self.exposure = client, server, exposure
        self.lock = threading.Lock()
        self.open_ways = 2
        for src, dst in ((client, server), (server, client)):
            threading.Thread(target=self.pump, args=(src, dst), daemon=True).start()

    def pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            if hasattr(os, "splice"):
                self.splice(src, dst)
            else:
                buf = bytearray(BUFFER)
                view = memoryview(buf)
                while n := src.recv_into(buf):
                    dst.sendall(view[:n])
            dst.shutdown(socket.SHUT_WR)        # pass the end of the stream on: half-close
        except OSError:
            self.abort()
        finally:
            with self.lock:
                self.open_ways -= 1
                last = self.open_ways == 0
            if last:
                self.close()

    @staticmethod
    def splice(src: socket.socket, dst: socket.socket) -> None:
        """Move the bytes through a pipe with splice(2): the kernel copies, not Python."""
        r, w = os.pipe()
        try:
            with contextlib.suppress(OSError):
                fcntl.fcntl(w, F_SETPIPE_SZ, BUFFER)
            while n := os.splice(src.fileno(), w, BUFFER):
                while n:
                    n -= os.splice(r, dst.fileno(), n)
        finally:
            os.close(r)
            os.close(w)

    def abort(self) -> None:
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.exposure.forget(self)
        for s in (self.client, self.server):
            try:
                s.close()
            except OSError:
                pass


def reset(conn: socket.socket) -> None:
    """Close with a RST (SO_LINGER 0): the peer reads nothing, not even an orderly end."""
    try:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


class Exposure:
    """One listening socket of the node's loopback, joined to one port inside the namespace."""

    def __init__(self, listener: socket.socket, inner: int, owner: int, peers: PeerUids):
        self.listener, self.inner, self.owner, self.peers = listener, inner, owner, peers
        self.host, self.port = listener.getsockname()[:2]
        self.where = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        self.lock = threading.Lock()
        self.connections: set[Connection] = set()
        self.refused = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, peer = self.listener.accept()
            except OSError as e:
                if e.errno in (errno.EINTR, errno.ECONNABORTED, errno.EMFILE, errno.ENFILE):
                    time.sleep(0.01)
                    continue
                return                          # the listener was shut down: close()
            try:
                self.admit(conn, peer[0], peer[1])
            except Exception as e:              # noqa: BLE001 - one bad connection must not stop the others
                log(f"dropped a connection from {peer[0]}:{peer[1]}: {type(e).__name__}: {e}")
                reset(conn)

    def admit(self, conn: socket.socket, addr: str, port: int) -> None:
        """Join conn to the server inside when its peer is the owner's; reset it otherwise."""
        try:
            uid = self.peers.uid(addr, port, self.host, self.port)
        except OSError as e:
            log(f"sock_diag failed for {addr}:{port}: {e}")
            uid = None
        if uid != self.owner:
            self.refused += 1
            if self.refused <= 10 or self.refused in (100, 1000, 10000, 100000):   # a bounded log
                log(f"refused connection {self.refused} to {self.where} from {addr}:{port}: uid {uid}, "
                    f"not the owner's {self.owner}")
            reset(conn)
            return
        try:
            server = socket.create_connection(("127.0.0.1", self.inner), timeout=5)
            server.settimeout(None)
        except OSError:
            reset(conn)                     # nothing listens inside (yet): as a refused connect would
            return
        conn.settimeout(None)
        for s in (conn, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.lock:
            self.connections.add(Connection(conn, server, self))

    def forget(self, c: Connection) -> None:
        with self.lock:
            self.connections.discard(c)

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)     # wakes the accept() blocked in serve()
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            live = list(self.connections)
        for c in live:
            c.abort()


def free_ports(n: int, offset: int | None, avoid: set[int]) -> list[int]:
    held, ports = [], []
    try:
        for _ in range(5000):
            if len(ports) == n:
                break
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            p = s.getsockname()[1]
            pair = [s]
            ok = p not in avoid and p not in ports
            if ok and offset is not None:
                q = p + offset
                ok = q <= 65535 and q not in avoid and q not in ports
                if ok:
                    g = socket.socket()
                    try:
                        g.bind(("127.0.0.1", q))
                        pair.append(g)
                    except OSError:
                        ok = False
                        g.close()
            if ok:
                held += pair
                ports.append(p)
            else:
                for x in pair:
                    x.close()
    finally:
        for s in held:
            s.close()
    if len(ports) < n:
        raise OSError(errno.EADDRINUSE, "not enough free ports in the private namespace")
    return ports


def reply(ctl: socket.socket, message: dict) -> None:
    ctl.send(json.dumps(message).encode())


def main(argv: list[str]) -> int:
    ctl = socket.socket(fileno=int(argv[1]))
    tmp = argv[2] if len(argv) > 2 else None
    owner = os.geteuid()
    try:
        peers = PeerUids()                      # in the node's network namespace: before unshare
        enter_private_net(tmp, argv[3:])
    except OSError as e:
        reply(ctl, {"error": str(e)})
        return 1
    log(f"private network namespace ready for uid {owner}" + (f", /tmp is {tmp}" if tmp else ""))
    reply(ctl, {"ready": True, "pid": os.getpid(), "tmp": tmp})
    exposures: dict[int, list[Exposure]] = {}
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 4)
        except OSError:
            break
        if not data:
            break                               # the process that started us is gone
        listeners = [socket.socket(fileno=fd) for fd in fds]
        try:
            msg = json.loads(data)
            op = msg.get("op")
            if op == "ports":
                reply(ctl, {"ports": free_ports(int(msg["n"]), msg.get("offset"), set(msg.get("avoid", ())))})
            elif op == "expose":
                if not 1 <= len(listeners) <= 2:
                    raise ValueError("expose takes one listening socket, or two (127.0.0.1 and ::1)")
                group = [Exposure(s, int(msg["inner"]), owner, peers) for s in listeners]
                exposures[group[0].port] = group
                for ex in group:
                    log(f"{ex.where} (owner only) -> 127.0.0.1:{ex.inner} inside")
                reply(ctl, {"ok": True, "port": group[0].port})
            elif op == "close":
                for ex in exposures.pop(int(msg["port"]), []):
                    ex.close()
                    log(f"{ex.where} closed ({ex.refused} connections of other users refused)")
                reply(ctl, {"ok": True})
            else:
                reply(ctl, {"error": f"unknown request {op!r}"})
        except (OSError, ValueError, KeyError, TypeError) as e:
            for s in listeners:
                s.close()
            reply(ctl, {"error": f"{type(e).__name__}: {e}"})
    for group in exposures.values():
        for ex in group:
            ex.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
