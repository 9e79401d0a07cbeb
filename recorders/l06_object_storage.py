"""Record lesson 06's live measurements (run on a machine with FUSE, the clients and toxiproxy).

    .venv/bin/python -m recorders.l06_object_storage [--only fio,reads,dd,staging,fsspec,copy] [--setups lesson,ram,nolink]

``--only fio --setups lesson,nolink`` re-makes section 2's interleaved trials of seed 000's fio job alone;
``--only fsspec --setups lesson,nolink`` section 5's fsspec rows and its passes timed in turn;
``--only copy --setups lesson,nolink`` section 7's writes through gcsfuse, in rounds.

Setups: ``lesson`` (what the lesson replays: caches on local disk, the slow link), ``ram`` (the
caches of section 3 in /dev/shm), ``nolink`` (no slow link: the store straight on loopback). The
other setups feed tests/lessons/l06/test_l06_claims.py, which checks the lesson's sentences on each of them.
Writes data/recorded/{fio,s3fs,gcsfuse,rclone,s3cmd}/... with .meta.json, through
iolab.recordings.save, and prints each figure.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

from iolab import recordings, runner, workspace
from iolab.lessons.l06_object_storage import reads as object_reads, stores as object_storage, transfers as object_transfers
from iolab.objectstore import store as objstore
from iolab.tools import fio

HOST = "2-core VM (Debian 12), SeaweedFS / fake-gcs-server on loopback behind toxiproxy"
HOST_NOLINK = "2-core VM (Debian 12), SeaweedFS / fake-gcs-server on loopback, no slow link"
VARIANT = {"lesson": "", "ram": "-ram", "nolink": "-nolink"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="fio,reads,dd,staging,fsspec,copy")
    ap.add_argument("--setups", default="lesson,ram,nolink")
    a = ap.parse_args()
    only, setups = set(a.only.split(",")), a.setups.split(",")
    t0 = time.time()
    for setup in setups:
        record(setup, only)
    print(f"done in {time.time() - t0:.0f} s")


def record(setup: str, only: set[str]) -> None:
    v = VARIANT[setup]
    spec = None if setup == "nolink" else objstore.DEFAULT_LINK
    host = HOST_NOLINK if setup == "nolink" else HOST
    where = "ram" if setup == "ram" else "disk"
    with workspace.Workspace(budget="2GiB") as ws:
        with objstore.remote_store("s3", ws=ws, spec=spec) as s3:
            link = s3.link.spec.describe() if s3.link else "no slow link"
            keys = objstore.put_files(s3, "data", n=2, size=object_storage.OBJECT_SIZE)
            if "fio" in only and setup != "ram":       # fio runs its own disk and RAM caches
                began = os.getloadavg()[0]
                docs = object_storage.fio_trials(s3, ws)
                ended = os.getloadavg()[0]
                job = fio.seed000_job("DIR", nrfiles=object_storage.NRFILES).text()
                for conf, ref in object_storage.FIO_RECORDINGS.items():
                    recordings.save(docs[conf], ref + v, ext="json",
                                    argv=["iolab.lessons.l06_object_storage.stores.fio_trials", "fio", "JOBFILE"],
                                    tool_version=f"{runner.tool_version('fio')}, through s3fs-fuse {_s3fs_version()}",
                                    host_description=host,
                                    fs_facts={"link": link},
                                    notes=f"Seed 000's fio job with nrfiles={object_storage.NRFILES} through s3fs-fuse, "
                                          f"{conf}: {object_storage.FIO_TRIALS} trials, each a fresh mount and cache "
                                          "directory, interleaved with the other two configurations in rounds whose "
                                          "order rotates (position: the trial's place in the whole run of "
                                          f"{object_storage.FIO_TRIALS * len(docs)}), after a warm-up (warmup); each "
                                          "trial keeps fio's JSON output untouched (stdout) and the bytes through the "
                                          f"slow link during the whole run (lay-out, job, unmount); store: "
                                          f"{s3.remote.server}; link: {link}; the job file: {job!r}; load average "
                                          f"(1 min) when the trials began: {began:.1f}, when they ended: {ended:.1f}, "
                                          f"on {os.cpu_count()} CPUs (each trial's: load_1min)")
                frame = object_storage.fio_frame({c: json.loads(d) for c, d in docs.items()})
                for conf, part in frame[frame["direction"] == "read"].groupby("configuration", sort=False):
                    print(setup, conf, "read MB/s", [round(x, 1) for x in part["mb_per_s"]],
                          "positions", list(part["position"]), "link_down", list(part["link_down"]))
                print(setup, "load", began, ended)
            if "reads" in only:
                for client, mode in object_reads.READ_CONFIGS:
                    if client == "gcsfuse":
                        continue
                    text = object_reads.client_reads(s3, ws, client, mode, keys[0], where=where)
                    _save_rows(text, object_reads.reads_recording(client, mode, v), client, link, host, where)
            if "dd" in only and setup != "ram":
                for cached in (False, True):
                    text = object_reads.dd_sweep(s3, ws, cached=cached, key=keys[1])
                    recordings.save(text, object_reads.dd_recording(cached, v), ext="json",
                                    argv=["iolab.lessons.l06_object_storage.reads.dd_sweep", "dd", "if=MOUNT/data/file001.bin",
                                          "of=/dev/null", "bs=N", "count=1MiB/N", "iflag=direct"],
                                    tool_version=f"{runner.tool_version('dd')}, through {runner.tool_version('s3fs')}", host_description=host,
                                    notes=f"dd read sweep through s3fs-fuse ({'use_cache, after one warm-up read' if cached else 'no cache'}), "
                                          "block sizes 4k..1M, 1 MiB each, LC_ALL=C; each row holds dd's stderr "
                                          f"and the bytes through the slow link during that run; link: {link}")
                    print(setup, "dd", cached, [(round(r["mb_per_s"], 1), r["link_down"])
                                                for r in object_reads.dd_frame(json.loads(text)).to_dict("records")])
            if "staging" in only and setup != "ram":
                began = os.getloadavg()[0]
                text = object_transfers.stage_or_stream(s3, ws, keys)
                recordings.save(text, object_transfers.STAGING_RECORDING + v, ext="json",
                                argv=["iolab.lessons.l06_object_storage.transfers.stage_or_stream"],
                                tool_version=runner.tool_version("s3cmd"), host_description=host,
                                notes="2 objects of 2 MiB: s3cmd get (one process per object) to scratch and 2 reads "
                                      "there, vs 2 reads through s3fs-fuse without cache, vs one s3cmd get --recursive "
                                      "and 2 reads; 3 trials of each, interleaved in that order (column trial); "
                                      f"startup_s: median time of 's3cmd --version'; link: {link}; load average "
                                      f"(1 min) when it began: {began:.1f}, when it ended: {os.getloadavg()[0]:.1f}, "
                                      f"on {os.cpu_count()} CPUs")
                rows = json.loads(text)
                for strategy in dict.fromkeys(r["strategy"] for r in rows):
                    mine = [r for r in rows if r["strategy"] == strategy]
                    print(setup, strategy, "total_s", [round(r["total_s"], 3) for r in mine],
                          "stage_s", [round(r["stage_s"], 3) for r in mine], "link_down", [r["link_down"] for r in mine])
            if "fsspec" in only and setup != "ram":
                began = os.getloadavg()[0]
                text = object_transfers.fsspec_caches(s3, ws, keys[1])
                ended = os.getloadavg()[0]
                recordings.save(text, object_transfers.FSSPEC_RECORDING + v, ext="json", argv=["iolab.lessons.l06_object_storage.transfers.fsspec_caches"],
                                tool_version=_pkg_version("s3fs"), host_description=host,
                                notes="fsspec's s3fs (the Python package, not s3fs-fuse): one 2 MiB object through "
                                      "cache_type readahead/blockcache/none (rows: two passes in one open file, 256 KiB "
                                      "reads) and the simplecache/blockcache filesystems (two opens); between them "
                                      f"(trials) {object_transfers.FSSPEC_TRIALS} single passes of each of "
                                      f"{'/'.join(object_transfers.FSSPEC_TIMED)}, a fresh open each, interleaved "
                                      "(position: the pass's place in that run); requests counted from s3fs's debug "
                                      f"log ('CALL: ...'); link: {link}; load average (1 min) when it began: "
                                      f"{began:.1f}, when it ended: {ended:.1f}, on {os.cpu_count()} CPUs (each "
                                      "pass's: load_1min)")
                doc = json.loads(text)
                print(setup, [(r["label"], round(r["first_s"], 3), r["first_requests"]) for r in doc["rows"]])
                passes = object_transfers.fsspec_passes(doc)
                for ct in object_transfers.FSSPEC_TIMED:
                    print(setup, "pass", ct, "s", [round(x, 3) for x in passes.values(ct)],
                          "gets", list(passes.frame.loc[passes.frame["setting"] == ct, "gets"]))
                print(setup, "fsspec load", began, ended)
        if ("reads" in only or "copy" in only) and setup in ("lesson", "ram", "nolink"):
            with objstore.remote_store("gcs", ws=ws, spec=spec) as gcs:
                link = gcs.link.spec.describe() if gcs.link else "no slow link"
                if "reads" in only:
                    (key,) = objstore.put_files(gcs, "data", n=1, size=object_storage.OBJECT_SIZE)
                    for mode in ("none", "cache"):
                        text = object_reads.client_reads(gcs, ws, "gcsfuse", mode, key, where=where)
                        _save_rows(text, object_reads.reads_recording("gcsfuse", mode, v), "gcsfuse", link, host, where)
                if "copy" in only and setup != "ram":
                    began = os.getloadavg()[0]
                    t0 = time.perf_counter()
                    text = object_transfers.copy_through_gcsfuse(gcs, ws)
                    took, ended = time.perf_counter() - t0, os.getloadavg()[0]
                    recordings.save(text, object_transfers.GCSFUSE_COPY_RECORDING + v, ext="json",
                                    argv=["iolab.lessons.l06_object_storage.transfers.copy_through_gcsfuse"],
                                    tool_version=_venv_version("gcsfuse"), host_description=host,
                                    notes="Seed 002's copy at lesson size: local files copied into a gcsfuse mount "
                                          f"(write) in {object_transfers.GCSFUSE_WRITE_ROUNDS} rounds that write every "
                                          "file once to a new name, the order rotating (round, position: the write's "
                                          "place in the whole run); in the first round each file also copied back at "
                                          "once (read) and back after posix_fadvise(DONTNEED) (reread); each timed open "
                                          f"to close, with the bytes through the link; link: {link}; load average (1 min) "
                                          f"when it began: {began:.1f}, when it ended: {ended:.1f}, on {os.cpu_count()} "
                                          f"CPUs; the whole run took {took:.2f} s")
                    copy = object_transfers.gcsfuse_copy_frame(json.loads(text))
                    for f, part in copy.groupby("file", sort=False):
                        print(setup, f, "write MB/s", [round(x, 2) for x in part["write_mb_per_s"]],
                              "read", [round(x, 1) for x in part["read_mb_per_s"].dropna()],
                              "reread", [round(x, 1) for x in part["reread_mb_per_s"].dropna()])
                    print(setup, "copy load", began, ended, "took", round(took, 2))


def _save_rows(text: str, ref: str, client: str, link: str, host: str, where: str) -> None:
    recordings.save(text, ref, ext="json", argv=["iolab.lessons.l06_object_storage.reads.client_reads", client],
                    tool_version=runner.tool_version(client) or _venv_version(client), host_description=host,
                    notes=f"Three timed reads of one 2 MiB object through {client}: cold, warm, and after "
                          "posix_fadvise(DONTNEED) on the file; open/read/close timed apart; residency by mincore as "
                          "a new open finds it (resident_before) and through the reading descriptor "
                          f"(resident_in_fd); bytes through the slow link per read; cache directory: "
                          f"{'/dev/shm (tmpfs)' if where == 'ram' else 'local disk'}; link: {link}")
    print(ref, [(r["read"], round(r["mb_per_s"], 1), r["link_down"], r["layer"]) for r in json.loads(text)])


def _s3fs_version() -> str | None:
    """s3fs-fuse's version number from its banner ("Amazon Simple Storage Service File System V1.90 ...")."""
    m = re.search(r"V(\d[\w.]*)", runner.tool_version("s3fs") or "")
    return m.group(1) if m else None


def _pkg_version(name: str) -> str | None:
    from importlib.metadata import version

    try:
        return f"{version(name)} (the Python package with fsspec {version('fsspec')}, not s3fs-fuse)"
    except Exception:
        return None


def _venv_version(tool: str) -> str | None:
    exe = Path(sys.executable).parent / tool
    return runner.tool_version(str(exe)) if exe.exists() else runner.tool_version(tool)


if __name__ == "__main__":
    main()
