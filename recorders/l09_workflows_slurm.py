"""Record lesson 09's Slurm part: the workflow's jobs as Slurm jobs on the private 2-node Slurm.

    .venv/bin/python -m recorders.l09_workflows_slurm [--trials 2] [--first 1] [--only accounting,grouped,plugin,nodes,ungrouped,before]

Needs root (the private Slurm), slurm-wlm and munge, bwa samtools bcftools, snakemake with the lesson's
executor plugins (``pip install -e '.[workflows]'``) and SeaweedFS (``make setup``). Writes
``data/recorded/workflows/slurm-*`` (beside the local runs' recordings of lesson 09):

* ``accounting.json``: ``scontrol show config`` and sacct's answer on a cluster without a job database;
* ``<executor>-<grouped|ungrouped>-<n>.json``: one run each (snakemake's log, every Slurm job's output,
  scontrol's line for each ended job, the bucket's object sizes, the store's /metrics before and after),
  the grouped runs of both executors interleaved (cluster-generic, slurm, cluster-generic, slurm ...);
* ``cluster-generic-grouped-nodes-1.json``: grouped, without a shared filesystem assumed (each job fetches
  its inputs on its node, the intermediates go through the bucket; their sizes listed while it runs);
* ``before-chain.json``: the seed's "before" as three sbatch jobs chained with afterok;
* ``before-record.json`` (``--only before-record``): the same inside lesson 09's record of its before
  (stage with s3cmd, the chain, copy back; the store's counters and scratch's samples).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from iolab import recordings, runner, workspace
from iolab.lessons.l09_workflows import data
from iolab.lessons.l09_workflows import slurm as l09slurm
from iolab.objectstore import servers
from iolab.slurm_cluster import SlurmCluster

OUT = "workflows"
SNAKEFILE = Path(l09slurm.__file__).with_name("Snakefile")


def _client(ep):
    import boto3

    return boto3.client("s3", endpoint_url=ep.url, aws_access_key_id=ep.access_key,
                        aws_secret_access_key=ep.secret_key)


def _store_env(ep) -> dict[str, str]:
    return {"SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": ep.url, "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": ep.access_key,
            "SNAKEMAKE_STORAGE_S3_SECRET_KEY": ep.secret_key}


def _sizes(client, bucket: str) -> dict[str, int]:
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["Size"]
    return out


def _save(text: str, name: str, argv: list[str], notes: str) -> None:
    path = recordings.save(text, f"{OUT}/slurm-{name}", ext="json", argv=argv,
                           tool_version=runner.tool_version("snakemake") or "", notes=notes)
    print("wrote", path)


def one_run(ws, ep, cluster, executor: str, grouped: bool, n: int, nodes_fetch: bool = False) -> None:
    c = _client(ep)
    c.delete_object(Bucket="training", Key="results/all.vcf")
    wd = ws.mkdir(f"run-{executor}-{'g' if grouped else 'u'}-{'n' if nodes_fetch else 's'}-{n}")
    shutil.copy(SNAKEFILE, wd / "Snakefile")
    sizes = _sizes(c, "training")
    extra = l09slurm.no_shared_fs(wd) if nodes_fetch else None
    r = l09slurm.run(wd, env=_store_env(ep), slurm_env=cluster.env, executor=executor, grouped=grouped,
                     metrics_url=ep.metrics_url, sizes=sizes, timeout=900, extra=extra,
                     lister=(lambda: _sizes(c, "training")) if nodes_fetch else None)
    r.sizes.update(_sizes(c, "training"))         # the result's size, now that it exists
    left = l09slurm.leftovers(wd, cluster.env)
    acc = l09slurm.byte_accounting(r)
    print(executor, "grouped" if grouped else "ungrouped", n, f"{r.seconds:.1f} s load {r.load}", acc, left)
    name = f"{executor}-{'grouped' if grouped else 'ungrouped'}{'-nodes' if nodes_fetch else ''}-{n}"
    _save(r.to_json(), name, r.argv,
          f"lesson 09's workflow on the private 2-node Slurm (nodes n1, n2, 2 CPUs each, no accounting "
          f"database), {executor} executor, {'grouped per sample' if grouped else 'one Slurm job per rule'}"
          f"{', no shared filesystem assumed: each job fetches its inputs on its node' if nodes_fetch else ''}; "
          f"{r.seconds:.1f} s wall at load {r.load[0]:.1f}->{r.load[1]:.1f} (1-min average, 2-core VM shared "
          f"with other work); left afterwards: {left}")
    shutil.rmtree(wd)


def before(ws, ep, cluster) -> None:
    c = _client(ep)
    stage = ws.mkdir("before")
    t0 = time.perf_counter()
    keys = sorted(k for k in _sizes(c, "training") if k.startswith("data/") and not k.endswith(".truth.txt"))
    for k in keys:
        (stage / k).parent.mkdir(parents=True, exist_ok=True)
        c.download_file("training", k, str(stage / k))
    staged = time.perf_counter() - t0
    chain = l09slurm.before_chain(stage, slurm_env=cluster.env)
    t1 = time.perf_counter()
    c.upload_file(str(stage / "results" / "all.vcf"), "training", "results/before-all.vcf")
    back = time.perf_counter() - t1
    left = workspace.disk_usage(stage)
    doc = {"jobs": chain.jobs, "chain_seconds": chain.seconds, "stage_seconds": staged, "copy_back_seconds": back,
           "scripts": chain.scripts, "left_on_scratch_bytes": left, "staged_keys": keys,
           "load": os.getloadavg()[0]}
    print("before", json.dumps({k: v for k, v in doc.items() if k != "scripts"}))
    _save(json.dumps(doc, indent=1, sort_keys=True) + "\n", "before-chain", ["sbatch", "job1.sbatch", "..."],
          "the seed's 'before' on lesson 09's data: stage data/ from the bucket to scratch, three sbatch jobs "
          "(an array of 3 map+sort, an array of 3 index with --dependency=afterok, one call with afterok), copy "
          "all.vcf back; on the private 2-node Slurm")


def before_record() -> None:
    """The seed's before on Slurm in lesson 09's own record (its lab: store, data, counters, samples)."""
    from iolab.lessons.l09_workflows.lab import open_lab

    with workspace.Workspace(budget="600MiB") as ws, open_lab(ws) as lab:
        out = l09slurm.before_on_slurm(lab, live=True, save_as=l09slurm.BEFORE_RECORDING)
        print("before on Slurm:", out.steps[["label", "seconds", "sent", "received", "gets", "puts"]].to_string(),
              "peak", out.peak, "left", out.left_bytes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2)
    ap.add_argument("--first", type=int, default=1, help="the first trial's number (more trials beside earlier ones)")
    ap.add_argument("--only", default="accounting,grouped,plugin,nodes,ungrouped,before")
    a = ap.parse_args()
    only = set(a.only.split(","))
    if "before-record" in only:
        before_record()
        only.discard("before-record")
        if not only:
            return
    with workspace.Workspace(budget="600MiB") as ws:
        ds = data.make(ws)
        with servers.local_s3(ws, server="seaweedfs", metrics=True) as ep:
            c = _client(ep)
            c.create_bucket(Bucket="training")
            data.upload(ds, c, "training")
            with SlurmCluster(nodes=2, base=ws.path("")) as cluster:
                if "accounting" in only:
                    texts = l09slurm.accounting_texts(cluster.env)
                    print(l09slurm.judge(texts["config"], texts["sacct_returncode"], texts["sacct_output"]).describe())
                    _save(json.dumps(texts, indent=1, sort_keys=True) + "\n", "accounting",
                          ["scontrol", "show", "config", "&&", "sacct", "-n", "-X", "-o", "JobID", "-S", "now"],
                          "the private Slurm 22.05 the course starts (iolab.slurm_cluster), "
                          "AccountingStorageType=accounting_storage/none")
                executors = ["cluster-generic"] + (["slurm"] if "plugin" in only else [])
                if "grouped" in only:
                    for n in range(a.first, a.first + a.trials):
                        for ex in executors:
                            one_run(ws, ep, cluster, ex, True, n)
                if "nodes" in only:
                    one_run(ws, ep, cluster, "cluster-generic", True, 1, nodes_fetch=True)
                if "ungrouped" in only:
                    one_run(ws, ep, cluster, "cluster-generic", False, 1)
                if "before" in only:
                    before(ws, ep, cluster)


if __name__ == "__main__":
    main()
