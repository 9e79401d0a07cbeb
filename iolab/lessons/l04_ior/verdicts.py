"""Lesson 04: which layer served an IOR run, row by row (the lesson's judgement, apart from its runs).

An :class:`Experiment` is one IOR configuration measured here or replayed (an Outcome), with what
iolab measured around it (:class:`CacheFacts`: the filesystem, the device's uncached rate, the test
files' page-cache residency, what the machine did meanwhile, :class:`SystemWatch`) and, in
``.frame``, every row with its :func:`verdict`. The witness comes first: the bytes IOR's processes
read from storage and dirtied (task I/O accounting) and what the device behind the files moved
(:mod:`iolab.witness`); the rate against the device's uncached rate is the weaker ground
(:mod:`iolab.measure`).

The lesson's runs (:func:`iolab.lessons.l04_ior.pitfalls.experiment`, ``split_phases``) and the sentences
computed from them are :mod:`iolab.lessons.l04_ior.pitfalls`'; the sweeps, :mod:`iolab.lessons.l04_ior.sweeps`'.
"""
from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ... import fsinfo, measure, pagecache, recordings, units, witness
from ...runner import Run
from ...tools import ior


# --- what the machine did while IOR ran -----------------------------------------------------------

def _stall_seconds(kind: str) -> float | None:
    """Pressure stall information: seconds some task waited for ``kind`` (cpu, io) since boot."""
    try:
        for line in Path(f"/proc/pressure/{kind}").read_text().splitlines():
            if line.startswith("some "):
                return int(line.rpartition("total=")[2]) / 1e6
    except (OSError, ValueError):
        pass
    return None


def _vmstat() -> dict[str, int]:
    try:
        text = Path("/proc/vmstat").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def _reclaim_counts(vm: dict[str, int]) -> tuple[int | None, int | None]:
    """(direct reclaim stalls, compaction stalls) since boot: allocations that had to wait for memory."""
    stalls = [v for k, v in vm.items() if k.startswith("allocstall")]
    return (sum(stalls) if stalls else None), vm.get("compact_stall")


class SystemWatch:
    """What the machine did while something ran, beside the witness of its bytes: /proc/meminfo Dirty
    and Writeback (sampled) beside the kernel's background write-back threshold (/proc/vmstat),
    allocations that stalled for memory (direct reclaim, compaction), and the time tasks stalled
    waiting for a CPU or for I/O (/proc/pressure). All system-wide: other programs count too.
    :meth:`facts` is a flat dict (None where the machine cannot tell). The bytes the run and the
    device moved are :class:`iolab.witness.Witness`'s (see :func:`iolab.lessons.l04_ior.pitfalls.experiment`).
    """

    def __init__(self, path: str | os.PathLike[str], interval: float = 0.01):
        d = witness.block_device(path)
        self.device = d.name if d is not None else None       # vda, nvme0n1p2; None: tmpfs, NFS, FUSE
        self._sampler = pagecache.MeminfoSampler(interval, ("Dirty", "Writeback"))
        self._facts: dict[str, Any] = {}

    def __enter__(self) -> "SystemWatch":
        self._cpu0, self._io0 = _stall_seconds("cpu"), _stall_seconds("io")
        self._vm0 = _vmstat()
        self._t0 = time.perf_counter()
        self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._sampler.stop()
        seconds = time.perf_counter() - self._t0
        cpu1, io1 = _stall_seconds("cpu"), _stall_seconds("io")
        vm1 = _vmstat()
        m = self._sampler.frame()
        (r0, c0), (r1, c1) = _reclaim_counts(self._vm0), _reclaim_counts(vm1)
        page = os.sysconf("SC_PAGE_SIZE")
        self._facts = {
            "seconds": seconds, "device": self.device,
            "dirty_before": int(m["Dirty"].iloc[0]), "dirty_peak": int(m["Dirty"].max()),
            "dirty_after": int(m["Dirty"].iloc[-1]), "writeback_peak": int(m["Writeback"].max()),
            "samples": len(m),
            "cpu_wait_s": cpu1 - self._cpu0 if cpu1 is not None and self._cpu0 is not None else None,
            "io_wait_s": io1 - self._io0 if io1 is not None and self._io0 is not None else None,
            "dirty_background_threshold": (vm1["nr_dirty_background_threshold"] * page
                                           if "nr_dirty_background_threshold" in vm1 else None),
            "direct_reclaim_stalls": r1 - r0 if r0 is not None and r1 is not None else None,
            "compaction_stalls": c1 - c0 if c0 is not None and c1 is not None else None,
        }

    def facts(self) -> dict[str, Any]:
        return dict(self._facts)


