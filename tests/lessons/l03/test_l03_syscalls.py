"""iolab.lessons.l03_strace.syscalls' runs (lesson 03): the workloads, strace's count and trace live or replayed, each
an Outcome whose frame is strace's table."""
from __future__ import annotations

import os
import sys

import pytest

from iolab import recordings
from iolab.lessons.l03_strace import syscalls as lab
from iolab.tools import strace
from conftest import needs


def test_read_loop_argv_uses_the_real_interpreter(tmp_path):
    argv = lab.read_loop_argv(tmp_path / "f", 4096)
    assert argv[0] == sys.executable and argv[-2:] == ["4096", "unbuffered"]
    with pytest.raises(ValueError):
        lab.read_loop_argv(tmp_path / "f", 0)


@pytest.mark.parametrize("n_bytes, read_size, want", [
    (100_000, 4096, 26), (100_000, 1000, 101), (100_000, 1, 100_001), (100_000, 10 * 2**20, 2),
    (0, 4096, 1), (10 * 2**20, 2048, 5121), (10 * 2**20, 1, 10_485_761),
])
def test_expected_reads(n_bytes, read_size, want):
    assert lab.expected_reads(n_bytes, read_size) == want


def test_seed_figures_imply_a_10_mib_file_and_159_startup_reads():
    # seed 004: 5,280 reads at 2 KiB, 161 at 10 MiB, 10,485,920 at 1 byte, all from one script.
    # The three differ from ceil(N/n)+1 for N = 10 MiB by the same 159: the interpreter's own reads.
    n = 10 * 2**20
    offsets = {5_280 - lab.expected_reads(n, 2048), 161 - lab.expected_reads(n, n),
               10_485_920 - lab.expected_reads(n, 1)}
    assert offsets == {159}


def test_count_replays_when_strace_is_missing(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = lab.count([sys.executable, "-c", "0"], recording="strace/sweep-read-4096", cwd=tmp_path, quiet=False)
    df = out.frame
    assert isinstance(out, recordings.Outcome) and out.mode == "replay" and isinstance(out, lab.Traced)
    assert out.returncode is None and out.recording.ref == "strace/sweep-read-4096"
    assert int(df.loc[df["syscall"] == "read", "calls"].iloc[0]) == lab.expected_reads(100_000, 4096)
    assert "REPLAY" in capsys.readouterr().out
    # strace's total row: typed fields of the outcome (before: df.attrs["total"], a bag of strings)
    total = strace.parse_summary(out.recording.text).total
    assert (out.total_calls, out.total_errors, out.total_seconds) == (total["calls"], total["errors"], total["seconds"])
    assert out.total_calls == int(df["calls"].sum()) and df.attrs == {}


@pytest.mark.live
@needs("strace")
def test_failing_command_is_a_result_not_a_crash(ws):
    out = lab.count([sys.executable, "-c", "import sys; sys.exit(3)"], cwd=ws.root, timeout=60)
    assert out.returncode == 3 == out.run.returncode and out.mode == "live"
    assert out.total_calls > 0 and out.seconds > 0 and out.argv[0] == "strace"


@pytest.mark.live
@needs("strace")
@pytest.mark.parametrize("read_size", [4096, 1000, 100_000, 1_048_576])
def test_live_exact_read_count(ws, read_size):
    path = ws.make_file("data.bin", 100_000)
    assert lab.count_reads(path, read_size) == lab.expected_reads(100_000, read_size)


@pytest.mark.live
@needs("strace")
def test_live_count_and_trace_agree(ws):
    path = ws.make_file("data.bin", 65_536)
    out = lab.trace(lab.read_loop_argv(path, 8192), syscalls="read", paths=[path], cwd=ws.root, timeout=60)
    df = out.frame
    reads = df[df["syscall"] == "read"]
    assert len(reads) == lab.expected_reads(65_536, 8192)
    assert set(reads["path"]) == {str(path)} and set(reads["size"]) == {8192}
    assert reads["result"].sum() == 65_536 and (reads["duration"] >= 0).all()
    assert out.returncode == 0
    assert not any(p.name.startswith(".strace-") for p in ws.root.iterdir())   # the -o file is removed


@pytest.mark.live
@needs("strace")
def test_live_forks_are_followed(ws):
    path = ws.make_file("data.bin", 65_536)
    df = lab.trace(lab.forks_demo_argv(path, [4096, 16384]), syscalls="read", paths=[path], cwd=ws.root).frame
    per_pid = df[df["syscall"] == "read"].groupby("pid").size().sort_values()
    assert list(per_pid) == [lab.expected_reads(65_536, 16384), lab.expected_reads(65_536, 4096)]
    assert os.path.exists(path)



def test_a_command_given_as_a_string_is_refused_before_anything_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    with pytest.raises(TypeError, match="argv list"):
        lab.count("python -c 0", recording="strace/sweep-read-4096", cwd=tmp_path)


def test_overhead_and_write_fsync_replay_as_outcomes(monkeypatch, ws):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    cost = lab.measure_overhead(ws.make_file("d.bin", 100_000), 16, recording="strace/overhead-16b-of-100000",
                                quiet=True)
    assert cost.mode == "replay" and cost.frame is cost.data and {"how", "seconds"} <= set(cost.frame)
    wf = lab.write_fsync(ws)
    assert wf.mode == "replay" and len(wf.parts) == 2 and list(wf.frame["clock"].unique()) == list(lab.CLOCKS)
    assert wf.fstype == wf.parts[0].recording.meta["filesystem"]["fstype"]
    assert set(wf.parts[1].frame["syscall"]) == {"write", "fsync"}
