"""Lesson 08, IOR on the lesson's cluster: seed 001's ``-C`` with its two ranks on two clients (section
2b), and IOR's own CEPHFS backend, libcephfs in each rank and no mount (section 6b).

Each section returns a :class:`~iolab.lessons.l08_parallel_fs.sections.Section`, as the lesson's other sections do
(:mod:`iolab.lessons.l08_parallel_fs.sections`): its document keeps IOR's output verbatim and the OSDs' perf dumps
around each run, and replays through the same parser when the cluster, mpirun or a suitable IOR is
not here.
"""
from __future__ import annotations

import functools
import glob
import os
from pathlib import Path

import pandas as pd

from ... import explain, mpi, runner, safeio, trials, workspace
from ...ceph import Cluster
from ...errors import ParseError
from ...tools import ior
from ...units import MiB, format_size
from .sections import OSD_R, OSD_W, TRIALS, Section, _osd_delta, _osds, _section, _spread, trials_claim


# --- 2b. seed 001 with two clients: IOR -C reads the other node's data from the OSDs ---------------------

IOR_BLOCK = 8 * MiB                     # per rank; rank 0 on node A, rank 1 on node B, a file each (-F)
IOR_STEPS = ("own file (no -C)", "the other node's file (-C)")


def _ior_argv(c: Cluster, test: str, opts: ior.Options) -> list[str]:
    """mpirun with one IOR rank per mount (MPMD): rank 0's test file on node A, rank 1's on node B, the
    same CephFS directory seen through two clients. -O numTasksOnNode0=1 tells IOR one task per node
    (lesson 04's rule), so -C -Q 1 moves each rank to the other rank's file."""
    version = ior.installed_version("ior")
    argv = mpi.launcher_argv(1, extra=["--oversubscribe"] if mpi.flavour() in ("openmpi", "unknown") else [])
    for i, node in enumerate("ab"):
        part = ior.Options(**{**opts.__dict__, "test_file": str(c.mounts[node] / "ior" / test / "f")}).argv(version)
        argv += part if i == 0 else [":", "-np", "1", *part]
    return argv


def _ior_live(c: Cluster) -> dict:
    c.check_mounted("a")
    c.check_mounted("b")
    base = dict(api="POSIX", transfer_size=MiB, block_size=IOR_BLOCK, file_per_process=True, keep_file=True,
                tasks_per_node=1)
    env = mpi.runtime_env(c.ws.mkdir("ior-mpi"))
    runs = []
    for trial in range(TRIALS):
        test = f"t{trial}"
        (c.mounts["a"] / "ior" / test).mkdir(parents=True, exist_ok=True)
        c.ws.reserve(2 * IOR_BLOCK)
        for step in IOR_STEPS:
            # the write and the read of each rank's own file are one IOR run (-w -r): writes add nothing to
            # the OSDs' read counter, so its difference is the read's; the -C read is a run of its own
            minus_c = step.endswith("(-C)")
            opts = ior.Options(**base, write=not minus_c, reorder_tasks=minus_c, task_offset=1 if minus_c else None)
            before = _osds(c)
            r = runner.run(_ior_argv(c, test, opts), timeout=120, env=env)
            runs.append({"trial": trial + 1, "step": step, "argv": r.argv, "stdout": r.stdout,
                         "perf_before": before, "perf_after": _osds(c)})
    return {"block_per_rank": IOR_BLOCK, "ranks": 2, "ior_version": ior.installed_version("ior"), "trials": runs}


def _ior_trials(text: str, what: str, row) -> pd.DataFrame:
    """A section document of IOR runs -> one row per trial, ``row(trial, block, ranks)`` each; a document
    that is not one (a missing or wrong-typed field, no trial) raises ParseError naming ``what``."""
    doc = safeio.loads(text, what=what)
    try:
        block, ranks = doc["block_per_rank"], doc["ranks"]
        if not all(type(x) is int and x > 0 for x in (block, ranks)):
            raise ParseError(f"block_per_rank and ranks must be positive whole numbers, got {block!r}, {ranks!r}")
        rows = [row(t, block, ranks) for t in doc["trials"]]
    except ParseError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise ParseError(f"{what}: {type(e).__name__}: {e}") from None
    if not rows:
        raise ParseError(f"{what}: no trials")
    return pd.DataFrame(rows)


