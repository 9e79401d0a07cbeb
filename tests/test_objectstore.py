"""iolab.objectstore without servers: endpoints, credential files, ports, layers, exercise checks."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from iolab import check
from iolab.objectstore import CredentialsError, Endpoint, PortTaken, from_env, lab, slowlink
from iolab.objectstore import _proc

SECRET = "s3cr3t-do-not-print"


def _ep(**kw):
    return Endpoint("s3", "http://127.0.0.1:9000", "AKIAEXAMPLE", SECRET, **kw)


def test_endpoint_never_shows_its_secret():
    ep = _ep(server="x")
    assert SECRET not in repr(ep) and SECRET not in ep.describe() and "AKIAEXAMPLE" not in repr(ep)
    assert ep.host == "127.0.0.1" and ep.port == 9000
    assert ep.localhost_url == "http://localhost:9000"
    slow = ep.via("http://127.0.0.1:9100", "proxy")
    assert slow.port == 9100 and slow.secret_key == SECRET and slow.server == "proxy"


@pytest.mark.parametrize("url", ["127.0.0.1:9000", "ftp://x", "http://"])
def test_endpoint_rejects_bad_urls(url):
    with pytest.raises(ValueError):
        Endpoint("s3", url)


def test_credential_files_are_0600(tmp_path):
    ep = _ep()
    for path in (ep.s3fs_passwd_file(tmp_path), ep.s3cmd_config(tmp_path), ep.rclone_config(tmp_path)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert (tmp_path / "s3fs.passwd").read_text() == f"AKIAEXAMPLE:{SECRET}\n"
    cfg = (tmp_path / "s3cmd.cfg").read_text()
    assert "host_base = 127.0.0.1:9000" in cfg and "use_https = False" in cfg
    rc = (tmp_path / "rclone.conf").read_text()
    assert "force_path_style = true" in rc and "endpoint = http://127.0.0.1:9000" in rc


def test_gcs_endpoint_has_no_s3_files(tmp_path):
    ep = Endpoint("gcs", "http://localhost:4443")
    with pytest.raises(ValueError):
        ep.s3fs_passwd_file(tmp_path)
    assert "anonymous = true" in ep.rclone_config(tmp_path).read_text()


def test_missing_keys_is_a_credentials_error(tmp_path):
    with pytest.raises(CredentialsError):
        Endpoint("s3", "http://127.0.0.1:1").s3fs_passwd_file(tmp_path)


def test_from_env(monkeypatch, tmp_path):
    for k in list(os.environ):
        if k.startswith("IOLAB_S3_") or k == "IOLAB_OBJECTSTORE_CONFIG":
            monkeypatch.delenv(k)
    with pytest.raises(CredentialsError, match="IOLAB_S3_ENDPOINT"):
        from_env("s3")
    monkeypatch.setenv("IOLAB_S3_ENDPOINT", "https://s3.example.org")
    monkeypatch.setenv("IOLAB_S3_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("IOLAB_S3_SECRET_ACCESS_KEY", SECRET)
    ep = from_env("s3")
    assert ep.url == "https://s3.example.org" and not ep.local and SECRET not in repr(ep)


def test_config_file_readable_by_others_is_refused(monkeypatch, tmp_path):
    conf = tmp_path / "store.ini"
    conf.write_text(f"[s3]\nendpoint = https://s3.example.org\naccess_key_id = k\nsecret_access_key = {SECRET}\n")
    os.chmod(conf, 0o644)
    monkeypatch.setenv("IOLAB_OBJECTSTORE_CONFIG", str(conf))
    for k in ("IOLAB_S3_ENDPOINT", "IOLAB_S3_ACCESS_KEY_ID", "IOLAB_S3_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(CredentialsError, match="chmod 600") as e:
        from_env("s3")
    assert SECRET not in str(e.value)
    os.chmod(conf, 0o600)
    assert from_env("s3").access_key == "k"


def test_free_ports_and_port_taken():
    ports = _proc.free_ports(4, grpc_offset=10000)
    assert len(set(ports)) == 4 and all(_proc.port_is_free(p + 10000) for p in ports)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(PortTaken, match="already taken"):
            _proc.require_free(s.getsockname()[1], "a test server")


def test_link_spec_and_layers():
    spec = slowlink.LinkSpec(latency_ms=20, rate_kbps=12_000)
    assert spec.describe() == "20 ms per response, capped at 12 MB/s"
    assert lab.which_layer(500e6, link_bps=12e6, resident_before=1.0) == lab.PAGE_CACHE
    assert lab.which_layer(500e6, link_bps=12e6, resident_before=0.0) == lab.FUSE_CACHE
    assert lab.which_layer(10e6, link_bps=12e6, resident_before=0.0) == lab.NETWORK
    assert lab.which_layer(10e6, link_bps=12e6, resident_before=float("nan")) == lab.NETWORK
    # the bytes over the link decide when they were counted, whatever the rate
    mib2 = 2 * 2**20
    assert lab.which_layer(500e6, link_bps=12e6, resident_before=0.0, link_down=mib2, nbytes=mib2) == lab.NETWORK
    assert lab.which_layer(5e6, link_bps=12e6, resident_before=0.0, link_down=402, nbytes=mib2) == lab.FUSE_CACHE
    assert lab.which_layer(5e6, link_bps=12e6, resident_before=1.0, link_down=0, nbytes=mib2) == lab.PAGE_CACHE
    assert lab.which_layer(500e6, link_bps=None, resident_before=0.0).startswith("unclear")


def test_toxiproxy_metrics_parse():
    text = """# HELP toxiproxy_proxy_sent_bytes_total
