"""Charts a reader can read (issue 22, 6): the layout properties a browser shows, checked on the figure.
Each test fails on the layout it replaced (linear panels from zero, unlabelled rows, bare minor ticks)."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from iolab import plot, recordings, trials
from iolab.lessons.class_results import plots as plots_class
from iolab.lessons.l01_page_cache import plots as plots_01
from iolab.lessons.l02_readahead import plots as plots_02, explorers as explorers_02
from iolab.lessons.l03_strace import plots as plots_03
from iolab.lessons.l04_ior import plots as plots_04, sweeps, explorers as explorers_04
from iolab.lessons.l05_mdtest import plots as plots_05
from iolab.lessons.l06_object_storage import plots as plots_06
from iolab.lessons.l07_darshan import plots as plots_07


def _rates() -> pd.DataFrame:
    rows = []
    for fs, scale in (("/tmp (ext4)", 1.0), ("/dev/shm (tmpfs)", 60.0)):
        for op, base in (("directory creation", 5000.0), ("file stat", 20000.0), ("file removal", 500.0)):
            m = base * scale
            rows.append({"filesystem": fs, "operation": op, "unit": "ops/s", "mean": m, "min": m / 2, "max": m * 1.5})
    return pd.DataFrame(rows)


def test_mdtest_rates_panels_are_log_with_labelled_rows():
    df = _rates()
    fig = plots_05.mdtest_rates(df)
    layout = fig.layout.to_plotly_json()
    xaxes = [layout[k] for k in sorted((k for k in layout if k.startswith("xaxis")), key=lambda k: int(k[5:] or 1))
             if "ticktext" in layout[k]]
    yaxes = {k: a for k, a in layout.items() if k.startswith("yaxis")}
    assert len(xaxes) == 3 and all(a.get("type") == "log" for a in xaxes)
    # each panel's range holds both filesystems' slowest and fastest iterations: none at zero, none cut
    for a, op in zip(xaxes, dict.fromkeys(df["operation"])):
        lo, hi = a["range"]
        part = df[df["operation"] == op]
        assert lo < math.log10(part["min"].min()) and hi > math.log10(part["max"].max())
    # rows are named (on the left column at least)
    assert yaxes["yaxis"].get("showticklabels") is True
    # ticks are labelled in full, never a bare "2" or "5"
    for a in xaxes:
        assert a["ticktext"] and all(t not in ("2", "5") for t in a["ticktext"])
        assert len(a["tickvals"]) == len(a["ticktext"])


@pytest.mark.parametrize("values", [[433.0, 591.0, 1233.0, 4262.0, 5169.0, 5407.0], [0.9, 3.0, 20.0, 700.0, 90000.0]])
def test_log_ticks_cover_the_values_and_label_every_tick(values):
    t = plot.log_ticks(values)
    lo, hi = t["range"]
    assert lo < math.log10(min(values)) and hi > math.log10(max(values))
    assert all(lo <= math.log10(v) <= hi for v in t["tickvals"])
    assert all(len(s) > 1 or s == "1" for s in t["ticktext"])      # never a bare minor digit
    assert len(t["tickvals"]) >= 2


def test_trials_on_a_log_axis_label_minor_ticks_in_full():
    t = trials.from_values({"no -M": [4262.0, 5169.0, 5407.0], "-M 1%": [433.0, 591.0, 1233.0]}, unit="MiB/s",
                           higher=True)
    fig = plot.trials(t.frame, unit="MiB/s", log=True)
    y = fig.layout.yaxis
    assert y.type == "log" and "2,000" in y.ticktext and "5,000" in y.ticktext


def test_cache_overflow_chart_marks_the_limit_and_draws_every_trial():
    df = sweeps.cache_runs(show=False).frame
    fig = plots_04.cache_overflow(df)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    points = sum(len(tr.y) for tr in fig.data if tr.mode == "markers")
    assert points == len(df[df["run"].str.startswith("cache-s")])
    assert any("limit" in (a.text or "") for a in fig.layout.annotations)
    assert fig.layout.height >= 400 and fig.layout.margin.b >= 100


def _class() -> pd.DataFrame:
    rows = []
    for i, (fs, v) in enumerate((("tmpfs", 150000.0), ("local-ext4", 2400.0), ("s3fs", 90.0)) * 3):
        rows.append({"user": f"student0{i % 3 + 1}", "filesystem": fs, "mib_per_s": v * (1 + i / 10),
                     "options": "", "node": "n", "fstype": fs, "mode": "live"})
    return pd.DataFrame(rows)


def test_class_strip_axis_is_in_words_with_full_tick_labels():
    fig = plots_class.class_strip(_class(), "mib_per_s", unit="MiB/s")
    y = fig.layout.yaxis
    assert "mib_per_s" not in y.title.text and y.title.text.startswith("throughput (MiB/s")
    assert y.type == "log" and y.ticktext and all(t not in ("2", "5") for t in y.ticktext)
    assert "mib_per_s" not in fig.layout.title.text


def test_class_heatmap_colorbar_never_prints_exponents():
    df = _class().rename(columns={"mib_per_s": "mean"})
    fig = plots_class.class_heatmap(df, "mean", unit="ops/s")
    text = fig.data[0].colorbar.ticktext
    assert text and not any("e+" in t for t in text)


def test_readahead_windows_are_markers_inside_a_padded_log_axis():
    windows = pd.DataFrame({"window": [1, 2, 3, 4], "size": [4, 16, 512, 2048], "trigger": ["sync", "async", "async", "async"],
                            "start": [0, 4, 20, 532], "async_size": [0, 12, 256, 2048], "ms": [0.1, 0.2, 0.3, 0.4]})
    folios = pd.DataFrame({"index": [0, 4, 20], "order": [0, 2, 4], "pages": [1, 4, 16], "window": [1, 2, 3]})
    fig = plots_02.readahead_trace(folios, windows)
    assert not any(tr.type == "bar" for tr in fig.data)
    y = fig.layout.yaxis
    assert y.type == "log" and y.range[0] < math.log10(4) and y.range[1] > math.log10(2048)


def test_syscall_time_has_room_for_its_bars_and_an_uncut_legend():
    df = pd.DataFrame({"syscall": ["write", "fsync"] * 2, "seconds": [0.014, 0.003, 0.0143, 0.0305],
                       "calls": [64, 1, 64, 1], "clock": ["system time (-c)"] * 2 + ["wall time (-c -w)"] * 2})
    fig = plots_03.syscall_time(df, by="clock")
    lay = fig.layout
    assert lay.height >= 340
    # the legend sits under the plot, in a bottom margin large enough to hold it
    assert lay.legend.orientation == "h" and lay.legend.y < 0 and lay.margin.b >= 100


def test_ior_bandwidth_labels_sit_off_the_device_line_each_over_its_own_diamond():
    """The live lesson's chart: "unclear" labels to the side of diamonds near the device's line sat on the line
    and, at O_DIRECT, ran into each other. Each label now goes above its diamond, or below it when the diamond
    is under the line, centred in its own slot of the run's column."""
    device = 2274.0
    rates = {"shared": (3000.0, 20000.0), "-F -C -e": (2300.0, 2350.0), "O_DIRECT": (2250.0, 2290.0)}
    rows = [{"run": run, "config": run, "access": access, "iteration": 0, "bw_mib": v, "verdict": "unclear",
             "reason": "DISTURBED"} for run, pair in rates.items() for access, v in zip(("write", "read"), pair)]
    fig = plots_04.ior_bandwidth(pd.DataFrame(rows), device_mib=device)
    best = {tr.legendgroup: tr for tr in fig.data if tr.mode == "markers+text"}
    for tr in best.values():
        assert list(tr.text) == ["unclear"] * 3
        for y, pos in zip(tr.y, tr.textposition):
            assert pos == ("top center" if y >= device else "bottom center"), (tr.name, y, pos)
    assert list(best["write"].textposition) == ["top center", "top center", "bottom center"]
    # write and read of a run in slots of their own, the columns nearly touching: a label has half a column
    lay = fig.layout
    assert lay.scattermode == "group" and lay.scattergap <= 0.1
    assert best["write"].offsetgroup != best["read"].offsetgroup
    # room under zero and over the top for the labels that go there, ticks only from zero up
    assert lay.yaxis.range[0] < 0 and lay.yaxis.range[1] > 20000 * 1.05 and min(lay.yaxis.tickvals) == 0
    # the legend under the plot, so the columns keep the width
    assert lay.legend.orientation == "h" and lay.legend.y < 0 and lay.margin.b >= 120


