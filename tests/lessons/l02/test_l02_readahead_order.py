"""Issue 32: bpftrace prints each CPU's buffer in turn, so on a busy 2-CPU machine the trace's lines are
not in time order; the readahead-window table is built by each event's timestamp, never by output order."""
from __future__ import annotations

from iolab import readahead_probes, recordings
from iolab.tools import bpftrace


def _per_cpu_output(records: list[dict]) -> list[dict]:
    """The recorded (in-order) events as bpftrace may print them from two CPUs: the events of a late
    stretch on one CPU printed first, the rest after."""
    cut = len(records) // 2
    return records[cut:cut + 12] + records[:cut] + records[cut + 12:]


def test_the_window_table_is_in_time_order_whatever_order_the_lines_came_in():
    recs = bpftrace.parse(recordings.load("bpftrace/readahead-growth-ext4-64m").text)
    assert [r["ns"] for r in recs] == sorted(r["ns"] for r in recs)      # the recording itself is in order
    folios, windows = readahead_probes.growth_frames(recs)
    shuffled_f, shuffled_w = readahead_probes.growth_frames(_per_cpu_output(recs))
    assert list(shuffled_w["ms"]) == sorted(shuffled_w["ms"]) and list(shuffled_f["ms"]) == sorted(shuffled_f["ms"])
    assert shuffled_w.equals(windows) and shuffled_f.equals(folios)
