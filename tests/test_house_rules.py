"""One way of each (issue 23): one door between live and replayed runs.

Only iolab/recordings.py decides between running live and replaying a recording: no other module
reads IOLAB_MODE or asks ``recordings.mode()``; they call ``recordings.live_or_recorded`` (or, where
a lesson's result is not one run's output, ``recordings.replay_reason``, the same decision). Lesson
functions that run or replay an experiment give back an Outcome with its table in ``.frame``."""
from __future__ import annotations

import ast
import io
import re
from pathlib import Path

import pandas as pd
import pytest

from iolab import recordings
from iolab.lessons.l07_darshan import profile as lab07
from iolab.lessons.l02_readahead import readahead as lab02
from iolab.lessons.l03_strace import syscalls as lab03

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "iolab"
DOOR = PACKAGE / "recordings.py"
# modules that still decide on their own: none left (keep the set for one that must wait)
MODE_EXCEPTIONS: set[str] = set()


def mode_decisions(source: str) -> list[tuple[int, str]]:
    """Where a module makes the live/replay decision itself: reads IOLAB_MODE from the environment
    (os.environ[...], os.environ.get, os.getenv; setting it, as a recorder does, is allowed) or
    calls recordings.mode() / a mode imported from recordings."""
    found = []
    imported_mode = False
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("recordings"):
            imported_mode |= any(a.name == "mode" for a in node.names)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, ast.Constant) and node.slice.value == "IOLAB_MODE":
            found.append((node.lineno, "reads os.environ['IOLAB_MODE']"))
        elif isinstance(node, ast.Call):
            f = node.func
            args = [a.value for a in node.args if isinstance(a, ast.Constant)]
            if isinstance(f, ast.Attribute) and f.attr in ("get", "getenv") and "IOLAB_MODE" in args:
                found.append((node.lineno, f"reads IOLAB_MODE with .{f.attr}()"))
            elif isinstance(f, ast.Attribute) and f.attr == "mode" and isinstance(f.value, ast.Name) \
                    and f.value.id == "recordings":
                found.append((node.lineno, "calls recordings.mode()"))
            elif isinstance(f, ast.Name) and f.id == "mode" and imported_mode:
                found.append((node.lineno, "calls mode() from recordings"))
    return found


def test_the_mode_reader_sees_each_way_of_deciding():
    probe = ("import os\nfrom iolab import recordings\nfrom iolab.recordings import mode\n"
             "a = os.environ.get('IOLAB_MODE', 'auto')\nb = os.environ['IOLAB_MODE']\nc = os.getenv('IOLAB_MODE')\n"
             "d = recordings.mode() != 'replay'\ne = mode()\nos.environ['IOLAB_MODE'] = 'live'\n")
    assert sorted(line for line, _ in mode_decisions(probe)) == [4, 5, 6, 7, 8]


def test_only_recordings_decides_between_live_and_replay():
    wrong = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        if path == DOOR or rel in MODE_EXCEPTIONS:
            continue
        found = mode_decisions(path.read_text())
        if found:
            wrong[rel] = found
    assert not wrong, ("modules that decide between live and replay themselves instead of going through "
                       f"recordings.live_or_recorded / replay_reason: {wrong}")


def test_the_exceptions_still_need_to_be_exceptions():
    for rel in MODE_EXCEPTIONS:
        assert mode_decisions((PACKAGE / rel).read_text()), f"{rel} goes through the door now: drop it from MODE_EXCEPTIONS"


# --- the door gives what the lessons need -----------------------------------------------------------

def _never() -> str:
    raise AssertionError("live() must not run")