# --- verdicts: which layer served a row ---------------------------------------------------------

def _direct_write(rate: float, n: int, w: witness.Witnessed, device_bps: float | None) -> Any:
    """An O_DIRECT write phase judged by the device's counters (task I/O accounting counts a direct
    write when it is sent to the device, so IOR's own bytes are the data either way)."""
    wrote = w.device_written or 0
    lead = f"the device {w.device} wrote {units.format_size(wrote)} while {units.format_size(n)} were written"
    if wrote >= measure.MOSTLY * n:
        label, reason = measure.DEVICE, f"{lead} with O_DIRECT: each write() went to the device before it returned"
    else:
        label, reason = measure.UNCLEAR, (f"{lead}: with O_DIRECT the device should have taken it all (a filesystem "
                                          "that ignores O_DIRECT, or counters that missed it)")
    d = measure.disturbance(w)
    if d:
        return measure.Verdict(measure.UNCLEAR, f"{d}, so the time was shared. Its own count still says: {reason}",
                               measure.WITNESS)
    return measure.Verdict(label, reason, measure.WITNESS)


def verdict(row: dict[str, Any] | pd.Series, *, device_bps: float | None,
            resident_fraction: float | None = None, fstype: str | None = None,
            witnessed: witness.Witnessed | None = None, moved: int | None = None, scope: str = "") -> Any:
    """Which layer served one write or read row (an ``iolab.measure.Verdict``); None for remove.

    The witness first: ``witnessed`` is what the kernel counted over the run (IOR's own bytes from
    storage, the device's), ``moved`` the bytes IOR read or wrote over the same span (all the
    iterations' phases of that access), ``scope`` says what that span is (" in the whole run (3 write
    phases and 3 read phases)"); ``measure.judge`` and ``measure.judge_write`` weigh them and keep
    the rate as a second, weaker ground, or say that there is no witness and infer. On a memory
    filesystem (``fstype`` tmpfs, ramfs...) every row is the page cache: there is no device, so
    neither fsync nor O_DIRECT can reach one. The inference is, for reads, from the test files'
    residency before the read (after an O_DIRECT run, nothing went through the page cache, so it
    counts as 0) and the rate; for writes, O_DIRECT sent each write to the device, else the page
    cache took it unless -e put fsync inside the timing.
    """
    bw = row["bw_mib"]
    if row["access"] == "remove" or bw is None or not bw > 0:
        return None
    if fstype in fsinfo.MEMORY_FS:
        own = ""
        if witnessed is not None and witnessed.own_read is not None:
            own = (f"; task I/O accounting: IOR's processes read {units.format_size(witnessed.own_read)} from "
                   f"storage and wrote {units.format_size(witnessed.own_written or 0)} to it{scope}")
        return measure.Verdict(measure.CACHE, f"the files are on {fstype}: memory only, there is no device "
                                              f"(fsync has nothing to write, O_DIRECT nothing to bypass){own}")
    rate = float(bw) * units.MiB
    n = int(moved) if moved else None
    w = witnessed if n else None
    span = f"over{scope.removeprefix(' in')}: " if scope and w is not None else ""
    if row["access"] == "write":
        if row["odirect"]:
            if w is not None and w.device_written is not None:
                v = _direct_write(rate, n, w, device_bps)
                return measure.Verdict(v.label, span + v.reason, v.ground)
            v = measure.Verdict(measure.DEVICE, "O_DIRECT: each write() went past the page cache to the device "
                                                "before it returned")
            why = "; ".join(w.notes) if w is not None and w.notes else measure.NOT_WITNESSED
            return measure.Verdict(v.label, f"no witness: {why}. By inference: {v.reason}", measure.INFERENCE)
        v = measure.judge_write(rate, fsync=bool(row["fsync"]), device_bps=device_bps, witness=w, nbytes=n,
                                fstype=fstype or "")
    else:
        fraction = 0.0 if row["odirect"] else resident_fraction
        v = measure.judge(rate, device_bps=device_bps, resident_fraction=fraction, witness=w, nbytes=n)
    return measure.Verdict(v.label, span + v.reason, v.ground) if v.witnessed else v


