"""Notebook hygiene: outputs stripped, exercise copies generated and fresh, every solution paired."""
from __future__ import annotations

import copy
import json

import pytest

from iolab import nbtools

NOTEBOOKS = nbtools.notebooks()


def test_there_are_lessons_and_exercises():
    names = [p.name for p in NOTEBOOKS]
    assert "00-start-here.ipynb" in names
    assert nbtools.solutions(), "no exercise solutions found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(nbtools.project_root())) for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbtools.read(path)
    assert nbtools.problems(nb) == [], "run `make strip`"
    assert nb["nbformat"] == 4


def test_exercise_copies_are_fresh_and_paired():
    assert nbtools.exercise_problems() == []


def test_lessons_are_numbered_in_teaching_order():
    lessons = sorted(p.name for p in (nbtools.project_root() / "notebooks").glob("*.ipynb"))
    numbers = [int(n[:2]) for n in lessons]
    assert numbers == list(range(len(numbers))), lessons


def _nb(*cells):
    cells = [{"id": f"c{i}", **c} for i, c in enumerate(cells)]
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}


def _code(src, outputs=(), count=None, tags=()):
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": src,
            "outputs": list(outputs), "execution_count": count}


OUT = [{"output_type": "stream", "name": "stdout", "text": "42\n"}]


def test_strip_keeps_only_checked_cells():
    nb = _nb(_code("print(42)", OUT, 1), _code("# NBVAL_CHECK_OUTPUT\nprint(42)", OUT, 2))
    s = nbtools.stripped(nb)
    assert s["cells"][0]["outputs"] == [] and s["cells"][0]["execution_count"] is None
    assert s["cells"][1]["outputs"] == OUT and s["cells"][1]["execution_count"] == 2
    assert nbtools.problems(s) == []
    assert nbtools.problems(nb) == ["cell 0: committed with outputs"]
    unchecked = _nb(_code("# NBVAL_CHECK_OUTPUT\nprint(42)"))
    assert "never compare" in nbtools.problems(unchecked)[0]


def test_student_copy_cuts_solutions():
    sol = _nb({"cell_type": "markdown", "metadata": {}, "source": "# Exercise"},
              _code("answer = ...  # your code\n# SOLUTION\nanswer = 42\n", OUT, 3),
              _code("print('hidden')", tags=["solution"]),
              _code("check(answer)"))
    student = nbtools.student_copy(sol)
    sources = [c["source"] for c in student["cells"]]
    assert sources[0] == "# Exercise" and sources[1] == nbtools.STUDENT_NOTE
    assert sources[2] == "answer = ...  # your code"
    assert "hidden" not in json.dumps(student) and "answer = 42" not in json.dumps(student)
    assert sources[-1] == "check(answer)"


def test_a_stale_copy_is_detected(tmp_path):
    (tmp_path / "exercises" / "solutions").mkdir(parents=True)
    sol = _nb(_code("x = 1\n# SOLUTION\nx = 2"))
    nbtools.write(sol, tmp_path / "exercises" / "solutions" / "09-demo.ipynb")
    assert "missing" in nbtools.exercise_problems(tmp_path)[0]
    nbtools.generate_exercises(tmp_path)
    assert nbtools.exercise_problems(tmp_path) == []
    changed = copy.deepcopy(sol)
    changed["cells"][0]["source"] = "x = 3\n# SOLUTION\nx = 2"
    nbtools.write(changed, tmp_path / "exercises" / "solutions" / "09-demo.ipynb")
    assert "stale" in nbtools.exercise_problems(tmp_path)[0]
    nbtools.write(sol, tmp_path / "exercises" / "10-orphan.ipynb")
    assert any("no solution" in p for p in nbtools.exercise_problems(tmp_path))


def test_end_solution_keeps_the_check_visible():
    sol = _nb(_code("answer = ...  # your code\n# SOLUTION\nanswer = 42\nprint(answer)\n# END SOLUTION\n"
                    "check.check_x(answer)\n"))
    code = [c for c in nbtools.student_copy(sol)["cells"] if c["cell_type"] == "code"]
    assert code[0]["source"] == "answer = ...  # your code\ncheck.check_x(answer)"
    assert nbtools.task_problems(sol) == []


def test_a_task_without_a_visible_check_is_found():
    cut = _nb(_code("answer = ...\n# SOLUTION\nanswer = 42\ncheck(answer)\n"))
    assert "not followed by a check" in nbtools.task_problems(cut)[0]
    next_cell = _nb(_code("answer = ...\n# SOLUTION\nanswer = 42\n"), _code("check.check_x(answer)"))
    assert nbtools.task_problems(next_cell) == []


@pytest.mark.parametrize("path", nbtools.solutions(), ids=lambda p: p.name)
def test_every_exercise_task_ends_in_a_check_the_student_sees(path):
    assert nbtools.task_problems(nbtools.read(path)) == []


def test_student_copies_open_with_a_note_for_students_not_authors():
    """Issue 22, 7: the note under the title is written for the student; the authors' note (edit the
    solution) lives in the copy's metadata."""
    from iolab import nbtools

    for path in sorted((nbtools.project_root() / "exercises").glob("[0-9][0-9]-*.ipynb")):
        nb = json.loads(path.read_text())
        note = "".join(nb["cells"][1]["source"])
        assert "Edit the solution" not in note and "make exercises" not in note, path.name
        assert "`...`" in note and "hint" in note and "Not yet" in note, path.name
        assert nb["metadata"]["iolab"] == nbtools.GENERATED, path.name


def test_strip_gives_every_cell_of_a_4_5_notebook_a_stable_id():
    """nbformat 4.5 wants an id on every cell (nbformat warns, and a future version refuses); a cell
    written by hand or by a script has none until `make strip` gives it one, the same one every time."""
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "markdown", "id": "kept", "metadata": {}, "source": "# a"},
                    {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None},
                    {"cell_type": "code", "metadata": {}, "source": "x = 1", "outputs": [], "execution_count": None}]}
    assert nbtools.problems(nb) == ["cell 1: no id (nbformat 4.5 wants one; make strip gives it)",
                                    "cell 2: no id (nbformat 4.5 wants one; make strip gives it)"]
    out = nbtools.stripped(nb)
    ids = [c["id"] for c in out["cells"]]
    assert ids[0] == "kept" and len(set(ids)) == 3 and ids == [c["id"] for c in nbtools.stripped(nb)["cells"]]
    assert nbtools.problems(out) == []
