"""Which filesystem serves a path, read from /proc/self/mountinfo (no tools, no root)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import ParseError

MOUNTINFO = "/proc/self/mountinfo"

# filesystems whose files live in memory: nothing to evict, no device below
MEMORY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs", "shm"})

# what each family of filesystem is, in the course's words
KINDS = {
    "ext4": "local disk", "xfs": "local disk", "btrfs": "local disk", "ext3": "local disk",
    "tmpfs": "memory (tmpfs)", "ramfs": "memory",
    "overlay": "container overlay",
    "nfs": "network (NFS)", "nfs4": "network (NFS)",
    "lustre": "parallel (Lustre)", "beegfs": "parallel (BeeGFS)", "gpfs": "parallel (GPFS)",
    "ceph": "parallel (CephFS)", "fuse.ceph-fuse": "parallel (CephFS, FUSE)", "fuse.ceph": "parallel (CephFS, FUSE)",
    "fuse.s3fs": "object storage (s3fs-fuse)", "fuse.gcsfuse": "object storage (gcsfuse)",
    "fuse.rclone": "object storage (rclone)", "fuse": "FUSE",
}


@dataclass(frozen=True)
class Mount:
    mountpoint: str
    fstype: str
    source: str
    options: str

    @property
    def parallel(self) -> bool:
        """A parallel file system (Lustre, CephFS through the kernel or FUSE, GPFS, BeeGFS): its data
        on storage servers, its metadata on metadata servers, shared by every node."""
        return self.kind.startswith("parallel")

    @property
    def kind(self) -> str:
        if self.fstype in KINDS:
            return KINDS[self.fstype]
        if self.fstype.startswith("fuse"):
            return "FUSE"
        return "other"


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo (three octal digits)
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) + 0 and all(c in "01234567" for c in field[i + 1:i + 4]):
            out.append(chr(int(field[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


_IDS = re.compile(r"[0-9]+ [0-9]+ [0-9]+:[0-9]+ ")


def mounts(text: str | None = None) -> list[Mount]:
    """All mounts of this process's mount namespace, in mountinfo order.

    Each line is ``ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE
    SUPEROPTIONS`` (proc(5)). A line of another shape raises ParseError naming it, and so does a text
    that ends inside a line: the kernel ends every line with a newline, and a mount cut short would
    have a wrong mount point, source or options."""
    if text is None:
        with open(MOUNTINFO) as f:
            text = f.read()
    result = []
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        left, sep, right = line.partition(" - ")
        lf, rf = left.split(), right.split()
        if not sep or len(lf) < 6 or not 2 <= len(rf) <= 3 or not _IDS.match(line):
            raise ParseError("expected a mountinfo line: ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS ... - "
                             "FSTYPE SOURCE SUPEROPTIONS", line_no=no, line=line)
        if no == len(lines) and not text.endswith("\n"):
            raise ParseError("mountinfo text ends inside this line (no newline after it): cut short",
                             line_no=no, line=line)
        result.append(Mount(mountpoint=_unescape(lf[4]), fstype=rf[0], source=_unescape(rf[1]),
                            options=",".join(dict.fromkeys(lf[5].split(",") + (rf[2].split(",") if len(rf) > 2 else [])))))
    return result


def mount_of(path: str | os.PathLike[str], text: str | None = None) -> Mount:
    """The mount that serves path (the longest mount point that contains it; the last one wins)."""
    p = Path(path)
    try:
        p = p.resolve()
    except OSError:
        p = p.absolute()
    best: Mount | None = None
    for m in mounts(text):
        mp = m.mountpoint.rstrip("/") or "/"
        if str(p) == mp or str(p).startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) >= len(best.mountpoint.rstrip("/") or "/"):
                best = m
    if best is None:
        raise FileNotFoundError(f"no mount found for {path}")
    return best


def fstype(path: str | os.PathLike[str]) -> str:
    return mount_of(path).fstype
