"""Lesson 05 with lesson 03's strace: what mdtest's options really do, call by call.

``strace -f -c`` of a whole mdtest run counts its sync calls (what ``-y`` does); ``strace -T -P`` of one
mdtest process times the calls behind one file; ``strace -f -T`` of a whole run times each ``unlink``
and ``rmdir``. Each live (mdtest, mpirun and strace here) or replayed, an
:class:`~iolab.recordings.Outcome` whose ``.frame`` is the parsed calls.
"""
from __future__ import annotations

import os
import re
import uuid
from dataclasses import replace
from typing import Any

import pandas as pd

from ... import mpi, recordings, runner, workspace
from ...errors import ParseError, ToolFailed, ToolMissing
from ...runner import Run
from ...tools import mdtest, strace

# --- the syscalls behind one file (lesson 03's strace, on mdtest) -------------------------------

# one file per iteration: the first is a warm-up (the process's first file pays for what comes once: its
# first page faults, the first directory entries), the next five are the trials the claims compare
ONE_FILE = mdtest.Options(files=1, iterations=6, files_only=True, write_bytes=4096, sync=True)


def one_file_trace(on: str | os.PathLike[str] | None = None, *, exe: str = "mdtest", timeout: float = 120) -> Run:
    """strace of one mdtest rank creating, writing (4 KiB), fsyncing, stat-ing, opening and removing one
    file in each of :data:`ONE_FILE`'s iterations; only the syscalls on those files (``strace -P``), so
    the MPI start-up noise is left out.

    mdtest runs as a single MPI process (no mpirun). Returns the strace Run (stdout = the trace).
    """
    if runner.which(exe) is None:
        raise ToolMissing(exe, runner.install_hint(exe))
    space = workspace.Workspace(budget="16MiB", base=on, prefix=".iolab-mdtest-") if on is not None \
        else workspace.Workspace(budget="16MiB")
    with space:
        target = space.path("mdtest")
        # mdtest's own naming (3.3 and 4.0): rank 0's first file in the tree of iteration j
        files = [target / f"test-dir.{j}-0" / "mdtest_tree.0" / "file.mdtest.0.0" for j in range(ONE_FILE.iterations)]
        out = space.path("trace.txt")
        argv = strace.trace_argv(replace(ONE_FILE, directory=str(target)).argv(exe), output=out,
                                 paths=files, strsize=16)
        return strace.run(argv, timeout=timeout, cwd=space.root)


_ITERATION = re.compile(r"/test-dir\.(\d{1,9})-\d{1,9}/")


def one_file_calls(text: str) -> pd.DataFrame:
    """The syscalls of a :func:`one_file_trace` text, in order: syscall, duration (s), result, path, and
    ``trial`` (mdtest's iteration, from the path), ``step`` (the call's place in its trial: 0 is the
    ``openat(O_CREAT)``) and ``warmup`` (mdtest's first iteration, 0).
    A trace that ends inside a line (cut short) raises ParseError (:func:`strace.parse_calls`)."""
    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    df = df[["syscall", "duration", "result", "path", "args"]].reset_index(drop=True)
    trial = [int(m.group(1)) if (m := _ITERATION.search(str(p))) else 0 for p in df["path"]]
    df["trial"] = trial
    df["step"] = df.groupby("trial").cumcount()
    df["warmup"] = df["trial"] == 0          # a row's own fact, so that a trace cut short parses to a prefix
    return df


def per_call(calls: pd.DataFrame) -> pd.DataFrame:
    """One row per call of a file's life (step, syscall), over the trials that are not a warm-up (all of
    them in a trace of one file): how many trials, median, fastest and slowest µs."""
    measured = calls[~calls["warmup"]] if "warmup" in calls and not calls["warmup"].all() else calls
    g = measured.assign(us=measured["duration"] * 1e6).groupby(["step", "syscall"], sort=True)["us"]
    return g.agg(trials="count", median_us="median", min_us="min", max_us="max").reset_index()


def trace_one_file(on: str | os.PathLike[str] | None, *, recording: str, quiet: bool = False) -> recordings.Outcome:
    """:func:`one_file_trace` live (mdtest and strace here), or its recording; ``.frame`` (and ``.data``)
    is the calls."""
    return recordings.live_or_recorded(lambda: one_file_trace(on), recording, requires=("mdtest", "strace"),
                                       parse=one_file_calls, quiet=quiet)


