"""Notebook hygiene: strip outputs (but keep nbval's checked cells), pair notebooks with text, generate
exercise copies.

Pairs: every notebook people write (the lessons, notebooks/**, and the exercise solutions) has beside it
NAME.md, the same cells as MyST markdown (jupytext's ``md:myst``), so that a review reads prose and code,
not JSON strings. The notebook is what runs (nbval, the site) and holds the checked cells' outputs; the
pair is its text. ``strip`` keeps them in step: the pair is rewritten from the notebook, unless the pair
is the newer of the two and says something else (it was edited): then its cells go into the notebook
(the checked cells keep their outputs where their code is unchanged), then the pair is rewritten.

    python -m iolab.nbtools strip [NOTEBOOK ...]     strip outputs in place (default: every notebook) and
                                                     sync each lesson's and solution's MyST pair (NAME.md)
    python -m iolab.nbtools exercises                regenerate exercises/NN-topic.ipynb from solutions
    python -m iolab.nbtools check                    exit 1 if anything is unstripped, stale or unpaired
    python -m iolab.nbtools html [NOTEBOOK ...] [--out DIR]
                                                     execute (default: every lesson), then export each to
                                                     DIR/NAME.html (default build/html) to share or read
                                                     without a kernel: every chart drawn, offline
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import nbexec

CHECKED = "NBVAL_CHECK_OUTPUT"
SOLUTION_LINE = "# SOLUTION"
END_SOLUTION_LINE = "# END SOLUTION"
SOLUTION_TAG = "solution"
STUDENT_NOTE = ("*How this exercise works:* run the cells from the top. In each task, replace every `...` "
                "with your answer, then run the check under it: it prints **✓ Correct** and why, or **✗ Not yet** "
                "with a hint. A check run before you answer gives you its hint, so you can start there. Your "
                "answers stay in this notebook; the experiments write only to your own workspace.")
# for the course's authors, kept in the copy's metadata (never shown to students)
GENERATED = {"generated_from": "exercises/solutions/", "by": "make exercises",
             "edit": "the solution notebook, not this copy"}

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
    taken = {c["id"] for c in out["cells"] if c.get("id")}
    if out.get("nbformat", 4) > 4 or out.get("nbformat_minor", 0) >= 5:     # nbformat 4.5: every cell has an id
        for i, cell in enumerate(out["cells"]):
            if not cell.get("id"):
                digest = hashlib.sha1(f"{i}:{''.join(cell.get('source', ''))}".encode()).hexdigest()
                cell["id"] = next(digest[k:k + 8] for k in range(0, 33) if digest[k:k + 8] not in taken)
                taken.add(cell["id"])
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
    if nb.get("nbformat", 4) > 4 or nb.get("nbformat_minor", 0) >= 5:
        found += [f"cell {i}: no id (nbformat 4.5 wants one; make strip gives it)"
                  for i, cell in enumerate(nb["cells"]) if not cell.get("id")]
    return found


def _cut(source: str) -> str:
    """Remove the lines from each ``# SOLUTION`` line to the next ``# END SOLUTION`` (or the end)."""
    kept, cutting = [], False
    for line in source.splitlines(keepends=True):
        if line.strip() == SOLUTION_LINE:
            cutting = True
        elif line.strip() == END_SOLUTION_LINE and cutting:
            cutting = False
        elif not cutting:
            kept.append(line)
    return "".join(kept).rstrip("\n")


def task_problems(solution: Notebook) -> list[str]:
    """Tasks of an exercise whose student copy shows no check: each code cell with a ``# SOLUTION``
    must be followed, in the same cell (after ``# END SOLUTION``) or in the next code cell, by an
    ``iolab.check`` call the student sees."""
    found = []
    code = [c for c in student_copy(solution)["cells"] if c.get("cell_type") == "code"]
    originals = [c for c in solution["cells"] if c.get("cell_type") == "code"
                 and SOLUTION_TAG not in c.get("metadata", {}).get("tags", [])]
    for k, (orig, cell) in enumerate(zip(originals, code)):
        if SOLUTION_LINE not in _source(orig):
            continue
        here = _source(cell)
        after_task = here if END_SOLUTION_LINE in _source(orig) else ""
        nxt = _source(code[k + 1]) if k + 1 < len(code) else ""
        if "check." not in after_task and "check." not in nxt:
            first = (here.splitlines() or ["(empty)"])[0]
            found.append(f"task cell {k} ({first!r}) is not followed by a check the student sees")
    return found


def student_copy(solution: Notebook) -> Notebook:
    """The exercise as a student sees it: solution cells removed, code from ``# SOLUTION`` to
    ``# END SOLUTION`` (or to the end of the cell) cut."""
    nb = stripped(solution)
    cells = []
    for cell in nb["cells"]:
        if SOLUTION_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        if cell.get("cell_type") == "code" and SOLUTION_LINE in _source(cell):
            cell = {**cell, "source": _cut(_source(cell)), "outputs": [], "execution_count": None}
        cells.append(cell)
    note = {"cell_type": "markdown", "id": "student-copy-note", "metadata": {}, "source": STUDENT_NOTE}
    nb["cells"] = cells[:1] + [note] + cells[1:]
    nb["metadata"] = {**nb.get("metadata", {}), "iolab": dict(GENERATED)}
    return nb


