"""The class on a Slurm cluster: each student's notebook server a batch job (JupyterHub + batchspawner).

One source for the site's configuration (docs/jupyterhub.md section 9 shows it; tests/test_hub_slurm.py
runs it on a private Slurm of two fake nodes). In ``jupyterhub_config.py``::

    from iolab import hubslurm
    hubslurm.configure(c, venv="/opt/iolab/venv", partition="course", runtime="02:00:00",
                       profiles={"1 node": "--nodes=1 --ntasks=2 --mem=6G",
                                 "2 nodes": "--nodes=2 --ntasks-per-node=2 --mem=6G"},
                       prologue=["module load openmpi ior"], scratch="/local/scratch",
                       hub_connect_ip="10.1.0.5", server_ip="auto")

What it changes from batchspawner's defaults, and why (each was seen failing on this machine):

* the server runs in the job's **batch step** (no ``srun`` step): a step holding the job's CPUs left
  every ``mpirun`` of lesson 04 waiting for a step that could never start, and an Open MPI singleton
  inside an srun step aborts without Slurm's PMI; the job asks for as many tasks as the lessons'
  ranks (2);
* ``unset SLURM_EXPORT_ENV`` first: batchspawner submits with ``--export=<names>``, so the job
  carries that variable and every ``srun`` a student starts would export only the hub's names;
* the server listens on ``server_ip`` (batchspawner resets ``Spawner.ip`` to the class's default,
  0.0.0.0, at each start, so only this subclass's default counts), and the hub reaches it at
  ``exechost`` (a fake node's name does not resolve);
* the student's directories are made **in the job, on the node**: ``mktemp -d`` under the node's
  scratch (``$TMPDIR`` by default), private (0700) and unpredictable, ``iolab-<jobid>.XXXXXX/{run,work}``:
  the Jupyter runtime directory (the kernels' unix sockets, whose paths must fit in 107 bytes) and
  ``IOLAB_WORKDIR``. The job removes them when it ends (:func:`cleanup`, which never deletes through a
  mount); a job Slurm killed (time limit, ``scancel -s KILL``) cannot, and the node's **epilog**
  (``python -m iolab.hubslurm epilog DIR...``, as root) unmounts what is left of its FUSE and ceph-fuse
  mounts and removes them;
* sbatch runs with umask 077, so the job's log (in the student's home) is theirs alone; the job then
  sets 022 again;
* students choose among the instructor's **profiles** (``user_options={"profile": name}``), nothing
  else: batchspawner puts every key of ``user_options`` into the job script (``options``,
  ``prologue``, even ``cmd``);
* a job that ends before its server reports a port (batchspawner issue 253: the hub waited the whole
  ``start_timeout``) fails the spawn within ``dead_job_poll`` seconds, with the job's id and log.

Nothing here runs unless JupyterHub and batchspawner are installed (the ``hub`` extra); the epilog and
:func:`cleanup` need neither.
"""
from __future__ import annotations

import argparse
import os
import shlex
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import guard

# the lessons start MPI runs of 2 ranks (mpirun -np 2): the job must hold at least that many slots
LESSON_RANKS = 2
DEFAULT_PROFILES = {"1 node": f"--nodes=1 --ntasks={LESSON_RANKS}"}
# a unix socket's path is at most 107 bytes; a kernel's are <runtime dir>/kernel-<uuid>-ipc-<n>
SOCKET_PATH_MAX = 107
RUNTIME_DIR_MAX = SOCKET_PATH_MAX - len("/kernel-00000000-0000-0000-0000-000000000000-ipc-5")
JOB_DIR_PREFIX = "iolab-"

