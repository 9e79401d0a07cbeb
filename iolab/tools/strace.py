"""strace: count and trace the system calls of a command, and parse what strace writes.

Data flows one way, as everywhere in iolab::

    count_argv(...) / trace_argv(...)   build the strace command (argv list, output to a file)
    run(...)                            run it in the workspace -> Run (stdout = the -o file's text)
    parse_summary(text)                 the ``-c`` / ``-C`` table -> list of rows (+ .total)
    parse_calls(lines)                  a trace (any of -f -t/-tt/-ttt/-r -T -y) -> one dict per completed syscall
    parse_call_files(prefix)            the files of -ff -o PREFIX, each with the pid of its name
    summary_frame(rows) / calls_frame(calls)   -> a tidy DataFrame

(Lesson 03 runs them, live or replayed, with ``iolab.lessons.l03_strace.syscalls.count`` and ``trace``.)

The trace always goes to a file (``-o FILE``), never into the traced program's own output.

Layouts handled by :func:`parse_summary` (strace 4.x to 6.x): the classic six columns
``% time  seconds  usecs/call  calls  errors  syscall``; blank ``errors`` cells (strace prints
nothing for 0); the blank ``usecs/call`` of the 4.x ``total`` row; ``-w`` (same columns, wall
time); ``-C`` (the table after the trace); ``-U`` custom columns (``shortest``, ``longest``,
any order, ``syscall`` first or last) and per-personality tables
(``System call usage summary for 32 bit mode:``).

The per-call trace parser (:func:`parse_calls`, :func:`calls_frame`) is in
:mod:`iolab.tools.strace_calls`; it is used from here under the same names.
"""
from __future__ import annotations

import functools
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run, install_hint
from .. import runner
from .strace_calls import CALL_KEYS, calls_frame, parse_call_files, parse_calls  # noqa: F401  (strace's public names)
from .strace_calls import PERSONALITY_RE, SUMMARY_TITLES, summary_header

TOOL = "strace"

# ------------------------------------------------------------------------------------------------
# version and features
# ------------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"version\s+(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?(?![\d.])")


def parse_version(text: str) -> tuple[int, ...]:
    """``"strace -- version 6.1"`` -> ``(6, 1)``; also the 4.x/5.x spellings."""
    found = list(_VERSION_RE.finditer(text[:100_000]))
    if not found:
        raise ParseError("no version number in strace -V output", line_no=1,
                         line=text.splitlines()[0] if text else "")
    if len(found) > 1:
        no = text.count("\n", 0, found[1].start()) + 1
        raise ParseError("two version numbers: two outputs one after the other?", line_no=no,
                         line=text.splitlines()[no - 1])
    m = found[0]
    return tuple(int(g) for g in m.groups() if g is not None)


def version() -> tuple[int, ...] | None:
    """The installed strace's version, e.g. ``(6, 1)``; None when strace is not installed."""
    line = runner.tool_version(TOOL)
    if line is None:
        return None
    return parse_version(line)


@functools.lru_cache(maxsize=None)
def _help_text() -> str:
    if shutil.which(TOOL) is None:
        return ""
    r = runner.run([TOOL, "-h"], timeout=10, check=False)
    return r.stdout + r.stderr


def supports(option: str) -> bool:
    """Whether the installed strace lists ``option`` (e.g. ``"-U"``, ``"--seccomp-bpf"``) in its help.

    Asking the tool is more honest than a table of version numbers: distributions backport.
    """
    return re.search(rf"(^|[\s\[,]){re.escape(option)}\b", _help_text()) is not None


def require() -> str:
    """Path of strace, or ToolMissing with how to install it."""
    path = shutil.which(TOOL)
    if path is None:
        raise ToolMissing(TOOL, install_hint(TOOL))
    return path


# ------------------------------------------------------------------------------------------------
# argv builders
# ------------------------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("time-percent", "total-time", "min-time", "max-time", "avg-time", "calls", "errors", "name")


def _command(cmd: Sequence[str | os.PathLike[str]]) -> list[str]:
    if isinstance(cmd, (str, bytes)) or not isinstance(cmd, Sequence):
        raise TypeError(f"the command to trace must be an argv list, not {type(cmd).__name__} {cmd!r}")
    if not cmd:
        raise ValueError("the command to trace is empty")
    return [os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in cmd]


def _filters(syscalls: str | Sequence[str] | None, paths: Sequence[str | os.PathLike[str]] = ()) -> list[str]:
    out: list[str] = []
    if syscalls:
        expr = syscalls if isinstance(syscalls, str) else ",".join(syscalls)
        out += ["-e", f"trace={expr}"]
    for p in paths:
        out += ["-P", os.fspath(p)]
    return out


