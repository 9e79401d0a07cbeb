"""mdtest: metadata rates (create, stat, read, remove of many small files and directories) under MPI.

:class:`Options` -> :func:`run` (mpirun/srun, the test tree inside a private workspace on the
filesystem being measured, removed afterwards) -> :func:`parse` -> :func:`to_frame` ->
``iolab.plot.mdtest_rates``.

What the versions print (all handled by :func:`parse`):

* 3.x: ``SUMMARY rate: (of N iterations)``; each row name ends with a colon
  (``File creation        :   99902.595 ...``).
* 4.0: the same heading, no colon after the row names, a ``Directory rename`` row, and a
  ``WARNING: Read bytes is 0 ...`` line from every rank, possibly before the header.
* 4.1 (main): ``SUMMARY rate (in ops/sec): (of N iterations)``.
* ``-P`` adds a ``SUMMARY time`` table. Its values are the seconds each phase took (mdtest's
  ``t_end - t_start``) in every version, even where main's heading says ``(in ms/op)``;
  :func:`parse` reports them with unit "s" and keeps the heading's word in ``unit_printed``.
* There is no JSON output. Errors are ``ERROR: ...`` lines (4.x) or ``Process N: FAILED in ...``
  lines (3.x) on stdout.
"""
from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import first_line
from .. import fsinfo, mpi, recordings, runner, witness, workspace
from ..errors import BudgetExceeded, ParseError, ToolFailed, ToolMissing
from ..runner import Run
from ..units import format_size

_LAUNCHED = re.compile(r"mdtest-(\S+) was launched with (\d+) total task\(s\) on (\d+) node\(s\)")
_ITEMS = re.compile(r"^(\d+) tasks?, (\d+) (files/directories|files|directories)\b")
_SUMMARY = re.compile(r"^SUMMARY (rate|time)(?: \(in ([^)]*)\))?: \(of (\d+) iterations?\)")
_ERROR = re.compile(r"^ERROR\b|FAILED in |\bmdtest ERROR\b")
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)"
_ROW = re.compile(rf"^([A-Za-z][A-Za-z ()]*?)\s*:?\s+((?:{_NUMBER}\s+)*{_NUMBER})\s*$")

KEYS = ("operation", "max", "min", "mean", "stddev", "unit", "unit_printed", "iterations", "tasks", "items",
        "version")


