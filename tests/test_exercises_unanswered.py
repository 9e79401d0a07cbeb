"""Issue 22, 7: a student copy run as handed out (every answer still `...`) answers each check with its
hint: the only error a cell may raise is iolab.check.CheckFailed, never a NameError, AttributeError or
TypeError from a placeholder reaching code that expects an answer."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIES = sorted((ROOT / "exercises").glob("[0-9][0-9]-*.ipynb"))


@pytest.mark.parametrize("path", COPIES, ids=lambda p: p.stem)
def test_an_unanswered_copy_gets_a_hint_from_every_check(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbclient")
    from iolab import nbexec
    monkeypatch.setenv("IOLAB_WORKDIR", str(tmp_path))
    monkeypatch.setenv("IOLAB_MODE", os.environ.get("IOLAB_MODE", "replay"))
    nb = nbformat.read(path, as_version=4)
    nbexec.execute(nb, tmp_path, allow_errors=True)
    errors = [(i, o["ename"], o["evalue"][:200]) for i, c in enumerate(nb.cells) if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    checks = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "check.check_" in c.source]
    assert checks, "a copy without checks"
    wrong = [e for e in errors if e[1] != "CheckFailed"]
    assert not wrong, f"{path.name}: cells that fail with something else than a hint: {wrong}"
    hinted = {i for i, name, _ in errors}
    assert set(checks) <= hinted | {i for i in checks if "✓" in json.dumps(nb.cells[i].get("outputs", []),
                                                                         ensure_ascii=False)}