def count_argv(cmd: Sequence[str | os.PathLike[str]], *, output: str | os.PathLike[str],
               follow: bool = True, wall: bool = False, syscalls: str | Sequence[str] | None = None,
               paths: Sequence[str | os.PathLike[str]] = (), columns: Sequence[str] | None = None,
               also_trace: bool = False, sort: str | None = None) -> list[str]:
    """strace argv that counts the syscalls of ``cmd`` and writes the table to ``output``.

    follow: ``-f`` (children and threads too). wall: ``-w`` (wall time spent in each syscall,
    not system CPU time). syscalls: ``-e trace=...`` (``"read"``, ``["read", "openat"]``,
    ``"%file"``). paths: ``-P PATH`` each (only syscalls touching that file, also through an fd).
    columns: ``-U`` (strace >= 5.x; see :data:`SUMMARY_COLUMNS`). also_trace: ``-C`` (the
    trace and then the table) instead of ``-c``. sort: ``-S`` (``calls``, ``name``, ...).
    """
    argv = [TOOL, "-C" if also_trace else "-c"]
    if follow:
        argv.append("-f")
    if wall:
        argv.append("-w")
    if columns:
        bad = [c for c in columns if c not in SUMMARY_COLUMNS]
        if bad:
            raise ValueError(f"unknown summary column(s) {bad}; strace knows {', '.join(SUMMARY_COLUMNS)}")
        argv += ["-U", ",".join(columns)]
    if sort:
        argv += ["-S", sort]
    argv += _filters(syscalls, paths)
    argv += ["-o", os.fspath(output), "--", *_command(cmd)]
    return argv


def trace_argv(cmd: Sequence[str | os.PathLike[str]], *, output: str | os.PathLike[str],
               follow: bool = True, syscalls: str | Sequence[str] | None = None,
               paths: Sequence[str | os.PathLike[str]] = (), strsize: int = 32,
               timestamps: bool = True, durations: bool = True, decode_fds: bool = True) -> list[str]:
    """strace argv for a full trace: ``-f -tt -T -y -s N -o FILE`` (each can be switched off)."""
    argv = [TOOL]
    if follow:
        argv.append("-f")
    if timestamps:
        argv.append("-tt")
    if durations:
        argv.append("-T")
    if decode_fds:
        argv.append("-y")
    argv += ["-s", str(int(strsize))]
    argv += _filters(syscalls, paths)
    argv += ["-o", os.fspath(output), "--", *_command(cmd)]
    return argv


# ------------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------------

class PtraceDenied(ToolFailed):
    """strace ran but the kernel refused to let it trace (ptrace not permitted)."""


def _ptrace_scope() -> str | None:
    try:
        return Path("/proc/sys/kernel/yama/ptrace_scope").read_text().strip()
    except OSError:
        return None


def diagnose(stderr: str) -> str | None:
    """The cause of a ptrace refusal named in plain words, or None when stderr shows none."""
    low = stderr.lower()
    if "ptrace" not in low or ("operation not permitted" not in low and "permission denied" not in low):
        return None
    scope = _ptrace_scope()
    bits = ["strace was not allowed to use ptrace(2), so it could not trace the command."]
    if scope is not None and scope != "0":
        bits.append(f"Yama ptrace_scope is {scope} here (/proc/sys/kernel/yama/ptrace_scope): "
                    "1 lets you trace only your own children, 2 only as root (CAP_SYS_PTRACE), 3 nobody; "
                    "an admin can set it with `sysctl kernel.yama.ptrace_scope=0`.")
    else:
        bits.append(f"Yama ptrace_scope is {scope if scope is not None else 'absent'} here, so the likely "
                    "cause is a container: Docker/Podman's default seccomp profile or a missing "
                    "CAP_SYS_PTRACE blocks ptrace (run the container with `--cap-add=SYS_PTRACE`, or "
                    "`--security-opt seccomp=unconfined`), or attaching to a process of another user.")
    bits.append("The lesson can replay the recorded traces instead: set IOLAB_MODE=replay.")
    return " ".join(bits)