def _ior_results(t: dict, where: str, access: str) -> list[dict]:
    """IOR's ``access`` results in a trial's stdout, its ParseError prefixed with ``where``."""
    try:
        res = [r for r in ior.parse(t["stdout"]) if r.get("access") == access]
    except ParseError as e:
        raise ParseError(f"{where}: {e}") from None
    if not res:
        raise ParseError(f"{where}: IOR printed no {access} result")
    return res


def parse_ior(text: str) -> pd.DataFrame:
    """Section 2b's document -> one row per IOR read: its rate, its task ordering (-C moves ranks or not)
    and what the OSDs sent during it. A document that is not one, or a trial with no IOR read result,
    raises ParseError."""
    def row(t: dict, block: int, ranks: int) -> dict:
        where = f"trial {t['trial']!r} ({t['step']!r})"
        if type(t["trial"]) is not int or not isinstance(t["step"], str):
            raise ParseError(f"{where}: not a trial of this section")
        res = _ior_results(t, where, "read")
        try:
            facts = ior.reorder_facts(t["stdout"])
        except ParseError as e:
            raise ParseError(f"{where}: {e}") from None
        if set(t["perf_before"]) != set(t["perf_after"]):
            raise ParseError(f"{where}: the OSDs' counters before and after the run do not match")
        sent = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_R).values())
        if sent < 0:
            raise ParseError(f"{where}: the OSDs' read counters went down during the run")
        return {"trial": t["trial"], "step": t["step"], "mib_per_s": float(res[0]["bw_mib"]),
                "bytes": block * ranks, "ordering": facts["ordering"],
                "tasks_per_node": facts["tasks_per_node"], "osd_bytes_sent": sent}

    return _ior_trials(text, "IOR -C section document", row)


def ior_two_clients(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """Seed 001's -C, with the ranks on two clients: the read of the other node's file comes from the OSDs."""
    return _section(cluster, "ior", _ior_live, parse_ior, ior_two_clients_claims, show=show,
                    requires=("ior", "mpirun"), witness=True)


def ior_two_clients_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    own, other = (df[df["step"] == s] for s in IOR_STEPS)
    size = int(df["bytes"].iloc[0])
    return [explain.expect(
        "without -C each rank reads back the file its own client wrote: that client's caches answer, the OSDs "
        "send (almost) nothing",
        explain.fact("the OSDs sent under 1 MiB in every read without -C", bool((own["osd_bytes_sent"] < MiB).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in own['osd_bytes_sent']], ',.1f')} MiB for {format_size(size)} read",
        no=f"the OSDs sent {_spread([x / MiB for x in own['osd_bytes_sent']], ',.1f')} MiB",
        why="memory pressure evicted the client's pages and its object cache", show=show),
        explain.expect(
        "with -C (one task per node, -Q 1) each rank reads the file the other node's client wrote: every byte "
        "comes from the OSDs",
        explain.fact("the OSDs sent the whole size in every -C read", bool((other["osd_bytes_sent"] >= size).all())),
        yes=f"the OSDs sent {_spread([x / MiB for x in other['osd_bytes_sent']], ',.1f')} MiB for {format_size(size)} read",
        no=f"the OSDs sent {_spread([x / MiB for x in other['osd_bytes_sent']], ',.1f')} MiB",
        why="IOR did not move the ranks (tasks per node not 1, or no -Q), or a client had the file cached", show=show),
        trials_claim("IOR's read rate is higher without -C (a cache on the node) than with it (the OSDs)",
                "no -C", list(own["mib_per_s"]), "-C", list(other["mib_per_s"]), "MiB/s",
                keep=keep, key="read", show=show)]


# --- 6b. IOR's own CEPHFS backend: libcephfs in each rank, no mount ----------------------------------

CEPHFS_BLOCK = 1 * MiB                  # per rank, in 4 KiB transfers, fsync at the end (-e)
CEPHFS_TRANSFER = 4096
CEPHFS_SETTINGS = {                     # setting -> IOR's own options for it (besides -a, -t, -b, -o)
    "CEPHFS, one shared file": ["-a", "CEPHFS"],
    "CEPHFS, a file per rank (-F)": ["-a", "CEPHFS", "-F"],
    "CEPHFS, shared, --cephfs.olazy": ["-a", "CEPHFS", "--cephfs.olazy"],
    "POSIX on node A's mount, one shared file": ["-a", "POSIX"],
}
CEPHFS_BUILD = (
    "build IOR with the CEPHFS backend (IOR 3.3.0 or 4.0.0; needs libcephfs-dev and librados-dev): "
    "./bootstrap && ./configure --prefix=/tmp/ior-4.0.0-cephfs --with-cephfs CC=mpicc && make install, after "
    "seed 001's one-line change to src/aiori-CEPHFS.c (line 17: #ifdef HAVE_CONFIG_H becomes #ifndef "
    "HAVE_CONFIG_H; or add #include <sys/time.h> before <cephfs/libcephfs.h>): without it the build stops "
    "at libcephfs.h's 'struct timeval'. Put its bin/ on PATH or leave it in /tmp/ior-<version>-cephfs/bin")


