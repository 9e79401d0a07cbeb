"""What every lesson's charts share: repeated trials, log and decade ticks, the residency map, a
reference line. Each builder takes a DataFrame and returns a go.Figure; the notebook shows it. A
lesson's own charts are its ``plots`` module (``iolab.lessons.<lesson>.plots``)."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from .units import format_size


# what a trial's value is, by its unit, when the caller does not say (an axis is titled in words)
MEASURED_BY_UNIT = {"MiB/s": "rate", "MB/s": "rate", "GiB/s": "rate", "ops/s": "rate", "files/s": "rate",
                    "s": "time", "ms": "time", "µs": "time", "us": "time"}


def trials(frame: pd.DataFrame, *, unit: str = "", title: str = "Every trial, per setting",
           log: bool = False, x_title: str = "what was compared", y_title: str | None = None) -> go.Figure:
    """Every trial of a :class:`iolab.trials.Trials` run (its ``frame``), one column per setting: every
    counted trial a point (jittered sideways, so that equal trials do not hide each other), hover giving
    its position in the run, and the median of the counted trials as a wide dash; warm-ups and disturbed
    trials that were run again are drawn as hollow grey points, not counted. No box: a handful of trials
    has no quartiles to draw, and never one bar: the spread is the point.

    The axes are titled in words, never with a column name: ``y_title`` says what one trial measured,
    with its unit ("write rate of 64 MiB (MiB/s)"; by default the kind of quantity the unit names,
    "rate (MiB/s)", "time (s)"), ``x_title`` what the columns are ("how the file was written")."""
    fig = go.Figure()
    kept = frame[frame["kept"]] if "kept" in frame.columns else frame
    clear = "rgba(0,0,0,0)"
    names, medians = [], []
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    for i, (setting, part) in enumerate(kept.groupby("setting", sort=False)):
        # a strip (plotly express's px.strip is drawn the same way): a box trace whose box is invisible,
        # for its jitter on a category axis
        fig.add_box(x=[str(setting)] * len(part), y=part["value"], name=str(setting), boxpoints="all",
                    jitter=0.4, pointpos=0, marker=dict(size=8, color=palette[i % len(palette)]), fillcolor=clear,
                    line=dict(width=0, color=clear),
                    hoveron="points", customdata=part[["position", "trial"]],
                    hovertemplate="%{x}, trial %{customdata[1]} (run %{customdata[0]} of the whole run): "
                                  "%{y:,.4g} " + unit + "<extra></extra>")
        names.append(str(setting))
        medians.append(float(part["value"].median()))
    if names:
        fig.add_scatter(x=names, y=medians, mode="markers", name="median of the counted trials",
                        marker=dict(symbol="line-ew-open", size=36, color="#333333", line=dict(width=3, color="#333333")),
                        hovertemplate="%{x}: median %{y:,.4g} " + unit + "<extra></extra>")
    if "kept" in frame.columns:
        dropped = frame[~frame["kept"]]
        if len(dropped):
            why = dropped["warmup"].map(lambda w: "warm-up" if w else "disturbed, run again")
            fig.add_scatter(x=dropped["setting"].astype(str), y=dropped["value"], mode="markers",
                            name="not counted (warm-up, disturbed)",
                            marker=dict(size=9, symbol="circle-open", color="#7f7f7f"),
                            customdata=pd.concat([dropped[["position"]], why.rename("why")], axis=1),
                            hovertemplate="%{x}, run %{customdata[0]}: %{y:,.4g} " + unit +
                                          " (%{customdata[1]})<extra></extra>")
    if y_title is None:
        what = MEASURED_BY_UNIT.get(unit, "measured value")
        y_title = (f"{what} ({unit}, log scale)" if unit else f"{what} (log scale)") if log else \
            (f"{what} ({unit})" if unit else what)
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title,
                      showlegend=True, legend=dict(orientation="h", y=-0.2, yanchor="top"))
    if log:
        fig.update_yaxes(type="log", **log_ticks(frame["value"]))
    else:
        fig.update_yaxes(rangemode="tozero")
    return fig


def short_number(v: float) -> str:
    """A tick's label in full but short: 500, 2k, 20k, 1.5M (never a bare minor "2")."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:g}{suffix}"
    return f"{v:g}"


