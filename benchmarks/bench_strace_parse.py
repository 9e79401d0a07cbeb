"""Benchmark: iolab.tools.strace.parse_calls on every trace format, side by side with -tt.

Usage: .venv/bin/python benchmarks/bench_strace_parse.py [--lines 600000] [--repeat 3] [--only NAME ...]
                                                         [--vary] [--general] [--iter] [--memory]

Each format is a real recording of the same workloads (data/recorded/strace/format-*, made by
`python -m recorders.l03_strace --formats`: `strace [-f|-ff] [-t|-tt|-ttt|-r|none] [-T] [-y]`, with -o
and without it, `[pid N]` on stderr), repeated until it has --lines lines and written to a file in a
private workspace (deleted at the end); the two older -f -tt -T -y mixes (trace-forks-reads: three
processes reading; trace-threads: threads and a fork, futex/pread64, unfinished/resumed pairs,
signals, exits) come with them. A -ff set is one file per process (FILE.<pid>), each repeated in
proportion and parsed with the pid of its name: ``parse_calls(f, pid=pid)``.

parse_calls streams each file (`for rec in parse_calls(open(path))`) --repeat times, the formats
taking turns so that a change of the machine's load falls on all of them alike. The figure is
lines/s of CPU time of this process (time.process_time), the best of the runs: the machine is a
shared VM whose speed swings from minute to minute (see the calibration line), the best run is its
own speed, the others add what its neighbours took (timeit's documentation advises the same).
Printed per format: lines, records, best lines/s, the ratio to -f -tt -T -y and to the fastest
format; then whether every format is within 0.8x of the fastest and at >= 500,000 lines/s.

--floor also prints, per format, where a line's time goes: characters per line, MB/s, the regex pass
alone (the fast path's pattern for the file's layout, findall over the same blocks the parser reads:
C work no Python change removes) and the rest (Python: memos, time stamps, records), in ns of CPU per
line, best of the same interleaved runs; and how close each format could come to the fastest if its
Python work cost no more than the fastest format's ("bound": fastest / (its regex + the fastest's rest));
"stamps" is float() of the time stamps the pattern found, alone (map in C: what converting them costs
at the least), and "+stamps" the bound with it (fastest / (its regex + its stamps + the fastest's rest)):
where that is under 0.8, no change of the Python rest alone brings the format within 0.8x.

--vary gives every line a duration of its own (random, 1 to 999 µs) instead of the recording's,
repeated: a trace that repeats itself flatters any memo of what the lines say. --general also
times the general path alone (`_fast=False`, one line at a time), --iter the file given as an
iterator of lines (`parse_calls(iter(f))`), --memory the peak Python memory (tracemalloc) for the
whole file and for its first quarter (a streaming parser keeps them about equal).
Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import gc
import random
import re
import time
import tracemalloc
from pathlib import Path

from iolab import recordings, workspace
from iolab.tools import strace as st
from iolab.tools import strace_calls as stc

TARGET = 500_000
WITHIN = 0.8
REFERENCE = "f-tt-T-y"
_DURATION = re.compile(r"<\d+\.\d+>$")


def sources() -> dict[str, list[tuple[str, int | None]]]:
    """format name -> its recordings, each with the pid its file name gives (-ff) or None."""
    out: dict[str, list[tuple[str, int | None]]] = {}
    for ref in recordings.available("strace"):
        name = ref.split("/", 1)[1]
        if name.startswith("format-"):
            fmt, _, suffix = name[len("format-"):].partition(".")
            out.setdefault(fmt, []).append((ref, int(suffix) if suffix else None))
    for mix in ("trace-forks-reads", "trace-threads"):
        out[mix] = [(f"strace/{mix}", None)]
    return out


def build(path: Path, ref: str, n_lines: int, rnd: random.Random | None) -> int:
    lines = recordings.load(ref).text.splitlines(keepends=True)
    written = 0
    with open(path, "w") as f:
        while written < n_lines:
            if rnd is not None:
                f.writelines(_DURATION.sub(lambda m: f"<0.{rnd.randint(1, 999):06d}>", ln.rstrip("\n")) + "\n"
                             for ln in lines)
            else:
                f.writelines(lines)
            written += len(lines)
    return written


def consume(files: list[tuple[Path, int | None]], as_lines: bool = False, **kw) -> int:
    n = 0
    for path, pid in files:
        if pid is not None:
            kw["pid"] = pid
        with open(path) as f:
            for _ in st.parse_calls(iter(f) if as_lines else f, **kw):
                n += 1
    return n


def cpu(files, **kw) -> tuple[float, int]:
    gc.collect()
    c0 = time.process_time()
    n = consume(files, **kw)
    return time.process_time() - c0, n


def regex_only(files) -> tuple[float, float]:
    """CPU seconds of the fast path's findall alone over the files, in the parser's blocks (its internals:
    _layout, _FAST, _BLOCK), and of float() over the time stamps it found (the second group: what the
    parser converts per line; map(float, ...) in C, no Python loop)."""
    spent = stamps = 0.0
    for path, _ in files:
        with open(path) as f:
            rest = ""
            findall = None
            while True:
                block = f.read(stc._BLOCK)
                cut = block.rfind("\n") + 1
                text, rest = rest + block[:cut], block[cut:]
                if text:
                    findall = findall or stc._FAST[stc._layout(text)].findall
                    c0 = time.process_time()
                    found = findall(text)
                    spent += time.process_time() - c0
                    secs = [m[1] for m in found if m[1]]
                    c0 = time.process_time()
                    list(map(float, secs))
                    stamps += time.process_time() - c0
                if not block:
                    break
    return spent, stamps


def peak(files) -> int:
    gc.collect()
    tracemalloc.start()
    consume(files)
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
    ap.add_argument("--lines", type=int, default=600_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="only these formats (e.g. f-tt-T-y one-none)")
    ap.add_argument("--vary", action="store_true", help="a random duration on every line")
    ap.add_argument("--general", action="store_true", help="also time the general path alone")
    ap.add_argument("--iter", action="store_true", help="also time the file as an iterator of lines")
    ap.add_argument("--memory", action="store_true", help="also measure peak Python memory")
    ap.add_argument("--floor", action="store_true", help="also time the regex pass alone: where a line's time goes")
    a = ap.parse_args()
    formats = {k: v for k, v in sources().items() if not a.only or k in a.only}
    print(f"python loop calibration: {calibrate():.0f} ns per trivial iteration (CPU time)")
    rnd = random.Random(0) if a.vary else None
    with workspace.Workspace(budget="4GiB") as ws:
        files: dict[str, list[tuple[Path, int | None]]] = {}
        lines: dict[str, int] = {}
        for fmt, refs in formats.items():
            sizes = [len(recordings.load(ref).text.splitlines()) for ref, _ in refs]
            files[fmt], lines[fmt] = [], 0
            for (ref, pid), size in zip(refs, sizes):
                path = ws.path(f"{ref.split('/')[1]}.trace")
                lines[fmt] += build(path, ref, max(1, a.lines * size // sum(sizes)), rnd)
                files[fmt].append((path, pid))
        best: dict[str, float] = {}
        floor: dict[str, float] = {}
        stamps: dict[str, float] = {}
        records: dict[str, int] = {}
        for _ in range(a.repeat):  # the formats take turns
            for fmt in formats:
                t, records[fmt] = cpu(files[fmt])
                best[fmt] = min(best.get(fmt, t), t)
                if a.floor:
                    gc.collect()
                    t, ts = regex_only(files[fmt])
                    floor[fmt] = min(floor.get(fmt, t), t)
                    stamps[fmt] = min(stamps.get(fmt, ts), ts)
        rate = {fmt: lines[fmt] / best[fmt] for fmt in formats}
        fastest = max(rate.values())
        ref_rate = rate.get(REFERENCE)
        varied = ", varied durations" if a.vary else ""
        print(f"lines/s of CPU time, the best of {a.repeat} runs per format{varied}; "
              f"x: of {REFERENCE} (-f -tt -T -y -o FILE), of the fastest")
        print(f"{'format':18s} {'lines':>9s} {'records':>9s} {'lines/s':>9s} {'x -tt':>6s} {'x max':>6s}")
        for fmt in formats:
            vs = f"{rate[fmt] / ref_rate:6.2f}" if ref_rate else f"{'':6s}"
            print(f"{fmt:18s} {lines[fmt]:9,d} {records[fmt]:9,d} {rate[fmt]:9,.0f} {vs} {rate[fmt] / fastest:6.2f}")
        slow = [fmt for fmt in formats if rate[fmt] < WITHIN * fastest]
        under = [fmt for fmt in formats if rate[fmt] < TARGET]
        print(f"within {WITHIN}x of the fastest ({fastest:,.0f} lines/s): "
              f"{'every format' if not slow else 'NOT ' + ', '.join(slow)}; slowest/fastest "
              f"{min(rate.values()) / fastest:.2f}")
        print(f"target {TARGET:,} lines/s: {'met by every format' if not under else 'NOT met by ' + ', '.join(under)}")
        if a.floor:
            top = max(formats, key=lambda fmt: rate[fmt])
            top_rest = (best[top] - floor[top]) / lines[top]
            print(f"where a line's time goes (ns of CPU per line; bound: x max if its Python rest cost what "
                  f"{top}'s does, {top_rest * 1e9:.0f} ns; stamps: float() of its time stamps alone, in C; "
                  f"+stamps: the bound with them)")
            print(f"{'format':18s} {'chars':>6s} {'MB/s':>6s} {'regex':>6s} {'stamps':>6s} {'rest':>6s} {'total':>6s} "
                  f"{'bound':>6s} {'+stamps':>7s}")
            for fmt in formats:
                chars = sum(path.stat().st_size for path, _ in files[fmt]) / lines[fmt]
                re_ns, st_ns, total = floor[fmt] / lines[fmt], stamps[fmt] / lines[fmt], best[fmt] / lines[fmt]
                bound = (best[top] / lines[top]) / (re_ns + top_rest)
                with_stamps = (best[top] / lines[top]) / (re_ns + st_ns + top_rest)
                print(f"{fmt:18s} {chars:6.0f} {chars * rate[fmt] / 1e6:6.1f} {re_ns * 1e9:6.0f} {st_ns * 1e9:6.0f} "
                      f"{(total - re_ns) * 1e9:6.0f} {total * 1e9:6.0f} {bound:6.2f} {with_stamps:7.2f}")
        for fmt in formats:
            extra = []
            if a.iter:
                t, _ = cpu(files[fmt], as_lines=True)
                extra.append(f"iterator of lines {lines[fmt] / t:9,.0f} lines/s")
            if a.general:
                t, _ = cpu(files[fmt], _fast=False)
                extra.append(f"general path alone {lines[fmt] / t:9,.0f} lines/s (fast: {t / best[fmt]:.1f}x)")
            if a.memory:
                quarter = []
                for path, pid in files[fmt]:
                    q = path.with_suffix(".quarter")
                    with open(path) as f, open(q, "w") as out:
                        n = sum(1 for _ in open(path))
                        out.writelines(line for _, line in zip(range(n // 4), f))
                    quarter.append((q, pid))
                extra.append(f"peak memory {peak(files[fmt]) / 2**20:.1f} MiB (a quarter: {peak(quarter) / 2**20:.1f} MiB)")
            if extra:
                print(f"{fmt:18s} " + "; ".join(extra))


if __name__ == "__main__":
    main()
