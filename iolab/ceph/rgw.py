"""A RADOS Gateway (Ceph's S3 endpoint) on lesson 08's private cluster, as the student.

    with Cluster(ws) as c, Gateway(c) as gw:      # ToolMissing without radosgw
        ep = gw.endpoint                          # an iolab.objectstore Endpoint: boto3, fsspec, s3fs-fuse
        ep.filesystem().pipe("course/x", b"...")
        gw.placement("course", "x")               # the RADOS objects behind one S3 object, raw outputs
        gw.counters()                             # its requests and bytes served (rgw.get_b, rgw.put_b, ...)

    with rgw.store(ws) as ep:                     # a cluster without mounts, and its gateway (lesson 09)
        ...

The gateway is ``radosgw`` with the beast frontend on 127.0.0.1 and one port drawn like the cluster's
(:mod:`iolab.ceph.ports`), named only in the cluster's 0600 ceph.conf (section ``[client.rgw.a]``), its
key made for it, its data, log and admin socket in the cluster's directory. Its first start creates
the zone's pools (``.rgw.root``, ``default.rgw.log``, ``.control``, ``.meta``, ``.buckets.index``, then
``.buckets.data`` at the first PUT): their placement groups are lowered first (``osd_pool_default_pg_num``,
set in the monitor's configuration), or six pools of 32 would outnumber the lesson's. Its S3 user's keys
are made by ``radosgw-admin`` (never in an argv) and kept in memory and in 0600 files only. Anyone on
the node can reach the port; only these keys open a bucket (buckets are private by default).

It is one of the cluster's daemons (``cluster.services["rgw.a"]``): the cluster's watch names it if it
dies, and the cluster's stop stops it first.
"""
from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator

from .. import runner
from .. import workspace as _workspace
from ..errors import IolabError, ToolFailed, ToolMissing
from ..service import Owned, Service, http_ok
from ..objectstore.endpoint import Endpoint, write_secret_file
from ..tools import ceph as cephtools
from . import ports as _ports
from .cluster import Cluster

NAME = "rgw.a"                       # in cluster.services; its Ceph name is client.rgw.a
HINT = "the radosgw package (Debian/Ubuntu, as root: apt-get install --no-install-recommends radosgw; `make setup` does it)"
PGS = 8                              # placement groups of each pool the gateway creates
DATA_POOL = "default.rgw.buckets.data"
INDEX_POOL = "default.rgw.buckets.index"
USER = "student"


def missing() -> list[str]:
    return [t for t in ("radosgw", "radosgw-admin") if runner.which(t) is None]


