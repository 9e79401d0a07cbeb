"""Snakemake (9.x): the argv of a run, and what its log says it did.

    rows = parse_log(text)      # one row per event: a job started or finished, a file fetched from
                                # storage, a local copy removed, a temporary file removed, an upload
    jobs = job_stats(text)      # the "Job stats" table: rule -> jobs planned

The lines read are Snakemake's own (``snakemake/jobs.py``, ``snakemake/storage.py``,
``snakemake/dag.py``), the same in every 9.x release seen here:
``Retrieving from storage: URL``, ``Storing in storage: URL``, ``Removing local copy of storage file:
URL (in storage)``, ``Removing temporary output PATH.``, ``localrule RULE:`` / ``rule RULE:`` with its
``jobid: N``, ``Finished jobid: N (Rule: RULE)`` and ``K of N steps (P%) done``.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import ParseError

_MAX_LINE = 100_000
_URL = r"(?P<url>[a-z0-9]{1,20}://\S{1,2000})"
_EVENTS = [
    ("retrieve", re.compile(rf"Retrieving from storage: {_URL}")),
    ("store", re.compile(rf"Storing in storage: {_URL}")),
    ("remove_local", re.compile(rf"Removing local copy of storage file: {_URL} \(in storage\)")),
    ("remove_temp", re.compile(r"Removing temporary output (?P<path>\S.{0,2000})\.")),
    ("finished", re.compile(r"Finished jobid: (?P<jobid>\d{1,9}) \(Rule: (?P<rule>[A-Za-z_][A-Za-z0-9_]{0,200})\)")),
    ("steps", re.compile(r"(?P<done>\d{1,9}) of (?P<total>\d{1,9}) steps \((?P<pct>\d{1,3})%\) done")),
]
_RULE = re.compile(r"(?:local)?(?:checkpoint|rule) (?P<rule>[A-Za-z_][A-Za-z0-9_]{0,200}):")
_JOBID = re.compile(r"    jobid: (?P<jobid>\d{1,9})")
_WILD = re.compile(r"    wildcards: (?P<w>.{0,2000})")
# lines only Snakemake writes: its banner, its unlock, its refusals to run
_OWN = ("Snakemake version: ", "Unlocking working directory", "Unlocked working directory", "IncompleteFilesException:", "LockException:",
        "Assuming unrestricted shared filesystem usage")
_STATS_ROW = re.compile(r"(?P<rule>[A-Za-z_][A-Za-z0-9_]{0,200}) +(?P<n>\d{1,9})")


def _lines(text: str, what: str) -> list[str]:
    if not isinstance(text, str):
        raise ParseError(f"{what} is text")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    elif lines:
        raise ParseError(f"{what} ends inside a line (no newline at the end)", line_no=len(lines),
                         line=lines[-1][:200])
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def parse_log(text: str) -> list[dict[str, Any]]:
    """The events of a Snakemake log, in order: ``event`` (start, finished, retrieve, store,
    remove_local, remove_temp, steps), ``rule``, ``jobid``, ``wildcards``, ``url`` (a storage object),
    ``path`` (a local file), ``done``/``total`` (steps), each None where it does not apply.

    A job's ``start`` row is written once its header (the indented lines after ``rule NAME:``) ends
    with a line of its own; a header the text ends inside is left out (the lines cut off may hold
    its wildcards). ParseError for a text that
    ends inside a line, a job header without its jobid, a step count beyond its total, and a text
    that is no Snakemake log at all (none of its lines)."""
    lines = _lines(text, "a Snakemake log")
    rows: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None      # a job's header, waiting for its jobid
    pending_no = 0
    seen = False

    def row(event: str, **kw: Any) -> dict[str, Any]:
        r = {"event": event, "rule": None, "jobid": None, "wildcards": None, "url": None, "path": None,
             "done": None, "total": None}
        r.update(kw)
        return r

    def close(no: int, line: str) -> None:
        nonlocal pending
        if pending is not None:
            if pending["jobid"] is None:
                raise ParseError(f"job of rule {pending['rule']} (line {pending_no}) has no jobid", line_no=no,
                                 line=line)
            rows.append(pending)
            pending = None

    for no, line in enumerate(lines, 1):
        if len(line) > _MAX_LINE:
            raise ParseError("a line too long for a Snakemake log", line_no=no, line=line[:200])
        if line.strip().startswith(_OWN) or line in ("Building DAG of jobs...", "Select jobs to execute..."):
            seen = True
        if pending is not None and line.startswith("    "):
            m = _JOBID.fullmatch(line)
            if m:
                if pending["jobid"] is not None:
                    raise ParseError("a job header with two jobids", line_no=no, line=line)
                pending["jobid"] = int(m.group("jobid"))
            w = _WILD.fullmatch(line)
            if w:
                pending["wildcards"] = w.group("w")
            continue
        close(no, line)
        m = _RULE.fullmatch(line)
        if m:
            pending, pending_no, seen = row("start", rule=m.group("rule")), no, True
            continue
        for event, pat in _EVENTS:
            m = pat.fullmatch(line)
            if not m:
                continue
            seen = True
            g = m.groupdict()
            if event == "steps":
                done, total = int(g["done"]), int(g["total"])
                if done > total:
                    raise ParseError("more steps done than the run has", line_no=no, line=line)
                rows.append(row(event, done=done, total=total))
            elif event == "finished":
                rows.append(row(event, rule=g["rule"], jobid=int(g["jobid"])))
            elif "url" in g:
                rows.append(row(event, url=g["url"]))
            else:
                rows.append(row(event, path=g["path"]))
            break
    # a header the text ends inside is not returned: its wildcards may be in the lines cut off
    if not seen:
        raise ParseError("no line of a Snakemake log in this text")
    return rows


def job_stats(text: str) -> dict[str, int]:
    """The "Job stats" table Snakemake prints before it runs (rule -> jobs; ``total`` included), of the
    first table in the text; {} when there is none (nothing to be done). ParseError for a table that
    is cut, whose total is not its sum, or that names a rule twice."""
    lines = _lines(text, "a Snakemake log")
    for no, line in enumerate(lines, 1):
        if line != "Job stats:":
            continue
        if no + 1 >= len(lines) or not lines[no].startswith("job ") or not set(lines[no + 1]) <= {"-", " "}:
            raise ParseError("a Job stats table without its header", line_no=no, line=line)
        out: dict[str, int] = {}
        for k in range(no + 2, len(lines)):
            m = _STATS_ROW.fullmatch(lines[k])
            if not m:
                raise ParseError("a Job stats row that is not 'rule count'", line_no=k + 1, line=lines[k])
            rule, n = m.group("rule"), int(m.group("n"))
            if rule in out:
                raise ParseError(f"rule {rule} twice in Job stats", line_no=k + 1, line=lines[k])
            out[rule] = n
            if rule == "total":
                if sum(v for r, v in out.items() if r != "total") != n:
                    raise ParseError("Job stats' total is not the sum of its rows", line_no=k + 1, line=lines[k])
                return out
        raise ParseError("the Job stats table ends without its total", line_no=len(lines))
    return {}


_DOT_NODE = re.compile(r'\s{0,16}(?P<id>\d{1,9})\[label = "(?P<label>(?:[^"\\]|\\.){0,2000})"(?:, [^\[\]]{0,2000})?\];?')
_DOT_EDGE = re.compile(r"\s{0,16}(?P<src>\d{1,9}) -> (?P<dst>\d{1,9});?")
_DOT_OTHER = re.compile(r"\s{0,16}(?:digraph [A-Za-z_][A-Za-z0-9_]{0,100} \{|(?:graph|node|edge)\[[^\[\]]{0,2000}\];?|\})")


def parse_dot(text: str) -> list[dict[str, Any]]:
    """Snakemake's ``--dag`` (or ``--rulegraph``) output: one row per node (``kind`` "node", ``id``,
    ``rule``, ``label``: the rule and its wildcards, e.g. ``map_reads\\nsample: A``) and per edge
    (``kind`` "edge", ``src``, ``dst``: the job that must finish first, and the one that waits).

    ParseError for a line that is none of Snakemake's dot lines, an edge to a node never declared,
    a node declared twice, a text cut inside a line, or no graph at all."""
    lines = _lines(text, "Snakemake's dot output")
    rows: list[dict[str, Any]] = []
    nodes: set[int] = set()
    opened = closed = False
    for no, raw in enumerate(lines, 1):
        if len(raw) > 4000:
            raise ParseError("a line too long for Snakemake's dot output", line_no=no, line=raw[:200])
        line = raw.rstrip(" \t")
        if not line.strip():
            continue
        if closed:
            raise ParseError("text after the graph's closing brace", line_no=no, line=line)
        m = _DOT_NODE.fullmatch(line)
        if m and opened:
            i = int(m.group("id"))
            if i in nodes:
                raise ParseError(f"node {i} declared twice", line_no=no, line=line)
            nodes.add(i)
            label = m.group("label").replace("\\n", "\n").replace('\\"', '"')
            rows.append({"kind": "node", "id": i, "rule": label.split("\n")[0], "label": label,
                         "src": None, "dst": None})
            continue
        m = _DOT_EDGE.fullmatch(line)
        if m and opened:
            src, dst = int(m.group("src")), int(m.group("dst"))
            if src not in nodes or dst not in nodes:
                raise ParseError("an edge to a node not declared before it", line_no=no, line=line)
            rows.append({"kind": "edge", "id": None, "rule": None, "label": None, "src": src, "dst": dst})
            continue
        if _DOT_OTHER.fullmatch(line):
            if line.strip().startswith("digraph"):
                if opened:
                    raise ParseError("a second graph in one output", line_no=no, line=line)
                opened = True
            elif line.strip() == "}":
                if not opened:
                    raise ParseError("a closing brace before the graph", line_no=no, line=line)
                closed = True
            elif not opened:
                raise ParseError("a graph attribute before the graph", line_no=no, line=line)
            continue
        raise ParseError("not a line of Snakemake's dot output", line_no=no, line=line)
    if not opened or not closed:
        raise ParseError("no complete digraph in this text (cut, or not snakemake --dag)")
    return rows
