"""iolab.pagecache: residency (mincore), eviction (fadvise), drop_caches, meminfo.

Live tests run here on a real disk-backed filesystem; none of them asserts on time.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

from iolab import fsinfo
from iolab import pagecache as pc
from iolab.errors import ParseError
from conftest import is_root, needs

PAGE = pc.PAGE_SIZE


def _disk_backed(ws) -> bool:
    return fsinfo.fstype(ws.root) not in fsinfo.MEMORY_FS


def _read_all(path: Path) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


@pytest.fixture
def disk_ws(ws):
    if not _disk_backed(ws):
        pytest.skip(f"the workspace is on {fsinfo.fstype(ws.root)}: eviction cannot work there")
    return ws


# --- parsing and bad input (no live kernel state) -------------------------------------------------

def test_parse_meminfo_units_and_counts():
    text = "MemTotal:       24576000 kB\nDirty:              12 kB\nHugePages_Total:       0\n"
    m = pc.parse_meminfo(text)
    assert m == {"MemTotal": 24576000 * 1024, "Dirty": 12 * 1024, "HugePages_Total": 0}


@pytest.mark.parametrize("bad", ["", "MemTotal 12 kB", "Dirty: twelve kB", "Dirty: 12 MB", "Dirty:"])
def test_parse_meminfo_rejects_malformed(bad):
    with pytest.raises(ParseError):
        pc.parse_meminfo(bad)


def test_meminfo_has_the_fields_in_bytes():
    m = pc.meminfo()
    for k in ("MemTotal", "MemAvailable", "Cached", "Dirty", "Writeback"):
        assert k in m
    assert m["MemTotal"] % 1024 == 0 and m["MemTotal"] > m["MemAvailable"] >= 0


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        pc.residency(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no such file"):
        pc.evict(tmp_path / "nope")


def test_fifo_and_device_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(pc.NotARegularFile, match="FIFO"):
        pc.residency(fifo)
    with pytest.raises(pc.NotARegularFile, match="FIFO"):
        pc.evict(fifo)
    with pytest.raises(pc.NotARegularFile, match="character device"):
        pc.residency("/dev/null")


def test_drop_caches_level_is_checked():
    for bad in (0, 4, "3", True):
        with pytest.raises(ValueError):
            pc.drop_caches(bad)


# --- live residency -------------------------------------------------------------------------------

@pytest.mark.live
def test_empty_file(ws):
    p = ws.path("empty")
    p.touch()
    r = pc.residency(p)
    assert (r.pages, r.resident, r.fraction) == (0, 0, 0.0)
    assert r.map is not None and r.map.size == 0
    assert pc.evict(p).resident == 0


@pytest.mark.live
def test_odd_size_counts_the_partial_last_page(ws):
    p = ws.make_file("odd.bin", 3 * PAGE + 5)
    r = pc.residency(p)
    assert r.pages == 4
    assert r.map.dtype == bool and r.map.shape == (4,)


@pytest.mark.live
def test_evict_then_full_read(disk_ws):
    p = disk_ws.make_file("f.bin", "8MiB")
    gone = pc.evict(p)
    assert gone.reliable and gone.resident == 0 and gone.note == ""
    assert not gone.map.any()
    _read_all(p)
    full = pc.residency(p)
    assert full.resident == full.pages == 8 * 1024 * 1024 // PAGE
    assert full.fraction == 1.0 and full.map.all()


@pytest.mark.live
def test_map_shows_which_pages(disk_ws):
    p = disk_ws.make_file("m.bin", "4MiB")
    pc.evict(p)
    fd = os.open(p, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)     # no readahead: exactly the pages read
        for page in (0, 100, 1023):
            os.pread(fd, 1, page * PAGE)
    finally:
        os.close(fd)
    r = pc.residency(p)
    assert list(np.flatnonzero(r.map)) == [0, 100, 1023]
    assert r.resident == 3


@pytest.mark.live
def test_sparse_file_holes_are_not_resident(disk_ws):
    p = disk_ws.path("sparse.bin")
    with open(p, "wb") as f:
        f.truncate(64 * 1024 * 1024)            # 64 MiB of hole, no block allocated
        f.seek(32 * 1024 * 1024)
        f.write(b"x" * PAGE)
    pc.evict(p)
    r = pc.residency(p)
    assert r.pages == 64 * 1024 * 1024 // PAGE and r.resident == 0
    _read_all(p)     # reading a hole puts zero pages in the cache
    assert pc.residency(p).resident == r.pages


@pytest.mark.live
def test_directory_gives_per_file_rows(disk_ws):
    d = disk_ws.mkdir("dir")
    a = disk_ws.make_file("dir/a.bin", "1MiB")
    disk_ws.make_file("dir/sub/b.bin", "2MiB")
    (d / "empty").touch()
    pc.evict(d)
    _read_all(a)
    r = pc.residency(d)
    assert len(r.files) == 3
    rows = r.files.set_index(r.files["path"].map(lambda s: Path(s).name))
    assert rows.loc["a.bin", "resident"] == 256 and rows.loc["b.bin", "resident"] == 0
    assert r.pages == 256 + 512 and r.resident == 256
    assert pc.evict(d).resident == 0


@pytest.mark.live
def test_no_python_loop_per_page_large_sparse(disk_ws):
    """A 16 GiB sparse file: 4 Mi pages, mapped in 1 GiB windows, the map built by numpy."""
    p = disk_ws.path("big-sparse.bin")
    with open(p, "wb") as f:
        f.truncate(16 * 1024**3)
    r = pc.residency(p)
    assert r.pages == 16 * 1024**3 // PAGE and r.map.size == r.pages
    assert pc.residency(p, keep_map=False).map is None


@pytest.mark.live
@needs("fincore")
def test_counts_equal_fincore(disk_ws):
    p = disk_ws.make_file("fc.bin", "16MiB")
    pc.evict(p)
    fd = os.open(p, os.O_RDONLY)
    try:
        os.pread(fd, 3 * 1024 * 1024, 5 * 1024 * 1024)
    finally:
        os.close(fd)
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "PAGES", str(p)],
                         capture_output=True, text=True, check=True).stdout
    assert pc.residency(p).resident == int(out.split()[0])


@pytest.mark.live
def test_evict_reports_pages_that_stay_mapped_and_locked(disk_ws):
    import mmap
    p = disk_ws.make_file("mapped.bin", "1MiB")
    with open(p, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            m.madvise(mmap.MADV_WILLNEED)
            _ = m[:]                     # fault every page in: now mapped by this process
            r = pc.evict(p, retries=1)
        finally:
            m.close()
    assert r.resident > 0
    assert "eviction incomplete" in r.note and "mapped" in r.note
    assert pc.evict(p).resident == 0     # once unmapped it goes


@pytest.mark.live
def test_tmpfs_is_flagged():
    if not os.path.isdir("/dev/shm") or fsinfo.fstype("/dev/shm") != "tmpfs":
        pytest.skip("no tmpfs at /dev/shm")
    fd, name = tempfile.mkstemp(dir="/dev/shm", prefix="iolab-test-")
    try:
        os.write(fd, b"x" * (4 * PAGE))
        os.close(fd)
        r = pc.evict(name)
        assert r.resident == 4
        assert "tmpfs" in r.note and "cannot drop" in r.note
    finally:
        os.unlink(name)


@pytest.mark.live
@pytest.mark.slow
def test_drop_caches_as_root_or_permission_error(disk_ws):
    p = disk_ws.make_file("dc.bin", "2MiB")
    _read_all(p)
    if is_root():
        pc.drop_caches(1)
        assert pc.residency(p).resident == 0
    else:
        with pytest.raises(PermissionError, match="evict"):
            pc.drop_caches()


@pytest.mark.live
def test_sampler_sees_dirty_pages(disk_ws):
    p = disk_ws.path("dirty.bin")

    def write():
        with open(p, "wb") as f:
            f.write(os.urandom(16 * 1024 * 1024))

    _, frame = pc.sample_meminfo(write, interval=0.01)
    assert list(frame.columns) == ["t", "Dirty", "Writeback", "Cached", "event"]
    assert frame["event"].iloc[0] == "start" and "returned" in set(frame["event"])
    assert frame["t"].is_monotonic_increasing
    with pytest.raises(ValueError):
        pc.MeminfoSampler(interval=0)


# --- the unprivileged path: as root with privileges really dropped, or as the user running this ----

NOBODY = 65534
UNPRIV_SCRIPT = textwrap.dedent(r"""
    import json, os, sys
    from iolab import pagecache as pc
    d, theirs_path, secret_path = sys.argv[1:4]
    mine = os.path.join(d, "mine.bin")
    with open(mine, "wb") as f:
        f.write(os.urandom(8 * 1024 * 1024))
        f.flush(); os.fsync(f.fileno())
    out = {"uid": os.geteuid()}
    out["evicted"] = pc.evict(mine).resident
    fd = os.open(mine, os.O_RDONLY); os.pread(fd, 1, 0); os.close(fd)
    out["after_1_byte"] = pc.residency(mine).resident
    theirs = pc.residency(theirs_path)
    out["theirs_reliable"] = theirs.reliable
    out["theirs_note"] = theirs.note
    out["theirs_fraction_is_nan"] = theirs.fraction != theirs.fraction
    try:
        pc.drop_caches()
    except PermissionError as e:
        out["drop"] = str(e)
    if secret_path:
        try:
            pc.residency(secret_path)
        except PermissionError as e:
            out["secret"] = str(e)
    print(json.dumps(out))
