"""Lesson 03 (strace): what each measurement showed, as claims computed from its numbers.

Each function takes what strace (or a timing) produced, live or replayed, and returns the
:class:`iolab.explain.Claim` list it printed. A comparison that needs two numbers from the same
machine says "Cannot tell" when one of them was replayed from a recording made elsewhere.
"""
from __future__ import annotations

import gzip
import io
import os
import platform
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, fsinfo, pagecache, readahead_probes, recordings, runner, trials, workspace
from ...explain import Claim
from ...runner import Run
from ...tools import strace
from ...units import format_size

MEMORY_FS = fsinfo.MEMORY_FS
STAT_LIKE = ("stat", "lstat", "fstat", "newfstatat", "statx", "fstatat64", "stat64", "lstat64", "fstat64")


# --- strace around a command, live or replayed: an Outcome whose frame is strace's table ----------

@dataclass
class Traced(recordings.Outcome):
    """A command under strace, live or replayed: ``frame`` strace's table, and what ran."""

    argv: list[str] = field(default_factory=list)   # the strace command line
    returncode: int | None = None        # the command's exit status (live; a failing command is a result)
    seconds: float | None = None         # elapsed, strace included (live)
    strace_version: str | None = None
    # strace -c's total row (count() only; None for a trace): all calls, the failed ones, system seconds
    total_calls: int | None = None
    total_errors: int | None = None
    total_seconds: float | None = None


def _strace_outcome(make_argv: Callable[[Path], list[str]], parse: Callable[[str], Any], *,
                    recording: str | None, cwd: str | os.PathLike[str] | None, timeout: float, quiet: bool,
                    suffix: str, frame: Callable[[Any], pd.DataFrame] | None = None) -> Traced:
    """Run strace live in ``cwd`` (the session workspace by default), or replay ``recording`` when
    strace is missing here or IOLAB_MODE=replay; ``.data`` and ``.frame`` are ``parse(text)``, and
    the :class:`Traced` fields say what ran (argv, returncode, seconds, strace_version); ``frame``:
    the table of ``parse(text)`` when it is not one itself."""
    argv = make_argv(Path("FILE"))              # checks the command before anything runs
    d = Path(cwd) if cwd is not None else workspace.session().root
    out = d / f".strace-{os.getpid()}-{suffix}.txt"

    def live() -> Run:
        try:
            return strace.run(make_argv(out), timeout=timeout, cwd=d)
        finally:
            out.unlink(missing_ok=True)

    o = recordings.live_or_recorded(live, recording, requires=(strace.TOOL,), parse=parse, frame=frame,
                                    quiet=quiet or recording is None, cls=Traced)
    r = o.run
    o.argv = argv
    if r is not None:
        o.returncode, o.seconds, o.strace_version = r.returncode, r.seconds, r.tool_version
    return o


def count(cmd: Sequence[str | os.PathLike[str]], *, follow: bool = True, wall: bool = False,
          syscalls: str | Sequence[str] | None = None, paths: Sequence[str | os.PathLike[str]] = (),
          columns: Sequence[str] | None = None, sort: str | None = None,
          cwd: str | os.PathLike[str] | None = None, timeout: float = 120,
          recording: str | None = None, quiet: bool = True) -> Traced:
    """Run ``cmd`` under ``strace -c`` (in the session workspace): a :class:`Traced` whose ``.frame`` is
    the table, one row per syscall (``strace.SUMMARY_KEYS``), ``total_calls``, ``total_errors`` and
    ``total_seconds`` strace's total row (``.data``: the parse, ``.data.total``), with ``returncode`` (the command's exit status: a failing command
    is a result), ``seconds`` (elapsed, strace included), ``argv``, ``strace_version``.
    With ``recording="strace/name"`` the recorded output is replayed through the same parser when
    strace is missing here or IOLAB_MODE=replay.
    """
    def make(out: Path) -> list[str]:
        return strace.count_argv(cmd, output=out, follow=follow, wall=wall, syscalls=syscalls, paths=paths,
                                 columns=columns, sort=sort)

    o = _strace_outcome(make, strace.parse_summary, frame=strace.summary_frame, recording=recording,
                        cwd=cwd, timeout=timeout, quiet=quiet, suffix="count")
    total = o.data.total
    o.total_calls, o.total_errors, o.total_seconds = total["calls"], total.get("errors"), total.get("seconds")
    return o


