"""Feedback for exercises: a clear pass message, or a hint (raised as CheckFailed).

Each exercise ends with one ``check_*`` call. On success it prints why the answer is right;
on failure it raises :class:`CheckFailed`, which Jupyter shows as the hint alone, without a
traceback, and which makes CI fail when a solution is wrong.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable
from . import explain, fsinfo, measure, pagecache, readahead_probes, witness
from . import trials as trials_mod
from .labs.first_look import rates_relation, speedup
from .labs import page_cache, readahead as lab, syscalls
from .labs.ior_verdicts import Experiment
from .labs.syscalls import expected_reads
from .recordings import published
from .tools import darshan, ior, mdtest, strace
from .units import KiB, MB, MiB, format_size, parse_size


class CheckFailed(AssertionError):
    """The answer is not right yet. The message is the hint."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"\x1b[1;31m✗ Not yet.\x1b[0m {self}"]


def passed(message: str) -> bool:
    print(f"✓ Correct. {message}")
    return True


def fail(hint: str) -> None:
    raise CheckFailed(hint)


def given(value: object, what: str, how: str) -> None:
    """Fail with ``how`` while ``value`` is still the exercise's placeholder (``...``) or None: an
    unanswered task gets its hint, never a NameError or an AttributeError from inside the check."""
    if value is Ellipsis or value is None:
        fail(f"{what} is not answered yet (still `...`): {how}")


# factors a unit slip multiplies a number by, each with the slip named (issue 32: a hint names it)
UNIT_SLIPS = (
    (1e9 / MiB, "MiB/s and GB/s: 1 GB/s is 10**9 bytes/s, 953.7 MiB/s (1,000 / 1.048576): convert MiB/s to "
                "bytes/s (x 2**20) and then to GB/s (/ 10**9)"),
    (2**30, "bytes and GiB (2**30): check which unit each number is in, and which one the task asks for"),
    (1e9, "bytes and GB (10**9): check which unit each number is in, and which one the task asks for"),
    (MiB, "bytes and MiB (2**20 = 1,048,576): check which unit each number is in, and which one the task asks for"),
    (1e6, "bytes and MB (10**6): check which unit each number is in, and which one the task asks for"),
    (1024, "a factor of 1,024 (KiB and MiB, or MiB and GiB): one binary prefix too many or too few"),
    (1000, "a factor of 1,000 (MB/s and GB/s, kB and MB, ms and s): one decimal prefix too many or too few"),
)


def likely_mistake(answer: float, expected: float, *, rel: float, ratio: str = "",
                   per: tuple[str, float] | None = None,
                   wrong: Iterable[tuple[float, str]] = ()) -> str | None:
    """The usual slip that turns ``expected`` into ``answer``, named, or None. ``ratio``: how the
    ratio is formed ("warm / cold"), for an answer upside down; ``per``: (what, n) when the answer is a
    share of n (per node, per rank), for an answer that is the total or divided twice; ``wrong``: the
    wrong values this task invites, each with its slip ((value, "those are the primaries only: ..."),
    a counter read off instead of computed), tried first. Then a unit slip (:data:`UNIT_SLIPS`), a
    percentage, a gain for a ratio."""
    def near(x: float) -> bool:
        return x > 0 and math.isclose(answer, x, rel_tol=rel)
    if expected <= 0 or answer <= 0 or near(expected):
        return None
    for value, why in wrong:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and near(float(value)):
            return why
    if ratio and not math.isclose(expected, 1, rel_tol=rel) and near(1 / expected):
        return f"upside down: the answer is {ratio}, and you divided the other way round."
    if per and near(expected * per[1]):
        return f"that is the total: divide it by the {per[1]:g} {per[0]}."
    if per and near(expected / per[1]):
        return f"you divided by the {per[1]:g} {per[0]} once too often."
    for factor, units_ in ((MiB / MB, "MiB and MB (1 MiB = 1.048576 MB)"),
                           (2**30 / 1e9, "GiB and GB (1 GiB = 1.073741824 GB)")):
        if near(expected * factor) or near(expected / factor):
            return (f"off by exactly the factor between {units_}: check which unit each number is in, and "
                    "which one the task asks for.")
        if near(expected * factor ** 2) or near(expected / factor ** 2):
            return (f"converted the wrong way round between {units_}: you multiplied where you should divide "
                    "(or the other way).")
    for factor, slip in UNIT_SLIPS:
        if near(expected * factor) or near(expected / factor):
            return f"off by {slip}."
    if near(expected * 100):
        return "that is a percentage: give the plain number (0.25, not 25)."
    if near(expected / 100):
        return "that looks divided by 100: give the plain ratio, not a fraction of a percent."
    if ratio and expected > 1 and near(expected - 1):
        return (f"that is how much faster, minus one (a gain): the task asks for {ratio} itself, "
                "how many times as fast.")
    return None


def close_to(answer: float, expected: float, *, rel: float = 0.05, what: str = "your answer",
             ratio: str = "", per: tuple[str, float] | None = None,
             wrong: Iterable[tuple[float, str]] = ()) -> None:
    """Fail unless answer is within rel (relative) of expected; the hint names the likely mistake
    (:func:`likely_mistake`: the task's own ``wrong`` values, a ratio upside down, a unit slip, a total
    for a share, a percentage), else says which way the answer is off and roughly by how much."""
    if answer is Ellipsis or answer is None:
        fail(f"{what} is not answered yet (still `...`).")
    if not isinstance(answer, (int, float)) or isinstance(answer, bool) or math.isnan(answer):
        fail(f"{what} should be a number, got {answer!r}.")
    if not math.isclose(answer, expected, rel_tol=rel):
        slip = likely_mistake(float(answer), float(expected), rel=max(rel, 0.005), ratio=ratio, per=per,
                              wrong=wrong)
        if slip:
            fail(f"{what} is {answer:,.4g}: {slip}")
        fail(f"{what} is {answer:,.4g}: {_how_far(float(answer), float(expected))} what these numbers give, "
             "and no usual slip (units, a ratio upside down, a total for a share) explains it: check each "
             "number the task names, where it is read from" + (f", and the ratio ({ratio})." if ratio else "."))


def _how_far(answer: float, expected: float) -> str:
    """Which way an answer is off, and roughly how far (one or two digits: a direction, not the answer)."""
    if expected == 0 or answer == 0 or (answer < 0) != (expected < 0):
        return "not near"
    r = answer / expected
    if r > 1:
        return f"too high: about {r:.3g} times" if r < 10 else f"too high: more than {10 ** int(math.log10(r)):,} times"
    return f"too low: about 1/{1 / r:.3g} of" if r > 0.1 else f"too low: less than 1/{10 ** int(math.log10(1 / r)):,} of"


def close_to_fraction(answer: float, expected: float, *, rel: float, what: str, ratio: str = "") -> None:
    """Like :func:`close_to` for a share between 0 and 1, with a hint for an answer given in percent."""
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 1 and \
            math.isclose(answer / 100, expected, rel_tol=rel):
        fail("give a fraction between 0 and 1, not a percentage.")
    close_to(answer, expected, rel=rel, what=what, ratio=ratio)


def same_items(answer: Iterable[object], expected: Iterable[object], *, what: str = "your answer") -> None:
    a, e = set(answer), set(expected)
    if a != e:
        missing, extra = e - a, a - e
        hint = []
        if missing:
            hint.append(f"it misses {sorted(map(str, missing))}")
        if extra:
            hint.append(f"it should not contain {sorted(map(str, extra))}")
        fail(f"{what}: " + "; ".join(hint) + ".")


# --- lesson 00 ----------------------------------------------------------------------------------

def check_00_fstype(answer: str, path: str = "/dev/shm") -> bool:
    """Exercise 00.1: the filesystem type that serves ``path`` on this machine."""
    actual = fsinfo.fstype(path)
    if not isinstance(answer, str) or answer.strip().lower() != actual:
        fail(f"look up {path} with iolab.fsinfo.mount_of({path!r}) (or in the doctor table): "
             "the type is the short name, such as ext4, nfs or tmpfs.")
    return passed(f"{path} is served by {actual}: "
                  + ("memory. Files there live in the page cache and nowhere else." if actual == "tmpfs"
                     else "see the kind column of lab.this_machine()."))


def check_00_speedup(frame, answer: float) -> bool:
    """Exercise 00.2: how many times faster the warm reads were than the cold ones (medians)."""
    if "state" not in getattr(frame, "columns", []) or set(frame["state"]) != {"cold", "warm"}:
        fail("give the DataFrame that lab.repeat_reads returned: it needs cold and warm reads.")
    cold = frame[frame["state"] == "cold"]
    if float(cold["cache_before"].max()) > 0.01:
        fail("a cold read was not cold: the file was still in the page cache before it. If your "
             "workspace is on tmpfs (memory), nothing can be evicted there: set IOLAB_WORKDIR to a disk.")
    expected = speedup(frame)
    if "kept" in frame.columns and isinstance(answer, (int, float)) and not isinstance(answer, bool):
        every = speedup(frame.drop(columns="kept"))     # a disturbed read that was run again, counted too
        if math.isclose(answer, every, rel_tol=0.01):
            expected = every
    close_to(answer, expected, rel=0.01, what="the speed-up",
             ratio="the median cold read's seconds / the median warm read's (see lab.speedup)")
    warm_from_memory = bool((frame.loc[frame["state"] == "warm", "cache_before"] >= 0.95).all())
    where = ("they came from the page cache (cache_before = 100 %), the cold ones from the layer below it"
             if warm_from_memory else "but not every warm read found the whole file in memory: look at "
             "cache_before")
    if answer < 2:
        where += (". That is a small gap: the layer below the page cache answered fast here (a virtual "
                  "disk cached by its host, or a fast SSD)")
    rel = rates_relation(frame)
    spread = (f" Each side's spread: {explain.spread_text(rel)}." if not any(math.isnan(v) for v in rel.evidence.values())
              else "")
    return passed(f"the warm reads were {answer:.1f}x as fast as the cold ones (medians): {where}.{spread}")


def check_00_rate(answer: float) -> bool:
    """Exercise 00.3: seed 000's 10.2 MB/s (fio's decimal unit) in MiB/s."""
    pub = published("seed000-fio-s3fs-cache")
    mb_s = float(pub[(pub["configuration"] == "no cache") & (pub["direction"] == "read")]["mb_per_s"].iloc[0])
    close_to(answer, mb_s * MB / MiB, rel=0.002, what=f"{mb_s} MB/s in MiB/s", ratio="MB/s x 10**6 / 2**20")
    return passed(f"{mb_s} MB/s is {mb_s} x 10^6 bytes/s = {mb_s * MB / MiB:.2f} MiB/s: about 5 % apart. "
                  "Always check which unit a tool prints.")

# --- lesson 01 ----------------------------------------------------------------------------------

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
    kib, cold, warm = seed["local"]
    expected = measure.judge(kib * KiB / warm, device_bps=kib * KiB / cold)
    if local.label != expected.label:
        fail(f"local: judge the second cat's rate (bytes / {warm} s) with device_bps = the first cat's rate "
             f"(bytes / {cold} s), the read that followed drop_caches.")
    kib, cold, warm = seed["beegfs"]
    expected_b = measure.judge(kib * KiB / warm, device_bps=kib * KiB / cold)
    if beegfs.label != expected_b.label:
        fail(f"beegfs: the same computation with {cold} s (first cat) and {warm:.3f} s (second cat).")
    ratio = seed["local"][1] / seed["local"][2]
    ratio_b = seed["beegfs"][1] / seed["beegfs"][2]
    return passed(f"On /tmp the second cat ran {ratio:.1f}x faster than the first: {local.label!r}. "
                  f"On BeeGFS it ran {ratio_b:.2f}x faster: {beegfs.label!r}. A rate within noise of the "
                  "device's proves nothing by itself: nothing in these numbers shows that a cache served the "
                  "second BeeGFS read.")


def check_01_witnessed_write(result, path, charged: int, reached_device: bool) -> bool:
    """Exercise 01.4: a write of 16 MiB without fsync inside ``witness.Witness``: the bytes charged to
    the process (``write_bytes``), and whether the data had reached the device when the block ended.
    ``result``: the ``Witness`` (``w``) or its ``w.result``."""

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
    close_to(charged, result.own_written, rel=0.01, what="charged")
    if not isinstance(reached_device, bool):
        fail(f"reached_device should be True or False, got {reached_device!r}.")
    if result.device is None:
        if reached_device:
            fail("there is no block device behind your workspace (see the witness's notes): the data "
                 "cannot have reached one.")
        return passed(f"{format_size(charged)} charged, and no device at all below this workspace: "
                      "the witness says so in its notes.")
    on_device = result.device_written >= 0.95 * 16 * MiB
    state = witness.cachestat(path)
    dirty = f"; cachestat now counts {state.dirty:,} dirty pages of the file" if state is not None else ""
    if reached_device != on_device:
        fail(f"look at w.result.device_written: the device {result.device} wrote "
             f"{format_size(result.device_written)} while the with block ran" + dirty + ".")
    if on_device:
        return passed(f"{format_size(charged)} charged, and the device wrote {format_size(result.device_written)}: "
                      "write-back ran while you wrote (or something else wrote to the device).")
    return passed(f"{format_size(charged)} charged to write_bytes the moment write() dirtied the pages, while "
                  f"the device wrote only {format_size(result.device_written)}: the data was still in memory"
                  + dirty + ". write_bytes is not proof that anything reached the disk.")


# --- lesson 02 ----------------------------------------------------------------------------------

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


# --- lesson 03 ----------------------------------------------------------------------------------

def _whole(answer: object, what: str) -> int:
    if isinstance(answer, bool) or not isinstance(answer, int):
        fail(f"{what} should be a whole number (an int), got {answer!r}.")
    return int(answer)


def check_03_predict(answer: object, file_size: int, read_size: int) -> bool:
    """Exercise 03.1: read(2) calls to read a file of file_size bytes, read_size per f.read, unbuffered."""
    a = _whole(answer, "the number of read(2) calls")
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

    a = _whole(answer, "the number of read(2) calls")
    size = os.path.getsize(path)
    measured = syscalls.count_reads(path, read_size, buffered=True,
                                    recording=f"strace/buffered-read-{read_size}" if size == 100_000 else None)
    if a == syscalls.expected_reads(size, read_size):
        fail("that is the unbuffered count. open(path, 'rb') wraps the file in a BufferedReader: how many "
             "bytes does it ask the kernel for at a time? (os.stat(path).st_blksize)")
    if a != measured:
        fail(f"measure it: iolab.labs.syscalls.count_reads(path, {read_size}, buffered=True).")
    blk = os.stat(path).st_blksize
    passed(f"{measured:,} read(2) calls for {size:,} f.read({read_size}) calls: the layer that answered the "
           "others was Python's buffer, not the kernel.")
    syscalls.buffered_claims({read_size: measured}, size, blk, replayed=strace.version() is None)
    return True


def check_03_storm(frame, syscall: object, failed: object) -> bool:
    """Exercise 03.3: from a strace -c frame, the most-called syscall and how many of its calls failed."""
    if not {"syscall", "calls", "errors"} <= set(getattr(frame, "columns", [])):
        fail("give the table of iolab.labs.syscalls.count(...): its .frame.")
    top = frame.sort_values("calls", ascending=False).iloc[0]
    if not isinstance(syscall, str) or syscall != top["syscall"]:
        fail("sort the rows by the calls column (frame.sort_values('calls')) and take the largest.")
    f = _whole(failed, "the number of failed calls")
    if f != int(top["errors"]):
        fail(f"the errors column of the {top['syscall']} row counts the calls that returned an error "
             "(mostly ENOENT: a file that was not there).")
    return passed(f"{int(top['calls']):,} {top['syscall']} calls, {f:,} of them failed. On a parallel filesystem "
                  "every one of them is a request to a metadata server, successful or not.")


# --- lesson 04 ----------------------------------------------------------------------------------

# seed 001 (ORFEO handout): /fast is served by 4 storage nodes; its -F run's "Max Read" is in
# data/published/seed001-ior-orfeo.csv
SEED_001_STORAGE_NODES = 4


def _seed001_fpp_read_mib() -> float:
    pub = published("seed001-ior-orfeo")
    return float(pub[(pub["config"] == "-F") & (pub["access"] == "read")]["bw_mib"].iloc[0])


def check_04_storage_node_rate(answer: object) -> bool:
    """Exercise 04.1: GB/s (decimal) each of /fast's storage nodes would have had to send for seed
    001's -F read to have come from the filesystem."""
    read_mib = _seed001_fpp_read_mib()
    expected = read_mib * 2**20 / 1e9 / SEED_001_STORAGE_NODES
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and \
            math.isclose(answer, read_mib / 1024 / SEED_001_STORAGE_NODES, rel_tol=0.03):
        fail("that is GiB/s: the question asks for GB/s (10**9 bytes). 1 MiB = 2**20 bytes.")
    close_to(answer, expected, rel=0.03, what="GB/s per storage node",
             per=("storage nodes", SEED_001_STORAGE_NODES))
    return passed(f"{expected:,.1f} GB/s per node, about {expected * 8:,.0f} Gbit/s each: no storage node's "
                  "network delivers that. The read came from the compute nodes' page cache.")


def check_04_seed_options(opts: object) -> bool:
    """Exercise 04.2: ior.Options for seed 001's last run: -t 1m -b 16m -s 24 -F -C -e."""
    if not isinstance(opts, ior.Options):
        fail(f"build an iolab.tools.ior.Options(...), got {type(opts).__name__}.")
    wrong = []
    if parse_size(opts.transfer_size) != MiB:
        wrong.append("transfer_size is -t: 1 MiB")
    if parse_size(opts.block_size) != 16 * MiB:
        wrong.append("block_size is -b: 16 MiB")
    if opts.segments != 24:
        wrong.append("segments is -s: 24")
    if not opts.file_per_process:
        wrong.append("-F is file_per_process=True")
    if not opts.reorder_tasks:
        wrong.append("-C is reorder_tasks=True")
    if not opts.fsync:
        wrong.append("-e is fsync=True")
    if opts.odirect:
        wrong.append("the seed's run did not use O_DIRECT")
    if wrong:
        fail("; ".join(wrong) + ".")
    total = opts.total_bytes(24)
    return passed(f"argv: {' '.join(opts.argv('4.0.0'))}. With 24 tasks it writes {total / 2**30:.0f} GiB, "
                  "then reads it back.")


def check_04_reorder_shift(one_node: object, four_nodes: object) -> bool:
    """Exercise 04.3: IOR's -C shift for the seed's 24 ranks: all on one node, then 6 on each of 4 nodes
    (by slot: ranks 0-5 on the first node)."""

    expected = (ior.reorder_rule(1, 24, 24), ior.reorder_rule(1, 6, 24))
    got = (_whole(one_node, "the shift on one node"), _whole(four_nodes, "the shift on four nodes"))
    if got[0] != expected[0]:
        fail("on one node numTasksOnNode0 is all 24 tasks: (task offset x tasks per node) mod tasks.")
    if got[1] != expected[1]:
        fail("with 6 tasks per node IOR shifts by 1 x 6 ranks: rank r reads the file of rank r + 6, written "
             "on the next node.")
    return passed(f"{expected[0]} and {expected[1]}: on one node -C moves no rank at all; on four nodes each "
                  "rank reads a file written one node further on, whose page cache is not its own.")


def check_04_reorder_verdict(experiment: object, verdict: object) -> bool:
    """Exercise 04.4: the verdict (iolab.measure.judge) on the reads of the -C run with
    numTasksOnNode0=1, where every rank read the file the other one wrote: the run's witness first
    (the bytes IOR read, what its processes read from storage), the best read's rate second."""

    if not isinstance(experiment, Experiment):
        fail(f"pass the Experiment of the -C run (what lab.experiment returned), got {type(experiment).__name__}.")
    if not experiment.options.reorder_tasks:
        fail("this experiment was not run with -C (reorder_tasks=True).")
    if not isinstance(verdict, measure.Verdict):
        fail(f"verdict should be what iolab.measure.judge(...) returned, got {type(verdict).__name__}.")
    best = experiment.best("read")
    w = experiment.witness
    expected = measure.judge(best * 2**20, device_bps=experiment.cache.device_bps,
                             resident_fraction=experiment.cache.resident_fraction, witness=w,
                             nbytes=experiment.bytes_moved("read") if w is not None else None)
    if expected.witnessed and not verdict.witnessed:
        fail("this run has a witness: pass it first, witness=experiment.witness and nbytes="
             "experiment.bytes_moved('read') (the bytes IOR read in the run it covers); the rate is the second "
             "ground.")
    if verdict.label != expected.label:
        fail("judge the best read rate in bytes/s (bw_mib x 2**20) with device_bps=experiment.cache.device_bps "
             "and resident_fraction=experiment.cache.resident_fraction"
             + (", witness=experiment.witness and nbytes=experiment.bytes_moved('read')." if w is not None else "."))
    table = experiment.opens()
    if table is None or not len(table):
        who = "This run was not traced, so which file each rank read is not known."
    elif table["moved"].fillna(False).all():
        who = "Every rank read the file the other one wrote (experiment.opens())" + (
            ", and both files sat in this node's one page cache." if expected.label == measure.CACHE else ".")
    elif not table["moved"].fillna(False).any():
        who = "No rank moved (experiment.opens()): each re-read the file it wrote."
    else:
        who = "Some ranks read another rank's file (experiment.opens())."
    return passed(f"{verdict.label}: {verdict.reason}. {who}")


def check_04_data_sets(answer: object, data_set_bytes: int, mem_bytes: int | None = None) -> bool:
    """Exercise 04.5: how many fresh data sets of ``data_set_bytes`` make 10x this machine's memory
    (seed 003's recommendation for honest reads)."""

    mem = mem_bytes if mem_bytes is not None else pagecache.meminfo()["MemTotal"]
    expected = math.ceil(10 * mem / data_set_bytes)
    if not isinstance(answer, int) or isinstance(answer, bool):
        fail(f"give a whole number of data sets, got {answer!r}.")
    if answer == math.floor(10 * mem / data_set_bytes) and answer != expected:
        fail("round up: with one data set fewer the total stays below 10x memory.")
    if answer != expected:
        fail("10 x MemTotal (pagecache.meminfo()['MemTotal'], bytes) divided by the size of one data set, "
             "rounded up.")
    return passed(f"{expected:,} data sets of {data_set_bytes / 2**20:,.0f} MiB: {expected * data_set_bytes / 2**30:,.0f} "
                  "GiB written before the first honest read.")

def check_04_faster_with_confidence(t: object, answer: object) -> bool:
    """Exercise 04.6: which of two settings measured N times with iolab.trials is faster *beyond the
    spread* (explain.beyond, the lesson's one rule: the winner's worst trial beats the other's best),
    answered as a setting's name or "too close"."""

    if not isinstance(t, trials_mod.Trials):
        fail(f"pass the Trials that trials.run(...) returned, got {type(t).__name__}.")
    given(answer, "faster", 'the name of the faster setting (as in t.settings), or "too close".')
    names = t.settings
    if len(names) != 2:
        fail(f"compare exactly two settings; these trials have {len(names)}: {names}.")
    a, b = names
    if min(len(t.values(a)), len(t.values(b))) < explain.MIN_TRIALS:
        fail(f"run at least {explain.MIN_TRIALS} trials of each setting (repeat=...): with fewer, a side's "
             "spread is not known.")
    wins = [n for n, o in ((a, b), (b, a)) if t.relation(n, o).holds() is True]
    expected = wins[0] if wins else "too close"
    if not isinstance(answer, str) or answer not in (*names, "too close"):
        fail(f'answer with one of {names} or "too close", got {answer!r}.')
    better = "max" if t.higher else "min"
    worse = "min" if t.higher else "max"
    s = t.summary()
    if answer == expected:
        lines = t.report()
        return passed(f"{expected}. " + " ".join(f"{n}: {lines[n]}." for n in names)
                      + " Report it this way: median, range and number of trials, never one number.")
    if expected == "too close":
        fast = a if (s.loc[a, "median"] > s.loc[b, "median"]) == t.higher else b
        slow = b if fast == a else a
        fail(f"the medians favour {fast} ({s.loc[fast, 'median']:,.4g} against {s.loc[slow, 'median']:,.4g} {t.unit}), "
             f"but the spreads overlap: {fast}'s worst trial ({s.loc[fast, worse]:,.4g}) does not beat {slow}'s "
             f"best ({s.loc[slow, better]:,.4g}). A median alone is not a win: the rule says \"too close\".")
    if answer == "too close":
        fail(f"every trial of {expected} beats every trial of the other: its worst ({s.loc[expected, worse]:,.4g} "
             f"{t.unit}) beats the other's best. That is beyond the spread: name it.")
    fail(f"upside down: {expected} wins in every pair of trials"
         + (" (a higher rate is faster)." if t.higher else " (fewer seconds is faster)."))


# --- lesson 05 ----------------------------------------------------------------------------------

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

# --- lesson 06 ----------------------------------------------------------------------------------


def check_06_speedup(answer: object, reads) -> bool:
    """Exercise 06.1: how many times faster the warm read through s3fs with use_cache was than the cold one."""
    part = reads[reads["label"] == "s3fs, use_cache"].set_index("read")
    rates = part["mb_per_s"]
    expected = float(rates.iloc[1] / rates.iloc[0])
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0 and \
            math.isclose(answer, 1 / expected, rel_tol=0.05):
        fail("you divided the cold rate by the warm one: the speed-up is warm / cold.")
    close_to(answer, expected, rel=0.05, what="the speed-up", ratio="warm rate / cold rate")
    warm = part.iloc[1]
    down = warm.get("link_down") if "link_down" in part else None
    if down is not None and down == down and down < 0.5 * warm["nbytes"]:
        why = (f"only {down:,.0f} bytes crossed the link during it (replies to s3fs's requests), so its data came "
               "from s3fs's cache directory, not from the store.")
    else:
        why = "compare its rate with the link's cap to tell which layer served it."
    return passed(f"The second read ran {expected:,.0f}x faster; {why}")


SHORT_LAYERS = {"the store, over the network": "network", "the FUSE client's own cache": "fuse cache",
                "the kernel page cache": "page cache"}


def check_06_layers(answer: object, reads) -> bool:
    """Exercise 06.2: for each client configuration, the layer that served the read after the page
    cache was dropped ("network", "fuse cache" or "page cache")."""
    last = reads[reads["read"] == reads["read"].unique()[-1]]
    expected = {r.label: SHORT_LAYERS.get(r.layer, r.layer) for r in last.itertuples()}
    if not isinstance(answer, dict):
        fail("answer with a dict: {client configuration label: 'network' | 'fuse cache' | 'page cache'}.")
    same_items(answer, expected, what="the client configurations in your answer")
    wrong = [k for k in expected if str(answer[k]).strip().lower() != expected[k]]
    if wrong:
        fail(f"look again at {wrong[0]!r}: how many bytes crossed the link during its 3rd read, compared with "
             "the file's size? And how much of the file did the open find in the page cache?")
    return passed("A cache of the FUSE client survives dropping the page cache; without one, every "
                  "read after the pages are gone crosses the network again.")


def check_06_keep_cache(answer: object, reads) -> bool:
    """Exercise 06.3: the configurations whose 2nd read found the whole file in the page cache at open."""
    second = reads[reads["read"] == reads["read"].unique()[1]]
    expected = sorted(second[second["resident_before"] >= 0.95]["label"])
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        fail("answer with a list (or set) of configuration labels.")
    got = sorted(str(a) for a in answer)
    unknown = [a for a in got if a not in set(reads["label"])]
    if unknown:
        fail(f"{unknown[0]!r} is not a configuration label of the table.")
    if got != expected:
        missing = [e for e in expected if e not in got]
        extra = [g for g in got if g not in expected]
        hint = (f"{missing[0]!r} is missing: look at its 2nd read's resident_before" if missing else
                f"{extra[0]!r} does not belong: its 2nd read found {second.set_index('label').loc[extra[0], 'resident_before']:.0%} "
                "of the file at open (resident_in_fd is measured after the read, through the reading descriptor)")
        fail(hint)
    return passed("Those clients answer each open with FOPEN_KEEP_CACHE (gcsfuse always; s3fs with -o kernel_cache); "
                  "for the others Linux's FUSE driver drops the file's pages at every open.")


# --- lesson 07 ----------------------------------------------------------------------------------

def check_07_reads(answer: object, profile) -> bool:
    """Exercise 07.1: the read(2) calls Darshan counted on the data file of a read-loop profile
    (``iolab.labs.darshan.profile_read_loop``): POSIX_READS of that file."""

    given(profile, "profile", "profile = lab.profile_read_loop(data, 65536, recording=\"readloop-64k-1mib\").")
    given(answer, "reads", "first predict it: ceil(file size / read size), plus the read that returns 0 "
                           "bytes; then read POSIX_READS of the data file from profile.log.")
    target, n, size = profile.target, profile.read_size, profile.file_size
    measured = darshan.counter(profile.log, "POSIX_READS", file=target)
    a = _whole(answer, "the number of reads")
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
    """Exercise 07.3: from ``iolab.labs.darshan_mpiio.collective``'s frame, the bytes one POSIX write carried
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
    if _whole(answer["bytes_per_write"], "bytes_per_write") != expected["bytes_per_write"]:
        fail("divide the collective row's posix_bytes by its posix_writes.")
    if _whole(answer["aggregators"], "aggregators") != expected["aggregators"]:
        fail(f"each collective call covers one segment; the run has {table.segments} segments. How many "
             "writes did each segment take?")
    t = table.transfer
    return passed(f"{expected['aggregators']} aggregator(s), each write {expected['bytes_per_write']:,} bytes = "
                  f"{expected['bytes_per_write'] // t} ranks' {t:,}-byte pieces gathered into one.")


# --- lesson 08 ----------------------------------------------------------------------------------

def object_of(offset: int, stripe_unit: int, stripe_count: int, object_size: int) -> int:
    """The index of the object that holds file byte ``offset`` under a CephFS layout (RADOS striping:
    stripe units go round robin over ``stripe_count`` objects; when those are full, the next set)."""
    block = offset // stripe_unit
    per_object = object_size // stripe_unit
    object_set = block // (stripe_count * per_object)
    return object_set * stripe_count + block % stripe_count


def check_08_objects(answer: object, layouts) -> bool:
    """Exercise 08.1: the object index holding the file's byte 9 MiB + 1, for each layout of section 1
    (a dict layout -> index)."""
    f = layouts.frame.set_index("layout")
    expected = {name: object_of(9 * MiB + 1, int(r["stripe_unit"]), int(r["stripe_count"]), int(r["object_size"]))
                for name, r in f.iterrows()}
    if not isinstance(answer, dict):
        fail("answer with a dict: {layout name: object index}.")
    same_items(answer, expected, what="the layouts of your answer")
    wrong = [k for k in expected if _whole(answer[k], f"the index for {k}") != expected[k]]
    if wrong:
        k = wrong[0]
        fail(f"{k}: count stripe units of {format_size(int(f.loc[k, 'stripe_unit']))} from the start; they go round "
             f"robin over {int(f.loc[k, 'stripe_count'])} object(s), each holding "
             f"{int(f.loc[k, 'object_size']) // int(f.loc[k, 'stripe_unit'])} of them before the next set begins.")
    return passed(f"{expected}: the layout alone decides it; every client computes the same, and CRUSH then "
                  "computes the object's OSD from its name.")


def check_08_cold_steps(answer: object, caches) -> bool:
    """Exercise 08.2: the steps of section 2 whose reads the OSDs served (their op_r_out_bytes grew by
    the file's size in every trial)."""
    df = caches.frame
    size = int(df["bytes"].max())
    expected = {s for s, g in df.groupby("step") if (g["osd_bytes_sent"] >= size).all()}
    if isinstance(answer, str) or not isinstance(answer, Iterable):
        fail("answer with a list of step names (the 'step' column).")
    same_items(answer, expected, what="your steps")
    return passed(f"only {sorted(expected)}: evicting the kernel's pages left ceph-fuse's own object cache, so "
                  "a cold read on a parallel file system client needs a fresh client.")


def check_08_replication(answer: object, replication) -> bool:
    """Exercise 08.3: the bytes the OSDs received per file byte in the size-3 pool (median of the trials)."""
    df = replication.frame
    expected = float(df[df["pool_size"] == 3]["osd_bytes_per_file_byte"].median())
    close_to(answer, expected, rel=0.01, what="bytes at the OSDs per file byte")
    return passed(f"{expected:.2f}: the primary's op_w_in_bytes once, plus the replicas' subop_w_in_bytes twice.")
