"""Exercise 07's checks: the right answers pass, the usual wrong ones fail with a hint."""
from __future__ import annotations

import pytest
from conftest import needs

from iolab import check
from iolab.lessons.l07_darshan import profile as lab, mpiio, check as check_07

pytestmark = needs("PyDarshan")       # every test reads recorded logs through PyDarshan


@pytest.fixture(autouse=True)
def _replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")


@pytest.fixture
def profile():
    return lab.profile_read_loop(None, 65536, recording="readloop-64k-1mib", quiet=True)


def test_reads(profile):
    assert check_07.check_07_reads(17, profile)
    with pytest.raises(check.CheckFailed, match="returns 0 bytes"):
        check_07.check_07_reads(16, profile)
    with pytest.raises(check.CheckFailed):
        check_07.check_07_reads(18, profile)


def test_share(profile):
    from iolab.tools import darshan

    f = darshan.files(profile.log, ["POSIX"])
    share = f.loc[f["file"] == profile.target, "bytes_read"].sum() / f["bytes_read"].sum()
    assert 0 < share < 1 and check_07.check_07_share(float(share), profile)
    with pytest.raises(check.CheckFailed, match="percentage"):
        check_07.check_07_share(float(share) * 100, profile)


def test_collective():
    writes = mpiio.collective(quiet=True)
    assert check_07.check_07_collective({"bytes_per_write": 16384, "aggregators": 1}, writes)
    with pytest.raises(check.CheckFailed, match="segments"):
        check_07.check_07_collective({"bytes_per_write": 16384, "aggregators": 64}, writes)
    with pytest.raises(check.CheckFailed, match="posix_bytes"):
        check_07.check_07_collective({"bytes_per_write": 4096, "aggregators": 1}, writes)
    # issue 32: a counter read off instead of the quantity computed from it is named as such
    row = writes.frame.set_index("case").loc["collective"]
    for counter in ("posix_bytes", "posix_writes"):
        with pytest.raises(check.CheckFailed, match=f"that is {counter}, the counter itself"):
            check_07.check_07_collective({"bytes_per_write": int(row[counter]), "aggregators": 1}, writes)
