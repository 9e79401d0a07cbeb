"""fio: build job files, run them with JSON output, parse ``json`` and ``json+`` into flat records.

One record per job and direction (read, write, trim) that did any I/O::

    {"jobname": "readfiles", "groupid": 0, "error": 0, "direction": "read", "fio_version": "fio-3.33",
     "io_bytes": 100179968, "bw_bytes": 10403841, "iops": 2540.0, "runtime_ms": 9629,
     "total_ios": 24458, "lat_mean_ns": 393000.1, "clat_mean_ns": 392000.5,
     "clat_p50_ns": 2448, "clat_p99_ns": 21632, "clat_p99_9_ns": 1777664, ...}

Percentile keys appear when fio printed percentiles (it does by default for completion latency);
``json+`` adds histogram bins, which :func:`clat_histogram` returns.

Sizes in a job file: by default (``kb_base=1024``) fio reads ``K``/``M``/``KB``/``MB`` as powers of
two and, for compatibility with old scripts, ``KiB``/``MiB`` as powers of ten. So the seed's
``filesize=2MiB`` makes files of 2,000,000 bytes (the recorded run here shows it: 100 files, 200 MB
of I/O). :func:`size_in_bytes` applies fio's rule; :func:`job` writes integers as plain byte counts
so that no job built here is ambiguous.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import safeio, workspace
from ..errors import ParseError
from ..runner import Run, run as _run, tool_version
from . import rate_frame

DIRECTIONS = ("read", "write", "trim")
OUTPUT_FORMATS = ("json", "json+")


# --- job files ----------------------------------------------------------------------------------

@dataclass
class Job:
    """One ``[section]`` of a fio job file: a name and its options, in order."""

    name: str
    options: dict[str, str | int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.+-]+", self.name) or self.name == "global":
            raise ValueError(f"a fio job name is letters, digits and _.+- (and not 'global'): {self.name!r}")
        for k, v in self.options.items():
            if not re.fullmatch(r"[a-z0-9_]+", k):
                raise ValueError(f"not a fio option name: {k!r}")
            if v is not None and ("\n" in str(v) or "[" in str(v)):
                raise ValueError(f"option {k}={v!r} would break the job file")

    def text(self) -> str:
        lines = [f"[{self.name}]"]
        for k, v in self.options.items():
            lines.append(k if v is None else f"{k}={v}")
        return "\n".join(lines) + "\n"

    def with_options(self, **options: str | int | None) -> "Job":
        """A copy with some options added or replaced (``None`` as a value writes a bare flag)."""
        merged = dict(self.options)
        merged.update(options)
        return Job(self.name, merged)


def job(name: str, **options: str | int | os.PathLike[str] | None) -> Job:
    """A job; integers are byte counts (or plain numbers) and are written as such.

    >>> job("rand", rw="randread", bs=4096, size=64 * 2**20).text()
    '[rand]\\nrw=randread\\nbs=4096\\nsize=67108864\\n'
    """
    opts: dict[str, str | int | None] = {}
    for k, v in options.items():
        if isinstance(v, bool):
            v = int(v)
        opts[k] = os.fspath(v) if isinstance(v, os.PathLike) else v
    return Job(name, opts)


def jobfile(jobs: Job | Iterable[Job], global_options: Mapping[str, str | int | None] | None = None) -> str:
    """The text of a job file: an optional ``[global]`` section, then each job."""
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    if not jobs:
        raise ValueError("a job file needs at least one job")
    parts = []
    if global_options:
        g = Job("g", dict(global_options))
        parts.append(g.text().replace("[g]", "[global]", 1))
    parts.extend(j.text() for j in jobs)
    return "\n".join(parts)


def seed000_job(directory: str | os.PathLike[str], **overrides: str | int | None) -> Job:
    """The job of seed 000 (IBM Cloud HPC tutorial, "Performance comparison for block size"), verbatim.

    ``filesize=2MiB`` is kept as the seed wrote it: fio makes 2,000,000-byte files from it.
    """
    opts: dict[str, str | int | None] = {"nrfiles": 100, "filesize": "2MiB", "bs": "4k", "rw": "readwrite",
                                         "directory": os.fspath(directory)}
    opts.update(overrides)
    return Job("readfiles", opts)


_FIO_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)


def size_in_bytes(value: str | int, kb_base: int = 1024) -> int:
    """How fio reads a size option, e.g. ``filesize=2MiB``.

    With the default ``kb_base=1024``: ``4k``, ``4K``, ``4KB`` are 4096 and ``4KiB`` is 4000 (!).
    With ``kb_base=1000``: ``KiB`` is 1024 and ``KB``/``k`` is 1000.

    >>> size_in_bytes("2MiB"), size_in_bytes("4k"), size_in_bytes("2MiB", kb_base=1000)
    (2000000, 4096, 2097152)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = _FIO_SIZE.match(str(value))
    if not m:
        raise ValueError(f"not a fio size: {value!r}")
    number, letter, i, b = m.groups()
    power = " kmgtp".index(letter.lower()) if letter else 0
    if kb_base == 1024:
        base = 1000 if i else 1024
    elif kb_base == 1000:
        base = 1024 if i else 1000
    else:
        raise ValueError("kb_base is 1000 or 1024")
    return int(number) * base**power


