"""Re-make the recordings lesson 08 replays, on a private Ceph cluster (real runs only).

    PATH=/tmp/ior-4.0.0/bin:$PATH .venv/bin/python -m recorders.l08_ceph [--only layouts,caches,metadata,coherence,shared,replication,ior,ior-cephfs,rgw,singles]

``ior-cephfs`` needs an IOR built with the CEPHFS backend (``parallel_fs_ior.cephfs_ior()`` finds it on PATH or
in /tmp/ior-*-cephfs/bin; ``parallel_fs_ior.CEPHFS_BUILD`` says how to build one).

Starts :class:`iolab.ceph.Cluster` (3 OSDs, node A and node B mounted with ceph-fuse), runs each
section of :mod:`iolab.lessons.l08_parallel_fs.sections` (and :mod:`iolab.lessons.l08_parallel_fs.ior_runs`) live (IOLAB_MODE=live) and saves what it gave, verbatim:

* ``data/recorded/ceph/<section>.json``: the section's document (raw outputs of getfattr, rados ls,
  osdmaptool and the daemons' perf dumps, beside the times measured), replayed by the lesson;
* ``singles`` (after the layouts): single raw outputs for the parsers' golden tests: ``getfattr-layout-4-stripes.txt``,
  ``rados-ls.txt``, ``osdmaptool-map-object.txt``, ``perf-dump-osd.json``, ``perf-dump-mds.json``,
  ``perf-dump-client.json``, ``session-ls.json``, ``osd-map.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from iolab import recordings, runner, workspace
from iolab.lessons.l08_parallel_fs import sections as parallel_fs, ior_runs as parallel_fs_ior, rgw as parallel_fs_rgw

HOST = "2-core VM (Debian 12), a private Ceph 16.2.15 cluster on 127.0.0.1 (1 mon, 1 mgr, 1 mds, 3 BlueStore OSDs on sparse files, one virtio disk)"
SECTIONS = {"layouts": parallel_fs.where_bytes_live, "caches": parallel_fs.client_caches,
            "metadata": parallel_fs.metadata, "coherence": parallel_fs.coherence,
            "shared": parallel_fs.shared_file, "replication": parallel_fs.replication,
            "ior": parallel_fs_ior.ior_two_clients, "ior-cephfs": parallel_fs_ior.ior_cephfs,
            "rgw": lambda c: parallel_fs_rgw.rgw_objects(c, live=True)}
NOTES = {
    "layouts": "Section 1: three 16 MiB files written with fsync on node A in directories with the default layout, "
               "4 stripes of 1 MiB, and 1 MiB objects; getfattr of each, the OSDs' perf dumps around each write, "
               "rados ls of the data pool, osdmaptool --test-map-object of each of their objects, and object 1 of the "
               "4-stripe file compared with the file's bytes.",
    "caches": "Section 2: a 64 MiB file on node A; per trial a remount, then three reads (fresh mount, again, after "
              "posix_fadvise(DONTNEED)), each with the kernel's residency before it and the OSDs' and ceph-fuse's perf "
              "dumps around it.",
    "metadata": "Section 3: per trial, 100 creates on node A, 100 stats from node B, 100 removes, on CephFS and on the "
                "workspace's own filesystem, interleaved; the MDS's perf dump around each.",
    "coherence": "Section 4: 4 KiB written on node A, not flushed, read from node B; then 256 4 KiB pwrites on A (an fsync after them, not timed), "
                 "alone and while B holds the file open, interleaved; the MDS's session ls.",
    "shared": "Section 5: node A and node B write 1 MiB each in 4 KiB pwrites plus an fsync, at once, into a file "
              "each or into disjoint halves of one file, interleaved.",
    "replication": "Section 6: a second data pool of size 3 added to the file system; 8 MiB written with fsync into a "
                   "directory of the size-1 pool and one of the size-3 pool, interleaved, the OSDs' perf dumps around each.",
    "ior": "Section 7 (seed 001 with two clients): IOR (the one on PATH; its version is in the document) under mpirun, "
           "MPMD, rank 0's test file on node A and rank 1's on node B (-F, 8 MiB per rank, 1 MiB transfers, "
           "-O numTasksOnNode0=1); per trial a write and a read of each rank's own file in one run (-w -r -k), then a "
           "read with -C -Q 1 (the other node's file), the OSDs' perf dumps around each run. The witness is the kernel's "
           "view of the disk below the OSDs' files over the whole section.",
    "ior-cephfs": "Section 8 (IOR's own CEPHFS backend, as seed 001 built it): an IOR built --with-cephfs (its path and "
                  "version are in the document) under mpirun, 2 ranks, 1 MiB per rank in 4 KiB transfers, write "
                  "only with -e and -g (a barrier between the open and the writes); per trial, interleaved: -a CEPHFS into one shared file, -a CEPHFS -F, -a CEPHFS "
                  "--cephfs.olazy into one shared file (each rank its own libcephfs client, no mount), then -a POSIX "
                  "into one shared file on node A's ceph-fuse mount (both ranks in one client); the OSDs' perf dumps "
                  "around each run. The witness is the kernel's view of the disk below the OSDs' files over the "
                  "whole section.",
    "rgw": "Section 9 (the cluster's object store): a RADOS Gateway (radosgw, beast on 127.0.0.1) started on the "
           "cluster with its pools' PG count lowered to 8, its start times, resident memory and the load in the "
           "document; one 16 MiB PUT through fsspec s3fs into a new bucket, the OSDs' perf dumps around it; "
           "radosgw-admin bucket stats and object stat, rados ls of the data and index pools, rados stat and ceph osd "
           "map of each RADOS object of the bucket, listomapkeys of each index shard; then reads back through "
           "fsspec s3fs and s3fs-fuse, each compared with the bytes written and counted at the OSDs.",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join([*SECTIONS, "singles"]))
    a = ap.parse_args()
    os.environ["IOLAB_MODE"] = "live"
    version = runner.tool_version("ceph")
    t0 = time.time()
    with workspace.Workspace(budget=os.environ.get("IOLAB_BUDGET", "2GiB")) as ws:
        c = parallel_fs.start(ws)
        assert c is not None
        try:
            mnt = c.check_mounted("a")
            for name in a.only.split(","):
                if name == "singles":
                    _singles(c, version, mnt)
                    continue
                out = SECTIONS[name](c)
                recordings.save(out.text, f"ceph/{name}", ext="json", argv=["python", "-m", "recorders.l08_ceph", name],
                                tool_version=version, fs_path=mnt, host_description=HOST,
                                fs_facts={"cluster_start_s": c.timings, "memory_bytes": c.memory()},
                                notes=NOTES[name], witness=out.witness)
                print(name, out.frame.to_string(max_rows=20))
        finally:
            c.stop()
    print(f"done in {time.time() - t0:.0f} s; teardown {c.timings.get('teardown')} s")


def _singles(c, version, mnt) -> None:
    f = mnt / "layouts" / "4-stripes" / "file"
    saves = {
        "getfattr-layout-4-stripes": ("txt", runner.run(["getfattr", "-n", "ceph.file.layout", str(f)], timeout=30).stdout),
        "rados-ls": ("txt", c.ceph("-p", "cephfs_data", "ls", tool="rados").stdout),
        "perf-dump-osd": ("json", c.perf("osd.0")),
        "perf-dump-mds": ("json", c.perf("mds.a")),
        "perf-dump-client": ("json", c.daemon(f"client.admin.{c.fuse['a'].pid}", "perf dump")),
        "session-ls": ("json", c.daemon("mds.a", "session ls")),
    }
    obj = f"{os.stat(f).st_ino:x}.00000000"
    saves["osd-map"] = ("json", c.ceph("osd", "map", "cephfs_data", obj, "--format", "json").stdout)
    mapfile = c.dir / "osdmap"
    c.ceph("osd", "getmap", "-o", str(mapfile))
    dump = runner.run(["osdmaptool", str(mapfile), "--dump", "json"], timeout=30).stdout
    pool = next(p["pool"] for p in json.loads(dump[dump.index("{"):])["pools"] if p["pool_name"] == "cephfs_data")
    saves["osdmaptool-map-object"] = ("txt", runner.run(["osdmaptool", str(mapfile), "--test-map-object", obj,
                                                         "--pool", str(pool)], timeout=30).stdout)
    for name, (ext, text) in saves.items():
        recordings.save(text, f"ceph/{name}", ext=ext, tool_version=version, fs_path=mnt, host_description=HOST,
                        notes="A single raw output of the lesson 08 cluster, for the parser's golden test.")


if __name__ == "__main__":
    main()
