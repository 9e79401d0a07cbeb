"""iolab.slurm: scripts and parsing (everywhere), and a real Slurm on loopback (root + slurm-wlm)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iolab import recordings, slurm
from iolab.errors import ParseError, ToolFailed, ToolTimeout

from conftest import ior_tool
from iolab import slurm_cluster

REC = Path(recordings.data_dir()) / "slurm"
IOR = ior_tool("ior")
MDTEST = ior_tool("mdtest")

FIO_JOB = """\
[global]
directory={d}
filename_format=iolab.$jobname.${{SLURM_PROCID}}.$filenum
size=4M
bs=1M
[write]
rw=write
end_fsync=1
"""


# --- the script ---------------------------------------------------------------------------------

def bash_syntax_ok(script: str) -> None:
    r = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert r.returncode == 0, r.stderr


def test_batch_script_has_the_site_settings_and_is_valid_bash():
    step = slurm.Step(["ior", "-t", "1m", "-b", "16m", "-F", "-o", "test file"], nodes=4, tasks_per_node=6)
    s = slurm.batch_script(step, time=45, partition="FHPC", account="cozzini", qos="normal",
                           modules=["architecture/AMD", "openMPI/4.1.4/"], setup=["source /etc/profile.d/site.sh"],
                           env={"OMPI_MCA_btl": "self,tcp"}, workdir="/fast/area/my dir")
    lines = s.splitlines()
    assert lines[0] == "#!/bin/bash"
    for expected in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=6", "#SBATCH --time=00:45:00",
                     "#SBATCH --partition=FHPC", "#SBATCH --account=cozzini", "#SBATCH --qos=normal",
                     "module load architecture/AMD", "module load openMPI/4.1.4/",
                     "source /etc/profile.d/site.sh", "export OMPI_MCA_btl=self,tcp",
                     "mkdir -p '/fast/area/my dir' && cd '/fast/area/my dir' || exit 1"):
        assert expected in lines, expected
    launch = [ln for ln in lines if ln.startswith("step step-0 ")][0]
    assert "srun --nodes=4 --ntasks=24 --ntasks-per-node=6 --mpi=pmix" in launch
    assert launch.endswith("ior -t 1m -b 16m -F -o 'test file'")
    bash_syntax_ok(s)


def test_fio_is_not_launched_with_an_mpi_plugin_and_its_job_file_is_inlined():
    s = slurm.batch_script(slurm.fio_step(FIO_JOB.format(d="/scratch"), nodes=2))
    assert "--mpi=" not in s
    assert "cat > \"$OUT/fio.fio\" <<'IOLAB_EOF'" in s and "${SLURM_PROCID}" in s
    assert 'fio --output-format=json "$OUT"/fio.fio' in s
    bash_syntax_ok(s)


def test_mpirun_and_plain_launchers():
    step = slurm.Step(["mdtest", "-n", "10", "-d", "{out}/md"], nodes=2, tasks_per_node=3)
    s = slurm.batch_script(step, launcher="mpirun")
    launch = [ln for ln in s.splitlines() if ln.startswith("step ")][0]
    assert " -np 6 " in launch and ("--map-by ppr:3:node" in launch or "-ppn 3" in launch)
    assert launch.endswith('mdtest -n 10 -d "$OUT"/md > "$OUT/step-0.out" 2> "$OUT/step-0.err"')
    s = slurm.batch_script(slurm.Step(["hostname"]), launcher="none")
    assert 'step step-0 hostname > "$OUT/step-0.out"' in s
    with pytest.raises(ValueError):
        slurm.batch_script(step, launcher="aprun")


def test_placeholders_and_quoting():
    assert slurm._sh("-O", "s") == "-O"
    assert slurm._sh("summaryFile={out}/{step}.json", "step-3") == "summaryFile=\"$OUT\"/step-3.json"
    assert slurm._sh("a b; rm -rf /", "s") == "'a b; rm -rf /'"
    assert slurm._sh("{out}", "s") == '"$OUT"'


@pytest.mark.parametrize("bad", [dict(partition="a b"), dict(account="x;y"), dict(job_name="$(id)"),
                                 dict(time="soon"), dict(env={"A B": "1"}), dict(sbatch_options=["-N 2\nrm"])])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        slurm.batch_script(slurm.Step(["true"]), **bad)


def test_time_limits():
    assert slurm._time(30) == "00:30:00" and slurm._time(90) == "01:30:00"
    assert slurm._time("1-00:00:00") == "1-00:00:00" and slurm._time("00:05:00") == "00:05:00"


def test_steps_must_fit_the_allocation_and_have_distinct_names():
    with pytest.raises(ValueError, match="more than"):
        slurm.batch_script([slurm.Step(["true"], nodes=4)], nodes=2)
    with pytest.raises(ValueError, match="two steps"):
        slurm.batch_script([slurm.Step(["true"], name="a"), slurm.Step(["true"], name="a")])
    with pytest.raises(TypeError):
        slurm.Step("ior -F")          # a shell string, not argv
    with pytest.raises(ValueError):
        slurm.Step(["true"], nodes=0)


def test_sweep_is_the_product_and_its_manifest_survives_the_script():
    steps = slurm.sweep(["ior", "-t", "1m", "-O", "summaryFile={out}/{step}.json"],
                        {"shared file": [], "-F": ["-F"], "-F -C": ["-F", "-C"]},
                        nodes=[1, 2], tasks_per_node=[1, 4], result="{step}.json")
    assert len(steps) == 12
    assert steps[-1].params == {"nodes": 2, "tasks_per_node": 4, "options": "-F -C"}
    assert steps[-1].argv[-2:] == ["-F", "-C"] and steps[-1].mpi
    s = slurm.batch_script(steps)
    assert "#SBATCH --nodes=2" in s and "#SBATCH --ntasks-per-node=4" in s
    man = slurm.read_manifest(s)
    assert [n for n, _ in man] == [f"step-{i}" for i in range(12)]
    assert man[5][1]["params"]["options"] == "-F -C" and man[5][1]["result"] == "{step}.json"
    bash_syntax_ok(s)


def test_a_broken_manifest_line_names_its_line():
    with pytest.raises(ParseError, match="line 2"):
        slurm.read_manifest("#!/bin/bash\n# iolab-step s {not json\n")


def test_the_script_runs_without_slurm(tmp_path):
    """launcher="none": the same script runs under plain bash (a laptop, a login node)."""
    s = slurm.batch_script(slurm.Step(["echo", "hello {step}"], name="greet", tool="echo"),
                           launcher="none", workdir=tmp_path / "work")
    r = subprocess.run(["bash", "-c", s], cwd=tmp_path, env={**os.environ, "SLURM_JOB_ID": "42"},
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "iolab-42" / "greet.out").read_text() == "hello greet\n"
    assert (tmp_path / "iolab-42" / "greet.rc").read_text() == "0\n"


# --- state and results from real recordings -----------------------------------------------------

@pytest.mark.parametrize("name, state, code", [("completed", "COMPLETED", 0), ("failed", "FAILED", 1),
                                               ("cancelled", "CANCELLED", None), ("timeout", "TIMEOUT", 0)])
def test_parse_recorded_scontrol(name, state, code):
    rec = recordings.load(f"slurm/scontrol-{name}")
    f = slurm.parse_scontrol(rec.text)
    assert f["JobState"] == state
    assert f["JobId"].isdigit() and f["StdErr"].endswith(".err")
    c, _sig = slurm._exit_code(f["ExitCode"])
    if code is not None:
        assert c == code
    if name == "timeout":
        assert f["Reason"] == "TimeLimit"


def test_parse_scontrol_rejects_other_text():
    with pytest.raises(ParseError):
        slurm.parse_scontrol("slurm_load_jobs error: Invalid job id specified\n")


def recorded_job(tmp_path, script: str, files: dict[str, str]) -> slurm.Job:
    job = slurm.Job("7", tmp_path, tmp_path / "iolab-x.sbatch")
    job.script_path.write_text(script)
    job.outdir.mkdir()
    for name, text in files.items():
        (job.outdir / name).write_text(text)
    return job


def test_outputs_of_a_recorded_two_node_fio_job(tmp_path):
    script = recordings.load("slurm/fio-2nodes").text
    files = {f"fio.{i}.vm.{i}.out": recordings.load(f"slurm/fio-2nodes-task{i}").text for i in (0, 1)}
    df = recorded_job(tmp_path, script, files).outputs()
    assert sorted(df["task"].unique()) == [0, 1] and sorted(df["node"].unique()) == [0, 1]
    assert set(df["direction"]) == {"read", "write"}
    assert (df["job_id"] == "7").all() and (df["tool"] == "fio").all() and (df["nodes"] == 2).all()
    assert (df["io_bytes"] > 0).all()


def test_outputs_of_a_recorded_ior_sweep(tmp_path):
    pytest.importorskip("iolab.tools.ior")
    labels = ["shared", "F", "F-C"]
    steps = slurm.sweep(["ior", "-O", "summaryFile={out}/{step}.json"], {k: [] for k in labels},
                        nodes=[2], result="{step}.json")
    files = {f"step-{i}.json": recordings.load(f"slurm/ior-2nodes-{k}").text for i, k in enumerate(labels)}
    df = recorded_job(tmp_path, slurm.batch_script(steps), files).outputs()
    assert set(df["options"]) == set(labels)
    assert set(df["access"]) >= {"write", "read"}
    fpp = df.groupby("options")["file_per_process"].first().to_dict()
    assert fpp == {"shared": False, "F": True, "F-C": True}


def test_outputs_read_rank_0_of_an_mpi_tool(tmp_path):
    s = slurm.batch_script(slurm.Step(["mdtest", "-n", "10"], name="md", nodes=2))
    seen = []
    job = recorded_job(tmp_path, s, {"md.0.vm.0.out": "rank 0 text", "md.1.vm.1.out": "WARNING: only a warning"})
    job.outputs(parsers={"mdtest": lambda text: seen.append(text) or [{"ok": 1}]})
    assert seen == ["rank 0 text"]


def test_a_parse_error_names_the_job_and_file(tmp_path):
    s = slurm.batch_script(slurm.fio_step("[x]\n", nodes=1))
    job = recorded_job(tmp_path, s, {"fio.0.vm.0.out": "fio: this is not json"})
    with pytest.raises(ParseError, match="job 7 step fio"):
        job.outputs()


# --- waiting, with Slurm simulated --------------------------------------------------------------

class FakeJob(slurm.Job):
    def __init__(self, tmp_path, states):
        super().__init__("9", tmp_path, tmp_path / "s.sbatch")
        self.states = list(states)
        self.cancelled = 0

    def info(self):
        s = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return slurm.JobInfo("9", s, 1 if s == "FAILED" else 0, 0, "NonZeroExitCode" if s == "FAILED" else "None")

    def cancel(self):
        self.cancelled += 1


@pytest.mark.parametrize("state", ["FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY"])
def test_every_bad_end_is_tool_failed_with_its_state(tmp_path, state):
    (tmp_path / "iolab-9.err").write_text("slurmstepd: error: *** JOB 9 ON n1 CANCELLED ***\n")
    job = FakeJob(tmp_path, ["PENDING", "RUNNING", state])
    with pytest.raises(ToolFailed) as e:
        job.wait(poll=0)
    assert e.value.state == state and e.value.job_id == "9"
    assert state in str(e.value) and "JOB 9 ON n1" in str(e.value)
    assert not isinstance(e.value, ToolTimeout) and job.cancelled == 0


def test_completed_returns_the_info(tmp_path):
    assert FakeJob(tmp_path, ["PENDING", "COMPLETING", "COMPLETED"]).wait(poll=0).ok


def test_a_wait_that_times_out_cancels_unless_asked(tmp_path):
    job = FakeJob(tmp_path, ["PENDING"])
    with pytest.raises(ToolTimeout, match="cancelled"):
        job.wait(timeout=0)
    assert job.cancelled == 1
    job = FakeJob(tmp_path, ["PENDING"])
    with pytest.raises(ToolTimeout, match="left running"):
        job.wait(timeout=0, cancel=False)
    assert job.cancelled == 0


def test_an_interrupted_wait_cancels_unless_asked(tmp_path, monkeypatch):
    def interrupt(_):
        raise KeyboardInterrupt
    monkeypatch.setattr(slurm.time, "sleep", interrupt)
    job = FakeJob(tmp_path, ["RUNNING"])
    with pytest.raises(KeyboardInterrupt):
        job.wait()
    assert job.cancelled == 1
    job = FakeJob(tmp_path, ["RUNNING"])
    with pytest.raises(KeyboardInterrupt):
        job.wait(cancel=False)
    assert job.cancelled == 0


def test_submit_without_slurm_is_tool_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(slurm.IolabError) as e:
        slurm.submit(slurm.batch_script(slurm.Step(["true"])), directory=tmp_path)
    assert "sbatch" in str(e.value)


# --- a real Slurm -------------------------------------------------------------------------------

@pytest.mark.live
def test_two_node_fio_job_through_srun(slurm_two_nodes, tmp_path):
    c = slurm_two_nodes
    step = slurm.fio_step(FIO_JOB.format(d=tmp_path), nodes=2, tasks_per_node=1, params={"size": "4M"})
    job = slurm.submit(slurm.batch_script(step, workdir=tmp_path), directory=tmp_path / "jobs", env=c.env)
    info = job.wait(timeout=300)
    assert info.ok and info.fields.get("NumNodes") == "2"
    df = job.outputs()
    assert sorted(df["node"].unique()) == [0, 1] and sorted(df["task"].unique()) == [0, 1]
    assert (df["direction"] == "write").all() and (df["io_bytes"] == 4 * 2**20).all()
    assert (df["size"] == "4M").all() and (df["tool"] == "fio").all()
    assert sorted(p.name for p in tmp_path.glob("iolab.write.*")) == ["iolab.write.0.0", "iolab.write.1.0"]
    assert (job.outdir / "fio.rc").read_text().strip() == "0"


@pytest.mark.live
def test_a_job_submitted_from_inside_a_hub_job_gives_its_steps_the_scripts_environment(slurm_two_nodes, tmp_path,
                                                                                        monkeypatch):
    """A notebook server that batchspawner runs as a job carries SLURM_EXPORT_ENV=<the hub's names> (it
    submits with --export=<names>). sbatch passes it on into a job the notebook submits, and srun reads it:
    each step would see only those names, not what the script exports or a module loads."""
    c = slurm_two_nodes
    monkeypatch.setenv("SLURM_EXPORT_ENV", "PATH,HOME,USER,SLURM_CONF,JUPYTERHUB_API_URL")
    step = slurm.Step(["printenv", "IOLAB_EXPORT_PROBE"], nodes=2, tasks_per_node=1)
    script = slurm.batch_script(step, env={"IOLAB_EXPORT_PROBE": "set by the script"})
    job = slurm.submit(script, directory=tmp_path, env=c.env)
    job.wait(timeout=300)                    # printenv fails (ToolFailed) where the variable did not arrive
    outs = sorted(job.outdir.glob("step-0.*.out"))
    assert [p.read_text().strip() for p in outs] == ["set by the script"] * 2, outs
    assert {p.name.split(".")[1] for p in outs} == {"0", "1"}        # one task on each node


@pytest.mark.live
def test_a_failing_job_is_tool_failed_with_its_state(slurm_two_nodes, tmp_path):
    c = slurm_two_nodes
    script = slurm.batch_script(slurm.Step(["ls", "/nonexistent-iolab-path"], nodes=2), job_name="iolab-fails")
    job = slurm.submit(script, directory=tmp_path, env=c.env)
    with pytest.raises(ToolFailed) as e:
        job.wait(timeout=300)
    assert e.value.state == "FAILED" and e.value.returncode == 2
    assert "nonexistent-iolab-path" in e.value.stderr and "step step-0 failed" in str(e.value)


@pytest.mark.live
def test_an_interrupted_wait_scancels_the_real_job(slurm_single, tmp_path, monkeypatch):
    c = slurm_single
    job = slurm.submit(slurm.batch_script(slurm.Step(["sleep", "600"])), directory=tmp_path, env=c.env)
    real_sleep = slurm.time.sleep
    calls = []

    def sleep_then_interrupt(s):
        calls.append(s)
        if job.info().state == "RUNNING":
            raise KeyboardInterrupt
        real_sleep(s)
    monkeypatch.setattr(slurm.time, "sleep", sleep_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        job.wait(timeout=300)
    monkeypatch.setattr(slurm.time, "sleep", real_sleep)
    for _ in range(300):
        if job.info().done:
            break
        real_sleep(0.1)
    assert job.info().state == "CANCELLED"


@pytest.mark.live
def test_a_sweep_one_job_each_on_one_node(slurm_single, tmp_path):
    c = slurm_single
    base = ["fio", "--name=sweep", f"--directory={tmp_path}", "--size=2M", "--bs=1M", "--output-format=json"]
    steps = slurm.sweep(base, {"write": ["--rw=write"], "read": ["--rw=read"]}, tasks_per_node=[1], tool="fio")
    jobs, df = slurm.run(steps, one_job_each=True, timeout=300, directory=tmp_path / "jobs", env=c.env)
    assert len(jobs) == 2 and df["job_id"].nunique() == 2
    assert df.set_index("options")["direction"].to_dict() == {"write": "write", "read": "read"}


@pytest.mark.live
@pytest.mark.skipif(IOR is None, reason="IOR is not built here (/tmp/ior-4.0.0/bin/ior or ior on PATH)")
@pytest.mark.parametrize("launcher", ["srun", "mpirun"])
@pytest.mark.slow
def test_ior_across_two_nodes(slurm_two_nodes, tmp_path, launcher):
    pytest.importorskip("iolab.tools.ior")
    c = slurm_two_nodes
    steps = slurm.sweep([IOR, "-t", "1m", "-b", "2m", "-o", "ior-test", "-O", "summaryFormat=JSON",
                         "-O", "summaryFile={out}/{step}.json"], {"-F": ["-F"], "-F -C": ["-F", "-C"]},
                        nodes=[2], result="{step}.json")
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    jobs, df = slurm.run(steps, timeout=300, directory=tmp_path / "jobs", env=c.env, job_env=env,
                         workdir=tmp_path, launcher=launcher)
    assert len(jobs) == 1
    assert set(df["options"]) == {"-F", "-F -C"} and (df["tasks"] == 2).all()
    assert df.groupby("options")["reorder_tasks"].first().to_dict() == {"-F": False, "-F -C": True}


@pytest.mark.live
@pytest.mark.skipif(MDTEST is None, reason="mdtest is not built here (/tmp/ior-4.0.0/bin/mdtest or on PATH)")
def test_mdtest_across_two_nodes(slurm_two_nodes, tmp_path):
    pytest.importorskip("iolab.tools.mdtest")
    c = slurm_two_nodes
    step = slurm.Step([MDTEST, "-n", "10", "-i", "1", "-d", str(tmp_path / "md")], nodes=2)
    job = slurm.submit(slurm.batch_script(step), directory=tmp_path / "jobs", env=c.env)
    job.wait(timeout=300)
    df = job.outputs()
    assert (df["task"] == 0).all() and "file creation" in set(df["operation"])
    assert (df["tasks"] == 2).all()


def test_recordings_have_their_meta():
    for ref in recordings.available("slurm"):
        meta = recordings.load(ref).meta
        assert meta["host"]["hostname"] and meta["date"] and meta["notes"], ref
    assert json.loads((REC / "fio-2nodes.meta.json").read_text())["filesystem"]["fstype"]


def test_why_not_names_the_reason(monkeypatch):
    monkeypatch.setenv("IOLAB_SLURM_TESTS", "skip")
    assert slurm_cluster.why_not() == "IOLAB_SLURM_TESTS=skip"
    monkeypatch.delenv("IOLAB_SLURM_TESTS")
    monkeypatch.setattr(slurm_cluster.os, "geteuid", lambda: 1000)
    assert "root" in slurm_cluster.why_not()


@pytest.mark.live
@pytest.mark.slow
def test_the_cluster_leaves_nothing_behind_even_on_failure(tmp_path):
    reason = slurm_cluster.why_not()
    if reason:
        pytest.skip(f"Slurm cannot start here: {reason}")
    c = slurm_cluster.SlurmCluster(nodes=1)
    with pytest.raises(RuntimeError, match="boom"):
        with c:
            state_dir = c.dir
            job = slurm.submit(slurm.batch_script(slurm.Step(["sleep", "600"])), directory=tmp_path, env=c.env)
            for _ in range(300):
                if job.info().state == "RUNNING":
                    break
                slurm.time.sleep(0.1)
            assert job.info().state == "RUNNING"
            marked = c._marked_pids()
            assert len(marked) >= 4            # munged, slurmctld, slurmd, slurmstepd, the job's sleep
            raise RuntimeError("boom")
    assert not state_dir.exists() and c.dir is None
    assert [(p, _state(p)) for p in marked if _state(p) not in ("gone", "Z")] == []


def _state(pid: int) -> str:
    """A process's state letter (Z: a zombie, dead but not yet reaped by its parent), or "gone"."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("State:"):
                return line.split()[1]
    except OSError:
        pass
    return "gone"


