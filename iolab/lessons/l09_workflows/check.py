"""Lesson 09's exercise checks: each computes the right answer from the run the student has, and
names the slips students make (MiB for MB, HEADs for GETs, the index files left out...)."""
from __future__ import annotations

import math
from typing import Any

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


def check_slurm_puts(answer: object, run: Any) -> bool:
    """Exercise 09.4: how many times the result (all.vcf) was uploaded in the run on Slurm, by the
    store's own count of PUTs (``run.bytes['PUT']``; the logs say who: ``run.result_puts``)."""
    a = _number(answer, "the uploads of all.vcf")
    puts, who = run.bytes["PUT"], run.result_puts
    vcf = run.data.sizes.get("results/all.vcf")
    if puts is None:
        fail("this run has no store counters to check against.")
    if a == 1 and puts != 1:
        fail("1 is how many times call_variants wrote all.vcf: count the uploads the store received "
             "(its PUTs): the job uploaded it from its node, and the submit host uploaded it too.")
    if vcf and a == run.bytes["store received"]:
        fail(f"{a:,.0f} is the bytes the store received: the task asks how many uploads.")
    if a == len(run.frame) and a != puts:
        fail(f"{a:.0f} is the number of Slurm jobs, not of uploads.")
    if a == who["node jobs"] and a != puts:
        fail(f"{a:.0f} counts only the uploads from the jobs on the nodes: the submit host uploaded too.")
    if a != puts:
        fail(f"{a:.0f} is not what the store counted: look at run.bytes['PUT'].")
    return passed(f"Right: {puts} PUTs of all.vcf: {who['node jobs']} from the job on its node, "
                  f"{who['submit host']} from the submit host after it.")
