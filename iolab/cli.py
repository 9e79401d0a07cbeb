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
    """Remove this user's leftover workspaces: those of dead processes, or with --all every one."""
    from .workspace import PREFIXES, base_dir, reap_orphans

    base = base_dir()
    if args.all:
        gone = [p for p in sorted(base.iterdir()) if p.is_dir() and p.name.startswith(PREFIXES)]
        for p in gone:
            shutil.rmtree(p, ignore_errors=True)
    else:
        gone = reap_orphans(base)
    print(f"removed {len(gone)} workspace(s) under {base}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="iolab", description="helpers of the iolab course")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="what this machine offers the course").set_defaults(func=doctor)
    p = sub.add_parser("clean", help="remove workspaces left by killed kernels")
    p.add_argument("--all", action="store_true", help="remove every workspace of yours, also of running kernels")
    p.set_defaults(func=clean)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
