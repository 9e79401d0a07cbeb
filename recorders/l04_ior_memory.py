"""Re-make lesson 04's page-cache recordings (IOR's tutorial "First Steps"): a segment-count sweep
that overflows the page cache, and IOR's ``-M`` (memoryPerNode), measured, inside a memory cgroup.

    sudo .venv/bin/python -m recorders.l04_ior_memory --dir /tmp --limit 384MiB --trials 3

Root only: it makes a memory cgroup (v2 ``memory.max``, else v1 ``memory.limit_in_bytes``) under this
process's own, with ``--limit``, and runs every IOR inside it, so the page cache IOR's files may keep
AND the memory ``-M`` hogs are bounded by the limit: the node's memory is not taken from anyone else.
Every run writes then reads one file of ``segments`` x 1 MiB (``-t 1m -b 1m -s N``, one task, no MPI
launcher), interleaved over ``--trials`` rounds; each run is saved with its witness as
``ior/cache-s<N>-t<trial>`` and ``ior/hog-<M>-t<trial>``.

IOR reads ``-M``'s value with ``sscanf(" %d %% ")`` (src/utilities.c, NodeMemoryStringToBytes, 3.3.0
and 4.0.0): any value that starts with a digit is a PERCENTAGE of the node's physical memory
(``sysconf(_SC_PHYS_PAGES)``), so ``-M 2g`` hogs 2 %, not 2 GiB. The recorder passes percentages
(``--hog 1%``) and the header IOR prints (``memoryPerNode``) says how many bytes that was.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from iolab import recordings, runner, units, workspace
from iolab.lessons.l04_ior.sweeps import CACHE_SEGMENTS as SEGMENTS, CGROUP_CASSETTE, HOG_SEGMENTS

# the sweep's file sizes and the hog runs' (HOG_SEGMENTS fits in the limit alone, not beside the hog):
# the lesson's, which reads them

# enter the cgroup, then become the tool (an argv, no shell)
ENTER = "import os,sys; open(sys.argv[1],'w').write(str(os.getpid())); os.execv(sys.argv[2], sys.argv[2:])"


def own_cgroup() -> tuple[Path, str]:
    """This process's memory cgroup directory and its limit file (v2 first, else v1)."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    for line in lines:
        hier, ctrls, path = line.split(":", 2)
        if hier == "0" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup") / path.lstrip("/"), "memory.max"
    for line in lines:
        hier, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            return Path("/sys/fs/cgroup/memory") / path.lstrip("/"), "memory.limit_in_bytes"
    raise SystemExit("no memory cgroup controller on this machine")


class MemoryCgroup:
    """A memory cgroup with a limit, removed on exit (its processes have ended by then)."""

    def __init__(self, name: str, limit: int):
        parent, self.limit_file = own_cgroup()
        self.dir = parent / name
        self.limit = limit

    def __enter__(self) -> "MemoryCgroup":
        self.dir.mkdir()
        (self.dir / self.limit_file).write_text(str(self.limit))
        return self

    def argv(self, argv: list[str]) -> list[str]:
        return [sys.executable, "-c", ENTER, str(self.dir / "cgroup.procs"), *argv]

    def __exit__(self, *exc: object) -> None:
        # the last task may still be exiting (EBUSY): retry for a few seconds
        for _ in range(50):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        self.dir.rmdir()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m recorders.l04_ior_memory")
    ap.add_argument("--dir", required=True, help="where the test file goes (its filesystem is measured)")
    ap.add_argument("--ior", default="/tmp/ior-4.0.0/bin/ior")
    ap.add_argument("--limit", default="384MiB", help="the memory cgroup's limit")
    ap.add_argument("--hog", default="1%", help="IOR -M value (a percentage: see the module's docstring)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--host", default=None)
    ap.add_argument("--what", choices=("all", "cache", "hog", "parse"), default="all", help="which recordings to re-make")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("root only (a memory cgroup); students replay the recordings")
    limit = units.parse_size(a.limit)
    version = Path(a.ior).parent.parent.name.removeprefix("ior-")  # ior has no version flag
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    with workspace.Workspace(budget=f"{max(SEGMENTS) * 2}MiB", base=a.dir) as ws, \
            MemoryCgroup(f"iolab-ior-memory-{os.getpid()}", limit) as cg:
        test = ws.mkdir("ior") / "testfile"
        for t in range(1, a.trials + 1):
            runs: list[tuple[str, list[str], str]] = []
            for s in SEGMENTS if a.what in ("all", "cache") else ():
                runs.append((CGROUP_CASSETTE.part(f"cache-s{s}", "-t{i}", i=t), [], f"segment-count sweep, {s} x 1 MiB, trial {t}"))
            for hog in ("0", a.hog) if a.what in ("all", "hog") else ():
                m = [] if hog == "0" else ["-M", hog]
                name = "none" if hog == "0" else hog.rstrip("%") + "pct"
                runs.append((CGROUP_CASSETTE.part(f"hog-{name}", "-t{i}", i=t), m, f"-M {hog or 'none'} at {HOG_SEGMENTS} x 1 MiB, trial {t}"))
            if a.what in ("all", "parse") and t == 1:
                # what IOR makes of "-M 1m": its header says how many bytes it hogged
                runs.append(("hog-1m-parse", ["-M", "1m"], "-M 1m (IOR's help: 'e.g.: 2g, 75%') at 16 x 1 MiB"))
            for ref, extra, what in runs:
                segs = (16 if ref.endswith("parse") else HOG_SEGMENTS if ref.startswith("hog")
                        else int(ref.split("-s")[1].split("-")[0]))
                ior_argv = [a.ior, "-a", "POSIX", "-w", "-r", "-t", "1m", "-b", "1m", "-s", str(segs),
                            *extra, "-o", str(test)]
                load = os.getloadavg()[0]
                r = runner.run(cg.argv(ior_argv), timeout=600, env=env, witness=test.parent)
                notes = (f"{what}; load average {load:.1f} (1 min) before the run; one IOR task inside a memory cgroup limited to {units.format_size(limit)} "
                         f"(page cache and -M's memory both count against it); file {segs} MiB")
                p = recordings.save(r, f"ior/{ref}", argv=ior_argv, tool_version=version, fs_path=test.parent,
                                    host_description=a.host, notes=notes, witness=r.witness,
                                    fs_facts={"memory_cgroup_limit": limit})
                print("saved", p, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
