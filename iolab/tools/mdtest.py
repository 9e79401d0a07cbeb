"""mdtest: metadata rates (create, stat, read, remove of many small files and directories) under MPI.

:class:`Options` -> :func:`run` (mpirun/srun, the test tree inside a private workspace on the
filesystem being measured, removed afterwards) -> :func:`parse` -> :func:`to_frame` ->
``iolab.lessons.l05_mdtest.plots.mdtest_rates``.

What the versions print (all handled by :func:`parse`):

* 3.x: ``SUMMARY rate: (of N iterations)``; each row name ends with a colon
  (``File creation        :   99902.595 ...``).
* 4.0: the same heading, no colon after the row names, a ``Directory rename`` row, and a
  ``WARNING: Read bytes is 0 ...`` line from every rank, possibly before the header.
* 4.1 (main): ``SUMMARY rate (in ops/sec): (of N iterations)``.
* ``-P`` adds a ``SUMMARY time`` table. Its values are the seconds each phase took (mdtest's
  ``t_end - t_start``) in every version, even where main's heading says ``(in ms/op)``;
  :func:`parse` reports them with unit "s" and keeps the heading's word in ``unit_printed``.
* ``-v`` prints each iteration's rate of each phase (rank 0's), read by :func:`parse_iterations`:
  the trials behind the summary's Max/Min/Mean.
* There is no JSON output. Errors are ``ERROR: ...`` lines (4.x) or ``Process N: FAILED in ...``
  lines (3.x) on stdout.
"""
from __future__ import annotations

import functools
import math
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from . import failure, first_line, short_options, string_to_bytes
from .. import guard, mpi, runner, workspace
from ..errors import BudgetExceeded, ParseError, ToolMissing
from ..runner import Run
from ..units import format_size

_LAUNCHED = re.compile(r"mdtest-(\S{1,100}) was launched with (\d{1,9}) total task\(s\) on (\d{1,9}) node\(s\)")
_ITEMS = re.compile(r"^(\d{1,9}) tasks?, (\d{1,18}) (files/directories|files|directories)\b")
# mdtest 1.x (before it joined IOR): "SUMMARY: (of N iterations)", no "rate"/"time" word
_OLD_SUMMARY = re.compile(r"^SUMMARY: \(of \d{1,9} iterations?\)")
_SUMMARY = re.compile(r"^SUMMARY (rate|time)(?: \(in ([^)]{0,100})\))?: \(of (\d{1,9}) iterations?\)")
_ERROR = re.compile(r"^ERROR\b|FAILED in |\bmdtest ERROR\b")
_NUMBER = r"[-+]?(?:\d{1,30}\.?\d{0,30}(?:[eE][-+]?\d{1,3})?|inf|nan)"
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


# mdtest 3.3.0 and 4.0.0 (src/mdtest.c): options that take a value, flags, long options
_ARG_OPTS = set("abdBefGiIlnNpsVwWxz")
_FLAG_OPTS = set("CTErDFgkLPRSctuvXyYZ")
_LONG_VALUE = {"random-seed", "dataPacketType", "run-cmd-before-phase", "run-cmd-after-phase",
               "saveRankPerformanceDetails"}
_LONG_FLAGS = {"print-all-procs", "verify-write", "verify-read", "allocateBufferOnGPU", "warningAsErrors",
               "showRankStatistics"}
_NUMBERS = {"n": "files", "i": "iterations", "I": "items_per_dir", "z": "depth", "b": "branching",
            "w": "write_bytes"}


