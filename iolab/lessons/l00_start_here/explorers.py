"""Lesson 00 (start here): its explorers, ipywidgets controls that re-run a small measurement and update
its chart (each an :class:`iolab.widgets.Explorer`)."""
from __future__ import annotations

from ...widgets import Explorer
from . import first_look
from . import plots


def repeat_reads_explorer(ws, sizes_mib=(8, 16, 32, 64, 128), times: int = 4):
    """A file-size slider that re-runs first_look.repeat_reads (``times`` reads, in 3 rounds) and redraws
    the bar chart: one bar per read."""
    import ipywidgets as w
    import plotly.graph_objects as go

    slider = w.SelectionSlider(options=list(sizes_mib), value=sizes_mib[len(sizes_mib) // 2],
                               description="file (MiB)", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots.repeat_reads(first_look.repeat_reads(
        ws.make_file("explorer.bin", f"{slider.value}MiB"), times)))

    def update(change=None):
        path = ws.make_file("explorer.bin", f"{slider.value}MiB")
        frame = first_look.repeat_reads(path, times)
        new = plots.repeat_reads(frame)
        with fig.batch_update():
            for trace, fresh in zip(fig.data, new.data):
                trace.x, trace.y, trace.customdata = fresh.x, fresh.y, fresh.customdata
        status.value = (f"{slider.value} MiB: warm reads {first_look.speedup(frame):.1f}x faster than the cold "
                        f"ones (medians of {int(frame['round'].max())} rounds; the chart has every read)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([w.HBox([slider, status]), fig]), fig)
