"""Lesson 04 (IOR's pitfalls): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import math
import pandas as pd
import plotly.graph_objects as go
from ...plot import log_ticks, reference_line
from ...units import format_size


ACCESS_COLORS = {"write": "#d62728", "read": "#1f77b4"}


VERDICT_SHORT = {"served from page cache": "cache", "from the device": "device", "unclear": "unclear"}


def _ior_best(df: pd.DataFrame) -> pd.DataFrame:
    """Per run (or config) and access: the best iteration (IOR's "Max Write"/"Max Read"), in run order."""
    key = "run" if "run" in df else "config"
    d = df[df["access"].isin(["write", "read"]) & df["bw_mib"].notna()].copy()
    order = list(dict.fromkeys(d[key]))
    best = d.loc[d.groupby([key, "access"], sort=False)["bw_mib"].idxmax()].copy()
    best["_order"] = best[key].map(order.index)
    return best.sort_values(["_order", "access"], ascending=[True, False]).rename(columns={key: "x"})


def _nice_step(x: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at least ``x``: a tick step."""
    k = 10.0 ** math.floor(math.log10(max(x, 1e-12)))
    return next(m * k for m in (1, 2, 2.5, 5, 10) if m * k >= x)


def _away_from(y: float, line: float | None, side: str = "center") -> str:
    """A label's textposition: above its marker when the marker is on or above ``line``, below it when under,
    so that no label sits on the line (``side``: "center", "left" or "right")."""
    return ("bottom " if line is not None and y < line else "top ") + side


def ior_bandwidth(df: pd.DataFrame, *, device_mib: float | None = None,
                  title: str = "IOR bandwidth per run: every iteration, and the best one") -> go.Figure:
    """A dot plot on a linear axis from zero: one small dot per iteration, a large one for each run's best
    (IOR's "Max Write"/"Max Read"), labelled with its verdict (from ``ior_verdicts.add_verdicts``); a dashed line at
    the device's uncached read rate when given. Writes and reads side by side in each run's column, each label
    centred over (or under) its own diamond, on the side away from the device's line, so that no label sits on
    the line and the write's and the read's labels of one run never share a place; the legend under the plot
    leaves the columns their width."""
    key = "run" if "run" in df else "config"
    d = df[df["access"].isin(["write", "read"]) & df["bw_mib"].notna()]
    best = _ior_best(df)
    order = list(dict.fromkeys(d[key]))
    fig = go.Figure()
    for access in ("write", "read"):
        every = d[d["access"] == access]
        fig.add_scatter(x=every[key], y=every["bw_mib"], mode="markers", name=f"{access}, each iteration",
                        legendgroup=access, offsetgroup=access,
                        marker=dict(color=ACCESS_COLORS[access], size=7, opacity=0.45),
                        customdata=every["iteration"],
                        hovertemplate="%{x} " + access + ", iteration %{customdata}: %{y:,.0f} MiB/s<extra></extra>")
        part = best[best["access"] == access]
        labels = [VERDICT_SHORT.get(v, "") if isinstance(v, str) else "" for v in part.get("verdict", [None] * len(part))]
        reasons = list(part["reason"]) if "reason" in part else [""] * len(part)
        fig.add_scatter(x=part["x"], y=part["bw_mib"], mode="markers+text", name=f"{access}, best iteration",
                        legendgroup=access, offsetgroup=access, text=labels,
                        textposition=[_away_from(float(y), device_mib) for y in part["bw_mib"]],
                        textfont=dict(size=11, color=ACCESS_COLORS[access]),
                        marker=dict(color=ACCESS_COLORS[access], size=14, symbol="diamond"), cliponaxis=False,
                        customdata=list(zip(part["config"], reasons)),
                        hovertemplate="%{x} " + access + ", best: %{y:,.0f} MiB/s<br>options: %{customdata[0]}"
                                      "<br>%{customdata[1]}<extra></extra>")
    if device_mib:
        reference_line(fig, device_mib, f"device, uncached read: {device_mib:,.0f} MiB/s")
    # a linear axis from zero, with room under zero and over the top for the labels that go there (a label under
    # a diamond near zero would otherwise sit on the run's name); ticks only from zero up
    top = max([float(v) for v in d["bw_mib"]] + [float(device_mib or 0), 1.0])
    step = _nice_step(top / 6)
    fig.update_layout(title=title, scattermode="group", scattergap=0.05, height=520,
                      margin=dict(r=30, l=90, b=150), yaxis_title="bandwidth (MiB/s)", xaxis_title="run",
                      yaxis=dict(range=[-0.1 * top, 1.1 * top], tickformat=",d", zeroline=True,
                                 tickvals=[step * k for k in range(int(1.1 * top // step) + 1)]),
                      legend=dict(orientation="h", y=-0.22, x=0, title_text="access"),
                      xaxis=dict(categoryorder="array", categoryarray=order))
    return fig


def ior_vs_published(ours: pd.DataFrame, published: pd.DataFrame, *, ours_title: str = "this machine",
                     published_title: str = "published") -> go.Figure:
    """Side by side on one log axis (the seed's figures span three orders of magnitude, ours one): our best
    bandwidth per configuration and a seed's published figures (``published`` has columns config, access,
    bw_mib). Each dot carries its value; both panels share the range and the fully labelled ticks
    (:func:`log_ticks`), so a dot's height compares across them."""
    from plotly.subplots import make_subplots

    mine = _ior_best(ours).rename(columns={"x": "label"})
    theirs = published.assign(label=published["config"])
    fig = make_subplots(rows=1, cols=2, subplot_titles=(ours_title, published_title), horizontal_spacing=0.1,
                        shared_yaxes=False)
    for col, part_df in ((1, mine), (2, theirs)):
        for access in ("write", "read"):
            part = part_df[part_df["access"] == access]
            fig.add_scatter(x=part["label"], y=part["bw_mib"], mode="markers+text", name=access,
                            marker=dict(color=ACCESS_COLORS[access], size=11), offsetgroup=access,
                            text=[f"{v:,.0f}" for v in part["bw_mib"]], textposition="top center",
                            cliponaxis=False,
                            showlegend=col == 1, legendgroup=access, row=1, col=col,
                            hovertemplate="%{x} " + access + ": %{y:,.0f} MiB/s<extra></extra>")
    ticks = log_ticks(list(mine["bw_mib"]) + list(theirs["bw_mib"]), pad=0.25)
    for col in (1, 2):
        fig.update_yaxes(type="log", title_text="bandwidth (MiB/s, log scale)", col=col, **ticks)
    fig.update_xaxes(title_text="IOR options")
    fig.update_layout(scattermode="group", title="The same sequence of options, here and in the seed "
                      "(one log scale for both)", legend_title="access")
    return fig


def _log_ticks_125(lo: float, hi: float) -> dict:
    """Ticks at 1, 2 and 5 times each power of 10 between ``lo`` and ``hi``, every one with its full label
    (plotly's own labels on a log axis are a bare "2" and "5" between the decades)."""
    import math

    lo, hi = max(float(lo), 1e-9), max(float(hi), 1e-9)
    vals = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1) for m in (1, 2, 5)]
    vals = [v for v in vals if lo / 1.5 <= v <= hi * 1.5] or [lo, hi]
    return dict(tickvals=vals, ticktext=[f"{v:,g}" for v in vals])


SWEEP_AXES = {"transfer_size": ("transfer size (-t, log)", "log"),
              "tasks": ("MPI tasks (-n)", "linear"), "segments": ("segments (-s, log)", "log")}


def ior_sweep(df: pd.DataFrame, by: str, *, highlight: float | None = None,
              title: str | None = None, device_mib: float | None = None) -> go.Figure:
    """Best bandwidth against one swept parameter (transfer_size, tasks or segments), write and read;
    ``highlight`` rings the point at that value; a dashed line at ``device_mib``, the uncached read rate
    of the device the sweep was recorded on, when given."""
    if by not in SWEEP_AXES:
        raise ValueError(f"by must be one of {', '.join(SWEEP_AXES)}")
    d = df[df["access"].isin(["write", "read"])].sort_values(by)
    live = d["mode"] == "live" if "mode" in d else pd.Series(False, index=d.index)
    fig = go.Figure()
    for access in ("write", "read"):
        part = d[(d["access"] == access) & ~live]
        fig.add_scatter(x=part[by], y=part["bw_mib"], mode="lines+markers", name=f"{access} (recorded)",
                        line_color=ACCESS_COLORS[access],
                        hovertemplate=f"{by} %{{x:,}}: %{{y:,.0f}} MiB/s, recorded<extra></extra>")
        here = d[(d["access"] == access) & live]
        if len(here):
            fig.add_scatter(x=here[by], y=here["bw_mib"], mode="markers", name=f"{access} (run here)",
                            marker=dict(color=ACCESS_COLORS[access], symbol="diamond", size=11),
                            hovertemplate=f"{by} %{{x:,}}: %{{y:,.0f}} MiB/s, run here<extra></extra>")
        if highlight is not None:
            hit = part[part[by] == highlight]
            fig.add_scatter(x=hit[by], y=hit["bw_mib"], mode="markers", showlegend=False, hoverinfo="skip",
                            marker=dict(size=18, color="rgba(0,0,0,0)", line=dict(width=2, color="black")))
    xtitle, xtype = SWEEP_AXES[by]
    if device_mib:
        reference_line(fig, device_mib, f"device of the recorded sweep, uncached read: {device_mib:,.0f} MiB/s")
    xs = sorted(set(d[by]))
    xticks = dict(tickvals=xs, ticktext=[format_size(v) if by == "transfer_size" else f"{int(v):,}" for v in xs])
    ys = pd.concat([d["bw_mib"].dropna(), pd.Series([device_mib] if device_mib else [], dtype=float)])
    yticks = _log_ticks_125(ys.min(), ys.max()) if len(ys) else {}
    fig.update_layout(title=title or f"IOR -F -C -e: bandwidth against {by.replace('_', ' ')}",
                      xaxis=dict(title=xtitle, type=xtype, **xticks),
                      yaxis=dict(title="bandwidth (MiB/s, log)", type="log", **yticks), legend_title="access")
    return fig


PHASE_COLORS = {"write": "#d62728", "read": "#1f77b4"}


def cache_overflow(frame: pd.DataFrame, title: str = "IOR in a memory cgroup: every trial, per file size") -> go.Figure:
    """The segment-count sweep (sweeps.cache_runs(...).frame): rate against file size, every trial a
    point, the median of each size joined by a line, per phase; a dashed line at the cgroup's limit."""
    fig = go.Figure()
    sweep = frame[frame["run"].str.startswith("cache-s")]
    for access, part in sweep.groupby("access", sort=False):
        color = PHASE_COLORS.get(access)
        mib = part["file_bytes"] / 2**20
        fig.add_scatter(x=mib, y=part["mib_per_s"], mode="markers", name=f"{access}, each trial",
                        marker=dict(size=9, color=color, opacity=0.6), customdata=part[["trial"]],
                        hovertemplate="%{x:.0f} MiB file, trial %{customdata[0]}: %{y:,.0f} MiB/s<extra>"
                                      + access + "</extra>")
        med = part.groupby("file_bytes")["mib_per_s"].median()
        fig.add_scatter(x=med.index / 2**20, y=med.values, mode="lines", name=f"{access}, median",
                        line=dict(color=color, width=2), hoverinfo="skip")
    limit = frame["limit_bytes"].dropna()
    if len(limit):
        x = float(limit.iloc[0]) / 2**20
        fig.add_vline(x=x, line=dict(dash="dash", color="#555"))
        fig.add_annotation(x=math.log10(x), y=1, yref="paper", yanchor="bottom", showarrow=False,
                           text=f"the cgroup's limit, {format_size(int(limit.iloc[0]))}")
    fig.update_layout(title=title, height=450, margin=dict(t=70, b=110),
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title="file size (MiB), log axis", type="log", tickvals=sorted(set(sweep["file_bytes"] / 2**20)))
    fig.update_yaxes(title="IOR rate (MiB/s), log axis", type="log", **log_ticks(sweep["mib_per_s"]))
    return fig
