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

The two sections that run IOR on the cluster (2b, seed 001's ``-C`` across two clients, and 6b, IOR's
CEPHFS backend) are in :mod:`iolab.lessons.l08_parallel_fs.ior_runs`, on the same helpers.
"""
from __future__ import annotations

import functools
import json
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, fsinfo, pagecache, recordings, runner, trials, workspace
from ...ceph import TOOLS, Cluster, missing
from ...ceph.cluster import HINT
from ...errors import IolabError, ParseError
from ...objectstore.mounts import fuse_problem
from ...tools import ceph as cephtools
from ...units import MiB, format_size

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
    def live() -> str:
        try:
            return json.dumps(fn(cluster), indent=1) + "\n"
        except (OSError, IolabError) as e:     # a read that failed because a daemon died: say which one
            if cluster.failure is not None:
                raise cluster.failure from e
            raise
    out = recordings.live_or_recorded(live, f"ceph/{name}",
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


_FOREIGN = (KeyError, TypeError, AttributeError, IndexError, ValueError, ZeroDivisionError, OverflowError)


def _document_parser(what: str) -> Callable[[Callable[[str], Any]], Callable[[str], Any]]:
    """The parse(text) of a section's recorded document: the JSON read through the ceph tools' reader
    (ParseError with its line when cut or not JSON, bounded nesting), each raw output in it through its
    own parser, and any other failure (a field missing or of the wrong type) a ParseError naming the
    section, never a KeyError or TypeError."""
    def wrap(fn: Callable[[str], Any]) -> Callable[[str], Any]:
        @functools.wraps(fn)
        def parse(text: str) -> Any:
            try:
                return fn(text)
            except ParseError:
                raise
            except _FOREIGN as e:
                raise ParseError(f"lesson 08's {what} document: {type(e).__name__} {str(e)[:200]} (a field "
                                 "missing or of the wrong type: not a document this section wrote)") from None
        return parse
    return wrap


def _doc(text: str, what: str) -> dict[str, Any]:
    doc = cephtools.json_doc(text, f"lesson 08's {what} document")
    if not isinstance(doc, dict):
        raise ParseError(f"lesson 08's {what} document: expected a JSON object")
    return doc


def _count(x: Any, what: str) -> int:
    """A count of bytes, files or writes in a section's document: an int >= 0 (not a bool)."""
    if type(x) is not int or x < 0:
        raise ParseError(f"{what} is {x!r}: not a count")
    return x


def _seconds(x: Any, what: str) -> float:
    """A duration in a section's document: a finite number > 0 (a rate is divided by it)."""
    if type(x) not in (int, float) or not math.isfinite(x) or x <= 0:
        raise ParseError(f"{what} is {x!r}: not a duration in seconds")
    return float(x)


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
    if v[0] == v[-1]:
        return f"{v[0]:{fmt}}"
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


@_document_parser('layouts')
def parse_layouts(text: str) -> dict:
    """The recorded document of section 1 -> its tables (through the tool parsers)."""
    doc = _doc(text, 'layouts')
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
                      "mb_per_s": _count(f["size"], "a file's size") / _seconds(f["write_seconds"], "a write's time") / 1e6,
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
                   # each file is written once: its rate is one run, no comparison of layouts (the counts are)
                   frame=lambda data: data["files"].drop(columns=["expected_per_osd", "mb_per_s"]))
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


