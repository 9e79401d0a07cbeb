"""Grading with nbgrader: the exercises as an nbgrader source course, generated and autograded for real."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolab import grading, nbtools


@pytest.mark.parametrize("path", nbtools.solutions(), ids=lambda p: p.name)
def test_every_exercise_becomes_answers_and_locked_checks(path):
    nb = grading.source_notebook(nbtools.read(path), path.stem)
    metas = [c["metadata"]["nbgrader"] for c in nb["cells"] if c["cell_type"] == "code"]
    answers = [m for m in metas if m["solution"]]
    checks = [m for m in metas if m["grade"]]
    assert answers and checks
    assert all(m["locked"] and m["points"] == grading.POINTS for m in checks)
    assert len({m["grade_id"] for m in metas}) == len(metas)            # nbgrader needs unique ids
    for c in nb["cells"]:
        meta = c["metadata"].get("nbgrader", {})
        src = c["source"] if isinstance(c["source"], str) else "".join(c["source"])
        if meta.get("solution"):
            assert "### BEGIN SOLUTION" in src and "### END SOLUTION" in src and "check." not in src
        if meta.get("grade"):
            assert "check." in src and src.endswith(";")


def test_a_check_after_end_solution_becomes_a_test_cell_of_its_own():
    sol = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
         "source": "x = ...\n# SOLUTION\nx = 2\n# END SOLUTION\ncheck.check_x(x)\n"}]}
    cells = grading.source_notebook(sol, "demo")["cells"]
    assert [c["source"] for c in cells] == ["x = ...\n### BEGIN SOLUTION\nx = 2\n### END SOLUTION",
                                            "check.check_x(x);"]


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _submit(course: Path, assignment: str, student: str, change: dict[str, str] | None = None) -> None:
    release = json.loads((course / "release" / assignment / f"{assignment}.ipynb").read_text())
    source = {c.get("id"): c for c in json.loads((course / "source" / assignment / f"{assignment}.ipynb")
                                                 .read_text())["cells"]}
    nb = copy.deepcopy(release)
    for c in nb["cells"]:
        if c.get("metadata", {}).get("nbgrader", {}).get("solution"):
            c["source"] = (change or {}).get(c["id"], source[c["id"]]["source"])
    out = course / "submitted" / student / assignment / f"{assignment}.ipynb"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(nb))


@pytest.mark.slow
@pytest.mark.parametrize("assignment,wrong", [
    ("00-start-here", {"task-1": 'answer_fstype = "ext4"'}),
    ("03-strace-syscalls", {"task-1": "calls = 1_000_000 // 3_000"}),
])
def test_nbgrader_generates_and_autogrades_right_and_wrong_submissions(tmp_path, assignment, wrong):
    pytest.importorskip("nbgrader", reason="nbgrader is the [grading] extra: pip install 'iolab[grading]'")
    from nbgrader.api import Gradebook

    course = tmp_path / "course"
    grading.write_source(course)
    _nbgrader(course, "generate_assignment", assignment, "--force")
    student_copy = (course / "release" / assignment / f"{assignment}.ipynb").read_text()
    assert "### BEGIN SOLUTION" not in student_copy and "NotImplementedError" in student_copy
    _submit(course, assignment, "right")
    _submit(course, assignment, "wrong", wrong)
    for student in ("right", "wrong"):
        _nbgrader(course, "db", "student", "add", student)
    _nbgrader(course, "autograde", assignment, "--force")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        right = gb.find_submission(assignment, "right")
        bad = gb.find_submission(assignment, "wrong")
        assert right.max_score > 0 and right.score == right.max_score
        assert bad.score == bad.max_score - grading.POINTS    # exactly the one wrong task lost its point


def test_the_course_config_runs_nbgraders_executions_with_iolabs_kernel_client(tmp_path):
    pytest.importorskip("nbconvert")
    from nbconvert.preprocessors import ExecutePreprocessor
    from traitlets.config import Config

    from iolab import nbexec

    grading.write_source(tmp_path / "course")
    c = Config()
    exec((tmp_path / "course" / "nbgrader_config.py").read_text(), {"get_config": lambda: c})
    ep = ExecutePreprocessor(config=c, kernel_name="python3")
    assert ep.timeout == nbexec.CELL_TIMEOUT
    assert ep.create_kernel_manager().client_factory is nbexec.KernelClient
