"""Issue 32: exercise checks that graded wrong. Each check is tried with the right answer and with every
wrong one a student plausibly writes, on the numbers a busy machine gives (a neighbour's writes on the
device, pages still dirty): the right one passes, each wrong one fails with a hint naming the slip."""
from __future__ import annotations

import pytest

from iolab import check, measure, witness
from iolab.lessons.l01_page_cache import check as check_01
from iolab.units import KiB, MiB

PAGES = 16 * MiB // 4096


def _written(device_written: float, *, device: str | None = "vda") -> witness.Witnessed:
    return witness.Witnessed(own_read=0, own_written=16 * MiB, device=device, device_read=0,
                             device_written=None if device is None else int(device_written))


def _pages(monkeypatch, dirty: int | None, writeback: int = 0) -> None:
    st = None if dirty is None else witness.CacheStat(cached=PAGES, dirty=dirty, writeback=writeback, evicted=0,
                                                     recently_evicted=0)
    monkeypatch.setattr(witness, "cachestat", lambda path, *a, **k: st)


def _ok(r, reached, path="/nowhere/witnessed.bin"):
    return check_01.check_01_witnessed_write(r, path, 16 * MiB, reached)


# --- exercise 01, task 4: witness a write --------------------------------------------------------------

def test_01_4_a_neighbours_writes_do_not_make_dirty_pages_reach_the_device(monkeypatch):
    """The issue's case: every page of the file still dirty (cachestat), the device wrote 316 MiB because
    a neighbour wrote: the file's own pages decide, the DISTURBED device count is no evidence."""
    busy = _written(316 * MiB)
    assert busy.disturbed
    _pages(monkeypatch, dirty=PAGES)
    assert _ok(busy, False)
    with pytest.raises(check.CheckFailed, match=r"4,096 .*dirty"):
        _ok(busy, True)


def test_01_4_some_pages_still_dirty_is_not_reached(monkeypatch):
    _pages(monkeypatch, dirty=PAGES // 2, writeback=PAGES // 4)
    assert _ok(_written(4 * MiB), False)
    with pytest.raises(check.CheckFailed, match="dirty"):
        _ok(_written(4 * MiB), True)


def test_01_4_clean_pages_on_a_quiet_device_are_judged_by_the_device(monkeypatch):
    _pages(monkeypatch, dirty=0)
    assert _ok(_written(16 * MiB + 64 * 1024), True)           # written back inside the block
    with pytest.raises(check.CheckFailed, match="device_written"):
        _ok(_written(16 * MiB + 64 * 1024), False)
    assert _ok(_written(64 * 1024), False)                      # clean now, written back after the block
    with pytest.raises(check.CheckFailed, match="device_written"):
        _ok(_written(64 * 1024), True)


def test_01_4_clean_pages_on_a_disturbed_device_cannot_be_told_and_the_check_says_so(monkeypatch):
    _pages(monkeypatch, dirty=0)
    busy = _written(316 * MiB)
    for answer in (True, False):                                 # no evidence either way: neither is wrong
        assert _ok(busy, answer)


def test_01_4_without_cachestat_a_disturbed_device_is_no_evidence(monkeypatch, capsys):
    _pages(monkeypatch, dirty=None)
    # the device wrote less than the file: it cannot hold the file, whoever else wrote
    assert _ok(_written(8 * MiB + 2 * MiB), False)
    with pytest.raises(check.CheckFailed, match="device_written"):
        _ok(_written(10 * MiB), True)
    busy = _written(316 * MiB)
    capsys.readouterr()
    assert _ok(busy, True) and _ok(busy, False)
    assert "cannot tell" in capsys.readouterr().out
    quiet = _written(16 * MiB + 64 * 1024)
    assert _ok(quiet, True)
    with pytest.raises(check.CheckFailed):
        _ok(quiet, False)


def test_01_4_no_device_below_the_workspace(monkeypatch):
    _pages(monkeypatch, dirty=PAGES)
    r = _written(0, device=None)
    assert _ok(r, False)
    with pytest.raises(check.CheckFailed):
        _ok(r, True)




# --- exercise 01, task 3: seed 004's verdicts --------------------------------------------------------------

def _seed_judge(name, *, rate=None, device=None, unit=KiB):
    kib, cold, warm = check_01._seed004_cat()[name]
    return measure.judge(rate if rate is not None else kib * unit / warm,
                         device_bps=device if device is not None else kib * unit / cold)


def test_01_3_the_right_verdicts_pass():
    assert check_01.check_01_seed_verdicts(_seed_judge("local"), _seed_judge("beegfs"))


@pytest.mark.parametrize("slip, wrong", [
    ("KiB", lambda: _seed_judge("local", unit=1)),                                  # ls's KiB as bytes
    ("1,000", lambda: _seed_judge("local", unit=1000)),                             # kB for KiB
    ("upside down|other way round|first cat", lambda: _seed_judge(                  # the cats swapped
        "local", rate=check_01._seed004_cat()["local"][0] * KiB / check_01._seed004_cat()["local"][1],
        device=check_01._seed004_cat()["local"][0] * KiB / check_01._seed004_cat()["local"][2])),
])
def test_01_3_a_wrong_verdict_fails_even_with_the_right_label(slip, wrong):
    v = wrong()
    with pytest.raises(check.CheckFailed, match=slip):
        check_01.check_01_seed_verdicts(v, _seed_judge("beegfs"))


def test_01_3_a_hand_made_verdict_fails():
    right = _seed_judge("local")
    with pytest.raises(check.CheckFailed, match="measure.judge"):
        check_01.check_01_seed_verdicts(measure.Verdict(right.label, "because"), _seed_judge("beegfs"))
