"""iolab.tools.ceph: each parser reads the real outputs (the golden tests) and refuses a cut, a foreign
or a damaged one with ParseError naming the line."""
from __future__ import annotations

import json

import pytest

from iolab import ParseError, recordings
from iolab.tools import ceph


def text(name: str) -> str:
    return recordings.load(f"ceph/{name}").text


LAYOUT = '# file: m/f\nceph.file.layout="stripe_unit=1048576 stripe_count=4 object_size=4194304 pool=cephfs_data"\n\n'


def test_layout_reads_sizes_and_pool():
    assert ceph.parse_layout(LAYOUT) == {"path": "m/f", "stripe_unit": 1 << 20, "stripe_count": 4,
                                         "object_size": 4 << 20, "pool": "cephfs_data"}


@pytest.mark.parametrize("bad", [
    LAYOUT[:-2],                                                  # cut: the last line has no newline
    LAYOUT.replace("stripe_count=4 ", ""),                        # a field missing
    LAYOUT.replace("=4 ", "=four "),                              # not a number
    LAYOUT.replace("=4 ", "=0 "),                                 # not positive
    LAYOUT.replace("object_size=4194304", "object_size=1500000"),  # stripe unit does not divide
    LAYOUT.replace("pool=", "color=blue pool="),                  # a field it does not know
    "# file: m/f\nm/f: ceph.file.layout: No such attribute\n",     # getfattr's error
    "",
])
def test_layout_refuses(bad):
    with pytest.raises(ParseError):
        ceph.parse_layout(bad)


def test_rados_ls_refuses_a_foreign_name_and_names_its_line():
    good = text("rados-ls")
    with pytest.raises(ParseError) as e:
        ceph.parse_rados_ls(good + "mds0_openfiles.0\n")
    assert e.value.line_no == good.count("\n") + 1
    with pytest.raises(ParseError):
        ceph.parse_rados_ls(good[:-1])


def test_osdmaptool_and_osd_map_agree_on_the_recorded_object():
    a = ceph.parse_osdmap_object(text("osdmaptool-map-object"))
    b = ceph.parse_osd_map(text("osd-map"))
    assert a == b


@pytest.mark.parametrize("bad", [" object 'x' -> 2.9 -> []\n", " object 'x' -> 2.9 -> [1,a]\n",
                                 " object 'x' -> 2.9 -> [1]\n object 'y' -> 2.9 -> [1]\n", "osdmaptool: osdmap file 'm'\n"])
def test_osdmaptool_refuses(bad):
    with pytest.raises(ParseError):
        ceph.parse_osdmap_object(bad)


@pytest.mark.parametrize("poke", [lambda d: d.pop("acting"), lambda d: d.update(acting=["1"]),
                                  lambda d: d.update(acting_primary=-1), lambda d: d.update(pgid=7)])
def test_osd_map_refuses_values_of_the_wrong_type(poke):
    d = json.loads(text("osd-map"))
    poke(d)
    with pytest.raises(ParseError):
        ceph.parse_osd_map(json.dumps(d))


def test_perf_dump_flattens_counters_and_averages():
    p = ceph.parse_perf(text("perf-dump-osd"))
    assert p["osd.op_w_in_bytes"] == json.loads(text("perf-dump-osd"))["osd"]["op_w_in_bytes"]
    assert "osd.op_w_latency.avgcount" in p and "osd.op_w_latency.sum" in p


@pytest.mark.parametrize("bad", ['{"osd": {"op_w": "12"}}', '{"osd": [1]}', "[]", "{}", '{"osd": {"op_w": true}}',
                                 '{"osd": {"op_w": {"avgcount": 1, "sum": "x"}}}'])
def test_perf_dump_refuses(bad):
    with pytest.raises(ParseError):
        ceph.parse_perf(bad)


def test_perf_dump_cut_anywhere_is_refused():
    t = text("perf-dump-mds")
    for cut in range(1, len(t) - 1, max(1, len(t) // 50)):
        with pytest.raises(ParseError):
            ceph.parse_perf(t[:cut])


def test_sessions_and_their_damage():
    s = ceph.parse_sessions(text("session-ls"))
    assert len(s) >= 2 and all(x["state"] == "open" for x in s)
    d = json.loads(text("session-ls"))
    d[0]["num_caps"] = "30"
    with pytest.raises(ParseError):
        ceph.parse_sessions(json.dumps(d))
