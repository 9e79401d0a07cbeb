"""iolab.tools.dd: argv, the locale-independent parser, and live runs in C and German."""
from __future__ import annotations

import subprocess

import pytest

from iolab import ParseError, recordings
from iolab.tools import dd
from conftest import needs


def test_argv():
    assert dd.argv("/dev/zero", "/x/f", bs="4k", count=10, oflag=["direct"]) == \
        ["dd", "if=/dev/zero", "of=/x/f", "bs=4096", "count=10", "oflag=direct"]
    assert dd.argv("a", "b", bs=512, iflag=["direct", "fullblock"], skip=2)[-2:] == ["skip=2", "iflag=direct,fullblock"]
    with pytest.raises(ValueError):
        dd.argv("a", "b", bs=512, oflag=["direkt"])


def test_c_and_german_recordings_agree_on_shape():
    c = dd.parse(recordings.load("dd/write-1m-dsync-c").text)
    de = dd.parse(recordings.load("dd/write-1m-dsync-de").text)
    assert c["bytes"] == de["bytes"] == 64 * 2**20
    assert c["records_out"] == de["records_out"] == 64
    assert de["seconds"] < 10 and de["reported_bytes_per_s"] > 1e6   # a decimal comma read as one number


def test_seed_002_lines():
    """The two dd outputs printed in seed 002 (1 GiB written with oflag=dsync, then read back)."""
    w = dd.parse("1024+0 records in\n1024+0 records out\n"
                 "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 29.3295 s, 36.6 MB/s\n")
    assert w["bytes"] == 2**30 and w["seconds"] == 29.3295 and w["reported_bytes_per_s"] == 36.6e6
    assert w["bytes_per_s"] == pytest.approx(36.6e6, rel=0.002)
    r = dd.parse("2097152+0 records in\n2097152+0 records out\n"
                 "1073741824 bytes (1.1 GB, 1.0 GiB) copied, 12.336 s, 87.0 MB/s\n")
    assert r["records_in"] == 2097152 and r["bytes_per_s"] == pytest.approx(87.0e6, rel=0.001)


def test_progress_lines_are_skipped():
    text = ("52428800 bytes (52 MB, 50 MiB) copied, 1 s, 52.4 MB/s\r"
            "104857600 bytes (105 MB, 100 MiB) copied, 2 s, 52.4 MB/s\r\n"
            "120+0 records in\n120+0 records out\n"
            "125829120 bytes (126 MB, 120 MiB) copied, 2.4 s, 52.4 MB/s\n")
    assert dd.parse(text)["bytes"] == 125829120


def test_small_numbers_and_other_units():
    rec = dd.parse("1+0 records in\n1+0 records out\n1 byte copied, 5,2e-05 s, 19,2 kB/s\n")
    assert rec["bytes"] == 1 and rec["seconds"] == pytest.approx(5.2e-5) and rec["reported_bytes_per_s"] == 19200
    rec = dd.parse("0+0 records in\n0+0 records out\n0 bytes copied, 0 s, Infinity B/s\n")
    assert rec["bytes_per_s"] is None and rec["reported_bytes_per_s"] is None     # no time: no rate (was inf)


@pytest.mark.parametrize("bad,match", [
    ("", "records in"),
    ("1+0 records in\n", "records in"),
    ("1+0 records in\n1+0 records out\n", "summary"),
    ("1+0 records in\n1+0 records out\n512 bytes copied, soon, 1 kB/s\n", "seconds"),
    ("1+0 records in\n1+0 records out\n512 bytes copied, 1 s, 1 XB/s\n", "rate"),
])
def test_malformed(bad, match):
    with pytest.raises(ParseError, match=match):
        dd.parse(bad)


def _have_locale(name: str) -> bool:
    out = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.lower()
    return name.lower().replace("utf-8", "utf8") in out


@pytest.mark.live
@needs("dd")
@pytest.mark.parametrize("locale", ["C", "de_DE.UTF-8"])
def test_live_both_locales(ws, locale):
    if locale != "C" and not _have_locale(locale):
        pytest.skip(f"locale {locale} not generated here (localedef -i de_DE -f UTF-8 de_DE.UTF-8)")
    f = ws.path("z.bin")
    r = dd.run("/dev/zero", f, bs="64k", count=16, oflag=["dsync"], locale=locale)
    rec = dd.parse(r.stderr)
    assert rec["bytes"] == 16 * 65536 == f.stat().st_size and rec["records_out"] == 16
    if locale != "C":
        assert "Datensätze" in r.stderr


def test_parse_all_concatenated_runs():
    text = "".join(recordings.load(f"dd/{n}").text for n in ("read-4k-direct-c", "write-1m-dsync-de",
                                                            "error-no-space-c"))
    recs = dd.parse_all(text)
    assert [r["bytes"] for r in recs] == [4096000, 67108864, 0]
    assert recs[2]["error"].startswith("error writing")
    with pytest.raises(ParseError):
        dd.parse_all(text + "5+0 records in\n")
