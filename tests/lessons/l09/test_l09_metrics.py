"""SeaweedFS's /metrics parser (iolab.tools.seaweedfs): golden values from two real captures of lesson
09's store (data/recorded/workflows/metrics-*.txt), checked by hand against the raw text, and the
calibration between them (what was done to the store is in the second capture's notes)."""
from __future__ import annotations

import pytest

from iolab import ParseError, recordings
from iolab.tools import seaweedfs


def _rows(name: str) -> list[dict]:
    return seaweedfs.parse(recordings.load(f"workflows/{name}").text)


def test_after_upload_golden():
    rows = _rows("metrics-after-upload")
    assert len(rows) == 433                       # grep -vc '^#': every sample line, none dropped
    c = seaweedfs.counters(rows)
    assert c.received == {"training": 17_320_519}     # written 1.7320519e+07: the 10 objects' bytes
    assert c.sent == {}                                # nothing fetched yet: no sample of that metric
    assert c.count("PUT", bucket="training") == 11     # the bucket and 10 objects
    assert c.count("LIST") == 3 and c.count("LIST", ok=False) == 2   # two refused (403, no bucket)
    assert c.gets_with_body() == 0 and c.heads() == 0


def test_calibration_delta_counts_heads_apart_from_gets():
    before = seaweedfs.counters(_rows("metrics-after-upload"))
    after = seaweedfs.counters(_rows("metrics-calibration"))
    d = after.minus(before)
    assert d.bytes_sent("training") == 12 + 39 + 21          # .amb, .ann, .fai
    assert d.bytes_received("training") == 1000
    assert d.count("GET", bucket="training") == 9            # 3 GETs + 5 HEADs + 1 HEAD of a missing key
    assert d.gets_with_body("training") == 3                 # only the GETs sent a body
    assert d.heads("training") == 6
    assert d.count("GET", bucket="training", ok=False) == 1  # the 404
    assert d.count("PUT") == 1


def test_a_row_keeps_its_labels_and_number():
    rows = _rows("metrics-calibration")
    r = next(r for r in rows if r["metric"] == "SeaweedFS_s3_request_total" and r["code"] == "404")
    assert r == {"metric": "SeaweedFS_s3_request_total", "bucket": "training", "type": "GET", "code": "404",
                 "le": None, "labels": "", "value": 1}


def test_counter_going_down_is_a_restart():
    a = seaweedfs.counters(_rows("metrics-calibration"))
    b = seaweedfs.counters(_rows("metrics-after-upload"))
    with pytest.raises(ParseError, match="restarted"):
        b.minus(a)


@pytest.mark.parametrize("text, line_no", [
    ('SeaweedFS_s3_request_total{bucket="a",type="GET"} 3\nSeaweedFS_s3_request_total{bucket="a"', 2),  # cut
    ('SeaweedFS_s3_request_total{bucket="a",type="GET"} three\n', 1),
    ('SeaweedFS_s3_request_total{bucket="a" type="GET"} 3\n', 1),
    ('SeaweedFS_s3_request_total{bucket="a"} 3\nSeaweedFS_s3_request_total{bucket="a"} 4\n', 2),
    ('# HELP x\nthis is not a metric\n', 2),
    ('SeaweedFS_s3_request_total{bucket="a",bucket="b"} 3\n', 1),
])
def test_bad_lines_are_named(text, line_no):
    with pytest.raises(ParseError) as e:
        seaweedfs.parse(text)
    assert e.value.line_no == line_no


def test_not_seaweedfs_and_not_a_count():
    with pytest.raises(ParseError, match="not SeaweedFS"):
        seaweedfs.parse('toxiproxy_proxy_sent_bytes_total{proxy="store"} 5\n')
    with pytest.raises(ParseError, match="not SeaweedFS"):
        seaweedfs.parse("")
    with pytest.raises(ParseError, match="whole count"):
        seaweedfs.counters(seaweedfs.parse('SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket="a"} 1.5\n'))
    rows = seaweedfs.parse('SeaweedFS_s3_bucket_traffic_sent_bytes_total{bucket="a\\"b"} 7 1700000000\n')
    assert rows[0]["bucket"] == 'a"b' and rows[0]["value"] == 7
