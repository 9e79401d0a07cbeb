"""strace: count and trace the system calls of a command, and parse what strace writes.

Data flows one way, as everywhere in iolab::

    count_argv(...) / trace_argv(...)   build the strace command (argv list, output to a file)
    run(...)                            run it in the workspace -> Run (stdout = the -o file's text)
    parse_summary(text)                 the ``-c`` / ``-C`` table -> list of rows (+ .total)
    parse_calls(lines)                  a ``-f -tt -T -y`` trace -> one dict per completed syscall
    summary_frame(rows) / calls_frame(calls)   -> a tidy DataFrame

(Lesson 03 runs them, live or replayed, with ``iolab.labs.syscalls.count`` and ``trace``.)

The trace always goes to a file (``-o FILE``), never into the traced program's own output.

Layouts handled by :func:`parse_summary` (strace 4.x to 6.x): the classic six columns
``% time  seconds  usecs/call  calls  errors  syscall``; blank ``errors`` cells (strace prints
nothing for 0); the blank ``usecs/call`` of the 4.x ``total`` row; ``-w`` (same columns, wall
time); ``-C`` (the table after the trace); ``-U`` custom columns (``shortest``, ``longest``,
any order, ``syscall`` first or last) and per-personality tables
(``System call usage summary for 32 bit mode:``).

How :func:`parse_calls` keeps up (500,000 lines/s asked, benchmarks/bench_strace_parse.py) and stays
exact: two paths that give the same records, errors and line numbers (tests/test_strace.py compares
them on every recording and on odd lines).

* The general path (:func:`_general`; ``parse_calls(..., _fast=False)`` uses it alone) reads one
  line at a time: every layout strace writes, every check. It is the reference.
* The fast path (:func:`_fast_calls`) takes the input in runs of whole lines, one text each: a text
  file in ``read()`` blocks of ``_BLOCK`` characters (where its lines end at "\\n", as it would
  iterate them), any other iterable ``_CHUNK`` lines at a time, joined. One compiled pattern
  (``_FAST_RE.findall``, or ``_FAST_NOPID_RE`` for a trace without pids) cuts every line of a run
  into its fields in C: pid and hh:mm, seconds, the call's name with its first argument, the
  arguments, what follows " = ". Per line, Python then does
  a few dict look-ups: bounded memos turn ``"2603  02:32:"`` into (pid, seconds), ``"read(3</f>, "``
  into a record template (syscall, fd, path) and ``"4096 <0.000012>"`` into (result, errno,
  duration); a record is a copy of its template with pid, time, args, size, result, errno and
  duration set. Complete calls, ``<unfinished ...>``/``<... resumed>`` pairs, exits and signals of
  ``-f -tt [-T] [-y]`` traces go this way; a line of any other shape, or one a memo will not vouch
  for, goes to the general path, in its place. Values come from the same functions as there
  (``_result``, ``_details``, ``_FD_RE``, ``float``), so they are equal and of the same types.
* Memory stays flat: one run, the memos (``_MEMO_SIZE`` entries, ``_TAIL_MEMO_SIZE`` for what
  follows " = ") and the calls waiting for their resumed line are all that is kept. The price:
  records come out a run at a time, so a reader of a live pipe may wait for the rest of a run
  (``_CHUNK`` lines, ``_BLOCK`` characters) before it sees a record.
"""
from __future__ import annotations

import functools
import io
import os
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run, install_hint
from .. import runner

TOOL = "strace"

# ------------------------------------------------------------------------------------------------
# version and features
# ------------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r"version\s+(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str) -> tuple[int, ...]:
    """``"strace -- version 6.1"`` -> ``(6, 1)``; also the 4.x/5.x spellings."""
    m = _VERSION_RE.search(text)
    if not m:
        raise ParseError("no version number in strace -V output", line_no=1,
                         line=text.splitlines()[0] if text else "")
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

# header title -> (row key, converter)
_TITLES: dict[str, tuple[str, Any]] = {
    "% time": ("percent_time", float),
    "seconds": ("seconds", float),
    "usecs/call": ("usecs_per_call", int),
    "calls": ("calls", int),
    "errors": ("errors", int),
    "syscall": ("syscall", str),
    "shortest": ("min_seconds", float),
    "longest": ("max_seconds", float),
    # later strace versions can show wall-clock columns next to the CPU ones
    "wall-total": ("wall_seconds", float),
    "wall-avg": ("wall_usecs_per_call", int),
    "wall-min": ("wall_min_seconds", float),
    "wall-max": ("wall_max_seconds", float),
}
SUMMARY_KEYS = ("syscall", "calls", "errors", "seconds", "usecs_per_call", "percent_time",
                "min_seconds", "max_seconds")