BATCH_SCRIPT = r"""#!/bin/bash
#SBATCH --output={{homedir}}/iolab-server-%j.log
#SBATCH --job-name=iolab-server
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
#SBATCH --get-user-env=L
{% if partition %}#SBATCH --partition={{partition}}
{% endif %}{% if account %}#SBATCH --account={{account}}
{% endif %}{% if qos %}#SBATCH --qos={{qos}}
{% endif %}{% if runtime %}#SBATCH --time={{runtime}}
{% endif %}{% if options %}#SBATCH {{options}}
{% endif %}
# written by iolab.hubslurm (docs/jupyterhub.md section 9): one student's notebook server in the batch step
set -euo pipefail
umask 022                    # sbatch ran with 077 so that the log above is the student's alone
trap 'echo "iolab: SIGTERM received"' TERM
# batchspawner submits with --export=<names>: without this, every srun of the student's (and every
# step of a job they submit) would get only those names
unset SLURM_EXPORT_ENV
{{prologue}}
# the student's directories on this node: private, unpredictable, removed when the job ends
scratch="{{scratch}}"
scratch="${scratch:-${TMPDIR:-/tmp}}"
job_dir="$(mktemp -d "$scratch/{{job_dir_prefix}}$SLURM_JOB_ID.XXXXXX")"
runtime_dir="$job_dir/run"
if [ "$(printf %s "$runtime_dir" | wc -c)" -gt {{runtime_dir_max}} ]; then
    # the kernels' unix sockets live there: a path over 107 bytes cannot be bound
    runtime_dir="$(mktemp -d "/tmp/{{job_dir_prefix}}$SLURM_JOB_ID.XXXXXX")/run"
fi
mkdir -m 0700 "$runtime_dir" "$job_dir/work"
export JUPYTER_RUNTIME_DIR="$runtime_dir" IOLAB_WORKDIR="$job_dir/work"
trap '{{python}} -m iolab.hubslurm cleanup "$job_dir" "$(dirname "$runtime_dir")" || true' EXIT
{% if server_ip == "auto" %}server_ip="$(ip -o -4 route get {{hub_ip}} | sed -n 's/.* src \([0-9.]*\).*/\1/p')"
{% else %}server_ip="{{server_ip}}"
{% endif %}echo "iolab: job $SLURM_JOB_ID on ${SLURMD_NODENAME:-$(hostname)}, server on $server_ip, directories in $job_dir"
{{cmd}} --ip="$server_ip"
echo "iolab: the server ended"
"""


def batch_script_vars(**subvars: Any) -> dict[str, Any]:
    """Defaults of the variables :data:`BATCH_SCRIPT` uses beside batchspawner's own (for rendering it
    outside a hub, e.g. in tests: ``jinja2.Template(BATCH_SCRIPT).render(**batch_script_vars(...))``)."""
    out = {"job_dir_prefix": JOB_DIR_PREFIX, "runtime_dir_max": RUNTIME_DIR_MAX, "scratch": "",
           "server_ip": "127.0.0.1", "hub_ip": "", "python": shlex.quote(sys.executable), "prologue": ""}
    out.update(subvars)
    return out


class _Told(Exception):
    """A spawn failure whose message JupyterHub shows the student (its API and spawn page read
    ``jupyterhub_message``; other exceptions become "Internal Server Error")."""

    @property
    def jupyterhub_message(self) -> str:
        return str(self)


class RefusedOptions(_Told, ValueError):
    """A student asked for something the instructor did not allow."""


class JobEnded(_Told, RuntimeError):
    """The server's job ended before the server reported its port (batchspawner issue 253)."""


class SubmitFailed(_Told, RuntimeError):
    """sbatch refused the server's job."""


def allowed_options(user_options: Mapping[str, Any] | None, profiles: Mapping[str, str]) -> str:
    """The sbatch options of the profile a student chose; the first profile when they chose none.

    ``user_options`` may hold only ``profile`` (one of ``profiles``' names): any other key (``options``,
    ``prologue``, ``cmd``, ``srun``... which batchspawner would put into the job script) is refused."""
    if not profiles:
        raise ValueError("the class needs at least one profile (name -> sbatch options)")
    opts = dict(user_options or {})
    other = sorted(k for k in opts if k != "profile")
    if other:
        raise RefusedOptions(f"the class's jobs take only a profile ({', '.join(map(repr, profiles))}); "
                             f"refused: {', '.join(other)}")
    name = opts.get("profile")
    if name is None or name == "":
        return next(iter(profiles.values()))
    if not isinstance(name, str) or name not in profiles:
        raise RefusedOptions(f"no profile {name!r} in this class: {', '.join(map(repr, profiles))}")
    return profiles[name]


