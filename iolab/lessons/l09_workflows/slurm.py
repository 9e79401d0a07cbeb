"""Lesson 09, section 5: the workflow's jobs as Slurm jobs, on the course's private Slurm.

What it measures, with two witnesses that must agree: the store's own counters (bytes and requests,
:mod:`iolab.tools.seaweedfs`) and snakemake's logs (the submit host's, and each Slurm job's own output),
read with the bucket's object sizes. Which fake node ran which rules comes from ``scontrol show job -o``,
recorded by the status command the moment Slurm says a job ended::

    acc = accounting(cluster.env)           # is there a job database? (none on the course's Slurm)
    r = run(workdir, env=store_env, slurm_env=cluster.env, grouped=True, metrics_url=ep.metrics_url)
    r.jobs                                  # one row per Slurm job: node, rules, sample, bytes
    r.puts("results/all.vcf")               # how many times the result was uploaded, by whom

Why snakemake's executor for Slurm is not the one used (read in the plugins' sources, versions pinned in
pyproject.toml): ``snakemake-executor-plugin-slurm`` 2.8.0 asks ``sacct`` for its jobs' states by default
whenever ``which sacct`` finds it (``_get_status_command_default``). Without an accounting database
sacct exits non-zero ("Slurm accounting storage is disabled"); ``query_job_status`` then returns
``(None, None)``, ``check_active_jobs`` logs that at debug level only and yields every job as still
active, round after round: the run waits for ever and says nothing. :func:`accounting` detects that
before a run, and :func:`slurm_plugin_args` either passes ``--slurm-status-command squeue`` (when
MinJobAge keeps ended jobs visible to squeue) or raises at once with what to set. Its job step
(``snakemake-executor-plugin-slurm-jobstep`` 0.6.1) also removes every ``SLURM_*`` variable, SLURM_CONF
included, before its nested ``srun``, so on a private cluster (no /etc/slurm/slurm.conf) every job fails
unless an ``srun`` wrapper puts SLURM_CONF back (:func:`srun_wrapper`).

``snakemake-executor-plugin-cluster-generic`` 1.0.9 submits with the command it is given (``sbatch``)
and asks the status command it is given (:data:`STATUS_SCRIPT`: ``scontrol show job -o``, which needs
no database) — no wrapper, no sacct. It is the lesson's executor. Its job scripts carry the store's keys (snakemake
writes ``export SNAKEMAKE_STORAGE_S3_...=...`` into them): they live in snakemake's ``.snakemake/tmp.*``,
made by ``tempfile.mkdtemp`` (0700), and sbatch keeps its copy in the controller's state directory
(root's); no key is on a command line.

Why the result is uploaded more than once (snakemake 9.27.1): a Slurm job runs a nested snakemake in
remote mode, whose jobs' ``postprocess(store_in_storage=False)`` defer the upload to
``DAG.store_storage_outputs()`` at its end (scheduling/job_scheduler.py, workflow.py): one PUT from the
node. Then the submit host's snakemake, in default mode with the default ``--shared-fs-usage``
(input-output shared), post-processes the finished job itself and ``DAG.handle_storage`` stores its
outputs again (``is_main_process``): a second PUT of the same bytes. The slurm plugin nests one more
snakemake (batch script -> srun -> snakemake), hence one more PUT. With the shared-filesystem default the
submit host also fetches every storage input before it submits, so the jobs fetch nothing on their
nodes: they read the submit host's local copies through the shared filesystem.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import explain, recordings, runner, safeio, slurm_cluster
from ... import slurm as _slurm
from ...tools import seaweedfs
from . import experiments
from . import lab as _lab
from .runs import Recorder, Step
from ...errors import IolabError, ParseError, ToolFailed, ToolMissing, ToolTimeout

EXECUTORS = ("cluster-generic", "slurm")
EXECUTOR = "cluster-generic"
GROUPS = ("map_reads=sample", "sort_alignments=sample", "samtools_index=sample")
#: what sacct says (to stderr, exit 1) when the cluster keeps no job database
ACCOUNTING_OFF = "accounting storage is disabled"

# snakemake's cluster-generic status command: one word for Slurm job $1 (success, failed or running),
# from scontrol, which needs no accounting database. A controller that does not answer is an error
# (exit 1: snakemake stops with "Failed to obtain job status"), never "running" for ever.
STATUS_SCRIPT = r"""#!/bin/sh
# written by iolab/lessons/l09_workflows/slurm.py
out=$(scontrol show job -o "$1" 2>&1)
rc=$?
case "$out" in
  *"Invalid job id"*) echo failed; exit 0 ;;
esac
if [ "$rc" -ne 0 ]; then
  echo "scontrol show job $1 failed ($rc): $out" >&2
  exit 1
fi
state=$(printf '%s\n' "$out" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
case "$state" in
  COMPLETED) echo success ;;
  PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESIZING|SIGNALING|STAGE_OUT|STAGE_IN) echo running ;;
  "") echo "scontrol show job $1 printed no JobState: $out" >&2; exit 1 ;;
  *) echo failed ;;
esac
"""

# the slurm plugin's job step strips SLURM_CONF before its nested srun: put it back
SRUN_WRAPPER = """#!/bin/sh
# written by iolab/lessons/l09_workflows/slurm.py: snakemake-executor-plugin-slurm-jobstep removes every
# SLURM_* variable before its srun; a private cluster's srun needs SLURM_CONF to find its controller
: "${SLURM_CONF:=$IOLAB_PRIVATE_SLURM_CONF}"
export SLURM_CONF
exec /usr/bin/srun "$@"
"""


# --- is there an accounting database? ------------------------------------------------------------

_CONF_LINE = re.compile(r"([A-Za-z][A-Za-z0-9_/().:\[\]-]*(?: [A-Za-z0-9_/().:-]+)*)\s*=\s?(.*)")
_CONF_OTHER = (re.compile(r"Configuration data as of .*"), re.compile(r"[A-Za-z][^=]*:"),
               re.compile(r"Slurmctld\(\w+\) at \S+ is (UP|DOWN)"), re.compile(r"\s+\S.*"))


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config`` as {key: value}: ParseError naming the line for one that is none of its
    kinds (``Key = value``, a section title ending in ':', its first and last lines), and for a text
    without AccountingStorageType (not that command's output)."""
    out: dict[str, str] = {}
    headers = 0
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if _CONF_OTHER[0].fullmatch(line):
            headers += 1
            if headers > 1:
                raise ParseError("a second `scontrol show config` output after the first", line_no=no, line=line[:200])
        m = _CONF_LINE.fullmatch(line)
        if m and not line[0].isspace():
            out.setdefault(m.group(1).strip(), m.group(2).strip())
        elif not any(p.fullmatch(line) for p in _CONF_OTHER):
            raise ParseError("not a line of `scontrol show config`", line_no=no, line=line[:200])
    if "AccountingStorageType" not in out:
        raise ParseError("no AccountingStorageType: not the output of `scontrol show config`")
    # it ends with the controllers' state ("Slurmctld(primary) at HOST is UP"): without it, cut short
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not _CONF_OTHER[2].fullmatch(lines[-1]):
        raise ParseError("`scontrol show config` cut short: it ends with the controllers' state "
                         "('Slurmctld(primary) at HOST is UP')", line_no=len(text.splitlines()), line=lines[-1][:200])
    return out


