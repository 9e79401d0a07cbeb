"""Lesson 01 (the page cache): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import os
from . import reads as page_cache
from ... import measure, pagecache, trials as trials_mod, witness
from ...check import close_to, fail, given, judged_from, passed
from ...recordings import published
from ...units import KiB, MiB, format_size


def check_01_evicted(path) -> bool:
    """Exercise 01.1: the file at ``path`` has no page in the page cache now."""
    r = pagecache.residency(path)
    if not r.reliable:
        fail(f"the kernel will not tell you the residency of {path}: {r.note}.")
    if r.resident:
        fail(f"{r.resident:,} of {r.pages:,} pages of the file are still resident. Evict it with "
             "iolab.pagecache.evict(path) (no root needed) and do not read it afterwards.")
    return passed(f"0 of {r.pages:,} pages resident: the next read of this file has to go to the device.")


def check_01_cold_warm(cold, warm, answer: float) -> bool:
    """Exercise 01.2: a cold and a warm measure.timed_read of the same file, and warm/cold throughput."""
    for name, m in (("cold", cold), ("warm", warm)):
        if not isinstance(m, measure.Measurement) or m.op != "read":
            fail(f"{name} should be what iolab.measure.timed_read(...) returned, got {type(m).__name__}.")
    if cold.path != warm.path:
        fail("measure the same file twice: cold and warm have different paths.")
    if not cold.before.reliable or cold.before.resident:
        fail("the cold read was not cold: the file had pages in the page cache before it. "
             "Use timed_read(path, cache='cold').")
    if not warm.before.reliable or warm.before.fraction < 0.99:
        fail("the warm read was not warm: not the whole file was resident before it. Read it right after "
             "the cold read, or use cache='warm'.")
    close_to(answer, warm.bytes_per_s / cold.bytes_per_s, rel=0.01, what="warm / cold throughput",
             ratio="warm.bytes_per_s / cold.bytes_per_s")

    passed(f"warm / cold throughput = {answer:.2f}. Verdicts: cold = {cold.verdict.label!r}, "
           f"warm = {warm.verdict.label!r}. What your two reads showed (one read of each is one trial: the "
           "lesson's rule compares rates only over 3 trials or more of each, lab.cold_warm_trials):")
    reads = trials_mod.from_results({"cold": [cold], "warm": [warm]}, metric=trials_mod.mib_per_s, higher=True,
                                    unit="MiB/s")
    # the device's uncached reads behind the file, as measure.device_rate(...) took them (memoized)
    device = (measure.device_rates(os.path.dirname(cold.path)) if (cold.device_bps or warm.device_bps) else None)
    page_cache.cold_warm_claims(reads, device)
    return True


def _seed004_cat() -> dict[str, tuple[int, float, float]]:
    """Seed 004 (HTCF storage training, Sept. 2023), data/published/seed004-cold-warm-cat.csv: per
    filesystem the `ls -l` total in KiB, and `time cat *` after drop_caches (cold) and at once (warm)."""

    pub = published("seed004-cold-warm-cat")
    out = {}
    for name, fs in (("local", "local disk"), ("beegfs", "BeeGFS")):
        part = pub[pub["filesystem"] == fs]
        cold = float(part[part["state"].str.startswith("cold")]["seconds"].iloc[0])
        warm = float(part[part["state"].str.startswith("warm")]["seconds"].iloc[0])
        out[name] = (int(part["ls_total_kib"].iloc[0]), cold, warm)
    return out


def check_01_seed_verdicts(local, beegfs) -> bool:
    """Exercise 01.3: measure.judge of seed 004's second `cat` against its first, on /tmp and on BeeGFS."""
    for name, v in (("local", local), ("beegfs", beegfs)):
        if not isinstance(v, measure.Verdict):
            fail(f"{name} should be the Verdict that iolab.measure.judge(...) returned, got {type(v).__name__}.")
    seed = _seed004_cat()
    for name, v, how in (("local", local, "judge the second cat's rate (bytes / {warm} s) with device_bps = the first "
                                          "cat's rate (bytes / {cold} s), the read that followed drop_caches"),
                         ("beegfs", beegfs, "the same computation with {cold} s (first cat) and {warm:.3f} s (second "
                                            "cat)")):
        kib, cold, warm = seed[name]
        n = kib * KiB
        what = how.format(cold=cold, warm=warm)
        # the numbers, not only the label (issue 32): the size from ls's KiB, the cats in their places
        judged_from(v, {"bytes_per_s": n / warm, "device_bps": n / cold}, what=name,
                    how={"bytes_per_s": what, "device_bps": what}, wrong={
                        "bytes_per_s": [(kib / warm, "that is KiB/s: ls -l's total is in KiB, x 1,024 for bytes"),
                                        (kib * 1000 / warm, "a factor of 1.024: ls -l's KiB are 1,024 bytes, not 1,000"),
                                        (n / cold, "that is the first cat's rate: the rate judged is the second's")],
                        "device_bps": [(kib / cold, "that is KiB/s: ls -l's total is in KiB, x 1,024 for bytes"),
                                       (kib * 1000 / cold, "a factor of 1.024: ls -l's KiB are 1,024 bytes, not 1,000"),
                                       (n / warm, "that is the second cat's rate: the device's is the first cat's, "
                                                  "after drop_caches")]})
        expected = measure.judge(n / warm, device_bps=n / cold)
        if v.label != expected.label:
            fail(f"{name}: {what}.")
    ratio = seed["local"][1] / seed["local"][2]
    ratio_b = seed["beegfs"][1] / seed["beegfs"][2]
    return passed(f"On /tmp the second cat ran {ratio:.1f}x faster than the first: {local.label!r}. "
                  f"On BeeGFS it ran {ratio_b:.2f}x faster: {beegfs.label!r}. A rate within noise of the "
                  "device's proves nothing by itself: nothing in these numbers shows that a cache served the "
                  "second BeeGFS read.")


