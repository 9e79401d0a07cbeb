"""iolab.lessons.l05_mdtest.metadata's experiments (lesson 05): mdtest live or replayed, each an Outcome with its
frame and the kernel's witness; the phases one run each; the strace-based traces of mdtest's calls."""
from __future__ import annotations

from dataclasses import replace

import pytest

from iolab import recordings
from iolab.lessons.l05_mdtest import metadata, calls as metadata_strace
from iolab.tools import mdtest


def rec(name: str) -> str:
    return recordings.load(f"mdtest/{name}").text


def test_measure_on_replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    m = metadata.measure_on("/dev/shm", mdtest.Options(files=10, iterations=10, sync=True),
                            recording="mdtest/shm-4.0.0", quiet=True)
    assert isinstance(m, recordings.Outcome) and m.mode == "replay" and set(m.frame["fstype"]) == {"tmpfs"}
    assert len(m.frame) == 10 and m.frame["mean"].tolist() == [r["mean"] for r in m.data]


def test_removal_calls_keep_mdtest_items_only():
    calls = metadata_strace.removal_calls(rec("removals-tmp-4.0.0"))
    assert set(calls["item"]) == {"file", "directory", "tree directory", "top directory"}
    assert not calls["path"].str.contains("ompi|open_mpi|vader").any()
    assert (calls["item"] == "file").sum() == 200 and set(calls.loc[calls["item"] == "file", "syscall"]) == {"unlink"}


def test_device_moved_subtracts_every_counter():
    from iolab.witness import DeviceStat

    a = DeviceStat("vda", 10, 100, 20, 200, 0, 5, discards=3, sectors_discarded=24)
    b = DeviceStat("vda", 12, 108, 25, 240, 1, 9, discards=7, sectors_discarded=56)
    assert metadata.device_moved(a, b) == {"device": "vda", "reads": 2, "read_bytes": 8 * 512, "writes": 5,
                                           "written_bytes": 40 * 512, "discards": 4, "discarded_bytes": 32 * 512,
                                           "busy_ms": 4}
    old = replace(a, discards=None, sectors_discarded=None)          # a kernel before 4.18
    assert metadata.device_moved(old, b)["discards"] is None


def test_an_older_recording_says_it_has_no_witness(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    m = metadata.measure_on("/tmp", mdtest.Options(files=10, iterations=10, sync=True),
                            recording="mdtest/rates-tmp-4.0.0", quiet=True)
    assert m.witness is None and "before iolab kept" in m.witness_note
    f = m.frame
    assert f["own_read_bytes"].isna().all() and f["witness_notes"].str.contains("before iolab kept").all()
    assert set(f["witness_scope"]) == {"the whole run (every phase, 10 iterations)"}


@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
def test_recorded_phases_carry_their_witness_and_the_devices_counts(version):
    ph = metadata.recorded_phases(f"mdtest/phases-tmp-{version}", quiet=True)
    assert isinstance(ph, recordings.Outcome) and ph.mode == "replay" and ph.parts == list(ph.phases.values())
    assert len(ph.provenance.splitlines()) == 3 and ph.recording is ph.phases["create"].recording
    assert list(ph.phases) == ["create", "stat", "remove"] and ph.items == ph.directories == 200
    assert all(m.witness is not None and m.witness.device == "vda" for m in ph.phases.values())
    f = ph.frame.set_index("phase")
    assert f.loc["remove", "discards"] >= 200 and f.loc["remove", "device"] == "vda"
    assert "directory removal" in f.loc["remove", "rates"] and "file creation" in f.loc["create", "rates"]
    shm = metadata.recorded_phases(f"mdtest/phases-shm-{version}", quiet=True)
    assert shm.device == {"create": None, "stat": None, "remove": None}
    assert all(m.witness.device is None and "no block device" in m.witness.notes[0] for m in shm.phases.values())


@pytest.mark.live
@pytest.mark.parametrize("version", ["3.3.0", "4.0.0"])
@pytest.mark.slow
def test_live_phases_are_witnessed_and_leave_nothing(monkeypatch, ior_on_path, place, version):
    import os

    ior_on_path(version, "mdtest", mpirun=True)
    monkeypatch.setenv("IOLAB_MODE", "live")
    kind, ws = place
    ph = metadata.measure_phases(ws.root, mdtest.Options(files=20, iterations=1), recording="mdtest/none", quiet=True)
    assert ph.mode == "live" and ph.items == 40 and {r["version"] for r in ph.phases["create"].data} == {version}
    assert os.listdir(ws.root) == []                                 # the private tree is gone
    assert all(m.witness is not None for m in ph.phases.values())
    if kind == "tmpfs":
        assert all(v is None for v in ph.device.values())
    else:
        assert all(ph.device[p]["device"] == ph.phases[p].witness.device for p in ph.phases)
