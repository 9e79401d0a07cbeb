"""Lesson 03 (strace: the system calls): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import decade_ticks
from ...units import format_size


def syscall_counts_vs_read_size(frame: pd.DataFrame, *, file_size: int | None = None,
                                title: str = "read(2) calls to read one file, by read size") -> go.Figure:
    """Measured read(2) calls (markers) against the read size, log-log, with the prediction
    ceil(file_size / n) + 1 drawn as a line. ``frame``: columns read_size, calls (and optionally
    file_size, label: one marker series per label)."""
    import numpy as np

    fig = go.Figure()
    n_file = int(file_size if file_size is not None else frame["file_size"].iloc[0])
    lo, hi = float(frame["read_size"].min()), float(frame["read_size"].max())
    xs = np.unique(np.round(np.logspace(np.log10(lo), np.log10(hi), 200)).astype(int))
    fig.add_scatter(x=xs, y=-(-n_file // xs) + 1, mode="lines", name="predicted: ceil(N/n) + 1",
                    line=dict(color="#999", dash="dash"),
                    hovertemplate="n = %{x:,} B: %{y:,} calls predicted<extra></extra>")
    groups = frame.groupby("label", sort=False) if "label" in frame else [("measured", frame)]
    for label, part in groups:
        part = part.sort_values("read_size")
        fig.add_scatter(x=part["read_size"], y=part["calls"], mode="markers", name=str(label), marker_size=10,
                        hovertemplate="read size %{x:,} B: %{y:,} read(2) calls<extra>" + f"{label}</extra>")
    sizes = sorted({int(v) for v in frame["read_size"]})     # a label at each size measured, the largest too
    fig.update_xaxes(type="log", title_text="read size n (bytes per f.read)", tickvals=sizes,
                     ticktext=[format_size(v) for v in sizes])
    fig.update_yaxes(type="log", title_text="read(2) calls (log)",
                     **decade_ticks(2, max(-(-n_file // int(lo)) + 1, float(frame["calls"].max(skipna=True) or 0))))
    fig.update_layout(title=f"{title} (N = {n_file:,} bytes)", height=420, legend_title="")
    return fig


def syscall_time(frame: pd.DataFrame, *, top: int = 12, by: str | None = None, legend_title: str | None = None,
                 title: str = "Where the time in system calls went") -> go.Figure:
    """Seconds spent in each syscall (horizontal bars, linear axis from zero) from strace -c rows
    (``syscall``, ``seconds``, ``calls``); ``by`` names a column to compare runs (e.g. "clock"), and
    ``legend_title`` says in words what its values are (default: the column's name)."""
    fig = go.Figure()
    groups = frame.groupby(by, sort=False) if by else [("", frame)]
    order = (frame.groupby("syscall")["seconds"].sum().sort_values(ascending=False).head(top).index[::-1])
    for name, part in groups:
        part = part.set_index("syscall").reindex(order)
        fig.add_bar(y=list(order), x=part["seconds"] * 1e3, orientation="h", name=str(name) or "time",
                    customdata=part[["calls"]].fillna(0).astype(int),
                    hovertemplate="%{y}: %{x:,.3f} ms in %{customdata[0]:,} calls<extra>" + f"{name}</extra>")
    n = frame[by].nunique() if by else 1
    # room for the bars, the axis title and a legend under the plot (never a legend cut by a short chart)
    fig.update_layout(title=title, barmode="group", height=max(340, 180 + 30 * len(order) * max(1, n)),
                      xaxis=dict(title="time in the syscall (ms)", rangemode="tozero"), yaxis_title="syscall",
                      legend=dict(title=legend_title if legend_title is not None else (by or ""), orientation="h",
                                  y=-0.45, yanchor="top"),
                      margin=dict(b=120))
    return fig


def syscall_latency_histogram(frame: pd.DataFrame, *, by: str = "label", syscall: str | None = "read",
                              title: str = "How long each call took (strace -T)") -> go.Figure:
    """Histogram of per-call durations in µs on a log axis (log-spaced bins), one colour per ``by``."""
    import numpy as np

    df = frame if syscall is None else frame[frame["syscall"] == syscall]
    us = df["duration"].dropna() * 1e6
    lo = max(float(us[us > 0].min()) if (us > 0).any() else 1.0, 0.1)
    edges = np.logspace(np.log10(lo) - 0.05, np.log10(max(float(us.max()), lo * 10)) + 0.05, 40)
    fig = go.Figure()
    groups = df.groupby(by, sort=False) if by in df else [("", df)]
    for name, part in groups:
        vals = (part["duration"].dropna() * 1e6).clip(lower=edges[0])
        counts, _ = np.histogram(vals, bins=edges)
        fig.add_bar(x=np.sqrt(edges[:-1] * edges[1:]), y=counts, width=np.diff(edges), name=str(name),
                    opacity=0.7, hovertemplate="~%{x:,.1f} µs: %{y:,} calls<extra>" + f"{name}</extra>")
    fig.update_layout(title=title, barmode="overlay", height=380,
                      legend_title="" if by == "label" else by.replace("_", " "),   # the entries say it
                      xaxis=dict(type="log", title=f"time in {syscall or 'each syscall'} (µs, log)",
                                 **decade_ticks(edges[0], edges[-1])),
                      yaxis_title="number of calls")
    return fig


def reads_timeline(frame: pd.DataFrame, *, title: str = "Each process's read(2) calls over time (strace -f)") -> go.Figure:
    """One row per pid: a marker per read at its start time (``t``, s), sized and coloured by the
    bytes asked for; hover gives the duration."""
    import numpy as np

    df = frame[frame["syscall"] == "read"].copy()
    df["pid_label"] = "pid " + df["pid"].astype(str)
    fig = go.Figure()
    for pid, part in df.groupby("pid_label", sort=False):
        fig.add_scatter(x=part["t"] * 1e3, y=[pid] * len(part), mode="markers", name=pid,
                        marker=dict(size=np.clip(np.log2(part["size"].fillna(1).clip(lower=1)), 4, 22)),
                        customdata=np.c_[part["size"].fillna(0), part["duration"].fillna(0) * 1e6],
                        hovertemplate="t = %{x:.3f} ms: read of %{customdata[0]:,.0f} B, "
                                      "%{customdata[1]:.1f} µs<extra>%{y}</extra>")
    fig.update_layout(title=title, height=120 + 60 * df["pid_label"].nunique(), showlegend=False,
                      xaxis_title="time since the first traced call (ms)", yaxis_title="process")
    return fig


def strace_overhead(frame: pd.DataFrame, *, title: str = "What watching costs: the same run, three ways") -> go.Figure:
    """Elapsed seconds of one workload run plain, under strace -c and under a full trace
    (``frame``: columns how, seconds; several repeats per ``how`` are drawn as points + median bar)."""
    med = frame.groupby("how", sort=False)["seconds"].median()
    fig = go.Figure()
    fig.add_bar(x=list(med.index), y=list(med.values), name="median", marker_color="#9ecae1",
                hovertemplate="%{x}: median %{y:.3f} s<extra></extra>")
    fig.add_scatter(x=frame["how"], y=frame["seconds"], mode="markers", name="each run",
                    marker=dict(color="#08519c", size=8), hovertemplate="%{x}: %{y:.3f} s<extra></extra>")
    fig.update_layout(title=title, height=380, yaxis=dict(title="elapsed time (s)", rangemode="tozero"),
                      xaxis_title="how the program ran")
    return fig