def _seconds(value: str) -> int | None:
    m = re.match(r"\s*(\d+)\s*(sec)?", value or "")
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Accounting:
    """What a cluster says about its job database, read from ``scontrol show config`` and one sacct."""

    storage_type: str                 # AccountingStorageType
    min_job_age: int | None           # MinJobAge, s: how long squeue and scontrol still show an ended job
    sacct_returncode: int | None      # None: sacct is not installed
    sacct_said: str                   # its stderr (or stdout), first line

    @property
    def enabled(self) -> bool:
        return (not self.storage_type.endswith("/none") and self.sacct_returncode == 0
                and ACCOUNTING_OFF not in self.sacct_said.lower())

    @property
    def squeue_works(self) -> bool:
        """squeue sees an ended job for MinJobAge s: the slurm plugin asks at least every few seconds."""
        return (self.min_job_age or 0) >= 3

    def describe(self) -> str:
        if self.enabled:
            return f"accounting is on ({self.storage_type}): sacct answers"
        said = f"sacct said: {self.sacct_said!r}" if self.sacct_said else "sacct is not installed"
        return (f"no accounting database (AccountingStorageType={self.storage_type}; {said}); "
                f"ended jobs stay visible to squeue and scontrol for MinJobAge={self.min_job_age} s")


def judge(config_text: str, sacct_returncode: int | None, sacct_output: str) -> Accounting:
    """The verdict from the two outputs (live or recorded)."""
    conf = parse_config(config_text)
    first = next((ln.strip() for ln in sacct_output.splitlines() if ln.strip()), "")
    return Accounting(conf["AccountingStorageType"], _seconds(conf.get("MinJobAge", "")), sacct_returncode,
                      first)


def accounting_texts(slurm_env: dict[str, str] | None = None, *, timeout: float = 15) -> dict[str, Any]:
    """What the cluster answers (``scontrol show config``, then a bounded ``sacct``), verbatim:
    {'config', 'sacct_returncode' (None: no sacct), 'sacct_output'}. ToolMissing without scontrol."""
    conf = runner.run(["scontrol", "show", "config"], timeout=timeout, env=slurm_env)
    if runner.which("sacct") is None:
        return {"config": conf.stdout, "sacct_returncode": None, "sacct_output": ""}
    r = runner.run(["sacct", "-n", "-X", "-o", "JobID", "-S", "now"], timeout=timeout, env=slurm_env, check=False)
    return {"config": conf.stdout, "sacct_returncode": r.returncode,
            "sacct_output": r.stderr if r.returncode else r.stdout}


def accounting(slurm_env: dict[str, str] | None = None, *, timeout: float = 15) -> Accounting:
    """Ask the cluster whether it keeps a job database (see :func:`accounting_texts`, :func:`judge`)."""
    t = accounting_texts(slurm_env, timeout=timeout)
    return judge(t["config"], t["sacct_returncode"], t["sacct_output"])


class NoAccounting(IolabError):
    """The slurm plugin would wait for ever on sacct: what to set instead."""


def slurm_plugin_args(acc: Accounting) -> list[str]:
    """The status options ``--executor slurm`` needs on this cluster: none with accounting,
    ``--slurm-status-command squeue`` without it (if squeue keeps ended jobs long enough), else
    NoAccounting at once (the plugin would otherwise hang silently)."""
    if acc.enabled:
        return []
    if acc.squeue_works:
        return ["--slurm-status-command", "squeue"]
    raise NoAccounting(
        f"{acc.describe()}. snakemake's slurm executor would ask sacct for ever and never see a job end. "
        "Set MinJobAge to 300 or more in slurm.conf and pass --slurm-status-command squeue, or run with "
        "--executor cluster-generic and a status command that asks `scontrol show job -o` "
        "(iolab.lessons.l09_workflows.slurm.STATUS_SCRIPT).")


def refuse_hang(argv: list[str], acc: Accounting) -> None:
    """NoAccounting when argv runs the slurm plugin with its sacct default on a cluster without accounting."""
    if "slurm" not in _option_values(argv, "--executor"):
        return
    status = _option_values(argv, "--slurm-status-command")
    if not acc.enabled and (not status or status[-1] != "squeue"):
        raise NoAccounting(f"{acc.describe()}. `snakemake --executor slurm` polls sacct by default and would wait "
                           "without end and without a word: add --slurm-status-command squeue "
                           "(iolab's slurm_plugin_args does).")


def _option_values(argv: list[str], option: str) -> list[str]:
    out = []
    for i, a in enumerate(argv):
        if a == option and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif a.startswith(option + "="):
            out.append(a.split("=", 1)[1])
    return out


# --- the run -------------------------------------------------------------------------------------

def _write_exe(path: Path, text: str) -> Path:
    fd, _ = safeio.open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o700)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o700)
    return path


def srun_wrapper(directory: Path) -> Path:
    """A directory holding the srun wrapper (put it first on PATH for the slurm plugin's jobs)."""
    d = directory / "srun-wrapper"
    d.mkdir(exist_ok=True)
    _write_exe(d / "srun", SRUN_WRAPPER)
    return d


