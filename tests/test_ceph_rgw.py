"""Lesson 08's object store: a RADOS Gateway on the lesson's cluster (iolab.ceph.rgw) and its section
(parallel_fs_rgw), replayed from data/recorded/ceph/rgw.json and live (as root and as a real second user).

The recording's counts checked here were read off its raw outputs by hand: one head object and three
tails of 4 MiB for the 16 MiB PUT (radosgw-admin's manifest: head_size 4194304, stripe_max_size
4194304), 11 index shards (bucket stats' num_shards 11), the key in one of them."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from conftest import all_consistent, needs, wait_until
from unix_users import made, needs_users

from iolab import ParseError, recordings, workspace
from iolab.ceph import TOOLS, Cluster, ports, rgw
from iolab.lessons.l08_parallel_fs import rgw as parallel_fs_rgw
from iolab.tools import ceph as cephtools

ROOT = Path(__file__).resolve().parents[1]


def _doc() -> str:
    return recordings.load("ceph/rgw").text


# --- replayed -------------------------------------------------------------------------------------

def test_the_recorded_put_is_one_head_three_tails_and_one_index_shard_holds_its_key():
    d = parallel_fs_rgw.parse_rgw(_doc())
    df = d["objects"]
    assert d["object_size"] == 16 << 20
    assert (d["manifest"]["head_size"], d["manifest"]["stripe_max_size"]) == (4 << 20, 4 << 20)
    assert len(df[df["kind"] == "head"]) == 1 and len(df[df["kind"] == "tail"]) == 3
    assert set(df[df["kind"] != "index shard"]["bytes"]) == {4 << 20}
    shards = df[df["kind"] == "index shard"]
    assert len(shards) == d["bucket"]["num_shards"] == 11
    assert shards["holds_key"].sum() == 1 and shards["bytes"].sum() == 0
    marker = d["bucket"]["marker"]
    assert all(o.startswith(marker + "_") for o in df[df["kind"] != "index shard"]["object"])
    assert all(o.startswith(f".dir.{marker}.") for o in shards["object"])
    assert all(re.fullmatch(r"osd\.[0-2]", o) for o in df["osd"])
    reads = d["reads"]
    assert list(reads["via"]) == ["fsspec s3fs", "s3fs-fuse"] and reads["identical"].all()
    assert (reads["osd_sent_bytes"] >= 16 << 20).all() and d["put_osd_bytes"] >= 16 << 20
    g = d["gateway"]
    assert g["timings"]["HTTP answers"] > 0 and g["rss_bytes"] > 0 and len(g["load"]) == 3


def test_the_section_replays_with_its_claims_held_and_says_why(monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    out = parallel_fs_rgw.rgw_objects(None)
    assert out.mode == "replay"
    assert all(c.held for c in out.claims), [c.text for c in out.claims]
    all_consistent(out.claims)
    table = parallel_fs_rgw.rgw_table(out.data)
    assert list(table["kind"]).count("index shard") == 1 and list(table["kind"]).count("tail") == 3
    assert "(omap only)" in set(table["size"])


def test_without_live_the_section_replays_even_with_a_cluster(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "auto")

    class NoCluster:                    # never touched: live is not asked for
        failure = None
    out = parallel_fs_rgw.rgw_objects(NoCluster())        # type: ignore[arg-type]
    assert out.mode == "replay" and "RGW_LIVE" in out.provenance


def test_the_section_replays_unless_asked_and_iolab_mode_live_asks(monkeypatch):
    section = parallel_fs_rgw
    monkeypatch.setenv("IOLAB_MODE", "auto")
    assert section._unless_asked(False) == section.OPT_IN and section._unless_asked(True) is None
    monkeypatch.setenv("IOLAB_MODE", "live")                 # never replay: the gateway runs here
    assert section._unless_asked(False) is None
    monkeypatch.setenv("IOLAB_MODE", "replay")
    assert section._unless_asked(False) == "IOLAB_MODE=replay"      # the door replays it all the same


def test_claims_fail_when_the_numbers_deny_them():
    d = parallel_fs_rgw.parse_rgw(_doc())
    tails = d["objects"][d["objects"]["kind"] == "tail"]
    fewer = {**d, "objects": d["objects"].drop(index=tails.index[:1])}
    assert parallel_fs_rgw.rgw_claims(fewer, show=False)[0].held is False
    two = d["objects"].copy()
    two.loc[two["kind"] == "index shard", "holds_key"] = True
    assert parallel_fs_rgw.rgw_claims({**d, "objects": two}, show=False)[1].held is False
    bad = d["reads"].copy()
    bad.loc[0, "identical"] = False
    assert parallel_fs_rgw.rgw_claims({**d, "reads": bad}, show=False)[3].held is False


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.9])
def test_a_cut_or_hostile_document_is_a_parse_error(cut):
    text = _doc()
    with pytest.raises(ParseError):
        parallel_fs_rgw.parse_rgw(text[:int(len(text) * cut)])
    doc = json.loads(text)
    for broken in ({**doc, "placement": []}, {**doc, "reads": [{}]}, {**doc, "object_size": "16"},
                   {**doc, "placement": {**doc["placement"], "bucket_stats": "{}"}}):
        with pytest.raises(ParseError):
            parallel_fs_rgw.parse_rgw(json.dumps(broken))


def test_the_parsers_of_the_gateways_outputs():
    p = json.loads(_doc())["placement"]
    one = next(iter(p["stat"].values()))
    assert cephtools.parse_rados_stat(one)["size"] == 4 << 20
    with pytest.raises(ParseError):
        cephtools.parse_rados_stat(one.rstrip("\n"))
    with pytest.raises(ParseError):
        cephtools.parse_rados_stat(one.replace("size 4194304", "size -1"))
    assert cephtools.parse_omap_keys("data-16MiB.bin\n") == ["data-16MiB.bin"]
    for bad in ("a\x01b\n", "\n", "x" * 1025 + "\n", "cut"):
        with pytest.raises(ParseError):
            cephtools.parse_omap_keys(bad)
    with pytest.raises(ParseError):
        cephtools.parse_rados_names("two names\n")
    stat = json.loads(p["object_stat"])
    stat["manifest"]["head_size"] = stat["size"] + 1
    with pytest.raises(ParseError):
        cephtools.parse_object_stat(json.dumps(stat))
    with pytest.raises(ParseError):
        cephtools.parse_bucket_stats('{"bucket": "b", "id": "i", "marker": "m", "num_shards": true}')


# --- live -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with workspace.Workspace(budget="2GiB", base=tmp_path_factory.mktemp("rgw")) as ws:
        with Cluster(ws) as c:
            c.mount("a")
            with rgw.Gateway(c) as gw:
                yield gw


@pytest.mark.live
@pytest.mark.slow
@needs(*TOOLS, "radosgw", "radosgw-admin")
def test_the_gateway_serves_s3_with_its_own_keys_on_a_port_in_no_argv(gateway):
    ep = gateway.endpoint
    fs = ep.filesystem()
    fs.mkdir("test-one")
    before = gateway.counters()
    fs.pipe("test-one/x", b"hello")
    assert fs.cat("test-one/x") == b"hello"
    after = gateway.counters()
    assert after["rgw.put_b"] - before["rgw.put_b"] == 5 and after["rgw.put"] - before["rgw.put"] >= 1
    assert after["rgw.get"] - before["rgw.get"] >= 1 and after["rgw.get_b"] > before["rgw.get_b"]
    svc = gateway.service
    assert ports.listening_of(svc.pid) == {gateway.port} and ep.port == gateway.port
    argv = Path(f"/proc/{svc.pid}/cmdline").read_bytes().decode()
    assert str(gateway.port) not in argv and ep.secret_key not in argv and ep.access_key not in argv
    assert gateway.port not in ports.CEPH_DEFAULT
    conf = gateway.cluster.conf
    assert oct(conf.stat().st_mode & 0o777) == "0o600" and f"127.0.0.1:{gateway.port}" in conf.read_text()
    keyring = gateway.cluster.dir / "keyring.client.rgw.a"
    assert oct(keyring.stat().st_mode & 0o777) == "0o600"
    # no key: anyone on the node reaches the port, but not the buckets (anonymous has none) nor the data
    with urllib.request.urlopen(ep.url + "/", timeout=30) as r:
        assert b"test-one" not in r.read()
    for path in ("/test-one", "/test-one/x"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(ep.url + path, timeout=30)
        assert e.value.code == 403, (path, e.value.code)
    wrong = type(ep)("s3", ep.url, ep.access_key, "not-the-secret")
    with pytest.raises((PermissionError, OSError)):
        wrong.filesystem().cat("test-one/x")


@pytest.mark.live
@pytest.mark.slow
@needs(*TOOLS, "radosgw", "radosgw-admin")
def test_the_live_section_on_the_gateway_holds_its_claims(gateway, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "live")
    gateway.stop()                               # the section starts a gateway of its own
    out = parallel_fs_rgw.rgw_objects(gateway.cluster, live=True, show=False)
    assert out.mode == "live"
    held = [c.held for c in out.claims]
    assert held[:3] == [True, True, True] and all(held[3:]), [c.text for c in out.claims]
    assert "rgw.a" not in gateway.cluster.services
    gateway.start()


@pytest.mark.live
@pytest.mark.slow
@needs(*TOOLS, "radosgw", "radosgw-admin")
def test_a_killed_gateway_is_named_and_the_file_system_mounts_stay(gateway):
    c = gateway.cluster
    os.kill(gateway.service.pid, signal.SIGKILL)
    assert wait_until(lambda: any("rgw.a" in d for d in c.deaths), 60)
    assert "S3 endpoint" in c.deaths[-1] and "SIGKILL" in c.deaths[-1]
    assert c.failure is None and "a" in c.mounts     # a dead gateway leaves CephFS alone
    c.check_mounted("a")


STUDENT = textwrap.dedent(r"""
    import json, os, time
    from iolab import workspace
    from iolab.ceph import rgw
    ws = workspace.session()
    t = time.monotonic()
    with rgw.store(ws) as ep:
        fs = ep.filesystem()
        fs.mkdir("mine")
        fs.pipe("mine/x", b"student")
        print(json.dumps({"ok": fs.cat("mine/x") == b"student", "url": ep.url, "seconds": time.monotonic() - t}),
              flush=True)
