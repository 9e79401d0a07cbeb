"""SeaweedFS's own counters: its Prometheus text (``weed ... -metricsPort=N``, ``GET /metrics``).

    rows = parse(text)                       # every sample: metric, bucket, type, code, le, labels, value
    c = counters(rows)                       # the S3 gateway's: bytes sent/received per bucket, requests
    moved = c.minus(before)                  # what one run did: after minus before

What the S3 gateway counts (SeaweedFS 4.x, ``weed/s3api/stats.go`` and ``s3api_server.go``):
``SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket}`` the payload bytes it sent (object bodies),
``..._received_bytes_total{bucket}`` the bytes it took in (uploads), and
``SeaweedFS_s3_request_total{bucket,code,type}`` one per request, where ``type`` is the route's label:
a HEAD of an object is routed through the same ``track(..., "GET")`` as a GET, so it counts as type
GET. The GETs that sent an object are the ones its time-to-first-byte histogram observed
(``SeaweedFS_s3_time_to_first_byte_millisecond_count{type="GET"}``), so HEADs (and GETs that sent
nothing) are the difference.
"""
from __future__ import annotations

import math
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParseError, ToolFailed

_MAX_LINE = 8192
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,200}")
_SAMPLE = re.compile(r"(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]{0,200})(?:\{(?P<labels>[^{}]{0,4000})\})?"
                     r"[ \t]+(?P<value>[^ \t]{1,40})(?:[ \t]+(?P<ts>-?\d{1,20}))?[ \t]*")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]{0,100})="((?:[^"\\]|\\.){0,1000})"[ \t]*(,|$)')
_FLOAT = re.compile(r"[+-]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})(?:[eE][+-]?\d{1,3})?|[+-]?Inf|NaN")
_COMMENT = re.compile(r"# (?:HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]{0,200}(?: .{0,4000})?|#.{0,4000}")
_KNOWN = ("bucket", "type", "code", "le")


def _unescape(v: str) -> str:
    return v.replace("\\\\", "\0").replace('\\"', '"').replace("\\n", "\n").replace("\0", "\\")


def _number(s: str) -> float | int:
    if s in ("+Inf", "Inf"):
        return math.inf
    if s == "-Inf":
        return -math.inf
    if s == "NaN":
        return math.nan
    v = float(s)
    if v.is_integer() and abs(v) < 2 ** 63 and "e" not in s.lower() and "." not in s:
        return int(s)
    return v


def parse(text: str) -> list[dict[str, Any]]:
    """Every sample of a SeaweedFS /metrics text, one row each: ``metric``, ``bucket``, ``type``,
    ``code``, ``le`` (None when the sample has no such label), ``labels`` (the others, ``k=v`` joined
    by commas, sorted), ``value`` (int when written as a whole number, else float).

    ParseError (with the line) for a line that is neither a comment nor a sample, a label list that
    does not close, a value that is not a number, the same sample twice, a text that ends inside a
    line (no newline at the end), and a text with no SeaweedFS metric at all (not its /metrics)."""
    if not isinstance(text, str):
        raise ParseError("SeaweedFS metrics are text")
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif lines:
        raise ParseError("SeaweedFS's metrics end inside a line (no newline at the end)",
                         line_no=len(lines), line=lines[-1][:200])
    ours = False
    for no, raw in enumerate(lines, 1):
        line = raw[:-1] if raw.endswith("\r") else raw
        if len(line) > _MAX_LINE:
            raise ParseError(f"a line of more than {_MAX_LINE} characters is no metrics line", line_no=no,
                             line=line[:200])
        if not line.strip():
            continue
        if line.startswith("#"):
            if not _COMMENT.fullmatch(line):
                raise ParseError("a comment line that is not # HELP/# TYPE", line_no=no, line=line)
            continue
        m = _SAMPLE.fullmatch(line)
        if not m:
            raise ParseError("not a Prometheus sample line (name{labels} value)", line_no=no, line=line)
        value = m.group("value")
        if not _FLOAT.fullmatch(value):
            raise ParseError(f"a sample's value is not a number: {value!r}", line_no=no, line=line)
        labels: dict[str, str] = {}
        body = m.group("labels") or ""
        pos = 0
        while pos < len(body):
            lm = _LABEL.match(body, pos)
            if not lm or lm.end() == pos:
                raise ParseError("a label list that is not name=\"value\", ...", line_no=no, line=line)
            k, v = lm.group(1), _unescape(lm.group(2))
            if k in labels:
                raise ParseError(f"label {k} twice in one sample", line_no=no, line=line)
            labels[k] = v
            pos = lm.end()
            if lm.group(3) == "" and pos < len(body):
                raise ParseError("a label list that is not name=\"value\", ...", line_no=no, line=line)
        name = m.group("name")
        key = (name, ",".join(f"{k}={labels[k]}" for k in sorted(labels)))
        if key in seen:
            raise ParseError(f"sample {name} with the same labels twice", line_no=no, line=line)
        seen.add(key)
        ours = ours or name.startswith("SeaweedFS_")
        others = ",".join(f"{k}={labels[k]}" for k in sorted(labels) if k not in _KNOWN)
        rows.append({"metric": name, **{k: labels.get(k) for k in _KNOWN}, "labels": others,
                     "value": _number(value)})
    if not ours:
        raise ParseError("no SeaweedFS_ metric in this text: not SeaweedFS's /metrics")
    return rows