def trace(cmd: Sequence[str | os.PathLike[str]], *, syscalls: str | Sequence[str] | None = None,
          follow: bool = True, paths: Sequence[str | os.PathLike[str]] = (), strsize: int = 32,
          cwd: str | os.PathLike[str] | None = None, timeout: float = 120,
          recording: str | None = None, quiet: bool = True, events: bool = True) -> Traced:
    """Run ``cmd`` under ``strace -f -tt -T -y``: an Outcome whose ``.frame`` has one row per syscall
    (``strace.CALL_KEYS`` + ``t``), the fields as for :func:`count`. Trace a real executable
    (``sys.executable``), not a ``python3`` found on PATH: that can be a shell shim whose own syscalls
    strace would record too.
    """
    def make(out: Path) -> list[str]:
        return strace.trace_argv(cmd, output=out, follow=follow, syscalls=syscalls, paths=paths, strsize=strsize)

    def parse(text: str) -> pd.DataFrame:
        return strace.calls_frame(strace.parse_calls(text, events=events))

    return _strace_outcome(make, parse, recording=recording, cwd=cwd, timeout=timeout, quiet=quiet, suffix="trace")


# --- the lesson's workloads: small Python programs, each `sys.executable -c CODE args...` -----------
# a real interpreter, no shell, nothing written outside the paths given

READ_LOOP = (
    "import sys\n"
    "path, n, buffered = sys.argv[1], int(sys.argv[2]), sys.argv[3] == 'buffered'\n"
    "with open(path, 'rb') if buffered else open(path, 'rb', buffering=0) as f:\n"
    "    while f.read(n):\n"
    "        pass\n"
)


def read_loop_argv(path: str | os.PathLike[str], read_size: int, *, buffered: bool = False,
                   python: str | None = None) -> list[str]:
    """argv of a Python process that reads ``path`` to the end, ``read_size`` bytes per ``f.read``.

    Unbuffered (``open(path, 'rb', buffering=0)``) each ``f.read(n)`` is one read(2); buffered,
    Python's BufferedReader asks the kernel for a whole buffer at a time. Uses ``sys.executable``.
    """
    if int(read_size) < 1:
        raise ValueError("the read size must be at least 1 byte")
    return [python or sys.executable, "-c", READ_LOOP, os.fspath(path), str(int(read_size)),
            "buffered" if buffered else "unbuffered"]


