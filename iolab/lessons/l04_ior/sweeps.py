"""Lesson 04, sections 10 and 12: many runs of one IOR configuration side by side.

Section 10 sweeps the transfer size, the tasks and the segments of a ``-F -C -e`` run (the widget's
recorded points, ``ior/sweep-*``; a point can also run live). Section 12 repeats the same run, three
times interleaved, in a memory cgroup (``ior/cache-*``, ``ior/hog-*``, made by
``recorders/l04_ior_memory.py``): what a single number hides, IOR's "First Steps" segment sweep
overflowing the cgroup's limit, ``-M`` measured, and how a report states a spread.

The seed's sequence of single runs, their :class:`~iolab.lessons.l04_ior.verdicts.Experiment` and which
layer served each are :mod:`iolab.lessons.l04_ior.pitfalls`' and :mod:`iolab.lessons.l04_ior.verdicts`'.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ... import explain, recordings, units, witness, workspace
from ... import trials as trials_mod
from ...explain import Claim
from ...tools import ior
from ...units import MiB, format_size
from .pitfalls import BEYOND, CASSETTE
from .verdicts import recorded_witness


def _mib(v: float) -> str:
    return f"{v:,.0f} MiB/s" if v >= 10 else f"{v:,.1f} MiB/s"


# --- 10 · the transfer size / tasks / segments sweep (the lesson's widget) -------------------------

SWEEP_BASE = {"transfer_size": units.MiB, "tasks": 2, "segments": 4}
_SWEEP_NAME = re.compile(r"^sweep-t(\w+)-n(\d+)-s(\d+)-(.+)-summary$")


def sweep_options(transfer_size: int | str = units.MiB, segments: int = 4) -> ior.Options:
    """The sweep's configuration: -F -C -e, 16 MiB blocks, one iteration."""
    return ior.Options(transfer_size=transfer_size, block_size="16MiB", segments=segments, file_per_process=True,
                   reorder_tasks=True, fsync=True)


def _sweep_rows(rows: list[dict[str, Any]], transfer_size: int, tasks: int, segments: int, mode: str,
                witnessed: witness.Witnessed | None = None, note: str = "") -> pd.DataFrame:
    df = ior.to_frame(rows)
    df = df[df["access"].isin(["write", "read"])]
    best = df.loc[df.groupby("access")["bw_mib"].idxmax(), ["access", "bw_mib"]].copy()
    best["transfer_size"], best["tasks"], best["segments"], best["mode"] = transfer_size, tasks, segments, mode
    # the point's witness (the whole run: its write and its read phase): own and device bytes, or why not
    seen = witnessed.row() if witnessed is not None else {
        **{k: None for k in ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes",
                             "device_write_bytes", "disturbed")}, "witness_notes": note or "not witnessed"}
    for k, v in seen.items():
        best[k] = v
    return best.reset_index(drop=True)


def sweep_frame(version: str = "4.0.0") -> pd.DataFrame:
    """Every recorded sweep point of that IOR version: transfer_size (bytes), tasks, segments, access,
    bw_mib (the best iteration), mode="recorded", and the point's witness columns (own_read_bytes,
    own_write_bytes, device, device_read_bytes, device_write_bytes, disturbed, witness_notes: empty,
    with the note saying why, for a recording made before iolab kept witnesses)."""
    parts = []
    for ref in recordings.available("ior"):
        m = _SWEEP_NAME.match(ref.partition("/")[2])
        if not m or m.group(4) != version:
            continue
        t, n, s = units.parse_size(m.group(1)), int(m.group(2)), int(m.group(3))
        rec = recordings.load(ref)
        w, note = recorded_witness(rec)
        parts.append(_sweep_rows(ior.parse(rec.text), t, n, s, "recorded", w, note))
    if not parts:
        raise FileNotFoundError(f"no recorded IOR sweep for version {version!r} in {recordings.data_dir()}")
    return pd.concat(parts, ignore_index=True)


