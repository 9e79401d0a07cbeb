"""ipywidgets controls that re-run a small measurement and update a plotly FigureWidget."""
from __future__ import annotations
from . import plot, readahead_probes, recordings, rendering
from .lessons.l00_start_here import first_look, plots as plots_00
from .lessons.l03_strace import plots as plots_03, syscalls
from .lessons.l04_ior import plots as plots_04, sweeps as ior_sweeps
from .lessons.l06_object_storage import plots as plots_06
from .tools import ior
from .units import format_size

class Explorer:
    """A control box (an ipywidgets VBox holding a FigureWidget) that a static HTML export still shows.

    A notebook exported without widget state drops the widget's view; its display here also carries
    the figure as it stands, as the ``text/html`` the notebook's other plotly figures use, which the
    export falls back to (see ``iolab.rendering.add_static_figures``, which does the same for any box
    of controls once ``iolab.setup()`` ran). In JupyterLab the live widget is shown. Anything else is
    the box's own (``children``, ``layout``...)."""

    def __init__(self, box, fig):
        self.box, self.fig = box, fig

    def static_html(self) -> str:
        return rendering.static_html(self.fig)

    def _repr_mimebundle_(self, include=None, exclude=None):
        data = self.box._repr_mimebundle_(include=include, exclude=exclude)
        data = dict(data[0] if isinstance(data, tuple) else data or {})
        data["text/html"] = self.static_html()
        return data

    def __getattr__(self, name):
        return getattr(self.box, name)


# --- lesson 00 ----------------------------------------------------------------------------------