def test_ior_vs_published_panels_share_one_labelled_log_axis():
    """The seed's figures run from 142 to 239,576 MiB/s: on a linear axis its 142, 252, 841 and 940 all sat
    at zero. Both panels now share one log axis with every tick labelled in full."""
    orfeo = recordings.published("seed001-ior-orfeo")
    ours = pd.DataFrame([{"run": c, "config": c, "access": a, "iteration": 0, "bw_mib": v}
                         for c, (w, r) in {"shared": (3792.0, 22906.0), "-F": (11416.0, 35775.0),
                                           "-F -C -e": (2462.0, 15427.0)}.items()
                         for a, v in (("write", w), ("read", r))])
    fig = plots_04.ior_vs_published(ours, orfeo)
    lay = fig.layout
    values = list(ours["bw_mib"]) + list(orfeo["bw_mib"])
    for y in (lay.yaxis, lay.yaxis2):
        assert y.type == "log" and "log" in y.title.text and "MiB/s" in y.title.text
        lo, hi = y.range
        assert lo < math.log10(min(values)) and hi > math.log10(max(values))
        assert y.ticktext and all(t not in ("2", "5") for t in y.ticktext) and "100,000" in y.ticktext
    assert tuple(lay.yaxis.range) == tuple(lay.yaxis2.range)
    assert "linear" not in lay.title.text and "own scale" not in lay.title.text