def _fake_run(outputs):
    from datetime import datetime, timezone

    from iolab.runner import Run

    def run(self, argv, timeout=30, check=False):
        text, rc = outputs.get(argv[0], ("", 1))
        return Run(argv, text, "" if rc == 0 else f"{argv[0]}: error", rc, 0.0, datetime.now(timezone.utc))
    return run


def test_state_falls_back_to_sacct_then_squeue(tmp_path, monkeypatch):
    job = slurm.Job("12", tmp_path, tmp_path / "s.sbatch")
    monkeypatch.setattr(slurm.runner, "which", lambda tool: "/usr/bin/" + tool)
    gone = ("slurm_load_jobs error: Invalid job id specified\n", 1)
    monkeypatch.setattr(slurm.Job, "_run", _fake_run({
        "scontrol": gone, "sacct": ("12|NODE_FAIL|0:0|None|n2\n12.batch|CANCELLED|0:15||n2\n", 0)}))
    info = job.info()
    assert (info.state, info.source, info.nodes) == ("NODE_FAIL", "sacct", "n2") and info.done and not info.ok
    monkeypatch.setattr(slurm.Job, "_run", _fake_run({
        "scontrol": gone, "sacct": ("", 1), "squeue": ("12|TIMEOUT|TimeLimit|n1\n", 0)}))
    info = job.info()
    assert (info.state, info.reason, info.source) == ("TIMEOUT", "TimeLimit", "squeue")
    monkeypatch.setattr(slurm.Job, "_run", _fake_run({"scontrol": gone}))
    with pytest.raises(slurm.IolabError, match="no longer knows job 12"):
        job.info()