def argv(executor: str = EXECUTOR, *, grouped: bool = True, jobs: int = 3, status_cmd: str | os.PathLike[str] = "",
         acc: Accounting | None = None, extra: list[str] | None = None) -> list[str]:
    """snakemake's command line for the workflow on Slurm (the lesson shows it as is)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor is one of {EXECUTORS}")
    a = ["snakemake", "--executor", executor, "--jobs", str(jobs), "--latency-wait", "10",
         "--max-status-checks-per-second", "2"]
    if executor == "cluster-generic":
        if not status_cmd:
            raise ValueError("cluster-generic needs the status command (STATUS_SCRIPT written to a file)")
        a += ["--cluster-generic-submit-cmd", "sbatch --parsable --job-name=smk -o logs/slurm/%j.out",
              "--cluster-generic-status-cmd", os.fspath(status_cmd), "--cluster-generic-cancel-cmd", "scancel"]
    else:
        if acc is None:
            raise ValueError("the slurm executor needs the cluster's Accounting (accounting())")
        a += ["--slurm-no-account", "--slurm-init-seconds-before-status-checks", "1",
              "--slurm-keep-successful-logs", *slurm_plugin_args(acc)]
    if grouped:
        a += ["--groups", *GROUPS]
    a += list(extra or [])
    if acc is not None:
        refuse_hang(a, acc)
    return a


def no_shared_fs(workdir: Path, bucket: str = "training", prefix: str = "work") -> list[str]:
    """snakemake's options for a cluster whose nodes share no filesystem with the submit host: each job
    fetches its own storage inputs into a node-local prefix (``<workdir>/node-$SLURMD_NODENAME`` here,
    the fake nodes being one host), and every file that is not a storage file (the BAMs) goes through the
    bucket under ``s3://<bucket>/<prefix>/`` (the default storage provider), deleted again when temporary."""
    return ["--shared-fs-usage", "persistence", "software-deployment", "sources", "source-cache",
            "--default-storage-provider", "s3", "--default-storage-prefix", f"s3://{bucket}/{prefix}",
            "--remote-job-local-storage-prefix", str(workdir / "node-$SLURMD_NODENAME")]


