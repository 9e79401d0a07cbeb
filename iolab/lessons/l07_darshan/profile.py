"""Lesson 07 (Darshan), sections 1-2: profile programs with Darshan (a read loop, dd), Darshan beside
strace, and what Darshan costs; and what every section's runs share: :class:`Profile`, the recordings'
names (:func:`recording`), why a run is replayed (:func:`live_reason`), where a log comes from.
Sections 3-4 (IOR -F with DXT, collective MPI-IO) are :mod:`iolab.lessons.l07_darshan.mpiio`'s.

The experiments run live where a Darshan runtime is found (:func:`iolab.tools.darshan.find_runtime`)
and replay real logs recorded on the course VM otherwise; either way the log goes through the same
reader (PyDarshan) and the same frames. Every sentence that depends on a number is a claim
(:mod:`iolab.explain`) computed from this run's numbers.

Mechanisms, checked in the sources:

* Python's unbuffered ``f.read(n)`` is one ``read(2)`` through libc, which Darshan wraps; a buffered
  ``f.read(1)`` is answered from the BufferedReader's memory, which refills with one ``read`` of its
  buffer size (CPython Modules/_io/bufferedio.c), so Darshan, like strace, sees only the refills.

Recording the lesson's runs (needs the Darshan runtime, strace, IOR and mpirun; this module's
:func:`record`, then :func:`iolab.lessons.l07_darshan.mpiio.record`)::

    python -m recorders.l07_darshan --dir /tmp --label ext4
    python -m recorders.l07_darshan --dir /dev/shm --label tmpfs
"""
from __future__ import annotations

import io
import math
import os
import re
import socket
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ... import explain, recordings, runner, trials, workspace
from ...errors import ToolFailed, ToolMissing
from ...explain import Claim
from ...runner import Run
from ...tools import darshan, dd, ior, strace
from ..l03_strace.syscalls import READ_LOOP, expected_reads
from ...units import format_size, parse_size

READ_LOOP_SCRIPT = "read_loop.py"
SETUP = "ext4"          # the recordings the lesson replays (the course VM's /tmp); "tmpfs" is the other setup


# --- where a log comes from ---------------------------------------------------------------------

@dataclass
class Profile(recordings.Outcome):
    """One run under Darshan, live or replayed: an Outcome whose ``data`` is the parsed log (``.log``)
    and ``frame`` its table of files (:func:`iolab.tools.darshan.files`), with what the run was."""

    argv: list[str] = field(default_factory=list)   # the profiled command
    target: str = ""                     # the read loop's data file, as the log names it
    read_size: int | None = None         # the read loop's f.read(n)
    buffered: bool = False
    file_size: int | None = None         # bytes of the file read (the read loop, dd's input)
    st_blksize: int | None = None        # the data file's st_blksize (the read loop)
    src: str = ""                        # dd's if=
    dst: str = ""                        # dd's of=
    bs: int | None = None                # dd's bs=
    strace: pd.DataFrame | None = None   # strace's calls of the same run (:func:`both`)
    strace_version: str | None = None
    testfile: str = ""                   # IOR's -o
    options: ior.Options | None = None   # IOR's options and ranks
    tasks: int | None = None
    ior_version: str | None = None

    @property
    def log(self) -> darshan.Log:
        return self.data

    @property
    def meta(self) -> dict[str, Any]:
        """The recording's meta ({} for a live run)."""
        return self.recording.meta if self.recording is not None else {}

    def files(self) -> pd.DataFrame:
        return darshan.files(self.log)


def _live(r: Run, log: Path, argv: Sequence[str], **typed: Any) -> Profile:
    """A live run's Profile: its log read, its provenance, what it was (``typed``)."""
    return Profile("live", "", _live_provenance(r), run=r, data=darshan.read_log(log), argv=list(argv), **typed)


def _profile(live: Callable[[], Profile], ref: str, *, requires: Sequence[str] = (), given: bool = True,
             not_given: str = "", siblings: Sequence[str] = (), quiet: bool = False) -> Profile:
    """``live()`` under Darshan where it can run here (``given``: the files it needs were named), else
    the recorded log ``ref`` (and its ``siblings``), through :func:`iolab.recordings.live_or_recorded`."""
    out = recordings.live_or_recorded(live, ref, requires=requires, siblings=siblings, quiet=quiet,
                                      unavailable=runtime_problem if given else not_given,
                                      read=lambda rec: darshan.read_log(rec.path), frame=darshan.files, cls=Profile)
    if not out.live:
        out.text, out.argv = "", list(out.meta["argv"])
    return out


