"""A private Ceph cluster in the workspace: 1 mon, 1 mgr, 1 mds and N BlueStore OSDs, CephFS on ceph-fuse.

Everything lives in one directory of the workspace, mode 0700: the configuration, the keys (0600),
the daemons' data (BlueStore on sparse files), their logs and admin sockets. Nothing goes to /etc or
/var, no systemd, no cephadm; it runs as the student. Each daemon and each ceph-fuse is a process
group of its own, registered with the session's guard, and each mount point too: a kernel killed
outright leaves nothing behind.

Isolation. The daemons listen on 127.0.0.1: the monitor on two ports and each OSD, the MDS and the mgr
in a small range of its own (``ms_bind_port_min``/``max``), all drawn at random where the node's ports
are free (:mod:`iolab.ceph.ports`), written only into the 0600 ceph.conf (never into an argv, which
every user can read), each daemon checked to listen where it was told before the next starts. Lesson 06's private network namespace
(:mod:`iolab.objectstore.netns`) does not fit here: ceph-fuse must mount in the node's mount
namespace, which a process inside an unprivileged user namespace cannot, and carrying every OSD
byte through the namespace's holder would put a Python copy in the data path being measured. What
keeps other users out instead is cephx: every cluster has its own keys, made at start, in files only
the owner can read; a client without the key is refused by the monitor (tests/test_ceph_live.py
checks it as another user). ceph-fuse mounts with ``fuse_allow_other=false`` (its default is true):
the kernel lets no other user, root's students included, into the mount.

A dead daemon. With one copy of each object, a read whose object sits on a dead OSD waits for that
OSD for ever (a client's OSD ops have no time limit by default, ``rados_osd_op_timeout = 0``, and one
would fail a slow write on a busy node as readily as a dead OSD's), and a dead MDS leaves every ``ls`` waiting, in the kernel's FUSE wait, where neither Jupyter's interrupt nor
SIGKILL reaches the reader. So while the cluster runs, a watch (a thread) looks at each daemon's
process every WATCH_INTERVAL s; when one has ended (or has been stopped, state T, for STOPPED_AFTER s:
a SIGSTOP answers nothing) it says which one, how and when (on stderr, which
Jupyter shows in the running cell, and as :attr:`Cluster.failure`, a :class:`DaemonDied`), and ends the
ceph-fuse clients (killed: the kernel then fails every request waiting on them, the reader gets an
error and the interrupt works again) and their mounts.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from .. import guard, runner
from .. import workspace as _workspace
from ..errors import IolabError, ToolFailed, ToolMissing
from ..service import Owned, Service
from ..units import format_size, parse_size
from . import ports as _ports
from .ports import PortTaken

TOOLS = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph", "ceph-authtool", "monmaptool",
         "rados", "osdmaptool")
HINT = ("the Ceph packages (Debian/Ubuntu, as root: apt-get install --no-install-recommends ceph-mon ceph-mgr "
        "ceph-osd ceph-mds ceph-fuse ceph-common attr; `make setup` does it)")

SUN_PATH_MAX = 107         # bytes of a unix socket's path (sockaddr_un.sun_path, NUL excluded)
try:
    _PID_MAX = int(Path("/proc/sys/kernel/pid_max").read_text())
except (OSError, ValueError):
    _PID_MAX = 4194304
_counter = 0
_counter_lock = threading.Lock()
WATCH_INTERVAL = 0.5       # seconds between two looks of the watch at the daemons' processes
MON_TRIES = 3              # monitors started on newly drawn ports when the drawn ones were taken meanwhile
SPAN = {"osd": 16, "mds": 8, "mgr": 8}   # ports of each daemon's range (an OSD binds 8, the MDS and mgr 2)


STOPPED_AFTER = 10.0       # seconds a daemon may be stopped (state T) before the watch treats it as dead


def _state(pid: int | None) -> str:
    """A process's state letter (R, S, D, T, Z...), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


