"""The package's layers (issue 15): a tool module wraps its tool and nothing more, lessons live in
iolab/lessons, one package each (lesson 06 too: iolab/objectstore is its servers, links and mounts), and what a notebook
calls is public."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "iolab"
# what a tool module may import of iolab: the runner and what it stands on, and other tool modules.
# guard is below workspace (workspace imports it): a tool that owns a process group tells it too.
TOOLS_MAY_IMPORT = {"runner", "mpi", "workspace", "units", "errors", "safeio", "guard", "tools"}


def iolab_imports(path: Path) -> set[str]:
    """The iolab modules a file imports, anywhere in it (inside functions too), as dotted names
    below iolab ("runner", "tools.strace", "lessons.l05_mdtest.metadata")."""
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


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts) or "__init__"] = path
    return out


@pytest.mark.slow
def test_no_import_circle_among_iolab_modules():
    # a package's __init__ is the package name ("tools", "lessons.l04_ior"); "" is iolab's own __init__
    modules = _modules()
    graph = {name: {m for m in iolab_imports(path) if m in modules and m != name} for name, path in modules.items()}
    circles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert not circles, f"import circles: {circles}"


@pytest.mark.slow
def test_imports_of_iolab_modules_sit_at_the_top():
    inner = {}
    for name, path in _modules().items():
        tree = ast.parse(path.read_text())
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and id(node) not in top and \
                    (node.level or (node.module or "").split(".")[0] == "iolab"):
                inner.setdefault(name, []).append(node.lineno)
    assert not inner, f"imports of iolab's own modules inside functions (module: lines): {inner}"


def test_developers_md_lists_every_module():
    text = (ROOT / "DEVELOPERS.md").read_text()
    layout = text[text.index("## Layout and ownership"):text.index("## The core API")]
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        folder = str(path.parent.relative_to(ROOT)) + "/"
        if rel in layout or (path.name == "__init__.py" and folder in layout):
            continue
        if path.parent.name == "tools" and f"{folder}<" in layout:     # iolab/tools/<tool>.py
            continue
        if path.parent.parent.name == "lessons" and "iolab/lessons/lNN_topic/" in layout:   # the folders are the index
            continue
        if path.parent.name == "objectstore" and (path.stem in layout and "iolab/objectstore/" in layout):
            continue
        missing.append(rel)
    assert not missing, f"modules DEVELOPERS.md's layout does not name: {missing}"


def test_objectstore_is_servers_links_and_mounts_not_a_lesson():
    """Issue 23: lesson 06's experiments and claims live in iolab/lessons/l06_object_storage (stores, reads,
    transfers); iolab/objectstore only starts, links, mounts and counts: none of its modules
    words a claim, replays a recording or imports a lesson."""
    wrong = {}
    for path in sorted((PACKAGE / "objectstore").glob("*.py")):
        bad = {m for m in iolab_imports(path) if m.split(".")[0] in ("explain", "recordings", "lessons", "trials")}
        claims = [n.name for n in ast.parse(path.read_text()).body
                  if isinstance(n, ast.FunctionDef) and re.search(r"_claims?$", n.name)]
        if bad or claims:
            wrong[path.name] = sorted(bad) + claims
    assert not wrong, f"lesson code in iolab/objectstore: {wrong}"
    assert {"stores", "reads", "transfers"} <= {p.stem for p in (PACKAGE / "lessons" / "l06_object_storage").glob("*.py")}


# what above the lessons may import them: nothing (a lesson's widgets are its explorers module)
ABOVE_THE_LESSONS: set[str] = set()


def test_nothing_below_the_lessons_imports_one():
    """iolab/plot.py and iolab/check.py keep what every lesson shares: no module outside
    iolab/lessons imports a lesson, but the few that sit above them."""
    wrong = {}
    for name, path in _modules().items():
        if name.startswith("lessons") or name in ABOVE_THE_LESSONS:
            continue
        bad = sorted(m for m in iolab_imports(path) if m.startswith("lessons"))
        if bad:
            wrong[name] = bad
    assert not wrong, f"modules below the lessons that import one: {wrong}"


def test_a_lesson_imports_only_earlier_lessons():
    """A lesson builds on the ones before it (lesson 07 reads lesson 03's read loop), never on a later one;
    the instructor's class results may read any."""
    wrong = {}
    for path in sorted((PACKAGE / "lessons").glob("l[0-9][0-9]_*/*.py")):
        here = path.parent.name
        for m in iolab_imports(path):
            parts = m.split(".")
            if parts[0] == "lessons" and len(parts) > 1 and parts[1] != here and \
                    not (parts[1][:1] == "l" and parts[1][1:3].isdigit() and parts[1][1:3] < here[1:3]):
                wrong.setdefault(f"{here}/{path.name}", []).append(m)
    assert not wrong, f"lessons that import a later lesson (or the class's results): {wrong}"