WITNESSED_BYTES = 16 * MiB       # what exercise 01.4 writes


def check_01_witnessed_write(result, path, charged: int, reached_device: bool) -> bool:
    """Exercise 01.4: a write of 16 MiB without fsync inside ``witness.Witness``: the bytes charged to
    the process (``write_bytes``), and whether the data had reached the device when the block ended.
    ``result``: the ``Witness`` (``w``) or its ``w.result``.

    The evidence, strongest first (issue 32): the file's own pages where the kernel counts them
    (cachestat(2), Linux 6.5): pages still dirty or under write-back now were not on the device when the
    block ended, whatever the device's counters say (a neighbour's writes move them); then the device's
    counters, but only when they are not DISTURBED (someone else's traffic): a disturbed count is no
    evidence, except that a device which wrote less than the file cannot hold it. When nothing decides,
    the check says so and takes either answer."""

    given(result, "w", "write the 16 MiB inside `with witness.Witness(ws.root) as w:` (open target, 16 "
                       "f.write(os.urandom(units.MiB)), no fsync), then read w.result.")
    if isinstance(result, witness.Witness):
        result = result.result
    if not isinstance(result, witness.Witnessed):
        fail("result should be w.result, the Witnessed that `with witness.Witness(...) as w:` left behind.")
    if result.own_written is None:
        fail("this kernel has no task I/O accounting: there is no write_bytes to read here.")
    if result.own_written < 15 * MiB:
        fail(f"your process was charged only {format_size(result.own_written)} inside the with block: write "
             "the 16 MiB inside it (and do not truncate or delete the file before it ends).")
    if isinstance(charged, bool) or not isinstance(charged, int):
        fail(f"charged should be a number of bytes (an int), got {charged!r}: read it from w.result.")
    close_to(charged, result.own_written, rel=0.01, what="charged",
             wrong=((16 * 1024, "that is in KiB: write_bytes counts bytes"),
                    (16, "that is in MiB: write_bytes counts bytes")))
    if not isinstance(reached_device, bool):
        fail(f"reached_device should be True or False, got {reached_device!r}.")
    if result.device is None:
        if reached_device:
            fail("there is no block device behind your workspace (see the witness's notes): the data "
                 "cannot have reached one.")
        return passed(f"{format_size(charged)} charged, and no device at all below this workspace: "
                      "the witness says so in its notes.")
    try:
        state = witness.cachestat(path)
    except FileNotFoundError:
        fail(f"{path} is not there: pass target, the file you wrote (and do not delete it before the check).")
    pages = -(-WITNESSED_BYTES // 4096)
    held = None if state is None else state.dirty + state.writeback
    wrote = result.device_written or 0
    busy = bool(result.disturbed)
    device = (f"the device {result.device} wrote {format_size(wrote)} while the with block ran"
              + (f", DISTURBED: at least {format_size(result.others_written or 0)} of it not yours" if busy else ""))
    if held is not None and held >= 0.05 * pages:
        # the file's own pages: dirty (or under write-back) now, so not on the device when the block ended
        if reached_device:
            fail(f"cachestat counts {held:,} of the file's {pages:,} pages still dirty or under write-back: they "
                 f"had not reached the device. {device}" + (": someone else's writes, no evidence of yours."
                                                             if busy else "."))
        return passed(f"{format_size(charged)} charged to write_bytes the moment write() dirtied the pages, and "
                      f"cachestat counts {held:,} of the file's {pages:,} pages still dirty or under write-back: "
                      f"the data was still in memory ({device}). write_bytes is not proof that anything reached "
                      "the disk.")
    if wrote < 0.95 * WITNESSED_BYTES:
        # whoever else wrote, a device that wrote less than the file cannot hold it
        if reached_device:
            fail(f"look at w.result.device_written: {device}, less than the 16 MiB you wrote.")
        return passed(f"{format_size(charged)} charged, while {device}: the data was still in memory when the "
                      "block ended" + (" (its pages are clean now: written back since)." if held == 0 else ".")
                      + " write_bytes is not proof that anything reached the disk.")
    if busy:
        how = ("its pages are clean now, written back during the block or after it" if held is not None else
               "this kernel has no cachestat(2) to count the file's own pages")
        return passed(f"either answer: this run cannot tell. {device}, and {how}: a disturbed device's "
                      "count is no evidence of your bytes. Run the cell again on a quieter moment to see it "
                      "decided.")
    if not reached_device:
        fail(f"look at w.result.device_written: {device}, no one else's (not disturbed)"
             + (", and cachestat counts none of the file's pages dirty" if held == 0 else "") + ".")
    return passed(f"{format_size(charged)} charged, and {device}: write-back ran while you wrote.")
