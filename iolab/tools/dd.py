"""dd: argv with direct/dsync flags, and a parser for its summary on stderr, in any locale.

dd (GNU coreutils) prints three lines on stderr; the words and the decimal mark follow the locale::

    8+0 records in                                   8+0 Datensätze ein
    8+0 records out                                  8+0 Datensätze aus
    8388608 bytes (8.4 MB, 8.0 MiB) copied,          8388608 Bytes (8,4 MB, 8,0 MiB) kopiert,
      0.134703 s, 62.3 MB/s                            0,134703 s, 62,3 MB/s

:func:`parse` reads the numbers by position, not by word, so it works for the C and German outputs
recorded here and for any locale with ``.`` or ``,`` as the decimal mark. :func:`run` runs dd with
``LC_ALL=C`` unless told otherwise. Returned record::

    {"records_in": 8, "records_in_partial": 0, "records_out": 8, "records_out_partial": 0,
     "bytes": 8388608, "seconds": 0.134703, "bytes_per_s": 62274285.6,    # bytes / seconds
     "reported_bytes_per_s": 62300000.0,                                 # dd's rounded figure
     "error": ""}                                                         # first "dd: ..." line
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import workspace
from ..errors import ParseError
from ..runner import Run, run as _run, tool_version
from ..units import parse_size
from . import rate_frame

FLAGS = ("direct", "dsync", "sync", "fullblock", "nocache", "noatime", "count_bytes", "skip_bytes")

_RECORDS = re.compile(r"^\s*(\d{1,20})\+(\d{1,20})\s+\S")
_SUMMARY = re.compile(r"^\s*(\d{1,20})\s+\S")
_NUM = r"(\d{1,30}(?:[.,]\d{1,30})?(?:e[-+]?\d{1,3})?)"
_NUM_RE = re.compile(_NUM, re.IGNORECASE)
_SECONDS = re.compile(rf"{_NUM}\s*s")                                  # fullmatch
_RATE = re.compile(r"(\S+)\s+([kKMGTPEZY]?i?B)/s", re.IGNORECASE)     # fullmatch: value, unit
_MAX_LINE = 4096                 # dd's lines are short: a longer one is refused before any pattern
_PREFIX = {"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def argv(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, bs: int | str, count: int | None = None,
         iflag: Sequence[str] = (), oflag: Sequence[str] = (), skip: int | None = None, seek: int | None = None,
         conv: Sequence[str] = ()) -> list[str]:
    """``dd if=SRC of=DST bs=N [count=] [iflag=direct] [oflag=dsync] ...`` as a list.

    >>> argv("/dev/zero", "f", bs="1MiB", count=8, oflag=["dsync"])
    ['dd', 'if=/dev/zero', 'of=f', 'bs=1048576', 'count=8', 'oflag=dsync']
    """
    for flag in (*iflag, *oflag):
        if flag not in FLAGS:
            raise ValueError(f"unknown dd flag {flag!r}; iolab knows {', '.join(FLAGS)}")
    out = ["dd", f"if={os.fspath(src)}", f"of={os.fspath(dst)}", f"bs={parse_size(bs)}"]
    if count is not None:
        out.append(f"count={int(count)}")
    if skip is not None:
        out.append(f"skip={int(skip)}")
    if seek is not None:
        out.append(f"seek={int(seek)}")
    if iflag:
        out.append("iflag=" + ",".join(iflag))
    if oflag:
        out.append("oflag=" + ",".join(oflag))
    if conv:
        out.append("conv=" + ",".join(conv))
    return out


def run(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, bs: int | str, count: int | None = None,
        iflag: Sequence[str] = (), oflag: Sequence[str] = (), skip: int | None = None, seek: int | None = None,
        conv: Sequence[str] = (), timeout: float = 120, locale: str = "C",
        env: Mapping[str, str | None] | None = None) -> Run:
    """Run dd with ``LC_ALL=locale`` (C by default); its summary is in ``Run.stderr``.

    The run carries its witness (``.witness``, :class:`iolab.witness.Witnessed`): the bytes dd itself
    made the storage layer move (its rusage, once waited for) and what the device behind its file
    moved for everyone meanwhile."""
    if workspace.holding(dst) is not None:       # its output counts against that workspace's budget
        workspace.reserve_for(dst, bytes_to_write(src, bs=bs, count=count, skip=skip, iflag=iflag))
    full_env: dict[str, str | None] = {"LC_ALL": locale, "LANGUAGE": None}
    full_env.update(env or {})
    watched = witness_path(src, dst)
    r = _run(argv(src, dst, bs=bs, count=count, iflag=iflag, oflag=oflag, skip=skip, seek=seek, conv=conv),
             timeout=timeout, env=full_env, witness=watched)
    note = "" if watched is not None else "dd read and wrote no file (devices only): nothing to witness"
    return replace(r, tool_version=tool_version("dd"), witness_note=note)


def witness_path(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path | None:
    """The file (or, for one dd will create, its directory) whose device witnesses a dd run: the
    output when it is a file, else the input; None when both are devices (/dev/zero -> /dev/null)."""
    for p in (Path(dst), Path(src)):
        if p.is_file():
            return p
        if not p.exists() and p.parent.is_dir():
            return p.parent
    return None


def bytes_to_write(src: str | os.PathLike[str], *, bs: int | str, count: int | None = None,
                   skip: int | None = None, iflag: Sequence[str] = ()) -> int:
    """At most how many bytes dd will write: ``bs`` x ``count``, or what is left of a regular ``src``
    after ``skip`` blocks (a device such as /dev/zero with no count is refused: it never ends)."""
    block = parse_size(bs)
    limit = block * count if count is not None else None
    if "count_bytes" in iflag and count is not None:
        limit = count
    s = Path(src)
    if s.is_file():
        left = max(s.stat().st_size - (skip or 0) * (1 if "skip_bytes" in iflag else block), 0)
        return left if limit is None else min(left, limit)
    if limit is None:
        raise ValueError(f"dd from {src} without count= would write until the filesystem is full")
    return limit


def _float(text: str) -> float:
    return float(text.replace(",", "."))


def _split_summary(line: str) -> list[str]:
    # drop "(8,4 MB, 8,0 MiB)", then split on ", " (a decimal comma is never followed by a space);
    # [^()] keeps the pattern linear: at a "(" that is never closed it stops at the next "("
    flat = re.sub(r"\([^()]*\)", "", line.strip())
    return [p.strip() for p in re.split(r",\s+", flat) if p.strip()]


def _summary_record(records: list[tuple[int, int, int]], no: int, line: str, error: str) -> dict[str, Any]:
    (_, rin, rin_p), (_, rout, rout_p) = records
    parts = _split_summary(line)
    if len(parts) < 3:
        raise ParseError("dd summary has fewer than three comma-separated parts", line_no=no, line=line)
    nbytes = int(_SUMMARY.match(parts[0]).group(1))  # type: ignore[union-attr]
    ms, mr = _SECONDS.fullmatch(parts[-2]), _RATE.fullmatch(parts[-1])
    if not ms:
        raise ParseError("cannot read the seconds in dd's summary", line_no=no, line=line)
    if not mr:
        raise ParseError("cannot read the rate in dd's summary", line_no=no, line=line)
    value, unit = mr.groups()
    if not _NUM_RE.fullmatch(value) and "inf" not in value.lower():
        raise ParseError("cannot read the rate in dd's summary", line_no=no, line=line)
    seconds = _float(ms.group(1))
    prefix = unit[:-1]
    if prefix not in _PREFIX:
        raise ParseError(f"unknown rate unit {unit}/s in dd's summary", line_no=no, line=line)
    reported: float | None = _float(value) * _PREFIX[prefix] if _NUM_RE.fullmatch(value) else None
    if not math.isfinite(seconds) or reported is not None and not math.isfinite(reported):
        raise ParseError("a time or a rate in dd's summary that is not a finite number", line_no=no, line=line)
    # dd measured no time (it prints "0 s, Infinity B/s"): no rate can be told, not an infinite one
    return {"records_in": rin, "records_in_partial": rin_p, "records_out": rout, "records_out_partial": rout_p,
            "bytes": nbytes, "seconds": seconds,
            "bytes_per_s": nbytes / seconds if seconds > 0 else None,
            "reported_bytes_per_s": reported, "error": error}


def _runs(text: str) -> tuple[list[dict[str, Any]], list[str], list[int]]:
    """dd's runs in ``text``: (records, its lines, numbers of the lines after the last complete run).

    A run is "dd: ..." lines and progress lines (skipped, but the first error is kept), exactly two
    records lines, then the summary. Lines longer than _MAX_LINE are not dd's: ParseError (and no
    pattern ever sees them)."""
    lines = text.replace("\r", "\n").splitlines()
    runs: list[dict[str, Any]] = []
    records: list[tuple[int, int, int]] = []     # (line_no, full, partial)
    error = ""
    after: list[int] = []
    for no, line in enumerate(lines, 1):
        if len(line) > _MAX_LINE:
            raise ParseError(f"a line of {len(line):,} characters is not dd's (its lines are short)", line_no=no,
                             line=line[:200])
        if not line.strip():
            continue
        after.append(no)
        if line.startswith("dd: "):
            error = error or line[4:].strip()
            continue
        m = _RECORDS.match(line)
        if m:
            if len(records) == 2:
                raise ParseError("a third 'records' line before dd's summary", line_no=no, line=line)
            records.append((no, int(m.group(1)), int(m.group(2))))
            continue
        if _SUMMARY.match(line) and "/s" in line:
            if len(records) == 2:                # the summary that ends a run
                runs.append(_summary_record(records, no, line, error))
                records, error, after = [], "", []
            elif records:
                raise ParseError("dd's summary after one 'records' line: it prints two (in, out)", line_no=no,
                                 line=line)
            continue                             # a progress line (status=progress) before the records
    return runs, lines, after


def parse(text: str) -> dict[str, Any]:
    """The last summary in dd's stderr (progress lines written with ``status=progress`` are skipped).

    A run is complete once its summary line is there; text after the last complete run (another run
    cut short, e.g. its 'records' line) raises ParseError rather than give the earlier run's numbers.
    """
    runs, lines, after = _runs(text)
    if not runs:
        records = [no for no, line in enumerate(lines, 1) if _RECORDS.match(line)]
        if len(records) < 2:
            raise ParseError("expected dd's 'N+M records in' and 'records out' lines (dd writes them on stderr)",
                             line_no=1 if lines else None, line=lines[0] if lines else None)
        raise ParseError("expected dd's summary line 'BYTES bytes ... copied, SECONDS s, RATE'",
                         line_no=records[-1], line=lines[records[-1] - 1])
    if after:
        raise ParseError("dd's output goes on after its last summary: another run, cut short", line_no=after[0],
                         line=lines[after[0] - 1])
    return runs[-1]


def parse_all(text: str) -> list[dict[str, Any]]:
    """Several dd summaries one after the other (the stderr of a block-size sweep, run by run). Text
    after the last complete run (a run cut short) raises ParseError."""
    runs, lines, after = _runs(text)
    if not runs:
        raise ParseError("no dd summary in this text", line_no=1 if lines else None, line=lines[0] if lines else None)
    if after:
        raise ParseError("text after the last dd summary is not a complete dd output", line_no=after[0],
                         line=lines[after[0] - 1])
    return runs


def to_frame(records: Sequence[Mapping[str, Any]]):
    """A DataFrame with MB/s (10**6, dd's unit) and MiB/s columns added."""
    return rate_frame(records, "bytes_per_s")
