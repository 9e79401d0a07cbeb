"""Attack every parser of iolab with cut, mutated and garbage input, and with 10 MB lines.

Usage: .venv/bin/python benchmarks/attack_parsers.py [--quick] [--seed 0] [--out FILE] [--only NAME]

For each public parser (strace, fio, dd, ior, mdtest, darshan, ceph, pagecache.parse_meminfo, fsinfo.mounts,
slurm.parse_scontrol / read_manifest) it feeds:

* every real input it reads (data/recorded/**, the recordings named by tests/golden/**; /proc/meminfo,
  /proc/self/mountinfo and ``strace -V`` of this machine) cut at line boundaries (every one up to
  MAX_LINE_CUTS per input, else that many evenly spaced plus the last ten) and at random byte offsets
  inside lines;
* line-level mutations: a line dropped, duplicated, two swapped, a number replaced by a garbage token
  ("0.", "99.99000:", "-", "nan", "1e999", ...), one character changed; JSON inputs also get a value of
  another type at a random place ("jobs": [1] instead of a job);
* pure garbage: random bytes (decoded as Latin-1) and random printable text;
* 10 MB single lines (digits, "a" * N, the tool's own key prefix + N characters; with and without the
  final newline), each in a forked child with a time limit.

Each case is classified:

  correct      returned, and what it returned is part of the parse of the untruncated input (its records
               a subsequence of the reference's; a call strace never finished may come back flagged as
               such). Cuts only: that is where "part of the true answer" is well defined.
  ParseError   refused with iolab.ParseError.
  unjudged     a mutated input that parsed: a mutation can make another valid output.
  WRONG        a cut that returned something the full input does not contain (a record cut short
               returned as complete, nulls in a total), or garbage that parsed into something.
  FOREIGN      any other exception (ValueError, AttributeError, ...): the caller cannot catch it as
               a parse failure.
  timeout      a 10 MB line not parsed within --limit seconds (the child is killed).

Prints one row per parser and a table of the 10 MB cases, then examples of WRONG and FOREIGN cases.
Not a test: tests/test_parser_attack.py runs a seeded, fast subset of the same cases.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import random
import re
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from iolab import fsinfo, pagecache, recordings, slurm, units  # noqa: E402
from iolab.errors import ParseError  # noqa: E402
from iolab.lessons.l07_darshan import mpiio as darshan_mpiio  # noqa: E402
from iolab.lessons.l01_page_cache import writes as page_cache_writes
from iolab.lessons.l08_parallel_fs import ior_runs as parallel_fs_ior
from iolab.lessons.l08_parallel_fs import rgw as parallel_fs_rgw
from iolab.lessons.l08_parallel_fs import sections as parallel_fs_sections
from iolab.lessons.l09_workflows import slurm as l09_slurm
from iolab.objectstore import slowlink  # noqa: E402
from iolab.tools import bpftrace, ceph, darshan, dd, fio, ior, mdtest, seaweedfs, snakemake, strace  # noqa: E402

OUTCOMES = ("correct", "ParseError", "unjudged", "WRONG", "FOREIGN", "timeout")
GARBAGE_TOKENS = ("0.", "99.99000:", "-", "nan", "inf", "1e999", "-1", "0x", "x", "", "٣", "1,5", "+",
                  "9" * 30, "None", "{}", "[", "'", '"', "\\", "(", ")", ":", "=")
MAX_LINE_CUTS = 400
HUGE = 10 * 1024 * 1024


# --- what a parser returned, as comparable units ----------------------------------------------------

def _canon(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=repr)


def _records(x: Any) -> list[str]:
    """A list of records (dicts, tuples, dataclasses) -> one canonical string each."""
    import pandas as pd

    if isinstance(x, pd.DataFrame):
        x = x.astype(object).where(x.notna(), None).to_dict("records")
    out = []
    for r in x:
        if hasattr(r, "__dataclass_fields__"):
            r = {k: getattr(r, k) for k in r.__dataclass_fields__}
        out.append(_canon(r))
    return out


def _items(x: dict) -> list[str]:
    """A dict whose keys are facts on their own (meminfo, scontrol): its non-None items."""
    return [_canon([k, v]) for k, v in x.items() if v is not None]


def _true_flags(x: dict) -> list[str]:
    """command_flags: the options it found (all False: it found none)."""
    return [_canon(k) for k, v in x.items() if v]


def _whole(x: Any) -> list[str]:
    return [_canon(x)]


def _summary_units(s: Any) -> list[str]:
    out = []
    tables = [("", s)] + list(getattr(s, "personalities", {}).items())
    for name, t in tables:
        out += [_canon([name, "row", r]) for r in t]
        out.append(_canon([name, "total", t.total]))
    return out


def _window_units(w: tuple) -> list[str]:
    return [_canon([i, v]) for i, v in enumerate(w) if v is not None]


def _is_subsequence(got: list[str], ref: list[str]) -> bool:
    it = iter(ref)
    return all(any(g == r for r in it) for g in got)


# --- the parsers and what they read -------------------------------------------------------------------

@dataclass
class Target:
    name: str
    call: Callable[[Any], Any]                     # input -> what the parser returns
    units: Callable[[Any], list[str]]              # what it returned -> comparable units
    inputs: list[tuple[str, Any]] = field(default_factory=list)   # (label, real input)
    ordered: bool = True                           # units must keep the reference's order
    flag: Callable[[str], bool] | None = None      # a unit allowed although not in the reference
    reference: Callable[[Any], list[str]] | None = None   # full input -> acceptable units (default: units(call))
    lenient: bool = False                          # finding nothing in garbage is its documented answer
    key: str = ""                                  # the tool's own line: its start and end (10 MB lines)
    suffix: str = ""
    binary: bool = False                           # input is bytes (a Darshan log)
    cuts: bool = True                              # a cut input has a well-defined true answer
    isolate: bool = False                          # every case in a forked child (a crash in C code)
    judge_garbage: bool = True                     # False: garbage may hold what it looks for (argv flags)
    special: Callable[[str], Any] | None = None    # reads a file: (kind of special file) -> what it returns
    signed: frozenset[str] = frozenset()           # keys whose values may be negative (a syscall's return)
    concat: str = "refuse"                         # two inputs one after the other: "refuse" (ParseError or
                                                   # both inputs' records), "free" (anything but FOREIGN)


_SIGNED = frozenset({"ret", "fd", "exit_code", "status"})   # a syscall's return value, an exit status
_DD_KEY = "1+0 records in\n1+0 records out\n1 bytes (1 B) copied, 1 s, "


def _unfinished_flag(unit: str) -> bool:
    return '"event": "unfinished"' in unit


def _calls(text: str) -> list[dict]:
    return list(strace.parse_calls(text))


def _dd_reference(text: str) -> list[str]:
    try:
        return _records(dd.parse_all(text))
    except ParseError:
        return _whole(dd.parse(text))


def _summary_totals(text: str) -> list[str]:
    s = strace.parse_summary(text)
    return [_canon(t.total) for t in [s, *s.personalities.values()]]


def _darshan_view(data: bytes) -> dict:
    with tempfile.TemporaryDirectory(prefix="iolab-attack-") as d:
        p = Path(d) / "log.darshan"
        p.write_bytes(data)
        return darshan.golden_view(p)


def lesson(name: str) -> Callable[[str], Any]:
    """A parser of lesson 05's traces: in iolab.tools.mdtest, or in iolab.lessons.l05_mdtest.calls where the
    lesson code moves (issues 15, 23). Named mdtest.<name> in the tables either way."""
    f = getattr(mdtest, name, None)
    if f is None:
        from iolab.lessons.l05_mdtest import calls as metadata_strace
        f = getattr(metadata_strace, name)
    return f


def _text(ref: str) -> str:
    return recordings.load(ref).text


def _rgw_texts(cephs: list[str], *fields: str) -> list[tuple[str, str]]:
    """The raw outputs kept in lesson 08's gateway document (data/recorded/ceph/rgw.json), by field (a
    field that is a dict: each of its outputs)."""
    out = []
    for ref in (r for r in cephs if r.endswith("/rgw")):
        placement = json.loads(_text(ref))["placement"]
        for f in fields:
            v = placement[f]
            out += [(f"{ref}:{f}:{k}", t) for k, t in sorted(v.items()) if t] if isinstance(v, dict) else [(f"{ref}:{f}", v)]
    return out


def _rgw_units(d: dict) -> list[str]:
    """parallel_fs_rgw.parse_rgw: its RADOS objects and reads, one unit each, then its manifest and bucket."""
    return _records(d["objects"]) + _records(d["reads"]) + [_canon(d["manifest"]), _canon(d["bucket"])]


def _section_units(x: Any) -> list[str]:
    """A lesson 08 section's parse: a frame (one unit per row), or a dict of frames, lists and facts
    (one unit per row of each, prefixed by its key, and one per other item)."""
    import pandas as pd

    if isinstance(x, pd.DataFrame):
        return _records(x)
    out = []
    for k, v in x.items():
        if isinstance(v, (pd.DataFrame, list)):
            out += [_canon([k, u]) for u in _records(v)]
        else:
            out.append(_canon([k, v]))
    return out


def _command_lines() -> list[tuple[str, str]]:
    out = []
    for ref in recordings.available("ior") + recordings.available("slurm"):
        text = recordings.load(ref).text
        m = re.search(r'"Command line": "([^"]*)"', text) or re.search(r"^Command line\s*:\s*(.*)$", text, re.M)
        if m:
            out.append((ref, m.group(1)))
    return out


def _live(label: str, make: Callable[[], str]) -> list[tuple[str, str]]:
    try:
        return [(label, make())]
    except (OSError, subprocess.SubprocessError):
        return []


def _strace_version() -> str:
    return subprocess.run(["strace", "-V"], capture_output=True, text=True, timeout=10).stdout


def _darshan_special(how: str) -> Any:
    with tempfile.TemporaryDirectory(prefix="iolab-attack-") as d:
        return darshan.golden_view(_special_file(Path(d) / "log.darshan", how))


def _special_file(p: Path, how: str) -> Path:
    """A file another user could put where a loader reads: a FIFO, a link to /dev/zero, a directory, a
    sparse file of 2 GiB."""
    import os

    if how == "fifo":
        os.mkfifo(p)
    elif how == "dev-zero":
        p.symlink_to("/dev/zero")
    elif how == "directory":
        p.mkdir()
    elif how == "sparse-2g":
        with open(p, "wb") as f:
            f.truncate(2 * 1024 ** 3)
    return p


SPECIALS = ("fifo", "dev-zero", "directory", "sparse-2g")


def _load_meta(meta: str) -> dict:
    """recordings.load of a recording whose .meta.json holds ``meta`` (its raw text a real one)."""

    with tempfile.TemporaryDirectory(prefix="iolab-attack-") as d:
        (Path(d) / "t").mkdir()
        (Path(d) / "t" / "x.txt").write_text("1+0 records in\n")
        (Path(d) / "t" / "x.meta.json").write_text(meta)
        return _load_in(d)


def _load_in(d: str) -> dict:
    import os

    old = os.environ.get("IOLAB_DATA")
    os.environ["IOLAB_DATA"] = d
    try:
        rec = recordings.load("t/x")
        return {"meta": rec.meta, "provenance": rec.provenance.split(" (", 1)[-1], "witnesses":
                {k: str(w) for k, w in rec.witnesses.items()}, "note": rec.witness_note}
    finally:
        if old is None:
            del os.environ["IOLAB_DATA"]
        else:
            os.environ["IOLAB_DATA"] = old


def _meta_special(how: str) -> Any:
    with tempfile.TemporaryDirectory(prefix="iolab-attack-") as d:
        (Path(d) / "t").mkdir()
        (Path(d) / "t" / "x.txt").write_text("1+0 records in\n")
        _special_file(Path(d) / "t" / "x.meta.json", how)
        return _load_in(d)


def _metas(refs: list[str]) -> list[tuple[str, str]]:
    """The .meta.json of a few recordings of each tool (one with witnesses among them)."""
    out, seen = [], defaultdict(int)
    for ref in refs:
        tool = ref.split("/")[0]
        rec = recordings.load(ref)
        if seen[tool] < 2 or ("witness" in rec.meta and seen["witness"] < 2):
            seen[tool] += 1
            seen["witness"] += "witness" in rec.meta
            out.append((ref + ".meta.json", (rec.path.parent / (ref.split("/")[1] + ".meta.json")).read_text()))
    return out


def _toxiproxy_texts(refs: list[str]) -> list[tuple[str, str]]:
    """toxiproxy's Prometheus lines (its format, 2.5+: /metrics) for the byte counts a recorded lesson-06 run
    kept in its meta (filesystem.link_traffic) or, for section 2's fio trials, in each trial: no raw /metrics
    text is recorded."""
    out = []
    for ref in refs:
        rec = recordings.load(ref)
        counted = [(rec.meta.get("filesystem") or {}).get("link_traffic") or {}]
        if ref.startswith("fio/seed000-s3fs"):              # a document of trials, each with its link's bytes
            counted += list(json.loads(rec.text).get("trials") or [])
        for moved in counted:
            if not (isinstance(moved, dict) and isinstance(moved.get("link_down"), int)
                    and isinstance(moved.get("link_up"), int)):
                continue
            lines = ["# HELP toxiproxy_proxy_sent_bytes_total", "# TYPE toxiproxy_proxy_sent_bytes_total counter"]
            for d, v in (("downstream", moved["link_down"]), ("upstream", moved["link_up"])):
                lines.append(f'toxiproxy_proxy_received_bytes_total{{direction="{d}",listener="127.0.0.1:1",'
                             f'proxy="store",upstream="127.0.0.1:2"}} {v}')
                lines.append(f'toxiproxy_proxy_sent_bytes_total{{direction="{d}",listener="127.0.0.1:1",'
                             f'proxy="store",upstream="127.0.0.1:2"}} {v}')
            out.append((f"{ref} link_traffic {len(out)}", "\n".join(lines) + "\n"))
    return out[:6]


def _hdparm_texts() -> list[tuple[str, str]]:
    """hdparm -Tt's lines as seed 002 published them (data/published/seed002-local-disk.csv), as hdparm
    prints them (the device, then one indented line per timing)."""
    pub = recordings.published("seed002-local-disk")
    lines = [ln for ln in pub["line"] if ln.startswith("Timing")]
    return [("seed002 hdparm -Tt", "\n/dev/sda:\n" + "".join(f" {ln}\n" for ln in lines))]


def _sizes(refs: list[str]) -> list[tuple[str, str]]:
    """Sizes as the recordings' command lines give them (bs=1M, -t 1m, --size=64MiB ...)."""
    found: set[str] = set()
    for ref in refs:
        for a in recordings.load(ref).meta.get("argv") or []:
            for m in re.finditer(r"(?:^|[=\s])(\d+(?:\.\d+)?[kKmMgG]?(?:i?B)?)$", str(a)):
                found.add(m.group(1))
    return [(f"size {v!r}", v) for v in sorted(found)[:40]]