def sweep_slice(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """The points where only ``by`` moves away from SWEEP_BASE."""
    if by not in SWEEP_BASE:
        raise ValueError(f"by must be one of {', '.join(SWEEP_BASE)}")
    keep = pd.Series(True, index=df.index)
    for k, v in SWEEP_BASE.items():
        if k != by:
            keep &= df[k] == v
    return df[keep]


def sweep_point(by: str, value: int, *, ws: workspace.Workspace | None = None, timeout: float = 120) -> pd.DataFrame:
    """Run one sweep point live (IOR and mpirun needed), witnessed, and return it shaped like
    :func:`sweep_frame`."""
    p = dict(SWEEP_BASE)
    if by not in p:
        raise ValueError(f"by must be one of {', '.join(SWEEP_BASE)}")
    p[by] = int(value)
    ws = ws or workspace.session()
    with witness.Witness(ws.root, children=True) as w:
        r = ior.run(sweep_options(p["transfer_size"], p["segments"]), p["tasks"], ws=ws, timeout=timeout)
    return _sweep_rows(ior.parse(r.text), p["transfer_size"], p["tasks"], p["segments"], "live", w.result)


def sweep_claims(df: pd.DataFrame, device_bps: float | None, *, show: bool = True) -> list[Claim]:
    """The recorded -F -C -e sweep over transfer sizes: reads beyond the device, -e writes close together."""
    part = sweep_slice(df, "transfer_size")
    reads = part[part["access"] == "read"]["bw_mib"]
    writes = part[part["access"] == "write"]["bw_mib"]
    sizes = sorted(set(part["transfer_size"]))
    span = f"{format_size(sizes[0])} to {format_size(sizes[-1])}" if sizes else "?"
    dev = device_bps / MiB if device_bps else None
    own = part[part["access"] == "read"]["own_read_bytes"] if "own_read_bytes" in part else pd.Series(dtype=float)
    witnessed = bool(len(own)) and own.notna().all()
    alone = "" if witnessed else (" (by the rate alone: these recordings were made before iolab kept the kernel's "
                                  "witnesses)")
    out = [explain.expect(
        f"every read of the sweep ({span} transfers) ran more than {BEYOND:g} times the device's uncached rate: "
        "each point re-read what it had just written, from memory",
        explain.greater("slowest read (MiB/s)", reads.min() if len(reads) else None,
                        "device's uncached rate (MiB/s)", dev, by=BEYOND),
        yes=lambda ev: f"the slowest read ran at {_mib(reads.min())}, the sweep's device read {_mib(dev)} uncached{alone}",
        no=lambda ev: f"the slowest read ran at {_mib(reads.min())}, the sweep's device read {_mib(dev)} uncached{alone}",
        why="a fast device (or a VM host's cache) reads nearly as fast as memory copies: the rate alone cannot tell.",
        missing="the device's uncached rate is not known for this sweep.", show=show)]
    if witnessed:
        r = part[part["access"] == "read"]
        data = (16 * MiB * r["segments"] * r["tasks"]).astype(float)        # sweep_options: 16 MiB blocks
        share = float((r["own_read_bytes"].astype(float) / data).max())
        out.insert(0, explain.expect(
            "every point's read came from memory: its processes read less than a tenth of it from storage",
            explain.greater("a tenth", 0.1, "largest share read from storage", share),
            yes=lambda ev: f"at most {share:.1%} of a point's data came from storage (task I/O accounting)",
            no=lambda ev: f"one point read {share:.0%} of its data from storage",
            why="memory was short, or the point's pages were dropped between its write and its read.", show=show))
    if len(writes):
        lo, hi = float(writes.min()), float(writes.max())
        out.append(explain.expect(
            f"the -e writes stayed within a factor 2 of each other from {span} transfers: the device's pace, not the "
            "size of the write() calls, set them",
            explain.greater("slowest write (MiB/s)", lo, "fastest write (MiB/s)", hi, by=0.5),
            yes=lambda ev: f"from {_mib(lo)} to {_mib(hi)}",
            no=lambda ev: f"the -e writes ranged from {_mib(lo)} to {_mib(hi)}",
            why="very small transfers cost a system call each: at some size the calls, not the device, set the pace; "
                "and single iterations of a second or less scatter.",
            show=show))
    return out


def _sweep_recording(version: str) -> recordings.Recording:
    return recordings.load(CASSETTE.part(f"ior/sweep-t1m-n2-s4-{version}", "-cache"))


def sweep_device_bps(version: str = "4.0.0") -> float | None:
    """The device's uncached rate measured when the recorded sweep of that IOR version was made."""
    return json.loads(_sweep_recording(version).text).get("device_bps")


def sweep_host_cpus(version: str = "4.0.0") -> int | None:
    """Cores of the machine the recorded sweep was made on."""
    return (_sweep_recording(version).meta.get("host") or {}).get("cpus")


# --- 12 · the same run, again and again; the page cache overflowing (IOR's "First Steps") ---------
# recorded by recorders/l04_ior_memory.py: one IOR task in a memory cgroup, -t 1m -b 1m -s N, write then read

CACHE_SEGMENTS = (64, 128, 256, 512)
HOG_SEGMENTS = 256
HOG_RUNS = ("hog-none", "hog-1pct")
# what a cgroup run's recording consists of, declared once for cache_runs (which reads it) and
# recorders/l04_ior_memory.py (which writes it): one IOR output per trial, ior/<run>-t<k> from 1
CGROUP_CASSETTE = recordings.Cassette(("-t{i}",))


def cgroup_runs() -> list[str]:
    """The cgroup runs' recordings (without their trials): ``ior/cache-s<N>`` and ``ior/hog-*``."""
    return [f"ior/cache-s{s}" for s in CACHE_SEGMENTS] + [f"ior/{h}" for h in HOG_RUNS]
_HOG_LINE = re.compile(r"^memoryPerNode\s*:\s*([0-9]{1,12}(?:\.[0-9]{1,4})?) ([KMGT]?)i?B\s*$")


def _load(notes: str) -> float | None:
    """The load average the recorder noted before a run ("load average 15.2 (1 min)"), if any."""
    m = re.search(r"load average ([0-9]{1,4}\.[0-9]{1,2}) \(1 min\)", notes[:2000])
    return float(m.group(1)) if m else None


def _hog_bytes(text: str) -> int:
    """The bytes IOR's -M hogged, from the header line IOR prints (0 without -M)."""
    for line in text.splitlines():
        m = _HOG_LINE.match(line[:200].strip())
        if m:
            return int(float(m.group(1)) * 1024 ** "_KMGT".index(m.group(2) or "_"))  # IOR rounds to 0.01
    return 0


@dataclass(kw_only=True)
class CacheRuns(recordings.Outcome):
    """:func:`cache_runs`' outcome, replayed: ``frame`` one row per run, trial and phase; ``where`` the
    set's line for a report (when and on what it was recorded, IOR's version, the load before the runs)."""

    where: str = ""


def cache_runs(runs: Sequence[str] | None = None, *, show: bool = True) -> CacheRuns:
    """Every recorded trial of the cgroup runs (``ior/cache-s<N>-t<k>``, ``ior/hog-*-t<k>``). ``.frame``:
    one row per run, trial and phase, with IOR's rate, the file's size, the cgroup's limit, what -M
    hogged and the witness's bytes read from storage by IOR; ``.where``: where they were recorded.
    Prints where the recordings come from (``.provenance``)."""
    names = list(runs) if runs is not None else [f"cache-s{s}" for s in CACHE_SEGMENTS] + list(HOG_RUNS)
    rows, first = [], None
    for name in names:
        t = 1
        while True:
            try:
                rec = recordings.load(CGROUP_CASSETTE.part(f"ior/{name}", "-t{i}", i=t))
            except FileNotFoundError:
                break
            first = first or rec
            w = rec.witness()
            limit = (rec.meta.get("filesystem") or {}).get("memory_cgroup_limit")
            for r in ior.parse(rec.text):
                rows.append({"run": name, "trial": t, "access": r["access"], "mib_per_s": r["bw_mib"],
                             "file_bytes": r["segments"] * r["block_kib"] * 1024, "segments": r["segments"],
                             "limit_bytes": limit, "hog_bytes": _hog_bytes(rec.text),
                             "own_read_bytes": None if w is None else w.own_read,
                             "disturbed": None if w is None else w.disturbed, "date": rec.meta.get("date"),
                             "load": _load(rec.meta.get("notes") or "")})
            t += 1
    if first is None:
        raise FileNotFoundError(f"no recorded cgroup run of {', '.join(names)} in {recordings.data_dir()}")
    df = pd.DataFrame(rows)
    load = df["load"].dropna()
    where = (f"recorded {first.meta.get('date')} on {(first.meta.get('host') or {}).get('description')}, "
             f"{(first.meta.get('filesystem') or {}).get('fstype')}, ior {first.meta.get('tool_version')}"
             + (f", load average {load.min():.1f}–{load.max():.1f} before the runs" if len(load) else ""))
    n = len({(r["run"], r["trial"]) for r in rows})
    provenance = (f"{first.provenance}; and {n - 1} more runs of the same set (ior/cache-*, ior/hog-*), "
                  "one IOR task in a memory cgroup")
    if show:
        print(provenance)
    return CacheRuns(mode="replay", text="", provenance=provenance, recording=first, data=rows, frame=df,
                     where=where)


def phase_trials(cache: CacheRuns, access: str, runs: Sequence[str] | dict[str, str]) -> "trials_mod.Trials":
    """The trials of one phase of some runs, as :class:`iolab.trials.Trials` (MiB/s, higher is better);
    ``runs`` may map each run to the name the table and the chart give it."""
    df = cache.frame
    part = df[df["access"] == access]
    names = dict(runs) if isinstance(runs, dict) else {r: r for r in runs}
    return trials_mod.from_values({names[r]: list(part.loc[part["run"] == r, "mib_per_s"]) for r in names},
                                  unit="MiB/s", higher=True)


@dataclass(frozen=True)
class SingleNumber:
    """What one trial would have said beside all the trials of one run and phase (MiB/s)."""

    run: str
    access: str
    first: float
    min: float
    max: float
    median: float
    trials: int
    factor: float        # max / min


def single_number(cache: CacheRuns, run: str | None = None, access: str | None = None, *,
                  show: bool = True) -> SingleNumber:
    """What one trial would have said: the first trial, the fastest and the slowest, and the range as a
    factor, for one run and phase (default: the one whose trials lie furthest apart). Printed, returned."""
    df = cache.frame
    if run is None or access is None:
        g = df.groupby(["run", "access"])["mib_per_s"]
        run, access = (g.max() / g.min()).idxmax()
    v = df[(df["run"] == run) & (df["access"] == access)]["mib_per_s"]
    out = SingleNumber(run=run, access=access, first=float(v.iloc[0]), min=float(v.min()), max=float(v.max()),
                       median=float(v.median()), trials=len(v), factor=float(v.max() / v.min()))
    if show:
        print(f"{run} {access}: trial 1 said {out.first:,.0f} MiB/s; over {out.trials} trials the same run "
              f"gave {out.min:,.0f} to {out.max:,.0f} MiB/s, {out.factor:.1f} times apart "
              f"(median {out.median:,.0f}). One number would have been any of them.")
    return out


def overflow_claims(cache: CacheRuns, *, show: bool = True) -> list[Claim]:
    """The segment sweep: the largest file inside the cgroup's limit is read from memory (the witness:
    nothing read from storage), the smallest file beyond it from the device; beyond() over their reads."""
    df = cache.frame
    limit = df["limit_bytes"].dropna().iloc[0]
    sizes = df[df["run"].str.startswith("cache-s")].groupby("run")["file_bytes"].first().sort_values()
    inside = sizes[sizes < limit]
    beyond_ = sizes[sizes > limit]
    if inside.empty or beyond_.empty:
        raise ValueError("the sweep needs a file inside the memory limit and one beyond it")
    fits, over = inside.index[-1], beyond_.index[0]
    reads = df[df["access"] == "read"]
    own = reads.groupby("run")["own_read_bytes"].median()
    rel = explain.beyond(fits, list(reads.loc[reads["run"] == fits, "mib_per_s"]), over,
                         list(reads.loc[reads["run"] == over, "mib_per_s"]), by=2, unit="MiB/s")
    return [explain.expect(
        f"the {format_size(inside.iloc[-1])} file (inside the {format_size(limit)} limit) is read back at "
        f"least twice as fast as the {format_size(beyond_.iloc[0])} one (beyond it), in every trial",
        rel, yes=lambda ev: (f"{explain.spread_text(rel)}; the witness: IOR read {format_size(own.get(fits) or 0)} "
                             f"from storage for the first (median of its trials), {format_size(own.get(over) or 0)} "
                             "for the second"),
        why="on a VM the 'device' may be the host's memory; a busy device makes the slow side slower, never faster",
        show=show)]


def hog_claims(cache: CacheRuns, *, show: bool = True) -> list[Claim]:
    """-M at one file size: with the hog beside it the file no longer fits in what the cgroup leaves for
    the page cache, and the read phase goes to the device; beyond() over the read trials."""
    df = cache.frame
    reads = df[df["access"] == "read"]
    a, b = HOG_RUNS
    hogged = int(df.loc[df["run"] == b, "hog_bytes"].max())
    limit = int(df["limit_bytes"].dropna().iloc[0])
    size = int(df.loc[df["run"] == b, "file_bytes"].iloc[0])
    own = reads.groupby("run")["own_read_bytes"].median()
    rel = explain.beyond(a, list(reads.loc[reads["run"] == a, "mib_per_s"]), b,
                         list(reads.loc[reads["run"] == b, "mib_per_s"]), by=2, unit="MiB/s")
    return [explain.expect(
        f"with -M hogging {format_size(hogged)} of the {format_size(limit)} limit, the {format_size(size)} file "
        "no longer fits beside it and its read phase is at least twice as slow in every trial",
        rel, yes=lambda ev: (f"{explain.spread_text(rel)}; the witness: IOR read {format_size(own.get(a) or 0)} "
                             f"from storage without -M, {format_size(own.get(b) or 0)} with it (medians)"),
        why="-M squeezes this node's page cache only; a cache below it (a VM host's, a server's) still serves",
        show=show)]


def report(t: "trials_mod.Trials", what: str, *, where: str = "", show: bool = True) -> list[str]:
    """How a benchmark report states a result: per setting the median, the range, the number of trials
    and how they ran, then where (machine, filesystem, tool); never one number alone."""
    lines = [f"{what}, {name}: {line}" for name, line in t.report().items()] + ([f"  ({where})"] if where else [])
    if show:
        print("\n".join(lines))
    return lines


def hog_option_claims(*, show: bool = True) -> list[Claim]:
    """What IOR made of ``-M 1m`` (recording ``ior/hog-1m-parse``): the bytes its header says it hogged,
    against 1 MiB and against the recording machine's memory."""
    rec = recordings.load("ior/hog-1m-parse")
    hogged = _hog_bytes(rec.text)
    mem = (rec.meta.get("host") or {}).get("mem_bytes")
    share = hogged / mem if mem else None
    if show:
        print(rec.provenance)
    return [explain.expect(
        "-M 1m hogs 1 MiB", explain.within("hogged", float(hogged), "asked", float(MiB), rel=0.5),
        no=lambda ev: (f"IOR's header says memoryPerNode {format_size(hogged)}"
                       + (f", {share:.1%} of the recording machine's {format_size(mem)}" if share else "")),
        why=("IOR reads -M's value with sscanf(\" %d %% \") (NodeMemoryStringToBytes, src/utilities.c, 3.3.0 and "
             "4.0.0): a value that starts with a digit is taken as a percentage of the node's physical memory, "
             "whatever follows it, so '1m' is 1 % and the help's '2g' is 2 %. Write -M as a percentage"),
        show=show)]
