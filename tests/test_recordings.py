import json
import sys

import pytest

from iolab import ToolMissing, recordings, runner


@pytest.fixture
def data(tmp_path, monkeypatch):
    d = tmp_path / "recorded"
    d.mkdir()
    monkeypatch.setenv("IOLAB_DATA", str(d))
    run = runner.run([sys.executable, "-c", "print('recorded text')"], timeout=30)
    recordings.save(run, "demo/hello", fs_path=tmp_path, notes="a test recording")
    return d


def test_save_writes_raw_text_and_meta(data):
    assert (data / "demo" / "hello.txt").read_text() == "recorded text\n"
    meta = json.loads((data / "demo" / "hello.meta.json").read_text())
    assert meta["argv"][0] == sys.executable and meta["returncode"] == 0 and meta["tool"] == "demo"
    assert meta["filesystem"]["fstype"] and meta["host"]["hostname"] and meta["date"].endswith("Z")
    assert recordings.available() == ["demo/hello"]


def test_load_names_what_exists_when_missing(data):
    with pytest.raises(FileNotFoundError, match="hello"):
        recordings.load("demo/nope")
    with pytest.raises(ValueError):
        recordings.load("no-slash")


def live_ok():
    return runner.run([sys.executable, "-c", "print('live text')"], timeout=30)


def live_missing():
    return runner.run(["tool-that-is-not-here"], timeout=5)


def test_auto_runs_live_when_the_tool_is_here(data, monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    out = recordings.live_or_recorded(live_ok, "demo/hello", parse=str.upper)
    assert out.mode == "live" and out.text == "live text\n" and out.data == "LIVE TEXT\n"
    assert "LIVE" in capsys.readouterr().out


def test_auto_replays_when_the_tool_is_missing(data, monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    out = recordings.live_or_recorded(live_missing, "demo/hello", parse=str.upper)
    assert out.mode == "replay" and out.text == "recorded text\n" and out.data == "RECORDED TEXT\n"
    printed = capsys.readouterr().out
    assert "REPLAY" in printed and "hello.txt" in printed and "recorded 20" in printed
    assert "tool-that-is-not-here not installed" in out.provenance
    out = recordings.live_or_recorded(live_ok, "demo/hello", requires=("tool-that-is-not-here",), quiet=True)
    assert out.mode == "replay"


def test_replay_mode_never_runs(data, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    def boom():
        raise AssertionError("must not run")
    assert recordings.live_or_recorded(boom, "demo/hello", quiet=True).mode == "replay"


def test_live_mode_never_replays(data, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(ToolMissing):
        recordings.live_or_recorded(live_missing, "demo/hello", quiet=True)
    with pytest.raises(ToolMissing):
        recordings.live_or_recorded(live_ok, "demo/hello", requires=("tool-that-is-not-here",), quiet=True)


def test_bad_mode_is_an_error(data, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "sometimes")
    with pytest.raises(ValueError, match="IOLAB_MODE"):
        recordings.live_or_recorded(live_ok, "demo/hello")


def test_the_checkout_has_its_recordings_directory(monkeypatch):
    monkeypatch.delenv("IOLAB_DATA", raising=False)
    assert recordings.data_dir().name == "recorded"