def repeat_reads_explorer(ws, sizes_mib=(8, 16, 32, 64, 128), times: int = 4):
    """A file-size slider that re-runs first_look.repeat_reads (``times`` reads, in 3 rounds) and redraws
    the bar chart: one bar per read."""
    import ipywidgets as w
    import plotly.graph_objects as go

    slider = w.SelectionSlider(options=list(sizes_mib), value=sizes_mib[len(sizes_mib) // 2],
                               description="file (MiB)", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots_00.repeat_reads(first_look.repeat_reads(
        ws.make_file("explorer.bin", f"{slider.value}MiB"), times)))

    def update(change=None):
        path = ws.make_file("explorer.bin", f"{slider.value}MiB")
        frame = first_look.repeat_reads(path, times)
        new = plots_00.repeat_reads(frame)
        with fig.batch_update():
            for trace, fresh in zip(fig.data, new.data):
                trace.x, trace.y, trace.customdata = fresh.x, fresh.y, fresh.customdata
        status.value = (f"{slider.value} MiB: warm reads {first_look.speedup(frame):.1f}x faster than the cold "
                        f"ones (medians of {int(frame['round'].max())} rounds; the chart has every read)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([w.HBox([slider, status]), fig]), fig)


# --- lessons 01-02 ------------------------------------------------------------------------------

READ_SIZES = (1, 16, 256, 1024, 4096, 8192, 65536, 1 << 20)


def _size_label(n: int) -> str:
    return format_size(n)


def window_explorer(path, sizes=(1, 4096, 16384, 65536, 1 << 20, 8 << 20)):
    """Pick how many bytes to read and the posix_fadvise advice; the file is evicted, read once, and
    the residency map redrawn: the pages the kernel brought in for that one read."""
    import ipywidgets as w
    import plotly.graph_objects as go

    size = w.SelectionSlider(options=[(_size_label(s), s) for s in sizes], value=sizes[0],
                             description="read", continuous_update=False)
    advice = w.ToggleButtons(options=list(readahead_probes.ADVICE), value="normal", description="advice")
    status = w.Label()
    fig = go.FigureWidget(plot.residency_map(readahead_probes.window(path, size.value, advice.value, strict=False)))

    def update(change=None):
        res = readahead_probes.window(path, size.value, advice.value, strict=False)
        new = plot.residency_map(res)
        with fig.batch_update():
            fig.data[0].z, fig.data[0].customdata = new.data[0].z, new.data[0].customdata
            fig.layout.title = new.layout.title
        asked = -(-size.value // res.page_size)
        status.value = (f"asked for {_size_label(size.value)} ({asked:,} page{'s' * (asked > 1)}), "
                        f"the kernel brought in {res.resident:,} pages ({_size_label(res.resident_bytes)})")

    size.observe(update, names="value")
    advice.observe(update, names="value")
    update()
    return Explorer(w.VBox([w.HBox([size, advice]), status, fig]), fig)


def read_size_explorer(path, sizes=READ_SIZES):
    """A read-size slider: each move reads the whole file cold (evicted) and warm at that size and
    updates the bars; the label gives the number of read() calls and the cost of each."""
    import ipywidgets as w
    import plotly.graph_objects as go

    slider = w.SelectionSlider(options=[(_size_label(s), s) for s in sizes], value=4096,
                               description="read size", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget()
    # bars from zero on a linear axis, each with its value: on a log axis a bar's length, cut at the
    # axis's base, hid the ratio (a warm bar half the cold one drawn as a sliver)
    fig.add_bar(x=["cold", "warm"], y=[0, 0], marker_color=["#1f77b4", "#ff7f0e"], textposition="outside",
                cliponaxis=False, hovertemplate="%{x}: %{y:,.1f} MiB/s<extra></extra>")
    fig.update_layout(title="Throughput at one read size", yaxis_title="throughput (MiB/s)",
                      yaxis_rangemode="tozero", xaxis_title="page cache before the read", height=350)

    def update(change=None):
        cold = readahead_probes.read_size_sweep(path, [slider.value], cache="cold", strict=False).iloc[0]
        warm = readahead_probes.read_size_sweep(path, [slider.value], cache="warm").iloc[0]
        with fig.batch_update():
            fig.data[0].y = [cold["mib_per_s"], warm["mib_per_s"]]
            fig.data[0].text = [f"{v:,.1f} MiB/s" for v in (cold["mib_per_s"], warm["mib_per_s"])]
            fig.layout.title = f"Read size {_size_label(slider.value)}: {int(cold['calls']):,} read() calls"
        status.value = (f"{int(cold['calls']):,} calls; cold {cold['seconds']:.4f} s "
                        f"({cold['us_per_call']:.2f} µs/call), warm {warm['seconds']:.4f} s "
                        f"({warm['us_per_call']:.2f} µs/call)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([slider, status, fig]), fig)


# --- lesson 03 ----------------------------------------------------------------------------------

STRACE_READ_SIZES = (1, 16, 256, 4096, 65536, 1 << 20, 10 << 20)


def read_calls_explorer(path, sizes=STRACE_READ_SIZES, recording_prefix: str | None = "strace/sweep-read-"):
    """A read-size slider: each move counts the read(2) calls on ``path`` under strace
    (``strace -c -e trace=read -P path``) and adds the point to a log-log chart next to the
    prediction ceil(N/n) + 1. Without strace it replays ``<recording_prefix><n>`` when one exists."""
    import os

    import ipywidgets as w
    import pandas as pd
    import plotly.graph_objects as go

    n_file = os.path.getsize(path)
    seen: dict[int, int] = {}
    slider = w.SelectionSlider(options=[(_size_label(s), s) for s in sizes], value=4096,
                               description="read size", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots_03.syscall_counts_vs_read_size(
        pd.DataFrame({"read_size": list(sizes), "calls": [None] * len(sizes)}), file_size=n_file))

    def update(change=None):
        n = slider.value
        rec = f"{recording_prefix}{n}" if recording_prefix else None
        calls = syscalls.count_reads(path, n, recording=rec)
        seen[n] = calls
        xs = sorted(seen)
        with fig.batch_update():
            fig.data[1].x, fig.data[1].y = xs, [seen[x] for x in xs]
        predicted = syscalls.expected_reads(n_file, n)
        status.value = (f"{_size_label(n)} per read: {calls:,} read(2) calls measured, {predicted:,} predicted "
                        f"(ceil({n_file:,} / {n:,}) + 1)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([slider, status, fig]), fig)


# --- lessons 04-05 ------------------------------------------------------------------------------


def ior_sweep_explorer(version: str = "4.0.0"):
    """Pick which IOR parameter to vary (transfer size, tasks, segments) and its value.

    The chart shows the recorded sweep (real runs, see ``iolab.lessons.l04_ior.sweeps.sweep_frame``); when IOR and mpirun
    are here, choosing a value also runs that point live and adds it (ringed); without them the
    control picks among the recorded runs and says so.
    """
    import ipywidgets as w
    import plotly.graph_objects as go

    SWEEP_START = ior_sweeps.SWEEP_BASE
    recorded = ior_sweeps.sweep_frame(version)
    device_bps = ior_sweeps.sweep_device_bps(version)
    device_mib = device_bps / 2**20 if device_bps else None
    can_run = recordings.replay_reason(("ior", "mpirun"), strict=False) is None
    param = w.ToggleButtons(options=[("transfer size", "transfer_size"), ("tasks", "tasks"),
                                     ("segments", "segments")], value="transfer_size", description="vary")
    value = w.SelectionSlider(options=[0], description="value", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots_04.ior_sweep(ior_sweeps.sweep_slice(recorded, "transfer_size"), "transfer_size",
                                                device_mib=device_mib))
    live_points: list = []

    def values_for(by: str) -> list:
        return sorted(set(ior_sweeps.sweep_slice(recorded, by)[by]))

    def redraw(by: str, highlight=None) -> None:
        part = ior_sweeps.sweep_slice(recorded, by)
        extra = [p for p in live_points if p["by"] == by]
        import pandas as pd
        if extra:
            part = pd.concat([part] + [p["frame"] for p in extra], ignore_index=True)
        new = plots_04.ior_sweep(part, by, highlight=highlight, device_mib=device_mib)
        with fig.batch_update():
            fig.data = []
            for trace in new.data:
                fig.add_trace(trace)
            fig.layout.update(new.layout)

    def on_param(change=None) -> None:
        opts = values_for(param.value)
        label = (lambda v: ior.ior_size(int(v))) if param.value == "transfer_size" else (lambda v: str(int(v)))
        busy[0] = True
        try:
            value.options = [(label(v), v) for v in opts]
            value.value = SWEEP_START.get(param.value, opts[len(opts) // 2])
        finally:
            busy[0] = False
        on_value()

    def on_value(change=None) -> None:
        if busy[0]:
            return
        by, v = param.value, value.value
        if can_run and change is not None:
            point = ior_sweeps.sweep_point(by, v)
            live_points.append({"by": by, "frame": point})
            status.value = f"ran IOR here for {by} = {v:,}: see the ringed point"
        else:
            status.value = (f"{by} = {v:,}: a recorded run (IOR {version}); "
                            + ("move the slider to run IOR here" if can_run else
                               "IOR is not installed here, so the control picks among recorded runs"))
        redraw(by, highlight=v)

    busy = [False]
    param.observe(on_param, names="value")
    value.observe(on_value, names="value")
    on_param()
    return Explorer(w.VBox([param, value, status, fig]), fig)

# --- lesson 06 ----------------------------------------------------------------------------------


def fuse_reads_explorer(df, *, link_mb_per_s: float | None = None):
    """Pick which read (cold, warm, page cache dropped) to compare across FUSE clients; the dot
    chart (log rate axis, full tick labels, the link's cap dashed) and the lines naming the serving
    layer follow. df: label, read, mb_per_s, layer."""
    import math

    import ipywidgets as w
    import plotly.graph_objects as go

    reads = list(dict.fromkeys(df["read"]))
    pick = w.ToggleButtons(options=reads, value=reads[-1], description="read")
    fig = go.FigureWidget()
    fig.add_scatter(x=[], y=[], customdata=[], mode="markers", marker=dict(size=12),
                    hovertemplate="%{y}<br>%{x:,.1f} MB/s<br>%{customdata}<extra></extra>")
    fig.data[0].showlegend = False
    plots_06.link_line(fig, link_mb_per_s, vertical=True)          # the dashed cap, named in the legend
    lo, hi = max(float(df["mb_per_s"].min()), 1e-3), max(float(df["mb_per_s"].max()), 1e-3)
    ticks = [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    fig.update_layout(title="One read per client configuration", height=140 + 40 * df["label"].nunique())
    fig.update_yaxes(title_text="", autorange="reversed")
    fig.update_xaxes(title_text="read rate (MB/s, log scale)", type="log", tickvals=ticks,
                     ticktext=[f"{t:,g}" for t in ticks], range=[math.log10(ticks[0]), math.log10(ticks[-1])])
    note = w.HTML()

    def update(change=None):
        part = df[df["read"] == pick.value]
        with fig.batch_update():
            fig.data[0].y, fig.data[0].x, fig.data[0].customdata = (list(part["label"]), list(part["mb_per_s"]),
                                                                    list(part["layer"]))
        note.value = "<br>".join(f"<b>{r.label}</b>: {r.mb_per_s:,.1f} MB/s, served by {r.layer}"
                                 for r in part.itertuples())

    pick.observe(update, names="value")
    update()
    return Explorer(w.VBox([pick, fig, note]), fig)
