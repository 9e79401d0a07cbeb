"""Lessons reviewable as text: every notebook people write has its MyST markdown pair (NAME.md, jupytext's
md:myst) beside it, in step with it, and `python -m iolab.nbtools strip` keeps them so (iolab/nbtools.py)."""
from __future__ import annotations

import os
import re
import shutil

import pytest

from iolab import nbtools

jupytext = pytest.importorskip("jupytext")
ROOT = nbtools.project_root()


def test_every_written_notebook_has_its_pair_in_step():
    books = nbtools.paired()
    assert {p.parent.relative_to(ROOT).parts[0] for p in books} == {"notebooks", "exercises"}
    assert any(p.parent.name == "instructor" for p in books) and any(p.parent.name == "solutions" for p in books)
    assert not [p for p in books if p.parent == ROOT / "exercises"], "the generated student copies are not paired"
    assert nbtools.pair_problems() == []


def test_a_pair_holds_every_cell_of_its_notebook_as_text():
    for p in nbtools.paired():
        nb = nbtools.read(p)
        text = nbtools.pair_of(p).read_text()
        back = jupytext.reads(text, fmt="md:myst")
        assert [(c.cell_type, c.source.rstrip("\n"), c.metadata.get("tags", [])) for c in back.cells] == \
            [(c["cell_type"], nbtools._source(c).rstrip("\n"), c.get("metadata", {}).get("tags", [])) for c in nb["cells"]], p
        assert '"outputs":' not in text and '"cell_type":' not in text and "jupytext_version" not in text
        assert nbtools.from_myst(text, nb) == nbtools.stripped(nb), f"{p}: the pair does not give its notebook back"


def _course(tmp_path, name="03-strace-syscalls"):
    """A copy of one lesson and its pair in a tree shaped like the course's."""
    (tmp_path / "notebooks").mkdir()
    for ext in (".ipynb", ".md"):
        shutil.copy(ROOT / "notebooks" / f"{name}{ext}", tmp_path / "notebooks" / f"{name}{ext}")
    return tmp_path / "notebooks" / f"{name}.ipynb"


def _touch_newer(path, than):
    t = os.stat(than).st_mtime + 5
    os.utime(path, (t, t))


def test_an_edit_of_the_notebook_rewrites_the_pair(tmp_path):
    nb_path = _course(tmp_path)
    nb = nbtools.read(nb_path)
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    cell["source"] = nbtools._source(cell) + "\n\nA sentence added in the notebook."
    nbtools.write(nb, nb_path)
    _touch_newer(nb_path, nbtools.pair_of(nb_path))
    done = nbtools.sync_pair(nb_path)
    assert any(d.startswith("wrote") for d in done), done
    assert "A sentence added in the notebook." in nbtools.pair_of(nb_path).read_text()
    assert nbtools.problems(nbtools.read(nb_path)) == []
    assert nbtools.sync_pair(nb_path) == [], "a second sync changed something"


def test_an_edit_of_the_pair_goes_into_the_notebook_keeping_checked_outputs(tmp_path):
    name = next(p.stem for p in nbtools.paired() if p.parent.name == "notebooks"
                and any(nbtools.is_checked(c) for c in nbtools.read(p)["cells"]))
    nb_path = _course(tmp_path, name)
    before = nbtools.read(nb_path)
    checked = [(c["id"], c["outputs"]) for c in before["cells"] if nbtools.is_checked(c)]
    md = nbtools.pair_of(nb_path)
    text = md.read_text()
    title = next(line for line in text.splitlines() if line.startswith("# "))
    md.write_text(text.replace(title, title + "\n\nA sentence added in the pair.", 1))
    _touch_newer(md, nb_path)
    done = nbtools.sync_pair(nb_path)
    assert done and done[0].startswith("updated"), done
    after = nbtools.read(nb_path)
    assert "A sentence added in the pair." in nbtools._source(after["cells"][0])
    assert [(c["id"], c["outputs"]) for c in after["cells"] if nbtools.is_checked(c)] == checked
    assert [c.get("id") for c in after["cells"]] == [c.get("id") for c in before["cells"]]
    assert after["metadata"] == before["metadata"]
    assert nbtools.problems(after) == []
    assert md.read_text() == nbtools.as_myst(after)


def test_an_older_pair_never_overwrites_the_notebook(tmp_path):
    nb_path = _course(tmp_path)
    md = nbtools.pair_of(nb_path)
    md.write_text(md.read_text().replace("strace", "STRACE-FROM-AN-OLD-PAIR", 1))
    _touch_newer(nb_path, md)
    nbtools.sync_pair(nb_path)
    assert "STRACE-FROM-AN-OLD-PAIR" not in nb_path.read_text()
    assert "STRACE-FROM-AN-OLD-PAIR" not in md.read_text()


def test_strip_of_a_pair_or_its_notebook_syncs_them(tmp_path, monkeypatch, capsys):
    nb_path = _course(tmp_path)
    monkeypatch.setattr(nbtools, "project_root", lambda: tmp_path)
    md = nbtools.pair_of(nb_path)
    md.unlink()
    assert nbtools.pair_problems(tmp_path) == [f"notebooks/{nb_path.name} has no MyST pair {md.name}: run `make strip`"]
    assert nbtools.main(["strip", str(nb_path)]) == 0
    assert md.exists() and nbtools.pair_problems(tmp_path) == []
    md.write_text(md.read_text() + "\nA last line, added in the pair.\n")
    _touch_newer(md, nb_path)
    assert nbtools.main(["strip", str(md)]) == 0
    assert "A last line, added in the pair." in nb_path.read_text()
    assert "updated" in capsys.readouterr().out
    (tmp_path / "notebooks" / "99-gone.md").write_text("# a pair without its notebook\n")
    assert nbtools.pair_problems(tmp_path) == ["notebooks/99-gone.md pairs no notebook"]


def test_pre_commit_strips_and_syncs_the_pairs_and_makes_the_exercises():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {h["id"]: h for repo in config["repos"] for h in repo["hooks"]}
    assert {"nbtools-strip", "exercises"} <= set(hooks)
    assert hooks["nbtools-strip"]["entry"].endswith("-m iolab.nbtools strip")
    files = re.compile(hooks["nbtools-strip"]["files"])
    for p in [*nbtools.notebooks(), *map(nbtools.pair_of, nbtools.paired())]:
        assert files.search(str(p.relative_to(ROOT))), p
    assert not files.search("iolab/nbtools.py") and not files.search("docs/jupyterhub.md")
    assert hooks["exercises"]["entry"].endswith("-m iolab.nbtools exercises") and hooks["exercises"]["pass_filenames"] is False
    assert all(h["language"] == "system" for h in (hooks["nbtools-strip"], hooks["exercises"]))
