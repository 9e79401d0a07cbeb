"""Lesson 07 (Darshan), sections 3-4: IOR under Darshan (-F, with DXT), and what collective MPI-IO sends
down to the file system (:func:`collective`: one case per way of writing IOR's strided pattern, counted
by Darshan or, without its runtime, by strace). What a run under Darshan is (:class:`Profile`), the
recordings' names and where a log comes from are :mod:`iolab.lessons.l07_darshan.profile`'s (sections 1-2);
darshan <- darshan_mpiio.

Mechanisms, checked in the sources:

* IOR's MPIIO backend (aiori-MPIIO.c) writes each transfer with ``MPI_File_write_at`` (independent)
  or, with ``-c``, ``MPI_File_write_at_all`` (collective); a strided pattern ``-t T -b T -s S`` on a
  shared file puts the ranks' pieces of segment ``s`` side by side, so each collective call covers
  one contiguous range of ``tasks x T`` bytes.
* Collective buffering (two-phase I/O): the ranks send their pieces to a few *aggregators*, which
  write large contiguous ranges; the number of aggregators is the ``cb_nodes`` hint. ROMIO's default
  ``romio_cb_write=automatic`` uses it only when the ranks' ranges interleave
  (ad_write_coll.c: ``interleave_count``); ranges side by side do not, so ROMIO then writes each
  piece independently. ``romio_cb_write=enable`` forces it. Open MPI picks OMPIO or ROMIO by
  priority (``ompi_info --param io all --level 9``); ``--mca io ^ompio`` selects ROMIO.
* IOR passes every environment variable ``IOR_HINT__MPI__<hint>=<value>`` to ``MPI_File_open`` as an
  MPI_Info hint (utilities.c, SetHints).

Recording these runs (needs the Darshan runtime, IOR and mpirun): :func:`record`, which
``python -m recorders.l07_darshan`` runs after :func:`iolab.lessons.l07_darshan.profile.record`.
"""
from __future__ import annotations

import re
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from ... import explain, mpi, recordings, workspace
from ...explain import Claim
from ...tools import darshan, ior, strace
from ...units import format_size, parse_size
from .profile import (SETUP, Profile, _fresh_log, _live, _live_provenance, _profile, _ref, _replay, _save,
                      live_reason, recording)


# --- section 3: IOR -F under Darshan, with DXT ------------------------------------------------------

IOR_FPP = ior.Options(api="POSIX", transfer_size="1MiB", block_size="16MiB", segments=1, file_per_process=True)
IOR_TASKS = 2


def _mpi_env_args(variables: dict[str, str]) -> list[str]:
    return darshan.launcher_args(variables, flavour=mpi.flavour())


def _testfile(argv: Sequence[str]) -> str:
    return argv[argv.index("-o") + 1]


def profile_ior(options: ior.Options = IOR_FPP, tasks: int = IOR_TASKS, *, recording: str = "ior-posix-F-dxt",
                dxt: bool = True, ws: workspace.Workspace | None = None, save_as: str | None = None,
                setup: str = SETUP, quiet: bool = False) -> Profile:
    """IOR under Darshan (``-x LD_PRELOAD=...`` for every rank), DXT on; a :class:`Profile` with ``testfile``, ``options``, ``tasks``."""
    def live() -> Profile:
        w = ws or workspace.session()
        log_path = _fresh_log(w, "ior")
        env = darshan.env(log_path, mpi=True, dxt=dxt, record=[w.root])
        rt = darshan.require_runtime()
        res = ior.run(options, tasks, ws=w, launcher_kwargs={"extra": _mpi_env_args(env)})
        r = replace(res.run, tool_version=f"{rt.version}")
        if save_as:
            _save(r, log_path, save_as, argv=res.run.argv, fs_path=w.root,
                  notes=f"IOR {res.version} {' '.join(options.argv(res.version)[1:])} with {tasks} ranks under Darshan"
                        + (" with DXT" if dxt else ""))
        return _live(r, log_path, res.run.argv, ior_version=res.version)

    out = _profile(live, _ref(recording, setup), requires=("ior", "mpirun"), quiet=quiet)
    out.testfile, out.options, out.tasks = _testfile(out.argv), options, tasks
    return out


