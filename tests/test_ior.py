"""iolab.tools.ior: argv, parsing of every version we have real outputs of, errors, runs, verdicts.

The golden files (tests/golden/ior) pin the full parse of real outputs; here are the edge cases:
errors and cut-short output must raise ParseError naming the line, never return a wrong number.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from iolab import ParseError, ToolFailed, recordings, units, workspace
from iolab.tools import ior
from conftest import mpi_leftovers_in_tmp


def rec(name: str) -> str:
    return recordings.load(f"ior/{name}").text


# --- argv ----------------------------------------------------------------------------------------

def test_argv_of_the_lesson_sequence():
    o = ior.Options(transfer_size="1MiB", block_size="16MiB", segments=4, file_per_process=True,
                    reorder_tasks=True, fsync=True, iterations=3, test_file="/w/t")
    assert o.argv("4.0.0") == ["ior", "-a", "POSIX", "-t", "1m", "-b", "16m", "-s", "4", "-i", "3", "-F", "-C",
                               "-e", "-o", "/w/t"]
    assert o.total_bytes(2) == 128 * units.MiB
    assert o.flags() == "-F -C -e"


@pytest.mark.parametrize("version,flag", [("3.2.1", "-B"), ("3.3.0", "--posix.odirect"),
                                          ("4.0.0", "--posix.odirect"), ("4.1.0+dev", "--posix.odirect"),
                                          (None, "--posix.odirect")])
def test_odirect_flag_depends_on_the_version(version, flag):
    argv = ior.Options(odirect=True).argv(version)
    assert argv[-1] == flag


def test_argv_phases_memory_and_extras():
    assert "-w" in ior.Options(read=False).argv() and "-r" not in ior.Options(read=False).argv()
    assert "-r" in ior.Options(write=False).argv()
    argv = ior.Options(memory_per_node="80%", keep_file=True, verbose=2, extra=("-g",), reorder_tasks=True,
                       task_offset=2, transfer_size=4096, block_size="1GiB").argv()
    assert argv[argv.index("-M") + 1] == "80%"
    assert argv[argv.index("-Q") + 1] == "2"
    assert argv.count("-v") == 2 and "-k" in argv and "-g" in argv
    assert argv[argv.index("-t") + 1] == "4k" and argv[argv.index("-b") + 1] == "1g"


@pytest.mark.parametrize("kwargs", [dict(block_size="1MiB", transfer_size="3MiB"), dict(segments=0),
                                    dict(iterations=True), dict(write=False, read=False), dict(api="NFS"),
                                    dict(api="MPIIO", odirect=True)])
def test_options_refuse_what_ior_would_refuse(kwargs):
    with pytest.raises(ValueError):
        ior.Options(**kwargs)


def test_extra_must_not_be_a_string():
    with pytest.raises(TypeError):
        ior.Options(extra="-g -k")


def test_version_tuple():
    assert ior.version_tuple("4.1.0+dev") == (4, 1, 0)
    assert ior.version_tuple("3.3.0rc1") == (3, 3, 0)
    assert ior.version_tuple(None) == () and ior.version_tuple("dev") == ()


@pytest.mark.parametrize("cmd,expected", [
    ("ior -t 1m -F -C -e --posix.odirect -o /x", dict(file_per_process=True, reorder_tasks=True, fsync=True,
                                                       odirect=True)),
    ("ior -t 1m -b 16m -s 4 -o /tmp/-e", dict(file_per_process=False, reorder_tasks=False, fsync=False,
                                               odirect=False)),
    ("ior -O fsync=1,filePerProc=1 -B -o x", dict(file_per_process=True, reorder_tasks=False, fsync=True,
                                                   odirect=True)),
    ("ior -FCe -o x", dict(file_per_process=True, reorder_tasks=True, fsync=True, odirect=False)),
])
def test_command_flags(cmd, expected):
    assert ior.command_flags(cmd) == expected


# --- parsing: versions and formats ---------------------------------------------------------------

def test_text_and_json_of_one_configuration_agree_on_the_facts():
    for version in ("3.3.0", "4.0.0"):
        text = ior.parse(rec(f"odirect-{version}"))
        js = ior.parse(rec(f"odirect-{version}-summary"))
        for rows in (text, js):
            assert {r["version"] for r in rows} == {version}
            assert all(r["odirect"] and r["fsync"] and r["file_per_process"] and r["reorder_tasks"] for r in rows)
            assert [r["iteration"] for r in rows if r["access"] == "write"] == [0, 1, 2]


def test_json_33_nests_results_per_iteration_and_4x_is_flat():
    raw33 = json.loads(rec("naive-3.3.0-summary"))
    raw40 = json.loads(rec("naive-4.0.0-summary"))
    assert isinstance(raw33["tests"][0]["Results"][0], list)
    assert isinstance(raw40["tests"][0]["Results"][0], dict)
    for name in ("naive-3.3.0-summary", "naive-4.0.0-summary"):
        rows = [r for r in ior.parse(rec(name)) if r["access"] != "remove"]
        assert [(r["iteration"], r["access"]) for r in rows] == [
            (0, "write"), (0, "read"), (1, "write"), (1, "read"), (2, "write"), (2, "read")]


def test_text_4x_prints_remove_and_max_only_with_v():
    plain, verbose = rec("fpp-4.0.0"), rec("fpp-verbose-4.0.0")
    assert "Max Write" not in plain and "Max Write" in verbose
    assert "remove" not in {r["access"] for r in ior.parse(plain)}
    assert "remove" in {r["access"] for r in ior.parse(verbose)}
    assert "Max Write" in rec("fpp-3.3.0")      # 3.x prints it by default


def test_big_text_numbers_have_no_decimals_json_keeps_them():
    rows = ior.parse(rec("naive-4.0.0"))
    big = [r["bw_mib"] for r in rows if r["bw_mib"] and r["bw_mib"] >= 3600]
    assert big and all(v == int(v) for v in big)
    js = [r["bw_mib"] for r in ior.parse(rec("naive-4.0.0-summary")) if r["bw_mib"]]
    assert any(v != int(v) for v in js)


def test_json_after_writing_output_to_lines():
    text = "Writing output to /x/summary.json\nWriting output to /x/summary.json\n" + rec("fpp-4.0.0-summary")
    assert ior.parse(text) == ior.parse(rec("fpp-4.0.0-summary"))


def test_summary_text_and_json():
    t = ior.summary(rec("naive-4.0.0"))
    j = ior.summary(rec("naive-4.0.0-summary"))
    assert [r["operation"] for r in t] == ["write", "read"] == [r["operation"] for r in j]
    assert set(t[0]) == set(ior.SUMMARY_KEYS) == set(j[0])
    assert t[0]["block_size"] == 16 * units.MiB and j[0]["transfer_size"] == units.MiB
    assert t[0]["stonewall_s"] is None                     # "NA" in the text


# --- parsing: errors and truncation -------------------------------------------------------------

@pytest.mark.parametrize("name", ["missing-dir-3.3.0", "missing-dir-4.0.0", "missing-dir-main"])
def test_ior_error_line_raises_parse_error_naming_it(name):
    with pytest.raises(ParseError) as e:
        ior.parse(rec(name))
    assert e.value.line_no is not None and "ERROR" in e.value.line
    assert "No such file or directo" in e.value.line


@pytest.mark.parametrize("name", ["missing-dir-3.3.0-summary", "missing-dir-4.0.0-summary",
                                  "missing-dir-main-summary"])
def test_json_left_by_a_failed_run_is_cut_short(name):
    with pytest.raises(ParseError, match="ends early") as e:
        ior.parse(rec(name))
    assert e.value.line_no is not None


def test_text_cut_in_a_results_row():
    text = rec("naive-4.0.0")
    cut = text[:text.index("read      ") + 30]
    with pytest.raises(ParseError, match="columns") as e:
        ior.parse(cut)
    assert e.value.line.startswith("read")


def test_text_cut_before_finished():
    lines = rec("fpp-3.3.0").splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("Max Write"))
    with pytest.raises(ParseError, match="Finished") as e:
        ior.parse("\n".join(lines[:end + 1]))
    assert e.value.line_no == end + 1


def test_text_cut_before_results():
    lines = rec("fpp-3.3.0").splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("Results"))
    with pytest.raises(ParseError, match="no Results rows"):
        ior.parse("\n".join(lines[:end]))


def test_json_cut_in_the_middle():
    text = rec("fpp-4.0.0-summary")
    with pytest.raises(ParseError) as e:
        ior.parse(text[: len(text) // 2])
    assert e.value.line_no is not None


@pytest.mark.parametrize("text", ["", "   \n", "hello\nworld\n", "{\"not\": \"ior\"}"])
def test_not_ior_output(text):
    with pytest.raises(ParseError):
        ior.parse(text)


def test_bad_number_names_the_line():
    text = rec("naive-4.0.0").replace("16384      1024.00", "16384      lots", 1)
    with pytest.raises(ParseError, match="expected a number") as e:
        ior.parse(text)
    assert "lots" in e.value.line


def test_summary_errors():
    with pytest.raises(ParseError):
        ior.summary(rec("missing-dir-4.0.0"))
    with pytest.raises(ParseError):
        ior.summary(rec("missing-dir-4.0.0-summary"))
    lines = rec("naive-3.3.0").splitlines()
    with pytest.raises(ParseError, match="Summary"):
        ior.summary("\n".join(line for line in lines if not line.startswith("Summary")))


def test_error_line():
    assert ior.error_line("", rec("missing-dir-4.0.0")).startswith("ERROR: open64(")
    assert ior.error_line("fine\n", "") is None


# --- frames ------------------------------------------------------------------------------------

def test_to_frame_and_labels():
    df = ior.to_frame(ior.parse(rec("odirect-4.0.0-summary")), run="odirect")
    assert set(df["config"]) == {"-F -C -e O_DIRECT"}
    assert (df["run"] == "odirect").all()
    assert df["bytes_per_s"].iloc[0] == pytest.approx(df["bw_mib"].iloc[0] * units.MiB)


def test_test_files_are_the_shared_file_or_one_per_rank(tmp_path):
    for name in ("t", "t.00000000", "t.00000001", "other"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in ior.test_files(tmp_path / "t")] == ["t", "t.00000000", "t.00000001"]
    assert ior.test_files(tmp_path / "missing-dir" / "t") == []


# --- run() with a stand-in IOR and mpirun (the plumbing, where IOR is not installed) -------------

FAKE_MPIRUN = """\
#!{py}
import os, sys
args = sys.argv[1:]
while args and args[0].startswith("-"):
    flag = args.pop(0)
    if flag == "-np":
        args.pop(0)
