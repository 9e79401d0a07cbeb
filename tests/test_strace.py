"""iolab.tools.strace: argv builders, the two parsers, the runner's errors, and live exact counts.

Golden tests on the real recordings are in tests/golden/strace (run by test_golden.py), among them
outputs of strace 4.26 and 5.10 built from their git tags (the recordings named *-v4.26, *-v5.10).
The 4.x-layout tables below are written from the printf formats of strace 4.x's count.c
("%6.2f %11.6f %11lu %9u %9.u %s", a total row with an empty usecs/call cell): constructed cases
kept beside the real ones.
"""
from __future__ import annotations

import itertools
import random
import sys
from datetime import timezone

import pytest

from iolab import ParseError, ToolMissing, recordings
from iolab.lessons.l03_strace import plots, check as check_03
from iolab.tools import strace as st
from iolab.tools import strace_calls as stc
from conftest import needs

# ------------------------------------------------------------------------------------------------
# version, argv
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, want", [
    ("strace -- version 6.1", (6, 1)),
    ("strace -- version 4.26", (4, 26)),
    ("strace -- version 5.10\nCopyright (c) 1991-2020 The strace developers", (5, 10)),
    ("strace -- version 4.5.20", (4, 5, 20)),
])
def test_parse_version(text, want):
    assert st.parse_version(text) == want


def test_parse_version_rejects_garbage():
    with pytest.raises(ParseError):
        st.parse_version("no idea")


def test_count_argv_shape(tmp_path):
    out = tmp_path / "c.txt"
    argv = st.count_argv(["prog", "a b"], output=out, wall=True, syscalls=["read", "openat"],
                         paths=[tmp_path / "f"], columns=["name", "calls"])
    assert argv[:4] == ["strace", "-c", "-f", "-w"]
    assert argv[argv.index("-U") + 1] == "name,calls"
    assert argv[argv.index("-e") + 1] == "trace=read,openat"
    assert argv[argv.index("-P") + 1] == str(tmp_path / "f")
    assert argv[argv.index("-o") + 1] == str(out)
    # the command comes last, after "--", untouched (no shell, spaces kept in one argument)
    assert argv[argv.index("--"):] == ["--", "prog", "a b"]
    assert st.count_argv(["p"], output=out, follow=False, also_trace=True)[:2] == ["strace", "-C"]


def test_trace_argv_shape(tmp_path):
    argv = st.trace_argv(["p"], output=tmp_path / "t", strsize=8, syscalls="read")
    assert argv[:6] == ["strace", "-f", "-tt", "-T", "-y", "-s"] and argv[6] == "8"
    assert "-o" in argv and argv[-2:] == ["--", "p"]


@pytest.mark.parametrize("bad", ["python3 -c 1", b"prog", []])
def test_argv_builders_refuse_shell_strings(bad, tmp_path):
    with pytest.raises((TypeError, ValueError)):
        st.count_argv(bad, output=tmp_path / "x")


def test_unknown_summary_column(tmp_path):
    with pytest.raises(ValueError, match="unknown summary column"):
        st.count_argv(["p"], output=tmp_path / "x", columns=["calls", "bogus"])


# ------------------------------------------------------------------------------------------------
# parse_summary
# ------------------------------------------------------------------------------------------------

STRACE4_TABLE = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 90.83    0.019275           3      5280           read
  2.11    0.000448           1       268        24 stat
  0.19    0.000041           1        28           brk
------ ----------- ----------- --------- --------- ----------------
100.00    0.019764                  5576        24 total
"""


def test_summary_strace4_layout_blank_cells():
    rows = st.parse_summary(STRACE4_TABLE)
    assert [r["syscall"] for r in rows] == ["read", "stat", "brk"]
    assert rows[0] == {"syscall": "read", "calls": 5280, "errors": 0, "seconds": 0.019275, "usecs_per_call": 3,
                       "percent_time": 90.83, "min_seconds": None, "max_seconds": None}
    assert rows[1]["errors"] == 24
    assert rows.total["calls"] == 5576 and rows.total["errors"] == 24
    assert rows.total["usecs_per_call"] is None          # 4.x leaves it blank
    assert rows.total["seconds"] == 0.019764


def test_summary_skips_what_comes_before_and_reads_personality_tables():
    text = ("hello from the program\n" + STRACE4_TABLE +
            "System call usage summary for 32 bit mode:\n" + STRACE4_TABLE.replace("read", "read32"))
    rows = st.parse_summary(text)
    assert len(rows) == 3
    assert list(rows.personalities) == ["32 bit"]
    assert rows.personalities["32 bit"][0]["syscall"] == "read32"


def test_summary_wall_columns_of_later_versions():
    text = """\