def per_file(profile: Profile) -> pd.DataFrame:
    """The POSIX rows of IOR's test files: rank, file (name only), writes, reads, bytes."""
    f = darshan.files(profile.log, ["POSIX"])
    stem = profile.testfile
    f = f[f["file"].str.startswith(stem)].copy()
    f["file"] = f["file"].map(lambda s: Path(s).name)
    return f[["rank", "file", "opens", "writes", "reads", "bytes_written", "bytes_read"]].reset_index(drop=True)


def ior_fpp_claims(profile: Profile, *, show: bool = True) -> list[Claim]:
    o, tasks = profile.options, profile.tasks

    per_rank = o.bytes_per_task // parse_size(o.transfer_size)
    f = per_file(profile)
    dxt = darshan.dxt_segments(profile.log)
    dxt = dxt[dxt["file"].str.startswith(profile.testfile)]
    ok = (len(f) == tasks and bool((f["writes"] == per_rank).all()) and bool((f["reads"] == per_rank).all()))
    return [
        explain.expect(
            f"-F gives each of the {tasks} ranks a file of its own, written in block/transfer = {per_rank} writes "
            f"and read back in {per_rank} reads of {format_size(parse_size(o.transfer_size))}",
            explain.fact("one file per rank, as predicted", ok),
            yes=f"{len(f)} files, each with {per_rank} writes and {per_rank} reads, each in its rank's own record",
            no=f"{len(f)} files: " + "; ".join(f"{r.file}: {r.writes} writes, {r.reads} reads" for r in f.itertuples()),
            why="a run with other options (-s, -i, -w only) counts differently", show=show),
        explain.expect(
            "DXT traced every one of those operations, with its offset and times",
            explain.within("DXT segments", len(dxt), "counted operations", int(f["writes"].sum() + f["reads"].sum()), rel=0),
            yes=f"{len(dxt)} segments", no=f"{len(dxt)} segments",
            why="DXT keeps a bounded buffer per process (DARSHAN_MODMEM); a long run can fill it", show=show),
    ]


# --- section 4: collective MPI-IO -----------------------------------------------------------------

MPIIO = ior.Options(api="MPIIO", transfer_size="4KiB", block_size="4KiB", segments=64, write=True, read=False)
MPIIO_TASKS = 4


@dataclass(frozen=True)
class Case:
    """One way to write MPIIO's strided pattern."""

    name: str
    collective: bool
    io: str | None = None                     # Open MPI: None (its default), "ompio" or "romio"
    hints: tuple[tuple[str, str], ...] = ()   # MPI_Info hints, through IOR_HINT__MPI__<hint>

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


CASES = (
    Case("independent", False),
    Case("collective", True),
    Case("collective, cb_nodes=2", True, hints=(("cb_nodes", "2"),)),
    Case("collective, ROMIO", True, io="romio"),
    Case("collective, ROMIO, romio_cb_write=enable", True, io="romio", hints=(("romio_cb_write", "enable"),)),
)


def _io_args(case: Case) -> list[str]:
    if mpi.flavour() != "openmpi":
        return []
    out = ["--mca", "io_base_verbose", "10"]           # says which io component was selected (stderr)
    if case.io == "ompio":
        out += ["--mca", "io", "ompio"]
    elif case.io == "romio":
        out += ["--mca", "io", "^ompio"]
    return out


_SELECTED = re.compile(r"io:base:file_select: Selected io (?:module|component) (\w{1,100})\s*$", re.M)


def implementations(stderr: str) -> list[str]:
    """The MPI-IO components Open MPI selected (``--mca io_base_verbose``), e.g. ["ompio"]. Only whole lines
    count: a last line without its newline may hold a name cut short ("omp")."""
    return sorted(set(_SELECTED.findall(stderr[:stderr.rfind("\n") + 1])))


@dataclass
class Written:
    """What one case sent down to the file system."""

    case: Case
    method: str                  # "darshan" | "strace"
    mode: str
    provenance: str
    posix_writes: int
    posix_bytes: int
    mpi_calls: int | None        # MPI-IO write calls (Darshan only)
    implementation: list[str]
    log: darshan.Log | None = None
    testfile: str = ""


