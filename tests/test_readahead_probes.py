"""iolab.readahead_probes: windows and sweeps counted in pages and calls (never timed), and read_ahead_kb."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from iolab import fsinfo, pagecache, readahead_probes as ra
from iolab.errors import IolabError

PAGE = pagecache.PAGE_SIZE


@pytest.fixture
def f64(ws):
    if fsinfo.fstype(ws.root) in fsinfo.MEMORY_FS:
        pytest.skip("the workspace is on tmpfs: no readahead, no eviction")
    return ws.make_file("w.bin", "64MiB")


@pytest.mark.live
def test_one_byte_brings_a_window_random_brings_one_page(f64):
    normal = ra.window(f64, 1)
    assert normal.resident > 1                      # readahead fetched more than was asked
    assert normal.map[0] and normal.map[:normal.resident].all()   # from the start, contiguous
    rnd = ra.window(f64, 1, "random")
    assert rnd.resident == 1 and rnd.map[0]
    seq = ra.window(f64, 1, "sequential")
    assert seq.resident >= normal.resident


@pytest.mark.live
def test_window_at_an_offset(f64):
    r = ra.window(f64, 1, "random", offset="32MiB")
    assert r.resident == 1 and r.map[32 * 1024 * 1024 // PAGE]


@pytest.mark.live
def test_window_grows_on_sequential_reads_not_on_random(f64):
    g = ra.window_growth(f64, "4KiB", 64)
    assert len(g) == 64 and g["pages_read"].tolist() == list(range(1, 65))
    assert g["resident"].is_monotonic_increasing
    # readahead fetched beyond the first read, and never ran dry for two reads in a row: with a large
    # folio the async marker can sit in a folio already read, so one read may find nothing ahead and the
    # next one's miss starts the next window (seen once at load, beside another make test)
    zero = (g["ahead"] == 0).tolist()
    assert g["ahead"].iloc[0] > 0 and not any(a and b for a, b in zip(zero, zero[1:])), g["ahead"].tolist()
    assert g["resident"].iloc[-1] > g["resident"].iloc[0] * 4       # the window grew
    r = ra.window_growth(f64, "4KiB", 64, advice="random")
    assert (r["ahead"] == 0).all() and r["resident"].iloc[-1] == 64


@pytest.mark.live
def test_sweep_counts_calls_and_residency(ws):
    if fsinfo.fstype(ws.root) in fsinfo.MEMORY_FS:
        pytest.skip("tmpfs")
    p = ws.make_file("s.bin", "256KiB")
    cold = ra.read_size_sweep(p, [1, "4KiB", "1MiB"], cache="cold")
    assert cold.columns.tolist() == ra.SWEEP_COLUMNS
    assert cold["calls"].tolist() == [256 * 1024 + 1, 64 + 1, 1 + 1]
    assert (cold["file_size"] == 256 * 1024).all() and (cold["resident_before"] == 0).all()
    warm = ra.read_size_sweep(p, ["64KiB"], cache="warm")
    assert warm["resident_before"].tolist() == [1.0] and warm["cache"].tolist() == ["warm"]


def test_sweep_and_window_bad_input(ws, tmp_path):
    p = ws.make_file("b.bin", "64KiB")
    with pytest.raises(ValueError, match="cold"):
        ra.read_size_sweep(p, [1], cache="lukewarm")
    with pytest.raises(ValueError, match="at least"):
        ra.read_size_sweep(p, [0])
    with pytest.raises(ValueError, match="one read size"):
        ra.read_size_sweep(p, [])
    with pytest.raises(ValueError, match="max_calls"):
        ra.read_size_sweep(p, [1], max_calls=1000)
    with pytest.raises(ValueError, match="advice"):
        ra.window(p, 1, "backwards")
    with pytest.raises(IsADirectoryError):
        ra.window(ws.root)
    with pytest.raises(FileNotFoundError):
        ra.window(tmp_path / "nope")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(pagecache.NotARegularFile):
        ra.window_growth(fifo)
    empty = ws.path("empty")
    empty.touch()
    with pytest.raises(ValueError, match="empty"):
        ra.read_size_sweep(empty, [1])


@pytest.mark.live
def test_window_on_tmpfs_is_a_clear_error():
    if fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    import tempfile
    fd, name = tempfile.mkstemp(dir="/dev/shm", prefix="iolab-test-")
    try:
        os.write(fd, b"x" * PAGE * 4)
        os.close(fd)
        with pytest.raises(IolabError, match="tmpfs"):
            ra.window(name)
    finally:
        os.unlink(name)


# --- read_ahead_kb against a fake sysfs, and live ------------------------------------------------

def _fake_sysfs(tmp_path: Path, dev: str, kb: int) -> Path:
    d = tmp_path / "sys" / "class" / "bdi" / dev
    d.mkdir(parents=True)
    (d / "read_ahead_kb").write_text(f"{kb}\n")
    return tmp_path / "sys"


def _dev_of(p: Path) -> str:
    st = os.stat(p)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


def test_read_ahead_kb_from_bdi(tmp_path):
    sysfs = _fake_sysfs(tmp_path, _dev_of(tmp_path), 4096)
    m = fsinfo.Mount("/", "ext4", "/dev/vdz", "rw")
    r = ra.read_ahead_kb(tmp_path, sysfs=sysfs, mount=m)
    assert r.kb == 4096 and r.source.endswith("read_ahead_kb") and r.fstype == "ext4"


def test_read_ahead_kb_fuse_and_nfs_notes(tmp_path):
    sysfs = _fake_sysfs(tmp_path, _dev_of(tmp_path), 128)
    fuse = ra.read_ahead_kb(tmp_path, sysfs=sysfs, mount=fsinfo.Mount("/m", "fuse.s3fs", "s3fs", "rw"))
    assert fuse.kb == 128 and "FUSE daemon" in fuse.reason
    nfs = ra.read_ahead_kb(tmp_path, sysfs=sysfs, mount=fsinfo.Mount("/m", "nfs4", "srv:/x", "rw"))
    assert "network" in nfs.reason


@pytest.mark.parametrize("fstype, words", [("tmpfs", "memory"), ("overlay", "overlay"),
                                           ("fuse.gcsfuse", "FUSE daemon"), ("proc", "no block device")])
def test_read_ahead_kb_none_with_reason(tmp_path, fstype, words):
    r = ra.read_ahead_kb(tmp_path, sysfs=tmp_path / "empty-sys", mount=fsinfo.Mount("/m", fstype, "x", "rw"))
    assert r.kb is None and words in r.reason


def test_read_ahead_kb_missing_path(tmp_path):
    with pytest.raises(FileNotFoundError):
        ra.read_ahead_kb(tmp_path / "nope")


@pytest.mark.live
def test_read_ahead_kb_live(ws):
    r = ra.read_ahead_kb(ws.root)
    if r.fstype in fsinfo.MEMORY_FS:
        assert r.kb is None
    else:
        assert r.kb is not None and r.kb >= 0
        assert int(Path(r.source).read_text()) == r.kb
