"""Issue 32: exercise checks that graded wrong. Each check is tried with the right answer and with every
wrong one a student plausibly writes, on the numbers a busy machine gives (a neighbour's writes on the
device, pages still dirty): the right one passes, each wrong one fails with a hint naming the slip."""
from __future__ import annotations

import pytest

from iolab import check, measure, units
from iolab.lessons.l04_ior import check as check_04
from iolab.units import MiB



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


@pytest.mark.parametrize("k", range(9))
def test_04_4_every_plausible_wrong_verdict_fails_even_with_the_right_label(k):
    e = _neighbour()
    slip, wrong = list(_wrong_verdicts(e))[k]
    with pytest.raises(check.CheckFailed, match=slip):
        check_04.check_04_reorder_verdict(e, wrong)


def test_04_4_a_hand_made_verdict_with_the_right_label_fails():
    e = _neighbour()
    right = measure.judge(e.best("read") * units.MiB, device_bps=e.cache.device_bps,
                          resident_fraction=e.cache.resident_fraction, witness=e.witness,
                          nbytes=e.bytes_moved("read"))
    forged = measure.Verdict(right.label, "because", right.ground)
    with pytest.raises(check.CheckFailed, match="measure.judge"):
        check_04.check_04_reorder_verdict(e, forged)
