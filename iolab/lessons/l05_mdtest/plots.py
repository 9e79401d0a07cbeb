"""Lesson 05 (mdtest: metadata): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import log_ticks


def mdtest_rates(df: pd.DataFrame, *, by: str = "filesystem", operations: list[str] | None = None,
                 title: str = "mdtest: operations per second on each filesystem", trials: bool = False,
                 legend_title: str | None = None) -> go.Figure:
    """One small panel per operation, each row labelled with its ``by``. From mdtest's summary rows: a
    dot at the mean rate, a line from the slowest to the fastest iteration. With ``trials=True``, ``df``
    holds every iteration (``mdtest.parse_iterations``: columns operation, iteration, rate, scope): a dot
    per iteration and a bar at their median, so that the spread the lesson's verdicts are judged on is
    seen. Each panel has its own LOG axis, ticks at 1, 2, 5 x 10^k labelled in full: a disk's few thousand
    ops/s beside a memory filesystem's 300,000 would sit at zero on a linear axis; on a log axis equal
    ratios are equal distances. ``legend_title``: the legend's title in words (default: ``by``)."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    d = df if trials else df[df["unit"] == "ops/s"]
    ops = [o for o in (operations or list(dict.fromkeys(d["operation"]))) if o in set(d["operation"])]
    groups = list(dict.fromkeys(d[by]))
    cols = 1 if len(ops) < 3 else 2
    rows = -(-len(ops) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=ops, horizontal_spacing=0.12,
                        vertical_spacing=min(0.6 / rows, 0.25))
    colours = {g: qualitative.Plotly[i % len(qualitative.Plotly)] for i, g in enumerate(groups)}
    rank0 = trials and "scope" in d and (d["scope"] == "rank 0").any()
    axis = "operations per second, log axis"
    if rank0:       # said once, under the title: an axis title this long would run into its neighbour's
        title += ("<br><sup>each iteration's rate of rank 0 alone (mdtest 4 prints its own, not the ranks' "
                  "together; the tree's phases count the whole tree)</sup>")
    for i, op in enumerate(ops):
        r, c = i // cols + 1, i % cols + 1
        part = d[d["operation"] == op]
        for g in groups:
            row = part[part[by] == g]
            if not len(row):
                continue
            if trials:
                v = row.sort_values("iteration")["rate"].astype(float)
                fig.add_scatter(x=list(v), y=[str(g)] * len(v), mode="markers",
                                marker=dict(size=7, color=colours[g], opacity=0.6, line=dict(width=0)),
                                name=str(g), legendgroup=str(g), showlegend=i == 0,
                                customdata=list(row.sort_values("iteration")["iteration"]),
                                hovertemplate=f"{op}<br>{g}<br>iteration %{{customdata}}: %{{x:,.0f}} ops/s<extra></extra>",
                                row=r, col=c)
                fig.add_scatter(x=[float(v.median())], y=[str(g)], mode="markers",
                                marker=dict(symbol="line-ns", size=18, line=dict(width=3, color=colours[g])),
                                name="median", legendgroup=str(g), showlegend=False,
                                hovertemplate=f"{op}<br>{g}<br>median of {len(v)}: %{{x:,.0f}} ops/s<extra></extra>",
                                row=r, col=c)
                continue
            mean, lo, hi = (float(row[k].iloc[0]) for k in ("mean", "min", "max"))
            fig.add_scatter(x=[mean], y=[str(g)], mode="markers", marker=dict(size=10, color=colours[g]),
                            error_x=dict(type="data", symmetric=False, array=[hi - mean], arrayminus=[mean - lo],
                                         thickness=1.5, width=4),
                            name=str(g), legendgroup=str(g), showlegend=i == 0,
                            hovertemplate=f"{op}<br>{g}<br>mean %{{x:,.0f}} ops/s<br>"
                                          f"iterations from {lo:,.0f} to {hi:,.0f}<extra></extra>",
                            row=r, col=c)
        values = (part["rate"] if trials else pd.concat([part["min"], part["max"], part["mean"]])).astype(float)
        fig.update_xaxes(type="log", row=r, col=c, tickangle=0, **log_ticks(values, short=True),
                         title_text=axis if r == rows else None)
        # the rows are the same in every panel: named once, on the left
        fig.update_yaxes(showticklabels=c == 1, automargin=True, categoryorder="array", autorange="reversed",
                         categoryarray=[str(g) for g in groups], row=r, col=c)
    fig.update_layout(title=title, height=170 + 150 * rows + 30 * rank0,
                      legend_title=legend_title if legend_title is not None else by.replace("_", " "),
                      margin=dict(l=20, t=110 if rank0 else None))
    return fig


def syscall_durations(df: pd.DataFrame, *, by: str = "filesystem",
                      title: str = "The system calls behind one file, in order, and the time each took (a dot per file traced)") -> go.Figure:
    """A dot per call (top to bottom in the order they ran) at its duration in µs, on a LOG axis: a call
    that waits for a device (10,000 µs) stands out, and the calls of a memory filesystem (30 µs) stay
    apart from each other and from the disk's instead of all sitting at zero. A trace of several
    files (``step`` and ``trial`` columns) gets a dot per trial on each call's row, its warm-up left out."""
    fig = go.Figure()
    if "warmup" in df:
        df = df[~df["warmup"].astype(bool)]
    for name, part in df.groupby(by, sort=False):
        steps = part["step"] if "step" in part else range(len(part))
        labels = [f"{i + 1}. {s}" for i, s in zip(steps, part["syscall"])]
        trials = part["trial"].astype(str) if "trial" in part else [""] * len(part)
        fig.add_scatter(x=part["duration"] * 1e6, y=labels, mode="markers", marker=dict(size=9, opacity=0.7),
                        name=str(name), customdata=list(trials),
                        hovertemplate="%{y}: %{x:,.0f} µs (trial %{customdata})<extra>" + str(name) + "</extra>")
    fig.update_layout(title=title, legend_title=by.replace("_", " "), height=420)
    fig.update_xaxes(title_text="time in the system call (µs, log axis)", type="log",
                     **log_ticks(df["duration"] * 1e6))
    # the rows' names never under the axis title: the margin grows to the longest name
    fig.update_yaxes(title_text="system call, in order", autorange="reversed", type="category", automargin=True,
                     title_standoff=12)
    return fig


def removal_durations(summary: pd.DataFrame, *, by: str = "filesystem",
                      title: str = "What one removal costs: median time in the call") -> go.Figure:
    """Median µs of each kind of removal (``iolab.lessons.l05_mdtest.calls.removal_summary`` rows with a ``by``
    column), a dot per filesystem, linear axis from 0; the hover gives the count and the slowest call."""
    fig = go.Figure()
    for name, part in summary.groupby(by, sort=False):
        labels = [f"{s} of a {i}" for s, i in zip(part["syscall"], part["item"])]
        fig.add_scatter(x=part["median_us"], y=labels, mode="markers", marker=dict(size=11), name=str(name),
                        customdata=part[["calls", "max_us"]],
                        hovertemplate="%{y}: median %{x:,.0f} µs over %{customdata[0]} calls, slowest "
                                      "%{customdata[1]:,.0f} µs<extra>" + str(name) + "</extra>")
    fig.update_layout(title=title, legend_title=by, height=360)
    fig.update_xaxes(title_text="median time in the call (µs)", rangemode="tozero", tickformat=",.0f")
    fig.update_yaxes(title_text="", type="category")
    return fig
