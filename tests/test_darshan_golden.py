"""Golden tests of the Darshan-derived frames: every recorded log against tests/golden/darshan/frames/.

Each golden file is {"recording": "darshan/<name>", "checked": how the values were checked,
"expected": iolab.tools.darshan.golden_view(<the log>)}. The counters were cross-checked against
darshan-parser and darshan-dxt-parser 3.5.0 (the C utilities of the runtime's release). The logs are
binary, so these live in a folder of their own (tests/test_golden.py reads recordings as text).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import needs

from iolab import recordings
from iolab.tools import darshan

pytestmark = needs("PyDarshan")
from test_golden import _same

FRAMES = Path(__file__).parent / "golden" / "darshan" / "frames"
CASES = sorted(FRAMES.glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_golden_frames(case: Path) -> None:
    spec = json.loads(case.read_text())
    rec = recordings.load(spec["recording"])
    got = json.loads(json.dumps(darshan.golden_view(rec.path), default=str))
    _same(got, spec["expected"], spec["recording"])


def test_every_log_has_a_golden_file() -> None:
    logs = {Path(r).name for r in recordings.available("darshan")
            if recordings.load(r).path.suffix == ".darshan" and not Path(r).name.startswith("refused")}
    assert logs == {c.stem for c in CASES}