@dataclass(frozen=True)
class Options:
    """One mdtest run. ``files`` is mdtest's ``-n``: items each rank creates per iteration."""

    files: int = 10                      # -n
    iterations: int = 1                  # -i
    sync: bool = False                   # -y: fsync each file after writing it
    unique_dir: bool = False             # -u: a directory per rank
    files_only: bool = False             # -F
    dirs_only: bool = False              # -D
    items_per_dir: int | None = None     # -I
    depth: int | None = None             # -z
    branching: int | None = None         # -b
    stride: int | None = None            # -N: rank stride between create and stat (defeats a client cache)
    print_time: bool = False             # -P: the time table too
    write_bytes: int | None = None       # -w: bytes written into each file
    read_bytes: int | None = None        # -e: bytes read from each file
    verbose: int = 0                     # -v, repeated
    directory: str | None = None         # -d; None: a fresh directory inside the workspace
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("files", "iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.files_only and self.dirs_only:
            raise ValueError("files_only (-F) and dirs_only (-D) exclude each other")
        if isinstance(self.extra, str):
            raise TypeError("extra must be a tuple of argv items, not a string")

    def argv(self, exe: str = "mdtest") -> list[str]:
        argv = [exe]
        if self.directory is not None:
            argv += ["-d", str(self.directory)]
        argv += ["-n", str(self.files), "-i", str(self.iterations)]
        for flag, on in (("-y", self.sync), ("-u", self.unique_dir), ("-F", self.files_only),
                         ("-D", self.dirs_only), ("-P", self.print_time)):
            if on:
                argv.append(flag)
        for flag, value in (("-I", self.items_per_dir), ("-z", self.depth), ("-b", self.branching),
                            ("-N", self.stride), ("-w", self.write_bytes), ("-e", self.read_bytes)):
            if value is not None:
                argv += [flag, str(value)]
        argv += ["-v"] * self.verbose
        return argv + [str(a) for a in self.extra]


def items_per_rank(options: Options) -> int:
    """Files and directories one rank makes per iteration, as mdtest 3.3/4.0 counts them (``items`` in
    src/mdtest.c, times the tree's directories when both -n and -I are given, as its "N tasks, M files"
    line does): -n rounded down to a multiple of the tree's directories (of its leaves with -L)."""
    depth, branch = options.depth or 0, options.branching if options.branching is not None else 1
    leaf_only = "-L" in options.extra
    if depth <= 0 or branch < 1:
        dirs = 1
    elif branch == 1:
        dirs = depth + 1
    else:
        dirs = (branch ** (depth + 1) - 1) // (branch - 1)
    n = options.files
    if options.items_per_dir:                          # -n and -I: -n items in each directory loop
        return n * dirs
    per_dir_of = branch ** depth if leaf_only and branch > 1 else (1 if leaf_only else dirs)
    return (n // per_dir_of) * per_dir_of


def bytes_to_write(options: Options, tasks: int) -> int:
    """What an mdtest run writes at most: every file of every rank and iteration gets ``-w`` bytes
    (``create_file`` in src/mdtest.c); directories (-D) and files without -w get none."""
    if not options.write_bytes or options.dirs_only:
        return 0
    return tasks * items_per_rank(options) * options.iterations * options.write_bytes


def error_line(*texts: str) -> str | None:
    """mdtest's own error line (``ERROR: ...`` or ``Process N: FAILED in ...``), or None."""
    return first_line(_ERROR, *texts)


def run(options: Options, tasks: int = 2, *, on: str | Path | None = None, launcher: str = "mpirun",
        ws: workspace.Workspace | None = None, timeout: float = 300, exe: str = "mdtest",
        launcher_kwargs: dict[str, Any] | None = None, keep: bool = False,
        runtime_dir: str | Path | None = None) -> Run:
    """Run mdtest with ``tasks`` ranks in a fresh directory, removed afterwards (``keep=True``, with
    ``on=None``: left in ``ws`` for a later run in the same directory, e.g. mdtest's ``-C``, then
    ``-T``, then ``-r``, one phase per run; ``ws`` removes what is left when it closes).
    ``runtime_dir``: an existing directory of yours for the MPI runtime's session files (default:
    beside the tree; elsewhere, e.g. on tmpfs, their shared-memory files do not count as the measured
    filesystem's writes).

    on: the directory of the filesystem to measure (e.g. "/dev/shm"); a private workspace is made
    inside it for the run. None: the session's workspace (``ws``). What the files will hold
    (:func:`bytes_to_write`: files x ``-w``) is reserved before mdtest starts, against the budget of
    ``ws`` (or the session's) wherever the tree goes: BudgetExceeded if it does not fit. Raises
    ToolMissing, or ToolFailed whose message is mdtest's own error line.
    """
    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    if keep and on is not None:
        raise ValueError("keep=True keeps the tree in ws: give ws (and options.directory in it), not on")
    owner = ws or workspace.session()          # whose budget the files count against, wherever they go
    nbytes = bytes_to_write(options, tasks)
    if on is not None and owner.used + nbytes > owner.budget:
        raise BudgetExceeded(f"mdtest would write {format_size(nbytes)} ({nbytes // options.write_bytes:,} files "
                             f"x -w {options.write_bytes}) on {on}, over what is left of the workspace budget "
                             f"({format_size(max(owner.budget - owner.used, 0))} of {format_size(owner.budget)}). "
                             "Use fewer files or a smaller -w, or raise the budget with IOLAB_BUDGET.")
    private = workspace.Workspace(budget=owner.budget, base=on, prefix=".iolab-mdtest-") if on is not None else None
    space = private or owner
    target = space.inside(options.directory) if options.directory is not None else space.path("mdtest")
    runtime = Path(runtime_dir or space.root) / f".mpi-{uuid.uuid4().hex[:8]}"    # the MPI runtime's session files
    try:
        workspace.reserve_for(target, nbytes)      # the workspace that holds the tree (and its filesystem)
        opts = replace(options, directory=str(target))
        full = mpi.command(opts.argv(exe), tasks, launcher=launcher, **(launcher_kwargs or {}))
        r = runner.run(full, timeout=timeout, check=False, env=mpi.runtime_env(runtime))
        version = None
        m = _LAUNCHED.search(r.stdout)
        if m:
            version = m.group(1)
        r = replace(r, tool_version=version)
        if r.returncode != 0:
            line = error_line(r.stdout, r.stderr)
            head = f"mdtest failed: {line}" if line else f"mdtest exited with status {r.returncode}"
            raise ToolFailed(full, r.returncode, "\n".join([r.stderr.strip(), r.stdout.strip()[-2000:]]).strip(),
                             message=head)
        return r
    finally:
        if runtime_dir is not None:
            import shutil
            shutil.rmtree(runtime, ignore_errors=True)
        if private is not None:
            private.close()
        else:
            if not keep:
                space.remove(target)
            if runtime_dir is None:
                space.remove(runtime)


@functools.lru_cache(maxsize=8)
def _installed_version(exe_path: str) -> str | None:
    # mdtest has no version flag (`--version` is refused, and it exits without MPI_Finalize); with the
    # DUMMY backend one rank "creates" one item in no time and prints "mdtest-X was launched ..."
    with workspace.Workspace(budget="1MiB") as w:
        r = runner.run([exe_path, "-a", "DUMMY", "-n", "1", "-i", "1", "-d", str(w.path("probe"))],
                       timeout=60, env=mpi.runtime_env(w.path("mpi"), singleton=True), check=False)
    m = _LAUNCHED.search(r.stdout)
    return m.group(1) if m else None


def installed_version(exe: str = "mdtest") -> str | None:
    """The version of the mdtest on PATH (from a DUMMY-backend run), or None when there is none."""
    path = runner.which(exe)
    return _installed_version(path) if path else None


def parse(text: str) -> list[dict[str, Any]]:
    """mdtest output -> one row per operation per summary table.

    Keys: operation (lowercase: "file creation", "directory stat", "tree removal", ...), max, min,
    mean, stddev, unit ("ops/s" for the rate table, "s" for the -P time table: seconds per phase),
    unit_printed (what the heading says, or None), iterations, tasks, items (files/directories in
    all), version. An error line, a missing table or output cut short raise ParseError naming the line.
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty mdtest output")
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        if _ERROR.search(line.strip()):
            raise ParseError("mdtest reported an error", line_no=no, line=line)
    version = tasks = items = None
    rows: list[dict[str, Any]] = []
    table: tuple[str, str | None, int] | None = None
    in_table = 0
    finished = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        m = _LAUNCHED.search(line)
        if m:
            version, tasks = m.group(1), int(m.group(2))
            continue
        m = _ITEMS.match(line)
        if m:
            tasks, items = int(m.group(1)), int(m.group(2))
            continue
        m = _SUMMARY.match(line)
        if m:
            table = (m.group(1), m.group(2), int(m.group(3)))
            in_table = 0
            continue
        if line.startswith("-- finished at"):
            finished = True
            table = None
            continue
        if table is None or line.startswith(("Operation", "---")):
            continue
        if not line:
            if in_table:
                table = None        # a blank line after its rows ends a table
            continue
        if line.startswith("WARNING") or re.match(r"V-\d", line):
            continue                 # warnings and -v chatter ("V-1: Entering PrintTimestamp...")
        m = _ROW.match(line)
        if not m:
            raise ParseError("expected an mdtest summary row: an operation and its Max Min Mean Std Dev",
                             line_no=no, line=raw)
        values = [float(v) for v in m.group(2).split()]
        if len(values) not in (4, 7):        # 7: with per-rank statistics, the last four are per iteration
            raise ParseError(f"an mdtest summary row has 4 numbers, this one has {len(values)} (cut short?)",
                             line_no=no, line=raw)
        mx, mn, mean, sd = values[-4:]
        kind, printed, iterations = table
        rows.append({"operation": m.group(1).strip().lower(), "max": mx, "min": mn, "mean": mean, "stddev": sd,
                     "unit": "ops/s" if kind == "rate" else "s", "unit_printed": printed,
                     "iterations": iterations, "tasks": tasks, "items": items, "version": version})
        in_table += 1
    if version is None:
        raise ParseError("not mdtest output: no 'mdtest-x.y.z was launched with N total task(s)' line",
                         line_no=1, line=lines[0])
    if not rows:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("mdtest output has no SUMMARY table (cut short, or the run failed)",
                         line_no=last, line=lines[last - 1])
    if not finished:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("mdtest output ends before its '-- finished at' line: cut short",
                         line_no=last, line=lines[last - 1])
    return rows


_STAMP = re.compile(r"^-- (started|finished) at (\d\d/\d\d/\d{4} \d\d:\d\d:\d\d) --")


def window(text: str) -> tuple[datetime | None, datetime | None]:
    """When the run started and finished, from mdtest's ``-- started at MM/DD/YYYY HH:MM:SS --`` and
    ``-- finished at ... --`` lines (local time of the machine that ran it, 1 s resolution)."""
    found: dict[str, datetime] = {}
    for no, line in enumerate(text.splitlines(), 1):
        m = _STAMP.match(line.strip())
        if m and m.group(1) not in found:
            try:
                found[m.group(1)] = datetime.strptime(m.group(2), "%m/%d/%Y %H:%M:%S")
            except ValueError:
                raise ParseError(f"not a date and time: {m.group(2)!r}", line_no=no, line=line) from None
    return found.get("started"), found.get("finished")


def to_frame(rows: Iterable[dict[str, Any]], **columns: Any) -> pd.DataFrame:
    """Parsed rows as a DataFrame, plus constant columns (e.g. ``filesystem="tmpfs"``)."""
    df = pd.DataFrame(list(rows), columns=list(KEYS))
    for k, v in columns.items():
        df[k] = v
    return df


@dataclass
class Measured:
    """mdtest on one directory, live or replayed, with the kernel's witness of the run (the bytes its
    processes moved to and from storage, the device's; None with ``witness_note`` saying why)."""

    path: str
    fstype: str
    outcome: recordings.Outcome
    witnessed: witness.Witnessed | None = None
    witness_note: str = ""
    scope: str = "the whole run"          # what the witness covers

    @property
    def mode(self) -> str:
        return self.outcome.mode

    def frame(self) -> pd.DataFrame:
        """The parsed rows, with path, fstype, mode and the witness's columns (own_read_bytes,
        own_write_bytes, device, device_read_bytes, device_write_bytes, disturbed, witness_notes,
        witness_scope), the same on every row of the run."""
        if self.witnessed is not None:
            seen = self.witnessed.row()
        else:
            seen = {**{k: None for k in ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes",
                                         "device_write_bytes", "disturbed")},
                    "witness_notes": self.witness_note or "not witnessed"}
        return to_frame(self.outcome.data, path=self.path, fstype=self.fstype, mode=self.mode, **seen,
                        witness_scope=self.scope)


def _witnessed_outcome(out: recordings.Outcome, seen: dict[str, Any]) -> tuple[witness.Witnessed | None, str]:
    if out.mode == "live":
        return seen.get("witnessed"), ""
    rec = out.recording
    w = rec.witness() if rec is not None else None
    return w, "" if w is not None else (rec.witness_note if rec is not None else "not witnessed")


def measure_on(path: str | Path, options: Options, *, tasks: int = 2, recording: str, launcher: str = "mpirun",
               timeout: float = 300, quiet: bool = False) -> Measured:
    """mdtest on the filesystem of ``path`` (live), or the recording made there (replay).

    Live, the run is taken under :class:`iolab.witness.Witness` on ``path``: the bytes mdtest's
    processes (mpirun and its ranks, reaped) made the storage layer read and write, and what the
    block device behind ``path`` moved for everyone (``.witnessed``); a replay carries the witness
    the recording kept, or says that it has none."""
    seen: dict[str, Any] = {}

    def live() -> Run:
        with witness.Witness(path, children=True) as w:
            r = run(options, tasks, on=path, launcher=launcher, timeout=timeout)
        seen["witnessed"] = w.result
        return r

    out = recordings.live_or_recorded(live, recording, requires=("mdtest", launcher), parse=parse, quiet=quiet)
    if out.mode == "live":
        fstype = fsinfo.fstype(path)
        shown = str(path)
    else:
        fs = out.recording.meta.get("filesystem", {}) if out.recording else {}
        fstype = fs.get("fstype", "?")
        shown = str(path)
    w, note = _witnessed_outcome(out, seen)
    iters = options.iterations
    return Measured(shown, fstype, out, w, note,
                    scope=f"the whole run (every phase, {iters} iteration{'s' * (iters != 1)})")


# --- one phase per run: what the device did while mdtest created, stat-ed, removed ------------------

# mdtest 3.3 and 4.0: -C only creates, -T only stats, -E only reads, -r only removes what a run with
# the same -d left (src/mdtest.c: create_only, stat_only, read_only, remove_only)
PHASES = {"create": "-C", "stat": "-T", "read": "-E", "remove": "-r"}
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


@dataclass
class Phases:
    """mdtest's phases run one at a time on one tree: each phase's Measured (rates and witness) and
    what the device did during it (:func:`device_moved`; None where there is no block device), and
    ``after`` (the device in the ``settle_s`` seconds after the last phase: a journal commits later)."""

    path: str
    phases: dict[str, Measured]
    device: dict[str, dict[str, Any] | None]
    items: int                       # files (and as many directories) the run made: tasks x -n
    directories: int                 # directories the remove phase removed (mdtest's items; 0 with -F)
    settle_s: float = 0.0

    @property
    def mode(self) -> str:
        return next(iter(self.phases.values())).mode

    def frame(self) -> pd.DataFrame:
        """One row per phase: phase, operation rates (mdtest's, ops/s), own_read_bytes, own_write_bytes,
        and the device's reads, read_bytes, writes, written_bytes, discards, discarded_bytes, busy_ms."""
        rows = []
        for name in [*self.phases, *(["after"] if "after" in self.device else [])]:
            m = self.phases.get(name)
            row: dict[str, Any] = {"phase": name}
            if m is not None:
                rates = {r["operation"]: r["mean"] for r in m.outcome.data if r["unit"] == "ops/s" and r["mean"]}
                row["rates"] = ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
                w = m.witnessed
                row["own_read_bytes"] = w.own_read if w is not None else None
                row["own_write_bytes"] = w.own_written if w is not None else None
            else:
                row.update(rates=f"(the {self.settle_s:g} s after the last phase)", own_read_bytes=None,
                           own_write_bytes=None)
            d = self.device.get(name) or {}
            row.update({k: d.get(k) for k in DEVICE_KEYS})
            rows.append(row)
        return pd.DataFrame(rows)


def run_phases(options: Options, tasks: int = 2, *, on: str | Path, phases: Sequence[str] = ("create", "stat",
               "remove"), launcher: str = "mpirun", timeout: float = 300, settle_s: float = 0.0,
               ws: workspace.Workspace | None = None) -> dict[str, Any]:
    """Run ``phases`` of ``options`` one mdtest run each, on one tree in a private workspace on ``on``,
    each under a :class:`~iolab.witness.Witness` with the device's stat file read around it. The MPI
    runtime's files go to /dev/shm when it is a tmpfs, so that they are not counted as the measured
    filesystem's I/O.
    ``settle_s``: keep watching the device that long after the last phase. Returns {phase: (Run,
    Witnessed, device_moved or None)} and "after": device_moved or None."""
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases:
        raise ValueError(f"phases are some of {', '.join(PHASES)}, got {list(phases)}")
    if any(f in options.extra for f in PHASES.values()):
        raise ValueError("give the phases with phases=..., not -C/-T/-E/-r in options.extra")
    import os
    import time

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
            opts = replace(tree, extra=(*tree.extra, PHASES[name]))
            d0 = witness.device_stat(dev) if dev else None
            with witness.Witness(space.root, children=True) as w:
                r = run(opts, tasks, ws=space, launcher=launcher, timeout=timeout, keep=True,
                        runtime_dir=mpi_space.root if shm else None)
            d1 = witness.device_stat(dev) if dev else None
            out[name] = (r, w.result, device_moved(d0, d1) if dev else None)
        d0 = witness.device_stat(dev) if dev else None
        time.sleep(settle_s)
        out["after"] = device_moved(d0, witness.device_stat(dev)) if dev and settle_s else None
    return out


def measure_phases(path: str | Path, options: Options, *, tasks: int = 2, recording: str,
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
        lambda: live(name), f"{recording}-{name}", requires=("mdtest", launcher), parse=parse, quiet=quiet),
        done, settle_s)


