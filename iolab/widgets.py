"""ipywidgets controls that re-run a small measurement and update a plotly FigureWidget."""
from __future__ import annotations

# --- lesson 00 ----------------------------------------------------------------------------------


def repeat_reads_explorer(ws, sizes_mib=(8, 16, 32, 64, 128), times: int = 4):
    """A file-size slider that re-runs firstlook.repeat_reads and redraws the bar chart."""
    import ipywidgets as w
    import plotly.graph_objects as go

    from . import firstlook, plot

    slider = w.SelectionSlider(options=list(sizes_mib), value=sizes_mib[len(sizes_mib) // 2],
                               description="file (MiB)", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plot.repeat_reads(firstlook.repeat_reads(
        ws.make_file("explorer.bin", f"{slider.value}MiB"), times)))

    def update(change=None):
        path = ws.make_file("explorer.bin", f"{slider.value}MiB")
        frame = firstlook.repeat_reads(path, times)
        new = plot.repeat_reads(frame)
        with fig.batch_update():
            for trace, fresh in zip(fig.data, new.data):
                trace.x, trace.y, trace.customdata = fresh.x, fresh.y, fresh.customdata
        status.value = f"{slider.value} MiB: warm reads {firstlook.speedup(frame):.1f}x faster than the cold one"

    slider.observe(update, names="value")
    update()
    return w.VBox([w.HBox([slider, status]), fig])


# --- lessons 01-02 ------------------------------------------------------------------------------

READ_SIZES = (1, 16, 256, 1024, 4096, 8192, 65536, 1 << 20)


def _size_label(n: int) -> str:
    from .units import format_size

    return format_size(n)


def window_explorer(path, sizes=(1, 4096, 16384, 65536, 1 << 20, 8 << 20)):
    """Pick how many bytes to read and the posix_fadvise advice; the file is evicted, read once, and
    the residency map redrawn: the pages the kernel brought in for that one read."""
    import ipywidgets as w
    import plotly.graph_objects as go

    from . import plot, readahead

    size = w.SelectionSlider(options=[(_size_label(s), s) for s in sizes], value=sizes[0],
                             description="read", continuous_update=False)
    advice = w.ToggleButtons(options=list(readahead.ADVICE), value="normal", description="advice")
    status = w.Label()
    fig = go.FigureWidget(plot.residency_map(readahead.window(path, size.value, advice.value)))

    def update(change=None):
        res = readahead.window(path, size.value, advice.value)
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
    return w.VBox([w.HBox([size, advice]), status, fig])


def read_size_explorer(path, sizes=READ_SIZES):
    """A read-size slider: each move reads the whole file cold (evicted) and warm at that size and
    updates the bars; the label gives the number of read() calls and the cost of each."""
    import ipywidgets as w
    import plotly.graph_objects as go

    from . import readahead

    slider = w.SelectionSlider(options=[(_size_label(s), s) for s in sizes], value=4096,
                               description="read size", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget()
    fig.add_bar(x=["cold", "warm"], y=[0, 0], marker_color=["#1f77b4", "#ff7f0e"],
                hovertemplate="%{x}: %{y:,.1f} MiB/s<extra></extra>")
    fig.update_layout(title="Throughput at one read size", yaxis_type="log", yaxis_title="throughput (MiB/s)",
                      xaxis_title="page cache before the read", height=350)

    def update(change=None):
        cold = readahead.read_size_sweep(path, [slider.value], cache="cold").iloc[0]
        warm = readahead.read_size_sweep(path, [slider.value], cache="warm").iloc[0]
        with fig.batch_update():
            fig.data[0].y = [cold["mib_per_s"], warm["mib_per_s"]]
            fig.layout.title = f"Read size {_size_label(slider.value)}: {int(cold['calls']):,} read() calls"
        status.value = (f"{int(cold['calls']):,} calls; cold {cold['seconds']:.4f} s "
                        f"({cold['us_per_call']:.2f} µs/call), warm {warm['seconds']:.4f} s "
                        f"({warm['us_per_call']:.2f} µs/call)")

    slider.observe(update, names="value")
    update()
    return w.VBox([slider, status, fig])


# --- lesson 03 ----------------------------------------------------------------------------------

# --- lessons 04-05 ------------------------------------------------------------------------------

# --- lesson 06 ----------------------------------------------------------------------------------


def fuse_reads_explorer(df):
    """Pick which read (cold, warm, page cache dropped) to compare across FUSE clients; the bar
    chart and the line naming the serving layer follow. df: label, read, mb_per_s, layer."""
    import ipywidgets as w
    import plotly.graph_objects as go

    reads = list(dict.fromkeys(df["read"]))
    pick = w.ToggleButtons(options=reads, value=reads[-1], description="read")
    fig = go.FigureWidget()
    fig.add_bar(x=[], y=[], customdata=[], hovertemplate="%{x}<br>%{y:,.1f} MB/s<br>%{customdata}<extra></extra>")
    fig.update_layout(title="One read per client configuration")
    fig.update_xaxes(title_text="client and cache setting")
    fig.update_yaxes(title_text="read rate (MB/s, log scale)", type="log")
    note = w.HTML()

    def update(change=None):
        part = df[df["read"] == pick.value]
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y, fig.data[0].customdata = (list(part["label"]), list(part["mb_per_s"]),
                                                                    list(part["layer"]))
        note.value = "<br>".join(f"<b>{r.label}</b>: {r.mb_per_s:,.1f} MB/s, served by {r.layer}"
                                 for r in part.itertuples())

    pick.observe(update, names="value")
    update()
    return w.VBox([pick, fig, note])
