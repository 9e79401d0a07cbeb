"""iolab.tools.darshan: finding the runtime, the env it needs, reading logs (and refusing bad ones)."""
from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import needs

from iolab import ParseError, recordings
from iolab.lessons.l07_darshan import profile as lab, mpiio
from iolab.lessons.l03_strace.syscalls import expected_reads
from iolab.tools import darshan

RUNTIME = darshan.find_runtime(refresh=True)
needs_runtime = pytest.mark.skipif(RUNTIME is None, reason="no Darshan runtime here (libdarshan.so: module load "
                                   "darshan, DARSHAN_RUNTIME, or a build at /tmp/darshan-<PyDarshan's version>)")
reads_logs = needs("PyDarshan")


def _log(name: str):
    return recordings.load(f"darshan/{name}").path


# --- reading --------------------------------------------------------------------------------------

@reads_logs
def test_a_recorded_log_reads_into_frames():
    log = darshan.read_log(_log("readloop-4k-16mib-ext4"))
    assert log.job["nprocs"] == 1 and log.job["lib_ver"] == "3.5.0" and log.job["log_ver"] == "3.41"
    assert "read_loop.py" in log.exe and "\n" not in log.exe
    f = darshan.files(log)
    data = f[f["file"].str.endswith("data-16MiB.bin")].iloc[0]
    assert (data["module"], data["reads"], data["bytes_read"], data["fstype"]) == ("POSIX", 4097, 16 * 2**20, "ext4")
    hist = darshan.access_sizes(log, file=data["file"])
    assert dict(zip(hist[hist.op == "read"]["bucket"], hist[hist.op == "read"]["count"]))["1-10 KiB"] == 4096
    assert darshan.counter(log, "POSIX_READS", file=data["file"]) == 4097


@reads_logs
def test_dxt_segments_and_mpiio_counters():
    log = darshan.read_log(_log("ior-posix-F-dxt-ext4"))
    seg = darshan.dxt_segments(log)
    assert set(seg["op"]) == {"read", "write"} and set(seg["rank"]) == {0, 1}
    assert (seg["length"] == 2**20).all() and (seg["end"] >= seg["start"]).all()
    mpi = darshan.read_log(_log("mpiio-collective-ext4"))
    testfile = mpiio._testfile(recordings.load("darshan/mpiio-collective-ext4").meta["argv"])
    assert darshan.counter(mpi, "MPIIO_COLL_WRITES", file=testfile) == 256
    assert darshan.counter(mpi, "POSIX_WRITES", file=testfile) == 64


@pytest.mark.parametrize("size,label", [(0, "0-100 B"), (100, "0-100 B"), (101, "101 B-1 KiB"), (1024, "101 B-1 KiB"),
                                        (1025, "1-10 KiB"), (4096, "1-10 KiB"), (2**20, "100 KiB-1 MiB"),
                                        (2**20 + 1, "1-4 MiB"), (2**31, "over 1 GiB")])
def test_buckets_are_darshans(size, label):
    # DARSHAN_BUCKET_INC (darshan-common.h): "< 101", "< 1025", "< 10241", ...
    assert darshan.bucket_of(size) == label


@reads_logs
def test_a_log_the_reader_refuses_is_a_parse_error_naming_it():
    path = _log("refused-newline-argv")
    with pytest.raises(ParseError) as e:
        darshan.read_log(path)
    assert str(path) in str(e.value) and "Run scripts from files" in str(e.value)
    assert e.value.__cause__ is None and e.value.__suppress_context__     # no chained traceback


def _without_job_region(src, dst):
    """A copy of a real log whose job region is empty: the regions after it moved up, every offset in the
    header changed to match, so the header check finds nothing cut off or damaged (issue 21, item 8)."""
    data = src.read_bytes()
    start, length = darshan.check_header(src).regions["job"]
    out = bytearray(data[:start] + data[start + length:])
    maps = list(struct.unpack_from("<130Q", data, 32))                  # 3.41: name map + 64 module maps
    for i in range(0, len(maps), 2):
        if maps[i + 1]:
            maps[i] -= length
    struct.pack_into("<130Q", out, 32, *maps)
    dst.write_bytes(bytes(out))
    return dst


