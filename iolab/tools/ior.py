"""IOR: build its command line, run it under MPI, parse what it prints (text or JSON).

One way through: :class:`Options` -> :func:`run` (mpirun/srun, test files in the workspace, JSON
summary file) -> :func:`parse` (text or JSON, IOR 3.x and 4.x) -> :func:`to_frame` ->
``iolab.lessons.l04_ior.plots.ior_bandwidth``. Lesson 04's experiments (live or replayed, witnessed, each row with
the verdict on which layer served it) are in :mod:`iolab.lessons.l04_ior.pitfalls`.

What differs between versions, and is handled here:

* O_DIRECT is ``-B`` up to 3.2 and ``--posix.odirect`` from 3.3 on.
* Text: ``Max Write:`` / ``Max Read:`` lines are printed by default in 3.x, only with ``-v`` in 4.x;
  4.x prints the ``remove`` row of the Results table only with ``-v``. Numbers are printed with 6
  decimals below 1, 2 decimals below 3600 and none from 3600 on (IOR's ``PPDouble``), so a text
  bandwidth such as ``22070`` is rounded to the MiB/s; the JSON summary keeps 4 decimals.
* JSON: 3.3 nests ``Results`` as one list per iteration (with a ``remove`` entry that has only
  ``totalTime``); 4.x gives one flat list with no iteration number and no ``remove``.
* With ``-O summaryFile=...`` IOR writes everything (text or JSON) to that file and only
  ``Writing output to ...`` to stdout; errors still go to stdout. A failed run leaves a JSON file
  that stops after ``"Results": [``.
* Neither header says whether ``-e`` (fsync) or O_DIRECT was asked for in every version; the
  command line IOR echoes does, so :func:`parse` reads them from it.
"""
from __future__ import annotations

import functools
import math
import os
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from . import failure, first_line, short_options, strace, string_to_bytes
from .. import mpi, runner, safeio, units, workspace
from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run

APIS = ("POSIX", "MPIIO", "HDF5", "NCMPI", "MMAP", "DUMMY")

# the Results table: header token -> key
_RESULT_COLUMNS = {
    "access": "access", "bw(MiB/s)": "bw_mib", "IOPS": "iops", "Latency(s)": "latency_s",
    "block(KiB)": "block_kib", "xfer(KiB)": "xfer_kib", "open(s)": "open_s", "wr/rd(s)": "wrrd_s",
    "close(s)": "close_s", "total(s)": "total_s", "iter": "iteration",
}
RESULT_KEYS = ("test", "iteration", "access", "bw_mib", "iops", "latency_s", "block_kib", "xfer_kib",
               "open_s", "wrrd_s", "close_s", "total_s")
FACT_KEYS = ("version", "api", "tasks", "segments", "file_per_process", "reorder_tasks", "fsync", "odirect")

# "Summary of all tests": header token -> key (the two StdDev columns are told apart by position)
_SUMMARY_COLUMNS = {
    "Operation": "operation", "Max(MiB)": "max_mib", "Min(MiB)": "min_mib", "Mean(MiB)": "mean_mib",
    "Max(OPs)": "max_ops", "Min(OPs)": "min_ops", "Mean(OPs)": "mean_ops", "Mean(s)": "mean_s",
    "Stonewall(s)": "stonewall_s", "Stonewall(MiB)": "stonewall_mib", "Test#": "test", "#Tasks": "tasks",
    "tPN": "tasks_per_node", "reps": "repetitions", "fPP": "file_per_process", "reord": "reorder_tasks",
    "reordoff": "task_offset", "reordrand": "reorder_random", "seed": "seed", "segcnt": "segments",
    "blksiz": "block_size", "xsize": "transfer_size", "aggs(MiB)": "aggregate_mib", "API": "api",
    "RefNum": "refnum",
}
SUMMARY_KEYS = ("operation", "api", "test", "refnum", "tasks", "tasks_per_node", "repetitions", "segments",
                "block_size", "transfer_size", "file_per_process", "reorder_tasks", "task_offset",
                "reorder_random", "seed", "max_mib", "min_mib", "mean_mib", "stddev_mib", "max_ops",
                "min_ops", "mean_ops", "stddev_ops", "mean_s", "stonewall_s", "stonewall_mib", "aggregate_mib")
_SUMMARY_INTS = {"test", "refnum", "tasks", "tasks_per_node", "repetitions", "segments", "block_size",
                 "transfer_size", "task_offset", "reorder_random", "seed"}
_SUMMARY_BOOLS = {"file_per_process", "reorder_tasks"}
_JSON_SUMMARY = {
    "operation": "operation", "API": "api", "TestID": "test", "ReferenceNumber": "refnum",
    "numTasks": "tasks", "tasksPerNode": "tasks_per_node", "repetitions": "repetitions",
    "segmentCount": "segments", "blockSize": "block_size", "transferSize": "transfer_size",
    "filePerProc": "file_per_process", "reorderTasks": "reorder_tasks", "taskPerNodeOffset": "task_offset",
    "reorderTasksRandom": "reorder_random", "reorderTasksRandomSeed": "seed", "bwMaxMIB": "max_mib",
    "bwMinMIB": "min_mib", "bwMeanMIB": "mean_mib", "bwStdMIB": "stddev_mib", "OPsMax": "max_ops",
    "OPsMin": "min_ops", "OPsMean": "mean_ops", "OPsSD": "stddev_ops", "MeanTime": "mean_s",
    "StoneWallTime": "stonewall_s", "StoneWallbwMeanMIB": "stonewall_mib", "xsizeMiB": "aggregate_mib",
}