def _workflow_texts(refs: list[str], stream: str, marker: str) -> list[tuple[str, str]]:
    """The Snakemake logs (stderr) or dot texts (stdout) that lesson 09's run records hold, each as
    Snakemake wrote it."""
    out = []
    for ref in refs:
        if not ref.startswith("workflows/") or recordings.load(ref).path.suffix != ".json":
            continue
        for i, step in enumerate(json.loads(_text(ref)).get("steps") or []):
            t = step.get(stream) or ""
            if marker in t:
                out.append((f"{ref} step {i} {stream}", t))
    return out


def _slurm_texts(refs: list[str], what: str) -> list[tuple[str, str]]:
    """Lesson 09's Slurm records, each text as Slurm or Snakemake printed it: what == "config" (scontrol
    show config), "job" (each job's output), "main" (the submit host's log)."""
    out = []
    for ref in refs:
        if not ref.startswith("workflows/slurm-") or recordings.load(ref).path.suffix != ".json":
            continue
        doc = json.loads(_text(ref))
        if what == "config":
            acc = doc.get("accounting_texts") if "accounting_texts" in doc else doc
            if isinstance(acc, dict) and isinstance(acc.get("config"), str):
                out.append((f"{ref} config", acc["config"]))
        elif what == "job":
            out += [(f"{ref} job {k}", v) for k, v in sorted((doc.get("job_logs") or {}).items()) if isinstance(v, str)]
        elif isinstance(doc.get("log"), str):
            out.append((f"{ref} log", doc["log"]))
    return out


