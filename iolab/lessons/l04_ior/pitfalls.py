"""Lesson 04 (IOR pitfalls), sections 1-9: the seed's sequence of IOR runs, one at a time, and which
layer served each, in sentences computed from its numbers. The verdict on each row and the
:class:`~iolab.lessons.l04_ior.verdicts.Experiment` a run gives back are :mod:`iolab.lessons.l04_ior.verdicts`'; the
sweeps and the repeated runs (sections 10 and 12), :mod:`iolab.lessons.l04_ior.sweeps`'.

Every ``<what>_claims`` function takes what the lesson measured (:class:`Experiment` objects) and
returns the :class:`iolab.explain.Claim` list it printed. The first evidence is the
kernel's witness of the run (``Experiment.witness``, :mod:`iolab.witness`): the bytes IOR's
processes read from storage and dirtied (task I/O accounting, mpirun and its ranks reaped) and what
the device behind the files read and wrote meanwhile (everybody's). Then what else the machine
counted (``Experiment.during``: Dirty/Writeback, CPU and I/O stalls), the test files' page-cache
residency, IOR's own per-iteration times and, for ``-C``, which file each rank opened (a strace
trace, ``Experiment.opens()``). The rate against the device's uncached rate is the last, weakest
ground (:func:`layers_claims` with ``yardstick=True``).

Nothing here assumes a machine: on tmpfs there is no device, on a VM the "device" is partly the
host's memory, on a busy machine iterations scatter. Each claim says what happened and, when the
prediction failed, why it can (with this run's numbers where there are some).

Recording the lesson's runs (IOR and mpirun on PATH, strace for the -C runs)::

    python -m recorders.l04_ior --dir /tmp --label ext4
    python -m recorders.l04_ior --dir /dev/shm --label tmpfs
"""
from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, fsinfo, measure, mpi, pagecache, recordings, runner, witness, workspace
from ...explain import Claim
from ...runner import Run
from ...tools import ior
from ...trials import Trials
from ...units import MiB, format_size
from .verdicts import CacheFacts, Experiment, SystemWatch, recorded_witness

# iterations whose fastest is more than this times the slowest "vary widely"
SPREAD = 1.5
# a cached read: IOR read at least this many times what the device read meanwhile
FROM_MEMORY = 10
# "the device took it": it wrote (or read) at least this share of what IOR wrote (or read)
MOST = 0.9
# at most this share of the test files' pages resident counts as "nothing cached"
HARDLY = 0.05
# a rate this many times the device's uncached rate cannot have come from the device (measure.TOLERANCE)
BEYOND = 2.0

# the lesson's runs: name -> Options changes from the base (-t 1m -b 16m -s 4 -i 3); see runs()
BASE = ior.Options(transfer_size="1MiB", block_size="16MiB", segments=4, iterations=3)
TASKS = 2


def runs(base: ior.Options = BASE) -> dict[str, ior.Options]:
    """The lesson's sequence, in order. From "neighbour" on, -C comes with ``-O numTasksOnNode0=1``
    so that each rank really reads the file the other one wrote (on one node, plain -C moves no rank)."""
    fpp = replace(base, file_per_process=True)
    neighbour = replace(fpp, reorder_tasks=True, tasks_per_node=1)
    return {
        "shared": base,
        "fpp": fpp,
        "reorder": replace(fpp, reorder_tasks=True),
        "neighbour": neighbour,
        "fsync": replace(neighbour, fsync=True),
        "odirect": replace(neighbour, fsync=True, odirect=True),
    }


TRACED = ("reorder", "neighbour")
EVICT = replace(BASE, file_per_process=True, fsync=True, iterations=1)


def recording(run: str, version: str = "4.0.0", fs: str = "ext4") -> str:
    """The recording a run replays: ``ior/lesson-<fs>-<version>-<run>`` (its parts: :data:`CASSETTE`)."""
    return f"ior/lesson-{fs}-{version}-{run}"


# what the recording of one IOR experiment consists of, declared once for experiment() (which reads it)
# and _save() (which writes it): IOR's JSON summary (its meta keeps the witness), what iolab measured
# around the run, and for a traced run the test files' opens
CASSETTE = recordings.Cassette(("-summary", "-cache"), optional=("-opens",))
# split_phases: a write run, then a read run; evict_trials: per trial a write and the two reads
SPLIT_CASSETTE = recordings.Cassette(("-write", "-read"), each=CASSETTE)
EVICT_CASSETTE = recordings.Cassette(("-t{i}-write", "-t{i}-cached", "-t{i}-read"), each=CASSETTE)


# --- experiments: live here, or replayed from a recording ----------------------------------------

def device_name(path: str | os.PathLike[str]) -> str | None:
    """The block device behind ``path`` as /sys/class/block names it (vda, nvme0n1p2, dm-0), or None
    (tmpfs, NFS, FUSE, overlay: nothing whose I/O counters iolab can read)."""
    d = witness.block_device(path)
    return d.name if d is not None else None


def _residency_facts(files: Sequence[Path]) -> dict[str, Any]:
    pages = resident = size = 0
    for f in files:
        r = pagecache.residency(f, keep_map=False)
        pages, resident, size = pages + r.pages, resident + r.resident, size + r.size
    return {"files": len(files), "bytes": size, "pages": pages, "resident_pages": resident,
            "resident_fraction": resident / pages if pages else None}


def _device_facts(ws: workspace.Workspace) -> dict[str, Any]:
    m = fsinfo.mount_of(ws.root)
    facts: dict[str, Any] = {"fstype": m.fstype, "device_bps": None}
    try:
        facts["device_bps"] = measure.device_rate(ws.root)
    except Exception as e:           # tmpfs has no device; a full disk cannot host the probe
        facts["device_note"] = str(e)
    return facts


def experiment(options: ior.Options, *, tasks: int = 2, recording: str, name: str | None = None,
               ws: workspace.Workspace | None = None, launcher: str = "mpirun", timeout: float = 300,
               quiet: bool = False, trace: bool = False, reruns: int = 1) -> Experiment:
    """Run ``options`` live (IOR and mpirun here) or replay ``recording``, and say which.

    Live, a run the witness finds disturbed (someone else's traffic on the device while IOR ran) is
    run again, at most ``reruns`` times, and the lesson says so; the last run is the one kept.

    Live: measures the device's uncached rate behind the workspace (iolab.measure, once per
    session), runs IOR with ``-k`` so that the test files' page-cache residency can be read right
    after the run (iolab.pagecache), then removes them. Around the run (launch to wait, the removal
    of the files included), an :class:`iolab.witness.Witness` counts the bytes IOR's processes
    read from and wrote to storage (task I/O accounting of the children this process waited for:
    mpirun reaps its ranks, we reap mpirun, so the ranks' bytes add up in ours) and what the device
    behind the workspace moved (``.witness``; on tmpfs a note says there is no device); a
    :class:`SystemWatch` samples
    Dirty/Writeback and the CPU and I/O stalls (``.cache.during``). ``trace=True`` runs the
    launcher under ``strace -f -e trace=openat`` (strace needed too): ``.opens()`` says which file
    each rank wrote and read.
    Replay: ``<recording>-summary`` (IOR's JSON summary; its meta keeps the witness),
    ``<recording>-cache`` (what iolab measured around it) and, traced, ``<recording>-opens`` (the raw
    strace output). A recording made before iolab kept witnesses has none (``.witness_note`` says so,
    and the verdicts are inference).
    """
    ws = ws or workspace.session()
    cache: dict[str, Any] = {}
    traced: dict[str, Any] = {}
    seen: dict[str, Any] = {}

    def live() -> Run:
        for attempt in range(reruns + 1):
            r = once()
            w = seen.get("witnessed")
            if w is None or not w.disturbed or attempt == reruns:
                return r
            if not quiet:
                print(f"The witness found this run disturbed ({measure.disturbance(w)}): running it again "
                      f"({attempt + 1} of at most {reruns}).")
        return r

    def once() -> Run:
        cache.update(_device_facts(ws))
        opts = options if options.keep_file else replace(options, keep_file=True)
        wrap = None
        trace_file = ws.root / f".ior-opens-{uuid.uuid4().hex[:8]}.txt"
        if trace:
            def wrap(argv: list[str]) -> list[str]:
                test_file = argv[len(argv) - 1 - argv[::-1].index("-o") + 1]      # IOR's -o (the last one)
                names = [f"{test_file}.{i:08d}" for i in range(tasks)] if options.file_per_process else [test_file]
                traced["argv"] = ior.trace_opens_argv(argv, trace_file, paths=names)
                return traced["argv"]
        try:
            with SystemWatch(ws.root) as watch, witness.Witness(ws.root, children=True) as w:
                r = ior.run(opts, tasks, launcher=launcher, ws=ws, timeout=timeout, inspect=_residency_facts, wrap=wrap)
            seen["witnessed"] = w.result
            if trace:
                traced["text"] = trace_file.read_text(errors="replace") if trace_file.exists() else ""
                traced["run"] = replace(r.run, argv=traced["argv"], stdout=traced["text"],
                                        tool_version=runner.tool_version("strace"))
        finally:
            trace_file.unlink(missing_ok=True)
        cache.update(r.inspected or {})
        cache["during"] = watch.facts()
        return r.as_run()

    requires = ("ior", launcher, "strace") if trace else ("ior", launcher)
    out = recordings.live_or_recorded(live, CASSETTE.part(recording, "-summary"), requires=requires, parse=ior.parse, quiet=quiet)
    if out.mode == "replay":
        try:
            cache.update(json.loads(recordings.load(CASSETTE.part(recording, "-cache")).text))
        except FileNotFoundError:
            pass
        if trace:
            try:
                traced["text"] = recordings.load(CASSETTE.part(recording, "-opens")).text
            except FileNotFoundError:
                pass
        seen["witnessed"], seen["note"] = recorded_witness(out.recording)
    fields = {**{f.name: getattr(out, f.name) for f in dataclasses.fields(recordings.Outcome)},
              "witness": seen.get("witnessed"), "witness_note": seen.get("note", ""), "frame": None}
    return Experiment(**fields, name=name or recording.rpartition("/")[2], options=options, tasks=tasks,
                      cache=CacheFacts.from_dict(cache),
                      opens_text=traced.get("text"), trace_run=traced.get("run"))


