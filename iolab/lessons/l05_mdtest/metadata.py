"""Lesson 05 (mdtest): the experiments, and the facts of the filesystem each ran on.

mdtest live (mdtest and mpirun here) or replayed from ``data/recorded/mdtest/``, each run an
:class:`~iolab.recordings.Outcome`: its rates (:func:`measure_on`), and its create, stat and remove
phases run one at a time with what the block device did during each (:func:`measure_phases`).
:class:`FsFacts` holds what an explanation needs to know about a filesystem (its type, its mount
options, whether an ext4 has a journal), live or from a recording's meta.

The lesson's other parts: :mod:`iolab.lessons.l05_mdtest.calls` (strace of mdtest: the fsync count, the
calls behind one file, the removals timed), :mod:`iolab.lessons.l05_mdtest.claims` (the sentences, with the
mechanisms they rest on) and :mod:`iolab.lessons.class_results.analysis` (the instructor's class data).
"""
from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ... import fsinfo, recordings, witness, workspace
from ...runner import Run
from ...tools import mdtest

EXT = ("ext4", "ext3", "ext2")
# section 6's witnessed phases: the seed's command with one iteration and more items, so that the
# device's counters rise clearly above one file's noise (mdtest -n 100: each rank 100 files, 100 dirs)
PHASE_RUN = mdtest.Options(files=100, iterations=1)


# --- the facts of a filesystem ------------------------------------------------------------------

@dataclass(frozen=True)
class FsFacts:
    """What an explanation of a metadata rate needs to know about the filesystem it ran on."""

    path: str
    fstype: str
    options: tuple[str, ...] | None = None     # mount options (None: not known, e.g. an old recording)
    journal: bool | None = None                # ext2/3/4 only: has it a journal? (None: not known)
    discard_max: int | None = None             # the device's queue/discard_max_bytes (0: it takes no discard)

    @property
    def memory(self) -> bool:
        return self.fstype in fsinfo.MEMORY_FS

    @property
    def ext(self) -> bool:
        return self.fstype in EXT

    @property
    def discard(self) -> bool | None:
        return None if self.options is None else "discard" in self.options

    @property
    def sync_mount(self) -> bool | None:
        return None if self.options is None else bool({"sync", "dirsync"} & set(self.options))

    @property
    def discard_in_call(self) -> bool | None:
        """Does freeing a block make the system call wait for a discard sent to the device?"""
        if not self.ext:
            return False if self.memory else None
        if self.discard is None:
            return None
        if not self.discard or self.discard_max == 0:
            return False
        return None if self.journal is None else not self.journal

    @property
    def discards(self) -> bool | None:
        """Does freeing a block send the device a discard at all (in the call or after a commit)?"""
        if self.memory:
            return False
        if not self.ext or self.discard is None:
            return None
        return bool(self.discard) and self.discard_max != 0

    @property
    def commit_s(self) -> float | None:
        """How often a journalled ext4 commits (mount option commit=N, default 5 s); None without a journal."""
        if not (self.ext and self.journal):
            return None
        for o in self.options or ():
            if o.startswith("commit="):
                try:
                    return float(o.partition("=")[2]) or 5.0
                except ValueError:
                    pass
        return 5.0

    def describe(self) -> str:
        """'ext4 without a journal, mounted with discard' and the like."""
        if self.memory:
            return f"{self.fstype} (memory)"
        bits = [self.fstype]
        if self.ext and self.journal is not None:
            bits.append("with a journal" if self.journal else "without a journal")
        if self.options is not None:
            shown = [o for o in ("discard", "sync", "dirsync") if o in self.options]
            bits.append(f"mounted with {', '.join(shown)}" if shown else "mounted without discard")
        if self.discard and self.discard_max == 0:
            bits.append("on a device that takes no discard")
        return ", ".join(bits[:1]) + (" " + ", ".join(bits[1:]) if len(bits) > 1 else "")