@dataclass
class S3Counters:
    """The S3 gateway's counters at one moment (or the difference of two: :meth:`minus`)."""

    sent: dict[str, int] = field(default_factory=dict)          # bucket -> payload bytes sent
    received: dict[str, int] = field(default_factory=dict)      # bucket -> bytes received
    requests: dict[tuple[str, str, str], int] = field(default_factory=dict)   # (bucket, type, code) -> n
    bodies: dict[tuple[str, str], int] = field(default_factory=dict)          # (bucket, type) -> GETs that sent

    def minus(self, before: "S3Counters") -> "S3Counters":
        """What happened between ``before`` and this reading (a counter never goes down: ParseError if
        one did, the store was restarted)."""
        def sub(a: dict, b: dict) -> dict:
            out = {}
            for k in set(a) | set(b):
                d = a.get(k, 0) - b.get(k, 0)
                if d < 0:
                    raise ParseError(f"counter {k} went down ({b.get(k, 0)} -> {a.get(k, 0)}): the store restarted")
                if d:
                    out[k] = d
            return out
        return S3Counters(sub(self.sent, before.sent), sub(self.received, before.received),
                          sub(self.requests, before.requests), sub(self.bodies, before.bodies))

    def bytes_sent(self, bucket: str | None = None) -> int:
        return sum(v for b, v in self.sent.items() if bucket is None or b == bucket)

    def bytes_received(self, bucket: str | None = None) -> int:
        return sum(v for b, v in self.received.items() if bucket is None or b == bucket)

    def count(self, type_: str | None = None, *, bucket: str | None = None, ok: bool | None = None) -> int:
        """Requests of one type (GET, PUT, LIST, DELETE...: SeaweedFS's own labels; a HEAD is a GET),
        of one bucket, only those answered 2xx (ok=True) or not (ok=False)."""
        return sum(n for (b, t, c), n in self.requests.items()
                   if (type_ is None or t == type_) and (bucket is None or b == bucket)
                   and (ok is None or c.startswith("2") == ok))

    def gets_with_body(self, bucket: str | None = None) -> int:
        """GETs that sent an object (the time-to-first-byte histogram's count)."""
        return sum(n for (b, t), n in self.bodies.items() if t == "GET" and (bucket is None or b == bucket))

    def heads(self, bucket: str | None = None) -> int:
        """Type-GET requests that sent no object: HEADs (and GETs answered with an error)."""
        return self.count("GET", bucket=bucket) - self.gets_with_body(bucket)


def _whole(row: dict[str, Any], what: str) -> int:
    v = row["value"]
    if isinstance(v, float):
        if not (math.isfinite(v) and v.is_integer() and v >= 0):
            raise ParseError(f"{what} is not a whole count: {v!r}", line=f"{row['metric']} {v}")
        v = int(v)
    if v < 0:
        raise ParseError(f"{what} is negative: {v}", line=f"{row['metric']} {v}")
    return v


def counters(rows: list[dict[str, Any]]) -> S3Counters:
    """The S3 gateway's byte and request counters from :func:`parse`'s rows."""
    c = S3Counters()
    for r in rows:
        m = r["metric"]
        if m == "SeaweedFS_s3_bucket_traffic_sent_bytes_total":
            c.sent[r["bucket"] or ""] = _whole(r, "bytes sent")
        elif m == "SeaweedFS_s3_bucket_traffic_received_bytes_total":
            c.received[r["bucket"] or ""] = _whole(r, "bytes received")
        elif m == "SeaweedFS_s3_request_total":
            c.requests[(r["bucket"] or "", r["type"] or "", r["code"] or "")] = _whole(r, "a request count")
        elif m == "SeaweedFS_s3_time_to_first_byte_millisecond_count":
            c.bodies[(r["bucket"] or "", r["type"] or "")] = _whole(r, "a time-to-first-byte count")
    return c


def scrape(url: str, *, timeout: float = 10) -> str:
    """The /metrics text of a running SeaweedFS (ToolFailed, in bounded time, when it does not answer)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read(64 * 1024 * 1024).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        raise ToolFailed(["GET", url], -1, f"SeaweedFS's metrics did not answer: {e}") from None