def split_phases(options: ior.Options, *, tasks: int = 2, recording: str, evict: bool = True,
                 ws: workspace.Workspace | None = None, launcher: str = "mpirun", timeout: float = 300,
                 quiet: bool = False) -> tuple[Experiment, Experiment]:
    """Write in one IOR run, evict the files from the page cache, read them in a second run.

    Seed 003's way to read honestly: separate the write benchmark from the read benchmark and make
    sure no page of the data set is cached in between. Replays ``<recording>-write`` and
    ``<recording>-read`` (each ``-summary`` and ``-cache``) when IOR is not here.
    """
    ws = ws or workspace.session()
    base = options.test_file or str(ws.mkdir(f"ior-split-{uuid.uuid4().hex[:8]}") / "testfile")
    wopts = replace(options, write=True, read=False, keep_file=True, test_file=base)
    ropts = replace(options, write=False, read=True, keep_file=False, test_file=base)
    try:
        w = experiment(wopts, tasks=tasks, recording=SPLIT_CASSETTE.part(recording, "-write"), name="write (-w -k)", ws=ws,
                       launcher=launcher, timeout=timeout, quiet=quiet)
        before: dict[str, Any] = {}
        if w.mode == "live":
            files = ior.test_files(Path(base))
            if evict:
                for f in files:
                    pagecache.evict(f)
            before = _residency_facts(files)

        # the read run must see the residency measured between the phases, not after its own run
        def measured_before(e: Experiment) -> Experiment:
            return replace(e, cache=replace(e.cache, **before)) if e.mode == "live" else e
        r = measured_before(experiment(ropts, tasks=tasks, recording=SPLIT_CASSETTE.part(recording, "-read"),
                                       name="read after eviction (-r)" if evict else "read (-r)", ws=ws,
                                       launcher=launcher, timeout=timeout, quiet=quiet,
                                       reruns=0))    # a second read would find the pages the first cached
        return w, r
    finally:
        for p in ior.test_files(Path(base)):
            p.unlink(missing_ok=True)


# --- section 8: the read after eviction against the cached read, in repeated trials ---------------

# how many times the lesson repeats write -> both reads; each trial is three IOR runs of one iteration
EVICT_TRIALS = 3
CACHED, EVICTED = "cached read", "read after eviction"


def trial_order(trial: int) -> tuple[str, str]:
    """The two reads of trial ``trial`` (1, 2, ...) in the order they run: the cached read first in odd
    trials, the read after eviction first in even ones, so that neither side always runs first (the read
    after eviction brings the pages back: the cached read after it reads what it cached)."""
    return (CACHED, EVICTED) if trial % 2 else (EVICTED, CACHED)


@dataclass(kw_only=True)
class EvictTrials(recordings.Outcome):
    """Section 8's trials (:func:`evict_trials`): per trial, the write run, the cached read and the read
    after eviction (each an :class:`Experiment` of one iteration, its residency measured before the read);
    ``trials``: the two reads' rates as :class:`iolab.trials.Trials` (every trial kept, in the order run;
    ``.frame`` is its frame)."""

    writes: list[Experiment] = field(default_factory=list)
    cached: list[Experiment] = field(default_factory=list)
    evicted: list[Experiment] = field(default_factory=list)
    trials: Trials | None = None

    @classmethod
    def from_runs(cls, writes: Sequence[Experiment], cached: Sequence[Experiment], evicted: Sequence[Experiment],
                  notes: Sequence[str] = ()) -> "EvictTrials":
        """The set of trials from its runs (trial i's write, cached read and read after eviction at index
        i - 1, the reads run in :func:`trial_order`): their Trials, every one kept, with its position in
        the whole set, the residency before it and the witness's bytes."""
        reads = {CACHED: list(cached), EVICTED: list(evicted)}
        rows, parts = [], []
        for i, w in enumerate(writes, 1):
            parts.append(w)
            for side in trial_order(i):
                e = reads[side][i - 1]
                parts.append(e)
                rate = e.best("read")
                rows.append({"setting": side, "trial": i, "position": len(parts),
                             "value": math.nan if rate is None else float(rate), "warmup": False,
                             "disturbed": None if e.witness is None else e.witness.disturbed, "rerun": False,
                             "kept": True, "order": " then ".join(trial_order(i)),
                             "resident_before": e.cache.resident_fraction,
                             "own_read_bytes": None if e.witness is None else e.witness.own_read,
                             "device_read_bytes": None if e.witness is None else e.witness.device_read})
        t = Trials(pd.DataFrame(rows), unit="MiB/s", higher=True, results=reads, notes=list(notes))
        return recordings.combine(parts, t.frame, cls=cls, writes=list(writes), cached=reads[CACHED],
                                  evicted=reads[EVICTED], trials=t)

    def reads(self, side: str) -> list[Experiment]:
        return self.cached if side == CACHED else self.evicted

    def table(self) -> pd.DataFrame:
        """One row per read, in the order they ran: its trial, its rate, what was resident before it and
        what the kernel counted (IOR's processes from storage, the device), and the verdict."""
        rows = []
        for _, t in self.frame.iterrows():
            e = self.reads(t["setting"])[int(t["trial"]) - 1]
            top = e.table().iloc[0]
            frac = e.cache.resident_fraction
            rows.append({"trial": int(t["trial"]), "run": int(t["position"]), "read": t["setting"],
                         "MiB/s": round(float(t["value"]), 1),
                         "resident before": "?" if frac is None else f"{frac:.0%}",
                         "own bytes": top["own bytes"], "device bytes": top["device bytes"],
                         "verdict": top["verdict"]})
        return pd.DataFrame(rows)


