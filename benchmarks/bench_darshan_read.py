"""What reading a Darshan log in a child process costs (issue 21, item 8).

Usage: .venv/bin/python benchmarks/bench_darshan_read.py [--repeat 5]

darshan.read_log hands the log to PyDarshan in a child process (forked from the reader process
iolab.tools._darshan_reader, which has PyDarshan and pandas loaded), so that a corrupt log can only kill the child.
For every recorded log in data/recorded/darshan this prints the best of --repeat times of
darshan.read_report (PyDarshan in this process, unguarded) and of darshan.read_log (header check +
child), their difference (the overhead per log), and once the time of the first read_log of the
process (which starts the reader process).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from iolab import ParseError, recordings  # noqa: E402
from iolab.tools import darshan  # noqa: E402


def best(f, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    logs = sorted({p for p in (recordings.load(r).path for r in recordings.available("darshan"))
                   if p.suffix == ".darshan"})
    t0 = time.perf_counter()
    darshan.read_log(logs[0])
    first = time.perf_counter() - t0
    print(f"first read_log of the process (starts the reader process): {first:.3f} s")
    print(f"{'log':58} {'bytes':>7} {'in-process s':>12} {'child s':>8} {'overhead s':>10}")
    over = []
    for p in logs:
        try:
            darshan.read_log(p)
        except ParseError as e:
            print(f"{p.name:58} refused: {str(e)[:60]}")
            continue
        a = best(lambda: darshan.read_report(str(p)), args.repeat)
        b = best(lambda: darshan.read_log(p), args.repeat)
        over.append(b - a)
        print(f"{p.name:58} {p.stat().st_size:7d} {a:12.3f} {b:8.3f} {b - a:10.3f}")
    print(f"overhead per log over {len(over)} logs: median {statistics.median(over):.3f} s, "
          f"max {max(over):.3f} s (best of {args.repeat} each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
