"""Plotly figure builders: each takes a DataFrame and returns a go.Figure; the notebook shows it."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from .units import format_size

# --- repeated trials (iolab.trials) ---------------------------------------------------------------

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


def _short(v: float) -> str:
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
    text = [_short(t) if short else (f"{t:,.0f}" if t >= 1 else f"{t:g}") for t in keep]
    return {"tickvals": keep, "ticktext": text, "range": list(span)}


# --- lesson 00 ----------------------------------------------------------------------------------

STATE_COLORS = {"cold": "#1f77b4", "warm": "#ff7f0e"}


def repeat_reads(frame: pd.DataFrame, title: str = "The same file, read again and again") -> go.Figure:
    """Throughput of each read of one file (from first_look.repeat_reads), cold first then warm."""
    fig = go.Figure()
    for state, part in frame.groupby("state", sort=False):
        stored = (part["from_storage"].map(lambda b: "no witness (no block device)" if pd.isna(b) else _size(b))
                  if "from_storage" in part.columns else pd.Series("not witnessed", index=part.index))
        fig.add_bar(x=part["read"], y=part["mib_per_s"], name=str(state),
                    marker_color=STATE_COLORS.get(str(state)),
                    customdata=pd.concat([part[["seconds", "cache_before", "verdict"]], stored.rename("stored")],
                                         axis=1),
                    hovertemplate="read %{x}: %{y:,.0f} MiB/s in %{customdata[0]:.4f} s<br>"
                                  "from storage: %{customdata[3]}<br>"
                                  "resident before: %{customdata[1]:.0%}<br>%{customdata[2]}<extra></extra>")
    fig.update_layout(title=title, xaxis_title="read number", yaxis_title="throughput (MiB/s)",
                      xaxis=dict(dtick=1), legend_title="page cache")
    return fig

# --- lessons 01-02 ------------------------------------------------------------------------------

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


def _seconds_label(v: float) -> str:
    if v >= 1:
        return f"{v:,g} s"
    if v >= 1e-3:
        return f"{v * 1e3:g} ms"
    return f"{v * 1e6:g} µs"


SIZE_TICKS = dict(tickvals=[1, 16, 256, 4096, 65536, 2**20, 2**24],
                  ticktext=["1 B", "16 B", "256 B", "4 KiB", "64 KiB", "1 MiB", "16 MiB"])


def read_size_sweep(frame: pd.DataFrame, title: str = "Reading one file with read() calls of each size",
                    published: pd.DataFrame | None = None) -> go.Figure:
    """Time per pass and throughput vs read size (both log), one line per cache state.

    ``frame``: readahead_probes.read_size_sweep rows (several may be concatenated). ``published``: optional
    rows with read_size, seconds and a ``source`` (a seed), drawn dashed on the time panel.
    """
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("time to read the whole file", "throughput"))
    for state, trials_ in frame.groupby("cache", sort=False):
        color = STATE_COLORS.get(str(state))
        part = trials_.sort_values("read_size")
        if trials_.groupby("read_size").size().max() > 1:
            # repeated passes: every pass a dot, the line through each size's median pass
            for col, y in ((1, "seconds"), (2, "mib_per_s")):
                fig.add_scatter(x=trials_["read_size"], y=trials_[y], mode="markers", name=f"{state}, every pass",
                                legendgroup=str(state), showlegend=col == 1,
                                marker=dict(color=color, size=6, opacity=0.45),
                                hovertemplate="%{x:,} B: %{y:.4g}<extra>" + f"{state}, one pass</extra>",
                                row=1, col=col)
            med = trials_.groupby("read_size", as_index=False).median(numeric_only=True)
            part = med.assign(cache=state).sort_values("read_size")
            state = f"{state} (median)"
        custom = part[["calls", "us_per_call", "file_size"]]
        hover = ("read size %{x:,} B<br>%{customdata[0]:,} calls, %{customdata[1]:.2f} µs each<br>"
                 "file %{customdata[2]:,} B<br>")
        fig.add_scatter(x=part["read_size"], y=part["seconds"], mode="lines+markers", name=f"{state}",
                        legendgroup=str(state), line_color=color, customdata=custom,
                        hovertemplate=hover + "%{y:.4f} s<extra>" + f"{state}</extra>", row=1, col=1)
        fig.add_scatter(x=part["read_size"], y=part["mib_per_s"], mode="lines+markers", name=f"{state}",
                        legendgroup=str(state), showlegend=False, line_color=color, customdata=custom,
                        hovertemplate=hover + "%{y:,.1f} MiB/s<extra>" + f"{state}</extra>", row=1, col=2)
    if published is not None and len(published):
        for source, part in published.groupby("source", sort=False):
            part = part.sort_values("read_size")
            fig.add_scatter(x=part["read_size"], y=part["seconds"], mode="lines+markers", name=str(source),
                            line_dash="dash", hovertemplate="%{x:,} B: %{y:.4f} s<extra>" + f"{source}</extra>",
                            row=1, col=1)
    for col in (1, 2):
        fig.update_xaxes(type="log", title_text="read size (bytes per read() call)", row=1, col=col, **SIZE_TICKS)
    secs = pd.concat([frame["seconds"]] + ([published["seconds"]] if published is not None and len(published) else []))
    fig.update_yaxes(type="log", title_text="time for the whole file (log)", row=1, col=1,
                     **decade_ticks(secs.min(), secs.max(), _seconds_label))
    fig.update_yaxes(type="log", title_text="throughput (MiB/s, log)", row=1, col=2,
                     **decade_ticks(frame["mib_per_s"].min(), frame["mib_per_s"].max()))
    fig.update_layout(title=title, legend_title="page cache", height=420)
    return fig


def window_growth(frame: pd.DataFrame, title: str = "Pages in the cache after each 4 KiB sequential read") -> go.Figure:
    """Resident pages vs pages asked for, per advice (readahead_probes.window_growth rows, concatenated)."""
    fig = go.Figure()
    for advice, part in frame.groupby("advice", sort=False):
        fig.add_scatter(x=part["bytes_read"] / 1024, y=part["resident"], mode="lines+markers", name=f"{advice}",
                        line_shape="hv", customdata=part[["read", "ahead"]],
                        hovertemplate="after read %{customdata[0]} (%{x:,.0f} KiB asked): %{y:,} pages resident, "
                                      "%{customdata[1]:,} ahead<extra>" + f"{advice}</extra>")
    if len(frame):
        top = frame["bytes_read"].max() / 1024
        fig.add_scatter(x=[0, top], y=[0, top * 1024 / 4096], mode="lines", name="pages asked for",
                        line=dict(dash="dot", color="grey"), hoverinfo="skip")
    fig.update_layout(title=title, xaxis_title="bytes read so far (KiB)", yaxis_title="pages resident (4 KiB each)",
                      legend_title="posix_fadvise")
    return fig


def readahead_trace(folios: pd.DataFrame, windows: pd.DataFrame, *, page_size: int = 4096,
                    title: str = "Readahead during one sequential cold read (bpftrace)") -> go.Figure:
    """The traced windows (iolab.readahead_probes.growth_frames): top, each window's size in pages (log axis),
    coloured by what opened it; bottom, each folio added to the page cache, at its first page index
    (log axis), by its order (a folio of 2**order pages)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.22,
                        subplot_titles=("window size, window after window", "folios added to the page cache"))
    colors = {"sync": "#d62728", "async": "#1f77b4", "": "#7f7f7f"}
    # markers on a line, not bars: a bar on a log axis has no zero to stand on, its length means nothing
    if len(windows):
        fig.add_scatter(x=windows["window"], y=windows["size"], mode="lines", line=dict(color="#bbbbbb", width=1),
                        showlegend=False, hoverinfo="skip", row=1, col=1)
    for trigger, part in windows.groupby("trigger", sort=False):
        name = {"sync": "opened by a miss (sync)", "async": "opened at the marker page (async)"}.get(trigger, "window")
        fig.add_scatter(x=part["window"], y=part["size"], name=name, mode="markers",
                        marker=dict(size=10, color=colors.get(trigger, "#7f7f7f")),
                        customdata=part[["start", "async_size", "ms"]], row=1, col=1,
                    hovertemplate="window %{x}: %{y:,} pages from page %{customdata[0]:,} "
                                  "(async part %{customdata[1]:,}) at %{customdata[2]:.2f} ms<extra></extra>")
    if len(folios):
        fig.add_scatter(x=folios["index"].clip(lower=0.5), y=folios["order"], mode="markers", name="folio",
                        marker=dict(size=(folios["order"] + 4) * 2, color=folios["window"], colorscale="Viridis",
                                    showscale=False),
                        customdata=(folios["pages"] * page_size / 1024).to_frame().join(folios[["window"]]),
                        row=2, col=1,
                        hovertemplate="page %{x:,.0f}: order %{y} (%{customdata[0]:,.0f} KiB), "
                                      "window %{customdata[1]}<extra></extra>")
    fig.update_yaxes(type="log", title_text="pages (4 KiB each), log axis", row=1, col=1,
                     **(log_ticks(windows["size"]) if len(windows) else {}))
    fig.update_xaxes(title_text="window number", dtick=1 if len(windows) <= 20 else None, row=1, col=1)
    fig.update_yaxes(title_text="folio order (2^order pages)", dtick=1, row=2, col=1)
    last = float(folios["index"].max()) if len(folios) else 10.0
    fig.update_xaxes(type="log", title_text="first page of the folio (page index, 4 KiB pages; page 0 drawn at 0.5)",
                     row=2, col=1, **decade_ticks(1, max(last, 10)))
    fig.update_layout(title=title, height=680, legend_title="")
    return fig


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
        _reference_line(fig, device_bps / 2**20, f"device, uncached: {device_bps / 2**20:,.0f} MiB/s")
    top = max([float(frame["mib_per_s"].max())] + ([device_bps / 2**20] if device_bps else []))
    fig.update_layout(title=title, yaxis_title="throughput (MiB/s)", xaxis_title="measurement",
                      legend_title="verdict", yaxis=dict(rangemode="tozero", range=[0, top * 1.15]),
                      xaxis=dict(categoryorder="array", categoryarray=list(frame["label"])))
    return fig