def evict_trials(options: ior.Options | None = None, *, repeat: int = EVICT_TRIALS, tasks: int = 2, recording: str,
                 ws: workspace.Workspace | None = None, launcher: str = "mpirun", timeout: float = 300,
                 quiet: bool = False, reruns: int = 1) -> EvictTrials:
    """Seed 003's honest read, ``repeat`` times: each trial writes the data set in one IOR run (``-w -k``),
    then reads it in two more (``-r``), one from the page cache the write left and one after
    ``posix_fadvise(DONTNEED)`` of every test file (:func:`iolab.pagecache.evict`), in the order
    :func:`trial_order` gives (alternating), the residency measured before each read. Separate runs,
    since a second IOR iteration would read what the first one cached. Every trial is kept.

    Live, a read after eviction that the witness finds disturbed is evicted and run again, at most
    ``reruns`` times in all, and the notes say so. Replays ``<recording>-t<i>-write``, ``-t<i>-cached``
    and ``-t<i>-read`` (each ``-summary`` and ``-cache``)."""
    options = options or EVICT
    ws = ws or workspace.session()
    writes: list[Experiment] = []
    reads: dict[str, list[Experiment]] = {CACHED: [], EVICTED: []}
    notes: list[str] = []
    left = [reruns]
    for i in range(1, repeat + 1):
        base = str(ws.mkdir(f"ior-evict-{uuid.uuid4().hex[:8]}") / "testfile")
        wopts = replace(options, write=True, read=False, keep_file=True, test_file=base)
        ropts = replace(options, write=False, read=True, keep_file=True, test_file=base)
        try:
            w = experiment(wopts, tasks=tasks, recording=EVICT_CASSETTE.part(recording, "-t{i}-write", i=i),
                           name=f"write (-w -k), trial {i}",
                           ws=ws, launcher=launcher, timeout=timeout, quiet=True)
            writes.append(w)
            for side in trial_order(i):
                reads[side].append(_read_run(ropts, side, i, w.mode == "live", tasks=tasks, recording=recording,
                                             ws=ws, launcher=launcher, timeout=timeout, left=left, notes=notes))
        finally:
            for p in ior.test_files(Path(base)):
                p.unlink(missing_ok=True)
    out = EvictTrials.from_runs(writes, reads[CACHED], reads[EVICTED], notes)
    parts = out.parts
    if not quiet:
        first = parts[0].provenance.splitlines()[0] if parts[0].provenance else ""
        print(f"{repeat} trials, {len(parts)} IOR runs (per trial: write, then the two reads in turn); the first: "
              f"{first}")
        for n in notes:
            print(n)
    return out


def _read_run(ropts: ior.Options, side: str, trial: int, live: bool, *, tasks: int, recording: str,
              ws: workspace.Workspace, launcher: str, timeout: float, left: list[int], notes: list[str]) -> Experiment:
    """One read run of a trial: evicted first (and re-run, evicted again, while disturbed and ``left``)
    for the read after eviction; the residency measured just before the run, not after it."""
    files = ior.test_files(Path(ropts.test_file))
    ref = EVICT_CASSETTE.part(recording, "-t{i}-cached" if side == CACHED else "-t{i}-read", i=trial)
    while True:
        before: dict[str, Any] = {}
        if live:
            if side == EVICTED:
                for f in files:
                    pagecache.evict(f)
            before = _residency_facts(files)
        e = experiment(ropts, tasks=tasks, recording=ref, name=f"{side} (-r), trial {trial}", ws=ws,
                       launcher=launcher, timeout=timeout, quiet=True, reruns=0 if side == EVICTED else 1)
        if e.mode == "live":
            e = replace(e, cache=replace(e.cache, **before))
        w = e.witness
        if e.mode != "live" or side != EVICTED or w is None or not w.disturbed or left[0] <= 0:
            return e
        left[0] -= 1
        notes.append(f"Trial {trial}'s read after eviction was disturbed ({measure.disturbance(w)}): evicted "
                     "again and run again.")


# --- small helpers ------------------------------------------------------------------------------

def _size(n: float | None) -> str:
    return "?" if n is None else format_size(max(float(n), 0.0))


def _mib(v: float) -> str:
    return f"{v:,.0f} MiB/s" if v >= 10 else f"{v:,.1f} MiB/s"


def _memory_fs(e: Experiment) -> bool:
    return (e.cache.fstype or "") in fsinfo.MEMORY_FS


def _fs(e: Experiment) -> str:
    return e.cache.fstype or "this filesystem"


def _rates(e: Experiment, access: str) -> list[dict[str, Any]]:
    return [r for r in e.rows if r["access"] == access and r["bw_mib"]]


def _trials(e: Experiment, access: str) -> list[float]:
    """The run's iterations of ``access`` (MiB/s), each one a trial for :func:`iolab.explain.beyond`."""
    return [float(r["bw_mib"]) for r in _rates(e, access)]


def _span(e: Experiment, access: str) -> str:
    """"215–372 MiB/s over 3 iterations": the range of a run's iterations, for sentences without a verdict."""
    v = _trials(e, access)
    if not v:
        return "not measured"
    if len(v) == 1:
        return f"{_mib(v[0])}, one iteration"
    return f"{min(v):,.0f}–{_mib(max(v))} over {len(v)} iterations"


def _in_turn(first: str, then: str) -> str:
    """The two runs' iterations were not interleaved: say so, since an order effect (a machine getting busier,
    fresh pages, write-back of the run before) then lands on one side only."""
    return f"the iterations of the two runs were taken one run after the other (first {first}, then {then}), not interleaved"


def _separate(first: str, then: str) -> str:
    return (f"{_in_turn(first, then)}; what would separate them: more iterations, the two runs interleaved, "
            "or an idle machine")


def _flag(e: Experiment, key: str) -> bool:
    return any(r.get(key) for r in e.rows)


def _cpus(e: Experiment) -> int | None:
    """Cores of the machine the run was made on (this one live, the recording's host replayed)."""
    if e.mode == "live":
        return mpi.cores()
    rec = e.recording
    return (rec.meta.get("host", {}) or {}).get("cpus") if rec is not None else None


def _no_device(e: Experiment) -> str:
    w = e.witness
    if w is None:
        return e.witness_note or "this run was not witnessed"
    return (f"iolab found no block device behind {_fs(e)} whose I/O counters it can read (a network or FUSE "
            "filesystem)" + (f": {'; '.join(w.notes)}" if w.notes else ""))


def _own(e: Experiment, access: str) -> int | None:
    """The bytes IOR's processes read from (or dirtied for) storage, from task I/O accounting."""
    w = e.witness
    if w is None:
        return None
    return w.own_read if access == "read" else w.own_written


def _device(e: Experiment, access: str) -> int | None:
    """What the device behind the files read (or wrote) while IOR ran, everybody's bytes."""
    w = e.witness
    if w is None:
        return None
    return w.device_read if access == "read" else w.device_written


def _others(e: Experiment, access: str) -> str:
    """", 20 MiB of them someone else's" when the device moved clearly more than IOR's processes."""
    w = e.witness
    extra = None if w is None else (w.others_read if access == "read" else w.others_written)
    if extra is None or extra <= witness.DISTURBANCE_FLOOR:
        return ""
    return f", {_size(extra)} of them not IOR's (another program, write-back, the journal)"


# --- 1 · sizes ----------------------------------------------------------------------------------

def dataset_claims(options: ior.Options, tasks: int, mem_bytes: int, *, show: bool = True) -> list[Claim]:
    """Is the data set small next to this machine's memory (so all of it can stay cached)?"""
    data = options.total_bytes(tasks)
    c = explain.expect(
        "the data set is less than a tenth of this machine's memory, so every page IOR writes can stay in "
        "the page cache",
        explain.greater("memory", mem_bytes, "data set", data, by=10),
        yes=lambda ev: f"{_size(data)} against {_size(mem_bytes)} of memory ({mem_bytes / data:,.0f} times the data set)",
        no=lambda ev: f"this machine has {_size(mem_bytes)} of memory, only {mem_bytes / data:,.1f} times the "
                      f"{_size(data)} data set",
        why="a machine with little memory (a small VM, a busy laptop) cannot keep the whole data set cached: "
            "part of the reads below may then come from the device.",
        show=show)
    return [c]


# --- which layer took the writes and served the reads -------------------------------------------

def _undisturbed(e: "Experiment", c: Claim | None) -> Claim | None:
    """A verdict of "unclear: DISTURBED" is never followed by "As predicted": when the witness says the
    device carried someone else's traffic during the run, a claim that held becomes "Cannot tell from
    this run", with what IOR's own count still says and what would settle it."""
    w = e.witness
    if c is None or c.held is not True or w is None or not w.disturbed:
        return c
    own = c.text.removeprefix(explain.AS_PREDICTED).strip()
    _, _, detail = own.partition(" — ")
    return explain.expect(
        c.predicted, explain.fact("an undisturbed run", None),
        missing=(f"the verdicts above are unclear: {measure.disturbance(w)}. "
                 + (f"IOR's own count still points that way ({detail.rstrip('.')}), but " if detail else "")
                 + "a disturbed run is not called here: " + _again(e)),
        show=False)