@reads_logs
def test_a_log_with_an_empty_job_region_is_a_parse_error_not_an_abort(tmp_path):
    bad = _without_job_region(_log("dd-1m-16mib-tmpfs"), tmp_path / "nojob.darshan")
    assert darshan.check_header(bad).regions["job"][1] == 0            # the header check cannot see it
    # read in this process, PyDarshan's C reader fails an assertion and aborts the whole interpreter
    old = subprocess.run([sys.executable, "-c", "import sys; from iolab.tools import darshan; "
                          "darshan.read_report(sys.argv[1])", str(bad)], capture_output=True, text=True, timeout=120)
    assert old.returncode == -signal.SIGABRT and "Assertion" in old.stderr
    with pytest.raises(ParseError, match=r"nojob\.darshan: the process reading it was killed by SIGABRT"):
        darshan.read_log(bad)
    assert darshan.read_log(_log("dd-1m-16mib-tmpfs")).job["nprocs"] == 1     # the reader goes on


@reads_logs
def test_the_reader_stops_at_its_time_and_memory_limits():
    path = _log("both-read-4k-ext4")
    with pytest.raises(ParseError, match="did not finish reading the Darshan log .* in 0 s"):
        darshan.read_log(path, timeout=0)
    with pytest.raises(ParseError, match="both-read-4k-ext4.darshan"):
        darshan.read_log(path, memory=0)                 # no address space to spare: any allocation fails
    assert darshan.read_log(path).job["nprocs"] == 1


def test_only_a_regular_file_is_read_as_a_log(tmp_path):
    fifo = tmp_path / "fifo.darshan"
    os.mkfifo(fifo)
    with pytest.raises(ParseError, match="not a regular file"):         # was a read blocked for ever
        darshan.read_log(fifo)
    link = tmp_path / "zero.darshan"
    link.symlink_to("/dev/zero")
    with pytest.raises(ParseError, match="symbolic link"):               # was a read until memory ran out
        darshan.read_log(link)


def test_a_cut_off_log_is_refused_before_pydarshan_sees_it(tmp_path):
    data = _log("ior-posix-F-dxt-ext4").read_bytes()
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(data[: len(data) - 100])
    with pytest.raises(ParseError, match=r"cut\.darshan is cut off"):
        darshan.read_log(cut)


def test_not_a_log_and_a_newer_format_are_refused(tmp_path):
    junk = tmp_path / "junk.darshan"
    junk.write_bytes(os.urandom(4096))
    with pytest.raises(ParseError, match="is not a Darshan log"):
        darshan.read_log(junk)
    short = tmp_path / "short.darshan"
    short.write_bytes(b"3.41\0\0\0\0")
    with pytest.raises(ParseError, match="shorter than a log header"):
        darshan.check_header(short)
    newer = tmp_path / "newer.darshan"
    data = bytearray(_log("dd-1m-16mib-ext4").read_bytes())
    data[:8] = b"3.99\0\0\0\0"                       # as a future runtime would write it
    newer.write_bytes(bytes(data))
    with pytest.raises(ParseError, match="newer Darshan runtime"):
        darshan.read_log(newer)
    missing = tmp_path / "missing.darshan"
    with pytest.raises(ParseError, match="missing.darshan"):
        darshan.read_log(missing)


def test_header_of_a_real_log():
    h = darshan.check_header(_log("dd-1m-16mib-ext4"))
    assert h.format == "3.41" and not h.partial and h.regions["job"][0] == 1328


# --- the runtime ----------------------------------------------------------------------------------

def test_runtime_none_hides_it(monkeypatch):
    monkeypatch.setenv("DARSHAN_RUNTIME", "none")
    assert darshan.candidates() == [] and darshan.find_runtime(refresh=True) is None
    monkeypatch.delenv("DARSHAN_RUNTIME")
    darshan.find_runtime(refresh=True)


