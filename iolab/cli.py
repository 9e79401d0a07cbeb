"""The ``iolab`` command: ``iolab doctor`` and ``iolab clean``."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from . import doctor as d
from .doctor import candidate_dirs
from .guard import remove_tree
from .workspace import PREFIXES, SCRATCH_PREFIXES, base_dir, ours, reap_orphans


def doctor(args: argparse.Namespace) -> int:
    items = d.checks()
    print(d.table(items))
    return 0


def clean(args: argparse.Namespace) -> int:
    """Remove this user's leftover workspaces: those of dead processes, or with --all every one.

    Besides the workspace directory, the places lessons measure directly (/tmp, /dev/shm, $HOME,
    $SCRATCH, $TMPDIR) are searched for the hidden workspaces mdtest runs in.
    """
    base = base_dir()
    places = [(base, PREFIXES)]
    places += [(Path(p), SCRATCH_PREFIXES) for label, p in candidate_dirs().items() if label != "workspace"]
    gone: list[Path] = []
    for place, prefixes in dict.fromkeys(places):
        if args.all:
            for p in ours(place, prefixes):
                p = Path(os.path.realpath(p.parent)) / p.name     # $HOME may be a symlink: not a swap
                left = remove_tree(p)       # mounts inside are ended first, never emptied through
                for m in left:
                    print(f"left {m} in place: it is still a mount point (fusermount -u -z {m})")
                if not os.path.lexists(p):
                    gone.append(p)
        else:
            gone += reap_orphans(place, prefixes)
    for p in gone:
        print(f"removed {p}")
    print(f"removed {len(gone)} workspace(s) of {'every' if args.all else 'finished'} session(s)")
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