PAIRED = ("notebooks", "exercises/solutions")    # where the notebooks people write live (not the generated copies)
PAIR_FORMAT = "md:myst"
_PAIR_VERSION = re.compile(r"^ *jupytext_version: .*\n", re.MULTILINE)   # jupytext's own version: not content


def paired(root: Path | None = None) -> list[Path]:
    """The notebooks that have a MyST pair: the lessons (with the instructor's) and the exercise solutions."""
    root = root or project_root()
    return sorted(p for d in PAIRED for p in (root / d).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def pair_of(notebook: Path) -> Path:
    return Path(notebook).with_suffix(".md")


def as_myst(nb: Notebook) -> str:
    """The notebook's cells as MyST markdown (its pair's text), from its stripped form."""
    import jupytext
    import nbformat

    text = jupytext.writes(nbformat.reads(json.dumps(stripped(nb)), as_version=4), fmt=PAIR_FORMAT)
    return _PAIR_VERSION.sub("", text, count=1)


def from_myst(text: str, notebook: Notebook) -> Notebook:
    """The notebook with the cells of its pair's ``text``: its metadata kept, and every cell the text left
    as it was kept whole (id, outputs, execution count); a cell changed in place keeps its id and loses
    its outputs, a new cell gets an id of its own (:func:`stripped`)."""
    import difflib

    import jupytext
    import nbformat

    new = json.loads(nbformat.writes(jupytext.reads(text, fmt=PAIR_FORMAT)))["cells"]
    old = json.loads(json.dumps(notebook))["cells"]
    # the text ends no cell with a newline: a cell that differs only by one at its end is the same cell
    key = lambda c: (c.get("cell_type"), _source(c).rstrip("\n"),  # noqa: E731
                     json.dumps(c.get("metadata", {}), sort_keys=True))
    cells = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, [key(c) for c in old], [key(c) for c in new],
                                                      autojunk=False).get_opcodes():
        if op == "equal":
            cells += old[i1:i2]
            continue
        for k, cell in enumerate(new[j1:j2]):
            cell.pop("id", None)
            if op == "replace" and i2 - i1 == j2 - j1 and old[i1 + k].get("id"):
                cell["id"] = old[i1 + k]["id"]
            cells.append(cell)
    out = {**copy.deepcopy(notebook), "cells": cells}
    return stripped(out)


def pair_problems(root: Path | None = None) -> list[str]:
    """Notebooks without their pair or out of step with it, and pairs without a notebook."""
    root = root or project_root()
    found = []
    for p in paired(root):
        md = pair_of(p)
        if not md.exists():
            found.append(f"{p.relative_to(root)} has no MyST pair {md.name}: run `make strip`")
        elif md.read_text() != as_myst(read(p)):
            found.append(f"{md.relative_to(root)} is out of step with {p.name}: run `make strip`")
    for d in PAIRED:
        for md in sorted((root / d).rglob("*.md")):
            if ".ipynb_checkpoints" not in md.parts and not md.with_suffix(".ipynb").exists():
                found.append(f"{md.relative_to(root)} pairs no notebook")
    return found


def sync_pair(notebook: Path) -> list[str]:
    """Strip the notebook and bring its pair in step (see the module's docstring); returns what changed."""
    notebook = Path(notebook)
    md = pair_of(notebook)
    nb = read(notebook)
    changed = []
    if md.exists() and md.stat().st_mtime > notebook.stat().st_mtime:
        text = md.read_text()
        if text != as_myst(nb):                       # the pair was edited after the notebook: it wins
            nb = from_myst(text, nb)
            write(nb, notebook)
            changed.append(f"updated {notebook} from {md.name}")
    new = stripped(nb)
    if new != read(notebook):
        write(new, notebook)
        changed.append(f"stripped {notebook}")
    text = as_myst(new)
    if not md.exists() or md.read_text() != text:
        md.write_text(text)
        changed.append(f"wrote {md}")
    return changed


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


# plotly 7's HTML renderer puts this before every chart (``include_mathjax="cdn"``, hard-coded): a request
# to a CDN that no chart of the course needs (none uses LaTeX), which stalls a page on a network that
# drops packets. Removed from every executed output (make html, make site).
MATHJAX_CDN = re.compile(r'<script src="https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"<>]*"></script>')
#: the executed notebook's own record of how it was made (nb.metadata["iolab"]["executed"])
EXECUTED = "executed"


def offline_outputs(nb) -> int:
    """Remove plotly's MathJax CDN ``<script>`` from every ``text/html`` output; returns how many."""
    removed = 0
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []) or []:
            data = out.get("data") or {}
            html = data.get("text/html")
            if html is None:
                continue
            html = "".join(html) if isinstance(html, list) else html
            new, n = MATHJAX_CDN.subn("", html)
            if n:
                data["text/html"] = new
                removed += n
    return removed