# --- running ------------------------------------------------------------------------------------

def argv(jobfile_path: str | os.PathLike[str], *, output_format: str = "json",
         extra: Sequence[str] = ()) -> list[str]:
    """``fio --output-format=json JOBFILE`` (``json+`` adds latency histogram bins)."""
    if output_format not in OUTPUT_FORMATS:
        raise ValueError(f"output_format is one of {OUTPUT_FORMATS}: fio's text output changes between "
                         "versions, iolab parses JSON only")
    return ["fio", f"--output-format={output_format}", *extra, os.fspath(jobfile_path)]


def write_jobfile(jobs: Job | Iterable[Job], path: str | os.PathLike[str],
                  global_options: Mapping[str, str | int | None] | None = None) -> Path:
    p = Path(path)
    p.write_text(jobfile(jobs, global_options))
    return p


def run(jobs: Job | Iterable[Job], *, workdir: str | os.PathLike[str], timeout: float = 120,
        output_format: str = "json", global_options: Mapping[str, str | int | None] | None = None,
        name: str = "job", env: Mapping[str, str | None] | None = None) -> Run:
    """Write the job file into workdir and run fio on it. Returns the Run (JSON on stdout).

    A job without ``directory=`` or ``filename=`` runs in workdir (fio's working directory).
    The run carries its witness (``.witness``): the bytes fio's processes made the storage layer move
    (their rusage, once reaped) and what the device behind the first job's directory moved meanwhile.
    """
    wd = Path(workdir)
    jobs = [jobs] if isinstance(jobs, Job) else list(jobs)
    workspace.reserve_all([*bytes_to_lay_out(jobs, wd, global_options), *bytes_of_logs(jobs, wd, global_options)])
    path = write_jobfile(jobs, wd / f"{name}.fio", global_options)
    r = _run(argv(path, output_format=output_format), timeout=timeout, cwd=wd, env=env,
             witness=_witness_path(jobs, wd, global_options))
    return replace(r, tool_version=tool_version("fio"))


def _witness_path(jobs: Sequence[Job], workdir: Path, global_options: Mapping[str, str | int | None] | None) -> Path:
    """Where the first job does its I/O (its ``directory=``, else the working directory)."""
    o = {**(global_options or {}), **jobs[0].options}
    directory = str(o.get("directory") or "").split(":")[0]
    where = Path(directory) if directory else workdir
    return where if where.exists() else workdir


