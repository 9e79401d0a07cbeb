"""The class on Slurm, end to end (issue 30): a real JupyterHub whose every student's server is a Slurm job.

A private Slurm of two fake nodes (iolab.slurm_cluster, its epilog iolab.hubslurm's), the hub with the
course's one spawner configuration (iolab.hubslurm.configure, the one docs/jupyterhub.md section 9
shows; tests/hub_class.py writes it), real unix students spawning through the REST API at once. Each
server is a job on its own node; lessons 00 and 04 run inside the jobs over the kernel websocket (IOR
live when its build is at /tmp/ior-4.0.0/bin, replayed otherwise); a 2-node job places ranks on both
nodes; another student can neither reach a job's server nor read its token, log or sockets; stop
cancels the job, an outside scancel is noticed, a refused profile and a job that dies before its
server starts are told to the student in bounded time; nothing is left. Root, Slurm, sudo only;
elsewhere it skips and says why. Prints spawn, lesson and stop times with the load.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ior_dir
from conftest import wait_until as _wait_until
from hub_class import HubClass, Student, code_cells, processes_of, together, why_not
from iolab import slurm_cluster

WHY = why_not() or slurm_cluster.why_not() or (None if shutil.which("sudo") else "sudo is missing (the "
                                                "hub submits each job as its student with sudo)")
pytestmark = [pytest.mark.slow, pytest.mark.hub, pytest.mark.live, pytest.mark.timeout(1200),
              pytest.mark.skipif(WHY is not None, reason=WHY or "")]

PROFILES = {"1 node": "--nodes=1 --ntasks=2", "2 nodes": "--nodes=2 --ntasks-per-node=1"}
# a site's module line stands here; one student's job fails in it on purpose (batchspawner issue 253)
PROLOGUE = ('if [ -e "$HOME/.break-my-job" ]; then echo "iolab test: this job fails before its server" >&2; '
            'exit 3; fi',
            "export IOLAB_SITE_MODULES=loaded")
LESSON00, LESSON04 = "notebooks/00-start-here.ipynb", "notebooks/04-ior-pitfalls.ipynb"

JOB_FACTS = """\
import json, os, stat
rd = os.environ["JUPYTER_RUNTIME_DIR"]
print(json.dumps({"uid": os.getuid(), "job": os.environ.get("SLURM_JOB_ID"),
                  "node": os.environ.get("SLURMD_NODENAME"), "step": os.environ.get("SLURM_STEP_ID"),
                  "export": os.environ.get("SLURM_EXPORT_ENV"), "site": os.environ.get("IOLAB_SITE_MODULES"),
                  "runtime": rd, "workdir": os.environ.get("IOLAB_WORKDIR"),
                  "rd_mode": stat.S_IMODE(os.stat(rd).st_mode),
                  "sockets": sorted(n for n in os.listdir(rd) if "-ipc-" in n)}))
"""

# ranks of the job's allocation: srun's and the lessons' mpirun (iolab.mpi), with a kernel variable
RANKS = """\
import json, os, subprocess, sys
from iolab import mpi
os.environ["IOLAB_RANK_PROBE"] = "from the kernel"
probe = [sys.executable, "-c", "import os; print(os.environ.get('SLURMD_NODENAME'), os.environ.get('IOLAB_RANK_PROBE'))"]
srun = subprocess.run(["srun", "-N2", "-n2", *probe], capture_output=True, text=True, timeout=120)
mpirun = subprocess.run([*mpi.launcher_argv(2), *probe], capture_output=True, text=True, timeout=120)
print(json.dumps({"srun": sorted(srun.stdout.split("\\n")[:-1]), "srun_err": srun.stderr[-500:],
                  "mpirun": sorted(mpirun.stdout.split("\\n")[:-1]), "mpirun_err": mpirun.stderr[-500:],
                  "nodelist": os.environ.get("SLURM_JOB_NODELIST")}))
