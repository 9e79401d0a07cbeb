"""Lessons 01 and 02: their charts (each lesson's plots), the residency widget and their checks."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from iolab import check, fsinfo, measure, pagecache, plot, readahead_probes
from iolab.lessons.l01_page_cache import plots as plots_01, check as check_01
from iolab.lessons.l02_readahead import plots as plots_02, check as check_02, explorers
from iolab.units import KiB


@pytest.fixture
def f(ws):
    if fsinfo.fstype(ws.root) in fsinfo.MEMORY_FS:
        pytest.skip("workspace on tmpfs")
    return ws.make_file("f.bin", "1MiB")


# --- plot ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("n, cells", [(10, 10), (4096, 4096), (10**6, 16384)])
def test_residency_map_scales(n, cells):
    m = np.zeros(n, dtype=bool)
    m[: n // 2] = True
    fig = plot.residency_map(m)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.count_nonzero(~np.isnan(z)) <= cells
    assert np.nanmax(z) == 1.0 and np.nanmin(z) == 0.0
    assert f"{n // 2:,} of {n:,} pages" in fig.layout.title.text
    assert "page" in fig.layout.xaxis.title.text and "MiB" in fig.layout.yaxis.title.text


def test_residency_map_binned_fraction_is_exact():
    m = np.zeros(40000, dtype=bool)
    m[::4] = True                         # a quarter of every bin
    z = np.asarray(plot.residency_map(m, max_cells=1000).data[0].z, dtype=float)
    vals = z[~np.isnan(z)]
    assert np.allclose(vals, 0.25)


def test_residency_map_needs_a_map():
    r = pagecache.Residency("x", 10, 1, 0, map=None)
    with pytest.raises(ValueError, match="keep_map"):
        plot.residency_map(r)


def test_sweep_chart_log_axes_and_units():
    frame = pd.DataFrame({"read_size": [1, 4096], "file_size": [10, 10], "seconds": [1.0, 0.1],
                          "calls": [11, 2], "mib_per_s": [1.0, 10.0], "us_per_call": [1.0, 1.0],
                          "cache": ["cold", "cold"]})
    pub = pd.DataFrame({"read_size": [1, 4096], "seconds": [4.55, 0.0024], "source": ["seed 004", "seed 004"]})
    fig = plots_02.read_size_sweep(frame, published=pub)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    assert "MiB/s" in fig.layout.yaxis2.title.text and "bytes" in fig.layout.xaxis.title.text
    assert any(t.name == "seed 004" for t in fig.data)


def test_verdicts_chart_is_linear_from_zero_with_the_device_line():
    fr = pd.DataFrame({"label": ["cold", "warm"], "mib_per_s": [1477.0, 5964.0],
                       "verdict": ["from the device", "served from page cache"], "reason": ["a", "b"]})
    fig = plots_01.verdicts(fr, device_bps=1410 * 2**20)
    assert fig.layout.yaxis.type in (None, "linear") and fig.layout.yaxis.range[0] == 0
    assert any("1,410 MiB/s" in (t.name or "") for t in fig.data)       # named in the legend
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(1410.0, 1410.0)]


def test_log_axes_are_labelled_at_every_decade_in_full():
    ticks = plot.decade_ticks(3e-5, 2.0, plots_02._seconds_label)
    assert ticks["ticktext"] == ["10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"]
    assert plot.decade_ticks(float("nan"), 1.0) == {}
    frame = pd.DataFrame({"read_size": [1, 4096], "file_size": [10, 10], "seconds": [1.0, 0.001],
                          "calls": [11, 2], "mib_per_s": [1.0, 10.0], "us_per_call": [1.0, 1.0],
                          "cache": ["cold", "cold"]})
    fig = plots_02.read_size_sweep(frame)
    assert list(fig.layout.yaxis.ticktext) == ["1 ms", "10 ms", "100 ms", "1 s"]


def test_dirty_writeback_panels():
    fr = pd.DataFrame({"t": [0, 1, 2], "Dirty": [0, 2**20, 0], "Writeback": [0, 0, 0], "Cached": [0, 0, 0],
                       "event": ["start", "written", "stop"]})
    both = pd.concat([fr.assign(run="no fsync"), fr.assign(run="fsync")])
    fig = plots_01.dirty_writeback(both)
    assert [a.text.split(" (")[0] for a in fig.layout.annotations] == ["no fsync", "fsync"]
    assert "MiB" in fig.layout.yaxis.title.text


# --- widgets -------------------------------------------------------------------------------------

@pytest.mark.live
@pytest.mark.slow
def test_window_explorer_updates(f):
    box = explorers.window_explorer(f)
    status = box.children[1]
    box.children[0].children[1].value = "random"
    assert "brought in 1 pages" in status.value
    box.children[0].children[0].value = 16384
    assert "asked for 16 KiB (4 pages)" in status.value


@pytest.mark.live
def test_read_size_explorer_updates(f):
    box = explorers.read_size_explorer(f, sizes=(1024, 4096))
    box.children[0].value = 1024
    assert box.children[1].value.startswith("1,025 calls")


# --- check ---------------------------------------------------------------------------------------

@pytest.mark.live
def test_check_01(f):
    with pytest.raises(check.CheckFailed, match="still resident"):
        check_01.check_01_evicted(f)          # make_file leaves it cached
    pagecache.evict(f)
    assert check_01.check_01_evicted(f)
    cold = measure.timed_read(f, cache="cold")
    warm = measure.timed_read(f)
    assert check_01.check_01_cold_warm(cold, warm, warm.bytes_per_s / cold.bytes_per_s)
    with pytest.raises(check.CheckFailed, match="not cold"):
        check_01.check_01_cold_warm(warm, warm, 1.0)
    with pytest.raises(check.CheckFailed):
        check_01.check_01_cold_warm(cold, warm, 1e9)


def test_check_01_seed_verdicts():
    loc = measure.judge(1948472 * KiB / 0.352, device_bps=1948472 * KiB / 3.667)
    bee = measure.judge(1948449 * KiB / 3.160, device_bps=1948449 * KiB / 3.284)
    assert check_01.check_01_seed_verdicts(loc, bee)
    with pytest.raises(check.CheckFailed, match="local"):
        check_01.check_01_seed_verdicts(bee, bee)
    with pytest.raises(check.CheckFailed, match="Verdict"):
        check_01.check_01_seed_verdicts("served from page cache", bee)


@pytest.mark.live
def test_check_01_witnessed_write(ws):
    from iolab import witness
    from iolab.units import MiB
    target = ws.path("witnessed.bin")
    with witness.Witness(ws.root) as w:
        with open(target, "wb") as out:
            for _ in range(16):
                out.write(b"x" * MiB)
    r = w.result
    reached = r.device is not None and r.device_written >= 16 * MiB
    assert check_01.check_01_witnessed_write(r, target, r.own_written, reached)
    with pytest.raises(check.CheckFailed, match="True or False"):
        check_01.check_01_witnessed_write(r, target, r.own_written, "no")
    with pytest.raises(check.CheckFailed, match="charged"):
        check_01.check_01_witnessed_write(r, target, 4096, reached)
    with pytest.raises(check.CheckFailed, match="cachestat counts|device_written|no block device"):
        check_01.check_01_witnessed_write(r, target, r.own_written, not reached)
    with pytest.raises(check.CheckFailed, match="w.result"):
        check_01.check_01_witnessed_write(None, target, r.own_written, reached)
    with witness.Witness(ws.root) as nothing:
        pass
    with pytest.raises(check.CheckFailed, match="inside"):
        check_01.check_01_witnessed_write(nothing.result, target, 0, False)


@pytest.mark.slow
def test_check_02(f, ws):
    assert check_02.check_02_random_window(f, 1)
    with pytest.raises(check.CheckFailed):
        check_02.check_02_random_window(f, 4)
    sweep = readahead_probes.read_size_sweep(f, [1, 4096], cache="warm")
    assert check_02.check_02_calls(sweep, 2**20 + 1)
    with pytest.raises(check.CheckFailed, match="one more"):
        check_02.check_02_calls(sweep, 2**20)
    g = readahead_probes.window_growth(f, "4KiB", 16)
    assert check_02.check_02_growth(g, int(g["resident"].iloc[-1]))
    with pytest.raises(check.CheckFailed):
        check_02.check_02_growth(g, 16)
    kb = readahead_probes.read_ahead_kb(ws.root).kb
    assert check_02.check_02_read_ahead_kb(ws.root, kb)
    with pytest.raises(check.CheckFailed):
        check_02.check_02_read_ahead_kb(ws.root, -1)


def test_readahead_trace_chart_from_the_recording():
    from iolab import recordings
    from iolab.tools import bpftrace
    rec = recordings.load("bpftrace/readahead-growth-ext4-64m")
    folios, windows = readahead_probes.growth_frames(bpftrace.parse(rec.text))
    fig = plots_02.readahead_trace(folios, windows)
    assert fig.layout.yaxis.type == "log" and "pages" in fig.layout.yaxis.title.text
    assert fig.layout.xaxis2.type == "log" and "page index" in fig.layout.xaxis2.title.text
    assert "order" in fig.layout.yaxis2.title.text
    marks = [t for t in fig.data if t.mode == "markers" and t.name and t.name.startswith("opened")]
    assert sum(len(t.y) for t in marks) == len(windows) and max(max(t.y) for t in marks) == 2048
    assert {t.name for t in marks} == {"opened by a miss (sync)", "opened at the marker page (async)"}
    assert not [t for t in fig.data if t.type == "bar"]


@pytest.mark.parametrize("pages", [10, 256, 4096])
def test_a_short_residency_map_keeps_room_for_its_plot(pages):
    # a 256-page map (2 rows of 128) was drawn 176 px high: title, axis titles and colour bar left
    # no room for the cells, and the row labels overlapped (seen in lesson 02's 1-byte read)
    fig = plot.residency_map(np.zeros(pages, bool))
    top, bottom = fig.layout.margin.t or 100, fig.layout.margin.b or 80       # plotly's defaults
    assert fig.layout.height - top - bottom >= 100