def log_ticks(values, *, short: bool = False, pad: float = 0.12) -> dict:
    """A log axis's range (padded so that no marker sits on its edge) and ticks at 1, 2 and 5 times each
    power of ten inside the values' range (1 and 3 times each when the values span more than 2.4
    decades, only the powers of ten beyond 4: a value is never more than about 3x from a labelled tick
    until then; 1, 2, 3, 5, 7 when that leaves fewer than two; with the sparser steps, one more 1-2-3-5-7 label
    at an end whose values lie more than 1.8x past the last label), each labelled in full ("2,000", or "2k"
    with ``short``), never a bare minor "2": keywords for update_yaxes/update_xaxes."""
    v = [float(x) for x in values if x is not None and not math.isnan(float(x)) and float(x) > 0]
    if not v:
        return {}
    lo, hi = min(v), max(v)
    span = (math.log10(lo) - pad, math.log10(hi) + pad)
    width = span[1] - span[0]
    mult = (1, 2, 5) if width <= 2.4 else (1, 3) if width <= 4 else (1,)
    k = math.floor(span[0])
    ticks = []
    while k <= span[1]:
        ticks += [m * 10 ** k for m in mult]
        k += 1
    keep = [t for t in ticks if span[0] <= math.log10(t) <= span[1]]
    if len(keep) < 2:       # a narrow range (300k to 800k): 1, 2, 3, 5 and 7 times each power, so two labels at least
        keep = [m * 10 ** k for k in range(math.floor(span[0]), math.floor(span[1]) + 1) for m in (1, 2, 3, 5, 7)
                if span[0] <= math.log10(m * 10 ** k) <= span[1]]
    elif mult != (1, 2, 5):  # sparse steps: the values at either end within 1.8x of a label too (the class's
        # tmpfs students at 120k-224k sat above the last label, 100k, with none above them)
        nice = [m * 10 ** k for k in range(math.floor(span[0]), math.floor(span[1]) + 1) for m in (1, 2, 3, 5, 7)]
        if hi > 1.8 * keep[-1]:
            keep.append(max(t for t in nice if t <= hi))
        if lo < keep[0] / 1.8:
            keep.insert(0, min(t for t in nice if t >= lo))
    text = [short_number(t) if short else (f"{t:,.0f}" if t >= 1 else f"{t:g}") for t in keep]
    return {"tickvals": keep, "ticktext": text, "range": list(span)}


STATE_COLORS = {"cold": "#1f77b4", "warm": "#ff7f0e"}


RESIDENT_SCALE = [[0.0, "#eef1f5"], [1.0, "#1f4e9c"]]


def residency_map(res, title: str | None = None, *, max_cells: int = 16384, columns: int = 128) -> go.Figure:
    """A file's pages as a grid, dark = in the page cache. Takes a pagecache.Residency (or a bool array).

    Readable for 10 pages or 10^6: up to ``max_cells`` pages are drawn one cell each; beyond that each
    cell is a bin of consecutive pages coloured by the fraction of them that is resident.
    """
    import math

    import numpy as np

    pmap = getattr(res, "map", res)
    if pmap is None:
        raise ValueError("this residency has no per-page map (it was taken with keep_map=False, or it "
                         "is unreliable or a directory): call pagecache.residency(path) on a file")
    pmap = np.asarray(pmap, dtype=bool)
    page_size = getattr(res, "page_size", 4096)
    n = pmap.size
    per = max(1, math.ceil(n / max_cells))              # pages per cell
    cells = math.ceil(n / per) if n else 0
    values = np.full(cells, np.nan)
    if n:
        padded = np.zeros(cells * per)
        padded[:n] = pmap
        counts = np.minimum(per, n - np.arange(cells) * per)
        values = padded.reshape(cells, per).sum(axis=1) / counts
    cols = max(1, min(columns, cells))
    rows = max(1, math.ceil(cells / cols))
    grid = np.full(rows * cols, np.nan)
    grid[:cells] = values
    grid = grid.reshape(rows, cols)
    first = (np.arange(rows * cols) * per).reshape(rows, cols)
    row_mib = [r * cols * per * page_size / 2**20 for r in range(rows)]
    fig = go.Figure(go.Heatmap(
        z=grid, x=list(range(cols)), y=row_mib, customdata=first, zmin=0, zmax=1, colorscale=RESIDENT_SCALE,
        xgap=1 if cols <= 64 else 0, ygap=1 if rows <= 64 else 0,
        colorbar=dict(title="resident", tickformat=".0%"),
        hovertemplate=("page %{customdata:,}" + (f" (+{per - 1:,} more)" if per > 1 else "")
                       + "<br>resident: %{z:.0%}<extra></extra>")))
    cell = f"{per:,} pages" if per > 1 else "1 page"
    resident = int(pmap.sum())
    fig.update_layout(
        title=title or f"{resident:,} of {n:,} pages resident ({resident / n:.1%})" if n else (title or "empty file"),
        xaxis_title=f"cell in row (1 cell = {cell} = {_size(per * page_size)})",
        # a strip of a few rows is short: its axis title must fit beside it (plotly's margins take 180 px)
        yaxis_title="file offset of the row (MiB)" if rows > 8 else "offset (MiB)", yaxis_autorange="reversed",
        height=max(300, min(600, 160 + 18 * rows)))       # a strip of 1-2 rows still needs room for its axes
    return fig


def _size(nbytes: float) -> str:
    return format_size(nbytes)


def decade_ticks(lo: float, hi: float, fmt=lambda v: f"{v:,.0f}" if v >= 1 else f"{v:g}") -> dict:
    """Tick values and full labels at every power of 10 from ``lo`` to ``hi`` (a log axis without
    plotly's bare "2" and "5" minor labels)."""
    import math

    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return {}
    lo, hi = max(lo, 1e-12), max(hi, lo, 1e-12)
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    vals = [10.0 ** e for e in range(first, last + 1)]
    return dict(tickvals=vals, ticktext=[fmt(v) for v in vals])


def reference_line(fig: go.Figure, y: float, label: str) -> None:
    """A dashed horizontal line across the plot, named in the legend (an annotation on the line would
    sit on top of the dots near it)."""
    fig.add_hline(y=y, line_dash="dash", line_color="#555")
    fig.add_scatter(x=[None], y=[None], mode="lines", name=label, line=dict(dash="dash", color="#555"))