_TITLE_RE = re.compile(r"% time|[a-z/-]+")
_DASHES_RE = re.compile(r"^-+( +-+)*\s*$")
_PERSONALITY_RE = re.compile(r"^System call usage summary for (.+?) mode:\s*$")


class Summary(list):
    """The rows of a strace summary table (one dict per syscall, in strace's order).

    ``.total``: the ``total`` row, kept apart. ``.columns``: the header titles as printed.
    ``.personalities``: rows of further tables (e.g. ``{"32 bit": Summary}``) when the traced
    program ran syscalls of another personality.
    """

    total: dict[str, Any]
    columns: list[str]
    personalities: dict[str, "Summary"]


def _header_titles(line: str) -> list[str] | None:
    titles = _TITLE_RE.findall(line)
    if "syscall" in titles and all(t in _TITLES for t in titles) and len(titles) >= 2:
        return titles
    return None


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
        key, conv = _TITLES[title]
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
        pm = _PERSONALITY_RE.match(line)
        if pm:
            personality = pm.group(1)
            i += 1
            continue
        titles = _header_titles(line) if "syscall" in line else None
        if titles is None:
            i += 1
            continue
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
# parse_calls: the per-call trace (-f -tt -T -y)
# ------------------------------------------------------------------------------------------------

CALL_KEYS = ("pid", "time", "syscall", "args", "fd", "path", "size", "result", "errno", "duration",
             "event", "signal")

# position of the byte-count argument of read/write-like calls (0-based)
_SIZE_ARG = {
    "read": 2, "write": 2, "pread64": 2, "pwrite64": 2, "recvfrom": 2, "sendto": 2,
    "sendfile": 3, "sendfile64": 3, "splice": 4, "copy_file_range": 5, "getdents64": 2, "getdents": 2,
}
_VECTOR = frozenset({"readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"})
# calls whose first argument is a file descriptor even without -y
_FD_FIRST = frozenset({
    "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2",
    "close", "fstat", "newfstat", "lseek", "_llseek", "fsync", "fdatasync", "ioctl", "fcntl", "getdents",
    "getdents64", "ftruncate", "fadvise64", "posix_fadvise", "readahead", "sync_file_range", "fallocate",
    "flock", "fchmod", "fchown", "fstatfs", "sendfile", "sendfile64", "recvfrom", "sendto", "recvmsg",
    "sendmsg", "dup", "dup2", "dup3",
})
# calls whose path is their first string argument
_PATH_CALLS = frozenset({
    "open", "openat", "openat2", "creat", "stat", "lstat", "newfstatat", "statx", "fstatat64", "stat64",
    "lstat64", "access", "faccessat", "faccessat2", "execve", "execveat", "readlink", "readlinkat",
    "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "chdir", "truncate", "chmod", "fchmodat",
    "chown", "lchown", "fchownat", "statfs", "getxattr", "lgetxattr", "listxattr", "llistxattr",
    "utimensat", "mknod", "mknodat", "rename", "renameat", "renameat2", "link", "linkat", "symlink",
    "symlinkat", "inotify_add_watch",
})
_FD_RE = re.compile(r"(-?\d+)(?:<(.*?)>)?(?:, |$)")
_STR_RE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_IOV_RE = re.compile(r"iov_len=(\d+)")
_PREFIX_RE = re.compile(r"(?:\[pid +(\d+)\] |(\d+) +)?(?:\[[0-9a-f]{8,16}\] )?(?: *(\d[\d:.]*) )?")
# (.*) ---$ splits where (.*?) ---$ does (the end of the line is the only place for " ---"), in one step
_EXIT_RE = re.compile(r"\+\+\+ (?:exited with (-?\d+)|killed by (SIG\w+)(?: \(core dumped\))?|(.*)) \+\+\+$")
_SIGNAL_RE = re.compile(r"--- (?:(SIG\w+|\d+) (.*)|stopped by (SIG\w+)) ---$")
_RESUMED_RE = re.compile(r"<\.\.\. ([\w?]+) resumed> ?(.*)$")
_UNFINISHED = " <unfinished ...>"
_IGNORABLE = ("strace: ", " > ", " | ", "[ Process PID=", "????")