def _again(e: "Experiment") -> str:
    """What would settle a disturbed run: live, running it again when the node is quieter; replayed, the
    recording is what it is (its own witness found the disturbance when it was made)."""
    if e.live:
        return "run the cell again at a quieter moment."
    return ("the recording was disturbed when it was made (its witness says so), and replaying it gives the "
            "same run: only a live run, at a quieter moment, can settle it.")


def _unless_disturbed(fn):
    """Wrap a claim of :func:`layers_claims` with :func:`_undisturbed`, printing the sentence that stands."""
    @functools.wraps(fn)
    def wrapped(e: "Experiment", show: bool, **kw: Any) -> Claim | None:
        c = _undisturbed(e, fn(e, False, **kw))
        if c is not None and show:
            print(c.text)
        return c
    return wrapped


@_unless_disturbed
def _write_claim(e: Experiment, show: bool) -> Claim | None:
    """Where the writes ended, from the device's counters while IOR ran (task I/O accounting counts a
    page when it becomes dirty, so IOR's own bytes say what it wrote into the page cache, not where
    the data went)."""
    written = e.bytes_moved("write")
    if not written:
        return None
    d = e.during
    dev_w, own_w = _device(e, "write"), _own(e, "write")
    fsync, odirect = _flag(e, "fsync"), _flag(e, "odirect")
    ior_said = f"IOR wrote {_size(written)}{e.scope}"
    if own_w is None:
        dirtied = ""
    elif odirect:
        # fs/iomap/direct-io.c, iomap_dio_bio_iter: task_io_account_write(n) as each direct write's bio
        # is built and submitted; no page of the page cache is dirtied
        dirtied = (f", its processes handed {_size(own_w)} to the device with O_DIRECT (task I/O accounting's "
                   "write_bytes, charged as each direct write is submitted: no page was dirtied)")
    else:
        dirtied = (f", its processes dirtied {_size(own_w)} of page cache (task I/O accounting's write_bytes, "
                   "charged when a page is first dirtied)")
    if not (fsync or odirect):
        predicted = ("the write phase ended in the page cache: while IOR ran, the device wrote less than half of "
                     "what IOR wrote")
        if _memory_fs(e):
            return explain.expect("the write phase ended in the page cache",
                                  explain.fact("the files are on a memory filesystem", True),
                                  yes=f"the files are on {_fs(e)}, which has no device at all: the page cache is "
                                      "where the data lives", show=show)
        if dev_w is None:
            return explain.expect(predicted, explain.greater("written by IOR", written, "written by the device", None,
                                                             by=2), missing=_no_device(e) + ".", show=show)
        dirty = ""
        if d.get("dirty_peak") is not None and d.get("dirty_before") is not None:
            dirty = (f"; /proc/meminfo Dirty rose from {_size(d['dirty_before'])} to {_size(d['dirty_peak'])} "
                     "while it ran")
        wb = d.get("writeback_peak")
        return explain.expect(
            predicted, explain.greater("written by IOR", written, "written by the device", dev_w, by=2),
            yes=lambda ev: f"{ior_said}{dirtied}, the device {_size(dev_w)}{_others(e, 'write')}{dirty}: "
                           "the page cache took it",
            no=lambda ev: f"the device wrote {_size(dev_w)}{_others(e, 'write')} while {ior_said}"
                          + (f" (Writeback peaked at {_size(wb)})" if wb is not None else ""),
            why="the kernel began writing dirty pages back while IOR ran: it does so once dirty data passes "
                "vm.dirty_background_ratio (or _bytes) of memory or is older than vm.dirty_expire_centisecs, "
                "and the device's counters are the whole device's, so other programs' writes count too.",
            show=show)
    how = "O_DIRECT sent every write() to the device" if odirect else \
        "-e (fsync) made the device take the data inside the timing"
    predicted = f"{how}: the device wrote at least {MOST:.0%} of what IOR wrote"
    if _memory_fs(e):
        return explain.expect(predicted, explain.fact("a device behind the files", False),
                              no=f"the files are on {_fs(e)}: there is no device to write to",
                              why=f"{_fs(e)} keeps files only in memory; fsync() has nothing to write and O_DIRECT "
                                  "copies into the very pages that are the file.", show=show)
    if dev_w is None:
        return explain.expect(predicted, explain.greater("written by the device", None, "written by IOR", written * MOST),
                              missing=_no_device(e) + ".", show=show)
    return explain.expect(
        predicted, explain.greater("written by the device", dev_w, f"{MOST:.0%} of what IOR wrote", written * MOST),
        yes=lambda ev: f"{ior_said}{dirtied}, the device {_size(dev_w)}{_others(e, 'write')}",
        no=lambda ev: f"the device wrote only {_size(dev_w)} while {ior_said}",
        why="a filesystem may ignore fsync() or O_DIRECT (some FUSE and network filesystems do), or a cache below "
            "the page cache (a RAID controller, a file server) acknowledged the data first.",
        show=show)


@_unless_disturbed
def _read_claim(e: Experiment, show: bool, *, source: str = "memory", predicted: str | None = None) -> Claim | None:
    """Where the reads came from: first what IOR's processes read from storage (task I/O accounting:
    the ranks' block reads, readahead included), else, for a recording without them, what the device
    read (everybody's); the device's bytes beside them either way."""
    read = e.bytes_moved("read")
    if not read:
        return None
    own, dev = _own(e, "read"), _device(e, "read")
    storage = own if own is not None else dev
    name = "read from storage by IOR's processes" if own is not None else "read by the device"
    resident = e.cache.resident_fraction
    res = f"; {resident:.0%} of the test files' pages were in the page cache afterwards" if resident is not None else ""
    said_own = f"its processes read {_size(own)} from storage (task I/O accounting), " if own is not None else ""
    said = f"{said_own}the device {_size(dev)}{_others(e, 'read')}" if dev is not None else \
        f"{said_own}(no device counters)"
    if source == "memory":
        predicted = predicted or ("the read phase came from memory: less than a tenth of what IOR read came "
                                  "from storage")
        if _memory_fs(e):
            return explain.expect(predicted.partition(":")[0], explain.fact("the files are on a memory filesystem", True),
                                  yes=f"the files are on {_fs(e)}: memory is all there is", show=show)
        if storage is None:
            return explain.expect(predicted, explain.greater("read by IOR", read, "read from storage", None,
                                                             by=FROM_MEMORY), missing=_no_device(e) + ".", show=show)
        return explain.expect(
            predicted, explain.greater("read by IOR", read, name, storage, by=FROM_MEMORY),
            yes=lambda ev: f"IOR read {_size(read)}{e.scope}, {said}: memory served it{res}",
            no=lambda ev: f"IOR read {_size(read)}{e.scope} and {said}{res}",
            why="the page cache did not keep the whole data set (too little free memory, or pages dropped)"
                + (", or other programs read from the same device meanwhile: its counters are the whole device's."
                   if own is None else "; task I/O accounting also counts what mpirun and the ranks loaded "
                                        "from disk to start (their programs and libraries, when not cached)."),
            show=show)
    predicted = predicted or f"the read phase came from the device: at least {MOST:.0%} of what IOR read came from storage"
    if _memory_fs(e):
        return explain.expect(predicted, explain.fact("a device behind the files", False),
                              no=f"the files are on {_fs(e)}: there is no device, every read is a copy from memory",
                              why=f"{_fs(e)} keeps files only in memory: nothing can make its reads come from a "
                                  "device.", show=show)
    if storage is None:
        return explain.expect(predicted, explain.greater("read from storage", None, "read by IOR", read * MOST),
                              missing=_no_device(e) + ".", show=show)
    return explain.expect(
        predicted, explain.greater(name, storage, f"{MOST:.0%} of what IOR read", read * MOST),
        yes=lambda ev: f"IOR read {_size(read)}{e.scope}, {said}: the device served it{res}",
        no=lambda ev: f"IOR read {_size(read)}{e.scope} and {said}{res}",
        why="part of the data was still in the page cache (eviction left pages behind, or the filesystem ignored "
            "O_DIRECT).",
        show=show)