def execution_key(notebook: Path, root: Path | None = None) -> str:
    """What an execution's outputs depend on, as one digest: the notebook's bytes, every file of the
    iolab package and of data/ (the recordings a replay reads) and the plotly that draws the charts.
    Any change of one of them is a new key (but of iolab/site.py, which builds the site around the
    executions and runs in none). (Not the mode: a cache holds the executions of one mode,
    ``make site``'s replays.)"""
    import plotly

    root = root or project_root()
    h = hashlib.sha256()
    h.update(f"plotly {plotly.__version__}\0".encode())
    h.update(Path(notebook).read_bytes())
    for top in ("iolab", "data"):
        for f in sorted((root / top).rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts and f != root / "iolab" / "site.py":  # the builder
                h.update(f"\0{f.relative_to(root)}\0".encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:20]


def executed(notebook: Path, *, cache: Path | None = None, timeout: int = nbexec.CELL_TIMEOUT,
             env: dict[str, str] | None = None):
    """The notebook executed (in its own directory, in this environment's IOLAB_MODE), WITHOUT widget
    state and with plotly's MathJax CDN tag removed (:func:`offline_outputs`): the one execution
    behind ``make html`` and ``make site``.

    ``env``: the kernel's environment (default: this process's). With ``cache`` (a directory: one per
    mode, its executions all made in the same one), an execution is kept there as ``NAME-KEY.ipynb`` (:func:`execution_key`)
    and taken from there while nothing it depends on changed (the older ones of that notebook are removed).

    Why without widget state (nbclient stores it in the notebook's metadata by default): with the
    state, nbconvert's templates choose each control box's widget view
    (application/vnd.jupyter.widget-view+json), which draws only with the widget libraries fetched from
    a CDN, an empty box offline; without it they fall back to the box's text/html, the chart as first
    drawn (iolab.rendering.add_static_figures, widgets.Explorer). plotly.js is embedded once
    (iolab.setup()'s notebook renderer). The state is dropped after execution, not left unrecorded:
    nbclient 0.11 raises KeyError on an Output widget's output (interact's) when it records none."""
    import platform
    import time
    from datetime import datetime, timezone

    import nbformat

    notebook = Path(notebook)
    target = None
    if cache is not None:
        key = execution_key(notebook)
        target = Path(cache) / f"{notebook.stem}-{key}.ipynb"
        if target.exists():
            return nbformat.read(target, as_version=4)
    nb = nbformat.read(notebook, as_version=4)
    started = time.monotonic()
    nbexec.execute(nb, notebook.resolve().parent, timeout=timeout, env=env)
    nb.metadata.pop("widgets", None)
    offline_outputs(nb)
    nb.metadata.setdefault("iolab", {})[EXECUTED] = {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": f"{os.cpu_count()}-core {platform.machine()} host, Linux {platform.release()}",
        "seconds": round(time.monotonic() - started, 1),
        "load": round(os.getloadavg()[0], 1)}
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        for old in target.parent.glob(f"{notebook.stem}-*.ipynb"):
            if old.stem[len(notebook.stem) + 1:].isalnum():
                old.unlink()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")   # two builds at once
        with os.fdopen(fd, "w") as f:
            nbformat.write(nb, f)
        os.replace(tmp, target)
    return nb


def export_html(notebook: Path, out_dir: Path, *, timeout: int = nbexec.CELL_TIMEOUT,
                cache: Path | None = None) -> Path:
    """Execute a notebook (:func:`executed`) and write it as one HTML file that shows every chart
    without a kernel: DIR/NAME.html."""
    import nbconvert

    notebook = Path(notebook)
    nb = executed(notebook, cache=cache, timeout=timeout)
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (notebook.stem + ".html")
    target.write_text(html)
    return target


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = args.pop(0) if args else "check"
    if cmd == "strip":
        pairs = {p.resolve() for p in paired()}
        given = [Path(a).with_suffix(".ipynb") if a.endswith(".md") else Path(a) for a in args]   # a pair: its notebook
        for p in dict.fromkeys(given or notebooks()):
            if not p.exists():
                continue
            if p.resolve() in pairs:
                for line in sync_pair(p):
                    print(line)
                continue
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
        bad = ([f"{p}: {msg}" for p in notebooks() for msg in problems(read(p))] + exercise_problems()
               + pair_problems())
        for line in bad:
            print(line)
        return 1 if bad else 0
    if cmd == "html":
        out = project_root() / "build" / "html"
        if "--out" in args:
            i = args.index("--out")
            out = Path(args[i + 1])
            del args[i:i + 2]
        for p in [Path(a) for a in args] or sorted((project_root() / "notebooks").glob("[0-9][0-9]-*.ipynb")):
            print(f"wrote {export_html(p, out)}")
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
