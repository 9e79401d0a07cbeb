"""Ceph's outputs that lesson 08 reads: layouts, object lists, placements and the daemons' counters.

Parsers, each raising :class:`~iolab.errors.ParseError` (naming the line) on anything else::

    parse_layout(getfattr -n ceph.file.layout FILE)  -> {"path", "stripe_unit", "stripe_count", "object_size", "pool"}
    parse_rados_ls(rados -p POOL ls)                  -> [{"object", "ino", "index"}]   (CephFS data objects)
    parse_osdmap_object(osdmaptool MAP --test-map-object OBJ --pool ID)
                                                      -> {"object", "pg", "osds", "primary"}
    parse_osd_map(ceph osd map POOL OBJ -f json)      -> the same record, from the monitor
    parse_perf(perf dump JSON, of `ceph tell` or an admin socket)
                                                      -> {"section.counter": number}  (a time or an average
                                                         counter gives "...avgcount" and "...sum")
    parse_sessions(ceph tell mds.a session ls JSON)   -> [{"id", "num_caps", "state", "entity", "mount_point"}]

and those of the cluster's RADOS Gateway (:mod:`iolab.ceph.rgw`)::

    parse_rados_names(rados -p POOL ls)               -> [object name]   (any pool)
    parse_rados_stat(rados -p POOL stat OBJ)          -> {"pool", "object", "mtime", "size"}
    parse_omap_keys(rados -p POOL listomapkeys OBJ)   -> [key]           (a bucket index shard: object names)
    parse_bucket_stats(radosgw-admin bucket stats)    -> {"bucket", "id", "marker", "num_shards"}
    parse_object_stat(radosgw-admin object stat)      -> {"name", "size", "head_size", "max_head_size", "obj_size",
                                                          "prefix", "stripe_max_size", "tail_bucket_marker"}

The raw texts come from :class:`iolab.ceph.Cluster` (its ``ceph()``, ``daemon()`` and ``perf()``).
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from ..errors import ParseError

_MAX_LINE = 4096
_LAYOUT_LINE = re.compile(r'ceph\.(?:file|dir)\.layout="([^"\n]{1,1000})"')
_LAYOUT_KEYS = {"stripe_unit", "stripe_count", "object_size", "pool"}
_OBJECT = re.compile(r"([0-9a-f]{1,16})\.([0-9a-f]{8})")
_OSDMAPTOOL = re.compile(r" object '([^'\n]{1,1000})' -> ([0-9]{1,10}\.[0-9a-f]{1,8}) -> \[([0-9,]{0,400})\]")


def _lines(text: str, tool: str) -> list[str]:
    if not isinstance(text, str):
        raise ParseError(f"{tool}: expected text, got {type(text).__name__}")
    if text and not text.endswith("\n"):
        lines = text.split("\n")
        raise ParseError(f"{tool}: the output is cut (its last line has no newline)", line_no=len(lines),
                         line=lines[-1][:200])
    lines = text.split("\n")[:-1] if text else []
    for i, line in enumerate(lines, 1):
        if len(line) > _MAX_LINE:
            raise ParseError(f"{tool}: line {i} is {len(line)} characters long", line_no=i, line=line[:200])
    return lines


def parse_layout(text: str) -> dict[str, Any]:
    """getfattr's ``ceph.file.layout`` (or ``ceph.dir.layout``) of one file: sizes in bytes, pool by name."""
    lines = _lines(text, "getfattr")
    path = None
    found = None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.startswith("# file: "):
            if path is not None:
                raise ParseError("getfattr: a second file; give one file's layout", line_no=i, line=line)
            path = line[len("# file: "):]
            continue
        m = _LAYOUT_LINE.fullmatch(line)
        if m is None or found is not None:
            raise ParseError("getfattr: expected one ceph.file.layout=\"...\" line", line_no=i, line=line[:200])
        rec: dict[str, Any] = {}
        for part in m.group(1).split(" "):
            key, eq, value = part.partition("=")
            if not eq or key not in _LAYOUT_KEYS or key in rec or not value:
                raise ParseError(f"getfattr: unexpected layout field {part!r}", line_no=i, line=line)
            if key == "pool":
                rec[key] = value
            elif value.isdigit() and len(value) < 19 and int(value) > 0:
                rec[key] = int(value)
            else:
                raise ParseError(f"getfattr: {key} is not a positive integer: {value!r}", line_no=i, line=line)
        if set(rec) != _LAYOUT_KEYS:
            raise ParseError(f"getfattr: the layout lacks {sorted(_LAYOUT_KEYS - set(rec))}", line_no=i, line=line)
        if rec["object_size"] % rec["stripe_unit"]:
            raise ParseError("getfattr: the stripe unit does not divide the object size", line_no=i, line=line)
        found = rec
    if path is None or found is None:
        raise ParseError("getfattr: no '# file:' line with a ceph layout after it")
    return {"path": path, **found}


