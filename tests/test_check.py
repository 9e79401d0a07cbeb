"""Issue 22, 7: the hints of the arithmetic tasks name the likely mistake (a ratio upside down, MB for
MiB, GiB for GB, a total for a per-node share, a percentage, a gain for a ratio), not "more than k %
away from what this machine gives"."""
from __future__ import annotations

import pytest

from iolab import check
from iolab.lessons.l04_ior import check as check_04
from iolab.lessons.l00_start_here import check as check_00
from iolab.check import CheckFailed


@pytest.mark.parametrize("answer, expected, kw, words", [
    (0.25, 4.0, dict(ratio="warm / cold"), "upside down"),
    (10.2, 10.2 * 1e6 / 2**20, dict(ratio="MB/s x 10**6 / 2**20"), "MiB and MB"),
    (60.0, 60.0 / 1.073741824, dict(), "GiB and GB"),
    (240.0, 60.0, dict(per=("storage nodes", 4)), "that is the total"),
    (15.0, 60.0, dict(per=("storage nodes", 4)), "once too often"),
    (25.0, 0.25, dict(), "percentage"),
    (3.0, 4.0, dict(ratio="warm / cold"), "minus one"),
])
def test_a_usual_slip_is_named(answer, expected, kw, words):
    with pytest.raises(CheckFailed, match=words):
        check.close_to(answer, expected, rel=0.01, what="x", **kw)


def test_no_slip_gets_the_plain_hint_and_a_right_answer_passes():
    with pytest.raises(CheckFailed, match="no usual slip"):
        check.close_to(7.0, 4.0, rel=0.01, what="x", ratio="warm / cold")
    check.close_to(4.01, 4.0, rel=0.01, what="x")
    with pytest.raises(CheckFailed, match="not answered yet"):
        check.close_to(..., 4.0, what="x")


def test_the_seed_000_rate_hint_names_mb_against_mib():
    with pytest.raises(CheckFailed, match="MiB and MB"):
        check_00.check_00_rate(10.2 * 1.048576)          # multiplied where it should divide
    with pytest.raises(CheckFailed, match="MiB and MB"):
        check_00.check_00_rate(10.2)                     # no conversion at all


def test_the_storage_node_hint_names_per_node_against_aggregate():
    read_mib = check_04._seed001_fpp_read_mib()
    total_gb = read_mib * 2**20 / 1e9
    with pytest.raises(CheckFailed, match="that is the total"):
        check_04.check_04_storage_node_rate(total_gb)


def test_check_04_faster_with_confidence_names_the_mistake():
    from iolab import check, trials
    clear = trials.from_values({"big": [900.0, 950.0, 1000.0], "small": [300.0, 320.0, 400.0]},
                               unit="MiB/s", higher=True)
    overlap = trials.from_values({"big": [300.0, 950.0, 1000.0], "small": [300.0, 320.0, 400.0]},
                                 unit="MiB/s", higher=True)
    assert check_04.check_04_faster_with_confidence(clear, "big")
    assert check_04.check_04_faster_with_confidence(overlap, "too close")
    with pytest.raises(check.CheckFailed, match="spreads overlap.*big's worst trial"):
        check_04.check_04_faster_with_confidence(overlap, "big")
    with pytest.raises(check.CheckFailed, match="beyond the spread: name it"):
        check_04.check_04_faster_with_confidence(clear, "too close")
    with pytest.raises(check.CheckFailed, match="upside down"):
        check_04.check_04_faster_with_confidence(clear, "small")
    with pytest.raises(check.CheckFailed, match="not answered yet"):
        check_04.check_04_faster_with_confidence(clear, ...)
    few = trials.from_values({"big": [900.0, 950.0], "small": [300.0, 320.0]}, unit="MiB/s", higher=True)
    with pytest.raises(check.CheckFailed, match="at least 3 trials"):
        check_04.check_04_faster_with_confidence(few, "big")
    secs = trials.from_values({"fast": [1.0, 1.1, 1.2], "slow": [3.0, 3.1, 3.5]}, unit="s", higher=False)
    assert check_04.check_04_faster_with_confidence(secs, "fast")
    with pytest.raises(check.CheckFailed, match="fewer seconds is faster"):
        check_04.check_04_faster_with_confidence(secs, "slow")


# --- issue 32: hints for numbers name the likely slip, never a generic "redo the arithmetic" ------------

@pytest.mark.parametrize("answer, expected, words", [
    (239575.0 / 4, 239575.0 * 2**20 / 1e9 / 4, r"MiB/s.*GB/s.*953\.7|1,000 / 1\.048"),    # MiB/s left as it is
    (62.8 * 1e9 / 2**20, 62.8, r"MiB/s.*GB/s"),                                          # the other way round
    (62_800.0, 62.8, r"factor of 1,000"),                                                 # MB/s for GB/s
    (0.0628, 62.8, r"factor of 1,000"),
    (64.0 * 1024, 64.0, r"factor of 1,024"),                                               # KiB for MiB
    (64.0 * 2**20, 64.0, r"2\*\*20"),                                                       # bytes for MiB
    (64.0 * 1e6, 64.0, r"10\*\*6"),                                                         # bytes for MB
])
def test_a_unit_slip_of_about_a_thousand_is_named(answer, expected, words):
    with pytest.raises(CheckFailed, match=words):
        check.close_to(answer, expected, rel=0.01, what="x")


def test_a_named_wrong_value_gets_its_own_hint():
    # a check knows the wrong numbers its task invites: the primaries without their replicas, or a
    # counter read off instead of the quantity computed from it
    wrong = ((12.0, "those are the primaries only: each object is stored 3 times (size=3), count the replicas"),
             (4096.0, "that is the counter itself: the task asks for the bytes per call, counter / calls"))
    with pytest.raises(CheckFailed, match="primaries only"):
        check.close_to(12.0, 36.0, rel=0.01, what="objects", wrong=wrong)
    with pytest.raises(CheckFailed, match="counter itself"):
        check.close_to(4096.0, 16.0, rel=0.01, what="bytes per call", wrong=wrong)
    check.close_to(36.0, 36.0, rel=0.01, what="objects", wrong=wrong)


def test_with_no_known_slip_the_hint_says_which_way_and_roughly_how_far():
    with pytest.raises(CheckFailed, match="too high: about 1.75 times what") as e:
        check.close_to(7.0, 4.0, rel=0.01, what="x", ratio="warm / cold")
    assert "redo the arithmetic" not in str(e.value)
    with pytest.raises(CheckFailed, match="too low"):
        check.close_to(3.0, 4.1, rel=0.01, what="x")


def test_a_gain_is_named_a_gain_not_the_gib_gb_factor():
    # 14.83 for 15.83 lies within 5 % of 15.83 / 1.0737 too; the gain lies nearer
    with pytest.raises(check.CheckFailed, match="minus one"):
        check.close_to(14.83, 15.83, rel=0.05, what="speed-up", ratio="warm / cold")


def test_an_answer_just_outside_the_tolerance_is_told_so():
    # "too low: about 1/1 of" said nothing for 9.7 against 9.727 at 0.2 %
    with pytest.raises(check.CheckFailed, match=r"just outside the tolerance: 0\.3% too low") as e:
        check.close_to(9.7, 9.727, rel=0.002, what="rate")
    assert "1/1 of" not in str(e.value)