def recorded_phases(recording: str, *, phases: Sequence[str] = ("create", "stat", "remove"),
                    path: str | None = None, quiet: bool = False) -> Phases:
    """The recordings of :func:`measure_phases`, replayed whatever tools are here (e.g. ext4 images that
    were loop-mounted as root to record them)."""
    def replay(name: str) -> recordings.Outcome:
        rec = recordings.load(f"{recording}-{name}")
        out = recordings.Outcome("replay", rec.text, f"{rec.provenance}; a recording of its own", recording=rec,
                                 data=parse(rec.text))
        if not quiet:
            print(out.provenance)
        return out

    where = path or (recordings.load(f"{recording}-{phases[0]}").meta.get("filesystem") or {}).get("path", "?")
    return _phases(where, recording, phases, replay, {}, 0.0)


def _phases(path: str | Path, recording: str, phases: Sequence[str], outcome_of: Any, done: dict[str, Any],
            settle_s: float) -> Phases:
    import json

    measured: dict[str, Measured] = {}
    for name in phases:
        out = outcome_of(name)
        if out.mode == "live":
            w, note, fstype = done[name][1], "", fsinfo.fstype(path)
        else:
            w, note = _witnessed_outcome(out, {})
            fstype = (out.recording.meta.get("filesystem", {}) if out.recording else {}).get("fstype", "?")
        measured[name] = Measured(str(path), fstype, out, w, note, scope=f"the {name} phase")
    first = next(iter(measured.values()))
    if first.mode == "live":
        device = {name: done[name][2] for name in phases}
        if done.get("after") is not None:
            device["after"] = done["after"]
        settled = settle_s
    else:
        try:
            kept = json.loads(recordings.load(f"{recording}-device").text)
        except FileNotFoundError:
            kept = {}
        device = {k: v for k, v in (kept.get("phases") or {}).items()}
        settled = float(kept.get("settle_s") or 0.0)
    rows = first.outcome.data
    items = int(rows[0]["items"] or 0) if rows else 0
    argv = first.outcome.run.argv if first.outcome.run is not None else \
        (first.outcome.recording.meta.get("argv", []) if first.outcome.recording is not None else [])
    return Phases(str(path), measured, device, items, 0 if "-F" in argv else items, settled)