def _count_darshan(case: Case, ws: workspace.Workspace, options: ior.Options, tasks: int,
                   save_as: str | None) -> Written:
    log_path = _fresh_log(ws, case.slug)
    env = darshan.env(log_path, mpi=True, record=[ws.root])
    env.update({f"IOR_HINT__MPI__{k}": v for k, v in case.hints})
    rt = darshan.require_runtime()
    o = replace(options, extra=options.extra + (("-c",) if case.collective else ()))
    res = ior.run(o, tasks, ws=ws, launcher_kwargs={"extra": _io_args(case) + _mpi_env_args(env)})
    r = replace(res.run, tool_version=rt.version)
    log = darshan.read_log(log_path)
    if save_as:
        _save(r, log_path, save_as, argv=r.argv, fs_path=ws.root,
              notes=f"IOR {res.version} MPIIO strided writes, {tasks} ranks, case '{case.name}', under Darshan")
        recordings.save(r, save_as + "-stderr", ext="txt", stream="stderr", fs_path=ws.root,
                        notes="mpirun's stderr of the same run (io_base_verbose: the io component selected)")
    return _written(case, log, _testfile(r.argv), "live", _live_provenance(r), implementations(r.stderr))


def _written(case: Case, log: darshan.Log, testfile: str, mode: str, prov: str, impl: list[str]) -> Written:
    calls = sum(darshan.counter(log, c, file=testfile) for c in
                ("MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"))
    return Written(case, "darshan", mode, prov, darshan.counter(log, "POSIX_WRITES", file=testfile),
                   darshan.counter(log, "POSIX_BYTES_WRITTEN", file=testfile), calls, impl, log, testfile)


def _count_strace(case: Case, ws: workspace.Workspace, options: ior.Options, tasks: int) -> Written:
    """The same run without Darshan: strace -f follows mpirun's ranks and records every write call on the
    test file (-P), with the bytes each one wrote."""
    d = ws.mkdir(f"mpiio-{uuid.uuid4().hex[:6]}")
    test_file = d / "testfile"
    out = d / "strace.txt"
    o = replace(options, test_file=str(test_file), extra=options.extra + (("-c",) if case.collective else ()))
    env = {f"IOR_HINT__MPI__{k}": v for k, v in case.hints}
    calls = ["write", "pwrite64", "pwritev", "pwritev2"]

    def wrap(argv: list[str]) -> list[str]:
        return strace.trace_argv(argv, output=out, follow=True, syscalls=calls, paths=[test_file])

    try:
        res = ior.run(o, tasks, ws=ws, wrap=wrap,
                      launcher_kwargs={"extra": _io_args(case) + (_mpi_env_args(env) if env else [])})
        rows = [c for c in strace.parse_calls(out.read_text(), events=False)
                if c["syscall"] in calls and c["result"] is not None and c["result"] >= 0] if out.exists() else []
    finally:
        ws.remove(d)
    prov = (f"LIVE run here ({socket.gethostname()}, {res.run.started:%Y-%m-%d %H:%M} UTC, {res.run.seconds:.2f} s), "
            f"counted with strace (no Darshan runtime here): {' '.join(res.run.argv[:6])} ...")
    return Written(case, "strace", "live", prov, len(rows), int(sum(c["result"] for c in rows)), None,
                   implementations(res.run.stderr), None, str(test_file))


@dataclass
class Writes(recordings.Outcome):
    """The MPI-IO cases of :func:`collective`, run or replayed: ``frame`` one row per case, ``written``
    each case's :class:`Written`, and what every case ran with."""

    written: list[Written] = field(default_factory=list)
    tasks: int = 0                      # MPI ranks
    segments: int = 0                   # IOR's -s: one collective call per segment
    transfer: int = 0                   # IOR's -t, bytes


