"""Lesson 04 (IOR's pitfalls): its explorers, ipywidgets controls that re-run a small measurement and update
its chart (each an :class:`iolab.widgets.Explorer`)."""
from __future__ import annotations

from ...widgets import Explorer
from ...tools import ior
from . import sweeps as ior_sweeps
from . import plots
from ... import recordings


def ior_sweep_explorer(version: str = "4.0.0"):
    """Pick which IOR parameter to vary (transfer size, tasks, segments) and its value.

    The chart shows the recorded sweep (real runs, see ``iolab.lessons.l04_ior.sweeps.sweep_frame``); when IOR and mpirun
    are here, choosing a value also runs that point live and adds it (ringed); without them the
    control picks among the recorded runs and says so.
    """
    import ipywidgets as w
    import plotly.graph_objects as go

    SWEEP_START = ior_sweeps.SWEEP_BASE
    recorded = ior_sweeps.sweep_frame(version)
    device_bps = ior_sweeps.sweep_device_bps(version)
    device_mib = device_bps / 2**20 if device_bps else None
    can_run = recordings.replay_reason(("ior", "mpirun"), strict=False) is None
    param = w.ToggleButtons(options=[("transfer size", "transfer_size"), ("tasks", "tasks"),
                                     ("segments", "segments")], value="transfer_size", description="vary")
    value = w.SelectionSlider(options=[0], description="value", continuous_update=False)
    status = w.Label()
    fig = go.FigureWidget(plots.ior_sweep(ior_sweeps.sweep_slice(recorded, "transfer_size"), "transfer_size",
                                                device_mib=device_mib))
    live_points: list = []

    def values_for(by: str) -> list:
        return sorted(set(ior_sweeps.sweep_slice(recorded, by)[by]))

    def redraw(by: str, highlight=None) -> None:
        part = ior_sweeps.sweep_slice(recorded, by)
        extra = [p for p in live_points if p["by"] == by]
        import pandas as pd
        if extra:
            part = pd.concat([part] + [p["frame"] for p in extra], ignore_index=True)
        new = plots.ior_sweep(part, by, highlight=highlight, device_mib=device_mib)
        with fig.batch_update():
            fig.data = []
            for trace in new.data:
                fig.add_trace(trace)
            fig.layout.update(new.layout)

    def on_param(change=None) -> None:
        opts = values_for(param.value)
        label = (lambda v: ior.ior_size(int(v))) if param.value == "transfer_size" else (lambda v: str(int(v)))
        busy[0] = True
        try:
            value.options = [(label(v), v) for v in opts]
            value.value = SWEEP_START.get(param.value, opts[len(opts) // 2])
        finally:
            busy[0] = False
        on_value()

    def on_value(change=None) -> None:
        if busy[0]:
            return
        by, v = param.value, value.value
        if can_run and change is not None:
            point = ior_sweeps.sweep_point(by, v)
            live_points.append({"by": by, "frame": point})
            status.value = f"ran IOR here for {by} = {v:,}: see the ringed point"
        else:
            status.value = (f"{by} = {v:,}: a recorded run (IOR {version}); "
                            + ("move the slider to run IOR here" if can_run else
                               "IOR is not installed here, so the control picks among recorded runs"))
        redraw(by, highlight=v)

    busy = [False]
    param.observe(on_param, names="value")
    value.observe(on_value, names="value")
    on_param()
    return Explorer(w.VBox([param, value, status, fig]), fig)
