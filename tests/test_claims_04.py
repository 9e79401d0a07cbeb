"""Lesson 04's sentences against real recordings of two filesystems (ext4 on a virtio disk, tmpfs) and
two IOR versions (3.3.0, 4.0.0), and against constructed edge cases.

Every claim must be consistent (its verdict is what its relation says of its evidence), and the
verdicts that do not depend on noise must be the right ones for the filesystem: on tmpfs nothing
reaches a device, fsync and O_DIRECT change nothing and eviction fails; on ext4 the device takes
exactly what -e and O_DIRECT send it; on one node -C moves no rank, numTasksOnNode0=1 moves every one.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from iolab import explain, measure
from iolab.labs import ior_pitfalls as lab
from iolab.tools import ior

CASES = [(v, fs) for v in ("3.3.0", "4.0.0") for fs in ("ext4", "tmpfs")]


@pytest.fixture(autouse=True)
def _replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")


def lesson(version: str, fs: str) -> dict[str, ior.Experiment]:
    out = {name: ior.experiment(o, recording=lab.recording(name, version, fs), name=name, quiet=True,
                                trace=name in lab.TRACED)
           for name, o in lab.runs().items()}
    out["evict-write"], out["evict-read"] = ior.split_phases(lab.EVICT, recording=lab.recording("evict", version, fs),
                                                             quiet=True)
    return out


def all_claims(e: dict[str, ior.Experiment]) -> dict[str, list[explain.Claim]]:
    pub = ior.published("seed001-ior-orfeo")
    return {
        "naive": lab.layers(e["shared"], yardstick=True, show=False),
        "fpp": lab.file_per_process(e["shared"], e["fpp"], pub, show=False),
        "reorder": lab.reorder(e["reorder"], show=False),
        "neighbour": lab.neighbour(e["neighbour"], show=False),
        "fsync": lab.fsync(e["neighbour"], e["fsync"], show=False),
        "odirect": lab.odirect(e["odirect"], e["fsync"], show=False),
        "evicted": lab.evicted(e["evict-write"], e["evict-read"], e["fsync"], show=False),
        "only_e": lab.only_e([e[n] for n in lab.runs()], show=False),
        "spread": [c for n in lab.runs() for c in lab.spread(e[n], show=False)],
    }


def held(claims: list[explain.Claim]) -> list[bool | None]:
    return [c.held for c in claims]


@pytest.mark.parametrize("version,fs", CASES)
def test_every_claim_is_consistent(version, fs):
    e = lesson(version, fs)
    assert {x.cache.get("fstype") for x in e.values()} == {fs}           # the recordings are what they say
    assert {r["version"] for x in e.values() for r in x.rows} == {version}
    for section, claims in all_claims(e).items():
        assert claims, section
        for c in claims:
            assert c.consistent(), (section, c.text)
            assert c.text.startswith((explain.AS_PREDICTED, explain.NOT_THIS_TIME, explain.CANNOT_TELL))


@pytest.mark.parametrize("version,fs", CASES)
def test_minus_c_on_one_node_moves_no_rank_and_numtasksonnode0_moves_every_one(version, fs):
    e = lesson(version, fs)
    plain, moved = e["reorder"].opens(), e["neighbour"].opens()
    assert len(plain) == len(moved) == 2 * 3                              # 2 ranks x 3 iterations
    assert not plain["moved"].any() and set(plain["shift"]) == {0}
    assert moved["moved"].all() and set(moved["shift"]) == {1}
    assert (plain["wrote"] == plain["read"]).all()
    assert set(zip(moved["wrote"], moved["read"])) == {("testfile.00000000", "testfile.00000001"),
                                                       ("testfile.00000001", "testfile.00000000")}
    assert e["reorder"].layout()["tasks_per_node"] == 2 and e["neighbour"].layout()["tasks_per_node"] == 1
    c = all_claims(e)
    assert held(c["reorder"]) == [True, True]
    assert held(c["neighbour"]) == [True, True, True]
    assert "(1 × 2) mod 2 = 0" in c["reorder"][1].text and "(1 × 1) mod 2 = 1" in c["neighbour"][1].text


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
def test_on_ext4_the_device_takes_what_e_and_odirect_send_it(version):
    c = all_claims(lesson(version, "ext4"))
    assert held(c["naive"])[:2] == [True, True]          # writes ended in the page cache, reads from memory
    assert held(c["fsync"])[1:] == [True, True]          # -e: the device wrote it all; the read still memory
    assert held(c["odirect"])[:3] == [True, True, True]  # nothing resident; device wrote and read it all
    assert held(c["evicted"])[:2] == [True, True]        # evicted, and the device read it all back


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
def test_on_tmpfs_nothing_reaches_a_device(version):
    e = lesson(version, "tmpfs")
    c = all_claims(e)
    assert held(c["naive"]) == [True, True, None]        # memory only; no device rate to compare with
    assert held(c["fsync"]) == [None, False, True]       # -e: nothing to compare, no device, read from memory
    assert held(c["odirect"]) == [False, False, False, None]
    assert held(c["evicted"]) == [False, False, None]    # DONTNEED cannot drop tmpfs pages
    assert held(c["only_e"]) == [None]
    frame = lab.frame(e.values())
    assert set(frame["verdict"].dropna()) == {measure.CACHE}   # not "from the device", whatever the options


@pytest.mark.parametrize("version,fs", CASES)
def test_spread_verdicts_follow_the_numbers(version, fs):
    e = lesson(version, fs)
    for name in lab.runs():
        claims = lab.spread(e[name], show=False)
        for access, claim in zip(("write", "read"), claims):
            vals = [r["bw_mib"] for r in e[name].rows if r["access"] == access]
            assert claim.held == (max(vals) <= lab.SPREAD * min(vals)), (name, access, claim.text)
            if not claim.held:
                assert "first rank starting it to the last one finishing" in claim.text
                assert "/proc/pressure/cpu" in claim.text


def test_only_e_names_the_slow_iteration():
    e = lesson("4.0.0", "ext4")
    (c,) = lab.only_e([e[n] for n in lab.runs()], show=False)
    slowest = min(r["bw_mib"] for n in ("shared", "fpp", "reorder", "neighbour")
                  for r in e[n].rows if r["access"] == "write")
    assert c.evidence["slowest write without -e (MiB/s)"] == slowest
    assert c.held == (slowest > e["fsync"].best("write"))


# --- constructed edge cases (never in a lesson or a recording) ------------------------------------

def _with(e: ior.Experiment, **during) -> ior.Experiment:
    cache = dict(e.cache)
    cache["during"] = {**e.during, **during}
    return replace(e, cache=cache)


def test_a_device_as_fast_as_memory_fails_the_yardstick_and_says_why():
    e = lesson("4.0.0", "ext4")["shared"]
    fast = replace(e, cache={**e.cache, "device_bps": e.best("read") * 2**20})     # a device as fast as the read
    c = lab.layers(fast, yardstick=True, show=False)[-1]
    assert c.held is False and c.consistent() and "the device's counters above can" in c.text


def test_write_back_during_the_run_fails_the_write_claim_and_says_why():
    e = lesson("4.0.0", "ext4")["shared"]
    busy = _with(e, device_written_bytes=e.bytes_moved("write"), writeback_peak=64 * 2**20)
    c = lab.layers(busy, show=False)[0]
    assert c.held is False and c.consistent() and "Writeback peaked at 64" in c.text
    assert "vm.dirty_background_ratio" in c.text


def test_a_filesystem_without_block_device_cannot_tell():
    e = lesson("4.0.0", "ext4")["shared"]
    nfs = replace(_with(e, device_read_bytes=None, device_written_bytes=None), cache={**e.cache, "fstype": "nfs4",
                                                                                       "during": {}})
    for c in lab.layers(nfs, show=False):
        assert c.held is None and c.consistent() and "no block device" in c.text


def test_reads_from_the_device_while_expected_from_memory():
    e = lesson("4.0.0", "ext4")["shared"]
    small_memory = _with(e, device_read_bytes=e.bytes_moved("read"))
    c = lab.layers(small_memory, show=False)[1]
    assert c.held is False and c.consistent() and "whole device's" in c.text


def test_minus_c_that_moved_ranks_is_not_this_time_with_iors_layout():
    e = lesson("3.3.0", "ext4")["neighbour"]          # as if the ranks had been spread over nodes
    first = lab.reorder(e, show=False)[0]
    assert first.held is False and first.consistent() and "1 task(s) per node" in first.text


def test_an_untraced_run_cannot_tell_who_read_what():
    e = replace(lesson("4.0.0", "ext4")["reorder"], opens_text=None)
    claims = lab.reorder(e, show=False)
    assert [c.held for c in claims] == [None, None] and all(c.consistent() for c in claims)


def test_a_slow_fsync_device_and_a_fast_one():
    e = lesson("4.0.0", "ext4")
    without, with_e = e["neighbour"], e["fsync"]
    fast = replace(with_e, outcome=replace(with_e.outcome, data=[
        {**r, "bw_mib": without.best("write")} if r["access"] == "write" else r for r in with_e.rows]))
    c = lab.fsync(without, fast, show=False)[0]
    assert c.held is False and c.consistent() and "fast NVMe" in c.text


def test_data_set_against_memory():
    small = lab.dataset(lab.BASE, 2, 256 * 2**20, show=False)[0]       # a 256 MiB machine
    big = lab.dataset(lab.BASE, 2, 64 * 2**30, show=False)[0]
    assert small.held is False and big.held is True and small.consistent() and big.consistent()


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
def test_the_recorded_sweep(version):
    claims = lab.sweep(ior.sweep_frame(version), lab.sweep_device_bps(version), show=False)
    assert len(claims) == 2 and all(c.consistent() for c in claims)
    slow_device = lab.sweep(ior.sweep_frame(version), 1e12, show=False)      # a device faster than any read
    assert slow_device[0].held is False and slow_device[0].consistent()
    assert lab.sweep(ior.sweep_frame(version), None, show=False)[0].held is None
