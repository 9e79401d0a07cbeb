"""Record lesson 06's live measurements (run on a machine with FUSE, the clients and toxiproxy).

    .venv/bin/python benchmarks/record_lesson06.py [--only fio,reads,dd,staging]

Writes data/recorded/{fio,s3fs,gcsfuse,rclone,dd,s3cmd}/... with .meta.json, through
iolab.recordings.save, and prints each figure. The lesson replays these where it cannot run live.
"""
from __future__ import annotations

import argparse
import json
import time

from iolab import recordings, runner, workspace
from iolab.objectstore import lab
from iolab.tools import dd, fio

HOST = "2-core VM (Debian 12), SeaweedFS / fake-gcs-server on loopback behind toxiproxy"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="fio,reads,dd,staging")
    only = set(ap.parse_args().only.split(","))
    t0 = time.time()
    with workspace.Workspace(budget="2GiB") as ws:
        with lab.remote_store("s3", ws=ws) as s3:
            link = s3.link.spec.describe() if s3.link else "no slow link"
            keys = lab.put_files(s3, "data", n=2, size=lab.OBJECT_SIZE)
            if "fio" in only:
                for conf, ref in lab.FIO_RECORDINGS.items():
                    r = lab.fio_through_s3fs(s3, ws, conf)
                    recordings.save(r, ref, ext="json", host_description=HOST,
                                    notes=f"Seed 000's fio job with nrfiles=3 through s3fs-fuse 1.90, {conf}; "
                                          f"store: {s3.remote.server}. The job file: {fio.seed000_job('DIR', nrfiles=3).text()!r}")
                    print(conf, [(x["direction"], round(x["bw_bytes"] / 1e6, 1)) for x in fio.parse(r.stdout)])
            if "reads" in only:
                for client, cached in lab.READ_CONFIGS:
                    if client == "gcsfuse":
                        continue
                    text = lab.client_reads(s3, ws, client, cached, keys[0])
                    _save_rows(text, lab.reads_recording(client, cached), client, link)
            if "dd" in only:
                for cached in (False, True):
                    text = lab.dd_sweep(s3, ws, cached=cached, key=keys[1])
                    recordings.save(text, lab.dd_recording(cached), stream="stderr",
                                    argv=["dd", "if=MOUNT/data/file001.bin", "of=/dev/null", "bs=N", "count=1MiB/N",
                                          "iflag=direct"], tool_version=runner.tool_version("dd"),
                                    host_description=HOST,
                                    notes=f"dd read sweep through s3fs-fuse ({'use_cache, after one warm-up read' if cached else 'no cache'}), "
                                          f"block sizes 4k..1M, 1 MiB each, LC_ALL=C; link: {link}")
                    print("dd", cached, [round(x["bytes_per_s"] / 1e6, 1) for x in dd.parse_all(text)])
            if "staging" in only:
                text = lab.staging_vs_streaming(s3, ws, keys)
                recordings.save(text, lab.STAGING_RECORDING, ext="json", argv=["iolab.objectstore.lab.staging_vs_streaming"],
                                tool_version=runner.tool_version("s3cmd"), host_description=HOST,
                                notes=f"2 objects of 2 MiB: s3cmd get to scratch then 2 reads, vs 2 reads through s3fs-fuse; link: {link}")
                print(text)
        if "reads" in only:
            with lab.remote_store("gcs", ws=ws) as gcs:
                keys = lab.put_files(gcs, "data", n=1, size=lab.OBJECT_SIZE)
                for cached in (False, True):
                    text = lab.client_reads(gcs, ws, "gcsfuse", cached, keys[0])
                    _save_rows(text, lab.reads_recording("gcsfuse", cached), "gcsfuse", link)
    print(f"done in {time.time() - t0:.0f} s")


def _save_rows(text: str, ref: str, client: str, link: str) -> None:
    tool = {"s3fs": "s3fs", "gcsfuse": "gcsfuse", "rclone": "rclone"}[client]
    recordings.save(text, ref, ext="json", argv=["iolab.objectstore.lab.client_reads", client],
                    tool_version=runner.tool_version(tool) or _venv_version(tool), host_description=HOST,
                    notes=f"Three timed reads of one 2 MiB object through {client}: cold, warm, and after "
                          f"posix_fadvise(DONTNEED) on the file; residency by mincore; link: {link}")
    print(ref, [(r["read"], round(r["mb_per_s"], 1), r["layer"]) for r in json.loads(text)])


def _venv_version(tool: str) -> str | None:
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / tool
    return runner.tool_version(str(exe)) if exe.exists() else None


if __name__ == "__main__":
    main()
