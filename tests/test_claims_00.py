"""Lesson 00's claims follow the four reads, on a disk and in memory."""
from __future__ import annotations

import pandas as pd
import pytest

from iolab import explain, firstlook, fsinfo, workspace


@pytest.mark.parametrize("base", ["/tmp", "/dev/shm"])
def test_claims_follow_live_reads_on_disk_and_in_memory(base, capsys):
    with workspace.Workspace(budget="64MiB", base=base) as ws:
        path = ws.make_file("first.bin", "16MiB")
        frame = firstlook.repeat_reads(path, times=3)
        claims = firstlook.explain_reads(frame, fstype=fsinfo.fstype(ws.root))
    assert all(c.consistent() for c in claims)
    evicted, resident, faster = claims
    if fsinfo.fstype(base) == "tmpfs":
        # nothing below the page cache: the "cold" read was not cold, and the lesson says why
        assert evicted.held is False and "tmpfs" in evicted.text
    else:
        assert evicted.held is True
    assert resident.held is True
    printed = capsys.readouterr().out
    assert all(c.text in printed for c in claims)


def _frame(cold_s, warm_s, cold_before=0.0):
    rows = [{"read": 1, "state": "cold", "seconds": cold_s, "cache_before": cold_before}]
    rows += [{"read": i, "state": "warm", "seconds": warm_s, "cache_before": 1.0} for i in (2, 3, 4)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("cold_s,warm_s,faster", [(0.5, 0.02, True), (0.03, 0.02, False)])
def test_a_fast_device_is_not_called_slow(cold_s, warm_s, faster):
    claims = firstlook.explain_reads(_frame(cold_s, warm_s), fstype="ext4")
    assert claims[2].held is faster and all(c.consistent() for c in claims)
    if not faster:
        assert explain.NOT_THIS_TIME in claims[2].text and "virtual machine" in claims[2].text
