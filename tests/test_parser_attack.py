"""Every parser refuses what it cannot read with ParseError, never returns a cut record as complete,
and reads a 10 MB line in linear time (issue 16).

Two parts: a seeded subset of benchmarks/attack_parsers.py (every parser; real inputs cut at line
boundaries and inside lines, mutated, garbage), and one regression test per case the issue names.
Timings are the benchmark's; the tests here only give a 10 MB line a generous limit.
"""
from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
import time
from pathlib import Path

import pytest
from conftest import needs

from iolab import ParseError, fsinfo, pagecache, recordings, slurm, units
from iolab.lessons.l01_page_cache import writes as page_cache_writes
from iolab.objectstore import slowlink
from iolab.tools import bpftrace, darshan, dd, fio, ior, mdtest, strace

_SPEC = importlib.util.spec_from_file_location(
    "attack_parsers", Path(__file__).resolve().parents[1] / "benchmarks" / "attack_parsers.py")
attack = importlib.util.module_from_spec(_SPEC)
sys.modules["attack_parsers"] = attack
_SPEC.loader.exec_module(attack)

TARGETS = {t.name: t for t in attack.targets()}
MB10 = 10 * 1024 * 1024


def _subset(t, rnd: random.Random):
    """At most four inputs of a parser: its two smallest and two others, chosen by the seed."""
    by_size = sorted(t.inputs, key=lambda x: len(x[1]))
    rest = by_size[2:]
    return by_size[:2] + rnd.sample(rest, min(2, len(rest)))


def test_every_parser_is_attacked():
    """Every function of iolab that reads a tool's text or a file others can shape is a target of the
    attack: the parse*/read* functions of the tools, the ground and the lessons, and the loaders."""
    import ast

    root = Path(__file__).resolve().parents[1] / "iolab"
    found = set()
    for path in root.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and re.match(r"parse|read_manifest|clat_histogram|summary_total"
                                                              r"|reorder_facts|command_flags|window$|mounts$"
                                                              r"|implementations$|one_file_calls|sync_counts"
                                                              r"|removal_calls|read_log$|load$", node.name):
                found.add(f"{path.stem}.{node.name}")
    named = {n.replace("mdtest.one_file", "calls.one_file").replace("mdtest.sync", "calls.sync")
             .replace("mdtest.removal", "calls.removal") for n in TARGETS}
    named |= {"strace_calls.parse_calls"}                 # strace.parse_calls is it, under the same name
    not_parsers = {"readahead_probes.window"}             # a measurement, named like mdtest.window
    # landed on main while issue 21 was done (lesson 08, strace -ff): not attacked yet, named here so
    # that the next parser to land cannot slip past unseen
    not_yet = {"strace_calls.parse_call_files"}
    not_parsers |= not_yet
    outside = found - named - not_parsers - {"results.load"}   # results.load: being rewritten (h21-names)
    assert not outside, f"parsers outside benchmarks/attack_parsers.py: {sorted(outside)}"


NEEDS = {"darshan.read_log": ("PyDarshan",)}      # the parsers that need a tool to read at all


@pytest.mark.parametrize("name", [pytest.param(n, marks=needs(*NEEDS[n])) if n in NEEDS else n for n in sorted(TARGETS)])
def test_attack_subset_finds_no_wrong_answer_and_no_foreign_exception(name):
    t = TARGETS[name]
    rnd = random.Random(f"test-{name}")
    small = attack.Target(**{**t.__dict__, "inputs": _subset(t, rnd)})
    bad = []
    n = 0
    kinds = set()
    for case in attack.cases(small, seed=1, line_cuts=30, byte_cuts=6, mutations=8, garbage=8, families=2):
        isolate = t.isolate or case.kind.startswith(("special", "nest", "digits"))
        outcome, _, detail = attack.judge_in_child(small, case, 60) if isolate else attack.judge(small, case)
        n += 1
        kinds.add(case.kind.split("-")[0])
        if outcome in ("WRONG", "FOREIGN", "timeout"):
            bad.append(f"{outcome} {case.kind} {case.label}: {detail}")
    assert n > 10
    assert "concat" in kinds and (t.binary or kinds & {"digits", "impossible"} or name == "strace.parse_version")
    assert not bad, "\n".join(bad[:10])