def _spawner_class():
    """The course's SlurmSpawner (batchspawner imported here: the hub's API handler registers on import)."""
    import asyncio
    import html

    import batchspawner  # noqa: F401  (registers /hub/api/batchspawner, where the job reports its port)
    from batchspawner import JobStatus, SlurmSpawner
    from traitlets import Dict, Float, Unicode

    class CourseSlurmSpawner(SlurmSpawner):
        """SlurmSpawner with the course's settings (see the module's doc)."""

        # batchspawner's start() resets ip to this class default: the job's server itself listens on
        # req_server_ip (the --ip the batch script adds), so no 0.0.0.0 reaches its command line
        ip = Unicode("").tag(config=True)
        req_server_ip = Unicode("127.0.0.1", help="where the server listens: an address, or 'auto' (the "
                                "node's address on the route to req_hub_ip)").tag(config=True)
        req_hub_ip = Unicode("", help="the hub's address as the nodes reach it (hub_connect_ip)").tag(config=True)
        req_scratch = Unicode("", help="node-local scratch for the student's directories ($TMPDIR if empty)"
                              ).tag(config=True)
        req_python = Unicode(sys.executable, help="the class environment's python (the job's cleanup)"
                             ).tag(config=True)
        req_job_dir_prefix = Unicode(JOB_DIR_PREFIX).tag(config=False)
        req_runtime_dir_max = Unicode(str(RUNTIME_DIR_MAX)).tag(config=False)
        profiles = Dict(DEFAULT_PROFILES, help="name -> sbatch options; the student picks one").tag(config=True)
        dead_job_poll = Float(2.0, help="seconds between checks that a starting job still runs").tag(config=True)

        def _options_form_default(self):
            if len(self.profiles) < 2:
                return ""
            opts = "".join(f'<option value="{html.escape(n)}">{html.escape(n)}</option>' for n in self.profiles)
            return f'<label for="profile">Job</label><select name="profile" id="profile">{opts}</select>'

        def options_from_form(self, formdata):
            return {"profile": (formdata.get("profile") or [""])[0]}

        _submitted = ""           # the job id, kept: batchspawner clears job_id when the job is gone

        async def submit_batch_script(self):
            self._submitted = ""
            self._submitted = await super().submit_batch_script()
            return self._submitted

        def _ended(self) -> JobEnded:
            job = self._submitted
            return JobEnded(f"Slurm job {job} ended before its notebook server started: see "
                            f"{self.req_homedir}/iolab-server-{job}.log")

        async def start(self):
            # JupyterHub 6 keeps the last user_options for a spawn that brings none: check them each time
            self.req_options = allowed_options(self.user_options, self.profiles)
            self.user_options = {}
            starting = asyncio.ensure_future(super().start())
            try:
                while True:
                    done, _ = await asyncio.wait({starting}, timeout=self.dead_job_poll)
                    if starting in done:
                        try:
                            return starting.result()
                        except _Told:
                            raise
                        except Exception as e:      # batchspawner's own "job has disappeared", sbatch's error
                            if self._submitted:
                                raise self._ended() from e
                            raise SubmitFailed(f"the notebook server's job could not be submitted: {e}") from e
                    if self.job_id and not self.port:
                        if await self.query_job_status() not in (JobStatus.PENDING, JobStatus.RUNNING,
                                                                 JobStatus.UNKNOWN):
                            raise self._ended()
            finally:
                if not starting.done():
                    starting.cancel()

    return CourseSlurmSpawner


