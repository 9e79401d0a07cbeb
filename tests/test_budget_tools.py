"""A tool run reserves what it will write in the workspace that holds its output (issue 16)."""
from __future__ import annotations

import re

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



def test_mdtest_reads_a_flag_given_a_value_as_mdtest_does():
    # mdtest's options go through IOR's parser: "-D=0" turns directories-only off (mdtest -a DUMMY -n 4
    # -D=0 makes files), "-F=1" on; before, -D=0 read as -D and the files it writes were not counted
    from iolab.tools import mdtest

    o = mdtest.Options(files=10, write_bytes=4096, dirs_only=True, extra=("-D=0",))
    assert mdtest.bytes_to_write(o, 2) == 2 * 10 * 4096
    assert mdtest.bytes_to_write(mdtest.Options(files=10, write_bytes=4096, extra=("-D=1",)), 2) == 0
    assert mdtest.effective(mdtest.Options(files=10, extra=("-F=1",))).files_only
    assert not mdtest.effective(mdtest.Options(files=10, files_only=True, extra=("-F=0",))).files_only


@pytest.mark.parametrize("tok, rest, want, after", [
    ("-mk", [], [("m", None), ("k", None)], 0),
    ("-b16m", ["x"], [("b", "16m")], 0),
    ("-b", ["16m", "x"], [("b", "16m")], 1),
    ("-b=16m", ["x"], [("b", "16m")], 0),
    ("-mb", ["4k"], [("m", None), ("b", "4k")], 1),
    ("-mb4k", [], [("m", None), ("b", "4k")], 0),
    ("-mk=0", [], [("m", None), ("k", "0")], 0),        # a flag given a value: the letter before "="
])
def test_short_options_read_a_run_of_letters_as_ior_and_mdtest_do(tok, rest, want, after):
    from iolab.tools import short_options

    assert short_options(tok, rest, 0, set("b"), set("mk"), "IOR") == (want, after)


_SIZES = {"7": 7, "0": 0, "16m": 16 * MiB, "16M": 16 * MiB, "16MiB": 16 * MiB, "16mb": 16 * MiB, " 4 k ": 4096,
          "2g": 2 << 30, "1t": 1 << 40, "1p": 1 << 50}


@pytest.mark.parametrize("text", sorted(_SIZES))
def test_ior_and_mdtest_read_a_size_with_one_rule(text):
    # IOR's string_to_bytes (option.c) reads both tools' sizes and counts: one function here too
    from iolab.tools import ior, mdtest, string_to_bytes

    assert string_to_bytes(text, "IOR", "-b") == _SIZES[text]
    assert ior.read_argv(["ior", "-b", text])["b"] == _SIZES[text]
    assert mdtest.effective(mdtest.Options(files=10, extra=("-w", text))).write_bytes == _SIZES[text]


@pytest.mark.parametrize("text", ["16x", "1.5m", "-1", "", "m", "16 m b", "0x10", "16e"])
def test_a_size_neither_tool_can_be_counted_by_is_refused(text):
    # IOR itself takes "16x" as 16 (a suffix it does not know is not read): iolab cannot be sure of it
    from iolab.tools import string_to_bytes

    with pytest.raises(ValueError, match=f"mdtest -w {re.escape(repr(text))}: iolab cannot read this size"):
        string_to_bytes(text, "mdtest", "-w")


@pytest.mark.parametrize("tok, match", [("-b", "IOR option -b needs a value"), ("-mz", "IOR option -z .in '-mz'.")])
def test_short_options_refuse_what_they_cannot_read(tok, match):
    from iolab.tools import short_options

    with pytest.raises(ValueError, match=match):
        short_options(tok, [], 0, set("b"), set("mk"), "IOR")

@pytest.mark.live
@pytest.mark.parametrize("kw", [dict(files=10), dict(files=10, depth=2, branching=2),
                                dict(files=10, items_per_dir=5, depth=1, branching=2),
                                dict(files=10, depth=2, branching=2, extra=("-L",))])
def test_mdtest_counts_what_mdtest_says_it_makes(kw, tmp_path, ior_on_path):
    ior_on_path("4.0.0", "mdtest", or_on_path=True)
    # mdtest's own "N tasks, M files" line, one rank, DUMMY backend (nothing written)
    import os

    from iolab import mpi, runner
    from iolab.tools import mdtest

    o = mdtest.Options(files_only=True, directory=str(tmp_path / "t"), extra=("-a", "DUMMY", *kw.pop("extra", ())),
                       **kw)
    r = runner.run(o.argv(), timeout=60, env=mpi.runtime_env(tmp_path / "mpi", singleton=True))
    # mdtest's own count, from its "1 tasks, N files" line: DUMMY's phases take no time, and mdtest 4.0.0 then
    # prints rows of inf and DBL_MAX that mdtest.parse rightly refuses (ParseError naming the row)
    said = re.search(r"^\s*1 tasks?, (\d+) (?:files|directories)", r.stdout, re.M)
    assert said and int(said.group(1)) == mdtest.items_per_rank(o), r.stdout
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


