"""A tool run reserves what it will write in the workspace that holds its output (issue 16)."""
from __future__ import annotations

import pytest
from conftest import needs

from iolab import BudgetExceeded, workspace
from iolab.tools import dd, fio
from iolab.units import MiB


def test_holding_finds_the_innermost_open_workspace(tmp_path):
    with workspace.Workspace(budget="1MiB", base=tmp_path) as outer:
        inner = workspace.Workspace(budget="1MiB", base=outer.root)
        assert workspace.holding(inner.root / "x.bin") is inner
        assert workspace.holding(outer.root / "x.bin") is outer
        assert workspace.holding("/dev/null") is None
        inner.close()
        assert workspace.holding(inner.root / "x.bin") is outer


def test_fio_counts_what_it_lays_out(tmp_path):
    jobs = [fio.job("a", rw="read", filesize="2MiB", nrfiles=3, numjobs=2),   # fio: 2MiB = 2,000,000
            fio.job("b", rw="write", size=64 * MiB, directory=tmp_path / "d"),
            fio.job("c", rw="read", filename="/dev/null", size=MiB)]
    assert fio.bytes_to_lay_out(jobs, tmp_path) == [(tmp_path, 12_000_000), (tmp_path / "d", 64 * MiB)]


def test_dd_counts_what_it_writes(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"x" * 10_000)
    assert dd.bytes_to_write("/dev/zero", bs="64k", count=16) == 16 * 65536
    assert dd.bytes_to_write(src, bs=4096) == 10_000
    assert dd.bytes_to_write(src, bs=4096, skip=2) == 10_000 - 8192
    assert dd.bytes_to_write(src, bs=1000, count=3) == 3000
    with pytest.raises(ValueError, match="without count"):
        dd.bytes_to_write("/dev/zero", bs="1M")


@pytest.mark.live
@needs("fio")
def test_fio_over_budget_is_refused_before_it_writes(tmp_path):
    with workspace.Workspace(budget="1MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded):
            fio.run(fio.job("big", rw="write", bs="1M", size=64 * MiB), workdir=ws.root)
        assert ws.used < MiB


@pytest.mark.live
@needs("dd")
def test_dd_over_budget_is_refused_before_it_writes(tmp_path):
    with workspace.Workspace(budget="1MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded):
            dd.run("/dev/zero", ws.root / "big.bin", bs="1M", count=64)
        assert not (ws.root / "big.bin").exists()
        dd.run("/dev/zero", ws.root / "small.bin", bs="64k", count=4)       # within budget: runs
        assert (ws.root / "small.bin").stat().st_size == 4 * 65536
