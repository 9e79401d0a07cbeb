"""Benchmark: how long a lesson's first cell (``iolab.doctor.summary()``) takes, before and after the
per-user cache of the tools' probes (issue 22, 8).

Usage: .venv/bin/python benchmarks/bench_doctor.py [--repeat 5]

Each figure is the wall time of a fresh Python process (as a new kernel is), import of iolab included:
  * fresh probe      ``doctor.table(doctor.checks())``: every tool probed, what summary() did before
  * summary, cold    ``doctor.summary()`` with an empty cache (the first lesson of a user, ever)
  * summary, warm    ``doctor.summary()`` with the cache filled (every lesson after it)
  * import only      ``import iolab.doctor``: the floor
The cache lives in a private XDG_CACHE_HOME, removed at the end. Prints medians, min and max, and
every trial. Not a test: CI does not gate on it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CASES = {
    "import only": "import iolab.doctor",
    "fresh probe": "from iolab import doctor; doctor.table(doctor.checks())",
    "summary, cold": "from iolab import doctor; import shutil; shutil.rmtree(doctor.cache_path().parent, "
                     "ignore_errors=True); doctor.summary()",
    "summary, warm": "from iolab import doctor; doctor.summary()",
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="bench-doctor-")
    env = {**os.environ, "XDG_CACHE_HOME": cache}
    times: dict[str, list[float]] = {k: [] for k in CASES}
    try:
        subprocess.run([sys.executable, "-c", CASES["summary, warm"]], env=env, check=True, capture_output=True)
        for _ in range(args.repeat):            # interleaved: a busy moment hits every case alike
            for name, code in CASES.items():
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
                times[name].append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    load = os.getloadavg()[0]
    print(f"doctor.summary() in a fresh process, {args.repeat} interleaved trials, load {load:.1f} on "
          f"{os.cpu_count()} CPUs; IOR on PATH: {bool(shutil.which('ior'))}")
    for name, ts in times.items():
        print(f"  {name:<14} median {statistics.median(ts):6.2f} s  (min {min(ts):.2f}, max {max(ts):.2f})  "
              f"trials: {', '.join(f'{t:.2f}' for t in ts)}")


if __name__ == "__main__":
    main()
