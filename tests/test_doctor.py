import os
import re
import shutil
import subprocess
import sys

import pytest

from iolab import doctor
from conftest import mpi_leftovers_in_tmp


def test_table_has_every_section_and_real_versions():
    items = doctor.checks()
    text = doctor.table(items)
    for section in ("python", "tools", "system", "filesystems", "memory"):
        assert f"\n{section}\n" in f"\n{text}"
    names = {c.name for c in items}
    assert {"strace", "fio", "ior", "mdtest", "mpirun", "drop_caches writable", "/dev/fuse usable",
            "/tmp", "/dev/shm", "page size"} <= names
    for c in items:
        assert c.status in (doctor.OK, doctor.MISSING, doctor.LIMITED)
        if c.status != doctor.OK:
            assert c.without, f"{c.name} is {c.status} but does not say what the course does without it"
    if shutil.which("strace"):
        strace = next(c for c in items if c.name == "strace")
        assert strace.status == doctor.OK and re.search(r"\d+\.\d+", strace.detail), strace


def test_missing_tool_is_reported_with_a_fallback(monkeypatch):
    monkeypatch.setitem(doctor.TOOLS, "no-such-tool", (["no-such-tool", "--version"], "the lesson replays"))
    item = next(c for c in doctor.tool_checks() if c.name == "no-such-tool")
    assert item.status == doctor.MISSING and "replays" in item.line()


@pytest.mark.slow
def test_cli_prints_the_table():
    r = subprocess.run([sys.executable, "-m", "iolab.cli", "doctor"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "[ OK ]" in r.stdout and "filesystems" in r.stdout


@pytest.mark.live
def test_ior_and_mdtest_versions_without_leftovers_in_tmp(ior_on_path):
    ior_on_path("4.0.0", or_on_path=True)
    ior_on_path("4.0.0", "mdtest", or_on_path=True)
    # `ior --version` is refused and exits without MPI_Finalize: Open MPI then leaves its session
    # directory in /tmp, at every doctor call of every lesson
    from iolab.tools import ior, mdtest

    ior._installed_version.cache_clear()
    mdtest._installed_version.cache_clear()
    before = mpi_leftovers_in_tmp()
    items = {c.name: c for c in doctor.tool_checks()}
    for tool in ("ior", "mdtest"):
        assert items[tool].status == doctor.OK and re.fullmatch(rf"{tool} \d+\.\d+\S*", items[tool].detail), \
            items[tool].line()
    from iolab import runner

    runner.tool_version.cache_clear()
    assert doctor.tool_version("ior") == items["ior"].detail.split()[1]      # what results.save records
    assert doctor.tool_version("mdtest") == items["mdtest"].detail.split()[1]
    assert mpi_leftovers_in_tmp(before) == set()


# --- issue 22, 8: a lesson's first cell answers from the cache -----------------------------------------

def test_summary_answers_from_the_cache_while_no_tool_changed(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tool = tmp_path / "bin" / "fake-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho 'fake-tool 1.2.3'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(doctor, "TOOLS", {"fake-tool": (["fake-tool", "--version"], "the lesson replays")})
    real, probed = doctor.runner.run, []

    def counting(argv, **kw):
        probed.append(argv[0])
        return real(argv, **kw)
    monkeypatch.setattr(doctor.runner, "run", counting)
    assert doctor.tool_checks(cached=True)[0].detail == "fake-tool 1.2.3"    # nothing cached: probed, kept
    assert probed == ["fake-tool"] and doctor.cache_path().exists()
    assert doctor.cache_path().parent.stat().st_mode & 0o077 == 0
    doctor.summary()                                                         # answers without a process
    assert "fake-tool 1.2.3" in capsys.readouterr().out and probed == ["fake-tool"]
    tool.write_text("#!/bin/sh\necho 'fake-tool 2.0.0, a new build'\n")     # another file: probed again
    assert doctor.tool_checks(cached=True)[0].detail == "fake-tool 2.0.0, a new build"
    assert len(probed) == 2
    doctor.tool_checks()                                                     # `iolab doctor`: always fresh
    assert len(probed) == 3


def test_a_verdict_made_in_one_job_is_not_shown_in_another(monkeypatch, tmp_path):
    """The cache is keyed by where the tool was probed too: a Slurm job, its step and node, PATH and the MPI
    settings change whether IOR runs (an Open MPI singleton in an srun step aborts; in the batch step of
    the next job the same build runs), with the same tool file."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tool = tmp_path / "bin" / "fake-tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho \"fake-tool 1.0 in job ${SLURM_JOB_ID:-none}\"\n")
    tool.chmod(0o755)
    path = f"{tool.parent}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    for k in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "OMPI_MCA_btl"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setattr(doctor, "TOOLS", {"fake-tool": (["fake-tool", "--version"], "the lesson replays")})
    real, probed = doctor.runner.run, []

    def counting(argv, **kw):
        probed.append(argv[0])
        return real(argv, **kw)
    monkeypatch.setattr(doctor.runner, "run", counting)

    def detail() -> str:
        return doctor.tool_checks(cached=True)[0].detail

    monkeypatch.setenv("SLURM_JOB_ID", "3")
    monkeypatch.setenv("SLURM_STEP_ID", "0")
    assert detail() == "fake-tool 1.0 in job 3" and len(probed) == 1
    assert detail() == "fake-tool 1.0 in job 3" and len(probed) == 1          # same job and step: cached
    monkeypatch.delenv("SLURM_STEP_ID")                                        # the batch step of job 3
    assert detail() == "fake-tool 1.0 in job 3" and len(probed) == 2
    monkeypatch.setenv("SLURM_JOB_ID", "4")                                    # the next job
    assert detail() == "fake-tool 1.0 in job 4" and len(probed) == 3
    monkeypatch.setenv("SLURMD_NODENAME", "n2")                                # another node
    detail()
    assert len(probed) == 4
    monkeypatch.setenv("OMPI_MCA_btl", "self,tcp")                             # other MPI settings
    detail()
    assert len(probed) == 5
    empty = tmp_path / "modules"
    empty.mkdir()
    monkeypatch.setenv("PATH", f"{empty}:{path}")                             # a module loaded
    detail()
    assert len(probed) == 6
    detail()
    assert len(probed) == 6                                                    # nothing changed: cached
    assert doctor.context()["SLURM_JOB_ID"] == "4" and "host" in doctor.context()


def test_doctor_tells_what_lesson_08_needs(monkeypatch):
    from iolab import doctor, runner
    assert "lesson 08" in doctor.TOOLS["ceph-mon"][1]
    assert "ceph-fuse" in runner.install_hint("ceph-mon") and "make setup" in runner.install_hint("ceph-osd")
