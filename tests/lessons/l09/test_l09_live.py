"""Lesson 09 run for real (slow: a store, a data set, Snakemake): the byte accounting of the staging
and of the workflow, a kill and its resume, and every fault a clear iolab error with nothing left
running. Skipped where snakemake, bwa, samtools, bcftools, wgsim, s3cmd or SeaweedFS is missing."""
from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from iolab import workspace
from iolab.errors import BudgetExceeded, ToolFailed
from iolab.lessons.l09_workflows import experiments as ex
from iolab.lessons.l09_workflows import lab as l09lab
from iolab.lessons.l09_workflows.lab import StoreError

pytestmark = [pytest.mark.live, pytest.mark.slow,
              pytest.mark.skipif(bool(l09lab.missing_tools()) or not __import__("shutil").which("s3cmd"),
                                 reason=f"not installed here: {l09lab.missing_tools()}")]


def _mine(root: Path) -> list[psutil.Process]:
    """Processes (weed, snakemake, bwa...) whose command line names this workspace."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(root) in a for a in (p.info["cmdline"] or [])) and p.pid != os.getpid():
                out.append(p)
        except psutil.Error:
            pass
    return out


@pytest.fixture(scope="module")
def lab():
    with workspace.Workspace(budget="512MiB") as ws, l09lab.open_lab(ws) as L:
        yield L
    assert not ws.root.exists()
    assert not _mine(ws.root)


def _no_runs_left(lab):
    # the store (weed, the private network's holder) stays up for the next test: runs must not
    alive = [p for p in _mine(lab.ws.root)
             if any(t in " ".join(p.cmdline()[:4]) for t in ("snakemake", "bwa", "samtools", "bcftools", "s3cmd"))]
    assert not alive, [p.cmdline()[:3] for p in alive]


def test_before_and_workflow_accounting(lab):
    total = sum(lab.objects.values())
    assert total == lab.data.nbytes == 17_320_519       # the seeded data set, byte for byte
    b = ex.before(lab)
    assert b.mode == "live" and b.moved.sent == total and b.moved.gets == len(lab.objects)
    assert b.left_bytes == b.peak >= total               # everything staged stays
    c1 = ex.workflow(lab, cores=1)
    assert c1.moved.sent == total and c1.fetched_bytes() == total and c1.moved.gets == len(lab.objects)
    assert c1.moved.heads > c1.moved.gets                 # a waiting run re-checks its inputs
    assert c1.peak < b.peak and c1.left_bytes < 100_000
    assert not any(k.startswith(("local-storage/", "mapped_reads/", "sorted_reads/")) for k in c1.left)
    calls = ex.calls_against_truth(c1)
    assert calls.called_true > 2 * calls.false_calls
    _no_runs_left(lab)


def test_kill_and_resume(lab):
    k = ex.resume(lab, sig="KILL")
    assert "--unlock" in list(k.steps["label"]) and k.steps["returncode"].iloc[-1] == 0
    last = k.steps["label"].iloc[-1]
    assert 0 < int((k.jobs.step == last).sum()) < k.planned["total"]
    assert k.fetched_bytes(last) < sum(lab.objects.values()) // 100
    _no_runs_left(lab)


def test_missing_bucket_and_wrong_keys(lab):
    with pytest.raises(StoreError, match="does not exist"):
        ex.workflow(dataclasses.replace(lab, bucket="no-such-bucket"), cores=1)
    wrong = dataclasses.replace(lab, ep=dataclasses.replace(lab.ep, secret_key="wrong" + lab.ep.secret_key))
    with pytest.raises(StoreError, match="refused the keys"):
        ex.workflow(wrong, cores=1)
    _no_runs_left(lab)


def test_a_failing_job_is_a_tool_failure_and_leaves_no_lock(lab):
    cl = lab.client()
    good = cl.get_object(Bucket=lab.bucket, Key="data/genome.fa.bwt")["Body"].read()
    cl.put_object(Bucket=lab.bucket, Key="data/genome.fa.bwt", Body=b"not an index\n")
    try:
        with pytest.raises(ToolFailed, match="snakemake -c 1 failed") as e:
            ex.workflow(lab, cores=1)
        assert "Error in rule map_reads" in e.value.stderr
    finally:
        cl.put_object(Bucket=lab.bucket, Key="data/genome.fa.bwt", Body=good)
    runs = sorted(lab.ws.root.glob("l09-c1-*"), key=lambda p: p.stat().st_mtime)
    assert not list((runs[-1] / ".snakemake" / "locks").glob("*"))      # Snakemake released it
    _no_runs_left(lab)


def test_a_full_budget_refuses_before_writing():
    with workspace.Workspace(budget="8MiB") as ws:
        with pytest.raises(BudgetExceeded):
            with l09lab.open_lab(ws):
                pass
        assert not _mine(ws.root)


def test_a_store_that_dies_mid_run():
    with workspace.Workspace(budget="512MiB") as ws, l09lab.open_lab(ws) as L:
        def kill_store():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not list(ws.root.glob("l09-c1-*/local-storage/s3/*/data/samples/*")):
                time.sleep(0.05)
            for p in _mine(ws.root):
                if "weed" in " ".join(p.cmdline()[:2]):
                    p.send_signal(signal.SIGKILL)
        t = threading.Thread(target=kill_store, daemon=True)
        t.start()
        with pytest.raises((StoreError, ToolFailed)) as e:
            ex.workflow(L, cores=1)
        t.join(5)
        assert "store" in str(e.value) or "snakemake" in str(e.value)
        assert not [p for p in _mine(ws.root) if "snakemake" in " ".join(p.cmdline()[:2])]
    assert not _mine(ws.root)


KERNEL = r"""
import sys, time
from iolab import workspace
from iolab.lessons.l09_workflows import experiments as ex, lab as l09lab
ws = workspace.session()
print(ws.root, flush=True)
lab = l09lab.start(ws)
ex.workflow(lab, cores=1)
time.sleep(600)
"""


def test_a_killed_kernel_leaves_nothing(tmp_path):
    """A kernel killed with SIGKILL in the middle of a workflow: its guard stops the store and
    Snakemake's process group and removes the workspace, the local copies with it."""
    import subprocess
    import sys

    from conftest import wait_until

    env = dict(os.environ, IOLAB_GUARD="1", IOLAB_WORKDIR=str(tmp_path))
    p = subprocess.Popen([sys.executable, "-c", KERNEL], stdout=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        root = Path(p.stdout.readline().strip())
        assert wait_until(lambda: list(root.glob("l09-c1-*/local-storage/s3/*/data/samples/*")), 300)
        assert [q for q in _mine(root) if "snakemake" in " ".join(q.cmdline()[:3])]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
        assert wait_until(lambda: not _mine(root) and not root.exists(), 60), \
            [q.cmdline()[:3] for q in _mine(root)]
    finally:
        if p.poll() is None:
            p.kill()
