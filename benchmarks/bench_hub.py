"""A class on one node, measured: hub start, spawn time per student, and each lesson's run time alone
vs with N students running it at the same time, with each student's peak scratch use and memory.

The class is set up exactly as the hub test does (tests/hub_class.py, docs/jupyterhub.md); every
lesson runs through the hub's REST API and a kernel websocket, as a browser would. As root only.
A benchmark, not a test: it prints figures and gates nothing.

    .venv/bin/python benchmarks/bench_hub.py [--students 3] [--lessons 00,01,02,03,04,05,06,07]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import hub_class  # noqa: E402  (the class set-up lives with the tests)

from iolab import workspace  # noqa: E402
from iolab.units import format_size  # noqa: E402

NOTEBOOKS = {p.name[:2]: f"notebooks/{p.name}" for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))}


def _rss(uid: int) -> int:
    total = 0
    for pid in hub_class._pids():
        if hub_class._uid_of(pid) != uid:
            continue
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class Peaks:
    """The most each student had in their scratch directory, and in resident memory, while it ran."""

    def __init__(self, students: list[hub_class.Student], interval: float = 0.5):
        self.students, self.interval = students, interval
        self.scratch = {s.name: 0 for s in students}
        self.memory = {s.name: 0 for s in students}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for s in self.students:
                self.scratch[s.name] = max(self.scratch[s.name], workspace.disk_usage(s.workdir) if s.workdir.exists() else 0)
                self.memory[s.name] = max(self.memory[s.name], _rss(s.uid))
            self._stop.wait(self.interval)

    def __enter__(self) -> "Peaks":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run(students: list[hub_class.Student], path: str) -> tuple[list[float], Peaks, list[str]]:
    with Peaks(students) as peaks:
        runs = hub_class.together(lambda s: s.run_notebook(path, timeout=600), students)
    return [r.seconds for r in runs], peaks, [r.failure() for r in runs if not r.ok]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=3)
    ap.add_argument("--lessons", default="00,01,02,03,04,05,06,07")
    args = ap.parse_args(argv)
    why = hub_class.why_not()
    if why:
        print(f"cannot set up a class here: {why}")
        return 1
    lessons = [NOTEBOOKS[k] for k in args.lessons.split(",")]
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start; "
          f"{args.students} students; lessons {', '.join(Path(p).stem for p in lessons)}")
    t0 = time.monotonic()
    env = hub_class.class_env()
    if env.built_seconds is not None:
        print(f"class environment built in {env.built_seconds:.0f} s (venv + pip install -e '.[{hub_class.EXTRAS}]')")
    else:
        print(f"class environment cached ({(env.root / 'ready').read_text().strip()}); course files copied in "
              f"{env.synced_seconds:.1f} s (checked in {time.monotonic() - t0:.1f} s)")
    with hub_class.HubClass(students=args.students, instructor=False, env=env) as hub:
        print(f"hub started in {hub.hub_start_seconds:.1f} s (JupyterHub + configurable-http-proxy, answering "
              "its REST API)")
        hub_class.together(lambda s: s.login(), hub.students)
        spawns = hub_class.together(lambda s: s.spawn(), hub.students)
        print(f"spawn, all {args.students} at once (REST call to 'ready'): "
              + ", ".join(f"{s:.1f} s" for s in spawns))
        alone_spawn = []
        for s in hub.students[:1]:
            s.stop_server()
            alone_spawn.append(s.spawn())
        print(f"spawn, one student alone: {alone_spawn[0]:.1f} s")
        print()
        print(f"{'lesson':28s} {'alone':>8s} {'N at once: median':>18s} {'max':>7s} {'slower':>7s} "
              f"{'scratch/student':>16s} {'memory/student':>15s}")
        failures = []
        for path in lessons:
            alone, peak1, bad1 = run(hub.students[:1], path)
            together, peakn, badn = run(hub.students, path)
            failures += bad1 + badn
            med = statistics.median(together)
            print(f"{Path(path).stem:28s} {alone[0]:7.1f}s {med:17.1f}s {max(together):6.1f}s "
                  f"{med / alone[0]:6.1f}x {format_size(max(peakn.scratch.values())):>16s} "
                  f"{format_size(max(peakn.memory.values())):>15s}", flush=True)
        for f in failures:
            print("FAILED:", f[:2000])
        for s in hub.students:
            s.stop_server()
        left = hub.leftovers()
    print(f"\nleft behind once the servers stopped: {left}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end; {time.monotonic() - t0:.0f} s in all")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
