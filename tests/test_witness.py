"""The kernel's witnesses: task I/O accounting, the device's counters, cachestat (issue 12)."""
from __future__ import annotations

import os
import subprocess

import pytest

from iolab import pagecache, witness, workspace
from iolab.units import MiB


def _read_all(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(MiB):
            pass


@pytest.fixture
def disk_ws():
    with workspace.Workspace(budget="128MiB", base="/tmp") as ws:
        if witness.block_device(ws.root) is None:
            pytest.skip("/tmp has no block device here")
        if witness.task_io() is None:
            pytest.skip("no task I/O accounting in this kernel")
        yield ws


def test_cold_read_comes_from_storage_and_warm_read_does_not(disk_ws):
    data = disk_ws.make_file("d.bin", "32MiB")
    pagecache.evict(data)
    with witness.Witness(data) as cold:
        _read_all(data)
    with witness.Witness(data) as warm:
        _read_all(data)
    c, w = cold.result, warm.result
    assert 32 * MiB <= c.own_read <= 40 * MiB           # the file, plus a little readahead at most
    assert c.device_read >= c.own_read                  # the device moved at least what we asked for
    assert w.own_read == 0                              # memory served it: nothing from storage
    assert "d.bin" not in str(w)


def test_a_childs_reads_are_counted_after_wait(disk_ws):
    data = disk_ws.make_file("child.bin", "16MiB")
    pagecache.evict(data)
    with witness.Witness(data) as w:
        subprocess.run(["dd", f"if={data}", "of=/dev/null", "bs=1M"], check=True, capture_output=True)
    assert 16 * MiB <= w.result.own_read <= 24 * MiB


def test_another_process_on_the_device_shows_as_disturbance(disk_ws):
    data = disk_ws.make_file("quiet.bin", "4MiB")
    other = disk_ws.path("other.bin")
    with witness.Witness(data) as w:
        _read_all(data)                                 # warm: we fetch nothing
        # someone else writes 16 MiB and syncs it, while we measure (a process we do not wait for)
        p = subprocess.Popen(["dd", "if=/dev/zero", f"of={other}", "bs=1M", "count=16", "oflag=direct"],
                             stderr=subprocess.DEVNULL, start_new_session=True)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)   # finished, not reaped: not in our rusage
    p.wait()
    r = w.result
    assert r.own_written < MiB and r.device_written >= 16 * MiB
    assert r.disturbed is True and "DISTURBED" in str(r)


def test_tmpfs_has_no_device_to_witness():
    with workspace.Workspace(budget="16MiB", base="/dev/shm") as ws:
        data = ws.make_file("m.bin", "1MiB")
        with witness.Witness(data) as w:
            _read_all(data)
    assert w.result.device is None and w.result.device_read is None and w.result.disturbed is None
    assert "no block device" in str(w.result)


def test_cachestat_agrees_with_mincore(disk_ws):
    data = disk_ws.make_file("c.bin", "8MiB")
    cs = witness.cachestat(data)
    if cs is None:
        pytest.skip("cachestat(2) needs Linux >= 6.5")
    assert cs.cached == pagecache.residency(data).resident == 2048
    pagecache.evict(data)
    after = witness.cachestat(data)
    # dropped on request: gone from the cache, and not counted as evicted (that is reclaim's mark)
    assert after.cached == 0 and after.evicted == cs.evicted == 0 and after.dirty == 0
    with open(data, "r+b") as f:
        f.write(b"x" * 8192)                            # two dirty pages
        assert witness.cachestat(data, 0, 8192).dirty == 2


def test_task_io_of_another_users_process_is_unknown():
    if os.geteuid() == 0:
        pytest.skip("root may read every process's counters")
    assert witness.task_io(1) is None


def _memory_cgroup(limit: int):
    """A fresh memory cgroup limited to ``limit`` bytes (v1 or v2), or None where we may not make one."""
    import uuid
    name = f"iolab-test-{uuid.uuid4().hex[:8]}"
    for root, knob, tasks in (("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "tasks"),
                              ("/sys/fs/cgroup", "memory.max", "cgroup.procs")):
        if os.path.exists(os.path.join(root, knob if root.endswith("memory") else "cgroup.controllers")):
            if not root.endswith("memory") and "memory" not in open(os.path.join(root, "cgroup.subtree_control")).read():
                continue
            d = os.path.join(root, name)
            try:
                os.mkdir(d)
            except OSError:
                continue
            with open(os.path.join(d, knob), "w") as f:
                f.write(str(limit))
            return d, tasks
    return None


def test_reclaim_counts_as_evicted_a_request_does_not(disk_ws):
    """What lesson 01 teaches about cachestat: memory pressure leaves 'evicted' pages, DONTNEED does not."""
    if os.geteuid() != 0:
        pytest.skip("making a memory cgroup needs root")
    data = disk_ws.make_file("big.bin", "96MiB")
    pagecache.evict(data)
    if witness.cachestat(data) is None:
        pytest.skip("cachestat(2) needs Linux >= 6.5")
    assert witness.cachestat(data).evicted == 0              # dropped on request: not "evicted"
    cg = _memory_cgroup(24 * MiB)
    if cg is None:
        pytest.skip("no memory cgroup controller we can use")
    d, tasks = cg
    try:
        # a reader confined to 24 MiB reads 96 MiB: reclaim must push most of it out again
        subprocess.run(["sh", "-c", f'echo $$ > {d}/{tasks} && exec cat "$1" > /dev/null', "sh", str(data)],
                       check=True)
    finally:
        os.rmdir(d)
    after = witness.cachestat(data)
    assert after.evicted > 0 and after.cached < 96 * MiB // 4096