def recording(name: str, setup: str = SETUP) -> str:
    """The recording of the lesson's run ``name`` made on ``setup``: ``darshan/<name>-<setup>``."""
    return f"darshan/{name}-{setup}"


_ref = recording          # inside a lesson function whose ``recording`` parameter shadows it


def runtime_problem() -> str | None:
    """Why Darshan cannot profile a run here (no runtime: ToolMissing; one newer than the log reader), or None."""
    rt = darshan.find_runtime()
    if rt is None:
        raise ToolMissing("Darshan runtime (libdarshan.so)", darshan.INSTALL_HINT)
    if rt.compatible() is False:
        return (f"the Darshan runtime here ({rt.version}) is newer than the log reader (PyDarshan "
                f"{darshan.reader_version()}): its logs would be refused")
    return None


def live_reason(requires: Sequence[str] = ()) -> str | None:
    """None when the experiment can run live under Darshan here, else why it is replayed
    (:func:`iolab.recordings.replay_reason` with :func:`runtime_problem`).

    IOLAB_MODE=live with something missing raises ToolMissing instead."""
    return recordings.replay_reason(requires, runtime_problem)


def _live_provenance(r: Run, argv: Sequence[str] | None = None) -> str:
    argv = list(argv or r.argv)
    return (f"LIVE run here ({socket.gethostname()}, {r.started:%Y-%m-%d %H:%M} UTC, {r.seconds:.2f} s) under "
            f"Darshan {r.tool_version or ''}: {' '.join(argv[:8])}{' ...' if len(argv) > 8 else ''}").replace("  ", " ")


def _replay(ref: str, reason: str) -> tuple[darshan.Log, str, recordings.Recording]:
    rec = recordings.load(ref)
    return darshan.read_log(rec.path), f"{rec.provenance}; {reason}", rec


def _save(r: Run, log: Path, ref: str, *, argv: Sequence[str], fs_path: Path, notes: str,
          fs_facts: dict[str, Any] | None = None) -> None:
    recordings.save(r, ref, ext="darshan", stream="file", data=log.read_bytes(), argv=list(argv),
                    tool_version=r.tool_version, fs_path=fs_path, notes=notes, fs_facts=fs_facts)


def _logs_dir(ws: workspace.Workspace) -> Path:
    return ws.mkdir("darshan-logs")


def _fresh_log(ws: workspace.Workspace, stem: str) -> Path:
    return _logs_dir(ws) / f"{stem}-{uuid.uuid4().hex[:6]}.darshan"


# --- section 1: a read loop, dd -------------------------------------------------------------------

def read_loop_script(ws: workspace.Workspace | None = None) -> Path:
    """Lesson 03's read loop (iolab.lessons.l03_strace.syscalls.READ_LOOP) as a script file in the workspace.

    Darshan stores the command line in its log; ``python -c`` with a multi-line script puts newlines
    there, and PyDarshan 3.5 then refuses the log. A script file keeps the command line one line."""
    ws = ws or workspace.session()
    path = ws.path(READ_LOOP_SCRIPT)
    path.write_text(READ_LOOP)
    return path


def read_loop_argv(path: str | os.PathLike[str], read_size: int, *, buffered: bool = False,
                   ws: workspace.Workspace | None = None) -> list[str]:
    """``python read_loop.py PATH N unbuffered|buffered`` (sys.executable, the script in the workspace)."""
    return [sys.executable, str(read_loop_script(ws)), os.fspath(path), str(int(read_size)),
            "buffered" if buffered else "unbuffered"]


def _target_of(argv: Sequence[str]) -> str:
    """The data file of a read-loop argv (the script's first argument)."""
    for i, a in enumerate(argv):
        if a.endswith(".py") and i + 1 < len(argv):
            return argv[i + 1]
    raise ValueError(f"no read-loop script in {argv}")


