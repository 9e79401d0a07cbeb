"""Lesson 09's Slurm part: status without accounting, the per-job byte accounting, the seed's chain.

Golden tests read the recordings of data/recorded/workflows/slurm-*; live tests start the private Slurm
(iolab.slurm_cluster: root, slurm-wlm, munge) and skip without it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iolab import recordings, runner, slurm_cluster
from iolab.errors import ParseError, ToolFailed
from iolab.lessons.l09_workflows import slurm as s

ACC = json.loads(recordings.load("workflows/slurm-accounting").text)
CONFIG = ACC["config"]


def _run(name: str) -> s.SlurmRun:
    return s.SlurmRun.from_json(recordings.load(f"workflows/{name}").text)


# --- is there an accounting database? --------------------------------------------------------------

def test_the_course_slurm_has_no_accounting_and_the_slurm_plugin_is_told_squeue():
    acc = s.judge(CONFIG, ACC["sacct_returncode"], ACC["sacct_output"])
    assert ACC["sacct_returncode"] == 1 and "accounting storage is disabled" in ACC["sacct_output"]
    assert (acc.storage_type, acc.min_job_age, acc.enabled) == ("accounting_storage/none", 600, False)
    assert s.slurm_plugin_args(acc) == ["--slurm-status-command", "squeue"]
    assert "sacct said" in acc.describe() and "MinJobAge=600" in acc.describe()


def test_a_cluster_with_accounting_keeps_the_plugins_default():
    conf = CONFIG.replace("accounting_storage/none", "accounting_storage/slurmdbd")
    acc = s.judge(conf, 0, "")
    assert acc.enabled and s.slurm_plugin_args(acc) == []
    # a database named in the config that sacct cannot reach is no accounting either
    assert not s.judge(conf, 1, "sacct: error: Problem talking to the database: Connection refused").enabled
    # a config that says none, whatever sacct printed
    assert not s.judge(CONFIG, 0, "").enabled


def test_without_accounting_and_a_short_min_job_age_it_fails_at_once_saying_what_to_set():
    conf = CONFIG.replace("MinJobAge               = 600 sec", "MinJobAge               = 2 sec")
    assert conf != CONFIG
    acc = s.judge(conf, 1, ACC["sacct_output"])
    with pytest.raises(s.NoAccounting, match="MinJobAge.*cluster-generic"):
        s.slurm_plugin_args(acc)
    with pytest.raises(s.NoAccounting):
        s.argv("slurm", acc=acc)


def test_a_command_line_that_would_hang_is_refused():
    acc = s.judge(CONFIG, 1, ACC["sacct_output"])
    for bad in (["snakemake", "--executor", "slurm", "--jobs", "3"],
                ["snakemake", "--executor=slurm", "--slurm-status-command", "sacct"]):
        with pytest.raises(s.NoAccounting, match="--slurm-status-command squeue"):
            s.refuse_hang(bad, acc)
    s.refuse_hang(["snakemake", "--executor", "slurm", "--slurm-status-command", "squeue"], acc)
    s.refuse_hang(["snakemake", "--executor", "cluster-generic"], acc)
    assert "--slurm-status-command" in s.argv("slurm", acc=acc)
    assert "--groups" not in s.argv("cluster-generic", grouped=False, status_cmd="/x/status.sh")


@pytest.mark.parametrize("bad", [
    CONFIG.replace("AccountingStorageType   = accounting_storage/none\n", ""),
    "Configuration data as of 2026-12-01T21:21:54\nthis is not scontrol\n",
    "",
    '{"config": 1}',
])
def test_what_is_not_scontrol_show_config_is_refused(bad):
    with pytest.raises(ParseError):
        s.parse_config(bad)


def test_parse_config_names_the_line():
    text = CONFIG.replace("MinJobAge               = 600 sec", "MinJobAge 600")
    with pytest.raises(ParseError) as e:
        s.parse_config(text)
    assert e.value.line == "MinJobAge 600" and e.value.line_no


# --- the status command of cluster-generic, run for real against a scontrol that says what Slurm says ---

def _status(tmp_path: Path, stdout: str, rc: int = 0) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "said.txt").write_text(stdout)
    fake = bin_dir / "scontrol"
    fake.write_text(f'#!/bin/sh\ncat "{tmp_path}/said.txt"\nexit {rc}\n')
    fake.chmod(0o700)
    script = tmp_path / "status.sh"
    script.write_text(s.STATUS_SCRIPT)
    script.chmod(0o700)
    return subprocess.run([str(script), "7"], capture_output=True, text=True, timeout=30,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})


def test_the_status_command_maps_scontrols_states(tmp_path):
    line = _run("slurm-cluster-generic-grouped-1").status_lines[0]
    assert "JobState=COMPLETED" in line
    for state, word in [("COMPLETED", "success"), ("RUNNING", "running"), ("PENDING", "running"),
                        ("COMPLETING", "running"), ("FAILED", "failed"), ("NODE_FAIL", "failed"),
                        ("CANCELLED", "failed"), ("TIMEOUT", "failed"), ("OUT_OF_MEMORY", "failed")]:
        r = _status(tmp_path, line.replace("JobState=COMPLETED", f"JobState={state}") + "\n")
        assert (r.returncode, r.stdout) == (0, word + "\n"), state
    r = _status(tmp_path, "slurm_load_jobs error: Invalid job id specified\n", 1)
    assert (r.returncode, r.stdout) == (0, "failed\n")


def test_a_controller_that_does_not_answer_is_an_error_not_running_for_ever(tmp_path):
    r = _status(tmp_path, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n", 1)
    assert r.returncode == 1 and r.stdout == "" and "Unable to contact" in r.stderr
    r = _status(tmp_path, "something else entirely\n", 0)
    assert r.returncode == 1 and "no JobState" in r.stderr


# --- what each job fetched, stored and where it ran, from the recordings --------------------------

def _data_bytes(r: s.SlurmRun) -> int:
    return sum(n for k, n in r.sizes.items() if k.startswith("data/"))


def test_cluster_generic_grouped_bytes_agree_with_the_stores_counters():
    r = _run("slurm-cluster-generic-grouped-1")
    acc = s.byte_accounting(r)
    vcf = r.sizes["results/all.vcf"]
    # every input fetched once, all of it by the submit host before it submitted; nothing on the nodes
    assert acc["fetched by submit host"] == acc["store sent"] == _data_bytes(r)
    assert acc["fetched on nodes"] == 0
    # the result went up twice: from the node's job, then again from the submit host
    assert acc["stored from nodes"] == acc["stored by submit host"] == vcf
    assert acc["store received"] == 2 * vcf and acc["PUT"] == 2
    assert r.puts("results/all.vcf") == {"submit host": 1, "node jobs": 1}


def test_cluster_generic_grouped_jobs_one_per_sample_then_the_call():
    df = _run("slurm-cluster-generic-grouped-1").jobs
    assert len(df) == 4 and set(df["state"]) == {"COMPLETED"}
    assert set(df["node"]) <= {"n1", "n2"}
    groups = df[df["kind"] == "group job"]
    assert sorted(groups["sample"]) == ["A", "B", "C"]
    assert set(groups["rules"]) == {"map_reads+sort_alignments+samtools_index"}
    call = df[df["rules"] == "call_variants"].iloc[0]
    assert call["stored_from_node_bytes"] > 0 and (groups["stored_from_node_bytes"] == 0).all()
    # each group read its sample's reads and the genome with its index, from the submit host's copies
    assert (groups["inputs_from_storage_bytes"] > 0).all() and (df["fetched_on_node_bytes"] == 0).all()


def test_the_slurm_plugin_uploads_the_result_three_times():
    r = _run("slurm-slurm-grouped-1")
    acc = s.byte_accounting(r)
    assert acc["PUT"] == 3 and acc["store received"] == 3 * r.sizes["results/all.vcf"]
    assert r.puts("results/all.vcf") == {"submit host": 1, "node jobs": 2}
    assert acc["fetched by submit host"] == acc["store sent"] == _data_bytes(r)
    assert len(r.jobs) == 4 and set(r.jobs["node"]) <= {"n1", "n2"}


def test_ungrouped_is_one_slurm_job_per_rule():
    try:
        r = _run("slurm-cluster-generic-ungrouped-1")
    except FileNotFoundError:
        pytest.skip("no ungrouped recording")
    df = r.jobs
    assert len(df) == 10 and set(df["kind"]) == {"job"}
    assert sorted(df["rules"]).count("map_reads") == 3
    assert s.byte_accounting(r)["PUT"] == 2


def test_a_recording_that_is_not_one_is_refused():
    good = json.loads(recordings.load("workflows/slurm-cluster-generic-grouped-1").text)
    for change in ({"executor": "lsf"}, {"metrics": ["x"]}, {"log": 3}, {"job_logs": {"1": "hello\n"}},
                   {"log": "no snakemake here\n"}):
        with pytest.raises(ParseError):
            s.SlurmRun.from_json(json.dumps(dict(good, **change)))
    with pytest.raises(ParseError):
        s.SlurmRun.from_json("[1, 2]")
    r = s.SlurmRun.from_json(json.dumps(good))
    r.sizes.pop("data/genome.fa")
    with pytest.raises(ParseError, match="genome.fa"):
        s.byte_accounting(r)


# --- live, on the private Slurm -------------------------------------------------------------------

def _queued(cluster) -> list[str]:
    """Every job the private cluster still holds as pending or running, anybody's."""
    return runner.run(["squeue", "-h", "-o", "%i"], timeout=15, env=cluster.env).stdout.split()


