"""dd and fio runs carry the witness of their run (issue 12): the tool's own bytes from storage (its
rusage once reaped) and the device's; a run with nothing to watch says why."""
from __future__ import annotations

import dataclasses
import sys

import pytest

from conftest import needs
from iolab import fsinfo, pagecache, recordings, runner, witness, workspace
from iolab.tools import dd, fio
from iolab.units import MiB


@pytest.fixture
def disk():
    with workspace.Workspace(budget="128MiB", base="/tmp") as ws:
        if witness.block_device(ws.root) is None:
            pytest.skip("/tmp has no block device here")
        yield ws


@pytest.mark.live
@needs("dd")
def test_dd_reading_a_cold_file_is_witnessed(disk):
    f = disk.make_file("in.bin", "8MiB")
    pagecache.evict(f)
    r = dd.run(f, "/dev/null", bs="1MiB")
    assert isinstance(r, runner.Run) and r.witness is not None
    w = r.witness
    assert w.device == witness.block_device(f).name
    assert 8 * MiB <= w.own_read <= 12 * MiB and w.device_read >= 8 * MiB
    warm = dd.run(f, "/dev/null", bs="1MiB").witness
    assert warm.own_read == 0                               # the page cache served dd the second time


@pytest.mark.live
@needs("dd")
def test_dd_writing_with_fsync_reaches_the_device(disk):
    r = dd.run("/dev/zero", disk.path("out.bin"), bs="1MiB", count=8, conv=["fsync"])
    assert r.witness.own_written >= 8 * MiB and r.witness.device_written >= 8 * MiB


@pytest.mark.live
@needs("dd")
def test_dd_between_devices_has_nothing_to_witness():
    r = dd.run("/dev/zero", "/dev/null", bs="4KiB", count=4)
    assert r.witness is None and "nothing to witness" in r.witness_note


@pytest.mark.live
@needs("dd")
def test_dd_on_tmpfs_says_there_is_no_device():
    if fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    with workspace.Workspace(budget="8MiB", base="/dev/shm") as ws:
        r = dd.run("/dev/zero", ws.path("z.bin"), bs="1MiB", count=2)
    assert r.witness.device is None and r.witness.device_written is None
    assert "no block device" in str(r.witness)


@pytest.mark.live
@needs("fio")
def test_fio_run_is_witnessed(disk):
    d = disk.mkdir("fio")
    r = fio.run(fio.job("w", rw="write", bs=4096, size=4 * MiB, directory=d, end_fsync=1), workdir=disk.root,
                timeout=60)
    assert r.witness is not None and r.witness.device == witness.block_device(d).name
    assert r.witness.own_written >= 4 * MiB and r.witness.device_written >= 4 * MiB


def test_live_or_recorded_takes_the_runs_witness(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "live")
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    seen = witness.Witnessed(0, 0, "vda", 0, 0)

    def live():
        r = runner.run([sys.executable, "-c", "print(1)"], timeout=30)
        return dataclasses.replace(r, witness=seen)

    out = recordings.live_or_recorded(live, "demo/none", quiet=True)
    assert out.witness is seen


def test_runner_witnesses_any_tool_run_it_is_asked_to(tmp_path):
    f = tmp_path / "out.bin"
    r = runner.run([sys.executable, "-c", f"open({str(f)!r}, 'wb').write(b'x' * 65536)"], timeout=30, witness=tmp_path)
    assert r.witness is not None and r.witness.own_written is not None
    assert r.witness.own_written >= 65536 or r.witness.device is None      # dirtied pages are charged at write()
    assert runner.run([sys.executable, "-c", "pass"], timeout=30).witness is None
