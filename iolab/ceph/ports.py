"""The ports of a private Ceph cluster: drawn at random, told to no other user, checked once bound.

Ceph's daemons (OSDs, MDS, mgr) bind the first free ports of ``ms_bind_port_min``..``ms_bind_port_max``,
6800-7300 by default (``Processor::bind`` in src/msg/async/AsyncMessenger.cc walks the range in
order). On a node shared by a class that range is a common good: any user who holds its free ports
denies every cluster, and one cluster takes 28 of its 501 ports. So each daemon of a cluster gets a
small range of its own, drawn at random (``secrets``) from ports that are free now and lie outside both
Ceph's defaults and the kernel's ephemeral range (``ip_local_port_range``, where outgoing connections
take their source ports). The ranges and the monitor's two ports are written only into the cluster's
ceph.conf (mode 0600): never into an argv, which every user can read in ``/proc/<pid>/cmdline``.

What remains possible is a user who binds many ports blindly. A daemon then skips the ports taken in its
range, so a daemon's range need not be free from end to end: it is drawn long enough to hold its ports
free among the taken ones (a user holding half of the node's ports at random left no 16 consecutive free
ones, and denied every cluster of the node); the monitor, whose ports are fixed, fails to bind, and the
cluster draws new ones. Whatever fails is told with the port and, where ``/proc/net/tcp`` shows it, the
user who holds it.
"""
from __future__ import annotations

import os
import pwd
import secrets
import socket
from pathlib import Path

from ..errors import IolabError

LOOPBACK = "127.0.0.1"
CEPH_DEFAULT = range(6800, 7301)          # ms_bind_port_min/max's defaults
MON_DEFAULT = (3300, 6789)                # the monitor's msgr2 and legacy ports by default
LOWEST = 10000


class PortTaken(IolabError, OSError):
    """A port the cluster needs is held by another process (another user's, often)."""


def ephemeral() -> tuple[int, int]:
    """The kernel's range of source ports for outgoing connections."""
    try:
        lo, hi = (int(x) for x in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def pool() -> list[range]:
    """The stretches of ports the cluster draws from: >= 10000, outside the ephemeral range and Ceph's
    defaults (the whole of 10000-65535 but Ceph's defaults when the ephemeral range leaves nothing)."""
    lo, hi = ephemeral()
    parts = [range(LOWEST, lo), range(hi + 1, 65536)]
    parts = [r for r in parts if len(r) > 0]
    if sum(len(r) for r in parts) < 4096:
        parts = [range(LOWEST, 65536)]
    return [r for r in parts if len(r) > 0]


def is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


#: how much longer than its number of free ports a range may be drawn where others hold ports in it
SPREAD = 64


def draw(sizes: list[int], *, avoid: list[range] = (), tries: int = 400) -> list[range]:  # type: ignore[assignment]
    """One range per entry of ``sizes`` holding that many free ports, each at a random place of
    :func:`pool`, none overlapping another or ``avoid``: ``size`` consecutive ports where they are free,
    else as many more (up to ``size * SPREAD`` in all) as it takes to hold ``size`` free ones, since a
    daemon skips the taken ports of its range (a range of 1 is one free port). PortTaken when the node has
    no such places."""
    stretches = pool()
    weights = [max(len(r), 0) for r in stretches]
    got: list[range] = []
    avoid = list(avoid)
    for size in sizes:
        for _ in range(tries):
            k = secrets.randbelow(sum(weights))
            i = 0
            while k >= weights[i]:
                k -= weights[i]
                i += 1
            r = stretches[i]
            if len(r) < size:
                continue
            start = r.start + secrets.randbelow(len(r) - size + 1)
            if not is_free(start):
                continue
            free, stop = 0, start
            while stop < r.stop and stop - start < size * SPREAD and free < size:
                free += is_free(stop)
                stop += 1
            block = range(start, stop)
            if free < size:
                continue
            if any(block.start < g.stop and g.start < block.stop for g in [*got, *avoid]):
                continue
            if any(p in CEPH_DEFAULT or p in MON_DEFAULT for p in (block.start, block.stop - 1)):
                continue
            got.append(block)
            break
        else:
            span = ", ".join(f"{r.start}-{r.stop - 1}" for r in stretches)
            raise PortTaken(f"no {size} free ports within {size * SPREAD} found on {LOOPBACK} in {span} after "
                            f"{tries} random tries: {holders_summary(stretches)}")
    return got


def _tcp_rows() -> list[list[str]]:
    rows = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        rows += [line.split() for line in lines if len(line.split()) >= 10]
    return rows


def _local_port(row: list[str]) -> int:
    try:
        return int(row[1].rsplit(":", 1)[1], 16)
    except (IndexError, ValueError):
        return -1


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def holder(port: int) -> str:
    """Who holds ``port`` as far as this node tells: "user alice (uid 1001), listening", or why not known."""
    for row in _tcp_rows():
        if _local_port(row) == port and row[3] == "0A":
            uid = int(row[7])
            who = "you (one of your own processes)" if uid == os.geteuid() else f"user {_user(uid)}"
            return f"{who}, listening"
    return "a socket bound without listening (whose owner /proc/net/tcp does not show)"


def holders_summary(stretches: list[range], limit: int = 3) -> str:
    """Which users listen on the most ports of ``stretches`` (a denial of many ports names its author)."""
    count: dict[int, int] = {}
    for row in _tcp_rows():
        p = _local_port(row)
        if row[3] == "0A" and any(p in r for r in stretches):
            count[int(row[7])] = count.get(int(row[7]), 0) + 1
    if not count:
        return "no process listens there: the ports are bound without listening, by someone /proc/net/tcp does not show"
    top = sorted(count.items(), key=lambda kv: -kv[1])[:limit]
    return "ports there are held by " + ", ".join(f"{_user(u)}: {n} listening" for u, n in top)


def listening_of(pid: int) -> set[int]:
    """The TCP ports on which process ``pid`` listens (its sockets' inodes matched in /proc/net/tcp)."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return {_local_port(row) for row in _tcp_rows() if row[3] == "0A" and row[9] in inodes}
