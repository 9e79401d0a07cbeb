"""Issue 22, 7: the hints of the arithmetic tasks name the likely mistake (a ratio upside down, MB for
MiB, GiB for GB, a total for a per-node share, a percentage, a gain for a ratio), not "more than k %
away from what this machine gives"."""
from __future__ import annotations

import pytest

from iolab import check
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
    with pytest.raises(CheckFailed, match="redo the arithmetic"):
        check.close_to(7.0, 4.0, rel=0.01, what="x", ratio="warm / cold")
    check.close_to(4.01, 4.0, rel=0.01, what="x")
    with pytest.raises(CheckFailed, match="not answered yet"):
        check.close_to(..., 4.0, what="x")


def test_the_seed_000_rate_hint_names_mb_against_mib():
    with pytest.raises(CheckFailed, match="MiB and MB"):
        check.check_00_rate(10.2 * 1.048576)          # multiplied where it should divide
    with pytest.raises(CheckFailed, match="MiB and MB"):
        check.check_00_rate(10.2)                     # no conversion at all


def test_the_storage_node_hint_names_per_node_against_aggregate():
    read_mib = check._seed001_fpp_read_mib()
    total_gb = read_mib * 2**20 / 1e9
    with pytest.raises(CheckFailed, match="that is the total"):
        check.check_04_storage_node_rate(total_gb)