def parse_rados_ls(text: str) -> list[dict[str, Any]]:
    """``rados -p DATA_POOL ls`` of a CephFS data pool: each object's name, the file's inode and the
    object's index in the file (``<inode hex>.<index, 8 hex digits>``). Sorted by inode and index."""
    out = []
    for i, line in enumerate(_lines(text, "rados ls"), 1):
        m = _OBJECT.fullmatch(line)
        if m is None:
            raise ParseError("rados ls: not a CephFS data object name (<inode hex>.<8 hex digits>)", line_no=i,
                             line=line[:200])
        out.append({"object": line, "ino": int(m.group(1), 16), "index": int(m.group(2), 16)})
    return sorted(out, key=lambda r: (r["ino"], r["index"]))


def _osds(text: str, line_no: int, line: str) -> list[int]:
    parts = text.split(",") if text else []
    if not parts or not all(p.isdigit() and len(p) < 7 for p in parts):
        raise ParseError("expected a list of OSD ids", line_no=line_no, line=line)
    return [int(p) for p in parts]


def parse_osdmap_object(text: str) -> dict[str, Any]:
    """osdmaptool's ``--test-map-object``: the object's placement group and OSDs (primary first)."""
    rec = None
    for i, line in enumerate(_lines(text, "osdmaptool"), 1):
        if line.startswith("osdmaptool: osdmap file "):
            continue
        m = _OSDMAPTOOL.fullmatch(line)
        if m is None or rec is not None:
            raise ParseError("osdmaptool: expected one \" object 'NAME' -> PG -> [OSDS]\" line", line_no=i,
                             line=line[:200])
        osds = _osds(m.group(3), i, line)
        rec = {"object": m.group(1), "pg": m.group(2), "osds": osds, "primary": osds[0]}
    if rec is None:
        raise ParseError("osdmaptool: no object mapping in the output")
    return rec


def _json(text: str, tool: str) -> Any:
    """JSON as a daemon answers it (one long line, with or without a newline): a cut one fails to parse."""
    if not isinstance(text, str):
        raise ParseError(f"{tool}: expected text, got {type(text).__name__}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        line_no = getattr(e, "lineno", None)
        raise ParseError(f"{tool}: not JSON ({e})", line_no=line_no) from None


def json_doc(text: str, tool: str) -> Any:
    """A JSON document of ``tool`` (ParseError when cut or not JSON)."""
    return _json(text, tool)


def _int(obj: Any, key: str, tool: str) -> int:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ParseError(f"{tool}: {key!r} is missing or not a count")
    return v


def parse_osd_map(text: str) -> dict[str, Any]:
    """``ceph osd map POOL OBJECT --format json``: the object's placement group and acting OSDs."""
    data = _json(text, "ceph osd map")
    if not isinstance(data, dict) or not isinstance(data.get("objname"), str) or not isinstance(data.get("pgid"), str):
        raise ParseError("ceph osd map: expected an object with objname and pgid")
    acting = data.get("acting")
    if not isinstance(acting, list) or not acting or not all(isinstance(o, int) and not isinstance(o, bool)
                                                             and o >= 0 for o in acting):
        raise ParseError("ceph osd map: 'acting' is not a list of OSD ids")
    primary = _int(data, "acting_primary", "ceph osd map")
    return {"object": data["objname"], "pg": data["pgid"], "osds": list(acting), "primary": primary}


def parse_perf(text: str) -> dict[str, float]:
    """A daemon's ``perf dump`` (JSON): every counter as ``section.name``; a long-running average as
    ``section.name.avgcount`` and ``section.name.sum``."""
    data = _json(text, "perf dump")
    if not isinstance(data, dict) or not data:
        raise ParseError("perf dump: expected an object of counter sections")
    out: dict[str, float] = {}
    for section, counters in data.items():
        if not isinstance(counters, dict):
            raise ParseError(f"perf dump: section {section!r} is not an object")
        for name, value in counters.items():
            key = f"{section}.{name}"
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if not (math.isfinite(value) and value >= 0):      # Ceph's perf counters are unsigned
                    raise ParseError(f"perf dump: counter {key!r} is {value!r}, not a count")
                out[key] = value
            elif isinstance(value, dict) and "avgcount" in value and "sum" in value:
                for part in ("avgcount", "sum"):
                    v = value[part]
                    if not isinstance(v, (int, float)) or isinstance(v, bool) or not (math.isfinite(v) and v >= 0):
                        raise ParseError(f"perf dump: {key}.{part} is not a count or a time")
                    out[f"{key}.{part}"] = v
            elif isinstance(value, dict) and "avgcount" in value:
                continue               # a histogram's own shape: not read here
            else:
                raise ParseError(f"perf dump: counter {key!r} is neither a number nor an average")
    return out


def parse_sessions(text: str) -> list[dict[str, Any]]:
    """The MDS's ``session ls`` (JSON): one record per client session."""
    data = _json(text, "session ls")
    if not isinstance(data, list):
        raise ParseError("session ls: expected a list of sessions")
    out = []
    for s in data:
        if not isinstance(s, dict):
            raise ParseError("session ls: a session is not an object")
        meta = s.get("client_metadata", {})
        if not isinstance(meta, dict):
            raise ParseError("session ls: client_metadata is not an object")
        state = s.get("state")
        if not isinstance(state, str):
            raise ParseError("session ls: a session has no state")
        out.append({"id": _int(s, "id", "session ls"), "num_caps": _int(s, "num_caps", "session ls"),
                    "state": state, "entity": str(meta.get("entity_id", "")),
                    "mount_point": str(meta.get("mount_point", ""))})
    return out


def delta(before: dict[str, float], after: dict[str, float], *keys: str) -> dict[str, float]:
    """after - before of the named counters (0 when a counter is absent in both)."""
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


# --- the RADOS Gateway's objects (lesson 08's object store) ----------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_RADOS_STAT = re.compile(r"([^/\s]{1,200})/(\S{1,1000}) mtime (\S{1,64}), size ([0-9]{1,19})")


def parse_rados_names(text: str) -> list[str]:
    """``rados -p POOL ls`` of any pool (the gateway's data or index pool): its object names, sorted."""
    names = []
    for i, line in enumerate(_lines(text, "rados ls"), 1):
        if not line or line != line.strip() or " " in line:
            raise ParseError("rados ls: expected one object name per line", line_no=i, line=line[:200])
        names.append(line)
    return sorted(names)


def parse_rados_stat(text: str) -> dict[str, Any]:
    """``rados -p POOL stat OBJ``: ``{"pool", "object", "mtime", "size"}`` (size in bytes)."""
    lines = _lines(text, "rados stat")
    if len(lines) != 1:
        raise ParseError(f"rados stat: expected one line, got {len(lines)}", line_no=min(len(lines), 2) or None)
    m = _RADOS_STAT.fullmatch(lines[0])
    if m is None:
        raise ParseError("rados stat: expected 'POOL/OBJECT mtime TIME, size N'", line_no=1, line=lines[0][:200])
    return {"pool": m.group(1), "object": m.group(2), "mtime": m.group(3), "size": int(m.group(4))}


def parse_omap_keys(text: str) -> list[str]:
    """``rados -p POOL listomapkeys OBJ``: the keys of an object's omap (a bucket index shard: the
    objects' names), one a line."""
    keys = []
    for i, line in enumerate(_lines(text, "rados listomapkeys"), 1):
        if not line or len(line.encode()) > 1024 or _CONTROL.search(line):
            raise ParseError("rados listomapkeys: expected an S3 object's name (1-1024 bytes, no control "
                             "character) per line", line_no=i, line=line[:200])
        keys.append(line)
    return keys


def _str(obj: Any, key: str, tool: str) -> str:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, str) or not v:
        raise ParseError(f"{tool}: {key!r} is missing or not a name")
    return v


