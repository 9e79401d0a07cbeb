"""Benchmark: iolab.tools.strace.parse_calls on a trace of at least 1,000,000 lines.

Usage: .venv/bin/python benchmarks/bench_strace_parse.py [--lines 1000000] [--repeat 3]

The trace is made of real recordings (data/recorded/strace), repeated until it has --lines lines,
and written to a file in a private workspace (deleted at the end). Two mixes:
  * reads:   trace-forks-reads (three processes, -f -tt -T -y, read(2) lines only)
  * threads: trace-threads (threads + fork: futex/pread64, unfinished/resumed pairs, signals, exits)
For each, parse_calls streams the file (`for rec in parse_calls(open(path))`) and the script prints
lines/s by wall clock and by CPU time of this process (the machine is shared: CPU time is the fairer
figure), then peak Python memory (tracemalloc) for the full trace and for a quarter of it: with a
streaming parser the two are about equal. The target is >= 500,000 lines/s. Not a test: CI does
not gate on it.
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from pathlib import Path

from iolab import recordings, workspace
from iolab.tools import strace as st
from iolab.units import format_size

MIXES = {"reads": "strace/trace-forks-reads", "threads": "strace/trace-threads"}


def build(path: Path, source: str, n_lines: int) -> int:
    lines = recordings.load(source).text.splitlines(keepends=True)
    written = 0
    with open(path, "w") as f:
        while written < n_lines:
            f.writelines(lines)
            written += len(lines)
    return written


def consume(path: Path, limit: int | None = None) -> int:
    n = 0
    with open(path) as f:
        src = f if limit is None else (line for i, line in zip(range(limit), f))
        for _ in st.parse_calls(src):
            n += 1
    return n


def timed(path: Path) -> tuple[float, float, int]:
    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    n = consume(path)
    return time.perf_counter() - w0, time.process_time() - c0, n


def peak(path: Path, limit: int | None) -> int:
    gc.collect()
    tracemalloc.start()
    consume(path, limit)
    _, top = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return top


def calibrate() -> float:
    """ns per iteration of a trivial Python loop: how fast this machine runs Python right now."""
    t = time.process_time()
    x = 0
    for i in range(5_000_000):
        x += i
    return (time.process_time() - t) / 5_000_000 * 1e9


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"python loop calibration: {calibrate():.0f} ns per trivial iteration (CPU time)")
    with workspace.Workspace(budget="1GiB") as ws:
        for mix, source in MIXES.items():
            path = ws.path(f"{mix}.trace")
            n_lines = build(path, source, a.lines)
            runs = [timed(path) for _ in range(a.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            records = runs[0][2]
            full = peak(path, None)
            quarter = peak(path, n_lines // 4)
            print(f"{mix:8s} {n_lines:,} lines ({format_size(path.stat().st_size)}) -> {records:,} records | "
                  f"{n_lines / wall:,.0f} lines/s wall, {n_lines / cpu:,.0f} lines/s CPU "
                  f"(median of {a.repeat}) | peak Python memory {format_size(full)} "
                  f"(a quarter of the trace: {format_size(quarter)})")


if __name__ == "__main__":
    main()
