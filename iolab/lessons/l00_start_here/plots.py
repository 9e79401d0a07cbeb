"""Lesson 00 (start here): its charts: each builder takes a DataFrame and returns a go.Figure;
the notebook shows it
(what every lesson shares is in :mod:`iolab.plot`)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from ...plot import STATE_COLORS
from ...units import format_size


def repeat_reads(frame: pd.DataFrame, title: str = "The same file, read again and again") -> go.Figure:
    """Throughput of each read of one file (from first_look.repeat_reads), cold first then warm."""
    fig = go.Figure()
    for state, part in frame.groupby("state", sort=False):
        stored = (part["from_storage"].map(lambda b: "no witness (no block device)" if pd.isna(b) else format_size(b))
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
