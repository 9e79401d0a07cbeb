"""A Predict prompt is never answered on screen before it is asked (issue 32): in the committed notebooks,
no cell between a Predict and its Explain keeps an output (a `# NBVAL_CHECK_OUTPUT` cell's stored output
is read before anything runs), and no earlier cell of the section names what the Predict asks."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks").glob("*/*.ipynb"))


def _text(cell) -> str:
    return "".join(cell["source"])


# kept outputs right after a Predict that show what the Predict asks about, not its answer
SHOWN_NOT_ANSWERED = {
    ("05-mdtest-metadata.ipynb", "mpirun -np 2 mdtest -n 10 -i 10 -y -d DIR"):
        "the command whose files and fsyncs the Predict asks to count",
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_output_between_a_predict_and_its_measurement(path):
    """The code cells that follow a Predict, up to the next text cell, are its measurement: none keeps an
    output in the committed notebook."""
    cells = json.loads(path.read_text())["cells"]
    open_predict = None
    for i, c in enumerate(cells):
        if c["cell_type"] == "markdown":
            open_predict = i if "**Predict" in _text(c) else None
        elif open_predict is not None and c.get("outputs"):
            shown = "".join("".join(o.get("text", "")) for o in c["outputs"])
            if any(name == path.name and text in shown for name, text in SHOWN_NOT_ANSWERED):
                continue
            pytest.fail(f"{path.name}: cell {i} keeps its output right after the Predict of cell {open_predict}, "
                        f"before anything runs: {_text(c)[:80]!r}")


def test_lesson_01_section_5_does_not_name_auto_da_alloc_before_its_predict():
    cells = json.loads((ROOT / "notebooks" / "01-page-cache.ipynb").read_text())["cells"]
    texts = [_text(c) for c in cells]
    start = next(i for i, t in enumerate(texts) if t.startswith("## 5"))
    predict = next(i for i, t in enumerate(texts) if i > start and "O_TRUNC" in t and "**Predict" in t)
    before = "\n".join(texts[start:predict + 1])
    assert not re.search(r"auto_da_alloc|starts writing back a file that was truncated", before), \
        "section 5 names what close() does before the Predict that asks it"


def _before_predict(notebook: str, heading: str) -> str:
    """The text of a section from its heading to the end of its Predict, and every Explain before it."""
    texts = [_text(c) for c in json.loads((ROOT / "notebooks" / notebook).read_text())["cells"]
             if c["cell_type"] == "markdown"]
    at = next(i for i, t in enumerate(texts) if heading in t)
    return "\n".join(texts[:at + 1])


def test_lesson_08_predicts_2b_and_6b_are_not_answered_by_the_text_before_them():
    before_2b = " ".join(_before_predict("08-parallel-fs.ipynb", "## 2b ·").split())
    assert "moved each rank to data another node wrote" not in before_2b
    assert "every rank shared one page cache" not in before_2b
    before_6b = " ".join(_before_predict("08-parallel-fs.ipynb", "## 6b ·").split())
    assert "relaxes exactly this rule" not in before_6b        # LazyIO's effect, told before 6b asks it


def test_lesson_08_predict_2b_does_not_ask_which_case_the_seeds_841_mib_s_is():
    """Its own paragraph says it ('at 841 MiB/s with -C'), two sentences before the Predict asked
    'which of the two cases is seed 001's 841 MiB/s?' (the walkthrough of issue 32)."""
    texts = [_text(c) for c in json.loads((ROOT / "notebooks" / "08-parallel-fs.ipynb").read_text())["cells"]]
    cell = next(t for t in texts if t.startswith("## 2b ·"))
    before, _, predict = cell.partition("**Predict")
    said = re.findall(r"\d[\d,.]* [MG]i?B/s", before)
    asked = [f for f in re.findall(r"\d[\d,.]* [MG]i?B/s", predict) if f in said]
    assert not asked, f"the Predict asks about {asked}, which the text above it gives"
