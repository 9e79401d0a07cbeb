"""Lesson 06 (FUSE and object storage): its explorers, ipywidgets controls that re-run a small measurement and update
its chart (each an :class:`iolab.widgets.Explorer`)."""
from __future__ import annotations

from ...widgets import Explorer
from . import plots


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
    plots.link_line(fig, link_mb_per_s, vertical=True)          # the dashed cap, named in the legend
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
