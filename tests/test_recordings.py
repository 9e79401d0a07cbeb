import json
import os
import sys

import pytest

from iolab import ParseError, ToolMissing, recordings, runner


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


# --- witnesses (issue 12) ---------------------------------------------------------------------------

def _witnessed(**kw):
    from iolab.witness import Witnessed
    base = dict(own_read=4096, own_written=0, device="vda", device_read=8192, device_written=0, notes=())
    return Witnessed(**{**base, **kw})


def test_save_stores_the_witness_and_load_gives_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    w = _witnessed(device_written=3 * 1024 * 1024, notes=("a note",))
    recordings.save("text\n", "demo/witnessed", witness=w)
    meta = json.loads((tmp_path / "demo" / "witnessed.meta.json").read_text())
    assert meta["witness"]["run"] == {"own_read_bytes": 4096, "own_write_bytes": 0, "device": "vda",
                                      "device_read_bytes": 8192, "device_write_bytes": 3 * 1024 * 1024,
                                      "disturbed": True, "notes": ["a note"]}
    rec = recordings.load("demo/witnessed")
    assert rec.witness() == w and rec.witnesses == {"run": w} and rec.witness_note == ""


def test_several_labelled_witnesses_and_a_missing_one(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_DATA", str(tmp_path))
    tmpfs = _witnessed(device=None, device_read=None, device_written=None, notes=("no block device",))
    recordings.save("text\n", "demo/phases", witness={"write": _witnessed(own_written=1 << 20), "read": tmpfs,
                                                      "skipped": None})
    rec = recordings.load("demo/phases")
    assert set(rec.witnesses) == {"write", "read"} and rec.witness("read").disturbed is None
    assert rec.witness() is None and rec.witness_note == ""         # witnessed, just not one "run"
    with pytest.raises(TypeError):
        recordings.save("text\n", "demo/bad", witness={"run": {"own_read_bytes": 1}})


def test_an_older_recording_says_it_has_no_witness(data, monkeypatch):
    rec = recordings.load("demo/hello")
    assert rec.witnesses == {} and rec.witness() is None and "before iolab kept" in rec.witness_note
    monkeypatch.setenv("IOLAB_MODE", "replay")
    out = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True, witness_path=data)
    assert out.witness is None and "before iolab kept" in out.witness_note
    assert "no witnesses" in out.provenance
    plain = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True)   # not asked: not said
    assert "witness" not in plain.provenance


def test_a_live_run_is_witnessed_when_asked(data, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "live")
    out = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True, witness_path=data)
    assert out.mode == "live" and out.witness is not None and out.witness.own_read is not None
    assert out.witness_note == ""


def test_an_outcome_carries_its_parse_as_a_frame(data, monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    rows = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True,
                                       parse=lambda t: [{"word": w} for w in t.split()])
    assert list(rows.frame["word"]) == ["recorded", "text"]
    one = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True, parse=lambda t: {"n": len(t)})
    assert one.frame.to_dict("records") == [{"n": 14}]
    text = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True, parse=str.upper)
    assert text.frame is None and text.data == "RECORDED TEXT\n"


def test_combine_joins_runs_into_one_outcome(data, monkeypatch):
    import pandas as pd

    monkeypatch.setenv("IOLAB_MODE", "auto")
    live = recordings.live_or_recorded(live_ok, "demo/hello", quiet=True)
    replay = recordings.live_or_recorded(live_missing, "demo/hello", quiet=True)
    both = recordings.combine([live, replay, replay], pd.DataFrame({"x": [1]}))
    assert both.mode == "mixed" and both.parts == [live, replay, replay] and both.run is live.run
    assert both.provenance.splitlines() == [live.provenance, replay.provenance]   # each run once
    assert recordings.combine([replay, replay]).mode == "replay"
    assert list(both.frame["x"]) == [1]
    with pytest.raises(ValueError):
        recordings.combine([])


# --- a broken .meta.json (issue 21, item 9): ParseError, never another error, a hang or a 20 GB read ----

