"""iolab.lessons.l04_ior.pitfalls' experiments (lesson 04): IOR live or replayed as an Experiment (an Outcome
with the page cache's facts, the witness and, in its frame, every row with its verdict), the split
phases, what the machine did meanwhile."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from iolab import measure, recordings, units
from iolab.lessons.l04_ior import pitfalls as lab
from iolab.lessons.l04_ior import verdicts
from iolab.tools import ior
from conftest import needs


def rec(name: str) -> str:
    return recordings.load(f"ior/{name}").text


def test_verdicts():
    dev = 500 * units.MiB
    rows = ior.parse(rec("fpp-4.0.0-summary"))
    df = verdicts.add_verdicts(ior.to_frame(rows), device_bps=dev, resident_fraction=1.0)
    assert set(df.loc[df["access"] == "read", "verdict"]) == {measure.CACHE}
    assert set(df.loc[df["access"] == "write", "verdict"]) == {measure.CACHE}   # no -e: the page cache took it
    fsynced = verdicts.add_verdicts(ior.to_frame(ior.parse(rec("fpp-reorder-fsync-4.0.0-summary"))), device_bps=dev,
                               resident_fraction=1.0)
    assert set(fsynced.loc[fsynced["access"] == "write", "verdict"]) == {measure.DEVICE}
    direct = verdicts.add_verdicts(ior.to_frame(ior.parse(rec("odirect-4.0.0-summary"))), device_bps=None)
    assert set(direct.loc[direct["access"] == "write", "verdict"]) == {measure.DEVICE}
    assert verdicts.verdict({"access": "remove", "bw_mib": None}, device_bps=dev) is None


def test_experiment_replays_summary_and_cache(monkeypatch, capsys):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    e = lab.experiment(ior.Options(), recording="ior/fpp-reorder-4.0.0")
    assert e.mode == "replay" and "REPLAY" in capsys.readouterr().out
    assert e.cache.resident_fraction == 1.0 and e.cache.device_bps > 0
    df = e.frame
    assert isinstance(e, recordings.Outcome) and e.frame is df and df["verdict"].notna().any()
    assert set(df["verdict"].dropna()) <= set(measure.LABELS)
    assert e.best("read") == max(r["bw_mib"] for r in e.rows if r["access"] == "read")


def test_split_phases_replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    w, r = lab.split_phases(ior.Options(file_per_process=True, fsync=True), recording="ior/evict-4.0.0",
                            quiet=True)
    assert {x["access"] for x in w.rows} == {"write"} and {x["access"] for x in r.rows} == {"read"}
    assert r.cache.resident_fraction == 0.0 and w.cache.resident_fraction == 1.0
    assert w.mode == r.mode == "replay" and w.frame["run"].iloc[0] == "write (-w -k)"


def test_experiment_replays_the_trace(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    e = lab.experiment(ior.Options(), recording="ior/lesson-ext4-4.0.0-neighbour", trace=True, quiet=True)
    assert e.opens()["moved"].all() and e.layout()["tasks_per_node"] == 1
    assert e.during["device"] == "vda" and e.bytes_moved("read") == 3 * 128 * units.MiB
    assert e.witness is not None and e.witness.device == "vda" and e.witness_note == ""
    assert lab.experiment(ior.Options(), recording="ior/lesson-ext4-4.0.0-fpp", quiet=True).opens() is None


def test_an_older_recording_says_it_has_no_witness_and_its_verdicts_are_inference(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    e = lab.experiment(ior.Options(file_per_process=True), recording="ior/fpp-4.0.0", quiet=True)
    assert e.witness is None and "before iolab kept" in e.witness_note
    assert "before iolab kept" in e.describe()
    f = e.frame
    rows = f[f["access"].isin(["write", "read"])]
    assert rows["own_read_bytes"].isna().all() and rows["device_read_bytes"].isna().all()
    assert rows["witness_notes"].str.contains("before iolab kept").all()
    assert rows["reason"].str.startswith("no witness: ").all() and rows["reason"].str.contains("By inference").all()
    assert set(e.table()["own bytes"]) == {"?"}


def test_block_device_of_memory_and_disk():
    from iolab import fsinfo
    if fsinfo.fstype("/dev/shm") in fsinfo.MEMORY_FS:
        assert lab.device_name("/dev/shm") is None
    dev = lab.device_name("/tmp")
    assert dev is None or Path(f"/sys/class/block/{dev}/stat").exists()


def test_system_watch_samples_dirty_while_the_witness_counts_the_device(tmp_path):
    from iolab import witness
    watch = verdicts.SystemWatch(tmp_path)
    with watch, witness.Witness(tmp_path) as w:
        with open(tmp_path / "f", "wb") as f:
            f.write(os.urandom(8 * units.MiB))
            f.flush()
            os.fsync(f.fileno())
    facts = watch.facts()
    assert set(facts) >= {"seconds", "device", "dirty_before", "dirty_peak", "writeback_peak", "cpu_wait_s",
                          "io_wait_s", "dirty_background_threshold", "direct_reclaim_stalls", "compaction_stalls"}
    # one witness of the bytes: the SystemWatch no longer keeps device counters of its own
    assert not {"device_read_bytes", "device_written_bytes"} & set(facts)
    assert facts["seconds"] > 0 and facts["samples"] >= 2
    assert w.result.own_written >= 8 * units.MiB
    if facts["device"] is not None:
        assert w.result.device == facts["device"] and w.result.device_written >= 8 * units.MiB
    else:
        assert w.result.device_written is None and w.result.notes


def test_verdicts_on_a_memory_filesystem():
    df = ior.to_frame(ior.parse(rec("lesson-tmpfs-4.0.0-odirect-summary")))
    out = verdicts.add_verdicts(df, device_bps=None, fstype="tmpfs")
    assert set(out["verdict"].dropna()) == {measure.CACHE}
    assert "tmpfs" in out["reason"].dropna().iloc[0]


@pytest.mark.live
@needs("strace")
def test_live_reorder_on_one_node(ws, ior_on_path):
    ior_on_path("4.0.0", mpirun=True, or_on_path=True)
    opts = ior.Options(transfer_size="1MiB", block_size="2MiB", segments=1, file_per_process=True, reorder_tasks=True)
    plain = lab.experiment(opts, recording="ior/none", ws=ws, trace=True, quiet=True)
    moved = lab.experiment(replace(opts, tasks_per_node=1), recording="ior/none", ws=ws, trace=True, quiet=True)
    assert plain.mode == moved.mode == "live"
    assert not plain.opens()["moved"].any() and moved.opens()["moved"].all()
    assert plain.layout()["tasks_per_node"] == 2 and moved.layout()["tasks_per_node"] == 1
    assert plain.during["seconds"] > 0



def test_an_experiment_made_again_recomputes_its_verdicts(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")
    e = lab.experiment(ior.Options(), recording="ior/lesson-ext4-4.0.0-neighbour", quiet=True)
    unseen = replace(e, witness=None, witness_note="none here")
    assert unseen.frame is not e.frame and set(unseen.frame["witness_notes"]) == {"none here"}
    assert e.frame["own_read_bytes"].notna().any()
