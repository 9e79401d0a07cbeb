"""Lesson 08's last section: the cluster's object store. A RADOS Gateway (Ceph's S3 endpoint) on the
lesson's cluster; one PUT becomes a head and tail RADOS objects on named OSDs, a key in one shard of
the bucket's index; a read back through fsspec's s3fs (and s3fs-fuse, where it is installed) is
counted at the OSDs.

Starting the gateway takes longer than the lesson's budget has (11.5-13.4 s to HTTP at load 9-10:
benchmarks/results/ceph-faults.txt), so the section replays its recording unless asked
(``rgw_objects(cluster, live=True)``, the notebook's ``RGW_LIVE``, or IOLAB_MODE=live). Its document,
``data/recorded/ceph/rgw.json``, keeps every raw output (radosgw-admin's bucket and object stats,
``rados ls``/``stat``/``listomapkeys``, ``ceph osd map`` of each object, the OSDs' perf dumps around the
PUT and each read), read by the same parser live and replayed.
"""
from __future__ import annotations

import math
import os
import time

import pandas as pd

from ... import explain, recordings, runner
from ...ceph import Cluster, rgw
from ...errors import ParseError
from ...objectstore import mounts
from ...tools import ceph as cephtools
from ...units import MiB, format_size
from .sections import OSD_R, OSD_W, Section, _osd_delta, _osds, _section

BUCKET = "course"
KEY = "data-16MiB.bin"
OBJECT_SIZE = 16 * MiB
OPT_IN = ("the RADOS Gateway part runs live only when asked (RGW_LIVE = True in the notebook, or "
          "rgw_objects(cluster, live=True), or IOLAB_MODE=live): starting the gateway and asking RADOS where "
          "each object went takes longer than the lesson's time allows")


def _unless_asked(live: bool) -> str | None:
    """Why the section replays although a cluster runs: it was not asked to run live."""
    return recordings.unless_asked(live, OPT_IN)


def _read_counted(c: Cluster, via: str, read) -> dict:
    before = _osds(c)
    t = time.perf_counter()
    got = read()
    seconds = time.perf_counter() - t
    return {"via": via, "bytes": len(got), "seconds": seconds, "perf_before": before, "perf_after": _osds(c),
            "data": got}


def _rgw_live(c: Cluster) -> dict:
    with rgw.Gateway(c) as gw:
        assert gw.endpoint is not None
        started = {"timings": dict(gw.timings), "rss_bytes": gw.memory(), "version": gw.version,
                   "load": list(os.getloadavg())}
        fs = gw.endpoint.filesystem()
        fs.mkdir(BUCKET)
        data = os.urandom(OBJECT_SIZE)
        before = _osds(c)
        t = time.perf_counter()
        fs.pipe(f"{BUCKET}/{KEY}", data)
        put = {"bytes": len(data), "seconds": time.perf_counter() - t, "perf_before": before, "perf_after": _osds(c)}
        placement = gw.placement(BUCKET, KEY)
        reads = [_read_counted(c, "fsspec s3fs", lambda: gw.endpoint.filesystem().cat(f"{BUCKET}/{KEY}"))]
        if runner.which("s3fs") and not mounts.fuse_problem():
            with mounts.s3fs_fuse(gw.endpoint, BUCKET, ws=c.ws) as m:
                reads.append(_read_counted(c, "s3fs-fuse", (m.path / KEY).read_bytes))
        for r in reads:
            r["identical"] = r.pop("data") == data
        started["rss_after_bytes"] = gw.memory()
    return {"bucket": BUCKET, "key": KEY, "object_size": OBJECT_SIZE, "gateway": started, "put": put,
            "placement": placement, "reads": reads}


def parse_rgw(text: str) -> dict:
    """The section's document -> ``{"objects": frame of RADOS objects, "reads": frame, "manifest",
    "bucket", "put_osd_bytes", "gateway"}``; each raw output through its parser in
    :mod:`iolab.tools.ceph` (ParseError on anything else)."""
    doc = cephtools.json_doc(text, "lesson 08's gateway document")
    try:
        return _parsed(doc)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        if isinstance(e, ParseError):
            raise
        raise ParseError(f"lesson 08's gateway document: {type(e).__name__} {str(e)[:200]} (a field missing or "
                         "of the wrong type)") from None


def _parsed(doc: dict) -> dict:
    if not isinstance(doc, dict) or not isinstance(doc.get("placement"), dict):
        raise ParseError("lesson 08's gateway document: expected an object with its placement")
    p = doc["placement"]
    bucket = cephtools.parse_bucket_stats(p["bucket_stats"])
    manifest = cephtools.parse_object_stat(p["object_stat"])
    marker = bucket["marker"]
    rows = []
    for name in cephtools.parse_rados_names(p["data_ls"]):
        if not name.startswith(marker + "_"):
            continue
        st = cephtools.parse_rados_stat(p["stat"][name])
        placed = cephtools.parse_osd_map(p["osd_map"][name])
        rest = name[len(marker) + 1:]
        kind = "tail" if rest.startswith("_shadow_") else "head"
        rows.append({"object": name, "kind": kind, "bytes": st["size"], "pg": placed["pg"],
                     "osd": f"osd.{placed['primary']}"})
    for name in cephtools.parse_rados_names(p["index_ls"]):
        if name not in p["omap"]:
            continue
        keys = cephtools.parse_omap_keys(p["omap"][name])
        placed = cephtools.parse_osd_map(p["index_osd_map"][name])
        rows.append({"object": name, "kind": "index shard", "bytes": 0, "pg": placed["pg"],
                     "osd": f"osd.{placed['primary']}", "keys": len(keys), "holds_key": doc["key"] in keys})
    objects = pd.DataFrame(rows)
    reads = pd.DataFrame([{"via": r["via"], "bytes": r["bytes"], "identical": r["identical"], "seconds": r["seconds"],
                           "osd_sent_bytes": sum(_osd_delta(r["perf_before"], r["perf_after"], OSD_R).values())}
                          for r in doc["reads"]])
    put = doc["put"]
    if not isinstance(doc["object_size"], int) or isinstance(doc["object_size"], bool) or not isinstance(doc["key"], str):
        raise ParseError("lesson 08's gateway document: object_size or key of the wrong type")
    if objects.empty or not {"head", "index shard"} <= set(objects["kind"]):
        raise ParseError("lesson 08's gateway document: no head object or no index shard of the bucket")
    return {"objects": objects, "reads": reads, "manifest": manifest, "bucket": bucket, "gateway": doc["gateway"],
            "object_size": doc["object_size"], "key": doc["key"],
            "put_osd_bytes": sum(_osd_delta(put["perf_before"], put["perf_after"], OSD_W).values())}