# --- issue 21: the size comes from the whole argv, extra included -----------------------------------

@pytest.fixture
def ior_never_runs(monkeypatch):
    from iolab import runner
    from iolab.tools import ior

    def refuse(*a, **k):
        raise _NoRun(a)

    monkeypatch.setattr(ior, "installed_version", lambda exe="ior": "4.0.0")
    monkeypatch.setattr(runner, "which", lambda exe: f"/usr/bin/{exe}")
    monkeypatch.setattr(runner, "run", refuse)


@pytest.mark.parametrize("kw, nbytes", [
    (dict(block_size="1MiB"), 2 * MiB),
    (dict(block_size="1MiB", extra=("-b", "16m")), 32 * MiB),                       # the last -b wins, as in IOR
    (dict(block_size="1MiB", extra=("-b16m",)), 32 * MiB),
    (dict(block_size="1MiB", extra=("-b=16MiB",)), 32 * MiB),                       # IOR reads 16MiB as 16m
    (dict(block_size="1MiB", extra=("-O", "blockSize=4m,segmentCount=2")), 16 * MiB),
    (dict(block_size="2MiB", iterations=5, extra=("-m", "-k")), 20 * MiB),          # a file per repetition, kept
    (dict(block_size="2MiB", iterations=5, extra=("-mk",)), 20 * MiB),
    (dict(block_size="2MiB", iterations=5, extra=("-m",)), 4 * MiB),               # each removed before the next
    (dict(block_size="2MiB", iterations=5, keep_file=True), 4 * MiB),               # one file, rewritten
    (dict(block_size="2MiB", extra=("-N", "1")), 2 * MiB),                           # one task writes
    (dict(block_size="2MiB", segments=3, extra=("-s", "1")), 4 * MiB),
    (dict(block_size="2MiB", write=False), 0),                                       # -r: nothing written
    (dict(block_size="2MiB", write=False, extra=("-w",)), 4 * MiB),
    (dict(block_size="2MiB", odirect=True, extra=("-O", "posix.odirect=1", "-v")), 4 * MiB),
])
def test_ior_counts_every_size_option_of_its_argv(kw, nbytes):
    from iolab.tools import ior

    assert ior.bytes_to_write(ior.Options(**kw).argv("4.0.0"), 2) == nbytes


@pytest.mark.parametrize("extra, match", [
    (("-b", "16x"), "cannot read this size"), (("-f", "tests.ior"), "script"),
    (("-O", "blocksizes=1g"), "not one iolab knows"), (("--blockSize=1g",), "not one iolab knows"),
    (("-Q1", "oops"), "belongs to no option"), (("-%",), "not one iolab knows"), (("-b",), "needs a value"),
])
def test_ior_refuses_an_argv_it_cannot_count(extra, match):
    from iolab.tools import ior

    with pytest.raises(ValueError, match=match):
        ior.bytes_to_write(ior.Options(block_size="1MiB", extra=extra).argv(), 2)


