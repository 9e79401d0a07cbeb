"""The ``iolab`` command: ``iolab doctor`` and ``iolab clean``."""
from __future__ import annotations

import argparse
import shutil
import sys


def doctor(args: argparse.Namespace) -> int:
    from . import doctor as d

    items = d.checks()
    print(d.table(items))
    return 0


def clean(args: argparse.Namespace) -> int:
    """Remove this user's leftover workspaces (e.g. after a killed kernel)."""
    from .workspace import base_dir

    base = base_dir()
    removed = 0
    for p in sorted(base.iterdir()):
        if p.is_dir() and (p.name.startswith(("ws-", "session-"))):
            shutil.rmtree(p, ignore_errors=True)
            removed += 1
    print(f"removed {removed} workspace(s) under {base}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="iolab", description="helpers of the iolab course")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="what this machine offers the course").set_defaults(func=doctor)
    sub.add_parser("clean", help="remove your leftover workspaces").set_defaults(func=clean)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