CEPHFS_IOR_GLOB = "/tmp/ior-*-cephfs/bin/ior"     # where the lesson looks, after PATH


@functools.lru_cache(maxsize=8)
def _lists_cephfs(exe: str) -> bool:
    with workspace.Workspace(budget="1MiB") as w:
        r = runner.run([exe, "--help"], timeout=60, env=mpi.runtime_env(w.root, singleton=True), check=False)
    return any(line.lstrip().startswith("-a=") and "CEPHFS" in line for line in (r.stdout + r.stderr).splitlines())


def cephfs_ior() -> str | None:
    """An IOR built with the CEPHFS backend (its ``--help`` lists CEPHFS among ``-a``'s choices): the
    ``ior`` on PATH, else /tmp/ior-*-cephfs/bin/ior (newest name first); None when there is none."""
    found = runner.which("ior")
    candidates = [found] if found else []
    candidates += sorted(glob.glob(CEPHFS_IOR_GLOB), reverse=True)
    for exe in candidates:
        if os.access(exe, os.X_OK) and _lists_cephfs(exe):
            return exe
    return None


def _cephfs_argv(c: Cluster, exe: str, conf: Path, setting: str, test_file: Path) -> list[str]:
    # -g: a barrier between the open and the writes, so that every rank has the file open before any
    # writes (without it one client may write its whole block alone, buffered, before the other opens)
    argv = [exe, *CEPHFS_SETTINGS[setting], "-t", "4k", "-b", ior.ior_size(CEPHFS_BLOCK), "-w", "-e", "-g"]
    if "-a" in argv and argv[argv.index("-a") + 1] == "CEPHFS":
        # --cephfs.prefix is required (IOR 3.3.0 and 4.0.0 crash without it): IOR strips it from -o, so the
        # same path names the file through the mount (POSIX) and inside CephFS (libcephfs)
        argv += ["--cephfs.user=admin", f"--cephfs.conf={conf}", f"--cephfs.prefix={c.mounts['a']}"]
    extra = ["--oversubscribe"] if mpi.flavour() in ("openmpi", "unknown") else []
    return mpi.command(argv + ["-o", str(test_file)], 2, extra=extra)


def _cephfs_live(c: Cluster, exe: str) -> dict:
    a = c.check_mounted("a")
    assert c.conf is not None and c.keyring is not None
    # the cluster's configuration and where libcephfs finds client.admin's key (IOR passes no keyring)
    conf = c.dir / "ior-cephfs.conf"
    conf.write_text(c.conf.read_text() + f"\n[client.admin]\nkeyring = {c.keyring}\n")
    conf.chmod(0o600)
    env = mpi.runtime_env(c.ws.mkdir("ior-cephfs-mpi"))
    c.ws.reserve(2 * CEPHFS_BLOCK)                  # IOR removes its files after each run (no -k)
    runs = []
    for trial in range(TRIALS):
        for i, setting in enumerate(CEPHFS_SETTINGS):
            d = a / "ior-cephfs" / f"t{trial}-{i}"
            d.mkdir(parents=True, exist_ok=True)
            before = _osds(c)
            r = runner.run(_cephfs_argv(c, exe, conf, setting, d / "f"), timeout=180, env=env)
            runs.append({"trial": trial + 1, "setting": setting, "argv": r.argv, "stdout": r.stdout,
                         "seconds": r.seconds, "perf_before": before, "perf_after": _osds(c)})
    return {"block_per_rank": CEPHFS_BLOCK, "transfer": CEPHFS_TRANSFER, "ranks": 2, "ior": exe,
            "ior_version": ior._installed_version(exe), "trials": runs}