syscall            calls wall-total    wall-avg
---------------- ------- ---------- -----------
read                  10   0.000100          10
---------------- ------- ---------- -----------
total                 10   0.000100          10
"""
    rows = st.parse_summary(text)
    assert rows[0]["seconds"] == 0.0001 and rows[0]["usecs_per_call"] == 10 and rows[0]["percent_time"] is None


@pytest.mark.parametrize("text, where", [
    ("nothing here\n", None),
    (STRACE4_TABLE.rsplit("------", 1)[0], None),                                  # no total row
    (STRACE4_TABLE.replace("0.000448", "0.0004x8"), 4),                              # not a number
    (STRACE4_TABLE.replace("------ -----------", "", 1), 2),                          # no dashes
])
def test_summary_malformed_raises_parse_error(text, where):
    with pytest.raises(ParseError) as e:
        st.parse_summary(text)
    if where is not None:
        assert e.value.line_no == where


def test_summary_total_golden_matches_recording():
    rec = recordings.load("strace/count-f-read-2k-of-10mib")
    rows = st.parse_summary(rec.text)
    assert sum(r["calls"] for r in rows) == rows.total["calls"]
    assert sum(r["errors"] for r in rows) == rows.total["errors"]


def test_summary_frame_keeps_total_apart():
    # the frame is the rows; the total row stays on the parse (no bag in df.attrs)
    rows = st.parse_summary(STRACE4_TABLE)
    df = st.summary_frame(rows)
    assert list(df["syscall"]) == ["read", "stat", "brk"] and "total" not in set(df["syscall"])
    assert df.attrs == {} and rows.total["calls"] == 5576


# ------------------------------------------------------------------------------------------------
# parse_calls
# ------------------------------------------------------------------------------------------------

def _one(line: str, **kw):
    got = list(st.parse_calls([line], **kw))
    assert len(got) == 1, got
    return got[0]


def test_calls_fast_and_general_paths_agree_on_every_recorded_trace():
    for ref in recordings.available("strace"):
        if ref.startswith("strace/trace-") or ref.startswith("strace/summary-C"):
            text = recordings.load(ref).text
            assert list(st.parse_calls(text)) == list(st.parse_calls(text, _fast=False)), ref


def _outcome(src, **kw):
    """What parse_calls makes of src: each record as (key, type, value) in order, then its ParseError."""
    got = []
    try:
        for rec in st.parse_calls(src, **kw):
            got.append([(k, type(v).__name__, v) for k, v in rec.items()])
    except ParseError as e:
        got.append(("ParseError", e.line_no, str(e)))
    return got


@pytest.mark.parametrize("ref", recordings.available("strace"))
@pytest.mark.parametrize("chunk, block, memo", [(1024, 1 << 17, None), (3, 97, 2)])  # as shipped; runs cut
def test_fast_path_equals_general_path_on_every_recording(ref, chunk, block, memo, tmp_path, monkeypatch):
    # the fast path (runs of lines through one pattern) against the general one (line by line), on the
    # whole text, a list of lines, an open file (read in blocks): same records, value types, key order,
    # errors; also with memos of two entries, cleared all the time
    monkeypatch.setattr(stc, "_CHUNK", chunk)
    monkeypatch.setattr(stc, "_BLOCK", block)
    if memo:
        monkeypatch.setattr(stc, "_MEMO_SIZE", memo)
        monkeypatch.setattr(stc, "_TAIL_MEMO_SIZE", memo)
    text = recordings.load(ref).text
    want = _outcome(text, _fast=False)
    assert want == _outcome(text.splitlines(keepends=True), _fast=False)
    assert _outcome(text) == want
    assert _outcome(text.splitlines(keepends=True)) == want
    path = tmp_path / "trace.txt"
    path.write_text(text)
    with open(path) as f:
        assert _outcome(f) == want


TIMED_TAILS = ["0 <0.000012>", "4096 <0.000123>", "-1 ENOENT (No such file or directory) <0.000009>",
               "3</tmp/a b> <0.000005>", "0x7f1e06c53000 <0.003485>", "? <0.000001>", "0  <0.000012>",
               "1 <0.5> <0.000002>", "-1 E <0.1> <0.2>", "-1 <0.1> <0.2>", "-1 <0.000003>", "0 <unavailable>",
               "0 <1e-05>", "0 <0.1234567890>", "0 <.5>", "0 <0.5> ", "<0.000012>", " <0.000012>",
               "0 <unfinished ...> <0.000001>", "0 = 1 <0.000001>", "1 <0.١>", "7 <0.000012>x"]


def test_a_timed_tail_is_read_as_result_and_duration_like_the_general_path():
    # -T gives every call a duration of its own: the fast path reads "result <seconds>" as the result
    # (through a memo of results) and the seconds apart; it must say what _result says of the whole
    # tail (or None: the general path judges), for odd tails too, and keep its memo of whole tails bounded
    for tail in TIMED_TAILS:
        tails: dict = {}
        results: dict = {}
        got = stc._timed_tail_of(tails, results, {}, tail)
        if tail.startswith("0 <unfinished ...>"):   # what precedes the duration ends as an unfinished
            assert got is None                      # call does: the general path judges the line
        else:
            assert got == stc._tail_of(tail), tail
        line = f'read(3, "", 1) = {tail}\n'
        assert _outcome(line) == _outcome(line, _fast=False), tail
        assert stc._timed_tail_of(tails, results, {}, tail) == got, tail      # from the memo
        if got is not None:
            assert [type(v) for v in got] == [type(v) for v in stc._tail_of(tail)], tail
    tails, results = {}, {}
    for i in range(stc._TAIL_MEMO_SIZE + 500):
        assert stc._timed_tail_of(tails, results, {}, f"4096 <0.{i:06d}>") == (4096, None, float(f"0.{i:06d}"))
    assert len(tails) == stc._TAIL_MEMO_SIZE and "4096 <0.000000>" in tails   # full: kept, not cleared
    assert results == {"4096": (4096, None, None)}


# Lines of odd shapes for the fast path to hand over to the general one (or to get exactly right).
ODD_LINES = [
    '5 00:00:01.000000 read(3</a b.bin>,  <unfinished ...>',
    '5 00:00:01.000300 <... read resumed>"ab", 2) = 2 <0.000300>',
    '5 00:00:01.000300 <... read resumed>) = 2 <0.000300>',
    '5 00:00:01.000300 <... write resumed>"ab", 2) = 2 <0.000300>',
    '6 00:00:01.000100 futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>',
    '6 00:00:01.000200 <... futex resumed>) = 0 <0.000100>',
    '6 00:00:01.000200 pread64(3</f>, "x"..., 4096, 8192) = 4096 <0.000010>',
    '6 00:00:01.000200 pread64(3</f>, 4096) = 4096',
    '6 00:00:01.000200 read(  3</f>,  <unfinished ...>',
    '6 00:00:01.000200 read(3</a, b>, "x", 1) = 1 <0.1>',
    '6 00:00:01.000200 read(3</a>b>, "x", 1) = 1 <0.1>',
    '6 00:00:01.000200 read(3, "x", 1) = 1 <0.1>',
    '6 00:00:01.000200 read(3</f>, "x", n) = 1 <0.1>',
    '6 00:00:01.000200 read(3</f>, "x) = 5", 1) = 1 <0.1>',
    '6 00:00:01.000200 close(3</f>) = 0 <0.1>',
    '6 00:00:01.000200 close(3) = 0 ([a, b]) <0.1>',
    '6 00:00:01.000200 exit_group(0)     = ?',
    '6 00:00:01.000200 poll([{fd=3, events=POLLIN}], 1, 100) = 1 ([{fd=3, revents=POLLIN}]) <0.1>',
    '6 00:00:01.000200 openat(AT_FDCWD, "/nope", O_RDONLY) = -1 ENOENT (No such file or directory) <0.1>',
    '6 00:00:01.000200 read(0</dev/pts/0>, 0x7ffd, 1024) = ? ERESTARTSYS (To be restarted if SA_RESTART is set) <0.5>',
    '6 00:00:01.000200 read(0</dev/pts/0>, 0x7ffd, 1024) = ? <unavailable>',
    '6 00:00:01.000200 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 3, 0) = 0x7f00aa000000 <0.000004>',
    '6 00:00:01.000200 read(3</f>, "x", 1) = 5 <unfinished ...>',
    '6 00:00:01.000200 syscall(calls, errors) = 0 <0.1>',
    '6 00:00:01.000200 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7} ---',
    '6 00:00:01.000200 --- SIGSYS {si_signo=SIGSYS, si_syscall=1} ---',
    '6 00:00:01.000200 +++ exited with 2 +++',
    '6 00:00:01.000200 +++ syscall calls +++',
    '6 00:00:01.000200 +++ broken',
    '[pid  7] read(3, "", 10) = 0',
    '00:00:01.000200 read(3</f>, "", 10) = 0 <0.1>',
    'read(3, "", 16384)                      = 0',
    '% time     seconds  usecs/call     calls    errors syscall',
    '------ ----------- ----------- --------- --------- ----------------',
    '100.00    0.000037           3        10           total',
    'strace: Process 9 detached',
    '',
    'this is not strace',
    '5 00:00:01.000000 read(3</a b.bin>,   <unfinished ...>',         # the blanks a resumed line
    '5 00:00:01.000000 read(3</a b.bin>, <unfinished ...>',           # joins after the last ","
    '5 00:00:01.000000 read(3</a b.bin>,, <unfinished ...>',
    '5 00:00:01.000300 <... read resumed>  "ab", 2 ) = 2 <0.000300>',
    '5 23:59:59 read(3</a b.bin>, "ab", 2) = 2 <0.000300>',           # -t: whole seconds
]


# -ttt/-r (the fast path reads their time as whole microseconds over 10**6) and string arguments
ODD_S_LINES = [
    '7  1700000000.163944 read(3</f>, "x", 1) = 1 <0.000010>',
    '7  9007199254.740993 read(3</f>, "x", 1) = 1 <0.000010>',       # past 2**53 microseconds
    '7  99999999999.999999 close(3</f>) = 0 <0.000010>',
    '7  1700000000.163944123 read(3</f>, "x", 1) = 1 <0.000010>',    # ns: not 6 digits
    '7  1700000000.163 read(3</f>, "x", 1) = 1 <0.000010>',
    '7  1700000000 read(3</f>, "x", 1) = 1 <0.000010>',
    '7       0.000123 openat(AT_FDCWD, "a\\"b\\\\", O_RDONLY) = 3 <0.000010>',
    '7       0.000000 openat(AT_FDCWD, "/tmp/x"..., O_RDONLY) = 3 <0.000010>',
    '7       0.000001 openat(AT_FDCWD, "never closes, O_RDONLY) = 3 <0.000010>',
    '7      12.345678 newfstatat(3</f>, "", {st_mode=S_IFREG|0644, ...}, AT_EMPTY_PATH) = 0 <0.000008>',
    '7  1700000000.000001 brk(NULL <unfinished ...>',
    '7  1700000000.000002 <... brk resumed>) = 0x55 <0.000001>',
    '[pid     8] 1700000000.500000 close(4) = 0 <0.000001>',
    '8  1700000001.000000 +++ exited with 0 +++',
    '8  99999999999.000001 +++ exited with 0 +++',                  # past 2**53 microseconds: the
    '8  99999999999.000002 --- SIGCHLD {si_signo=SIGCHLD} ---',      # general path reads them
    '8  99999999999.000003 read(3</f>,  <unfinished ...>',
    '8  99999999999.000004 <... read resumed>"x", 1) = 1 <0.000001>',
    '1700000000.163944 read(3</f>, "x", 1) = 1 <0.000010>',
]


@pytest.mark.parametrize("seed,odd", [(seed, odd) for seed in range(4) for odd in ("hm", "s")])
def test_fast_path_equals_general_path_on_odd_lines(seed, odd, tmp_path, monkeypatch):
    monkeypatch.setattr(stc, "_CHUNK", 5)
    monkeypatch.setattr(stc, "_BLOCK", 64)
    rnd = random.Random(seed)
    for case in range(60):
        lines = [rnd.choice(ODD_LINES if odd == "hm" else ODD_S_LINES) for _ in range(rnd.randint(1, 30))]
        want = _outcome(lines, _fast=False)
        assert _outcome(lines) == want, lines
        assert _outcome([ln + "\n" for ln in lines]) == want, lines
        path = tmp_path / f"{case}.txt"
        end = rnd.choice(["", "\n"])
        path.write_text("\n".join(lines) + end)
        with open(path) as f:
            got = _outcome(f)
        if end or not lines[-1]:
            assert got == want, lines
        else:   # a file that ends inside a line: the records before it, then that line refused as cut
            with open(path) as f:
                cut = _outcome(f, _fast=False)
            assert got == cut, lines
            if len(lines) > 1:      # lines that carry their newlines, the last one without
                assert _outcome([ln + "\n" for ln in lines[:-1]] + [lines[-1]]) == cut, lines
                assert _outcome([ln + "\n" for ln in lines[:-1]] + [lines[-1]], _fast=False) == cut, lines
            assert _outcome("\n".join(lines)) == cut and _outcome("\n".join(lines), _fast=False) == cut, lines
            assert cut[-1][0] == "ParseError" and (cut[-1][1] == len(lines) or cut[-1][2] == want[-1][2]), lines


@pytest.mark.parametrize("fmt", ["{s:d}.{us:06d}", "{s:12d}.{us:06d}"])  # -ttt, -r
def test_fast_path_reads_seconds_stamps_as_float_does(fmt):
    # the fast path reads -ttt/-r as (microseconds) / 10**6: the same float as float() of the stamp
    rnd = random.Random(5)
    stamps = [fmt.format(s=rnd.randrange(10 ** rnd.randrange(1, 12)), us=rnd.randrange(10 ** 6))
              for _ in range(3000)]
    text = "".join(f"9 {t} close(3) = 0 <0.000001>\n" for t in stamps)
    got = [rec["time"] for rec in st.parse_calls(text)]
    assert got == [rec["time"] for rec in st.parse_calls(text, _fast=False)]
    assert got == [float(t) for t in stamps]


# ------------------------------------------------------------------------------------------------
# every format strace writes: real traces of the same workloads (python -m recorders.l03_strace --formats)
# ------------------------------------------------------------------------------------------------

FORMATS = [ref for ref in recordings.available("strace") if ref.startswith("strace/format-")]


def _format_pid(ref: str) -> int | None:
    """-ff files are format-ff-...<pid>: the pid is the name's suffix."""
    _, _, suffix = ref.partition(".")
    return int(suffix) if suffix else None


