"""Lesson 06 (FUSE and object storage): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import decade_ticks, log_ticks, trials
from ...units import format_size


def link_line(fig: go.Figure, link_mb_per_s: float | None, *, vertical: bool = False, **where) -> None:
    """A dashed reference line at the slow link's cap, named in the legend: a label written on the chart
    was crossed by the line itself (vertical) or sat on a bar's value (horizontal)."""
    if not link_mb_per_s:
        return
    if vertical:
        fig.add_vline(x=link_mb_per_s, line=LINK_LINE, **where)
    else:
        fig.add_hline(y=link_mb_per_s, line=LINK_LINE, **where)
    _link_legend(fig, link_mb_per_s)


LINK_LINE = dict(dash="dash", color="grey")


def _link_legend(fig: go.Figure, link_mb_per_s: float) -> None:
    """The link's line as a legend entry (a trace with no point)."""
    fig.add_scatter(x=[None], y=[None], mode="lines", line=LINK_LINE, hoverinfo="skip", showlegend=True,
                    name=f"this run's link cap: {link_mb_per_s:g} MB/s")


def fuse_fio_trials(df: pd.DataFrame, direction: str = "read", *, link_mb_per_s: float | None = None) -> go.Figure:
    """Seed 000's fio job through s3fs-fuse: every trial here as a point per configuration, a dash
    marking their median (:func:`trials`), and the seed's one figure per configuration as a
    star beside them. Linear axis from 0. df: configuration, direction, mb_per_s, source ("measured
    here" or the seed's), and for the trials position and trial. link_mb_per_s: this run's link cap,
    drawn as a dashed line (the seed's link is another one)."""
    d = df[df["direction"] == direction]
    here = d[d["source"] == "measured here"]
    seed = d[d["source"] != "measured here"]
    frame = pd.DataFrame({"setting": here["configuration"], "value": here["mb_per_s"],
                          "position": here["position"], "trial": here["trial"], "kept": True})
    fig = trials(frame, unit="MB/s", title=f"fio {direction} through s3fs-fuse (bs=4k rw=readwrite): every trial "
                                            "here, and seed 000's one run")
    for tr in fig.data:                  # the points of each configuration: a legend entry saying what they are, once
        if tr.type == "box":
            tr.legendgroup, tr.showlegend = "here", False
    if len(fig.data) and fig.data[0].type == "box":
        fig.data[0].showlegend, fig.data[0].name = True, "here: every trial (the dash: their median)"
    if len(seed):
        for src, part in seed.groupby("source", sort=False):
            fig.add_scatter(name=f"{src} (one run each, its own link)", x=part["configuration"], y=part["mb_per_s"],
                            mode="markers", marker=dict(symbol="star", size=13, color="black"),
                            hovertemplate="%{x}: %{y:.1f} MB/s<extra>" + str(src) + "</extra>")
    link_line(fig, link_mb_per_s)
    fig.update_xaxes(title_text="configuration")
    fig.update_yaxes(title_text=f"{direction} bandwidth (MB/s, 10^6 bytes/s)", rangemode="tozero")
    return fig


READ_SYMBOLS = ("circle", "diamond", "x")


def fuse_cold_warm(df: pd.DataFrame, *, link_mb_per_s: float | None = None) -> go.Figure:
    """Three reads of one object per client configuration (cold, warm, page cache dropped): a dot
    per read on a log rate axis (the rates span three orders of magnitude; dots, not bars, so that
    no bar length is read off a cut log base), with the link's cap as a dashed line.

    df: label, read, mb_per_s, layer (and link_down when measured).
    """
    fig = go.Figure()
    has_down = "link_down" in df
    for i, (read, part) in enumerate(df.groupby("read", sort=False)):
        down = part["link_down"].tolist() if has_down else [None] * len(part)
        hover = [f"served by {layer}" + (f"<br>{dn:,.0f} bytes over the link" if dn is not None and dn == dn else "")
                 for layer, dn in zip(part["layer"], down)]
        fig.add_scatter(name=str(read), y=part["label"], x=part["mb_per_s"], mode="markers",
                        marker=dict(size=11, symbol=READ_SYMBOLS[i % len(READ_SYMBOLS)]), customdata=hover,
                        hovertemplate="%{y}<br>%{x:,.1f} MB/s<br>%{customdata}<extra>" + str(read) + "</extra>")
    link_line(fig, link_mb_per_s, vertical=True)
    fig.update_layout(title="Reading one object through each FUSE client, three times", legend_title_text="read",
                      height=140 + 40 * df["label"].nunique())
    fig.update_yaxes(title_text="", autorange="reversed")
    # padded past the slowest and fastest reads: a dot on the axis's edge ran into its row's label
    fig.update_xaxes(title_text="read rate (MB/s, log scale)", type="log", tickangle=0, **log_ticks(df["mb_per_s"]))
    return fig


