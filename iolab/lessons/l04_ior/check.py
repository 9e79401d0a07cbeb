"""Lesson 04 (IOR's pitfalls): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import math
from ... import explain, measure, pagecache, trials as trials_mod
from ...check import close_to, fail, given, judged_from, passed, whole
from ...recordings import published
from ...tools import ior
from ...units import MiB, parse_size
from .verdicts import Experiment


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
    got = (whole(one_node, "the shift on one node"), whole(four_nodes, "the shift on four nodes"))
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
    # the numbers, not only the label: a rate in MiB/s where bytes/s are expected is "unclear" as well
    n = experiment.bytes_moved("read")
    right = {"bytes_per_s": best * MiB, "device_bps": experiment.cache.device_bps,
             "resident_fraction": experiment.cache.resident_fraction}
    if w is not None:
        right.update(witness=w, nbytes=n)
    write = experiment.best("write")
    judged_from(verdict, right, how={
        "bytes_per_s": "the best read's rate in bytes/s: experiment.best('read') x 2**20",
        "device_bps": "experiment.cache.device_bps, bytes/s already",
        "resident_fraction": "experiment.cache.resident_fraction, 0..1",
        "witness": "experiment.witness", "nbytes": "experiment.bytes_moved('read')"}, wrong={
        "bytes_per_s": [(best, "that is the rate in MiB/s, experiment.best('read') as it is: judge wants bytes/s"),
                        (best * 1e6, "that is MB/s x 10**6: experiment.best('read') is in MiB/s, and 1 MiB/s is "
                                     "2**20 bytes/s, not 10**6"),
                        (best * 2**30, "that is x 2**30 (GiB): experiment.best('read') is in MiB/s, x 2**20"),
                        *([(write * MiB, "that is the write's rate: judge the read")] if write else [])],
        "device_bps": [(experiment.cache.device_bps / MiB, "that is the device's rate in MiB/s: "
                        "experiment.cache.device_bps is bytes/s already, pass it as it is")]
        if experiment.cache.device_bps else [],
        "nbytes": [(n / MiB, "that is in MiB: nbytes counts bytes"),
                   (n / 2, "that is half the run's bytes (one rank's): nbytes is what the whole run read")]})
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