def ext4_journal(mount: fsinfo.Mount) -> bool | None:
    """Whether an ext2/3/4 mount has a journal: /sys/fs/ext4/<device>/journal_task names the
    journal thread, or says ``<none>``. None when it cannot be read (not ext4, no sysfs)."""
    if mount.fstype not in EXT:
        return None
    dev = os.path.basename(os.path.realpath(mount.source)) if mount.source.startswith("/") else mount.source
    try:
        text = Path(f"/sys/fs/ext4/{dev}/journal_task").read_text().strip()
    except OSError:
        return None
    return text != "<none>"


def discard_max_bytes(path: str | os.PathLike[str]) -> int | None:
    """The largest discard the block device behind ``path`` accepts (``queue/discard_max_bytes`` of
    the disk; 0: it takes none, and a ``discard`` mount option then sends nothing), or None where
    there is no block device or no such file."""
    d = witness.block_device(path)
    if d is None:
        return None
    for q in (d / "queue", d.parent / "queue"):          # a partition's queue is its disk's
        try:
            return int((q / "discard_max_bytes").read_text())
        except (OSError, ValueError):
            continue
    return None


def facts(path: str | os.PathLike[str]) -> FsFacts:
    """The facts of the filesystem that serves ``path`` on this machine."""
    m = fsinfo.mount_of(path)
    return FsFacts(str(path), m.fstype, tuple(m.options.split(",")), ext4_journal(m), discard_max_bytes(path))


def recorded_facts(meta_fs: Mapping[str, Any], path: str | None = None) -> FsFacts:
    """The facts kept in a recording's ``filesystem`` meta (older recordings lack options, journal,
    discard_max_bytes)."""
    opts = meta_fs.get("options")
    return FsFacts(path or str(meta_fs.get("path", "?")), str(meta_fs.get("fstype", "?")),
                   tuple(opts.split(",")) if isinstance(opts, str) else None, meta_fs.get("journal"),
                   meta_fs.get("discard_max_bytes"))


def facts_of(outcome, path: str | os.PathLike[str]) -> FsFacts:
    """Facts of where ``outcome`` (a live_or_recorded Outcome) ran: here when live, else its meta."""
    if outcome.mode == "live":
        return facts(path)
    return recorded_facts(outcome.recording.meta.get("filesystem", {}), str(path))


def settle_s(f: FsFacts) -> float:
    """How long to keep watching the device after the last mdtest phase: a journalled ext4 sends its
    commit (and the discards of the blocks it freed) up to one commit interval later; 0 otherwise."""
    c = f.commit_s
    return 0.0 if c is None else 1.5 * c


def fs_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``recordings.save(..., fs_facts=...)`` keeps beside the mount options: the journal and
    the device's discard_max_bytes."""
    f = facts(path)
    return {"journal": f.journal, "discard_max_bytes": f.discard_max}



def rate(frame: pd.DataFrame, operation: str) -> float | None:
    part = frame[(frame["operation"] == operation) & (frame["unit"] == "ops/s")]
    return float(part["mean"].iloc[0]) if len(part) else None



# --- the experiments: mdtest live (mdtest and mpirun here) or replayed, each an Outcome -------------

# the class setting for the metadata servers of shared filesystems (docs/jupyterhub.md section 9):
# "on" (default) measures every candidate; "off" leaves out those on a network or parallel filesystem
# (NFS, Lustre, CephFS, GPFS, BeeGFS), so that 30 students' mdtests do not hit one production MDS at once
SHARED_MDTEST = "IOLAB_SHARED_MDTEST"


def shared(path: str | os.PathLike[str]) -> bool:
    """Whether path is on a filesystem that other nodes share (network or parallel)."""
    kind = fsinfo.mount_of(path).kind
    return kind.startswith(("network", "parallel"))


