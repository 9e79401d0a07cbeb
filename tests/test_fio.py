"""iolab.tools.fio: job builder, fio's size rule, parser on recorded and broken outputs, a live run."""
from __future__ import annotations

import json

import pytest

from iolab import ParseError, recordings
from iolab.tools import fio
from conftest import needs


def test_job_text_and_jobfile():
    j = fio.job("rand", rw="randread", bs=4096, size=64 * 2**20, direct=True, stonewall=None)
    assert j.text() == "[rand]\nrw=randread\nbs=4096\nsize=67108864\ndirect=1\nstonewall\n"
    text = fio.jobfile([j, j.with_options(rw="randwrite")], {"ioengine": "psync"})
    assert text.startswith("[global]\nioengine=psync\n\n[rand]\n")
    assert text.count("[rand]") == 2 and "rw=randwrite" in text


@pytest.mark.parametrize("name", ["global", "a b", "", "x]"])
def test_job_rejects_bad_names(name):
    with pytest.raises(ValueError):
        fio.job(name, rw="read")


def test_job_rejects_injection():
    with pytest.raises(ValueError):
        fio.job("a", rw="read\n[evil]")
    with pytest.raises(ValueError):
        fio.jobfile([])


def test_seed_job_is_verbatim():
    j = fio.seed000_job("/mnt/x")
    assert j.text() == ("[readfiles]\nnrfiles=100\nfilesize=2MiB\nbs=4k\nrw=readwrite\ndirectory=/mnt/x\n")


@pytest.mark.parametrize("value,kb_base,expected", [
    ("2MiB", 1024, 2_000_000), ("4k", 1024, 4096), ("4KB", 1024, 4096), ("1g", 1024, 2**30),
    ("2MiB", 1000, 2 * 2**20), ("4k", 1000, 4000), (4096, 1024, 4096), ("512", 1024, 512),
])
def test_size_in_bytes_follows_fio(value, kb_base, expected):
    assert fio.size_in_bytes(value, kb_base) == expected


def test_seed_filesize_is_decimal_in_the_recording():
    """The recorded run of the seed job wrote and read 100 files of 2,000,000 bytes, not 2 MiB."""
    recs = fio.parse(recordings.load("fio/seed000-readwrite-local").text)
    total = sum(r["io_bytes"] for r in recs)
    assert abs(total - 100 * fio.size_in_bytes("2MiB")) < 100 * 4096  # within one block per file
    assert abs(total - 100 * 2 * 2**20) > 4 * 2**20


def test_argv_json_only():
    assert fio.argv("/x/j.fio") == ["fio", "--output-format=json", "/x/j.fio"]
    assert fio.argv("j.fio", output_format="json+")[1] == "--output-format=json+"
    with pytest.raises(ValueError):
        fio.argv("j.fio", output_format="normal")


def test_parse_skips_notes_before_json():
    text = recordings.load("fio/seed000-readwrite-local").text
    noisy = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + text
    assert fio.parse(noisy) == fio.parse(text)


@pytest.mark.parametrize("bad", ["", "fio: no jobs\n", "{\"fio version\": \"fio-3.33\"}\n"])
def test_parse_rejects_non_fio(bad):
    with pytest.raises(ParseError):
        fio.parse(bad)


def test_parse_rejects_truncated_json():
    text = recordings.load("fio/seed000-readwrite-local").text
    with pytest.raises(ParseError, match="broken"):
        fio.parse(text[: len(text) // 2])


def test_parse_rejects_missing_numbers():
    doc = json.loads(recordings.load("fio/seed000-readwrite-local").text)
    del doc["jobs"][0]["read"]["bw_bytes"]
    with pytest.raises(ParseError, match="bw_bytes"):
        fio.parse(json.dumps(doc))


def test_histogram_needs_json_plus():
    rows = fio.clat_histogram(recordings.load("fio/write-then-randread-jsonplus").text)
    assert {r["jobname"] for r in rows} == {"seqwrite", "randread"}
    assert sum(r["count"] for r in rows if r["jobname"] == "randread") == 8192
    with pytest.raises(ParseError, match="json\\+"):
        fio.clat_histogram(recordings.load("fio/seed000-readwrite-local").text)


def test_to_frame_units():
    df = fio.to_frame(fio.parse(recordings.load("fio/seed000-readwrite-local").text))
    row = df.iloc[0]
    assert row["mb_per_s"] == pytest.approx(row["bw_bytes"] / 1e6)
    assert row["mib_per_s"] == pytest.approx(row["bw_bytes"] / 2**20)


@pytest.mark.live
@needs("fio")
def test_live_run_parses(ws):
    d = ws.mkdir("fio")
    r = fio.run(fio.job("w", rw="write", bs=4096, size=2**20, directory=d), workdir=ws.root, timeout=60)
    (rec,) = fio.parse(r.stdout)
    assert rec["direction"] == "write" and rec["io_bytes"] == 2**20 and rec["total_ios"] == 256
    assert r.tool_version and r.tool_version.startswith("fio-")


def test_json_then_the_normal_report_is_read_and_a_second_document_is_not():
    # issue 32: fio's own --output-format=json,normal was refused as "cut short"
    text = recordings.load("fio/json-normal-write").text
    assert "Run status group 0" in text.split("\n}\n", 1)[1]          # the normal report after the JSON
    rows = fio.parse(text)
    assert len(rows) == 1 and rows[0]["io_bytes"] == 4 * 1024 * 1024 and rows[0]["total_ios"] == 64
    doc = text[text.index("{"):text.index("\n}\n") + 3]
    with pytest.raises(ParseError, match="second JSON document") as e:
        fio.parse(doc + doc)
    assert e.value.line == "{"