def collective(cases: Sequence[Case] = CASES, *, options: ior.Options = MPIIO, tasks: int = MPIIO_TASKS,
               method: str | None = None, ws: workspace.Workspace | None = None, save_prefix: str | None = None,
               setup: str = SETUP, quiet: bool = False) -> Writes:
    """Run (or replay) each case: a :class:`Writes` whose ``frame`` has one row per case: case,
    posix_writes, posix_bytes, bytes_per_write, mpi_calls, implementation, method, mode; ``written``
    the :class:`Written` of each case, and the run's ``tasks``, ``segments`` and ``transfer`` size.

    ``method``: "darshan" (needs the runtime), "strace" (counts pwrite calls on the test file), or None:
    Darshan when its runtime is here, else strace when strace is, else the recorded Darshan logs.
    Cases that choose an io component run live only with Open MPI.
    """
    reason = live_reason(("ior", "mpirun"))
    if method is None:
        if reason is None:
            method = "darshan"
        elif darshan.find_runtime() is None and recordings.replay_reason(("ior", "mpirun", "strace"),
                                                                          strict=False) is None:
            method, reason = "strace", None
        else:
            method = "replay"
    elif method == "darshan" and reason is not None:
        method = "replay"
    out: list[Written] = []
    ws = ws or workspace.session()
    for case in cases:
        if method != "replay" and case.io is not None and mpi.flavour() != "openmpi":
            if not quiet:
                print(f"{case.name}: skipped (choosing the io component is an Open MPI option)")
            continue
        if method == "darshan":
            w = _count_darshan(case, ws, options, tasks, f"{save_prefix}-{case.slug}-{setup}" if save_prefix else None)
        elif method == "strace":
            w = _count_strace(case, ws, options, tasks)
        else:
            ref = recording(f"mpiio-{case.slug}", setup)
            log, prov, rec = _replay(ref, reason or "IOLAB_MODE=replay")
            try:
                impl = implementations(recordings.load(ref + "-stderr").text)
            except FileNotFoundError:
                impl = []
            w = _written(case, log, _testfile(rec.meta["argv"]), "replay", prov, impl)
        out.append(w)
        if not quiet:
            print(f"{case.name}: {w.provenance}")
    df = pd.DataFrame([{"case": w.case.name, "posix_writes": w.posix_writes, "posix_bytes": w.posix_bytes,
                        "bytes_per_write": w.posix_bytes / w.posix_writes if w.posix_writes else float("nan"),
                        "mpi_calls": w.mpi_calls, "implementation": ", ".join(w.implementation) or "?",
                        "method": w.method, "mode": w.mode} for w in out])
    modes = {w.mode for w in out}
    return Writes(mode=modes.pop() if len(modes) == 1 else "mixed", text="",
                  provenance="\n".join(dict.fromkeys(w.provenance for w in out)), frame=df, written=out,
                  tasks=tasks, segments=options.segments, transfer=parse_size(options.transfer_size))


def written(writes: Writes, case: str) -> Written:
    """The :class:`Written` of one case of :func:`collective`, by its name."""
    return next(w for w in writes.written if w.case.name == case)


def collective_claims(writes: Writes, *, show: bool = True) -> list[Claim]:
    """The write counts of :func:`collective`, as claims."""
    tasks, segments, t = writes.tasks, writes.segments, writes.transfer
    rows = writes.frame.set_index("case")
    claims: list[Claim] = []

    def n(name: str) -> float | None:
        return float(rows.loc[name, "posix_writes"]) if name in rows.index else None

    indep, coll = n("independent"), n("collective")
    impl = rows["implementation"].get("collective", "?") if "collective" in rows.index else "?"
    claims.append(explain.expect(
        f"independent I/O sends one POSIX write per rank and segment: {tasks} x {segments} = {tasks * segments} "
        f"writes of {format_size(t)}",
        explain.within("independent writes", indep, "predicted", tasks * segments, rel=0),
        yes=f"{indep:.0f} writes", no=f"{indep:.0f} writes" if indep is not None else "",
        why="the MPI library may sieve or merge independent writes (data sieving), or the run failed part-way",
        show=show))
    claims.append(explain.expect(
        "collective I/O reaches the file system in fewer, larger writes",
        explain.greater("independent writes", indep, "collective writes", coll),
        yes=(f"{coll:.0f} writes of {rows.loc['collective', 'bytes_per_write']:,.0f} bytes against {indep:.0f} of "
             f"{format_size(t)}: {impl or 'the MPI-IO layer'} gathered the ranks' pieces into "
             f"{indep / coll:.0f}-times larger writes" if indep and coll else ""),
        no=f"{coll:.0f} collective writes against {indep:.0f} independent ones" if indep and coll else "",
        why="an MPI-IO implementation may decide collective buffering does not pay (ROMIO's 'automatic' does "
            "so when the ranks' pieces do not interleave) and write each piece as it comes",
        show=show))
    if coll:
        agg = coll / segments
        claims.append(explain.expect(
            "the collective writes are one per segment and aggregator, each covering whole pieces of the ranks",
            explain.fact("whole multiple of the segments", agg == round(agg) and agg >= 1),
            yes=f"{coll:.0f} = {segments} segments x {agg:.0f} aggregator{'s' if agg != 1 else ''}",
            no=f"{coll:.0f} writes for {segments} segments",
            why="an aggregator's buffer (cb_buffer_size) smaller than its share of a call splits the write",
            show=show))
    cb2 = n("collective, cb_nodes=2")
    if cb2 is not None and coll:
        claims.append(explain.expect(
            f"the hint cb_nodes=2 asks for two aggregators, so each collective call becomes two writes: "
            f"2 x {segments} = {2 * segments}",
            explain.within("cb_nodes=2 writes", cb2, "predicted", 2 * segments, rel=0),
            yes=f"{cb2:.0f} writes of {rows.loc['collective, cb_nodes=2', 'bytes_per_write']:,.0f} bytes",
            no=f"{cb2:.0f} writes with cb_nodes=2, {coll:.0f} without",
            why="an implementation may ignore a hint it does not know or cannot honour (ROMIO places at most "
                "one aggregator per node unless cb_config_list says otherwise)", show=show))
    romio, enable = n("collective, ROMIO"), n("collective, ROMIO, romio_cb_write=enable")
    if romio is not None and indep is not None:
        claims.append(explain.expect(
            "ROMIO's default (romio_cb_write=automatic) leaves these collective writes independent: the ranks' "
            "pieces lie side by side and never interleave, so it skips collective buffering",
            explain.within("ROMIO collective", romio, "independent", indep, rel=0),
            yes=f"{romio:.0f} writes, as many as independent I/O", no=f"{romio:.0f} writes",
            why="this ROMIO decided differently (a newer ROMIO, or hints set by the site through ROMIO_HINTS)",
            show=show))
    if enable is not None and coll:
        claims.append(explain.expect(
            "romio_cb_write=enable forces collective buffering: ROMIO then gathers the pieces too, and writes "
            "fewer times than with its default",
            explain.greater("ROMIO default writes", romio, "ROMIO enable writes", enable) if romio else
            explain.fact("fewer writes", None),
            yes=f"{enable:.0f} writes of {rows.loc['collective, ROMIO, romio_cb_write=enable', 'bytes_per_write']:,.0f} bytes",
            no=f"{enable:.0f} writes", why="the hint did not reach ROMIO (check --mpiio.showHints)", show=show))
    return claims