def _fake_prefix(root, version="3.5.0", mode=0o755):
    (root / "lib").mkdir(parents=True)
    (root / "bin").mkdir()
    lib = root / "lib" / "libdarshan.so"
    lib.write_bytes(b"\x7fELF not really")
    os.chmod(lib, mode)
    (root / "bin" / "darshan-config").write_text(f'#!/bin/sh\nversion="Darshan Runtime {version}"\nprefix="{root}"\n'
                                                 'DARSHAN_LIB_PATH="${exec_prefix}/lib"\n')
    return lib


def test_darshan_runtime_points_at_a_prefix(monkeypatch, tmp_path):
    lib = _fake_prefix(tmp_path / "darshan-9.1.0", version="9.1.0")
    monkeypatch.setenv("DARSHAN_RUNTIME", str(tmp_path / "darshan-9.1.0"))
    first = darshan.candidates()[0]
    assert first.path == lib and first.found_by == "$DARSHAN_RUNTIME" and first.problem is None
    rt = darshan.find_runtime(refresh=True)
    try:
        assert rt.library == lib and rt.version == "9.1.0"
        assert rt.compatible("3.5.0") is False and rt.compatible("9.1.2") is True
    finally:
        monkeypatch.delenv("DARSHAN_RUNTIME")
        darshan.find_runtime(refresh=True)


def test_a_library_others_can_write_is_refused(monkeypatch, tmp_path):
    lib = _fake_prefix(tmp_path / "p", mode=0o666)
    os.chmod(lib, 0o666)                      # a umask could have masked it
    monkeypatch.setenv("DARSHAN_RUNTIME", str(lib))
    c = darshan.candidates()[0]
    assert c.path == lib and "written by others" in c.problem
    darshan.find_runtime(refresh=True)


def test_env_and_launcher_args(tmp_path, monkeypatch):
    rt = darshan.Runtime(tmp_path / "libdarshan.so", "test", "3.5.0")
    monkeypatch.setenv("LD_PRELOAD", "/x/libother.so")
    e = darshan.env(tmp_path / "a.darshan", runtime=rt)
    assert e["LD_PRELOAD"] == f"{rt.library}:/x/libother.so" and e["DARSHAN_ENABLE_NONMPI"] == "1"
    assert e["DARSHAN_LOGFILE"] == str(tmp_path / "a.darshan") and "DARSHAN_EXCLUDE_DIRS" not in e
    assert e["DARSHAN_MMAP_LOGPATH"] == str(tmp_path)          # not /tmp: a killed process leaves it there
    e = darshan.env("a.darshan", runtime=rt, mpi=True, dxt=True, record=["/dev/shm/ws"])
    assert "DARSHAN_ENABLE_NONMPI" not in e and e["DXT_ENABLE_IO_TRACE"] == "1"
    assert "/dev/" not in e["DARSHAN_EXCLUDE_DIRS"].split(",") and "/usr/" in e["DARSHAN_EXCLUDE_DIRS"].split(",")
    v = {"A": "1", "B": "x y"}
    assert darshan.launcher_args(v) == ["-x", "A=1", "-x", "B=x y"]
    assert darshan.launcher_args(v, flavour="mpich") == ["-genv", "A", "1", "-genv", "B", "x y"]
    assert darshan.launcher_args(v, launcher="srun") == ["--export=ALL,A=1,B=x y"]
    with pytest.raises(ValueError):
        darshan.launcher_args({"D": "a,b"}, launcher="srun")


def test_run_refuses_a_command_line_with_a_newline(tmp_path):
    rt = darshan.Runtime(tmp_path / "libdarshan.so", "test", "3.5.0")
    with pytest.raises(ValueError, match="newline"):
        darshan.run([sys.executable, "-c", "import os\nprint(1)"], tmp_path / "x.darshan", runtime=rt)


# --- live -----------------------------------------------------------------------------------------