@_document_parser('caches')
def parse_caches(text: str) -> pd.DataFrame:
    doc = _doc(text, 'caches')
    rows = []
    for t, steps in enumerate(doc["trials"]):
        for s in steps:
            osd = sum(_osd_delta(s["perf_before"], s["perf_after"], OSD_R).values())
            cb, ca = cephtools.parse_perf(s["client_before"]), cephtools.parse_perf(s["client_after"])
            oc = "objectcacher-libcephfs."
            d = cephtools.delta(cb, ca, *(oc + k for k in ("cache_bytes_hit", "cache_bytes_miss", "cache_ops_hit",
                                                          "cache_ops_miss")))
            rows.append({"trial": t + 1, "step": s["step"], "mb_per_s": _count(s["bytes"], "a read's bytes") / _seconds(s["seconds"], "a read's time") / 1e6,
                         "bytes": s["bytes"], "kernel_pages_before": s["resident_before"], "osd_bytes_sent": osd,
                         # reads of the object cache that it answered whole, and those it did not
                         "client_cache_ops_hit": d[oc + "cache_ops_hit"], "client_cache_ops_miss": d[oc + "cache_ops_miss"],
                         # ObjectCacher::_readx adds the WHOLE buffer head each read touches (bh->length()), not
                         # the bytes read: more than the file when many reads touch one large buffer head
                         "client_cache_hit_bytes": d[oc + "cache_bytes_hit"],
                         "client_cache_miss_bytes": d[oc + "cache_bytes_miss"]})
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
        yes=lambda ev: _object_cache_answered(by[CACHE_STEPS[2]], size),
        no=f"the OSDs sent {_spread([x / MiB for x in evicted])} MiB",
        why="the file is bigger than the client's object cache (client_oc_size), or it was trimmed", show=show),
        trials_claim("the page cache read is faster than the cold read from the OSDs",
                "page cache", list(by[CACHE_STEPS[1]]["mb_per_s"]), "cold", list(by[CACHE_STEPS[0]]["mb_per_s"]),
                "MB/s", keep=keep, key="read", show=show)]
    return claims


def _object_cache_answered(ev: pd.DataFrame, size: int) -> str:
    """Section 2's third step in the counters that bear it out: the OSDs' bytes, and the object cache's
    reads hit and missed. Its cache_bytes_hit is no count of bytes served: ceph's ObjectCacher::_readx
    adds the whole buffer head (bh->length()) of every hit a read touches, so many small reads of one
    large buffer head add it again and again."""
    hits, misses = list(ev["client_cache_ops_hit"]), list(ev["client_cache_ops_miss"])
    counter = list(ev["client_cache_hit_bytes"])
    return (f"the OSDs sent {_spread([x / MiB for x in ev['osd_bytes_sent']])} MiB, and ceph-fuse's object cache "
            f"answered {_spread(hits)} reads whole (cache_ops_hit) and {_spread(misses)} not (cache_ops_miss). "
            f"(Its cache_bytes_hit grew by {_spread([x / MiB for x in counter])} MiB for a {format_size(size)} file: "
            "ObjectCacher adds the whole buffer head each read touches, not the bytes the read took, so it "
            "counts hits, not bytes served.)")


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


MDS_KINDS = ("create", "lookup", "getattr", "unlink", "mkdir", "rmdir")   # the MDS's request counters section 3 names


@_document_parser('metadata')
def parse_metadata(text: str) -> pd.DataFrame:
    doc = _doc(text, 'metadata')
    rows = []
    for t in doc["trials"]:
        kinds = {k: f"mds_server.req_{k}_latency.avgcount" for k in MDS_KINDS}
        mds = cephtools.delta(cephtools.parse_perf(t["mds_before"]), cephtools.parse_perf(t["mds_after"]),
                              "mds_server.handle_client_request", *kinds.values())
        total = mds["mds_server.handle_client_request"]
        per_kind = {f"mds_{k}s": mds[key] for k, key in kinds.items()}
        for op in ("create", "stat", "remove"):
            rows.append({"trial": t["trial"], "where": "CephFS" if t["where"] == "cephfs" else doc["local_fstype"],
                         "op": op, "ops_per_s": _count(t["files"], "files") / _seconds(t[op], f"the {op} time"),
                         "files": t["files"], "mds_requests": total, **per_kind,
                         "mds_other": total - sum(per_kind.values())})
    return pd.DataFrame(rows)