@_unless_disturbed
def _beyond_device_claim(e: Experiment, show: bool) -> Claim | None:
    best = e.best("read")
    if best is None:
        return None
    dev = e.cache.device_bps
    predicted = (f"the best read ran more than {BEYOND:g} times the device's uncached rate, faster than any read "
                 "from the device")
    if dev is None:
        missing = (f"there is no device behind {_fs(e)} to compare with." if _memory_fs(e)
                   else "the device's uncached rate was not measured.")
        return explain.expect(predicted, explain.greater("best read (MiB/s)", best, "device's uncached rate (MiB/s)",
                                                         None, by=BEYOND), missing=missing, show=show)
    dev_mib = dev / MiB
    return explain.expect(
        predicted, explain.greater("best read (MiB/s)", best, "device's uncached rate (MiB/s)", dev_mib, by=BEYOND),
        yes=lambda ev: f"{_mib(best)} against {_mib(dev_mib)} uncached ({best / dev_mib:,.1f} times)",
        no=lambda ev: f"the best read ran at {_mib(best)}, {best / dev_mib:,.1f} times the device's uncached "
                      f"{_mib(dev_mib)}",
        why="a fast device, or a VM whose 'device' is partly its host's memory, reads nearly as fast as two ranks "
            "copy pages on busy cores: the rate alone cannot tell memory from the device here; the device's "
            "counters above can.",
        show=show)


def layers_claims(e: Experiment, *, read_from: str = "memory", read_predicted: str | None = None,
           yardstick: bool = False, show: bool = True) -> list[Claim]:
    """Where this run's writes ended and where its reads came from, from the witness: what IOR's
    processes read from storage and what the device wrote and read while IOR ran.

    ``read_from``: what the lesson expects of the read ("memory" or "device"). ``yardstick``: also
    compare the best read with the device's uncached rate (the seed's argument: nothing reads from
    a device faster than the device).
    """
    out = [_write_claim(e, show), _read_claim(e, show, source=read_from, predicted=read_predicted)]
    if yardstick and read_from == "memory" and not _flag(e, "odirect"):
        out.append(_beyond_device_claim(e, show))
    return [c for c in out if c is not None]


# --- do the iterations agree? -------------------------------------------------------------------

def _causes(e: Experiment, access: str, rows: list[dict[str, Any]]) -> str:
    """What this run's own numbers say about why its iterations scattered."""
    lo = min(rows, key=lambda r: r["bw_mib"])
    hi = max(rows, key=lambda r: r["bw_mib"])
    d = e.during
    bits = []
    call = "write()" if access == "write" else "read()"
    if lo.get("wrrd_s") is not None and hi.get("wrrd_s") is not None:
        bits.append(f"IOR times each phase from the first rank starting it to the last one finishing: the {call} "
                    f"calls of the slowest iteration ({lo['iteration']}) took {lo['wrrd_s']:.3f} s, those of the "
                    f"fastest ({hi['iteration']}) {hi['wrrd_s']:.3f} s")
    totals = [r["total_s"] for r in rows if r.get("total_s")]
    if totals:
        bits.append(f"each iteration lasted {min(totals) * 1000:,.0f} to {max(totals) * 1000:,.0f} ms, so a pause "
                    "of a few milliseconds moves its rate a lot")
    if access == "write" and not _flag(e, "fsync") and not _flag(e, "odirect"):
        wb, dev_w = d.get("writeback_peak"), _device(e, "write")
        if wb is not None or dev_w is not None:
            if (wb or 0) > MiB or (dev_w or 0) > 0.1 * e.bytes_moved("write"):
                bits.append(f"write-back was under way while IOR ran (/proc/meminfo Writeback peaked at {_size(wb)}, "
                            f"the device wrote {_size(dev_w)}): flushing dirty pages competes for the CPU and the "
                            "device")
            else:
                thr = d.get("dirty_background_threshold")
                below = (f"; Dirty peaked at {_size(d.get('dirty_peak'))}, below the kernel's background write-back "
                         f"threshold of {_size(thr)}" if thr and d.get("dirty_peak") is not None else "")
                bits.append(f"no write-back to speak of was under way (Writeback peaked at {_size(wb)}, the device "
                            f"wrote {_size(dev_w)}{below})")
        if lo["iteration"] == min(r["iteration"] for r in rows):
            bits.append("the slowest was the first iteration, but not as the only one that allocated pages: IOR "
                        "removes the test files before every write phase unless -E (src/ior.c, the write phase of "
                        "each repetition; -k only keeps them after the last), so every iteration writes new files "
                        "into freshly allocated pages")
    stalls = [d.get("direct_reclaim_stalls"), d.get("compaction_stalls")]
    if any(x is not None for x in stalls):
        n = sum(x or 0 for x in stalls)
        bits.append(f"{n:,} allocation{'s' * (n != 1)} stalled to reclaim or compact memory (/proc/vmstat)"
                    if n else "no allocation stalled for memory (/proc/vmstat allocstall, compact_stall)")
    cpu, secs = d.get("cpu_wait_s"), d.get("seconds")
    if cpu is not None and secs:
        cores = _cpus(e)
        on = f" on {cores} core{'s' * (cores != 1)}" if cores else ""
        bits.append(f"some task waited for a CPU during {cpu / secs:.0%} of the run (/proc/pressure/cpu): "
                    f"{e.tasks} ranks, mpirun and everything else on this machine shared the CPUs{on}")
    io = d.get("io_wait_s")
    if io is not None and secs and io / secs > 0.05:
        bits.append(f"some task waited for I/O during {io / secs:.0%} of it (/proc/pressure/io)")
    return "; ".join(bits) + "." if bits else "this run recorded nothing that points to a cause."


def spread_claims(e: Experiment, *, factor: float = SPREAD, show: bool = True) -> list[Claim]:
    """For each access with several iterations: do they agree within ``factor``? If not, the causes
    this run's numbers can check (write-back, CPU stalls, iteration length, the first iteration)."""
    out = []
    for access in ("write", "read"):
        rows = _rates(e, access)
        if len(rows) < 2:
            continue
        vals = [r["bw_mib"] for r in rows]
        lo, hi = min(vals), max(vals)
        out.append(explain.expect(
            f"the {len(rows)} {access} iterations agree within a factor {factor:g}",
            explain.greater("slowest (MiB/s)", lo, "fastest (MiB/s)", hi, by=1 / factor),
            yes=lambda ev, a=access, lo=lo, hi=hi: f"{a} from {_mib(lo)} to {_mib(hi)}",
            no=lambda ev, a=access, lo=lo, hi=hi: f"the {a} iterations ran from {_mib(lo)} to {_mib(hi)} "
                                                  f"({hi / lo:,.{2 if hi / lo < 2 else 1}f} times)",
            why=_causes(e, access, rows), show=show))
    return out


# --- 3 · -F against the shared file --------------------------------------------------------------

def file_per_process_claims(shared: Experiment, fpp: Experiment, published: pd.DataFrame | None = None, *,
                            show: bool = True) -> list[Claim]:
    """-F against one shared file: Linux serializes write() calls to one file (its inode lock). Both
    comparisons rest on the runs' write iterations (:func:`iolab.explain.beyond`)."""
    s, f = _trials(shared, "write"), _trials(fpp, "write")
    d = fpp.during
    cpu, secs, cores = d.get("cpu_wait_s"), d.get("seconds"), _cpus(fpp)
    busy = (f"during the -F run some task waited for a CPU {cpu / secs:.0%} of the time (/proc/pressure/cpu)"
            if cpu is not None and secs else "the CPU stalls were not measured")
    order = _in_turn("the shared-file run", "the -F run")
    rel = explain.beyond("-F write", f, "shared-file write", s, by=1.2, unit="MiB/s")
    out = [explain.expect(
        "-F wrote at least 1.2 times as fast as the shared file, in every pair of iterations: Linux takes a file's "
        "inode lock for every write(), so two ranks writing one file take turns, while with -F each rank has a "
        "file and a lock of its own",
        rel,
        yes=lambda ev: f"{explain.spread_text(rel)}; {order}",
        no=lambda ev: f"{explain.spread_text(rel)}: even -F's best iteration was not 1.2 times the shared file's "
                      f"worst; {order}",
        close=_separate("the shared-file run", "the -F run"),
        why=f"two ranks write at the same time only when both get a core ({cores or '?'} here, shared with mpirun "
            f"and everything else; {busy}).",
        show=show)]
    if published is not None and s and f:
        p = published.set_index(["config", "access"])["bw_mib"]
        gain = float(p[("-F", "write")]) / float(p[("shared", "write")])
        # "our gain is under a fifth of the seed's" for every pair of iterations: the shared file's worst
        # iteration beats -F's best by more than 5/gain
        far = explain.beyond("shared-file write", s, "-F write", f, by=5 / gain, unit="MiB/s")
        lo, hi = min(f) / max(s), max(f) / min(s)
        ours = f"{lo:,.1f} to {hi:,.1f} times" if f"{lo:,.1f}" != f"{hi:,.1f}" else f"{hi:,.1f} times"
        out.append(explain.expect(
            f"-F gained far less here than on the seed's CephFS (less than a fifth of its {gain:,.0f} times, in "
            "every pair of iterations), where a shared file's locks travel over the network",
            far,
            yes=lambda ev: f"{gain:,.0f} times on ORFEO (seed 001), {ours} here: {explain.spread_text(far)}; {order}",
            no=lambda ev: f"-F gained {ours} here and {gain:,.0f} times on ORFEO: {explain.spread_text(far)}; {order}",
            close=_separate("the shared-file run", "the -F run"),
            why="a filesystem whose shared-file locks are expensive (a network filesystem, many ranks) gains a lot "
                "from -F; this one may be such a filesystem.",
            show=show))
    return out


