"""Re-make this directory's class data: a simulated class runs seed 001's exercise, really.

Seed 001 asks a class to "run [mdtest] on four different filesystems and report/discuss
differences in performance" (``srun mdtest -d <filesystem> -n 10 -i 200 -y``). This script plays
that class on one machine, as root, with real runs only:

* a private Slurm with two fake nodes (iolab/slurm_cluster.py), so each student's job is queued,
  placed on n1 or n2 and runs next to the other students' jobs, as on a cluster;
* four filesystems: the VM's disk (ext4, /tmp), memory (tmpfs, /dev/shm), a loop-mounted ext4
  image mounted ``-o sync,dirsync`` (the same kind of filesystem, configured differently, as the
  seed's /fast and /scratch are), and an S3 bucket (SeaweedFS on loopback) mounted with s3fs-fuse;
* seven students (student01 … student07). Most run the seed's command with ``-i 20`` (200 takes
  too long on s3fs); student04 runs 2 tasks on one node; student05 adds ``-w 4096``, so that ``-y``
  really syncs each file (mdtest 3.3/4.0 sync only a file they wrote: the seed's ``-y`` alone makes
  no fsync call, lesson 05 counts them with strace); student06 asks for two nodes; student07 leaves
  out ``-y``, which without ``-w`` changes nothing. Each also runs a small fio write/read (32 MiB,
  end_fsync) on every filesystem.

Every student's job is submitted at once. Each raw output is kept as a recording
(``class/<student>-<fs>-<tool>.txt|json`` with .meta.json) and saved with iolab.results into
``results/<student>.json``, which the instructor notebook loads.

Run: ``.venv/bin/python -m recorders.class_results`` (root, slurm-wlm, munge, fio, s3fs,
SeaweedFS, and mdtest at /tmp/ior-4.0.0/bin/mdtest). It takes a few minutes.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

from recorders import RECORDED
from iolab.slurm_cluster import SlurmCluster

HERE = RECORDED / "class"

from iolab import recordings, results, runner, slurm, workspace
from iolab.lessons.l05_mdtest import metadata
from iolab.tools import mdtest
from iolab.objectstore import mounts, servers

MDTEST = "/tmp/ior-4.0.0/bin/mdtest"
ITERATIONS = 20
HOST = "2-core Debian 12 VM, virtio disk; Slurm 22.05 with two fake nodes (n1, n2) on one host"
STUDENTS = {                               # name: (extra mdtest options, nodes, tasks per node, note)
    "student01": (["-y"], 1, 1, "the seed's command"),
    "student02": (["-y"], 1, 1, "the seed's command"),
    "student03": (["-y"], 1, 1, "the seed's command"),
    "student04": (["-y"], 1, 2, "two tasks on one node"),
    "student05": (["-y", "-w", "4096"], 1, 1, "added -w 4096: each file written, so -y fsyncs it"),
    "student06": (["-y"], 2, 1, "two nodes, one task each"),
    "student07": ([], 1, 1, "left out -y (without -w it syncs nothing anyway)"),
}
FIO = """\
[global]
directory={d}
filename_format=iolab.$jobname.${{SLURM_PROCID}}.$filenum
size=32M
bs=1M
ioengine=psync
unlink=1
[write]
rw=write
end_fsync=1
[read]
stonewall
rw=read
"""


@contextlib.contextmanager
def sync_ext4(where: Path):
    """A 2 GiB (sparse) ext4 image on a loop device, mounted -o sync,dirsync; removed afterwards."""
    img, mnt = where / "ext4-sync.img", where / "ext4-sync"
    mnt.mkdir()
    runner.run(["truncate", "-s", "2G", str(img)], timeout=30)
    runner.run(["mkfs.ext4", "-q", "-F", str(img)], timeout=120)
    runner.run(["mount", "-o", "loop,sync,dirsync", str(img), str(mnt)], timeout=60)
    try:
        yield mnt
    finally:
        runner.run(["umount", str(mnt)], timeout=60, check=False)
        img.unlink(missing_ok=True)


def main() -> None:
    if not os.access(MDTEST, os.X_OK):
        sys.exit(f"mdtest not found at {MDTEST}")
    out_dir = HERE / "results"
    if out_dir.exists():
        shutil.rmtree(out_dir)
    for p in HERE.glob("student*"):
        p.unlink()
    base = Path(f"/tmp/iolab-class-{os.getpid()}")
    base.mkdir()
    shm = Path(f"/dev/shm/iolab-class-{os.getpid()}")
    shm.mkdir()
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, shm, True)
        stack.callback(shutil.rmtree, base, True)
        ws = stack.enter_context(workspace.Workspace(budget="2GiB"))
        ep = stack.enter_context(servers.local_s3(ws))
        ep.make_bucket("class")
        s3 = stack.enter_context(mounts.s3fs_fuse(ep, "class", ws=ws))
        sync = stack.enter_context(sync_ext4(base))
        (base / "disk").mkdir()
        filesystems = {"local-ext4": base / "disk", "tmpfs": shm, "ext4-sync": sync, "s3fs": s3.path}
        cluster = stack.enter_context(SlurmCluster(nodes=2))
        print(f"Slurm up in {cluster.startup_seconds:.2f} s; filesystems: "
              + ", ".join(f"{k}={v}" for k, v in filesystems.items()))
        jobs, argvs = {}, {}
        for user, (extra, nodes, tpn, _note) in STUDENTS.items():
            steps = []
            for label, d in filesystems.items():
                mine = d / user
                mine.mkdir()
                steps.append(slurm.Step([MDTEST, "-n", "10", "-i", str(ITERATIONS), *extra, "-d", str(mine / "md")],
                                        name=f"{label}-mdtest", tool="mdtest", nodes=nodes, tasks_per_node=tpn,
                                        params={"fs_label": label}))
                steps.append(slurm.fio_step(FIO.format(d=mine), name=f"{label}-fio", nodes=nodes,
                                            tasks_per_node=tpn, params={"fs_label": label}))
            script = slurm.batch_script(steps, job_name=f"class-{user}", time=30,
                                        env={"OMPI_MCA_btl": "self,tcp"})
            jobs[user] = slurm.submit(script, directory=base / "jobs" / user, env=cluster.env)
            argvs[user] = {s.name: ["srun", f"--nodes={s.nodes}", f"--ntasks-per-node={s.tasks_per_node}",
                                    *[a.replace("{out}", "$OUT") for a in s.argv]] for s in steps}
        t0 = time.perf_counter()
        for user, job in jobs.items():
            info = job.wait(timeout=1800)
            print(f"{user}: job {job.job_id} on {info.nodes} done after {time.perf_counter() - t0:.0f} s")
            df = job.outputs()
            extra, _nodes, _tpn, note = STUDENTS[user]
            recordings.save(job.script(), f"class/{user}-job", ext="sbatch", argv=["sbatch", "--parsable", "SCRIPT"],
                            tool_version=runner.tool_version("sinfo"), stream="file", host_description=HOST,
                            notes=f"the batch script of {user}'s job {job.job_id} ({note}); the fio job file is inline")
            for t in job.texts():
                man, step = t["manifest"], t["step"]
                tool = man["tool"]
                if not t["text"] or (tool == "mdtest" and t["task"] not in (None, 0)):
                    continue            # mdtest reports on rank 0; every fio task measured
                label = man["params"]["fs_label"]
                d = filesystems[label] / user
                rows = df[(df["step"] == step) & (df["task"] == t["task"])].drop(columns=["node", "host", "step"])
                if tool == "mdtest":
                    started, finished = mdtest.window(t["text"])      # for the notebook's neighbours
                    rows = rows.assign(started=started.isoformat(), finished=finished.isoformat())
                    version = f"mdtest-{rows['version'].iloc[0]}"
                    opts = ["-n", "10", "-i", str(ITERATIONS), *extra]
                    ref, ext = f"class/{user}-{label}-mdtest", "txt"
                else:
                    version = rows["fio_version"].iloc[0]
                    opts = ["size=32M", "bs=1M", "rw=write,read", "end_fsync=1"]
                    ref, ext = f"class/{user}-{label}-fio-task{t['task']}", "json"
                recordings.save(t["text"], ref, ext=ext, argv=argvs[user][step],
                                tool_version=version, stream="stdout", fs_path=d, host_description=HOST,
                                fs_facts={**metadata.fs_meta(d), "label": label},
                                notes=f"{user} ({note}), Slurm job {job.job_id} on {info.nodes}, filesystem {label}, "
                                      f"task {t['task']}" + ("; mdtest reports on rank 0" if tool == "mdtest" else ""))
                results.save(rows, tool=tool, directory=out_dir, user=user, path=d, filesystem=label,
                             tool_version=version, options=opts, mode="live", node=info.nodes, recording=ref,
                             notes=note)
        print(f"class results in {out_dir}")


if __name__ == "__main__":
    main()