def parse_bucket_stats(text: str) -> dict[str, Any]:
    """``radosgw-admin bucket stats --bucket=B``: ``{"bucket", "id", "marker", "num_shards"}`` (the marker
    begins every RADOS object name of the bucket; num_shards is the index's shard count)."""
    data = _json(text, "radosgw-admin bucket stats")
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise ParseError("radosgw-admin bucket stats: expected one bucket's object")
    return {"bucket": _str(data, "bucket", "radosgw-admin bucket stats"),
            "id": _str(data, "id", "radosgw-admin bucket stats"),
            "marker": _str(data, "marker", "radosgw-admin bucket stats"),
            "num_shards": _int(data, "num_shards", "radosgw-admin bucket stats")}


def parse_object_stat(text: str) -> dict[str, Any]:
    """``radosgw-admin object stat``: the S3 object's size and its manifest: ``{"name", "size", "head_size",
    "max_head_size", "stripe_max_size", "prefix", "tail_bucket_marker"}`` (sizes in bytes; ``prefix``
    names its tail objects: ``<marker>__shadow_<prefix><n>``)."""
    tool = "radosgw-admin object stat"
    data = _json(text, tool)
    if not isinstance(data, dict) or not isinstance(data.get("manifest"), dict):
        raise ParseError(f"{tool}: expected an object with a manifest")
    man = data["manifest"]
    rec: dict[str, Any] = {
        "name": _str(data, "name", tool), "size": _int(data, "size", tool),
        "head_size": _int(man, "head_size", tool), "max_head_size": _int(man, "max_head_size", tool),
        "obj_size": _int(man, "obj_size", tool)}
    prefix = man.get("prefix")
    if not isinstance(prefix, str):
        raise ParseError(f"{tool}: the manifest's 'prefix' is missing")
    rec["prefix"] = prefix
    rules = man.get("rules")
    if not isinstance(rules, list) or not rules or not isinstance(rules[0], dict):
        raise ParseError(f"{tool}: the manifest has no rules")
    rec["stripe_max_size"] = _int(rules[0].get("val"), "stripe_max_size", tool)
    tail = man.get("tail_placement")
    bucket = tail.get("bucket") if isinstance(tail, dict) else None
    rec["tail_bucket_marker"] = _str(bucket, "marker", tool) if isinstance(bucket, dict) else ""
    if rec["obj_size"] != rec["size"] or rec["head_size"] > rec["size"] or rec["stripe_max_size"] == 0:
        raise ParseError(f"{tool}: the manifest's sizes disagree with the object's ({rec['size']} bytes)")
    return rec
