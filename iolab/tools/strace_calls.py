"""strace's per-call trace (``strace [-f|-ff] [-t|-tt|-ttt|-r] [-T] [-y]``): :func:`parse_calls` -> one
dict per completed syscall (plus exits and signals), :func:`parse_call_files` for the files of ``-ff -o``,
and :func:`calls_frame` -> a DataFrame. ``iolab.tools.strace`` uses them under the same names; the rest
of strace (argv, run, the ``-c`` summary) is there.

How :func:`parse_calls` keeps up (500,000 lines/s asked, benchmarks/bench_strace_parse.py, every
format) and stays exact: two paths that give the same records, errors and line numbers
(tests/test_strace.py compares them on every recording, real traces of every format cut and mutated,
and odd lines).

* The general path (:func:`_general`; ``parse_calls(..., _fast=False)`` uses it alone) reads one
  line at a time: every layout strace writes, every check. It is the reference.
* The fast path (:func:`_fast_calls`) takes the input in runs of whole lines, one text each: a text
  file in ``read()`` blocks of ``_BLOCK`` characters (where its lines end at "\\n", as it would
  iterate them), any other iterable ``_CHUNK`` lines at a time, joined. One compiled pattern per
  prefix layout (``_FAST``: the pid as -f -o writes it, ``[pid N]`` or none, times the time stamp of
  -t/-tt, of -ttt/-r, or none; the run's first line chooses) cuts every line of a run into its fields
  in C (``findall``): pid and hh:mm, seconds, the call's name with its first argument, the
  arguments, what follows " = ". Per line, Python then does
  a few dict look-ups: bounded memos turn ``"2603  02:32:"`` into (pid, seconds), ``"read(3</f>, "``
  into a record template (syscall, fd, path) and ``"4096 <0.000012>"`` into (result, errno,
  duration); a record is a copy of its template with pid, time, args, size, result, errno and
  duration set. Complete calls, ``<unfinished ...>``/``<... resumed>`` pairs, exits and signals of
  every layout go this way; a line of any other shape (strace's own messages, a line one of them
  cut in two on stderr), or one a memo will not vouch for, goes to the general path, in its place.
  Values come from the same functions as there (``_result``, ``_details``, ``_FD_RE``, ``float``;
  a -ttt/-r time stamp from whole microseconds over 10**6, which rounds as ``float`` does, see
  :func:`_prefix_of`), so they are equal and of the same types.
* Memory stays flat: one run, the memos (``_MEMO_SIZE`` entries, ``_TAIL_MEMO_SIZE`` for what
  follows " = ") and the calls waiting for their resumed line are all that is kept. The price:
  records come out a run at a time, so a reader of a live pipe may wait for the rest of a run
  (``_CHUNK`` lines, ``_BLOCK`` characters) before it sees a record.
"""
from __future__ import annotations

import glob
import io
import os
import re
import sys
from collections.abc import Hashable, Iterable, Iterator
from functools import partial
from itertools import chain, islice
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import ParseError

# ------------------------------------------------------------------------------------------------
# the -c / -C summary table's header: a trace made with -C ends with one (skipped here, parsed by
# iolab.tools.strace.parse_summary)
# ------------------------------------------------------------------------------------------------

