"""Grading with nbgrader: the exercises turned into an nbgrader source course.

``python -m iolab.grading source COURSE_DIR`` writes ``COURSE_DIR/source/<NN-topic>/<NN-topic>.ipynb``
for each ``exercises/solutions/NN-topic.ipynb``, and an ``nbgrader_config.py``:

* a task cell (code with a ``# SOLUTION`` line) becomes an *autograded answer*: its solution region
  is wrapped in nbgrader's ``### BEGIN SOLUTION`` / ``### END SOLUTION``, so ``generate_assignment``
  replaces it with ``raise NotImplementedError()``; the prompt above it stays;
* every ``check.…`` call becomes a locked *autograded test* cell worth :data:`POINTS` points (a check
  written after ``# END SOLUTION`` in the task cell is split off into a test cell of its own); the
  check raises ``CheckFailed`` (an ``AssertionError``) when the answer is wrong, which scores 0;
* a cell tagged ``solution`` becomes a solution region as a whole; every other code cell is locked.

nbgrader is an extra (``pip install 'iolab[grading]'``): the course runs without it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from . import nbexec, nbtools

POINTS = 1
CONFIG = '''# nbgrader configuration of the iolab exercises (written by python -m iolab.grading source)
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = {course!r}
c.CourseDirectory.root = {root!r}
# the exercises use the course's kernel and its tools; a cell may run a real tool for a while
c.ExecutePreprocessor.timeout = {timeout}
# nbclient's own kernel client can lose a cell's reply and wait forever (iolab/nbexec.py)
c.AsyncKernelManager.client_class = {client!r}
'''


def _meta(grade_id: str, *, solution: bool, grade: bool, locked: bool) -> dict[str, Any]:
    m: dict[str, Any] = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                         "solution": solution, "task": False}
    if grade:
        m["points"] = POINTS
    return m


def _code(source: str, meta: dict[str, Any], cell_id: str) -> dict[str, Any]:
    return {"cell_type": "code", "id": cell_id, "metadata": {"nbgrader": meta}, "source": source,
            "outputs": [], "execution_count": None}


def _quiet(source: str) -> str:
    """End a test cell with ';': a check returns True, which nbgrader would take for a partial score."""
    return source.rstrip().rstrip(";") + ";"


def _split_task(source: str) -> tuple[str, str]:
    """(answer cell source with nbgrader markers, check lines that followed ``# END SOLUTION``)."""
    answer, checks, state = [], [], "prompt"
    for line in source.splitlines():
        s = line.strip()
        if s == nbtools.SOLUTION_LINE and state == "prompt":
            answer.append("### BEGIN SOLUTION")
            state = "solution"
        elif s == nbtools.END_SOLUTION_LINE and state == "solution":
            answer.append("### END SOLUTION")
            state = "after"
        elif state == "after":
            checks.append(line)
        else:
            answer.append(line)
    if state == "solution":
        answer.append("### END SOLUTION")
    return "\n".join(answer), "\n".join(checks).strip("\n")


def source_notebook(solution: nbtools.Notebook, name: str) -> nbtools.Notebook:
    """The nbgrader source version of one exercise solution."""
    nb = nbtools.stripped(solution)
    cells: list[dict[str, Any]] = []
    tasks = tests = locked = 0
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code":
            cells.append({k: v for k, v in cell.items() if k != "outputs"})
            continue
        src = nbtools._source(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if nbtools.SOLUTION_TAG in tags:
            tasks += 1
            cells.append(_code(f"### BEGIN SOLUTION\n{src}\n### END SOLUTION",
                               _meta(f"{name}-task-{tasks}", solution=True, grade=False, locked=False),
                               f"task-{tasks}"))
        elif any(line.strip() == nbtools.SOLUTION_LINE for line in src.splitlines()):
            tasks += 1
            answer, checks = _split_task(src)
            cells.append(_code(answer, _meta(f"{name}-task-{tasks}", solution=True, grade=False, locked=False),
                               f"task-{tasks}"))
            if checks:
                tests += 1
                cells.append(_code(_quiet(checks), _meta(f"{name}-check-{tests}", solution=False, grade=True,
                                                 locked=True), f"check-{tests}"))
        elif "check." in src:
            tests += 1
            cells.append(_code(_quiet(src), _meta(f"{name}-check-{tests}", solution=False, grade=True, locked=True),
                               f"check-{tests}"))
        else:
            locked += 1
            cells.append(_code(src, _meta(f"{name}-setup-{locked}", solution=False, grade=False, locked=True),
                               f"setup-{locked}"))
    if not tasks or not tests:
        raise ValueError(f"{name}: an exercise needs at least one task and one check "
                         f"(found {tasks} tasks, {tests} checks)")
    nb["cells"] = cells
    return nb


def write_source(course: Path, root: Path | None = None, course_id: str = "iolab") -> list[Path]:
    """Write the nbgrader source course for every exercise into ``course``; returns the notebooks."""
    course = Path(course).resolve()
    written = []
    for sol in nbtools.solutions(root):
        name = sol.stem
        out = course / "source" / name / f"{name}.ipynb"
        out.parent.mkdir(parents=True, exist_ok=True)
        nbtools.write(source_notebook(nbtools.read(sol), name), out)
        written.append(out)
    (course / "nbgrader_config.py").write_text(CONFIG.format(course=course_id, root=str(course),
                                                             timeout=nbexec.CELL_TIMEOUT, client=nbexec.CLIENT))
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iolab.grading",
                                 description="Turn the exercises into an nbgrader source course.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    src = sub.add_parser("source", help="write COURSE/source/<exercise>/<exercise>.ipynb and nbgrader_config.py")
    src.add_argument("course", type=Path)
    src.add_argument("--course-id", default="iolab")
    args = ap.parse_args(argv)
    for p in write_source(args.course, course_id=args.course_id):
        print(p)
    print(f"next: cd {args.course} && nbgrader generate_assignment <exercise>")
    return 0


if __name__ == "__main__":
    sys.exit(main())
