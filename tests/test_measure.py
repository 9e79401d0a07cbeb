"""iolab.measure: verdicts (pure) and timed experiments (live; asserted on residency, never on time)."""
from __future__ import annotations

import math
import os

import pytest

from iolab import fsinfo, measure, pagecache
from iolab.errors import IolabError, OutsideWorkspace
from iolab.units import MiB

SEED_001_READ = 239576 * MiB        # seed 001: IOR -F read, 239,576 MiB/s (251 GB/s)
SEED_001_CREDIBLE = 840.71 * MiB    # seed 001: IOR -F -C read, 840.71 MiB/s


# --- judge ----------------------------------------------------------------------------------------

def test_seed_ior_read_is_flagged_as_cache():
    v = measure.judge(SEED_001_READ, device_bps=SEED_001_CREDIBLE)
    assert v.label == measure.CACHE
    assert "285.0x" in v.reason


def test_verdict_is_frozen_and_labels_are_checked():
    v = measure.Verdict(measure.DEVICE, "x")
    with pytest.raises(Exception):
        v.label = measure.CACHE
    with pytest.raises(ValueError):
        measure.Verdict("from memory", "x")


@pytest.mark.parametrize("rate, device, frac, label", [
    (100 * MiB, 100 * MiB, None, measure.UNCLEAR),       # plausible for the device, cache not ruled out
    (100 * MiB, None, None, measure.UNCLEAR),            # nothing to compare with
    (100 * MiB, None, 1.0, measure.CACHE),               # all resident before: memory
    (100 * MiB, None, 0.0, measure.DEVICE),              # nothing resident before: device
    (100 * MiB, 200 * MiB, 0.0, measure.DEVICE),
    (1000 * MiB, 200 * MiB, 0.0, measure.UNCLEAR),       # nothing cached here, yet too fast: a cache below
    (300 * MiB, 200 * MiB, None, measure.UNCLEAR),       # 1.5x: within noise of the device
    (500 * MiB, 200 * MiB, None, measure.CACHE),         # 2.5x: beyond the device
    (100 * MiB, 200 * MiB, 0.5, measure.UNCLEAR),        # half cached: a mix
    (100 * MiB, 200 * MiB, 0.96, measure.CACHE),
])
def test_judge_table(rate, device, frac, label):
    assert measure.judge(rate, device_bps=device, resident_fraction=frac).label == label


@pytest.mark.parametrize("kwargs", [
    dict(bytes_per_s=0, device_bps=None), dict(bytes_per_s=-1, device_bps=None),
    dict(bytes_per_s=math.nan, device_bps=None), dict(bytes_per_s="fast", device_bps=None),
    dict(bytes_per_s=1.0, device_bps=0), dict(bytes_per_s=1.0, device_bps=None, resident_fraction=1.5),
    dict(bytes_per_s=1.0, device_bps=None, resident_fraction=-0.1),
    dict(bytes_per_s=1.0, device_bps=1.0, tolerance=0.5),
])
def test_judge_rejects_bad_input(kwargs):
    rate = kwargs.pop("bytes_per_s")
    with pytest.raises(ValueError):
        measure.judge(rate, **kwargs)


def test_judge_write():
    assert measure.judge_write(100 * MiB, fsync=True).label == measure.DEVICE
    v = measure.judge_write(5000 * MiB, fsync=False, device_bps=100 * MiB, dirty_growth=64 * MiB, nbytes=64 * MiB)
    assert v.label == measure.CACHE and "Dirty grew by 64 MiB" in v.reason and "50.0x" in v.reason


# --- device_rate ----------------------------------------------------------------------------------

def test_device_rate_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        measure.device_rate(tmp_path / "nope")
    f = tmp_path / "f"
    f.write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        measure.device_rate(f)
    with pytest.raises(ValueError, match="too small"):
        measure.device_rate(tmp_path, "4k")
    with pytest.raises(ValueError):
        measure.device_rate(tmp_path, "8MiB", repeat=0)


@pytest.mark.live
def test_device_rate_measures_cleans_up_and_memoizes(ws):
    before = set(os.listdir(ws.root))
    r1 = measure.device_rate(ws.root, "8MiB", refresh=True)
    assert r1 > 0 and math.isfinite(r1)
    assert set(os.listdir(ws.root)) == before            # the probe file and its directory are gone
    assert measure.device_rate(ws.root, "8MiB") == r1    # memoized: the very same number


@pytest.mark.live
def test_device_rate_refuses_tmpfs():
    if fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    with pytest.raises(IolabError, match="tmpfs"):
        measure.device_rate("/dev/shm", "1MiB")


# --- timed_read / timed_write ---------------------------------------------------------------------

