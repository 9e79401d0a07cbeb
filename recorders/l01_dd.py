"""Re-make the dd recordings of lessons 01 and 02 on this machine: `.venv/bin/python -m recorders.l01_dd`
(`--only writes` or `--only reads` for one of the two sets).

With iolab.recordings.save (dd's summary from stderr + .meta.json, with the kernel's witness), on /tmp
(a disk) and on /dev/shm (tmpfs, memory), each in a private workspace that is removed afterwards:

* write-64m-<fs>-buffered-t<k> / write-64m-<fs>-dsync-t<k>: seed 002's write test, `dd if=/dev/zero
  of=F bs=1M count=64 [oflag=dsync]` (64 MiB instead of the seed's 1 GiB), plain and oflag=dsync in
  turn (iolab.lessons.l01_page_cache.writes.dd_trials): t0 the warm-up run of each (not counted), t1..t5 the
  trials; a run the witness found disturbed was run again, and only the run that replaced it is kept.
  Lesson 01's write-back section.
* read-1mib-bs1-<fs>: `dd if=F of=/dev/null bs=1` of a cached 1 MiB file, one read(2) and one
  write(2) per byte; lesson 02 compares it with Python's cost per f.read(1).

Never edit the recorded text; run this again instead.
"""
from __future__ import annotations

import argparse
import os

from iolab import recordings, workspace
from iolab.lessons.l01_page_cache import writes as page_cache_writes
from iolab.tools import dd

HOST = os.environ.get("IOLAB_HOST_DESCRIPTION", "2-core AMD EPYC VM (shared), 24 GiB, virtio disk, Debian 12")
PLACES = {"tmp": "/tmp", "shm": "/dev/shm"}
REPEAT = 5


def writes(name: str, base: str, ws: workspace.Workspace) -> None:
    """Lesson 01's dd trials on ``base``: every counted run and warm-up, in the order they ran."""
    out = page_cache_writes.dd_trials(ws, count=64, repeat=REPEAT, warmup=1, quiet=True)
    if out.mode != "live":
        raise SystemExit(f"dd did not run live here ({out.provenance}): nothing to record")
    load = os.getloadavg()[0]
    for (_, row), run in zip(out.trials.frame.iterrows(), out.parts):
        if not (row["kept"] or row["warmup"]):
            continue            # a disturbed run that was run again
        kind = page_cache_writes.DD_SETTINGS[row["setting"]]
        what = ("oflag=dsync: every write waits for the device" if kind == "dsync" else
                "no flag: writes land in the page cache")
        which = "the warm-up run (not counted)" if row["warmup"] else f"trial {row['trial']} of {REPEAT}"
        p = recordings.save(run.run, f"dd/write-64m-{name}-{kind}-t{row['trial']}", stream="stderr",
                            fs_path=ws.root, host_description=HOST, witness=run.witness,
                            notes=f"Seed 002's write test with 64 MiB, {what}, on {base}: {which}, plain and "
                                  f"oflag=dsync in turn after one warm-up run of each (run {row['position']} of "
                                  f"the set; load average {load:.1f} before the set), LC_ALL=C.")
        print(p, f"{row['value']:,.1f} MB/s", "(disturbed)" if row["disturbed"] else "")
    print(out.trials)


def reads(name: str, base: str, ws: workspace.Workspace) -> None:
    f = ws.make_file("sweep.bin", "1MiB")
    with open(f, "rb") as fh:       # cached: the lesson's warm pass
        fh.read()
    r = dd.run(f, "/dev/null", bs=1, timeout=300)
    p = recordings.save(r, f"dd/read-1mib-bs1-{name}", stream="stderr", fs_path=ws.root,
                        host_description=HOST,
                        notes=f"A cached 1 MiB file on {base} read by dd with bs=1: one read(2) and one "
                              "write(2) to /dev/null per byte, LC_ALL=C.")
    rec = dd.parse(r.stderr)
    print(p, rec["seconds"] / rec["records_in"] * 1e6, "µs per record")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("writes", "reads"), help="re-make one of the two sets")
    args = ap.parse_args()
    for name, base in PLACES.items():
        with workspace.Workspace(budget="256MiB", base=base) as ws:
            if args.only in (None, "writes"):
                writes(name, base, ws)
            if args.only in (None, "reads"):
                reads(name, base, ws)


if __name__ == "__main__":
    main()