def _log_units(x: dict) -> list[str]:
    """A log's parse as facts: each item of its dicts and each element of its lists a unit of its own
    (a log cut short holds fewer of them, never another)."""
    out = []
    for k, v in x.items():
        if isinstance(v, dict):
            out += [_canon([k, kk, vv]) for kk, vv in v.items()]
        elif isinstance(v, list):
            out += [_canon([k, e]) for e in v]
        else:
            out.append(_canon([k, v]))
    return out


def _traffic(t: Any) -> list[str]:
    """parse_metrics' Traffic: each direction it counted (0: no line of it yet)."""
    return [_canon([k, v]) for k, v in (("down", t.down), ("up", t.up)) if v]


def _names(x: Any) -> list[str]:
    return [_canon(v) for v in x]


def targets() -> list[Target]:
    """Every parser with the real inputs it reads."""
    refs = recordings.available()
    by_tool: dict[str, list[str]] = defaultdict(list)
    for ref in refs:
        by_tool[ref.split("/")[0]].append(ref)

    def kind(ref: str) -> str:
        return recordings.load(ref).path.suffix

    strace_txt = [r for r in by_tool["strace"] if kind(r) == ".txt"]
    summaries = [r for r in strace_txt + by_tool["mdtest"] if "% time" in _text(r) and kind(r) == ".txt"]
    traces = [r for r in strace_txt + by_tool["mdtest"] + by_tool["ior"] + by_tool["darshan"]
              if kind(r) == ".txt" and re.search(r"^(\d+ +)?\d\d:\d\d:\d\d\.\d+ \w+\(", _text(r), re.M)]
    mdtest_out = [r for r in by_tool["mdtest"] + by_tool["class"] if kind(r) == ".txt"
                  and "was launched with" in _text(r)]
    ior_out = [r for r in by_tool["ior"] + by_tool["slurm"]
               if (kind(r) == ".txt" and "IOR-" in _text(r)) or r.endswith("-summary")
               or r.startswith("slurm/ior-")]
    fio_out = [r for r in by_tool["fio"] + by_tool["class"] + by_tool["slurm"]
               if kind(r) == ".json" and '"fio version"' in _text(r)]
    dd_out = [r for r in by_tool["dd"] if kind(r) == ".txt"]
    scontrol = [r for r in by_tool["slurm"] if "/scontrol-" in r]
    scripts = [r for r in by_tool["slurm"] + by_tool["class"] if kind(r) == ".sbatch"]
    logs = [r for r in by_tool["darshan"] if kind(r) == ".darshan"]
    cephs = by_tool["ceph"]

    def texts(rs: Iterable[str]) -> list[tuple[str, str]]:
        return [(r, _text(r)) for r in rs]

    rec = _records
    ts = [
        Target("strace.parse_calls", _calls, rec, texts(traces), flag=_unfinished_flag, signed=_SIGNED,
               key="12345 10:00:00.000001 read(3</f>, \"", suffix='", 4096) = 4096 <0.000001>'),
        Target("strace.parse_summary", strace.parse_summary, _summary_units, texts(summaries),
               key="100.00    0.000041           1        26           "),
        Target("strace.summary_total", strace.summary_total, _whole, texts(summaries), reference=_summary_totals,
               key="100.00    0.000041           1        26           "),
        Target("strace.parse_version", strace.parse_version, _whole, _live("strace -V", _strace_version),
               key="strace -- version "),
        Target("mdtest.parse", mdtest.parse, rec, texts(mdtest_out), key="   File creation     ", suffix=" 1 1 1"),
        Target("mdtest.parse_iterations", mdtest.parse_iterations, rec,
               texts(r for r in mdtest_out if "ops/sec" in _text(r)),
               key="V-1: Rank   0 Line  1223   File creation     :          0.001 sec, ", suffix=" ops/sec"),
        Target("mdtest.window", mdtest.window, _window_units, texts(mdtest_out), lenient=True,
               key="-- started at "),
        Target("mdtest.one_file_calls", lesson("one_file_calls"), rec,
               texts(r for r in by_tool["mdtest"] if "/strace-one-file-" in r),
               signed=_SIGNED, key="15065 08:19:41.761742 openat(AT_FDCWD</tmp/x>, \"", suffix='", O_RDWR) = 3 <0.000118>'),
        Target("mdtest.sync_counts", lesson("sync_counts"), rec,
               texts(r for r in by_tool["mdtest"] if "/syncs-" in r),
               key=" 74.53    0.024517         101       242   "),
        Target("mdtest.removal_calls", lesson("removal_calls"), rec,
               texts(r for r in by_tool["mdtest"] if "/removals-" in r),
               signed=_SIGNED, key="15146 08:19:43.319333 rmdir(\"/tmp/x/test-dir.0-0/", suffix='") = 0 <0.000172>'),
        Target("ior.parse", ior.parse, rec, texts(ior_out), key="write     ", suffix=" 1 1 1"),
        Target("ior.summary", ior.summary, rec, texts(ior_out), key="write     "),
        Target("ior.reorder_facts", ior.reorder_facts, _items, texts(ior_out), ordered=False, lenient=True,
               concat="free",                      # "of the first test": an output of several tests has several
               key="Options: \n\ttasks : "),
        Target("ior.command_flags", ior.command_flags, _true_flags, _command_lines(), ordered=False, lenient=True,
               key="ior -O ", cuts=False, judge_garbage=False, concat="free"),
        Target("ior.parse_opens", ior.parse_opens, rec, texts(r for r in by_tool["ior"] if r.endswith("-opens")),
               signed=_SIGNED, key="14705 08:19:32.979590 openat(AT_FDCWD</w>, \"/tmp/x/testfile.", suffix='", O_RDWR) = 3 <0.1>'),
        Target("fio.parse", fio.parse, rec, texts(fio_out), key='{"fio version" : "fio-3.33", "jobs": ['),
        Target("fio.clat_histogram", fio.clat_histogram, rec,
               texts(r for r in fio_out if "jsonplus" in r), key='{"jobs": [{"jobname": "'),
        Target("dd.parse", dd.parse, _whole, texts(dd_out), reference=_dd_reference, key=_DD_KEY, suffix="/s",
               concat="free"),                     # "the last summary" of several runs: by design
        Target("dd.parse_all", dd.parse_all, rec, texts(dd_out), key=_DD_KEY, suffix="/s"),
        Target("pagecache.parse_meminfo", pagecache.parse_meminfo, _items,
               _live("/proc/meminfo", lambda: Path("/proc/meminfo").read_text()), ordered=False,
               key="MemTotal:       "),
        Target("fsinfo.mounts", fsinfo.mounts, rec,
               _live("/proc/self/mountinfo", lambda: Path("/proc/self/mountinfo").read_text()),
               key="22 1 252:0 / / rw,relatime shared:1 - ext4 "),
        Target("slurm.parse_scontrol", slurm.parse_scontrol, _items, texts(scontrol), ordered=False,
               key="JobId="),
        Target("slurm.read_manifest", slurm.read_manifest, rec, texts(scripts), lenient=True,
               key="# iolab-step fio "),
        Target("ceph.parse_layout", ceph.parse_layout, _whole, texts(r for r in cephs if "/getfattr-" in r),
               key='ceph.file.layout="stripe_unit=', suffix='"'),
        Target("ceph.parse_rados_ls", ceph.parse_rados_ls, rec, texts(r for r in cephs if r.endswith("/rados-ls")),
               key="10000000002.0000000"),
        Target("ceph.parse_osdmap_object", ceph.parse_osdmap_object, _whole,
               texts(r for r in cephs if "/osdmaptool-" in r), key=" object '"),
        Target("ceph.parse_osd_map", ceph.parse_osd_map, _whole, texts(r for r in cephs if r.endswith("/osd-map")),
               key='{"epoch":15,"pool":"'),
        Target("ceph.parse_perf", ceph.parse_perf, _items, texts(r for r in cephs if "/perf-dump-" in r),
               ordered=False, key='{"osd":{"op_w_in_bytes":'),
        Target("ceph.parse_sessions", ceph.parse_sessions, rec, texts(r for r in cephs if r.endswith("/session-ls")),
               key='[{"id":4164,"state":"'),
        Target("ceph.parse_rados_names", ceph.parse_rados_names, rec, _rgw_texts(cephs, "data_ls", "index_ls"),
               key=".dir."),
        Target("ceph.parse_rados_stat", ceph.parse_rados_stat, _whole, _rgw_texts(cephs, "stat"),
               key="default.rgw.buckets.data/"),
        Target("ceph.parse_omap_keys", ceph.parse_omap_keys, rec, _rgw_texts(cephs, "omap"), key="data-"),
        Target("ceph.parse_bucket_stats", ceph.parse_bucket_stats, _whole, _rgw_texts(cephs, "bucket_stats"),
               key='    "bucket": "'),
        Target("ceph.parse_object_stat", ceph.parse_object_stat, _whole, _rgw_texts(cephs, "object_stat"),
               key='    "name": "'),
        Target("rgw.parse_rgw", parallel_fs_rgw.parse_rgw, _rgw_units,
               texts(r for r in cephs if r.endswith("/rgw")), key=' "bucket": "'),
        *[Target(f"sections.parse_{name}", getattr(parallel_fs_sections, f"parse_{name}"), _section_units,
                 texts(r for r in cephs if r.endswith(f"/{name}")), key='{"trials": [', ordered=False)
          for name in ("layouts", "caches", "metadata", "coherence", "shared", "replication")],
        Target("ior_runs.parse_ior", parallel_fs_ior.parse_ior, rec,
               texts(r for r in cephs if r.endswith("/ior")), key='{"block_per_rank": '),
        Target("ior_runs.parse_cephfs", parallel_fs_ior.parse_cephfs, rec,
               texts(r for r in cephs if r.endswith("/ior-cephfs")), key='{"block_per_rank": '),
        Target("darshan.read_log", _darshan_view, _whole,
               [(r, recordings.load(r).path.read_bytes()) for r in logs], binary=True, special=_darshan_special,
               concat="free", isolate=not hasattr(darshan, "read_report")),   # a reader that is not its own child
        Target("bpftrace.parse", bpftrace.parse, rec, texts(by_tool["bpftrace"]), key="W 10545804093202 ",
               suffix=" 4 3 0"),
        Target("slowlink.parse_metrics", slowlink.parse_metrics, _traffic, _toxiproxy_texts(refs), ordered=False,
               lenient=True, key='toxiproxy_proxy_sent_bytes_total{direction="downstream",proxy="store"} '),
        Target("writes.parse_hdparm", page_cache_writes.parse_hdparm, rec, _hdparm_texts(),
               key=" Timing cached reads:   ", suffix=" MB in  1.99 seconds = 7244.01 MB/sec"),
        Target("units.parse_size", units.parse_size, _whole, _sizes(refs), cuts=False, key="1",
               suffix="MiB", concat="free"),
        Target("mpiio.implementations", darshan_mpiio.implementations, _names, texts(
            r for r in by_tool["darshan"] if r.endswith("-stderr")), ordered=False, lenient=True,
               key="[vm:1] io:base:file_select: Selected io component ", concat="free"),
        Target("seaweedfs.parse", seaweedfs.parse, rec,
               texts(r for r in by_tool["workflows"] if "/metrics-" in r and kind(r) == ".txt"),
               key='SeaweedFS_s3_request_total{bucket="', suffix='",code="200",type="GET"} 1'),
        Target("snakemake.parse_log", snakemake.parse_log, rec,
               _workflow_texts(refs, "stderr", "Building DAG of jobs..."), key="Retrieving from storage: s3://"),
        Target("slurm.parse_config", l09_slurm.parse_config, _items, _slurm_texts(refs, "config"), ordered=False,
               key="AccountingStorageType   = "),
        Target("slurm.parse_job_log", l09_slurm.parse_job_log, _log_units, _slurm_texts(refs, "job"),
               ordered=False, lenient=True, key="Snakemake version: "),
        Target("slurm.parse_main_log", l09_slurm.parse_main_log, _log_units, _slurm_texts(refs, "main"),
               ordered=False, lenient=True, key="Building DAG of jobs..."),
        Target("snakemake.parse_dot", snakemake.parse_dot, rec, _workflow_texts(refs, "stdout", "digraph "),
               key='\t0[label = "', suffix='"];'),
        Target("recordings.load", _load_meta, _whole, _metas(refs), special=_meta_special, concat="refuse",
               key='{"argv": ["'),
    ]
    return [t for t in ts if t.inputs]