def candidate_dirs(extra: Sequence[str | Path] = ()) -> list[Path]:
    """Writable directories worth comparing here: /tmp, /dev/shm, $HOME, then ``extra`` (a FUSE mount)."""
    import os

    out: list[Path] = []
    for d in ["/tmp", "/dev/shm", os.path.expanduser("~"), *extra]:
        p = Path(d)
        if p.is_dir() and os.access(p, os.W_OK) and p not in out:
            out.append(p)
    return out


# --- the syscalls behind one file (lesson 03's strace, on mdtest) -------------------------------

ONE_FILE = Options(files=1, iterations=1, files_only=True, write_bytes=4096, sync=True)


def one_file_trace(on: str | Path | None = None, *, exe: str = "mdtest", timeout: float = 120) -> Run:
    """strace of one mdtest rank creating, writing (4 KiB), fsyncing, stat-ing, opening and removing one
    file; only the syscalls on that file (``strace -P``), so the MPI start-up noise is left out.

    mdtest runs as a single MPI process (no mpirun). Returns the strace Run (stdout = the trace).
    """
    from . import strace

    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    space = workspace.Workspace(budget="16MiB", base=on, prefix=".iolab-mdtest-") if on is not None \
        else workspace.Workspace(budget="16MiB")
    with space:
        target = space.path("mdtest")
        # mdtest's own naming: rank 0's first file in the tree of the first iteration
        the_file = target / "test-dir.0-0" / "mdtest_tree.0" / "file.mdtest.0.0"
        out = space.path("trace.txt")
        argv = strace.trace_argv(replace(ONE_FILE, directory=str(target)).argv(exe), output=out,
                                 paths=[the_file], strsize=16)
        return strace.run(argv, timeout=timeout, cwd=space.root)


