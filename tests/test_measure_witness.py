"""Verdicts that put the kernel's witness first (issue 12): constructed witnesses for every branch, and
live measurements: warm, cold, written back, O_DIRECT, disturbed by another process, and tmpfs."""
from __future__ import annotations

import os
import subprocess

import pytest

from iolab import fsinfo, measure, pagecache, witness, workspace
from iolab.units import MiB
from iolab.witness import Witnessed

N = 128 * MiB


def seen(own_read=0, own_written=0, device="vda", device_read=0, device_written=0, notes=()):
    return Witnessed(own_read, own_written, device, device_read, device_written, tuple(notes))


# --- reads, from constructed witnesses ----------------------------------------------------------------

def test_nothing_from_storage_is_memory_first_and_the_rate_second():
    v = measure.judge(10_000 * MiB, device_bps=1000 * MiB, witness=seen(), nbytes=N)
    assert v.label == measure.CACHE and v.ground == measure.WITNESS
    assert v.reason.startswith("0 B came from storage while 128 MiB were read: memory served it")
    assert v.reason.index("memory served it") < v.reason.index("second ground: 10,000.0 MiB/s is 10.0x")


def test_everything_from_storage_is_the_device_even_at_a_cache_like_rate():
    v = measure.judge(200 * MiB, device_bps=1000 * MiB, resident_fraction=1.0,    # residency says cache:
                      witness=seen(own_read=N, device_read=N), nbytes=N)          # the witness wins
    assert v.label == measure.DEVICE and "128 MiB came from storage" in v.reason
    fast = measure.judge(5000 * MiB, device_bps=1000 * MiB, witness=seen(own_read=N, device_read=N), nbytes=N)
    assert fast.label == measure.DEVICE and "below the block device a cache answered" in fast.reason