@pytest.fixture(scope="module")
def cluster():
    reason = slurm_cluster.why_not()
    if reason:
        pytest.skip(f"Slurm cannot start here: {reason}")
    with slurm_cluster.SlurmCluster(nodes=2) as c:
        yield c


@pytest.mark.live
def test_live_detection_on_the_private_slurm(cluster):
    acc = s.accounting(cluster.env)
    assert not acc.enabled and acc.storage_type == "accounting_storage/none"
    assert "accounting storage is disabled" in acc.sacct_said.lower()
    assert s.slurm_plugin_args(acc) == ["--slurm-status-command", "squeue"]


FAILING = """\
rule all:
    input: "ok.txt", "bad.txt"

rule ok:
    output: "ok.txt"
    shell: "echo fine > {output}"

rule bad:
    output: "bad.txt"
    shell: "echo about to fail on $SLURMD_NODENAME; exit 3"
"""


@pytest.mark.live
@pytest.mark.slow
def test_a_job_that_fails_on_a_node_says_so_and_leaves_nothing(cluster, tmp_path):
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed (the lesson's extra)")
    (tmp_path / "Snakefile").write_text(FAILING)
    with pytest.raises(ToolFailed) as e:
        s.run(tmp_path, env={}, slurm_env=cluster.env, grouped=False, timeout=300)
    said = str(e.value) + (e.value.stderr or "")
    assert "FAILED on n" in said and "about to fail on n" in said and "exit 3" in said
    assert s.leftovers(tmp_path, cluster.env) == {"jobs": [], "locks": [], "incomplete": []}
    assert _queued(cluster) == []
    assert not (tmp_path / "bad.txt").exists()


TINY = """\
rule all:
    input: "c.txt"

rule a:
    output: "a.txt"
    shell: "echo $SLURMD_NODENAME > {output}"

rule b:
    input: "a.txt"
    output: "c.txt"
    shell: "cat {input} > {output}; echo $SLURMD_NODENAME >> {output}"
"""


@pytest.mark.live
@pytest.mark.slow
def test_a_workflow_runs_as_slurm_jobs_without_accounting(cluster, tmp_path):
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed (the lesson's extra)")
    (tmp_path / "Snakefile").write_text(TINY)
    r = s.run(tmp_path, env={}, slurm_env=cluster.env, grouped=False, timeout=300)
    assert r.returncode == 0 and not r.accounting.enabled
    df = r.jobs
    assert len(df) == 2 and set(df["state"]) == {"COMPLETED"} and set(df["rules"]) == {"a", "b"}
    ran_on = (tmp_path / "c.txt").read_text().split()
    assert len(ran_on) == 2 and set(ran_on) <= {"n1", "n2"}
    assert sorted(ran_on) == sorted(df["node"])
    assert s.leftovers(tmp_path, cluster.env) == {"jobs": [], "locks": [], "incomplete": []}
    assert _queued(cluster) == []



@pytest.mark.live
@pytest.mark.slow
def test_the_seeds_before_is_three_jobs_chained_with_afterok(cluster, tmp_path):
    for tool in ("bwa", "samtools", "bcftools", "wgsim"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    from iolab import workspace
    from iolab.lessons.l09_workflows import data

    with workspace.Workspace(budget="64MiB", base=tmp_path) as ws:
        ds = data.make(ws, reads=500, bases=20_000)
        stage = ws.mkdir("stage")
        for key, path in ds.files.items():
            (stage / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, stage / key)
        chain = s.before_chain(stage, slurm_env=cluster.env, timeout=300)
        assert [j["job"] for j in chain.jobs] == ["job1.sbatch", "job2.sbatch", "job3.sbatch"]
        ids = [j["slurm_job"] for j in chain.jobs]
        assert [j["dependency"] for j in chain.jobs] == ["", f"afterok:{ids[0]}", f"afterok:{ids[1]}"]
        assert all(set(j["nodes"].split(",")) <= {"n1", "n2"} for j in chain.jobs)
        assert (stage / "results" / "all.vcf").read_text().startswith("##fileformat=VCF")
        assert _queued(cluster) == []
        assert os.path.exists(stage / "sorted_reads" / "A.bam.bai")     # the seed's way leaves it all there


# --- the lesson's door and its sentences -----------------------------------------------------------

def test_the_lesson_replays_by_default_and_its_claims_follow_the_numbers():
    out = s.on_slurm(None)
    assert out.mode == "replay" and "replayed by default" in out.provenance
    assert len(out.frame) == 4 and out.result_puts == {"submit host": 1, "node jobs": 1}
    assert out.accounting_verdict is not None and not out.accounting_verdict.enabled
    cs = s.slurm_claims(out, show=False)
    assert all(c.consistent() for c in cs)
    assert cs[0].text.startswith("As predicted") and "17,320,519" in cs[0].text
    assert cs[1].text.startswith("As predicted") and "2 PUTs" in cs[1].text


def test_the_claims_turn_when_the_numbers_do():
    out = s.on_slurm(None)
    out.bytes = dict(out.bytes, PUT=1)
    out.bytes["fetched on nodes"] = 5
    out.frame = out.frame.assign(node="n1")
    cs = s.slurm_claims(out, show=False)
    assert [c.text.split(":")[0] for c in cs] == ["Not this time"] * 3
    assert all(c.consistent() for c in cs)
    out.bytes = dict(out.bytes, PUT=None)
    out.bytes["store sent"] = None
    assert s.slurm_claims(out, show=False)[1].text.startswith("Cannot tell")


def test_the_recorded_runs_side_by_side():
    df = s.recorded_runs()
    assert {"cluster-generic", "slurm"} <= set(df["executor"])
    shared = df[df["inputs fetched by"] == "submit host"]
    assert set(shared[shared["executor"] == "cluster-generic"]["PUT"]) == {2}
    assert set(shared[shared["executor"] == "slurm"]["PUT"]) == {3}
    assert (shared["from store"] == shared["from store"].iloc[0]).all()
    on_nodes = df[df["inputs fetched by"] != "submit host"]
    assert len(on_nodes) >= 1 and (on_nodes["from store"] > shared["from store"].iloc[0]).all()


@pytest.mark.live
@pytest.mark.slow
def test_a_run_cut_short_cancels_its_jobs_and_releases_its_lock(cluster, tmp_path):
    if shutil.which("snakemake") is None:
        pytest.skip("snakemake is not installed (the lesson's extra)")
    (tmp_path / "Snakefile").write_text('rule all:\n    output: "x.txt"\n    shell: "sleep 600; touch {output}"\n')
    with pytest.raises(s.ToolTimeout, match="cancelled"):
        s.run(tmp_path, env={}, slurm_env=cluster.env, grouped=False, timeout=25)
    assert _queued(cluster) == []
    assert s.leftovers(tmp_path, cluster.env) == {"jobs": [], "locks": [], "incomplete": []}


def test_without_a_shared_filesystem_each_job_fetches_on_its_node_and_the_bams_go_through_the_bucket():
    r = _run("slurm-cluster-generic-grouped-nodes-1")
    assert not r.shared_fs
    acc = s.byte_accounting(r)
    assert acc["fetched by submit host"] == 0 and acc["stored by submit host"] == 0
    assert acc["fetched on nodes"] == acc["store sent"] > _data_bytes(r)      # the BAMs come back for the call
    assert acc["stored from nodes"] == acc["store received"]
    # per sample: its BAM, sorted BAM, index and log; then all.vcf and the call's log
    assert acc["PUT"] == 3 * 4 + 2
    assert r.counters.count("DELETE", bucket=r.bucket) == 9                 # the temporary() files, from the bucket
    df = r.jobs
    assert (df["fetched_on_node_bytes"] > 0).all()
    # a second job on a node finds the genome the first fetched there: fetched less than it read
    groups = df[df["kind"] == "group job"]
    assert set(groups["node"]) == {"n1", "n2"}
    for node, jobs in groups.groupby("node"):
        assert jobs["fetched_on_node_bytes"].sum() <= jobs["inputs_from_storage_bytes"].sum()


# --- exercise 09.4 ----------------------------------------------------------------------------------

def test_exercise_slurm_puts_passes_the_right_answer_and_names_the_slips():
    from iolab.check import CheckFailed
    from iolab.lessons.l09_workflows import check

    out = s.on_slurm(None)
    assert check.check_slurm_puts(out.bytes["PUT"], out)
    for wrong, said in [(1, "wrote all.vcf.*submit host uploaded it too"), (out.bytes["store received"], "bytes"), (len(out.frame), "Slurm jobs"),
                        (out.result_puts["node jobs"], "submit host uploaded"), (3, "not what the store counted"),
                        ("2", "number")]:
        with pytest.raises(CheckFailed, match=said):
            check.check_slurm_puts(wrong, out)


def test_the_seeds_before_on_slurm_in_lesson_09s_own_record():
    from iolab.lessons.l09_workflows import experiments as ex

    b = s.before_on_slurm(None)
    assert b.mode == "replay" and isinstance(b, ex.Record)
    assert list(b.steps["label"]) == ["stage in (s3cmd get -r)", "3 sbatch jobs, afterok", "copy back (s3cmd put)"]
    stage, chain, back = (b.steps.iloc[i] for i in range(3))
    assert stage["sent"] == sum(b.data["objects"].values()) and chain["sent"] == 0 and chain["received"] == 0
    assert back["puts"] == 1 and b.moved.puts == 1
    jobs = b.data["slurm_jobs"]
    assert [j["dependency"] for j in jobs] == ["", f"afterok:{jobs[0]['slurm_job']}", f"afterok:{jobs[1]['slurm_job']}"]
    assert b.left_bytes >= b.peak * 0.99 > 0          # everything it staged and made is still on scratch
    local = ex.recorded("before")
    assert local.moved.sent == b.moved.sent


def test_live_mode_asks_for_the_slurm_part_instead_of_refusing_its_default(monkeypatch):
    # IOLAB_MODE=live means never replay: the Slurm part's "replayed by default" is no reason then; it
    # runs here, or says what it lacks (here: no store was started)
    from iolab import recordings
    from iolab.lessons.l09_workflows import slurm as l09s

    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(recordings.CannotRunHere, match="no store was started"):
        l09s.on_slurm(None)
    with pytest.raises(recordings.CannotRunHere, match="no store was started"):
        l09s.before_on_slurm(None)
    monkeypatch.setenv("IOLAB_MODE", "auto")
    assert l09s.on_slurm(None).mode == "replay"