# --- the cases issue 16 names: each failed before its fix ------------------------------------------

def _text(ref: str) -> str:
    return recordings.load(ref).text


def test_fio_percentile_named_by_garbage_is_a_parse_error():
    text = _text("fio/seed000-readwrite-local").replace('"99.990000"', '"99.99000:"', 1)
    assert '"99.99000:"' in text
    with pytest.raises(ParseError, match="percentile") as e:                # was ValueError
        fio.parse(text)
    assert e.value.line_no is not None and "99.99000:" in e.value.line


@pytest.mark.parametrize("poke", [lambda d: d.update(jobs=[1]), lambda d: d["jobs"][0].update(read=1),
                                  lambda d: d["jobs"][0]["read"].update(total_ios="x"),
                                  lambda d: d["jobs"][0].update(groupid="x")])
def test_fio_values_of_the_wrong_type_are_parse_errors(poke):
    doc = json.loads(_text("fio/seed000-readwrite-local"))
    poke(doc)
    with pytest.raises(ParseError):                                        # was AttributeError, ValueError
        fio.parse(json.dumps(doc, indent=2))


def test_fio_histogram_bin_that_is_not_a_number():
    text = _text("fio/write-then-randread-jsonplus")
    doc = json.loads(text)
    bins = next(j["read"]["clat_ns"]["bins"] for j in doc["jobs"] if "bins" in j.get("read", {}).get("clat_ns", {}))
    bins["9779,"] = bins.pop(next(iter(bins)))
    with pytest.raises(ParseError, match="bin"):                            # was ValueError
        fio.clat_histogram(json.dumps(doc, indent=2))


TRACE_LINE = '4242 10:00:00.000100 read(3</f>, "x", 1) = 1 <0.000010>\n'


@pytest.mark.parametrize("stamp", ["0.:00:00.000100", "10:00:00:00.000100", "10:00", "1..676582"])
def test_strace_time_stamp_that_is_not_one_is_a_parse_error(stamp):
    text = TRACE_LINE + TRACE_LINE.replace("10:00:00.000100", stamp)
    for fast in (True, False):                        # was ValueError ("invalid literal for int()", "unpack")
        with pytest.raises(ParseError, match="time stamp") as e:
            list(strace.parse_calls(text, _fast=fast))
        assert e.value.line_no == 2


def test_strace_last_line_cut_is_refused_after_the_calls_before_it():
    text = _text("strace/trace-forks-reads")
    cut = text[:text.index("\n", 5000) + 40]                  # 40 characters into a line
    got = []
    with pytest.raises(ParseError, match="cut short") as e:
        for c in strace.parse_calls(cut, events=False):
            got.append(c)
    whole = cut.count("\n")
    assert e.value.line_no == whole + 1
    assert got == list(strace.parse_calls(cut[:cut.rindex("\n") + 1], events=False))
    with open_text(cut) as f:                                 # a file cut the same way, read in blocks
        with pytest.raises(ParseError, match="cut short"):
            list(strace.parse_calls(f))
    with pytest.raises(ParseError, match="cut short"):        # lines that carry their newlines
        list(strace.parse_calls(cut.splitlines(keepends=True)))


class open_text:
    def __init__(self, text: str):
        import tempfile
        self._d = tempfile.TemporaryDirectory()
        self.path = Path(self._d.name) / "trace.txt"
        self.path.write_text(text)

    def __enter__(self):
        self._f = open(self.path)
        return self._f

    def __exit__(self, *exc):
        self._f.close()
        self._d.cleanup()


