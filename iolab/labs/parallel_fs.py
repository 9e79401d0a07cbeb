"""Lesson 08: a real parallel file system (CephFS) on one machine, witnessed by the cluster's counters.

Each section has one function that runs its experiment on a live :class:`iolab.ceph.Cluster` (or
replays its recording, ``data/recorded/ceph/<name>.json``, when there is no cluster) and returns a
:class:`Section` (an :class:`~iolab.recordings.Outcome`) whose ``frame`` is the section's table and ``claims``
its sentences. A live run's raw outputs (getfattr, rados ls, osdmaptool, the daemons' ``perf dump``) are
kept verbatim in one JSON document per section, beside the times measured here; the same parser
reads it live and replayed.

Every comparison is a few interleaved trials (A, B, A, B, ...), kept as :class:`iolab.trials.Trials`
(``outcome.trials``, drawn by :func:`iolab.plot.trials`) and called by the course's one rule,
:func:`iolab.explain.beyond`: a side wins only when its worst trial beats the other's best; otherwise
"Too close to call here", with both spreads.
"""
from __future__ import annotations

import functools
import glob
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import explain, fsinfo, mpi, pagecache, recordings, runner, safeio, trials, workspace
from ..ceph import TOOLS, Cluster, missing
from ..ceph.cluster import HINT
from ..errors import IolabError, ParseError
from ..objectstore.mounts import fuse_problem
from ..tools import ceph as cephtools
from ..tools import ior
from ..units import MiB, format_size

TRIALS = 3
FILE_SIZE = 16 * MiB                    # section 1: one file per layout
CACHE_FILE = 64 * MiB                   # section 2: below ceph-fuse's object cache (client_oc_size, 200 MiB)
N_FILES = 100                           # section 3: creates and stats per trial
LAYOUTS = {                             # section 1: the directory layouts compared
    "default": None,
    "4-stripes": {"stripe_unit": MiB, "stripe_count": 4, "object_size": 4 * MiB},
    "1MiB-objects": {"stripe_unit": MiB, "stripe_count": 1, "object_size": MiB},
}
OSD_W, OSD_R = "osd.op_w_in_bytes", "osd.op_r_out_bytes"


# --- the cluster ------------------------------------------------------------------------------------

NO_CLUSTER = "no cluster was started (parallel_fs.start() was not called, or failed)"


def _fuse_problem() -> str | None:
    problem = fuse_problem()
    return f"ceph-fuse cannot mount: {problem}" if problem else None


def why_not_live() -> str:
    """Why this lesson cannot run live here ("" when it can): IOLAB_MODE=replay, a Ceph package
    missing, or FUSE unusable for this user (ceph-fuse needs /dev/fuse). The one decision,
    :func:`iolab.recordings.replay_reason`, asked without raising."""
    return recordings.replay_reason(TOOLS, _fuse_problem, strict=False) or ""


def start(ws: workspace.Workspace | None = None, **kw: Any) -> Cluster | None:
    """The lesson's cluster, mounted at node A and node B; None (and why, printed) when the lesson
    replays: IOLAB_MODE=replay, the Ceph packages missing, or /dev/fuse unusable. With IOLAB_MODE=live
    those raise instead (ToolMissing, or CannotRunHere for FUSE)."""
    reason = recordings.replay_reason(TOOLS, _fuse_problem)
    if reason:
        print(f"{reason}: no cluster started; every section replays its recording"
              + (f". To run it live: {HINT}" if missing() else ""))
        return None
    c = Cluster(ws, **kw).start()
    try:
        c.mount("a")
        c.mount("b")
    except BaseException:
        c.stop()
        raise
    t = c.timings
    print(f"A private Ceph cluster is up in {c.dir}: {c.n_osds} OSDs, monitor on 127.0.0.1:{c.ports[0]}; "
          f"healthy after {t['cluster healthy']:.1f} s, mounted at node A and node B after "
          f"{t['cluster healthy'] + t['mount node-a'] + t['mount node-b']:.1f} s")
    print(c.describe())
    return c


@dataclass
class Section(recordings.Outcome):
    """One section of the lesson, run on the cluster or replayed: ``frame`` its table, ``claims`` its
    sentences, ``trials`` the trials each comparison called, by name (for :func:`iolab.plot.trials`)."""

    claims: list[explain.Claim] = field(default_factory=list)
    trials: dict[str, trials.Trials] = field(default_factory=dict)


def _section(cluster: Cluster | None, name: str, fn: Callable[[Cluster], dict], parse: Callable[[str], Any],
             claims: Callable[..., list[explain.Claim]], *, show: bool = True,
             requires: Sequence[str] = (), unavailable: str | Callable[[], str | None] | None = None,
             witness: bool = False, frame: Callable[[Any], pd.DataFrame] | None = None,
             cls: type[Section] = Section) -> Section:
    """Section ``name``: ``fn`` live on ``cluster`` (``witness``: under the kernel's Witness of the disk
    below the OSDs' files), else its recording ``ceph/<name>``, with why, through the one door
    (:func:`iolab.recordings.live_or_recorded`); ``requires`` and ``unavailable``: what the section needs
    beyond the cluster. ``claims(data, keep=, show=)``: its sentences, its trials kept in ``.trials``."""
    if cluster is None:         # why no cluster was started (not a tool name that may well be installed)
        requires, unavailable = TOOLS, lambda: _fuse_problem() or NO_CLUSTER
    out = recordings.live_or_recorded(lambda: json.dumps(fn(cluster), indent=1) + "\n", f"ceph/{name}",
                                      requires=requires, unavailable=unavailable, parse=parse, frame=frame, cls=cls,
                                      witness_path=cluster.dir if witness and cluster is not None else None)
    if witness and cluster is None:          # the recording's witness all the same
        out.witness, out.witness_note = out.recording.witness(), out.recording.witness_note
    out.claims = claims(out.data, keep=out.trials, show=show)
    return out


# --- small measuring helpers ------------------------------------------------------------------------

_BLOCK = os.urandom(MiB)