""")


def _system_file(readable: bool) -> str | None:
    """A file of another user that this user may read but not write (readable=True), or may not read."""
    for p in ("/etc/passwd", "/etc/hostname", "/etc/os-release") if readable else ("/etc/shadow", "/etc/gshadow"):
        try:
            if os.stat(p).st_uid == os.geteuid():
                continue
        except OSError:
            continue
        if os.access(p, os.R_OK) == readable and not os.access(p, os.W_OK):
            return p
    return None


@pytest.mark.live
@pytest.mark.slow
def test_unprivileged_user():
    """What a student (no root) gets: eviction of their own files, an honest 'unknown' for files of
    others, and drop_caches refused with a pointer to evict."""
    d = tempfile.mkdtemp(prefix="iolab-unpriv-", dir="/var/tmp")   # disk-backed, not tmpfs
    try:
        if is_root():                                  # become uid 65534 for the script
            if shutil.which("setpriv") is None:
                pytest.skip("running as root, and setpriv (util-linux) is missing to drop to uid 65534")
            os.chown(d, NOBODY, NOBODY)
            theirs = Path(d) / "roots.bin"
            theirs.write_bytes(b"r" * (4 * PAGE))
            os.chmod(theirs, 0o644)                    # readable by nobody, not writable
            secret = Path(d) / "secret.bin"
            secret.write_bytes(b"s" * PAGE)
            os.chmod(secret, 0o600)
            pc.evict(theirs)                           # nothing of it is cached ...
            prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            uid = NOBODY
        else:                                          # already unprivileged: files of root will do
            theirs, secret = _system_file(readable=True), _system_file(readable=False)
            if theirs is None:
                pytest.skip("no system file here that this user may read but not write")
            prefix, uid = [], os.geteuid()
        res = subprocess.run([*prefix, sys.executable, "-c", UNPRIV_SCRIPT, d, str(theirs), str(secret or "")],
                             capture_output=True, text=True, timeout=60,
                             cwd=str(Path(__file__).resolve().parent.parent))
        assert res.returncode == 0, res.stderr
        import json
        out = json.loads(res.stdout.strip().splitlines()[-1])
        assert out["uid"] == uid
        assert out["evicted"] == 0
        assert out["after_1_byte"] > 1
        # ... yet the kernel would claim 100 % to this user: iolab says it cannot know instead
        assert out["theirs_reliable"] is False and out["theirs_fraction_is_nan"] is True
        assert "5.2" in out["theirs_note"]
        assert "evict" in out["drop"] and f"uid {uid}" in out["drop"]
        if secret:
            assert "permission denied" in out["secret"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
