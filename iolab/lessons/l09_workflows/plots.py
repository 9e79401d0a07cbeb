"""Lesson 09's charts: DataFrames (or a run) in, plotly figures out, never shown here."""
from __future__ import annotations

import math
from collections.abc import Mapping

import plotly.graph_objects as go

from ...plot import log_ticks
from ...widgets import Explorer
from .experiments import Record, Workflow

COLORS = {"before": "#7f7f7f", "-c 1": "#1f77b4", "-c 3": "#ff7f0e", "resume": "#2ca02c"}
RULE_COLORS = {"map_reads": "#1f77b4", "sort_alignments": "#ff7f0e", "samtools_index": "#2ca02c",
               "call_variants": "#d62728", "all": "#7f7f7f"}


def _job_name(row) -> str:
    return f"{row['rule']} {row['sample']}" if isinstance(row["sample"], str) else row["rule"]


def bytes_per_job(run: Workflow, *, title: str = "What each job fetched from the store, in the order they ran") -> go.Figure:
    j = run.jobs.reset_index(drop=True)
    names = [f"{i + 1}. {_job_name(r)}" for i, r in j.iterrows()]
    fig = go.Figure(go.Bar(x=names, y=j["bytes"] / 1e6, marker_color=[RULE_COLORS.get(r, "#999") for r in j["rule"]],
                           text=[f"{n} object{'s' if n != 1 else ''}" for n in j["objects"]], textposition="outside",
                           hovertemplate="%{x}: %{y:.3f} MB<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="job (in the order Snakemake started them)",
                      yaxis_title="fetched from the store (MB)", height=380, margin=dict(t=60, b=120))
    return fig


def scratch_over_time(runs: Mapping[str, Record], *, title: str = "Bytes on scratch while each run ran") -> go.Figure:
    fig = go.Figure()
    for label, r in runs.items():
        s = r.samples
        fig.add_trace(go.Scatter(x=s["t"], y=s["scratch"] / 1e6, mode="lines", name=label,
                                 line=dict(color=COLORS.get(label)),
                                 hovertemplate=f"{label}: %{{y:.1f}} MB at %{{x:.1f}} s<extra></extra>"))
    fig.update_layout(title=title, xaxis_title="time since the run started (s)", yaxis_title="bytes in scratch (MB)",
                      height=360, legend_title="run")
    return fig


def requests_chart(runs: Mapping[str, Record], *, title: str = "Requests the store counted, per run") -> go.Figure:
    kinds = [("gets", "GET (sent an object)"), ("heads", "HEAD"), ("lists", "LIST"), ("puts", "PUT")]
    fig = go.Figure()
    values = []
    for key, name in kinds:
        ys = [getattr(r.moved, key) for r in runs.values()]
        values += [v for v in ys if v > 0]
        fig.add_trace(go.Bar(x=list(runs), y=[max(v, 0.8) if v else None for v in ys], name=name,
                             text=[f"{v:,}" for v in ys], textposition="outside",
                             hovertemplate=f"{name}: %{{text}}<extra></extra>"))
    fig.update_layout(title=title, barmode="group", xaxis_title="run", yaxis_title="requests (log)",
                      height=380, legend_title="request")
    fig.update_yaxes(type="log", **log_ticks(values or [1, 10]))
    top = max(values or [10])
    fig.update_yaxes(range=[math.log10(0.7), math.log10(top * 3)])     # room for the labels above the bars
    return fig


def dag_figure(rows: list[dict], *, title: str = "The workflow's jobs (snakemake --dag): an arrow runs from a job to one that needs its output") -> go.Figure:
    """The DAG from :func:`iolab.tools.snakemake.parse_dot`, drawn in layers: a job one layer right of
    the last job it waits for."""
    nodes = {r["id"]: r for r in rows if r["kind"] == "node"}
    edges = [(r["src"], r["dst"]) for r in rows if r["kind"] == "edge"]
    layer: dict[int, int] = {}

    def depth(n: int, seen: frozenset = frozenset()) -> int:
        if n in layer:
            return layer[n]
        before = [s for s, d in edges if d == n and s not in seen]
        layer[n] = 1 + max((depth(s, seen | {n}) for s in before), default=-1)
        return layer[n]
    for n in nodes:
        depth(n)
    rows_in: dict[int, list[int]] = {}
    for n in sorted(nodes, key=lambda n: nodes[n]["label"]):
        rows_in.setdefault(layer[n], []).append(n)
    pos = {}
    for lyr, ns in rows_in.items():
        for i, n in enumerate(ns):
            pos[n] = (lyr, -(i - (len(ns) - 1) / 2))
    fig = go.Figure()
    for s, d in edges:
        (x0, y0), (x1, y1) = pos[s], pos[d]
        fig.add_annotation(x=x1 - 0.18, y=y1, ax=x0 + 0.18, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                           showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor="#888", text="")
    for rule in dict.fromkeys(nodes[n]["rule"] for n in nodes):
        ns = [n for n in nodes if nodes[n]["rule"] == rule]
        fig.add_trace(go.Scatter(x=[pos[n][0] for n in ns], y=[pos[n][1] for n in ns], mode="markers+text",
                                 name=rule, marker=dict(size=26, symbol="square", color=RULE_COLORS.get(rule, "#999")),
                                 text=[nodes[n]["label"].replace("\n", "<br>").replace("sample: ", "") for n in ns],
                                 textposition="bottom center", hoverinfo="text"))
    fig.update_layout(title=title, height=420, showlegend=True, legend_title="rule",
                      xaxis=dict(title="step (a job runs after every job to its left that points to it)",
                                 showgrid=False, zeroline=False, tickvals=sorted(rows_in),
                                 ticktext=[str(t + 1) for t in sorted(rows_in)]),
                      yaxis=dict(title="", showgrid=False, zeroline=False, showticklabels=False,
                                 range=[min(p[1] for p in pos.values()) - 1, max(p[1] for p in pos.values()) + 0.8]))
    return fig


def jobs_explorer(runs: Mapping[str, Workflow]):
    """Pick a run; the bar chart of what each of its jobs fetched follows."""
    import ipywidgets as w

    names = list(runs)
    pick = w.ToggleButtons(options=names, value=names[0], description="run")
    fig = go.FigureWidget(bytes_per_job(runs[names[0]]))
    note = w.HTML()

    def update(change=None):
        r = runs[pick.value]
        new = bytes_per_job(r)
        with fig.batch_update():
            fig.data[0].x, fig.data[0].y = new.data[0].x, new.data[0].y
            fig.data[0].text, fig.data[0].marker.color = new.data[0].text, new.data[0].marker.color
        note.value = (f"<b>{pick.value}</b>: {len(r.jobs)} jobs, {int(r.jobs['objects'].sum())} objects fetched, "
                      f"{r.fetched_bytes() / 1e6:.2f} MB by Snakemake's log; the store counted {r.moved.sent / 1e6:.2f} MB")

    pick.observe(update, names="value")
    update()
    return Explorer(w.VBox([pick, fig, note]), fig)
