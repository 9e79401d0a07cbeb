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


def test_the_seed_004_table_gives_this_machine_the_median_of_its_passes_not_their_mean():
    """Issue 32: the "this machine" column was pivot_table's default, a mean of noisy passes (29 µs per
    call at 4 KiB from one slow pass, 2 µs at 8 KiB): a median of the passes, and how many."""
    import pandas as pd

    from iolab.lessons.l02_readahead import readahead as lab
    sweep = pd.DataFrame({"cache": ["warm"] * 6, "read_size": [4096, 4096, 4096, 8192, 8192, 8192],
                          "us_per_call": [2.0, 80.0, 2.2, 1.9, 2.0, 2.1]})
    table = lab.seed004_table(sweep)
    here = [c for c in table.columns if c.startswith("this machine")]
    assert len(here) == 1 and "median of 3 passes" in here[0]
    assert table.loc[4096, here[0]] == 2.2 and table.loc[8192, here[0]] == 2.0
    assert any(c.startswith("seed 004") for c in table.columns)