@dataclass
class SlurmRun:
    """One run of the workflow on Slurm: what it cost and what each job did."""

    argv: list[str]
    executor: str
    grouped: bool
    returncode: int
    seconds: float
    load: tuple[float, float]                      # 1-min load average before and after
    log: str                                       # the submit host's snakemake (stderr)
    job_logs: dict[str, str] = field(default_factory=dict)       # Slurm job id -> its output
    status_lines: list[str] = field(default_factory=list)        # scontrol -o of each ended job
    sizes: dict[str, int] = field(default_factory=dict)          # key in the bucket -> bytes
    bucket: str = "training"
    metrics: tuple[str, str] = ("", "")                          # the store's /metrics before and after
    accounting: Accounting | None = None
    accounting_texts: dict[str, Any] = field(default_factory=dict)   # scontrol show config, sacct's answer

    @property
    def counters(self):
        """The store's counters moved by the run (seaweedfs.S3Counters), None without its metrics."""
        if not all(self.metrics):
            return None
        before, after = (seaweedfs.counters(seaweedfs.parse(t)) for t in self.metrics)
        return after.minus(before)

    def to_json(self) -> str:
        """Everything the run printed, verbatim, as one JSON document (a recording's raw file)."""
        keep = ("argv", "executor", "grouped", "returncode", "seconds", "load", "log", "job_logs", "status_lines",
                "sizes", "bucket", "metrics", "accounting_texts")
        return json.dumps({k: getattr(self, k) for k in keep}, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "SlurmRun":
        """A recorded run, read back through the same parsers (ParseError for a document that is not one)."""
        d = safeio.loads(text)
        need = {"argv": list, "executor": str, "grouped": bool, "returncode": int, "seconds": (int, float),
                "load": list, "log": str, "job_logs": dict, "status_lines": list, "sizes": dict, "bucket": str,
                "metrics": list, "accounting_texts": dict}
        if not isinstance(d, dict):
            raise ParseError("a recorded Slurm run is a JSON object")
        for k, t in need.items():
            if not isinstance(d.get(k), t):
                raise ParseError(f"a recorded Slurm run needs {k!r} ({t})")
        if d["executor"] not in EXECUTORS or len(d["metrics"]) != 2 or len(d["load"]) != 2:
            raise ParseError("a recorded Slurm run: executor, metrics (before, after) or load is not what a run writes")
        acc = d["accounting_texts"]
        r = cls(d["argv"], d["executor"], d["grouped"], d["returncode"], float(d["seconds"]), tuple(d["load"]),
                d["log"], d["job_logs"], d["status_lines"], d["sizes"], d["bucket"], tuple(d["metrics"]),
                judge(acc["config"], acc["sacct_returncode"], acc["sacct_output"]) if acc else None, acc)
        parse_main_log(r.log)
        for t in r.job_logs.values():
            parse_job_log(t)
        return r

    @property
    def jobs(self):
        return jobs_frame(self)

    @property
    def shared_fs(self) -> bool:
        """Whether snakemake assumed a filesystem shared by the submit host and the nodes (its default)."""
        return "--shared-fs-usage" not in self.argv

    def puts(self, key: str) -> dict[str, int]:
        """Who uploaded ``key`` how many times, from the logs: {'submit host': n, 'node jobs': m}."""
        url = f"s3://{self.bucket}/{key}"
        host = _stores(self.log).count(url)
        nodes = sum(_stores(t).count(url) for t in self.job_logs.values())
        return {"submit host": host, "node jobs": nodes}


_SUBMITTED = re.compile(r"Submitted (group job|job) (\S+) with external jobid '(\d+)'\.")
_SUBMITTED_SLURM = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")
# each such line ends where snakemake ends it (a newline after the URL): a log cut inside one names no URL
_RETRIEVE = re.compile(r"Retrieving from storage: (s3://\S+)[ \t]*\n")
_STORE = re.compile(r"Storing in storage: (s3://\S+)[ \t]*\n")
_RULE = re.compile(r"(?:local)?rule (\w+):")
_WILDCARDS = re.compile(r"\s+wildcards: (.*)")
_INPUT = re.compile(r"\s+input: (.*)")


def _retrievals(text: str) -> list[str]:
    return _RETRIEVE.findall(text)


def _stores(text: str) -> list[str]:
    return _STORE.findall(text)


def parse_job_log(text: str) -> dict[str, Any]:
    """A Slurm job's output (its nested snakemake): the rules it ran, their wildcards, what it fetched
    from and stored to the store. ParseError when it is no snakemake log (no 'Snakemake version')."""
    if "Snakemake version:" not in text and "Building DAG of jobs" not in text:
        raise ParseError("not the output of a snakemake job (no 'Snakemake version' line)",
                         line_no=1, line=text.splitlines()[0][:200] if text.strip() else "")
    rules, wildcards, inputs = [], [], []
    lines = text.splitlines()
    if not text.endswith("\n"):
        lines = lines[:-1]          # snakemake ends each line: a last one without its end was cut short
    for line in lines:
        m = _RULE.match(line)
        if m:
            rules.append(m.group(1))
            continue
        m = _WILDCARDS.match(line)
        if m:
            wildcards.append(m.group(1).strip())
            continue
        m = _INPUT.match(line)
        if m:
            inputs += re.findall(r"(s3://\S+?),? \((?:retrieve from storage|in storage)\)", m.group(1))
    return {"rules": rules, "wildcards": sorted(set(wildcards)), "retrieved": _retrievals(text),
            "stored": _stores(text), "storage_inputs": sorted(set(inputs))}


def parse_main_log(text: str) -> dict[str, Any]:
    """The submit host's snakemake log: the jobs it submitted (external id -> kind), what it fetched
    and stored. ParseError when it shows no snakemake at all."""
    if "Building DAG of jobs" not in text:
        raise ParseError("not a snakemake log (no 'Building DAG of jobs' line)", line_no=1,
                         line=text.splitlines()[0][:200] if text.strip() else "")
    submitted = {m.group(3): m.group(1) for m in _SUBMITTED.finditer(text)}
    submitted.update({m.group(2): "group job" if "/group_" in m.group(3) else "job"
                      for m in _SUBMITTED_SLURM.finditer(text)})
    return {"submitted": submitted, "retrieved": _retrievals(text), "stored": _stores(text)}


def _size(sizes: dict[str, int], url: str, bucket: str) -> int:
    key = url.removeprefix(f"s3://{bucket}/")
    if key not in sizes:
        raise ParseError(f"{url} is in the log but not in the bucket's listing")
    return sizes[key]


def jobs_frame(r: SlurmRun):
    """One row per Slurm job: node, state, run time, rules, sample, storage inputs it read (bytes of
    the local copies the submit host fetched), what it fetched and stored on its node (bytes)."""
    import pandas as pd

    states = {}
    for line in r.status_lines:
        f = _slurm.parse_scontrol(line + "\n")
        states[f["JobId"]] = f
    main = parse_main_log(r.log)
    rows = []
    for job_id in sorted(main["submitted"], key=int):
        f = states.get(job_id, {})
        parsed = parse_job_log(r.job_logs[job_id]) if job_id in r.job_logs else None
        rules = parsed["rules"] if parsed else []
        rows.append({
            "slurm_job": int(job_id), "kind": main["submitted"][job_id],
            "node": f.get("NodeList", ""), "state": f.get("JobState", ""),
            "run_s": _runtime(f.get("RunTime", "")),
            "rules": "+".join(dict.fromkeys(rules)),
            "sample": ",".join(w.removeprefix("sample=") for w in parsed["wildcards"]) if parsed else "",
            "inputs_from_storage_bytes": sum(_size(r.sizes, u, r.bucket) for u in parsed["storage_inputs"])
            if parsed else None,
            "fetched_on_node_bytes": sum(_size(r.sizes, u, r.bucket) for u in parsed["retrieved"]) if parsed else None,
            "stored_from_node_bytes": sum(_size(r.sizes, u, r.bucket) for u in parsed["stored"]) if parsed else None,
        })
    return pd.DataFrame(rows)


def _runtime(text: str) -> int | None:
    m = re.fullmatch(r"(?:(\d+)-)?(\d+):(\d\d):(\d\d)", text.strip())
    if not m:
        return None
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def byte_accounting(r: SlurmRun) -> dict[str, int | None]:
    """The bytes each side moved, from the logs and the object sizes, beside the store's own counters:
    'fetched by submit host', 'fetched on nodes', 'stored by submit host', 'stored from nodes',
    'store sent', 'store received' (the last two None without counters)."""
    main = parse_main_log(r.log)
    jobs = [parse_job_log(t) for t in r.job_logs.values()]
    out: dict[str, int | None] = {
        "fetched by submit host": sum(_size(r.sizes, u, r.bucket) for u in main["retrieved"]),
        "fetched on nodes": sum(_size(r.sizes, u, r.bucket) for j in jobs for u in j["retrieved"]),
        "stored by submit host": sum(_size(r.sizes, u, r.bucket) for u in main["stored"]),
        "stored from nodes": sum(_size(r.sizes, u, r.bucket) for j in jobs for u in j["stored"]),
        "store sent": None, "store received": None, "PUT": None,
    }
    c = r.counters
    if c is not None:
        out["store sent"] = c.bytes_sent(r.bucket)
        out["store received"] = c.bytes_received(r.bucket)
        out["PUT"] = c.count("PUT", bucket=r.bucket)
    return out


def _job_logs(workdir: Path, executor: str) -> dict[str, str]:
    out = {}
    if executor == "cluster-generic":
        paths = (workdir / "logs" / "slurm").glob("*.out")
    else:
        paths = (workdir / ".snakemake" / "slurm_logs").rglob("*.log")
    for p in paths:
        if p.stem.isdigit():
            out[p.stem] = safeio.read_text(p, limit=4 << 20, what="Slurm job output")
    return out


def _queue(slurm_env: dict[str, str], workdir: Path) -> list[str]:
    """This user's jobs still queued or running whose working directory is ``workdir`` (the run's own:
    on a shared cluster nobody else's job, and none of this user's other jobs, is ever touched)."""
    r = runner.run(["squeue", "--me", "-h", "-o", "%i %Z"], timeout=15, env=slurm_env, check=False)
    if r.returncode != 0:
        return []
    mine = []
    for line in r.stdout.splitlines():
        job, _, where = line.strip().partition(" ")
        if job and Path(where.strip()) == workdir.resolve():
            mine.append(job)
    return mine


def _leave_nothing(workdir: Path, slurm_env: dict[str, str], proc: subprocess.Popen[str] | None) -> list[str]:
    """End snakemake's process group, cancel the run's jobs still queued or running, release its
    locks. Returns the job ids it had to cancel."""
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)           # snakemake cancels its jobs (scancel) and unlocks
            proc.wait(timeout=20)
        except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
    left = _queue(slurm_env, workdir)
    if left:
        runner.run(["scancel", *left], timeout=15, env=slurm_env, check=False)
    locks = workdir / ".snakemake" / "locks"
    if locks.is_dir():
        for p in locks.iterdir():
            if p.is_file() and not p.is_symlink():
                p.unlink()
    return left