# --- 4 · -C on one node, and a real neighbour -----------------------------------------------------

def _who_read_what(table: pd.DataFrame) -> str:
    parts = []
    for rank, g in table.groupby("rank", sort=True):
        reads = sorted(set(g["read"].dropna()))
        wrote = g["wrote"].iloc[0]
        n = len(g)
        what = reads[0] if len(reads) == 1 else ", ".join(reads)
        whose = "its own file" if all(g["read"] == g["wrote"]) else \
            "written by rank " + ", ".join(str(int(x[-8:])) for x in reads)
        parts.append(f"rank {rank} (pid {g['pid'].iloc[0]}) wrote {wrote} and read {what} ({whose}, "
                     f"{n} iteration{'s' * (n != 1)})")
    return "; ".join(parts)


def _rule(e: Experiment) -> tuple[int | None, dict[str, Any]]:
    lay = e.layout()
    if None in (lay.get("task_offset"), lay.get("tasks_per_node"), lay.get("tasks")):
        return None, lay
    return ior.reorder_rule(int(lay["task_offset"]), int(lay["tasks_per_node"]), int(lay["tasks"])), lay


def _rule_claim(e: Experiment, table: pd.DataFrame | None, show: bool) -> Claim:
    shift, lay = _rule(e)
    predicted = "every read was shifted by IOR's rule, (task offset × tasks per node) mod tasks"
    seen = sorted({int(x) for x in table["shift"].dropna()}) if table is not None and len(table) else []
    if shift is None or not seen:
        return explain.expect(predicted, explain.fact("the trace matches the rule", None),
                              missing="the run was not traced, or IOR did not print its layout.", show=show)
    formula = f"({lay['task_offset']} × {lay['tasks_per_node']}) mod {lay['tasks']} = {shift}"
    return explain.expect(
        predicted, explain.fact("the trace matches the rule", seen == [shift]),
        yes=f"IOR's Options say task offset {lay['task_offset']}, {lay['tasks_per_node']} task(s) per node, "
            f"{lay['tasks']} tasks on {lay.get('nodes') or '?'} node(s): {formula}, and the trace shows a shift of "
            f"{shift}",
        no=f"the rule gives {formula}, the trace shows shift(s) {', '.join(map(str, seen))}",
        why="IOR multiplies by the tasks per node only when rank 1 runs on rank 0's host (a by-slot mapping, "
            "QueryNodeMapping in utilities.c); with ranks dealt round-robin over nodes the shift is the task "
            "offset alone.",
        show=show)


def reorder_claims(e: Experiment, *, show: bool = True) -> list[Claim]:
    """-C on one node: did any rank read another rank's file (from the trace), and does IOR's rule say so?"""
    table = e.opens()
    predicted = ("on one node -C moved no rank: IOR shifts the reads by whole nodes, so every rank re-read "
                 "the file it wrote")
    if table is None or not len(table):
        first = explain.expect(predicted, explain.fact("no rank read another rank's file", None),
                               missing="this run has no trace of the files each rank opened.", show=show)
    else:
        shift, lay = _rule(e)
        moved = bool(table["moved"].fillna(False).any())
        first = explain.expect(
            predicted, explain.fact("no rank read another rank's file", not moved),
            yes=_who_read_what(table),
            no=_who_read_what(table),
            why=f"IOR believed {lay.get('tasks_per_node')} task(s) per node on {lay.get('nodes')} node(s), so its "
                f"shift was {shift} rank(s), not a whole node (the ranks ran on more than one node, or "
                "numTasksOnNode0 was set).",
            show=show)
    return [first, _rule_claim(e, table, show)]


def neighbour_claims(e: Experiment, *, show: bool = True) -> list[Claim]:
    """-C with numTasksOnNode0=1: every rank reads the other's file, and it is still a memory read."""
    table = e.opens()
    predicted = ("with numTasksOnNode0=1 IOR believes each rank has a node of its own, so -C shifted every read "
                 "by one rank: each rank read the file the other one wrote")
    if table is None or not len(table):
        first = explain.expect(predicted, explain.fact("every rank read another rank's file", None),
                               missing="this run has no trace of the files each rank opened.", show=show)
    else:
        moved_all = bool(table["moved"].fillna(False).all())
        shift, lay = _rule(e)
        first = explain.expect(
            predicted, explain.fact("every rank read another rank's file", moved_all),
            yes=_who_read_what(table), no=_who_read_what(table),
            why=f"IOR's Options say {lay.get('tasks_per_node')} task(s) per node: the option did not reach IOR, "
                "or this IOR ignores it.",
            show=show)
    read = _read_claim(e, show, predicted="the neighbour's file was in this node's page cache all the same (the page "
                                          "cache is per node, and both ranks share this one): less than a tenth of "
                                          "what IOR read came from storage")
    return [c for c in (first, _rule_claim(e, table, show), read) if c is not None]


# --- 5 · -e ---------------------------------------------------------------------------------------

def fsync_claims(without: Experiment, with_e: Experiment, *, show: bool = True) -> list[Claim]:
    """-e: the write slows down (the device is in the timing); the read does not (fsync does not drop pages).
    The write comparison rests on both runs' iterations (:func:`iolab.explain.beyond`)."""
    why = ("a device that takes data about as fast as memory does (a fast NVMe drive, or a VM whose host keeps "
           "the virtual disk in its own memory) makes fsync() cheap.")
    memfs = _memory_fs(with_e)
    rel = explain.beyond("write without -e", _trials(without, "write"), "write with -e",
                         [] if memfs else _trials(with_e, "write"), by=1.5, unit="MiB/s")
    order = _in_turn("the run without -e", "the -e run")
    first = explain.expect(
        "-e made the write at least 1.5 times slower, in every pair of iterations: the clock now stops when the "
        "device has the data, not the page cache",
        rel,
        missing=f"the files are on {_fs(with_e)}: fsync() has no device to wait for, so the two writes "
                f"({_span(with_e, 'write')} with -e, {_span(without, 'write')} without) differ only by chance.",
        yes=lambda ev: f"{explain.spread_text(rel)}; {order}",
        no=lambda ev: f"{explain.spread_text(rel)}: even the best -e iteration was not 1.5 times slower than the "
                      f"worst one without; {order}",
        close=_separate("the run without -e", "the -e run"),
        why=why, show=show)
    out = [first, _write_claim(with_e, show),
           _read_claim(with_e, show, predicted="the read still came from memory: fsync() cleans dirty pages but does "
                                               "not drop them, so less than a tenth of what IOR read came from storage")]
    return [c for c in out if c is not None]


# --- 6 · O_DIRECT ---------------------------------------------------------------------------------

