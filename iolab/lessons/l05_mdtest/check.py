"""Lesson 05 (mdtest: metadata): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import math
from ...check import close_to, close_to_fraction, fail, passed
from ...tools import mdtest


# seed 001 (ORFEO handout): `salloc -n4 -N1`, then `srun mdtest -d <filesystem> -n 10 -i 200 -y`
SEED_001_MDTEST = {"tasks": 4, "files": 10, "iterations": 200}


def check_05_seed_mdtest(opts: object, creations: object, fsyncs: object) -> bool:
    """Exercise 05.1: mdtest.Options for the seed's command, how many files it creates in all, and
    how many fsync calls it makes (mdtest 3.3/4.0: -y syncs only files written with -w)."""

    if not isinstance(opts, mdtest.Options):
        fail(f"build an iolab.tools.mdtest.Options(...), got {type(opts).__name__}.")
    wrong = []
    if opts.files != SEED_001_MDTEST["files"]:
        wrong.append("-n 10 is files=10")
    if opts.iterations != SEED_001_MDTEST["iterations"]:
        wrong.append("-i 200 is iterations=200")
    if not opts.sync:
        wrong.append("-y is sync=True")
    if opts.write_bytes:
        wrong.append("the seed's command has no -w: leave write_bytes out")
    if wrong:
        fail("; ".join(wrong) + ".")
    per_iteration = SEED_001_MDTEST["tasks"] * SEED_001_MDTEST["files"]
    expected = per_iteration * SEED_001_MDTEST["iterations"]
    if creations == SEED_001_MDTEST["files"] * SEED_001_MDTEST["iterations"]:
        fail("-n is per task: every one of the 4 tasks creates 10 files in each iteration.")
    if creations != expected:
        fail("files per task (-n) x tasks (salloc -n4) x iterations (-i).")
    syncs = mdtest.expected_fsyncs(opts, SEED_001_MDTEST["tasks"])
    if fsyncs != syncs:
        if fsyncs == expected:
            fail("one fsync per file is what -y promises, not what mdtest does: it syncs a file only after "
                 "writing -w bytes into it, and this command writes none. Lesson 05 section 1 counts them "
                 "with strace.")
        fail("count the fsync calls: lesson 05 section 1 (strace -f -c), or mdtest.expected_fsyncs(opts, tasks).")
    return passed(f"{per_iteration} files per iteration, {expected:,} file creations in all (and as many stats, "
                  f"reads and removals), and {syncs} fsync calls: the seed's -y asks for nothing without -w.")


def _mean_rate(rows, operation: str) -> float:
    import pandas as pd

    df = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    part = df[(df["operation"] == operation) & (df["unit"] == "ops/s")]
    if not len(part):
        fail(f"no {operation!r} rate in what you passed: give mdtest.parse(...) rows or a mdtest frame.")
    return float(part["mean"].iloc[0])


def check_05_fsync_ratio(tmp_rows, shm_rows, answer: object) -> bool:
    """Exercise 05.2: mean file-creation rate on /dev/shm divided by the one on /tmp, for the runs
    that write 4 KiB into each file and fsync it (-w 4096 -y)."""
    shm, tmp = _mean_rate(shm_rows, "file creation"), _mean_rate(tmp_rows, "file creation")
    expected = shm / tmp
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0 and \
            math.isclose(answer, 1 / expected, rel_tol=0.02):
        fail("upside down: divide the /dev/shm rate by the /tmp rate.")
    close_to(answer, expected, rel=0.02, what="the ratio")
    return passed(f"with 4 KiB and an fsync per file, creation ran {expected:,.1f}x as fast in memory as on /tmp: "
                  "a disk-backed filesystem's fsync waits for its device, tmpfs has no device to wait for.")


def check_05_fsync_share(calls, answer: object) -> bool:
    """Exercise 05.3: the share (0..1) of the time spent in the syscalls of one file that fsync took."""
    total = float(calls["duration"].sum())
    fsync = float(calls.loc[calls["syscall"] == "fsync", "duration"].sum())
    if total <= 0:
        fail("these calls have no durations: use metadata_strace.trace_one_file(...).frame (a trace taken with -T).")
    expected = fsync / total
    close_to_fraction(answer, expected, rel=0.02, what="the fsync share")
    return passed(f"fsync took {expected:.0%} of the time this file cost in system calls.")


def check_05_removal_ratio(calls, answer: object) -> bool:
    """Exercise 05.4: median rmdir of a directory over median unlink of a file, in a
    metadata_strace.removal_calls(...) trace."""
    def med(syscall: str, item: str) -> float:
        d = calls.loc[(calls["syscall"] == syscall) & (calls["item"] == item), "duration"]
        if not len(d):
            fail(f"no {syscall} of a {item} in these calls: use metadata_strace.measure_removals(...).frame.")
        return float(d.median())

    rmdir, unlink = med("rmdir", "directory"), med("unlink", "file")
    expected = rmdir / unlink
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0 and \
            math.isclose(answer, 1 / expected, rel_tol=0.02):
        fail("upside down: divide the rmdir median by the unlink median.")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        means = calls.groupby(["syscall", "item"])["duration"].mean()
        if math.isclose(answer, means[("rmdir", "directory")] / means[("unlink", "file")], rel_tol=0.02) and \
                not math.isclose(answer, expected, rel_tol=0.02):
            fail("use the medians: a few calls that waited for another job (or the device) pull a mean far up.")
    close_to(answer, expected, rel=0.02, what="the ratio")
    return passed(f"a median rmdir took {expected:,.1f}x a median unlink: compare it with the filesystem's facts "
                  "(metadata.facts): does freeing a block cost a discard inside the call there?")
