"""pyproject.toml is the one list of Python dependencies; environment.yml must mirror it exactly."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _norm(req: str) -> tuple[str, str]:
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+(?:\[[^\]]+\])?)\s*(.*)$", req)
    assert m, f"cannot read requirement {req!r}"
    name, spec = m.groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def pyproject_requirements() -> set[tuple[str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return {_norm(r) for r in reqs}


def environment_requirements() -> set[tuple[str, str]]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    reqs = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            reqs |= {_norm(r) for r in dep.get("pip", []) if not r.startswith("-e")}
        elif not dep.startswith(("python", "pip")) or dep.startswith(("python-",)):
            reqs.add(_norm(dep))
    return reqs


def test_environment_mirrors_pyproject() -> None:
    py, env = pyproject_requirements(), environment_requirements()
    assert py - env == set(), f"in pyproject.toml but not environment.yml: {sorted(py - env)}"
    assert env - py == set(), f"in environment.yml but not pyproject.toml: {sorted(env - py)}"


def test_every_dependency_has_a_version_range() -> None:
    for name, spec in pyproject_requirements():
        assert ">=" in spec and "<" in spec, f"{name} needs a version range (>=low,<high), has {spec!r}"


def test_environment_uses_conda_forge_and_installs_the_package() -> None:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip
