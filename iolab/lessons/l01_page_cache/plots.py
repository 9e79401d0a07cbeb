"""Lesson 01 (the page cache): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import reference_line


def dirty_writeback(frame: pd.DataFrame, title: str = "Dirty and Writeback while writing: the change since the start") -> go.Figure:
    """Dirty and Writeback over time, one panel per run (pagecache.MeminfoSampler frames with a ``run``
    column, concatenated), drawn as the CHANGE since the run's first sample (MiB): a 64 MiB step is
    invisible on a node whose Dirty already holds ~600 MiB of other people's pages, and plain as a change.
    Each panel's title gives the starting values; labelled events are marked."""
    from plotly.subplots import make_subplots

    if "run" not in frame.columns:
        frame = frame.assign(run="write")
    runs = list(dict.fromkeys(frame["run"]))
    first = {run: frame[frame["run"] == run].iloc[0] for run in runs}
    titles = [f"{run} (at the start: Dirty {first[run]['Dirty'] / 2**20:,.0f} MiB, "
              f"Writeback {first[run]['Writeback'] / 2**20:,.0f} MiB)" for run in runs]
    fig = make_subplots(rows=len(runs), cols=1, shared_xaxes=True, subplot_titles=titles,
                        vertical_spacing=0.12 if len(runs) > 1 else 0.1)
    colors = {"Dirty": "#d62728", "Writeback": "#9467bd", "Cached": "#7f7f7f"}
    for i, run in enumerate(runs, 1):
        part = frame[frame["run"] == run]
        for name in ("Dirty", "Writeback"):
            change = (part[name] - first[run][name]) / 2**20
            fig.add_scatter(x=part["t"], y=change, mode="lines", name=name, legendgroup=name,
                            showlegend=i == 1, line_color=colors[name], customdata=part[name] / 2**20,
                            hovertemplate="%{x:.2f} s: %{y:+,.1f} MiB (now %{customdata:,.1f} MiB)<extra>"
                                          + name + "</extra>", row=i, col=1)
        ev = part[part["event"].astype(str).str.len() > 0]
        ev = ev[~ev["event"].isin(["start", "stop"])]
        ys = (ev["Dirty"] - first[run]["Dirty"]) / 2**20
        top = max(float(((part[n] - first[run][n]) / 2**20).max()) for n in ("Dirty", "Writeback"))
        # a label under a marker in the panel's upper half: above it, it ran into the panel's title
        where = ["bottom right" if top > 0 and y > top / 2 else "top right" for y in ys]
        fig.add_scatter(x=ev["t"], y=ys, mode="markers+text", text=ev["event"],
                        textposition=where, marker=dict(size=9, color="black", symbol="diamond"),
                        name="event", showlegend=i == 1, legendgroup="event",
                        hovertemplate="%{text} at %{x:.2f} s<extra></extra>", row=i, col=1)
        fig.update_yaxes(title_text="change (MiB)", row=i, col=1)
    fig.update_xaxes(title_text="time since the start (s)", row=len(runs), col=1)
    fig.update_layout(title=title, height=260 * len(runs) + 80)
    return fig


def verdicts(frame: pd.DataFrame, title: str = "Timed reads, and which layer served them", *,
             device_bps: float | None = None) -> go.Figure:
    """Bars of MiB/s per measurement (measure.Measurement.row() dicts with a ``label``), coloured by
    verdict, on a LINEAR axis from zero (a log axis would make a 3x gap look like 20x); a dashed line
    at the device's uncached read rate when ``device_bps`` is given."""
    colors = {"served from page cache": "#ff7f0e", "from the device": "#1f77b4", "unclear": "#7f7f7f"}
    label = frame["label"] if "label" in frame.columns else frame.index.astype(str)
    frame = frame.assign(label=label)
    fig = go.Figure()
    for verdict, part in frame.groupby("verdict", sort=False):
        fig.add_bar(x=part["label"], y=part["mib_per_s"], name=str(verdict), marker_color=colors.get(str(verdict)),
                    customdata=part[["reason"]], text=[f"{v:,.0f} MiB/s" for v in part["mib_per_s"]],
                    textposition="inside", insidetextanchor="middle",
                    hovertemplate="%{x}: %{y:,.0f} MiB/s<br>%{customdata[0]}<extra></extra>")
    if device_bps:     # named in the legend: a label on the line would sit on the bar near the device's rate
        reference_line(fig, device_bps / 2**20, f"device, uncached: {device_bps / 2**20:,.0f} MiB/s")
    top = max([float(frame["mib_per_s"].max())] + ([device_bps / 2**20] if device_bps else []))
    fig.update_layout(title=title, yaxis_title="throughput (MiB/s)", xaxis_title="measurement",
                      legend_title="verdict", yaxis=dict(rangemode="tozero", range=[0, top * 1.15]),
                      xaxis=dict(categoryorder="array", categoryarray=list(frame["label"])))
    return fig
