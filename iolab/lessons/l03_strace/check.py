"""Lesson 03 (strace: the system calls): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

from . import syscalls
from ...check import fail, passed, whole
from ...tools import strace
from .syscalls import expected_reads


def check_03_predict(answer: object, file_size: int, read_size: int) -> bool:
    """Exercise 03.1: read(2) calls to read a file of file_size bytes, read_size per f.read, unbuffered."""
    a = whole(answer, "the number of read(2) calls")
    want = expected_reads(file_size, read_size)
    if a == want - 1:
        fail("one short: the program only learns it reached the end of the file when a read(2) returns 0 "
             "bytes, and that call counts too.")
    if a == file_size // read_size + 1 and a != want:
        fail("the last read(2) that returns data may be a short one: round the division up, not down.")
    if a != want:
        fail(f"each read(2) returns at most {read_size:,} bytes of the {file_size:,}; count the calls that "
             "return data, then the one that returns nothing.")
    return passed(f"{want:,} = ceil({file_size:,} / {read_size:,}) + 1 calls.")


def check_03_buffered(answer: object, path, read_size: int = 1) -> bool:
    """Exercise 03.2: read(2) calls on path when Python's buffered reader reads it read_size bytes at a time."""
    import os

    a = whole(answer, "the number of read(2) calls")
    size = os.path.getsize(path)
    measured = syscalls.count_reads(path, read_size, buffered=True,
                                    recording=f"strace/buffered-read-{read_size}" if size == 100_000 else None)
    if a == syscalls.expected_reads(size, read_size):
        fail("that is the unbuffered count. open(path, 'rb') wraps the file in a BufferedReader: how many "
             "bytes does it ask the kernel for at a time? (os.stat(path).st_blksize)")
    if a != measured:
        fail(f"measure it: iolab.lessons.l03_strace.syscalls.count_reads(path, {read_size}, buffered=True).")
    blk = os.stat(path).st_blksize
    passed(f"{measured:,} read(2) calls for {size:,} f.read({read_size}) calls: the layer that answered the "
           "others was Python's buffer, not the kernel.")
    syscalls.buffered_claims({read_size: measured}, size, blk, replayed=strace.version() is None)
    return True


def check_03_storm(frame, syscall: object, failed: object) -> bool:
    """Exercise 03.3: from a strace -c frame, the most-called syscall and how many of its calls failed."""
    if not {"syscall", "calls", "errors"} <= set(getattr(frame, "columns", [])):
        fail("give the table of iolab.lessons.l03_strace.syscalls.count(...): its .frame.")
    top = frame.sort_values("calls", ascending=False).iloc[0]
    if not isinstance(syscall, str) or syscall != top["syscall"]:
        fail("sort the rows by the calls column (frame.sort_values('calls')) and take the largest.")
    f = whole(failed, "the number of failed calls")
    if f != int(top["errors"]):
        fail(f"the errors column of the {top['syscall']} row counts the calls that returned an error "
             "(mostly ENOENT: a file that was not there).")
    return passed(f"{int(top['calls']):,} {top['syscall']} calls, {f:,} of them failed. On a parallel filesystem "
                  "every one of them is a request to a metadata server, successful or not.")