_STAMP_RE = re.compile(r"(\d+):(\d\d):(\d\d(?:\.\d+)?)|\d+(?:\.\d+)?")


def _time(t: str | None, line_no: int | None = None, line: str | None = None) -> float | None:
    """``12:34:56.789012`` (-t, -tt) or ``1700000000.123456`` (-ttt, -r) -> seconds."""
    if t is None:
        return None
    m = _STAMP_RE.fullmatch(t)
    if m is None:
        raise ParseError(f"cannot read the time stamp {t!r}", line_no, line)
    if m.group(1) is not None:
        return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return float(t)


def _result(tail: str, line_no: int, line: str) -> tuple[int | None, str | None, float | None]:
    """`` 4096 <0.000012>`` / ``-1 ENOENT (No such file...) <0.000003>`` -> (result, errno, duration)."""
    duration = None
    tail = tail.rstrip()
    if tail.endswith(">"):
        lt = tail.rfind(" <")
        if lt >= 0:
            inner = tail[lt + 2:-1]
            if inner == "unavailable":
                tail = tail[:lt]
            else:
                try:
                    duration = float(inner)
                    tail = tail[:lt]
                except ValueError:
                    pass  # "3</path>" with no -T
    sp = tail.find(" ")
    tok, rest = (tail, "") if sp < 0 else (tail[:sp], tail[sp + 1:])
    lt = tok.find("<")
    if lt > 0:
        tok = tok[:lt]
    errno = None
    if tok == "?":
        result = None
    else:
        try:
            result = int(tok, 16) if tok.startswith("0x") else int(tok)
        except ValueError:
            raise ParseError(f"cannot read the return value {tok!r}", line_no, line) from None
    if rest and (result is None or result < 0) and rest[0].isupper():
        errno = rest.split(" ", 1)[0]
    return result, errno, duration


def _details(name: str, args: str) -> tuple[int | None, str | None, int | None]:
    fd = path = size = None
    if args and (args[0].isdigit() or args[0] == "-"):
        m = _FD_RE.match(args)
        if m and (m.group(2) is not None or name in _FD_FIRST):
            fd = int(m.group(1))
            path = m.group(2)
    if name in _PATH_CALLS:
        m = _STR_RE.search(args)
        if m:
            path = m.group(1)
    k = _SIZE_ARG.get(name)
    if k is not None:
        parts = args.rsplit(", ", k)  # the byte count and what follows are plain numbers
        # read(fd, buf, count): count is the last argument; pread64(fd, buf, count, offset): 2nd last
        n_after = {"pread64": 1, "pwrite64": 1, "recvfrom": 3, "sendto": 3, "splice": 1,
                   "copy_file_range": 1}.get(name, 0)
        idx = len(parts) - 1 - n_after
        if 0 <= idx < len(parts):
            try:
                size = int(parts[idx])
            except ValueError:
                size = None
    elif name in _VECTOR:
        lens = _IOV_RE.findall(args)
        if lens:
            size = sum(map(int, lens))
    return fd, path, size


def _call(pid, t, name, args, tail, line_no, line) -> dict[str, Any]:
    result, errno, duration = _result(tail, line_no, line)
    fd, path, size = _details(name, args)
    return {"pid": pid, "time": t, "syscall": name, "args": args, "fd": fd, "path": path, "size": size,
            "result": result, "errno": errno, "duration": duration, "event": None, "signal": None}


def _event(pid, t, event, *, result=None, signal=None, args="") -> dict[str, Any]:
    return {"pid": pid, "time": t, "syscall": None, "args": args, "fd": None, "path": None, "size": None,
            "result": result, "errno": None, "duration": None, "event": event, "signal": signal}


class _State:
    """What :func:`parse_calls` carries from one line to the next."""

    __slots__ = ("events", "pending", "in_summary")

    def __init__(self, events: bool):
        self.events = events
        # pid -> (start time, name, arguments so far, what the fast path knows of the call or None)
        self.pending: dict[Any, tuple[float | None, str, str, Any]] = {}
        self.in_summary = False  # inside the -C table after the trace: skipped up to its total row


