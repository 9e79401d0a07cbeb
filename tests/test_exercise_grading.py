"""Issue 32: exercise checks that graded wrong. Each check is tried with the right answer and with every
wrong one a student plausibly writes, on the numbers a busy machine gives (a neighbour's writes on the
device, pages still dirty): the right one passes, each wrong one fails with a hint naming the slip."""
from __future__ import annotations

import pytest

from iolab import check, measure, units, witness
from iolab.lessons.l01_page_cache import check as check_01
from iolab.lessons.l04_ior import check as check_04
from iolab.units import MiB

PAGES = 16 * MiB // 4096
# until the checks are fixed (lesson-local, after the restructure of issue 31 lands): they fail today
TODAY = pytest.mark.xfail(strict=True, reason="issue 32: the check grades wrong on today's code")


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

@TODAY
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


@TODAY
def test_01_4_clean_pages_on_a_disturbed_device_cannot_be_told_and_the_check_says_so(monkeypatch):
    _pages(monkeypatch, dirty=0)
    busy = _written(316 * MiB)
    for answer in (True, False):                                 # no evidence either way: neither is wrong
        assert _ok(busy, answer)


@TODAY
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


# --- exercise 04, task 4: the neighbour's read, judged ----------------------------------------------------

def _neighbour():
    from iolab.lessons.l04_ior import pitfalls as lab
    return lab.experiment(lab.runs()["neighbour"], recording=lab.recording("neighbour", "4.0.0", "ext4"),
                          name="neighbour", quiet=True, trace=True)


def _wrong_verdicts(e):
    best, c = e.best("read"), e.cache
    right = dict(device_bps=c.device_bps, resident_fraction=c.resident_fraction, witness=e.witness,
                 nbytes=e.bytes_moved("read"))
    yield "MiB/s", measure.judge(best, **right)                                # the issue's: MiB/s for bytes/s
    yield "MB/s", measure.judge(best * 1e6, **right)                          # MB/s x 10**6
    yield "GiB", measure.judge(best * 2**30, **right)                         # x 2**30
    yield "write", measure.judge(e.best("write") * MiB, **right)              # the write's rate
    yield "device", measure.judge(best * MiB, **{**right, "device_bps": c.device_bps / MiB})
    yield "device_bps", measure.judge(best * MiB, **{**right, "device_bps": None})
    yield "resident", measure.judge(best * MiB, **{**right, "resident_fraction": None})
    yield "nbytes", measure.judge(best * MiB, **{**right, "nbytes": e.bytes_moved("read") // MiB})
    yield "nbytes", measure.judge(best * MiB, **{**right, "nbytes": e.bytes_moved("read") // 2})


def test_04_4_the_right_verdict_passes():
    e = _neighbour()
    right = measure.judge(e.best("read") * units.MiB, device_bps=e.cache.device_bps,
                          resident_fraction=e.cache.resident_fraction, witness=e.witness,
                          nbytes=e.bytes_moved("read"))
    assert check_04.check_04_reorder_verdict(e, right)


@TODAY
@pytest.mark.parametrize("k", range(9))
def test_04_4_every_plausible_wrong_verdict_fails_even_with_the_right_label(k):
    e = _neighbour()
    slip, wrong = list(_wrong_verdicts(e))[k]
    with pytest.raises(check.CheckFailed, match=slip):
        check_04.check_04_reorder_verdict(e, wrong)


@TODAY
def test_04_4_a_hand_made_verdict_with_the_right_label_fails():
    e = _neighbour()
    right = measure.judge(e.best("read") * units.MiB, device_bps=e.cache.device_bps,
                          resident_fraction=e.cache.resident_fraction, witness=e.witness,
                          nbytes=e.bytes_moved("read"))
    forged = measure.Verdict(right.label, "because", right.ground)
    with pytest.raises(check.CheckFailed, match="measure.judge"):
        check_04.check_04_reorder_verdict(e, forged)