def expected_reads(file_size: int, read_size: int) -> int:
    """read(2) calls to read a file of ``file_size`` bytes ``read_size`` at a time, unbuffered:
    ``ceil(file_size / read_size)`` calls that return data, plus one that returns 0 (end of file)."""
    if read_size < 1 or file_size < 0:
        raise ValueError("need read_size >= 1 and file_size >= 0")
    return -(-file_size // read_size) + 1


def count_reads(path: str | os.PathLike[str], read_size: int, *, buffered: bool = False,
                recording: str | None = None, timeout: float = 300, quiet: bool = True) -> int:
    """Exact number of read(2) calls on ``path`` (``strace -c -e trace=read -P path``) when a Python
    process reads it to the end ``read_size`` bytes at a time. The -P filter leaves out the reads
    the interpreter makes of its own files while starting up."""
    p = Path(path).resolve()
    df = count(read_loop_argv(p, read_size, buffered=buffered), follow=False, syscalls="read",
               paths=[p], cwd=p.parent, timeout=timeout, recording=recording, quiet=quiet).frame
    rows = df[df["syscall"] == "read"]
    return int(rows["calls"].sum()) if len(rows) else 0


FORKS_DEMO = (
    "import subprocess, sys\n"
    "path, sizes, loop = sys.argv[1], sys.argv[2].split(','), sys.argv[3]\n"
    "procs = [subprocess.Popen([sys.executable, '-c', loop, path, n, 'unbuffered']) for n in sizes]\n"
    "sys.exit(max(p.wait() for p in procs))\n"
)


def forks_demo_argv(path: str | os.PathLike[str], read_sizes: Sequence[int], python: str | None = None) -> list[str]:
    """A parent starts one child process per read size; each reads the same file unbuffered."""
    return [python or sys.executable, "-c", FORKS_DEMO, os.fspath(path), ",".join(str(int(n)) for n in read_sizes),
            READ_LOOP]


WRITE_FSYNC = (
    "import os, sys\n"
    "path, n, block = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "buf = os.urandom(block)\n"
    "fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
    "try:\n"
    "    for _ in range(n // block):\n"
    "        os.write(fd, buf)\n"
    "    os.fsync(fd)\n"
    "finally:\n"
    "    os.close(fd)\n"
    "    os.unlink(path)\n"
)


def write_fsync_argv(path: str | os.PathLike[str], nbytes: int, block: int = 1 << 20,
                     python: str | None = None) -> list[str]:
    """A Python process that writes ``nbytes`` to ``path`` in ``block``-byte write() calls, calls fsync()
    once, closes and removes the file: write() copies into the page cache (CPU work), fsync() waits
    for the device."""
    if int(block) < 1 or int(nbytes) < int(block):
        raise ValueError("need nbytes >= block >= 1")
    return [python or sys.executable, "-c", WRITE_FSYNC, os.fspath(path), str(int(nbytes)), str(int(block))]


WALK_DEMO = (
    "import os, sys\n"
    "n = 0\n"
    "for d, dirs, files in os.walk(sys.argv[1]):\n"
    "    for f in files:\n"
    "        os.stat(os.path.join(d, f))\n"
    "        n += 1\n"
    "print(n)\n"
)


def walk_argv(root: str | os.PathLike[str], python: str | None = None) -> list[str]:
    """Walk a directory tree and stat every file (what ``find``/``ls -l``/a Python glob does)."""
    return [python or sys.executable, "-c", WALK_DEMO, os.fspath(root)]


def import_argv(module: str, python: str | None = None) -> list[str]:
    """Start Python and import ``module``: the search through sys.path is a metadata storm."""
    if not re.fullmatch(r"[A-Za-z_][\w.]*", module):
        raise ValueError(f"not a module name: {module!r}")
    return [python or sys.executable, "-c", f"import {module}"]


def make_tree(root: str | os.PathLike[str], dirs: int = 10, files_per_dir: int = 50) -> int:
    """Create ``dirs`` directories of ``files_per_dir`` empty files under ``root``; returns the file count."""
    r = Path(root)
    for i in range(dirs):
        d = r / f"d{i:03d}"
        d.mkdir(parents=True, exist_ok=True)
        for j in range(files_per_dir):
            (d / f"f{j:04d}.dat").touch()
    return dirs * files_per_dir


def overhead(path: str | os.PathLike[str], read_size: int, *, repeat: int = 3, timeout: float = 120) -> pd.DataFrame:
    """Elapsed seconds of one unbuffered read loop over ``path``: plain, under ``strace -c`` and under a
    full ``-f -tt -T -y`` trace to a file. Returns a DataFrame (how, seconds, calls, repeat)."""
    p = Path(path).resolve()
    cmd = read_loop_argv(p, read_size)
    out = p.parent / f".strace-{os.getpid()}-overhead.txt"
    rows = []
    try:
        for i in range(repeat):
            r = runner.run(cmd, timeout=timeout)
            rows.append(("plain", r.seconds, i))
            r = strace.run(strace.count_argv(cmd, output=out, follow=False), timeout=timeout, cwd=p.parent)
            rows.append(("strace -c", r.seconds, i))
            r = strace.run(strace.trace_argv(cmd, output=out, follow=False), timeout=timeout, cwd=p.parent)
            rows.append(("strace -tt -T -y (full trace)", r.seconds, i))
    finally:
        out.unlink(missing_ok=True)
    df = pd.DataFrame(rows, columns=["how", "seconds", "repeat"])
    df["read_size"] = int(read_size)
    df["file_size"] = p.stat().st_size
    return df


def measure_overhead(path: str | os.PathLike[str], read_size: int, *, recording: str, repeat: int = 3,
                     timeout: float = 120, quiet: bool = False) -> recordings.Outcome:
    """:func:`overhead` live (strace here), or its recording (the same frame as CSV): an Outcome whose
    ``.frame`` (and ``.data``) is the timings."""
    return recordings.live_or_recorded(
        lambda: overhead(path, read_size, repeat=repeat, timeout=timeout).to_csv(index=False), recording,
        requires=(strace.TOOL,), parse=lambda text: pd.read_csv(io.StringIO(text)), quiet=quiet)


def _seconds(df: pd.DataFrame, syscall: str) -> float | None:
    rows = df[df["syscall"] == syscall]
    return float(rows["seconds"].iloc[0]) if len(rows) else None


def _calls(df: pd.DataFrame, syscall: str) -> int | None:
    rows = df[df["syscall"] == syscall]
    return int(rows["calls"].iloc[0]) if len(rows) else None


# --- 1 · counts --------------------------------------------------------------------------------

def count_claims(counts: Mapping[int, int], file_size: int, guesses: Mapping[int, int | None] | None = None, *,
                 show: bool = True) -> list[Claim]:
    """Measured read(2) counts against ceil(N/n) + 1; the learner's guesses, if any, are reported."""
    if guesses:
        for n, g in guesses.items():
            if g is None or n not in counts:
                continue
            verdict = "exactly right" if g == counts[n] else f"off by {g - counts[n]:+,}"
            print(f"your guess for {format_size(n)}: {g:,} -> {verdict}")
    exact = all(expected_reads(file_size, n) == c for n, c in counts.items())
    return [explain.expect(
        "every count is ceil(N / n) + 1, exactly",
        explain.fact("all counts as the formula says", exact),
        yes=f"{len(counts)} read sizes, {sum(counts.values()):,} read(2) calls counted, none off",
        no="some counts differ from the formula",
        why="the file changed while it was read, or the -P filter missed a path (a symlink, a bind mount).",
        show=show)]


# --- 2 · seed 004's counts -----------------------------------------------------------------------

def seed004_counts() -> pd.DataFrame:
    """Seed 004's `strace -c` read rows: read_size, calls, seconds, usecs_per_call, command, source."""
    return recordings.published("seed004-strace-read-counts")


def startup_claims(ours: Mapping[int, int], file_size: int, *, show: bool = True) -> tuple[dict[int, int], list[Claim]]:
    """The reads beyond ceil(N/n) + 1 in an unfiltered strace -c: the same at every read size?"""
    extra = {n: c - expected_reads(file_size, n) for n, c in ours.items()}
    a, b = list(extra)[:2]
    claims = [explain.expect(
        "the reads beyond the formula are the same at every read size: a constant, the interpreter's own "
        "start-up reads",
        explain.within(f"extra at {format_size(a)}", extra[a], f"extra at {format_size(b)}", extra[b], rel=0),
        yes=f"{extra[a]:,} extra reads at both {format_size(a)} and {format_size(b)}",
        no=f"{extra[a]:,} extra reads at {format_size(a)}, {extra[b]:,} at {format_size(b)}",
        why="the program read something else too at one size (a buffer refilled, a module imported late), or "
            "the runs used different Pythons.", show=show)]
    return extra, claims


def seed_startup(file_size: int) -> dict[int, int]:
    """Seed 004's read calls minus ceil(N/n) + 1 for a file of ``file_size`` bytes, per read size."""
    pub = seed004_counts()
    return {int(r.read_size): int(r.calls) - expected_reads(int(file_size), int(r.read_size))
            for r in pub.itertuples()}


# --- 3 · the buffered reader ---------------------------------------------------------------------

def buffered_claims(buffered: Mapping[int, int], file_size: int, blksize: int, *, replayed: bool = False,
                    show: bool = True) -> list[Claim]:
    """Python's BufferedReader: 1-byte f.read calls become ceil(N / buffer) + 1 read(2) calls."""
    claims = []
    if 1 in buffered:
        want = expected_reads(file_size, blksize)
        claims.append(explain.expect(
            f"for 1-byte f.read calls, the buffered reader asks the kernel for st_blksize = {blksize:,} bytes at "
            f"a time: {want:,} read(2) calls",
            explain.within("measured", buffered[1], "ceil(N / st_blksize) + 1", want, rel=0),
            yes=f"{buffered[1]:,} read(2) calls for {file_size:,} f.read(1) calls",
            no=f"{buffered[1]:,} read(2) calls were counted",
            why=("the count was replayed from a recording made on a filesystem whose st_blksize may differ "
                 "from this one's." if replayed else
                 "this Python sizes its buffer differently (newer versions use at least 128 KiB, or the larger "
                 "of that and st_blksize)."), show=show))
    for n, got in buffered.items():
        plain = expected_reads(file_size, n)
        if n >= blksize and got != plain:
            print(f"at {format_size(n)} per f.read, the buffered reader made {got - plain:+,} read(2) call(s) "
                  f"beyond the unbuffered {plain:,}: after a short read it asks once more to fill the request, "
                  "and gets 0 bytes.")
    return claims


# --- 4 · what watching costs ---------------------------------------------------------------------

def overhead_claims(frame: pd.DataFrame, *, show: bool = True) -> list[Claim]:
    """Every run plain, under strace -c and under a full trace (the repeats interleaved), compared by
    the course's one rule (:func:`iolab.explain.beyond`: a way is slower only when its fastest run is
    slower than the other's slowest; otherwise too close to call here)."""
    names = list(dict.fromkeys(frame["how"]))
    plain, counted, traced = names[:3]
    t = trials.from_values({n: list(frame.loc[frame["how"] == n, "seconds"]) for n in (plain, counted, traced)},
                           unit="s", higher=False)
    again = "what would separate them: more runs, more calls per run, an idle machine"
    return [
        t.expect(
            "under strace -c the run takes at least twice as long as without it", plain, counted, by=2,
            yes=lambda ev: f"{explain.spread_text(t.relation(plain, counted))}: {ev[counted] / ev[plain]:.1f}x "
                           "the medians",
            why="the program makes few system calls for the work it does between them, so the two stops per "
                "call weigh little.", close=again, show=show),
        t.expect(
            "a full trace (a line per call, with times and paths) costs more than counting", counted, traced,
            why="both are dominated by the two stops per system call; writing a line costs little next to "
                "them, and on a busy machine each run moves by more than that difference.", close=again,
            show=show)]


# --- 5 · system time and wall time ---------------------------------------------------------------

def cpu_accounting() -> str | None:
    """How this kernel accounts CPU time to user and system mode: from its build configuration
    (/proc/config.gz or /boot/config-RELEASE), or None when neither is readable."""
    text = None
    try:
        text = gzip.decompress(Path("/proc/config.gz").read_bytes()).decode(errors="replace")
    except OSError:
        try:
            text = Path(f"/boot/config-{platform.release()}").read_text(errors="replace")
        except OSError:
            return None
    hz = re.search(r"^CONFIG_HZ=(\d+)", text, re.M)
    if re.search(r"^CONFIG_VIRT_CPU_ACCOUNTING_GEN=y", text, re.M) and \
            re.search(r"^CONFIG_NO_HZ_FULL=y", text, re.M):
        return ("exact on CPUs in nohz_full mode, tick-sampled elsewhere "
                f"(CONFIG_VIRT_CPU_ACCOUNTING_GEN, HZ={hz.group(1) if hz else '?'})")
    if re.search(r"^CONFIG_TICK_CPU_ACCOUNTING=y", text, re.M):
        return (f"tick-sampled: every 1/{hz.group(1)} s" if hz else "tick-sampled") + \
            " (CONFIG_TICK_CPU_ACCOUNTING)"
    if re.search(r"^CONFIG_VIRT_CPU_ACCOUNTING_NATIVE=y", text, re.M):
        return "exact at every kernel entry and exit (CONFIG_VIRT_CPU_ACCOUNTING_NATIVE)"
    return None


CLOCKS = ("system time (-c)", "wall time (-c -w)")


@dataclass
class Clocks(recordings.Outcome):
    """:func:`write_fsync`'s two runs: ``parts`` (system time, wall time), ``frame`` both tables."""

    fstype: str = ""                     # the filesystem where it ran or was recorded


def write_fsync(ws, *, nbytes: int = 64 << 20, recording: str = "write-fsync-64m-tmp") -> Clocks:
    """The write + fsync program under ``strace -c`` and ``strace -c -w`` (two runs), only the write
    and fsync rows: one Outcome of the two (``.parts``: system time, wall time), its ``.frame`` both
    tables with a ``clock`` column (:data:`CLOCKS`), ``.fstype`` the filesystem where it ran or was
    recorded. ``recording``: the name its two recordings share (``strace/count-<recording>``,
    ``strace/count-wall-<recording>``)."""
    cmd = write_fsync_argv(ws.root / "written.bin", nbytes)
    ws.reserve(nbytes)
    cpu = count(cmd, syscalls=["write", "fsync"], cwd=ws.root, recording=f"strace/count-{recording}",
                quiet=False)
    wall = count(cmd, syscalls=["write", "fsync"], wall=True, cwd=ws.root,
                 recording=f"strace/count-wall-{recording}")
    both = pd.concat([cpu.frame.assign(clock=CLOCKS[0]), wall.frame.assign(clock=CLOCKS[1])])
    return recordings.combine([cpu, wall], both, cls=Clocks, fstype=where_it_ran(cpu, ws.root))


def clocks_claims(cpu: pd.DataFrame, wall: pd.DataFrame, *, fstype: str = "", show: bool = True) -> list[Claim]:
    """A write + fsync program under strace -c (system time) and strace -c -w (wall time)."""
    mem = fstype in MEMORY_FS
    fs_sys, fs_wall = _seconds(cpu, "fsync"), _seconds(wall, "fsync")
    wr_sys, wr_wall = _seconds(cpu, "write"), _seconds(wall, "write")
    ms = lambda v: f"{v * 1e3:.2f} ms"  # noqa: E731
    return [
        explain.expect(
            "fsync spent most of its time waiting for the device: its wall time beyond its system time is "
            "larger than that system time, and than a tenth of the writes' wall time",
            explain.greater("fsync waiting", None if fs_wall is None or fs_sys is None else fs_wall - fs_sys,
                            "the larger of its system time and a tenth of the writes",
                            None if fs_sys is None or wr_wall is None else max(fs_sys, wr_wall / 10)),
            yes=lambda ev: f"{ms(fs_wall)} of wall time, {ms(fs_sys)} of system time",
            no=lambda ev: f"{ms(fs_wall)} of wall time against {ms(fs_sys)} of system time",
            why=(f"{fstype} has no device: fsync has nothing to wait for." if mem else
                 "the device (or the host under a VM) took the data almost at once, so there was little to "
                 "wait for; a write cache says 'done' before the data is on the medium."),
            missing="a run has no fsync row", show=show),
        explain.expect(
            "the write() calls were mostly CPU work, copying into the page cache: their system time is at "
            "least a third of their wall time",
            # system time above wall time cannot describe the same calls: the columns come from two runs
            explain.greater("write system", None if wr_sys is not None and wr_wall is not None and wr_sys > wr_wall
                            else wr_sys, "a third of write wall", None if wr_wall is None else wr_wall / 3),
            yes=lambda ev: f"{ms(wr_sys)} of system time in {ms(wr_wall)} of wall time",
            no=lambda ev: f"{ms(wr_sys)} of system time in {ms(wr_wall)} of wall time",
            why="write() can sleep too: when dirty pages pile up the kernel makes writers wait for write-back "
                "(dirty throttling). And the two columns come from two separate runs; on a kernel that "
                "samples CPU time at each timer tick, a few milliseconds of system time are an estimate.",
            missing=("a run has no write row" if wr_sys is None or wr_wall is None else
                     f"the write() calls show {ms(wr_sys)} of system time against {ms(wr_wall)} of wall time: more "
                     "CPU time than elapsed time cannot be the same calls. The two columns come from two runs "
                     "(strace -c, then strace -c -w), and the system time is sampled at timer ticks; run both "
                     "on a larger write to compare them."),
            show=show)]


TRACED, PLAIN = "under strace -c -w", "without strace"


def traced_reads(path: str | os.PathLike[str], read_size: int, *, recording: str, repeat: int = 3,
                 quiet: bool = False) -> recordings.Outcome:
    """``repeat`` rounds, each: the cached read loop at ``read_size`` under ``strace -c -w`` (:func:`count`
    with ``wall=True``), then the same reads without strace (one warm pass of
    :func:`iolab.readahead_probes.read_size_sweep`). A replayed strace run is its one recording, never
    counted as several, and is not compared with passes timed here. ``frame``: one row per run, with
    ``trial``, ``how`` (:data:`TRACED` or :data:`PLAIN`), ``calls``, ``us_per_read``; ``parts``: the
    strace runs; mode: the strace runs'."""
    parts, rows = [], []
    for trial in range(1, repeat + 1):
        if not parts or parts[0].live:
            out = count(read_loop_argv(path, read_size), wall=True, recording=recording, quiet=quiet or bool(parts))
            parts.append(out)
            calls, secs = _calls(out.frame, "read"), _seconds(out.frame, "read")
            rows.append({"trial": trial, "how": TRACED, "calls": calls,
                         "us_per_read": None if not calls or secs is None else secs / calls * 1e6})
        plain = readahead_probes.read_size_sweep(path, [read_size], cache="warm").iloc[0]
        rows.append({"trial": trial, "how": PLAIN, "calls": int(plain.calls), "us_per_read": float(plain.us_per_call)})
    return recordings.combine(parts, pd.DataFrame(rows))


def traced_read_claims(traced: recordings.Outcome, *, show: bool = True) -> list[Claim]:
    """Wall time per cached read under strace -w against the same reads without strace, over every
    round of :func:`traced_reads`, by the course's one rule; only when strace ran here too."""
    f = traced.frame
    under = [float(v) for v in f.loc[f["how"] == TRACED, "us_per_read"].dropna()]
    plain = [float(v) for v in f.loc[f["how"] == PLAIN, "us_per_read"].dropna()]
    same_machine = traced.mode == "live"
    rel = explain.beyond("traced read", under or None, "plain read", plain if same_machine and plain else None,
                         by=3, unit="µs")
    return [explain.expect(
        "under strace, each cached 2 KiB read takes at least 3x longer than without strace: the tracer's "
        "stop and restart are inside every timed call",
        rel, yes=lambda ev: f"{explain.spread_text(rel)} per read: {ev['traced read'] / ev['plain read']:.0f}x "
                            "the medians",
        no=lambda ev: f"{explain.spread_text(rel)} per read",
        why="ptrace stops are cheap on this machine compared with the read itself.",
        missing=("the strace run was replayed from another machine; a time per call only compares with one "
                 "measured on the same machine"),
        close="what would separate them: more rounds, an idle machine", show=show)]


# --- latencies, processes, metadata --------------------------------------------------------------

COLD, WARM = "cold (after DONTNEED)", "warm (page cache)"


def cold_warm_reads(path: str | os.PathLike[str], read_size: int = 65536, *, repeat: int = 3,
                    recording: str = "strace/trace-reads-{state}-{trial}", quiet: bool = False) -> recordings.Outcome:
    """``repeat`` rounds, each: evict ``path`` (posix_fadvise DONTNEED, without root), trace the read
    loop at ``read_size`` (cold), trace it again (warm), every call timed with ``strace -T``. Live, or
    each trace replayed from ``recording`` (``{state}`` cold or warm, ``{trial}`` 1..repeat). The
    Outcome's ``frame``: every read call of every trace, with ``label`` (:data:`COLD` or :data:`WARM`)
    and ``trial``; ``parts``: the traces, in the order they ran."""
    parts, frames = [], []
    for trial in range(1, repeat + 1):
        for state, label in (("cold", COLD), ("warm", WARM)):
            if state == "cold" and recordings.replay_reason(requires=(strace.TOOL,), strict=False) is None:
                pagecache.evict(path)
            out = trace(read_loop_argv(path, read_size), syscalls="read", paths=[path],
                        recording=recording.format(state=state, trial=trial), quiet=quiet or bool(parts))
            parts.append(out)
            frames.append(out.frame.assign(label=label, trial=trial))
    return recordings.combine(parts, pd.concat(frames, ignore_index=True))


def latency_claims(lat: pd.DataFrame, *, fstype: str = "", show: bool = True) -> list[Claim]:
    """Per-call durations (strace -T) of reads right after an eviction and again when cached, over
    every trace of each (``trial``): each trace's 99th percentile is one trial, and the cold traces'
    against the warm ones' are judged by the course's one rule (:func:`iolab.explain.beyond`)."""
    reads = lat[lat["syscall"] == "read"]
    if "trial" not in reads:
        reads = reads.assign(trial=1)
    labels = list(dict.fromkeys(reads["label"]))
    cold_l = next((x for x in labels if x.startswith("cold")), None)
    warm_l = next((x for x in labels if x.startswith("warm")), None)
    p99 = reads.groupby(["label", "trial"], sort=False)["duration"].quantile(0.99) * 1e6
    med = reads.groupby("label", sort=False)["duration"].median() * 1e6
    c99 = list(p99[cold_l]) if cold_l else []
    w99 = list(p99[warm_l]) if warm_l else []
    if cold_l and warm_l:
        print(f"under strace -T, over {len(c99)} cold and {len(w99)} warm traces: median call cold "
              f"{med[cold_l]:.0f} µs, warm {med[warm_l]:.0f} µs; each trace's 99th percentile: cold "
              f"{', '.join(f'{v:.0f}' for v in c99)} µs, warm {', '.join(f'{v:.0f}' for v in w99)} µs")
    mem = fstype in MEMORY_FS
    rel = explain.beyond("cold p99", c99 or None, "warm p99", w99 or None, by=2, unit="µs")
    return [explain.expect(
        "the slowest cold reads waited for the device: each cold trace's 99th percentile is at least 2x "
        "every warm trace's",
        rel, yes=lambda ev: explain.spread_text(rel), no=lambda ev: explain.spread_text(rel),
        why=(f"{fstype} cannot evict: the 'cold' reads came from memory too." if mem else
             "the device (or the host's cache under a VM) answered about as fast as memory, or readahead had "
             "every page in memory before the program asked for it."),
        close=(f"{fstype} cannot evict: the 'cold' reads came from memory too, so the two sets of traces differ "
               "only by noise" if mem else
               "with a few hundred calls a trace's 99th percentile is two or three calls, and one warm call "
               "preempted by other work on the machine looks as slow under -T as a wait for the device; what "
               "would separate them: more traces, more calls per trace, an idle machine"),
        show=show)]


def forks_claims(forks: pd.DataFrame, file_size: int, read_sizes: Sequence[int], *, show: bool = True) -> list[Claim]:
    """strace -f: one child per read size, each with ceil(N/n) + 1 reads of the file."""
    reads = forks[forks["syscall"] == "read"]
    per_pid = reads.groupby("pid").agg(calls=("size", "size"), read_size=("size", "max"))
    want = {int(n): expected_reads(file_size, int(n)) for n in read_sizes}
    got = {int(r.read_size): int(r.calls) for r in per_pid.itertuples()}
    return [explain.expect(
        "strace -f followed every child: each made ceil(N/n) + 1 reads with its own read size",
        explain.fact("each child's count as predicted", got == want),
        yes=", ".join(f"pid {pid}: {int(r.calls):,} reads of {format_size(int(r.read_size))}"
                      for pid, r in per_pid.iterrows()),
        no=f"counted {got}, expected {want}",
        why="a child was not followed (no -f), or it read the file with another call (pread64, readv).",
        show=show)]


def storm_claims(imp: Traced, walk: pd.DataFrame, n_files: int, *, show: bool = True) -> list[Claim]:
    """The metadata calls of `import pandas` (:func:`count`'s outcome: its table and strace's total) and
    of walking a tree of ``n_files`` files (its table)."""
    total, errors = int(imp.total_calls), int(imp.total_errors or 0)
    top = imp.frame.sort_values("calls", ascending=False).iloc[0]
    print(f"import: {total:,} system calls, {errors:,} of them failed ({errors / total:.0%}); "
          f"the most frequent: {top['syscall']} ({int(top['calls']):,})")
    stats = int(walk[walk["syscall"].isin(STAT_LIKE)]["calls"].sum())
    return [
        explain.expect(
            "importing one package takes thousands of system calls before your code runs",
            explain.greater("calls", total, "a thousand", 1000),
            yes=f"{total:,} calls", no=f"{total:,} calls",
            why="the package is small, or this Python caches more (a zipped standard library, a frozen import).",
            show=show),
        explain.expect(
            "the most frequent call of the import is a stat-like metadata call",
            explain.fact("top call is stat-like", top["syscall"] in STAT_LIKE),
            yes=f"{top['syscall']}, {int(top['calls']):,} times", no=f"the most frequent is {top['syscall']}",
            why="this Python or C library spends more calls elsewhere (mmap-ing shared libraries, reading "
                "files), e.g. when its module caches are warm.", show=show),
        explain.expect(
            f"walking {n_files:,} files costs at least one stat-like call per file",
            explain.greater("stat-like calls", stats, "files - 1", n_files - 1),
            yes=f"{stats:,} stat-like calls for {n_files:,} files",
            no=f"{stats:,} stat-like calls for {n_files:,} files",
            why="the walker took file types from getdents64 and did not stat (find without -size/-newer "
                "does that).", show=show)]


def fstype_of(path: str | os.PathLike[str]) -> str:
    return fsinfo.fstype(Path(path))


def where_it_ran(out: recordings.Outcome, path: str | os.PathLike[str]) -> str:
    """The filesystem type behind an outcome: ``path``'s when it ran live, its recording's when replayed."""
    if out.mode == "live" or out.recording is None:
        return fstype_of(path)
    return out.recording.meta.get("filesystem", {}).get("fstype", "")