def candidate_dirs(extra: Sequence[str | Path] = ()) -> list[Path]:
    """Writable directories worth comparing here: /tmp, /dev/shm, $HOME, then ``extra`` (a FUSE mount).
    With ``IOLAB_SHARED_MDTEST=off`` (a class setting in kernel.json) those on a shared filesystem are
    left out."""
    setting = os.environ.get(SHARED_MDTEST, "on").strip().lower()
    if setting not in ("on", "off"):
        raise ValueError(f"{SHARED_MDTEST} is 'on' or 'off', not {setting!r}")
    out: list[Path] = []
    for d in ["/tmp", "/dev/shm", os.path.expanduser("~"), *extra]:
        p = Path(d)
        if p.is_dir() and os.access(p, os.W_OK) and p not in out:
            if setting == "off" and shared(p):
                continue
            out.append(p)
    return out


WITNESS_COLUMNS = ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes", "device_write_bytes",
                   "disturbed")


def _witness_of(out: recordings.Outcome, live_witness: witness.Witnessed | None) -> None:
    """Give ``out`` the kernel's witness: the live run's, or the one its recording kept (else the note
    that it has none)."""
    if out.mode == "live":
        out.witness, out.witness_note = live_witness, ""
        return
    rec = out.recording
    out.witness = rec.witness() if rec is not None else None
    out.witness_note = "" if out.witness is not None else (rec.witness_note if rec is not None else "not witnessed")


def rates_frame(out: recordings.Outcome, path: str | os.PathLike[str], scope: str) -> pd.DataFrame:
    """mdtest's rows of ``out`` with path, fstype (here when live, else the recording's), mode and the
    witness's columns (own_read_bytes, own_write_bytes, device, device_read_bytes, device_write_bytes,
    disturbed, witness_notes, witness_scope: what the witness covers), the same on every row."""
    if out.witness is not None:
        seen = out.witness.row()
    else:
        seen = {**{k: None for k in WITNESS_COLUMNS}, "witness_notes": out.witness_note or "not witnessed"}
    if out.mode == "live":
        fstype = fsinfo.fstype(path)
    else:
        fstype = (out.recording.meta.get("filesystem", {}) if out.recording else {}).get("fstype", "?")
    return mdtest.to_frame(out.data, path=str(path), fstype=fstype, mode=out.mode, **seen, witness_scope=scope)


def with_trials(options: mdtest.Options) -> mdtest.Options:
    """``options`` with ``-v``: mdtest then prints each iteration's rate of each phase (its ``-i N``
    iterations are N trials of every phase, interleaved by phase within the run), the trials the
    lesson's comparisons are judged on; without it only Max/Min/Mean are printed."""
    return replace(options, verbose=max(options.verbose, 1))


@dataclass(kw_only=True)
class Rates(recordings.Outcome):
    """One mdtest run's rates: ``frame`` the summary rows (:func:`rates_frame`), ``iterations`` every
    iteration's rate of every phase (:func:`mdtest.parse_iterations`, with path, fstype and mode; no row
    for a run without ``-v``: an older recording)."""

    iterations: pd.DataFrame = field(default_factory=lambda: mdtest.iterations_frame([]))
    load: float | None = None      # the 1-minute load average when it ran (live: read after it; replay: the meta's notes)


LOAD = re.compile(r"load average ([0-9.]+) \(1 min\)")


def load_of(out: recordings.Outcome) -> float | None:
    """The machine's 1-minute load average when ``out`` ran: read here after a live run, or the one its
    recording's notes give (the recorders write "load average X (1 min)"); None when neither says."""
    if out.mode == "live":
        return os.getloadavg()[0]
    m = LOAD.search(str((out.recording.meta if out.recording is not None else {}).get("notes", "")))
    return float(m.group(1)) if m else None


