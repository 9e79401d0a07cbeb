"""What this machine offers the course: tools, privileges, filesystems, memory.

``iolab doctor`` prints the table; ``iolab.doctor.summary()`` shows it in a notebook.
Every missing item says what the course does without it.

Probing the tools is the slow part (a process per tool, IOR's and mdtest's banners through MPI): the
probes run at once in threads, and what they found is kept per user in
``$XDG_CACHE_HOME/iolab/doctor-tools.json`` (``~/.cache`` by default), keyed by each tool's file
(path, size, modification time) and by where it was probed (:func:`context`: the host, the Slurm job,
step and node, PATH and the MPI settings), so a lesson's first cell answers from it while neither
changed. A verdict made in one Slurm job (a server of batchspawner's, say) is not shown in another: the
same IOR that an srun step cannot start runs under mpirun in a job's batch step.
``iolab doctor`` and :func:`checks` probe afresh; :func:`summary` uses the cache.
"""
from __future__ import annotations

from typing import Any

import importlib.metadata
import json
import os
import re
import resource
import shutil
import socket
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from . import fsinfo, recordings, runner
from .pagecache import parse_meminfo
from .readahead_probes import read_ahead_kb
from .tools import darshan, ior, mdtest
from .units import format_size
from .workspace import base_dir, names_taken

OK, MISSING, LIMITED = "OK", "MISSING", "LIMITED"


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    detail: str
    without: str = ""    # what the course does when this is missing or limited

    def line(self) -> str:
        tag = {OK: "[ OK ]", MISSING: "[MISSING]", LIMITED: "[LIMITED]"}[self.status]
        text = f"{tag:<10} {self.name:<22} {self.detail}"
        if self.status != OK and self.without:
            text += f"\n{'':<33}-> {self.without}"
        return text


PACKAGES = {
    "numpy": "required", "pandas": "required", "plotly": "required", "ipywidgets": "required",
    "jupyterlab": "needed to open the lessons (make lab)",
    "fsspec": "lesson 06 runs its FUSE parts only", "s3fs": "lesson 06 skips fsspec over S3",
    "gcsfs": "lesson 06 skips fsspec over GCS", "boto3": "lesson 06 cannot create buckets",
    "moto": "lesson 06 uses SeaweedFS or a recording", "nbval": "make test cannot execute notebooks",
    "darshan": "lesson 07 cannot read Darshan logs (PyDarshan)",
    "snakemake": "lesson 09 replays its recorded workflow runs (pip install -e .[workflows]; Python >= 3.11)",
    "snakemake-storage-plugin-s3": "lesson 09 replays its recorded workflow runs",
}

# tool -> (argv that prints its version, what the course does without it); argv None: the version
# comes from the tool's banner (IOR and mdtest have no version flag: banner_version below)
TOOLS: dict[str, tuple[list[str] | None, str]] = {
    "strace": (["strace", "-V"], "lesson 03 replays recorded strace outputs"),
    "fio": (["fio", "--version"], "lesson 06 replays recorded fio runs"),
    "dd": (["dd", "--version"], "lessons 01, 02 and 06 replay recorded dd runs"),
    "vmtouch": (["vmtouch", "-h"], "lessons measure residency with iolab.pagecache (mincore) only"),
    "fincore": (["fincore", "--version"], "tests cannot cross-check residency against fincore"),
    "bpftrace": (["bpftrace", "--version"], "lesson 02 replays a recorded readahead trace (tracing needs root too)"),
    "ior": (None, "lesson 04 replays recorded IOR runs"),
    "mdtest": (None, "lesson 05 replays recorded mdtest runs"),
    "mpirun": (["mpirun", "--version"], "IOR/mdtest cannot run with several ranks; lessons replay"),
    "srun": (["srun", "--version"], "multi-node runs need Slurm: instructors only"),
    "sbatch": (["sbatch", "--version"], "multi-node runs need Slurm: instructors only"),
    "s3fs": (["s3fs", "--version"], "lesson 06 uses fsspec instead of the s3fs-fuse mount"),
    "gcsfuse": (["gcsfuse", "--version"], "lesson 06 skips the gcsfuse part"),
    # --config: without it rclone creates ~/.config/rclone just to print its version
    "rclone": (["rclone", "version", "--config", os.devnull], "lesson 06 skips the rclone part"),
    "s3cmd": (["s3cmd", "--version"], "lesson 06 stages with fsspec instead of s3cmd"),
    "chromium": (["chromium", "--version"], "the browser test of lesson 00 is skipped"),
    "ceph-mon": (["ceph-mon", "--version"], "lesson 08 replays its recorded Ceph cluster"),
    # bwa has no version flag: its usage (no arguments, exit status 1) names it on a line of its own
    "bwa": (["bwa"], "lesson 09 replays its recorded workflow runs"),
    "samtools": (["samtools", "--version"], "lesson 09 replays its recorded workflow runs (wgsim comes with it)"),
    "bcftools": (["bcftools", "--version"], "lesson 09 replays its recorded workflow runs"),
    "dot": (["dot", "-V"], "lesson 09 draws its workflow's DAG with plotly alone (it never needs dot)"),
}