""")


@pytest.mark.live
@pytest.mark.slow
@needs_users
@needs(*TOOLS, "radosgw", "radosgw-admin")
def test_an_unprivileged_student_runs_the_gateway_and_leaves_nothing():
    import shutil
    py = shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin:/bin") or sys.executable
    path = os.pathsep.join([*(p for p in sys.path if p.endswith("site-packages")), str(ROOT)])
    with made(1) as (student,):
        base = Path(tempfile.mkdtemp(prefix="iolab-rgw-student-", dir="/tmp"))
        try:
            os.chown(base, student.pw_uid, student.pw_gid)
            env = ["env", f"HOME={base}", f"IOLAB_WORKDIR={base}", f"PATH={os.environ['PATH']}", f"PYTHONPATH={path}"]
            r = subprocess.run(["runuser", "-u", student.pw_name, "--", *env, py, "-c", STUDENT], cwd=base,
                               capture_output=True, text=True, timeout=400)
            assert r.returncode == 0, r.stderr[-3000:]
            info = json.loads(r.stdout.strip().splitlines()[-1])
            assert info["ok"] is True
            print(f"as {student.pw_name}: a cluster and its gateway answered S3 {info['seconds']:.1f} s after start")
            def left() -> list[str]:            # the session's guard ends a moment after its kernel
                return subprocess.run(["pgrep", "-u", student.pw_name], capture_output=True, text=True).stdout.split()
            assert wait_until(lambda: left() == [], 60), [Path(f"/proc/{p}/cmdline").read_bytes() for p in left()]
            assert [p for p in base.rglob("*") if "ceph-" in p.name] == []
        finally:
            for pid in subprocess.run(["pgrep", "-u", student.pw_name], capture_output=True, text=True).stdout.split():
                try:                                  # only this test's throwaway user's processes, by id
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            shutil.rmtree(base, ignore_errors=True)