_META_CASES = {
    "not JSON": b'{"argv": ["dd"], ',
    "cut short": b'{"argv": ["dd"], "tool": "dd", "host": {"hostname": "x"}',
    "not UTF-8": b'{"argv": ["dd"], "notes": "\xff\xfe"}',
    "a list": b'["dd"]',
    "a string": b'"dd"',
    "null": b"null",
    "two documents": b'{"argv": ["dd"]}{"argv": ["dd"]}',
    "nested 100,000 deep": b'{"notes": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "a number of 5,000 digits": b'{"returncode": ' + b"9" * 5000 + b"}",
    "NaN": b'{"returncode": NaN}',
    "1e999": b'{"host": {"cpus": 1e999}}',
    "argv a string": b'{"argv": "dd if=x"}',
    "argv of numbers": b'{"argv": [1, 2]}',
    "host a list": b'{"host": ["x"]}',
    "host null": b'{"host": null}',
    "filesystem a string": b'{"filesystem": "ext4"}',
    "date a number": b'{"date": 20261122}',
    "tool_version a dict": b'{"tool_version": {"v": 1}}',
    "returncode true": b'{"returncode": true}',
    "witness a list": b'{"witness": [1]}',
    "witness entry a string": b'{"witness": {"run": "x"}}',
    "witness count negative": b'{"witness": {"run": {"own_read_bytes": -1}}}',
    "witness count text": b'{"witness": {"run": {"own_read_bytes": "many"}}}',
    # were loaded: a device 5 (a number where a device's name belongs), notes made of a dict's keys
    "witness device a number": b'{"witness": {"run": {"device": 5}}}',
    "witness notes an object": b'{"witness": {"run": {"notes": {"no block device": 1}}}}',
    "witness notes of numbers": b'{"witness": {"run": {"notes": [1, 2]}}}',
    "a negative count": b'{"host": {"cpus": -27}}',
}


def _recording_with_meta(data, meta: bytes | None):
    (data / "demo" / "bad.txt").write_text("recorded text\n")
    if meta is not None:
        (data / "demo" / "bad.meta.json").write_bytes(meta)
    return data / "demo" / "bad.meta.json"


@pytest.mark.parametrize("case", sorted(_META_CASES))
def test_a_broken_meta_is_a_parse_error(data, case):
    _recording_with_meta(data, _META_CASES[case])
    with pytest.raises(ParseError, match="bad.meta.json"):     # were JSON, Unicode, Type and Value errors
        rec = recordings.load("demo/bad")
        rec.provenance, rec.witnesses                           # (or later, from the provenance)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "sparse-2g"])
def test_a_meta_that_is_not_a_regular_file_of_sane_size_is_refused(data, kind):
    p = _recording_with_meta(data, None)
    if kind == "fifo":
        os.mkfifo(p)                                  # was a read blocked for ever
    elif kind == "dev-zero":
        p.symlink_to("/dev/zero")                     # was a read until the OOM killer (20 GB)
    elif kind == "directory":
        p.mkdir()
    else:
        with open(p, "wb") as f:
            f.truncate(2 * 1024 ** 3)
    with pytest.raises(ParseError):
        recordings.load("demo/bad")


def test_every_recording_still_loads():
    for ref in recordings.available():
        rec = recordings.load(ref)
        assert isinstance(rec.meta, dict) and rec.provenance.startswith("REPLAY of ")


def test_replay_mode_says_what_it_replays_and_what_still_runs_here(monkeypatch, capsys):
    """IOLAB_MODE=replay replays every run of a tool; what iolab measures itself in Python (lessons 00-02's
    reads and writes of a file in the workspace) has no tool and no recording, and runs here: the mode's
    one sentence says so, the doctor table of every lesson's first cell prints it, and the README and
    lesson 00 say the same (they said "always replay", issue 32)."""
    from pathlib import Path

    from iolab import doctor
    monkeypatch.setenv("IOLAB_MODE", "replay")
    note = recordings.mode_note()
    assert "replayed" in note and "still runs here" in note and "LIVE" in note
    monkeypatch.setattr(doctor, "checks", lambda cached=True: [])
    doctor.summary()
    assert note in capsys.readouterr().out
    monkeypatch.setenv("IOLAB_MODE", "auto")
    doctor.summary()
    assert "still runs here" not in capsys.readouterr().out     # the default needs no note
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `IOLAB_MODE`"))
    assert "still runs here" in row or "still runs here" in readme
    lesson00 = (root / "notebooks" / "00-start-here.ipynb").read_text()
    for text in (readme, lesson00, (root / "DEVELOPERS.md").read_text()):
        assert "always replay" not in text and "never run tools" not in text
    assert "still runs here" in lesson00


def test_replay_mode_runs_no_hdparm_even_when_asked(monkeypatch, capsys, tmp_path):
    """IOLAB_MODE=replay replays every run of a tool: lesson 01's hdparm, which has no recording, is not
    run either (RUN_HDPARM = True or not), and the lesson says why."""
    from iolab.lessons.l01_page_cache import writes
    monkeypatch.setenv("IOLAB_MODE", "replay")
    monkeypatch.setattr(writes, "device_path", lambda p: "/dev/vda")
    monkeypatch.setattr(writes.runner, "run", lambda *a, **k: pytest.fail("hdparm was started in replay mode"))
    assert writes.hdparm(tmp_path, True) is None
    assert "IOLAB_MODE=replay" in capsys.readouterr().out