def configure(c: Any, *, venv: str | os.PathLike[str], partition: str = "", account: str = "", qos: str = "",
              runtime: str = "01:00:00", profiles: Mapping[str, str] | None = None, prologue: Sequence[str] = (),
              scratch: str = "", server_ip: str = "127.0.0.1", exechost: str = "", hub_connect_ip: str = "",
              environment: Mapping[str, Any] | None = None, start_timeout: int = 300, poll_interval: int = 30,
              dead_job_poll: float = 2.0) -> type:
    """Set the class's spawner on JupyterHub's config object ``c``; returns the spawner class.

    venv: the class environment (its bin/ has jupyterhub-singleuser, batchspawner-singleuser, python).
    profiles: name -> sbatch options, the first the default (e.g. ``--nodes=1 --ntasks=2 --mem=6G``).
    prologue: shell lines run in the job before the server (``module load openmpi ior``).
    scratch: node-local scratch for the student's directories (default: the job's ``$TMPDIR``).
    server_ip: where the server listens: ``127.0.0.1`` when the hub runs on the nodes' host (fake
    nodes), ``auto`` (the node's address on its route to ``hub_connect_ip``) or an address.
    exechost: what the hub connects to (batchspawner's state_exechost_exp; empty: the node's name).
    """
    bin_ = Path(venv) / "bin"
    profiles = dict(profiles or DEFAULT_PROFILES)
    allowed_options({}, profiles)
    cls = _spawner_class()
    c.JupyterHub.spawner_class = cls
    if hub_connect_ip:
        c.JupyterHub.hub_connect_ip = hub_connect_ip
    c.Spawner.cmd = [str(bin_ / "jupyterhub-singleuser")]
    c.Spawner.default_url = "/lab"
    c.Spawner.args = ["--KernelSpecManager.allowed_kernelspecs=iolab",
                      "--MappingKernelManager.default_kernel_name=iolab",
                      "--KernelManager.transport=ipc"]
    c.Spawner.start_timeout = start_timeout
    c.Spawner.http_timeout = min(start_timeout, 120)
    c.Spawner.poll_interval = poll_interval
    env = {"PATH": f"{bin_}:/usr/local/bin:/usr/bin:/bin"}
    env.update(environment or {})
    c.Spawner.environment = env
    s = c.CourseSlurmSpawner
    s.batch_script = BATCH_SCRIPT
    s.batchspawner_singleuser_cmd = str(bin_ / "batchspawner-singleuser")
    s.exec_prefix = "sudo -E -u {username}"
    # umask 077: slurmstepd creates the job's log with the submitter's umask
    s.batch_submit_cmd = "/bin/sh -c 'umask 077 && exec sbatch --parsable'"
    s.req_srun = ""
    s.req_partition, s.req_account, s.req_qos, s.req_runtime = partition, account, qos, runtime
    s.req_prologue = "\n".join(prologue)
    s.req_scratch = scratch
    s.req_server_ip = server_ip
    s.req_hub_ip = hub_connect_ip
    s.req_python = shlex.quote(str(bin_ / "python"))
    s.profiles = profiles
    s.dead_job_poll = dead_job_poll
    if exechost:
        s.state_exechost_exp = exechost
    return cls


# --- the job's own cleanup, and the node's epilog ------------------------------------------------------

def _own_dir(path: str, uid: int) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid


def cleanup(*dirs: str | os.PathLike[str]) -> list[str]:
    """Remove the job's directories (its own, not a symlink): FUSE mounts in them are ended first, never
    deleted through (:func:`iolab.guard.remove_tree`). Returns what was left in place."""
    left: list[str] = []
    for d in dict.fromkeys(os.path.abspath(x) for x in dirs):
        if _own_dir(d, os.geteuid()) or (os.geteuid() == 0 and os.path.isdir(d) and not os.path.islink(d)):
            left += guard.remove_tree(d)
    return left


def job_dirs(bases: Sequence[str | os.PathLike[str]], job_id: str, uid: int) -> list[str]:
    """The directories job ``job_id`` of ``uid`` made in ``bases`` (``iolab-<jobid>.XXXXXX``, the user's
    own real directories only: another user's name of the same pattern is left alone)."""
    if not job_id.isdigit():
        raise ValueError(f"not a Slurm job id: {job_id!r}")
    found = []
    for base in bases:
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if name.startswith(f"{JOB_DIR_PREFIX}{job_id}.") and _own_dir(os.path.join(base, name), uid):
                found.append(os.path.join(base, name))
    return sorted(found)


def epilog(bases: Sequence[str | os.PathLike[str]], env: Mapping[str, str] = os.environ) -> list[str]:
    """A Slurm epilog's work (as root, after the job's processes are gone): remove the directories the
    job made, after ending its FUSE and ceph-fuse mounts in them, dead ones included (a job killed at
    its time limit could not). Returns what was left in place."""
    job, uid = env.get("SLURM_JOB_ID", ""), env.get("SLURM_JOB_UID", "")
    if not job.isdigit() or not uid.isdigit():
        raise ValueError("the epilog needs SLURM_JOB_ID and SLURM_JOB_UID (slurmd sets them)")
    left: list[str] = []
    for d in job_dirs(bases, job, int(uid)):
        left += guard.remove_tree(d)
    return left


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m iolab.hubslurm", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("epilog", help="as a Slurm epilog (root): remove this job's directories and mounts")
    e.add_argument("bases", nargs="+", help="the scratch directories the jobs use (e.g. /tmp /local/scratch)")
    cl = sub.add_parser("cleanup", help="in the job: remove its own directories, mounts ended first")
    cl.add_argument("dirs", nargs="+")
    a = p.parse_args(argv)
    left = epilog(a.bases) if a.cmd == "epilog" else cleanup(*a.dirs)
    for path in left:
        print(f"iolab: left in place (a mount that would not end): {path}", file=sys.stderr)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
