"""One rule for a test that needs a tool (tests/conftest.py: needs): where the tool is missing, the test
skips and says which; where it is here, a test that uses PyDarshan without saying so fails."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import missing, needs

from iolab import recordings
from iolab.tools import darshan

ROOT = Path(__file__).resolve().parents[1]

# PyDarshan cannot be uninstalled from a shared environment for a test: a plugin loaded before the tests
# (pytest -p) makes it missing for one run, as an uninstalled package is (import fails, find_spec is None)
HIDE_PYDARSHAN = 'import sys\nsys.modules["darshan"] = None\n'


def test_missing_names_what_is_not_here(monkeypatch):
    assert missing("sh", "iolab-no-such-tool") == ["iolab-no-such-tool"]
    monkeypatch.setitem(sys.modules, "darshan", None)
    assert missing("PyDarshan", "sh") == ["PyDarshan"]


@pytest.mark.slow
def test_without_pydarshan_its_tests_skip_naming_it(tmp_path):
    (tmp_path / "hide_pydarshan.py").write_text(HIDE_PYDARSHAN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "hide_pydarshan", "-v", "-rs",
                        "tests/test_darshan_golden.py",                          # needs() on the module
                        "tests/test_darshan.py::test_a_recorded_log_reads_into_frames",   # on a test
                        "tests/test_darshan.py::test_buckets_are_darshans"],     # no PyDarshan needed: runs
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    outcomes = dict(m.groups() for m in (re.match(r"(tests/\S+::.+?) (PASSED|FAILED|SKIPPED|ERROR)\b", line)
                                         for line in r.stdout.splitlines()) if m)
    golden = [t for t in outcomes if t.startswith("tests/test_darshan_golden.py::")]
    buckets = [t for t in outcomes if "::test_buckets_are_darshans" in t]
    assert len(golden) > 10 and buckets, outcomes
    assert all(outcomes[t] == "SKIPPED" for t in golden), outcomes
    assert outcomes["tests/test_darshan.py::test_a_recorded_log_reads_into_frames"] == "SKIPPED", outcomes
    assert all(outcomes[t] == "PASSED" for t in buckets), outcomes
    assert "not installed here: PyDarshan" in r.stdout


def test_a_test_that_reads_a_log_without_needs_fails():
    # this test does not say needs("PyDarshan"): where PyDarshan is missing it would fail, not skip
    with pytest.raises(pytest.fail.Exception, match=r'needs\("PyDarshan"\)'):
        darshan.read_log(recordings.load("darshan/both-read-4k-ext4").path)


@needs("PyDarshan")
def test_a_test_that_says_so_reads_it():
    assert darshan.read_log(recordings.load("darshan/both-read-4k-ext4").path).records
