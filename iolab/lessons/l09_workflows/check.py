"""Lesson 09's exercise checks: each computes the right answer from the run the student has, and
names the slips students make (MiB for MB, HEADs for GETs, the index files left out...)."""
from __future__ import annotations

import math

from ...check import close_to, fail, given, passed
from .data import INDEX_EXTS
from .experiments import Workflow


def _number(answer: object, what: str) -> float:
    given(answer, what, "a number computed from the run's counters")
    if not isinstance(answer, (int, float)) or isinstance(answer, bool) or math.isnan(answer):
        fail(f"{what} should be a number, got {answer!r}.")
    return float(answer)


def check_fetched_mb(answer: object, run: Workflow) -> bool:
    """Exercise 09.1: the megabytes (10^6 bytes) the store sent to the workflow run."""
    a = _number(answer, "the MB fetched")
    sent = run.moved.sent
    objects = run.data["objects"]
    no_index = sum(v for k, v in objects.items() if not k.endswith(tuple(INDEX_EXTS) + (".fai",)))
    if math.isclose(a, no_index / 1e6, rel_tol=0.005) and not math.isclose(a, sent / 1e6, rel_tol=0.005):
        fail(f"{a:,.4g} MB is the genome and the reads alone: bwa also fetched its index (.amb .ann .bwt .pac .sa) "
             "and bcftools the .fai, and the store counted those bytes too.")
    if math.isclose(a, (sent + run.moved.received) / 1e6, rel_tol=0.005):
        fail(f"{a:,.4g} MB adds what the store received (the upload of all.vcf): the task asks what it sent.")
    if math.isclose(a, sent, rel_tol=0.005):
        fail(f"{a:,.4g} is the number of bytes: the task asks for megabytes (divide by 10**6).")
    close_to(a, sent / 1e6, rel=0.005, what="the MB fetched")
    return passed(f"Right: the store sent {sent:,} bytes = {sent / 1e6:.2f} MB, every input object once.")


def check_gets(answer: object, run: Workflow) -> bool:
    """Exercise 09.2: the GET requests that sent an object during the run."""
    a = _number(answer, "the GETs")
    m = run.moved
    if a == m.heads:
        fail(f"{a:.0f} are the HEADs (requests that asked whether an object is there, and its size), not GETs.")
    if a == m.gets + m.heads:
        fail(f"{a:.0f} is every request SeaweedFS labelled GET: it counts a HEAD as a GET. The GETs that sent an "
             "object are the ones its time-to-first-byte histogram counted (Moved.gets).")
    if a == m.requests:
        fail(f"{a:.0f} is every request of the run (LIST and PUT too).")
    if a != m.gets:
        fail(f"{a:.0f} is not what the store counted: look at the run's moved.gets (the objects fetched; "
             f"Snakemake's log has one 'Retrieving from storage' line for each).")
    return passed(f"Right: {m.gets} GETs sent an object, against {m.heads} HEADs.")


def check_redone(answer: object, run: Workflow) -> bool:
    """Exercise 09.3: the jobs the re-run that finished ran, after the kill."""
    a = _number(answer, "the jobs re-run")
    last = run.steps["label"].iloc[-1]
    redone = int((run.jobs["step"] == last).sum())
    planned = int(run.planned.get("total", 0))
    if a == planned and a != redone:
        fail(f"{a:.0f} is every job of the workflow (its Job stats): the re-run skipped the ones whose output "
             "was already there.")
    if a == len(run.jobs) and a != redone:
        fail(f"{a:.0f} counts the jobs of every step, the killed run's too: count only the last step's.")
    if a != redone:
        fail(f"{a:.0f} is not the number of jobs the last step started (rows of run.jobs whose step is {last!r}).")
    return passed(f"Right: {redone} of {planned} jobs ran again; the rest was kept.")