def rgw_objects(cluster: Cluster | None = None, *, live: bool = False, show: bool = True) -> Section:
    """One S3 PUT through the cluster's RADOS Gateway: the RADOS objects it became, where, the bucket's
    index, and reads back counted at the OSDs. Replayed unless ``live`` (see :data:`OPT_IN`)."""
    return _section(cluster, "rgw", _rgw_live, parse_rgw, rgw_claims, show=show, requires=("radosgw", "radosgw-admin"),
                    unavailable=lambda: _unless_asked(live), frame=lambda d: d["objects"])


def rgw_table(data: dict) -> pd.DataFrame:
    """The RADOS objects of the S3 object and the bucket's index shard that holds its key, for the page (the
    bucket's marker, which begins every name, written ``<marker>``)."""
    df = data["objects"]
    shown = df[(df["kind"] != "index shard") | df.get("holds_key", False).fillna(False).astype(bool)]
    out = shown[["kind", "object", "bytes", "pg", "osd"]].copy()
    out["object"] = [o.replace(data["bucket"]["marker"], "<marker>") for o in out["object"]]
    out["size"] = [format_size(b) if k != "index shard" else "(omap only)" for k, b in zip(out["kind"], out["bytes"])]
    return out.drop(columns="bytes").reset_index(drop=True)


def rgw_claims(data: dict, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    df, man, size = data["objects"], data["manifest"], data["object_size"]
    heads, tails = df[df["kind"] == "head"], df[df["kind"] == "tail"]
    shards = df[df["kind"] == "index shard"]
    expected_tails = math.ceil(max(size - man["head_size"], 0) / man["stripe_max_size"])
    osds = sorted(set(heads["osd"]) | set(tails["osd"]))
    data_bytes = int(heads["bytes"].sum() + tails["bytes"].sum())
    holder = shards[shards.get("holds_key", False).fillna(False).astype(bool)] if len(shards) else shards
    claims = [
        explain.expect(
            f"one PUT of {format_size(size)} becomes one head object of at most the manifest's head size "
            f"({format_size(man['head_size'])}) and tail objects of its stripe size "
            f"({format_size(man['stripe_max_size'])}): {expected_tails} tails",
            explain.fact("one head and the manifest's tails", len(heads) == 1 and len(tails) == expected_tails
                         and data_bytes == size),
            yes=f"{len(heads)} head + {len(tails)} tails holding {format_size(data_bytes)}, on "
                f"{len(osds)} of the cluster's OSDs ({', '.join(osds)})",
            no=f"{len(heads)} head(s) and {len(tails)} tail(s) holding {format_size(data_bytes)}",
            why="a multipart upload is laid out by parts, not by stripes", show=show),
        explain.expect(
            "the bucket's index is a few shard objects of no data, their keys in omap; the object's name "
            "is a key of exactly one shard",
            explain.fact("one shard holds the key", len(holder) == 1 and int(shards["bytes"].sum()) == 0),
            yes=(f"{len(shards)} shards ({data['bucket']['num_shards']} by radosgw-admin), the key in "
                 f"{holder['object'].iloc[0] if len(holder) else '?'} on {holder['osd'].iloc[0] if len(holder) else '?'}"),
            no=f"{len(holder)} shards hold the key", why="another upload of the same name is under way", show=show),
        explain.expect(
            "the OSDs took at least the object's bytes for the PUT (the gateway writes them to RADOS)",
            explain.greater("OSD bytes in", data["put_osd_bytes"], "object bytes", size - 1),
            yes=f"{format_size(data['put_osd_bytes'])} in at the OSDs for {format_size(size)}",
            no=f"{format_size(data['put_osd_bytes'])} in at the OSDs", why="a counter was not read", show=show),
    ]
    for r in data["reads"].itertuples():
        claims.append(explain.expect(
            f"a read back through {r.via} returns the same bytes, and the OSDs send them again (the gateway's "
            "cache holds metadata, not data)",
            explain.fact(f"identical and sent by the OSDs ({r.via})", bool(r.identical) and r.osd_sent_bytes >= size),
            yes=f"{format_size(r.bytes)} identical; the OSDs sent {format_size(r.osd_sent_bytes)}",
            no=f"identical: {bool(r.identical)}; the OSDs sent {format_size(r.osd_sent_bytes)}",
            why="another reader of the cluster moved the counters, or a cache answered", show=show))
    return claims