# IOR options that take a value (the rest are flags); used to read the echoed command line
_VALUE_OPTS = set("aAbdDfGijlMNoOQstTX")
_BANNER = re.compile(r"^IOR-(\S+): MPI Coordinated Test of Parallel I/O")
_ERROR = re.compile(r"^(?:ior )?ERROR\b|^ERROR:|\bior ERROR\b")


# --- versions -----------------------------------------------------------------------------------

def version_tuple(version: str | None) -> tuple[int, ...]:
    """ "4.1.0+dev" -> (4, 1, 0); None or garbage -> () (treated as the newest)."""
    if not version:
        return ()
    m = re.match(r"(\d+(?:\.\d+)*)", version)
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


@functools.lru_cache(maxsize=8)
def _installed_version(exe_path: str) -> str | None:
    # the DUMMY backend does no I/O; IOR prints its banner with the version, then exits. (`ior --version`
    # is not an option: IOR refuses it, and exits without MPI_Finalize.) A private workspace holds the
    # MPI runtime's files.
    with workspace.Workspace(budget="1MiB") as w:
        r = runner.run([exe_path, "-a", "DUMMY", "-b", "1m", "-t", "1m", "-s", "1", "-w", "-o", "/dev/null"],
                       timeout=60, env=mpi.runtime_env(w.root, singleton=True), check=False)
    for line in r.stdout.splitlines():
        m = _BANNER.match(line.strip())
        if m:
            return m.group(1)
    return None


def installed_version(exe: str = "ior") -> str | None:
    """The version of the IOR on PATH (from its banner), or None when there is none."""
    path = runner.which(exe)
    return _installed_version(path) if path else None


# --- options -> argv ----------------------------------------------------------------------------

def ior_size(value: int | str) -> str:
    """IOR size syntax: 1048576 -> "1m", 4096 -> "4k", 1536 -> "1536"."""
    n = units.parse_size(value)
    for suffix, unit in (("g", units.GiB), ("m", units.MiB), ("k", units.KiB)):
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