def _walk(items: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(option letter or long name, its value or None) for each option of an mdtest argv (without the
    program): alone, grouped (``-FL``), glued to its value (``-n10``), after ``=`` or before its value.
    ValueError for an option iolab does not know or an item that belongs to no option."""
    items = [str(a) for a in items]
    i = 0
    while i < len(items):
        tok = items[i]
        i += 1
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if name in _LONG_VALUE and not eq:
                if i >= len(items):
                    raise ValueError(f"mdtest option {tok} needs a value")
                value, i = items[i], i + 1
            elif name not in _LONG_VALUE and name not in _LONG_FLAGS and "." not in name:   # api.option
                raise ValueError(f"mdtest option {tok}: not one iolab knows, so what the run writes could not "
                                 "be counted")
            yield name, value if eq or name in _LONG_VALUE else None
            continue
        if not tok.startswith("-") or tok == "-":
            raise ValueError(f"mdtest argument {tok!r} belongs to no option: iolab cannot read this command line")
        options, i = short_options(tok, items, i, _ARG_OPTS, _FLAG_OPTS, "mdtest")
        yield from options


def effective(options: Options) -> Options:
    """What the whole command line asks for, for counting (``extra`` included, the last value winning
    as in mdtest): -n -i -I -z -b -w and -D/-F/-L given through ``extra`` replace the fields (``extra``
    keeps only -L). An option iolab does not know, or a number it cannot read, raises ValueError: what
    mdtest writes could not be counted."""
    fields: dict[str, Any] = {}
    flags: set[str] = set()
    for c, value in _walk(options.argv()[1:]):
        if c in _NUMBERS and value is not None:
            fields[_NUMBERS[c]] = string_to_bytes(value, "mdtest", f"-{c}")
        elif c in _FLAG_OPTS:            # -D, or -D=0 (off: mdtest reads a flag given a value as IOR does)
            (flags.discard if value is not None and value.strip() in ("0", "") else flags.add)(c)
    fields["dirs_only"] = "D" in flags                 # argv() gives the fields as -D / -F: the last one wins
    fields["files_only"] = "F" in flags and not fields["dirs_only"]
    fields["extra"] = ("-L",) if "L" in flags else ()
    fields["files"] = max(fields.get("files", options.files), 1)
    fields["iterations"] = max(fields.get("iterations", options.iterations), 1)
    return replace(options, **fields)


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
    (``create_file`` in src/mdtest.c); directories (-D) and files without -w get none. Read from the
    whole command line, ``extra`` included (:func:`effective`)."""
    options = effective(options)
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
    if any(c == "d" for c, _ in _walk(options.extra)):
        raise ValueError("mdtest -d in extra would put the tree where no budget counts it: give "
                         "options.directory (or on=) instead")
    owner = ws or workspace.session()          # whose budget the files count against, wherever they go
    nbytes = bytes_to_write(options, tasks)
    if on is not None and owner.used + nbytes > owner.budget:
        w = effective(options).write_bytes or 1
        raise BudgetExceeded(f"mdtest would write {format_size(nbytes)} ({nbytes // w:,} files "
                             f"x -w {w}) on {on}, over what is left of the workspace budget "
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
            raise failure("mdtest", full, r, error_line(r.stdout, r.stderr))
        return r
    finally:
        if runtime_dir is not None:
            guard.remove_tree(runtime)
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
        if not all(math.isfinite(v) and v >= 0 for v in values):
            raise ParseError("an mdtest summary row with a number that cannot be a rate or a time (negative, "
                             "infinite or not a number)", line_no=no, line=raw)
        tol = 0.0011 + 1e-9 * mx                 # mdtest prints three decimals
        if mx + tol < mn or not mn - tol <= mean <= mx + tol:
            raise ParseError(f"an mdtest summary row whose Max {mx} / Min {mn} / Mean {mean} cannot all be "
                             "true (Max below Min, or the Mean outside them)", line_no=no, line=raw)
        kind, printed, iterations = table
        rows.append({"operation": m.group(1).strip().lower(), "max": mx, "min": mn, "mean": mean, "stddev": sd,
                     "unit": "ops/s" if kind == "rate" else "s", "unit_printed": printed,
                     "iterations": iterations, "tasks": tasks, "items": items, "version": version})
        in_table += 1
    if version is None:
        raise ParseError("not mdtest output: no 'mdtest-x.y.z was launched with N total task(s)' line",
                         line_no=1, line=lines[0])
    if not rows:
        old = next(((i, ln) for i, ln in enumerate(lines, 1) if _OLD_SUMMARY.match(ln.strip())), None)
        if old is not None or (version or "").split(".")[0] in ("1", "2"):
            no, ln = old or next((i, ln) for i, ln in enumerate(lines, 1) if _LAUNCHED.search(ln.strip()))
            raise ParseError(f"this is the output of mdtest {version}, whose format iolab does not read (its "
                             "summary says 'SUMMARY:' without 'rate'); iolab reads mdtest 3.x and 4.x, the mdtest "
                             "built with IOR (https://github.com/hpc/ior)", line_no=no, line=ln)
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("mdtest output has no SUMMARY table (cut short, or the run failed)",
                         line_no=last, line=lines[last - 1])
    if not finished:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("mdtest output ends before its '-- finished at' line: cut short",
                         line_no=last, line=lines[last - 1])
    return rows


# -v: rank 0's rate of each phase of each iteration, after "main: * iteration N *" (3.3 and 4.0):
#   "V-1: Rank   0 Line  1223   File creation     :          0.001 sec,      17461.179 ops/sec"
#   "V-1: Rank   0 Line  1725 V-1: main:   Tree creation     : ..."  "... Line  2201 main   Tree removal  : ..."
_ITERATION = re.compile(r"^V-\d: Rank +\d{1,9} Line +\d{1,9} +main: \* iteration (\d{1,9}) \*\s*$")
_PHASE_RATE = re.compile(rf"^V-\d: Rank +\d{{1,9}} Line +\d{{1,9}} +(?:V-\d: )?(?:main:? +)?"
                         rf"([A-Za-z][A-Za-z ]{{0,40}}?) *: +({_NUMBER}) sec, +({_NUMBER}) ops/sec\s*$")
ITERATION_KEYS = ("iteration", "operation", "seconds", "rate", "scope", "version")


def _scope(version: str, operation: str) -> str:
    """Whose rate a -v line is. 3.x: the run's (all ranks' items over the phase, between barriers: the
    summary's per-iteration value). 4.x: rank 0's own items over its phase time (``updateResult`` in
    src/mdtest.c; the summary sums every rank's items over the slowest rank's time, so with N ranks
    about N times as much), except the tree's phases, counted for the whole tree."""
    return "all ranks" if version.startswith(("3.", "2.", "1.")) or operation.startswith("tree") else "rank 0"


def parse_iterations(text: str) -> list[dict[str, Any]]:
    """The rate of every phase in every iteration, as mdtest prints them with ``-v`` (rank 0's view):
    one row per iteration and operation (lowercase, as :func:`parse`), with the phase's seconds, its
    rate in ops/s, whose rate it is (``scope``: "all ranks" in 3.x, as the summary; "rank 0" in 4.x, rank
    0's own, about 1/N of the summary's with N ranks) and mdtest's version. mdtest's ``-i N`` iterations are N repeated trials of each
    phase, interleaved by phase within one run (create, stat, read, remove, then the next iteration).

    A run without ``-v`` prints only the summary: no row (no trial is made up from Max/Min/Mean).
    The output must pass :func:`parse` (errors, a cut output raise ParseError). ParseError names the
    line of a per-iteration rate that cannot be read, an iteration out of order, an operation twice
    in one iteration, or a rate before the first iteration; and the output when the iterations
    printed are not the summary's ``(of N iterations)``."""
    summary = parse(text)
    version = summary[0]["version"]
    expected = max(r["iterations"] for r in summary)
    rows: list[dict[str, Any]] = []
    iteration, seen = 0, set[str]()
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line.startswith("V-"):
            continue
        if len(line) > 400:
            if "ops/sec" in line or "iteration" in line:
                raise ParseError("an mdtest -v line too long to be a phase's rate", line_no=no, line=raw[:200])
            continue
        m = _ITERATION.match(line)
        if m:
            n = int(m.group(1))
            if n != iteration + 1:
                raise ParseError(f"mdtest iteration {n} after iteration {iteration}", line_no=no, line=raw)
            iteration, seen = n, set()
            continue
        if "ops/sec" not in line:
            continue
        m = _PHASE_RATE.match(line)
        if not m:
            raise ParseError("expected an mdtest phase's rate: '<operation> : <seconds> sec, <rate> ops/sec'",
                             line_no=no, line=raw)
        if not iteration:
            raise ParseError("an mdtest phase's rate before its first 'iteration' line", line_no=no, line=raw)
        op, secs, rate_ = m.group(1).strip().lower(), float(m.group(2)), float(m.group(3))
        if not (math.isfinite(secs) and math.isfinite(rate_) and secs >= 0 and rate_ >= 0):
            raise ParseError("an mdtest phase's rate with a number that cannot be a time or a rate",
                             line_no=no, line=raw)
        if op in seen:
            raise ParseError(f"mdtest printed {op!r} twice in iteration {iteration}", line_no=no, line=raw)
        seen.add(op)
        rows.append({"iteration": iteration, "operation": op, "seconds": secs, "rate": rate_,
                     "scope": _scope(version, op), "version": version})
    if rows and iteration != expected:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError(f"mdtest printed the rates of {iteration} iterations, its summary is of {expected}",
                         line_no=last, line=lines[last - 1])
    return rows


def iterations_frame(rows: Iterable[dict[str, Any]], **columns: Any) -> pd.DataFrame:
    """:func:`parse_iterations`'s rows as a DataFrame, plus constant columns."""
    df = pd.DataFrame(list(rows), columns=list(ITERATION_KEYS))
    for k, v in columns.items():
        df[k] = v
    return df


_STAMP = re.compile(r"^-- (started|finished) at (\d\d/\d\d/\d{4} \d\d:\d\d:\d\d) --")


def window(text: str) -> tuple[datetime | None, datetime | None]:
    """When the run started and finished, from mdtest's ``-- started at MM/DD/YYYY HH:MM:SS --`` and
    ``-- finished at ... --`` lines (local time of the machine that ran it, 1 s resolution). A second
    line of either (two outputs one after the other) raises ParseError."""
    found: dict[str, datetime] = {}
    for no, line in enumerate(text.splitlines(), 1):
        m = _STAMP.match(line.strip())
        if m and m.group(1) in found:
            raise ParseError(f"a second '-- {m.group(1)} at' line: two mdtest outputs one after the other",
                             line_no=no, line=line)
        if m:
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


# mdtest 3.3 and 4.0: -C only creates, -T only stats, -E only reads, -r only removes what a run with
# the same -d left (src/mdtest.c: create_only, stat_only, read_only, remove_only)
PHASES = {"create": "-C", "stat": "-T", "read": "-E", "remove": "-r"}


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