def odirect_claims(direct: Experiment, cached: Experiment, *, show: bool = True) -> list[Claim]:
    """O_DIRECT: nothing left in the page cache, reads from the device, slower than the cached read."""
    frac = direct.cache.resident_fraction
    out = [explain.expect(
        "O_DIRECT left (almost) nothing of the test files in the page cache",
        explain.fact(f"at most {HARDLY:.0%} of the pages resident after the run",
                     None if frac is None else frac <= HARDLY),
        yes=f"{frac:.0%} of their pages were resident after the run" if frac is not None else "",
        no=f"{frac:.0%} of the test files' pages were resident after the run" if frac is not None else "",
        why=(f"on {_fs(direct)} the pages are the file: there is no cache to bypass." if _memory_fs(direct) else
             "another program read the files through the page cache meanwhile, or this filesystem ignores O_DIRECT."),
        missing="the residency was not measured.", show=show)]
    out += layers_claims(direct, read_from="device", show=show)
    memfs = _memory_fs(direct)
    rel = explain.beyond("cached read", _trials(cached, "read"), "O_DIRECT read",
                         [] if memfs else _trials(direct, "read"), by=2, unit="MiB/s")
    out.append(explain.expect(
        "the O_DIRECT read was more than twice as slow as the cached read of the -e run, in every pair of iterations",
        rel,
        missing=f"the files are on {_fs(direct)}: both reads are copies from memory ({_span(direct, 'read')} with "
                f"O_DIRECT, {_span(cached, 'read')} cached), so any difference is chance.",
        yes=lambda ev: f"{explain.spread_text(rel)}; {_in_turn('the -e run', 'the O_DIRECT run')}",
        no=lambda ev: f"{explain.spread_text(rel)}: even the fastest O_DIRECT iteration was not twice as slow as "
                      f"the slowest cached one; {_in_turn('the -e run', 'the O_DIRECT run')}",
        close=_separate("the -e run", "the O_DIRECT run"),
        why=(f"on {_fs(direct)} both are copies from memory." if _memory_fs(direct) else
             "a device (or a cache below this machine: a VM host's memory, a file server's) that delivers about as "
             "fast as this machine copies memory."),
        show=show))
    return out


# --- 7 · evict between the phases ---------------------------------------------------------------

def _every_trial(reads: list[Experiment], predicted: str, *, source: str, why: str, show: bool) -> Claim:
    """One claim for a set of read runs: :func:`_read_claim` decides each trial (a disturbed trial is not
    called); held when every trial's held, with each trial's bytes (IOR's, its processes' from storage,
    the device's)."""
    each = [(i, e, _read_claim(e, False, source=source)) for i, e in enumerate(reads, 1)]
    each = [(i, e, c) for i, e, c in each if c is not None]

    def bytes_of(i: int, e: Experiment) -> str:
        own, dev = _own(e, "read"), _device(e, "read")
        mine = f"{_size(own)} of {_size(e.bytes_moved('read'))} from storage" if own is not None else \
            f"IOR read {_size(e.bytes_moved('read'))}"
        return f"trial {i}: {mine}" + (f" (the device {_size(dev)}{_others(e, 'read')})" if dev is not None else "")
    said = "; ".join(bytes_of(i, e) for i, e, _ in each)
    if each and all(_memory_fs(e) for _, e, _ in each):        # no storage at all: the trials say one thing
        said = each[0][2].text.partition(" — ")[2].rstrip(".") + f" (all {len(each)} trials)"
    else:
        said += " (task I/O accounting of IOR's processes; the device's counters)"
    verdicts = [c.held for _, _, c in each]
    held = False if False in verdicts else None if not each or None in verdicts else True
    # what the trials that failed saw, each reason once with its trials; why from the first of them
    failed: dict[str, list[str]] = {}
    whys = []
    for i, _, c in each:
        if c.held is False:
            seen, _, why_c = c.text.partition(", but ")[2].partition(" Why it can happen: ")
            failed.setdefault(seen.rstrip("."), []).append(str(i))
            whys.append(why_c)
    no = "; ".join(f"trial{'s' * (len(ns) > 1)} {', '.join(ns)}: {seen}" for seen, ns in failed.items())
    return explain.expect(
        predicted, explain.fact(f"every trial ({len(each)})", held), yes=said, no=no,
        missing=next((_not_called(i, e, c) for i, e, c in each if c.held is None), "no read was measured."),
        why=next((w for w in whys if w), why), show=show)


def _not_called(i: int, e: Experiment, c: Claim) -> str:
    """Why trial ``i``'s read is not called: its witness found the device disturbed (what IOR's own
    processes read is still said), or what :func:`_read_claim` missed."""
    w = e.witness
    if w is not None and w.disturbed:
        own = _own(e, "read")
        still = (f"; IOR's processes still read {_size(own)} of {_size(e.bytes_moved('read'))} from storage"
                 if own is not None else "")
        return (f"trial {i} was disturbed ({measure.disturbance(w)}){still}, but a disturbed run is not called "
                "here: " + _again(e))
    return f"trial {i}: {c.text.partition(', but ')[2] or c.text}"


def _alternation(n: int) -> str:
    """How :func:`trial_order` took the two reads of ``n`` trials, in words."""
    if n < 2:
        return f"{n} trial: the cached read first"
    first = [str(i) for i in range(1, n + 1) if trial_order(i)[0] == CACHED]
    other = [str(i) for i in range(1, n + 1) if trial_order(i)[0] != CACHED]

    def trial(ns: list[str]) -> str:
        return f"trial{'s' * (len(ns) > 1)} {', '.join(ns)}"
    return (f"the two reads of each trial were separate runs in alternating order, the cached read first in "
            f"{trial(first)}, the read after eviction first in {trial(other)}")


def evicted_claims(trials: EvictTrials, *, show: bool = True) -> list[Claim]:
    """Write, then read in two separate runs, one after posix_fadvise(DONTNEED), one from the page cache,
    in alternating order, :data:`EVICT_TRIALS` times (:func:`evict_trials`): the eviction worked before every
    read after eviction, the device served those reads and memory the cached ones (each trial's witness), and
    the read after eviction was slower, by the course's one rule over the trials (:func:`iolab.explain.beyond`)."""
    evicted, cached = trials.evicted, trials.cached
    fracs = [e.cache.resident_fraction for e in evicted]
    known = [f for f in fracs if f is not None]
    worst = max(known, default=None) if len(known) == len(fracs) and known else None
    before = ", ".join(f"{f:.0%}" for f in known)
    memfs = any(_memory_fs(e) for e in evicted)
    fs = _fs(evicted[0]) if evicted else "this filesystem"
    out = [explain.expect(
        "posix_fadvise(DONTNEED) emptied the page cache of the test files before every read after eviction",
        explain.fact(f"at most {HARDLY:.0%} resident before each", None if worst is None else worst <= HARDLY),
        yes=f"{before} resident before the {len(known)} reads after eviction",
        no=f"{before} of the pages were still resident before the {len(known)} reads after eviction",
        why=(f"{fs} pages are the files themselves: DONTNEED cannot drop them." if memfs else
             "the kernel keeps pages that are dirty, under write-back or mapped by a process."),
        missing="the residency was not measured before every read.", show=show)]
    out.append(_every_trial(evicted, f"in every trial the read after eviction came from the device: at least "
                                     f"{MOST:.0%} of what IOR read came from storage", source="device",
                            why="part of the data was still in the page cache (eviction left pages behind).",
                            show=show))
    out.append(_every_trial(cached, "in every trial the cached read came from memory: less than a tenth of what "
                                    "IOR read came from storage", source="memory",
                            why="the page cache did not keep what the write (or the read before) left there: too "
                                "little free memory, or pages dropped.", show=show))
    kept = worst is None or worst > HARDLY
    t = trials.trials
    rel = explain.beyond(CACHED, t.values(CACHED), EVICTED, [] if kept else t.values(EVICTED), by=1.5, unit="MiB/s")
    n = len(evicted)
    order = _alternation(n)
    f = t.frame
    busy = [f"trial {int(r['trial'])}'s {r['setting']}" for _, r in f.iterrows() if r["disturbed"] in (True,)]
    if busy:
        order += (f"; every trial is counted, {' and '.join(busy)} too, which the witness found disturbed (someone "
                  "else's traffic on the device while it ran): a busy machine shows in the spread")
    out.append(explain.expect(
        "the read after eviction was at least 1.5 times slower than the cached read, in every pair of trials",
        rel,
        missing=(f"the files were not evicted ({before} resident), so these reads say nothing about the device."
                 if worst is not None else "the residency before the reads was not measured."),
        yes=lambda ev: f"{explain.spread_text(rel)}; {order}",
        no=lambda ev: f"{explain.spread_text(rel)}: even the fastest read after eviction was not 1.5 times slower "
                      f"than the slowest cached one; {order}",
        close=f"{order}; what would separate them: more trials, or an idle machine",
        why=(f"on {fs} nothing was evicted." if memfs else
             "the device (or a cache below this machine: a VM host's memory) delivers about as fast as memory "
             "copies here."),
        show=show))
    return out


