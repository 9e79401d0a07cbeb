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

