"""The package's layers (issue 15): a tool module wraps its tool and nothing more, lessons live in
iolab/labs (lesson 06 in iolab/objectstore/lab.py), and what a notebook calls is public."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "iolab"
# what a tool module may import of iolab: the runner and what it stands on, and other tool modules.
# guard is below workspace (workspace imports it): a tool that owns a process group tells it too.
TOOLS_MAY_IMPORT = {"runner", "mpi", "workspace", "units", "errors", "guard", "tools"}


def iolab_imports(path: Path) -> set[str]:
    """The iolab modules a file imports, anywhere in it (inside functions too), as dotted names
    below iolab ("runner", "tools.strace", "labs.metadata")."""
    package = path.relative_to(PACKAGE).parent.parts
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
            elif (node.module or "").split(".")[0] == "iolab":
                base = []
            else:
                continue
            module = [p for p in (node.module or "").split(".") if p and p != "iolab"]
            parts = base + module
            if parts and (PACKAGE.joinpath(*parts).with_suffix(".py").exists() or PACKAGE.joinpath(*parts).is_dir()):
                for alias in node.names:
                    sub = parts + [alias.name]
                    is_module = PACKAGE.joinpath(*sub).with_suffix(".py").exists()
                    out.add(".".join(sub if is_module else parts))
            else:
                out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name.removeprefix("iolab.") for a in node.names if a.name.startswith("iolab."))
    return out


def test_the_import_reader_sees_relative_absolute_and_inner_imports():
    probe = PACKAGE / "tools" / "dd.py"
    seen = iolab_imports(probe)
    assert "runner" in seen and "workspace" in seen and "errors" in seen


def test_tool_modules_import_nothing_from_the_lesson_level():
    wrong = {}
    for path in sorted((PACKAGE / "tools").glob("*.py")):
        bad = {m for m in iolab_imports(path) if m.split(".")[0] not in TOOLS_MAY_IMPORT}
        if bad:
            wrong[path.name] = sorted(bad)
    assert not wrong, f"tool modules that import lesson-level modules: {wrong}"


def _code_of(nb: Path) -> str:
    cells = json.loads(nb.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_notebooks_and_exercises_use_no_private_name():
    books = sorted((ROOT / "notebooks").rglob("*.ipynb")) + sorted((ROOT / "exercises").rglob("*.ipynb"))
    assert len(books) >= 17
    private = re.compile(r"\b(?:[a-z_][a-z0-9_]*)\.(_[A-Za-z]\w*)|\bimport (_\w+)|\bfrom [\w.]*\._\w+ import")
    found = {}
    for nb in books:
        hits = [m.group(0) for m in private.finditer(_code_of(nb)) if not m.group(0).startswith("self.")]
        if hits:
            found[str(nb.relative_to(ROOT))] = hits
    assert not found, f"private names used in notebooks: {found}"
