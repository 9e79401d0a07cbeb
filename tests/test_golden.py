"""Golden tests: every real recorded output with an expected parse in tests/golden/<tool>/<name>.json.

A golden file is {"parser": "iolab.tools.strace:parse_summary", "recording": "strace/<name>",
"expected": <what the parser must return>}; values were checked by hand against the raw text.
"""
from __future__ import annotations

import importlib
import json
import math
from pathlib import Path

import pytest

from iolab import recordings

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.glob("*/*.json"))


def _same(got, want, where="") -> None:
    if isinstance(want, float) or isinstance(got, float):
        assert isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), \
            f"{where}: {got!r} != {want!r}"
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: keys {sorted(got)} != {sorted(want)}"
        for k in want:
            _same(got[k], want[k], f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {len(got)} rows != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            _same(g, w, f"{where}[{i}]")
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.stem}" for c in CASES])
def test_golden(case: Path) -> None:
    spec = json.loads(case.read_text())
    module, _, func = spec["parser"].partition(":")
    parser = getattr(importlib.import_module(module), func)
    rec = recordings.load(spec["recording"])
    got = parser(rec.text)
    got = json.loads(json.dumps(list(got) if not isinstance(got, (dict, list)) else got, default=str))
    _same(got, spec["expected"], spec["recording"])


def test_every_recording_has_meta_and_a_golden_or_is_used() -> None:
    for ref in recordings.available():
        rec = recordings.load(ref)
        for key in ("argv", "tool", "date", "host"):
            assert key in rec.meta, f"{ref}.meta.json lacks {key}"