def add_verdicts(df: pd.DataFrame, *, device_bps: float | None, resident_fraction: float | None = None,
                 fstype: str | None = None, witnessed: witness.Witnessed | None = None,
                 moved: dict[str, int] | None = None, scope: str = "") -> pd.DataFrame:
    """A copy of ``df`` with ``verdict`` (label) and ``reason`` columns (see :func:`verdict`;
    ``moved``: IOR's bytes per access over what the witness covers)."""
    out = df.copy()
    vs = [verdict(r, device_bps=device_bps, resident_fraction=resident_fraction, fstype=fstype,
                  witnessed=witnessed, moved=(moved or {}).get(r["access"]), scope=scope)
          for r in out.to_dict("records")]
    out["verdict"] = [v.label if v is not None else None for v in vs]
    out["reason"] = [v.reason if v is not None else None for v in vs]
    return out


# --- one IOR run measured or replayed, with the verdict on each of its rows ---------------------

@dataclass
class CacheFacts:
    """What iolab measured around an IOR run: the filesystem, the device's uncached read rate, the
    test files' page-cache residency after the run (for the read run of a split pair: before it),
    and what the machine did meanwhile. Recorded as ``<recording>-cache`` (JSON, these keys)."""

    fstype: str | None = None
    device_bps: float | None = None      # iolab.measure.device_rate, bytes/s; None: no device, or not measured
    device_note: str | None = None       # why there is no device rate
    files: int | None = None             # the test files
    bytes: int | None = None
    pages: int | None = None
    resident_pages: int | None = None
    resident_fraction: float | None = None
    during: dict[str, Any] = field(default_factory=dict)   # SystemWatch facts (Dirty/Writeback, stalls)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CacheFacts":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        """The recorded JSON's keys (left out when never measured: device_note, during)."""
        d = dataclasses.asdict(self)
        return {k: v for k, v in d.items() if not (k in ("device_note", "during") and not v)}