class Gateway(Owned):
    """A RADOS Gateway on ``cluster``, a context manager; ``endpoint`` once started, ``timings``."""

    def __init__(self, cluster: Cluster, *, pgs: int = PGS):
        self.cluster = cluster
        self.pgs = int(pgs)
        self.port: int | None = None
        self.endpoint: Endpoint | None = None
        self.timings: dict[str, float] = {}
        self.version = ""

    @property
    def service(self) -> Service | None:
        return self.cluster.services.get(NAME)

    def admin(self, *args: str, timeout: float = 60, check: bool = True) -> runner.Run:
        """``radosgw-admin`` on this cluster, as client.admin."""
        c = self.cluster
        return runner.run(["radosgw-admin", "-c", str(c.conf), "--keyring", str(c.keyring), "--id", "admin", *args],
                          timeout=timeout, check=check)

    def start(self) -> "Gateway":
        lacking = missing()
        if lacking:
            raise ToolMissing(lacking[0], HINT)
        c = self.cluster
        c.raise_failure()
        assert c.dir is not None and c.conf is not None
        t0 = time.monotonic()
        try:
            self._start(c, t0)
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self, c: Cluster, t0: float) -> None:
        assert c.dir is not None and c.conf is not None
        for opt in ("osd_pool_default_pg_num", "osd_pool_default_pgp_num"):
            c.ceph("config", "set", "global", opt, str(self.pgs))
        keyring = c.dir / "keyring.client.rgw.a"
        r = c.ceph("auth", "get-or-create", "client.rgw.a", "mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw")
        write_secret_file(keyring, r.stdout)
        self.port = _ports.draw([1], avoid=[*c.ranges.values(), *(range(p, p + 1) for p in c.ports or ())])[0].start
        (c.dir / "rgw.a").mkdir(mode=0o700, exist_ok=True)
        text = c.conf.read_text()
        if "[client.rgw.a]" in text:          # a gateway started before on this cluster: its section replaced
            head, _, rest = text.partition("[client.rgw.a]")
            nxt = rest.find("\n[")
            text = head + (rest[nxt + 1:] if nxt >= 0 else "")
            c.conf.write_text(text)
        with open(c.conf, "a") as f:          # the conf is the cluster's, 0600 already
            f.write(f"[client.rgw.a]\nkeyring = {keyring}\nrgw_frontends = beast endpoint=127.0.0.1:{self.port}\n"
                    f"rgw_data = {c.dir / 'rgw.a'}\nlog_file = {c.dir / 'log' / 'rgw.a.log'}\n"
                    f"admin_socket = {c.socket_of(NAME)}\nrgw_enable_usage_log = false\n"
                    "rgw_thread_pool_size = 32\nrgw_init_timeout = 90\n")
        self.timings["key and configuration"] = round(time.monotonic() - t0, 2)
        url = f"http://127.0.0.1:{self.port}"
        svc: Service

        def ready() -> bool:
            return self.port in _ports.listening_of(svc.pid) and http_ok(url)   # type: ignore[arg-type]

        svc = Service("ceph rgw.a", ["radosgw", "-f", "-c", str(c.conf), "-n", "client.rgw.a"],
                      log_path=c.dir / "log" / "rgw.a.out", ready=ready, cwd=c.dir, start_timeout=120,
                      stop_grace=5, umask=0o077)
        c.services[NAME] = svc
        try:
            svc.start()
        except ToolFailed as e:
            if "bind" in svc.log_tail(60):
                c.services.pop(NAME, None)
                raise _ports.PortTaken(f"the RADOS Gateway could not listen on 127.0.0.1:{self.port} "
                                       f"(held by {_ports.holder(self.port)})") from e
            raise
        self.timings["HTTP answers"] = round(time.monotonic() - t0, 2)
        made = self.admin("user", "info", f"--uid={USER}", check=False)     # there from a gateway before
        if made.returncode != 0:
            made = self.admin("user", "create", f"--uid={USER}", f"--display-name={USER}")
        try:
            key = json.loads(made.stdout)["keys"][0]
            access, secret = str(key["access_key"]), str(key["secret_key"])
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise IolabError("radosgw-admin user create gave no key (its output is not shown: it holds the "
                             "secret)") from e
        self.version = (runner.tool_version("radosgw") or "").replace("ceph version ", "").split(" (")[0]
        self.endpoint = Endpoint("s3", url, access, secret,
                                 server=f"Ceph RADOS Gateway {self.version} (lesson 08's private cluster)".replace("  ", " "))
        self.timings["user made"] = round(time.monotonic() - t0, 2)

    def stop(self) -> None:
        self.endpoint = None
        svc = self.cluster.services.pop(NAME, None)
        if svc is not None:
            svc.stop()

    def counters(self) -> dict[str, float]:
        """The gateway's own counters (``perf dump`` of its admin socket, logger ``rgw``): requests and bytes
        served, ``rgw.req``, ``rgw.get``, ``rgw.get_b``, ``rgw.put``, ``rgw.put_b``, ... (what lesson 09 reads
        from SeaweedFS's metrics, here from the gateway)."""
        return cephtools.parse_perf(self.cluster.perf(NAME, "rgw"))

    def memory(self) -> int:
        """Resident bytes of radosgw now (0 when it is not running)."""
        return self.cluster.memory().get(NAME, 0)

    # -- where one S3 object lives ------------------------------------------------------------------
    def placement(self, bucket: str, key: str) -> dict:
        """The raw outputs that say where ``bucket/key`` is in RADOS: radosgw-admin's bucket stats and
        object stat (the manifest), ``rados ls`` of the data and index pools, ``rados stat`` and ``ceph osd
        map`` of each of the object's RADOS objects, and ``listomapkeys`` of each index shard."""
        c = self.cluster
        raw: dict = {"bucket": bucket, "key": key,
                     "bucket_stats": self.admin("bucket", "stats", f"--bucket={bucket}").stdout,
                     "object_stat": self.admin("object", "stat", f"--bucket={bucket}", f"--object={key}").stdout,
                     "data_ls": c.ceph("-p", DATA_POOL, "ls", tool="rados").stdout,
                     "index_ls": c.ceph("-p", INDEX_POOL, "ls", tool="rados").stdout}
        marker = json.loads(raw["bucket_stats"])["marker"]
        objs = [o for o in raw["data_ls"].splitlines() if o.startswith(marker + "_")]
        raw["stat"] = {o: c.ceph("-p", DATA_POOL, "stat", o, tool="rados").stdout for o in objs}
        raw["osd_map"] = {o: c.ceph("osd", "map", DATA_POOL, o, "--format", "json").stdout for o in objs}
        shards = [o for o in raw["index_ls"].splitlines() if o.startswith(f".dir.{marker}")]
        raw["omap"] = {o: c.ceph("-p", INDEX_POOL, "listomapkeys", o, tool="rados").stdout for o in shards}
        raw["index_osd_map"] = {o: c.ceph("osd", "map", INDEX_POOL, o, "--format", "json").stdout for o in shards}
        return raw

    def running(self) -> bool:
        """Started: it has its endpoint (``with`` starts it otherwise, :class:`iolab.service.Owned`)."""
        return self.endpoint is not None


@contextlib.contextmanager
def store(ws: _workspace.Workspace | None = None, **kw: object) -> Iterator[Endpoint]:
    """A private Ceph cluster (no CephFS mount) and its RADOS Gateway, for a lesson that wants the
    cluster's object store (lesson 09's workflow: ``with rgw.store(ws) as ep: ...``); its Endpoint."""
    with Cluster(ws, **kw) as c, Gateway(c) as gw:      # type: ignore[arg-type]
        assert gw.endpoint is not None
        yield gw.endpoint
