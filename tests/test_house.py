"""The house's habits: make test-lesson's table of each lesson's tests stays whole, and the linter
make test runs is configured for pyflakes' checks only."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from conftest import LESSON_TESTS, TESTS

ROOT = TESTS.parent


def test_every_lesson_has_its_tests_notebook_and_solution():
    lessons = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))
    assert sorted(LESSON_TESTS) == lessons
    for nn, files in LESSON_TESTS.items():
        folder = TESTS / "lessons" / f"l{nn}"
        if folder.is_dir():                     # issue 31: a lesson's tests in its own folder
            assert list(folder.glob(f"test_l{nn}_claims*.py")), f"lesson {nn}: no claims tests in {folder}"
        else:
            assert f"test_claims_{nn}.py" in files
        assert len(list((ROOT / "exercises" / "solutions").glob(f"{nn}-*.ipynb"))) == 1
        for name in files:
            assert (TESTS / name).is_file(), f"lesson {nn}: no tests/{name}"


@pytest.mark.slow  # two pytest processes (each starts in seconds, more on a loaded machine)
def test_test_lesson_collects_only_that_lesson(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                        "--lesson=03", str(TESTS)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    files = {line.split("::")[0].rsplit("/", 1)[-1] for line in r.stdout.splitlines() if "::" in line}
    assert files == set(LESSON_TESTS["03"]) | {p.name for p in (TESTS / "lessons" / "l03").glob("test_*.py")}
    bad = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                          "--lesson=99", str(TESTS)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert bad.returncode != 0 and "the lessons are 00" in bad.stderr


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