def trials(r: Rates | pd.DataFrame, operation: str) -> list[float]:
    """Every iteration's rate (ops/s) of ``operation`` in one run, in the order they ran: the trials
    :func:`iolab.explain.beyond` judges (none when the run printed only its summary)."""
    df = r.iterations if isinstance(r, Rates) else r
    return [float(v) for v in df.loc[df["operation"] == operation].sort_values("iteration")["rate"]]


def trials_unit(r: Rates | pd.DataFrame, operation: str) -> str:
    """The unit of :func:`trials`' values: "ops/s" where they are the run's rates (mdtest 3.x), "ops/s of
    rank 0" where mdtest printed rank 0's own (4.x: about 1/N of the summary's rate with N ranks)."""
    df = r.iterations if isinstance(r, Rates) else r
    scopes = set(df.loc[df["operation"] == operation, "scope"]) if "scope" in df else set()
    return "ops/s of rank 0" if scopes == {"rank 0"} else "ops/s"


def measure_on(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
               launcher: str = "mpirun", timeout: float = 300, quiet: bool = False) -> Rates:
    """mdtest on the filesystem of ``path`` (live, with ``-v``: :func:`with_trials`), or the recording
    made there (replay).

    Live, the run is taken under :class:`iolab.witness.Witness` on ``path``: the bytes mdtest's
    processes (mpirun and its ranks, reaped) made the storage layer read and write, and what the
    block device behind ``path`` moved for everyone (``.witness``); a replay carries the witness the
    recording kept, or says that it has none (``.witness_note``). ``.data``: mdtest.parse's rows;
    ``.frame``: :func:`rates_frame`; ``.iterations``: each iteration's rates (the trials)."""
    seen: dict[str, Any] = {}
    options = with_trials(options)

    def live() -> Run:
        with witness.Witness(path, children=True) as w:
            r = mdtest.run(options, tasks, on=path, launcher=launcher, timeout=timeout)
        seen["witnessed"] = w.result
        return r

    out = recordings.live_or_recorded(live, recording, requires=("mdtest", launcher), parse=mdtest.parse,
                                      quiet=quiet, cls=Rates)
    _witness_of(out, seen.get("witnessed"))
    out.load = load_of(out)
    iters = options.iterations
    out.frame = rates_frame(out, path, f"the whole run (every phase, {iters} iteration{'s' * (iters != 1)})")
    fstype = out.frame["fstype"].iloc[0] if len(out.frame) else "?"
    out.iterations = mdtest.iterations_frame(mdtest.parse_iterations(out.text), path=str(path), fstype=fstype,
                                             mode=out.mode)
    return out


# --- one phase per run: what the device did while mdtest created, stat-ed, removed ------------------

DEVICE_KEYS = ("device", "reads", "read_bytes", "writes", "written_bytes", "discards", "discarded_bytes",
               "busy_ms")


def device_moved(before: witness.DeviceStat, after: witness.DeviceStat) -> dict[str, Any]:
    """What a block device did between two snapshots of its stat file: requests and bytes read and
    written, discard requests and bytes discarded (None where the kernel has no discard fields, before
    4.18), milliseconds busy. Everybody's traffic."""
    sector = witness.SECTOR
    disc = after.discards is not None and before.discards is not None
    return {"device": after.device, "reads": after.reads - before.reads,
            "read_bytes": (after.sectors_read - before.sectors_read) * sector,
            "writes": after.writes - before.writes,
            "written_bytes": (after.sectors_written - before.sectors_written) * sector,
            "discards": after.discards - before.discards if disc else None,
            "discarded_bytes": (after.sectors_discarded - before.sectors_discarded) * sector if disc else None,
            "busy_ms": after.busy_ms - before.busy_ms}


