"""Snakemake's log and --dag parsers (iolab.tools.snakemake) on the logs lesson 09 recorded, and on
bad input."""
from __future__ import annotations

import json

import pytest

from iolab import ParseError, recordings
from iolab.tools import snakemake as smk


def _step(name: str, i: int = 0) -> dict:
    return json.loads(recordings.load(f"workflows/{name}").text)["steps"][i]


def test_log_of_c1():
    rows = smk.parse_log(_step("snakemake-c1")["stderr"])
    ev = [r["event"] for r in rows]
    assert ev.count("start") == 11 and ev.count("finished") == 11 and ev.count("retrieve") == 10
    assert ev.count("store") == 1 and ev.count("remove_temp") == 9
    steps = [r for r in rows if r["event"] == "steps"]
    assert [s["done"] for s in steps] == list(range(1, 12)) and {s["total"] for s in steps} == {11}
    starts = [r for r in rows if r["event"] == "start"]
    assert {r["wildcards"] for r in starts if r["rule"] == "map_reads"} == {"sample=A", "sample=B", "sample=C"}
    assert {r["jobid"] for r in starts} == set(range(11))
    assert smk.job_stats(_step("snakemake-c1")["stderr"])["total"] == 11


def test_refusals_and_unlock_are_logs_too():
    assert smk.parse_log(_step("resume-kill", 3)["stderr"]) == []           # "Unlocked working directory."
    assert smk.job_stats(_step("resume-kill", 1)["stderr"]) == {}


@pytest.mark.parametrize("text", [
    "localrule map_reads:\n    input: x\nBuilding DAG of jobs...\n",          # a header without jobid
    "Building DAG of jobs...\n3 of 2 steps (150%) done\n",
    "Building DAG of jobs...\nRetrieving from storage: s3://b/k",            # cut
    "hello\nworld\n",
])
def test_bad_logs(text):
    with pytest.raises(ParseError):
        smk.parse_log(text)


def test_a_header_cut_off_is_left_out():
    text = "Building DAG of jobs...\nlocalrule map_reads:\n    jobid: 3\n"
    assert [r["event"] for r in smk.parse_log(text)] == []


def test_job_stats_refuses_a_wrong_total():
    text = "Job stats:\njob      count\n-----  -----\nmap    3\ntotal  4\n"
    with pytest.raises(ParseError, match="sum"):
        smk.job_stats(text)


def test_dot_refusals():
    good = 'digraph snakemake_dag {\n\t0[label = "all", color = "0.00 0.6 0.85", style="rounded"];\n}\n'
    assert smk.parse_dot(good)[0]["rule"] == "all"
    for bad in (good.replace("}\n", ""), good + "digraph x {\n}\n", good.replace("\t0[", "\t0 -> 1\n\t0["),
                "digraph snakemake_dag {\n\tnonsense\n}\n"):
        with pytest.raises(ParseError):
            smk.parse_dot(bad)
