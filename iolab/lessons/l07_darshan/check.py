"""Lesson 07 (Darshan and MPI-IO): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import math
from ...check import close_to_fraction, fail, given, passed, same_items, whole
from ...tools import darshan
from ..l03_strace.syscalls import expected_reads


def check_07_reads(answer: object, profile) -> bool:
    """Exercise 07.1: the read(2) calls Darshan counted on the data file of a read-loop profile
    (``iolab.lessons.l07_darshan.profile.profile_read_loop``): POSIX_READS of that file."""

    given(profile, "profile", "profile = lab.profile_read_loop(data, 65536, recording=\"readloop-64k-1mib\").")
    given(answer, "reads", "first predict it: ceil(file size / read size), plus the read that returns 0 "
                           "bytes; then read POSIX_READS of the data file from profile.log.")
    target, n, size = profile.target, profile.read_size, profile.file_size
    measured = darshan.counter(profile.log, "POSIX_READS", file=target)
    a = whole(answer, "the number of reads")
    if a == expected_reads(size, n) - 1 and a != measured:
        fail("count the read that returns 0 bytes too: it is how the loop learns that the file has ended.")
    if a != measured:
        fail("read it from the log: darshan.counter(profile.log, 'POSIX_READS', file=profile.target).")
    return passed(f"{measured:,} reads: ceil({size:,} / {n:,}) + 1. Darshan counted every call the loop made "
                  "through the C library, as strace would, without stopping the process once.")


def check_07_share(answer: object, profile) -> bool:
    """Exercise 07.2: the fraction (0..1) of all the bytes the process read (POSIX module, every file)
    that came from the data file."""

    given(profile, "profile", "run task 1 first: the share is read from its profile's log.")
    given(answer, "share", "darshan.files(profile.log, [\"POSIX\"]) lists every file with its bytes_read: "
                           "the data file's bytes divided by the sum over all files.")
    f = darshan.files(profile.log, ["POSIX"])
    total = float(f["bytes_read"].fillna(0).sum())
    data = float(f.loc[f["file"] == profile.target, "bytes_read"].fillna(0).sum())
    if total <= 0:
        fail("this log has no POSIX reads: profile the read loop first.")
    expected = data / total
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and total > data > 0 and \
            math.isclose(answer, data / (total - data), rel_tol=0.01):
        fail("the share divides by the bytes of every file, the data file's own included; you divided by the "
             "other files' bytes alone.")
    close_to_fraction(answer, expected, rel=0.01, what="the share",
                      ratio="the data file's bytes_read / the sum of bytes_read over every file")
    return passed(f"{expected:.0%} of the bytes came from the data file; the rest were the interpreter's own "
                  "files (modules, .pth files, the script): what a job's start-up costs a shared file system.")


def check_07_collective(answer: object, table) -> bool:
    """Exercise 07.3: from ``iolab.lessons.l07_darshan.mpiio.collective``'s frame, the bytes one POSIX write carried
    in the "collective" case, and how many aggregators wrote (writes per segment)."""
    given(table, "writes", "writes = mpiio.collective(): its frame's \"collective\" row has posix_writes and posix_bytes.")
    if isinstance(answer, dict) and any(v is Ellipsis for v in answer.values()):
        fail("fill in both values of the dict: bytes_per_write is the collective row's posix_bytes / "
             "posix_writes; aggregators is its posix_writes / writes.segments.")
    row = table.frame.set_index("case").loc["collective"]
    expected = {"bytes_per_write": int(round(row["bytes_per_write"])),
                "aggregators": int(round(row["posix_writes"] / table.segments))}
    if not isinstance(answer, dict):
        fail("answer with a dict: {'bytes_per_write': ..., 'aggregators': ...}.")
    same_items(answer, expected, what="the keys of your answer")
    got = whole(answer["bytes_per_write"], "bytes_per_write")
    if got != expected["bytes_per_write"]:
        for counter in ("posix_bytes", "posix_writes"):      # a counter read off instead of computed (issue 32)
            if got == int(round(row[counter])):
                fail(f"that is {counter}, the counter itself: bytes_per_write is computed from two counters, "
                     "the collective row's posix_bytes / posix_writes.")
        fail("divide the collective row's posix_bytes by its posix_writes.")
    if whole(answer["aggregators"], "aggregators") != expected["aggregators"]:
        fail(f"each collective call covers one segment; the run has {table.segments} segments. How many "
             "writes did each segment take?")
    t = table.transfer
    return passed(f"{expected['aggregators']} aggregator(s), each write {expected['bytes_per_write']:,} bytes = "
                  f"{expected['bytes_per_write'] // t} ranks' {t:,}-byte pieces gathered into one.")
