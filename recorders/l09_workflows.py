"""Record lesson 09's runs (needs snakemake, bwa, samtools, bcftools, wgsim, s3cmd, SeaweedFS: `make setup`).

    .venv/bin/python -m recorders.l09_workflows [--only before,dry-run,dag,c1,c3,kill,int,partial,metrics]

Writes data/recorded/workflows/<name>.json (one run's record: every step's argv, exit status, time,
stdout and stderr, the S3 gateway's lines of SeaweedFS's /metrics before and after each step, the
scratch directory sampled every 0.2 s, what was left, the VCF and wgsim's mutation lists) with its
.meta.json (load before/after in the notes), and, for the metrics parser's golden tests, whole
/metrics texts as SeaweedFS served them (``metrics-*.txt``).
"""
from __future__ import annotations

import argparse
import os
import time

from iolab import recordings, workspace
from iolab.lessons.l09_workflows import experiments as ex
from iolab.lessons.l09_workflows.lab import open_lab

RUNS = ("before", "dry-run", "dag", "c1", "c3", "kill", "int", "partial")


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def metrics_captures(lab) -> None:
    """Whole /metrics texts: the store after the upload, and after a counted calibration (3 GETs of
    objects, 5 HEADs, 1 HEAD of a missing key, 1 PUT), which the golden test checks."""
    recordings.save(lab.metrics_text(), "workflows/metrics-after-upload", ext="txt",
                    argv=["GET", "/metrics"], tool_version=lab.ep.server, fs_path=lab.ws.root,
                    notes=f"SeaweedFS's /metrics right after lesson 09's data set was uploaded (10 objects, "
                          f"{sum(lab.objects.values())} bytes); load {_load()}")
    cl = lab.client()
    for key in ("data/genome.fa.amb", "data/genome.fa.ann", "data/genome.fa.fai"):
        cl.get_object(Bucket=lab.bucket, Key=key)["Body"].read()
    for _ in range(5):
        cl.head_object(Bucket=lab.bucket, Key="data/genome.fa")
    try:
        cl.head_object(Bucket=lab.bucket, Key="data/missing")
    except Exception:
        pass
    cl.put_object(Bucket=lab.bucket, Key="calibration/one", Body=b"x" * 1000)
    recordings.save(lab.metrics_text(), "workflows/metrics-calibration", ext="txt",
                    argv=["GET", "/metrics"], tool_version=lab.ep.server, fs_path=lab.ws.root,
                    notes="the same store after: GET of data/genome.fa.amb, .ann, .fai (12+39+21 bytes), 5 HEADs of "
                          "data/genome.fa, 1 HEAD of data/missing (404), 1 PUT of 1000 bytes (calibration/one); "
                          f"load {_load()}")
    cl.delete_object(Bucket=lab.bucket, Key="calibration/one")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(RUNS + ("metrics",)))
    only = set(ap.parse_args().only.split(","))
    t0 = time.time()
    with workspace.Workspace(budget="1GiB") as ws, open_lab(ws) as lab:
        if "metrics" in only:
            metrics_captures(lab)
        todo = [("before", lambda: ex.before(lab, save_as="before")),
                ("dry-run", lambda: ex.dry_run(lab, save_as="dry-run")),
                ("dag", lambda: ex.dag(lab, save_as="dag")),
                ("c1", lambda: ex.workflow(lab, cores=1, save_as="snakemake-c1")),
                ("c3", lambda: ex.workflow(lab, cores=3, save_as="snakemake-c3")),
                ("kill", lambda: ex.resume(lab, sig="KILL", save_as="resume-kill")),
                ("int", lambda: ex.resume(lab, sig="INT", save_as="resume-int")),
                ("partial", lambda: ex.partial(lab, save_as="partial-read"))]
        for name, fn in todo:
            if name in only:
                out = fn()
                print(f"{name}: {out.seconds:.1f} s, load {out.load}, sent {out.moved.sent}, peak {out.peak}")
    print(f"done in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