def profile_read_loop(path: str | os.PathLike[str] | None, read_size: int, *, buffered: bool = False,
                      recording: str, ws: workspace.Workspace | None = None, save_as: str | None = None,
                      setup: str = SETUP, quiet: bool = False) -> Profile:
    """Run the read loop over ``path`` under Darshan (or replay ``darshan/<recording>-<setup>``).

    A :class:`Profile` with ``target`` (the data file as the log names it), ``read_size``, ``buffered``,
    ``file_size``, ``st_blksize``.
    """
    def live() -> Profile:
        w = ws or workspace.session()
        p = Path(path).resolve()
        argv = read_loop_argv(p, read_size, buffered=buffered, ws=w)
        prof = darshan.run(argv, _fresh_log(w, "readloop"), cwd=w.root, timeout=300, record=[p, w.root])
        if save_as:
            _save(prof.run, prof.log, save_as, argv=argv, fs_path=p.parent,
                  fs_facts={"st_blksize": os.stat(p).st_blksize},
                  notes=f"the read loop of lesson 03 ({'buffered' if buffered else 'unbuffered'} f.read({read_size})) "
                        f"over a {p.stat().st_size}-byte file, under Darshan (DARSHAN_ENABLE_NONMPI=1)")
        return _live(prof.run, prof.log, argv, file_size=p.stat().st_size, st_blksize=os.stat(p).st_blksize)

    out = _profile(live, _ref(recording, setup), given=path is not None, not_given="no data file given",
                   quiet=quiet)
    out.target, out.read_size, out.buffered = _target_of(out.argv), int(read_size), buffered
    if not out.live:
        out.file_size = darshan.counter(out.log, "POSIX_BYTES_READ", file=out.target)
        out.st_blksize = out.meta.get("filesystem", {}).get("st_blksize")
    return out


def kinds(profile: Profile, *, program_files: Sequence[str] = ()) -> pd.DataFrame:
    """Every file the log names, with what it is: the data file, the script, a standard stream,
    Python's own files (imports, .pth, shared modules), or something else."""
    f = profile.files()
    target = profile.target
    scripts = {a for a in profile.argv if a.endswith(".py")} | set(program_files)

    def kind(name: str) -> str:
        if name == target:
            return "the data file"
        if name in scripts:
            return "the script"
        if name.startswith("<") and name.endswith(">"):
            return "standard stream"
        if re.search(r"\.(pyc|py|pth|so|zip)$", name) or "/python" in name or "site-packages" in name:
            return "Python's own files"
        return "other"

    f.insert(1, "kind", [kind(n) for n in f["file"]])
    return f


def kinds_table(profile: Profile) -> pd.DataFrame:
    """One row per kind of file (see :func:`kinds`): files, opens, reads, bytes read."""
    f = kinds(profile)
    f = f[f["module"] == "POSIX"]
    t = f.groupby("kind", sort=False).agg(files=("file", "nunique"), opens=("opens", "sum"),
                                          reads=("reads", "sum"), bytes_read=("bytes_read", "sum"))
    order = ["the data file", "the script", "Python's own files", "standard stream", "other"]
    return t.reindex([k for k in order if k in t.index])


def read_loop_claims(profile: Profile, *, show: bool = True) -> list[Claim]:
    """Darshan's counts for the unbuffered loop against ``ceil(N/n) + 1``, the histogram, the other files."""
    target, n = profile.target, profile.read_size
    log = profile.log
    size = profile.file_size
    reads = darshan.counter(log, "POSIX_READS", file=target)
    got = darshan.counter(log, "POSIX_BYTES_READ", file=target)
    want = expected_reads(size, n)
    claims = [explain.expect(
        f"Darshan counts ceil(N/n) + 1 = {want:,} reads of the data file ({format_size(size)} read "
        f"{format_size(n)} at a time, plus the read that finds the end)",
        explain.within("Darshan's reads", reads, "predicted", want, rel=0),
        yes=f"POSIX_READS = {reads:,}, POSIX_BYTES_READ = {got:,}",
        no=f"POSIX_READS = {reads:,}",
        why="the program did not read the whole file, or read it twice (an interrupted run, another "
            "version of the read loop)", show=show)]
    hist = darshan.access_sizes(log, file=target)
    label = darshan.bucket_of(n)
    in_bucket = int(hist[(hist["op"] == "read") & (hist["bucket"] == label)]["count"].sum())
    rest = size % n
    want_b = size // n + (1 if rest and darshan.bucket_of(rest) == label else 0) + (1 if darshan.bucket_of(0) == label else 0)
    claims.append(explain.expect(
        f"the size histogram puts the {size // n:,} reads of {format_size(n)} in Darshan's {label} bucket, and the "
        "empty read at the end of the file in its 0-100 B bucket",
        explain.within("reads in the bucket", in_bucket, "predicted", want_b, rel=0),
        yes=f"{in_bucket:,} reads in {label}", no=f"{in_bucket:,} reads in {label}",
        why="some reads returned less than asked for (a file still being written, a pipe)", show=show))
    table = kinds_table(profile)
    own = int(table.loc["Python's own files", "files"]) if "Python's own files" in table.index else 0
    own_bytes = int(table.loc["Python's own files", "bytes_read"]) if own else 0
    claims.append(explain.expect(
        "the log also names files the loop never opened itself: Python's start-up reads its own "
        "modules before the loop begins",
        explain.fact("Python's own files", own > 0),
        yes=f"{own} of Python's own files, {own_bytes:,} bytes read",
        no="no file of Python's own is in the log",
        why="Darshan leaves out /usr/, /lib/, /opt/, /etc/ and a few other trees by default "
            "(DARSHAN_EXCLUDE_DIRS changes that): a Python installed there reads its modules unseen", show=show))
    return claims