def one_file_calls(text: str) -> pd.DataFrame:
    """The syscalls of a :func:`one_file_trace` text, in order: syscall, duration (s), result, path.
    A trace that ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`)."""
    from . import strace

    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    return df[["syscall", "duration", "result", "path", "args"]].reset_index(drop=True)


def trace_one_file(on: str | Path | None, *, recording: str, quiet: bool = False) -> recordings.Outcome:
    """:func:`one_file_trace` live (mdtest and strace here), or its recording; ``.data`` is the calls."""
    return recordings.live_or_recorded(lambda: one_file_trace(on), recording, requires=("mdtest", "strace"),
                                       parse=one_file_calls, quiet=quiet)


# --- what -y really does: fsync calls counted, removals timed (strace around the MPI run) --------

# the calls that push data or metadata to the device, and the ones that create and remove mdtest's
# items (they are always there, so strace -c always has a table to print: 0 fsync is a result)
SYNC_CALLS = ("fsync", "fdatasync", "sync", "syncfs", "sync_file_range")
ITEM_CALLS = ("mkdir", "rmdir", "unlink")
REMOVAL_CALLS = ("unlink", "rmdir", "fsync")


def expected_fsyncs(options: Options, tasks: int) -> int:
    """How many fsync calls mdtest makes for ``options`` with ``tasks`` ranks (POSIX backend).

    In mdtest 3.3 and 4.0 ``-y`` only sets the "fsync after each write" hint inside the branch that
    writes ``-w`` bytes into a new file (``create_file`` in src/mdtest.c; the write and its fsync are in
    ``POSIX_Xfer``); with ``-w 0``, the default, nothing is written and nothing is synced. Directories
    are never synced. Each rank creates ``-n`` files per iteration (fewer with ``-D``: none).
    """
    if not options.sync or not options.write_bytes or options.dirs_only:
        return 0
    return tasks * options.files * options.iterations


