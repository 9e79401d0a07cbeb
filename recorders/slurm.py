"""Re-make the recordings in this directory on a machine with Slurm (as root): `.venv/bin/python -m recorders.slurm`.

Starts the tests' private Slurm (two fake nodes n1, n2 on this host), then records, with
iolab.recordings.save (raw text + .meta.json):

* fio-2nodes.sbatch / fio-2nodes-task{0,1}.json: a 2-node job running fio through srun, and what
  each task printed (`--output-format=json`)
* scontrol-completed / -failed / -cancelled / -timeout: `scontrol show job -o` of jobs that ended
  each way (the timeout one takes a minute: the shortest Slurm time limit)
* ior-2nodes-*.json: IOR 4.0.0 across the two fake nodes (shared file, -F, -F -C), when
  /tmp/ior-4.0.0/bin/ior exists. Two fake nodes share ONE kernel and page cache: `-C` cannot
  defeat the cache here, as it does across real nodes (the notes say so).

It prints the cluster's start-up time and each job's round trip (submit → COMPLETED).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from recorders import RECORDED
from iolab.slurm_cluster import SlurmCluster

HERE = RECORDED / "slurm"

from iolab import recordings, runner, slurm

IOR = "/tmp/ior-4.0.0/bin/ior"
HOST = "2-core Debian 12 VM, virtio disk; Slurm 22.05 with two fake nodes (two slurmd) on one host"
JOBFILE = """\
[global]
directory={d}
filename_format=iolab.$jobname.${{SLURM_PROCID}}.$filenum
size=64M
bs=1M
ioengine=psync
[write]
rw=write
end_fsync=1
[read]
stonewall
rw=read
"""


def scontrol(job: slurm.Job, env: dict[str, str]) -> runner.Run:
    return runner.run(["scontrol", "show", "job", "-o", job.job_id], timeout=30, env=env)


def main() -> None:
    version = runner.tool_version("sinfo") or "slurm"
    with SlurmCluster(nodes=2) as c:
        print(f"Slurm (2 fake nodes) started in {c.startup_seconds:.2f} s")
        env = c.env
        work = Path("/tmp") / f"iolab-slurm-rec-{os.getpid()}"
        work.mkdir()
        jobs_dir = c.dir / "jobs"
        try:
            step = slurm.fio_step(JOBFILE.format(d=work), nodes=2, tasks_per_node=1, name="fio")
            script = slurm.batch_script(step, workdir=work, job_name="iolab-fio-2nodes")
            t0 = time.perf_counter()
            job = slurm.submit(script, directory=jobs_dir, env=env)
            job.wait(timeout=300)
            print(f"2-node fio job: round trip {time.perf_counter() - t0:.2f} s")
            recordings.save(script, "slurm/fio-2nodes", ext="sbatch", argv=["sbatch", "--parsable", "SCRIPT"],
                            tool_version=version, stream="file", fs_path=work, host_description=HOST,
                            notes="the batch script iolab.slurm.batch_script() wrote for fio on 2 nodes")
            for t in job.texts():
                recordings.save(t["text"], f"slurm/fio-2nodes-task{t['task']}", ext="json",
                                argv=["srun", "--nodes=2", "--ntasks=2", "fio", "--output-format=json", "fio.fio"],
                                tool_version=runner.tool_version("fio"), stream="stdout", fs_path=work,
                                host_description=HOST,
                                notes=f"task {t['task']} (node index {t['node']}) of the 2-node job in "
                                      "slurm/fio-2nodes.sbatch; both fake nodes share one disk and page cache")
            recordings.save(scontrol(job, env), "slurm/scontrol-completed", tool_version=version,
                            host_description=HOST, notes="scontrol show job -o of the COMPLETED 2-node fio job")

            bad = slurm.submit(slurm.batch_script(slurm.Step(["false"], nodes=2), job_name="iolab-fails"),
                               directory=jobs_dir, env=env)
            try:
                bad.wait(timeout=120)
            except slurm.ToolFailed as e:
                print(f"failing job: {e.state}")      # type: ignore[attr-defined]
            recordings.save(scontrol(bad, env), "slurm/scontrol-failed", tool_version=version,
                            host_description=HOST, notes="a job whose step (`srun false`) exited 1: FAILED")

            sleeper = slurm.submit(slurm.batch_script(slurm.Step(["sleep", "300"]), job_name="iolab-sleeps"),
                                   directory=jobs_dir, env=env)
            while sleeper.state != "RUNNING":
                time.sleep(0.2)
            sleeper.cancel()
            while not sleeper.info().done:
                time.sleep(0.2)
            recordings.save(scontrol(sleeper, env), "slurm/scontrol-cancelled", tool_version=version,
                            host_description=HOST, notes="a running job ended by scancel: CANCELLED")

            if Path(IOR).exists():
                steps = slurm.sweep([IOR, "-t", "1m", "-b", "16m", "-s", "4", "-o", "ior-testfile",
                                     "-O", "summaryFormat=JSON", "-O", "summaryFile={out}/{step}.json"],
                                    {"shared": [], "F": ["-F"], "F-C": ["-F", "-C"]},
                                    nodes=[2], tasks_per_node=[1], result="{step}.json")
                script = slurm.batch_script(steps, workdir=work, job_name="iolab-ior-2nodes")
                t0 = time.perf_counter()
                ior = slurm.submit(script, directory=jobs_dir, env=env)
                ior.wait(timeout=600)
                print(f"2-node IOR sweep (3 steps): round trip {time.perf_counter() - t0:.2f} s")
                for s, t in zip(steps, ior.texts()):
                    label = s.params["options"]
                    recordings.save(t["text"], f"slurm/ior-2nodes-{label}", ext="json",
                                    argv=["srun", "--mpi=pmix", "--nodes=2", "--ntasks=2",
                                          *[a.replace("{out}/{step}", "OUT/" + s.name) for a in s.argv]],
                                    tool_version=runner.tool_version(IOR) or "4.0.0", stream="summaryFile",
                                    fs_path=work, host_description=HOST,
                                    notes=f"IOR options '{label}' on 2 fake nodes of one host: they share one "
                                          "page cache, so -C does not defeat it here as it does across real nodes")

            timeout_job = slurm.submit(slurm.batch_script(slurm.Step(["sleep", "300"]), time=1,
                                                          job_name="iolab-times-out"),
                                       directory=jobs_dir, env=env)
            try:
                timeout_job.wait(timeout=240)
            except slurm.ToolFailed as e:
                print(f"time-limited job: {e.state}")  # type: ignore[attr-defined]
            recordings.save(scontrol(timeout_job, env), "slurm/scontrol-timeout", tool_version=version,
                            host_description=HOST, notes="a job past its 1-minute --time limit: TIMEOUT")
        finally:
            runner.run(["rm", "-rf", "--one-file-system", str(work)], timeout=60, check=False)


if __name__ == "__main__":
    main()
