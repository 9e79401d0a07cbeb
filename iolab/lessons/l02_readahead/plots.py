"""Lesson 02 (readahead): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import STATE_COLORS, decade_ticks, log_ticks


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