def _traced(options: Options, tasks: int, *, on: str | Path, make_argv, launcher: str = "mpirun",
            exe: str = "mdtest", timeout: float = 300) -> Run:
    """mdtest under strace (``make_argv(command, output_file)`` builds the strace argv), in a private
    workspace on ``on``. The Run's stdout is strace's output; its ``tool_version`` names both, e.g.
    "4.0.0 (under strace -- version 6.1)"."""
    from . import strace

    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    with workspace.Workspace(budget="256MiB", base=on, prefix=".iolab-mdtest-") as space:
        opts = replace(options, directory=str(space.path("mdtest")))
        full = mpi.command(opts.argv(exe), tasks, launcher=launcher)
        env = mpi.runtime_env(space.path(f".mpi-{uuid.uuid4().hex[:8]}"))
        argv = make_argv(full, space.path("strace.txt"))
        # strace -E: the MPI runtime's session files stay in the workspace too
        argv = argv[:1] + [a for k, v in env.items() for a in ("-E", f"{k}={v}")] + argv[1:]
        r = strace.run(argv, timeout=timeout, cwd=space.root)
        if r.returncode != 0:
            raise ToolFailed(argv, r.returncode, r.stderr, message=f"mdtest under strace exited with {r.returncode}")
        version = installed_version(exe)
        return replace(r, tool_version=f"{version} (under {r.tool_version})")