def test_mdtest_one_file_calls_cut_or_mutated():
    text = _text("mdtest/strace-one-file-tmp-4.0.0")
    with pytest.raises(ParseError, match="cut short"):                      # was a call with a cut result
        attack.lesson("one_file_calls")(text[:text.index("\n", 300) + 30])
    bad = re.sub(r" (\d\d:\d\d:\d\d\.\d+) ", " 08:19:41:761742 ", text, count=1)
    with pytest.raises(ParseError, match="time stamp"):                     # was ValueError
        attack.lesson("one_file_calls")(bad)


def test_mdtest_removal_calls_and_ior_parse_opens_refuse_a_cut_trace():
    text = _text("mdtest/removals-tmp-4.0.0")
    with pytest.raises(ParseError, match="cut short"):
        attack.lesson("removal_calls")(text[:-5])
    text = _text("ior/lesson-ext4-4.0.0-reorder-opens")
    with pytest.raises(ParseError, match="cut short"):
        ior.parse_opens(text[:-5])


def test_mdtest_window_with_an_impossible_date():
    text = _text("mdtest/tmp-4.0.0")
    bad = re.sub(r"-- started at \d\d/\d\d", "-- started at 13/45", text, count=1)
    with pytest.raises(ParseError, match="date"):                            # was ValueError
        mdtest.window(bad)


def _ior_json(ref: str = "ior/fpp-4.0.0-summary") -> dict:
    return json.loads(_text(ref))


@pytest.mark.parametrize("poke", [
    lambda d: d.update(tests=[1]),
    lambda d: d.update(tests=1.5),
    lambda d: d.update({"Command line": 1.5}),
    lambda d: d["tests"][0].update(Results=7),
    lambda d: d["tests"][0].update(Results=[3]),
    lambda d: d["tests"][0]["Results"][0].update(bwMiB="x"),
    lambda d: d["tests"][0]["Results"][0].update(bwMiB=float("inf")),
    lambda d: d["tests"][0].update(Options=[]),
    lambda d: d["tests"][0]["Parameters"].update(filePerProc="yes"),
    lambda d: d["tests"][0].update(TestID="zero"),
])
def test_ior_json_values_of_the_wrong_type_are_parse_errors(poke):
    d = _ior_json()
    poke(d)
    text = json.dumps(d, indent=2)
    with pytest.raises(ParseError):           # was AttributeError, TypeError, or "x" / inf as a bandwidth
        ior.parse(text)
    for parser in (ior.summary, ior.reorder_facts):                  # nothing but ParseError, if anything
        try:
            parser(text)
        except ParseError:
            pass


@pytest.mark.parametrize("poke", [lambda d: d.update(summary=3), lambda d: d.update(summary=[1]),
                                  lambda d: d["summary"][0].update(numTasks="two"),
                                  lambda d: d["summary"][0].update(bwMaxMIB=[1])])
def test_ior_summary_refuses_json_of_the_wrong_shape(poke):
    d = _ior_json()
    poke(d)
    with pytest.raises(ParseError):                                         # was TypeError
        ior.summary(json.dumps(d, indent=2))


def test_ior_text_summary_count_that_is_not_whole():
    text = _text("ior/fpp-verbose-4.0.0")
    lines = text.splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ln.startswith("Operation")) + 1
    tokens = lines[i].split()
    tokens[-13 if len(tokens) > 13 else 1] = "inf"                  # a count column (#Tasks, tPN, ...)
    bad = "".join(lines[:i] + [" ".join(tokens) + "\n"] + lines[i + 1:])
    with pytest.raises(ParseError):                                          # was OverflowError
        ior.summary(bad)


def test_ior_reorder_facts_cut_inside_an_option_or_not_a_number():
    text = _text("ior/fpp-reorder-4.0.0")
    at = text.index("ordering inter file") + len("ordering inter file") + 8
    with pytest.raises(ParseError, match="cut short"):                       # was 'const'
        ior.reorder_facts(text[:at])
    with pytest.raises(ParseError, match="whole number"):
        ior.reorder_facts(re.sub(r"(?m)^(tasks\s*:\s*)\d+", r"\1many", text, count=1))
    with pytest.raises(ParseError):                                          # was AttributeError
        d = _ior_json()
        d["tests"][0] = 1
        ior.reorder_facts(json.dumps(d))


