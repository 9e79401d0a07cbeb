"""Lesson 07 (Darshan and MPI-IO): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import log_ticks


DARSHAN_OP_COLORS = {"read": "#1f77b4", "write": "#d62728"}


def darshan_access_sizes(hist: pd.DataFrame, *, title: str = "Darshan's access-size histogram") -> go.Figure:
    """Calls per Darshan size bucket (``iolab.tools.darshan.access_sizes``): grouped bars, a linear
    count axis from zero, every bucket shown in order so an empty one reads as zero."""
    fig = go.Figure()
    order = list(dict.fromkeys(hist["bucket"]))
    for op, part in hist.groupby("op", sort=False):
        if int(part["count"].sum()) == 0:
            continue
        part = part.set_index("bucket").reindex(order)
        fig.add_bar(x=order, y=part["count"], name=f"{op}s", marker_color=DARSHAN_OP_COLORS.get(str(op)),
                    text=[f"{int(v):,}" if v else "" for v in part["count"]], textposition="outside",
                    hovertemplate="%{x}: %{y:,} " + f"{op}s<extra></extra>")
    fig.update_layout(title=title, barmode="group", height=380, legend_title="operation",
                      xaxis=dict(title="bytes moved by one call (Darshan's buckets, upper bound included)",
                                 categoryorder="array", categoryarray=order),
                      yaxis=dict(title="number of calls", rangemode="tozero"))
    return fig


def darshan_costs(df: pd.DataFrame, *, title: str = "The same loop, plain, under Darshan, under strace -c") -> go.Figure:
    """Every timed run (``iolab.lessons.l07_darshan.profile.overhead``) as a dot, ms on a LOG axis, with a bar at each
    way's median; the lesson compares all the runs (iolab.explain.beyond), not one of each. Log: strace
    -c's runs (~20x plain) would squeeze plain and Darshan, the pair the lesson compares, into one spot
    near zero on a linear axis; on a log axis equal ratios are equal distances."""
    fig = go.Figure()
    hows = list(dict.fromkeys(df["how"]))
    palette = ("#7f7f7f", "#2ca02c", "#9467bd", "#8c564b")
    for i, how in enumerate(hows):
        part = df[df["how"] == how]
        color = palette[i % len(palette)]
        fig.add_scatter(x=part["seconds"] * 1e3, y=[how] * len(part), mode="markers", name=how, showlegend=False,
                        marker=dict(size=9, opacity=0.6, color=color),
                        hovertemplate="run %{customdata}: %{x:.1f} ms<extra>" + how + "</extra>",
                        customdata=part["repeat"] + 1)
        med = part["seconds"].median() * 1e3
        fig.add_scatter(x=[med], y=[how], mode="markers", showlegend=False,
                        marker=dict(size=22, symbol="line-ns", color=color, line=dict(width=3, color=color)),
                        hovertemplate=f"median of {len(part)} runs: {med:.1f} ms<extra>{how}</extra>")
    fig.update_layout(title=title, height=160 + 70 * len(hows), margin=dict(l=130, r=40),
                      xaxis=dict(title="elapsed time of the whole run (ms, log axis); a bar: the median", type="log",
                                 **log_ticks(df["seconds"] * 1e3)),
                      yaxis=dict(categoryorder="array", categoryarray=hows[::-1]))
    return fig


def dxt_timeline(seg: pd.DataFrame, *, title: str = "Every operation DXT recorded, per rank") -> go.Figure:
    """One lane per rank and operation: a bar from each operation's start to its end (ms since the job
    started), coloured by read/write; hover gives the file, offset and length."""
    import numpy as np

    fig = go.Figure()
    lanes = []
    for op in ("write", "read"):
        part = seg[seg["op"] == op]
        if part.empty:
            continue
        lane = [f"rank {r} {op}s" for r in part["rank"]]
        lanes += lane
        dur = (part["end"] - part["start"]).clip(lower=1e-6) * 1e3
        fig.add_bar(base=part["start"] * 1e3, x=dur, y=lane, orientation="h", name=f"{op}s",
                    marker_color=DARSHAN_OP_COLORS.get(op), marker_line_width=0.5, marker_line_color="white",
                    customdata=np.c_[part["file"].map(lambda s: s.rsplit("/", 1)[-1]), part["offset"], part["length"]],
                    hovertemplate="%{customdata[0]}: offset %{customdata[1]:,} B, %{customdata[2]:,} B, "
                                  "%{base:.3f}-%{x:.3f} ms<extra>%{y}</extra>")
    order = sorted(dict.fromkeys(lanes), key=lambda s: (int(s.split()[1]), s.endswith("reads")))
    fig.update_layout(title=title, barmode="overlay", height=140 + 45 * len(order), legend_title="operation",
                      xaxis=dict(title="time since the job started (ms)", rangemode="tozero"),
                      yaxis=dict(categoryorder="array", categoryarray=order[::-1]))
    return fig


def mpiio_writes(df: pd.DataFrame, *, title: str = "POSIX writes that reached the file, per way of writing") -> go.Figure:
    """POSIX write calls per case (``iolab.lessons.l07_darshan.mpiio.collective``): horizontal bars on a linear axis
    from zero, each labelled with the bytes one write carried and the MPI-IO implementation."""
    cases = list(df["case"])
    fig = go.Figure(go.Bar(
        x=df["posix_writes"], y=cases, orientation="h", marker_color="#d62728",
        text=[f"{int(w):,} x {b:,.0f} B ({impl})" for w, b, impl in
              zip(df["posix_writes"], df["bytes_per_write"], df["implementation"])],
        textposition="auto", hovertemplate="%{y}: %{x:,} writes<extra></extra>"))
    fig.update_layout(title=title, height=140 + 55 * len(cases), showlegend=False,
                      xaxis=dict(title="POSIX write calls on the shared file", rangemode="tozero"),
                      yaxis=dict(categoryorder="array", categoryarray=cases[::-1]))
    return fig