def test_dirty_writeback_draws_the_change_so_a_small_step_shows_on_a_large_baseline():
    base = 600 * 2**20
    t = [0.0, 0.1, 0.2, 0.3]
    frame = pd.DataFrame({"t": t, "Dirty": [base, base + 64 * 2**20, base + 64 * 2**20, base],
                          "Writeback": [0, 0, 32 * 2**20, 0], "event": ["start", "", "write returned", "stop"],
                          "run": ["write, no fsync"] * 4})
    fig = plots_01.dirty_writeback(frame)
    dirty = next(tr for tr in fig.data if tr.name == "Dirty")
    assert min(dirty.y) == 0 and max(dirty.y) == pytest.approx(64)       # the step, not 600 + 64
    assert "change" in fig.layout.yaxis.title.text
    assert "Dirty 600 MiB" in fig.layout.annotations[0].text          # the baseline is still said


def test_dirty_writeback_puts_a_high_event_label_under_its_marker():
    """Lesson 01 in chromium: 'write returned' at the top of its panel ran into the panel's title."""
    t = [0.0, 0.1, 0.2, 0.3]
    frame = pd.DataFrame({"t": t, "Dirty": [0, 32 * 2**20, 64 * 2**20, 64 * 2**20], "Writeback": [0] * 4,
                          "event": ["start", "", "write returned", "stop"], "run": ["write, no fsync"] * 4})
    ev = next(tr for tr in plots_01.dirty_writeback(frame).data if tr.name == "event")
    assert list(ev.textposition) == ["bottom right"]
    low = frame.assign(Dirty=[0, 64 * 2**20, 0, 0], event=["start", "", "fsync returned", "stop"])
    ev = next(tr for tr in plots_01.dirty_writeback(low).data if tr.name == "event")
    assert list(ev.textposition) == ["top right"]