# TYPE toxiproxy_proxy_sent_bytes_total counter
toxiproxy_proxy_received_bytes_total{direction="downstream",listener="127.0.0.1:1",proxy="store",upstream="127.0.0.1:2"} 99
toxiproxy_proxy_sent_bytes_total{direction="downstream",listener="127.0.0.1:1",proxy="store",upstream="127.0.0.1:2"} 2.098009e+06
toxiproxy_proxy_sent_bytes_total{direction="upstream",listener="127.0.0.1:1",proxy="store",upstream="127.0.0.1:2"} 997
toxiproxy_proxy_sent_bytes_total{direction="downstream",listener="127.0.0.1:3",proxy="other",upstream="127.0.0.1:4"} 5
"""
    t = slowlink.parse_metrics(text)
    assert (t.down, t.up) == (2098009, 997)
    assert slowlink.parse_metrics("") == slowlink.Traffic(0, 0)       # nothing passed yet
    assert (t - slowlink.Traffic(9, 7)) == slowlink.Traffic(2098000, 990)


def test_recorded_reads_tell_the_layers_apart():
    reads = lab.recorded_reads().frame
    assert set(reads["label"]) == set(lab.PREDICTED_LAYERS)
    for label, predicted in lab.PREDICTED_LAYERS.items():
        got = tuple(reads[reads["label"] == label].set_index("read").loc[list(lab.READS), "layer"])
        assert got == predicted, label
    # every client reads through the page cache; only some keep the pages for the next open
    assert (reads["resident_in_fd"] >= 0.95).all()
    second = reads[reads["read"] == lab.READS[1]].set_index("label")["resident_before"]
    assert second["gcsfuse, no file cache"] == 1.0 and second["s3fs, use_cache"] == 0.0
    assert second["s3fs, use_cache + kernel_cache"] == 1.0


def test_exercise_checks_pass_and_fail():
    reads = lab.recorded_reads().frame
    rates = reads[reads["label"] == "s3fs, use_cache"].set_index("read")["mb_per_s"]
    good = rates[lab.READS[1]] / rates[lab.READS[0]]
    assert check.check_06_speedup(good, reads)
    with pytest.raises(check.CheckFailed, match="warm / cold"):
        check.check_06_speedup(1 / good, reads)
    last = reads[reads["read"] == lab.READS[2]]
    answer = {r.label: check.SHORT_LAYERS[r.layer] for r in last.itertuples()}
    assert check.check_06_layers(answer, reads)
    with pytest.raises(check.CheckFailed, match="look again"):
        check.check_06_layers({**answer, "s3fs, use_cache": "network"}, reads)
    with pytest.raises(check.CheckFailed):
        check.check_06_layers({"s3fs, use_cache": "fuse cache"}, reads)
    keepers = ["gcsfuse, no file cache", "gcsfuse, file cache", "s3fs, use_cache + kernel_cache"]
    assert check.check_06_keep_cache(set(keepers), reads)
    with pytest.raises(check.CheckFailed, match="missing"):
        check.check_06_keep_cache(keepers[:2], reads)
    with pytest.raises(check.CheckFailed, match="does not belong"):
        check.check_06_keep_cache(keepers + ["s3fs, use_cache"], reads)
    with pytest.raises(check.CheckFailed, match="not a configuration"):
        check.check_06_keep_cache(["gcsfuse"], reads)


def test_seed_figures_are_the_seed_s():
    seed = lab.seed000_published()
    reads = seed[seed["direction"] == "read"].set_index("configuration")["mb_per_s"]
    assert list(reads) == [10.2, 42.0, 38.3, 37.2]
    assert seed["source"].str.startswith("seed 000").all()
    s2 = lab.seed002_published().set_index("file")
    assert list(s2.loc[["movie.mp4", "reference.pdf", "picture.jpg"], "write_mb_per_s"]) == [21.18, 10.82, 4.78]
    assert list(s2.loc[["movie.mp4", "reference.pdf", "picture.jpg"], "read_mb_per_s"]) == [20.21, 173.48, 73.78]
    assert s2["source"].str.startswith("seed 002").all()


def test_lesson_functions_replay_as_one_outcome_with_its_frame(monkeypatch, ws, capsys):
    from iolab import recordings

    monkeypatch.setenv("IOLAB_MODE", "replay")
    fio = lab.fio_runs(None, ws)
    assert isinstance(fio, recordings.Outcome) and fio.mode == "replay" and len(fio.parts) == 3
    assert len(fio.provenance.splitlines()) == 3 and set(fio.frame["source"]) == {"measured here", "seed 000"}
    reads = lab.reads({"s3": None, "gcs": None}, ws, {"s3": None, "gcs": None})
    assert len(reads.parts) == len(lab.READ_CONFIGS) and set(reads.frame["source"]) == {"replay"}
    assert reads.frame.drop(columns="source").equals(lab.recorded_reads().frame)
    sweep = lab.dd_sweeps(None, ws, "data/file001.bin")
    assert len(sweep.parts) == 2 and set(sweep.frame["configuration"]) == {"s3fs, no cache", "s3fs, use_cache (warm)"}
    for out in (lab.fsspec_reads(None, ws, "k"), lab.staging_runs(None, ws, ["k"]), lab.gcsfuse_copies(None, ws)):
        assert out.mode == "replay" and len(out.frame) == len(out.data) > 0
    assert "write_mb_per_s" in lab.gcsfuse_copies(None, ws).frame
    printed = capsys.readouterr().out
    assert printed.count("REPLAY of") >= 3 + len(lab.READ_CONFIGS) + 2 + 3     # each run says what it is
    assert lab.services_running() == 0