# --- lesson 03 ----------------------------------------------------------------------------------

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


# --- lessons 04-05 ------------------------------------------------------------------------------

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


def _reference_line(fig: go.Figure, y: float, label: str) -> None:
    """A dashed horizontal line across the plot, named in the legend (an annotation on the line would
    sit on top of the dots near it)."""
    fig.add_hline(y=y, line_dash="dash", line_color="#555")
    fig.add_scatter(x=[None], y=[None], mode="lines", name=label, line=dict(dash="dash", color="#555"))


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
        _reference_line(fig, device_mib, f"device, uncached read: {device_mib:,.0f} MiB/s")
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
        _reference_line(fig, device_mib, f"device of the recorded sweep, uncached read: {device_mib:,.0f} MiB/s")
    xs = sorted(set(d[by]))
    xticks = dict(tickvals=xs, ticktext=[_size(v) if by == "transfer_size" else f"{int(v):,}" for v in xs])
    ys = pd.concat([d["bw_mib"].dropna(), pd.Series([device_mib] if device_mib else [], dtype=float)])
    yticks = _log_ticks_125(ys.min(), ys.max()) if len(ys) else {}
    fig.update_layout(title=title or f"IOR -F -C -e: bandwidth against {by.replace('_', ' ')}",
                      xaxis=dict(title=xtitle, type=xtype, **xticks),
                      yaxis=dict(title="bandwidth (MiB/s, log)", type="log", **yticks), legend_title="access")
    return fig


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
    """Median µs of each kind of removal (``iolab.labs.metadata_strace.removal_summary`` rows with a ``by``
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

# --- lesson 06 ----------------------------------------------------------------------------------

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
    """Seed 000's fio job through s3fs-fuse: every trial here as a point per configuration, its box
    marking the median and quartiles (:func:`trials`), and the seed's one figure per configuration as a
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
    for tr in fig.data:                  # the boxes: a legend entry saying what they are, once
        tr.legendgroup, tr.showlegend = "here", False
    if len(fig.data):
        fig.data[0].showlegend, fig.data[0].name = True, "here: every trial, box = median and quartiles"
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
                     ticktext=[_size(s) for s in sizes])
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
    here_rows = [f"here: {f} ({_size(n)})" for f, n in zip(df["file"], df["nbytes"])]
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