def test_the_formats_are_all_recorded():
    names = {ref.split("/")[1].partition(".")[0] for ref in FORMATS}
    for stamp in ("t", "tt", "ttt", "r", "none"):
        assert {f"format-one-{stamp}-T-y", f"format-f-{stamp}-T-y", f"format-fpid-{stamp}-T-y"} <= names
    assert {"format-ff-tt-T-y", "format-ff-none", "format-f-none", "format-one-none"} <= names
    assert sum(ref.startswith("strace/format-ff-tt-T-y.") for ref in FORMATS) >= 3  # a file per process


@pytest.mark.parametrize("ref", FORMATS)
def test_every_format_takes_the_fast_path(ref, monkeypatch):
    # the fast path hands a line to the general one only when it is strace's own message, or a line
    # that message cut in two (on stderr); before, only -tt lines took it
    general = []
    real = stc._general

    def spy(state, line, line_no):
        general.append(line)
        return real(state, line, line_no)

    monkeypatch.setattr(stc, "_general", spy)
    text = recordings.load(ref).text
    got = list(st.parse_calls(text, pid=_format_pid(ref)))
    n_general = len(general)
    assert got and got == list(st.parse_calls(text, pid=_format_pid(ref), _fast=False))
    for i, line in enumerate(text.splitlines()):
        if "strace: Process " in line and not line.startswith("strace: "):
            assert line in general and text.splitlines()[i + 1] in general
    assert n_general <= 3 * text.count("strace: Process "), [g[:80] for g in general]


