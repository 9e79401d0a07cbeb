"""Re-make lesson 03's write + fsync recordings, and its tmpfs ones: `.venv/bin/python -m recorders.l03_strace`.

With iolab.recordings.save (the text strace wrote with -o + .meta.json), in a private workspace on
/tmp (a disk) and on /dev/shm (tmpfs, memory), removed afterwards:

* count-write-fsync-64m-<fs> / count-wall-write-fsync-64m-<fs>: a Python process writes 64 MiB in
  1 MiB write() calls and calls fsync() once, under `strace -c -f -e trace=write,fsync` (system time)
  and with `-w` (wall time), two separate runs.
* trace-reads-cold-shm / trace-reads-warm-shm: 64 KiB reads of a 16 MiB file under
  `strace -f -tt -T -y -e trace=read -P FILE`, after posix_fadvise(DONTNEED) and again; on tmpfs
  nothing can be evicted (the /tmp pair is trace-reads-cold / trace-reads-warm).
* overhead-16b-of-100000-shm.csv: syscalls.overhead() of the 16-byte read loop on tmpfs.
* trace-reads-{cold,warm}-{1,2,3}[-shm] (`--rounds`: only these): syscalls.cold_warm_reads(), three rounds of: evict, trace the
  64 KiB read loop of a 16 MiB file (cold), trace it again (warm); on /tmp and on /dev/shm (-shm).

`--formats` re-makes only the traces of every output format parse_calls reads (tests/test_strace.py
checks its fast path against the general one on each; benchmarks/bench_strace_parse.py times each):
format-<how>-<stamp>[-T][-y], <stamp> one of t, tt, ttt, r (-t, -tt, -ttt, -r) or none, <how> one of
  one   `strace [stamp] [-T] [-y] -o FILE dd bs=1 ...`: one process, no pid on its lines
  f     `strace -f ... -o FILE sh -c SCRIPT`: a shell, two dd's at once (one of them bs=1) and a dd that
        fails (LC_ALL=C, for fewer lines of locale look-ups): "PID  " before every line, unfinished/resumed pairs, SIGCHLD, SIGUSR1, exits 0 and 1
  fpid  the same without -o: the trace strace writes on stderr, "[pid PID] " once there are two
  ff    `strace -ff ... -o FILE`: one file per process, FILE.<pid>, saved as format-ff-...<pid>

Never edit the recorded text; run this again instead.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import replace

from iolab import recordings, runner, workspace
from iolab.lessons.l03_strace import syscalls
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


# the -f workload: argv of sh, its script and positional arguments (the data file is "$1", never
# spliced into the script)
FORMAT_SCRIPT = ('trap "true" USR1; dd if="$1" of=/dev/null bs=1 count=100 status=none & '
                 'dd if="$1" of=/dev/null bs=4k status=none & '
                 'dd if="$1.missing" of=/dev/null status=none 2>/dev/null; wait; kill -s USR1 $$')
STAMPS = {"t": ["-t"], "tt": ["-tt"], "ttt": ["-ttt"], "r": ["-r"], "none": []}
# (how, stamp, -T, -y): each stamp with -T -y in every layout but -ff; a few without -T or -y
FORMATS = ([(how, stamp, True, True) for how in ("one", "f", "fpid") for stamp in STAMPS]
           + [("f", "tt", False, False), ("f", "ttt", True, False), ("f", "r", False, True),
              ("f", "none", False, False), ("one", "none", False, False),
              ("ff", "tt", True, True), ("ff", "none", False, False)])


def format_name(how: str, stamp: str, durations: bool, fds: bool) -> str:
    return f"strace/format-{how}-{stamp}{'-T' if durations else ''}{'-y' if fds else ''}"


def record_formats() -> None:
    """The same workloads traced in each of FORMATS (see the module docstring)."""
    with workspace.Workspace(budget="64MiB", base="/tmp") as ws:
        data = ws.make_file("data-32KiB.bin", "32KiB")
        for how, stamp, durations, fds in FORMATS:
            flags = STAMPS[stamp] + (["-T"] if durations else []) + (["-y"] if fds else [])
            if how == "one":
                cmd = ["dd", f"if={data}", "of=/dev/null", "bs=1", "count=100", "status=none"]
            else:
                cmd = ["sh", "-c", FORMAT_SCRIPT, "sh", str(data)]
                flags = ["-ff" if how == "ff" else "-f", *flags]
            out = ws.root / ".strace-format"
            tail = [] if how == "fpid" else ["-o", out]
            argv = [strace.TOOL, *flags, *tail, "--", *cmd]
            shown = [strace.TOOL, *flags, *(["-o", "FILE"] if tail else []), "--", *cmd]
            notes = {"one": "dd bs=1 count=100 of a 32 KiB file, one process",
                     "f": "a shell running dd bs=1 count=100 and dd bs=4k of a 32 KiB file at once, and a dd of "
                          "a missing file (exit 1), then SIGUSR1 to itself (trapped)",
                     "fpid": "the -f workload traced to strace's stderr (no -o): [pid N] prefixes",
                     "ff": "the -f workload with -ff -o FILE: one file per process, FILE.<pid> (the pid is the "
                           "name's suffix)"}[how]
            ref = format_name(how, stamp, durations, fds)
            r = runner.run(argv, timeout=60, cwd=ws.root, check=False, env={"LC_ALL": "C"})  # no locale files
            if how == "ff":
                for f in sorted(ws.root.glob(".strace-format.*")):
                    p = recordings.save(replace(r, stdout=f.read_text()), f"{ref}.{f.suffix[1:]}", argv=shown,
                                        tool_version=runner.tool_version("strace"), stream="file",
                                        fs_path=ws.root, host_description=HOST,
                                        notes=f"{notes}. Traced command exit status: {r.returncode}.")
                    f.unlink()
                    print(p)
                continue
            if how != "fpid":
                r = replace(r, stdout=out.read_text())
                out.unlink()
            p = recordings.save(r, ref, argv=shown, tool_version=runner.tool_version("strace"),
                                stream="stderr" if how == "fpid" else "file", fs_path=ws.root,
                                host_description=HOST,
                                notes=f"{notes}. Traced command exit status: {r.returncode}.")
            print(p)


def record_rounds(ws, name: str, base: str) -> None:
    """trace-reads-{cold,warm}-{1,2,3}[-shm], in ``ws`` on ``base``, as syscalls.cold_warm_reads runs them."""
    f16 = ws.make_file("rounds-16MiB.bin", "16MiB")
    suffix = "" if name == "tmp" else f"-{name}"
    for trial in (1, 2, 3):
        _evict(f16)
        for state, how in (("cold", "right after posix_fadvise(DONTNEED)"), ("warm", "read again at once")):
            _save_trace(syscalls.read_loop_argv(f16, 65536), f"strace/trace-reads-{state}-{trial}{suffix}",
                        ws, paths=[f16], notes=f"Round {trial} of 3 on {base}: 64 KiB reads of a 16 MiB "
                                               f"file under strace -T, {state} ({how}).")
    f16.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--formats", action="store_true", help="re-make only the format-* traces")
    ap.add_argument("--rounds", action="store_true", help="re-make only the trace-reads-{cold,warm}-N rounds")
    args = ap.parse_args()
    if args.formats:
        record_formats()
        return
    if args.rounds:
        for name, base in PLACES.items():
            with workspace.Workspace(budget="64MiB", base=base) as ws:
                record_rounds(ws, name, base)
        return
    for name, base in PLACES.items():
        with workspace.Workspace(budget="256MiB", base=base) as ws:
            ws.reserve(64 * 2**20)
            cmd = syscalls.write_fsync_argv(ws.root / "written.bin", 64 * 2**20)
            for wall in (False, True):
                ref = f"strace/count-{'wall-' if wall else ''}write-fsync-64m-{name}"
                _save_count(cmd, ref, ws, wall=wall, syscalls=["write", "fsync"],
                            notes=f"64 MiB in 1 MiB write() calls then one fsync(), on {base}, under strace -c"
                                  f"{' -w (wall-clock time per call)' if wall else ' (system CPU time per call)'}.")
            record_rounds(ws, name, base)
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
                                    argv=["python", "-c", "iolab.lessons.l03_strace.syscalls.overhead(path, 16, repeat=3)"],
                                    tool_version=runner.tool_version("strace"), stream="file", fs_path=ws.root,
                                    host_description=HOST,
                                    notes="Elapsed seconds of reading a 100,000-byte file on tmpfs 16 bytes per "
                                          "unbuffered f.read, plain, under strace -c and under a full trace.")
                print(p)


if __name__ == "__main__":
    main()