def _exit_or_signal(state: _State, pid, t, rest: str) -> list[dict[str, Any]] | None:
    """``+++ exited with 0 +++`` / ``--- SIGCHLD {...} ---`` (``rest``: the line after pid and time)
    -> its events; None when ``rest`` is not one (the caller says so)."""
    if rest[0] == "+":
        em = _EXIT_RE.match(rest)
        if em is None:
            return None
        held = state.pending.pop(pid, None)
        if not state.events:
            return []
        out = [] if held is None else [_event(pid, held[0], "unfinished", args=held[2])]
        if em.group(1) is not None:
            out.append(_event(pid, t, "exit", result=int(em.group(1))))
        elif em.group(2) is not None:
            out.append(_event(pid, t, "killed", signal=em.group(2)))
        else:
            out.append(_event(pid, t, "other", args=em.group(3)))
        return out
    sm = _SIGNAL_RE.match(rest)
    if sm is None:
        return None
    if not state.events:
        return []
    if sm.group(3):
        return [_event(pid, t, "stopped", signal=sm.group(3))]
    return [_event(pid, t, "signal", signal=sm.group(1), args=sm.group(2))]


def _general(state: _State, line: str, line_no: int) -> Iterator[dict[str, Any]]:
    """The general path: any one line of a trace, every layout, every check (ParseError names the line)."""
    line = line.rstrip("\n")
    if not line or line.startswith(_IGNORABLE):
        return
    if state.in_summary:
        tok = line.split()
        if tok and "total" in (tok[0], tok[-1]):
            state.in_summary = False
        return
    if ("syscall" in line and _header_titles(line)) or _PERSONALITY_RE.match(line):
        state.in_summary = "syscall" in line
        return
    pending, events = state.pending, state.events
    m = _PREFIX_RE.match(line)
    p1, p2, ts = m.groups()
    pid = int(p1 or p2) if (p1 or p2) else None
    t = _time(ts, line_no, line) if ts else None
    rest = line[m.end():]
    c0 = rest[:1]
    if c0 == "<":
        rm = _RESUMED_RE.match(rest)
        if rm is None:
            raise ParseError("unexpected '<' line in strace trace", line_no, line)
        name, tail = rm.groups()
        held = pending.pop(pid, None)
        if held is not None and held[1] == name:
            t0, _, head, _ = held
        else:
            t0, head = t, ""
        eq = tail.rfind(" = ")
        if eq < 0:
            raise ParseError("a resumed syscall without ' = result'", line_no, line)
        left = tail[:eq].rstrip()
        if not left.endswith(")"):
            raise ParseError("a resumed syscall without its closing parenthesis", line_no, line)
        head = head.rstrip()
        args = (head + " " + left[:-1].lstrip()).strip() if head.endswith(",") else head + left[:-1]
        yield _call(pid, t0, name, args, tail[eq + 3:], line_no, line)
        return
    if c0 == "+" or (c0 == "-" and rest.startswith("--- ")):
        recs = _exit_or_signal(state, pid, t, rest)
        if recs is None:
            raise ParseError(f"unexpected '{'+++' if c0 == '+' else '---'}' line in strace trace", line_no, line)
        yield from recs
        return
    paren = rest.find("(")
    if paren <= 0:
        raise ParseError("not a strace syscall line", line_no, line)
    name = rest[:paren]
    if rest.endswith(_UNFINISHED):
        if pid in pending and events:
            old = pending[pid]
            yield _event(pid, old[0], "unfinished", args=old[2])
        pending[pid] = (t, name, rest[paren + 1:-len(_UNFINISHED)], None)
        return
    eq = rest.rfind(" = ")
    if eq < 0:
        if rest.endswith(")") or rest.endswith(") ?"):
            return  # e.g. a call still running when strace detached
        raise ParseError("a syscall line without ' = result'", line_no, line)
    left = rest[:eq].rstrip()
    if not left.endswith(")"):
        raise ParseError("a syscall line without its closing parenthesis", line_no, line)
    yield _call(pid, t, name, left[paren + 1:-1], rest[eq + 3:], line_no, line)


