"""Issue 32: exercise 08's checks with the wrong answers a student plausibly writes: each fails with a hint
that names the slip (the primaries without their replicas, the replicas alone, the size-1 pool)."""
from __future__ import annotations

import pytest

from iolab import check
from iolab.lessons.l08_parallel_fs import check as check_08
from iolab.lessons.l08_parallel_fs import sections as P


@pytest.fixture(autouse=True)
def replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")


def test_08_3_replication_right_and_every_plausible_wrong_answer():
    repl = P.replication(None, show=False)
    df = repl.frame
    three = df[df["pool_size"] == 3]
    right = float(three["osd_bytes_per_file_byte"].median())
    assert check_08.check_08_replication(right, repl)
    primaries = float((three["osd_primary_bytes"] / three["file_bytes"]).median())
    replicas = float((three["osd_replica_bytes"] / three["file_bytes"]).median())
    one = float(df[df["pool_size"] == 1]["osd_bytes_per_file_byte"].median())
    for wrong, words in ((primaries, "primaries only"), (replicas, "replicas only"), (one, "size-1 pool"),
                         (right * 100, "percentage")):
        with pytest.raises(check.CheckFailed, match=words):
            check_08.check_08_replication(wrong, repl)