@dataclass(frozen=True)
class Options:
    """One IOR test. Sizes take iolab's syntax ("1MiB", "4k", 1048576); IOR's letters are binary too."""

    api: str = "POSIX"
    transfer_size: int | str = "1MiB"     # -t
    block_size: int | str = "16MiB"       # -b, per task and segment
    segments: int = 1                     # -s
    file_per_process: bool = False        # -F
    reorder_tasks: bool = False           # -C: read back what a task on another node wrote
    task_offset: int | None = None        # -Q: the shift used by -C, in nodes
    tasks_per_node: int | None = None     # -O numTasksOnNode0=N: what IOR believes (None: what MPI says)
    fsync: bool = False                   # -e: fsync() at the end of each write phase (inside the timing)
    odirect: bool = False                 # --posix.odirect (3.3+) or -B (up to 3.2): bypass the page cache
    iterations: int = 1                   # -i
    write: bool = True                    # -w
    read: bool = True                     # -r
    keep_file: bool = False               # -k
    memory_per_node: str | None = None    # -M: hog this share of each node's memory ("80%"; IOR reads "2g" as 2 %)
    test_file: str | None = None          # -o; None: a fresh name inside the workspace
    verbose: int = 0                      # -v, repeated
    extra: tuple[str, ...] = ()           # anything else, as argv items

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, got {self.api!r}")
        t, b = units.parse_size(self.transfer_size), units.parse_size(self.block_size)
        if t <= 0 or b <= 0:
            raise ValueError("transfer_size and block_size must be positive")
        if b % t:
            raise ValueError(f"block_size ({units.format_size(b)}) must be a multiple of transfer_size "
                             f"({units.format_size(t)}): IOR refuses it otherwise")
        for name in ("segments", "iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not (self.write or self.read):
            raise ValueError("an IOR test must write, read, or both")
        if self.odirect and self.api != "POSIX":
            raise ValueError("odirect is an option of the POSIX backend (use api='POSIX')")
        if isinstance(self.extra, str):
            raise TypeError("extra must be a tuple of argv items, not a string")
        if self.tasks_per_node is not None and (isinstance(self.tasks_per_node, bool)
                                                or not isinstance(self.tasks_per_node, int) or self.tasks_per_node < 1):
            raise ValueError(f"tasks_per_node must be a positive int or None, got {self.tasks_per_node!r}")

    @property
    def bytes_per_task(self) -> int:
        return units.parse_size(self.block_size) * self.segments

    def total_bytes(self, tasks: int) -> int:
        """The data set: block x segments x tasks (what one write phase creates)."""
        return self.bytes_per_task * tasks

    def flags(self) -> str:
        """A short label of the options the lesson varies: "shared", "-F -C -e", "-F O_DIRECT"..."""
        bits = ["-F" if self.file_per_process else "shared"]
        if self.reorder_tasks:
            bits.append("-C")
        if self.fsync:
            bits.append("-e")
        if self.odirect:
            bits.append("O_DIRECT")
        return " ".join(bits)

    def argv(self, version: str | None = None, exe: str = "ior") -> list[str]:
        """IOR's argv for the given IOR version (None: the newest syntax)."""
        argv = [exe, "-a", self.api, "-t", ior_size(self.transfer_size), "-b", ior_size(self.block_size),
                "-s", str(self.segments)]
        if self.iterations != 1:
            argv += ["-i", str(self.iterations)]
        if self.write and not self.read:
            argv.append("-w")
        elif self.read and not self.write:
            argv.append("-r")
        if self.file_per_process:
            argv.append("-F")
        if self.reorder_tasks:
            argv.append("-C")
            if self.task_offset is not None:
                argv += ["-Q", str(self.task_offset)]
        if self.tasks_per_node is not None:
            # IOR 3.3.0 and 4.0.0 both read this directive (parse_options.c); -C shifts by it (see reorder_rule)
            argv += ["-O", f"numTasksOnNode0={self.tasks_per_node}"]
        if self.fsync:
            argv.append("-e")
        if self.keep_file:
            argv.append("-k")
        if self.memory_per_node:
            argv += ["-M", str(self.memory_per_node)]
        argv += ["-v"] * self.verbose
        if self.odirect:
            v = version_tuple(version)
            argv.append("-B" if v and v < (3, 3) else "--posix.odirect")
        argv += [str(a) for a in self.extra]
        if self.test_file is not None:
            argv += ["-o", str(self.test_file)]
        return argv


# --- what a command line writes -------------------------------------------------------------------

# IOR 3.3.0 and 4.0.0 (parse_options.c createGlobalOptions): options that take a value, and flags
# (3.3.0's own: -J -U with a value, -H -I -n -p -P -q -S -V flags; 3.2's -B for O_DIRECT)
_ARG_OPTS = set("aAbdDfGijlMNoOQstTXJU")
_FLAG_OPTS = set("cCeEFgkKmrRuvwWxyYzZ" "HInpPqSVB")
_LONG_VALUE = {"dataPacketType", "randomPrefill", "random-offset-seed"}
_LONG_FLAGS = {"collective", "warningAsErrors", "dryRun", "gpuDirect"}
# -O directives (parse_options.c DecodeDirective), lower case: those that set what is written ...
_DIRECTIVES = {"blocksize": "b", "transfersize": "t", "segmentcount": "s", "repetitions": "i",
               "numtasks": "N", "multifile": "m", "keepfile": "k", "writefile": "w", "readfile": "r",
               "fileperproc": "F", "testfile": "o", "memorypernode": "M"}
# ... and those that do not (a directive iolab does not know is refused: it could set a size)
_OTHER_DIRECTIVES = {
    "api", "summaryfile", "saverankperformancedetailscsv", "summaryformat", "refnum", "debug", "platform",
    "dualmount", "allocatebufferongpu", "gpuid", "gpudirect", "deadlineforstonewalling", "stonewallingwearout",
    "stonewallingwearoutiterations", "stonewallingstatusfile", "maxtimeduration", "mintimeduration",
    "outlierthreshold", "numnodes", "numtasksonnode0", "intertestdelay", "interiodelay", "taskpernodeoffset",
    "reordertasksconstant", "reordertasksrandom", "reordertasksrandomseed", "reordertasks", "checkwrite",
    "checkread", "keepfilewitherror", "warningaserrors", "singlexferattempt", "intratestbarriers", "verbose",
    "collective", "settimestampsignature", "datapackettype", "uniquedir", "useexistingtestfile",
    "fsyncperwrite", "fsync", "randomoffset", "memorypertask", "summaryalways", "useo_direct",
    "storefileoffset", "randomprefill", "random-offset-seed"}


def read_argv(argv: Sequence[str]) -> dict[str, Any]:
    """What an IOR command line (``ior`` and its arguments, ``extra`` included) sets, the last one
    winning as in IOR: ``{"b": bytes, "t": bytes, "s": n, "i": n, "N": n, "flags": set of flags}``.

    Short options alone, grouped (``-mk``), with their value glued (``-b16m``), after ``=`` or as the
    next item; long options; ``-O`` directives (comma-separated, case-insensitive keys). An option or a
    directive iolab does not know, a size it cannot read, or a script (``-f``) raises ValueError: what
    the run writes could not be counted."""
    out: dict[str, Any] = {"flags": set()}
    items = [str(a) for a in argv[1:]]

    def setting(key: str, value: str, what: str) -> None:
        if key in ("b", "t"):
            out[key] = string_to_bytes(value, "IOR", what)
        elif key in ("s", "i", "N"):
            if not re.fullmatch(r"\s*-?\d+\s*", value):
                raise ValueError(f"IOR {what} {value!r} is not a whole number")
            out[key] = int(value)
        elif key in ("m", "k", "w", "r", "F"):
            on = value.strip() not in ("0", "")
            (out["flags"].add if on else out["flags"].discard)(key)
        elif key == "f":
            raise ValueError("IOR -f (a script of tests): iolab cannot count what its tests write; give the "
                             "options instead")
        else:
            out[key] = value

    def directives(text: str) -> None:
        for part in text.split(","):
            key, eq, value = part.partition("=")
            k = key.strip().lower()
            if k in _DIRECTIVES:
                setting(_DIRECTIVES[k], value, f"-O {key.strip()}")
            elif k not in _OTHER_DIRECTIVES and "." not in k:     # api.option: a backend's own option
                raise ValueError(f"IOR directive -O {part!r}: not one iolab knows, so what the run writes "
                                 "could not be counted")

    i = 0
    while i < len(items):
        tok = items[i]
        i += 1
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if name in _LONG_VALUE:
                if not eq:
                    if i >= len(items):
                        raise ValueError(f"IOR option {tok} needs a value")
                    value, i = items[i], i + 1
                if name == "randomPrefill":
                    string_to_bytes(value, "IOR", tok)
            elif name in _LONG_FLAGS or "." in name:
                pass                  # a backend's option (--posix.odirect, --mpiio.hintsFileName=...)
            else:
                raise ValueError(f"IOR option {tok}: not one iolab knows, so what the run writes could not be "
                                 "counted")
            continue
        if not tok.startswith("-") or tok == "-":
            raise ValueError(f"IOR argument {tok!r} belongs to no option: iolab cannot read this command line")
        options, i = short_options(tok, items, i, _ARG_OPTS, _FLAG_OPTS, "IOR")
        for c, arg in options:
            if arg is None:
                out["flags"].add(c)
            elif c == "O":
                directives(arg)
            else:
                setting(c, arg, f"-{c}")           # -b 16m; -k=0, as IOR reads a flag given a value
    return out


def bytes_to_write(argv: Sequence[str], tasks: int) -> int:
    """The most an IOR command line leaves on disk at once, read from the whole argv (options and
    ``extra``): blockSize x segmentCount x the tasks that write (``-N`` when it is given, else the
    launched ranks), once per repetition when ``-m`` keeps a file per repetition (``-k``), none
    without a write phase (``-r`` without ``-w``). ValueError when argv cannot be read (:func:`read_argv`)."""
    o = read_argv(argv)
    flags = o["flags"]
    writes = "w" in flags or "r" not in flags          # neither -w nor -r: IOR writes and reads
    if not writes:
        return 0
    b, s = o.get("b", 1024 * 1024), o.get("s", 1)      # IOR's defaults: -b 1m, -s 1
    n = o.get("N", -1)
    ranks = n if 0 < n <= tasks else tasks
    reps = max(o.get("i", 1), 1) if {"m", "k"} <= flags else 1
    return max(b, 0) * max(s, 0) * ranks * reps


# --- running ------------------------------------------------------------------------------------

@dataclass
class IorRun:
    """A finished IOR run: the launcher's Run, the JSON summary IOR wrote (if asked), what was inspected."""

    run: Run
    summary_json: str | None
    options: Options
    tasks: int
    version: str | None
    test_file: str
    inspected: Any = None

    @property
    def text(self) -> str:
        """What to parse: the JSON summary when there is one, else IOR's stdout."""
        return self.summary_json if self.summary_json is not None else self.run.stdout

    def as_run(self) -> Run:
        """The Run with stdout replaced by the JSON summary file (what a recording of it stores)."""
        return replace(self.run, stdout=self.text)


def error_line(*texts: str) -> str | None:
    """IOR's own ERROR line (the first one) in its stdout or stderr, or None."""
    return first_line(_ERROR, *texts)


def test_files(test_file: str | os.PathLike[str]) -> list[Path]:
    """IOR's test files for ``-o test_file``: the file itself (shared) or ``test_file.NNNNNNNN`` (-F)."""
    test_file = Path(test_file)
    parent = test_file.parent
    if not parent.is_dir():
        return []
    return sorted(p for p in parent.iterdir() if p.is_file() and p.name.startswith(test_file.name))


def run(options: Options, tasks: int = 2, *, launcher: str = "mpirun", fmt: str = "json",
        ws: workspace.Workspace | None = None, timeout: float = 300, exe: str = "ior",
        inspect: Callable[[list[Path]], Any] | None = None, launcher_kwargs: dict[str, Any] | None = None,
        wrap: Callable[[list[str]], list[str]] | None = None) -> IorRun:
    """Run IOR with ``tasks`` ranks; test files inside the workspace, within its budget, removed after.

    fmt="json" (default) adds ``-O summaryFormat=JSON -O summaryFile=...`` and returns that file's
    text as ``.summary_json``; fmt="text" leaves IOR's usual text on stdout.
    ``inspect(files)`` is called with the test files after IOR ends and before they are removed
    (e.g. to measure their page-cache residency); its result is ``.inspected``. ``wrap(argv)`` may put
    a tracer in front of the launcher's argv (see :func:`trace_opens_argv`). With
    ``options.keep_file`` and an ``options.test_file`` of yours, the files stay for a later run.
    Raises ToolMissing, or ToolFailed whose message is IOR's own ERROR line.
    """
    if fmt not in ("json", "text"):
        raise ValueError(f"fmt must be 'json' or 'text', got {fmt!r}")
    ws = ws or workspace.session()
    version = installed_version(exe)
    if version is None and runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    own_dir = ws.mkdir(f"ior-{uuid.uuid4().hex[:8]}")
    try:
        if options.test_file is None:
            test_file = own_dir / "testfile"
            options = replace(options, test_file=str(test_file))
        else:
            test_file = ws.inside(options.test_file)      # its directory must exist, as for IOR
            options = replace(options, test_file=str(test_file))
        argv = options.argv(version, exe=exe)
        ws.reserve(bytes_to_write(argv, tasks), where=test_file.parent)
        summary_file = own_dir / "summary.json"
        if fmt == "json":
            argv += ["-O", "summaryFormat=JSON", "-O", f"summaryFile={summary_file}"]
        full = mpi.command(argv, tasks, launcher=launcher, **(launcher_kwargs or {}))
        if wrap is not None:
            full = list(wrap(full))
        r = runner.run(full, timeout=timeout, check=False, env=mpi.runtime_env(own_dir / "mpi"))
        r = replace(r, tool_version=version)
        if r.returncode != 0:
            raise failure("IOR", full, r, error_line(r.stdout, r.stderr))
        summary = summary_file.read_text(errors="replace") if fmt == "json" and summary_file.exists() else None
        if fmt == "json" and not summary:
            raise ToolFailed(full, r.returncode, r.stderr, message="IOR ended without writing its JSON summary file")
        inspected = inspect(test_files(test_file)) if inspect is not None else None
        return IorRun(r, summary, options, tasks, version, str(test_file), inspected)
    finally:
        ws.remove(own_dir)
        if options.test_file is not None and not options.keep_file:
            for p in test_files(Path(options.test_file)):
                p.unlink(missing_ok=True)


# --- parsing ------------------------------------------------------------------------------------

def _number(token: str, line_no: int, line: str) -> float | None:
    if token in ("-", "NA"):
        return None
    try:
        return float(token)
    except ValueError:
        raise ParseError(f"expected a number, got {token!r}", line_no=line_no, line=line) from None


def command_flags(command_line: str) -> dict[str, bool]:
    """What an IOR command line asks for: file_per_process, reorder_tasks, fsync, odirect.

    IOR echoes its argv joined by spaces, unquoted ("Command line" of the text and JSON outputs), so
    the words are split at white space (a shell's quoting rules would not undo that join, and
    shlex takes minutes on a line of megabytes)."""
    if not isinstance(command_line, str):
        raise ParseError(f"an IOR command line is text, got {type(command_line).__name__}")
    tokens = command_line.split()
    letters: set[str] = set()
    directives: dict[str, str] = {}
    longs: set[str] = set()
    i = 1
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok.startswith("--"):
            longs.add(tok[2:].partition("=")[0])
            continue
        if not tok.startswith("-") or len(tok) < 2:
            continue
        body = tok[1:]
        if body[0] == "O":                  # -O key=value[,key=value] or -Okey=value
            value = body[1:].lstrip("=")
            if not value and i < len(tokens):
                value, i = tokens[i], i + 1
            for item in value.split(","):
                k, _, v = item.partition("=")
                directives[k.strip()] = v.strip()
            continue
        for j, ch in enumerate(body):
            if ch in _VALUE_OPTS:           # the rest of the token, or the next token, is its value
                if j == len(body) - 1:
                    i += 1
                break
            letters.add(ch)

    def on(key: str) -> bool:
        return directives.get(key, "0") not in ("0", "")
    return {
        "file_per_process": "F" in letters or on("filePerProc"),
        "reorder_tasks": "C" in letters or on("reorderTasks"),
        "fsync": "e" in letters or "fsync" in longs or on("fsync"),
        "odirect": ("B" in letters or "posix.odirect" in longs or on("useO_DIRECT") or on("posix.odirect")),
    }


def _check_no_error(lines: list[str]) -> None:
    for no, line in enumerate(lines, 1):
        if _ERROR.search(line.strip()):
            raise ParseError("IOR reported an error", line_no=no, line=line)


def _json_fail(lines: list[str], what: str, key: str | None = None) -> ParseError:
    """A ParseError naming the first line that holds ``"key"`` (the JSON is read whole: no position)."""
    no = next((i for i, ln in enumerate(lines, 1) if f'"{key}"' in ln), None) if key else None
    return ParseError(f"IOR JSON: {what}", line_no=no, line=lines[no - 1] if no else None)


def _json_of(value: Any, kind: type | tuple[type, ...], lines: list[str], key: str, where: str = "") -> Any:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
        name = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _json_fail(lines, f"{where}{key!r} should be {name}, got {value!r}"[:200], key)
    return value


def _json_number(value: Any, lines: list[str], key: str, where: str = "", *, integer: bool = False) -> Any:
    """A finite int/float (an int when ``integer``), or None for a value IOR did not give."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or integer and value != int(value):
        raise _json_fail(lines, f"{where}{key!r} should be a {'whole ' if integer else ''}number, got {value!r}"[:200],
                         key)
    return int(value) if integer else value


def _parse_json(text: str) -> dict[str, Any]:
    start = text.find("{")
    lines = text.splitlines()
    if start < 0:
        raise ParseError("no JSON object in this text", line_no=1, line=lines[0] if lines else "")
    offset_lines = text[:start].count("\n")
    try:
        data = safeio.loads(text[start:], what="IOR's JSON summary")
    except ParseError as e:
        no = (e.line_no or 1) + offset_lines
        where = lines[no - 1] if 0 < no <= len(lines) else (lines[-1] if lines else "")
        what = str(e).split(" (line ")[0]
        what = ("IOR's JSON summary ends early (a failed or interrupted run)" if "ends early" in what
                else f"IOR's JSON summary is malformed ({what})")
        raise ParseError(what, line_no=min(no, len(lines)), line=where) from None
    if not isinstance(data, dict) or "tests" not in data:
        raise ParseError("not an IOR JSON summary: no 'tests'", line_no=1, line=lines[0] if lines else "")
    _json_of(data["tests"], list, lines, "tests")
    for t in data["tests"]:
        _json_of(t, dict, lines, "tests", "an entry of ")
        for key in ("Parameters", "Options"):
            _json_of(t.get(key, {}), dict, lines, key)
    return data


# the numbers of a JSON Results entry: IOR's key -> row key
_JSON_RESULTS = {"bwMiB": "bw_mib", "iops": "iops", "latency": "latency_s", "blockKiB": "block_kib",
                 "xferKiB": "xfer_kib", "openTime": "open_s", "wrRdTime": "wrrd_s", "closeTime": "close_s",
                 "totalTime": "total_s"}


def _json_rows(data: dict[str, Any], lines: list[str]) -> list[dict[str, Any]]:
    version = _json_of(data.get("Version"), (str, type(None)), lines, "Version")
    flags = command_flags(_json_of(data.get("Command line", ""), str, lines, "Command line"))
    rows: list[dict[str, Any]] = []
    for t in data["tests"]:
        params, opts = t.get("Parameters", {}), t.get("Options", {})
        if "Results" not in t:
            raise _json_fail(lines, f"test {t.get('TestID')!r} has no Results", "tests")
        results = _json_of(t["Results"], list, lines, "Results")
        test_id = _json_number(t.get("TestID"), lines, "TestID", integer=True)

        def flag(key: str) -> bool:
            return bool(_json_number(params.get(key, 0), lines, key, "Parameters ", integer=True))
        facts = {
            "version": version, "api": _json_of(params.get("api", opts.get("api")), (str, type(None)), lines, "api"),
            "tasks": _json_number(opts.get("tasks"), lines, "tasks", "Options ", integer=True),
            "segments": _json_number(params.get("segmentCount", opts.get("segments")), lines, "segmentCount",
                                     integer=True),
            "file_per_process": flag("filePerProc") or flags["file_per_process"],
            "reorder_tasks": flag("reorderTasks") or flags["reorder_tasks"],
            "fsync": flag("fsync") or flags["fsync"], "odirect": flags["odirect"],
        }
        if results and all(isinstance(r, list) for r in results):        # 3.3: one list per iteration
            entries = [(i, r) for i, per_iter in enumerate(results) for r in per_iter]
        else:                                                          # 4.x: flat, count per access
            seen: dict[str, int] = {}
            entries = []
            for r in results:
                a = _json_of(r, dict, lines, "Results", "an entry of ").get("access")
                entries.append((seen.get(a, 0), r))
                seen[a] = seen.get(a, 0) + 1
        for iteration, r in entries:
            _json_of(r, dict, lines, "Results", "an entry of ")
            if r.get("access") not in ("write", "read", "remove"):
                raise _json_fail(lines, f"unexpected access {r.get('access')!r} in Results"[:200], "access")
            rows.append({"test": test_id, "iteration": iteration, "access": r["access"],
                         **{k: _json_number(r.get(jk), lines, jk) for jk, k in _JSON_RESULTS.items()},
                         **facts})
    if not rows:
        raise _json_fail(lines, "the summary has no results", "Results")
    return rows


def _is_json(text: str) -> bool:
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("Writing output to"):
            continue
        return s.startswith("{")
    return False


def _possible(rows: list[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    """ParseError when a row holds a number no run of IOR prints: NaN, an infinity, or a negative rate,
    time, size or count (the seed alone may be negative)."""
    for row in rows:
        for k, v in row.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "seed" and \
                    not (math.isfinite(v) and v >= 0):
                raise ParseError(f"{what}: {k} is {v!r}, which no IOR run prints (a negative or non-finite number)")
    return rows


def _parse(text: str) -> list[dict[str, Any]]:
    """IOR output (text or JSON summary, auto-detected) -> one row per access per iteration per test.

    Row keys: test, iteration, access (write/read/remove), bw_mib, iops, latency_s, block_kib,
    xfer_kib, open_s, wrrd_s, close_s, total_s (None where IOR prints "-" or has no value), and the
    run's facts: version, api, tasks, segments, file_per_process, reorder_tasks, fsync, odirect.
    An IOR ERROR line, a missing Results table or output cut short (no 'Finished' line; JSON that
    does not decode) raise ParseError naming the line, and so does a JSON value of the wrong type
    (the first line that holds its key).
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty IOR output")
    if _is_json(text):
        return _json_rows(_parse_json(text), text.splitlines())
    lines = text.splitlines()
    _check_no_error(lines)
    version = None
    for line in lines:
        m = _BANNER.match(line.strip())
        if m:
            version = m.group(1)
            break
    if version is None:
        raise ParseError("not IOR output: no 'IOR-x.y.z: MPI Coordinated Test of Parallel I/O' banner",
                         line_no=1, line=lines[0])
    flags = {"file_per_process": False, "reorder_tasks": False, "fsync": False, "odirect": False}
    rows: list[dict[str, Any]] = []
    test_id: int | None = None
    options: dict[str, str] = {}
    in_options = False
    header: list[str] | None = None
    finished = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        key, sep, value = (part.strip() for part in raw.partition(":"))
        if line.startswith("Command line") and sep:
            flags = command_flags(value)
            continue
        if line.startswith("TestID") and sep:
            test_id = int(value) if value.isdecimal() else test_id
            header = None
            continue
        if line.startswith("Options:"):
            in_options, options = True, {}
            continue
        if in_options:
            if not line:
                in_options = False
            elif sep:
                options[key] = value
            continue
        if line.startswith("access") and "bw(MiB/s)" in line:
            header = line.split()
            unknown = [h for h in header if h not in _RESULT_COLUMNS]
            if unknown:
                raise ParseError(f"unknown Results column(s) {unknown}", line_no=no, line=raw)
            continue
        if line.startswith(("Max Write", "Max Read", "Summary of all tests")):
            header = None
            continue
        if line.startswith("Finished"):
            finished = True
            header = None
            continue
        if header is None or not line or line.startswith("---"):
            continue
        tokens = line.split()
        if tokens[0] not in ("write", "read", "remove"):
            continue                      # -v chatter inside the table ("Commencing write ...")
        if len(tokens) != len(header):
            raise ParseError(f"a Results row should have {len(header)} columns, this one has {len(tokens)} "
                             "(output cut short?)", line_no=no, line=raw)
        row: dict[str, Any] = {"test": test_id}
        for h, tok in zip(header, tokens):
            k = _RESULT_COLUMNS[h]
            if k == "access":
                row[k] = tok
            elif k == "iteration":
                if not tok.isdecimal():
                    raise ParseError(f"expected an iteration number, got {tok!r}", line_no=no, line=raw)
                row[k] = int(tok)
            else:
                row[k] = _number(tok, no, raw)
        for k in RESULT_KEYS:
            row.setdefault(k, None)
        access = options.get("access", "")
        ordering = options.get("ordering inter file", "")
        row.update({
            "version": version, "api": options.get("api"),
            "tasks": int(options["tasks"]) if options.get("tasks", "").isdecimal() else None,
            "segments": int(options["segments"]) if options.get("segments", "").isdecimal() else None,
            "file_per_process": access == "file-per-process" or flags["file_per_process"],
            "reorder_tasks": ordering.startswith("constant task offset") or flags["reorder_tasks"],
            "fsync": flags["fsync"], "odirect": flags["odirect"],
        })
        rows.append({k: row[k] for k in RESULT_KEYS + FACT_KEYS})
    if not rows:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("IOR output has no Results rows (cut short, or the run failed)",
                         line_no=last, line=lines[last - 1])
    if not finished:
        last = max((i for i, s in enumerate(lines, 1) if s.strip()), default=1)
        raise ParseError("IOR output ends before its 'Finished' line: cut short", line_no=last, line=lines[last - 1])
    return rows


def _summary(text: str) -> list[dict[str, Any]]:
    """The "Summary of all tests" rows (text) or ``summary[]`` (JSON), with the keys of SUMMARY_KEYS.

    A row the text ends inside (no newline after it: cut short), a count that is not a whole number,
    or a JSON value of the wrong type raises ParseError naming the line."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty IOR output")
    if _is_json(text):
        data = _parse_json(text)
        lines = text.splitlines()
        if "summary" not in data:
            raise ParseError("IOR JSON has no 'summary' (the run did not finish)")
        out = []
        for s in _json_of(data["summary"], list, lines, "summary"):
            _json_of(s, dict, lines, "summary", "an entry of ")
            row: dict[str, Any] = {k: None for k in SUMMARY_KEYS}
            for jk, k in _JSON_SUMMARY.items():
                if jk not in s:
                    continue
                if k in ("operation", "api"):
                    row[k] = _json_of(s[jk], str, lines, jk)
                else:
                    v = _json_number(s[jk], lines, jk, integer=k in _SUMMARY_INTS or k in _SUMMARY_BOOLS)
                    row[k] = bool(v) if k in _SUMMARY_BOOLS else v
            out.append(row)
        return out
    lines = text.splitlines()
    ends_inside = not text.endswith(("\n", "\r"))
    _check_no_error(lines)
    out = []
    header: list[str] | None = None
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("Summary of all tests"):
            header = []
            continue
        if header == [] and line.startswith("Operation"):
            header = line.split()
            continue
        if header:
            if not line or line.startswith("Finished"):
                header = None
                continue
            tokens = line.split()
            if len(tokens) != len(header):
                raise ParseError(f"a summary row should have {len(header)} columns, this one has {len(tokens)}",
                                 line_no=no, line=raw)
            if no == len(lines) and ends_inside:
                raise ParseError("the output ends inside this summary row (no newline after it): cut short",
                                 line_no=no, line=raw)
            row = {k: None for k in SUMMARY_KEYS}
            stddev_seen = 0
            for h, tok in zip(header, tokens):
                if h == "StdDev":
                    k = "stddev_mib" if stddev_seen == 0 else "stddev_ops"
                    stddev_seen += 1
                elif h in _SUMMARY_COLUMNS:
                    k = _SUMMARY_COLUMNS[h]
                else:
                    raise ParseError(f"unknown summary column {h!r}", line_no=no, line=raw)
                if k in ("operation", "api"):
                    row[k] = tok
                elif k in _SUMMARY_BOOLS:
                    row[k] = tok not in ("0", "NA")
                else:
                    v = _number(tok, no, raw)
                    if v is not None and k in _SUMMARY_INTS:
                        if not (math.isfinite(v) and v == int(v)):
                            raise ParseError(f"column {h} should hold a whole number, got {tok!r}", line_no=no,
                                             line=raw)
                        v = int(v)
                    row[k] = v
            out.append(row)
    if not out:
        raise ParseError("no 'Summary of all tests' table in this IOR output")
    return out


# --- -C: the shift IOR applies, and which file each rank really opened ----------------------------

def parse(text: str) -> list[dict[str, Any]]:
    """IOR output (text or JSON summary, auto-detected) -> one row per access per iteration per test:
    see :func:`_parse`. A number no IOR run prints (negative, NaN, infinite) raises ParseError."""
    return _possible(_parse(text), "an IOR Results row")


def summary(text: str) -> list[dict[str, Any]]:
    """The "Summary of all tests" rows: see :func:`_summary`. A number no IOR run prints (negative, NaN,
    infinite) raises ParseError."""
    return _possible(_summary(text), "an IOR summary row")


def reorder_facts(text: str) -> dict[str, Any]:
    """What IOR says about the layout -C works on, from its Options (JSON summary or text):
    ``tasks``, ``nodes``, ``tasks_per_node`` ("clients per node", IOR's numTasksOnNode0),
    ``task_offset`` (-Q, taskPerNodeOffset) and ``ordering`` ("constant task offset" with -C).
    Values IOR did not print are None. Of the first test. A value that is not what IOR prints there (a
    count that is not a whole number), or a text that ends inside an option's line, raise ParseError."""
    keys = {"tasks": "tasks", "nodes": "nodes", "clients per node": "tasks_per_node",
            "task offset": "task_offset", "ordering inter file": "ordering"}
    out: dict[str, Any] = {k: None for k in keys.values()}
    if _is_json(text):
        tests = _parse_json(text)["tests"]
        lines = text.splitlines()
        opts = tests[0].get("Options", {}) if tests else {}
        for jk, k in keys.items():
            if jk in opts:
                out[k] = _json_of(opts[jk], str, lines, jk) if k == "ordering" else \
                    _json_number(opts[jk], lines, jk, "Options ", integer=True)
        return out
    in_options = False
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if line.startswith("Options:"):
            if in_options:
                break
            in_options = True
            continue
        if in_options:
            if not line:
                break
            key, sep, value = (part.strip() for part in raw.partition(":"))
            if sep and key in keys:
                if no == len(lines) and not text.endswith(("\n", "\r")):
                    raise ParseError("the output ends inside this option's line (no newline after it): cut short",
                                     line_no=no, line=raw)
                if keys[key] == "ordering":
                    out["ordering"] = value
                elif re.fullmatch(r"-?[0-9]+", value):
                    out[keys[key]] = int(value)
                else:
                    raise ParseError(f"IOR's {key!r} should be a whole number, got {value!r}"[:200], line_no=no,
                                     line=raw)
    return out


def reorder_rule(task_offset: int, tasks_per_node: int, tasks: int, *, by_slot: bool = True) -> int:
    """The shift (in ranks) -C gives the read phase: rank r reads the file of rank (r + shift) mod tasks.

    IOR 3.3.0 and 4.0.0 (ior.c, the read phase of TestIoSys) compute ``taskPerNodeOffset x shift mod
    numTasks``, where shift is numTasksOnNode0 when rank 1 runs on the same host as rank 0
    (QueryNodeMapping in utilities.c: a by-slot mapping, always so on one node) and 1 otherwise
    (round-robin). So on one node with every task on it the shift is a whole multiple of the task
    count: 0, no rank moves.
    """
    for name, v in (("task_offset", task_offset), ("tasks_per_node", tasks_per_node), ("tasks", tasks)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "task_offset" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'task_offset' else 'positive'} int, got {v!r}")
    return (task_offset * (tasks_per_node if by_slot else 1)) % tasks


def trace_opens_argv(argv: Sequence[str], output: str | os.PathLike[str], *,
                     paths: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    """``strace -f -e trace=openat`` in front of a launcher's argv, the trace written to ``output``.

    ``paths``: ``-P`` each, so only opens of those files are kept (strace matches a path that does
    not exist yet too), not the hundreds of libraries MPI opens. Long strings (``-s 4096``) so the
    paths are never cut; ``--seccomp-bpf`` where strace has it, so only openat stops the ranks
    (their I/O runs at full speed).
    """
    out = strace.trace_argv(list(argv), output=output, syscalls="openat", strsize=4096, paths=paths)
    if strace.supports("--seccomp-bpf"):
        out.insert(1, "--seccomp-bpf")
    return out


_RANK_FILE = re.compile(r"(?:^|/)(?P<stem>[^/]*)\.(?P<rank>\d{8})$")


def parse_opens(text: str, stem: str | None = "testfile") -> list[dict[str, Any]]:
    """The test files each process opened, from a ``strace -f -e trace=openat`` trace of an IOR run.

    One record per successful open of ``<stem>.NNNNNNNN`` (IOR's file-per-process names): pid, file
    (the name), file_rank (NNNNNNNN), create (O_CREAT: IOR's write phase creates; its read phase
    opens without it), in the order strace saw them. ``stem=None`` accepts any such name. A trace that
    ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`).
    """
    out = []
    for c in strace.parse_calls(text, events=False):
        if c["syscall"] not in ("open", "openat", "openat2") or not c["path"]:
            continue
        m = _RANK_FILE.search(c["path"])
        if not m or (stem is not None and m.group("stem") != stem):
            continue
        if c["result"] is None or c["result"] < 0:
            continue
        out.append({"pid": c["pid"], "file": c["path"].rpartition("/")[2], "file_rank": int(m.group("rank")),
                    "create": "O_CREAT" in c["args"]})
    return out


def opens_table(opens: Iterable[dict[str, Any]], tasks: int | None = None) -> pd.DataFrame:
    """Who read what: one row per rank and iteration, from :func:`parse_opens`.

    A process's rank is the number of the file it created (IOR's write phase has no shift: rank r
    writes ``.r``); each create starts an iteration, the open that follows it is that iteration's
    read. Columns: rank, pid, iteration, wrote, read, shift ((read's rank - rank) mod tasks; tasks
    defaults to the number of ranks seen), moved (another rank's file). Empty when nothing matched.
    """
    per_pid: dict[Any, list[dict[str, Any]]] = {}
    for o in opens:
        per_pid.setdefault(o["pid"], []).append(o)
    rows = []
    for pid, seq in per_pid.items():
        creates = [o for o in seq if o["create"]]
        if not creates:
            continue                          # a process that only read (e.g. a read-only run): rank unknown
        rank = creates[0]["file_rank"]
        iteration = -1
        for o in seq:
            if o["create"]:
                iteration += 1
                rows.append({"rank": rank, "pid": pid, "iteration": iteration, "wrote": o["file"],
                             "read": None, "read_rank": None})
            elif rows and rows[-1]["pid"] == pid and rows[-1]["read"] is None:
                rows[-1]["read"], rows[-1]["read_rank"] = o["file"], o["file_rank"]
    cols = ["rank", "pid", "iteration", "wrote", "read", "shift", "moved"]
    if not rows:
        return pd.DataFrame(columns=cols)
    n = tasks or len({r["rank"] for r in rows})
    for r in rows:
        r["shift"] = None if r["read_rank"] is None else (r["read_rank"] - r["rank"]) % n
        r["moved"] = None if r["read_rank"] is None else r["read_rank"] != r["rank"]
    df = pd.DataFrame(rows).sort_values(["iteration", "rank"], kind="stable").reset_index(drop=True)
    return df[cols]


# --- frames, verdicts ---------------------------------------------------------------------------

def label(row: Mapping[Any, Any] | pd.Series) -> str:
    """A configuration's short name from a parsed row: "shared", "-F", "-F -C -e O_DIRECT"..."""
    bits = ["-F" if row["file_per_process"] else "shared"]
    if row["reorder_tasks"]:
        bits.append("-C")
    if row["fsync"]:
        bits.append("-e")
    if row["odirect"]:
        bits.append("O_DIRECT")
    return " ".join(bits)


def to_frame(rows: Iterable[dict[str, Any]], **columns: Any) -> pd.DataFrame:
    """Parsed rows as a DataFrame, plus ``config`` (see :func:`label`), ``bytes_per_s`` and any
    constant columns given (e.g. ``run="naive"``)."""
    df = pd.DataFrame(list(rows), columns=list(RESULT_KEYS + FACT_KEYS))
    df["config"] = [label(r) for r in df.to_dict("records")] if len(df) else []
    df["bytes_per_s"] = df["bw_mib"].astype(float) * units.MiB
    for k, v in columns.items():
        df[k] = v
    return df