def metadata(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Creates, stats from the other node and removes, on CephFS and on the workspace's filesystem."""
    return _section(cluster, "metadata", _metadata_live, parse_metadata, metadata_claims, show=show)


def _mds_kinds(ceph: pd.DataFrame, n: int) -> str:
    """What the MDS's counters say its requests were, per trial: more than the 3 x n operations, because a
    path walk asks the MDS for each name the client does not hold (a lookup) and a stat from the other
    node for attributes it holds no capability for (a getattr)."""
    per = ceph.groupby("trial").first()
    kinds = ", ".join(f"{_spread(list(per[f'mds_{k}s']))} {k}s" for k in MDS_KINDS)
    other = per["mds_other"]
    return (f"the MDS counted {_spread(list(per['mds_requests']))} client requests per trial for {3 * n} "
            f"operations: {kinds}" + (f", and {_spread(list(other))} of other kinds" if other.max() > 0 else "")
            + f". Beyond the {n} creates and {n} unlinks, each name a client does not hold costs a lookup at the "
            "MDS, and node B's stat of a file node A created asks for its attributes (getattr) when B holds no "
            "capability for it.")


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
        yes=lambda ev: _mds_kinds(ceph, n),
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


@_document_parser('coherence')
def parse_coherence(text: str) -> dict:
    doc = _doc(text, 'coherence')
    df = pd.DataFrame([{**t, "us_per_write": _seconds(t["seconds"], "a trial's time")
                        / max(_count(t["writes"], "writes"), 1) * 1e6} for t in doc["trials"]])
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


def _sessions_text(sessions: list[dict[str, Any]]) -> str:
    """The MDS's client sessions, said whose they are: the mounts (with a mount point) and the others by
    their entity (the manager daemon mgr.x opens CephFS clients of its own, with no mount point)."""
    mounts = [s for s in sessions if s["mount_point"]]
    others: dict[str, int] = {}
    for s in sessions:
        if not s["mount_point"]:
            others[s["entity"]] = others.get(s["entity"], 0) + 1
    said = [f"{len(sessions)} client sessions at the MDS" + (
        ", the two mounts (node A, node B)" if len(mounts) == len(sessions) == 2 else
        f", {len(mounts)} of them the mounts (node A, node B)")]
    for entity, k in others.items():
        who = "the manager daemon mgr.x's own CephFS clients" if entity == "x" else f"entity {entity!r}"
        said.append(f"{k} of {who}, with no mount point")
    return "; ".join(said)


def coherence_claims(data: dict, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    v, df = data["visible"], data["trials"]
    return [explain.expect(
        "node B sees 4 KiB that node A wrote and neither flushed nor closed: CephFS is coherent, the MDS "
        "recalls A's buffer capability",
        explain.fact("B saw the bytes", v["bytes_equal"] and v["size_seen_by_b"] == 4096),
        yes=f"B's stat and read took {v['seconds'] * 1e3:.1f} ms; {_sessions_text(data['sessions'])}",
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


@_document_parser('shared-file')
def parse_shared(text: str) -> pd.DataFrame:
    doc = _doc(text, 'shared-file')
    return pd.DataFrame([{**t, "mb_per_s": _count(t["bytes"], "a trial's bytes") / _seconds(t["seconds"], "a trial's time")
                          / 1e6} for t in doc["trials"]])


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


def replication_rounds(n: int) -> list[list[int]]:
    """The pool sizes of each of ``n`` rounds in the order they are written: rotated (trials.order), so
    that size 1 is not always the first write of a round (the first pays for what the round starts)."""
    o = trials.order(["1", "3"], n, how="rotated")
    return [[int(x) for x in o[i:i + 2]] for i in range(0, len(o), 2)]


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
    for trial, sizes in enumerate(replication_rounds(TRIALS)):
        for size in sizes:
            d = dirs[size]
            before = _osds(c)
            seconds = _write(d / f"t{trial}", REPL_BYTES)
            runs.append({"trial": trial + 1, "pool_size": size, "bytes": REPL_BYTES, "seconds": seconds,
                           "perf_before": before, "perf_after": _osds(c)})
    return {"layout_size3": layout3, "trials": runs}


@_document_parser('replication')
def parse_replication(text: str) -> pd.DataFrame:
    doc = _doc(text, 'replication')
    rows = []
    for t in doc["trials"]:
        primary = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_W).values())
        replica = sum(_osd_delta(t["perf_before"], t["perf_after"], "osd.subop_w_in_bytes").values())
        rows.append({"trial": t["trial"], "pool_size": t["pool_size"], "mb_per_s": _count(t["bytes"], "a trial's bytes") / _seconds(t["seconds"], "a trial's time") / 1e6,
                     "file_bytes": t["bytes"], "osd_primary_bytes": primary, "osd_replica_bytes": replica,
                     "osd_bytes_per_file_byte": (primary + replica) / max(t["bytes"], 1)})
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
