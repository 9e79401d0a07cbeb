"""Lesson 03 (strace: the system calls): its explorers, ipywidgets controls that re-run a small measurement and update
its chart (each an :class:`iolab.widgets.Explorer`)."""
from __future__ import annotations

from ...widgets import Explorer
from ...units import format_size
from . import plots
from . import syscalls


STRACE_READ_SIZES = (1, 16, 256, 4096, 65536, 1 << 20, 10 << 20)


def read_calls_explorer(path, sizes=STRACE_READ_SIZES, recording_prefix: str | None = "strace/sweep-read-"):
    """A read-size slider: each move counts the read(2) calls on ``path`` under strace
    (``strace -c -e trace=read -P path``) and adds the point to a log-log chart next to the
    prediction ceil(N/n) + 1. Without strace it replays ``<recording_prefix><n>`` when one exists."""
    import os

    import ipywidgets as w
    import pandas as pd
    import plotly.graph_objects as go

    n_file = os.path.getsize(path)
    seen: dict[int, int] = {}
    slider = w.SelectionSlider(options=[(format_size(s), s) for s in sizes], value=4096,
                               description="read size", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots.syscall_counts_vs_read_size(
        pd.DataFrame({"read_size": list(sizes), "calls": [None] * len(sizes)}), file_size=n_file))

    def update(change=None):
        n = slider.value
        rec = f"{recording_prefix}{n}" if recording_prefix else None
        calls = syscalls.count_reads(path, n, recording=rec)
        seen[n] = calls
        xs = sorted(seen)
        with fig.batch_update():
            fig.data[1].x, fig.data[1].y = xs, [seen[x] for x in xs]
        predicted = syscalls.expected_reads(n_file, n)
        status.value = (f"{format_size(n)} per read: {calls:,} read(2) calls measured, {predicted:,} predicted "
                        f"(ceil({n_file:,} / {n:,}) + 1)")

    slider.observe(update, names="value")
    update()
    return Explorer(w.VBox([slider, status, fig]), fig)
