"""Re-make lesson 03's write + fsync recordings, and its tmpfs ones: `.venv/bin/python -m recorders.strace`.

With iolab.recordings.save (the text strace wrote with -o + .meta.json), in a private workspace on
/tmp (a disk) and on /dev/shm (tmpfs, memory), removed afterwards:

* count-write-fsync-64m-<fs> / count-wall-write-fsync-64m-<fs>: a Python process writes 64 MiB in
  1 MiB write() calls and calls fsync() once, under `strace -c -f -e trace=write,fsync` (system time)
  and with `-w` (wall time), two separate runs.
* trace-reads-cold-shm / trace-reads-warm-shm: 64 KiB reads of a 16 MiB file under
  `strace -f -tt -T -y -e trace=read -P FILE`, after posix_fadvise(DONTNEED) and again; on tmpfs
  nothing can be evicted (the /tmp pair is trace-reads-cold / trace-reads-warm).
* overhead-16b-of-100000-shm.csv: syscalls.overhead() of the 16-byte read loop on tmpfs.

Never edit the recorded text; run this again instead.
"""
from __future__ import annotations

import os


from iolab import recordings, runner, workspace
from iolab.labs import syscalls
from iolab.tools import strace

HOST = os.environ.get("IOLAB_HOST_DESCRIPTION", "2-core AMD EPYC VM (shared), 24 GiB, virtio disk, Debian 12")
PLACES = {"tmp": "/tmp", "shm": "/dev/shm"}


def _save_count(cmd, ref, ws, *, wall, syscalls, notes):
    out = ws.root / ".strace-record.txt"
    r = strace.run(strace.count_argv(cmd, output=out, wall=wall, syscalls=syscalls), cwd=ws.root)
    out.unlink(missing_ok=True)
    p = recordings.save(r, ref, stream="file", fs_path=ws.root, host_description=HOST,
                        argv=strace.count_argv(cmd, output="FILE", wall=wall, syscalls=syscalls),
                        notes=f"{notes} Traced command exit status: {r.returncode}.")
    print(p)


def _save_trace(cmd, ref, ws, *, paths, notes):
    out = ws.root / ".strace-record.txt"
    r = strace.run(strace.trace_argv(cmd, output=out, syscalls="read", paths=paths), cwd=ws.root)
    out.unlink(missing_ok=True)
    p = recordings.save(r, ref, stream="file", fs_path=ws.root, host_description=HOST,
                        argv=strace.trace_argv(cmd, output="FILE", syscalls="read", paths=paths),
                        notes=f"{notes} Traced command exit status: {r.returncode}.")
    print(p)


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main() -> None:
    for name, base in PLACES.items():
        with workspace.Workspace(budget="256MiB", base=base) as ws:
            ws.reserve(64 * 2**20)
            cmd = syscalls.write_fsync_argv(ws.root / "written.bin", 64 * 2**20)
            for wall in (False, True):
                ref = f"strace/count-{'wall-' if wall else ''}write-fsync-64m-{name}"
                _save_count(cmd, ref, ws, wall=wall, syscalls=["write", "fsync"],
                            notes=f"64 MiB in 1 MiB write() calls then one fsync(), on {base}, under strace -c"
                                  f"{' -w (wall-clock time per call)' if wall else ' (system CPU time per call)'}.")
            if name == "shm":
                f = ws.make_file("data-16MiB.bin", "16MiB")
                cmd = syscalls.read_loop_argv(f, 65536)
                _evict(f)
                _save_trace(cmd, "strace/trace-reads-cold-shm", ws, paths=[f],
                            notes="64 KiB reads of a 16 MiB file on tmpfs right after posix_fadvise(DONTNEED), "
                                  "which cannot evict tmpfs pages.")
                _save_trace(cmd, "strace/trace-reads-warm-shm", ws, paths=[f],
                            notes="64 KiB reads of a 16 MiB file on tmpfs, read again.")
                d = ws.make_file("data-100000B.bin", 100_000)
                df = syscalls.overhead(d, 16, repeat=3)
                p = recordings.save(df.to_csv(index=False), "strace/overhead-16b-of-100000-shm", ext="csv",
                                    argv=["python", "-c", "iolab.labs.syscalls.overhead(path, 16, repeat=3)"],
                                    tool_version=runner.tool_version("strace"), stream="file", fs_path=ws.root,
                                    host_description=HOST,
                                    notes="Elapsed seconds of reading a 100,000-byte file on tmpfs 16 bytes per "
                                          "unbuffered f.read, plain, under strace -c and under a full trace.")
                print(p)


if __name__ == "__main__":
    main()