def buffered_claims(profile: Profile, *, show: bool = True) -> list[Claim]:
    """Buffered 1-byte reads: how many reached the POSIX layer, and how big they were."""
    target, n = profile.target, profile.read_size
    size = profile.file_size
    calls = math.ceil(size / n)                      # f.read(n) calls that returned data
    reads = darshan.counter(profile.log, "POSIX_READS", file=target)
    rec = profile.log.records["POSIX"]
    rec = rec[rec["file"] == target]
    common = int(rec["POSIX_ACCESS1_ACCESS"].iloc[0]) if len(rec) else None     # the commonest read size
    blk = profile.st_blksize
    size_said = f", most of them of {common:,} bytes" if common else ""
    if common and blk and common == blk:
        size_said += " (the file's st_blksize, which Python's open() takes for the buffer's size)"
    return [explain.expect(
        f"far fewer read(2) calls reach the file than the {calls:,} f.read({n}) calls the loop makes "
        "(at least 100 times fewer): Python's buffer answers most of them",
        explain.greater("f.read calls", calls, "POSIX reads", reads, by=100),
        yes=f"Darshan counted {reads:,} reads{size_said}",
        no=f"Darshan counted {reads:,} reads",
        why="the loop ran unbuffered, or the buffer is tiny", show=show)]


def _dd_target(argv: Sequence[str], key: str) -> str:
    return next(a.split("=", 1)[1] for a in argv if a.startswith(f"{key}="))


def profile_dd(src: str | os.PathLike[str] | None, dst: str | os.PathLike[str] | None, *, bs: int | str,
               recording: str, save_as: str | None = None, setup: str = SETUP, quiet: bool = False) -> Profile:
    """``dd if=SRC of=DST bs=BS`` under Darshan (or a replay); a :class:`Profile` with ``src``, ``dst``, ``bs``, ``file_size``."""

    def live() -> Profile:
        ws = workspace.holding(dst) or workspace.session()
        log_path = _fresh_log(ws, "dd")
        env = darshan.env(log_path, record=[src, dst])
        r = dd.run(src, dst, bs=bs, env=env)
        r = replace(r, tool_version=darshan.require_runtime().version)
        if not log_path.exists():
            raise ToolFailed(r.argv, r.returncode, r.stderr, message=f"Darshan wrote no log at {log_path}")
        if save_as:
            _save(r, log_path, save_as, argv=r.argv, fs_path=Path(dst).parent,
                  notes=f"dd copying a {Path(src).stat().st_size}-byte file with bs={bs}, under Darshan")
        return _live(r, log_path, r.argv, file_size=Path(src).stat().st_size)

    out = _profile(live, _ref(recording, setup), requires=("dd",),
                   given=src is not None and dst is not None, not_given="no files given", quiet=quiet)
    out.src, out.dst, out.bs = _dd_target(out.argv, "if"), _dd_target(out.argv, "of"), parse_size(bs)
    if not out.live:
        out.file_size = darshan.counter(out.log, "POSIX_BYTES_READ", file=out.src)
    return out