def test_part_from_storage_is_a_mix():
    v = measure.judge(500 * MiB, device_bps=None, witness=seen(own_read=N // 2, device_read=N // 2), nbytes=N)
    assert v.label == measure.UNCLEAR and "50% came from the device" in v.reason and v.witnessed


def test_someone_elses_traffic_makes_it_disturbed_and_says_how_much():
    w = seen(device_read=0, device_written=48 * MiB)             # we read nothing; the device wrote 48 MiB
    assert w.disturbed
    v = measure.judge(9000 * MiB, device_bps=1000 * MiB, witness=w, nbytes=N)
    assert v.label == measure.UNCLEAR and v.reason.startswith("DISTURBED: the device vda moved 48 MiB written")
    assert "memory served it" in v.reason                        # its own count is still reported


def test_without_a_block_device_it_is_inference_and_says_so():
    w = seen(device=None, device_read=None, device_written=None, notes=("no block device behind this file",))
    v = measure.judge(100 * MiB, device_bps=None, resident_fraction=1.0, witness=w, nbytes=N)
    assert v.label == measure.CACHE and v.ground == measure.INFERENCE
    assert v.reason.startswith("no witness: no block device behind this file. By inference: 100% of the file")
    bare = measure.judge(100 * MiB, device_bps=None, resident_fraction=0.0)
    assert bare.ground == measure.INFERENCE and bare.reason.startswith(f"no witness: {measure.NOT_WITNESSED}")


def test_without_task_accounting_the_device_is_an_upper_bound():
    quiet = measure.judge(9000 * MiB, device_bps=None, witness=seen(own_read=None, device_read=4096), nbytes=N)
    assert quiet.label == measure.CACHE and quiet.witnessed and "upper bound" in quiet.reason
    busy = measure.judge(90 * MiB, device_bps=None, resident_fraction=0.0,
                         witness=seen(own_read=None, device_read=N), nbytes=N)
    assert busy.ground == measure.INFERENCE and busy.label == measure.DEVICE and "cannot be told" in busy.reason


def test_a_witness_needs_the_bytes_read():
    with pytest.raises(ValueError, match="nbytes"):
        measure.judge(1.0, device_bps=None, witness=seen())


# --- writes ------------------------------------------------------------------------------------------

def test_write_verdicts_from_the_device_counters():
    cached = measure.judge_write(3000 * MiB, fsync=False, nbytes=64 * MiB,
                                 witness=seen(own_written=64 * MiB, device_written=44 * 1024),
                                 cache_after=witness.CacheStat(16384, 16384, 0, 0, 0))
    assert cached.label == measure.CACHE and cached.witnessed
    assert "wrote 44 KiB while 64 MiB were written" in cached.reason and "16,384 of the file's pages were dirty" \
        in cached.reason
    synced = measure.judge_write(900 * MiB, fsync=True, nbytes=64 * MiB,
                                 witness=seen(own_written=64 * MiB, device_written=64 * MiB + 8192))
    assert synced.label == measure.DEVICE and "before fsync() returned" in synced.reason
    mixed = measure.judge_write(900 * MiB, fsync=False, nbytes=64 * MiB,
                                witness=seen(own_written=64 * MiB, device_written=32 * MiB))
    assert mixed.label == measure.UNCLEAR and "50% of it already reached the device" in mixed.reason
    short = measure.judge_write(900 * MiB, fsync=True, nbytes=64 * MiB,
                                witness=seen(own_written=64 * MiB, device_written=MiB))
    assert short.label == measure.UNCLEAR
    mem = measure.judge_write(900 * MiB, fsync=True, nbytes=64 * MiB, fstype="tmpfs",
                              witness=seen(device=None, device_read=None, device_written=None))
    assert mem.label == measure.CACHE and mem.ground == measure.INFERENCE and "tmpfs" in mem.reason


# --- live ---------------------------------------------------------------------------------------------

@pytest.fixture
def disk():
    with workspace.Workspace(budget="256MiB", base="/tmp") as ws:
        if witness.block_device(ws.root) is None or witness.task_io() is None:
            pytest.skip("/tmp has no block device, or no task I/O accounting here")
        yield ws


def quiet_or_disturbed(m, label):
    """A verdict on a shared machine: the expected one, or DISTURBED saying by how much."""
    if m.witness.disturbed:
        assert m.verdict.label == measure.UNCLEAR and "DISTURBED" in m.verdict.reason, m
    else:
        assert m.verdict.label == label, m


@pytest.mark.live
def test_live_cold_and_warm(disk):
    f = disk.make_file("d.bin", "32MiB")
    cold = measure.timed_read(f, cache="cold")
    assert 32 * MiB <= cold.witness.own_read <= 40 * MiB and cold.witness.device_read >= 32 * MiB
    quiet_or_disturbed(cold, measure.DEVICE)
    warm = measure.timed_read(f)
    assert warm.witness.own_read == 0 and warm.verdict.ground == measure.WITNESS
    quiet_or_disturbed(warm, measure.CACHE)
    row = warm.row()
    assert set(measure.WITNESS_COLUMNS) <= set(row) and row["own_read_bytes"] == 0 and row["device"]


@pytest.mark.live
def test_live_odirect_counts_as_read_from_storage(disk):
    f = disk.make_file("d.bin", "8MiB")                # written: every page cached
    m = measure.timed_read(f, direct=True)
    assert m.before.fraction == 1.0                     # all cached, and still read from storage:
    assert m.witness.own_read >= 8 * MiB                # task accounting counts the direct reads
    quiet_or_disturbed(m, measure.DEVICE)
    if not m.witness.disturbed:
        assert m.verdict.reason.startswith("O_DIRECT bypassed")


@pytest.mark.live
def test_live_write_then_written_back(disk):
    plain = measure.timed_write("w.bin", "16MiB", ws=disk)
    assert plain.witness.own_written == 16 * MiB        # counted when the pages were dirtied
    assert plain.options["dirty_pages_after"] == 16 * MiB // pagecache.PAGE_SIZE
    quiet_or_disturbed(plain, measure.CACHE)
    synced = measure.timed_write("w.bin", "16MiB", ws=disk, fsync=True)
    assert synced.witness.device_written >= 16 * MiB and synced.options["dirty_pages_after"] == 0
    quiet_or_disturbed(synced, measure.DEVICE)


@pytest.mark.live
def test_live_a_second_process_disturbs_the_measurement(disk, monkeypatch):
    f = disk.make_file("d.bin", "8MiB")
    other = disk.path("other.bin")
    real = measure._read_all

    def read_while_someone_writes(fd, block, *, buf=None):
        # another process writes 16 MiB and fsyncs it on the same device while we read (warm);
        # it is not reaped before the witness ends, so none of its bytes are ours
        p = subprocess.Popen(["dd", "if=/dev/zero", f"of={other}", "bs=1M", "count=16", "conv=fsync"],
                             stderr=subprocess.DEVNULL, start_new_session=True)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        try:
            return real(fd, block, buf=buf)
        finally:
            monkeypatch.setattr(measure, "_read_all", real)
            read_while_someone_writes.proc = p

    monkeypatch.setattr(measure, "_read_all", read_while_someone_writes)
    m = measure.timed_read(f)
    read_while_someone_writes.proc.wait()
    assert m.witness.own_read == 0 and m.witness.others_written >= 16 * MiB and m.witness.disturbed
    assert m.verdict.label == measure.UNCLEAR and m.verdict.reason.startswith("DISTURBED: the device")
    assert "MiB written" in m.verdict.reason and "memory served it" in m.verdict.reason


@pytest.mark.live
def test_live_tmpfs_says_it_cannot_be_witnessed():
    if not os.path.isdir("/dev/shm") or fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    with workspace.Workspace(budget="16MiB", base="/dev/shm") as ws:
        m = measure.timed_read(ws.make_file("m.bin", "4MiB"))
    assert m.witness.device is None and m.verdict.ground == measure.INFERENCE
    assert m.verdict.reason.startswith("no witness: no block device") and "By inference" in m.verdict.reason
    assert m.row()["device_read_bytes"] is None and "no block device" in m.row()["witness_notes"]


@pytest.mark.live
def test_without_task_accounting_own_bytes_are_unknown_not_zero(disk, monkeypatch):
    """A kernel without task I/O accounting has no /proc/self/io, and its rusage block counts are 0 too
    (both come from the same counters): 0 would read as 'memory served it', so the witness says unknown."""
    f = disk.make_file("d.bin", "8MiB")
    pagecache.evict(f)
    monkeypatch.setattr(witness, "task_io", lambda pid="self": None)
    m = measure.timed_read(f)
    assert m.witness.own_read is None and "no task I/O accounting" in str(m.witness)
    assert m.witness.device_read >= 8 * MiB or m.witness.disturbed
    assert m.verdict.label != measure.CACHE                    # 8 MiB came from the device: not memory
    assert m.verdict.ground == measure.INFERENCE and "cannot be told" in m.verdict.reason
