"""How long each lesson and exercise solution takes to run top to bottom (target: < 60 s each,
< 5 min for the whole course). Prints a table; CI does not gate on it.

    .venv/bin/python benchmarks/bench_course.py [NOTEBOOK ...]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat

from iolab import nbexec, nbtools, recordings

TARGET_S = 60.0
COURSE_TARGET_S = 300.0


def run(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    nbexec.execute(nb, path.parent, timeout=600)
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    root = nbtools.project_root()
    paths = [Path(a).resolve() for a in argv] or sorted((root / "notebooks").rglob("*.ipynb")) + nbtools.solutions()
    print(f"IOLAB_MODE={recordings.mode()}")
    total = 0.0
    for p in paths:
        seconds = run(p)
        total += seconds
        flag = "" if seconds < TARGET_S else f"  <-- over {TARGET_S:.0f} s"
        print(f"{seconds:7.1f} s  {p.relative_to(root)}{flag}", flush=True)
    print(f"{total:7.1f} s  in all ({len(paths)} notebooks; target {COURSE_TARGET_S:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
