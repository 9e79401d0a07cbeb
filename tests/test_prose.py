"""Sentences issue 22 found teaching a mechanism wrongly, or answering a Predict prompt on screen, each
checked against the notebooks' text (and the lesson modules' strings) so that it cannot come back."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def text(nb: str, kind: str = "markdown") -> str:
    cells = json.loads((ROOT / "notebooks" / nb).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == kind)


def cells(nb: str) -> list[tuple[str, str]]:
    return [(c["cell_type"], "".join(c["source"])) for c in json.loads((ROOT / "notebooks" / nb).read_text())["cells"]]


@pytest.mark.parametrize("nb", ["01-page-cache.ipynb", "04-ior-pitfalls.ipynb"])
def test_seed_003_read_above_the_link_is_not_a_server_cache(nb):
    md = " ".join(text(nb).split())
    assert "so a cache on the servers served it" not in md
    assert "a data set cached in the servers" not in md
    assert "No cache" in md and "link carries" in md and "did not all cross" in md


def test_a_stat_is_not_answered_locally_whatever_the_filesystem():
    md = " ".join(text("05-mdtest-metadata.ipynb").split())
    assert "whatever filesystem is below" not in md
    assert "-N 1" in md and "glimpse" in md and "capabilities" in md
    src = (ROOT / "iolab" / "lessons" / "l05_mdtest" / "claims.py").read_text()
    assert "revalidates attributes" in src and "glimpses" in src


def test_a_rule_of_thumb_is_not_an_impossibility():
    assert "no device read can be that fast" not in (ROOT / "iolab" / "measure.py").read_text()
    assert "no device read can be that fast" not in (ROOT / "notebooks" / "01-page-cache.ipynb").read_text()


def test_seed_002s_verdict_comes_after_its_predict_prompt():
    seq = cells("01-page-cache.ipynb")
    verdict = next(i for i, (k, s) in enumerate(seq) if k == "code" and "seed002_dd_read_verdict()" in s)
    assert seq[verdict - 1][0] == "markdown" and "**Predict.**" in seq[verdict - 1][1]
    assert "seed002_dd_read_verdict" not in seq[verdict - 2][1]      # the table alone comes before the prompt


def test_darshans_cost_is_not_a_percentage_that_shows():
    md = " ".join(text("07-darshan-mpiio.ipynb").split())
    assert "even that per-call cost shows (the percentage above)" not in md
    assert "compares the **fastest**" not in md and "run-to-run noise" in md


def test_ior_iterations_all_allocate_anew():
    src = (ROOT / "iolab" / "lessons" / "l04_ior" / "pitfalls.py").read_text()
    assert "the only one that had to allocate" not in src and "unless -E" in src


def test_lesson_00_does_not_answer_its_filesystem_prompt_first():
    seq = cells("00-start-here.ipynb")
    prompt = next(i for i, (k, s) in enumerate(seq) if "which filesystem type serves `/dev/shm`" in s)
    before = [s for k, s in seq[:prompt] if k == "code"]
    assert any('doctor.summary(skip=("filesystems",))' in s for s in before)
    assert not any(s.strip() == "doctor.summary()" for s in before)


def test_objectives_name_the_question_not_its_answer():
    md4 = " ".join(text("04-ior-pitfalls.ipynb").split())
    assert "why even a real neighbour's file is read from memory" not in md4
    md5 = " ".join(text("05-mdtest-metadata.ipynb").split())
    assert "in the seed's command, nothing at all" not in md5
    assert "(the inode and dentry caches, the device" not in md5


def test_lesson_04_data_set_size_answer_is_not_stored_under_its_prompt():
    seq = cells("04-ior-pitfalls.ipynb")
    prompt = next(i for i, (k, s) in enumerate(seq) if "how big is our data set" in s)
    assert "**Explain.**" not in seq[prompt][1]
    assert "NBVAL_CHECK_OUTPUT" not in seq[prompt + 1][1] and seq[prompt + 2][1].startswith("**Explain.**")


def test_the_seeds_missing_840_s_is_an_inference():
    md = " ".join(text("03-strace-syscalls.ipynb").split())
    assert "The missing ~840 s is waiting," not in md
    assert "inference" in md and "strace -c -w" in md


def test_lesson_06_does_not_blame_short_memory_unmeasured():
    src = (ROOT / "iolab" / "lessons" / "l06_object_storage" / "stores.py").read_text()
    assert "and when memory is \"\n                \"short, the disk cache's pages are evicted" not in src
    assert "only \"\n                \"while memory is spare" in src or "while memory is spare" in src.replace('"\n                "', "")