@pytest.mark.parametrize("ref", FORMATS)
def test_every_format_gives_the_workload(ref):
    # the same dd bs=1 count=100 in every format: its reads, with what each option adds
    meta = recordings.load(ref).meta
    flags = meta["argv"][:meta["argv"].index("--")]
    recs = list(st.parse_calls(recordings.load(ref).text, pid=_format_pid(ref)))
    ones = [r for r in recs if r["syscall"] == "read" and r["size"] == 1]
    if "-ff" in flags and len(ones) == 0:
        return  # a -ff file of another process than dd bs=1
    assert len(ones) == 100 and all(r["result"] == 1 and r["fd"] == 0 and r["errno"] is None for r in ones)
    assert all((r["path"] or "").endswith("data-32KiB.bin") == ("-y" in flags) for r in ones)
    assert all((r["duration"] is not None) == ("-T" in flags) for r in recs if r["event"] is None and r["result"] is not None)
    pids = {r["pid"] for r in recs}
    if "-ff" in flags:
        assert pids == {_format_pid(ref)}
    elif "-f" in flags:
        assert len(pids - {None}) >= 4  # sh and three dd's
    else:
        assert pids == {None}
    times = [r["time"] for r in recs]
    if not {"-t", "-tt", "-ttt", "-r"} & set(flags):
        assert set(times) == {None}
    elif "-r" in flags:
        assert times[0] == 0.0 and all(0 <= t < 10 for t in times)
    elif "-ttt" in flags:
        from datetime import datetime
        date = datetime.strptime(meta["date"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
        assert all(abs(t - date) < 60 for t in times)
    else:
        assert all(0 <= t < 86400 for t in times) and times == sorted(times) or "-f" in flags
        if "-t" in flags:
            assert all(t == int(t) for t in times)
    events = [r["event"] for r in recs if r["event"]]
    if "-f" in flags:
        assert events.count("exit") == 4 and "signal" in events
        assert [r["result"] for r in recs if r["event"] == "exit"].count(1) == 1  # the dd of a missing file


def _cases(text: str, rnd: random.Random, cuts: int, mutations: int, window: int = 40) -> list[str]:
    """Pieces of ``text`` (``window`` lines either side of a random line, starting mid-trace like a
    tail of it): cut inside that line, or with that line changed (a character replaced, dropped or
    doubled, or the line ended early where it has a digit, a space, a bracket or an "=": where the
    patterns decide)."""
    lines = text.splitlines(keepends=True)
    out = []
    for n in range(cuts + mutations):
        i = rnd.randrange(len(lines))
        before, line, after = "".join(lines[max(0, i - window):i]), lines[i], "".join(lines[i + 1:i + window])
        if n < cuts:
            out.append(before + line[:rnd.randrange(max(1, len(line) - 1))])
            continue
        marks = [k for k, c in enumerate(line) if c in " 0123456789()<>[]=,.:+-\"?"] or [0]
        k = rnd.choice(marks)
        op = rnd.randrange(4)
        if op == 0:
            line = line[:k] + rnd.choice(" 0a9:.()<>[]=,-+\"x\n") + line[k + 1:]
        elif op == 1:
            line = line[:k] + line[k + 1:]
        elif op == 2:
            line = line[:k] + line[k] * 2 + line[k + 1:]
        else:
            line = line[:k] + "\n"
        out.append(before + line + after)
    return out


@pytest.mark.parametrize("ref", FORMATS)
def test_fast_path_equals_general_path_on_every_format_cut_and_mutated(ref, tmp_path, monkeypatch):
    # real traces of each format, cut inside a line and with one line mutated: the same records, value
    # types, key order and ParseError (line number, message) on both paths, in runs of 7 lines
    monkeypatch.setattr(stc, "_CHUNK", 7)
    monkeypatch.setattr(stc, "_BLOCK", 211)
    rnd = random.Random(ref)
    pid = _format_pid(ref)
    errors = 0
    for case in _cases(recordings.load(ref).text, rnd, 6, 24):
        want = _outcome(case, pid=pid, _fast=False)
        assert _outcome(case, pid=pid) == want
        lines = case.splitlines(keepends=True)  # one line without its newline cannot show a cut
        assert _outcome(lines, pid=pid) == _outcome(lines, pid=pid, _fast=False)
        path = tmp_path / "trace.txt"
        path.write_text(case)
        with open(path) as f:
            assert _outcome(f, pid=pid) == want
        errors += bool(want) and want[-1][0] == "ParseError"
    assert errors >= 6  # every cut is refused (a cut trace ends inside a line)


def test_ff_files_get_the_pid_of_their_name(tmp_path):
    # strace -ff -o PREFIX writes PREFIX.<pid>, lines without pids: each record gets its file's pid
    refs = [ref for ref in FORMATS if ref.startswith("strace/format-ff-tt-T-y.")]
    for ref in refs:
        (tmp_path / f"trace.{_format_pid(ref)}").write_text(recordings.load(ref).text)
    (tmp_path / "trace.txt").write_text("not a -ff file")
    (tmp_path / "trace.1.bak").write_text("nor this")
    got = list(st.parse_call_files(tmp_path / "trace"))
    want = [rec for ref in sorted(refs, key=_format_pid)
            for rec in st.parse_calls(recordings.load(ref).text, pid=_format_pid(ref), _fast=False)]
    assert got == want and {r["pid"] for r in got} == {_format_pid(ref) for ref in refs}
    assert [r["pid"] for r in st.parse_calls(recordings.load(refs[0]).text)][:1] == [None]  # without pid=
    (tmp_path / "trace.9").write_text('read(3, "", 1) = 0\nnot strace\n')
    with pytest.raises(ParseError, match="trace.9: not a strace syscall line") as e:
        list(st.parse_call_files(tmp_path / "trace"))
    assert e.value.line_no == 2


def test_a_line_cut_by_strace_s_attach_message_is_joined():
    # on stderr (no -o), strace's "Process N attached" can land inside a line of the trace
    text = ('10:00:00.000001 clone(child_stack=NULL, flags=SIGCHLDstrace: Process 7 attached\n'
            ', child_tidptr=0x7f) = 7 <0.000100>\n'
            '[pid     6] 10:00:00.000200 vfork(strace: Process 8 attached\n'
            ' <unfinished ...>\n'
            '[pid     6] 10:00:00.000300 <... vfork resumed>) = 8 <0.000100>\n')
    for fast in (True, False):
        clone, vfork = st.parse_calls(text, _fast=fast)
        assert (clone["syscall"], clone["args"], clone["result"], clone["time"]) == \
            ("clone", "child_stack=NULL, flags=SIGCHLD, child_tidptr=0x7f", 7, 36000.000001)
        assert (vfork["pid"], vfork["syscall"], vfork["args"], vfork["result"]) == (6, "vfork", "", 8)
        cut = text.split("\n")[0] + "\n"  # the trace ends after the message: the line never ended
        with pytest.raises(ParseError, match="ends inside this line") as e:
            list(st.parse_calls(cut, _fast=fast))
        assert e.value.line_no == 1


@pytest.mark.parametrize("newline", [None, "", "\n", "\r", "\r\n"])
@pytest.mark.parametrize("ends", [[b"\n"], [b"\r\n"], [b"\n", b"\r", b"\n", b"\r\n"]])
def test_fast_path_reads_files_as_they_iterate(newline, ends, tmp_path, monkeypatch):
    # a file is read in blocks only where its lines end at "\n": every newline= mode, mixed endings
    monkeypatch.setattr(stc, "_BLOCK", 64)
    rnd = random.Random(0)
    lines = [rnd.choice(ODD_LINES[:22]) for _ in range(200)]
    path = tmp_path / "trace.txt"
    for first in (b"\n", ends[-1]):
        path.write_bytes(lines[0].encode() + first + b"".join(ln.encode() + rnd.choice(ends) for ln in lines[1:]))
        with open(path, newline=newline) as f:
            want = _outcome(f, _fast=False)
        with open(path, newline=newline) as f:
            assert _outcome(f) == want


def test_calls_read_with_fd_path_size_duration():
    r = _one('1234  10:00:01.500000 read(3</tmp/a b.bin>, "\\0\\1"..., 4096) = 4096 <0.000012>')
    assert (r["pid"], r["syscall"], r["fd"], r["path"], r["size"], r["result"], r["duration"]) == \
        (1234, "read", 3, "/tmp/a b.bin", 4096, 4096, 0.000012)
    assert r["time"] == 36001.5 and r["errno"] is None and r["event"] is None


def test_calls_errno_padding_hex_and_unknown_results():
    r = _one('openat(AT_FDCWD, "/nope", O_RDONLY) = -1 ENOENT (No such file or directory)')
    assert (r["pid"], r["time"], r["result"], r["errno"], r["path"], r["duration"]) == \
        (None, None, -1, "ENOENT", "/nope", None)
    r = _one("close(3)                                = 0")
    assert r["fd"] == 3 and r["result"] == 0
    r = _one("7 12:00:00.000001 mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, 3, 0) = 0x7f00aa000000 <0.000004>")
    assert r["result"] == 0x7F00AA000000 and r["fd"] is None
    r = _one("7 12:00:00.000001 exit_group(0) = ?")
    assert r["result"] is None and r["fd"] is None
    r = _one("7 12:00:00.000001 read(0</dev/pts/0>, 0x7ffd, 1024) = ? ERESTARTSYS "
             "(To be restarted if SA_RESTART is set) <0.5>")
    assert r["result"] is None and r["errno"] == "ERESTARTSYS" and r["duration"] == 0.5


def test_calls_string_argument_that_looks_like_a_result():
    r = _one('9 00:00:00.1 write(1</dev/null>, "x) = 5\\n", 7) = 7 <0.000002>')
    assert r["args"] == '1</dev/null>, "x) = 5\\n", 7' and r["size"] == 7 and r["result"] == 7


@pytest.mark.parametrize("line, pid, t", [
    ("[pid  4242] read(3, \"\", 10) = 0", 4242, None),
    ("1700000000.250000 read(3, \"\", 10) = 0", None, 1700000000.25),
    ("4242       0.000123 read(3, \"\", 10) = 0", 4242, 0.000123),
    ("10:00:00 read(3, \"\", 10) = 0", None, 36000.0),
])
def test_calls_other_prefixes(line, pid, t):
    r = _one(line)
    assert r["pid"] == pid and r["time"] == t and r["syscall"] == "read" and r["size"] == 10


def test_calls_unfinished_resumed_joined_new_and_old_spacing():
    new = ["5 00:00:01.000000 read(3</f>,  <unfinished ...>",
           "6 00:00:01.000100 getpid() = 6 <0.000001>",
           '5 00:00:01.000300 <... read resumed>"ab", 2) = 2 <0.000300>']
    got = list(st.parse_calls(new))
    assert [g["syscall"] for g in got] == ["getpid", "read"]
    r = got[1]
    assert r["time"] == 1.0 and r["duration"] == 0.0003 and r["args"] == '3</f>, "ab", 2'
    assert r["fd"] == 3 and r["path"] == "/f" and r["size"] == 2
    old = ["5 read(3,  <unfinished ...>", '5 <... read resumed> "ab", 2) = 2']
    assert list(st.parse_calls(old))[0]["args"] == '3, "ab", 2'


def test_calls_events_signals_exits_and_never_resumed():
    lines = ["8 00:00:00.1 futex(0x1, FUTEX_WAIT, 0, NULL <unfinished ...>",
             "9 00:00:00.2 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---",
             "9 00:00:00.3 --- stopped by SIGSTOP ---",
             "8 00:00:00.4 +++ killed by SIGKILL (core dumped) +++",
             "9 00:00:00.5 +++ exited with 2 +++",
             "strace: Process 9 detached"]
    got = list(st.parse_calls(lines))
    assert [(g["pid"], g["event"], g["signal"], g["result"]) for g in got] == [
        (9, "signal", "SIGCHLD", None), (9, "stopped", "SIGSTOP", None),
        (8, "unfinished", None, None), (8, "killed", "SIGKILL", None), (9, "exit", None, 2)]
    assert all(g["syscall"] is None for g in got)
    assert list(st.parse_calls(lines, events=False)) == []


def test_calls_skips_the_summary_of_minus_C():
    text = recordings.load("strace/summary-C-read-16k").text
    calls = [c for c in st.parse_calls(text) if c["syscall"] == "read"]
    rows = st.parse_summary(text)
    assert len(calls) == next(r["calls"] for r in rows if r["syscall"] == "read")


def test_calls_garbage_raises_with_line_number():
    with pytest.raises(ParseError) as e:
        list(st.parse_calls(["1 00:00:00.1 read(3, \"\", 1) = 0", "this is not strace"]))
    assert e.value.line_no == 2


def test_calls_streams_without_reading_everything():
    line = '1 00:00:00.000001 read(3</f>, "x", 1) = 1 <0.000001>'
    endless = itertools.repeat(line)           # never ends: only a streaming parser can answer
    got = list(itertools.islice(st.parse_calls(endless), 1000))
    assert len(got) == 1000 and got[-1]["size"] == 1


def test_trace_threads_recording_joins_every_pair():
    text = recordings.load("strace/trace-threads").text
    lines = text.splitlines()
    calls = list(st.parse_calls(text))
    n_resumed = sum("resumed>" in ln for ln in lines)
    n_events = sum(" --- " in ln or " +++ " in ln for ln in lines)
    assert len(calls) == len(lines) - n_resumed
    assert sum(c["event"] is not None for c in calls) == n_events
    # two threads pread 100,000 bytes at 4 KiB and 8 KiB, the child 64 KiB once: 26 + 14 + 1 calls
    preads = [c for c in calls if c["syscall"] == "pread64" and (c["path"] or "").endswith("data-100000B.bin")]
    assert sorted((c["size"], sum(1 for d in preads if d["size"] == c["size"])) for c in preads)[-1] == (65536, 1)
    assert sum(1 for c in preads if c["size"] == 4096) == 26 and sum(1 for c in preads if c["size"] == 8192) == 14
    exits = {c["pid"]: c["result"] for c in calls if c["event"] == "exit"}
    assert sorted(exits.values()) == [0, 0, 0, 3]


def test_calls_frame_relative_time():
    df = st.calls_frame(st.parse_calls(recordings.load("strace/trace-reads-warm").text))
    assert df["t"].min() == 0 and (df["syscall"] == "read").sum() == 16 * 2**20 // 65536 + 1   # and the read at the end


# ------------------------------------------------------------------------------------------------
# errors of the runner
# ------------------------------------------------------------------------------------------------

def test_diagnose_names_the_cause():
    # the message strace 6.1 printed here when run as an unprivileged user against pid 1
    msg = "strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted"
    why = st.diagnose(msg)
    assert why and "ptrace_scope" in why and ("seccomp" in why or "Yama" in why)
    assert st.diagnose("strace: Can't stat 'x': No such file or directory") is None


def test_strace_missing_raises_toolmissing(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing) as e:
        st.run(st.count_argv([sys.executable, "-c", "0"], output=tmp_path / "o"), timeout=10)
    assert "apt-get install strace" in str(e.value)


@pytest.mark.live
@needs("strace")
def test_traced_program_missing(tmp_path):
    with pytest.raises(ToolMissing):
        st.run(st.count_argv([str(tmp_path / "no-such-program")], output=tmp_path / "o"), timeout=30, cwd=tmp_path)


# ------------------------------------------------------------------------------------------------
# lesson 03 checks and charts
# ------------------------------------------------------------------------------------------------

def test_check_03_predict_hints():
    from iolab import check

    assert check_03.check_03_predict(335, 1_000_000, 3_000)
    with pytest.raises(check.CheckFailed, match="end of the file"):
        check_03.check_03_predict(334, 1_000_000, 3_000)
    with pytest.raises(check.CheckFailed):
        check_03.check_03_predict("335", 1_000_000, 3_000)


def test_check_03_storm_on_a_recording():
    from iolab import check

    df = st.summary_frame(st.parse_summary(recordings.load("strace/count-import-pandas").text))
    top = df.sort_values("calls", ascending=False).iloc[0]
    assert check_03.check_03_storm(df, top["syscall"], int(top["errors"]))
    with pytest.raises(check.CheckFailed):
        check_03.check_03_storm(df, "read", 0)
    with pytest.raises(check.CheckFailed):
        check_03.check_03_storm(df, top["syscall"], int(top["errors"]) + 1)


def test_lesson_03_charts_have_units_and_log_axes():
    import pandas as pd


    sweep = pd.DataFrame({"read_size": [1, 4096], "calls": [100_001, 26], "file_size": 100_000})
    fig = plots.syscall_counts_vs_read_size(sweep)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "bytes" in fig.layout.xaxis.title.text
    calls = st.calls_frame(st.parse_calls(recordings.load("strace/trace-reads-warm").text))
    hist = plots.syscall_latency_histogram(calls.assign(label="warm"))
    assert hist.layout.xaxis.type == "log" and "µs" in hist.layout.xaxis.title.text
    assert sum(sum(t.y) for t in hist.data) == (calls["syscall"] == "read").sum()
    timeline = plots.reads_timeline(st.calls_frame(st.parse_calls(recordings.load("strace/trace-forks-reads").text)))
    assert len(timeline.data) == 3 and "ms" in timeline.layout.xaxis.title.text


@pytest.mark.timeout(120)   # a bound thousands of times the fix's time, not a timing: before, hours
@pytest.mark.parametrize("body", ["9" * (1 << 20), "a" * (1 << 20), "12345 " + "9" * (1 << 20)])
def test_a_line_of_a_million_characters_is_refused_at_once(body):
    """The layout of a run was found by an unanchored search: each position inside a long run of digits
    ran to its end, 34 s for one 64 KiB line of digits and hours for 1 MiB (the parser attack's huge
    lines). Anchored at the line's start, it is one try per line."""
    with pytest.raises(ParseError):
        list(st.parse_calls(body + "\n"))
