"""Lesson 09's sections 6 and 7: staging against streaming for a job that reads part of its input
(the byte accounting on the recording, checked against fsspec's own readahead cache, and live when
SeaweedFS is here), and the table of where data belongs with its sentences."""
from __future__ import annotations

import io
import os

import pytest

from iolab.errors import ParseError
from iolab.lessons.l09_workflows import claims, experiments as ex
from iolab.lessons.l09_workflows import lab as l09lab


def _replayed(fn):
    old = os.environ.get("IOLAB_MODE")
    os.environ["IOLAB_MODE"] = "replay"
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("IOLAB_MODE")
        else:
            os.environ["IOLAB_MODE"] = old


@pytest.fixture(scope="module")
def part():
    return _replayed(lambda: ex.partial(None))


@pytest.fixture(scope="module")
def runs(part):
    from iolab.lessons.l09_workflows import slurm as on_slurm
    return _replayed(lambda: {"before": ex.before(None), "-c 1": ex.workflow(None, cores=1),
                              "-c 3": ex.workflow(None, cores=3), "Slurm (before)": on_slurm.before_on_slurm(None),
                              "partial read": part})


def _fastq(n: int) -> bytes:
    return b"".join(b"@r%d\nACGT\n+\nIIII\n" % i for i in range(n))


def test_first_reads_counts_records_and_what_the_reader_read():
    data = _fastq(1000)                               # 17 or 18 + 15 bytes a record
    got, records = ex.first_reads(io.BytesIO(data), 10, chunk=64)
    assert records == len(_fastq(10))
    assert got == 64 * -(-records // 64)              # whole 64-byte reads up to the 10th record's end
    got, records = ex.first_reads(io.BytesIO(data), 1000, chunk=8192)
    assert records == got == len(data)
    with pytest.raises(ParseError, match="fewer than 1001"):
        ex.first_reads(io.BytesIO(data), 1001)


def _readahead_fetched(size: int, block: int, read: int, chunk: int = ex.READ_CHUNK) -> int:
    """What fsspec's own ReadAheadCache fetches for reads of ``chunk`` bytes up to ``read``."""
    from fsspec.caching import ReadAheadCache

    asked = []

    def fetcher(start: int, end: int) -> bytes:
        asked.append(end - start)
        return b"\0" * (end - start)
    c = ReadAheadCache(block, fetcher, size)
    pos = 0
    while pos < read:
        pos += len(c._fetch(pos, pos + chunk))
    return sum(asked)


def test_the_recorded_bytes_are_the_readahead_cache_s(part):
    st, dflt, small = part.way("stage"), part.way("default block"), part.way("small block")
    size = 4_851_270
    assert part.mode == "replay" and int(st["object"]) == size
    assert int(st["sent"]) == size and int(st["scratch_peak"]) == size and int(st["left"]) == 0
    assert int(dflt["block_size"]) == 50 * 2**20 and int(small["block_size"]) == ex.SMALL_BLOCK
    for w in (dflt, small):
        assert int(w["sent"]) == int(w["client_fetched"])          # the store's counter and fsspec's agree
        assert int(w["sent"]) == _readahead_fetched(size, int(w["block_size"]), int(w["read"]))
        assert int(w["scratch_peak"]) == 0 and int(w["heads"]) == 1
    assert int(dflt["sent"]) == size and int(dflt["gets"]) == 1
    assert int(small["read"]) <= int(small["sent"]) < int(small["read"]) + ex.SMALL_BLOCK
    assert int(small["records"]) <= int(small["read"])


def test_partial_claims_hold_and_fail_on_wrong_numbers(part):
    cs = claims.partial_claims(part, show=False)
    assert all(c.held for c in cs), [c.text for c in cs]
    assert "49,152 more, under the block of 65,536" in cs[2].text
    wrong = ex.recorded("partial-read")
    assert wrong.ways is not None
    wrong.ways.loc[wrong.ways["way"] == "small block", "sent"] = 245_760 + ex.SMALL_BLOCK   # a block too many
    wrong.ways.loc[wrong.ways["way"] == "stage", "sent"] = 4_851_270 // 2                 # a ranged copy
    held = [c.held for c in claims.partial_claims(wrong, show=False)]
    assert held == [False, False, False]


def test_where_table_and_its_sentences(runs):
    t = claims.where_table(runs)
    assert list(t.index) == ["before", "-c 1", "-c 3", "Slurm (before)", "partial read: stage",
                             "partial read: small block"]
    assert t.loc["before", "left on scratch (MB)"] == t.loc["before", "scratch peak (MB)"]
    assert t.loc["partial read: small block", "scratch peak (MB)"] == 0
    cs = claims.where_claims(t, show=False)
    assert len(cs) == 3 and all(c.held for c in cs), [c.text for c in cs]
    bad = t.copy()
    bad.loc["-c 1", "left on scratch (MB)"] = 20.0                   # a workflow that kept its copies
    bad.loc["partial read: small block", "scratch peak (MB)"] = 4.85
    assert [c.held for c in claims.where_claims(bad, show=False)] == [False, True, False]


def test_the_notebook_asks_before_it_shows():
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "notebooks", "09-workflows.md")).read()
    six, seven, summary = text.index("## 6 · Staging"), text.index("## 7 · Where"), text.index("## Summary")
    assert six < seven < summary
    assert text.index("**Predict.**", six) < text.index("ex.partial(lab)", six)
    assert text.index("**Predict.**", seven) < text.index("claims.where_table(", seven)


@pytest.mark.live
@pytest.mark.skipif(bool(l09lab.missing_tools()), reason=f"not installed here: {l09lab.missing_tools()}")
def test_the_streaming_byte_accounting_live(tmp_path):
    from iolab import workspace

    with workspace.Workspace(budget="512MiB") as ws, l09lab.open_lab(ws) as lab:
        p = ex.partial(lab, reads=500)
        assert p.mode == "live"
        size = lab.objects[ex.PART_KEY]
        st, small = p.way("stage"), p.way("small block")
        assert int(st["sent"]) == size and int(st["scratch_peak"]) == size and int(st["left"]) == 0
        assert int(small["sent"]) == int(small["client_fetched"]) == \
            _readahead_fetched(size, ex.SMALL_BLOCK, int(small["read"]))
        assert int(p.way("default block")["sent"]) == size
        assert not any(ws.root.glob("l09-partial-*/*"))