# header title -> (row key, converter)
SUMMARY_TITLES: dict[str, tuple[str, Any]] = {
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
TITLE_RE = re.compile(r"% time|[a-z/-]+")
PERSONALITY_RE = re.compile(r"^System call usage summary for (.+?) mode:\s*$")


def summary_header(line: str) -> list[str] | None:
    """The column titles of a summary table's header line, or None when it is not one."""
    titles = TITLE_RE.findall(line)
    if "syscall" in titles and all(t in SUMMARY_TITLES for t in titles) and len(titles) >= 2:
        return titles
    return None


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
_FD_RE = re.compile(r"(-?\d{1,20})(?:<(.*?)>)?(?:, |$)")
# Possessive quantifiers (Python >= 3.11) never give back what they matched: the same matches with
# less bookkeeping. Python 3.10 reads the plain ones (where a string pattern keeps one character a step:
# runs without possessive quantifiers could backtrack without end on a string that never closes).
_P = "+" if sys.version_info >= (3, 11) else ""
# a string argument; possessive, it takes runs of plain characters at a time (a string can only end at
# its first unescaped '"', so what it matches is the same)
_STR_RE = re.compile(r'"((?:[^"\\]++|\\.)*+)"' if _P else r'"((?:[^"\\]|\\.)*)"')
_IOV_RE = re.compile(r"iov_len=(\d{1,20})")
_PREFIX_RE = re.compile(r"(?:\[pid +(\d{1,10})\] |(\d{1,10}) +)?(?:\[[0-9a-f]{8,16}\] )?(?: *(\d[\d:.]*) )?")
# (.*) ---$ splits where (.*?) ---$ does (the end of the line is the only place for " ---"), in one step
_EXIT_RE = re.compile(r"\+\+\+ (?:exited with (-?\d+)|killed by (SIG\w+)(?: \(core dumped\))?|(.*)) \+\+\+$")
_SIGNAL_RE = re.compile(r"--- (?:(SIG\w+|\d+) (.*)|stopped by (SIG\w+)) ---$")
_RESUMED_RE = re.compile(r"<\.\.\. ([\w?]+) resumed> ?(.*)$")
_UNFINISHED = " <unfinished ...>"
# strace's message when it attaches a new process; on stderr it can land inside a line of the trace
_MESSAGE = "strace: Process "
_ATTACHED_RE = re.compile(r"strace: Process \d+ attached$")
_IGNORABLE = ("strace: ", " > ", " | ", "[ Process PID=", "????")


_DURATION_RE = re.compile(r"\d{1,9}\.\d{1,9}")
_STAMP_RE = re.compile(r"(\d{1,9}):(\d\d):(\d\d(?:\.\d{1,9})?)|\d{1,12}(?:\.\d{1,9})?")


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
                if _DURATION_RE.fullmatch(inner):   # -T prints seconds with a fraction, never inf or nan
                    duration = float(inner)
                    tail = tail[:lt]
                # else "3</path>" with no -T
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
    if result is not None and result < 0 and errno is None and not tok.startswith("0x"):
        # the kernel's -errno: strace prints -1 and the error's name, never a bare negative number
        raise ParseError(f"a negative return value {result} without an error name", line_no, line)
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

    __slots__ = ("events", "pid", "pending", "in_summary", "split")

    def __init__(self, events: bool, pid: int | None = None):
        self.events = events
        self.pid = pid  # the pid of lines that show none (a -ff file's, from its name)
        # pid -> (start time, name, arguments so far, what the fast path knows of the call or None)
        self.pending: dict[Any, tuple[float | None, str, str, Any]] = {}
        self.in_summary = False  # inside the -C table after the trace: skipped up to its total row
        # a line strace's own message cut in two (on stderr: "...SIGCHLDstrace: Process 7 attached"):
        # (its line number, the text before the message), joined with the next line
        self.split: tuple[int, str] | None = None


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
    if state.split is not None:
        line = state.split[1] + line
        state.split = None
    cut = line.find(_MESSAGE, 1)
    if cut > 0 and _ATTACHED_RE.fullmatch(line, cut):
        state.split = (line_no, line[:cut])
        return
    if not line or line.startswith(_IGNORABLE):
        return
    if state.in_summary:
        tok = line.split()
        if tok and "total" in (tok[0], tok[-1]):
            state.in_summary = False
        return
    if ("syscall" in line and summary_header(line)) or PERSONALITY_RE.match(line):
        state.in_summary = "syscall" in line
        return
    pending, events = state.pending, state.events
    m = _PREFIX_RE.match(line)
    assert m is not None                  # every part of the prefix is optional: it matches every line
    p1, p2, ts = m.groups()
    pid = int(p1 or p2) if (p1 or p2) else state.pid
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


# The fast path (see the module docstring). A layout's pattern .findall gives one tuple per line of a
# run: (pid and what of the time stamp a memo reads, the rest of the stamp, name( and first argument,
# name of a resumed call, arguments and ")", what follows " = ", arguments of an unfinished call and
# " ", "+++ ..."/"--- ..." of an exit or a signal, the line itself when it is of any other shape (it
# matches the last branch, all other groups empty: the general path reads it without a split of the run).
# (possessive quantifiers, _P: a tenth of the pattern's time here)
_NAME = rf"[a-z_]\w*{_P}"
# the call's name, "(" and its first argument up to ", " ([^,] is quicker than [^,\n]: a key that runs
# into the next line tells _call_of nothing, like "name(" alone)
_KEY = rf"{_NAME}\((?:[^,]*{_P}, )?"
_FAST_BODY = (rf"(?:(?:(?=({_KEY}))[a-z_]\w*{_P}\(|<\.\.\. ({_NAME}) resumed> ?)"
              rf"(?:(.*\)) += (.*)|(.* )<unfinished \.\.\.>)"
              rf"|(\+\+\+ .*|--- .*))\n"
              rf"|(.*)\n")
# One pattern per prefix layout: the pid ("2603  " of -f -o FILE; "[pid  2603] " of -f on stderr, or
# none: one process, a -ff file) times the time stamp ("02:32:" + "49.163944" of -t/-tt;
# "1700000000.163944" of -ttt, "     0.000123" of -r; none). An alternation of them would cost every
# line: a run takes the pattern of the layout of its first line of a call (_layout); a line of
# another layout matches none of its branches and goes to the general path.
_PIDS = {"pid": rf"\d{{1,10}}{_P} +{_P}", "none": rf"(?:\[pid +{_P}\d{{1,10}}{_P}\] )?"}
_STAMPS = {"hm": (r"\d\d:\d\d:", rf"(\d\d(?:\.\d+{_P})?) "), "s": (rf" *{_P}\d{{1,12}}{_P}\.", r"(\d{6}) "),
           "none": ("", "()")}
_FAST = {(pids, stamp): re.compile(f"({pid_re}{memo_re}){rest_re}" + _FAST_BODY, re.ASCII)
         for pids, pid_re in _PIDS.items() for stamp, (memo_re, rest_re) in _STAMPS.items()}
# the layout of a run: its first line (of those with a call, an exit or a signal) as the general path
# reads it; anchored at a line's start and bounded, so that a line of a million digits is one try, not
# a million (unanchored, each position in the digits ran to their end: seconds per 64 KiB line)
_LAYOUT_RE = re.compile(r"^(?:\[pid +\d{1,10}\] |(\d{1,10}) +)?(?: *(\d[\d:.]{0,40}) )?(?:[a-z_]\w*\(|<\.\.\. |\+\+\+ |--- )",
                        re.ASCII | re.MULTILINE)


def _layout(text: str) -> tuple[str, str]:
    """The prefix layout of a run (a key of _FAST): that of its first line of a call, exit or signal."""
    m = _LAYOUT_RE.search(text)
    if m is None:
        return "none", "none"
    pid, stamp = m.groups()
    return ("pid" if pid else "none"), ("none" if stamp is None else "hm" if ":" in stamp else "s")


_CHUNK = 1024            # lines per findall
_MEMO_SIZE = 4096        # entries per memo, then it starts again; for what follows " = " (a few
_TAIL_MEMO_SIZE = 16384  # results times some thousand durations) a larger one: about 3 MB at most


def _fill(memo: dict, key: Hashable, make, size: int | None = None):
    """``memo[key] = make(key)`` after a miss; the memo is cleared when full, so memory stays bounded.

    The memos are plain dicts read as ``memo[key]`` with this in ``except KeyError``: Python
    specialises the subscript of an exact dict (a dict subclass with ``__missing__`` costs a third more
    per look-up, and the fast path makes four or five of them a line)."""
    if len(memo) >= (size or _MEMO_SIZE):
        memo.clear()
    value = memo[key] = make(key)
    return value


def _prefix_of(layout: tuple[str, str], default: int | None, pre: str) -> tuple[int | None, float | None] | None:
    """``"2603  02:32:"`` -> (pid, seconds of the minute since midnight); ``"[pid  2603] 1700000000."``
    -> (2603, microseconds of the whole seconds) in a -ttt/-r layout; ``"[pid  2603] "`` -> (2603, None)
    in one without time stamps; a line without a pid gets ``default``. None: the general path reads it.

    The line's time, as floats: -t/-tt ``base + float("49.163944")``, the general path's sum (its
    int + float, an exact float here: float + float is Python's quick case); -ttt/-r
    ``(base + float("163944")) / 1e6``, an exact integer of microseconds (below 2**53) over 10**6,
    rounded once: the same float as ``float("1700000000.163944")`` (correctly rounded too), at less
    than half its cost (112 ns; 48 ns; 74 ns as integers). The pattern takes 6 digits after the point
    only; another count, or a stamp of 2**53 microseconds or more, goes to the general path."""
    stamp = layout[1]
    if stamp == "hm":
        base, pre = float(int(pre[-6:-4]) * 3600 + int(pre[-3:-1]) * 60), pre[:-6]
    elif stamp == "s":  # "2603  1700000000." -> its microseconds (_fast_calls adds the line's)
        pre, _, seconds = pre[:-1].rpartition(" ")
        micro = int(seconds) * 1_000_000
        if micro + 999_999 >= 2 ** 53:
            return None
        base = float(micro)
    else:
        base = None
    pre = pre.strip()
    if not pre:
        return default, base
    return int(pre[4:-1] if pre[0] == "[" else pre), base


def _tail_of(tail: str) -> tuple[int | None, str | None, float | None] | None:
    """What follows ``" = "`` -> (result, errno, duration); None when the general path must judge."""
    if " = " in tail or tail.endswith(_UNFINISHED):  # not the line's last " = "; not a complete call
        return None
    try:
        return _result(tail, 0, tail)
    except ParseError:
        return None


def _duration_of(inner: str) -> float | None:
    """``"0.000123"`` -> 0.000123 as :func:`_result` reads a -T duration; None: not one."""
    return float(inner) if _DURATION_RE.fullmatch(inner) else None


def _timed_tail_of(tails: dict, results: dict, durations: dict,
                   tail: str) -> tuple[int | None, str | None, float | None] | None:
    """What follows ``" = "`` after a miss of the memo ``tails``: with -T every call's duration is
    its own (``"4096 <0.000123>"``), so a memo of whole tails would miss on most lines of a real trace,
    each miss a call of :func:`_result`. A tail that ends ``" <seconds>"`` is read as what comes before
    it (through the memo ``results``: ``"4096"``, ``"-1 ENOENT (No such file or directory)"``, a few
    hundred in a trace) and its duration apart, with ``float`` as :func:`_result` reads it: the same
    (result, errno, duration) as ``_result(tail)`` (``_result`` takes the last ``" <...>"`` of the
    tail as its duration and reads the rest as it reads ``head``). ``tails`` keeps the tails it saw
    until it holds ``_TAIL_MEMO_SIZE`` (the durations of a short trace repeat); then it stops taking
    more: cleared, it would lose the ones that repeat to make room for ones that do not."""
    head, sep, inner = tail[:-1].rpartition(" <") if tail[-1:] == ">" else ("", "", "")
    try:
        duration = durations[inner]       # (a few thousand of them: microseconds)
    except KeyError:
        duration = _fill(durations, inner, _duration_of)
    if sep and duration is not None:
        try:
            known = results[head]
        except KeyError:
            known = _fill(results, head, _tail_of)
        value = None if known is None else (known[0], known[1], duration)
    else:
        value = _tail_of(tail)
    if len(tails) < _TAIL_MEMO_SIZE:
        tails[tail] = value
    return value


def _details_of(key: tuple[str, str]) -> tuple[int | None, str | None, int | None]:
    return _details(*key)


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
    if all(t in SUMMARY_TITLES for t in TITLE_RE.findall(name)):
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
    terminated = False
    if isinstance(lines, io.TextIOBase):
        terminated = True
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
    layouts: dict = {}  # layout -> (its pattern's findall, its memo of prefixes, the maker of an entry)
    calls: dict = {}
    ints: dict = {}
    tails: dict = {}
    results: dict = {}
    durations: dict = {}
    details: dict = {}
    line_no = 0
    for text, chunk in _texts(lines):
        if text is not None:
            layout = _layout(text)
            hm = layout[1] == "hm"
            try:
                findall, prefixes, prefix_of = layouts[layout]
            except KeyError:
                findall, prefixes, prefix_of = layouts[layout] = (
                    _FAST[layout].findall, {}, partial(_prefix_of, layout, state.pid))
            found = findall(text)
        if (text is None or (chunk is not None and len(found) != len(chunk)) or state.in_summary
                or state.split is not None):
            if chunk is None:                   # "\n" inside a line, "\r" ending one, a -C table
                assert text is not None         # (_texts gives the text, its lines or both)
                chunk = text.split("\n")[:-1]
            for line in chunk:
                line_no += 1
                yield from _general(state, line, line_no)
            continue
        start, raw = line_no, chunk  # raw: the run's lines (from a file: split from text when needed)
        it = iter(found)
        for pre, sec, key, resumed, args, tail, head, other, odd in it:
            line_no += 1
            if tail:  # a complete call (key) or a resumed one
                try:
                    try:
                        result, errno, duration = tails[tail]
                    except KeyError:
                        timed = _timed_tail_of(tails, results, durations, tail)
                        if timed is None:  # what the memo's None does below: the general path reads it
                            raise TypeError(tail)
                        result, errno, duration = timed
                    try:
                        pid, base = prefixes[pre]
                    except KeyError:
                        pid, base = _fill(prefixes, pre, prefix_of)
                    if key:
                        try:
                            rec, mode, name = calls[key]
                        except KeyError:
                            rec, mode, name = _fill(calls, key, _call_of)
                except TypeError:  # a memo said None
                    pass
                else:
                    args = args[:-1]
                    if key:  # name(args) = result <duration>
                        rec = {**rec}
                        rec["pid"] = pid
                        rec["time"] = (base + float(sec) if hm else (base + float(sec)) / 1e6) if sec else base
                    else:  # <... name resumed>args) = result <duration>
                        held = pending.pop(pid, None)
                        if held is not None and held[1] == resumed:
                            t, name, head, known = held
                            # as the general path joins them: head.rstrip(), and one space after a ","
                            if head[-2:] == ", ":  # "read(3</f>, " + "buf, 4)" (rstrip takes the one space)
                                rest = args.lstrip()
                                args = (head + rest).strip()
                                if not rest:  # "3</f>," ends the arguments: not the fd the key saw
                                    known = None
                            else:
                                head = head.rstrip()
                                if head[-1:] == ",":
                                    rest = args.lstrip()
                                    args = f"{head} {rest}".strip()
                                    if not rest:
                                        known = None
                                elif args:
                                    args = head + args
                                else:  # "futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>" + "<... futex resumed>)"
                                    args = head
                        else:
                            t, name, known = (base + float(sec) if hm else (base + float(sec)) / 1e6) if sec else base, resumed, None
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
                    elif mode == 3:  # (close(3</f>), brk(NULL), a path call: the same arguments again and again)
                        try:
                            rec["fd"], rec["path"], rec["size"] = details[name, args]
                        except KeyError:
                            rec["fd"], rec["path"], rec["size"] = _fill(details, (name, args), _details_of)
                    rec["result"] = result
                    rec["errno"] = errno
                    rec["duration"] = duration
                    yield rec
                    continue
            elif key and head:  # name(args <unfinished ...>
                try:
                    try:
                        known = calls[key]
                    except KeyError:
                        known = _fill(calls, key, _call_of)
                    try:
                        pid, base = prefixes[pre]
                    except KeyError:
                        pid, base = _fill(prefixes, pre, prefix_of)
                except TypeError:  # a memo said None
                    pass
                else:
                    if known is not None:
                        if pid in pending and events:
                            old = pending[pid]
                            yield _event(pid, old[0], "unfinished", args=old[2])
                        pending[pid] = ((base + float(sec) if hm else (base + float(sec)) / 1e6) if sec else base, known[2], head[:-1], known)
                        continue
            elif other and "syscall" not in other:  # +++ exited with 0 +++ / --- SIGCHLD {...} ---
                try:
                    try:
                        pid, base = prefixes[pre]
                    except KeyError:
                        pid, base = _fill(prefixes, pre, prefix_of)
                except TypeError:  # the memo said None
                    pass
                else:
                    recs = _exit_or_signal(state, pid, (base + float(sec) if hm else (base + float(sec)) / 1e6) if sec else base, other)
                    if recs is not None:
                        yield from recs
                        continue
            if not odd:  # (a line of another shape is the last group: no need to split the run's text)
                if raw is None:
                    raw = text.split("\n")
                odd = raw[line_no - start - 1]
            yield from _general(state, odd, line_no)
            while state.split is not None and line_no - start < len(found):  # strace's message cut
                odd = next(it)[-1]                                            # the line: the next ends it
                line_no += 1
                if not odd:
                    if raw is None:
                        raw = text.split("\n")
                    odd = raw[line_no - start - 1]
                yield from _general(state, odd, line_no)
            if state.in_summary:  # a -C table began: the rest of the run is the general path's
                if raw is None:
                    raw = text.split("\n")
                for line in raw[line_no - start:len(found)]:
                    line_no += 1
                    yield from _general(state, line, line_no)
                break
    yield from _never_resumed(state)


def parse_calls(lines: Iterable[str], *, events: bool = True, pid: int | None = None,
                _fast: bool = True) -> Iterator[dict[str, Any]]:
    """Stream a strace trace: one dict per completed syscall (keys :data:`CALL_KEYS`).

    ``lines``: any iterable of lines (an open file streams it), or the whole text as one str.

    ``pid`` (the ``pid`` given for lines that show none: None for a single-process trace without
    ``-f``; a file of ``-ff -o FILE`` is ``FILE.<pid>``, see :func:`parse_call_files`), ``time`` (seconds: since midnight for
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
    return parse(_State(events, pid), lines)


def parse_call_files(prefix: str | os.PathLike[str], *, events: bool = True) -> Iterator[dict[str, Any]]:
    """The records of a ``strace -ff -o PREFIX`` trace: one file per process, ``PREFIX.<pid>``, each
    read with :func:`parse_calls` and the pid of its name, file after file in the order of the pids
    (``calls_frame(...).sort_values("time")`` interleaves them). ParseError names the line of its file."""
    prefix = Path(prefix)
    files = sorted((int(p.name[len(prefix.name) + 1:]), p) for p in prefix.parent.glob(f"{glob.escape(prefix.name)}.*")
                   if p.name[len(prefix.name) + 1:].isdigit())
    for pid, path in files:
        with open(path) as f:
            try:
                yield from parse_calls(f, events=events, pid=pid)
            except ParseError as e:  # the same error, naming its file
                e.args = (f"{path.name}: {e.args[0]}",)
                raise


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
    """At the end of the trace: the calls still waiting for their ``<... resumed>`` line (and
    ParseError when it ends in the middle of a line that strace's message cut in two)."""
    if state.split is not None:
        raise _cut(*state.split)
    if state.events:
        for pid, (t0, name, head, _) in state.pending.items():
            yield _event(pid, t0, "unfinished", args=f"{name}({head}")


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