def _write(path: Path, nbytes: int, bs: int = MiB, *, fsync: bool = True, data: bytes | None = None) -> float:
    """Write nbytes (``data``, or one random MiB over and over) to path; the seconds it took."""
    workspace.reserve_for(path, nbytes)
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for off in range(0, nbytes, bs):
            k = min(bs, nbytes - off)
            os.write(fd, data[off:off + k] if data is not None else _BLOCK[:k])
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t


def _read(path: Path, bs: int = MiB) -> tuple[float, int]:
    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(bs):
            n += len(chunk)
    return time.perf_counter() - t, n


def _osds(c: Cluster) -> dict[str, str]:
    return {name: c.perf(name, "osd") for name in c.osd_names}


def _osd_delta(before: dict[str, str], after: dict[str, str], key: str) -> dict[str, float]:
    return {name: cephtools.parse_perf(after[name]).get(key, 0) - cephtools.parse_perf(before[name]).get(key, 0)
            for name in before}


def trials_claim(predicted: str, a: str, a_trials: list[float], b: str, b_trials: list[float], unit: str,
                 *, higher: bool = True, keep: dict[str, trials.Trials] | None = None, key: str = "",
                 show: bool = True) -> explain.Claim:
    """``a`` beats ``b`` by the course's one rule (:func:`iolab.explain.beyond`: a's worst trial beats
    b's best), else "Too close to call here"; ``higher``: a larger value is better. The trials go into
    ``keep[key]`` (for :func:`iolab.plot.trials`)."""
    t = trials.from_values({a: a_trials, b: b_trials}, unit=unit, higher=higher)
    claim = t.expect(predicted, a, b,
                     why="the machine's load moves every figure here (all daemons share its cores and one disk)",
                     close="the machine's load moves every figure here (all daemons share its cores and one "
                           "disk); " + explain.SEPARATE, show=show)
    if keep is not None:
        keep[key or predicted] = t
    return claim


def _spread(values: list[float], fmt: str = ",.0f") -> str:
    """``lowest–highest (median m)`` of a few trials."""
    v = sorted(float(x) for x in values)
    return f"{v[0]:{fmt}}–{v[-1]:{fmt}} (median {v[len(v) // 2]:{fmt}})"


# --- 1. where a file's bytes live -------------------------------------------------------------------

