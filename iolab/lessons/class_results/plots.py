"""The instructor's class results (notebooks/instructor/class-results.ipynb): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import log_ticks, short_number


def _hover(frame: pd.DataFrame, cols: tuple[str, ...]) -> list[str]:
    present = [c for c in cols if c in frame.columns]
    return ["<br>".join(f"{c}: {row[c]}" for c in present) for _, row in frame[present].iterrows()]


# column names as a reader says them (an axis is never titled with a column name)
COLUMN_WORDS = {"mib_per_s": "throughput", "mean": "mean rate", "bw_mib": "bandwidth", "ops": "operations",
                "user": "student", "op": "mdtest operation", "fstype": "filesystem type"}


def _words(column: str) -> str:
    """A column's name as a reader says it (an axis or legend title)."""
    return COLUMN_WORDS.get(column, column.replace("_", " "))


def class_strip(frame: pd.DataFrame, value: str, *, unit: str, x: str = "filesystem", color: str = "user",
                title: str | None = None, log: bool = True, label: str | None = None,
                hover: tuple[str, ...] = ("user", "options", "node", "fstype", "mode")) -> go.Figure:
    """Every measurement of the class as a point, one column per ``x`` (filesystem), each student in
    a place of their own across the column, a box behind.

    One trace per ``color`` value (student), so clicking a legend entry hides a student. Log axis by
    default: filesystems differ by factors. ``unit`` is the y-axis unit ("ops/s", "MiB/s").
    """
    fig = go.Figure()
    data = frame.dropna(subset=[value])
    order = list(dict.fromkeys(data[x]))
    fig.add_trace(go.Box(x=data[x], y=data[value], name="all students", boxpoints=False,
                         marker_color="lightgray", line_color="gray", showlegend=False, hoverinfo="skip"))
    for key, g in data.groupby(color, sort=True):
        # each student its own place in the column (scattermode "group"): students of nearly one rate
        # were drawn on top of each other (4 dots for 7)
        fig.add_trace(go.Scatter(x=g[x], y=g[value], mode="markers", name=str(key), marker={"size": 9},
                                 offsetgroup=str(key),
                                 text=_hover(g, hover), hovertemplate="%{x}: %{y:.4g} " + unit + "<br>%{text}"))
    fig.update_layout(title=title or f"{COLUMN_WORDS.get(value, value)} per {x}, every student", template="plotly_white",
                      xaxis_title=_words(x), legend_title=_words(color), boxmode="overlay",
                      scattermode="group", scattergap=0.3,
                      yaxis_title=f"{label or COLUMN_WORDS.get(value, value.replace('_', ' '))} "
                                  f"({unit}{', log scale' if log else ''})")
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    if log:
        fig.update_yaxes(type="log", **log_ticks(data[value], short=True))
    return fig


def class_heatmap(frame: pd.DataFrame, value: str, *, unit: str, rows: str = "user", cols: str = "filesystem",
                  title: str | None = None) -> go.Figure:
    """The median of ``value`` per student (rows) and filesystem (columns), colour on a log scale,
    each cell labelled with its value: a student far from the column stands out."""
    import numpy as np

    data = frame.dropna(subset=[value])
    data = data[data[value] > 0]
    table = data.pivot_table(index=rows, columns=cols, values=value, aggfunc="median")
    col_order = [c for c in dict.fromkeys(data[cols]) if c in table.columns]
    table = table[col_order]
    z = np.log10(table.to_numpy(dtype=float))
    def short(v: float) -> str:
        if np.isnan(v):
            return ""
        for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if abs(v) >= div:
                return f"{v / div:.3g}{suffix}"
        return f"{v:.3g}"

    text = [[short(v) for v in r] for r in table.to_numpy(dtype=float)]
    finite = z[np.isfinite(z)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    ticks = list(range(int(np.floor(lo)), int(np.ceil(hi)) + 1))
    fig = go.Figure(go.Heatmap(
        z=z, x=[str(c) for c in table.columns], y=[str(i) for i in table.index], text=text,
        texttemplate="%{text}", colorscale="Viridis", hovertemplate="%{y} on %{x}: %{text} " + unit + "<extra></extra>",
        colorbar={"title": {"text": unit}, "tickvals": ticks, "ticktext": [short_number(10 ** t) for t in ticks]}))
    fig.update_layout(title=title or f"median {_words(value)} ({unit}) per {_words(rows)} and {_words(cols)}",
                      template="plotly_white", xaxis_title=_words(cols), yaxis_title=_words(rows))
    fig.update_yaxes(autorange="reversed")
    return fig
