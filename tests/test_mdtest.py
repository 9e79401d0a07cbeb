"""iolab.tools.mdtest: argv, parsing of 3.3.0 / 4.0.0 / main outputs, errors, a live 2-rank run."""
from __future__ import annotations

import pytest

from iolab import ParseError, ToolFailed, recordings
from iolab.tools import mdtest
from conftest import mpi_leftovers_in_tmp, needs


def rec(name: str) -> str:
    return recordings.load(f"mdtest/{name}").text


def test_argv():
    o = mdtest.Options(files=10, iterations=200, sync=True, directory="/fast/x")
    assert o.argv() == ["mdtest", "-d", "/fast/x", "-n", "10", "-i", "200", "-y"]       # seed 001's run
    full = mdtest.Options(unique_dir=True, files_only=True, items_per_dir=5, depth=2, branching=3, stride=1,
                          print_time=True, write_bytes=4096, read_bytes=4096, verbose=1).argv()
    for flag in ("-u", "-F", "-P", "-v"):
        assert flag in full
    for flag, value in (("-I", "5"), ("-z", "2"), ("-b", "3"), ("-N", "1"), ("-w", "4096"), ("-e", "4096")):
        assert full[full.index(flag) + 1] == value


@pytest.mark.parametrize("kwargs", [dict(files=0), dict(iterations=-1), dict(files_only=True, dirs_only=True)])
def test_bad_options(kwargs):
    with pytest.raises(ValueError):
        mdtest.Options(**kwargs)


def test_3x_rows_carry_a_colon_4x_do_not_same_parse():
    assert "File creation        " in rec("tmp-3.3.0") and "File creation             :" in rec("tmp-3.3.0")
    assert ":" not in next(line for line in rec("tmp-4.0.0").splitlines() if "File creation" in line)
    ops33 = {r["operation"] for r in mdtest.parse(rec("tmp-3.3.0"))}
    ops40 = {r["operation"] for r in mdtest.parse(rec("tmp-4.0.0"))}
    assert ops40 - ops33 == {"directory rename"}
    assert {"file creation", "file stat", "file read", "file removal", "tree creation"} <= ops33


def test_40_warning_before_the_header():
    text = rec("tmp-4.0.0")
    assert text.splitlines()[0].startswith("WARNING") or "WARNING: Read bytes is 0" in text
    rows = mdtest.parse(text)
    assert rows[0]["version"] == "4.0.0" and rows[0]["tasks"] == 2 and rows[0]["items"] == 20


def test_main_names_its_units_and_the_time_table_is_seconds():
    rows = mdtest.parse(rec("tmp-time-main"))
    rate = [r for r in rows if r["unit"] == "ops/s"]
    time = [r for r in rows if r["unit"] == "s"]
    assert len(rate) == len(time) == 10
    assert {r["unit_printed"] for r in rate} == {"ops/sec"} and {r["unit_printed"] for r in time} == {"ms/op"}
    # the time table holds the seconds of a whole phase: items / rate, not ms per op
    create_rate = next(r for r in rate if r["operation"] == "file creation")["min"]
    create_time = next(r for r in time if r["operation"] == "file creation")["max"]
    assert create_time == pytest.approx(20 / create_rate, abs=2e-3)


def test_33_time_table():
    rows = mdtest.parse(rec("tmp-time-3.3.0"))
    assert {r["unit"] for r in rows} == {"ops/s", "s"} and {r["unit_printed"] for r in rows} == {None}


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0", "main"])
def test_verbose_chatter_is_skipped(version):
    rows = mdtest.parse(rec(f"tmp-verbose-{version}"))
    assert rows[-1]["operation"] == "tree removal" and rows[0]["iterations"] == 2


@pytest.mark.parametrize("name,what", [("missing-dir-3.3.0", "FAILED in"), ("missing-dir-4.0.0", "ERROR"),
                                       ("missing-dir-main", "ERROR")])
def test_errors_raise_parse_error_naming_the_line(name, what):
    with pytest.raises(ParseError) as e:
        mdtest.parse(rec(name))
    assert e.value.line_no is not None and what in e.value.line