@pytest.mark.parametrize("extra", [("-b", "16m"), ("-m", "-k")])
def test_ior_sizes_given_through_extra_are_refused_over_budget(ior_never_runs, tmp_path, extra):
    from iolab.tools import ior

    o = ior.Options(block_size="1MiB", transfer_size="1MiB", iterations=16, extra=extra)   # 2 MiB without extra
    with workspace.Workspace(budget="8MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded):
            ior.run(o, 2, ws=ws)
        with pytest.raises(_NoRun):                                                  # within budget: it starts
            ior.run(ior.Options(block_size="1MiB", transfer_size="1MiB"), 2, ws=ws)


def test_mdtest_counts_w_and_n_given_through_extra():
    from iolab.tools import mdtest

    O = mdtest.Options
    assert mdtest.bytes_to_write(O(files=10, extra=("-w", "65536")), 2) == 2 * 10 * 65536
    assert mdtest.bytes_to_write(O(files=10, write_bytes=1, extra=("-w64k", "-n", "100", "-i", "3")), 2) \
        == 2 * 100 * 3 * 65536
    assert mdtest.bytes_to_write(O(files=10, extra=("-w=4k", "-I", "5", "-z", "1", "-b", "2")), 1) \
        == 10 * 3 * 4096                                        # -n items in each of the 3 directories
    assert mdtest.bytes_to_write(O(files=10, write_bytes=4096, extra=("-D",)), 2) == 0
    assert mdtest.bytes_to_write(O(files=10, write_bytes=4096, extra=("-FL", "-z", "1", "-b", "4")), 1) \
        == 8 * 4096                                             # -L: -n rounded down to the 4 leaves
    for bad, match in ((("-Q",), "not one iolab knows"), (("-w", "lots"), "cannot read"),
                       (("stray",), "belongs to no option"), (("--bogus",), "not one iolab knows")):
        with pytest.raises(ValueError, match=match):
            mdtest.bytes_to_write(O(extra=bad), 2)


def test_mdtest_w_through_extra_is_refused_over_budget(mdtest_never_runs, tmp_path):
    from iolab.tools import mdtest

    o = mdtest.Options(files=100, iterations=2, extra=("-w", "65536"))                # 25 MiB, all through extra
    with workspace.Workspace(budget="4MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded, match="25 MiB"):
            mdtest.run(o, 2, ws=ws)
        with pytest.raises(ValueError, match="-d in extra"):
            mdtest.run(mdtest.Options(files=1, extra=("-d", str(tmp_path / "elsewhere"))), 2, ws=ws)


# --- fio: its logs, and every size option of every job ------------------------------------------------

def test_fio_counts_its_per_io_logs(tmp_path):
    j = fio.job("lat", rw="randwrite", bs=128, size=2 * MiB, write_lat_log="lat", write_bw_log=None,
                write_iops_log=str(tmp_path / "logs" / "iops"))
    n = 2 * MiB // 128
    assert fio.bytes_of_logs([j], tmp_path) == [(tmp_path, n * fio.LOG_LINE), (tmp_path / "logs", n * fio.LOG_LINE),
                                                 (tmp_path, n * fio.LOG_LINE * 3)]
    averaged = fio.job("avg", rw="randwrite", bs=128, size=2 * MiB, time_based=1, runtime="2s", log_avg_msec=500,
                       write_lat_log="lat")
    assert fio.bytes_of_logs([averaged], tmp_path) == [(tmp_path, (2000 // 500 + 2) * 3 * fio.LOG_LINE * 3)]
    for bad, match in ((dict(write_hist_log="h"), "write_hist_log"), (dict(time_based=1, runtime=10), "no size bound"),
                       (dict(bs="lots"), "cannot read")):
        with pytest.raises(ValueError, match=match):
            fio.bytes_of_logs([j.with_options(**bad)], tmp_path)


def test_fio_refuses_sizes_it_cannot_count(tmp_path):
    for bad, match in ((dict(size="50%"), "cannot read"), (dict(fill_device=1), "fill_device"),
                       (dict(nrfiles="many"), "cannot read")):
        with pytest.raises(ValueError, match=match):
            fio.bytes_to_lay_out([fio.job("j", rw="write", **{"size": MiB, **bad})], tmp_path)
    # offset: fio lays the file out from 0
    assert fio.bytes_to_lay_out([fio.job("j", rw="write", size=MiB, offset=3 * MiB)], tmp_path) == [(tmp_path, 4 * MiB)]


def test_fio_logs_over_budget_are_refused_before_it_runs(monkeypatch, tmp_path):
    def refuse(*a, **k):
        raise _NoRun(a)

    monkeypatch.setattr(fio, "_run", refuse)
    j = fio.job("lat", rw="randwrite", bs=128, size=2 * MiB, write_lat_log="lat", write_bw_log="bw")   # ~4 MiB of logs
    with workspace.Workspace(budget="4MiB", base=tmp_path) as ws:
        with pytest.raises(BudgetExceeded):
            fio.run(j, workdir=ws.root)
        with pytest.raises(_NoRun):                                     # the same I/O without logs: it starts
            fio.run(fio.job("lat", rw="randwrite", bs=128, size=2 * MiB), workdir=ws.root)


@pytest.mark.live
@needs("fio")
def test_fio_logs_stay_within_what_was_reserved(tmp_path):
    with workspace.Workspace(budget="64MiB", base=tmp_path) as ws:
        j = fio.job("lat", rw="randrw", bs=512, size=256 * 1024, write_lat_log="lat", write_bw_log="bw",
                    write_iops_log="iops", log_offset=1, write_iolog="io.log")
        reserved = sum(n for _w, n in fio.bytes_of_logs([j], ws.root))
        fio.run(j, workdir=ws.root)
        logs = [p for p in ws.root.iterdir() if p.name.endswith(".log")]
        written = sum(p.stat().st_size for p in logs)
        assert len(logs) == 6 and 0 < written <= reserved, (written, reserved, [p.name for p in logs])


# --- what a lesson puts into a store, and the FUSE clients' caches --------------------------------------

class _FakeFs:
    def __init__(self):
        self.put = {}

    def pipe(self, path, data):
        self.put[path] = len(data)


class _FakeEndpoint:
    def __init__(self, memory):
        self.memory, self.local, self.server, self.url = memory, True, "fake", "http://127.0.0.1:1"
        self.fs = _FakeFs()

    def filesystem(self):
        return self.fs


@pytest.mark.parametrize("memory", [False, True])
def test_put_files_counts_against_the_budget(tmp_path, memory):
    from iolab.objectstore import store as objstore

    with workspace.Workspace(budget="32MiB", base=tmp_path) as ws:
        ep = _FakeEndpoint(memory)
        store = objstore.Store("s3", "b", ep, ep, None, ws)
        with pytest.raises(BudgetExceeded):
            objstore.put_files(store, "data", n=3, size="32MiB")             # 96 MiB into 32 MiB
        assert ep.fs.put == {}                                         # refused before the first object
        assert len(objstore.put_files(store, "data", n=2, size="4MiB")) == 2
        if memory:                                                     # in no file: held until the store stops
            assert ws.used >= 8 * MiB
            with pytest.raises(BudgetExceeded):
                ws.make_file("big.bin", "25MiB")
            ws.release(objstore._held_key(ep))
            assert ws.used < MiB


def test_a_directory_outside_the_tree_counts_while_counted(tmp_path):
    with workspace.Workspace(budget="4MiB", base=tmp_path / "a") as ws:
        cache = tmp_path / "shm-cache"
        cache.mkdir()
        (cache / "f.bin").write_bytes(b"x" * (3 * MiB))
        assert ws.used < MiB and workspace.holding(cache / "f.bin") is None
        ws.count_dir(cache)
        assert ws.used >= 3 * MiB and workspace.holding(cache / "g.bin") is ws
        with pytest.raises(BudgetExceeded):
            workspace.reserve_for(cache / "g.bin", 2 * MiB)
        ws.uncount_dir(cache)
        assert ws.used < MiB and ws.left > 3 * MiB


@pytest.fixture
def mounts_capture(monkeypatch):
    """The FUSE clients' argv, captured instead of started."""
    import contextlib
    import types

    from iolab.objectstore import mounts

    seen = {}

    @contextlib.contextmanager
    def fake_mount(client, argv, **kw):
        seen["argv"], seen["kw"] = argv, kw
        yield types.SimpleNamespace(wait_uploaded=lambda: None)

    monkeypatch.setattr(mounts, "fuse_problem", lambda: "")
    monkeypatch.setattr(mounts, "client_binary", lambda c: c)
    monkeypatch.setattr(mounts, "_mount", fake_mount)
    monkeypatch.setattr(mounts, "_bucket_exists", lambda ep, b: None)
    return seen


def test_fuse_caches_are_bounded_by_what_is_left_of_the_budget(mounts_capture, tmp_path):
    import shutil

    from iolab.objectstore import Endpoint, mounts

    s3 = Endpoint("s3", "http://127.0.0.1:1", "k", "s")
    gcs = Endpoint("gcs", "http://127.0.0.1:1")
    with workspace.Workspace(budget="64MiB", base=tmp_path / "w") as ws:
        ws.make_file("held.bin", "16MiB")
        outside = tmp_path / "shm"
        with mounts.s3fs_fuse(s3, "b", cache=outside, ws=ws):
            argv = mounts_capture["argv"]
            (free_mb,) = [int(a.split("=")[1]) for a in argv if a.startswith("ensure_diskfree=")]
            assert shutil.disk_usage(outside).free - free_mb * MiB <= ws.left    # the cache cannot outgrow it
            assert any(a.startswith("tmpdir=") and a.startswith(f"tmpdir={ws.root}") for a in argv)
            (outside / "c.bin").write_bytes(b"x" * MiB)
            assert ws.used >= 17 * MiB                                           # the cache outside counts
        assert ws.used < 17 * MiB
        with mounts.rclone(s3, "b", vfs_cache_mode="full", ws=ws):
            argv = mounts_capture["argv"]
            assert argv[argv.index("--vfs-cache-max-size") + 1] == f"{ws.left // MiB}M"
        with mounts.gcsfuse(gcs, "b", cache=ws.mkdir("gc"), ws=ws):
            assert f"--file-cache-max-size-mb={ws.left // MiB}" in mounts_capture["argv"]
        with pytest.raises(BudgetExceeded):
            with mounts.gcsfuse(gcs, "b", cache=ws.mkdir("gc2"), ws=ws, file_cache_max_size_mb=1024):
                pass
