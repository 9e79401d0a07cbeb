"""Lesson 02 (readahead): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

from . import readahead as lab
from ... import fsinfo, readahead_probes
from ...check import fail, passed


def check_02_random_window(path, answer: int) -> bool:
    """Exercise 02.1: pages resident after reading 1 byte at offset 0 with POSIX_FADV_RANDOM."""
    if isinstance(answer, bool) or not isinstance(answer, int):
        fail(f"give a number of pages (an int), got {answer!r}: the .resident of what window() returned.")
    r = readahead_probes.window(path, 1, "random", strict=False)
    if answer != r.resident:
        fail(f"{answer} is not what the kernel does here: evict, then read 1 byte with advice='random' "
             "(iolab.readahead_probes.window(path, 1, 'random')), and count the resident pages.")
    passed(f"{r.resident:,} page(s) resident after reading 1 byte with RANDOM advice.")
    lab.window_claims({"random": r}, readahead_probes.read_ahead_kb(path).kb)
    return True


def check_02_calls(frame, answer: int) -> bool:
    """Exercise 02.2: read() calls to read the sweep's file 1 byte at a time (the EOF call included)."""
    if "read_size" not in getattr(frame, "columns", []):
        fail("give the DataFrame that iolab.readahead_probes.read_size_sweep(...) returned.")
    one = frame[frame["read_size"] == 1]
    if one.empty:
        fail("your sweep has no 1-byte pass: include 1 in the sizes.")
    size = int(one["file_size"].iloc[0])
    if isinstance(answer, bool) or not isinstance(answer, int):
        fail(f"give a count (an int), got {answer!r}.")
    if answer == size:
        fail("one call per byte, and then one more: the read() that returns 0 bytes is how the program "
             "learns it reached the end of the file.")
    if answer != size + 1 or int(one["calls"].iloc[0]) != answer:
        fail(f"the file has {size:,} bytes and each call returns at most read_size bytes.")
    return passed(f"{answer:,} system calls for {size:,} bytes, {float(one['us_per_call'].iloc[0]):.2f} µs each in "
                  "this pass: a cost paid per call, not per byte.")


def check_02_growth(frame, answer: int, path=None) -> bool:
    """Exercise 02.3: pages resident after the last read of a readahead_probes.window_growth run (normal advice)."""
    need = {"read", "pages_read", "resident", "advice"}
    if not need <= set(getattr(frame, "columns", [])):
        fail("give the DataFrame that iolab.readahead_probes.window_growth(...) returned.")
    if set(frame["advice"]) != {"normal"}:
        fail("run window_growth with the default advice ('normal') for this one.")
    last = frame.iloc[-1]
    if answer != int(last["resident"]):
        fail("read the resident column of the last row.")
    from pathlib import Path

    passed(f"{answer:,} pages resident after asking for {int(last['pages_read']):,}. What that shows:")
    lab.growth_claims(frame, fstype=fsinfo.fstype(Path(path)) if path is not None else "")
    return True


def check_02_read_ahead_kb(path, answer) -> bool:
    """Exercise 02.4: read_ahead_kb of the device behind ``path`` (None when there is none)."""
    actual = readahead_probes.read_ahead_kb(path)
    if answer != actual.kb:
        fail(f"ask iolab.readahead_probes.read_ahead_kb({str(path)!r}) and give its .kb (or look in "
             "/sys/class/bdi/MAJOR:MINOR/read_ahead_kb for the device of the file, see os.stat().st_dev).")
    passed(f"{actual}")
    lab.read_ahead_kb_claim(actual)
    return True