def test_cut_short():
    lines = rec("tmp-4.0.0").splitlines()
    table = next(i for i, line in enumerate(lines) if line.startswith("SUMMARY"))
    with pytest.raises(ParseError, match="no SUMMARY"):
        mdtest.parse("\n".join(lines[:table]))
    with pytest.raises(ParseError, match="finished"):
        mdtest.parse("\n".join(lines[:table + 6]))
    row = lines[table + 5]
    with pytest.raises(ParseError, match="4 numbers") as e:
        mdtest.parse("\n".join(lines[:table + 5] + [row[:45]]))
    assert e.value.line_no == table + 6


@pytest.mark.parametrize("text", ["", "nothing to see\n", "SUMMARY rate: (of 2 iterations)\n   File creation 1 2 3 4\n"])
def test_not_mdtest(text):
    with pytest.raises(ParseError):
        mdtest.parse(text)


def test_to_frame():
    df = mdtest.to_frame(mdtest.parse(rec("shm-4.0.0")), fstype="tmpfs")
    assert (df["fstype"] == "tmpfs").all() and "mean" in df


def test_error_line():
    assert mdtest.error_line(rec("missing-dir-3.3.0")).startswith("11/22/2026")
    assert mdtest.error_line("all good") is None


@pytest.mark.live
@needs("mpirun")
def test_live_mdtest_two_ranks(ws, ior_on_path):
    ior_on_path("4.0.0", tool="mdtest", mpirun=True, or_on_path=True)
    before = mpi_leftovers_in_tmp()
    r = mdtest.run(mdtest.Options(files=5, iterations=2, sync=True), 2, ws=ws, timeout=120)
    rows = mdtest.parse(r.stdout)
    assert rows[0]["tasks"] == 2 and rows[0]["iterations"] == 2
    assert all(x["max"] >= x["min"] for x in rows)
    assert list(ws.root.iterdir()) == []
    assert mpi_leftovers_in_tmp(before) == set()


@pytest.mark.live
@needs("mpirun")
def test_live_mdtest_on_dev_shm_and_failure(ws, tmp_path, ior_on_path):
    ior_on_path("4.0.0", tool="mdtest", mpirun=True, or_on_path=True)
    r = mdtest.run(mdtest.Options(files=5, iterations=1), 2, on="/dev/shm", timeout=120)
    assert mdtest.parse(r.stdout)[0]["items"] == 10
    with pytest.raises(ToolFailed, match="mdtest failed"):
        mdtest.run(mdtest.Options(files=5, directory=str(ws.path("no/such/dir"))), 2, ws=ws, timeout=120)


# --- a stand-in mdtest and mpirun: version, and where the MPI runtime keeps its files ---------------

FAKE = {
    "mpirun": """\
#!{py}
import os, sys
args = sys.argv[1:]
while args and args[0].startswith("-"):
    if args.pop(0) == "-np":
        args.pop(0)
os.execvp(args[0], args)
""",
    "mdtest": """\
#!{py}
import os, sys
open(os.environ["FAKE_MDTEST_SEEN"], "a").write(os.environ.get("TMPDIR", "") + "\\n")
print(open(os.environ["FAKE_MDTEST_TEXT"]).read())
""",
}