def run(argv: Sequence[str], *, timeout: float = 120, cwd: str | os.PathLike[str] | None = None) -> Run:
    """Run an argv from :func:`count_argv` / :func:`trace_argv`; return a Run whose ``stdout`` is the
    text strace wrote to its ``-o`` file (the traced program's own output is in ``stderr``/dropped).

    ``returncode`` is the traced command's exit status (strace passes it on): a failing command is
    a result, not an exception. Raises ToolMissing (strace, or the traced program, is missing),
    PtraceDenied (the kernel refused ptrace), ToolFailed (strace itself failed).
    """
    argv = list(argv)
    if argv[0] != TOOL and os.path.basename(argv[0]) != TOOL:
        raise ValueError(f"not an strace argv: {argv[:3]}")
    require()
    try:
        out_path = Path(argv[argv.index("-o") + 1])
    except (ValueError, IndexError):
        raise ValueError("the strace argv must write to a file with -o FILE") from None
    if cwd is not None and not out_path.is_absolute():
        out_path = Path(cwd) / out_path
    target = argv[argv.index("--") + 1] if "--" in argv else None
    if target is not None and os.sep not in target and shutil.which(target) is None:
        raise ToolMissing(target, install_hint(target))
    out_path.unlink(missing_ok=True)
    r = runner.run(argv, timeout=timeout, cwd=cwd, check=False)
    text = out_path.read_text(errors="replace") if out_path.exists() else ""
    strace_lines = [ln for ln in r.stderr.splitlines() if ln.startswith("strace: ")]
    if r.returncode != 0 and not text.strip():
        why = diagnose("\n".join(strace_lines) or r.stderr)
        if why:
            raise PtraceDenied(argv, r.returncode, r.stderr, why)
        joined = "\n".join(strace_lines)
        if target is not None and ("Can't stat" in joined or "exec" in joined.lower()):
            raise ToolMissing(target, f"strace could not start it: {joined.strip()}")
        raise ToolFailed(argv, r.returncode, r.stderr)
    return replace(r, stdout=text, tool_version=runner.tool_version(TOOL))


# ------------------------------------------------------------------------------------------------
# parse_summary: the -c / -C table
# ------------------------------------------------------------------------------------------------

SUMMARY_KEYS = ("syscall", "calls", "errors", "seconds", "usecs_per_call", "percent_time",
                "min_seconds", "max_seconds")
_DASHES_RE = re.compile(r"^-+( +-+)*\s*$")


class Summary(list):
    """The rows of a strace summary table (one dict per syscall, in strace's order).

    ``.total``: the ``total`` row, kept apart. ``.columns``: the header titles as printed.
    ``.personalities``: rows of further tables (e.g. ``{"32 bit": Summary}``) when the traced
    program ran syscalls of another personality.
    """

    total: dict[str, Any]
    columns: list[str]
    personalities: dict[str, "Summary"]


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _cells(line: str, titles: list[str], spans: list[tuple[int, int]], line_no: int) -> dict[str, str]:
    tokens = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line)]
    if len(tokens) == len(titles):
        return {t: tok[2] for t, tok in zip(titles, tokens)}
    # Fewer tokens than columns: some cells are blank (errors 0, 4.x total usecs/call).
    # Place each token in the column its text overlaps most (right-aligned numbers, left name).
    cells: dict[str, str] = {}
    for start, end, text in tokens:
        best, best_overlap = None, 0
        for i, (s, e) in enumerate(spans):
            # the last column (the syscall name) is not bounded by its dashes
            e_eff = max(e, len(line)) if i == len(spans) - 1 and titles[i] == "syscall" else e
            overlap = min(end, e_eff) - max(start, s)
            if overlap > best_overlap:
                best, best_overlap = i, overlap
        if best is None or titles[best] in cells:
            raise ParseError("cannot place a value of the strace summary in a column", line_no, line)
        cells[titles[best]] = text
    return cells


def _row(cells: dict[str, str], line_no: int, line: str) -> dict[str, Any]:
    row: dict[str, Any] = {k: None for k in SUMMARY_KEYS}
    extra: dict[str, Any] = {}
    for title, text in cells.items():
        key, conv = SUMMARY_TITLES[title]
        try:
            value = conv(text)
        except ValueError:
            raise ParseError(f"column {title!r} should hold a number, got {text!r}", line_no, line) from None
        if key in row:
            row[key] = value
        else:
            extra[key] = value
    # a wall-clock column stands in for the CPU one when only it was printed
    for wall, cpu in (("wall_seconds", "seconds"), ("wall_usecs_per_call", "usecs_per_call"),
                      ("wall_min_seconds", "min_seconds"), ("wall_max_seconds", "max_seconds")):
        if row[cpu] is None and wall in extra:
            row[cpu] = extra[wall]
    if "errors" in cells or row["errors"] is None:
        row["errors"] = row["errors"] or 0
    if row["syscall"] is None:
        raise ParseError("a summary row has no syscall name", line_no, line)
    for key in ("calls", "errors", "seconds", "usecs_per_call", "percent_time", "min_seconds", "max_seconds"):
        v = row[key]
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ParseError(f"column {key!r} holds {v!r}: a count, a time or a share is a finite number, "
                             "not negative", line_no, line)
    if row["percent_time"] is not None and row["percent_time"] > 100.005:
        raise ParseError(f"a share of the time over 100% ({row['percent_time']})", line_no, line)
    if row["errors"] and row["calls"] is not None and row["errors"] > row["calls"]:
        raise ParseError(f"more errors ({row['errors']}) than calls ({row['calls']})", line_no, line)
    return row