def test_a_widget_carries_a_static_figure_for_an_export_without_widget_state(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    box = explorers_04.ior_sweep_explorer()
    bundle = box._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle          # JupyterLab: the live widget
    html = bundle["text/html"]                                            # an export falls back to this
    assert "Plotly" in html and box.fig.layout.title.text.split(":")[0][:20] in html
    assert box.children[-1] is box.fig                                    # still the box for callers


def test_darshan_costs_marks_medians_with_no_label_a_chart_edge_can_clip():
    # lesson 07: a "fastest 44 ms" label under each way's fastest run was cut at the chart's bottom edge
    hows = ["plain", "under Darshan", "under strace -c"]
    df = pd.DataFrame([(h, s * k, i) for i, k in enumerate((0.9, 1.0, 1.3)) for h, s in zip(hows, (0.05, 0.06, 0.4))],
                      columns=["how", "seconds", "repeat"])
    fig = plots_07.darshan_costs(df)
    assert not [t for t in fig.data if t.text is not None or "text" in (t.mode or "")]
    assert not fig.layout.annotations
    medians = {t.y[0]: t.x[0] for t in fig.data if t.marker.symbol == "line-ns"}
    assert medians == pytest.approx({h: s * 1e3 for h, s in zip(hows, (0.05, 0.06, 0.4))})
    assert fig.layout.margin.l >= 7 * max(map(len, hows))          # the row labels fit


def test_darshan_costs_log_axis_keeps_plain_and_darshan_apart_beside_strace():
    # lesson 07: plain 27 ms and Darshan 40 ms sat in one spot near zero beside strace -c's 635 ms
    hows = ["plain", "under Darshan", "under strace -c"]
    df = pd.DataFrame([(h, s * k, i) for i, k in enumerate((0.9, 1.0, 1.3)) for h, s in zip(hows, (0.0276, 0.0405, 0.635))],
                      columns=["how", "seconds", "repeat"])
    x = plots_07.darshan_costs(df).layout.xaxis
    assert x.type == "log" and "log" in x.title.text
    lo, hi = x.range
    assert lo < math.log10(0.0276 * 0.9e3) and hi > math.log10(0.635 * 1.3e3)
    assert all(t not in ("2", "5") for t in x.ticktext)


def _cap_named_in_the_legend(fig, cap):
    assert not [a for a in fig.layout.annotations if "link cap" in (a.text or "")], "a label drawn on the chart"
    named = [t for t in fig.data if t.name == f"this run's link cap: {cap:g} MB/s"]
    assert len(named) == 1 and named[0].showlegend and named[0].line.dash == "dash"


def test_the_link_cap_is_named_in_the_legend_not_written_across_its_line_or_a_bar():
    # lesson 06: the cap's label sat on the "no cache" bar's value (fio) and was crossed by its own
    # dashed line (the dot charts)
    fio = pd.DataFrame({"configuration": ["no cache", "no cache", "use_cache"], "direction": "read",
                        "mb_per_s": [4.4, 10.2, 26.7], "source": ["measured here", "seed 000", "measured here"],
                        "position": [1, None, 2], "trial": [1, None, 1]})
    _cap_named_in_the_legend(plots_06.fuse_fio_trials(fio, link_mb_per_s=12), 12)
    reads = pd.DataFrame({"label": ["s3fs", "s3fs"], "read": ["1st (cold)", "2nd (warm)"], "mb_per_s": [10.0, 800.0],
                          "layer": ["the link", "the page cache"]})
    _cap_named_in_the_legend(plots_06.fuse_cold_warm(reads, link_mb_per_s=12), 12)
    copies = pd.DataFrame({"file": ["a.bin"], "nbytes": [1 << 20], "write_mb_per_s": [7.0], "read_mb_per_s": [600.0],
                           "reread_mb_per_s": [9.0]})
    _cap_named_in_the_legend(plots_06.gcsfuse_copy(copies, link_mb_per_s=12), 12)


def test_a_latency_histogram_legend_is_not_titled_with_a_column_name():
    calls = pd.DataFrame({"syscall": "read", "duration": [12e-6, 13e-6, 30e-6, 11e-6],
                          "label": ["cold (after DONTNEED)"] * 2 + ["warm (page cache)"] * 2})
    fig = plots_03.syscall_latency_histogram(calls)
    assert fig.layout.legend.title.text in (None, "")
    assert {t.name for t in fig.data} == {"cold (after DONTNEED)", "warm (page cache)"}


def test_log_ticks_label_two_ticks_at_least_on_a_narrow_range():
    # lesson 05's "file read" panel (about 300k to 700k ops/s) had one tick, 500k: no scale to read
    t = plot.log_ticks([310_000.0, 690_000.0], short=True)
    assert t["ticktext"] == ["300k", "500k", "700k"]
    lo, hi = t["range"]
    assert all(lo <= math.log10(v) <= hi for v in t["tickvals"])


@pytest.mark.parametrize("values", [[500.0, 120_000.0, 600_000.0], [2.0, 9_000.0], [1.0, 80_000.0], [0.5, 3e7]])
def test_log_ticks_label_the_top_of_a_wide_range(values):
    # the instructor's strip (500 to 600k ops/s) labelled 1k, 10k and 100k only: its students between
    # 100k and 600k had no label above them; up to 4 decades every value is within about 3.4x of a label
    t = plot.log_ticks(values, short=True)
    lo, hi = t["range"]
    assert all(lo <= math.log10(v) <= hi for v in t["tickvals"]) and len(t["tickvals"]) >= 2
    if math.log10(max(values) / min(values)) <= 4 - 2 * 0.12:
        for v in values:
            assert min(abs(math.log10(v / tv)) for tv in t["tickvals"]) <= math.log10(3.4), (v, t["ticktext"])
    assert len(t["tickvals"]) <= 12                                # never a crowd of labels


def test_read_size_explorer_draws_bars_from_zero_with_their_values(tmp_path):
    # lesson 02: bars on a log axis cut at its base drew a warm read half as fast as the cold one as a sliver
    pytest.importorskip("ipywidgets")
    data = tmp_path / "data.bin"
    data.write_bytes(b"\0" * (1 << 20))
    box = explorers_02.read_size_explorer(data)
    ax, bars = box.fig.layout.yaxis, box.fig.data[0]
    assert ax.type in (None, "linear", "-") and ax.rangemode == "tozero"
    assert list(bars.text) == [f"{v:,.1f} MiB/s" for v in bars.y]


def test_fio_through_s3fs_shows_every_trial_with_its_median_not_one_bar():
    # lesson 06 section 2 (issue 22): a bar per configuration hid that each was one run
    import json

    from iolab import recordings
    from iolab.lessons.l06_object_storage import stores as object_storage

    docs = {c: json.loads(recordings.load(r).text) for c, r in object_storage.FIO_RECORDINGS.items()}
    seed = object_storage.seed000_published().assign(source="seed 000")
    table = pd.concat([object_storage.fio_frame(docs).assign(source="measured here"), seed], ignore_index=True)
    fig = plots_06.fuse_fio_trials(table, link_mb_per_s=12)
    assert not [t for t in fig.data if t.type == "bar"]
    boxes = [t for t in fig.data if t.type == "box"]
    assert len(boxes) == 3 and all(b.boxpoints == "all" for b in boxes)            # every trial a point
    assert sum(len(b.y) for b in boxes) == 3 * object_storage.FIO_TRIALS
    stars = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "star"]
    assert len(stars) == 1 and list(stars[0].y) == list(seed.loc[seed["direction"] == "read", "mb_per_s"])
    assert "MB/s" in fig.layout.yaxis.title.text and fig.layout.xaxis.title.text == "configuration"


