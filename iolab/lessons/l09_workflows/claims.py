"""Lesson 09's sentences, each computed from the runs it is about (iolab.explain): counts first (bytes,
requests, files, jobs), times only through the one rule for repeated trials."""
from __future__ import annotations

from ...explain import Claim, beyond, expect, fact, greater, within
from ...units import format_size
from .experiments import Calls, Partial, Record, Workflow


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def staging_claims(before: Record, c1: Workflow, *, show: bool = True) -> list[Claim]:
    """The seed's "before" against the workflow at -c 1: the same bytes, a different scratch."""
    return [
        expect("both ways fetch every input object from the store exactly once (the same payload bytes)",
               within("workflow", c1.moved.sent, "before", before.moved.sent, rel=0.0),
               yes=lambda e: f"{_mb(e['before'])} either way, by the store's own counter",
               no=lambda e: f"the store sent {_mb(e['workflow'])} to the workflow and {_mb(e['before'])} to the "
                            "copy by hand", why="a retry, or a job whose output was already there", show=show),
        expect("the copy by hand needs more scratch at its peak than the workflow at -c 1",
               greater("before", before.peak, "workflow", c1.peak),
               yes=lambda e: f"{_mb(e['before'])} against {_mb(e['workflow'])}: the workflow holds one sample's "
                             "reads and BAMs at a time, the copy all of them",
               no=lambda e: f"{_mb(e['before'])} against {_mb(e['workflow'])}",
               why="a sample so small that the genome and its index dominate", show=show),
        expect("the copy by hand leaves far more on scratch than the workflow (ten times or more)",
               greater("before", before.left_bytes, "workflow", c1.left_bytes, by=10),
               yes=lambda e: f"{_mb(e['before'])} left against {format_size(e['workflow'])} "
                             "(the workflow's logs and .snakemake metadata)",
               no=lambda e: f"{_mb(e['before'])} left against {_mb(e['workflow'])}", show=show),
        expect("the workflow asks the store many more questions than the copy (five times the requests or more)",
               greater("workflow", c1.moved.requests, "before", before.moved.requests, by=5),
               yes=lambda e: f"{e['workflow']:.0f} requests against {e['before']:.0f}",
               no=lambda e: f"{e['workflow']:.0f} requests against {e['before']:.0f}", show=show),
    ]


def cores_claims(c1: Workflow, c3: Workflow, *, show: bool = True) -> list[Claim]:
    """-c 1 against -c 3: scratch, HEADs (counted), and wall time (one run each: the rule decides)."""
    return [
        expect("-c 3 needs more scratch at its peak than -c 1 (three samples at once)",
               greater("-c 3", c3.peak, "-c 1", c1.peak),
               yes=lambda e: f"{_mb(e['-c 3'])} against {_mb(e['-c 1'])}",
               no=lambda e: f"{_mb(e['-c 3'])} against {_mb(e['-c 1'])}",
               why="on a loaded machine the three map jobs may not overlap", show=show),
        expect("-c 1 sends more HEAD requests than -c 3 (its waiting jobs are re-checked every round)",
               greater("-c 1", c1.moved.heads, "-c 3", c3.moved.heads),
               yes=lambda e: f"{e['-c 1']:.0f} against {e['-c 3']:.0f}, for {c1.moved.gets} and {c3.moved.gets} "
                             "GETs that fetched an object",
               no=lambda e: f"{e['-c 1']:.0f} against {e['-c 3']:.0f}", show=show),
        expect("-c 3 finishes sooner than -c 1",
               beyond("-c 3", [c3.seconds], "-c 1", [c1.seconds], higher=False, unit="s"),
               close="one run of each on 2 shared cores cannot separate them; benchmarks/bench_workflows.py "
                     "repeats them interleaved", show=show),
    ]


def resume_claims(r: Workflow, *, show: bool = True) -> list[Claim]:
    """What the re-run after a kill redid and fetched, against the whole workflow."""
    last = r.steps["label"].iloc[-1]
    redone = int((r.jobs["step"] == last).sum())
    planned = int(r.planned.get("total", 0))
    fetched = r.fetched_bytes(last)
    total = sum(r.data["objects"].values())
    return [
        expect("the re-run that finishes runs fewer jobs than the whole workflow",
               greater("planned", planned, "re-run", redone),
               yes=lambda e: f"{redone} of {planned} jobs", no=lambda e: f"{redone} of {planned} jobs", show=show),
        expect("the re-run fetches less than the whole input (local copies left by the killed run are reused)",
               greater("input", total, "fetched", fetched),
               yes=lambda e: f"{fetched:,} of {total:,} bytes", no=lambda e: f"{fetched:,} of {total:,} bytes",
               why="a run killed before it fetched, or local copies removed", show=show),
    ]


def interrupt_claims(kill: Workflow, interrupt: Workflow, *, show: bool = True) -> list[Claim]:
    """SIGKILL against SIGINT: the lock, and what the run that finished had to fetch again."""
    def needed(r: Workflow) -> bool:
        return bool((r.steps["label"] == "--unlock").any())

    def refetched(r: Workflow) -> int:
        return r.fetched_bytes(r.steps["label"].iloc[-1])
    k, i = refetched(kill), refetched(interrupt)
    return [
        expect("after SIGKILL the directory stays locked: --unlock was needed", fact("unlock after KILL", needed(kill)),
               show=show),
        expect("after SIGINT Snakemake released its lock itself: no --unlock was needed",
               fact("no unlock after INT", not needed(interrupt)), show=show),
        expect("the re-run after SIGINT fetches more than the one after SIGKILL (Snakemake's own clean-up "
               "removed the local copies a kill leaves behind)",
               greater("after INT", i, "after KILL", k),
               yes=lambda e: f"{i:,} bytes against {k:,}", no=lambda e: f"{i:,} bytes against {k:,}",
               why="an interrupt that came before any copy was fetched", show=show),
    ]