# --- the cases --------------------------------------------------------------------------------------

@dataclass
class Case:
    target: str
    kind: str            # cut-line, cut-byte, mutate-<how>, garbage-<how>, huge-<how>
    label: str           # which input, where
    data: Any
    reference: list[str] | None = None      # acceptable units (cuts), None: unjudged
    ref_error: bool = False                 # the full input itself is refused


def _line_ends(text: str) -> list[int]:
    return [m.end() for m in re.finditer("\n", text)]


def _cut_points(n: int, limit: int) -> list[int]:
    if n <= limit:
        return list(range(n))
    step = n / (limit - 10)
    return sorted(set([int(i * step) for i in range(limit - 10)] + list(range(n - 10, n))))


def _mutate_text(text: str, rnd: random.Random) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    if not lines:
        return "flip", text
    how = rnd.choice(("drop", "dup", "swap", "number", "number", "flip", "flip") +
                     (("json",) if text.lstrip().startswith("{") else ()))
    i = rnd.randrange(len(lines))
    if how == "drop":
        del lines[i]
    elif how == "dup":
        lines.insert(i, lines[i])
    elif how == "swap" and len(lines) > 1:
        j = min(i + 1, len(lines) - 1) if i < len(lines) - 1 else i - 1
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "number":
        numbered = [k for k, ln in enumerate(lines) if re.search(r"\d", ln)]
        if numbered:
            i = rnd.choice(numbered)
            found = list(re.finditer(r"\d+(?:\.\d+)?", lines[i]))
            m = rnd.choice(found)
            lines[i] = lines[i][:m.start()] + rnd.choice(GARBAGE_TOKENS) + lines[i][m.end():]
    elif how == "json":
        try:
            doc = json.loads(text[text.index("{"):])
        except ValueError:
            doc = None
        if doc is not None:
            _json_poke(doc, rnd)
            return "mutate-json", json.dumps(doc, indent=2) + "\n"
        how = "flip"
    if how in ("flip", "swap"):
        ln = lines[i]
        if ln:
            k = rnd.randrange(len(ln))
            lines[i] = ln[:k] + rnd.choice(string.printable) + ln[k + 1:]
    return f"mutate-{how}", "".join(lines)


