"""Notebook hygiene: strip outputs (but keep nbval's checked cells) and generate exercise copies.

    python -m iolab.nbtools strip [NOTEBOOK ...]     strip outputs in place (default: every notebook)
    python -m iolab.nbtools exercises                regenerate exercises/NN-topic.ipynb from solutions
    python -m iolab.nbtools check                    exit 1 if anything is unstripped, stale or unpaired
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

CHECKED = "NBVAL_CHECK_OUTPUT"
SOLUTION_LINE = "# SOLUTION"
SOLUTION_TAG = "solution"
STUDENT_NOTE = ("*This is the student copy, generated from `exercises/solutions/` by `make exercises`. "
                "Edit the solution notebook, not this one.*")

Notebook = dict[str, Any]


def project_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _source(cell: dict[str, Any]) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def is_checked(cell: dict[str, Any]) -> bool:
    return cell.get("cell_type") == "code" and CHECKED in _source(cell)


def read(path: Path) -> Notebook:
    return json.loads(path.read_text())


def write(nb: Notebook, path: Path) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def stripped(nb: Notebook) -> Notebook:
    """A copy without outputs, execution counts and volatile metadata, except nbval's checked cells."""
    out = copy.deepcopy(nb)
    for cell in out["cells"]:
        cell.get("metadata", {}).pop("execution", None)
        cell.get("metadata", {}).pop("collapsed", None)
        cell.get("metadata", {}).pop("scrolled", None)
        if cell.get("cell_type") != "code" or is_checked(cell):
            continue
        cell["outputs"] = []
        cell["execution_count"] = None
    meta = out.setdefault("metadata", {})
    meta.pop("widgets", None)
    meta.setdefault("kernelspec", {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"})
    return out


def problems(nb: Notebook) -> list[str]:
    """What makes a committed notebook unclean: stray outputs, or checked cells nbval would skip."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        if is_checked(cell):
            if cell.get("execution_count") is None or not cell.get("outputs"):
                found.append(f"cell {i}: marked {CHECKED} but has no stored output/execution_count, "
                             "so nbval would never compare it")
        elif cell.get("outputs") or cell.get("execution_count") is not None:
            found.append(f"cell {i}: committed with outputs")
    if nb.get("metadata", {}).get("widgets"):
        found.append("notebook metadata holds widget state")
    return found


def student_copy(solution: Notebook) -> Notebook:
    """The exercise as a student sees it: solution cells removed, code after `# SOLUTION` cut."""
    nb = stripped(solution)
    cells = []
    for cell in nb["cells"]:
        if SOLUTION_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.get("cell_type") == "code":
            lines = _source(cell).splitlines(keepends=True)
            for k, line in enumerate(lines):
                if line.strip() == SOLUTION_LINE:
                    kept = "".join(lines[:k]).rstrip("\n")
                    cell = {**cell, "source": kept, "outputs": [], "execution_count": None}
                    break
        cells.append(cell)
    note = {"cell_type": "markdown", "id": "student-copy-note", "metadata": {}, "source": STUDENT_NOTE}
    nb["cells"] = cells[:1] + [note] + cells[1:]
    return nb


def solutions(root: Path | None = None) -> list[Path]:
    return sorted(((root or project_root()) / "exercises" / "solutions").glob("[0-9][0-9]-*.ipynb"))


def notebooks(root: Path | None = None) -> list[Path]:
    root = root or project_root()
    return sorted(p for d in ("notebooks", "exercises") for p in (root / d).rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def _dump(nb: Notebook) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def generate_exercises(root: Path | None = None) -> list[Path]:
    root = root or project_root()
    written = []
    for sol in solutions(root):
        target = root / "exercises" / sol.name
        text = _dump(student_copy(read(sol)))
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            written.append(target)
    return written


def exercise_problems(root: Path | None = None) -> list[str]:
    """Stale or missing student copies, and student copies without a solution."""
    root = root or project_root()
    found = []
    sols = {p.name for p in solutions(root)}
    for sol in solutions(root):
        target = root / "exercises" / sol.name
        if not target.exists():
            found.append(f"{target.relative_to(root)} is missing: run `make exercises`")
        elif target.read_text() != _dump(student_copy(read(sol))):
            found.append(f"{target.relative_to(root)} is stale: run `make exercises`")
    for copy_ in sorted((root / "exercises").glob("*.ipynb")):
        if copy_.name not in sols:
            found.append(f"{copy_.relative_to(root)} has no solution in exercises/solutions/")
    return found


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args.pop(0) if args else "check"
    if cmd == "strip":
        for p in [Path(a) for a in args] or notebooks():
            nb = read(p)
            new = stripped(nb)
            if new != nb:
                write(new, p)
                print(f"stripped {p}")
        return 0
    if cmd == "exercises":
        for p in generate_exercises():
            print(f"wrote {p}")
        return 0
    if cmd == "check":
        bad = [f"{p}: {msg}" for p in notebooks() for msg in problems(read(p))] + exercise_problems()
        for line in bad:
            print(line)
        return 1 if bad else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
