"""Re-make lesson 02's readahead trace, as root with bpftrace and tracefs:
``.venv/bin/python -m recorders.l02_bpftrace FILE`` (FILE: a file of 64 MiB or so on the disk to trace).
"""
from __future__ import annotations

import argparse

from iolab.lessons.l02_readahead import readahead


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m recorders.l02_bpftrace")
    p.add_argument("file", help="the file to read sequentially while bpftrace traces readahead")
    p.add_argument("--read-size", default="4KiB", help="the size of each read() (default 4KiB)")
    args = p.parse_args(argv)
    print("saved", readahead.record_growth(args.file, read_size=args.read_size))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