class DaemonDied(IolabError):
    """A daemon of the cluster ended while the cluster ran; the message names it, how and when."""


def missing() -> list[str]:
    """The Ceph tools this machine lacks (empty when a cluster can start)."""
    return [t for t in TOOLS if runner.which(t) is None]


def _rss(pid: int | None) -> int:
    """Resident bytes of a process (0 when it is gone)."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def asok(path: str | os.PathLike[str], command: str, timeout: float = 20.0, **args: object) -> str:
    """Ask a daemon's admin socket (what ``ceph daemon <name> <command>`` does); its raw JSON answer."""
    request = json.dumps({"prefix": command, "format": "json", **args}).encode() + b"\0"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(os.fspath(path))
        s.sendall(request)
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                raise IolabError(f"{path}: the admin socket closed before answering {command!r}")
            head += chunk
        (n,) = struct.unpack(">I", head)
        body = bytearray()
        while len(body) < n:
            chunk = s.recv(min(1 << 20, n - len(body)))
            if not chunk:
                raise IolabError(f"{path}: the admin socket's answer to {command!r} was cut")
            body += chunk
    return body.decode()


class Cluster(Owned):
    """A private Ceph cluster with CephFS, owned by a context manager.

    ``osds`` OSDs of ``osd_size`` sparse bytes each with a fixed BlueStore cache of ``osd_cache``;
    ``reserve`` bytes are checked against the workspace's budget at start (the daemons' data and logs,
    which grow as the lesson writes). Attributes after start: ``dir``, ``conf``, ``keyring``,
    ``timings`` (seconds to each stage), ``mounts`` (name -> path).
    """

    def __init__(self, ws: _workspace.Workspace | None = None, *, osds: int = 3, osd_size: int | str = "4GiB",
                 osd_cache: int | str = "128MiB", reserve: int | str = "768MiB", pgs: int = 16):
        self.ws = ws if ws is not None else _workspace.session()
        self.n_osds = int(osds)
        self.osd_size = parse_size(osd_size)
        self.osd_cache = parse_size(osd_cache)
        self.reserve_bytes = parse_size(reserve)
        self.pgs = int(pgs)
        self.services: dict[str, Service] = {}
        self.fuse: dict[str, Service] = {}
        self.mounts: dict[str, Path] = {}
        self.timings: dict[str, float] = {}
        self.dir: Path | None = None
        self.conf: Path | None = None
        self.keyring: Path | None = None
        self.ports: tuple[int, int] | None = None
        self.ranges: dict[str, range] = {}       # daemon -> the ports it may bind (ms_bind_port_min..max)
        self.failure: DaemonDied | None = None   # set by the watch when a daemon has died
        self.deaths: list[str] = []              # what the watch said of each daemon that died
        self._t0 = 0.0
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._watch: threading.Thread | None = None

    # -- helpers -----------------------------------------------------------------------------------
    def _mark(self, stage: str) -> None:
        self.timings[stage] = round(time.monotonic() - self._t0, 2)

    def ceph(self, *args: str, timeout: float = 60, check: bool = True, tool: str = "ceph") -> runner.Run:
        """Run a Ceph command-line tool (``ceph``, ``rados``, ...) against this cluster: its Run."""
        assert self.conf is not None and self.keyring is not None
        argv = [tool, "-c", str(self.conf), "--keyring", str(self.keyring), "--id", "admin", *args]
        if tool == "ceph":
            argv[1:1] = ["--connect-timeout", "30"]
        return runner.run(argv, timeout=timeout, check=check)

    def status(self) -> dict:
        r = self.ceph("status", "--format", "json")
        try:
            data = json.loads(r.stdout)
        except ValueError as e:
            raise IolabError(f"ceph status answered no JSON: {r.stdout[:200]!r}") from e
        return data if isinstance(data, dict) else {}

    def socket_of(self, daemon: str) -> Path:
        """A daemon's admin socket; a client's (``client.admin.<pid>``) is ``c.<pid>.asok``, short, as a
        unix socket's path must fit in 107 bytes (a hub's workspace path is long)."""
        assert self.dir is not None
        if daemon.startswith("client."):
            return self.dir / "run" / f"c.{daemon.rsplit('.', 1)[-1]}.asok"
        return self.dir / "run" / f"{daemon}.asok"

    def daemon(self, daemon: str, command: str, **args: object) -> str:
        """A daemon's answer to an admin-socket command (``perf dump``, ``session ls``, ...), raw JSON."""
        return asok(self.socket_of(daemon), command, **args)

    def perf(self, daemon: str, logger: str | None = None) -> str:
        """``perf dump [logger]`` of a daemon (``osd.0``, ``mds.a``): its counters (of one section, e.g.
        ``osd``, ``mds_server``), raw JSON."""
        return self.daemon(daemon, "perf dump", **({"logger": logger} if logger else {}))

    @property
    def osd_names(self) -> list[str]:
        return [f"osd.{i}" for i in range(self.n_osds)]

    def memory(self) -> dict[str, int]:
        """Resident bytes of each daemon and ceph-fuse now."""
        out = {name: _rss(svc.pid) for name, svc in self.services.items()}
        out.update({f"ceph-fuse {name}": _rss(svc.pid) for name, svc in self.fuse.items()})
        return out

    # -- start ------------------------------------------------------------------------------------
    def _write_conf(self, d: Path, fsid: str, v2: int, v1: int) -> Path:
        """ceph.conf (0600): the one place that names the cluster's ports."""
        conf = d / "ceph.conf"
        log = d / "log"
        run = d / "run"
        text = f"""[global]
fsid = {fsid}
mon_host = [v2:127.0.0.1:{v2},v1:127.0.0.1:{v1}]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_ipv6 = false
ms_bind_retry_count = 1
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = {run}
admin_socket = {run}/$name.asok
pid_file = {run}/$name.pid
log_file = {log}/$name.log
mon_cluster_log_file = {log}/cluster.log
crash_dir = {d}/crash
log_max_recent = 200
osd_crush_chooseleaf_type = 0
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 5
mon_data_avail_crit = 2
osd_memory_target = 939524096
bluestore_cache_autotune = false
bluestore_cache_size = {self.osd_cache}
bluestore_block_size = {self.osd_size}
bluestore_block_create = true
osd_recovery_sleep_hdd = 0
mds_cache_memory_limit = 268435456
mgr_stats_period = 1
osd_mon_report_interval = 1
[mon]
mon_data = {d}/mon.$id
keyring = {d}/mon.keyring
[mgr]
mgr_data = {d}/mgr.$id
keyring = {d}/keyring.$name
[osd]
osd_data = {d}/$name
keyring = {d}/$name/keyring
osd_objectstore = bluestore
[mds]
mds_data = {d}/$name
keyring = {d}/keyring.$name
[client]
admin_socket = {run}/c.$pid.asok
log_file = /dev/null
[mon.a]
public_addrv = [v2:127.0.0.1:{v2},v1:127.0.0.1:{v1}]
"""
        for name, r in self.ranges.items():
            text += f"[{name}]\nms_bind_port_min = {r.start}\nms_bind_port_max = {r.stop - 1}\n"
        conf.write_text(text)
        os.chmod(conf, 0o600)
        return conf

    def _key(self, path: Path, name: str, *caps: str) -> None:
        runner.run(["ceph-authtool", "--create-keyring", str(path), "--gen-key", "-n", name, *caps], timeout=30)
        os.chmod(path, 0o600)

    def start(self) -> "Cluster":
        lacking = missing()
        if lacking:
            raise ToolMissing(lacking[0], HINT)
        global _counter
        with _counter_lock:
            _counter += 1
            n = _counter
        # every admin socket is a unix socket in d/run, whose path must fit in sun_path (107 bytes):
        # Ceph skips a socket it cannot bind, and the lesson's counters would be gone mid-lesson. The
        # session's workspace is this process's own, so the directory needs no pid in its name
        name = f"ceph-{n}"
        longest = len(os.fsencode(self.ws.root / name / "run" / f"c.{_PID_MAX}.asok"))
        if longest > SUN_PATH_MAX:
            raise IolabError(f"the workspace's path is too long for the cluster's admin sockets ({longest} > "
                             f"{SUN_PATH_MAX} bytes in {self.ws.root}): set IOLAB_WORKDIR to a shorter directory")
        self._t0 = time.monotonic()
        self.ws.reserve(self.reserve_bytes)
        d = self.ws.mkdir(name)
        os.chmod(d, 0o700)
        self.dir = d
        for sub in ("run", "log", "crash", "mon.a", "mgr.x", "mds.a", *self.osd_names):
            (d / sub).mkdir(mode=0o700, exist_ok=True)
        try:
            self._start(d)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, d: Path) -> None:
        fsid = str(uuid.uuid4())
        # every key made here, the monitor's keyring knows them all from its first start: no
        # `ceph auth add` round trips
        self.keyring = d / "keyring.client.admin"
        self._key(self.keyring, "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
                  "--cap", "mds", "allow *", "--cap", "mgr", "allow *")
        self._key(d / "keyring.mgr.x", "mgr.x", "--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *",
                  "--cap", "mds", "allow *")
        self._key(d / "keyring.mds.a", "mds.a", "--cap", "mon", "allow profile mds", "--cap", "osd", "allow rwx",
                  "--cap", "mds", "allow", "--cap", "mgr", "allow profile mds")
        for name in self.osd_names:
            self._key(d / name / "keyring", name, "--cap", "mon", "allow profile osd", "--cap", "osd", "allow *",
                      "--cap", "mgr", "allow profile osd")
        mon_keyring = d / "mon.keyring"
        self._key(mon_keyring, "mon.", "--cap", "mon", "allow *")
        for k in [self.keyring, d / "keyring.mgr.x", d / "keyring.mds.a", *(d / o / "keyring" for o in self.osd_names)]:
            runner.run(["ceph-authtool", str(mon_keyring), "--import-keyring", str(k)], timeout=30)
        names = ["mgr.x", "mds.a", *self.osd_names]
        self.ranges = dict(zip(names, _ports.draw([SPAN[n.split(".")[0]] for n in names])))
        self._start_mon(d, fsid, mon_keyring)
        self._daemon("mgr.x", ["ceph-mgr", "-f", "-c", str(self.conf), "-i", "x"])
        self._mark("monitor up")
        conf = self.conf
        # the OSDs: ids from the monitor, then their BlueStores made side by side
        osd_uuids = [str(uuid.uuid4()) for _ in self.osd_names]
        for i, u in enumerate(osd_uuids):
            got = self.ceph("osd", "new", u, str(i)).stdout.strip()
            if got != str(i):
                raise IolabError(f"ceph osd new gave id {got!r}, expected {i}")
        mkfs = [subprocess.Popen(["ceph-osd", "-c", str(conf), "-i", str(i), "--mkfs", "--osd-uuid", u],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                for i, u in enumerate(osd_uuids)]
        for i, p in enumerate(mkfs):
            out, _ = p.communicate(timeout=180)
            if p.returncode != 0:
                raise ToolFailed(p.args, p.returncode, out.decode(errors="replace")[-2000:],
                                 f"ceph-osd --mkfs of osd.{i} failed")
        self._mark("OSDs made")
        for i in range(self.n_osds):
            self._daemon(f"osd.{i}", ["ceph-osd", "-f", "-c", str(conf), "-i", str(i)])
        self._daemon("mds.a", ["ceph-mds", "-f", "-c", str(conf), "-i", "a"])
        self._mark("daemons started")
        self.ceph("osd", "pool", "create", "cephfs_metadata", "8")
        self.ceph("osd", "pool", "create", "cephfs_data", str(self.pgs))
        self.ceph("fs", "new", "cephfs", "cephfs_metadata", "cephfs_data")
        self._mark("file system made")
        self._wait_healthy()
        self._check_bound()
        self._mark("cluster healthy")
        if os.getuid() != 0:
            self._own_root()
        self._stopping.clear()
        self._watch = threading.Thread(target=self._watch_daemons, name=f"iolab ceph watch {d.name}", daemon=True)
        self._watch.start()

    def _start_mon(self, d: Path, fsid: str, mon_keyring: Path) -> None:
        """The monitor on two ports drawn at random, named only in ceph.conf (``ceph-mon --mkfs`` builds
        its first monmap from it: no monmaptool argv shows them); drawn again when another process took
        one between the draw and the monitor's bind (the monitor cannot skip a port as the others do)."""
        stolen: list[str] = []
        for _ in range(MON_TRIES):
            v2, v1 = (r.start for r in _ports.draw([1, 1], avoid=list(self.ranges.values())))
            self.ports = (v2, v1)
            self.conf = self._write_conf(d, fsid, v2, v1)
            shutil.rmtree(d / "mon.a", ignore_errors=True)
            (d / "mon.a").mkdir(mode=0o700)
            runner.run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--keyring", str(mon_keyring)],
                       timeout=60)
            self._mark("keys and monitor made")
            try:
                self._daemon("mon.a", ["ceph-mon", "-f", "-c", str(self.conf), "-i", "a"], listen=(v2, v1))
                return
            except PortTaken as e:
                stolen.append(str(e))
        raise PortTaken(f"the monitor could not listen on any of {MON_TRIES} pairs of ports drawn at random; "
                        "another process took each one before the monitor bound it: " + "; ".join(stolen))

    def _daemon(self, name: str, argv: list[str], listen: tuple[int, ...] = ()) -> None:
        """Start daemon ``name``; ready once its admin socket is there and, with ``listen``, it listens on
        all those ports (the others bind later, once they have met the monitor: :meth:`_check_bound`)."""
        sock = self.socket_of(name)
        svc: Service

        def ready() -> bool:
            if not sock.exists():
                return False
            return not listen or set(listen) <= _ports.listening_of(svc.pid)   # type: ignore[arg-type]

        svc = Service(f"ceph {name}", argv, log_path=self.dir / "log" / f"{name}.out",  # type: ignore[operator]
                      ready=ready, cwd=self.dir, start_timeout=90, stop_grace=10, umask=0o077)
        self.services[name] = svc
        try:
            svc.start()
        except ToolFailed as e:
            self._bind_failure(name, svc, e)
            raise

    def _bind_failure(self, name: str, svc: Service, cause: BaseException | None = None) -> None:
        """Raise PortTaken, saying which port and whose, if daemon ``name`` ended because it could not bind."""
        if "unable to bind" not in svc.log_tail(60):
            return
        self.services.pop(name, None)
        svc.stop()          # out of the cluster's services, so its stop() would not reach it: out of LIVE too
        span = self.ranges.get(name)
        if span is None:
            taken = [p for p in (self.ports or ()) if not _ports.is_free(p)] or list(self.ports or ())
            raise PortTaken(f"ceph {name} could not listen on 127.0.0.1:" + ", ".join(
                f"{p} (held by {_ports.holder(p)})" for p in taken)) from cause
        raise PortTaken(f"ceph {name} found no free port in its range 127.0.0.1:{span.start}-{span.stop - 1} "
                        f"(all free when drawn a moment before): {_ports.holders_summary([span])}") from cause

    def _check_bound(self) -> None:
        """Each daemon with a range listens in it (and nowhere else): what clients are told is theirs."""
        for name, span in self.ranges.items():
            svc = self.services.get(name)
            if svc is None:
                continue
            mine = _ports.listening_of(svc.pid)   # type: ignore[arg-type]
            if not mine or not mine <= set(span):
                raise IolabError(f"ceph {name} listens on {sorted(mine)}, not in its range {span.start}-{span.stop - 1}")

    def _wait_healthy(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        last: dict = {}
        while time.monotonic() < deadline:
            for name, svc in list(self.services.items()):
                if not svc.alive():
                    self._bind_failure(name, svc)
                    raise ToolFailed(svc.argv, svc.proc.returncode if svc.proc else None, svc.log_tail(),
                                     f"ceph {name} stopped while the cluster started")
            last = self.status()
            osdmap = last.get("osdmap", {})
            osdmap = osdmap.get("osdmap", osdmap)      # nested in some releases
            pgmap = last.get("pgmap", {})
            states = pgmap.get("pgs_by_state", [])
            clean = sum(s.get("count", 0) for s in states if s.get("state_name") == "active+clean")
            fsmap = last.get("fsmap", {})
            if (osdmap.get("num_up_osds") == self.n_osds and fsmap.get("up") == 1 and
                    any(s.get("status") == "up:active" for s in fsmap.get("by_rank", []))
                    and pgmap.get("num_pgs", 0) > 0 and clean == pgmap.get("num_pgs")):
                return
            time.sleep(0.5)
        raise IolabError(f"the Ceph cluster was not healthy within {timeout:.0f} s: "
                         f"{json.dumps(last.get('health', {}))[:600]}")

    # -- the watch ----------------------------------------------------------------------------------
    def _watch_daemons(self) -> None:
        told: set[int] = set()
        stopped_since: dict[int, float] = {}
        while not self._stopping.wait(WATCH_INTERVAL):
            for name, svc in list(self.services.items()):
                if svc.pid in told or self._stopping.is_set():
                    continue
                if not svc.alive():
                    told.add(svc.pid)   # type: ignore[arg-type]
                    self._died(name, svc)
                elif _state(svc.pid) == "T":          # stopped (SIGSTOP): it answers nothing until continued
                    since = stopped_since.setdefault(svc.pid, time.monotonic())   # type: ignore[arg-type]
                    if time.monotonic() - since >= STOPPED_AFTER:
                        told.add(svc.pid)   # type: ignore[arg-type]
                        self._died(name, svc, stopped=time.monotonic() - since)
                else:
                    stopped_since.pop(svc.pid, None)   # type: ignore[arg-type]
            if self.failure is not None:
                return

    def _died(self, name: str, svc: Service, stopped: float | None = None) -> None:
        """Daemon ``name`` has ended (or has been stopped for ``stopped`` s): say so, and end the clients
        that would wait for it for ever."""
        rc = svc.proc.returncode if svc.proc is not None else None
        if stopped is not None:
            how = f"stopped, state T, for {stopped:.0f} s: a SIGSTOP, and nothing it serves is answered until a SIGCONT"
        elif rc is not None and rc < 0:
            try:
                how = f"killed by {signal.Signals(-rc).name}"
            except ValueError:
                how = f"killed by signal {-rc}"
        else:
            how = f"exit status {rc}"
        last = [ln for ln in svc.log_tail(5).splitlines() if ln.strip()] if rc is not None and rc > 0 else []
        kind = name.split(".")[0]
        why = {"osd": "the objects it holds cannot be read or written (the lesson's pools keep one copy of each)",
               "mds": "no metadata server is left to answer an ls, open or stat in the mounts",
               "mon": "no client can reach the cluster without its monitor",
               "rgw": "the cluster's S3 endpoint is gone"}.get(kind)
        ends = kind in ("osd", "mds", "mon") and bool(self.fuse)
        msg = (f"ceph {name} (pid {svc.pid}) of the cluster in {self.dir} "
               f"{'has not run since' if stopped is not None else 'ended at'} "
               f"{time.strftime('%H:%M:%S', time.localtime(time.time() - (stopped or 0)))} "
               f"({how}{'; its last words: ' + last[-1][-200:] if last else ''})")
        if why:
            msg += f": {why}"
        if ends:
            names = [f"node-{n}" for n in sorted(self.fuse)]
            one = len(names) == 1
            msg += (f"; so {'the mount ' + names[0] + ' was' if one else 'the mounts ' + ', '.join(names) + ' were'}"
                    f" ended (ceph-fuse killed), and what waited on {'it' if one else 'them'} gets an error instead "
                    "of waiting for ever")
        if kind in ("osd", "mds", "mon"):
            msg += ". Stop this cluster and start a new one (the lesson's start(), or Cluster.start)."
            if self.failure is None:    # the first death is what ended the mounts; later ones follow from it
                self.failure = DaemonDied(msg)
        else:
            msg += "; the file system goes on without it."
        self.deaths.append(msg)
        try:
            sys.stderr.write(f"iolab: {msg}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        if ends:
            with self._lock:
                for n, fuse in list(self.fuse.items()):
                    if fuse.alive():
                        try:
                            os.killpg(fuse.pid, signal.SIGKILL)   # type: ignore[arg-type]
                        except OSError:
                            pass
                for n, fuse in list(self.fuse.items()):
                    mnt = self.mounts.get(n)
                    if mnt is not None:          # its daemon given: dead, so nothing is left to abort
                        guard.release_mount(mnt, daemons=(fuse.pid,), grace=0.5)   # type: ignore[arg-type]
                    self._unmount(n)

    def raise_failure(self) -> None:
        """Raise :attr:`failure` (a DaemonDied naming the daemon) if a daemon of the cluster has died."""
        if self.failure is not None:
            raise self.failure

    def _own_root(self) -> None:
        """The MDS makes the file system's root owned by root: give it to the student (through
        libcephfs, the one client that may, with the admin key)."""
        py = shutil.which("python3", path="/usr/bin:/bin")
        if py is None:
            return
        code = ("import cephfs,sys,os\n"
                "fs=cephfs.LibCephFS(conffile=sys.argv[1]); fs.conf_set('keyring', sys.argv[2])\n"
                "fs.conf_set('client_mount_uid', '0'); fs.conf_set('client_mount_gid', '0')\n"
                "fs.conf_set('client_permissions', 'false')\n"
                "fs.mount(); fs.chown('/', os.getuid(), os.getgid()); fs.unmount(); fs.shutdown()\n")
        runner.run([py, "-c", code, str(self.conf), str(self.keyring)], timeout=60)

    def add_data_pool(self, name: str, *, size: int = 3, pgs: int = 16) -> None:
        """A second data pool of ``size`` replicas in the file system (a directory uses it through
        its layout: ``setfattr -n ceph.dir.layout.pool -v NAME DIR``); waits until it is clean."""
        self.ceph("osd", "pool", "create", name, str(pgs))
        self.ceph("osd", "pool", "set", name, "size", str(size), "--yes-i-really-mean-it")
        self.ceph("fs", "add_data_pool", "cephfs", name)
        self._wait_healthy()

    # -- clients ----------------------------------------------------------------------------------
    def mount(self, name: str = "a", *, options: dict[str, str] | None = None) -> Path:
        """Mount CephFS with ceph-fuse at ``<cluster dir>/../node-<name>`` (a client of its own); its path."""
        assert self.dir is not None and self.conf is not None
        self.raise_failure()
        if name in self.mounts:
            return self.mounts[name]
        t = time.monotonic()
        mnt = self.ws.mkdir(f"{self.dir.name}-node-{name}")
        argv = ["ceph-fuse", "-f", "-c", str(self.conf), "--id", "admin", "--keyring", str(self.keyring),
                "--log-file", str(self.dir / "log" / f"client.node-{name}.log"),
                "--fuse_allow_other=false"]     # no other user enters the mount (root's own included: its default is true)
        for k, v in (options or {}).items():
            argv.append(f"--{k}={v}")
        argv.append(str(mnt))
        guard.ensure()
        guard.watch_mount(mnt)
        svc = Service(f"ceph-fuse node-{name}", argv, log_path=self.dir / "log" / f"fuse-{name}.out",
                      ready=lambda: guard.mounted(mnt), cwd=self.dir, start_timeout=60, stop_grace=10, umask=0o077)
        self.fuse[name] = svc
        try:
            svc.start()
        except BaseException:
            self.fuse.pop(name, None)
            guard.forget_mount(mnt)
            raise
        self.mounts[name] = mnt
        self.timings[f"mount node-{name}"] = round(time.monotonic() - t, 2)
        return mnt

    def check_mounted(self, name: str = "a") -> Path:
        """The mount point of ``name``, after checking it is CephFS still (a failed remount would let a
        measurement write to the empty directory below)."""
        self.raise_failure()
        mnt = self.mounts.get(name)
        if mnt is None or not guard.mounted(mnt):
            raise IolabError(f"node-{name} is not mounted: a measurement there would not be on CephFS")
        return mnt

    def unmount(self, name: str = "a") -> None:
        with self._lock:
            self._unmount(name)

    def _unmount(self, name: str) -> None:
        mnt = self.mounts.pop(name, None)
        svc = self.fuse.pop(name, None)
        if mnt is not None:
            guard.unmount(mnt)
        if svc is not None:
            deadline = time.monotonic() + 15
            while svc.alive() and time.monotonic() < deadline:   # it exits by itself once unmounted
                time.sleep(0.05)
            svc.stop()
        if mnt is not None:
            if not guard.mounted(mnt):
                guard.forget_mount(mnt)
                try:
                    mnt.rmdir()
                except OSError:
                    pass

    def remount(self, name: str = "a", **kw: object) -> Path:
        """Unmount and mount again: a client with empty caches."""
        self.unmount(name)
        return self.mount(name, **kw)  # type: ignore[arg-type]

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Unmount every client, stop every daemon (MDS first, monitor last), remove the directory."""
        t = time.monotonic()
        self._stopping.set()                  # the watch: the daemons end now because they are told to
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(timeout=30)
        for name in list(self.fuse):
            self.unmount(name)
        self.timings["teardown: unmounted"] = round(time.monotonic() - t, 2)
        order = [*(n for n in self.services if n.startswith("rgw.")), "mds.a", *self.osd_names, "mgr.x", "mon.a"]
        for name in order:                     # all at once: each stop below then waits for one already ending
            svc = self.services.get(name)
            if svc is not None and svc.alive():
                try:
                    os.killpg(svc.pid, signal.SIGTERM)   # type: ignore[arg-type]
                except OSError:
                    pass
        for name in order + [n for n in self.services if n not in order]:
            svc = self.services.pop(name, None)
            if svc is not None:
                svc.stop()
        self.timings["teardown: daemons stopped"] = round(time.monotonic() - t, 2)
        if self.dir is not None and self.dir.exists():
            self.ws.remove(self.dir)
        self.timings["teardown"] = round(time.monotonic() - t, 2)

    def leftovers(self) -> list[str]:
        """What of this cluster is still there: processes, mounts, its directory."""
        left = [repr(s) for s in [*self.services.values(), *self.fuse.values()] if s.alive()]
        left += [str(m) for m in self.mounts.values() if guard.mounted(m)]
        if self.dir is not None and self.dir.exists():
            left.append(str(self.dir))
        return left

    def describe(self) -> str:
        mem = self.memory()
        total = sum(mem.values())
        parts = ", ".join(f"{k} {format_size(v)}" for k, v in mem.items())
        return (f"Ceph cluster: {self.n_osds} OSDs, started in {self.timings.get('cluster healthy', float('nan')):.1f} s; "
                f"resident memory {format_size(total)} ({parts})")

    def running(self) -> bool:
        """Started: its directory is made (``with`` starts it otherwise, :class:`iolab.service.Owned`)."""
        return self.dir is not None

    def __repr__(self) -> str:
        return f"Cluster({str(self.dir)!r}, osds={self.n_osds}, mounts={sorted(self.mounts)})"