def other_files(log: darshan.Log | None, testfile: str) -> pd.DataFrame:
    """The files a log names besides IOR's test file(s): module, file, rank, opens, writes, bytes_written."""
    if log is None:
        return pd.DataFrame(columns=["module", "file", "rank", "opens", "writes", "bytes_written"])
    f = darshan.files(log)
    ior_files = f["file"].map(lambda n: n == testfile or re.fullmatch(re.escape(testfile) + r"\.\d{8}", n) is not None)
    f = f[~ior_files]
    return f[["module", "file", "rank", "opens", "writes", "bytes_written"]].reset_index(drop=True)


def other_files_claims(log: darshan.Log | None, testfile: str, *, show: bool = True) -> list[Claim]:
    """Did the MPI job touch files of its own besides the one IOR wrote? (None: no log, counted by strace.)"""
    if log is None:
        return [explain.expect("the log names files IOR itself never asked for: the MPI library's own",
                               explain.fact("other files", None),
                               missing="these counts came from strace, filtered to the test file: there is no "
                                       "Darshan log to list the other files", show=show)]
    f = other_files(log, testfile)
    f = f[~f["file"].str.startswith("<")]
    names = sorted({Path(n).name for n in f["file"]})
    return [explain.expect(
        "the log names files IOR itself never asked for: the MPI library's own",
        explain.fact("other files", len(names) > 0),
        yes=f"{len(names)} of them: {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}",
        no="only IOR's test file (and the standard streams)",
        why="the MPI-IO implementation that ran made no helper files: Open MPI's OMPIO makes them when it opens "
            "a file (its shared-file-pointer components: .locktest.<rank> files to test locking, .sm files in its "
            "session directory), ROMIO makes none for this run", show=show)]


# --- recording ------------------------------------------------------------------------------------

def record(directory: str, label: str) -> list[str]:
    """Record sections 3-4's runs in a workspace under ``directory``; returns the recording names
    (sections 1-2's: :func:`iolab.lessons.l07_darshan.profile.record`)."""
    made: list[str] = []
    with workspace.Workspace(budget="512MiB", base=directory) as ws:
        r = recording("ior-posix-F-dxt", label)
        profile_ior(ws=ws, save_as=r)
        made.append(r)
        collective(ws=ws, method="darshan", save_prefix="darshan/mpiio", setup=label)
        made += [recording(f"mpiio-{c.slug}", label) for c in CASES]
    return made