def test_trials_axes_say_what_was_measured_with_its_unit_not_a_column_name():
    t = trials.from_values({"no fsync": [5457.0, 2921.0, 5668.0], "fsync": [1818.0, 1570.0, 1871.0]}, unit="MiB/s",
                           higher=True)
    fig = plot.trials(t.frame, unit="MiB/s")
    assert fig.layout.yaxis.title.text == "rate (MiB/s)"           # was the bare unit "MiB/s"
    assert fig.layout.xaxis.title.text not in ("setting", None, "")  # was the column name "setting"
    fig = plot.trials(t.frame, unit="MiB/s", y_title="write rate of 64 MiB (MiB/s)", x_title="how the file was written")
    assert fig.layout.yaxis.title.text == "write rate of 64 MiB (MiB/s)"
    assert fig.layout.xaxis.title.text == "how the file was written"
    seconds = trials.from_values({"a": [1.0, 1.1, 1.2], "b": [2.0, 2.1, 2.2]}, unit="s")
    assert plot.trials(seconds.frame, unit="s").layout.yaxis.title.text == "time (s)"


def test_verdicts_name_the_device_line_in_the_legend_not_on_the_cold_bar():
    frame = pd.DataFrame([
        {"label": "cold", "mib_per_s": 1488.0, "verdict": "unclear", "reason": "disturbed"},
        {"label": "warm", "mib_per_s": 25623.0, "verdict": "served from page cache", "reason": "memory"}])
    fig = plots_01.verdicts(frame, device_bps=3193.3 * 2**20)
    # the old figure wrote "device, uncached" on the line at the left, over the cold bar
    assert not [a for a in fig.layout.annotations if "device" in (a.text or "")]
    named = [t for t in fig.data if t.type == "scatter" and "device, uncached: 3,193 MiB/s" in (t.name or "")]
    assert len(named) == 1 and named[0].showlegend is not False
    assert [s for s in fig.layout.shapes if s.y0 == s.y1 and abs(s.y0 - 3193.3) < 0.1]


