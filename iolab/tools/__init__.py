"""One module per tool: argv builders, run(), parse(text) -> list[dict] (a row per result), to_frame().

The rule has exceptions, each stated once, in :data:`PARSE_EXCEPTIONS` (what the module gives
instead, and why); tests/test_tool_contract.py holds every module here to the rule or to its entry.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..errors import ToolFailed
from ..runner import Run

#: The tool modules whose parser is not ``parse(text) -> list[dict[str, Any]]``: module -> (what its
#: ``parse`` returns, or None where it has no ``parse``; why).
PARSE_EXCEPTIONS: dict[str, tuple[Any, str]] = {
    "dd": (dict[str, Any], "dd copies once and prints one summary: parse(text) is that run's row; "
                           "parse_all(text) -> list[dict] reads a sweep's summaries one after the other"),
    "strace": (None, "two outputs, two parsers: parse_summary(text) -> Summary (the -c table, with its "
                     "total), parse_calls(lines) -> an iterator of dicts (a trace, read line by line, as "
                     "long as it is)"),
    "strace_calls": (None, "strace's per-call parser (parse_calls, parse_call_files), which "
                           "iolab.tools.strace gives under the same names"),
    "darshan": (None, "a Darshan log is binary, not text: read_log(path) -> Log"),
    "ceph": (None, "one parser per command's output: parse_layout, parse_rados_ls, parse_osdmap_object, "
                   "parse_osd_map, parse_perf, parse_sessions"),
    "snakemake": (None, "two outputs of one tool: its log (parse_log -> list[dict] of events, job_stats -> "
                        "its Job stats table) and its --dag dot text (parse_dot -> list[dict] of nodes and edges)"),
}


def first_line(pattern: re.Pattern[str], *texts: str) -> str | None:
    """The first line (stripped) of any of texts that matches pattern, or None: a tool's own error line."""
    for text in texts:
        for line in (text or "").splitlines():
            if pattern.search(line.strip()):
                return line.strip()
    return None


def rate_frame(records: Iterable[Mapping[str, Any]], bytes_per_s: str):
    """Records as a DataFrame with the rate in MB/s (10**6 bytes: dd's, fio's and the seeds' unit) and
    in MiB/s added, from the column ``bytes_per_s`` (bytes per second)."""
    import pandas as pd

    df = pd.DataFrame(list(records))
    if not df.empty:
        df["mb_per_s"] = df[bytes_per_s] / 1e6
        df["mib_per_s"] = df[bytes_per_s] / 2**20
    return df


def failure(tool: str, argv: Sequence[str], run: Run, line: str | None) -> ToolFailed:
    """The ToolFailed for a run that exited non-zero: its message is the tool's own error line when
    it printed one (``line``), its stderr and the tail of its stdout are kept (MPI tools print their
    errors on either)."""
    head = f"{tool} failed: {line}" if line else f"{tool} exited with status {run.returncode}"
    return ToolFailed(list(argv), run.returncode, "\n".join([run.stderr.strip(), run.stdout.strip()[-2000:]]).strip(),
                      message=head)


_STRING_TO_BYTES = re.compile(r"\s*(\d+)\s*([kmgtpKMGTP]?)(?:i?[bB])?\s*")


def string_to_bytes(value: str, tool: str, what: str) -> int:
    """A size or a count as IOR's ``string_to_bytes`` (option.c) reads it, for IOR and mdtest alike (mdtest
    reads its -n, -w, -I... with it): a whole number with an optional binary suffix k, m, g, t or p
    (``16m`` = 16 MiB; ``16MiB`` and ``16mb`` too: the letters after the suffix are not read there).
    ValueError for anything else, naming the ``tool`` and the option (``what``): IOR itself takes
    ``16x`` as 16, iolab refuses a size it cannot be sure of, as it could not reserve what the run
    writes."""
    m = _STRING_TO_BYTES.fullmatch(value)
    if not m:
        raise ValueError(f"{tool} {what} {value!r}: iolab cannot read this size or count, so cannot reserve what "
                         "the run writes; write it as a whole number, with k, m or g if you like")
    return int(m.group(1)) * 1024 ** " kmgtp".index(m.group(2).lower() or " ")


def short_options(tok: str, items: Sequence[str], i: int, takes_value: Collection[str], flags: Collection[str],
                  tool: str) -> tuple[list[tuple[str, str | None]], int]:
    """One item of short options as IOR's option parser reads it (IOR and mdtest share it): ``tok`` is
    ``-abc`` (flags), ``-bVALUE`` / ``-b=VALUE`` / ``-b`` with the next item (``items[i]``) as value, or a
    flag given a value (``-k=0``, the last letter before ``=``). Returns ((letter, value or None for a
    flag alone), ...) and the index of the item after it. ValueError for a letter in neither
    ``takes_value`` nor ``flags`` or an option without its value: what the run writes could not be
    counted."""
    body, eq, value = tok[1:].partition("=")
    out: list[tuple[str, str | None]] = []
    for j, c in enumerate(body):
        last = j == len(body) - 1
        if c in takes_value:
            if eq and last:
                pass
            elif not last:
                value = body[j + 1:]
            elif i < len(items):
                value, i = items[i], i + 1
            else:
                raise ValueError(f"{tool} option -{c} needs a value")
            out.append((c, value))
            break
        if c not in flags:
            raise ValueError(f"{tool} option -{c} (in {tok!r}): not one iolab knows, so what the run writes "
                             "could not be counted")
        out.append((c, value if eq and last else None))
    return out, i
