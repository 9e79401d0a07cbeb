"""iolab.tools.bpftrace: the readahead trace's parser (strict), why_not, and the Tracer's cleanup."""
from __future__ import annotations

import os

import pytest

from iolab import ParseError, ToolFailed, recordings
from iolab.tools import bpftrace

GOOD = "Attaching 5 probes...\nREADY\nS 10 0 1\nW 11 0 4 3 0\nA 12 0 0\nA 13 1 0\n"


def test_parse_reads_every_kind_and_skips_bpftraces_own_lines():
    recs = bpftrace.parse(GOOD + "\n")
    assert [r["kind"] for r in recs] == ["sync", "window", "folio", "folio"]
    assert recs[1] == {"kind": "window", "ns": 11, "index": 0, "size": 4, "async_size": 3, "order": 0}


@pytest.mark.parametrize("bad, line_no, match", [
    (GOOD + "X 1 2 3\n", 7, "not a line of the readahead trace"),
    (GOOD + "A 1 2\n", 7, "folio line"),
    (GOOD + "W 1 2 3 4 five\n", 7, "window line"),
    ("Attaching 5 probes...\nA 1 2 3\n", 1, "no READY"),
])
def test_parse_rejects_malformed_lines_naming_them(bad, line_no, match):
    with pytest.raises(ParseError, match=match) as e:
        bpftrace.parse(bad)
    assert e.value.line_no == line_no


def test_a_trace_without_folios_is_an_error():
    with pytest.raises(ParseError, match="no folio"):
        bpftrace.parse("Attaching 1 probe...\nREADY\nS 1 0 1\n")


def test_the_recorded_trace_parses_and_carries_its_witness():
    rec = recordings.load("bpftrace/readahead-growth-ext4-64m")
    recs = bpftrace.parse(rec.text)
    assert sum(1 << r["order"] for r in recs if r["kind"] == "folio") == 64 * 2**20 // 4096
    assert rec.witness().own_read == 64 * 2**20 and rec.meta["filesystem"]["read_ahead_kb"] == 8192


def test_why_not_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(bpftrace, "which", lambda tool: None)
    assert "not installed" in bpftrace.why_not(tracing=tmp_path)
    monkeypatch.setattr(bpftrace, "which", lambda tool: "/usr/bin/bpftrace")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert "needs root" in bpftrace.why_not(tracing=tmp_path)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert "tracefs is not mounted" in bpftrace.why_not(tracing=tmp_path)
    (tmp_path / "events" / "filemap").mkdir(parents=True)
    assert "no tracepoint filemap:mm_filemap_add_to_page_cache" in bpftrace.why_not(tracing=tmp_path)


def test_kernel_dev_is_mkdev():
    assert bpftrace.kernel_dev(os.makedev(254, 1)) == (254 << 20) | 1


@pytest.mark.live
def test_tracer_stops_bpftrace_on_an_error():
    bpftrace.ensure_tracefs()           # root on a fresh machine: mount it, as lesson 02 does
    why = bpftrace.why_not(tracepoints=())
    if why:
        pytest.skip(why)
    script = 'BEGIN { printf("READY\\n"); } interval:ms:50 { printf("A 1 2 0\\n"); }'
    t = bpftrace.Tracer(script)
    with pytest.raises(KeyboardInterrupt):
        with t:
            pid = t._proc.pid
            raise KeyboardInterrupt
    assert t._proc.poll() is not None and t.run is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.live
def test_tracer_reports_a_script_bpftrace_refuses():
    bpftrace.ensure_tracefs()           # root on a fresh machine: mount it, as lesson 02 does
    why = bpftrace.why_not(tracepoints=())
    if why:
        pytest.skip(why)
    with pytest.raises(ToolFailed):
        with bpftrace.Tracer("this is not a bpftrace program"):
            pass


# --- issue 22, 8: as root on a fresh machine, lesson 02's trace runs live ------------------------------

def test_root_mounts_tracefs_when_it_is_not_mounted(tmp_path, monkeypatch):
    from iolab.tools import bpftrace
    calls = []
    monkeypatch.setattr(bpftrace, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(bpftrace.os, "geteuid", lambda: 0)
    monkeypatch.setattr(bpftrace, "run", lambda argv, timeout: calls.append(argv))
    tracing = tmp_path / "tracing"
    tracing.mkdir()
    said = bpftrace.ensure_tracefs(tracing)
    assert calls == [["mount", "-t", "tracefs", "nodev", str(tracing)]] and "mounted tracefs" in said
    (tracing / "events").mkdir()                                   # mounted: nothing more to do
    assert bpftrace.ensure_tracefs(tracing) is None and len(calls) == 1
    monkeypatch.setattr(bpftrace.os, "geteuid", lambda: 1000)      # a student: never tries
    assert bpftrace.ensure_tracefs(tmp_path / "other") is None and len(calls) == 1


@pytest.mark.live
def test_root_mounts_the_real_tracefs():
    import os
    from pathlib import Path

    from iolab.tools import bpftrace
    if os.geteuid() != 0 or bpftrace.which("bpftrace") is None:
        pytest.skip("needs root and bpftrace")
    bpftrace.ensure_tracefs()
    assert (Path("/sys/kernel/tracing") / "events").is_dir()
    assert bpftrace.why_not() in (None, "this kernel has no tracepoint filemap:mm_filemap_add_to_page_cache")