def count_syncs(options: Options, tasks: int = 2, *, on: str | Path, **kwargs: Any) -> Run:
    """``strace -f -c`` of a whole mdtest run (launcher and ranks), counting :data:`SYNC_CALLS` and
    :data:`ITEM_CALLS`. Parse with :func:`sync_counts`."""
    from . import strace

    return _traced(options, tasks, on=on, make_argv=lambda cmd, out: strace.count_argv(
        cmd, output=out, follow=True, syscalls=[*SYNC_CALLS, *ITEM_CALLS]), **kwargs)


def sync_counts(text: str) -> pd.DataFrame:
    """An strace -c table of :func:`count_syncs` -> syscall, calls: every call of SYNC_CALLS and
    ITEM_CALLS, with 0 for those strace did not list (it prints only calls that happened)."""
    from . import strace

    rows = {r["syscall"]: int(r["calls"]) for r in strace.parse_summary(text)}
    names = [*SYNC_CALLS, *ITEM_CALLS, *sorted(set(rows) - set(SYNC_CALLS) - set(ITEM_CALLS))]
    return pd.DataFrame({"syscall": names, "calls": [rows.get(n, 0) for n in names]})


def measure_syncs(path: str | Path, options: Options, *, tasks: int = 2, recording: str,
                  quiet: bool = False) -> recordings.Outcome:
    """:func:`count_syncs` on ``path`` live, or its recording; ``.data`` is :func:`sync_counts`."""
    return recordings.live_or_recorded(lambda: count_syncs(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=sync_counts, quiet=quiet)


def trace_removals(options: Options, tasks: int = 2, *, on: str | Path, **kwargs: Any) -> Run:
    """``strace -f -tt -T`` of a whole mdtest run, only :data:`REMOVAL_CALLS` (each with its time).
    Parse with :func:`removal_calls`."""
    from . import strace

    return _traced(options, tasks, on=on, make_argv=lambda cmd, out: strace.trace_argv(
        cmd, output=out, follow=True, syscalls=list(REMOVAL_CALLS), strsize=256), **kwargs)


_ITEM_KIND = (("file.mdtest.", "file"), ("dir.mdtest.", "directory"), ("mdtest_tree.", "tree directory"))


def _item_kind(path: Any) -> str | None:
    name = str(path).rstrip("/").rsplit("/", 1)[-1]
    if "/test-dir." not in str(path):
        return None                      # the MPI runtime's own files
    return next((kind for prefix, kind in _ITEM_KIND if name.startswith(prefix)), "top directory")


def removal_calls(text: str) -> pd.DataFrame:
    """The calls of a :func:`trace_removals` trace on mdtest's own items: syscall, item ("file",
    "directory", "tree directory", "top directory"), duration (s), pid, path. The MPI runtime's
    unlink/rmdir calls (its session directory, shared-memory segments) are left out. A trace that
    ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`)."""
    from . import strace

    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    df = df.assign(item=df["path"].map(_item_kind))
    df = df[df["item"].notna()]
    if not len(df):
        raise ParseError("no call on mdtest's items (test-dir.*) in this trace", line_no=1,
                         line=text.splitlines()[0])
    return df[["syscall", "item", "duration", "pid", "path"]].reset_index(drop=True)


def measure_removals(path: str | Path, options: Options, *, tasks: int = 2, recording: str,
                     quiet: bool = False) -> recordings.Outcome:
    """:func:`trace_removals` on ``path`` live, or its recording; ``.data`` is :func:`removal_calls`."""
    return recordings.live_or_recorded(lambda: trace_removals(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=removal_calls, quiet=quiet)