os.execvp(args[0], args)
"""

FAKE_IOR = """\
#!{py}
import os, sys
a = sys.argv[1:]
open(os.environ["FAKE_IOR_SEEN"], "a").write(os.environ.get("TMPDIR", "") + "\\n")
if "DUMMY" in a:
    print("IOR-4.0.0: MPI Coordinated Test of Parallel I/O"); sys.exit(0)
path = a[a.index("-o") + 1]
if not os.path.isdir(os.path.dirname(path)):
    print('ERROR: open64("%s", 66, 0664) failed. Error: No such file or directory, (aiori-POSIX.c:569)' % path)
    sys.exit(255)
names = [path + ".%08d" % i for i in range(2)] if "-F" in a else [path]
for n in names:
    with open(n, "wb") as f:
        f.write(b"x" * 8192)
summary = [x.split("=", 1)[1] for x in a if x.startswith("summaryFile=")]
if summary:
    print("Writing output to " + summary[0])
    open(summary[0], "w").write(open(os.environ["FAKE_IOR_JSON"]).read())
else:
    print(open(os.environ["FAKE_IOR_TEXT"]).read())
if "-k" not in a:
    for n in names:
        os.unlink(n)
"""


@pytest.fixture
def fake_ior(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, body in (("mpirun", FAKE_MPIRUN), ("ior", FAKE_IOR)):
        p = bindir / name
        p.write_text(textwrap.dedent(body).format(py=sys.executable))
        p.chmod(p.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_IOR_JSON", str(recordings.load("ior/fpp-4.0.0-summary").path))
    monkeypatch.setenv("FAKE_IOR_TEXT", str(recordings.load("ior/fpp-4.0.0").path))
    monkeypatch.setenv("FAKE_IOR_SEEN", str(tmp_path / "tmpdirs-seen"))     # the TMPDIR of each start
    return bindir


def _tmpdirs_seen(fake_ior) -> list[str]:
    return (fake_ior.parent / "tmpdirs-seen").read_text().split()


def test_run_asks_for_json_and_cleans_up(fake_ior, ws):
    seen = {}
    r = ior.run(ior.Options(file_per_process=True, keep_file=True), 2, ws=ws,
                inspect=lambda files: seen.setdefault("f", [f.name for f in files]))
    assert "summaryFormat=JSON" in r.run.argv and r.run.argv[0] == "mpirun"
    assert ior.parse(r.text) == ior.parse(rec("fpp-4.0.0-summary"))
    assert r.version == "4.0.0" and seen["f"] == ["testfile.00000000", "testfile.00000001"]
    assert list(ws.root.iterdir()) == []          # kept for inspect, then removed with the summary
    t = ior.run(ior.Options(), 2, ws=ws, fmt="text")
    assert t.summary_json is None and ior.parse(t.text)[0]["version"] == "4.0.0"


def test_mpi_runtime_files_stay_in_the_workspace(fake_ior, ws):
    # Open MPI keeps a session directory under $TMPDIR (/tmp by default); a killed run, or a singleton
    # that skips MPI_Finalize, leaves it in the node's shared /tmp
    ior._installed_version.cache_clear()
    assert ior.installed_version() == "4.0.0"
    ior.run(ior.Options(), 2, ws=ws)
    probe, run = _tmpdirs_seen(fake_ior)
    assert workspace.base_dir() in Path(probe).parents                # a private workspace ...
    assert Path(run).is_relative_to(ws.root)                          # ... and the run's own directory
    assert not os.path.exists(probe) and not os.path.exists(run)      # both removed afterwards


def test_doctor_reads_iors_version_from_its_banner(fake_ior):
    from iolab import doctor, runner

    ior._installed_version.cache_clear()
    item = next(c for c in doctor.tool_checks() if c.name == "ior")
    assert item.status == doctor.OK and item.detail == "ior 4.0.0", item.line()
    runner.tool_version.cache_clear()
    try:
        assert doctor.tool_version("ior") == "4.0.0"        # results.save's provenance: no version flag
    finally:
        runner.tool_version.cache_clear()


def test_run_keeps_files_when_asked(fake_ior, ws):
    d = ws.mkdir("data")
    ior.run(ior.Options(file_per_process=True, keep_file=True, test_file=str(d / "t")), 2, ws=ws)
    assert sorted(p.name for p in d.iterdir()) == ["t.00000000", "t.00000001"]


def test_run_failure_carries_iors_error_line(fake_ior, ws):
    with pytest.raises(ToolFailed, match=r"IOR failed: ERROR: open64") as e:
        ior.run(ior.Options(test_file=str(ws.path("missing") / "t")), 2, ws=ws)
    assert e.value.returncode == 255


def test_run_refuses_paths_outside_the_workspace(fake_ior, ws):
    from iolab import OutsideWorkspace
    with pytest.raises(OutsideWorkspace):
        ior.run(ior.Options(test_file="/etc/ior-test"), 2, ws=ws)


def test_run_checks_the_budget_first(fake_ior, ws):
    from iolab import BudgetExceeded
    with pytest.raises(BudgetExceeded):
        ior.run(ior.Options(block_size="1GiB", segments=1), 2, ws=ws)      # 2 GiB > 512 MiB budget


def test_run_without_ior(monkeypatch, tmp_path, ws):
    from iolab import ToolMissing
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolMissing):
        ior.run(ior.Options(), 2, ws=ws)


# --- live: the real IOR with 2 ranks through mpirun --------------------------------------------

@pytest.mark.live
def test_live_ior_two_ranks(ws, ior_on_path):
    ior_on_path("4.0.0", mpirun=True, or_on_path=True)
    before = mpi_leftovers_in_tmp()
    opts = ior.Options(transfer_size="1MiB", block_size="4MiB", segments=2, file_per_process=True, fsync=True)
    r = ior.run(opts, 2, ws=ws, timeout=120)
    rows = ior.parse(r.text)
    assert {x["access"] for x in rows} >= {"write", "read"}
    assert all(x["tasks"] == 2 and x["file_per_process"] and x["fsync"] for x in rows)
    assert all(x["bw_mib"] > 0 for x in rows if x["access"] != "remove")
    text = ior.run(opts, 2, ws=ws, fmt="text", timeout=120)
    assert ior.parse(text.text)[0]["version"] == r.version
    assert list(ws.root.iterdir()) == []
    assert mpi_leftovers_in_tmp(before) == set()


@pytest.mark.live
def test_live_ior_missing_directory(ws, ior_on_path):
    ior_on_path("4.0.0", mpirun=True, or_on_path=True)
    with pytest.raises(ToolFailed, match="IOR failed: .*ERROR"):
        ior.run(ior.Options(test_file=str(ws.path("no-such-dir") / "t")), 2, ws=ws, timeout=120)


# --- -C: IOR's rule, its layout, and which file each rank opened (strace) ------------------------

def test_tasks_per_node_is_an_ior_directive():
    argv = ior.Options(file_per_process=True, reorder_tasks=True, tasks_per_node=1).argv("3.3.0")
    assert argv[argv.index("-C") + 1:argv.index("-C") + 3] == ["-O", "numTasksOnNode0=1"]
    assert "numTasksOnNode0" not in " ".join(ior.Options(reorder_tasks=True).argv())
    for bad in (0, True, "1"):
        with pytest.raises(ValueError):
            ior.Options(tasks_per_node=bad)


@pytest.mark.parametrize("offset,per_node,tasks,by_slot,shift", [
    (1, 2, 2, True, 0),       # this lesson: one node, 2 ranks -> nobody moves
    (1, 1, 2, True, 1),       # -O numTasksOnNode0=1
    (1, 24, 24, True, 0),     # the seed's 24 ranks, had they shared one node
    (1, 6, 24, True, 6),      # 24 ranks on 4 nodes, by slot: one node further
    (1, 6, 24, False, 1),     # the same dealt round-robin: the next rank is on the next node
    (2, 6, 24, True, 12),
])
def test_reorder_rule(offset, per_node, tasks, by_slot, shift):
    assert ior.reorder_rule(offset, per_node, tasks, by_slot=by_slot) == shift


def test_reorder_rule_refuses_nonsense():
    for args in ((1, 0, 2), (-1, 1, 2), (1, 1, 0), (1.0, 1, 2)):
        with pytest.raises(ValueError):
            ior.reorder_rule(*args)


@pytest.mark.parametrize("name,per_node", [("lesson-ext4-3.3.0-reorder-summary", 2),
                                           ("lesson-ext4-4.0.0-neighbour-summary", 1),
                                           ("fpp-reorder-3.3.0", 2), ("fpp-reorder-4.0.0", 2)])
def test_reorder_facts_from_json_and_text(name, per_node):
    facts = ior.reorder_facts(rec(name))
    assert facts == {"tasks": 2, "nodes": 1, "tasks_per_node": per_node, "task_offset": 1,
                     "ordering": "constant task offset"}


def test_reorder_facts_without_c():
    facts = ior.reorder_facts(rec("naive-4.0.0"))
    assert facts["task_offset"] is None and facts["ordering"] == "no tasks offsets" and facts["tasks_per_node"] == 2


@pytest.mark.parametrize("name,moved,read_flag", [("lesson-ext4-3.3.0-reorder-opens", False, "O_RDWR <unfinished"),
                                                  ("lesson-ext4-3.3.0-neighbour-opens", True, "O_RDWR"),
                                                  ("lesson-tmpfs-4.0.0-reorder-opens", False, "O_RDONLY"),
                                                  ("lesson-tmpfs-4.0.0-neighbour-opens", True, "O_RDONLY")])
def test_opens_of_both_versions(name, moved, read_flag):
    text = rec(name)
    assert read_flag in text                       # 3.3.0 reads with O_RDWR (no O_CREAT), 4.0.0 with O_RDONLY
    opens = ior.parse_opens(text)
    assert len(opens) == 12 and sum(o["create"] for o in opens) == 6
    t = ior.opens_table(opens)
    assert list(t.columns) == ["rank", "pid", "iteration", "wrote", "read", "shift", "moved"]
    assert sorted(t["rank"]) == [0, 0, 0, 1, 1, 1] and sorted(set(t["iteration"])) == [0, 1, 2]
    assert t["moved"].tolist() == [moved] * 6
    assert t.groupby("rank")["pid"].nunique().tolist() == [1, 1]       # one process per rank


TRACE = """\
101 10:00:00.000001 openat(AT_FDCWD</w>, "/w/d/testfile.00000001", O_RDWR|O_CREAT, 0664) = 3</w/d/testfile.00000001> <0.000010>
100 10:00:00.000002 openat(AT_FDCWD</w>, "/w/d/testfile.00000000", O_RDWR|O_CREAT, 0664 <unfinished ...>
100 10:00:00.000003 <... openat resumed>) = 3</w/d/testfile.00000000> <0.000010>
100 10:00:00.000004 openat(AT_FDCWD</w>, "/w/d/other.00000000", O_RDONLY) = 4</w/d/other.00000000> <0.000010>
100 10:00:00.000005 openat(AT_FDCWD</w>, "/w/d/testfile.00000005", O_RDONLY) = -1 ENOENT (No such file or directory) <0.000010>
100 10:00:00.000006 openat(AT_FDCWD</w>, "/w/d/testfile.00000001", O_RDONLY) = 4</w/d/testfile.00000001> <0.000010>
101 10:00:00.000007 openat(AT_FDCWD</w>, "/w/d/testfile.00000000", O_RDONLY) = 4</w/d/testfile.00000000> <0.000010>
102 10:00:00.000008 openat(AT_FDCWD</w>, "/w/d/testfile.00000000", O_RDONLY) = 4</w/d/testfile.00000000> <0.000010>
100 10:00:00.000009 +++ exited with 0 +++
"""


def test_opens_keep_only_successful_opens_of_the_test_files():
    opens = ior.parse_opens(TRACE)
    assert [(o["pid"], o["file_rank"], o["create"]) for o in opens] == [
        (101, 1, True), (100, 0, True), (100, 1, False), (101, 0, False), (102, 0, False)]
    assert len(ior.parse_opens(TRACE, stem=None)) == 6           # other.00000000 too
    t = ior.opens_table(opens)
    # pid 102 only read: no rank can be given to it, so it is not in the table
    assert t[["rank", "pid", "wrote", "read", "shift", "moved"]].values.tolist() == [
        [0, 100, "testfile.00000000", "testfile.00000001", 1, True],
        [1, 101, "testfile.00000001", "testfile.00000000", 1, True]]
    assert ior.opens_table([]).empty


def test_trace_opens_argv(monkeypatch):
    from iolab.tools import strace
    for has in (True, False):
        monkeypatch.setattr(strace, "supports", lambda opt, has=has: has)
        argv = ior.trace_opens_argv(["mpirun", "-np", "2", "ior"], "/w/t.txt", paths=["/w/f.00000000", "/w/f.00000001"])
        assert argv[0] == "strace" and ("--seccomp-bpf" in argv) is has
        assert argv[argv.index("-e") + 1] == "trace=openat" and argv[argv.index("-s") + 1] == "4096"
        assert [argv[i + 1] for i, a in enumerate(argv) if a == "-P"] == ["/w/f.00000000", "/w/f.00000001"]
        assert argv[argv.index("--") + 1:] == ["mpirun", "-np", "2", "ior"]