@dataclass(kw_only=True)
class Phases(recordings.Outcome):
    """mdtest's phases run one at a time on one tree: each phase's outcome (``phases``: rates, witness,
    frame) and what the device did during it (``device``: :func:`device_moved`; None where there is no
    block device), and ``device["after"]`` (the ``settle_s`` seconds after the last phase: a journal
    commits later). ``frame``: one row per phase (:func:`phases_frame`)."""

    path: str = ""
    phases: dict[str, recordings.Outcome] = field(default_factory=dict)
    device: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    items: int = 0                   # files (and as many directories) the run made: tasks x -n
    directories: int = 0             # directories the remove phase removed (mdtest's items; 0 with -F)
    settle_s: float = 0.0


def phases_frame(phases: Mapping[str, recordings.Outcome], device: Mapping[str, Any], settle: float) -> pd.DataFrame:
    """One row per phase: phase, operation rates (mdtest's, ops/s), own_read_bytes, own_write_bytes,
    and the device's reads, read_bytes, writes, written_bytes, discards, discarded_bytes, busy_ms."""
    rows = []
    for name in [*phases, *(["after"] if "after" in device else [])]:
        m = phases.get(name)
        row: dict[str, Any] = {"phase": name}
        if m is not None:
            rates = {r["operation"]: r["mean"] for r in m.data if r["unit"] == "ops/s" and r["mean"]}
            row["rates"] = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
            w = m.witness
            row["own_read_bytes"] = w.own_read if w is not None else None
            row["own_write_bytes"] = w.own_written if w is not None else None
        else:
            row.update(rates=f"(the {settle:g} s after the last phase)", own_read_bytes=None, own_write_bytes=None)
        d = device.get(name) or {}
        row.update({k: d.get(k) for k in DEVICE_KEYS})
        rows.append(row)
    return pd.DataFrame(rows)


def run_phases(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str],
               phases: Sequence[str] = ("create", "stat", "remove"), launcher: str = "mpirun", timeout: float = 300,
               settle_s: float = 0.0, ws: workspace.Workspace | None = None) -> dict[str, Any]:
    """Run ``phases`` of ``options`` one mdtest run each, on one tree in a private workspace on ``on``,
    each under a :class:`~iolab.witness.Witness` with the device's stat file read around it. The MPI
    runtime's files go to /dev/shm when it is a tmpfs, so that they are not counted as the measured
    filesystem's I/O.
    ``settle_s``: keep watching the device that long after the last phase. Returns {phase: (Run,
    Witnessed, device_moved or None)} and "after": device_moved or None."""
    bad = [p for p in phases if p not in mdtest.PHASES]
    if bad or not phases:
        raise ValueError(f"phases are some of {', '.join(mdtest.PHASES)}, got {list(phases)}")
    if any(f in options.extra for f in mdtest.PHASES.values()):
        raise ValueError("give the phases with phases=..., not -C/-T/-E/-r in options.extra")
    owner = ws or workspace.session()
    out: dict[str, Any] = {}
    # the MPI runtime's shared-memory files (megabytes per rank) go to memory, when there is a tmpfs:
    # on the measured disk they would be writes and, once removed, discards of their own
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and fsinfo.fstype("/dev/shm") in fsinfo.MEMORY_FS else None
    with workspace.Workspace(budget=owner.budget, base=on, prefix=".iolab-mdtest-") as space, \
            workspace.Workspace(budget="1MiB", base=shm, prefix=".iolab-mpi-") as mpi_space:
        dev = witness.block_device(space.root)
        tree = replace(options, directory=str(space.path("mdtest")))
        for name in phases:
            opts = replace(tree, extra=(*tree.extra, mdtest.PHASES[name]))
            d0 = witness.device_stat(dev) if dev else None
            with witness.Witness(space.root, children=True) as w:
                r = mdtest.run(opts, tasks, ws=space, launcher=launcher, timeout=timeout, keep=True,
                               runtime_dir=mpi_space.root if shm else None)
            d1 = witness.device_stat(dev) if dev else None
            out[name] = (r, w.result, device_moved(d0, d1) if dev else None)
        d0 = witness.device_stat(dev) if dev else None
        time.sleep(settle_s)
        out["after"] = device_moved(d0, witness.device_stat(dev)) if dev and settle_s else None
    return out


