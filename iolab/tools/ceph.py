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
