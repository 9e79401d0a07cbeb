"""The house's habits: every lesson has its folder of tests (which make test-lesson runs), its package,
notebook and solution; and the linter make test runs is configured for pyflakes' checks only."""
from __future__ import annotations

import re
import tomllib


from conftest import LESSONS, TESTS

ROOT = TESTS.parent


def test_every_lesson_has_its_tests_notebook_and_solution():
    """The folders are the index: a notebook NN-topic has its tests in tests/lessons/lNN/ (its claims'
    among them), one exercise solution and one package iolab/lessons/lNN_<topic>/; a folder of tests
    belongs to a lesson's package (a lesson being written may have its package and tests first)."""
    lessons = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    assert len(lessons) >= 9
    folders = sorted(p.name for p in LESSONS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert set(folders) >= {f"l{nn}" for nn in lessons}, f"lessons without tests/lessons/lNN/: {folders}"
    for nn in lessons:
        assert list((LESSONS / f"l{nn}").glob(f"test_l{nn}_claims*.py")), f"lesson {nn}: no claims tests"
        assert len(list((ROOT / "exercises" / "solutions").glob(f"{nn}-*.ipynb"))) == 1
    for folder in folders:
        assert len(list((ROOT / "iolab" / "lessons").glob(f"{folder}_*/__init__.py"))) == 1, \
            f"tests/lessons/{folder}/: no package iolab/lessons/{folder}_<topic>/"
        wrong = [p.name for p in (LESSONS / folder).glob("*.py") if not p.name.startswith(f"test_{folder}_")]
        assert not wrong, f"tests/lessons/{folder}/ holds files not named test_{folder}_*.py: {wrong}"


def test_test_files_keep_unique_basenames():
    """pytest imports a test file by its basename (no __init__.py in tests/): two folders may not
    hold the same name."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_make_test_lesson_runs_the_lessons_folder():
    make = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-lesson: .*\n((?:\t.*\n)+)", make, re.M).group(1)
    assert "tests/lessons/l$(L)" in recipe and "--lesson" not in recipe
    assert "LESSON_TESTS" not in (TESTS / "conftest.py").read_text()


def test_make_test_lints_first_with_pyflakes_checks_only_then_type_checks():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    assert tool["ruff"]["lint"]["select"] == ["F"]
    assert "iolab/tools" in tool["mypy"]["files"] and "iolab/errors.py" in tool["mypy"]["files"]
    make = (ROOT / "Makefile").read_text()
    for target in ("test", "test-fast"):
        recipe = re.search(rf"^{target}: .*\n((?:\t.*\n)+)", make, re.M).group(1).splitlines()
        assert "ruff check" in recipe[0] and "mypy" in recipe[1] and "pytest" in recipe[2], (target, recipe)


def test_pre_commit_runs_what_make_test_starts_with():
    import yaml

    conf = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in conf["repos"] for h in repo["hooks"]}
    assert {"ruff", "mypy"} <= set(hooks), sorted(hooks)
    assert "ruff check" in hooks["ruff"]["entry"] and "--fix" not in hooks["ruff"]["entry"]
    # mypy over the files [tool.mypy] lists, as make test runs it: not over the files a commit changed
    assert hooks["mypy"]["entry"].split()[-1] == "mypy" and hooks["mypy"]["pass_filenames"] is False
    assert all(h["language"] == "system" for h in (hooks["ruff"], hooks["mypy"]))   # the pinned tools of .venv