# --- 8 · beside the seed --------------------------------------------------------------------------

def only_e_claims(experiments: Sequence[Experiment], *, show: bool = True) -> list[Claim]:
    """Was -e the only thing that brought a write down? Every write iteration without -e or O_DIRECT
    against the best -e iteration."""
    free = [(e, r) for e in experiments if not _flag(e, "fsync") and not _flag(e, "odirect") for r in _rates(e, "write")]
    synced = [e for e in experiments if _flag(e, "fsync") and not _flag(e, "odirect")]
    best_e = max((e.best("write") or 0 for e in synced), default=None) or None
    if not free:
        return [explain.expect("every write iteration without -e was faster than the best -e iteration",
                               explain.greater("slowest write without -e", None, "best -e write", best_e),
                               missing="there is no run without -e.", show=show)]
    e_lo, r_lo = min(free, key=lambda x: x[1]["bw_mib"])
    lo = r_lo["bw_mib"]
    memfs = any(_memory_fs(e) for e in synced)
    return [explain.expect(
        "every write iteration without -e was faster than the best -e iteration: only -e brought the write down",
        explain.greater("slowest write without -e (MiB/s)", lo, "best -e write (MiB/s)", None if memfs else best_e),
        missing="the files are on a memory filesystem: -e has no device to wait for there, so it cannot bring a "
                "write down.",
        yes=lambda ev: f"the slowest was {_mib(lo)} ({e_lo.name}, iteration {r_lo['iteration']}), the best -e "
                       f"iteration {_mib(best_e)}",
        no=lambda ev: f"{e_lo.name}'s iteration {r_lo['iteration']} wrote at {_mib(lo)}, no faster than the best -e "
                      f"iteration ({_mib(best_e)})",
        why="a write without -e can be slowed by what the iteration notes above list (write-back under way, CPU "
            "stalls, an iteration of a few milliseconds), and on a fast device -e costs little: -e is the one option "
            "that puts the device in every iteration's time, not the only thing that can slow one.",
        show=show)]


# --- tables for the lesson ------------------------------------------------------------------------

def opens_summary(e: Experiment) -> pd.DataFrame | None:
    """One row per rank: its pid, the file it wrote, the file(s) it read, whose they were."""
    t = e.opens()
    if t is None:
        return None
    rows = []
    for rank, g in t.groupby("rank", sort=True):
        reads = sorted(set(g["read"].dropna()))
        rows.append({"rank": rank, "pid": g["pid"].iloc[0], "wrote": g["wrote"].iloc[0], "read": ", ".join(reads),
                     "iterations": len(g), "another rank's file": "yes" if g["moved"].fillna(False).all() else
                     ("no" if not g["moved"].fillna(False).any() else "some")})
    return pd.DataFrame(rows)


def frame(experiments: Iterable[Experiment]) -> pd.DataFrame:
    """Every iteration of every run, with verdicts (``Experiment.frame``), in run order."""
    return pd.concat([e.frame for e in experiments], ignore_index=True)


# --- recording ------------------------------------------------------------------------------------

def _save(e: Experiment, ref: str, fs_path: str, host: str | None, notes: str) -> None:
    import json

    r = e.run
    recordings.save(r, CASSETTE.part(ref, "-summary"), ext="json", stream="summaryFile", fs_path=fs_path, host_description=host,
                    witness=e.witness,
                    notes=f"{notes} (IOR's JSON summary file; iolab adds -k to look at the test files' page-cache "
                          "residency after the run, then removes them; the witness covers the whole run, from "
                          "launch to the removal of the files)")
    recordings.save(json.dumps(e.cache.as_dict(), indent=2) + "\n", CASSETTE.part(ref, "-cache"), ext="json", argv=r.argv, stream="file",
                    tool_version=r.tool_version, fs_path=fs_path, host_description=host,
                    notes=f"Measured by iolab around the IOR run {ref}-summary: the device's uncached read rate "
                          "(iolab.measure.device_rate, bytes/s), the test files' page-cache residency "
                          "(iolab.pagecache.residency) after the run (for the read run of a split pair: before it), "
                          "and 'during': what the machine counted while IOR ran (SystemWatch: /proc/meminfo "
                          "Dirty and Writeback sampled every 10 ms, /proc/pressure cpu and io stall seconds, "
                          "/proc/vmstat reclaim stalls). The bytes IOR's processes and the device moved are the "
                          "witness in the -summary recording's meta.")
    if e.trace_run is not None:
        recordings.save(e.trace_run, CASSETTE.part(ref, "-opens"), ext="txt", stream="file", fs_path=fs_path,
                        tool_version=r.tool_version, host_description=host,
                        notes=f"{notes}: strace -f -e trace=openat of the same run ({e.trace_run.tool_version}), "
                              f"only the test files (-P); IOR {r.tool_version}.")


def record(directory: str, label: str, *, host: str | None = None, only: str | None = None) -> list[str]:
    """Run the lesson's IOR sequence live in ``directory`` (its filesystem labelled ``label``) and save
    each run as ``recording(run, version, label)``; returns the refs written. ``only="evict"``: section 8's
    trials alone (:func:`record_evict`)."""
    import os

    os.environ["IOLAB_MODE"] = "live"
    version = ior.installed_version()
    if version is None:
        raise SystemExit("IOR is not on PATH")
    notes = {
        "shared": "2 ranks, one shared file",
        "fpp": "-F: one file per rank",
        "reorder": "-F -C on one node: IOR's shift is (1 x 2) mod 2 = 0, each rank re-reads its own file",
        "neighbour": "-F -C -O numTasksOnNode0=1: each rank reads the other rank's file (same node)",
        "fsync": "-F -C -O numTasksOnNode0=1 -e: fsync at the end of each write phase, inside the timing",
        "odirect": "-F -C -O numTasksOnNode0=1 -e --posix.odirect",
    }
    written = []
    with workspace.Workspace(budget="1GiB", base=directory) as ws:
        for run, opts in runs().items():
            if only is not None and only != run:
                continue
            ref = recording(run, version, label)
            e = experiment(opts, tasks=TASKS, recording=ref, ws=ws, trace=run in TRACED, quiet=True)
            _save(e, ref, str(ws.root), host, f"lesson 04, {notes[run]}, on {label}")
            written.append(ref)
            print(ref, e.table()[["access", "best MiB/s", "worst MiB/s"]].to_dict("records"))
        if only in (None, "evict"):
            written += record_evict(ws, version, label, host=host)
    return written


def record_evict(ws: workspace.Workspace, version: str, label: str, *, host: str | None = None) -> list[str]:
    """Section 8's trials live in ``ws`` (:func:`evict_trials`), each run saved as
    ``recording("evict", version, label)-t<i>-write``, ``-t<i>-cached`` and ``-t<i>-read``."""
    ref = recording("evict", version, label)
    t = evict_trials(EVICT, tasks=TASKS, recording=ref, ws=ws, quiet=True)
    written = []
    for i, w in enumerate(t.writes, 1):
        when = " then ".join(trial_order(i))
        _save(w, EVICT_CASSETTE.part(ref, "-t{i}-write", i=i), str(ws.root), host,
              f"lesson 04, trial {i} of {len(t.writes)}: -F -e -w -k, the write run (then {when}), on {label}")
        _save(t.cached[i - 1], EVICT_CASSETTE.part(ref, "-t{i}-cached", i=i), str(ws.root), host,
              f"lesson 04, trial {i}: -F -r of the files the write run left, from the page cache ({when}), on {label}")
        again = "".join(f" {n}" for n in t.trials.notes if n.startswith(f"Trial {i}'s "))
        _save(t.evicted[i - 1], EVICT_CASSETTE.part(ref, "-t{i}-read", i=i), str(ws.root), host,
              f"lesson 04, trial {i}: -F -r after posix_fadvise(DONTNEED) of the files the write run left "
              f"({when}), on {label}.{again}")
        written += [EVICT_CASSETTE.part(ref, p, i=i) for p in EVICT_CASSETTE.parts]
    print(ref, t.trials.summary()[["trials", "median", "min", "max"]].to_dict("index"), *t.trials.notes)
    return written