def test_mdtest_rates_legend_is_titled_in_words_by_the_caller():
    df = _rates().assign(run=lambda d: d["filesystem"] + ", -y")
    assert plots_05.mdtest_rates(df, by="run", legend_title="directory, mdtest options").layout.legend.title.text \
        == "directory, mdtest options"
    assert plots_05.mdtest_rates(df.rename(columns={"filesystem": "mount_point"}), by="mount_point"
                             ).layout.legend.title.text == "mount point"


def test_syscall_durations_log_axis_keeps_a_memory_filesystem_off_zero_and_rows_clear_of_the_title():
    rows = []
    for fs, scale in (("/tmp", 1.0), ("/dev/shm", 0.01)):
        for step, (call, us) in enumerate((("openat", 53.0), ("fsync", 10528.0), ("close", 11.0), ("newfstatat", 10.0))):
            rows.append({"filesystem": fs, "step": step, "syscall": call, "duration": us * scale * 1e-6 + 1e-6})
    fig = plots_05.syscall_durations(pd.DataFrame(rows))
    x = fig.layout.xaxis
    assert x.type == "log"                                   # was linear from 0: /dev/shm's calls all at zero
    lo, hi = x.range
    assert lo < math.log10(1.1) and hi > math.log10(10529.0)
    assert all(t not in ("2", "5") for t in x.ticktext)
    assert fig.layout.yaxis.automargin is True


def test_lessons_01_and_05_title_their_trials_and_run_legends_in_words():
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    src = {n: "".join("".join(c["source"]) for c in json.loads((root / "notebooks" / f).read_text())["cells"])
           for n, f in (("01", "01-page-cache.ipynb"), ("05", "05-mdtest-metadata.ipynb"))}
    assert "plot.trials(" in src["01"] and "y_title=" in src["01"] and "x_title=" in src["01"]
    assert 'by="run"' in src["05"] and "legend_title=" in src["05"]


def test_class_charts_title_rows_and_legends_in_words_not_column_names():
    # instructor notebook: the heatmap's rows were titled "op" and "user", the strip's legend "user"
    df = _class().assign(op="file stat", mean=lambda d: d["mib_per_s"])
    heat = plots_class.class_heatmap(df, "mean", unit="ops/s", rows="op")
    assert heat.layout.yaxis.title.text == "mdtest operation"
    assert plots_class.class_heatmap(df, "mean", unit="ops/s").layout.yaxis.title.text == "student"
    strip = plots_class.class_strip(df, "mib_per_s", unit="MiB/s")
    assert strip.layout.legend.title.text == "student" and strip.layout.xaxis.title.text == "filesystem"


def test_mdtest_rates_with_trials_draws_every_iteration():
    from iolab import recordings
    from iolab.tools import mdtest
    it = pd.concat([mdtest.iterations_frame(mdtest.parse_iterations(recordings.load(f"mdtest/rates-{n}-4.0.0").text),
                                            filesystem=n) for n in ("tmp", "shm")], ignore_index=True)
    fig = plots_05.mdtest_rates(it, operations=["file creation", "file stat"], trials=True)
    dots = [t for t in fig.data if t.marker.symbol != "line-ns"]
    medians = [t for t in fig.data if t.marker.symbol == "line-ns"]
    assert len(dots) == 4 and all(len(t.x) == 10 for t in dots)       # 2 filesystems x 2 operations, 10 each
    assert len(medians) == 4 and all(len(t.x) == 1 for t in medians)
    layout = fig.layout.to_plotly_json()
    assert "rank 0" in layout["title"]["text"] and layout["xaxis"]["type"] == "log"


