"""Benchmark: iolab.pagecache.residency() against `vmtouch FILE`, and its counts against fincore's.

Usage: .venv/bin/python benchmarks/bench_residency.py [--size 4GiB] [--dir /tmp] [--repeat 7]

Writes one file of --size in a private directory under --dir (deleted at the end, also on ^C),
then in three cache states (all resident, evicted, every other MiB read) times:
  * vmtouch FILE                       (wall time of the whole command, as a user would run it)
  * residency(path)                    (in this process, with the per-page map)
  * residency(path, keep_map=False)    (counts only)
and checks that the resident page counts of residency(), vmtouch and fincore agree.
Prints medians; the target is residency() <= 1.5x vmtouch. Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from iolab import fsinfo, pagecache
from iolab.units import MiB, format_size, parse_size


def write_file(path: Path, size: int) -> None:
    block = np.random.default_rng(1).integers(0, 256, 8 * MiB, dtype=np.uint8).tobytes()
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
        f.flush()
        os.fsync(f.fileno())


def vmtouch_pages(path: Path) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = subprocess.run(["vmtouch", str(path)], capture_output=True, text=True, check=True).stdout
    seconds = time.perf_counter() - t0
    m = re.search(r"Resident Pages:\s+(\d+)/(\d+)", out)
    if not m:
        raise RuntimeError(f"unexpected vmtouch output:\n{out}")
    return seconds, int(m.group(1))


def fincore_pages(path: Path) -> int:
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "PAGES", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="4GiB")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    for tool in ("vmtouch", "fincore"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed: apt-get install {'vmtouch' if tool == 'vmtouch' else 'util-linux'}")
            return 2
    size = parse_size(args.size)
    d = Path(tempfile.mkdtemp(prefix="iolab-bench-", dir=args.dir))
    path = d / "big.bin"
    print(f"# residency() vs vmtouch on a {format_size(size)} file in {d} ({fsinfo.fstype(d)}), "
          f"kernel {os.uname().release}, {os.cpu_count()} cpus, median of {args.repeat}")
    try:
        t0 = time.perf_counter()
        write_file(path, size)
        print(f"wrote the file in {time.perf_counter() - t0:.1f} s")

        def all_resident() -> None:
            with open(path, "rb", buffering=0) as f:
                while f.read(8 * MiB):
                    pass

        def evicted() -> None:
            pagecache.evict(path)

        def every_other_mib() -> None:
            pagecache.evict(path)
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                for off in range(0, size, 2 * MiB):
                    os.pread(fd, MiB, off)
            finally:
                os.close(fd)

        print(f"{'state':<16} {'vmtouch s':>10} {'residency s':>12} {'ratio':>6} {'no-map s':>9} {'ratio':>6} "
              f"{'pages (iolab/vmtouch/fincore)':>32}")
        ok = True
        for name, prepare in (("all resident", all_resident), ("evicted", evicted),
                              ("every other MiB", every_other_mib)):
            prepare()
            # the three counts back to back, before any timing: the cache can change under a shared machine
            count = pagecache.residency(path, keep_map=False).resident
            vm_count = vmtouch_pages(path)[1]
            fc = fincore_pages(path)
            vm_s = statistics.median(vmtouch_pages(path)[0] for _ in range(args.repeat))
            r_s, res = timed(lambda: pagecache.residency(path), args.repeat)
            n_s, _ = timed(lambda: pagecache.residency(path, keep_map=False), args.repeat)
            if res.resident != count:
                print(f"  note: the resident count moved from {count:,} to {res.resident:,} during the timing "
                      "(reclaim or another process)")
            res_count = count
            same = res_count == vm_count == fc
            ok &= same and r_s <= 1.5 * vm_s
            print(f"{name:<16} {vm_s:>10.4f} {r_s:>12.4f} {r_s / vm_s:>6.2f} {n_s:>9.4f} {n_s / vm_s:>6.2f} "
                  f"{f'{res_count:,}/{vm_count:,}/{fc:,}':>32}{'' if same else '  MISMATCH'}")
        print("target met: residency() <= 1.5x vmtouch and counts equal" if ok else "TARGET NOT MET")
        return 0 if ok else 1
    finally:
        shutil.rmtree(d, ignore_errors=True)
        print(f"removed {d}")


if __name__ == "__main__":
    sys.exit(main())