@dataclass(kw_only=True)
class Experiment(recordings.Outcome):
    """One IOR configuration measured (or replayed): the Outcome of its run (``.data``: IOR's rows;
    ``.witness``: what the kernel counted over the whole run, or ``.witness_note`` why there is
    none), with what the page cache held (``cache``) and, in ``.frame``, every row with its verdict.
    The frame is computed from the rows, the cache and the witness whenever an Experiment is made
    (``dataclasses.replace`` included): change a field with ``replace``, not in place."""

    name: str = ""
    options: ior.Options = field(default_factory=ior.Options)
    tasks: int = 2
    cache: CacheFacts = field(default_factory=CacheFacts)   # what the page cache held, the device's rate...
    opens_text: str | None = None     # the strace -e trace=openat of the run (trace=True), raw
    trace_run: Run | None = None      # live and traced: strace's argv and the trace, to record

    def __post_init__(self) -> None:
        self.frame = self.verdicts()

    @property
    def scope(self) -> str:
        """What the witness covers, as a phrase after a byte count: "" for a run of one phase, else
        " in the whole run (3 write and 3 read phases)": the counters are read before and after the
        run, so every row of the run shares them."""
        n = {a: len([r for r in self.rows if r["access"] == a]) for a in ("write", "read")}
        if sum(n.values()) <= 1:
            return ""
        phases = " and ".join(f"{k} {a}{'s' * (k != 1)}" for a, k in n.items() if k)
        return f" in the whole run ({phases.replace('write', 'write phase').replace('read', 'read phase')})"

    def witness_row(self) -> dict[str, Any]:
        """The witness as flat columns (``Witnessed.row()``), or the same columns empty with the reason
        there is none; ``witness_scope`` says what the counts cover."""
        if self.witness is not None:
            out = self.witness.row()
        else:
            out = {k: None for k in ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes",
                                     "device_write_bytes", "disturbed")}
            out["witness_notes"] = self.witness_note or "not witnessed"
        out["witness_scope"] = self.scope.strip().removeprefix("in ").strip() or "this run"
        return out

    @property
    def during(self) -> dict[str, Any]:
        """What the machine did while IOR ran (:class:`SystemWatch` facts; empty if not measured)."""
        return dict(self.cache.during or {})

    def opens(self) -> pd.DataFrame | None:
        """Which file each rank wrote and read (``ior.opens_table``), or None when the run was not traced."""
        if self.opens_text is None:
            return None
        return ior.opens_table(ior.parse_opens(self.opens_text), tasks=self.tasks)

    def layout(self) -> dict[str, Any]:
        """IOR's own account of the layout -C works on (``ior.reorder_facts``)."""
        return ior.reorder_facts(self.text)

    def bytes_moved(self, access: str) -> int:
        """Bytes IOR wrote or read over all iterations (block x segments x tasks per iteration)."""
        total = 0
        for r in self.rows:
            if r["access"] == access and r["block_kib"]:
                total += int(r["block_kib"] * 1024) * int(r["segments"] or 1) * int(r["tasks"] or self.tasks)
        return total

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.data

    def verdicts(self) -> pd.DataFrame:
        """Every row with its verdict and the witness's columns (own_read_bytes, own_write_bytes,
        device, device_read_bytes, device_write_bytes, disturbed, witness_notes, witness_scope): what
        ``.frame`` holds."""
        df = ior.to_frame(self.rows, run=self.name, mode=self.mode, **self.witness_row())
        return add_verdicts(df, device_bps=self.cache.device_bps,
                            resident_fraction=self.cache.resident_fraction, fstype=self.cache.fstype,
                            witnessed=self.witness, moved={a: self.bytes_moved(a) for a in ("write", "read")},
                            scope=self.scope)

    def table(self) -> pd.DataFrame:
        """Per access: the best and the worst iteration (MiB/s), IOR's bytes and the witness's (its
        processes' own bytes from or to storage, the device's), and the verdict on the best."""
        df = self.frame
        df = df[df["access"].isin(["write", "read"])]
        w = self.witness
        out = []
        for access, part in df.groupby("access", sort=False):
            top = part.loc[part["bw_mib"].idxmax()]
            own = None if w is None else (w.own_read if access == "read" else w.own_written)
            dev = None if w is None else (w.device_read if access == "read" else w.device_written)
            out.append({"run": self.name, "options": top["config"], "access": access,
                        "best MiB/s": round(float(top["bw_mib"]), 1), "worst MiB/s": round(float(part["bw_mib"].min()), 1),
                        "iterations": len(part), "IOR bytes": units.format_size(self.bytes_moved(access)),
                        "own bytes": "?" if own is None else units.format_size(own),
                        "device bytes": ("no device" if w is not None and w.device is None else
                                         "?" if dev is None else units.format_size(dev)),
                        "verdict": top["verdict"], "why": top["reason"]})
        return pd.DataFrame(out)

    def describe(self) -> str:
        """What the kernel counted (the witness), what the page cache held and what the device can do."""
        c = self.cache
        bits = [f"witness{self.scope}: {self.witness}" if self.witness is not None else
                (self.witness_note or "not witnessed")]
        if c.resident_fraction is not None:
            bits.append(f"test files ({units.format_size(c.bytes or 0)}) resident in the page cache: "
                        f"{c.resident_fraction:.0%}")
        if c.device_bps:
            bits.append(f"device behind them, uncached read: {units.format_rate(c.device_bps)}")
        if c.fstype:
            bits.append(f"filesystem: {c.fstype}")
        return "; ".join(bits) or "no cache facts recorded"

    def best(self, access: str) -> float | None:
        """The highest bandwidth (MiB/s) of an access over the iterations."""
        vals = [r["bw_mib"] for r in self.rows if r["access"] == access and r["bw_mib"] is not None]
        return max(vals) if vals else None


def recorded_witness(rec: recordings.Recording | None) -> tuple[witness.Witnessed | None, str]:
    """The witness kept in a recorded IOR run's meta, or None and why (a recording made before iolab
    kept witnesses says so)."""
    if rec is None:
        return None, "not witnessed"
    w = rec.witness()
    return (w, "") if w is not None else (None, rec.witness_note or "not witnessed")