def _json_poke(doc: Any, rnd: random.Random) -> None:
    """Replace one value somewhere in a JSON document by a value of another type."""
    node, path = doc, []
    for _ in range(rnd.randint(1, 6)):
        if isinstance(node, dict) and node:
            k = rnd.choice(list(node))
        elif isinstance(node, list) and node:
            k = rnd.randrange(len(node))
        else:
            break
        path.append((node, k))
        node = node[k]
    if path:
        parent, k = path[-1]
        parent[k] = rnd.choice([1, -1, "x", None, [], {}, [1], 1e308, True, "99.99000:"])


def _garbage(rnd: random.Random, binary: bool) -> tuple[str, Any]:
    n = rnd.choice((1, 7, 64, 500, 4096))
    if rnd.random() < 0.5:
        raw = bytes(rnd.randrange(256) for _ in range(n))
        return "garbage-bytes", raw if binary else raw.decode("latin-1")
    txt = "".join(rnd.choice(string.printable) for _ in range(n))
    if not txt.strip():
        txt = "x" + txt
    return "garbage-printable", txt.encode() if binary else txt


def cases(t: Target, *, seed: int = 0, line_cuts: int = MAX_LINE_CUTS, byte_cuts: int = 40,
          mutations: int = 60, garbage: int = 40, families: int = 6) -> Iterator[Case]:
    """The small cases of one target (10 MB lines: :func:`huge_cases`)."""
    rnd = random.Random(f"{seed}-{t.name}")
    for label, data in t.inputs:
        ref: list[str] | None = None
        ref_error = False
        try:
            ref = (t.reference or (lambda x: t.units(t.call(x))))(data)
        except ParseError:
            ref_error = True
        if t.binary:
            if t.cuts:
                for k in sorted(rnd.sample(range(1, len(data)), min(byte_cuts, len(data) - 1))):
                    yield Case(t.name, "cut-byte", f"{label}[:{k}]", data[:k], ref, ref_error)
            for _ in range(mutations):
                b = bytearray(data)
                k = rnd.randrange(len(b))
                b[k] = rnd.randrange(256)
                yield Case(t.name, "mutate-byte", f"{label} byte {k}", bytes(b))
        else:
            ends = [0] + _line_ends(data)
            ends = [e for e in ends if e < len(data)]
            if t.cuts:
                for i in _cut_points(len(ends), line_cuts):
                    yield Case(t.name, "cut-line", f"{label} first {i} lines", data[:ends[i]], ref, ref_error)
                for _ in range(byte_cuts):
                    k = rnd.randrange(1, len(data))
                    if data[k - 1] != "\n":
                        yield Case(t.name, "cut-byte", f"{label}[:{k}]", data[:k], ref, ref_error)
            for _ in range(mutations):
                how, text = _mutate_text(data, rnd)
                yield Case(t.name, how, label, text)
    for _ in range(garbage):
        how, g = _garbage(rnd, t.binary)
        yield Case(t.name, how, f"{len(g)} {'bytes' if t.binary else 'chars'}", g)
    yield from family_cases(t, rnd, families)


