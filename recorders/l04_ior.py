"""Re-make lesson 04's IOR recordings: ``.venv/bin/python -m recorders.l04_ior --dir /tmp --label ext4``.

Runs the lesson's IOR sequence (iolab.lessons.l04_ior.pitfalls.record) with the ior on PATH (3.3.0 or 4.0.0)
in a workspace under --dir, whose filesystem is what is measured, and saves each run with its witness.
``--only evict`` re-makes section 8's trials alone (``lesson-<label>-<version>-evict-t<i>-{write,cached,read}``).
"""
from __future__ import annotations

import argparse

from iolab.lessons.l04_ior import pitfalls as ior_pitfalls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m recorders.l04_ior")
    ap.add_argument("--dir", required=True, help="where the test files go (its filesystem is what is measured)")
    ap.add_argument("--label", required=True, help="the filesystem's name in the recordings (ext4, tmpfs)")
    ap.add_argument("--host", default=None, help="a description of this machine for the .meta.json")
    ap.add_argument("--only", default=None, help="one run of the sequence (shared, fpp, ... odirect) or 'evict' "
                                                 "(section 8's trials: write, cached read, read after eviction)")
    a = ap.parse_args(argv)
    for ref in ior_pitfalls.record(a.dir, a.label, host=a.host, only=a.only):
        print("saved", ref)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
