"""A tool run reserves what it will write in the workspace that holds its output (issue 16)."""
from __future__ import annotations

import pytest
from conftest import needs

from iolab import BudgetExceeded, OutsideWorkspace, workspace
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


# --- mdtest: files x -w, against the budget of the workspace the learner gave (or the session's) ------

def test_mdtest_counts_files_as_mdtest_does():
    from iolab.tools import mdtest

    assert mdtest.bytes_to_write(mdtest.Options(files=10, iterations=3, write_bytes=4096), 2) == 2 * 10 * 3 * 4096
    assert mdtest.bytes_to_write(mdtest.Options(files=10, write_bytes=4096, dirs_only=True), 2) == 0
    assert mdtest.bytes_to_write(mdtest.Options(files=10), 2) == 0                      # no -w: empty files
    # a tree of 1 + 2 + 4 = 7 directories: -n rounded down to a multiple of 7 (mdtest.c: items_per_dir)
    assert mdtest.items_per_rank(mdtest.Options(files=10, depth=2, branching=2)) == 7
    assert mdtest.items_per_rank(mdtest.Options(files=10, depth=2, branching=2, extra=("-L",))) == 8
    # -n and -I: -n items per directory loop, in each of the tree's directories
    assert mdtest.items_per_rank(mdtest.Options(files=10, items_per_dir=5, depth=1, branching=2)) == 30


@pytest.mark.live
@needs("mdtest")
@pytest.mark.parametrize("kw", [dict(files=10), dict(files=10, depth=2, branching=2),
                                dict(files=10, items_per_dir=5, depth=1, branching=2),
                                dict(files=10, depth=2, branching=2, extra=("-L",))])
def test_mdtest_counts_what_mdtest_says_it_makes(kw, tmp_path):
    # mdtest's own "N tasks, M files" line, one rank, DUMMY backend (nothing written)
    import os

    from iolab import mpi, runner
    from iolab.tools import mdtest

    o = mdtest.Options(files_only=True, directory=str(tmp_path / "t"), extra=("-a", "DUMMY", *kw.pop("extra", ())),
                       **kw)
    r = runner.run(o.argv(), timeout=60, env=mpi.runtime_env(tmp_path / "mpi", singleton=True))
    assert mdtest.parse(r.stdout)[0]["items"] == mdtest.items_per_rank(o), r.stdout
    assert not os.path.exists(tmp_path / "t")


class _NoRun(Exception):
    pass


@pytest.fixture
def mdtest_never_runs(monkeypatch):
    from iolab import runner

    def refuse(*a, **k):
        raise _NoRun(a)

    monkeypatch.setattr(runner, "which", lambda exe: f"/usr/bin/{exe}")
    monkeypatch.setattr(runner, "run", refuse)


def test_mdtest_over_the_given_budget_is_refused_before_it_starts(mdtest_never_runs, tmp_path):
    from iolab.tools import mdtest

    big = mdtest.Options(files=100, iterations=2, write_bytes=64 * 1024)          # 2 x 100 x 2 x 64 KiB = 25 MiB
    with workspace.Workspace(budget="4MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded, match="25 MiB"):
            mdtest.run(big, 2, ws=ws)
        other = tmp_path / "other-fs"
        other.mkdir()
        # on another filesystem: the private workspace made there used to have its own 256 MiB
        with pytest.raises(BudgetExceeded, match="25 MiB"):
            mdtest.run(big, 2, ws=ws, on=other)
        assert list(other.iterdir()) == [] and list(ws.root.iterdir()) == []
        with pytest.raises(_NoRun):                                                   # within budget: it starts
            mdtest.run(mdtest.Options(files=4, write_bytes=4096), 2, ws=ws, on=other)


def test_mdtest_on_another_filesystem_counts_what_the_workspace_holds(mdtest_never_runs, tmp_path):
    from iolab.tools import mdtest

    with workspace.Workspace(budget="4MiB", base=tmp_path) as ws:
        ws.make_file("held.bin", "3MiB")
        other = tmp_path / "other-fs"
        other.mkdir()
        with pytest.raises(BudgetExceeded):                          # 2 MiB more does not fit in what is left
            mdtest.run(mdtest.Options(files=16, write_bytes=64 * 1024), 2, ws=ws, on=other)


# --- measure.timed_write: the budget of the workspace that holds the file ---------------------------

def test_timed_write_over_budget_is_budget_exceeded_whichever_ws_is_given(tmp_path):
    from iolab import measure

    with workspace.Workspace(budget="1MiB", base=tmp_path) as tight, \
            workspace.Workspace(budget="64MiB", base=tmp_path) as roomy:
        with pytest.raises(BudgetExceeded):
            measure.timed_write(tight.path("w.bin"), "4MiB", ws=roomy)
        with pytest.raises(BudgetExceeded):
            measure.timed_write(tight.path("w.bin"), "4MiB")                    # no ws: not the session's
        assert not tight.path("w.bin").exists()
        m = measure.timed_write(roomy.path("w.bin"), "2MiB", ws=tight)         # roomy holds it: fits
        assert m.nbytes == 2 * MiB and tight.used == 0
        with pytest.raises(OutsideWorkspace):
            measure.timed_write(tmp_path / "loose.bin", "1KiB", ws=tight)       # in no workspace at all