def test_strace_summary_cut_right_after_total_is_refused():
    text = _text("strace/count-columns-read-4k")
    at = text.rindex("total") + len("total")
    for cut in (text[:at], text[:at + 12], text[:-3]):        # was a total row of nulls / a cut number
        with pytest.raises(ParseError):
            strace.parse_summary(cut)
        with pytest.raises(ParseError):
            strace.summary_total(cut)
    assert strace.parse_summary(text).total["calls"] == 750


def test_dd_multi_run_cut_inside_the_second_runs_records_line():
    text = _text("dd/s3fs-direct-read-sweep-cache")
    second = text.index("\n", text.index("copied")) + 1               # the second run starts here
    for cut in (text[:second + 8], text[:second + 3], text[:text.index("\n", second) + 1]):
        with pytest.raises(ParseError):                               # was the first run's (256/64 mixed)
            dd.parse(cut)
        with pytest.raises(ParseError):
            dd.parse_all(cut)
    assert dd.parse(text[:second])["records_in"] == 256


def test_slurm_scontrol_cut_inside_jobid_is_refused():
    text = _text("slurm/scontrol-completed")
    for cut in ("JobId=", "JobId=1", text[:text.index(" ", 20)], text.rstrip("\n")):
        with pytest.raises(ParseError):                                     # was a row
            slurm.parse_scontrol(cut)
    assert slurm.parse_scontrol(text)["JobState"] == "COMPLETED"


def test_meminfo_cut_or_not_a_number():
    text = Path("/proc/meminfo").read_text()
    with pytest.raises(ParseError, match="cut short"):
        pagecache.parse_meminfo(text[:text.index("\n", 100) - 2])          # was the number cut short
    with pytest.raises(ParseError):
        pagecache.parse_meminfo("Dirty:   ² kB\n")                          # was ValueError


def test_mounts_refuses_lines_it_cannot_read():
    with pytest.raises(ParseError):                                         # was [] (nothing said)
        fsinfo.mounts("this is not mountinfo\n")
    # a backslash and three digits that are not octal is no escape: kept as it is (was ValueError)
    assert fsinfo.mounts("22 1 254:0 / /a\\999b rw - ext4 /dev/vda rw\n")[0].mountpoint == "/a\\999b"
    text = Path("/proc/self/mountinfo").read_text()
    with pytest.raises(ParseError, match="cut short"):
        fsinfo.mounts(text[:text.index("\n", 200) - 3])                     # was a cut source or options
    assert fsinfo.mounts(text)