def dd_claims(profile: Profile, *, show: bool = True) -> list[Claim]:
    size, bs = profile.file_size, profile.bs
    reads = darshan.counter(profile.log, "POSIX_READS", file=profile.src)
    writes = darshan.counter(profile.log, "POSIX_WRITES", file=profile.dst)
    want_r, want_w = expected_reads(size, bs), math.ceil(size / bs)
    return [explain.expect(
        f"dd reads the input in ceil(N/bs) + 1 = {want_r:,} reads and writes the copy in ceil(N/bs) = "
        f"{want_w:,} writes of {format_size(bs)}",
        explain.within("reads + writes", reads + writes, "predicted", want_r + want_w, rel=0),
        yes=f"{reads:,} reads of {Path(profile.src).name}, {writes:,} writes of "
            f"{Path(profile.dst).name}",
        no=f"{reads:,} reads and {writes:,} writes",
        why="dd may get short reads from a pipe or a device; from a regular file it should not", show=show)]


# --- section 2: Darshan beside strace -------------------------------------------------------------

def both(path: str | os.PathLike[str] | None, read_size: int, *, recording: str = "both-read-4k",
         ws: workspace.Workspace | None = None, save_as: str | None = None, setup: str = SETUP,
         quiet: bool = False) -> Profile:
    """One run of the read loop watched by strace and Darshan at once.

    strace runs ``env LD_PRELOAD=libdarshan.so ... python read_loop.py FILE N unbuffered`` with
    ``-e trace=read -P FILE``: the same process, counted twice. ``.strace``: the trace's calls
    frame (iolab.tools.strace.calls_frame); the strace text is recorded as ``<name>-strace``.
    """
    def live() -> Profile:
        w = ws or workspace.session()
        p = Path(path).resolve()
        log_path = _fresh_log(w, "both")
        inner = read_loop_argv(p, read_size, ws=w)
        cmd = ["env", *(f"{k}={v}" for k, v in darshan.env(log_path, record=[p]).items()), *inner]
        out_file = w.path(f".strace-both-{uuid.uuid4().hex[:6]}.txt")
        try:
            r = strace.run(strace.trace_argv(cmd, output=out_file, syscalls="read", paths=[p]), cwd=w.root)
        finally:
            out_file.unlink(missing_ok=True)
        rt = darshan.require_runtime()
        if save_as:
            _save(replace(r, tool_version=rt.version), log_path, save_as, argv=r.argv, fs_path=p.parent,
                  notes=f"the read loop (f.read({read_size}), unbuffered) under strace and Darshan at once")
            recordings.save(r, save_as + "-strace", ext="txt", fs_path=p.parent,
                            notes="strace's trace of the same run as " + save_as)
        return _live(replace(r, tool_version=rt.version), log_path, inner, file_size=p.stat().st_size,
                     strace=strace.calls_frame(strace.parse_calls(r.stdout)), strace_version=r.tool_version)

    out = _profile(live, _ref(recording, setup), requires=("strace", "env"), given=path is not None,
                   not_given="no data file given", siblings=("strace",), quiet=quiet)
    if not out.live:
        srec = out.siblings["strace"]
        argv = out.argv
        out.argv = argv[argv.index(next(a for a in argv if a.endswith(".py"))) - 1:]
        out.strace = strace.calls_frame(strace.parse_calls(srec.text))
        out.strace_version = srec.meta.get("tool_version")
        out.file_size = darshan.counter(out.log, "POSIX_BYTES_READ", file=_target_of(out.argv))
    out.target, out.read_size = _target_of(out.argv), int(read_size)
    return out


def side_by_side(profile: Profile) -> pd.DataFrame:
    """What strace and Darshan counted for the data file: reads, bytes, largest and smallest read."""
    target = profile.target
    calls = profile.strace
    rd = calls[(calls["syscall"] == "read") & (calls["result"].notna())]
    rd = rd[rd["result"] >= 0]
    log = profile.log
    return pd.DataFrame({
        "strace (-e trace=read -P FILE)": [len(rd), int(rd["result"].sum()), int((rd["result"] == 0).sum())],
        "Darshan (POSIX module)": [darshan.counter(log, "POSIX_READS", file=target),
                                   darshan.counter(log, "POSIX_BYTES_READ", file=target), "(not kept)"],
    }, index=["read calls", "bytes", "calls that returned 0 bytes (end of file)"], dtype=object)