def _layouts_live(c: Cluster) -> dict:
    root = c.check_mounted("a")
    base = root / "layouts"
    base.mkdir(exist_ok=True)
    raw: dict[str, Any] = {"files": {}}
    for name, layout in LAYOUTS.items():
        d = base / name
        d.mkdir(exist_ok=True)
        if layout:
            value = " ".join(f"{k}={v}" for k, v in layout.items())
            runner.run(["setfattr", "-n", "ceph.dir.layout", "-v", value, str(d)], timeout=30)
        f = d / "file"
        before = _osds(c)
        seconds = _write(f, FILE_SIZE, data=os.urandom(FILE_SIZE))   # every MiB different: bytes can be traced
        after = _osds(c)
        getfattr = runner.run(["getfattr", "-n", "ceph.file.layout", str(f)], timeout=30).stdout
        raw["files"][name] = {"ino": os.stat(f).st_ino, "size": FILE_SIZE, "write_seconds": seconds,
                              "getfattr": getfattr, "perf_before": before, "perf_after": after}
    raw["rados_ls"] = c.ceph("-p", "cephfs_data", "ls", tool="rados").stdout
    mapfile = c.dir / "osdmap"
    c.ceph("osd", "getmap", "-o", str(mapfile))
    dump = runner.run(["osdmaptool", str(mapfile), "--dump", "json"], timeout=30).stdout
    pool = next(p["pool"] for p in json.loads(dump[dump.index("{"):])["pools"] if p["pool_name"] == "cephfs_data")
    inos = {v["ino"] for v in raw["files"].values()}
    raw["placement"] = {}
    for obj in cephtools.parse_rados_ls(raw["rados_ls"]):
        if obj["ino"] in inos:
            raw["placement"][obj["object"]] = runner.run(
                ["osdmaptool", str(mapfile), "--test-map-object", obj["object"], "--pool", str(pool)], timeout=30).stdout
    # round robin on the bytes: object 1 of the 4-stripe file holds file bytes 1-2, 5-6, 9-10 and 13-14 MiB
    f4 = raw["files"]["4-stripes"]
    obj1 = c.dir / "object1"
    c.ceph("-p", "cephfs_data", "get", f"{f4['ino']:x}.00000001", str(obj1), tool="rados")
    data = (base / "4-stripes" / "file").read_bytes()
    got = obj1.read_bytes()
    obj1.unlink()
    every_4th = b"".join(data[m * MiB:(m + 1) * MiB] for m in range(1, FILE_SIZE // MiB, 4))
    raw["round_robin"] = {"object": f"{f4['ino']:x}.00000001", "object_bytes": len(got),
                          "equals_file_MiB_1_5_9_13": got == every_4th,
                          "equals_file_MiB_4_to_8": got == data[4 * MiB:8 * MiB]}
    return raw


def parse_layouts(text: str) -> dict:
    """The recorded document of section 1 -> its tables (through the tool parsers)."""
    doc = json.loads(text)
    files, rows, per_osd = [], [], []
    placement = {o: cephtools.parse_osdmap_object(t) for o, t in doc["placement"].items()}
    objects = cephtools.parse_rados_ls(doc["rados_ls"])
    for name, f in doc["files"].items():
        layout = cephtools.parse_layout(f["getfattr"])
        mine = [o for o in objects if o["ino"] == f["ino"]]
        written = _osd_delta(f["perf_before"], f["perf_after"], OSD_W)
        expected: dict[str, int] = {}
        for o in mine:
            p = placement[o["object"]]
            rows.append({"layout": name, "object": o["object"], "index": o["index"], "primary": f"osd.{p['primary']}",
                         "pg": p["pg"]})
            expected[f"osd.{p['primary']}"] = expected.get(f"osd.{p['primary']}", 0) + layout["object_size"]
        for osd, n in written.items():
            per_osd.append({"layout": name, "osd": osd, "bytes_written": n})
        files.append({"layout": name, "stripe_unit": layout["stripe_unit"], "stripe_count": layout["stripe_count"],
                      "object_size": layout["object_size"], "size": f["size"], "objects": len(mine),
                      "predicted_objects": -(-f["size"] // layout["object_size"]),
                      "osds_used": len({placement[o["object"]]["primary"] for o in mine}),
                      "mb_per_s": f["size"] / f["write_seconds"] / 1e6,
                      "expected_per_osd": expected})
    return {"files": pd.DataFrame(files), "objects": pd.DataFrame(rows), "per_osd": pd.DataFrame(per_osd),
            "round_robin": doc["round_robin"]}


@dataclass
class Layouts(Section):
    """Section 1: ``frame`` one row per file (its layout, objects, OSDs used), ``objects`` one row per
    RADOS object (its primary OSD), ``per_osd`` the bytes each OSD counted per file, ``round_robin``
    what object 1 of the 4-stripe file held."""

    objects: pd.DataFrame | None = None
    per_osd: pd.DataFrame | None = None
    round_robin: dict[str, Any] = field(default_factory=dict)


def where_bytes_live(cluster: Cluster | None = None, *, show: bool = True) -> Layouts:
    """Three files in directories of three layouts: their objects, the OSDs that hold them, and each
    OSD's own count of the bytes it took."""
    out = _section(cluster, "layouts", _layouts_live, parse_layouts, layouts_claims, show=show, cls=Layouts,
                   frame=lambda data: data["files"].drop(columns=["expected_per_osd"]))
    out.objects, out.per_osd, out.round_robin = out.data["objects"], out.data["per_osd"], out.data["round_robin"]
    return out


def layouts_claims(data: dict, *, keep: dict[str, trials.Trials] | None = None, show: bool = True) -> list[explain.Claim]:
    """Section 1's sentences (``data``: :func:`parse_layouts`'s tables; no comparison of trials)."""
    files, per_osd = data["files"], data["per_osd"]
    claims = []
    for _, f in files.iterrows():
        claims.append(explain.expect(
            f"the {f['layout']} layout cuts the {format_size(f['size'])} file into size / object size = "
            f"{f['predicted_objects']} objects",
            explain.within("objects in rados ls", f["objects"], "predicted", f["predicted_objects"], rel=0),
            yes=f"rados ls lists {f['objects']}, on {f['osds_used']} of the OSDs",
            no=f"rados ls lists {f['objects']}", why="the file was not written whole, or another file has its inode",
            show=show))
    worst = 0.0
    for _, f in files.iterrows():
        got = per_osd[per_osd["layout"] == f["layout"]].set_index("osd")["bytes_written"]
        for osd, n in got.items():
            worst = max(worst, abs(n - f["expected_per_osd"].get(osd, 0)))
    claims.append(explain.expect(
        "each OSD's own counter of bytes written (op_w_in_bytes) matches the objects whose primary it is",
        explain.greater("tolerance", MiB, "largest difference", worst),
        yes=f"the largest difference is {format_size(worst)} (the MDS's journal, in the metadata pool)",
        no=f"one OSD differs by {format_size(worst)}", why="another client wrote at the same time", show=show))
    rr = data["round_robin"]
    claims.append(explain.expect(
        "with 4 stripes of 1 MiB in 4 MiB objects, object 1 of the file holds its MiB 1, 5, 9 and 13 (round "
        "robin over 4 objects), not MiB 4 to 8 as with the default layout",
        explain.fact("object 1 = MiB 1, 5, 9, 13", rr["equals_file_MiB_1_5_9_13"] and not rr["equals_file_MiB_4_to_8"]),
        yes=f"rados get {rr['object']} gave {format_size(rr['object_bytes'])}, byte for byte those ranges",
        no="the object's bytes differ", why="the layout was not applied (set on a directory after the file)",
        show=show))
    return claims


# --- 2. the caches of a parallel file system client ---------------------------------------------------

CACHE_STEPS = ("cold (fresh mount)", "again (same mount)", "after evicting the kernel's pages")


def _client_perf(c: Cluster, name: str = "a") -> str:
    svc = c.fuse[name]
    return c.daemon(f"client.admin.{svc.pid}", "perf dump", logger="objectcacher-libcephfs")


def _caches_live(c: Cluster) -> dict:
    mnt = c.check_mounted("a")
    f = mnt / "cache" / "file"
    f.parent.mkdir(exist_ok=True)
    _write(f, CACHE_FILE)
    runs = []
    for trial in range(TRIALS):
        mnt = c.remount("a")
        f = mnt / "cache" / "file"
        steps = []
        for step in CACHE_STEPS:
            if step.startswith("after"):
                pagecache.evict(f)
            res = pagecache.residency(f, keep_map=False)
            before, cb = _osds(c), _client_perf(c)
            seconds, n = _read(f)
            after, ca = _osds(c), _client_perf(c)
            steps.append({"step": step, "seconds": seconds, "bytes": n, "resident_before": res.resident_bytes,
                          "perf_before": before, "perf_after": after, "client_before": cb, "client_after": ca})
        runs.append(steps)
    return {"size": CACHE_FILE, "trials": runs}


def parse_caches(text: str) -> pd.DataFrame:
    doc = json.loads(text)
    rows = []
    for t, steps in enumerate(doc["trials"]):
        for s in steps:
            osd = sum(_osd_delta(s["perf_before"], s["perf_after"], OSD_R).values())
            cb, ca = cephtools.parse_perf(s["client_before"]), cephtools.parse_perf(s["client_after"])
            hit = "objectcacher-libcephfs.cache_bytes_hit"
            miss = "objectcacher-libcephfs.cache_bytes_miss"
            rows.append({"trial": t + 1, "step": s["step"], "mb_per_s": s["bytes"] / s["seconds"] / 1e6,
                         "bytes": s["bytes"], "kernel_pages_before": s["resident_before"], "osd_bytes_sent": osd,
                         "client_cache_hit_bytes": ca.get(hit, 0) - cb.get(hit, 0),
                         "client_cache_miss_bytes": ca.get(miss, 0) - cb.get(miss, 0)})
    return pd.DataFrame(rows)


def client_caches(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """One file read three ways per trial: on a fresh mount, again, after evicting the kernel's pages."""
    return _section(cluster, "caches", _caches_live, parse_caches, caches_claims, show=show)


def caches_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    by = {s: df[df["step"] == s] for s in CACHE_STEPS}
    size = int(df["bytes"].max())
    cold, again, evicted = (by[s]["osd_bytes_sent"] for s in CACHE_STEPS)
    claims = [explain.expect(
        "a read on a fresh mount fetches the whole file from the OSDs",
        explain.fact("every cold read came from the OSDs", bool((cold >= size).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in cold])} MiB for a {format_size(size)} file",
        no=f"the OSDs sent {_spread([x / MiB for x in cold])} MiB", why="the mount was not fresh", show=show),
        explain.expect(
        "reading it again on the same mount asks the OSDs for nothing: the kernel's page cache answers",
        explain.fact("OSDs sent nothing", bool((again < MiB).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in again])} MiB; {_spread(list(by[CACHE_STEPS[1]]['mb_per_s']))} MB/s",
        no=f"the OSDs sent {_spread([x / MiB for x in again])} MiB", why="memory pressure evicted the pages", show=show),
        explain.expect(
        "after the kernel's pages are dropped, the OSDs still send nothing: ceph-fuse's own object cache "
        "answers (only a remount, or client_oc=false, gives a cold read)",
        explain.fact("OSDs sent nothing after eviction", bool((evicted < MiB).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in evicted])} MiB, the client cache hit "
            f"{_spread([x / MiB for x in by[CACHE_STEPS[2]]['client_cache_hit_bytes']])} MiB",
        no=f"the OSDs sent {_spread([x / MiB for x in evicted])} MiB",
        why="the file is bigger than the client's object cache (client_oc_size), or it was trimmed", show=show),
        trials_claim("the page cache read is faster than the cold read from the OSDs",
                "page cache", list(by[CACHE_STEPS[1]]["mb_per_s"]), "cold", list(by[CACHE_STEPS[0]]["mb_per_s"]),
                "MB/s", keep=keep, key="read", show=show)]
    return claims


# --- 3. metadata: a round trip to the MDS --------------------------------------------------------------

def _meta_trial(d: Path, stat_from: Path) -> dict[str, float]:
    d.mkdir(parents=True, exist_ok=True)
    names = [f"f{i:05d}" for i in range(N_FILES)]
    t = time.perf_counter()
    for n in names:
        os.close(os.open(d / n, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    create = time.perf_counter() - t
    t = time.perf_counter()
    for n in names:
        os.stat(stat_from / n)
    stat = time.perf_counter() - t
    t = time.perf_counter()
    for n in names:
        os.unlink(d / n)
    remove = time.perf_counter() - t
    os.rmdir(d)
    return {"create": create, "stat": stat, "remove": remove}


def _metadata_live(c: Cluster) -> dict:
    a, b = c.check_mounted("a"), c.check_mounted("b")
    local = c.ws.mkdir("metadata-local")
    runs = []
    for trial in range(TRIALS):
        for where in ("cephfs", "local"):
            d = (a if where == "cephfs" else local) / f"t{trial}"
            other = (b if where == "cephfs" else local) / f"t{trial}"
            before = c.perf("mds.a", "mds_server")
            times = _meta_trial(d, other)
            runs.append({"trial": trial + 1, "where": where, "files": N_FILES, **times,
                           "mds_before": before, "mds_after": c.perf("mds.a", "mds_server")})
    return {"local_fstype": fsinfo.fstype(local), "trials": runs}


def parse_metadata(text: str) -> pd.DataFrame:
    doc = json.loads(text)
    rows = []
    for t in doc["trials"]:
        mds = cephtools.delta(cephtools.parse_perf(t["mds_before"]), cephtools.parse_perf(t["mds_after"]),
                              "mds_server.handle_client_request")
        for op in ("create", "stat", "remove"):
            rows.append({"trial": t["trial"], "where": "CephFS" if t["where"] == "cephfs" else doc["local_fstype"],
                         "op": op, "ops_per_s": t["files"] / t[op], "files": t["files"],
                         "mds_requests": mds["mds_server.handle_client_request"]})
    return pd.DataFrame(rows)


def metadata(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Creates, stats from the other node and removes, on CephFS and on the workspace's filesystem."""
    return _section(cluster, "metadata", _metadata_live, parse_metadata, metadata_claims, show=show)


def metadata_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    ceph = df[df["where"] == "CephFS"]
    local = df[df["where"] != "CephFS"]
    name = local["where"].iloc[0]
    n = int(ceph["files"].iloc[0])
    per_trial = ceph.groupby("trial")["mds_requests"].first()
    claims = [explain.expect(
        f"each create, each stat from the other node and each remove on CephFS is a request to the MDS: "
        f"at least 3 × {n} = {3 * n} per trial",
        explain.greater("fewest MDS requests in a trial", per_trial.min() + 1, "3 × files", 3 * n),
        yes=f"the MDS counted {_spread(list(per_trial))} client requests per trial",
        no=f"the MDS counted {_spread(list(per_trial))}", why="a client answered from capabilities it held", show=show)]
    for op in ("create", "stat"):
        claims.append(trials_claim(f"{op}s are faster on the local {name} than on CephFS",
                              name, list(local[local["op"] == op]["ops_per_s"]),
                              "CephFS", list(ceph[ceph["op"] == op]["ops_per_s"]), f"{op}s/s",
                              keep=keep, key=op, show=show))
    return claims


# --- 4. coherence between two clients -----------------------------------------------------------------

N_SMALL = 256


def _small_writes(path: Path, n: int) -> float:
    """n pwrites of 4 KiB; the seconds they took (the fsync after them is not timed: it empties the
    client's buffer, so that the other node's next open does not wait for it)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        t = time.perf_counter()
        for i in range(n):
            os.pwrite(fd, _BLOCK[:4096], i * 4096)
        seconds = time.perf_counter() - t
        os.fsync(fd)
        return seconds
    finally:
        os.close(fd)


def _coherence_live(c: Cluster) -> dict:
    a, b = c.check_mounted("a"), c.check_mounted("b")
    (a / "coherence").mkdir(exist_ok=True)
    fa, fb = a / "coherence" / "file", b / "coherence" / "file"
    fd = os.open(fa, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, _BLOCK[:4096])            # no fsync, no close: the bytes are in client A's buffer
        t = time.perf_counter()
        size_b = os.stat(fb).st_size
        with open(fb, "rb") as g:
            same = g.read() == _BLOCK[:4096]
        seen = time.perf_counter() - t
    finally:
        os.close(fd)
    runs = []
    for trial in range(TRIALS):
        for other in ("closed", "open"):
            if other == "open":
                g = os.open(fb, os.O_RDONLY)
                os.read(g, 1)
            try:
                seconds = _small_writes(fa, N_SMALL)
            finally:
                if other == "open":
                    os.close(g)
            runs.append({"trial": trial + 1, "node_b": other, "writes": N_SMALL, "seconds": seconds})
    return {"visible": {"size_seen_by_b": size_b, "bytes_equal": same, "seconds": seen},
            "trials": runs, "sessions": c.daemon("mds.a", "session ls")}


def parse_coherence(text: str) -> dict:
    doc = json.loads(text)
    df = pd.DataFrame([{**t, "us_per_write": t["seconds"] / t["writes"] * 1e6} for t in doc["trials"]])
    return {"visible": doc["visible"], "trials": df, "sessions": cephtools.parse_sessions(doc["sessions"])}


@dataclass
class Coherence(Section):
    """Section 4: ``frame`` the timed 4 KiB writes (alone, with node B holding the file open),
    ``visible`` what node B saw of node A's unflushed bytes, ``sessions`` the MDS's client sessions."""

    visible: dict[str, Any] = field(default_factory=dict)
    sessions: list[dict[str, Any]] = field(default_factory=list)


def coherence(cluster: Cluster | None = None, *, show: bool = True) -> Coherence:
    """Node B reads what node A wrote and did not flush; A's small writes alone and while B has the file open."""
    out = _section(cluster, "coherence", _coherence_live, parse_coherence, coherence_claims, show=show,
                   cls=Coherence, frame=lambda data: data["trials"])
    out.visible, out.sessions = out.data["visible"], out.data["sessions"]
    return out


def coherence_claims(data: dict, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    v, df = data["visible"], data["trials"]
    return [explain.expect(
        "node B sees 4 KiB that node A wrote and neither flushed nor closed: CephFS is coherent, the MDS "
        "recalls A's buffer capability",
        explain.fact("B saw the bytes", v["bytes_equal"] and v["size_seen_by_b"] == 4096),
        yes=f"B's stat and read took {v['seconds'] * 1e3:.1f} ms; {len(data['sessions'])} client sessions at the MDS",
        no=f"B saw a size of {v['size_seen_by_b']}", why="not expected on CephFS", show=show),
        trials_claim("A's 4 KiB writes are faster while A has the file alone than while B has it open (A loses "
                "its buffer capability: every write goes to the OSD)",
                "alone", list(df[df["node_b"] == "closed"]["us_per_write"]),
                "with B open", list(df[df["node_b"] == "open"]["us_per_write"]), "µs per write",
                higher=False, keep=keep, key="writes", show=show)]


# --- 5. one shared file against a file per client -----------------------------------------------------

SHARED_BYTES = 1 * MiB                  # per client, in 4 KiB writes


def _writer(path: Path, offset: int, nbytes: int, times: list[float]) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        t = time.perf_counter()
        for off in range(offset, offset + nbytes, 4096):
            os.pwrite(fd, _BLOCK[:4096], off)
        os.fsync(fd)
        times.append(time.perf_counter() - t)
    finally:
        os.close(fd)


def _shared_live(c: Cluster) -> dict:
    a, b = c.check_mounted("a"), c.check_mounted("b")
    (a / "shared").mkdir(exist_ok=True)
    runs = []
    for trial in range(TRIALS):
        for how in ("a file per client", "one shared file"):
            names = ["one"] * 2 if how == "one shared file" else ["fa", "fb"]
            for n in set(names):
                p = a / "shared" / f"t{trial}-{n}"
                workspace.reserve_for(p, 2 * SHARED_BYTES)
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            offsets = [0, SHARED_BYTES] if how == "one shared file" else [0, 0]
            paths = [a / "shared" / f"t{trial}-{names[0]}", b / "shared" / f"t{trial}-{names[1]}"]
            times: list[float] = []
            t = time.perf_counter()
            threads = [threading.Thread(target=_writer, args=(p, o, SHARED_BYTES, times)) for p, o in zip(paths, offsets)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            wall = time.perf_counter() - t
            if len(times) != 2:
                raise IolabError("a writer failed: see the traceback above")
            runs.append({"trial": trial + 1, "how": how, "bytes": 2 * SHARED_BYTES, "seconds": wall})
    return {"write_size": 4096, "trials": runs}


def parse_shared(text: str) -> pd.DataFrame:
    doc = json.loads(text)
    return pd.DataFrame([{**t, "mb_per_s": t["bytes"] / t["seconds"] / 1e6} for t in doc["trials"]])


def shared_file(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Two clients writing 4 KiB at a time, at once: into a file each, or into halves of one file."""
    return _section(cluster, "shared", _shared_live, parse_shared, shared_file_claims, show=show)


def shared_file_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    return [trials_claim(
        "two clients writing 4 KiB at a time are faster into a file each than into disjoint halves of one "
        "shared file (in a shared file neither keeps its buffer capability)",
        "a file per client", list(df[df["how"] == "a file per client"]["mb_per_s"]),
        "one shared file", list(df[df["how"] == "one shared file"]["mb_per_s"]), "MB/s",
        keep=keep, key="writes", show=show)]


# --- 6. replication's write cost ------------------------------------------------------------------------

REPL_BYTES = 8 * MiB


def _replication_live(c: Cluster) -> dict:
    a = c.check_mounted("a")
    c.add_data_pool("cephfs_data3", size=3)
    dirs = {1: a / "size1", 3: a / "size3"}
    for size, d in dirs.items():
        d.mkdir(exist_ok=True)
        if size == 3:
            runner.run(["setfattr", "-n", "ceph.dir.layout.pool", "-v", "cephfs_data3", str(d)], timeout=30)
    layout3 = runner.run(["getfattr", "-n", "ceph.dir.layout", str(dirs[3])], timeout=30).stdout
    runs = []
    for trial in range(TRIALS):
        for size, d in dirs.items():
            before = _osds(c)
            seconds = _write(d / f"t{trial}", REPL_BYTES)
            runs.append({"trial": trial + 1, "pool_size": size, "bytes": REPL_BYTES, "seconds": seconds,
                           "perf_before": before, "perf_after": _osds(c)})
    return {"layout_size3": layout3, "trials": runs}


def parse_replication(text: str) -> pd.DataFrame:
    doc = json.loads(text)
    rows = []
    for t in doc["trials"]:
        primary = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_W).values())
        replica = sum(_osd_delta(t["perf_before"], t["perf_after"], "osd.subop_w_in_bytes").values())
        rows.append({"trial": t["trial"], "pool_size": t["pool_size"], "mb_per_s": t["bytes"] / t["seconds"] / 1e6,
                     "file_bytes": t["bytes"], "osd_primary_bytes": primary, "osd_replica_bytes": replica,
                     "osd_bytes_per_file_byte": (primary + replica) / t["bytes"]})
    return pd.DataFrame(rows)


def replication(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Writes with fsync into a pool of size 1 and one of size 3: what the OSDs receive, how fast."""
    return _section(cluster, "replication", _replication_live, parse_replication, replication_claims, show=show)


def replication_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    r3 = df[df["pool_size"] == 3]["osd_bytes_per_file_byte"]
    r1 = df[df["pool_size"] == 1]["osd_bytes_per_file_byte"]
    return [explain.expect(
        "in a pool of size 3 the OSDs receive every byte three times (once from the client at the primary, "
        "twice from the primary at the replicas); in a pool of size 1 once",
        explain.within("OSD bytes per file byte, size 3", float(r3.median()), "3 copies", 3.0, rel=0.05),
        yes=f"{_spread(list(r3), '.2f')} against {_spread(list(r1), '.2f')} bytes at the OSDs per file byte",
        no=f"{float(r3.median()):.2f} bytes at the OSDs per file byte", why="recovery or another client wrote too",
        show=show),
        trials_claim("writes with fsync are faster into the size-1 pool than into the size-3 pool (an fsync waits "
                "for every replica)",
                "size 1", list(df[df["pool_size"] == 1]["mb_per_s"]), "size 3",
                list(df[df["pool_size"] == 3]["mb_per_s"]), "MB/s", keep=keep, key="writes", show=show)]


# --- 7. seed 001 with two clients: IOR -C reads the other node's data from the OSDs ---------------------

IOR_BLOCK = 8 * MiB                     # per rank; rank 0 on node A, rank 1 on node B, a file each (-F)
IOR_STEPS = ("own file (no -C)", "the other node's file (-C)")


def _ior_argv(c: Cluster, test: str, opts: ior.Options) -> list[str]:
    """mpirun with one IOR rank per mount (MPMD): rank 0's test file on node A, rank 1's on node B, the
    same CephFS directory seen through two clients. -O numTasksOnNode0=1 tells IOR one task per node
    (lesson 04's rule), so -C -Q 1 moves each rank to the other rank's file."""
    version = ior.installed_version("ior")
    argv = mpi.launcher_argv(1, extra=["--oversubscribe"] if mpi.flavour() in ("openmpi", "unknown") else [])
    for i, node in enumerate("ab"):
        part = ior.Options(**{**opts.__dict__, "test_file": str(c.mounts[node] / "ior" / test / "f")}).argv(version)
        argv += part if i == 0 else [":", "-np", "1", *part]
    return argv


def _ior_live(c: Cluster) -> dict:
    c.check_mounted("a")
    c.check_mounted("b")
    base = dict(api="POSIX", transfer_size=MiB, block_size=IOR_BLOCK, file_per_process=True, keep_file=True,
                tasks_per_node=1)
    env = mpi.runtime_env(c.ws.mkdir("ior-mpi"))
    runs = []
    for trial in range(TRIALS):
        test = f"t{trial}"
        (c.mounts["a"] / "ior" / test).mkdir(parents=True, exist_ok=True)
        c.ws.reserve(2 * IOR_BLOCK)
        for step in IOR_STEPS:
            # the write and the read of each rank's own file are one IOR run (-w -r): writes add nothing to
            # the OSDs' read counter, so its difference is the read's; the -C read is a run of its own
            minus_c = step.endswith("(-C)")
            opts = ior.Options(**base, write=not minus_c, reorder_tasks=minus_c, task_offset=1 if minus_c else None)
            before = _osds(c)
            r = runner.run(_ior_argv(c, test, opts), timeout=120, env=env)
            runs.append({"trial": trial + 1, "step": step, "argv": r.argv, "stdout": r.stdout,
                         "perf_before": before, "perf_after": _osds(c)})
    return {"block_per_rank": IOR_BLOCK, "ranks": 2, "ior_version": ior.installed_version("ior"), "trials": runs}


def parse_ior(text: str) -> pd.DataFrame:
    """Section 2b's document -> one row per IOR read: its rate, its task ordering (-C moves ranks or not)
    and what the OSDs sent during it. A document that is not one, or a trial with no IOR read result,
    raises ParseError."""
    doc = safeio.loads(text, what="IOR -C section document")
    try:
        block, ranks = doc["block_per_rank"], doc["ranks"]
        if not all(type(x) is int and x > 0 for x in (block, ranks)):
            raise ParseError(f"block_per_rank and ranks must be positive whole numbers, got {block!r}, {ranks!r}")
        rows = []
        for t in doc["trials"]:
            where = f"trial {t['trial']!r} ({t['step']!r})"
            if type(t["trial"]) is not int or not isinstance(t["step"], str):
                raise ParseError(f"{where}: not a trial of this section")
            try:
                res = [r for r in ior.parse(t["stdout"]) if r.get("access") == "read"]
                facts = ior.reorder_facts(t["stdout"])
            except ParseError as e:
                raise ParseError(f"{where}: {e}") from None
            if not res:
                raise ParseError(f"{where}: IOR printed no read result")
            if set(t["perf_before"]) != set(t["perf_after"]):
                raise ParseError(f"{where}: the OSDs' counters before and after the run do not match")
            sent = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_R).values())
            if sent < 0:
                raise ParseError(f"{where}: the OSDs' read counters went down during the run")
            rows.append({"trial": t["trial"], "step": t["step"], "mib_per_s": float(res[0]["bw_mib"]),
                         "bytes": block * ranks, "ordering": facts["ordering"],
                         "tasks_per_node": facts["tasks_per_node"], "osd_bytes_sent": sent})
    except ParseError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ParseError(f"IOR -C section document: {type(e).__name__}: {e}") from None
    if not rows:
        raise ParseError("IOR -C section document: no trials")
    return pd.DataFrame(rows)


def ior_two_clients(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Seed 001's -C, with the ranks on two clients: the read of the other node's file comes from the OSDs."""
    return _section(cluster, "ior", _ior_live, parse_ior, ior_two_clients_claims, show=show,
                    requires=("ior", "mpirun"), witness=True)


def ior_two_clients_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    own, other = (df[df["step"] == s] for s in IOR_STEPS)
    size = int(df["bytes"].iloc[0])
    return [explain.expect(
        "without -C each rank reads back the file its own client wrote: that client's caches answer, the OSDs "
        "send (almost) nothing",
        explain.fact("the OSDs sent under 1 MiB in every read without -C", bool((own["osd_bytes_sent"] < MiB).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in own['osd_bytes_sent']], ',.1f')} MiB for {format_size(size)} read",
        no=f"the OSDs sent {_spread([x / MiB for x in own['osd_bytes_sent']], ',.1f')} MiB",
        why="memory pressure evicted the client's pages and its object cache", show=show),
        explain.expect(
        "with -C (one task per node, -Q 1) each rank reads the file the other node's client wrote: every byte "
        "comes from the OSDs",
        explain.fact("the OSDs sent the whole size in every -C read", bool((other["osd_bytes_sent"] >= size).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in other['osd_bytes_sent']], ',.1f')} MiB for {format_size(size)} read",
        no=f"the OSDs sent {_spread([x / MiB for x in other['osd_bytes_sent']], ',.1f')} MiB",
        why="IOR did not move the ranks (tasks per node not 1, or no -Q), or a client had the file cached", show=show),
        trials_claim("IOR's read rate is higher without -C (a cache on the node) than with it (the OSDs)",
                "no -C", list(own["mib_per_s"]), "-C", list(other["mib_per_s"]), "MiB/s",
                keep=keep, key="read", show=show)]


# --- 8. IOR's own CEPHFS backend: libcephfs in each rank, no mount -----------------------------------

CEPHFS_BLOCK = 1 * MiB                  # per rank, in 4 KiB transfers, fsync at the end (-e)
CEPHFS_TRANSFER = 4096
CEPHFS_SETTINGS = {                     # setting -> IOR's own options for it (besides -a, -t, -b, -o)
    "CEPHFS, one shared file": ["-a", "CEPHFS"],
    "CEPHFS, a file per rank (-F)": ["-a", "CEPHFS", "-F"],
    "CEPHFS, shared, --cephfs.olazy": ["-a", "CEPHFS", "--cephfs.olazy"],
    "POSIX on node A's mount, one shared file": ["-a", "POSIX"],
}
CEPHFS_BUILD = (
    "build IOR with the CEPHFS backend (IOR 3.3.0 or 4.0.0; needs libcephfs-dev and librados-dev): "
    "./bootstrap && ./configure --prefix=/tmp/ior-4.0.0-cephfs --with-cephfs CC=mpicc && make install, after "
    "seed 001's one-line change to src/aiori-CEPHFS.c (line 17: #ifdef HAVE_CONFIG_H becomes #ifndef "
    "HAVE_CONFIG_H; or add #include <sys/time.h> before <cephfs/libcephfs.h>): without it the build stops "
    "at libcephfs.h's 'struct timeval'. Put its bin/ on PATH or leave it in /tmp/ior-<version>-cephfs/bin")


CEPHFS_IOR_GLOB = "/tmp/ior-*-cephfs/bin/ior"     # where the lesson looks, after PATH


@functools.lru_cache(maxsize=8)
def _lists_cephfs(exe: str) -> bool:
    with workspace.Workspace(budget="1MiB") as w:
        r = runner.run([exe, "--help"], timeout=60, env=mpi.runtime_env(w.root, singleton=True), check=False)
    return any(line.lstrip().startswith("-a=") and "CEPHFS" in line for line in (r.stdout + r.stderr).splitlines())


def cephfs_ior() -> str | None:
    """An IOR built with the CEPHFS backend (its ``--help`` lists CEPHFS among ``-a``'s choices): the
    ``ior`` on PATH, else /tmp/ior-*-cephfs/bin/ior (newest name first); None when there is none."""
    found = runner.which("ior")
    candidates = [found] if found else []
    candidates += sorted(glob.glob(CEPHFS_IOR_GLOB), reverse=True)
    for exe in candidates:
        if os.access(exe, os.X_OK) and _lists_cephfs(exe):
            return exe
    return None


def _cephfs_argv(c: Cluster, exe: str, conf: Path, setting: str, test_file: Path) -> list[str]:
    # -g: a barrier between the open and the writes, so that every rank has the file open before any
    # writes (without it one client may write its whole block alone, buffered, before the other opens)
    argv = [exe, *CEPHFS_SETTINGS[setting], "-t", "4k", "-b", ior.ior_size(CEPHFS_BLOCK), "-w", "-e", "-g"]
    if "-a" in argv and argv[argv.index("-a") + 1] == "CEPHFS":
        # --cephfs.prefix is required (IOR 3.3.0 and 4.0.0 crash without it): IOR strips it from -o, so the
        # same path names the file through the mount (POSIX) and inside CephFS (libcephfs)
        argv += ["--cephfs.user=admin", f"--cephfs.conf={conf}", f"--cephfs.prefix={c.mounts['a']}"]
    extra = ["--oversubscribe"] if mpi.flavour() in ("openmpi", "unknown") else []
    return mpi.command(argv + ["-o", str(test_file)], 2, extra=extra)


def _cephfs_live(c: Cluster, exe: str) -> dict:
    a = c.check_mounted("a")
    assert c.conf is not None and c.keyring is not None
    # the cluster's configuration and where libcephfs finds client.admin's key (IOR passes no keyring)
    conf = c.dir / "ior-cephfs.conf"
    conf.write_text(c.conf.read_text() + f"\n[client.admin]\nkeyring = {c.keyring}\n")
    conf.chmod(0o600)
    env = mpi.runtime_env(c.ws.mkdir("ior-cephfs-mpi"))
    c.ws.reserve(2 * CEPHFS_BLOCK)                  # IOR removes its files after each run (no -k)
    runs = []
    for trial in range(TRIALS):
        for i, setting in enumerate(CEPHFS_SETTINGS):
            d = a / "ior-cephfs" / f"t{trial}-{i}"
            d.mkdir(parents=True, exist_ok=True)
            before = _osds(c)
            r = runner.run(_cephfs_argv(c, exe, conf, setting, d / "f"), timeout=180, env=env)
            runs.append({"trial": trial + 1, "setting": setting, "argv": r.argv, "stdout": r.stdout,
                         "seconds": r.seconds, "perf_before": before, "perf_after": _osds(c)})
    return {"block_per_rank": CEPHFS_BLOCK, "transfer": CEPHFS_TRANSFER, "ranks": 2, "ior": exe,
            "ior_version": ior._installed_version(exe), "trials": runs}


def parse_cephfs(text: str) -> pd.DataFrame:
    """The section's document -> one row per IOR run: its write rate, and what the OSDs took (bytes and
    write operations, from their perf dumps around the run). A document that is not one, or a run with
    no IOR write result, raises ParseError."""
    doc = safeio.loads(text, what="IOR CEPHFS section document")
    try:
        block, ranks = doc["block_per_rank"], doc["ranks"]
        if not all(type(x) is int and x > 0 for x in (block, ranks)):
            raise ParseError(f"block_per_rank and ranks must be positive whole numbers, got {block!r}, {ranks!r}")
        rows = []
        for t in doc["trials"]:
            where = f"trial {t['trial']!r} ({t['setting']!r})"
            if t["setting"] not in CEPHFS_SETTINGS or type(t["trial"]) is not int:
                raise ParseError(f"{where}: not a trial of this section")
            try:
                res = [r for r in ior.parse(t["stdout"]) if r.get("access") == "write"]
            except ParseError as e:
                raise ParseError(f"{where}: {e}") from None
            if not res:
                raise ParseError(f"{where}: IOR printed no write result")
            ops = sum(_osd_delta(t["perf_before"], t["perf_after"], "osd.op_w").values())
            nbytes = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_W).values())
            if set(t["perf_before"]) != set(t["perf_after"]) or ops < 0 or nbytes < 0:
                raise ParseError(f"{where}: the OSDs' counters before and after the run do not match")
            rows.append({"trial": t["trial"], "setting": t["setting"], "mib_per_s": float(res[0]["bw_mib"]),
                         "bytes": block * ranks, "osd_bytes_in": nbytes, "osd_write_ops": ops,
                         "kib_per_osd_write": nbytes / ops / 1024 if ops else float("nan")})
    except ParseError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ParseError(f"IOR CEPHFS section document: {type(e).__name__}: {e}") from None
    if not rows:
        raise ParseError("IOR CEPHFS section document: no trials")
    return pd.DataFrame(rows)


def ior_cephfs(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """IOR's CEPHFS backend (each rank its own libcephfs client, no mount) at 4 KiB: one shared file, a
    file per rank, a shared file with LazyIO, and POSIX on one ceph-fuse mount beside them. ``trials["all"]``:
    every setting's rates."""
    def no_cephfs_ior() -> str | None:
        return None if cephfs_ior() else f"no IOR built with the CEPHFS backend here; to run it live, {CEPHFS_BUILD}"

    out = _section(cluster, "ior-cephfs", lambda c: _cephfs_live(c, cephfs_ior()), parse_cephfs, cephfs_claims,
                   show=show, requires=("mpirun",), unavailable=no_cephfs_ior, witness=True)
    out.trials["all"] = trials.from_values(
        {s: list(out.frame[out.frame["setting"] == s]["mib_per_s"]) for s in CEPHFS_SETTINGS}, unit="MiB/s",
        higher=True)
    return out


def cephfs_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    shared, fpp, lazy, posix = (df[df["setting"] == s] for s in CEPHFS_SETTINGS)
    col = "mib_per_s"
    return [
        explain.expect(
            "the OSDs took every byte IOR wrote, in every run (-e: an fsync ends each write phase)",
            explain.fact("the OSDs' op_w_in_bytes grew by at least IOR's bytes in every run",
                         bool((df["osd_bytes_in"] >= df["bytes"]).all())),
            yes=f"the OSDs took {_spread([x / MiB for x in df['osd_bytes_in']], ',.2f')} MiB per run of "
                f"{format_size(int(df['bytes'].iloc[0]))}",
            no=f"the OSDs took {_spread([x / MiB for x in df['osd_bytes_in']], ',.2f')} MiB per run",
            why="a run's data stayed in a client's cache past its end", show=show),
        trials_claim("through libcephfs, two ranks writing 4 KiB at a time are faster into a file each (-F) than into "
                "one shared file (two clients on one file: neither may buffer)",
                "-F", list(fpp[col]), "shared", list(shared[col]), "MiB/s", keep=keep, key="cephfs", show=show),
        trials_claim("in a shared file the OSDs receive smaller writes than with a file each (every 4 KiB sent on "
                "its own, unbuffered)",
                "-F", list(fpp["kib_per_osd_write"]), "shared", list(shared["kib_per_osd_write"]),
                "KiB per OSD write", keep=keep, key="osd writes", show=show),
        trials_claim("--cephfs.olazy (LazyIO: the clients may buffer a shared file) makes the shared file faster",
                "shared, olazy", list(lazy[col]), "shared", list(shared[col]), "MiB/s", keep=keep, key="olazy",
                show=show),
        trials_claim("POSIX on one ceph-fuse mount (both ranks in ONE client, no capability to share) writes the "
                "shared file faster than two libcephfs clients do",
                "POSIX, one client", list(posix[col]), "CEPHFS, two clients", list(shared[col]), "MiB/s",
                keep=keep, key="posix", show=show),
    ]