# --- class results / slurm ----------------------------------------------------------------------

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
    """Every measurement of the class as a point, one column per ``x`` (filesystem), a box behind.

    One trace per ``color`` value (student), so clicking a legend entry hides a student. Log axis by
    default: filesystems differ by factors. ``unit`` is the y-axis unit ("ops/s", "MiB/s").
    """
    fig = go.Figure()
    data = frame.dropna(subset=[value])
    order = list(dict.fromkeys(data[x]))
    fig.add_trace(go.Box(x=data[x], y=data[value], name="all students", boxpoints=False,
                         marker_color="lightgray", line_color="gray", showlegend=False, hoverinfo="skip"))
    for key, g in data.groupby(color, sort=True):
        fig.add_trace(go.Scatter(x=g[x], y=g[value], mode="markers", name=str(key), marker={"size": 9},
                                 text=_hover(g, hover), hovertemplate="%{x}: %{y:.4g} " + unit + "<br>%{text}"))
    fig.update_layout(title=title or f"{COLUMN_WORDS.get(value, value)} per {x}, every student", template="plotly_white",
                      xaxis_title=_words(x), legend_title=_words(color), boxmode="overlay",
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
        colorbar={"title": {"text": unit}, "tickvals": ticks, "ticktext": [_short(10 ** t) for t in ticks]}))
    fig.update_layout(title=title or f"median {_words(value)} ({unit}) per {_words(rows)} and {_words(cols)}",
                      template="plotly_white", xaxis_title=_words(cols), yaxis_title=_words(rows))
    fig.update_yaxes(autorange="reversed")
    return fig


# --- lesson 07 (Darshan) --------------------------------------------------------------------------

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
    """Every timed run (``iolab.labs.darshan.overhead``) as a dot, ms on a LOG axis, with a bar at each
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
    """POSIX write calls per case (``iolab.labs.darshan_mpiio.collective``): horizontal bars on a linear axis
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


# --- lesson 04, section 9: the page cache overflowing (IOR's tutorial "First Steps") ----------------

PHASE_COLORS = {"write": "#d62728", "read": "#1f77b4"}


def cache_overflow(frame: pd.DataFrame, title: str = "IOR in a memory cgroup: every trial, per file size") -> go.Figure:
    """The segment-count sweep (labs.ior_sweeps.cache_runs(...).frame): rate against file size, every trial a
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