# what the recording of measure_phases consists of, declared once for the lesson (which reads it) and
# recorders/l05_mdtest.py (which writes it): mdtest's output of each phase (its witness in the meta;
# the lesson's three, and the other phases mdtest has when asked for) and the device's counts around them
PHASES_CASSETTE = recordings.Cassette(("-create", "-stat", "-remove", "-device"),
                                      optional=tuple(f"-{p}" for p in mdtest.PHASES if p not in ("create", "stat", "remove")))


def measure_phases(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                   phases: Sequence[str] = ("create", "stat", "remove"), settle_s: float = 0.0,
                   launcher: str = "mpirun", timeout: float = 300, quiet: bool = False) -> Phases:
    """:func:`run_phases` on ``path`` live (mdtest and mpirun here), or its recordings:
    ``<recording>-<phase>`` (mdtest's output, its witness in the meta) and ``<recording>-device``
    (iolab's counts of the device's stat file around each phase, JSON)."""
    done: dict[str, Any] = {}

    def live(name: str) -> Run:
        if not done:
            done.update(run_phases(options, tasks, on=path, phases=phases, launcher=launcher, timeout=timeout,
                                   settle_s=settle_s))
        return done[name][0]

    return _phases(path, recording, phases, lambda name: recordings.live_or_recorded(
        lambda: live(name), PHASES_CASSETTE.part(recording, f"-{name}"), requires=("mdtest", launcher), parse=mdtest.parse, quiet=quiet),
        done, settle_s)


def recorded_phases(recording: str, *, phases: Sequence[str] = ("create", "stat", "remove"),
                    path: str | None = None, quiet: bool = False) -> Phases:
    """The recordings of :func:`measure_phases`, replayed whatever tools are here (e.g. ext4 images that
    were loop-mounted as root to record them)."""
    def replay(name: str) -> recordings.Outcome:
        rec = recordings.load(PHASES_CASSETTE.part(recording, f"-{name}"))
        out = recordings.Outcome("replay", rec.text, f"{rec.provenance}; a recording of its own", recording=rec,
                                 data=mdtest.parse(rec.text))
        if not quiet:
            print(out.provenance)
        return out

    where = path or (recordings.load(PHASES_CASSETTE.part(recording, f"-{phases[0]}")).meta.get("filesystem") or {}).get("path", "?")
    return _phases(where, recording, phases, replay, {}, 0.0)


def _phases(path: str | os.PathLike[str], recording: str, phases: Sequence[str], outcome_of: Any,
            done: dict[str, Any], settle_s: float) -> Phases:
    measured: dict[str, recordings.Outcome] = {}
    for name in phases:
        out = outcome_of(name)
        _witness_of(out, done[name][1] if out.mode == "live" else None)
        out.frame = rates_frame(out, path, f"the {name} phase")
        measured[name] = out
    first = next(iter(measured.values()))
    if first.mode == "live":
        device = {name: done[name][2] for name in phases}
        if done.get("after") is not None:
            device["after"] = done["after"]
        settled = settle_s
    else:
        try:
            kept = json.loads(recordings.load(PHASES_CASSETTE.part(recording, "-device")).text)
        except FileNotFoundError:
            kept = {}
        device = {k: v for k, v in (kept.get("phases") or {}).items()}
        settled = float(kept.get("settle_s") or 0.0)
    rows = first.data
    items = int(rows[0]["items"] or 0) if rows else 0
    argv = first.run.argv if first.run is not None else \
        (first.recording.meta.get("argv", []) if first.recording is not None else [])
    return recordings.combine(list(measured.values()), phases_frame(measured, device, settled), cls=Phases,
                              path=str(path), phases=measured, device=device, items=items,
                              directories=0 if "-F" in argv else items, settle_s=settled)
