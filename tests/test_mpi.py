"""iolab.mpi: the launcher argv carries only the flags this machine needs."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from iolab import mpi


def test_root_gets_allow_run_as_root_and_nobody_else():
    assert "--allow-run-as-root" in mpi.launcher_argv(2, cores=2, root=True, flavour="openmpi")
    assert "--allow-run-as-root" not in mpi.launcher_argv(2, cores=2, root=False, flavour="openmpi")


def test_oversubscribe_only_past_the_cores():
    assert "--oversubscribe" not in mpi.launcher_argv(2, cores=2, root=False, flavour="openmpi")
    assert mpi.launcher_argv(3, cores=2, root=False, flavour="openmpi") == ["mpirun", "-np", "3", "--oversubscribe"]


def test_mpich_gets_no_open_mpi_flags():
    assert mpi.launcher_argv(8, cores=2, root=True, flavour="mpich") == ["mpirun", "-np", "8"]


def test_srun():
    assert mpi.launcher_argv(4, launcher="srun", cores=1, root=True) == ["srun", "-n", "4"]
    assert mpi.launcher_argv(2, launcher="srun", mpi_plugin="pmix") == ["srun", "-n", "2", "--mpi=pmix"]


def test_command_puts_the_program_last():
    argv = mpi.command(["ior", "-t", "1m"], 2, cores=4, root=False, flavour="openmpi")
    assert argv == ["mpirun", "-np", "2", "ior", "-t", "1m"]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_bad_task_counts(bad):
    with pytest.raises(ValueError):
        mpi.launcher_argv(bad)


def test_strings_are_refused():
    with pytest.raises(TypeError):
        mpi.command("ior -t 1m", 2)
    with pytest.raises(ValueError):
        mpi.launcher_argv(2, launcher="aprun")


@pytest.mark.parametrize("line,kind", [
    ("mpirun (Open MPI) 4.1.4", "openmpi"),
    ("HYDRA build details:", "mpich"),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.6", "intel"),
    (None, "unknown"),
    ("something else", "unknown"),
])
def test_flavour_of(line, kind):
    assert mpi.flavour_of(line) == kind


def test_this_machine_defaults_are_consistent():
    argv = mpi.launcher_argv(mpi.cores() + 1)
    if mpi.flavour() in ("openmpi", "unknown"):
        assert "--oversubscribe" in argv
        assert ("--allow-run-as-root" in argv) == mpi.is_root()


def test_runtime_env_keeps_the_session_directory_in_the_given_place(tmp_path, monkeypatch):
    env = mpi.runtime_env(tmp_path / "mpi")
    assert env == {"TMPDIR": str(tmp_path / "mpi")} and (tmp_path / "mpi").is_dir()
    monkeypatch.setattr(mpi, "is_root", lambda: True)
    assert mpi.runtime_env(tmp_path / "mpi", singleton=True)["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in mpi.runtime_env(tmp_path / "mpi")    # mpirun gets its flag
    monkeypatch.setattr(mpi, "is_root", lambda: False)
    assert "OMPI_ALLOW_RUN_AS_ROOT" not in mpi.runtime_env(tmp_path / "mpi", singleton=True)


def test_a_session_directory_of_a_running_job_beside_this_one_is_not_a_leftover():
    """Another `make test` of the same uid runs mpirun beside this one: its live pid.<N> is not ours; a
    pid.<N> whose process is gone stays a leftover."""
    import tempfile

    from conftest import mpi_leftovers_in_tmp

    d = tempfile.mkdtemp(prefix="ompi.iolabtest.", dir="/tmp")
    try:
        before = mpi_leftovers_in_tmp()
        os.mkdir(f"{d}/pid.{os.getpid()}")                     # alive: a job beside this one
        assert mpi_leftovers_in_tmp(before, settle=0) == set()
        dead = subprocess.Popen(["true"])
        dead.wait()
        os.mkdir(f"{d}/pid.{dead.pid}")                        # its process is gone: left behind
        assert mpi_leftovers_in_tmp(before, settle=0) == {f"{d}/pid.{dead.pid}"}
    finally:
        shutil.rmtree(d)