def calls_claims(calls: Calls, *, show: bool = True) -> list[Claim]:
    return [
        expect("most calls sit where wgsim put a mutation (at least twice as many as elsewhere)",
               greater("at true positions", calls.called_true, "elsewhere", calls.false_calls, by=2),
               yes=lambda e: f"{calls.called_true:,} of {calls.calls:,} calls, of {calls.true_positions:,} mutated "
                             "positions",
               no=lambda e: f"{calls.called_true:,} of {calls.calls:,} calls", show=show),
    ]


def partial_claims(p: Partial, *, show: bool = True) -> list[Claim]:
    """Staging against streaming for a job that reads the start of one object: bytes, scratch, the block."""
    st, dflt, small = p.way("stage"), p.way("default block"), p.way("small block")
    size, read = int(st["object"]), int(small["read"])
    excess = int(small["sent"]) - read
    return [
        expect("staging fetches the whole object for a job that reads a part of it",
               within("store sent", st["sent"], "object", size, rel=0.0),
               yes=lambda e: f"{_mb(size)} sent for {_mb(int(st['records']))} of reads the job used "
                             f"({int(st['records']) / size:.1%}), and {_mb(int(st['scratch_peak']))} on scratch",
               no=lambda e: f"{_mb(e['store sent'])} sent of a {_mb(size)} object", show=show),
        expect("streaming at s3fs's default block size fetches no less than staging (its block is larger than the object)",
               within("default block", dflt["sent"], "staged", st["sent"], rel=0.0),
               yes=lambda e: f"block {format_size(int(dflt['block_size']))} against an object of {_mb(size)}: "
                             f"{_mb(e['default block'])} sent, but nothing written to scratch",
               no=lambda e: f"{_mb(e['default block'])} against {_mb(e['staged'])}",
               why="an object larger than the block", show=show),
        expect("with a 64 KiB block the store sends what the reader read plus less than one block",
               fact("read <= sent < read + block", read <= int(small["sent"]) < read + int(small["block_size"])),
               yes=f"{int(small['sent']):,} bytes sent for {read:,} read: {excess:,} more, under the block of "
                   f"{int(small['block_size']):,} ({int(small['gets'])} ranged GETs); "
                   f"{int(st['sent']) / int(small['sent']):.0f} times less than staging",
               no=f"{int(small['sent']):,} bytes sent for {read:,} read (block {int(small['block_size']):,})",
               show=show),
    ]


def where_table(runs: dict[str, Record]):
    """The lesson's runs side by side in counted facts: bytes from the store, the scratch peak, what is
    left on scratch afterwards, the store's requests."""
    import pandas as pd

    rows = {}
    for name, r in runs.items():
        assert r.moved is not None
        if isinstance(r, Partial):
            for way in ("stage", "small block"):
                w = r.way(way)
                rows[f"{name}: {way}"] = {"from store (MB)": w["sent"] / 1e6, "scratch peak (MB)": w["scratch_peak"] / 1e6,
                                          "left on scratch (MB)": w["left"] / 1e6, "requests": int(w["requests"])}
            continue
        rows[name] = {"from store (MB)": r.moved.sent / 1e6, "scratch peak (MB)": r.peak / 1e6,
                      "left on scratch (MB)": r.left_bytes / 1e6, "requests": r.moved.requests}
    return pd.DataFrame(rows).T.round(3).astype({"requests": int})


def where_claims(table, *, show: bool = True) -> list[Claim]:
    """What the table says about where inputs, intermediates and results belong, each from its rows."""
    t = table
    staged = [k for k in t.index if k.startswith("before") or k.startswith("Slurm")]
    flows = [k for k in t.index if k.startswith("-c ")]
    stream = [k for k in t.index if k.endswith("small block")]
    left_staged = min(t.loc[k, "left on scratch (MB)"] for k in staged)
    left_flow = max(t.loc[k, "left on scratch (MB)"] for k in flows)
    out = [
        expect("inputs staged by hand stay on scratch: every staged run leaves at least ten times what a workflow leaves",
               greater("staged, least left", left_staged, "workflow, most left", left_flow, by=10),
               yes=lambda e: f"{e['staged, least left']:.2f} MB against {e['workflow, most left']:.3f} MB: "
                             "scratch holds intermediates only while a job runs if a tool removes them",
               no=lambda e: f"{e['staged, least left']:.2f} MB against {e['workflow, most left']:.3f} MB",
               show=show),
        expect("the workflow reads every input from the store as the copy does: the store can be the inputs' home",
               within("workflow", t.loc[flows[0], "from store (MB)"], "before", t.loc[staged[0], "from store (MB)"],
                      rel=0.0),
               yes=lambda e: f"{e['workflow']:.2f} MB either way, and scratch afterwards keeps none of it",
               no=lambda e: f"{e['workflow']:.2f} MB against {e['before']:.2f} MB", show=show),
    ]
    if stream:
        s = stream[0]
        out.append(expect("a job that reads a part of an input needs no scratch for it when it streams",
                          fact("no scratch", t.loc[s, "scratch peak (MB)"] == 0),
                          yes=f"scratch peak {t.loc[s, 'scratch peak (MB)']:.0f} MB, {t.loc[s, 'from store (MB)']:.3f} MB "
                              f"from the store in {int(t.loc[s, 'requests'])} requests",
                          no=f"scratch peak {t.loc[s, 'scratch peak (MB)']:.2f} MB", show=show))
    return out
