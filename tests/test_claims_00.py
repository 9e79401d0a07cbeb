"""Lesson 00's claims follow the four reads, on a disk and in memory: the kernel's witness first
(bytes from storage), then residency, then the rate."""
from __future__ import annotations

import pandas as pd
import pytest

from iolab import explain, fsinfo, workspace
from iolab.labs import first_look
from iolab.units import MiB


@pytest.mark.parametrize("base", ["/tmp", "/dev/shm"])
def test_claims_follow_live_reads_on_disk_and_in_memory(base, capsys):
    with workspace.Workspace(budget="64MiB", base=base) as ws:
        path = ws.make_file("first.bin", "16MiB")
        frame = first_look.repeat_reads(path, times=3)
        claims = first_look.repeat_reads_claims(frame, fstype=fsinfo.fstype(ws.root))
    assert all(c.consistent() for c in claims)
    cold_stored, warm_stored, evicted, resident, faster = claims
    assert {"from_storage", "device_read", "disturbed", "verdict"} <= set(frame.columns)
    if fsinfo.fstype(base) == "tmpfs":
        # nothing below the page cache: the "cold" read was not cold, and the lesson says why
        assert evicted.held is False and "tmpfs" in evicted.text
        assert cold_stored.held is None and warm_stored.held is None and "no block device" in cold_stored.text
        assert frame["from_storage"].isna().all()
    else:
        assert evicted.held is True
        assert cold_stored.held is True and warm_stored.held is True      # 16 MiB cold, 0 B warm
        assert frame["from_storage"].iloc[0] >= 16 * MiB and (frame["from_storage"].iloc[1:] == 0).all()
    assert resident.held is True
    printed = capsys.readouterr().out
    assert all(c.text in printed for c in claims)


def _frame(cold_s, warm_s, cold_before=0.0, cold_stored=None, warm_stored=None, disturbed=False):
    n = 64 * MiB
    rows = [{"read": 1, "state": "cold", "bytes": n, "seconds": cold_s, "cache_before": cold_before,
             "from_storage": cold_stored, "disturbed": disturbed, "witness_note": ""}]
    rows += [{"read": i, "state": "warm", "bytes": n, "seconds": warm_s, "cache_before": 1.0,
              "from_storage": warm_stored, "disturbed": False, "witness_note": ""} for i in (2, 3, 4)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("cold_s,warm_s,faster", [(0.5, 0.02, True), (0.03, 0.02, False)])
def test_a_fast_device_is_not_called_slow(cold_s, warm_s, faster):
    claims = first_look.repeat_reads_claims(_frame(cold_s, warm_s, cold_stored=64 * MiB, warm_stored=0), fstype="ext4")
    assert claims[0].held is True and claims[1].held is True      # the witness says cold and warm all the same
    assert claims[4].held is faster and all(c.consistent() for c in claims)
    if not faster:
        assert explain.NOT_THIS_TIME in claims[4].text and "virtual machine" in claims[4].text


def test_pages_evicted_between_the_reads_show_in_the_witness():
    claims = first_look.repeat_reads_claims(_frame(0.5, 0.1, cold_stored=64 * MiB, warm_stored=32 * MiB), fstype="ext4")
    assert claims[1].held is False and "32 MiB from storage" in claims[1].text and "memory pressure" in claims[1].text
    assert all(c.consistent() for c in claims)


def test_a_disturbed_run_names_the_other_traffic_when_the_rates_disagree():
    claims = first_look.repeat_reads_claims(_frame(0.03, 0.02, cold_stored=64 * MiB, warm_stored=0, disturbed=True),
                                     fstype="ext4")
    assert claims[4].held is False and "another program's traffic" in claims[4].text
    assert all(c.consistent() for c in claims)


def test_an_old_table_without_witness_columns_cannot_tell():
    frame = _frame(0.5, 0.02).drop(columns=["from_storage", "disturbed", "witness_note"])
    claims = first_look.repeat_reads_claims(frame, fstype="ext4")
    assert claims[0].held is None and "no witness columns" in claims[0].text
    assert all(c.consistent() for c in claims)