def side_by_side_claims(profile: Profile, *, show: bool = True) -> list[Claim]:
    t = side_by_side(profile)
    s, d = t["strace (-e trace=read -P FILE)"], t["Darshan (POSIX module)"]
    return [
        explain.expect("strace and Darshan count the same read calls on the file",
                       explain.within("strace", s["read calls"], "Darshan", d["read calls"], rel=0),
                       yes=f"{int(s['read calls']):,} each", no=f"strace {int(s['read calls']):,}, Darshan {int(d['read calls']):,}",
                       why="Darshan sees only calls made through the C library it wraps; a program that "
                           "makes system calls directly (or through a library linked statically) bypasses it, "
                           "and strace sees those too", show=show),
        explain.expect("they agree on the bytes read too",
                       explain.within("strace", s["bytes"], "Darshan", d["bytes"], rel=0),
                       yes=f"{int(s['bytes']):,} bytes", no=f"strace {int(s['bytes']):,}, Darshan {int(d['bytes']):,}",
                       why="see above: calls that bypass the C library", show=show),
    ]


HOWS = ("plain", "under Darshan", "under strace -c")


def overhead(path: str | os.PathLike[str], read_size: int, *, repeat: int = 5,
             ws: workspace.Workspace | None = None, timeout: float = 300) -> pd.DataFrame:
    """Elapsed seconds of the read loop plain, under Darshan and under ``strace -c``, ``repeat`` times
    each (the three interleaved, so a busy moment hits all three). Columns: how, seconds, repeat,
    calls (read(2) calls the loop makes), read_size, file_size."""
    ws = ws or workspace.session()
    p = Path(path).resolve()
    cmd = read_loop_argv(p, read_size, ws=ws)
    out = ws.path(f".strace-overhead-{uuid.uuid4().hex[:6]}.txt")
    rows = []
    try:
        for i in range(repeat):
            rows.append(("plain", runner.run(cmd, timeout=timeout).seconds, i))
            rows.append(("under Darshan", darshan.run(cmd, _fresh_log(ws, "overhead"), timeout=timeout,
                                                      record=[p]).run.seconds, i))
            rows.append(("under strace -c", strace.run(strace.count_argv(cmd, output=out, follow=False),
                                                       timeout=timeout, cwd=ws.root).seconds, i))
    finally:
        out.unlink(missing_ok=True)
        for q in _logs_dir(ws).glob("overhead-*.darshan"):
            q.unlink(missing_ok=True)
    df = pd.DataFrame(rows, columns=["how", "seconds", "repeat"])
    df["calls"] = expected_reads(p.stat().st_size, read_size)
    df["read_size"] = int(read_size)
    df["file_size"] = p.stat().st_size
    return df


def measure_overhead(path: str | os.PathLike[str] | None, read_size: int, *, repeat: int = 5,
                     recording: str = "overhead-1k-16mib", save_as: str | None = None,
                     setup: str = SETUP, quiet: bool = False) -> recordings.Outcome:
    """:func:`overhead` live (Darshan runtime and strace here), or its recording (the same frame as
    CSV): an Outcome whose ``.frame`` (and ``.data``) is the timings."""
    return recordings.live_or_recorded(
        lambda: _overhead_csv(path, read_size, repeat, save_as), _ref(recording, setup),
        requires=("strace",), unavailable=runtime_problem if path is not None else "no data file given",
        parse=lambda text: pd.read_csv(io.StringIO(text)), quiet=quiet)


def _overhead_csv(path: str | os.PathLike[str], read_size: int, repeat: int, save_as: str | None) -> str:
    text = overhead(path, read_size, repeat=repeat).to_csv(index=False)
    if save_as:
        recordings.save(text, save_as, ext="csv", argv=read_loop_argv(path, read_size),
                        tool_version=f"Darshan {darshan.require_runtime().version}; {runner.tool_version('strace')}",
                        fs_path=Path(path).parent,
                        notes="elapsed seconds of the read loop plain, under Darshan, under strace -c (interleaved)")
    return text


def costs(df: pd.DataFrame) -> pd.DataFrame:
    """The fastest run of each way (the one least disturbed by other programs on a shared machine),
    its extra time over plain, and that extra per read(2) call (µs; start-up and exit costs included)."""
    best = df.groupby("how", sort=False)["seconds"].min().reindex(list(HOWS))
    calls = int(df["calls"].iloc[0])
    plain = best["plain"]
    return pd.DataFrame({"fastest s": best, "extra s": best - plain, "extra %": 100 * (best - plain) / plain,
                         "extra µs per read": 1e6 * (best - plain) / calls})