"""


def wait_until(cond, timeout: float, what: str) -> None:
    assert _wait_until(lambda: _poll(cond), timeout), f"not within {timeout} s: {what}"


def _poll(cond) -> bool:
    ok = cond()
    if not ok:
        time.sleep(0.5)          # a REST call or squeue per try: not 20 a second
    return bool(ok)


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def squeue(cluster, *args: str) -> list[dict[str, str]]:
    r = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%i|%u|%T|%N", *args], capture_output=True, text=True,
                       env={**os.environ, **cluster.env}, timeout=30)
    return [dict(zip(("id", "user", "state", "nodes"), ln.split("|"))) for ln in r.stdout.splitlines() if ln]


def job_of(cluster, st: Student) -> dict[str, str]:
    jobs = [j for j in squeue(cluster, "-u", st.name) if j["state"] == "RUNNING"]
    assert len(jobs) == 1, jobs
    return jobs[0]


def server_pid(st: Student) -> int:
    """The pid of the student's jupyterhub-singleuser (inside the job)."""
    for pid in processes_of({st.uid}):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"jupyterhub-singleuser") for a in argv[1:2]) or any(
                b"batchspawner-singleuser" in a for a in argv[:2]):
            return pid
    raise AssertionError(f"no server process of {st.name}")


def api_token(pid: int) -> str:
    env = dict(kv.split(b"=", 1) for kv in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in kv)
    return env[b"JUPYTERHUB_API_TOKEN"].decode()


def as_user(st: Student, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", st.name, "--", "env", "-i", f"HOME={st.home}",
                           "PATH=/usr/local/bin:/usr/bin:/bin", *argv], capture_output=True, text=True,
                          timeout=60, cwd="/")


def spawn_failure(st: Student, options: dict, timeout: float) -> tuple[float, str]:
    """POST a spawn with ``options``; seconds until the hub says it failed, and what it told the student
    (the spawn's progress events, as the browser's spawn page shows them)."""
    import requests

    t0 = time.monotonic()
    r = requests.post(f"{st.hub.url}/hub/api/users/{st.name}/server", json=options,
                      headers={"Authorization": f"token {st.token}"}, timeout=60)
    if r.status_code >= 400:                      # failed within the hub's slow_spawn_timeout
        return time.monotonic() - t0, r.text
    with requests.get(f"{st.hub.url}/hub/api/users/{st.name}/server/progress", stream=True, timeout=timeout,
                      headers={"Authorization": f"token {st.token}"}) as events:
        for line in events.iter_lines(decode_unicode=True):
            if line and line.startswith("data:"):
                event = json.loads(line[5:])
                if event.get("failed"):
                    return time.monotonic() - t0, event.get("message", "")
                if event.get("ready"):
                    raise AssertionError(f"{st.name}'s server started with {options}")
            if time.monotonic() - t0 > timeout:
                break
    raise AssertionError(f"no failure reported for {st.name} within {timeout} s")


@pytest.fixture(scope="module")
def slurm_class():
    from hub_class import class_env

    env = class_env()
    with slurm_cluster.SlurmCluster(nodes=2, epilog=_epilog(env)) as cluster:
        with HubClass(students=2, instructor=False, env=env, slurm=cluster, profiles=PROFILES,
                      prologue=PROLOGUE, start_timeout=120) as hub:
            print(f"\nSlurm up in {cluster.startup_seconds:.1f} s, hub in {hub.hub_start_seconds:.1f} s ({load()})")
            yield cluster, hub
            for st in hub.students:                  # what a class leaves once its servers are stopped
                if st.token is not None:
                    st.stop_server()
            _wait_until(lambda: not processes_of(set(hub.uids)) and not squeue(cluster, "-t", "running"), 60)
            left = hub.leftovers()
            left["job directories"] = [str(p) for p in Path("/tmp").glob("iolab-[0-9]*.*")
                                       if p.stat().st_uid in hub.uids]
        assert hub.gone() == []
    assert all(v == [] for v in left.values()), left


_EPILOGS: list[str] = []


def _epilog(env) -> str:
    """The node's epilog as a site installs it (docs/jupyterhub.md section 9): root-owned, 0755."""
    import tempfile

    d = tempfile.mkdtemp(prefix="iolab-epilog-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "epilog")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec {env.python} -m iolab.hubslurm epilog /tmp\n")
    os.chmod(path, 0o755)
    _EPILOGS.append(d)
    return path