# cells strace leaves blank: errors when there were none; usecs/call of strace 4.x's total row
_BLANK_OK = frozenset({"errors"})
_BLANK_OK_TOTAL = frozenset({"errors", "usecs/call"})


def _summary_row(line: str, titles: list[str], spans: list[tuple[int, int]], line_no: int,
                 total: bool = False) -> dict[str, Any]:
    cells = _cells(line, titles, spans, line_no)
    blank = [t for t in titles if t not in cells and t not in (_BLANK_OK_TOTAL if total else _BLANK_OK)]
    if blank:
        raise ParseError(f"a strace summary row without its {', '.join(map(repr, blank))} (cut short?)", line_no, line)
    return _row(cells, line_no, line)


def parse_summary(text: str) -> Summary:
    """Parse a strace ``-c`` / ``-C`` summary table into one dict per syscall.

    Keys: ``syscall``, ``calls``, ``errors`` (0 when strace left it blank), ``seconds`` (system time,
    or wall time with ``-w``), ``usecs_per_call``, ``percent_time``, ``min_seconds``,
    ``max_seconds`` (None unless ``-U`` asked for ``min-time``/``max-time``). Columns left out with
    ``-U`` are None. The ``total`` row is in ``.total``. Anything before the table (the trace of
    ``-C``, the program's output) is skipped. Raises ParseError when there is no table, a row does
    not fit it or lacks a cell strace always prints, or the text ends inside the total row (strace
    ends it with a newline: a table cut there would give a wrong total).
    """
    lines = text.splitlines()
    ends_inside = bool(text) and not text.endswith(("\n", "\r"))
    tables: list[tuple[str, Summary]] = []
    personality = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        pm = PERSONALITY_RE.match(line)
        if pm:
            personality = pm.group(1)
            i += 1
            continue
        titles = summary_header(line) if "syscall" in line else None
        if titles is None:
            i += 1
            continue
        if tables and (not personality or personality in {name for name, _ in tables}):
            raise ParseError("a second strace summary table that is not another personality's (no 'System call "
                             "usage summary for ... mode:' line before it): two outputs one after the other?",
                             i + 1, line)
        if i + 1 >= len(lines) or not _DASHES_RE.match(lines[i + 1]):
            raise ParseError("a strace summary header must be followed by a line of dashes", i + 2,
                             lines[i + 1] if i + 1 < len(lines) else "")
        spans = _spans(lines[i + 1])
        if len(spans) != len(titles):
            raise ParseError(f"{len(titles)} column titles but {len(spans)} dash groups", i + 2, lines[i + 1])
        rows = Summary()
        rows.columns = titles
        rows.personalities = {}
        j = i + 2
        total = None
        while j < len(lines):
            ln = lines[j]
            if _DASHES_RE.match(ln):
                if j + 1 >= len(lines):
                    raise ParseError("the strace summary ends without its total row", j + 1, ln)
                if j + 2 == len(lines) and ends_inside:
                    raise ParseError("the strace summary ends inside its total row (no newline after it): cut short",
                                     j + 2, lines[j + 1])
                total = _summary_row(lines[j + 1], titles, spans, j + 2, total=True)
                if total["syscall"] != "total":
                    raise ParseError("expected the total row after the closing dashes", j + 2, lines[j + 1])
                j += 2
                break
            if not ln.strip():
                raise ParseError("blank line inside the strace summary table", j + 1, ln)
            rows.append(_summary_row(ln, titles, spans, j + 1))
            j += 1
        if total is None:
            raise ParseError("the strace summary table is cut short (no closing dashes and total row)",
                             len(lines), lines[-1] if lines else "")
        rows.total = total
        tables.append((personality, rows))
        personality = ""
        i = j
    if not tables:
        raise ParseError("no strace summary table (a '% time ... syscall' header) in this text")
    main = tables[0][1]
    for name, rows in tables[1:]:
        main.personalities[name or f"table {len(main.personalities) + 2}"] = rows
    return main


def summary_total(text: str) -> dict[str, Any]:
    """The ``total`` row of a strace summary (the same keys as a row, ``syscall == "total"``)."""
    return parse_summary(text).total


# ------------------------------------------------------------------------------------------------
# frames
# ------------------------------------------------------------------------------------------------

def summary_frame(rows: Summary | list[dict[str, Any]]):
    """A DataFrame of summary rows, one per syscall (the ``total`` row stays on the parse:
    ``parse_summary(text).total``; lesson 03's ``syscalls.count`` gives it as typed fields)."""
    import pandas as pd

    return pd.DataFrame(list(rows), columns=list(SUMMARY_KEYS))