# The fast path (see the module docstring). _FAST_RE.findall gives one tuple per line of a run:
# (pid and hh:mm, ss.ffffff, name( and first argument, name of a resumed call, arguments and ")",
# what follows " = ", arguments of an unfinished call and " ", "+++ ..."/"--- ..." of an exit or a
# signal); a line of any other shape matches the last branch, all groups empty.
# Possessive quantifiers (Python >= 3.11) never give back what they matched: the same matches with
# less bookkeeping (a tenth of the pattern's time here). Python 3.10 reads the plain ones.
_P = "+" if sys.version_info >= (3, 11) else ""
_NAME = rf"[a-z_]\w*{_P}"
# the call's name, "(" and its first argument up to ", " ([^,] is quicker than [^,\n]: a key that runs
# into the next line tells _call_of nothing, like "name(" alone)
_KEY = rf"{_NAME}\((?:[^,]*{_P}, )?"
_FAST_BODY = (rf"(\d\d\.\d+{_P}) "
              rf"(?:(?:(?=({_KEY}))[a-z_]\w*{_P}\(|<\.\.\. ({_NAME}) resumed> ?)"
              rf"(?:(.*\)) += (.*)|(.* )<unfinished \.\.\.>)"
              rf"|(\+\+\+ .*|--- .*))\n"
              rf"|.*\n")
# One pattern per prefix layout ("2603  02:32:" of -f -o FILE, "02:32:" of one process): an
# alternation of the two costs every line. A run takes the pattern of its first line's layout; a line
# of the other layout matches neither and goes to the general path.
_FAST_RE = re.compile(rf"(\d+{_P} +{_P}\d\d:\d\d:)" + _FAST_BODY, re.ASCII)
_FAST_NOPID_RE = re.compile(rf"(\d\d:\d\d:)" + _FAST_BODY, re.ASCII)
_CHUNK = 1024            # lines per findall
_MEMO_SIZE = 4096        # entries per memo, then it starts again; for what follows " = " (a few
_TAIL_MEMO_SIZE = 16384  # results times some thousand durations) a larger one: about 3 MB at most


def _fill(memo: dict, key: str, make, size: int | None = None):
    """``memo[key] = make(key)`` after a miss; the memo is cleared when full, so memory stays bounded.

    The memos are plain dicts read as ``memo[key]`` with this in ``except KeyError``: Python
    specialises the subscript of an exact dict (a dict subclass with ``__missing__`` costs a third more
    per look-up, and the fast path makes four or five of them a line)."""
    if len(memo) >= (size or _MEMO_SIZE):
        memo.clear()
    value = memo[key] = make(key)
    return value


def _prefix_of(pre: str) -> tuple[int | None, int]:
    """``"2603  02:32:"`` -> (pid, seconds of the minute since midnight)."""
    pid, _, hm = pre.rpartition(" ")
    return (int(pid) if pid else None), int(hm[:2]) * 3600 + int(hm[3:5]) * 60


def _tail_of(tail: str) -> tuple[int | None, str | None, float | None] | None:
    """What follows ``" = "`` -> (result, errno, duration); None when the general path must judge."""
    if " = " in tail or tail.endswith(_UNFINISHED):  # not the line's last " = "; not a complete call
        return None
    try:
        return _result(tail, 0, tail)
    except ParseError:
        return None


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


_SIZE_MODE = {"read": 1, "write": 1, "pread64": 2, "pwrite64": 2}  # see _details for the others


def _call_of(key: str) -> tuple[dict[str, Any], int, str] | None:
    """``"read(3</f>, "`` -> (record template with syscall, fd, path filled, size mode, name).

    Size mode 0: no size; 1: the last argument; 2: the one before it; 3: ask :func:`_details` (also
    when the key does not settle fd and path). None sends the line to the general path (a name that
    could be a word of a -C header)."""
    name, _, first = key.partition("(")
    if all(t in _TITLES for t in _TITLE_RE.findall(name)):
        return None
    fd = path = None
    # As _details does (_FD_RE on the arguments): "3</f>" gives 3 and "/f", "0x7f.." and "AT_FDCWD" nothing.
    # Left to _details: no first argument seen ("name("), a key that ran past the arguments (" = ", "\n"),
    # "<" without ">" at the end ("3</a, b>" goes on after ", "), leading space (a resumed call strips it).
    first = first[:-2]
    known = bool(first) and "\n" not in first and " = " not in first and not first[0].isspace() and (
        "<" not in first or first[-1] == ">")
    m = _FD_RE.match(first) if known else None
    if m and (m.group(2) is not None or name in _FD_FIRST):
        fd, path = int(m.group(1)), m.group(2)
    mode = _SIZE_MODE.get(name, 3 if name in _SIZE_ARG or name in _VECTOR or name in _PATH_CALLS else 0)
    if not known:
        mode = 3
    template = dict.fromkeys(CALL_KEYS)
    template.update(syscall=name, fd=fd, path=path)
    return template, mode, name


