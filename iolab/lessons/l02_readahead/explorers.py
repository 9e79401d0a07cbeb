"""Lesson 02 (readahead): its explorers, ipywidgets controls that re-run a small measurement and update
its chart (each an :class:`iolab.widgets.Explorer`)."""
from __future__ import annotations

from ...widgets import Explorer
from ...units import format_size
from ... import plot
from ... import readahead_probes


READ_SIZES = (1, 16, 256, 1024, 4096, 8192, 65536, 1 << 20)


def window_explorer(path, sizes=(1, 4096, 16384, 65536, 1 << 20, 8 << 20)):
    """Pick how many bytes to read and the posix_fadvise advice; the file is evicted, read once, and
    the residency map redrawn: the pages the kernel brought in for that one read."""
    import ipywidgets as w
    import plotly.graph_objects as go

    size = w.SelectionSlider(options=[(format_size(s), s) for s in sizes], value=sizes[0],
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
        status.value = (f"asked for {format_size(size.value)} ({asked:,} page{'s' * (asked > 1)}), "
                        f"the kernel brought in {res.resident:,} pages ({format_size(res.resident_bytes)})")

    size.observe(update, names="value")
    advice.observe(update, names="value")
    update()
    return Explorer(w.VBox([w.HBox([size, advice]), status, fig]), fig)


def read_size_explorer(path, sizes=READ_SIZES):
    """A read-size slider: each move reads the whole file cold (evicted) and warm at that size and
    updates the bars; the label gives the number of read() calls and the cost of each."""
    import ipywidgets as w
    import plotly.graph_objects as go

    slider = w.SelectionSlider(options=[(format_size(s), s) for s in sizes], value=4096,
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
            fig.layout.title = f"Read size {format_size(slider.value)}: {int(cold['calls']):,} read() calls"
        status.value = (f"{int(cold['calls']):,} calls; cold {cold['seconds']:.4f} s "
                        f"({cold['us_per_call']:.2f} µs/call), warm {warm['seconds']:.4f} s "
                        f"({warm['us_per_call']:.2f} µs/call)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([slider, status, fig]), fig)