def _first_version_line(text: str) -> str:
    for line in text.splitlines():
        if re.search(r"\d+\.\d+", line):
            head = line.split(" - ")[0]
            return (head if re.search(r"\d", head) else line).strip()[:80]     # "dot - graphviz version 2.42.2"
    return (text.strip().splitlines() or ["unknown version"])[0][:80]


def banner_version(tool: str) -> str | None:
    """IOR's or mdtest's version ("4.0.0") from the banner of a run that does no I/O; None when the
    tool is not on PATH or printed no banner. They have no version flag: they refuse ``--version``
    and exit without MPI_Finalize, which leaves Open MPI's session directory in /tmp."""
    probe = {"ior": ior.installed_version, "mdtest": mdtest.installed_version}[Path(tool).name]
    return probe(tool)


def tool_version(tool: str) -> str | None:
    """A tool's version as results and reports record it: IOR's and mdtest's from their banner (a run
    that does no I/O), any other tool's from its version flag (:func:`iolab.runner.tool_version`)."""
    if shutil.which(tool) is None:
        return None
    if Path(tool).name in runner.NO_VERSION_FLAG:
        return banner_version(tool) or "unknown version"
    return runner.tool_version(tool)


def _banner_version(tool: str, path: str, without: str) -> Check:
    """IOR / mdtest: the version their own banner prints, from a run that does no I/O."""
    try:
        version = banner_version(tool)
    except Exception as e:  # a broken install is still worth reporting
        return Check("tools", tool, LIMITED, f"found at {path}, but it did not run ({e})", without)
    if version is None:
        return Check("tools", tool, LIMITED, f"found at {path}, but a test run printed no {tool} banner "
                     "(is it an MPI build that runs here without mpirun?)", without)
    return Check("tools", tool, OK, f"{tool} {version}")


def _probe(tool: str, path: str, argv: list[str] | None, without: str) -> Check:
    """One tool's check: run its version flag (or its banner, for IOR and mdtest)."""
    if argv is None:
        return _banner_version(tool, path, without)
    try:
        r = runner.run(argv, timeout=15, check=False)
    except Exception as e:  # a broken install is still worth reporting
        return Check("tools", tool, LIMITED, f"found at {path}, but it did not run ({e})", without)
    text = r.stdout + "\n" + r.stderr
    if r.returncode != 0 and not re.search(r"\d+\.\d+", text):
        return Check("tools", tool, LIMITED, f"found at {path}, but not usable here: "
                     f"{text.strip().splitlines()[-1][:70] if text.strip() else r.returncode}", without)
    return Check("tools", tool, OK, _first_version_line(text))