def test_fuse_cold_warm_keeps_the_slowest_read_off_the_axis_edge():
    """Lesson 06, section 3, looked at in chromium: the link-bound reads (~10 MB/s) sat on the axis's left
    edge at 10, their dots on the end of their rows' labels. The range is padded past both ends."""
    import math

    reads = pd.DataFrame({"label": ["s3fs, no cache"] * 3 + ["gcsfuse, file cache"] * 3,
                          "read": ["1st (cold)", "2nd (warm)", "3rd (page cache dropped)"] * 2,
                          "mb_per_s": [10.1, 10.2, 10.0, 10.3, 7_500.0, 1_020.0], "layer": ["link"] * 6})
    lo, hi = plots_06.fuse_cold_warm(reads, link_mb_per_s=12).layout.xaxis.range
    assert lo < math.log10(10.0) - 0.05 and hi > math.log10(7_500.0) + 0.05


def test_trials_on_a_log_axis_say_so_in_their_default_title():
    """Lesson 04's -M chart (looked at in chromium) read 'rate (MiB/s)' on a log axis."""
    frame = pd.DataFrame({"setting": ["a"] * 3 + ["b"] * 3, "value": [20_000, 25_000, 27_000, 1_900, 2_000, 2_500],
                          "position": range(1, 7), "trial": [1, 2, 3] * 2})
    assert plot.trials(frame, unit="MiB/s", log=True).layout.yaxis.title.text == "rate (MiB/s, log scale)"
    assert plot.trials(frame, unit="MiB/s").layout.yaxis.title.text == "rate (MiB/s)"


def test_read_calls_chart_labels_every_read_size_up_to_the_largest():
    # lesson 03's read-calls chart (and its static copy) labelled 1 B ... 1 MiB and 16 MiB on the size
    # axis: the slider's last size, 10 MiB, had no label, and 16 MiB lay outside the data
    sizes = [1, 16, 256, 4096, 65536, 1 << 20, 10 << 20]
    fig = plots_03.syscall_counts_vs_read_size(pd.DataFrame({"read_size": sizes, "calls": [None] * len(sizes)}),
                                           file_size=1 << 20)
    x = fig.layout.xaxis
    assert list(x.tickvals) == sizes and x.ticktext[-1] == "10 MiB" and "16 MiB" not in x.ticktext
    assert "1,000,000" in fig.layout.yaxis.ticktext and not any("e+" in t for t in fig.layout.yaxis.ticktext)


def test_syscall_time_legend_says_what_its_colours_are():
    # lesson 03 titled the legend of system time against wall time "clock", the name of a column
    frame = pd.DataFrame({"syscall": ["write", "fsync"] * 2, "seconds": [0.02, 0.001, 0.03, 0.2], "calls": [64, 1] * 2,
                          "clock": ["system time (-c)"] * 2 + ["wall time (-c -w)"] * 2})
    fig = plots_03.syscall_time(frame, by="clock", legend_title="what strace -c counted")
    assert fig.layout.legend.title.text == "what strace -c counted"
    assert plots_03.syscall_time(frame, by="clock").layout.legend.title.text == "clock"     # the default: the column


@pytest.mark.parametrize("pages", [1, 256, 2048, 100_000])
def test_residency_map_axis_title_fits_beside_the_plot(pages):
    # lesson 02's 256-page map is two rows tall: "file offset of the row (MiB)" ran past its plot area
    import numpy as np
    fig = plot.residency_map(np.arange(pages) % 3 == 0)
    area = fig.layout.height - 180                       # plotly's default top and bottom margins
    assert len(fig.layout.yaxis.title.text) * 7 <= area, (fig.layout.yaxis.title.text, fig.layout.height)


@pytest.mark.parametrize("values", [[79.0, 2_400.0, 150_000.0, 224_000.0], [500.0, 120_000.0, 600_000.0],
                                    [40.0, 3_000.0, 90_000.0], [2.0, 9_000.0]])
def test_log_ticks_label_both_ends_of_a_wide_range(values):
    # the instructor's strip as executed here (79 to 224k ops/s, 1 and 3 times each power of ten): its tmpfs
    # students at 120k-224k sat above the last label, 100k; the top (and bottom) values now have a label within 1.8x
    t = plot.log_ticks(values, short=True)
    lo, hi = t["range"]
    assert all(lo <= math.log10(v) <= hi for v in t["tickvals"]) and len(t["tickvals"]) <= 12
    for v in (min(values), max(values)):
        assert min(abs(math.log10(v / tv)) for tv in t["tickvals"]) <= math.log10(1.8), (v, t["ticktext"])
    assert len(t["ticktext"]) == len(set(t["ticktext"]))
