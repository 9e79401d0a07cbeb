"""Lesson 05's claims follow the numbers: recordings of tmpfs, of this VM's ext4 and of four loop-mounted
ext4 configurations, with mdtest 3.3.0 and 4.0.0; constructed inputs for devices unlike this one."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from conftest import needs
from iolab import explain, recordings
from iolab.lessons.class_results import analysis as K
from iolab.lessons.l05_mdtest import metadata as M
from iolab.lessons.l05_mdtest import claims as C
from iolab.lessons.l05_mdtest import calls as S
from iolab.tools import mdtest

VERSIONS = ("3.3.0", "4.0.0")
SEED = mdtest.Options(files=10, iterations=10, sync=True)


def rec(name: str, version: str) -> recordings.Recording:
    return recordings.load(f"mdtest/{name}-{version}")


def frame(name: str, version: str) -> pd.DataFrame:
    return mdtest.to_frame(mdtest.parse(rec(name, version).text))


def fs_of(name: str, version: str) -> M.FsFacts:
    return M.recorded_facts(rec(name, version).meta["filesystem"])


def ok(claims):
    claims = claims if isinstance(claims, list) else [claims]
    assert claims and all(c.consistent() for c in claims), [c.text for c in claims]
    return claims


# --- the facts the sentences depend on -------------------------------------------------------------

def test_recordings_keep_the_facts_and_they_are_told_apart():
    tmp, shm = fs_of("rates-tmp", "4.0.0"), fs_of("rates-shm", "4.0.0")
    assert tmp.ext and tmp.options is not None and tmp.journal is not None
    assert shm.memory and shm.discard_in_call is False
    variants = {v: fs_of(f"removals-ext4-{v}", "4.0.0") for v in ("journal", "journal-discard", "nojournal",
                                                                    "nojournal-discard")}
    assert [f.journal for f in variants.values()] == [True, True, False, False]
    assert [f.discard for f in variants.values()] == [False, True, False, True]
    assert [f.discard_in_call for f in variants.values()] == [False, False, False, True]
    assert variants["nojournal-discard"].describe() == "ext4 without a journal, mounted with discard"
    old = M.recorded_facts({"path": "/tmp", "fstype": "ext4", "source": "/dev/vda"})   # before options were kept
    assert old.options is None and old.discard_in_call is None


def test_live_facts_of_this_machine():
    shm = M.facts("/dev/shm")
    assert shm.memory and shm.journal is None
    tmp = M.facts("/tmp")
    if tmp.ext:
        assert tmp.options and isinstance(tmp.journal, (bool, type(None)))


# --- section 1: -y syncs nothing without -w --------------------------------------------------------

def test_expected_fsyncs_follow_mdtest_c():
    assert mdtest.expected_fsyncs(SEED, 2) == 0                                   # the seed's -y: nothing
    assert mdtest.expected_fsyncs(replace(SEED, write_bytes=4096), 2) == 2 * 10 * 10
    assert mdtest.expected_fsyncs(replace(SEED, write_bytes=4096, sync=False), 2) == 0
    assert mdtest.expected_fsyncs(replace(SEED, write_bytes=4096, dirs_only=True), 4) == 0
    assert mdtest.expected_fsyncs(mdtest.Options(files=10, iterations=200, sync=True), 4) == 0


@pytest.mark.parametrize("version", VERSIONS)
def test_strace_counts_agree_with_the_source(version):
    seed = S.sync_counts(rec("syncs-seed-tmp", version).text)
    data = S.sync_counts(rec("syncs-write4k-tmp", version).text)
    assert list(seed["syscall"][:5]) == list(S.SYNC_CALLS)        # absent calls are listed with 0
    assert C.fsyncs(seed) == 0 and C.fsyncs(data) == 200
    claims = ok(C.syncs_claims(seed, data, expected_seed=0, expected_data=200))
    assert all(c.held for c in claims)
    assert "strace counted 0 fsync" in claims[0].text


def test_a_count_that_disagrees_is_not_called_predicted():
    seed = pd.DataFrame({"syscall": ["fsync", "unlink"], "calls": [40, 40]})
    claims = ok(C.syncs_claims(seed, seed, expected_seed=0, expected_data=200))
    assert [c.held for c in claims] == [False, False]
    assert claims[0].text.startswith(explain.NOT_THIS_TIME) and "src/mdtest.c" in claims[0].text


# --- sections 3 and 4: rates, and what -w 4096 -y costs ---------------------------------------------

def iterations(name: str, version: str) -> pd.DataFrame:
    return mdtest.iterations_frame(mdtest.parse_iterations(rec(name, version).text))


@pytest.mark.parametrize("name", ["rates-tmp", "rates-shm", "write4k-tmp", "write4k-shm"])
@pytest.mark.parametrize("version", VERSIONS)
def test_the_rate_recordings_keep_every_iteration(name, version):
    it = iterations(name, version)
    assert "-v" in rec(name, version).meta["argv"] and "load average" in rec(name, version).meta["notes"]
    for op in ("file creation", "file stat", "file removal", "directory removal"):
        assert len(M.trials(it, op)) == 10, op


def test_rates_and_fsync_cost_on_ext4_and_tmpfs():
    # the recording the notebook replays (4.0.0, load 2.6 on 2 cores): every iteration agrees
    version = "4.0.0"
    fs = {"/tmp": fs_of("rates-tmp", version), "/dev/shm": fs_of("rates-shm", version)}
    plain = {"/tmp": iterations("rates-tmp", version), "/dev/shm": iterations("rates-shm", version)}
    synced = {"/tmp": iterations("write4k-tmp", version), "/dev/shm": iterations("write4k-shm", version)}
    rates = ok(C.rates_claims(plain, fs))
    assert len(rates) == 3 and all(c.held for c in rates)       # stat > create twice; memory > disk
    assert "median of 10" in rates[0].text and "one run" in rates[0].text and "ops/s of rank 0" in rates[0].text
    assert "two runs taken one after the other (/tmp first)" in rates[2].text
    ext4, shm = ok(C.fsync_cost_claims(plain, synced, fs))
    assert ext4.held is True and "round trip to the device" in ext4.text and "one after the other" in ext4.text
    assert ("no journal" in ext4.text) == (fs["/tmp"].journal is False)
    # tmpfs with -w: rank 0's slowest iteration at 19,841/s against 195,996/s without: the spreads overlap (by=1/3)
    assert shm.held is None and shm.text.startswith(explain.TOO_CLOSE) and "As predicted" not in shm.text


def _runs(version: str):
    """Sections 3-4's four runs of ``version``, replayed as the notebook measures them."""
    places = {"/tmp": "tmp", "/dev/shm": "shm"}
    plain = {p: M.measure_on(p, SEED, recording=f"mdtest/rates-{n}-{version}", quiet=True) for p, n in places.items()}
    synced = {p: M.measure_on(p, replace(SEED, write_bytes=4096), recording=f"mdtest/write4k-{n}-{version}",
                              quiet=True) for p, n in places.items()}
    return plain, synced, {p: M.facts_of(m, p) for p, m in plain.items()}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_rates_summary_counts_what_was_too_close_and_names_the_counted_evidence(version, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    plain, synced, fs = _runs(version)
    claims = ok(C.rates_claims(plain, fs, show=False) + C.fsync_cost_claims(plain, synced, fs, show=False))
    close = [c for c in claims if c.text.startswith(explain.TOO_CLOSE)]
    # 4.0.0 (load 2.60 when recorded): only tmpfs's "within 3x with -w" overlaps; 3.3.0 (load 2.66): four of five
    assert len(close) == {"4.0.0": 1, "3.3.0": 4}[version]
    for c in close:        # each too-close sentence names the count that stands instead of its rates
        assert "the counts do not depend on how busy the CPUs are: section" in c.text, c.text
        assert "more iterations cannot" in c.text and "more iterations (-i)" not in c.text
    loads = {r.load for r in {**plain, **synced}.values()}
    assert all(x is not None and 0 < x < 10 for x in loads)
    s = C.rates_summary(claims, {**plain, **{f"{p} -w": r for p, r in synced.items()}})
    called = len(claims) - len(close)
    assert s.startswith(f"Of the 5 comparisons of mdtest's rates above, {called} {'was' if called == 1 else 'were'} "
                        f"called and {len(close)} {'was' if len(close) == 1 else 'were'} too close to call")
    assert f"load average up to {max(loads):.2f} (1 min) when they were recorded" in s
    assert "strace's fsync calls (section 1" in s and "not that they perform alike" in s


def test_the_rates_summary_when_every_comparison_was_called(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    plain, synced, fs = _runs("4.0.0")
    claims = ok(C.rates_claims(plain, fs, show=False))          # these three held in the recording
    assert all(c.held for c in claims)
    s = C.rates_summary(claims, plain)
    assert s == ("Of the 3 comparisons of mdtest's rates above, 3 were called and 0 were too close to call "
                 "(load average up to 2.60 (1 min) when they were recorded).")
    # a recording whose notes give no load: said so, not guessed
    for r in plain.values():
        r.load = None
    assert "the load average when they were recorded is not known" in C.rates_summary(claims, plain)


def test_load_of_reads_the_recordings_notes_and_the_machine_live(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    r = M.measure_on("/tmp", SEED, recording="mdtest/rates-tmp-4.0.0", quiet=True)
    assert r.load == 2.60 and "load average 2.60 (1 min)" in r.recording.meta["notes"]
    live = recordings.Outcome(mode="live", text="", provenance="")
    assert M.load_of(live) == pytest.approx(__import__("os").getloadavg()[0], abs=5)
    bare = recordings.Outcome(mode="replay", text="", provenance="")
    assert M.load_of(bare) is None


def test_a_disturbed_iteration_is_not_hidden_by_a_mean():
    # mdtest 3.3.0's recording ran beside others' jobs: one /tmp stat iteration at 12,978/s against
    # creations up to 31,780/s. The means (and the old explain.greater on them) called it; the rule does not.
    version = "3.3.0"
    fs = {"/tmp": fs_of("rates-tmp", version)}
    summary = frame("rates-tmp", version)
    assert M.rate(summary, "file stat") > 2 * M.rate(summary, "file creation")
    claim = ok(C.rates_claims({"/tmp": iterations("rates-tmp", version)}, fs))[0]
    assert claim.held is None and claim.text.startswith(explain.TOO_CLOSE)
    assert "12,978" in claim.text and "31,780" in claim.text


def test_a_run_without_iterations_is_not_judged():
    # an older recording printed only its summary: no trial is made up from Max/Min/Mean
    old = mdtest.iterations_frame(mdtest.parse_iterations(recordings.load("mdtest/tmp-4.0.0").text))
    assert old.empty
    fs = {"/tmp": M.FsFacts("/tmp", "ext4", ("rw",), True)}
    claim = ok(C.rates_claims({"/tmp": old}, fs))[0]
    assert claim.held is None and claim.text.startswith(explain.CANNOT_TELL) and "only mdtest's summary" in claim.text
    few = ok(C.rates_claims({"/tmp": _rates([1_000.0, 1_100.0], [900_000.0, 950_000.0])}, fs))[0]
    assert few.held is None and "fewer than 3 trials" in few.text          # two iterations: too few


def _rates(create: list[float], stat: list[float] | None = None) -> pd.DataFrame:
    stat = stat or [800_000.0] * len(create)
    rows = [{"iteration": i + 1, "operation": op, "seconds": 0.001, "rate": v}
            for op, vals in (("file creation", create), ("file stat", stat)) for i, v in enumerate(vals)]
    return pd.DataFrame(rows)


def test_a_device_that_acks_flushes_at_once_is_not_called_slow():
    # constructed: an NVMe with a power-loss-protected cache, fsync nearly free
    fs = {"nvme": M.FsFacts("/scratch", "ext4", ("rw", "relatime"), True)}
    claims = ok(C.fsync_cost_claims({"nvme": _rates([60_000, 58_000, 61_000])},
                                    {"nvme": _rates([45_000, 44_000, 46_000])}, fs))
    assert claims[0].held is False and claims[0].text.startswith(explain.NOT_THIS_TIME)
    assert "flush" in claims[0].text


def test_ext4_close_to_memory_without_fsync_is_said_so():
    fs = {"mem": M.FsFacts("/dev/shm", "tmpfs"), "fast": M.FsFacts("/scratch", "ext4", ("rw",), True)}
    claims = ok(C.rates_claims({"mem": _rates([250_000, 240_000, 260_000]),
                                "fast": _rates([180_000, 170_000, 175_000])}, fs))
    assert claims[-1].held is False and "nothing waits for the device" in claims[-1].text


def test_overlapping_iterations_are_too_close_whatever_the_medians():
    # medians 4x apart, but one creation iteration beats the slowest stat iteration's half
    fs = {"x": M.FsFacts("/x", "ext4", ("rw",), True)}
    run = _rates([100_000, 100_000, 100_000, 300_000], [400_000, 400_000, 400_000, 500_000])
    claim = ok(C.rates_claims({"x": run}, fs))[0]
    assert claim.held is None and claim.text.startswith(explain.TOO_CLOSE) and "As predicted" not in claim.text


# --- section 5: one file --------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
def test_one_file_on_ext4_and_tmpfs(version):
    fs = {"/tmp": fs_of("strace-one-file-tmp", version), "/dev/shm": fs_of("strace-one-file-shm", version)}
    traces = {k: S.one_file_calls(rec(f"strace-one-file-{n}", version).text)
              for k, n in (("/tmp", "tmp"), ("/dev/shm", "shm"))}
    claims = ok(C.one_file_claims(traces, fs))
    fsync_ext4, unlink_ext4, fsync_shm = claims
    # several files, each a trial: the sentences compare trials (explain.beyond), never one sample
    for c in claims:
        assert c.relation.kind == "beyond" and c.evidence["a trials"] == S.ONE_FILE.iterations - 1
    if fs["/tmp"].discard_in_call:
        assert "discard" in unlink_ext4.text or "Too close" in unlink_ext4.text
    else:
        assert "costs less than its fsync" in unlink_ext4.text


@pytest.mark.parametrize("name", ["strace-one-file-tmp-4.0.0", "strace-one-file-shm-3.3.0"])
def test_one_file_trace_holds_a_warmup_and_five_trials(name):
    """Issue 22 §4: the shipped trace had one file (lseek 1,494 µs beside fsync 634 µs, one sample each)."""
    calls = S.one_file_calls(recordings.load(f"mdtest/{name}").text)
    assert sorted(calls["trial"].unique()) == list(range(S.ONE_FILE.iterations))
    assert calls.groupby("trial").size().eq(9).all()          # the nine calls of one file, in every trial
    assert calls.loc[calls["warmup"], "trial"].unique().tolist() == [0]
    table = S.per_call(calls)
    assert table["syscall"].tolist() == ["openat", "lseek", "write", "fsync", "close", "newfstatat", "openat",
                                         "close", "unlink"]
    assert (table["trials"] == S.ONE_FILE.iterations - 1).all()


def _trials(rows: list[list[float]], names=("openat", "lseek", "write", "fsync", "close", "unlink")) -> pd.DataFrame:
    """A one-file trace of len(rows) files (µs per call), the first a warm-up."""
    out = []
    for trial, row in enumerate(rows):
        out += [{"syscall": s, "duration": d * 1e-6, "trial": trial, "step": i, "warmup": trial == 0}
                for i, (s, d) in enumerate(zip(names, row))]
    return pd.DataFrame(out)


def test_a_preempted_lseek_is_named_not_the_device():
    # one of five trials has its lseek preempted: no longer "fsync beats the others", and the outlier is named
    calls = _trials([[900, 900, 900, 900, 900, 900]] + [[100, 10, 40, 600, 30, 190]] * 4
                    + [[100, 1500, 40, 600, 30, 190]])
    f = M.FsFacts("/tmp", "ext4", ("rw", "discard"), False)
    fsync, unlink = ok(C.one_file_claims({"/tmp": calls}, {"/tmp": f}))
    assert fsync.held is None and fsync.text.startswith(explain.TOO_CLOSE)
    assert "lseek (1,500 µs)" in fsync.text and "waited for a CPU" in fsync.text
    assert unlink.held is True and "discard" in unlink.text


def test_one_sample_is_not_enough_to_call():
    calls = pd.DataFrame({"syscall": ["openat", "lseek", "write", "fsync", "close", "unlink"],
                          "duration": [100e-6, 10e-6, 40e-6, 600e-6, 30e-6, 190e-6]})
    f = M.FsFacts("/tmp", "ext4", ("rw", "discard"), False)
    for c in ok(C.one_file_claims({"/tmp": calls}, {"/tmp": f})):
        assert c.held is None and "fewer than 3 trials" in c.text


def test_a_slow_openat_is_named_when_unlink_did_wait():
    calls = _trials([[850, 30, 40, 3000, 30, 35, 260]] * 6,
                    names=("openat", "lseek", "write", "fsync", "close", "newfstatat", "unlink"))
    f = M.FsFacts("/tmp", "ext4", ("rw", "discard"), False)
    fsync, unlink = ok(C.one_file_claims({"/tmp": calls}, {"/tmp": f}))
    assert fsync.held is True
    assert unlink.held is False and "unlink did wait" in unlink.text and "openat took longer still" in unlink.text


def test_unlink_on_a_journalled_ext4_is_predicted_cheap():
    calls = _trials([[20, 2, 8, 900, 3, 25]] * 6)
    f = M.FsFacts("/home", "ext4", ("rw", "relatime", "discard"), True)
    fsync, unlink = ok(C.one_file_claims({"/home": calls}, {"/home": f}))
    assert unlink.held is True and "costs less than its fsync" in unlink.text and "commit" in unlink.text


# --- section 6: removal ---------------------------------------------------------------------------

# what each recording's per-iteration medians say by the one rule (a side's worst iteration against the
# other's best): True where every iteration agrees with the facts' prediction, None where the spreads overlap
REMOVALS = {("removals-tmp", "4.0.0"): True, ("removals-tmp", "3.3.0"): True,
            ("removals-shm", "4.0.0"): True, ("removals-shm", "3.3.0"): True,
            ("removals-ext4-nojournal", "4.0.0"): True,
            ("removals-ext4-journal", "4.0.0"): None,              # unlink 17-33 µs, rmdir 22-95 µs
            ("removals-ext4-journal-discard", "4.0.0"): None,
            ("removals-ext4-nojournal-discard", "4.0.0"): None,    # one iteration's rmdir median at 68 µs
            ("removals-ext4-nojournal-discard", "3.3.0"): None}    # rmdir 59-120 µs against unlink up to 41 µs


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name,slow", [("removals-tmp", None), ("removals-shm", False),
                                       ("removals-ext4-journal", False), ("removals-ext4-journal-discard", False),
                                       ("removals-ext4-nojournal", False), ("removals-ext4-nojournal-discard", True)])
def test_removal_claims_on_six_filesystems(version, name, slow):
    r = rec(name, version)
    f = M.recorded_facts(r.meta["filesystem"])
    slow = f.discard_in_call if slow is None else slow       # this VM's /tmp: whatever its facts say
    calls = S.removal_calls(r.text)
    assert len(C.per_iteration(calls, "rmdir", "directory")) == 10 == len(C.per_iteration(calls, "unlink", "file"))
    claim = ok(C.removals_claim(name, calls, f))[0]
    assert claim.held is not False                             # no recording contradicts its facts
    if (name, version) in REMOVALS:
        assert claim.held is REMOVALS[(name, version)], claim.text
    assert ("at least 3x as long" in claim.text) == bool(slow)
    if claim.held:
        assert ("sends the device a discard" in claim.text) == bool(slow) and "median of 10" in claim.text
    else:
        assert claim.text.startswith(explain.TOO_CLOSE) and "As predicted" not in claim.text
        # the per-call medians: more items per rank help them, more iterations do not; the counts stand instead
        assert "more items per rank (-n: each iteration's median of more calls)" in claim.text
        assert "not more iterations" in claim.text and "count the discards the device received" in claim.text


@pytest.mark.parametrize("version", VERSIONS)
def test_written_files_against_directories_are_too_close_on_this_vm(version):
    # both removals free a block (ext4 without a journal, with discard): unlink 114-189 µs against rmdir
    # 126-1,050 µs per iteration (4.0.0): one slow iteration of rmdir keeps "a third of it" from every pair
    r = rec("removals-write4k-tmp", version)
    f = M.recorded_facts(r.meta["filesystem"])
    claim = ok(C.removals_claim("/tmp", S.removal_calls(r.text), f, files_written=True))[0]
    assert claim.held is not False
    if f.discard_in_call:
        assert "each frees a block" in claim.text
    if claim.held is None:
        assert claim.text.startswith(explain.TOO_CLOSE) and "median of 10" in claim.text


def test_one_slow_iteration_is_not_hidden_by_a_median_of_calls():
    # the median over every call says 3x; per iteration, one iteration's rmdirs were as fast as the unlinks
    f = M.FsFacts("/scratch", "ext4", ("rw", "discard"), False)
    calls = _calls([300, 300, 300, 300, 12], [10, 10, 10, 10, 10])
    assert calls.loc[calls["syscall"] == "rmdir", "duration"].median() > 3 * calls.loc[calls["syscall"] == "unlink", "duration"].median()
    claim = ok(C.removals_claim("/scratch", calls, f))[0]
    assert claim.held is None and claim.text.startswith(explain.TOO_CLOSE)


@pytest.mark.parametrize("version", VERSIONS)
def test_removal_rates_agree_with_the_trace(version):
    for short in ("tmp", "shm"):
        f = fs_of(f"rates-{short}", version)
        claim = ok(C.removal_rates_claim(short, iterations(f"rates-{short}", version), f))[0]
        if version == "3.3.0" and short == "tmp":
            # a file-removal iteration at 895/s against directory removals up to 5,451/s (a loaded machine)
            assert claim.held is None and claim.text.startswith(explain.TOO_CLOSE)
        else:
            assert claim.held is True and "median of 10" in claim.text


def _calls(rmdir_us, unlink_us) -> pd.DataFrame:
    """Five iterations of a removal trace (mdtest's paths: test-dir.<iteration>-0), four calls each;
    a number, or one per iteration."""
    per = lambda v: v if isinstance(v, list) else [v] * 5     # noqa: E731
    rows = []
    for i, (r, u) in enumerate(zip(per(rmdir_us), per(unlink_us))):
        rows += [{"syscall": "rmdir", "item": "directory", "duration": r * 1e-6,
                  "path": f"/x/mdtest/test-dir.{i}-0/mdtest_tree.0/dir.mdtest.0.{k}"} for k in range(4)]
        rows += [{"syscall": "unlink", "item": "file", "duration": u * 1e-6,
                  "path": f"/x/mdtest/test-dir.{i}-0/mdtest_tree.0/file.mdtest.0.{k}"} for k in range(4)]
    return pd.DataFrame(rows)


def test_a_device_with_free_discards_is_not_blamed():
    f = M.FsFacts("/scratch", "ext4", ("rw", "discard"), False)
    claim = ok(C.removals_claim("/scratch", _calls(12, 10), f))[0]
    assert claim.held is False and claim.text.startswith(explain.NOT_THIS_TIME) and "device" in claim.text


def test_unknown_filesystems_and_missing_numbers():
    lustre = M.FsFacts("/lustre", "lustre", ("rw", "flock"))
    claim = ok(C.removals_claim("/lustre", _calls(600, 300), lustre))[0]
    assert claim.held is True and "does not know" in claim.text
    slow_dirs = ok(C.removals_claim("/lustre", _calls(5000, 300), lustre))[0]
    assert slow_dirs.held is False and "server" in slow_dirs.text
    no_dirs = pd.DataFrame([{"syscall": "unlink", "item": "file", "duration": 1e-5}])
    missing = ok(C.removals_claim("/x", no_dirs, M.FsFacts("/x", "ext4", ("rw", "discard"), False)))[0]
    assert missing.held is None and missing.text.startswith(explain.CANNOT_TELL)


def test_small_files_against_one_stream():
    assert ok(C.small_files_claim(100_000, 4096, 1_000.0, 900.0))[0].held is True
    assert ok(C.small_files_claim(100_000, 4096, 500_000.0, 900.0))[0].held is False


# --- live: the same counts here -------------------------------------------------------------------

@pytest.mark.live
@needs("mpirun", "strace")
@pytest.mark.parametrize("base", ["/tmp", "/dev/shm"])
def test_live_counts_and_removals(base, ior_on_path):
    ior_on_path("4.0.0", tool="mdtest", mpirun=True, or_on_path=True)
    one = S.one_file_calls(S.one_file_trace(base).stdout)
    assert one.groupby("trial").size().to_dict() == {j: 9 for j in range(S.ONE_FILE.iterations)}
    assert all(c.evidence["a trials"] == S.ONE_FILE.iterations - 1
               for c in ok(C.one_file_claims({base: one}, {base: M.facts(base)})))
    opts = mdtest.Options(files=5, iterations=2, sync=True)
    seed = S.sync_counts(S.count_syncs(opts, 2, on=base).stdout)
    data = S.sync_counts(S.count_syncs(replace(opts, write_bytes=4096), 2, on=base).stdout)
    claims = ok(C.syncs_claims(seed, data, expected_seed=0, expected_data=mdtest.expected_fsyncs(
        replace(opts, write_bytes=4096), 2)))
    assert all(c.held for c in claims)
    calls = S.removal_calls(S.trace_removals(opts, 2, on=base).stdout)
    assert set(calls["item"]) >= {"file", "directory"} and (calls["item"] == "file").sum() == 20
    ok(C.removals_claim(base, calls, M.facts(base)))


# --- the instructor's class data (data/recorded/class) -----------------------------------------------

CLASS = recordings.data_dir() / "class" / "results"


def class_md() -> pd.DataFrame:
    from iolab import results

    df = results.load(CLASS)
    return df[df["tool"] == "mdtest"]


def test_which_commands_fsync_each_file():
    assert not K.syncs_each_file("-n 10 -i 200 -y")             # the seed's command
    assert K.syncs_each_file("-n 10 -i 20 -y -w 4096")
    assert not K.syncs_each_file("-n 10 -i 20 -w 4096")
    assert not K.syncs_each_file("-n 10 -i 20 -y -w 0")


def test_class_outliers_have_computed_causes():
    from iolab import results

    md = class_md()
    common = K.common_config(md)
    assert common["options"] == "-n 10 -i 20 -y" and common["tasks"] == 1
    configs = K.class_configs(md).set_index("user")
    assert list(configs.index[configs["fsync_per_file"]]) == ["student05"]
    out = results.outliers(md, "mean", by=["filesystem", "operation"], threshold=3.0, min_factor=2.0)
    causes = K.outlier_causes(md, out)
    assert len(causes) == len(out)
    for r in causes.to_dict("records"):
        if r["user"] in ("student01", "student02", "student03"):
            assert r["differs"] == "nothing" and "neighbours" in r["what it does"]
        if r["user"] == "student05":
            assert "fsyncs each one" in r["what it does"]
        if r["user"] == "student07":
            assert r["differs"] == "no -y" and "syncs nothing" in r["what it does"]
    assert causes["neighbours_same_fs"].notna().all()


def test_class_claims_are_consistent():
    md = class_md()
    claims = ok(K.class_claims(md))
    users = {c.predicted.split()[0] for c in claims}
    assert users == {"student05", "student07"}
    ok(K.class_filesystems_claims(md))


def test_neighbours_count_overlapping_runs():
    md = pd.DataFrame([
        {"user": "a", "filesystem": "x", "started": "2026-01-01T10:00:00", "finished": "2026-01-01T10:00:05"},
        {"user": "b", "filesystem": "x", "started": "2026-01-01T10:00:04", "finished": "2026-01-01T10:00:09"},
        {"user": "c", "filesystem": "y", "started": "2026-01-01T10:00:01", "finished": "2026-01-01T10:00:02"},
        {"user": "d", "filesystem": "x", "started": "2026-01-01T10:00:05", "finished": "2026-01-01T10:00:06"},
    ])
    n = K.neighbours(md).set_index("user")
    assert n.loc["a", "same_fs"] == 1 and n.loc["a", "any_fs"] == 2    # b on x, c on y; d starts as a ends
    assert n.loc["d", "same_fs"] == 1 and n.loc["c", "same_fs"] == 0
    assert K.neighbours(md.drop(columns=["started", "finished"]))["same_fs"].isna().all()


def _class(rows):
    return pd.DataFrame([{"operation": "file creation", "tasks": 1.0, "nodes": 1, "fs_kind": "local disk",
                          "fstype": "ext4", "fs_options": "rw,relatime", **r} for r in rows])


def test_an_fsync_student_on_a_fast_device_is_not_called_slow():
    rows = [{"user": f"s{i}", "filesystem": "disk", "options": "-n 10 -i 20 -y", "mean": 10_000.0} for i in range(3)]
    rows.append({"user": "w", "filesystem": "disk", "options": "-n 10 -i 20 -y -w 4096", "mean": 8_000.0})
    claims = ok(K.class_claims(_class(rows)))
    assert len(claims) == 1 and claims[0].held is False and "flush" in claims[0].text
    # the reason is computed: 125 µs per creation against 100, the write and fsync cost 25 µs of a needed 100
    assert "25 µs more than the class median's (125 against 100 µs)" in claims[0].text
    assert "needed them to cost 100 µs per file" in claims[0].text


def test_the_recorded_fsync_student_is_explained_by_the_fsync_cost_not_neighbours():
    """Issue 22 §4: student05 (-w 4096 -y) created 2,163 files/s on local-ext4 against the class's 2,778: the
    write and fsync added 102 µs per file, where 2x needed 360; the reason says so, not "neighbours"."""
    md = class_md()
    c = next(c for c in K.class_claims(md) if c.predicted.startswith("student05") and "local-ext4" in c.predicted)
    assert c.held is False
    assert "102 µs more than the class median's (462 against 360 µs)" in c.text
    assert "answered from a write cache" in c.text and "outweighed the options" not in c.text
    sync = next(c for c in K.class_claims(md) if c.predicted.startswith("student05") and "ext4-sync" in c.predicted)
    assert "no longer than the class median's" in sync.text and "mounted sync" in sync.text


def test_a_sync_mount_is_found_by_its_options_not_its_name():
    rows = [r for i in range(3) for r in (
        {"user": f"s{i}", "filesystem": "fast", "options": "-y", "mean": 9_000.0 + i},
        {"user": f"s{i}", "filesystem": "ext4-sync", "options": "-y", "mean": 8_000.0 + i},
        {"user": f"s{i}", "filesystem": "slow", "options": "-y", "mean": 500.0 + i, "fs_options": "rw,sync,dirsync"})]
    claims = ok(K.class_filesystems_claims(_class(rows)))
    assert [c.predicted.split("(")[1].split(")")[0] for c in claims] == ["slow", "slow"]
    assert all(c.held for c in claims)


def test_filesystems_are_compared_over_the_students_spread_not_their_medians():
    """Issue 22: 'A is faster than B' holds only when every student who ran the common command says so;
    a student who ran another command is not one of the trials."""
    def rows(fast, slow, odd=None):
        out = [r for i, (f, s) in enumerate(zip(fast, slow)) for r in (
            {"user": f"s{i}", "filesystem": "disk", "options": "-y", "mean": f},
            {"user": f"s{i}", "filesystem": "sync", "options": "-y", "mean": s, "fs_options": "rw,sync"})]
        if odd is not None:      # a student with another command, very slow on 'disk'
            out += [{"user": "odd", "filesystem": "disk", "options": "-y -w 4096", "mean": odd},
                    {"user": "odd", "filesystem": "sync", "options": "-y -w 4096", "mean": 400.0}]
        return _class(out)
    # medians 3,000 against 1,000 (3x, 'held' on medians); but the slowest disk student is not 2x the fastest sync one
    c = ok(K.class_filesystems_claims(rows([3_000.0, 3_100.0, 1_500.0], [1_000.0, 900.0, 1_200.0])))[0]
    assert c.held is None and "Too close to call here" in c.text and "median of 3" in c.text
    # every pair agrees: held, and the odd student's 100/s on disk is not one of the trials
    c = ok(K.class_filesystems_claims(rows([3_000.0, 3_100.0, 2_900.0], [1_000.0, 900.0, 1_200.0], odd=100.0)))[0]
    assert c.held is True and "over the 3 students who ran '-y'" in c.text


# --- section 6, witnessed: the device's own counters during each phase -------------------------------

PHASE_HELD = {"tmp": [True, True, True], "shm": [True, True], "ext4-journal": [True, True, True],
              "ext4-journal-discard": [True, True, True, True], "ext4-nojournal": [True, True, True],
              "ext4-nojournal-discard": [True, True, True]}


def phases(name: str, version: str) -> tuple[M.Phases, M.FsFacts]:
    ph = M.recorded_phases(f"mdtest/phases-{name}-{version}", quiet=True)
    return ph, M.recorded_facts(ph.recording.meta["filesystem"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", list(PHASE_HELD))
def test_phase_claims_on_six_filesystems(version, name):
    ph, f = phases(name, version)
    claims = ok(C.phases_claims(name, ph, f))
    held = PHASE_HELD[name]
    if (name, version) == ("tmp", "4.0.0"):
        # recorded while someone else used the disk: 287 discards of 33.1 MiB for 200 directories (800 KiB of
        # blocks): others' discards are in the count, so the claim cannot tell (issue 22 §4)
        held = [True, True, None]
        assert "someone else's" in claims[2].text and "not mdtest's" in claims[2].text
    assert [c.held for c in claims] == held, [c.text for c in claims]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_four_ext4_images_discard_where_their_facts_say(version):
    d = {v: phases(f"ext4-{v}", version)[0].device for v in ("journal", "journal-discard", "nojournal",
                                                              "nojournal-discard")}
    # a private loop device: nobody else's traffic, so the counts are exactly the filesystem's
    assert d["nojournal-discard"]["remove"]["discards"] >= 200                  # one per rmdir, inside the call
    assert d["journal-discard"]["remove"]["discards"] == 0 < d["journal-discard"]["after"]["discards"]
    assert all(x["discards"] == 0 for v in ("journal", "nojournal") for x in d[v].values() if x)
    assert d["journal"]["after"]["written_bytes"] > 0                           # the commit, after the phases
    for v in d:
        assert d[v]["create"]["written_bytes"] == 0                             # creating: memory work


def test_phase_claims_that_fail_say_why():
    ph, f = phases("ext4-journal-discard", "4.0.0")
    unwatched = replace(ph, device={k: v for k, v in ph.device.items() if k != "after"}, settle_s=0.0)
    last = ok(C.phases_claims("j", unwatched, f))[-1]
    assert last.held is None and "not watched after the last phase" in last.text
    early = replace(ph, device={**ph.device, "remove": {**ph.device["remove"], "discards": 200}})
    assert ok(C.phases_claims("j", early, f))[2].held is False                 # a commit inside the phase
    ph, f = phases("ext4-nojournal-discard", "4.0.0")
    merged = replace(ph, device={**ph.device, "remove": {**ph.device["remove"], "discards": 3}})
    c = ok(C.phases_claims("n", merged, f))[2]
    assert c.held is False and "merged" in c.text
    busy = replace(ph, device={**ph.device, "remove": {**ph.device["remove"], "discards": 1641}})
    c = ok(C.phases_claims("n", busy, f))[2]
    assert c.held is False and "everybody's" in c.text                         # others removed files meanwhile
    no_device = replace(f, discard_max=0)                                        # a device that takes no discard
    assert no_device.discard_in_call is False and "takes no discard" in no_device.describe()
    ph, f = phases("tmp", "4.0.0")
    crowded = ok(C.phases_claims("/tmp", ph, f))[2]
    assert "not mdtest's" in crowded.text                                         # this recording was disturbed
    old = M.recorded_facts({"path": "/x", "fstype": "ext4"})
    assert ok(C.phases_claims("x", ph, old))[-1].held is None                    # facts unknown: cannot tell


@pytest.mark.live
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.slow
def test_live_phase_claims(monkeypatch, ior_on_path, place, version):
    ior_on_path(version, "mdtest", mpirun=True)
    monkeypatch.setenv("IOLAB_MODE", "live")
    kind, ws = place
    f = M.facts(ws.root)
    ph = M.measure_phases(ws.root, M.PHASE_RUN, recording="mdtest/none", settle_s=M.settle_s(f), quiet=True)
    claims = ok(C.phases_claims(str(ws.root), ph, f))
    assert claims[0].held is True                                               # stat: the caches answered
    if f.discard_in_call:                                                       # others can only add discards
        assert ph.device["remove"]["discards"] >= 0.75 * ph.directories


def test_someone_elses_discards_are_seen_in_the_bytes():
    """Issue 22 §4: the shipped /tmp phases counted 287 discards (33.1 MiB) for 200 directories (800 KiB of
    blocks) and printed "Not this time"; the bytes say others' discards are in the count: it cannot tell."""
    ph = M.recorded_phases("mdtest/phases-tmp-4.0.0", quiet=True)
    f = M.recorded_facts(ph.recording.meta["filesystem"])
    c = next(c for c in ok(C.phases_claims("/tmp", ph, f, show=False)) if "discard per directory" in c.predicted)
    assert c.held is None and c.text.startswith(explain.CANNOT_TELL)
    assert "287 discards of 33.1 MiB" in c.text and "at least 32.3 MiB of those discards were someone else's" in c.text
    assert "33 during the create phase and 71 during the stat phase" in c.text
    # a device of its own: one discard per directory, as predicted
    img = M.recorded_phases("mdtest/phases-ext4-nojournal-discard-4.0.0", quiet=True)
    g = M.recorded_facts(img.recording.meta["filesystem"])
    d = next(c for c in ok(C.phases_claims("img", img, g, show=False)) if "discard per directory" in c.predicted)
    assert d.held is True and "204 discards" in d.text


def test_a_student_with_many_rows_does_not_become_the_class_median():
    # issue 32: one member of the class saving thousands of rows made the class's median theirs
    rows = [{"user": f"s{i}", "filesystem": "disk", "options": "-n 10 -i 20 -y", "mean": 10_000.0} for i in range(3)]
    rows += [{"user": "flood", "filesystem": "disk", "options": "-n 10 -i 20 -y", "mean": 1.0}] * 500
    rows.append({"user": "w", "filesystem": "disk", "options": "-n 10 -i 20 -y -w 4096", "mean": 8_000.0})
    claims = ok(K.class_claims(_class(rows)))
    assert len(claims) == 1 and "class median's (125 against 100 µs)" in claims[0].text, claims[0].text