@pytest.fixture(scope="module", autouse=True)
def _remove_epilogs():
    yield
    for d in _EPILOGS:
        shutil.rmtree(d, ignore_errors=True)


def test_two_students_run_lessons_inside_their_jobs_and_nobody_else_gets_in(slurm_class):
    cluster, hub = slurm_class
    a, b = hub.students
    for st in (a, b):
        st.login()
    spawned = together(lambda st: st.spawn(timeout=180), [a, b])
    print(f"spawn, 2 students at once: {spawned[0]:.1f} s, {spawned[1]:.1f} s ({load()})")
    jobs = {st.name: job_of(cluster, st) for st in (a, b)}
    assert {j["user"] for j in jobs.values()} == {a.name, b.name}
    assert sorted(j["nodes"] for j in jobs.values()) == ["n1", "n2"], jobs       # one job on each node

    with a.kernel(LESSON00) as k:
        fa = k.value(JOB_FACTS)
    with b.kernel(LESSON00) as k:
        fb = k.value(JOB_FACTS)
    for st, f in ((a, fa), (b, fb)):
        job = jobs[st.name]
        assert f["uid"] == st.uid and f["job"] == job["id"] and f["node"] == job["nodes"]
        assert f["step"] is None                                  # the server is in the batch step
        assert f["export"] is None and f["site"] == "loaded"      # no SLURM_EXPORT_ENV; the prologue ran
        assert f["runtime"].startswith(f"/tmp/iolab-{job['id']}.") and f["rd_mode"] & 0o777 == 0o700
        assert f["workdir"].startswith(f["runtime"].rsplit("/", 1)[0]) and f["sockets"]

    # another unix user (the other student) and the job-hosted server of the first
    pid = server_pid(a)
    token = api_token(pid)
    log = a.home / f"iolab-server-{jobs[a.name]['id']}.log"
    assert stat.S_IMODE(log.stat().st_mode) & 0o077 == 0 and log.stat().st_uid == a.uid
    assert token not in log.read_text() and token not in hub.log_tail(100000)
    assert as_user(b, ["cat", str(log)]).returncode != 0
    assert as_user(b, ["ls", fa["runtime"]]).returncode != 0
    assert as_user(b, ["cat", f"/proc/{pid}/environ"]).returncode != 0
    shown = as_user(b, ["scontrol", "show", "job", "-d", jobs[a.name]["id"]])
    assert token not in shown.stdout + shown.stderr
    assert b.server_request("GET", "api/contents", as_user=a.name).status_code in (302, 403, 404)
    mine = [ln.split() for ln in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    mine = [f[1].split(":") for f in mine if f[3] == "0A" and int(f[7]) == a.uid]
    assert mine and all(addr == "0100007F" for addr, _ in mine), mine   # the server on 127.0.0.1 only
    port = int(mine[0][1], 16)
    import requests
    direct = requests.get(f"http://127.0.0.1:{port}/user/{a.name}/api/contents",
                          headers={"Authorization": f"token {b.token}"}, timeout=30, allow_redirects=False)
    assert direct.status_code in (302, 403), direct.status_code          # b's token opens no door of a's

    # the lessons, inside the jobs, at the same time
    t0 = time.monotonic()
    runs = together(lambda job: job[0].run_notebook(job[1], timeout=400), [(a, LESSON04), (b, LESSON00)])
    print(f"lesson 04 in {a.name}'s job: {runs[0].seconds:.0f} s, lesson 00 in {b.name}'s: {runs[1].seconds:.0f} s, "
          f"beside each other ({load()}); {time.monotonic() - t0:.0f} s in all")
    for run in runs:
        assert run.ok, run.failure()
    assert len(runs[0].cells) == len(code_cells(a.home / LESSON04))
    live = runs[0].text.count("LIVE run here")
    if os.access(f"{ior_dir('4.0.0')}/ior", os.X_OK):
        assert live >= 1, runs[0].text[-3000:]                           # IOR ran in the job
    else:
        assert "REPLAY of" in runs[0].text                               # replayed, and says so

    # stop: the job ends, its directories go; an outside scancel: the hub notices
    t0 = time.monotonic()
    a.stop_server()
    stopped = time.monotonic() - t0
    wait_until(lambda: not [j for j in squeue(cluster, "-j", jobs[a.name]["id"]) if j["state"] == "RUNNING"],
               timeout=60, what="a's job ended")
    wait_until(lambda: not list(Path("/tmp").glob(f"iolab-{jobs[a.name]['id']}.*")), timeout=60,
               what="a's job directories removed")
    t0 = time.monotonic()
    subprocess.run(["scancel", jobs[b.name]["id"]], env={**os.environ, **cluster.env}, check=True, timeout=30)
    wait_until(lambda: not (b.hub_api("GET", f"users/{b.name}").get("servers") or {}).get(""), timeout=90,
               what="the hub noticed the outside scancel")
    noticed = time.monotonic() - t0
    print(f"stop -> job gone: {stopped:.1f} s; outside scancel noticed in {noticed:.1f} s (poll 5 s) ({load()})")
    wait_until(lambda: not processes_of({a.uid, b.uid}), timeout=60, what="no process of the students left")


def test_a_two_node_job_places_ranks_on_both_nodes(slurm_class):
    cluster, hub = slurm_class
    a = hub.students[0]
    if a.token is None:
        a.login()
    t0 = time.monotonic()
    a.hub_api("POST", f"users/{a.name}/server", json={"profile": "2 nodes"}, ok=(201, 202))
    wait_until(lambda: ((a.hub_api("GET", f"users/{a.name}").get("servers") or {}).get("") or {}).get("ready"),
               timeout=180, what="the 2-node server ready")
    print(f"spawn of a 2-node job: {time.monotonic() - t0:.1f} s ({load()})")
    job = job_of(cluster, a)
    assert job["nodes"] == "n[1-2]", job
    with a.kernel(LESSON00) as k:
        r = k.value(RANKS, timeout=300)
    assert r["nodelist"] == "n[1-2]"
    assert r["srun"] == ["n1 from the kernel", "n2 from the kernel"], r        # SLURM_EXPORT_ENV is gone
    assert r["mpirun"] == ["n1 from the kernel", "n2 from the kernel"], r      # the lessons' mpirun too
    dirs = list(Path("/tmp").glob(f"iolab-{job['id']}.*"))
    assert dirs
    # killed as at its time limit: SIGKILL to every process of the job, the job's own cleanup cannot run;
    # the node's epilog (iolab.hubslurm epilog) removes what it left
    subprocess.run(["scancel", "--full", "--signal=KILL", job["id"]], env={**os.environ, **cluster.env},
                   check=True, timeout=30)
    wait_until(lambda: not (a.hub_api("GET", f"users/{a.name}").get("servers") or {}).get(""), timeout=90,
               what="the hub noticed the killed job")
    wait_until(lambda: not any(d.exists() for d in dirs), timeout=60, what="the epilog removed the job's dirs")


def test_a_refused_profile_and_a_job_that_dies_early_are_told_in_bounded_time(slurm_class):
    cluster, hub = slurm_class
    b = hub.students[1]
    if b.token is None:
        b.login()
    seconds, said = spawn_failure(b, {"options": "--nodes=2 --exclusive"}, timeout=60)
    assert "refused: options" in said, said
    # batchspawner issue 253: a job that fails before its server reports a port
    (b.home / ".break-my-job").touch()
    try:
        seconds, said = spawn_failure(b, {"profile": "1 node"}, timeout=hub.start_timeout + 60)
    finally:
        (b.home / ".break-my-job").unlink()
    print(f"a job dying before its server: the student told in {seconds:.1f} s (start_timeout "
          f"{hub.start_timeout} s) ({load()})")
    assert "ended before its notebook server started" in said and "iolab-server-" in said, said
    assert seconds < hub.start_timeout
    logs = sorted(b.home.glob("iolab-server-*.log"))
    assert any("this job fails before its server" in p.read_text() for p in logs)