_LAST = itemgetter(-1)
_BLOCK = 1 << 17  # characters per read() of a text file
_UNIVERSAL_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")  # the lines of a newline="" file


def _cut(line_no: int, line: str) -> ParseError:
    return ParseError("the trace ends inside this line (no newline after it): cut short, or still being written",
                      line_no, line)


def _texts(lines: Iterable[str]) -> Iterator[tuple[str | None, list[str] | None]]:
    """The input as runs of whole lines: (text, lines), text = the lines, each ending with one "\\n".

    A text file whose lines end at "\\n" is read in blocks (lines None: text's lines are the
    file's; read() costs a third of iterating the lines); any other iterable goes _CHUNK lines at a
    time (text has more lines than the run when a line holds a "\\n" of its own: the caller checks).
    text None: lines for the general path. Lines that carry their newline (a file's; an iterable whose
    first line ends with one) must all end with one: a last line without it raises ParseError once
    the lines before it are through."""
    terminated = isinstance(lines, io.TextIOBase)
    if terminated:
        first = lines.readline()
        # newline=None, "" or "\n" (not "\r", "\r\n"): the first line ends with "\n" alone.
        if first.endswith("\n") and not first.endswith("\r\n") and "\n" not in first[:-1]:
            yield from _file_texts(lines, first)
            return
        lines = chain([first], lines) if first else ()
    it = iter(lines)
    chunk = list(islice(it, _CHUNK))
    terminated = terminated or bool(chunk) and chunk[0][-1:] in ("\n", "\r")
    seen = 0
    while chunk:
        after = list(islice(it, _CHUNK))
        cut = None
        if not after and terminated and chunk[-1] and chunk[-1][-1:] not in ("\n", "\r"):
            cut = chunk.pop()
        if chunk:
            try:
                ends = "".join(map(_LAST, chunk))
            except IndexError:  # an empty line
                ends = ""
            yield ("".join(chunk) if ends == "\n" * len(chunk) else "\n".join(chunk) + "\n"), chunk
        seen += len(chunk)
        if cut is not None:
            raise _cut(seen + 1, cut)
        chunk = after


def _file_texts(file: io.TextIOBase, rest: str) -> Iterator[tuple[str | None, list[str] | None]]:
    """_texts of a text file, _BLOCK characters at a time, each cut after its last "\\n"; a file that
    ends inside a line raises ParseError once the lines before it are through."""
    universal = file.newlines is not None  # newline None or "": with "", a "\r" ends a line too
    seen = 0
    while True:
        block = file.read(_BLOCK)
        cut = block.rfind("\n") + 1
        if block and not cut:
            rest += block
            continue
        text, rest = rest + block[:cut], block[cut:]
        if universal and "\r" in text:
            found = _UNIVERSAL_LINE_RE.findall(text)
            last = found.pop() if not block and found[-1][-1:] not in ("\n", "\r") else None
            yield None, found
            seen += len(found)
            if last is not None:
                raise _cut(seen + 1, last)
        elif text:
            if text[-1] != "\n":                  # the end of the file, inside a line
                whole = text.rfind("\n") + 1
                if whole:
                    yield text[:whole], None
                raise _cut(seen + text.count("\n", 0, whole) + 1, text[whole:])
            yield text, None
            seen += text.count("\n")
        if not block:
            return