@pytest.mark.live
def test_cold_then_warm_read_verdicts(ws):
    if fsinfo.fstype(ws.root) in fsinfo.MEMORY_FS:
        pytest.skip("workspace on tmpfs")
    p = ws.make_file("r.bin", "16MiB")
    cold = measure.timed_read(p, cache="cold")
    assert cold.before.resident == 0 and cold.after.fraction == 1.0
    assert cold.nbytes == 16 * MiB and cold.calls == 17          # 16 full reads + the one that sees EOF
    assert cold.verdict.label == measure.DEVICE or cold.witness.disturbed, cold
    warm = measure.timed_read(p)
    assert warm.before.fraction == 1.0
    assert warm.verdict.label == measure.CACHE or warm.witness.disturbed, warm
    row = warm.row()
    assert row["verdict"] == measure.CACHE and row["cache"] == "as-is"


@pytest.mark.live
def test_direct_read_leaves_page_cache_alone(ws):
    if fsinfo.fstype(ws.root) in fsinfo.MEMORY_FS:
        pytest.skip("workspace on tmpfs: no O_DIRECT")
    p = ws.make_file("d.bin", "4MiB")
    for _ in range(5):               # another job's I/O on the device (CI shares it) makes a run DISTURBED
        m = measure.timed_read(p, cache="cold", direct=True, block_size="256KiB")
        assert m.before.resident == 0 and m.after.resident == 0        # nothing went through the cache
        if not m.witness.disturbed:
            break
    assert "O_DIRECT" in m.verdict.reason or (m.witness.disturbed and "DISTURBED" in m.verdict.reason), m
    with pytest.raises(ValueError, match="multiple"):
        measure.timed_read(p, direct=True, block_size=1000)


@pytest.mark.live
def test_timed_read_bad_input(ws, tmp_path):
    with pytest.raises(FileNotFoundError):
        measure.timed_read(tmp_path / "nope")
    with pytest.raises(IsADirectoryError):
        measure.timed_read(ws.root)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(pagecache.NotARegularFile):
        measure.timed_read(fifo)
    with pytest.raises(ValueError):
        measure.timed_read(ws.make_file("x", "4k"), cache="hot")


@pytest.mark.live
def test_timed_write_with_and_without_fsync(ws):
    m = measure.timed_write("w.bin", "8MiB", ws=ws)
    assert m.nbytes == 8 * MiB and m.calls == 8 and os.path.getsize(m.path) == 8 * MiB
    assert m.after.fraction == 1.0
    assert m.verdict.label == measure.CACHE or m.witness.disturbed, m
    s = measure.timed_write("w.bin", "8MiB", ws=ws, fsync=True)
    # on a shared machine someone else's traffic can disturb it: then it must say so
    assert "fsync" in s.verdict.reason, s
    assert s.verdict.label == measure.DEVICE or (s.witness.disturbed and "DISTURBED" in s.verdict.reason), s
    with pytest.raises(OutsideWorkspace):
        measure.timed_write("/etc/iolab-nope", "1MiB", ws=ws)


def test_dirty_growth_is_read_after_the_truncation(ws, monkeypatch):
    """A second write of the same file truncates it first, cancelling the first write's dirty pages: Dirty
    read before that truncation made a 64 MiB write look like +0 MiB (lesson 01, live at load 3). The
    baseline is taken once the file is empty."""
    path = ws.root / "twice.bin"
    measure.timed_write(path, "1MiB", ws=ws)
    sizes = []
    real = pagecache.meminfo

    def spy():
        sizes.append(path.stat().st_size if path.exists() else None)
        return real()
    monkeypatch.setattr(pagecache, "meminfo", spy)
    fds = []
    real_close = os.close

    def spy_close(fd):
        fds.append(len(sizes))               # how many Dirty readings were taken when the file was closed
        real_close(fd)
    monkeypatch.setattr(os, "close", spy_close)
    measure.timed_write(path, "1MiB", ws=ws)
    monkeypatch.setattr(os, "close", real_close)
    assert sizes[0] == 0 and sizes[-1] == MiB         # before: truncated already; after: written
    # and both readings come before close(): ext4 (auto_da_alloc) starts writing back a truncated and
    # rewritten file at close, so Dirty read after it showed +0 MiB for a 64 MiB write (lesson 01, live)
    assert 1 not in fds and 2 in fds                 # no close() between the two readings


def test_an_fsynced_write_to_tmpfs_is_not_from_a_device():
    if not os.path.isdir("/dev/shm") or fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    from iolab import workspace
    with workspace.Workspace(budget="16MiB", base="/dev/shm") as w:
        m = measure.timed_write("w.bin", "4MiB", ws=w, fsync=True)
    assert m.verdict.label == measure.CACHE and "tmpfs" in m.verdict.reason
    assert m.verdict.ground == measure.INFERENCE and "no block device" in m.verdict.reason


@pytest.mark.live
def test_device_rates_keeps_every_read_and_device_rate_is_the_fastest(ws):
    rates = measure.device_rates(ws.root, "8MiB", refresh=True, repeat=3)
    assert len(rates) == 3 and all(r > 0 and math.isfinite(r) for r in rates)
    assert measure.device_rate(ws.root, "8MiB") == max(rates)        # memoized: the same reads
    assert measure.device_rates(ws.root, "8MiB") == rates