def parse_cephfs(text: str) -> pd.DataFrame:
    """The section's document -> one row per IOR run: its write rate, and what the OSDs took (bytes and
    write operations, from their perf dumps around the run). A document that is not one, or a run with
    no IOR write result, raises ParseError."""
    def row(t: dict, block: int, ranks: int) -> dict:
        where = f"trial {t['trial']!r} ({t['setting']!r})"
        if t["setting"] not in CEPHFS_SETTINGS or type(t["trial"]) is not int:
            raise ParseError(f"{where}: not a trial of this section")
        res = _ior_results(t, where, "write")
        ops = sum(_osd_delta(t["perf_before"], t["perf_after"], "osd.op_w").values())
        nbytes = sum(_osd_delta(t["perf_before"], t["perf_after"], OSD_W).values())
        if set(t["perf_before"]) != set(t["perf_after"]) or ops < 0 or nbytes < 0:
            raise ParseError(f"{where}: the OSDs' counters before and after the run do not match")
        return {"trial": t["trial"], "setting": t["setting"], "mib_per_s": float(res[0]["bw_mib"]),
                "bytes": block * ranks, "osd_bytes_in": nbytes, "osd_write_ops": ops,
                "kib_per_osd_write": nbytes / ops / 1024 if ops else float("nan")}

    return _ior_trials(text, "IOR CEPHFS section document", row)


def ior_cephfs(cluster: Cluster | None = None, *, show: bool = True) -> Section:
    """IOR's CEPHFS backend (each rank its own libcephfs client, no mount) at 4 KiB: one shared file, a
    file per rank, a shared file with LazyIO, and POSIX on one ceph-fuse mount beside them. ``trials["all"]``:
    every setting's rates."""
    def no_cephfs_ior() -> str | None:
        return None if cephfs_ior() else f"no IOR built with the CEPHFS backend here; to run it live, {CEPHFS_BUILD}"

    out = _section(cluster, "ior-cephfs", lambda c: _cephfs_live(c, cephfs_ior()), parse_cephfs, cephfs_claims,
                   show=show, requires=("mpirun",), unavailable=no_cephfs_ior, witness=True)
    out.trials["all"] = trials.from_values(
        {s: list(out.frame[out.frame["setting"] == s]["mib_per_s"]) for s in CEPHFS_SETTINGS}, unit="MiB/s",
        higher=True)
    return out


def cephfs_claims(df: pd.DataFrame, *, keep: dict | None = None, show: bool = True) -> list[explain.Claim]:
    shared, fpp, lazy, posix = (df[df["setting"] == s] for s in CEPHFS_SETTINGS)
    col = "mib_per_s"
    return [
        explain.expect(
            "the OSDs took every byte IOR wrote, in every run (-e: an fsync ends each write phase)",
            explain.fact("the OSDs' op_w_in_bytes grew by at least IOR's bytes in every run",
                         bool((df["osd_bytes_in"] >= df["bytes"]).all())),
            yes=f"the OSDs took {_spread([x / MiB for x in df['osd_bytes_in']], ',.2f')} MiB per run of "
                f"{format_size(int(df['bytes'].iloc[0]))}",
            no=f"the OSDs took {_spread([x / MiB for x in df['osd_bytes_in']], ',.2f')} MiB per run",
            why="a run's data stayed in a client's cache past its end", show=show),
        trials_claim("through libcephfs, two ranks writing 4 KiB at a time are faster into a file each (-F) than into "
                "one shared file (two clients on one file: neither may buffer)",
                "-F", list(fpp[col]), "shared", list(shared[col]), "MiB/s", keep=keep, key="cephfs", show=show),
        trials_claim("in a shared file the OSDs receive smaller writes than with a file each (every 4 KiB sent on "
                "its own, unbuffered)",
                "-F", list(fpp["kib_per_osd_write"]), "shared", list(shared["kib_per_osd_write"]),
                "KiB per OSD write", keep=keep, key="osd writes", show=show),
        trials_claim("--cephfs.olazy (LazyIO: the clients may buffer a shared file) makes the shared file faster",
                "shared, olazy", list(lazy[col]), "shared", list(shared[col]), "MiB/s", keep=keep, key="olazy",
                show=show),
        trials_claim("POSIX on one ceph-fuse mount (both ranks in ONE client, no capability to share) writes the "
                "shared file faster than two libcephfs clients do",
                "POSIX, one client", list(posix[col]), "CEPHFS, two clients", list(shared[col]), "MiB/s",
                keep=keep, key="posix", show=show),
    ]
