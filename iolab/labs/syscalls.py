"""Lesson 03 (strace): what each measurement showed, as claims computed from its numbers.

Each function takes what strace (or a timing) produced, live or replayed, and returns the
:class:`iolab.explain.Claim` list it printed. A comparison that needs two numbers from the same
machine says "Cannot tell" when one of them was replayed from a recording made elsewhere.
"""
from __future__ import annotations

import gzip
import os
import platform
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from .. import explain, pagecache, recordings
from ..explain import Claim
from ..tools import strace
from ..units import format_size

MEMORY_FS = pagecache._MEMORY_FS
STAT_LIKE = ("stat", "lstat", "fstat", "newfstatat", "statx", "fstatat64", "stat64", "lstat64", "fstat64")


def _seconds(df: pd.DataFrame, syscall: str) -> float | None:
    rows = df[df["syscall"] == syscall]
    return float(rows["seconds"].iloc[0]) if len(rows) else None


def _calls(df: pd.DataFrame, syscall: str) -> int | None:
    rows = df[df["syscall"] == syscall]
    return int(rows["calls"].iloc[0]) if len(rows) else None


def _mode(df: pd.DataFrame) -> str:
    return str(df.attrs.get("mode", "live"))


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
    exact = all(strace.expected_reads(file_size, n) == c for n, c in counts.items())
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
    extra = {n: c - strace.expected_reads(file_size, n) for n, c in ours.items()}
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
    return {int(r.read_size): int(r.calls) - strace.expected_reads(int(file_size), int(r.read_size))
            for r in pub.itertuples()}


# --- 3 · the buffered reader ---------------------------------------------------------------------

def buffered_claims(buffered: Mapping[int, int], file_size: int, blksize: int, *, replayed: bool = False,
                    show: bool = True) -> list[Claim]:
    """Python's BufferedReader: 1-byte f.read calls become ceil(N / buffer) + 1 read(2) calls."""
    claims = []
    if 1 in buffered:
        want = strace.expected_reads(file_size, blksize)
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
        plain = strace.expected_reads(file_size, n)
        if n >= blksize and got != plain:
            print(f"at {format_size(n)} per f.read, the buffered reader made {got - plain:+,} read(2) call(s) "
                  f"beyond the unbuffered {plain:,}: after a short read it asks once more to fill the request, "
                  "and gets 0 bytes.")
    return claims


# --- 4 · what watching costs ---------------------------------------------------------------------

def overhead_claims(frame: pd.DataFrame, *, show: bool = True) -> list[Claim]:
    """Medians of the same run plain, under strace -c and under a full trace."""
    med = frame.groupby("how", sort=False)["seconds"].median()
    names = list(med.index)
    plain, counted, traced = (float(med[n]) for n in names[:3])
    return [
        explain.expect(
            "under strace -c the run takes at least twice as long as without it",
            explain.greater("strace -c", counted, "plain", plain, by=2),
            yes=f"{counted:.3f} s against {plain:.3f} s, {counted / plain:.1f}x",
            no=f"{counted:.3f} s against {plain:.3f} s, only {counted / plain:.1f}x",
            why="the program makes few system calls for the work it does between them, so the two stops per "
                "call weigh little.", show=show),
        explain.expect(
            "a full trace (a line per call, with times and paths) costs more than counting",
            explain.greater("full trace", traced, "strace -c", counted),
            yes=f"{traced:.3f} s against {counted:.3f} s",
            no=f"{traced:.3f} s against {counted:.3f} s for strace -c",
            why="both are dominated by the two stops per system call; writing a line costs little next to "
                "them, and on a busy machine each run moves by more than that difference.", show=show)]


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