def _fast_calls(state: _State, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """parse_calls by runs of lines: complete, unfinished and resumed calls and exits and signals of
    ``-f -tt [-T] [-y]`` lines here, any other line through :func:`_general`. Same records, same
    order, same errors as the general path alone."""
    pending, events = state.pending, state.events
    prefixes: dict = {}
    calls: dict = {}
    ints: dict = {}
    tails: dict = {}
    findall, findall_nopid = _FAST_RE.findall, _FAST_NOPID_RE.findall
    line_no = 0
    for text, chunk in _texts(lines):
        found = (findall_nopid if text[2:3] == ":" else findall)(text) if text is not None else ()
        if text is None or (chunk is not None and len(found) != len(chunk)) or state.in_summary:
            for line in chunk if chunk is not None else text.split("\n")[:-1]:  # "\n" inside a line,
                line_no += 1                                                    # "\r" ending one, a -C table
                yield from _general(state, line, line_no)
            continue
        start, raw = line_no, chunk  # raw: the run's lines (from a file: split from text when needed)
        for pre, sec, key, resumed, args, tail, head, other in found:
            line_no += 1
            if tail:  # a complete call (key) or a resumed one
                try:
                    try:
                        result, errno, duration = tails[tail]
                    except KeyError:
                        result, errno, duration = _fill(tails, tail, _tail_of, _TAIL_MEMO_SIZE)
                    if key:
                        try:
                            rec, mode, name = calls[key]
                        except KeyError:
                            rec, mode, name = _fill(calls, key, _call_of)
                except TypeError:  # a memo said None
                    pass
                else:
                    if key:  # name(args) = result <duration>
                        args = args[:-1]
                        rec = {**rec}
                        try:
                            rec["pid"], base = prefixes[pre]
                        except KeyError:
                            rec["pid"], base = _fill(prefixes, pre, _prefix_of)
                        rec["time"] = base + float(sec)
                    else:  # <... name resumed>args) = result <duration>
                        try:
                            pid, base = prefixes[pre]
                        except KeyError:
                            pid, base = _fill(prefixes, pre, _prefix_of)
                        held = pending.pop(pid, None)
                        if held is not None and held[1] == resumed:
                            t, name, head, known = held
                            head = head.rstrip()
                        else:
                            t, name, head, known = base + float(sec), resumed, "", None
                        args = args[:-1]
                        if head[-1:] == ",":
                            rest = args.lstrip()
                            args = f"{head} {rest}".strip()
                            if not rest:  # "3</f>," ends the arguments: not the fd the key saw
                                known = None
                        elif args:
                            args = head + args
                        else:  # "futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>" + "<... futex resumed>)"
                            args = head
                        if known is None:
                            rec, mode = dict.fromkeys(CALL_KEYS), 3
                            rec["syscall"] = name
                        else:
                            rec, mode, _ = known
                            rec = {**rec}
                        rec["pid"] = pid
                        rec["time"] = t
                    rec["args"] = args
                    if mode == 1:  # as _details: the last argument (all of them when there is one)
                        n = args.rpartition(", ")[2]
                        try:
                            rec["size"] = ints[n]
                        except KeyError:
                            rec["size"] = _fill(ints, n, _int_or_none)
                    elif mode == 2:  # the one before the last (the first of two; "" of one: None)
                        n = args.rpartition(", ")[0].rpartition(", ")[2]
                        try:
                            rec["size"] = ints[n]
                        except KeyError:
                            rec["size"] = _fill(ints, n, _int_or_none)
                    elif mode == 3:
                        rec["fd"], rec["path"], rec["size"] = _details(name, args)
                    rec["result"] = result
                    rec["errno"] = errno
                    rec["duration"] = duration
                    yield rec
                    continue
            elif key and head:  # name(args <unfinished ...>
                try:
                    known = calls[key]
                except KeyError:
                    known = _fill(calls, key, _call_of)
                if known is not None:
                    try:
                        pid, base = prefixes[pre]
                    except KeyError:
                        pid, base = _fill(prefixes, pre, _prefix_of)
                    if pid in pending and events:
                        old = pending[pid]
                        yield _event(pid, old[0], "unfinished", args=old[2])
                    pending[pid] = (base + float(sec), known[2], head[:-1], known)
                    continue
            elif other and "syscall" not in other:  # +++ exited with 0 +++ / --- SIGCHLD {...} ---
                try:
                    pid, base = prefixes[pre]
                except KeyError:
                    pid, base = _fill(prefixes, pre, _prefix_of)
                recs = _exit_or_signal(state, pid, base + float(sec), other)
                if recs is not None:
                    yield from recs
                    continue
            if raw is None:
                raw = text.split("\n")
            yield from _general(state, raw[line_no - start - 1], line_no)
            if state.in_summary:  # a -C table began: the rest of the run is the general path's
                for line in raw[line_no - start:len(found)]:
                    line_no += 1
                    yield from _general(state, line, line_no)
                break
    yield from _never_resumed(state)


def parse_calls(lines: Iterable[str], *, events: bool = True, _fast: bool = True) -> Iterator[dict[str, Any]]:
    """Stream a strace trace: one dict per completed syscall (keys :data:`CALL_KEYS`).

    ``lines``: any iterable of lines (an open file streams it), or the whole text as one str.

    ``pid`` (None for a single-process trace without ``-f``), ``time`` (seconds: since midnight for
    ``-t``/``-tt``, Unix time for ``-ttt``, relative for ``-r``; None without timestamps),
    ``syscall``, ``args`` (raw text), ``fd`` and ``path`` (``-y`` shows ``3</path>``; path-taking
    calls give their path argument), ``size`` (requested bytes of read/write-like calls),
    ``result`` (int, None for ``?``), ``errno`` (``"ENOENT"``...), ``duration`` (seconds, ``-T``).

    ``<unfinished ...>`` lines are held (per pid) and joined with their ``<... resumed>`` line; the
    call is yielded when it completes, with the start time. Signals (``--- SIGCHLD ... ---``),
    exits (``+++ exited with 0 +++``, ``+++ killed by SIGKILL +++``) and calls that never resumed
    come out as events (``syscall`` None, ``event`` "signal" / "exit" / "killed" / "unfinished")
    when ``events`` is True, else are skipped. Memory stays flat: besides unfinished calls, only
    one run of lines and bounded memos are kept.

    A record is a whole line: strace ends every line with a newline, so a text (or a file, or lines
    that carry their newlines) that ends inside a line was cut (strace killed mid-line, a file still
    being written). The calls before it are yielded, then ParseError names that line. Lines given
    without their newlines (``text.splitlines()``) cannot show a cut: give the text itself. A line
    that is not one strace writes raises ParseError naming it.

    The input is read in runs (a text file ``_BLOCK`` characters at a time, any other iterable
    ``_CHUNK`` lines at a time; see the module docstring). ``_fast=False`` reads it line by line with
    the general path only: the reference the fast path is tested against.
    """
    parse = _fast_calls if _fast else _general_calls
    if isinstance(lines, str):  # a whole trace as one text
        text, lines = lines, lines.splitlines()
        if lines and lines[-1] and not text.endswith(("\n", "\r")):  # cut: lines that carry their newlines
            if len(lines) == 1:
                return _refuse(_cut(1, lines[0]))
            lines = [*(ln + "\n" for ln in lines[:-1]), lines[-1]]
    return parse(_State(events), lines)


def _refuse(error: ParseError) -> Iterator[dict[str, Any]]:
    raise error
    yield  # a generator, like parse_calls' others: the error comes with the first record asked for


def _general_calls(state: _State, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """parse_calls by the general path alone, one line at a time."""
    it = iter(lines)
    line = next(it, None)
    terminated = isinstance(lines, io.TextIOBase) or line is not None and line[-1:] in ("\n", "\r")
    line_no = 0
    while line is not None:
        after = next(it, None)
        line_no += 1
        if after is None and terminated and line and line[-1:] not in ("\n", "\r"):
            raise _cut(line_no, line)
        yield from _general(state, line, line_no)
        line = after
    yield from _never_resumed(state)


def _never_resumed(state: _State) -> Iterator[dict[str, Any]]:
    """At the end of the trace: the calls still waiting for their ``<... resumed>`` line."""
    if state.events:
        for pid, (t0, name, head, _) in state.pending.items():
            yield _event(pid, t0, "unfinished", args=f"{name}({head}")


# ------------------------------------------------------------------------------------------------
# frames
# ------------------------------------------------------------------------------------------------

def summary_frame(rows: Summary | list[dict[str, Any]]):
    """A DataFrame of summary rows (``.total`` goes to ``df.attrs["total"]``)."""
    import pandas as pd

    df = pd.DataFrame(list(rows), columns=list(SUMMARY_KEYS))
    df.attrs["total"] = dict(getattr(rows, "total", {}) or {})
    return df


def calls_frame(calls: Iterable[dict[str, Any]]):
    """A DataFrame of :func:`parse_calls` records, with ``t`` = seconds since the first record."""
    import pandas as pd

    df = pd.DataFrame(list(calls), columns=list(CALL_KEYS))
    if len(df) and df["time"].notna().any():
        t = df["time"].astype(float)
        df["t"] = t - t.min()
    else:
        df["t"] = float("nan")
    return df