def test_input_files_are_written_once_and_never_clash():
    steps = slurm.sweep(["fio", "--output-format=json", "{out}/job.fio"], {"a": ["--rw=read"], "b": ["--rw=write"]},
                        tool="fio", files={"job.fio": "[x]\nsize=1M\n"})
    assert slurm.batch_script(steps).count("cat > \"$OUT/job.fio\"") == 1
    clash = [slurm.fio_step("[a]\n"), slurm.fio_step("[b]\n", name="fio2")]
    clash[1].files = {"fio.fio": "[b]\n"}
    with pytest.raises(ValueError, match="different input files"):
        slurm.batch_script(clash)


# --- the private Slurm, one per module ---

def _cluster_fixture(nodes: int):
    reason = slurm_cluster.why_not()
    if reason:
        pytest.skip(f"Slurm cannot start here: {reason}")
    cluster = slurm_cluster.SlurmCluster(nodes=nodes)
    cluster.start()      # a failure here, with slurm installed and root, is an error: it shows the logs
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def slurm_single():
    """A one-node private Slurm (the host's short name), stopped after the module."""
    yield from _cluster_fixture(1)


@pytest.fixture(scope="module")
def slurm_two_nodes():
    """A two-node private Slurm (n1, n2: two slurmd on this host), stopped after the module."""
    yield from _cluster_fixture(2)


_KILLED_KERNEL = """
import sys, time
from iolab.slurm_cluster import SlurmCluster
c = SlurmCluster(nodes=2).start()
print(c.dir, *[p.pid for p in c.procs.values()], flush=True)
time.sleep(600)
"""


@pytest.mark.live
@pytest.mark.slow
def test_a_kernel_killed_outright_leaves_no_slurm_behind():
    """The guard ends the daemons and removes the cluster's directory after a SIGKILL of its owner."""
    from conftest import wait_until

    from iolab import guard

    reason = slurm_cluster.why_not()
    if reason:
        pytest.skip(f"Slurm cannot start here: {reason}")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    p = subprocess.Popen([os.sys.executable, "-c", _KILLED_KERNEL], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = p.stdout.readline().split()
        assert line, "the cluster did not start"
        where, pids = Path(line[0]), [int(x) for x in line[1:]]
        assert where.is_dir() and len(pids) == 4          # munged, slurmctld, two slurmd
    finally:
        p.kill()
        p.wait()
    assert wait_until(lambda: not any(guard._alive(pid) for pid in pids), 30), "a daemon outlived its kernel"
    assert wait_until(lambda: not where.exists(), 30), "the cluster's directory was left"