def run(workdir: str | os.PathLike[str], *, env: dict[str, str], slurm_env: dict[str, str],
        executor: str = EXECUTOR, grouped: bool = True, jobs: int = 3, metrics_url: str = "",
        bucket: str = "training", sizes: dict[str, int] | None = None, timeout: float = 600,
        extra: list[str] | None = None, lister: Any = None) -> SlurmRun:
    """Run the workflow in ``workdir`` (its Snakefile there) with its jobs as Slurm jobs.

    env: the store's variables for snakemake (SNAKEMAKE_STORAGE_S3_*); slurm_env: the cluster's
    (SLURM_CONF, :attr:`iolab.slurm_cluster.SlurmCluster.env`); metrics_url: the store's counters,
    read before and after; sizes: the bucket's object sizes (key -> bytes; the result's is added by
    the caller once it exists); lister: a function giving {key: bytes} of the bucket, asked every
    second while the run lasts, for the objects a run without a shared filesystem puts and deletes
    again (its intermediates: their sizes are gone by the end). A job that fails raises ToolFailed naming the job, its node and the
    tail of its output; a run past ``timeout`` raises ToolTimeout. Either way, and on an interrupt,
    no job is left in the queue, no snakemake is left running and no lock is left in .snakemake.
    """
    workdir = Path(workdir)
    if shutil.which("snakemake", path=os.environ.get("PATH")) is None:
        raise ToolMissing("snakemake", "pip install -e '.[workflows]' (the lesson's extra)")
    acc_texts = accounting_texts(slurm_env)
    acc = judge(acc_texts["config"], acc_texts["sacct_returncode"], acc_texts["sacct_output"])
    (workdir / "logs" / "slurm").mkdir(parents=True, exist_ok=True)
    status = _write_exe(workdir / "slurm-status.sh", STATUS_SCRIPT)
    a = argv(executor, grouped=grouped, jobs=jobs, status_cmd=status, acc=acc, extra=extra)
    full = dict(os.environ)
    full.update(env)
    full.update(slurm_env)
    if executor == "slurm":
        full["PATH"] = f"{srun_wrapper(workdir)}{os.pathsep}{full.get('PATH', '')}"
        full["IOLAB_PRIVATE_SLURM_CONF"] = slurm_env.get("SLURM_CONF", "")
    sizes = dict(sizes or {})
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_sizes, args=(lister, sizes, stop), daemon=True) if lister else None
    counters_before = _scrape(metrics_url)
    load0 = os.getloadavg()[0]
    if watcher:
        watcher.start()
    t0 = time.perf_counter()
    proc = None
    try:
        proc = subprocess.Popen(a, cwd=workdir, env=full, text=True, errors="replace", stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            cancelled = _leave_nothing(workdir, slurm_env, proc)
            raise ToolTimeout(a, None, "", f"snakemake on Slurm did not finish within {timeout} s: stopped, "
                              f"{len(cancelled)} Slurm job(s) cancelled, its lock released") from None
    except BaseException:
        _leave_nothing(workdir, slurm_env, proc)
        raise
    finally:
        stop.set()
        if watcher:
            watcher.join(timeout=30)
    seconds = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    metrics_after = _scrape(metrics_url)
    submitted = list(parse_main_log(err)["submitted"]) if "Building DAG of jobs" in err else []
    r = SlurmRun(a, executor, grouped, proc.returncode, seconds, (load0, load1), err,
                 _job_logs(workdir, executor), _ended(submitted, slurm_env), sizes, bucket,
                 (counters_before, metrics_after), acc, acc_texts)
    left = _leave_nothing(workdir, slurm_env, None)
    if proc.returncode != 0:
        head, detail = _failure(r, left)
        raise ToolFailed(a, proc.returncode, detail, head)
    return r


def _watch_sizes(lister: Any, sizes: dict[str, int], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        try:
            for k, n in lister().items():
                sizes[k] = max(n, sizes.get(k, 0))
        except Exception:        # a listing that failed once is asked again in a second
            continue


def _ended(job_ids: list[str], slurm_env: dict[str, str]) -> list[str]:
    """scontrol's line for each job (MinJobAge keeps an ended job in the controller): which node ran it,
    its state, run time and exit code."""
    out = []
    for j in job_ids:
        r = runner.run(["scontrol", "show", "job", "-o", j], timeout=15, env=slurm_env, check=False)
        out += [ln for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []
    return out


def _failure(r: SlurmRun, cancelled: list[str]) -> tuple[str, str]:
    """(headline, detail): which Slurm job failed, with which rules, on which node and exit code, what
    its command printed last; the detail is the end of that job's output (or of snakemake's log)."""
    heads, detail = [], ""
    for line in r.status_lines:
        f = _slurm.parse_scontrol(line + "\n")
        if f.get("JobState") == "COMPLETED":
            continue
        out = r.job_logs.get(f["JobId"], "")
        lines = out.splitlines()
        err = next((i for i, ln in enumerate(lines) if ln.startswith("Error in rule")), len(lines))
        said = [ln.strip() for ln in lines[max(0, err - 6):err] if ln.strip() and not ln.startswith("[")]
        rules = "+".join(dict.fromkeys(parse_job_log(out)["rules"])) if out and "Building DAG" in out else "?"
        heads.append(f"Slurm job {f['JobId']} (rule {rules}) {f.get('JobState')} on {f.get('NodeList')} "
                     f"(exit {f.get('ExitCode')})" + (f"; its command printed: {' | '.join(said)}" if said else ""))
        detail = detail or "\n".join(lines[-20:])
    head = "; ".join(heads) or "snakemake on Slurm failed"
    head += (f"; cancelled what was still queued ({', '.join(cancelled)})" if cancelled else "")
    head += "; no job is left in the queue and no lock in .snakemake"
    return head, detail or "\n".join(r.log.strip().splitlines()[-20:])


def _scrape(url: str) -> str:
    """The store's S3 gateway counters (its /metrics, the lines of SeaweedFS_s3_* only: the rest is the
    Go runtime's and the other servers', 50 kB that tell nothing about requests)."""
    if not url:
        return ""

    keep = [ln for ln in seaweedfs.scrape(url).splitlines(keepends=True)
            if re.match(r"(# (HELP|TYPE) )?SeaweedFS_s3_", ln)]
    return "".join(keep)


def leftovers(workdir: str | os.PathLike[str], slurm_env: dict[str, str]) -> dict[str, list[str]]:
    """What a run left: jobs in the queue, snakemake locks, incomplete markers (each empty after run())."""
    w = Path(workdir) / ".snakemake"
    def names(d: Path) -> list[str]:
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []
    return {"jobs": _queue(slurm_env, w.parent), "locks": names(w / "locks"), "incomplete": names(w / "incomplete")}


# --- the seed's "before": three sbatch jobs chained with afterok ---------------------------------

BEFORE_JOBS = {
    "job1.sbatch": """#!/bin/bash
#SBATCH --job-name=map-sort
#SBATCH --array=0-2
#SBATCH --output=logs/%x-%A_%a.out
set -euo pipefail
samples=(A B C)
s=${samples[$SLURM_ARRAY_TASK_ID]}
echo "node $SLURMD_NODENAME sample $s"
mkdir -p mapped_reads sorted_reads
bwa mem data/genome.fa data/samples/$s.fastq 2> logs/bwa-$s.log | samtools view -b - > mapped_reads/$s.bam
samtools sort -T sorted_reads/$s -O bam mapped_reads/$s.bam > sorted_reads/$s.bam
""",
    "job2.sbatch": """#!/bin/bash
#SBATCH --job-name=index
#SBATCH --array=0-2
#SBATCH --output=logs/%x-%A_%a.out
set -euo pipefail
samples=(A B C)
s=${samples[$SLURM_ARRAY_TASK_ID]}
echo "node $SLURMD_NODENAME sample $s"
samtools index sorted_reads/$s.bam
""",
    "job3.sbatch": """#!/bin/bash
#SBATCH --job-name=call
#SBATCH --output=logs/%x-%j.out
set -euo pipefail
echo "node $SLURMD_NODENAME"
mkdir -p results
bcftools mpileup -f data/genome.fa sorted_reads/{A,B,C}.bam 2> logs/mpileup.log | bcftools call -mv - > results/all.vcf
""",
}


@dataclass
class Chain:
    """The seed's three chained jobs: their ids, nodes and seconds, and the scratch directory's peak."""

    jobs: list[dict[str, Any]]
    seconds: float
    scripts: dict[str, str]


def before_chain(stage: str | os.PathLike[str], *, slurm_env: dict[str, str], timeout: float = 300) -> Chain:
    """Run the seed's "before" in ``stage`` (the staged copy: data/genome.fa*, data/samples/*.fastq) as
    three sbatch jobs, the second and third held with ``--dependency=afterok`` on the one before.
    Returns when the third ended (ToolFailed naming the job that did not complete; every job of the
    chain still queued is cancelled on any error or interrupt)."""
    stage = Path(stage)
    (stage / "logs").mkdir(exist_ok=True)
    scripts = dict(BEFORE_JOBS)
    t0 = time.perf_counter()
    submitted: list[_slurm.Job] = []
    try:
        prev = None
        for name, text in scripts.items():
            args = [f"--dependency=afterok:{prev.job_id}"] if prev else []
            prev = _slurm.submit(text, directory=stage, env=slurm_env, sbatch_args=args)
            submitted.append(prev)
        assert prev is not None
        _wait_chain(submitted, timeout)
    except BaseException:
        for j in submitted:
            j.cancel()
        raise
    rows = [{"job": name, "slurm_job": int(j.job_id), "dependency": f"afterok:{submitted[i - 1].job_id}" if i else "",
             "nodes": ",".join(sorted(_array_nodes(stage, j.job_id)))}
            for i, (name, j) in enumerate(zip(scripts, submitted))]
    return Chain(rows, time.perf_counter() - t0, scripts)


def _wait_chain(jobs: list[_slurm.Job], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for j in jobs:
        while True:
            info = _array_state(j)
            if info in ("done", "failed"):
                break
            if time.monotonic() > deadline:
                raise ToolTimeout(["sbatch", j.job_id], None, "", f"the chain's job {j.job_id} still runs after "
                                  f"{timeout} s: cancelled")
            time.sleep(0.3)
        if info == "failed":
            raise ToolFailed(["sbatch", j.job_id], 1, f"Slurm job {j.job_id} of the chain did not complete; "
                             "the jobs after it were cancelled")


def _array_state(job: _slurm.Job) -> str:
    """'done', 'failed' or 'running' for a job or a whole job array (every task ended and completed)."""
    r = runner.run(["scontrol", "show", "job", "-o", job.job_id], timeout=15, env=job.env, check=False)
    if r.returncode != 0:
        raise ToolFailed(["scontrol", "show", "job", job.job_id], r.returncode, r.stderr)
    states = [_slurm.parse_scontrol(ln + "\n").get("JobState", "") for ln in r.stdout.splitlines() if ln.strip()]
    if any(s not in _slurm.TERMINAL for s in states):
        return "running"
    return "done" if all(s == "COMPLETED" for s in states) else "failed"


def _array_nodes(stage: Path, job_id: str) -> set[str]:
    nodes = set()
    for p in (stage / "logs").glob(f"*-{job_id}*.out"):
        m = re.match(r"node (\S+)", safeio.read_text(p, limit=1 << 16, what="job output"))
        if m:
            nodes.add(m.group(1))
    return nodes


# --- the lesson's door: live or replayed ---------------------------------------------------------

RECORDING = "workflows/slurm-cluster-generic-grouped-1"
LIVE_SECONDS = 60        # what one grouped run took here at load 1-3 (the recordings' notes have each)


@dataclass
class OnSlurm(recordings.Outcome):
    """The workflow on Slurm, live or replayed: the run (``data``), its jobs (``frame``: node, rules,
    sample, bytes), the bytes each side moved beside the store's counters, who uploaded the result."""

    accounting_verdict: Accounting | None = None
    bytes: dict[str, int | None] = field(default_factory=dict)
    result_puts: dict[str, int] = field(default_factory=dict)


def on_slurm(lab: Any = None, *, live: bool = False, grouped: bool = True, executor: str = EXECUTOR,
             recording: str = RECORDING, save_as: str | None = None) -> OnSlurm:
    """Section 5: the workflow's jobs as Slurm jobs on a private 2-node Slurm started here.

    Replayed by default (a run takes about a minute on a quiet machine: more than the lesson's 90 s
    allow beside its other runs); ``live=True`` runs it here when Slurm can start (root, slurm-wlm,
    munge: :func:`iolab.slurm_cluster.why_not`) with ``lab`` (lesson 09's store and data, its ``.ws``,
    ``.ep``, ``.env(workdir)``, ``.client()``, ``.bucket``). The cluster is stopped before it returns."""

    def unavailable() -> str | None:
        why = recordings.unless_asked(live, f"replayed by default: one run on Slurm takes about {LIVE_SECONDS} s "
                                            "here (on_slurm(lab, live=True) runs it, as IOLAB_MODE=live does)")
        if why:
            return why
        if lab is None:
            return "no store was started here (lab is None)"
        return slurm_cluster.why_not()

    def run_live() -> OnSlurm:
        workdir = Path(lab.ws.mkdir(f"l09-slurm-{os.getpid()}-{time.monotonic_ns()}"))
        shutil.copy(_lab.SNAKEFILE, workdir / "Snakefile")
        cl = lab.client()
        try:
            cl.delete_object(Bucket=lab.bucket, Key="results/all.vcf")
        except Exception:
            pass
        sizes = _lab.listing(cl, lab.bucket)
        with slurm_cluster.SlurmCluster(nodes=2, base=lab.ws.path("")) as cluster:
            r = run(workdir, env=lab.env(workdir), slurm_env=cluster.env, executor=executor, grouped=grouped,
                    metrics_url=lab.ep.metrics_url, bucket=lab.bucket, sizes=sizes)
        r.sizes.update(_lab.listing(cl, lab.bucket))
        text = r.to_json()
        if save_as:
            recordings.save(text, f"workflows/{save_as}", ext="json", argv=r.argv,
                            tool_version=runner.tool_version("snakemake") or "",
                            notes=f"lesson 09's workflow on the private 2-node Slurm, {executor}, "
                                  f"{'grouped' if grouped else 'ungrouped'}; load {r.load[0]:.1f}->{r.load[1]:.1f}")
        return OnSlurm("live", text, f"LIVE run here on a private 2-node Slurm ({r.seconds:.0f} s, load "
                       f"{r.load[0]:.1f}->{r.load[1]:.1f})", data=r)

    out = recordings.live_or_recorded(run_live, recording, unavailable=unavailable, cls=OnSlurm,
                                      read=lambda rec: SlurmRun.from_json(rec.text), frame=jobs_frame)
    r = out.data
    out.accounting_verdict = r.accounting
    out.bytes = byte_accounting(r)
    out.result_puts = r.puts("results/all.vcf")
    return out


@dataclass
class BenchRun:
    """One run on Slurm as benchmarks/bench_workflows.py compares it with the local ones."""

    run: SlurmRun
    moved: Any            # experiments.Moved: the store's counters over the run
    peak: int             # the run directory's high-water mark (bytes: local copies, BAMs, node prefixes)
    left_bytes: int       # what is in it afterwards

    @property
    def seconds(self) -> float:
        return self.run.seconds


def bench_run(lab: Any, *, executor: str = EXECUTOR, grouped: bool = True, nodes_fetch: bool = False) -> BenchRun:
    """The workflow on a private 2-node Slurm started for this run (stopped before it returns), with
    lesson 09's store and data (``lab``), its run directory sampled like the local runs'."""

    workdir = Path(lab.ws.mkdir(f"l09-slurm-bench-{os.getpid()}-{time.monotonic_ns()}"))
    shutil.copy(_lab.SNAKEFILE, workdir / "Snakefile")
    cl = lab.client()
    cl.delete_object(Bucket=lab.bucket, Key="results/all.vcf")
    sizes = _lab.listing(cl, lab.bucket)
    with slurm_cluster.SlurmCluster(nodes=2, base=lab.ws.path("")) as cluster, _lab.Sampler(workdir) as sampler:
        r = run(workdir, env=lab.env(workdir), slurm_env=cluster.env, executor=executor, grouped=grouped,
                metrics_url=lab.ep.metrics_url, bucket=lab.bucket, sizes=sizes,
                extra=no_shared_fs(workdir, lab.bucket) if nodes_fetch else None,
                lister=(lambda: _lab.listing(cl, lab.bucket)) if nodes_fetch else None)
    moved = experiments.Moved.of(r.counters, lab.bucket)
    return BenchRun(r, moved, int(max(x[1] for x in sampler.samples)), _lab.tree_bytes(workdir))


def slurm_claims(out: OnSlurm, *, show: bool = True) -> list[explain.Claim]:
    """Section 5's sentences, each chosen by this run's (or recording's) numbers."""
    b, puts, jobs = out.bytes, out.result_puts, out.frame
    vcf = out.data.sizes.get("results/all.vcf")
    staged = b["fetched on nodes"] == 0 and b["fetched by submit host"] == b["store sent"]
    nodes = sorted(set(jobs["node"])) if jobs is not None and len(jobs) else []
    return [
        explain.expect(
            "the submit host fetches every input once, before it submits, and the jobs fetch nothing on their nodes",
            explain.fact("staged by the submit host", staged if b["store sent"] is not None else None),
            yes=f"the store sent {b['store sent']:,} bytes, all of them to the submit host's snakemake; the jobs' "
                f"own logs retrieve {b['fetched on nodes']:,} bytes" if b["store sent"] is not None else "",
            no=f"the nodes fetched {b['fetched on nodes']:,} bytes themselves",
            why="a run with --shared-fs-usage without input-output makes each job fetch its own inputs",
            missing="the store's counters were not read", show=show),
        explain.expect(
            "the result is uploaded more than once",
            explain.greater("PUTs of the result", b["PUT"], "one", 1) if b["PUT"] is not None else
            explain.fact("PUTs", None),
            yes=f"{b['PUT']} PUTs of {vcf:,} bytes each: {puts['node jobs']} from the job on its node, "
                f"{puts['submit host']} from the submit host after it" if vcf and b["PUT"] else "",
            no=f"{b['PUT']} PUT", why="a snakemake without a shared filesystem stores only from the job",
            missing="the store's counters were not read", show=show),
        explain.expect(
            "Slurm spreads the jobs over both nodes",
            explain.fact("more than one node", len(nodes) > 1 if nodes else None),
            yes=f"jobs ran on {', '.join(nodes)} ({', '.join(f'{n}: {(jobs.node == n).sum()}' for n in nodes)})",
            no=f"every job ran on {nodes[0] if nodes else '?'}",
            why="Slurm places a job on the first node with free CPUs: jobs that wait for each other can all "
                "land on one", missing="no job's node was recorded", show=show),
    ]


def recorded_runs():
    """Every recorded Slurm run side by side: executor, grouped, wall and load, bytes, PUTs, placement."""
    import pandas as pd

    rows = []
    for ref in recordings.available("workflows"):
        name = ref.split("/", 1)[1]
        if not name.startswith("slurm-") or name == "slurm-accounting" or name.startswith("slurm-before"):
            continue
        r = SlurmRun.from_json(recordings.load(ref).text)
        c = r.counters
        j = r.jobs
        rows.append({"executor": r.executor, "grouped": r.grouped, "trial": name.rsplit("-", 1)[-1],
                     "inputs fetched by": "submit host" if r.shared_fs else "each job, on its node",
                     "slurm jobs": len(j), "wall s": round(r.seconds, 1),
                     "load": f"{r.load[0]:.1f}->{r.load[1]:.1f}",
                     "from store": c.bytes_sent(r.bucket) if c else None,
                     "to store": c.bytes_received(r.bucket) if c else None,
                     "PUT": c.count("PUT", bucket=r.bucket) if c else None,
                     "per node": ", ".join(f"{n}: {k}" for n, k in sorted(j["node"].value_counts().items()))})
    return pd.DataFrame(rows)


BEFORE_RECORDING = "slurm-before-record"


def before_on_slurm(lab: Any = None, *, live: bool = False, recording: str = BEFORE_RECORDING,
                    save_as: str | None = None) -> experiments.Record:
    """Seed 004's "before" as the seed does it on a cluster, in lesson 09's record (the same Outcome as
    :func:`experiments.before`: steps, the store's counters after each, scratch sampled, what is left):
    stage ``data/`` with s3cmd, then the three sbatch jobs chained with ``--dependency=afterok``
    (:data:`BEFORE_JOBS`, one step spanning them) on a private 2-node Slurm started for it, then copy
    the result back. Replayed by default (like :func:`on_slurm`); ``live=True`` with a ``lab`` runs it."""
    def unavailable() -> str | None:
        why = recordings.unless_asked(live, "replayed by default (before_on_slurm(lab, live=True) runs it on a "
                                            "private Slurm, as IOLAB_MODE=live does)")
        if why:
            return why
        if lab is None:
            return "no store was started here (lab is None)"
        return slurm_cluster.why_not()

    def run_live() -> experiments.Record:
        scratch = Path(lab.ws.mkdir(f"l09-before-slurm-{os.getpid()}-{time.monotonic_ns()}"))
        cfgdir = Path(lab.ws.mkdir(f"l09-s3cmd-slurm-{os.getpid()}-{time.monotonic_ns()}"))
        cfg = lab.ep.s3cmd_config(cfgdir)
        lab.ws.reserve(3 * sum(lab.objects.values()))
        s3cmd = ["s3cmd", "-c", str(cfg), "--no-progress", "--no-mime-magic"]
        (scratch / "data").mkdir()
        try:
            with slurm_cluster.SlurmCluster(nodes=2, base=lab.ws.path("")) as cluster, \
                    Recorder(lab, "before", scratch) as rec:
                version = runner.run(["sbatch", "--version"], timeout=15, env=cluster.env, check=False).stdout.strip()
                rec.step(Step("stage in (s3cmd get -r)", [*s3cmd, "get", "-r", f"s3://{lab.bucket}/data/",
                                                           str(scratch / "data") + "/"], scratch, {}),
                         timeout=300).check("copying the inputs to scratch")
                rec.step(Step("3 sbatch jobs, afterok", chain_argv(scratch), scratch, cluster.env),
                         timeout=400).check("the three chained Slurm jobs")
                rec.step(Step("copy back (s3cmd put)", [*s3cmd, "put", str(scratch / "results" / "all.vcf"),
                                                         f"s3://{lab.bucket}/results/before/all.vcf"], scratch, {}),
                         timeout=120).check("copying the result back")
        finally:
            shutil.rmtree(cfgdir, ignore_errors=True)          # the keys' file: nothing of the keys is kept
        rec.doc["vcf"] = (scratch / "results" / "all.vcf").read_text()
        rec.doc["truth"] = dict(lab.data.truth)
        rec.doc["slurm_jobs"] = json.loads(rec.doc["steps"][1]["stdout"])["jobs"]
        text = json.dumps(rec.doc, indent=1) + "\n"
        if save_as:
            recordings.save(text, f"workflows/{save_as}", ext="json", argv=rec.doc["steps"][1]["argv"],
                            tool_version=version or "unknown version", stream="file",
                            notes="seed 004's before on a private 2-node Slurm: stage with s3cmd, three sbatch jobs "
                                  f"chained with afterok, copy back; load {os.getloadavg()[0]:.1f}")
        return experiments.Record("live", text, "LIVE run here on a private 2-node Slurm", data=rec.doc)

    out = recordings.live_or_recorded(run_live, f"workflows/{recording}", unavailable=unavailable,
                                      cls=experiments.Record, read=lambda rec: safeio.loads(rec.text))
    out.analyse()
    return out


def chain_argv(stage: str | os.PathLike[str], timeout: float = 300) -> list[str]:
    """The command that runs :func:`before_chain` in ``stage`` as one step of a recorded run (lesson 09's
    before, with Slurm instead of local processes: its record's step then spans the three jobs, the
    store's counters and the scratch directory's samples around it). SLURM_CONF comes from its env."""
    import sys

    return [sys.executable, "-m", "iolab.lessons.l09_workflows.slurm", "chain", os.fspath(stage), str(timeout)]


def _main(args: list[str]) -> int:
    if len(args) == 3 and args[0] == "chain":
        env = {k: v for k, v in os.environ.items() if k.startswith("SLURM_CONF")}
        c = before_chain(args[1], slurm_env=env, timeout=float(args[2]))
        print(json.dumps({"jobs": c.jobs, "seconds": c.seconds}))
        return 0
    print("usage: python -m iolab.lessons.l09_workflows.slurm chain STAGE TIMEOUT", flush=True)
    return 2


if __name__ == "__main__":
    import sys

    raise SystemExit(_main(sys.argv[1:]))
