"""Re-make lesson 07's Darshan recordings: ``.venv/bin/python -m recorders.l07_darshan --dir /tmp --label ext4``.

Needs the Darshan runtime (DARSHAN_RUNTIME, the release matching PyDarshan), strace, IOR and mpirun;
runs iolab.lessons.l07_darshan.profile.record (sections 1-2) and iolab.lessons.l07_darshan.mpiio.record (sections 3-4) in
workspaces under --dir, whose filesystem is the setup.
"""
from __future__ import annotations

import argparse

from iolab.lessons.l07_darshan import profile as darshan, mpiio as darshan_mpiio


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m recorders.l07_darshan")
    p.add_argument("--dir", required=True, help="where the workspace goes (its filesystem is the setup)")
    p.add_argument("--label", required=True, help="the setup's name in the recordings (ext4, tmpfs)")
    args = p.parse_args(argv)
    for name in darshan.record(args.dir, args.label) + darshan_mpiio.record(args.dir, args.label):
        print("recorded", name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