# --- what -y really does: fsync calls counted, removals timed (strace around the MPI run) --------

# the calls that push data or metadata to the device, and the ones that create and remove mdtest's
# items (they are always there, so strace -c always has a table to print: 0 fsync is a result)
SYNC_CALLS = ("fsync", "fdatasync", "sync", "syncfs", "sync_file_range")
ITEM_CALLS = ("mkdir", "rmdir", "unlink")
REMOVAL_CALLS = ("unlink", "rmdir", "fsync")


def _traced(options: mdtest.Options, tasks: int, *, on: str | os.PathLike[str], make_argv,
            launcher: str = "mpirun", exe: str = "mdtest", timeout: float = 300) -> Run:
    """mdtest under strace (``make_argv(command, output_file)`` builds the strace argv), in a private
    workspace on ``on``. The Run's stdout is strace's output; its ``tool_version`` names both, e.g.
    "4.0.0 (under strace -- version 6.1)"."""
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
        version = mdtest.installed_version(exe)
        return replace(r, tool_version=f"{version} (under {r.tool_version})")


def count_syncs(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str], **kwargs: Any) -> Run:
    """``strace -f -c`` of a whole mdtest run (launcher and ranks), counting :data:`SYNC_CALLS` and
    :data:`ITEM_CALLS`. Parse with :func:`sync_counts`."""
    return _traced(options, tasks, on=on, make_argv=lambda cmd, out: strace.count_argv(
        cmd, output=out, follow=True, syscalls=[*SYNC_CALLS, *ITEM_CALLS]), **kwargs)


def sync_counts(text: str) -> pd.DataFrame:
    """An strace -c table of :func:`count_syncs` -> syscall, calls: every call of SYNC_CALLS and
    ITEM_CALLS, with 0 for those strace did not list (it prints only calls that happened)."""
    rows = {r["syscall"]: int(r["calls"]) for r in strace.parse_summary(text)}
    names = [*SYNC_CALLS, *ITEM_CALLS, *sorted(set(rows) - set(SYNC_CALLS) - set(ITEM_CALLS))]
    return pd.DataFrame({"syscall": names, "calls": [rows.get(n, 0) for n in names]})


def measure_syncs(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                  quiet: bool = False) -> recordings.Outcome:
    """:func:`count_syncs` on ``path`` live, or its recording; ``.frame`` (and ``.data``) is :func:`sync_counts`."""
    return recordings.live_or_recorded(lambda: count_syncs(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=sync_counts, quiet=quiet)


def trace_removals(options: mdtest.Options, tasks: int = 2, *, on: str | os.PathLike[str], **kwargs: Any) -> Run:
    """``strace -f -tt -T`` of a whole mdtest run, only :data:`REMOVAL_CALLS` (each with its time).
    Parse with :func:`removal_calls`."""
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
    df = strace.calls_frame(strace.parse_calls(text, events=False))
    if not len(df):
        raise ParseError("no system call in this trace", line_no=1, line=text.splitlines()[0] if text else "")
    df = df.assign(item=df["path"].map(_item_kind))
    df = df[df["item"].notna()]
    if not len(df):
        raise ParseError("no call on mdtest's items (test-dir.*) in this trace", line_no=1,
                         line=text.splitlines()[0])
    return df[["syscall", "item", "duration", "pid", "path"]].reset_index(drop=True)


def measure_removals(path: str | os.PathLike[str], options: mdtest.Options, *, tasks: int = 2, recording: str,
                     quiet: bool = False) -> recordings.Outcome:
    """:func:`trace_removals` on ``path`` live, or its recording; ``.frame`` (and ``.data``) is
    :func:`removal_calls`."""
    return recordings.live_or_recorded(lambda: trace_removals(options, tasks, on=path), recording,
                                       requires=("mdtest", "mpirun", "strace"), parse=removal_calls, quiet=quiet)


def removal_summary(calls: pd.DataFrame) -> pd.DataFrame:
    """Per syscall and item (file, directory, tree directory): how many calls, median and max µs."""
    g = calls.groupby(["syscall", "item"], sort=False)["duration"]
    out = g.agg(calls="count", median_us="median", max_us="max").reset_index()
    out[["median_us", "max_us"]] *= 1e6
    return out