def bytes_to_lay_out(jobs: Iterable[Job], workdir: str | os.PathLike[str],
                     global_options: Mapping[str, str | int | None] | None = None) -> list[tuple[Path, int]]:
    """(directory, bytes) that each job's files will take: fio lays out ``filesize`` x ``nrfiles`` (or
    ``size``), x ``numjobs``, before reading or writing them (files that exist already are counted
    again: the budget errs on the safe side). A job on a device (``filename=/dev/...``) adds nothing."""
    out = []
    for j in jobs:
        o = {**(global_options or {}), **j.options}
        kb_base = _int(o, "kb_base", 1024)
        nrfiles = _int(o, "nrfiles", 1)
        numjobs = _int(o, "numjobs", 1)
        for refused in ("fill_device", "fill_fs"):
            if refused in o and str(o[refused]) not in ("0", "false"):
                raise ValueError(f"fio {refused}: it writes until the filesystem is full; iolab cannot reserve that")
        directory = str(o.get("directory") or "").split(":")[0]
        where = Path(directory) if directory else Path(workdir)
        if o.get("filename"):
            first = Path(str(o["filename"]).split(":")[0])
            where = first if first.is_absolute() else where / first
            existing = first if first.is_absolute() else where
            if existing.exists() and not existing.is_file():
                continue                                 # a device: nothing is laid out
        if o.get("filesize") is not None:
            per_job = _size(o, "filesize", kb_base, last=True) * nrfiles
        elif o.get("size") is not None:
            per_job = _size(o, "size", kb_base)
        else:
            continue
        if o.get("offset") is not None:          # fio lays a file out from 0 to offset + size
            per_job += _size(o, "offset", kb_base) * nrfiles
        out.append((where, per_job * numjobs))
    return out


def _int(o: Mapping[str, Any], key: str, default: int) -> int:
    v = o.get(key)
    if v is None or v == "":
        return default
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if not re.fullmatch(r"\s*\d+\s*", str(v)):
        raise ValueError(f"fio {key}={v!r}: iolab cannot read this number, so cannot count what the job writes")
    return int(v)


def _size(o: Mapping[str, Any], key: str, kb_base: int, *, last: bool = False) -> int:
    """A size option read as fio does: of a range or a list (``bs=4k,8k``, ``filesize=1M-2M``,
    ``bssplit=4k/10:64k/90``) the largest with ``last``, else the smallest; ValueError naming the option
    when iolab cannot read it (a percentage of a device, say): what the job writes could not be counted."""
    v = o[key]
    parts = [p.split("/")[0] for p in re.split(r"[-,:]", str(v)) if p.strip()] if not isinstance(v, int) else [v]
    try:
        sizes = [size_in_bytes(p, kb_base) for p in parts]
    except ValueError:
        raise ValueError(f"fio {key}={v!r}: iolab cannot read this size, so cannot count what the job writes; "
                         "give a number of bytes (with k, m or g)") from None
    if not sizes:
        raise ValueError(f"fio {key}={v!r}: an empty size")
    return max(sizes) if last else min(sizes)


# per-I/O log entries (fio 3.x flush_samples: "msec, value, ddir, bs[, offset], prio"): an upper bound of a
# line, every number at its widest; the lat log is three files (lat, clat, slat)
LOG_LINE = 64
LOG_LINE_OFFSET = 24
LOG_FILES = {"write_bw_log": 1, "write_iops_log": 1, "write_lat_log": 3}