def write_fsync(ws, *, nbytes: int = 64 << 20, recording_prefix: str = "write-fsync-64m-tmp"
                ) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The write + fsync program under ``strace -c`` and ``strace -c -w`` (two runs), only the write
    and fsync rows. Returns (system-time frame, wall-time frame, fstype of where it ran or was recorded)."""
    cmd = strace.write_fsync_argv(ws.root / "written.bin", nbytes)
    ws.reserve(nbytes)
    cpu = strace.count(cmd, syscalls=["write", "fsync"], cwd=ws.root,
                       recording=f"strace/count-{recording_prefix}", quiet=False)
    wall = strace.count(cmd, syscalls=["write", "fsync"], wall=True, cwd=ws.root,
                        recording=f"strace/count-wall-{recording_prefix}")
    return cpu, wall, where_it_ran(cpu, f"strace/count-{recording_prefix}", ws.root)


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
            explain.greater("write system", wr_sys, "a third of write wall", None if wr_wall is None else wr_wall / 3),
            yes=lambda ev: f"{ms(wr_sys)} of system time in {ms(wr_wall)} of wall time",
            no=lambda ev: f"{ms(wr_sys)} of system time in {ms(wr_wall)} of wall time",
            why="write() can sleep too: when dirty pages pile up the kernel makes writers wait for write-back "
                "(dirty throttling). And the two columns come from two separate runs; on a kernel that "
                "samples CPU time at each timer tick, a few milliseconds of system time are an estimate.",
            missing="a run has no write row", show=show)]


def traced_read_claims(wall: pd.DataFrame, plain_us_per_call: float | None, *, show: bool = True) -> list[Claim]:
    """Wall time per cached read under strace -w against the same read without strace (same machine)."""
    calls, secs = _calls(wall, "read"), _seconds(wall, "read")
    per = None if not calls else secs / calls * 1e6
    same_machine = _mode(wall) == "live" and plain_us_per_call is not None
    return [explain.expect(
        "under strace, each cached 2 KiB read takes at least 3x longer than without strace: the tracer's "
        "stop and restart are inside every timed call",
        explain.greater("traced read", per, "plain read", plain_us_per_call if same_machine else None, by=3),
        yes=lambda ev: f"{per:.1f} µs per read under strace -w, {plain_us_per_call:.2f} µs without strace",
        no=lambda ev: f"{per:.1f} µs per read under strace -w, {plain_us_per_call:.2f} µs without strace",
        why="ptrace stops are cheap on this machine compared with the read itself.",
        missing=("the strace run was replayed from another machine; a time per call only compares with one "
                 "measured on the same machine"), show=show)]


# --- latencies, processes, metadata --------------------------------------------------------------

def latency_claims(lat: pd.DataFrame, *, fstype: str = "", show: bool = True) -> list[Claim]:
    """Per-call durations (strace -T) of 64 KiB reads right after an eviction and again when cached."""
    reads = lat[lat["syscall"] == "read"]
    q = reads.groupby("label")["duration"].quantile([0.5, 0.99]).unstack() * 1e6
    labels = list(dict.fromkeys(reads["label"]))
    cold_l = next((x for x in labels if x.startswith("cold")), None)
    warm_l = next((x for x in labels if x.startswith("warm")), None)
    c99 = float(q.loc[cold_l, 0.99]) if cold_l else None
    w99 = float(q.loc[warm_l, 0.99]) if warm_l else None
    if cold_l and warm_l:
        print(f"median under strace -T: cold {q.loc[cold_l, 0.5]:.0f} µs, warm {q.loc[warm_l, 0.5]:.0f} µs; "
              f"99th percentile: cold {c99:.0f} µs, warm {w99:.0f} µs")
    mem = fstype in MEMORY_FS
    return [explain.expect(
        "the slowest cold reads waited for the device: the cold 99th percentile is at least 2x the warm one",
        explain.greater("cold p99", c99, "warm p99", w99, by=2),
        yes=lambda ev: f"{c99:,.0f} µs against {w99:,.0f} µs",
        no=lambda ev: f"{c99:,.0f} µs against {w99:,.0f} µs",
        why=(f"{fstype} cannot evict: the 'cold' reads came from memory too." if mem else
             "the device (or the host's cache under a VM) answered about as fast as memory, or readahead had "
             "every page in memory before the program asked for it; and with a few hundred calls, the 99th "
             "percentile is two or three calls: one warm call that was preempted or held up by other work on "
             "the machine looks just as slow under -T."),
        show=show)]


def forks_claims(forks: pd.DataFrame, file_size: int, read_sizes: Sequence[int], *, show: bool = True) -> list[Claim]:
    """strace -f: one child per read size, each with ceil(N/n) + 1 reads of the file."""
    reads = forks[forks["syscall"] == "read"]
    per_pid = reads.groupby("pid").agg(calls=("size", "size"), read_size=("size", "max"))
    want = {int(n): strace.expected_reads(file_size, int(n)) for n in read_sizes}
    got = {int(r.read_size): int(r.calls) for r in per_pid.itertuples()}
    return [explain.expect(
        "strace -f followed every child: each made ceil(N/n) + 1 reads with its own read size",
        explain.fact("each child's count as predicted", got == want),
        yes=", ".join(f"pid {pid}: {int(r.calls):,} reads of {format_size(int(r.read_size))}"
                      for pid, r in per_pid.iterrows()),
        no=f"counted {got}, expected {want}",
        why="a child was not followed (no -f), or it read the file with another call (pread64, readv).",
        show=show)]


def storm_claims(imp: pd.DataFrame, walk: pd.DataFrame, n_files: int, *, show: bool = True) -> list[Claim]:
    """The metadata calls of `import pandas` and of walking a tree of ``n_files`` files."""
    total = int(imp.attrs["total"]["calls"])
    errors = int(imp.attrs["total"].get("errors") or 0)
    top = imp.sort_values("calls", ascending=False).iloc[0]
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
    return pagecache._fstype(Path(path))


def where_it_ran(df: pd.DataFrame, recording: str, path: str | os.PathLike[str]) -> str:
    """The filesystem type behind a strace frame: ``path``'s when it ran live, the recording's when replayed."""
    if _mode(df) == "live":
        return fstype_of(path)
    return recordings.load(recording).meta.get("filesystem", {}).get("fstype", "")
