"""Lesson 09's sentences, each computed from the runs it is about (iolab.explain): counts first (bytes,
requests, files, jobs), times only through the one rule for repeated trials."""
from __future__ import annotations

from ...explain import Claim, beyond, expect, fact, greater, within
from ...units import format_size
from .experiments import Calls, Record, Workflow


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