def bytes_of_logs(jobs: Iterable[Job], workdir: str | os.PathLike[str],
                  global_options: Mapping[str, str | int | None] | None = None) -> list[tuple[Path, int]]:
    """(where, bytes) that each job's logs will take: ``write_bw_log``/``write_iops_log``/``write_lat_log``
    (one line per I/O, or per ``log_avg_msec`` window of a ``time_based`` job's ``runtime``) and
    ``write_iolog`` (one line per I/O), at the path each names (relative to workdir; a bare option: the
    job's name). I/Os: ``io_size`` (or the size laid out) x ``loops`` / the smallest block size, x
    ``numjobs``. A log iolab cannot bound (``write_hist_log``; a per-I/O log of a ``time_based`` job)
    raises ValueError."""
    out = []
    wd = Path(workdir)
    for j in jobs:
        o = {**(global_options or {}), **j.options}
        logs = [k for k in (*LOG_FILES, "write_iolog") if k in o]
        if "write_hist_log" in o:
            raise ValueError("fio write_hist_log: a line of ~1,200 bins per interval, its size bounded by nothing "
                             "iolab can read; use write_lat_log with log_avg_msec")
        if not logs:
            continue
        kb_base = _int(o, "kb_base", 1024)
        numjobs = _int(o, "numjobs", 1)
        avg = _int(o, "log_avg_msec", 0)
        timed = "time_based" in o and str(o["time_based"]) not in ("0", "false")
        if timed:
            runtime = o.get("runtime")
            if not avg or runtime is None:
                raise ValueError("fio: a per-I/O log of a time_based job has no size bound: give runtime and "
                                 "log_avg_msec")
            ms = _duration_ms(runtime)
            entries = (ms // avg + 2) * len(DIRECTIONS) * numjobs
        else:
            if o.get("io_size") is not None or o.get("io_limit") is not None:
                io_bytes = _size(o, "io_size" if o.get("io_size") is not None else "io_limit", kb_base)
            elif o.get("size") is not None:
                io_bytes = _size(o, "size", kb_base, last=True)
            elif o.get("filesize") is not None:
                io_bytes = _size(o, "filesize", kb_base, last=True) * _int(o, "nrfiles", 1)
            else:
                raise ValueError(f"fio job {j.name!r} logs its I/O but has no size: iolab cannot count its log")
            bs = min(_size(o, k, kb_base) for k in ("bs", "blocksize", "bsrange", "blocksize_range", "bssplit")
                     if o.get(k) is not None) if any(o.get(k) is not None for k in (
                        "bs", "blocksize", "bsrange", "blocksize_range", "bssplit")) else 4096
            loops = _int(o, "loops", 1)
            entries = -(-io_bytes // max(bs, 1)) * loops * numjobs
        line = LOG_LINE + (LOG_LINE_OFFSET if str(o.get("log_offset") or "0") not in ("0", "false") else 0)
        for k in logs:
            prefix = str(o[k]) if o[k] not in (None, "", 1, "1") else j.name
            where = Path(prefix) if Path(prefix).is_absolute() else wd / prefix
            if k == "write_iolog":      # "filename op offset length" per I/O (timed: bounded by nothing)
                if timed:
                    raise ValueError("fio write_iolog of a time_based job: one line per I/O, bounded by nothing")
                nbytes = entries * (len(str(o.get("filename") or o.get("directory") or wd)) + 64)
            else:
                nbytes = entries * line * LOG_FILES[k]
            out.append((where.parent, nbytes))
    return out


def _duration_ms(value: str | int) -> int:
    """fio's time: seconds by default, or with a unit (us, ms, s, m, h, d)."""
    m = re.fullmatch(r"\s*(\d+)\s*(us|usec|ms|msec|s|sec|m|min|h|d)?\s*", str(value))
    if not m:
        raise ValueError(f"fio runtime={value!r}: iolab cannot read this duration")
    scale = {"us": 0.001, "usec": 0.001, "ms": 1, "msec": 1, None: 1000, "s": 1000, "sec": 1000, "m": 60_000,
             "min": 60_000, "h": 3_600_000, "d": 86_400_000}[m.group(2)]
    return max(int(int(m.group(1)) * scale), 1)


# --- parsing ------------------------------------------------------------------------------------

def _document(text: str) -> dict[str, Any]:
    """The JSON document in fio's stdout (fio may print notes before it)."""
    lines = text.splitlines(keepends=True)
    offset = 0
    for line_no, line in enumerate(lines, 1):
        if line.startswith("{"):
            rest = text[offset:]
            try:
                # --output-format=json,normal prints the human-readable report after the document: any
                # text after it is allowed, but not a second JSON document
                doc = safeio.loads(rest, what="fio JSON document", trailing=True)
            except ParseError as e:
                no = e.line_no + line_no - 1 if e.line_no is not None else None
                raise ParseError(f"fio's JSON is broken ({str(e).split(' (line ')[0]}); was the run cut short?",
                                 line_no=no, line=e.line) from None
            try:
                _no_second_document(rest)
            except ParseError as e:
                raise ParseError(str(e).split(" (line ")[0], line_no=(e.line_no or 1) + line_no - 1,
                                 line=e.line) from None
            if not isinstance(doc, dict) or "jobs" not in doc:
                raise ParseError("expected fio's JSON output with a 'jobs' list", line_no=line_no, line=line)
            return doc
        offset += len(line)
    first = lines[0] if lines else ""
    raise ParseError("no JSON object in this fio output (run fio with --output-format=json)",
                     line_no=1 if lines else None, line=first if lines else None)


def _no_second_document(rest: str) -> None:
    """ParseError when another JSON document follows fio's (two runs' outputs joined, a tampered file)."""
    import json
    try:
        _doc, end = json.JSONDecoder().raw_decode(rest, len(rest) - len(rest.lstrip()))
    except ValueError:
        return                               # safeio.loads read it: cannot happen; nothing to add
    after = rest[end:].lstrip()
    if not after:
        return
    line_no = rest.count("\n", 0, len(rest) - len(after)) + 1
    first = after.splitlines()[0][:200]
    if after.startswith(("{", "[")):
        raise ParseError("a second JSON document after fio's (two outputs joined?)", line_no=line_no, line=first)
    # what --output-format=json,normal prints after the document: a job's report, or a group's status
    if not re.match(r"\S.{0,200}: \(groupid=\d+, jobs=\d+\): err=|Run status group \d+", first):
        raise ParseError("fio's JSON document goes on after its end with text that is not fio's normal report",
                         line_no=line_no, line=first)


def _fail(text: str, what: str, key: str | None = None) -> ParseError:
    """ParseError naming the first line that holds ``"key"`` (the JSON is read whole: no position)."""
    lines = text.splitlines()
    no = next((i for i, ln in enumerate(lines, 1) if f'"{key}"' in ln), None) if key else None
    return ParseError(f"fio JSON: {what}"[:300], line_no=no, line=lines[no - 1] if no else None)


def _pct_key(prefix: str, pct: str, text: str = "") -> str:
    # "99.900000" -> "p99_9"; "50.000000" -> "p50"
    value = float(pct) if re.fullmatch(r"\d{1,3}(?:\.\d{1,12})?", pct) else -1.0
    if not 0 <= value <= 100:
        raise _fail(text, f"a {prefix} percentile should be named by a number, got {pct!r}", pct) from None
    num = f"{value:.6f}".rstrip("0").rstrip(".")
    return f"{prefix}_p{num.replace('.', '_')}_ns"


def _number(d: Mapping[str, Any], key: str, where: str, text: str = "", *, whole: bool = False,
            default: Any = None) -> Any:
    """d[key] as a finite number (a whole one when ``whole``); ParseError naming its line if it is not."""
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")) \
            or whole and v != int(v) or v < 0:
        raise _fail(text, f"{where} has no {'whole ' if whole else ''}number {key!r} that is not negative "
                          f"(got {v!r})", key)
    return v


def _jobs(doc: dict[str, Any], text: str) -> list[dict[str, Any]]:
    jobs = doc["jobs"]
    if not isinstance(jobs, list) or not jobs:
        raise _fail(text, "the 'jobs' list is empty (or not a list)", "jobs")
    for j in jobs:
        if not isinstance(j, dict):
            raise _fail(text, f"a job should be an object, got {j!r}", "jobs")
        if not isinstance(j.get("jobname"), str):
            raise _fail(text, "a job has no 'jobname'", "jobname")
    return jobs


def parse(text: str) -> list[dict[str, Any]]:
    """One flat record per job and direction with I/O, from fio ``json`` or ``json+`` output.

    A value of the wrong type (a number that is not one, a job that is not an object) raises
    ParseError naming the first line that holds its key; JSON cut short raises ParseError (fio's JSON
    ends with its closing brace: a cut document does not decode)."""
    doc = _document(text)
    version = doc.get("fio version")
    if version is not None and not isinstance(version, str):
        raise _fail(text, f"'fio version' should be text, got {version!r}", "fio version")
    records: list[dict[str, Any]] = []
    for j in _jobs(doc, text):
        name = j["jobname"]
        for d in DIRECTIONS:
            if d in j and not isinstance(j[d], dict):
                raise _fail(text, f"job {name!r} {d} should be an object, got {j[d]!r}", d)
        did_io = [d for d in DIRECTIONS if isinstance(j.get(d), dict) and
                  (j[d].get("total_ios", 0) or j[d].get("io_bytes", 0))]
        for d in did_io or [d for d in ("read", "write") if isinstance(j.get(d), dict)]:
            s = j[d]
            where = f"job {name!r} {d}"
            rec: dict[str, Any] = {
                "jobname": name, "groupid": int(_number(j, "groupid", f"job {name!r}", text, whole=True, default=0)),
                "error": int(_number(j, "error", f"job {name!r}", text, whole=True, default=0)), "direction": d,
                "fio_version": version,
                "io_bytes": int(_number(s, "io_bytes", where, text, whole=True)),
                "bw_bytes": int(_number(s, "bw_bytes", where, text, whole=True)),
                "iops": float(_number(s, "iops", where, text)),
                "runtime_ms": int(_number(s, "runtime", where, text, whole=True)),
                "total_ios": int(_number(s, "total_ios", where, text, whole=True, default=0)),
            }
            for lat in ("lat", "clat", "slat"):
                block = s.get(f"{lat}_ns")
                if block is not None and not isinstance(block, dict):
                    raise _fail(text, f"{where} {lat}_ns should be an object, got {block!r}", f"{lat}_ns")
                # slat is not measured by synchronous engines: fio then writes N=0 and mean 0
                if isinstance(block, dict) and "mean" in block and _number(block, "N", f"{where} {lat}_ns", text,
                                                                          whole=True, default=1):
                    rec[f"{lat}_mean_ns"] = float(_number(block, "mean", f"{where} {lat}_ns", text))
                    pct = block.get("percentile")
                    if pct is None:
                        pct = {}
                    if not isinstance(pct, dict):
                        raise _fail(text, f"{where} {lat}_ns percentile should be an object, got {pct!r}", "percentile")
                    for p in pct:
                        rec[_pct_key(lat, p, text)] = int(_number(pct, p, f"{where} {lat}_ns percentile", text,
                                                                  whole=True))
            records.append(rec)
    return records


def clat_histogram(text: str) -> list[dict[str, Any]]:
    """Completion-latency histogram bins of ``json+`` output: jobname, direction, clat_ns, count."""
    doc = _document(text)
    rows = []
    found = False
    for j in _jobs(doc, text):
        for d in DIRECTIONS:
            clat = (j.get(d) or {}).get("clat_ns", {}) if isinstance(j.get(d) or {}, dict) else None
            if not isinstance(clat, dict):
                raise _fail(text, f"job {j['jobname']!r} {d} clat_ns should be an object", "clat_ns")
            bins = clat.get("bins")
            if bins is None:
                continue
            if not isinstance(bins, dict):
                raise _fail(text, f"job {j['jobname']!r} {d} clat_ns bins should be an object", "bins")
            found = True
            where = f"job {j['jobname']!r} {d} clat_ns bins"
            for ns in bins:
                if not re.fullmatch(r"[0-9]{1,20}", ns):
                    raise _fail(text, f"{where}: a bin is named by its latency in ns, got {ns!r}", ns)
            for ns, _ in sorted(bins.items(), key=lambda kv: int(kv[0])):
                rows.append({"jobname": j["jobname"], "direction": d, "clat_ns": int(ns),
                             "count": int(_number(bins, ns, where, text, whole=True))})
    if not found:
        raise ParseError("no histogram bins: run fio with --output-format=json+")
    return rows


def to_frame(records: Sequence[Mapping[str, Any]]):
    """A DataFrame with MB/s (10**6, fio's and the seed's unit) and MiB/s columns added."""
    return rate_frame(records, "bw_bytes")