@pytest.fixture
def fake_mdtest(tmp_path, monkeypatch):
    import os
    import stat
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, body in FAKE.items():
        (bindir / name).write_text(body.format(py=sys.executable))
        (bindir / name).chmod(0o755 | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_MDTEST_TEXT", str(recordings.load("mdtest/tmp-4.0.0").path))
    monkeypatch.setenv("FAKE_MDTEST_SEEN", str(tmp_path / "seen"))
    mdtest._installed_version.cache_clear()
    yield tmp_path / "seen"
    mdtest._installed_version.cache_clear()


def test_version_from_a_dummy_run_and_the_doctor_shows_it(fake_mdtest):
    from iolab import doctor

    assert mdtest.installed_version() == "4.0.0"       # mdtest has no --version: it refuses the flag
    item = next(c for c in doctor.tool_checks() if c.name == "mdtest")
    assert item.status == doctor.OK and item.detail == "mdtest 4.0.0", item.line()


def test_mpi_runtime_files_stay_in_the_workspace(fake_mdtest, ws):
    import os
    from pathlib import Path

    mdtest.run(mdtest.Options(files=5), 2, ws=ws)
    mdtest.run(mdtest.Options(files=5), 2, on=ws.mkdir("other-fs"))
    in_ws, on_other = fake_mdtest.read_text().split()
    assert Path(in_ws).is_relative_to(ws.root) and Path(on_other).is_relative_to(ws.root / "other-fs")
    assert not os.path.exists(in_ws) and not os.path.exists(on_other)
    assert sorted(p.name for p in ws.root.iterdir()) == ["other-fs"]
    assert list((ws.root / "other-fs").iterdir()) == []


def test_tool_version_asks_the_banner_not_a_version_flag(fake_mdtest):
    # results.save(tool="mdtest") asks doctor.tool_version: each refused flag was an aborted MPI start
    from iolab import doctor, runner

    runner.tool_version.cache_clear()
    try:
        assert runner.tool_version("mdtest") == "unknown version"    # without running it
        assert not fake_mdtest.exists() or fake_mdtest.read_text().split() == []
        assert doctor.tool_version("mdtest") == "4.0.0"
    finally:
        runner.tool_version.cache_clear()
    assert len(fake_mdtest.read_text().split()) == 1          # one DUMMY run, in a private TMPDIR


@pytest.mark.parametrize("name", ["tmp-3.3.0", "tmp-4.0.0", "tmp-main", "rates-tmp-3.3.0"])
def test_window_from_the_started_and_finished_lines(name):
    started, finished = mdtest.window(rec(name))
    assert started is not None and finished is not None and started <= finished
    assert mdtest.window("no stamps here") == (None, None)


# --- witnesses (issue 12) ---------------------------------------------------------------------------

def test_run_keeps_the_tree_for_the_next_phase_and_puts_mpi_elsewhere(fake_mdtest, ws, tmp_path):
    import os
    from pathlib import Path

    tree = ws.mkdir("tree")
    elsewhere = tmp_path / "mpi-runtime"
    elsewhere.mkdir()
    mdtest.run(mdtest.Options(files=5, directory=str(tree)), 2, ws=ws, keep=True, runtime_dir=elsewhere)
    assert tree.is_dir()                                             # left for the next phase
    seen = Path(fake_mdtest.read_text().split()[-1])
    assert seen.is_relative_to(elsewhere) and not seen.exists()      # the runtime went there, and is gone
    assert list(elsewhere.iterdir()) == []
    mdtest.run(mdtest.Options(files=5, directory=str(tree)), 2, ws=ws)
    assert not tree.exists()                                         # without keep: removed, as before
    with pytest.raises(ValueError, match="keep=True"):
        mdtest.run(mdtest.Options(files=5), 2, on=os.fspath(tmp_path), keep=True)



# --- -v: every iteration's rates (issue 22: the trials behind the summary) ---------------------------

@pytest.mark.parametrize("version, rows, checks", [
    # hand-checked against the recordings' "V-1: Rank 0 Line ..." lines
    ("3.3.0", 18, {(1, "file creation"): (0.001, 17461.179), (1, "tree creation"): (0.0, 6338.501),
                   (2, "directory removal"): (0.032, 634.127), (2, "tree removal"): (0.0, 3039.809)}),
    ("4.0.0", 20, {(1, "file stat"): (0.001, 19266.440), (2, "directory rename"): (0.0, 41651.480),
                   (2, "file removal"): (0.0, 90785.801), (1, "tree removal"): (0.0, 4788.018)}),
])
def test_parse_iterations_golden(version, rows, checks):
    got = mdtest.parse_iterations(rec(f"tmp-verbose-{version}"))
    assert len(got) == rows and {r["version"] for r in got} == {version}
    assert [r["iteration"] for r in got] == sorted(r["iteration"] for r in got)
    table = {(r["iteration"], r["operation"]): (r["seconds"], r["rate"]) for r in got}
    for key, value in checks.items():
        assert table[key] == value, key
    summary = {r["operation"]: r for r in mdtest.parse(rec(f"tmp-verbose-{version}"))}
    for r in got:
        s = summary[r["operation"]]
        if version == "3.3.0" or r["operation"].startswith("tree"):
            # the run's rate: within the summary's Min and Max
            assert r["scope"] == "all ranks" and s["min"] - 0.002 <= r["rate"] <= s["max"] + 0.002, r
        else:
            # 4.0 prints rank 0's own rate (its items over its time), the summary all ranks' (2 here)
            assert r["scope"] == "rank 0"
    if version == "4.0.0":       # both iterations' directory creations: 5,356 and 5,385 by rank 0, 10,707-10,770 by 2
        assert table[(1, "directory creation")][1] * 2 == pytest.approx(summary["directory creation"]["min"], rel=0.01)


def test_parse_iterations_of_a_summary_only_run_makes_no_trial():
    assert mdtest.parse_iterations(rec("tmp-4.0.0")) == []
    assert mdtest.iterations_frame([]).empty


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
def test_parse_iterations_names_the_bad_line(version):
    text = rec(f"tmp-verbose-{version}")
    lines = text.splitlines(keepends=True)
    at = next(i for i, s in enumerate(lines) if "File creation" in s and "ops/sec" in s)
    bad = "".join(lines[:at] + [lines[at].replace(" sec,", " s,")] + lines[at + 1:])
    with pytest.raises(ParseError, match="phase's rate") as e:
        mdtest.parse_iterations(bad)
    assert e.value.line_no == at + 1
    second = next(i for i, s in enumerate(lines) if "iteration 2 *" in s)
    skipped = "".join(lines[:second] + [lines[second].replace("iteration 2", "iteration 3")] + lines[second + 1:])
    with pytest.raises(ParseError, match="iteration 3 after iteration 1") as e:
        mdtest.parse_iterations(skipped)
    assert e.value.line_no == second + 1
    first = next(i for i, s in enumerate(lines) if "iteration 1 *" in s)
    with pytest.raises(ParseError, match="before its first"):
        mdtest.parse_iterations("".join(lines[:first] + lines[first + 1:]))
    twice = "".join(lines[:at + 1] + [lines[at]] + lines[at + 1:])
    with pytest.raises(ParseError, match="twice"):
        mdtest.parse_iterations(twice)
    # the second iteration's lines gone: the summary says 2
    end = next(i for i, s in enumerate(lines) if s.startswith("SUMMARY"))
    one = "".join(lines[:second] + lines[end - 1:])
    with pytest.raises(ParseError, match="of 1 iterations, its summary is of 2"):
        mdtest.parse_iterations(one)
    with pytest.raises(ParseError):                      # cut short: parse's own check
        mdtest.parse_iterations("".join(lines[:second + 3]))


def test_an_mdtest_1x_output_is_told_by_its_version():
    # issue 32: mdtest 1.9.3's table was refused as "no SUMMARY table" though it has one. The layout of
    # mdtest 1.9.3's output (before mdtest joined IOR), shortened; the values are placeholders
    text = "\n".join([
        "-- started at 05/27/2018 04:07:15 --", "",
        "mdtest-1.9.3 was launched with 4 total task(s) on 1 node(s)",
        "Command line used: mdtest -n 3", "Path: /tmp/dummy", "", "4 tasks, 12 files/directories", "",
        "SUMMARY: (of 1 iterations)",
        "   Operation                      Max            Min           Mean        Std Dev",
        "   ---------                      ---            ---           ----        -------",
        "   Directory creation:          1.000          1.000          1.000          0.000",
        "   File creation     :          1.000          1.000          1.000          0.000", "",
        "-- finished at 05/27/2018 04:07:15 --", ""])
    with pytest.raises(ParseError) as e:
        mdtest.parse(text)
    assert "mdtest 1.9.3" in str(e.value) and "3.x and 4.x" in str(e.value)
    assert e.value.line_no == 9 and e.value.line.startswith("SUMMARY: (of 1")