@pytest.mark.live
@needs_runtime
@reads_logs
def test_live_read_loop_under_darshan(ws):
    data = ws.make_file("data.bin", 100_000)
    p = lab.profile_read_loop(data, 4096, recording="readloop-4k-16mib", ws=ws, quiet=True)
    assert p.live
    assert darshan.counter(p.log, "POSIX_READS", file=str(data)) == expected_reads(100_000, 4096)
    assert darshan.counter(p.log, "POSIX_BYTES_READ", file=str(data)) == 100_000


@pytest.mark.live
@needs_runtime
@reads_logs
@pytest.mark.skipif(shutil.which("strace") is None, reason="not installed here: strace")
def test_live_strace_and_darshan_count_the_same_reads(ws):
    data = ws.make_file("data.bin", "1MiB")
    p = lab.both(data, 4096, ws=ws, quiet=True)
    assert p.live
    t = lab.side_by_side(p)
    s, d = t["strace (-e trace=read -P FILE)"], t["Darshan (POSIX module)"]
    assert s["read calls"] == d["read calls"] == expected_reads(2**20, 4096)
    assert s["bytes"] == d["bytes"] == 2**20
    assert all(c.consistent() and c.held for c in lab.side_by_side_claims(p, show=False))


@pytest.mark.live
@needs_runtime
@reads_logs
def test_live_read_loop_in_dev_shm_is_recorded():
    # /dev/shm lies under /dev/, which Darshan skips by default: the lesson's env keeps it
    from iolab import workspace

    with workspace.Workspace(budget="16MiB", base="/dev/shm") as w:
        data = w.make_file("data.bin", 8192)
        p = lab.profile_read_loop(data, 4096, recording="readloop-4k-16mib", ws=w, quiet=True)
        assert darshan.counter(p.log, "POSIX_READS", file=str(data)) == 3


@pytest.mark.live
@needs_runtime
@reads_logs
def test_live_independent_and_collective_write_counts(ws, ior_on_path):
    ior_on_path("4.0.0", mpirun=True, or_on_path=True)
    cases = [c for c in mpiio.CASES if c.name in ("independent", "collective")]
    df = mpiio.collective(cases, ws=ws, method="darshan", quiet=True).frame
    assert list(df["mode"]) == ["live", "live"]
    n = df.set_index("case")["posix_writes"]
    assert n["independent"] == mpiio.MPIIO_TASKS * mpiio.MPIIO.segments
    assert n["collective"] < n["independent"]


# --- formats 3.10 and 3.21 (Darshan 3.1-3.3 runtimes, still common on sites) -------------------------

def _example_logs() -> list[Path]:
    """PyDarshan's own example logs (formats 3.10 and 3.21), from the installed package."""
    examples = pytest.importorskip("darshan.examples")
    logs = sorted(Path(examples.__file__).parent.glob("example_logs/*.darshan"))
    if not logs:
        pytest.skip("this PyDarshan ships no example logs")
    return logs


@reads_logs
def test_older_formats_are_read_not_called_damaged():
    # issue 32: every 3.10 and 3.21 log was refused as "damaged" (their header's maps start at byte 24)
    logs = _example_logs()
    formats = {}
    for p in logs:
        h = darshan.check_header(p)
        formats.setdefault(h.format, []).append(p.name)
        assert "job" in h.regions and "names" in h.regions and h.partial is False, (p.name, h)
    assert {"3.10", "3.21"} <= set(formats), formats
    log = darshan.read_log(next(p for p in logs if p.name == "example.darshan"))
    assert log.job["log_ver"] == "3.10" and log.job["nprocs"] == 2048 and "MPI-IO" in log.modules


def test_a_changed_byte_in_an_older_format_is_still_found(tmp_path):
    p = next(p for p in _example_logs() if darshan.check_header(p).format == "3.21")
    data = bytearray(p.read_bytes())
    o, n = darshan.check_header(p).regions["names"]
    data[o + n // 2] ^= 0xFF
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(bytes(data))
    with pytest.raises(ParseError, match="damaged: its names region"):
        darshan.check_header(bad)