def test_darshan_cut_header_and_damaged_region_are_parse_errors(tmp_path):
    data = recordings.load("darshan/both-read-4k-ext4").path.read_bytes()
    short = tmp_path / "short.darshan"
    short.write_bytes(data[:444])
    with pytest.raises(ParseError, match="cut off"):                         # was struct.error
        darshan.check_header(short)
    header = darshan.check_header(recordings.load("darshan/both-read-4k-ext4").path)
    o, n = header.regions["module 1"]
    bad = bytearray(data)
    bad[o + n // 2] ^= 0xFF
    damaged = tmp_path / "damaged.darshan"
    damaged.write_bytes(bytes(bad))
    with pytest.raises(ParseError, match="damaged"):                         # PyDarshan aborted the process
        darshan.check_header(damaged)
    outcome, _, detail = attack.judge_in_child(TARGETS["darshan.read_log"],
                                               attack.Case("darshan.read_log", "mutate-byte", "x", bytes(bad)), 60)
    assert outcome == "ParseError", detail


# --- 10 MB lines: linear work (the benchmark times them; here a limit ten times what they take) ----

@pytest.mark.parametrize("line", ["ior -O " + "a" * MB10, "9" * MB10, "ior -O " + "(" * MB10])
def test_ior_command_flags_on_a_10_mb_line(line):
    t0 = time.perf_counter()
    ior.command_flags(line)                             # shlex took minutes
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("body", ["1 bytes (1 B) copied, 1 s, " + "inf" * (MB10 // 3) + "/s",
                                  "1 bytes (" + "(" * MB10 + ", 1 s, 1 MB/s", "9" * MB10 + " /s"])
def test_dd_refuses_a_10_mb_line_before_any_pattern(body):
    text = "1+0 records in\n1+0 records out\n" + body + "\n"
    for parser in (dd.parse, dd.parse_all):
        t0 = time.perf_counter()
        with pytest.raises(ParseError, match="not dd's"):                   # was over 120 s
            parser(text)
        assert time.perf_counter() - t0 < 10


def test_dd_patterns_are_linear_below_the_line_cap():
    # lines just under dd._MAX_LINE reach the patterns: the ones that backtracked are gone
    n = dd._MAX_LINE - 40
    for body in ("1 bytes (1 B) copied, 1 s, " + "inf" * (n // 3) + "/s", "1 bytes (" + "(" * n + ", 1 s, 1 MB/s"):
        t0 = time.perf_counter()
        try:
            dd.parse("1+0 records in\n1+0 records out\n" + body + "\n")
        except ParseError:
            pass
        assert time.perf_counter() - t0 < 1          # before: 0.4 s and 10 s at 20,000 characters


# --- the cases issue 21 (item 10) names: each failed before its fix -------------------------------------

BIG = "9" * 4400


@pytest.mark.parametrize("name,ref,at", [
    ("mdtest.parse", "mdtest/home-4.0.0", "was launched with "),
    ("mdtest.parse", "mdtest/home-4.0.0", "File creation"),
    ("dd.parse", "dd/read-4k-direct-c", ""),
    ("dd.parse_all", "dd/read-4k-direct-c", ""),
    ("fio.parse", "fio/seed000-readwrite-local", '"io_bytes" : '),
    ("ior.parse", "ior/fpp-4.0.0-summary", '"bwMiB": '),
])
def test_a_number_of_4400_digits_is_a_parse_error(name, ref, at):
    text = _text(ref)
    m = re.compile(r"\d+").search(text, text.index(at) + len(at))        # the first number after ``at``
    with pytest.raises(ParseError):                     # was ValueError: Exceeds the limit (4300 digits)
        TARGETS[name].call(text[:m.start()] + BIG + text[m.end():])


def test_a_number_of_4400_digits_in_the_ground_parsers():
    with pytest.raises(ParseError):                                        # was ValueError
        pagecache.parse_meminfo(f"MemTotal: {BIG} kB\n")
    with pytest.raises(ParseError):                                        # was OverflowError
        units.parse_size(BIG + "k")
    with pytest.raises(ParseError):                                        # was OverflowError
        slowlink.parse_metrics(f'toxiproxy_proxy_sent_bytes_total{{direction="downstream",proxy="store"}} {BIG}\n')
    with pytest.raises(ParseError):
        strace.parse_version(f"strace -- version {BIG}.1\n")
    assert slurm._exit_code(BIG + ":0") == (None, None)                     # was ValueError


DEEP = "[" * 100_000 + "]" * 100_000


def test_deeply_nested_json_is_a_parse_error(tmp_path, monkeypatch):
    doc = json.loads(_text("fio/seed000-readwrite-local"))
    text = json.dumps(doc, indent=2).replace('"jobs": [', '"deep": ' + DEEP + ', "jobs": [', 1)
    with pytest.raises(ParseError, match="nests deeper"):                  # was RecursionError
        fio.parse(text)
    text = _text("ior/fpp-4.0.0-summary").replace('"tests":', '"deep": ' + DEEP + ', "tests":', 1)
    with pytest.raises(ParseError, match="nests deeper"):                  # was RecursionError
        ior.parse(text)
    with pytest.raises(ParseError, match="nests deeper"):                  # was RecursionError
        slurm.read_manifest(f'#!/bin/bash\n# iolab-step a {{"params": {DEEP}}}\n')


def test_bpftrace_refuses_a_cut_last_line():
    text = _text("bpftrace/readahead-growth-ext4-64m")
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    assert last.startswith("W ") and last.endswith(" 11")                # order 11
    with pytest.raises(ParseError, match="cut short"):                       # was a record with order 1
        bpftrace.parse(text.rstrip("\n")[:-1])
    assert bpftrace.parse(text)[-1]["order"] == 11


def test_slowlink_refuses_a_cut_count():
    text = ('toxiproxy_proxy_sent_bytes_total{direction="downstream",listener="127.0.0.1:1",proxy="store",'
            'upstream="127.0.0.1:2"} 7593\n')
    assert slowlink.parse_metrics(text).down == 7593
    with pytest.raises(ParseError, match="end inside a line"):               # was 759
        slowlink.parse_metrics(text[:-2])
    with pytest.raises(ParseError, match="twice"):
        slowlink.parse_metrics(text + text)
    with pytest.raises(ParseError, match="whole number"):
        slowlink.parse_metrics(text.replace("7593", "-27"))


def test_parse_hdparm_raises_parse_error():
    good = ("\n/dev/sda:\n Timing cached reads:   14394 MB in  1.99 seconds = 7244.01 MB/sec\n"
            " Timing buffered disk reads: 126 MB in  3.08 seconds = 40.89 MB/sec\n")
    assert [r["mb_per_s"] for r in page_cache_writes.parse_hdparm(good)] == [7244.01, 40.89]
    for bad in ("", "hdparm: not found\n", good.replace("40.89 MB/sec", "40.8"),
                good.replace("3.08 seconds", "0.00 seconds"), good.replace("126 MB", BIG + " MB")):
        with pytest.raises(ParseError):                                      # was [] or a row, never an error
            page_cache_writes.parse_hdparm(bad)


def test_two_strace_tables_or_fio_documents_are_refused():
    text = _text("strace/count-columns-read-4k")
    with pytest.raises(ParseError, match="second strace summary table"):     # was the first table alone
        strace.parse_summary(text + text)
    with pytest.raises(ParseError, match="second strace summary table"):
        strace.summary_total(text + text)
    fio_text = _text("fio/seed000-readwrite-local")
    with pytest.raises(ParseError, match="second JSON document"):           # was the first document alone
        fio.parse(fio_text + fio_text)
    with pytest.raises(ParseError, match="not fio's normal report"):
        fio.parse(fio_text + "garbage after the document\n")


@pytest.mark.parametrize("old,new,match", [
    (" 750 ", " -27 ", "not negative"),                 # calls -27
    ("100.00", "   nan", "not negative"),               # a NaN share of the time
])
def test_strace_summary_impossible_values(old, new, match):
    text = _text("strace/count-columns-read-4k")
    lines = text.splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["total"])
    assert old in lines[k]
    lines[k] = lines[k].replace(old, new, 1)
    with pytest.raises(ParseError, match=match):                             # was a total of -27 calls / NaN
        strace.parse_summary("".join(lines))


def test_mdtest_max_below_min_and_dd_at_0_s():
    text = _text("mdtest/home-4.0.0")
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("File creation"))
    nums = re.findall(r"\d+\.\d+", line)
    mx, mn = nums[-4], nums[-3]
    swapped = line.replace(mx, "@", 1).replace(mn, mx, 1).replace("@", mn, 1)
    with pytest.raises(ParseError, match="Max below Min"):                   # was a row with max < min
        mdtest.parse(text.replace(line, swapped, 1))
    rec = dd.parse("1+0 records in\n1+0 records out\n512 bytes copied, 0 s, Infinity B/s\n")
    assert rec["bytes_per_s"] is None                                        # was inf
    with pytest.raises(ParseError):
        dd.parse("1+0 records in\n1+0 records out\n512 bytes copied, inf s, 1 MB/s\n")