FAMILIES = ("digits", "nest", "concat", "impossible", "special")
IMPOSSIBLE = ("-27", "nan", "NaN", "inf", "0", "0.000000")


def family_cases(t: Target, rnd: random.Random, n: int = 6) -> Iterator[Case]:
    """The families of issue 21: a number of 4,400 and 10,000 digits in place of one of the input's, JSON
    nested 100,000 deep, two inputs one after the other, an impossible value (a negative count, NaN,
    infinity, a time of 0) in place of a number, and special files where a loader reads a file."""
    for label, data in t.inputs[:max(1, n)]:
        if t.binary:
            yield Case(t.name, "concat", f"{label} twice", data + data, _ref_or_none(t, data), False)
            continue
        numbered = [m for m in re.finditer(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", data)] or \
            list(re.finditer(r"\d+", data))
        for _ in range(n if numbered else 0):
            m = rnd.choice(numbered)
            digits = rnd.choice(("9" * 4400, "1" + "0" * 9999, "0." + "3" * 5000, "1e" + "9" * 4400))
            yield Case(t.name, "digits", f"{label} at {m.start()}", data[:m.start()] + digits + data[m.end():])
        for _ in range(n if numbered else 0):
            m = rnd.choice(numbered)
            tok = rnd.choice(IMPOSSIBLE)
            yield Case(t.name, f"impossible-{tok}", f"{label} at {m.start()}: {m.group()} -> {tok}",
                       data[:m.start()] + tok + data[m.end():])
        braces = [m.start() for m in re.finditer(r"[\[{]", data)]
        for _ in range(min(n // 2, len(braces))):
            k = rnd.choice(braces)
            deep = "[" * 100_000 + "]" * 100_000
            yield Case(t.name, "nest", f"{label} at {k}", data[:k] + deep + "," + data[k:] if data[k] == "[" else
                       data[:k + 1] + '"deep": ' + deep + "," + data[k + 1:])
        yield Case(t.name, "concat", f"{label} twice", data + data, _ref_or_none(t, data), False)
    if t.special is not None:
        for how in SPECIALS:
            yield Case(t.name, f"special-{how}", how, how)


def _ref_or_none(t: Target, data: Any) -> list[str] | None:
    try:
        return (t.reference or (lambda x: t.units(t.call(x))))(data)
    except ParseError:
        return None


def huge_cases(t: Target, size: int = HUGE) -> Iterator[Case]:
    """One line of ``size`` characters: digits, "a", and the tool's own line (key ... suffix) filled with
    "a", "1 ", "(" or "inf"; with and without its newline."""
    if t.binary:
        yield Case(t.name, "huge-a", f"{size:,} bytes of 'a'", b"a" * size)
        return
    for how, body in (("digits", "9" * size), ("a", "a" * size), ("key-a", t.key + "a" * size + t.suffix),
                      ("key-1s", t.key + "1 " * (size // 2) + t.suffix),
                      ("key-parens", t.key + "(" * size + t.suffix),
                      ("key-inf", t.key + "inf" * (size // 3) + t.suffix)):
        for end in ("\n", ""):
            yield Case(t.name, f"huge-{how}{'' if end else '-noeol'}", f"{len(body):,} chars", body + end)


# --- running and judging ----------------------------------------------------------------------------

def judge(t: Target, case: Case) -> tuple[str, float, str]:
    """(outcome, seconds, detail) of one case."""
    t0 = time.perf_counter()
    try:
        got = t.special(case.data) if case.kind.startswith("special") else t.call(case.data)
        units = t.units(got)
    except ParseError as e:
        return "ParseError", time.perf_counter() - t0, str(e)[:200]
    except Exception as e:  # noqa: BLE001 (that is what we count)
        return "FOREIGN", time.perf_counter() - t0, f"{type(e).__name__}: {e}"[:200]
    seconds = time.perf_counter() - t0
    if case.kind.startswith("garbage"):
        if not units and (t.lenient or isinstance(case.data, str) and not case.data.strip()):
            return "correct", seconds, ""             # nothing found in nothing (white space only) is right
        if not t.judge_garbage:
            return "unjudged", seconds, ""
        return "WRONG", seconds, f"accepted: {units[:2]}"[:200]
    if case.kind.startswith("special"):
        return "WRONG", seconds, f"read a {case.data} as a file: {units[:1]}"[:200]
    if case.kind == "concat":
        if t.concat == "free" or case.reference is None:
            return "unjudged", seconds, ""
        if units == case.reference and units:
            return "WRONG", seconds, "two inputs one after the other: returned the first alone"
        return "correct" if units == case.reference * 2 else "unjudged", seconds, ""
    if case.kind.startswith("impossible"):
        bad = next((w for w in (_impossible(json.loads(u), t.signed) for u in units) if w), None)
        if bad:
            return "WRONG", seconds, f"returned an impossible value: {bad}"[:200]
        return "unjudged", seconds, ""
    if case.kind.startswith(("mutate", "huge", "digits", "nest")):   # a 10 MB line may be valid: its time counts
        return "unjudged", seconds, ""
    if case.ref_error:
        if not units and t.lenient:
            return "correct", seconds, ""
        return "WRONG", seconds, f"the full input is refused, this cut returned {units[:2]}"[:200]
    assert case.reference is not None
    kept = [u for u in units if not (t.flag and t.flag(u) and u not in case.reference)]
    ok = _is_subsequence(kept, case.reference) if t.ordered else set(kept) <= set(case.reference)
    if ok:
        return "correct", seconds, ""
    extra = [u for u in kept if u not in case.reference]
    return "WRONG", seconds, f"not in the full parse: {extra[:1]}"[:300]


def _impossible(x: Any, signed: frozenset[str], key: str = "") -> str | None:
    """Where a returned value holds NaN, an infinity, or the -27 the family put in place of a count (not
    under a key whose values may be negative, such as a syscall's return value), or None."""
    stack = [(key, x)]
    while stack:
        k, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((str(kk), vv) for kk, vv in v.items())
        elif isinstance(v, list):
            stack.extend((k, vv) for vv in v)
        elif isinstance(v, float) and not math.isfinite(v):
            return f"{k or 'a value'} is {v}"
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v == -27 and k not in signed:
            return f"{k or 'a value'} is -27"
    return None


def _child(t: Target, case: Case, conn) -> None:
    import resource

    try:                                               # a loader fed /dev/zero must not take the machine
        resource.setrlimit(resource.RLIMIT_AS, (8 * 1024 ** 3, 8 * 1024 ** 3))
    except (ValueError, OSError):
        pass
    try:
        conn.send(judge(t, case))
    finally:
        conn.close()


def judge_in_child(t: Target, case: Case, limit: float) -> tuple[str, float, str]:
    """judge() in a forked child killed after ``limit`` seconds (a regex in C cannot be interrupted)."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_child, args=(t, case, child))
    t0 = time.perf_counter()
    p.start()
    child.close()
    if parent.poll(limit):
        try:
            out = parent.recv()
        except EOFError:
            p.join()
            out = ("FOREIGN", time.perf_counter() - t0, f"the process died (exit status {p.exitcode})")
    else:
        out = ("timeout", time.perf_counter() - t0, f"killed after {limit:.0f} s")
    p.kill()
    p.join()
    return out


@dataclass
class Tally:
    counts: Counter = field(default_factory=Counter)
    slowest: tuple[float, str] = (0.0, "")
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, case: Case, outcome: str, seconds: float, detail: str) -> None:
        self.counts[outcome] += 1
        if seconds > self.slowest[0]:
            self.slowest = (seconds, f"{case.kind} {case.label}")
        if outcome in ("WRONG", "FOREIGN", "timeout") and len(self.examples[outcome]) < 3:
            self.examples[outcome].append(f"{case.kind} {case.label}: {detail}")


def attack(ts: list[Target], *, quick: bool, seed: int, limit: float, huge: bool = True,
           progress: bool = True) -> tuple[dict[str, Tally], list[tuple[str, str, str, float, str]]]:
    sizes = dict(line_cuts=40, byte_cuts=8, mutations=10, garbage=10, families=2) if quick else {}
    tallies: dict[str, Tally] = {}
    huge_rows = []
    for t in ts:
        tally = tallies[t.name] = Tally()
        t0 = time.perf_counter()
        for case in cases(t, seed=seed, **sizes):
            isolate = t.isolate or case.kind.startswith(("special", "nest", "digits"))
            tally.add(case, *(judge_in_child(t, case, limit) if isolate else judge(t, case)))
        if huge:
            for case in huge_cases(t, HUGE // 10 if quick else HUGE):
                outcome, seconds, detail = judge_in_child(t, case, limit)
                tally.add(case, outcome, seconds, detail)
                huge_rows.append((t.name, case.kind, outcome, seconds, detail))
        if progress:
            print(f"  {t.name}: {sum(tally.counts.values())} cases in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
    return tallies, huge_rows


def table(tallies: dict[str, Tally]) -> str:
    head = f"{'parser':26} {'cases':>6} " + " ".join(f"{o:>10}" for o in OUTCOMES) + f" {'slowest s':>9}  slowest case"
    out = [head, "-" * len(head)]
    total = Counter()
    slowest = (0.0, "")
    for name, t in tallies.items():
        n = sum(t.counts.values())
        total.update(t.counts)
        if t.slowest[0] > slowest[0]:
            slowest = (t.slowest[0], f"{name}: {t.slowest[1]}")
        out.append(f"{name:26} {n:6d} " + " ".join(f"{t.counts[o]:10d}" for o in OUTCOMES)
                   + f" {t.slowest[0]:9.3f}  {t.slowest[1][:60]}")
    out.append("-" * len(head))
    out.append(f"{'all':26} {sum(total.values()):6d} " + " ".join(f"{total[o]:10d}" for o in OUTCOMES)
               + f" {slowest[0]:9.3f}  {slowest[1][:60]}")
    return "\n".join(out)


def huge_table(rows: list[tuple[str, str, str, float, str]]) -> str:
    by: dict[str, dict[str, tuple[str, float]]] = defaultdict(dict)
    kinds: list[str] = []
    for name, kind, outcome, seconds, _ in rows:
        by[name][kind] = (outcome, seconds)
        if kind not in kinds:
            kinds.append(kind)
    out = ["10 MB lines: outcome and seconds (P ParseError, C correct, W WRONG, F FOREIGN, T timeout)",
           f"{'parser':26} " + " ".join(f"{k[5:]:>15}" for k in kinds)]
    letter = {"ParseError": "P", "correct": "C", "WRONG": "W", "FOREIGN": "F", "timeout": "T", "unjudged": "U"}
    for name, cells in by.items():
        out.append(f"{name:26} " + " ".join(
            f"{letter[cells[k][0]] + ' ' + format(cells[k][1], '.2f'):>15}" if k in cells else f"{'':>15}"
            for k in kinds))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer cases, 1 MB lines")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=30.0, help="seconds a 10 MB line may take (then killed)")
    ap.add_argument("--only", action="append", help="parsers whose name contains this (repeatable)")
    ap.add_argument("--no-huge", action="store_true", help="leave out the 10 MB lines")
    ap.add_argument("--out", help="also write the tables to this file")
    args = ap.parse_args(argv)
    ts = targets()
    if args.only:
        ts = [t for t in ts if any(o in t.name for o in args.only)]
    t0 = time.perf_counter()
    tallies, huge_rows = attack(ts, quick=args.quick, seed=args.seed, limit=args.limit, huge=not args.no_huge)
    import iolab

    report = [f"iolab parser attack ({'quick' if args.quick else 'full'}, seed {args.seed}, "
              f"{time.perf_counter() - t0:.0f} s): iolab from {Path(iolab.__file__).parent}, "
              f"recordings from {recordings.data_dir()}", "", table(tallies)]
    if huge_rows:
        report += ["", huge_table(huge_rows)]
    ex = [(n, o, e) for n, t in tallies.items() for o, es in t.examples.items() for e in es]
    if ex:
        report += ["", "Examples:"] + [f"  {o:8} {n}: {e}" for n, o, e in ex]
    text = "\n".join(report)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