def cache_path() -> Path:
    """Where :func:`tool_checks` keeps what it found (per user)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "iolab" / "doctor-tools.json"


def _identity(path: str) -> list[object]:
    st = os.stat(path)
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


# what decides whether a tool runs here, beside its file: the host, the Slurm job, step and node it runs
# in (an Open MPI singleton inside an srun step aborts without Slurm's PMI; the same build runs in the
# batch step), the search paths, and the MPI and PMIx settings of the environment
CONTEXT_VARS = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "PATH", "LD_LIBRARY_PATH")
CONTEXT_PREFIXES = ("OMPI_", "PMIX_", "PRTE_", "I_MPI_", "MPICH_")


def context() -> dict[str, str]:
    """Where the tools are probed: the host and what of the environment changes their verdicts."""
    ctx = {"host": socket.gethostname()}
    ctx.update({k: v for k, v in os.environ.items() if k in CONTEXT_VARS or k.startswith(CONTEXT_PREFIXES)})
    return dict(sorted(ctx.items()))


def _load_cache() -> dict[str, dict]:
    try:
        data = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(entries: dict[str, dict]) -> None:
    """Best effort, atomically, owner-only: a cache that cannot be written is only slower."""
    p = cache_path()
    try:
        p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=".doctor-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(entries, f)
        os.replace(tmp, p)
    except OSError:
        pass


def tool_checks(*, cached: bool = False) -> list[Check]:
    """Every tool's check. The probes run concurrently; ``cached=True`` takes a tool's check from
    :func:`cache_path` when its file is the one probed then (same path, size and mtime) and it was
    probed in this :func:`context`."""
    found = {tool: shutil.which(tool) for tool in TOOLS}
    store = _load_cache() if cached else {}
    here = context()
    out: dict[str, Check] = {}
    todo = {}
    for tool, (argv, without) in TOOLS.items():
        path = found[tool]
        if path is None:
            out[tool] = Check("tools", tool, MISSING, runner.install_hint(tool).split(":")[0], without)
            continue
        hit = store.get(tool)
        try:
            ident = _identity(path)
        except OSError:
            ident = None
        if (hit and ident is not None and hit.get("identity") == ident and hit.get("fallback") == without
                and hit.get("context") == here):
            out[tool] = Check(**{k: hit[k] for k in ("group", "name", "status", "detail", "without")})
        else:
            todo[tool] = (path, argv, without, ident)
    if todo:
        with ThreadPoolExecutor(max_workers=min(8, len(todo))) as pool:
            futures = {tool: pool.submit(_probe, tool, path, argv, without)
                       for tool, (path, argv, without, _) in todo.items()}
        fresh = {tool: f.result() for tool, f in futures.items()}
        out.update(fresh)
        entries = _load_cache()
        for tool, c in fresh.items():
            ident = todo[tool][3]
            if ident is not None:
                entries[tool] = {**asdict(c), "identity": ident, "fallback": todo[tool][2], "context": here}
        _save_cache(entries)
    return [out[tool] for tool in TOOLS] + [darshan_check()]


def darshan_check() -> Check:
    """The Darshan runtime (libdarshan.so): where it was found, its version, and whether the
    installed PyDarshan reads its logs (a newer runtime writes logs an older reader refuses)."""

    without = "lesson 07 replays recorded Darshan logs"
    try:
        rt = darshan.find_runtime()
        refused = [c for c in darshan.candidates() if c.problem]
    except Exception as e:  # a broken install is still worth reporting
        return Check("tools", "darshan runtime", LIMITED, f"the search failed ({e})", without)
    if rt is None:
        detail = (f"{refused[0].path} found but not used: it {refused[0].problem}" if refused else
                  "libdarshan.so not found (module, $DARSHAN_RUNTIME, darshan-config, usual paths): "
                  + runner.install_hint("darshan").split(":")[0])
        return Check("tools", "darshan runtime", MISSING, detail, without)
    if rt.compatible() is False:
        return Check("tools", "darshan runtime", LIMITED, f"{rt.describe()}; newer than PyDarshan "
                     f"{darshan.reader_version()}, which may refuse its logs", without)
    return Check("tools", "darshan runtime", OK, rt.describe())


def package_checks() -> list[Check]:
    out = []
    for pkg, without in PACKAGES.items():
        try:
            out.append(Check("python", pkg, OK, importlib.metadata.version(pkg)))
        except importlib.metadata.PackageNotFoundError:
            out.append(Check("python", pkg, MISSING, "pip install -e .[lab,objectstore,workflows,test]", without))
    return out


def privilege_checks() -> list[Check]:
    out = []
    root = os.geteuid() == 0
    out.append(Check("system", "running as root", OK,
                     "yes (lessons use root where it helps, and say so)" if root
                     else "no (the normal case: every lesson works without root)"))
    dc = "/proc/sys/vm/drop_caches"
    writable = os.access(dc, os.W_OK)
    out.append(Check("system", "drop_caches writable", OK if writable else LIMITED,
                     "yes" if writable else "no (needs root)",
                     "lessons evict files with posix_fadvise(DONTNEED) and verify with mincore"))
    fuse = Path("/dev/fuse")
    fusermount = shutil.which("fusermount3") or shutil.which("fusermount")
    usable = fuse.exists() and os.access(fuse, os.R_OK | os.W_OK) and fusermount is not None
    out.append(Check("system", "/dev/fuse usable", OK if usable else MISSING,
                     f"/dev/fuse {'present' if fuse.exists() else 'absent'}, fusermount "
                     f"{'found' if fusermount else 'missing'}",
                     "lesson 06 uses fsspec's caches instead of FUSE mounts"))
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    level = scope.read_text().strip() if scope.exists() else None
    ok = level in (None, "0", "1")
    out.append(Check("system", "ptrace (for strace)", OK if ok else LIMITED,
                     f"Yama ptrace_scope={level}" if level is not None else "no Yama restriction",
                     "lesson 03 replays recorded traces"))
    return out


def candidate_dirs() -> dict[str, str]:
    """The places a cluster user typically can write, that exist here (label -> path)."""
    dirs = {"/tmp": "/tmp", "$HOME": os.environ.get("HOME", ""), "/dev/shm": "/dev/shm",
            "$SCRATCH": os.environ.get("SCRATCH", ""), "$TMPDIR": os.environ.get("TMPDIR", "")}
    try:
        dirs["workspace"] = str(base_dir())
    except OSError:
        pass
    return {label: path for label, path in dirs.items() if path and Path(path).is_dir()}


def survey() -> list[dict[str, Any]]:
    """One row per candidate directory: which filesystem serves it, what kind of layer that is."""
    rows = []
    for label, path in candidate_dirs().items():
        m = fsinfo.mount_of(path)
        rows.append({"label": label, "path": path, "fstype": m.fstype, "kind": m.kind,
                     "mountpoint": m.mountpoint, "source": m.source,
                     "free_bytes": shutil.disk_usage(path).free})
    return rows


def filesystem_checks() -> list[Check]:
    rows = survey()
    out = []
    for r in rows:
        detail = f"{r['fstype']:<8} {r['kind']:<20} {r['path']}  ({format_size(r['free_bytes'])} free)"
        if r["label"] == "workspace" and r["fstype"] in fsinfo.MEMORY_FS:
            out.append(Check("filesystems", "workspace", LIMITED, detail,
                             "the workspace is memory: no cold reads can be measured there; "
                             "set IOLAB_WORKDIR to a disk-backed directory"))
        else:
            out.append(Check("filesystems", r["label"], OK, detail))
    for name, used in names_taken().items():
        out.append(Check("filesystems", "a name taken", LIMITED, f"{name} was made by someone else; yours is {used}",
                         "your files are private all the same; ask an admin to remove the name someone took"))
    if "$SCRATCH" not in {r["label"] for r in rows}:
        out.append(Check("filesystems", "$SCRATCH", LIMITED, "not set on this machine",
                         "lessons use the workspace (local scratch) instead"))
    return out


def memory_checks() -> list[Check]:
    info = parse_meminfo(Path("/proc/meminfo").read_text())
    page = resource.getpagesize()
    out = [Check("memory", "page size", OK, format_size(page)),
           Check("memory", "memory", OK, f"{format_size(info['MemTotal'])} total, "
                 f"{format_size(info['MemAvailable'])} available, {format_size(info.get('Cached', 0))} page cache")]
    try:
        ra = read_ahead_kb(base_dir())
        out.append(Check("memory", "read_ahead_kb", OK if ra.kb is not None else LIMITED,
                         f"{ra.kb} KiB for the workspace's device ({ra.source})" if ra.kb is not None
                         else ra.reason, "lesson 02 measures the readahead window with mincore instead"))
    except Exception as e:  # readahead is optional for the doctor
        out.append(Check("memory", "read_ahead_kb", LIMITED, f"unknown ({e})", "lesson 02 measures it with mincore"))
    return out


def checks(*, cached: bool = False) -> list[Check]:
    """Every check; ``cached=True``: tools' versions from the cache where their files are unchanged."""
    return package_checks() + tool_checks(cached=cached) + privilege_checks() + filesystem_checks() + memory_checks()


def table(items: list[Check] | None = None) -> str:
    items = checks() if items is None else items
    lines, group = [], None
    for c in items:
        if c.group != group:
            group = c.group
            lines.append(f"\n{group}")
        lines.append(c.line())
    return "\n".join(lines).lstrip("\n")


def summary(*, skip: tuple[str, ...] = ()) -> None:
    """Print the doctor table (in a notebook, a lesson's first cell calls this): the tools' versions
    come from the per-user cache while their files are unchanged, so it answers in about a second;
    ``iolab doctor`` probes them all again. ``skip``: groups left out (lesson 00 leaves out
    "filesystems", which its learner predicts first)."""
    print(table([c for c in checks(cached=True) if c.group not in skip]))
    note = recordings.mode_note()
    if note:
        print(f"\n{note}")