def overhead_trials(df: pd.DataFrame) -> trials.Trials:
    """:func:`overhead`'s table as :class:`iolab.trials.Trials` (seconds, lower is better), every run
    of each way kept, in the order they ran."""
    return trials.from_values({how: list(df.loc[df["how"] == how, "seconds"]) for how in HOWS
                               if (df["how"] == how).any()}, unit="s", higher=False)


STRACE_BY = 1.5


def overhead_claims(df: pd.DataFrame, *, show: bool = True) -> list[Claim]:
    """Darshan's cost against plain and against strace's, from :func:`overhead`'s table, over every run
    of each way (the rule of :func:`iolab.explain.beyond`: a way is slower only when its fastest run
    is slower than the other's slowest; otherwise too close to call here)."""
    t = overhead_trials(df)
    calls = int(df["calls"].iloc[0])

    def ratio(ev: dict, a: str, b: str) -> str:
        return f"medians {ev[b] / ev[a]:.2f}x" if ev[a] else ""
    noise = (f"what would separate them: more runs, a larger file (more than {calls:,} calls, so Darshan's "
             "per-call cost adds up beyond the run-to-run noise), an idle machine")
    return [
        t.expect(
            f"Darshan's cost shows on this loop of {calls:,} small reads from the page cache: every plain "
            "run is faster than every run under Darshan", "plain", "under Darshan",
            yes=lambda ev: f"{explain.spread_text(t.relation('plain', 'under Darshan'))} "
                           f"({ratio(ev, 'plain', 'under Darshan')})",
            why="on a busy machine one side's runs can all land on quiet moments; the runs were interleaved "
                "to make that unlikely, and more of them would settle it",
            close=f"Darshan's cost is within this machine's run-to-run noise here; {noise}", show=show),
        t.expect(
            "Darshan slows this loop by less than half", "under Darshan", "plain", by=1 / 1.5,
            why="on a busy machine every run can be disturbed; and Darshan's start (the mount table) and exit "
                "(compressing and writing the log) cost a few ms whatever the run", show=show),
        t.expect(
            f"strace -c slows it far more than Darshan: the loop takes at least {STRACE_BY:g}x as long under "
            "strace -c as under Darshan", "under Darshan", "under strace -c", by=STRACE_BY,
            yes=lambda ev: (f"{explain.spread_text(t.relation('under Darshan', 'under strace -c'))}; strace "
                            f"stops the process at every one of the {calls:,} calls"),
            why="with few calls per second strace has little to stop; its cost grows with the call count",
            show=show),
    ]


# --- recording ------------------------------------------------------------------------------------

def record(directory: str, label: str) -> list[str]:
    """Record sections 1-2's runs in a workspace under ``directory``; returns the recording names
    (sections 3-4's: :func:`iolab.lessons.l07_darshan.mpiio.record`)."""
    made: list[str] = []
    with workspace.Workspace(budget="512MiB", base=directory) as ws:
        data = ws.make_file("data-16MiB.bin", "16MiB")
        small = ws.make_file("data-1MiB.bin", "1MiB")
        seed = ws.make_file("data-100000B.bin", 100_000)
        r = recording("readloop-4k-16mib", label)
        profile_read_loop(data, 4096, recording="readloop-4k-16mib", ws=ws, save_as=r)
        made.append(r)
        r = recording("readloop-64k-1mib", label)             # exercise 07
        profile_read_loop(small, 65536, recording="readloop-64k-1mib", ws=ws, save_as=r)
        made.append(r)
        r = recording("readloop-buffered-1b-100000", label)
        profile_read_loop(seed, 1, buffered=True, recording="readloop-buffered-1b-100000", ws=ws, save_as=r)
        made.append(r)
        r = recording("dd-1m-16mib", label)
        profile_dd(data, ws.path("copy.bin"), bs="1MiB", recording="dd-1m-16mib", save_as=r)
        ws.remove("copy.bin")
        made.append(r)
        r = recording("both-read-4k", label)
        both(small, 4096, ws=ws, save_as=r)
        made += [r, r + "-strace"]
        r = recording("overhead-1k-16mib", label)
        measure_overhead(data, 1024, save_as=r)
        made.append(r)
    return made