def test_a_reason_why_live_is_not_possible_replays_in_auto_and_raises_in_live(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    out = recordings.live_or_recorded(_never, "strace/overhead-16b-of-100000", unavailable="no data file given",
                                      parse=lambda t: pd.read_csv(io.StringIO(t)), quiet=True)
    assert out.mode == "replay" and out.reason == "no data file given"
    assert isinstance(out.frame, pd.DataFrame) and len(out.frame)
    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(recordings.CannotRunHere, match="no root"):
        recordings.live_or_recorded(_never, "strace/overhead-16b-of-100000", unavailable=lambda: "no root", quiet=True)
    # no reason: it runs live
    out = recordings.live_or_recorded(lambda: "a,b\n1,2\n", "strace/overhead-16b-of-100000",
                                      unavailable=lambda: None, parse=lambda t: pd.read_csv(io.StringIO(t)),
                                      quiet=True)
    assert out.live and out.frame["b"].tolist() == [2]


def test_the_reason_is_asked_only_when_live_is_possible(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    assert recordings.replay_reason(("sh",), lambda: _never()) == "IOLAB_MODE=replay"
    monkeypatch.setenv("IOLAB_MODE", "auto")
    assert recordings.replay_reason(("no-such-tool-iolab",), lambda: _never()) == "no-such-tool-iolab not installed here"
    monkeypatch.setenv("IOLAB_MODE", "live")
    assert recordings.replay_reason(("no-such-tool-iolab",), strict=False) == "no-such-tool-iolab not installed here"


def test_a_replay_loads_the_recordings_siblings(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    ref = lab07.recording("both-read-4k", "ext4")
    out = recordings.live_or_recorded(_never, ref, siblings=("strace",), read=lambda rec: rec.path, quiet=True)
    assert out.siblings["strace"].ref == ref + "-strace" and "read(" in out.siblings["strace"].text
    assert out.data == out.recording.path and out.frame is None
    with pytest.raises(FileNotFoundError):
        recordings.live_or_recorded(_never, ref, siblings=("no-such-sibling",), quiet=True)


def test_no_recording_means_live_whatever_the_mode(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    out = recordings.live_or_recorded(lambda: "x", None, quiet=True)
    assert out.live and out.text == "x"


# --- lesson functions give back an Outcome with its frame --------------------------------------------

@pytest.mark.parametrize("setup", ["ext4", "tmpfs"])
def test_darshan_overhead_is_an_outcome_with_a_frame_like_lesson_03s(monkeypatch, setup):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    out = lab07.measure_overhead(None, 1024, setup=setup, quiet=True)
    assert isinstance(out, recordings.Outcome) and out.mode == "replay" and "no data file given" in out.provenance
    assert isinstance(out.frame, pd.DataFrame) and out.frame is out.data
    assert set(out.frame["how"]) == set(lab07.HOWS)
    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(recordings.CannotRunHere):
        lab07.measure_overhead(None, 1024, setup=setup, quiet=True)


def test_readahead_growth_is_an_outcome_with_a_frame(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    out = lab02.growth_trace("/nonexistent", quiet=True)
    assert isinstance(out.frame, pd.DataFrame) and out.frame is out.data[1]


def test_strace_of_a_learners_command_goes_through_the_door(monkeypatch, tmp_path):
    import shutil
    if shutil.which("strace") is None:
        pytest.skip("strace not installed here")
    monkeypatch.setenv("IOLAB_MODE", "replay")        # nothing to replay: it runs live all the same
    out = lab03.count(["true"], cwd=tmp_path)
    assert out.live and out.run is not None and isinstance(out.frame, pd.DataFrame)


# --- one result shape ----------------------------------------------------------------------------------

# a lesson's experiment modules: every module of iolab/lessons/<lesson>/ but its charts, controls and checks
LESSON_MODULES = sorted(p for p in PACKAGE.glob("lessons/*/*.py")
                        if p.stem not in ("__init__", "plots", "explorers", "check") and not p.stem.startswith("_"))
# lesson modules that still hand results back in bags: none left (keep the set for one that must wait)
BAG_EXCEPTIONS: set[str] = set()
# functions and notebooks that may still read or write a bag: none left (lesson 04's cache_runs gives
# .where, issue 23); keep the sets for a lesson that must wait.
BAG_FUNCTION_EXCEPTIONS: set[tuple[str, str]] = set()
BAG_NOTEBOOK_EXCEPTIONS: dict[str, int] = {}


def result_bags(source: str, skip_functions: set[str] = frozenset()) -> list[tuple[int, str]]:
    """Where a module hands results back in a bag of strings: writes into a DataFrame's ``attrs``
    (``df.attrs[k] = v``, ``df.attrs.update(...)``) or an Outcome's ``extra`` (``out.extra[k] = v``,
    ``out.extra.update(...)``, ``extra={...}`` / ``extra=dict(...)`` in a call)."""
    found = []
    tree = ast.parse(source)
    skipped = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in skip_functions
               for n in ast.walk(f)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute) \
                        and sub.value.attr in ("attrs", "extra"):
                    found.append((node.lineno, f"writes .{sub.value.attr}[...]"))
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in ("update", "setdefault") \
                    and isinstance(f.value, ast.Attribute) and f.value.attr in ("attrs", "extra"):
                found.append((node.lineno, f"calls .{f.value.attr}.{f.attr}()"))
            for kw in node.keywords:
                if kw.arg == "extra" and (isinstance(kw.value, ast.Dict) or (
                        isinstance(kw.value, ast.Call) and isinstance(kw.value.func, ast.Name)
                        and kw.value.func.id == "dict")):
                    found.append((node.lineno, "passes extra={...}"))
    return found


def test_the_bag_reader_sees_each_kind_of_bag():
    probe = ("df.attrs['tasks'] = 4\ndf.attrs.update(a=1)\nout.extra['x'] = 1\nout.extra.update(x=1)\n"
             "Profile(log, extra={'target': t})\ncombine(parts, extra=dict(fstype='ext4'))\n"
             "o = replace(options, extra=options.extra + ('-c',))\nrun(launcher_kwargs={'extra': []})\n"
             "x = df.attrs['total']\n")
    assert sorted(line for line, _ in result_bags(probe)) == [1, 2, 3, 4, 5, 6]


def test_lesson_functions_return_typed_fields_not_bags():
    wrong = {}
    for path in LESSON_MODULES:
        rel = str(path.relative_to(PACKAGE))
        if rel in BAG_EXCEPTIONS:
            continue
        found = result_bags(path.read_text(), {f for m, f in BAG_FUNCTION_EXCEPTIONS if m == rel})
        if found:
            wrong[rel] = found
    assert not wrong, f"lesson modules that hand results back in DataFrame.attrs or Outcome.extra: {wrong}"
    for rel, fn in BAG_FUNCTION_EXCEPTIONS:
        assert result_bags((PACKAGE / rel).read_text()) != result_bags((PACKAGE / rel).read_text(), {fn}), \
            f"{rel}:{fn} has no bags now: drop it from BAG_FUNCTION_EXCEPTIONS"


def test_tool_modules_hand_back_no_bags():
    # a tool's frame is its rows; what else its parse found stays on the parse (strace's Summary.total),
    # and a lesson gives it as typed fields (syscalls.Traced.total_calls): before, strace.summary_frame
    # put the total row in df.attrs["total"]
    wrong = {str(p.relative_to(PACKAGE)): found for p in sorted(PACKAGE.glob("tools/*.py"))
             if (found := result_bags(p.read_text()))}
    assert not wrong, f"tool modules that hand results back in DataFrame.attrs or Outcome.extra: {wrong}"


def test_the_bag_exceptions_still_need_to_be_exceptions():
    for rel in BAG_EXCEPTIONS:
        assert result_bags((PACKAGE / rel).read_text()), f"{rel} has no bags now: drop it from BAG_EXCEPTIONS"


def test_notebooks_and_solutions_read_no_bags():
    """What learners read and copy: no ``.extra[...]``, ``.attrs[...]`` or ``.cache.get(...)``."""
    import json
    pattern = re.compile(r"\.(extra|attrs)\[|\.cache\.get\(|\.extra\.get\(")
    wrong = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "exercises" / "solutions").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        hits = [c for c in cells if pattern.search("".join(c["source"]))]
        if len(hits) != BAG_NOTEBOOK_EXCEPTIONS.get(nb.name, 0) and (hits or nb.parent.name == "notebooks"):
            wrong[str(nb.relative_to(ROOT))] = len(hits)
    assert not wrong, f"notebooks whose cells read results out of bags: {wrong}"


# --- one naming rule ------------------------------------------------------------------------------------
# (DEVELOPERS.md, "Naming lesson functions"): a claim function is <what>_claims (or <what>_claim for one
# claim) and takes show= (keyword); a lesson function names the recording it replays `recording`, the
# one it makes `save_as`; one public name means one thing across the lesson modules.

LABS = LESSON_MODULES
RECORDING_SPELLINGS = {"recording", "save_as"}
# claim functions not yet renamed to <what>_claims: none left (issue 23, 3: lessons 00-08 are); keep the
# dict for a lesson that must wait. The test fails when one listed conforms (drop it) or a new one does not.
NOT_YET_CLAIMS: dict[str, set[str]] = {}
# recording parameters spelled otherwise: none left (keep the set for a lesson that must wait).
NOT_YET_RECORDING: set[tuple[str, str, str]] = set()


def lesson_functions(paths: list[Path] = LABS) -> list[tuple[str, ast.FunctionDef]]:
    out = []
    for path in paths:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                out.append((f"{path.parent.name}.{path.stem}", node))
    return out


def returns_claims(fn: ast.FunctionDef) -> bool:
    return fn.returns is not None and re.search(r"\bClaim\b", ast.unparse(fn.returns)) is not None


def test_claim_functions_take_show():
    wrong = [f"{m}.{fn.name}" for m, fn in lesson_functions(LABS)
             if (returns_claims(fn) or re.search(r"_claims?$", fn.name))
             and "show" not in [a.arg for a in fn.args.kwonlyargs]]
    assert not wrong, f"claim functions without a keyword show=: {wrong}"


def test_claim_functions_are_named_claims():
    off = {}
    for m, fn in lesson_functions():
        if returns_claims(fn) and not re.search(r"_claims?$", fn.name):
            off.setdefault(m, set()).add(fn.name)
    assert off == NOT_YET_CLAIMS, (
        f"claim functions not named <what>_claims, beyond the known list: "
        f"{ {m: sorted(v - NOT_YET_CLAIMS.get(m, set())) for m, v in off.items() if v - NOT_YET_CLAIMS.get(m, set())} }; "
        f"renamed since (drop them from NOT_YET_CLAIMS): "
        f"{ {m: sorted(v - off.get(m, set())) for m, v in NOT_YET_CLAIMS.items() if v - off.get(m, set())} }")


def test_the_recording_parameter_has_one_spelling():
    off = set()
    for m, fn in lesson_functions():
        for a in fn.args.args + fn.args.kwonlyargs:
            if re.search(r"record|^ref$", a.arg) and a.arg not in RECORDING_SPELLINGS:
                off.add((m, fn.name, a.arg))
    assert off == NOT_YET_RECORDING, f"recording parameters spelled otherwise: {sorted(off - NOT_YET_RECORDING)}; " \
                                     f"fixed since (drop them): {sorted(NOT_YET_RECORDING - off)}"


# one name that still means two things: lesson 09 came under this rule with issue 31 (iolab/lessons/*/),
# its lab.start gives a Lab where lesson 08's sections.start gives a Cluster; the test fails when it is
# renamed (drop it here) or when another name joins it
NOT_YET_ONE_THING: set[str] = {"start"}


def test_one_public_name_means_one_thing_across_lessons():
    seen: dict[str, set[str]] = {}
    where: dict[str, list[str]] = {}
    for m, fn in lesson_functions():
        # explain.Claim and Claim are one type, however a module imports it
        seen.setdefault(fn.name, set()).add(re.sub(r"\bexplain\.", "", ast.unparse(fn.returns)) if fn.returns else "?")
        where.setdefault(fn.name, []).append(m)
    # the same name in two lessons must return the same kind of thing (record, start, overhead...)
    todo = set().union(*NOT_YET_CLAIMS.values())     # bare claim names (spread, sweep...) clash until renamed
    clash = {n: (where[n], sorted(r)) for n, r in seen.items() if len(where[n]) > 1 and len(r) > 1 and n not in todo}
    assert set(clash) == NOT_YET_ONE_THING, (
        f"one name, different things, in several lesson modules: "
        f"{ {n: c for n, c in clash.items() if n not in NOT_YET_ONE_THING} }; "
        f"one thing since (drop them from NOT_YET_ONE_THING): {sorted(NOT_YET_ONE_THING - set(clash))}")
    assert "block_device" not in where, "block_device is iolab.witness's (a /sys/class/block Path): name a lesson's " \
                                        "own by what it returns (device_name, device_path)"
