"""IOR, mdtest and fio across nodes with Slurm: write the batch script, submit, wait, collect, parse.

The page cache is per node: only a run that spans nodes can make each node read what another
node wrote (IOR ``-C``). This module writes a plain, hand-editable sbatch script for one run or
a sweep, submits it, follows the job, and parses every step's output with the same parsers as a
local run, so a cluster's numbers land in the same DataFrames as a laptop's::

    steps = slurm.sweep(["ior", "-t", "1m", "-b", "16m", "-s", "4", "-o", "testfile"],
                        {"shared file": [], "-F": ["-F"], "-F -C": ["-F", "-C"], "-F -C -e": ["-F", "-C", "-e"]},
                        nodes=[1, 2], tasks_per_node=[2])
    script = slurm.batch_script(steps, workdir="/fast/area/me", partition="FHPC", time="00:30:00",
                                modules=["openMPI/4.1.4"])
    job = slurm.submit(script)         # sbatch --parsable
    job.wait(timeout=1800)             # ToolFailed on FAILED / TIMEOUT / NODE_FAIL / CANCELLED ...
    df = job.outputs()                 # one row per measurement; the sweep's parameters are columns

The script keeps a manifest of its steps in comment lines (``# iolab-step NAME {json}``), so a
hand-edited script is still collected by :meth:`Job.outputs`. Each step's output lands in
``$OUT/<step>.<node index>.<host>.<task>.out`` (srun) or ``$OUT/<step>.out`` (mpirun, or a plain command), and
its exit status in ``$OUT/<step>.rc``; ``$OUT`` is ``iolab-<jobid>/`` in the submit directory.

State comes from ``scontrol show job`` (while Slurm remembers the job), then ``sacct`` when the
site has accounting, then ``squeue -t all``.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import mpi as _mpi
from . import runner, safeio
from .errors import IolabError, ParseError, ToolFailed, ToolTimeout
from .tools import fio, ior, mdtest

#: states after which a job never runs again; COMPLETED is the only good one
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
            "DEADLINE", "PREEMPTED", "SPECIAL_EXIT", "REVOKED")
MPI_TOOLS = ("ior", "mdtest", "md-workbench", "ior-ng")
LAUNCHERS = ("srun", "mpirun", "none")
MANIFEST = "# iolab-step "
OUT_VAR = "OUT"


# --- steps and sweeps ---------------------------------------------------------------------------

@dataclass
class Step:
    """One benchmark run inside a job: a command, where it runs, and what it measured.

    argv may contain ``{out}`` (the job's output directory) and ``{step}`` (this step's name),
    e.g. IOR's ``-O summaryFile={out}/{step}.json``. ``result`` names the file to parse, relative
    to ``{out}`` (default: each task's standard output). ``params`` become columns of the results.
    ``files`` are written into ``{out}`` by the script before the steps run (a fio job file).
    """

    argv: list[str]
    name: str = ""
    tool: str = ""
    nodes: int = 1
    tasks_per_node: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    result: str = ""
    mpi: bool | None = None
    files: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.argv = runner._check_argv(self.argv)
        if not self.tool:
            self.tool = Path(self.argv[0]).name
        if self.mpi is None:
            self.mpi = self.tool in MPI_TOOLS
        if self.nodes < 1 or self.tasks_per_node < 1:
            raise ValueError(f"a step needs at least one node and one task per node, got {self.nodes}x{self.tasks_per_node}")
        if self.name and not re.fullmatch(r"[A-Za-z0-9_.+-]+", self.name):
            raise ValueError(f"a step name is letters, digits and _.+-: {self.name!r}")

    @property
    def ntasks(self) -> int:
        return self.nodes * self.tasks_per_node

    def manifest(self) -> dict[str, Any]:
        return {"tool": self.tool, "nodes": self.nodes, "tasks_per_node": self.tasks_per_node,
                "params": self.params, "result": self.result, "mpi": self.mpi}


def sweep(argv: Sequence[str], option_sets: Mapping[str, Sequence[str]] | None = None, *,
          nodes: Iterable[int] = (1,), tasks_per_node: Iterable[int] = (1,), tool: str = "",
          result: str = "", files: Mapping[str, str] | None = None) -> list[Step]:
    """Every combination of node count × tasks per node × option set, one Step each.

    option_sets maps a label to the arguments appended to argv (e.g. the IOR pitfalls:
    ``{"shared file": [], "-F": ["-F"], "-F -C": ["-F", "-C"]}``). Each step's ``params`` holds
    nodes, tasks_per_node and options (the label), the columns of the tidy results.
    """
    sets = dict(option_sets or {"": []})
    steps = []
    for i, (n, t, (label, extra)) in enumerate(itertools.product(list(nodes), list(tasks_per_node), sets.items())):
        steps.append(Step(list(argv) + list(extra), name=f"step-{i}", tool=tool, nodes=n, tasks_per_node=t,
                          params={"nodes": n, "tasks_per_node": t, "options": label},
                          result=result, files=dict(files or {})))
    return steps


def fio_step(jobfile: str, *, nodes: int = 1, tasks_per_node: int = 1, name: str = "fio",
             params: Mapping[str, Any] | None = None, fio: str = "fio") -> Step:
    """fio on every task, from the text of a job file (written into ``{out}`` by the script).

    fio expands ``${SLURM_PROCID}`` in a job file: use it in ``filename_format`` so that tasks
    sharing a directory do not share files. Give each fio step of one script its own ``name``.
    """
    fname = f"{name}.fio"
    return Step([fio, "--output-format=json", f"{{out}}/{fname}"], name=name, tool="fio", nodes=nodes,
                tasks_per_node=tasks_per_node, params=dict(params or {}), files={fname: jobfile}, mpi=False)


# --- the batch script ---------------------------------------------------------------------------

def _time(t: str | int | float) -> str:
    if isinstance(t, (int, float)) and not isinstance(t, bool):
        minutes = int(t)
        return f"{minutes // 60:02d}:{minutes % 60:02d}:00"
    if not re.fullmatch(r"(\d+-)?\d{1,2}(:\d{2}){0,2}", str(t)):
        raise ValueError(f"a Slurm time limit looks like 30 (minutes), '00:30:00' or '1-00:00:00', got {t!r}")
    return str(t)


def _sh(arg: str, step: str) -> str:
    """One shell word: quoted, with {out} becoming "$OUT" and {step} the step name."""
    arg = arg.replace("{step}", step)
    parts = arg.split("{out}")
    return f'"${OUT_VAR}"'.join(shlex.quote(p) if p else "" for p in parts)


def _launch(step: Step, launcher: str, mpi: str) -> str:
    n, t = step.nodes, step.tasks_per_node
    name = step.name
    cmd = " ".join(_sh(a, name) for a in step.argv)
    if launcher == "srun":
        opts = [f"--nodes={n}", f"--ntasks={n * t}", f"--ntasks-per-node={t}"]
        if step.mpi and mpi:
            opts.append(f"--mpi={mpi}")
        opts += [f'--output="${OUT_VAR}/{name}.%n.%N.%t.out"', f'--error="${OUT_VAR}/{name}.%n.%N.%t.err"']
        return f"step {name} srun {' '.join(opts)} {cmd}"
    redirect = f'> "${OUT_VAR}/{name}.out" 2> "${OUT_VAR}/{name}.err"'
    if launcher == "mpirun":
        # iolab.mpi's rules (--allow-run-as-root only for root); no --oversubscribe: Slurm gives the slots
        argv = _mpi.launcher_argv(n * t, launcher="mpirun", cores=n * t)
        argv += ["-ppn", str(t)] if _mpi.flavour() in ("mpich", "intel") else ["--map-by", f"ppr:{t}:node"]
        return f"step {name} {shlex.join(argv)} {cmd} {redirect}"
    return f"step {name} {cmd} {redirect}"


def batch_script(steps: Step | Sequence[Step], *, nodes: int | None = None, tasks_per_node: int | None = None,
                 time: str | int = "00:10:00", job_name: str = "", partition: str | None = None,
                 account: str | None = None, qos: str | None = None, workdir: str | os.PathLike[str] | None = None,
                 modules: Sequence[str] = (), setup: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 launcher: str = "srun", mpi: str = "pmix", sbatch_options: Sequence[str] = ()) -> str:
    """A readable sbatch script that runs ``steps`` one after the other.

    nodes / tasks_per_node: the allocation (default: the largest any step needs). workdir: the
    directory on the filesystem under test where the benchmark runs (created if missing).
    modules: ``module load`` lines; setup: any other shell lines (sourcing a site profile...);
    env: variables exported. launcher: ``srun`` (with ``--mpi=<mpi>`` for MPI tools), ``mpirun``
    (inside the allocation), or ``none`` (the command runs once, on the first node).
    Steps without a name are named ``step-<i>`` here.
    """
    steps = [steps] if isinstance(steps, Step) else list(steps)
    if not steps:
        raise ValueError("a batch script needs at least one step")
    if launcher not in LAUNCHERS:
        raise ValueError(f"launcher is one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    names = set()
    for i, s in enumerate(steps):
        if not s.name:
            s.name = f"step-{i}"
        if s.name in names:
            raise ValueError(f"two steps are named {s.name!r}")
        names.add(s.name)
    nodes = nodes or max(s.nodes for s in steps)
    tasks_per_node = tasks_per_node or max(s.tasks_per_node for s in steps)
    too_big = [s.name for s in steps if s.nodes > nodes]
    if too_big:
        raise ValueError(f"steps {too_big} need more than the job's {nodes} nodes")
    tools = sorted({s.tool for s in steps})
    job_name = job_name or f"iolab-{'-'.join(tools)}"
    for value, what in ((job_name, "job_name"), (partition, "partition"), (account, "account"), (qos, "qos")):
        if value is not None and not re.fullmatch(r"[A-Za-z0-9_.,+-]+", value):
            raise ValueError(f"{what} {value!r}: letters, digits and _.,+- only")

    L = ["#!/bin/bash",
         f"#SBATCH --job-name={job_name}",
         f"#SBATCH --nodes={nodes}",
         f"#SBATCH --ntasks-per-node={tasks_per_node}",
         f"#SBATCH --time={_time(time)}"]
    L += [f"#SBATCH --{k}={v}" for k, v in (("partition", partition), ("account", account), ("qos", qos)) if v]
    L += ["#SBATCH --output=iolab-%j.out", "#SBATCH --error=iolab-%j.err"]
    for opt in sbatch_options:
        if "\n" in opt or not opt.startswith("--"):
            raise ValueError(f"an sbatch option looks like --name=value: {opt!r}")
        L.append(f"#SBATCH {opt}")
    L += ["#",
          "# Written by iolab.slurm.batch_script(); edit it freely. Submit with `sbatch FILE`.",
          "# Results: $OUT/<step>.<node index>.<host>.<task>.out, with OUT=iolab-<jobid> in the submit directory.",
          "# The lines below tell iolab.slurm what each step measured (keep them when editing)."]
    for s in steps:
        L.append(f"{MANIFEST}{s.name} {json.dumps(s.manifest(), sort_keys=True, default=str)}")
    L.append("")
    # A job started from inside another job (a notebook server that batchspawner runs as a job) inherits
    # SLURM_EXPORT_ENV=<names> from it (batchspawner submits with --export=<names>), and srun reads that
    # variable: every step would get only those names, not what the lines below load and export.
    L += ["unset SLURM_EXPORT_ENV", ""]
    if modules or setup or env:
        L.append("# --- environment ---")
        L += [f"module load {shlex.quote(m)}" for m in modules]
        L += [str(line) for line in setup]
        for k, v in (env or {}).items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"not an environment variable name: {k!r}")
            L.append(f"export {k}={shlex.quote(str(v))}")
        L.append("")
    L += ["# --- where results go, and the filesystem under test ---",
          f'{OUT_VAR}="${{SLURM_SUBMIT_DIR:-$PWD}}/iolab-${{SLURM_JOB_ID:-local}}"',
          f'mkdir -p "${OUT_VAR}" || exit 1']
    if workdir is not None:
        w = shlex.quote(os.fspath(workdir))
        L.append(f"mkdir -p {w} && cd {w} || exit 1")
    L += ['echo "iolab: job ${SLURM_JOB_ID:-} on ${SLURM_JOB_NODELIST:-$(hostname)} in $PWD"', ""]
    files: dict[str, str] = {}
    for s in steps:
        for fname, text in s.files.items():
            if files.setdefault(fname, text) != text:
                raise ValueError(f"two steps write different input files named {fname!r}: give the steps names")
    if files:
        L.append("# --- input files ---")
        for fname, text in files.items():
            if not re.fullmatch(r"[A-Za-z0-9_.+-]+", fname):
                raise ValueError(f"an input file name is letters, digits and _.+-: {fname!r}")
            if "\nIOLAB_EOF\n" in f"\n{text}\n":
                raise ValueError("an input file may not contain the line IOLAB_EOF")
            L += [f"cat > \"${OUT_VAR}/{fname}\" <<'IOLAB_EOF'", text.rstrip("\n"), "IOLAB_EOF"]
        L.append("")
    L += ["# step NAME COMMAND...: run one step, keep its exit status in $OUT/NAME.rc",
          "status=0",
          "step() {",
          "    local name=$1; shift",
          '    "$@"',
          "    local rc=$?",
          f'    echo "$rc" > "${OUT_VAR}/$name.rc"',
          '    if [ "$rc" != 0 ]; then echo "iolab: step $name failed with status $rc" >&2; status=$rc; fi',
          "}",
          "",
          "# --- steps ---"]
    for s in steps:
        desc = " ".join(f"{k}={v}" for k, v in s.params.items()) or f"nodes={s.nodes} tasks_per_node={s.tasks_per_node}"
        L += [f"# {s.name}: {desc}", _launch(s, launcher, mpi)]
    L += ["", "exit $status", ""]
    return "\n".join(L)


def read_manifest(script: str) -> list[tuple[str, dict[str, Any]]]:
    """The (name, manifest) of each step, from a script's ``# iolab-step`` lines."""
    steps = []
    for no, line in enumerate(script.splitlines(), 1):
        if line.startswith(MANIFEST):
            name, _, rest = line[len(MANIFEST):].partition(" ")
            try:
                manifest = safeio.loads(rest, what="step manifest")
            except ParseError as e:
                raise ParseError(f"a step manifest line is not JSON ({str(e).split(' (line ')[0]})", line_no=no,
                                 line=line) from None
            if not isinstance(manifest, dict):
                raise ParseError("a step manifest is a JSON object", line_no=no, line=line)
            for key in ("nodes", "tasks_per_node"):
                v = manifest.get(key, 1)
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise ParseError(f"a step manifest's {key} is a count of at least 1, not {v!r}", line_no=no,
                                     line=line)
            steps.append((name, manifest))
    return steps


# --- submit, follow, cancel ---------------------------------------------------------------------

@dataclass(frozen=True)
class JobInfo:
    """What Slurm says about a job: JobState, ExitCode, Reason, nodes, and every field it printed."""

    job_id: str
    state: str
    exit_code: int | None = None
    signal: int | None = None
    reason: str = ""
    nodes: str = ""
    source: str = ""                  # scontrol, sacct or squeue
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.state in TERMINAL

    @property
    def ok(self) -> bool:
        return self.state == "COMPLETED"


_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=")


def parse_scontrol(text: str) -> dict[str, str]:
    """``scontrol show job -o`` (one line of Key=Value; values may contain spaces) as a dict.

    scontrol ends the line with a newline: a text that ends inside it (a value that may be cut short)
    raises ParseError, as does a line that does not start with ``JobId=<number>``."""
    lines = text.splitlines()
    no, line = next(((i, ln) for i, ln in enumerate(lines, 1) if ln.strip()), (1, ""))
    if not re.match(r"\s*JobId=[0-9]+\s", line + " "):
        raise ParseError("expected a `scontrol show job -o` line that starts with JobId=<number>", line_no=no,
                         line=line)
    if no == len(lines) and not text.endswith(("\n", "\r")):
        raise ParseError("the scontrol output ends inside its line (no newline after it): cut short", line_no=no,
                         line=line)
    more = next((i for i, ln in enumerate(lines[no:], no + 1) if ln.strip()), None)
    if more is not None:
        raise ParseError("a second line after the job's: `scontrol show job -o` prints one line per job, and this "
                         "reads one job", line_no=more, line=lines[more - 1])
    marks = list(_KEY.finditer(line))
    out: dict[str, str] = {}
    for m, nxt in zip(marks, marks[1:] + [None]):
        if m.group(1) in out:
            raise ParseError(f"{m.group(1)}= twice in one job's line", line_no=no, line=line)
        out[m.group(1)] = line[m.end():nxt.start() if nxt else len(line)].strip()
    return out


def _exit_code(text: str) -> tuple[int | None, int | None]:
    m = re.fullmatch(r"\s*(\d{1,9}):(\d{1,9})\s*", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def _base_state(state: str) -> str:
    # sacct prints "CANCELLED by 0"; scontrol may print "FAILED" or "NODE_FAIL" ; keep the word
    return (state or "").split()[0].rstrip("+") if state else ""


@dataclass
class Job:
    """A submitted job. ``env``: variables client commands need (e.g. ``SLURM_CONF``)."""

    job_id: str
    directory: Path
    script_path: Path
    env: dict[str, str] | None = None
    submitted: float = field(default_factory=time.time)

    # -- state ----------------------------------------------------------------------------------
    def _run(self, argv: list[str], timeout: float = 30, check: bool = False) -> runner.Run:
        return runner.run(argv, timeout=timeout, env=self.env, check=check)

    def info(self) -> JobInfo:
        """The job's state now: scontrol, else sacct (accounting), else squeue -t all."""
        r = self._run(["scontrol", "show", "job", "-o", self.job_id])
        if r.returncode == 0 and "JobId=" in r.stdout:
            f = parse_scontrol(r.stdout)
            code, sig = _exit_code(f.get("ExitCode", ""))
            return JobInfo(self.job_id, _base_state(f.get("JobState", "")), code, sig, f.get("Reason", ""),
                           f.get("NodeList", ""), "scontrol", f)
        if runner.which("sacct"):
            r = self._run(["sacct", "-n", "-P", "-X", "-j", self.job_id, "-o", "JobID,State,ExitCode,Reason,NodeList"])
            rows = [ln.split("|") for ln in r.stdout.splitlines() if ln.strip()]
            rows = [row for row in rows if row[0] == self.job_id and len(row) >= 5]
            if r.returncode == 0 and rows:
                jid, state, ec, reason, nodelist = rows[0][:5]
                code, sig = _exit_code(ec)
                return JobInfo(self.job_id, _base_state(state), code, sig, reason, nodelist, "sacct",
                               dict(zip(("JobID", "State", "ExitCode", "Reason", "NodeList"), rows[0])))
        r = self._run(["squeue", "-h", "-t", "all", "-j", self.job_id, "-o", "%i|%T|%r|%N"])
        rows = [ln.split("|") for ln in r.stdout.splitlines() if ln.strip()]
        if r.returncode == 0 and rows and len(rows[0]) >= 4:
            return JobInfo(self.job_id, _base_state(rows[0][1]), None, None, rows[0][2], rows[0][3], "squeue",
                           dict(zip(("JobId", "JobState", "Reason", "NodeList"), rows[0])))
        raise IolabError(f"Slurm no longer knows job {self.job_id} (scontrol, sacct and squeue have nothing; "
                         "without accounting Slurm forgets a job MinJobAge seconds after it ends). "
                         f"Its outputs are still in {self.outdir}.")

    @property
    def state(self) -> str:
        return self.info().state

    # -- files ----------------------------------------------------------------------------------
    @property
    def outdir(self) -> Path:
        return self.directory / f"iolab-{self.job_id}"

    @property
    def stdout_path(self) -> Path:
        return self.directory / f"iolab-{self.job_id}.out"

    @property
    def stderr_path(self) -> Path:
        return self.directory / f"iolab-{self.job_id}.err"

    def stderr_tail(self, lines: int = 20) -> str:
        """The last lines of the job's stderr and of every step's stderr file."""
        chunks = []
        paths = [self.stderr_path] + (sorted(self.outdir.glob("*.err")) if self.outdir.is_dir() else [])
        for p in paths:
            try:
                text = p.read_text(errors="replace").strip()
            except OSError:
                continue
            if text:
                chunks.append(f"[{p.name}]\n" + "\n".join(text.splitlines()[-lines:]))
        return "\n".join(chunks)

    # -- waiting --------------------------------------------------------------------------------
    def _failure(self, info: JobInfo, cls: type[ToolFailed] = ToolFailed, what: str = "") -> ToolFailed:
        extra = f", reason {info.reason}" if info.reason and info.reason != "None" else ""
        code = f", exit code {info.exit_code}:{info.signal}" if info.exit_code is not None else ""
        msg = what or f"Slurm job {self.job_id} ended {info.state}{code}{extra}"
        err = cls(["sbatch", str(self.script_path)], info.exit_code, self.stderr_tail(), msg)
        err.job_id = self.job_id          # type: ignore[attr-defined]
        err.state = info.state            # type: ignore[attr-defined]
        err.info = info                   # type: ignore[attr-defined]
        return err

    def wait(self, timeout: float | None = None, *, poll: float = 0.2, max_poll: float = 2.0,
             cancel: bool = True) -> JobInfo:
        """Wait until the job ends; return its JobInfo when it COMPLETED.

        Raises ToolFailed (with ``.state``, ``.job_id`` and the tail of the job's stderr) when it
        ends in any other state, ToolTimeout when ``timeout`` seconds pass first. When the wait is
        cut short (timeout, KeyboardInterrupt), the job is cancelled unless ``cancel=False``.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = poll
        try:
            while True:
                info = self.info()
                if info.done:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    left = "cancelled" if cancel else "left running"
                    if cancel:
                        self.cancel()
                    raise self._failure(info, ToolTimeout,
                                        f"Slurm job {self.job_id} still {info.state} after {timeout} s "
                                        f"(reason {info.reason or 'none'}); {left}")
                time.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
                delay = min(max_poll, delay * 1.5)
        except KeyboardInterrupt:
            if cancel:
                self.cancel()
            raise
        if not info.ok:
            raise self._failure(info)
        return info

    def cancel(self) -> None:
        """scancel the job (nothing happens if it already ended)."""
        self._run(["scancel", self.job_id], timeout=30, check=False)

    # -- results --------------------------------------------------------------------------------
    def script(self) -> str:
        return safeio.read_text(self.script_path, what="sbatch script")

    def texts(self) -> list[dict[str, Any]]:
        """Every step's raw result text: one dict per task (or per result file) with its step and node."""
        out = []
        for name, man in read_manifest(self.script()):
            if not isinstance(man.get("result") or "", str):
                raise ParseError(f"the manifest of step {name} names a result that is not a file name")
            if man.get("result"):
                paths = [self.outdir / man["result"].replace("{step}", name)]
            else:
                paths = sorted(self.outdir.glob(f"{name}.*.out")) or [self.outdir / f"{name}.out"]
            for p in paths:
                node, host, task = None, "", None
                m = re.fullmatch(re.escape(name) + r"\.(\d+)\.(.+)\.(\d+)\.out", p.name)
                if m:
                    node, host, task = int(m.group(1)), m.group(2), int(m.group(3))
                text = safeio.read_text(p, what="job output", errors="replace") if p.exists() else None
                out.append({"step": name, "node": node, "host": host, "task": task, "path": p, "text": text,
                            "manifest": man})
        return out

    def outputs(self, parsers: Mapping[str, Callable[[str], list[dict[str, Any]]]] | None = None):
        """All results as one DataFrame: the tool's parsed columns plus job_id, step, node (index in
        the job), host, task, tool and the step's params. An MPI tool's results are read from rank 0
        (or its result file); every task of a non-MPI tool (fio) gives its own rows."""
        import pandas as pd

        frames = []
        for t in self.texts():
            man = t["manifest"]
            if not t["text"] or not t["text"].strip():
                continue
            if man.get("mpi") and not man.get("result") and t["task"] not in (None, 0):
                continue                 # an MPI tool reports on rank 0; the other ranks print warnings
            tool = man.get("tool", "")
            parse, to_frame = _parser(tool, (parsers or {}).get(tool))
            try:
                records = parse(t["text"])
            except ParseError as e:
                raise ParseError(f"job {self.job_id} step {t['step']} ({t['path']}): {e}") from e
            df = to_frame(records) if to_frame else pd.DataFrame(records)
            df.insert(0, "job_id", self.job_id)
            df.insert(1, "step", t["step"])
            df.insert(2, "node", t["node"])
            df.insert(3, "host", t["host"])
            df.insert(4, "task", t["task"])
            df.insert(5, "tool", tool)
            for k, v in {"nodes": man.get("nodes"), "tasks_per_node": man.get("tasks_per_node"),
                         **man.get("params", {})}.items():
                if k not in df.columns:
                    df[k] = v
            frames.append(df)
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)


# which function parses each tool's result text (the local-run parsers), and its to_frame
_PARSERS = {"fio": (fio.parse, fio.to_frame), "ior": (ior.parse, ior.to_frame), "mdtest": (mdtest.parse, mdtest.to_frame)}


def _parser(tool: str, given: Callable[[str], list[dict[str, Any]]] | None):
    if given is not None:
        return given, None
    if tool not in _PARSERS:
        raise IolabError(f"no parser for {tool!r} results; pass outputs(parsers={{{tool!r}: parse}})")
    return _PARSERS[tool]


def submit(script: str | os.PathLike[str], *, directory: str | os.PathLike[str] | None = None,
           env: Mapping[str, str] | None = None, sbatch_args: Sequence[str] = (), timeout: float = 60) -> Job:
    """``sbatch --parsable`` a script (its text, or the path of a script file) and return the Job.

    The script is saved as ``iolab-<n>.sbatch`` in ``directory`` (default ``./iolab-slurm``, which
    must be visible from the compute nodes), and sbatch runs there, so the job's outputs land
    there too. env: variables for the Slurm client commands (e.g. ``SLURM_CONF``).
    """
    directory = Path(directory or Path.cwd() / "iolab-slurm").absolute()
    directory.mkdir(parents=True, exist_ok=True)
    if isinstance(script, os.PathLike) or (isinstance(script, str) and "\n" not in script and Path(script).is_file()):
        text = Path(script).read_text()
    else:
        text = str(script)
    if not text.startswith("#!"):
        raise ValueError("an sbatch script starts with #! (e.g. #!/bin/bash)")
    path = _new_script_path(directory)
    path.write_text(text)
    r = runner.run(["sbatch", "--parsable", *sbatch_args, str(path)], timeout=timeout, cwd=directory,
                   env=dict(env) if env else None)
    job_id = r.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise ParseError("sbatch --parsable printed no job id", line_no=1, line=r.stdout.strip())
    return Job(job_id, directory, path, dict(env) if env else None)


def _new_script_path(directory: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for i in itertools.count():
        p = directory / f"iolab-{stamp}-{os.getpid()}-{i}.sbatch"
        try:
            with open(p, "x"):
                return p
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def run(steps: Step | Sequence[Step], *, timeout: float | None = None, directory: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, job_env: Mapping[str, str] | None = None, one_job_each: bool = False,
        **script_options: Any):
    """Write, submit, wait for and collect a sweep: one job with steps, or one job per step.

    env: variables for the Slurm client commands (as in :func:`submit`); job_env: variables the
    script exports (``batch_script(env=...)``); other keywords go to :func:`batch_script`.
    Returns ``(jobs, frame)``. Every job still running is cancelled if the wait fails or is interrupted.
    """
    if job_env is not None:
        script_options["env"] = job_env
    import pandas as pd

    steps = [steps] if isinstance(steps, Step) else list(steps)
    groups = [[s] for s in steps] if one_job_each else [steps]
    jobs: list[Job] = []
    try:
        for g in groups:
            opts = dict(script_options)
            if one_job_each:
                opts.setdefault("nodes", g[0].nodes)
                opts.setdefault("tasks_per_node", g[0].tasks_per_node)
            jobs.append(submit(batch_script(g, **opts), directory=directory, env=env))
        for j in jobs:
            j.wait(timeout=timeout)
    except BaseException:
        for j in jobs:
            try:
                if not j.info().done:
                    j.cancel()
            except Exception:
                pass
        raise
    frames = [j.outputs() for j in jobs]
    return jobs, (pd.concat(frames, ignore_index=True) if frames else pd.DataFrame())
