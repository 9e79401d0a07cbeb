"""A real, private Slurm on loopback, for lessons, tests and recordings: munged + slurmctld + one or more slurmd.

Debian's ``slurm-wlm`` and ``munge`` (22.05 on Debian 12) run unchanged; everything they write
(key, sockets, state, spool, logs, per-node TmpFS) lives in one private directory that is removed
afterwards. Two "fake nodes" (``n1``, ``n2``) are two slurmd processes on this host, each on its own
port, so ``sbatch -N 2`` and ``srun`` across nodes behave as on a cluster (except that the page
cache is shared: it is one kernel).

Use it as a context manager (``with SlurmCluster(nodes=2) as c: c.env ...``): lesson 09 runs its
workflow's jobs on it (iolab/lessons/l09_workflows/slurm.py), the recorders record on it, and the tests use
it through the fixtures ``slurm_single`` and ``slurm_two_nodes`` of tests/test_slurm.py. It is the one
starter of a private Slurm in the project. Where Slurm cannot
run (not root, packages missing) :func:`why_not` says why, and the fixtures skip; ``IOLAB_SLURM_TESTS=skip`` skips them on
purpose. When the packages are here and we are root, a start-up failure is an error, with the
daemons' log tails, never a silent skip.

Every process the cluster started (daemons, slurmstepd, job tasks) carries the marker variable
``IOLAB_SLURM_CLUSTER=<dir>`` in its environment; stop() ends exactly those, by pid. Each daemon leads a
process group of its own, told to :mod:`iolab.guard` with the cluster's directory, so a kernel killed
outright (SIGKILL) leaves no daemon and no directory behind (a job's slurmstepd, in a session of its own,
ends with its job: it cannot reach its slurmd any more).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from iolab import guard, runner

SBIN = ("munged", "mungekey", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scontrol", "squeue", "scancel", "sinfo")
MARKER = "IOLAB_SLURM_CLUSTER"


def _exe(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}")
                                       if os.access(p, os.X_OK)), None)


def why_not() -> str | None:
    """Why a private Slurm cannot start here, or None when it can."""
    if os.environ.get("IOLAB_SLURM_TESTS", "").lower() == "skip":
        return "IOLAB_SLURM_TESTS=skip"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return ("the private test Slurm needs root (slurmd starts each job as its user); "
                "these tests run when the suite runs as root with slurm-wlm and munge installed")
    missing = [t for t in SBIN + CLIENTS if _exe(t) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): `apt-get install slurm-wlm munge`"
    return None


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


class SlurmStartError(RuntimeError):
    pass


class SlurmCluster:
    """A private Slurm cluster of ``nodes`` fake nodes (1 → the host's short name, 2 → n1, n2)."""

    def __init__(self, nodes: int = 1, *, cpus: int | None = None, base: str | os.PathLike[str] | None = None,
                 start_timeout: float = 30.0, epilog: str | os.PathLike[str] | None = None):
        if nodes < 1:
            raise ValueError("nodes must be >= 1")
        self.nnodes = nodes
        self.cpus = cpus or min(os.cpu_count() or 1, 2)
        self.hostname = socket.gethostname().split(".")[0]
        self.node_names = [self.hostname] if nodes == 1 else [f"n{i}" for i in range(1, nodes + 1)]
        self.partition = "debug"
        self._base = base
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.startup_seconds: float | None = None
        # a program slurmd runs as root on the node after each job (Epilog=), e.g. iolab.hubslurm's
        self.epilog = os.fspath(epilog) if epilog is not None else None

    # -- paths and environment ------------------------------------------------------------------
    @property
    def conf(self) -> Path:
        assert self.dir is not None
        return self.dir / "etc" / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """Variables every client command (sbatch, srun, scontrol ...) needs to talk to this cluster."""
        assert self.dir is not None
        env = {"SLURM_CONF": str(self.conf), MARKER: str(self.dir)}
        if self.nnodes > 1:
            env["OMPI_MCA_btl"] = "self,tcp"     # shared memory breaks across fake nodes on one host
        return env

    def log_tails(self, lines: int = 15) -> str:
        out = []
        if self.dir is None:
            return ""
        for p in sorted((self.dir / "log").glob("*.log")):
            text = p.read_text(errors="replace").strip().splitlines()[-lines:]
            out.append(f"--- {p.name}\n" + "\n".join(text))
        return "\n".join(out)

    # -- configuration --------------------------------------------------------------------------
    def _write_conf(self, ctld_port: int, node_ports: list[int]) -> None:
        d = self.dir
        assert d is not None
        if self.nnodes == 1:
            nodes = (f"NodeName={self.hostname} NodeAddr=127.0.0.1 Port={node_ports[0]} "
                     f"CPUs={self.cpus} RealMemory=1000 State=UNKNOWN")
            tmpfs = d / "tmp" / self.hostname
        else:
            nodes = "\n".join(
                f"NodeName={n} NodeHostname={self.hostname} NodeAddr=127.0.0.1 Port={p} "
                f"CPUs={self.cpus} RealMemory=1000 State=UNKNOWN"
                for n, p in zip(self.node_names, node_ports))
            tmpfs = d / "tmp" / "%n"
        for n in self.node_names:
            (d / "tmp" / n).mkdir(parents=True, exist_ok=True)
            (d / "spool" / n).mkdir(parents=True, exist_ok=True)
        conf = f"""\
# written by iolab/slurm_cluster.py: a private Slurm on loopback
ClusterName=iolab
SlurmctldHost={self.hostname}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/run/slurmctld.pid
SlurmdPidFile={d}/run/slurmd-%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS={tmpfs}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={d}/log/jobcomp.txt
MailProg=/bin/true
MpiDefault=none
ReturnToService=2
MinJobAge=600
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
{f"Epilog={self.epilog}" if self.epilog else "# no Epilog"}
{nodes}
PartitionName={self.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        self.conf.write_text(conf)

    # -- life cycle -----------------------------------------------------------------------------
    def _spawn(self, name: str, argv: list[str]) -> None:
        assert self.dir is not None
        env = dict(os.environ)
        env.update(self.env)
        log = open(self.dir / "log" / f"{name}.stdout.log", "wb")
        self.procs[name] = p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                env=env, start_new_session=True, cwd=self.dir)
        log.close()
        guard.watch_process_group(p.pid)

    def _client(self, argv: list[str], timeout: float = 10, check: bool = True) -> runner.Run:
        return runner.run(argv, timeout=timeout, env=self.env, check=check)

    def start(self) -> "SlurmCluster":
        reason = why_not()
        if reason:
            raise SlurmStartError(reason)
        t0 = time.perf_counter()
        guard.ensure()                     # before the directory exists: a kill right after leaves nothing
        self.dir = Path(tempfile.mkdtemp(prefix="iolab-slurm-", dir=self._base or "/tmp"))
        d = self.dir
        guard.watch_dir(d)
        try:
            for sub in ("etc", "munge", "state", "run", "log", "spool", "tmp"):
                (d / sub).mkdir()
            os.chmod(d, 0o755)
            os.chmod(d / "munge", 0o755)
            key = d / "etc" / "munge.key"
            runner.run([_exe("mungekey"), "--create", f"--keyfile={key}"], timeout=20)  # type: ignore[list-item]
            os.chmod(key, 0o600)
            self._spawn("munged", [_exe("munged"), "--foreground", "--force",  # type: ignore[list-item]
                                   f"--key-file={key}", f"--socket={d}/munge/munge.socket",
                                   f"--pid-file={d}/run/munged.pid", f"--log-file={d}/log/munged.log",
                                   f"--seed-file={d}/state/munged.seed"])
            sock = d / "munge" / "munge.socket"
            self._wait_for(lambda: sock.exists(), "munged socket")
            ports = _free_ports(1 + self.nnodes)
            self._write_conf(ports[0], ports[1:])
            self._spawn("slurmctld", [_exe("slurmctld"), "-D", "-i", "-f", str(self.conf)])  # type: ignore[list-item]
            for n in self.node_names:
                argv = [_exe("slurmd"), "-D", "-f", str(self.conf)]
                if self.nnodes > 1:
                    argv += ["-N", n]
                self._spawn(f"slurmd-{n}", argv)  # type: ignore[arg-type]
            self._wait_for(self._all_idle, "all nodes idle in sinfo")
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - t0
        return self

    def _all_idle(self) -> bool:
        r = self._client(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
        if r.returncode != 0:
            return False
        states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
        return all(states.get(n, "").rstrip("*") == "idle" for n in self.node_names)

    def _wait_for(self, ok, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise SlurmStartError(f"{name} exited with {p.returncode} while waiting for {what}\n"
                                          + self.log_tails())
            if ok():
                return
            time.sleep(0.1)
        raise SlurmStartError(f"timed out after {self.start_timeout} s waiting for {what}\n" + self.log_tails())

    def _marked_pids(self) -> list[int]:
        """Pids of every process whose environment carries this cluster's marker."""
        if self.dir is None:
            return []
        needle = f"{MARKER}={self.dir}".encode()
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
        return pids

    def stop(self) -> None:
        """Cancel every job, stop every daemon and task this cluster started, remove its directory."""
        if self.dir is None:
            return
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                r = self._client(["squeue", "-h", "-o", "%i"], check=False, timeout=5)
                ids = r.stdout.split()
                if ids:
                    self._client(["scancel", *ids], check=False, timeout=5)
            except Exception:
                pass
        for name, p in reversed(list(self.procs.items())):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + 5
        for p in self.procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                p.wait()
            guard.forget_process_group(p.pid)
        # slurmstepd and job tasks live in sessions of their own: end them by the marker
        for _ in range(3):
            pids = self._marked_pids()
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.1)
        self.procs.clear()
        shutil.rmtree(self.dir, ignore_errors=True)
        guard.forget_dir(self.dir)
        self.dir = None

    def __enter__(self) -> "SlurmCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"SlurmCluster(nodes={self.node_names}, dir={self.dir})"