def dd_block_sweep(df: pd.DataFrame, *, link_mb_per_s: float | None = None,
                   round_trip_mb_per_s: float | None = None) -> go.Figure:
    """dd iflag=direct through s3fs-fuse: MB/s against block size (log x: a sweep), one line per
    configuration, linear y from 0. Reference lines: the link's cap, and what one link latency per
    1 MiB run allows (round_trip_mb_per_s).

    df: configuration, block_size (bytes), mb_per_s.
    """
    fig = go.Figure()
    for conf, part in df.groupby("configuration", sort=False):
        part = part.sort_values("block_size")
        fig.add_scatter(name=str(conf), x=part["block_size"], y=part["mb_per_s"], mode="lines+markers")
    link_line(fig, link_mb_per_s)
    if round_trip_mb_per_s:
        fig.add_hline(y=round_trip_mb_per_s, line_dash="dot", line_color="grey",
                      annotation_text=f"1 MiB per link latency: {round_trip_mb_per_s:.0f} MB/s",
                      annotation_position="bottom right")
    sizes = sorted(df["block_size"].unique())
    fig.update_layout(title="dd iflag=direct through s3fs-fuse: 1 MiB read at each block size")
    fig.update_xaxes(title_text="dd block size (log scale)", type="log", tickvals=sizes,
                     ticktext=[format_size(s) for s in sizes])
    fig.update_yaxes(title_text="dd's rate (MB/s)", rangemode="tozero")
    return fig


def staging_vs_streaming(df: pd.DataFrame) -> go.Figure:
    """Seconds to stage + work (seed 004's choice), stacked per strategy, linear from 0.
    df: strategy, stage_s, work_s (and ``trial`` when a strategy ran several times: the bars are each
    strategy's median trial, and every trial's total is a dot beside them)."""
    fig = go.Figure()
    every = df
    if "trial" in df.columns and df.groupby("strategy").size().max() > 1:
        df = (df.assign(_rank=df.groupby("strategy")["total_s"].rank(method="first"))
              .assign(_n=df.groupby("strategy")["total_s"].transform("size")))
        df = df[df["_rank"] == (df["_n"] + 1) // 2]
    fig.add_bar(name="stage (copy to scratch)", y=df["strategy"], x=df["stage_s"], orientation="h")
    fig.add_bar(name="work (read the inputs)", y=df["strategy"], x=df["work_s"], orientation="h")
    if len(every) > len(df):
        fig.add_scatter(name="total of each trial", y=every["strategy"], x=every["total_s"], mode="markers",
                        marker=dict(color="black", size=8, symbol="line-ns-open", line=dict(width=2)),
                        hovertemplate="%{x:.3f} s<extra>one trial</extra>")
    fig.update_layout(barmode="stack", title="Stage the inputs, or read them from the store each time?",
                      height=160 + 50 * len(df))
    fig.update_yaxes(title_text="", autorange="reversed")
    fig.update_xaxes(title_text="time (s)", rangemode="tozero")
    return fig


def gcsfuse_copy(df: pd.DataFrame, published: pd.DataFrame | None = None, *,
                 link_mb_per_s: float | None = None) -> go.Figure:
    """Seed 002's copy through gcsfuse: per file, every write's rate (one dot per trial), the read right
    after, and the read after dropping its pages (here), then the seed's write and read rates. Dots on a log rate axis
    (they span three orders of magnitude); the link's cap is drawn across this run's rows only.

    df: file, nbytes, write_mb_per_s, read_mb_per_s, reread_mb_per_s. published: file, size_mb,
    write_mb_per_s, read_mb_per_s (the seed's Table I; its 'Total' row is left out).
    """
    import math

    kinds = [("write_mb_per_s", "write (copy in), every trial", "circle", "#1f77b4"),
             ("read_mb_per_s", "read right after", "diamond", "#d62728"),
             ("reread_mb_per_s", "read after its pages were dropped", "x", "#2ca02c")]
    here_rows = [f"here: {f} ({format_size(n)})" for f, n in zip(df["file"], df["nbytes"])]
    here = list(dict.fromkeys(here_rows))      # one line per file, every trial of it a dot on the line
    seed = published[published["file"] != "Total"] if published is not None and len(published) else None
    theirs = [f"seed 002: {f} ({s:g} MB)" for f, s in zip(seed["file"], seed["size_mb"])] if seed is not None else []
    fig = go.Figure()
    values = []
    for col, name, symbol, color in kinds:
        pairs = [(x, y) for x, y in zip(df[col], here_rows) if x == x]     # a write without a read: no dot
        xs, ys = [x for x, _ in pairs], [y for _, y in pairs]
        if seed is not None and col in seed:
            xs, ys = xs + list(seed[col]), ys + theirs
        values += xs
        fig.add_scatter(x=xs, y=ys, mode="markers", name=name, marker=dict(size=11, symbol=symbol, color=color,
                                                                            opacity=0.8),
                        hovertemplate="%{y}: %{x:,.2f} MB/s<extra>" + name + "</extra>")
    fig.update_yaxes(categoryorder="array", categoryarray=here + theirs, autorange="reversed", title_text="")
    if link_mb_per_s:      # this run's link: across this run's rows only
        fig.add_shape(type="line", x0=link_mb_per_s, x1=link_mb_per_s, y0=-0.5, y1=len(here) - 0.5, xref="x",
                      yref="y", line=LINK_LINE)
        _link_legend(fig, link_mb_per_s)
    ticks = decade_ticks(min(values), max(values))
    fig.update_xaxes(type="log", title_text="MB/s (log scale)", tickangle=0, **ticks,
                     range=[math.log10(ticks["tickvals"][0]), math.log10(ticks["tickvals"][-1])])
    fig.update_layout(title="Copying files into a gcsfuse mount and back", legend_title_text="",
                      height=200 + 40 * (len(here) + len(theirs)))
    return fig
