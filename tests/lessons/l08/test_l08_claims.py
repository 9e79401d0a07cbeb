"""Lesson 08's claims follow the numbers: the recorded sections replay through the same parsers, every
sentence re-checks against its evidence, the facts that hold on any Ceph hold on the recordings, and
constructed inputs (overlapping trials, a file bigger than the client's cache) flip the sentences."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import all_consistent
from iolab import ParseError, ToolMissing, explain, plot, recordings, trials
from iolab.lessons.l08_parallel_fs import sections as P
from iolab.lessons.l08_parallel_fs import ior_runs as PI
from iolab.units import MiB


@pytest.fixture(autouse=True)
def replay(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "replay")


class Untouched:
    """A cluster that must not be touched: the section decides to replay before it uses it (its
    directory only names what a live run would be witnessed on)."""

    dir = Path("/nonexistent")


def which_but(*lacking):
    """``recordings.which`` (the one door's) on a machine where ``lacking`` are not installed and
    everything else is."""
    return lambda t: None if t in lacking else f"/usr/bin/{t}"


def held(claims) -> list[bool]:
    return [c.held for c in claims]


def test_without_a_cluster_every_section_replays_and_says_so(capsys):
    assert P.start() is None
    for fn in (P.where_bytes_live, P.client_caches, P.metadata, P.coherence, P.shared_file, P.replication):
        out = fn(None, show=False)
        assert out.mode == "replay"
        assert "data/recorded/ceph/" in out.provenance or "ceph/" in out.provenance
        assert out.frame is not None and len(out.frame) > 0
        all_consistent(out.claims)
    assert "IOLAB_MODE=replay" in capsys.readouterr().out


def test_layouts_counts_objects_and_bytes_per_osd_and_round_robin():
    out = P.where_bytes_live(None, show=False)
    f = out.frame.set_index("layout")
    assert list(f["objects"]) == list(f["predicted_objects"]) == [4, 4, 16]
    assert held(out.claims) == [True] * 5
    assert isinstance(out, P.Layouts) and out.per_osd is out.data["per_osd"]
    assert out.per_osd.groupby("layout")["bytes_written"].sum().min() >= 16 * MiB
    assert out.round_robin["equals_file_MiB_1_5_9_13"] and not out.round_robin["equals_file_MiB_4_to_8"]
    assert set(out.objects["layout"]) == set(P.LAYOUTS)


def test_caches_cold_reads_reach_the_osds_and_warm_ones_do_not():
    out = P.client_caches(None, show=False)
    df = out.frame
    cold = df[df["step"] == P.CACHE_STEPS[0]]
    assert (cold["osd_bytes_sent"] >= 64 * MiB).all() and (cold["kernel_pages_before"] == 0).all()
    assert (df[df["step"] != P.CACHE_STEPS[0]]["osd_bytes_sent"] == 0).all()
    assert held(out.claims)[:3] == [True, True, True]


def test_a_file_bigger_than_the_client_cache_turns_the_third_sentence():
    df = P.client_caches(None, show=False).frame.copy()
    df.loc[df["step"] == P.CACHE_STEPS[2], "osd_bytes_sent"] = 64 * MiB
    claims = P.caches_claims(df, show=False)
    all_consistent(claims)
    assert claims[2].held is False and "client_oc_size" in claims[2].text


def test_metadata_every_operation_is_an_mds_request():
    out = P.metadata(None, show=False)
    ceph = out.frame[out.frame["where"] == "CephFS"]
    assert (ceph["mds_requests"] >= 3 * ceph["files"]).all()
    assert out.claims[0].held is True


def test_overlapping_trials_are_too_close_to_call_by_the_course_rule():
    """The one rule (explain.beyond): overlap is 'Too close to call here' (held None), never 'Not this
    time'; fewer than 3 trials of a side are not called; a side wholly below the other is refuted."""
    c = P.trials_claim("a is faster", "a", [10, 30, 50], "b", [20, 40, 60], "MB/s", show=False)
    assert c.held is None and c.text.startswith(explain.TOO_CLOSE) and c.consistent()
    assert c.relation.kind == "beyond"
    c = P.trials_claim("a is faster", "a", [70, 80, 90], "b", [20, 40, 60], "MB/s", show=False)
    assert c.held is True and c.consistent()
    c = P.trials_claim("a is faster", "a", [90, 95], "b", [20, 40], "MB/s", show=False)
    assert c.held is None and c.text.startswith(explain.TOO_CLOSE)
    c = P.trials_claim("a is faster", "a", [1, 2, 3], "b", [20, 40, 60], "MB/s", show=False)
    assert c.held is False and c.text.startswith(explain.NOT_THIS_TIME)
    keep = {}
    c = P.trials_claim("a takes less time", "a", [1, 2, 3], "b", [4, 5, 6], "s", higher=False, keep=keep, key="k",
                  show=False)
    assert c.held is True and list(keep["k"].settings) == ["a", "b"] and keep["k"].values("a") == [1, 2, 3]


def test_a_section_with_overlapping_trials_says_too_close_not_not_this_time():
    """Shared file against a file each, with the two sides' rates made to overlap: the old rule said
    'Not this time'; the course's rule says too close to call, with both spreads."""
    df = P.shared_file(None, show=False).frame.copy()
    per = df["how"] == "a file per client"
    df.loc[per, "mb_per_s"] = [1.0, 3.0, 5.0]
    df.loc[~per, "mb_per_s"] = [2.0, 4.0, 6.0]
    c = P.trials_claim("a file each is faster", "a file per client", list(df[per]["mb_per_s"]),
                  "one shared file", list(df[~per]["mb_per_s"]), "MB/s", show=False)
    assert c.held is None and "Too close to call here" in c.text and "median of 3" in c.text
    metas = P.metadata(None, show=False).frame.copy()
    metas.loc[metas["where"] != "CephFS", "ops_per_s"] = metas.loc[metas["where"] == "CephFS", "ops_per_s"].values
    claims = P.metadata_claims(metas, show=False)
    all_consistent(claims)
    assert [c.held for c in claims[1:]] == [None, None]


def test_every_comparison_keeps_its_trials_for_the_chart():
    for fn, keys in ((P.client_caches, {"read"}), (P.metadata, {"create", "stat"}), (P.coherence, {"writes"}),
                     (P.shared_file, {"writes"}), (P.replication, {"writes"})):
        out = fn(None, show=False)
        assert set(out.trials) == keys
        for t in out.trials.values():
            assert len(t.settings) == 2 and min(len(t.values(s)) for s in t.settings) >= 3
            assert len(plot.trials(t.frame, unit=t.unit).data) >= 2


def test_the_replay_says_why_live_did_not_run(monkeypatch, capsys):
    """Without a started cluster the reason is the real one (IOLAB_MODE=replay here), not 'ceph-mon
    not installed' when the packages are installed; with FUSE unusable it names /dev/fuse."""
    out = P.metadata(None, show=False)
    assert out.reason == "IOLAB_MODE=replay" and "not installed" not in out.provenance
    monkeypatch.setenv("IOLAB_MODE", "auto")
    monkeypatch.setattr(recordings, "which", which_but())
    monkeypatch.setattr(P, "fuse_problem", lambda: "/dev/fuse exists but this user may not open it")
    assert P.start() is None
    assert "/dev/fuse exists but this user may not open it" in capsys.readouterr().out
    out = P.metadata(None, show=False)
    assert "/dev/fuse" in out.reason and "ceph-mon" not in out.provenance
    assert P.why_not_live() == out.reason
    monkeypatch.setattr(recordings, "which", which_but("ceph-mon", "ceph-osd"))
    out = P.replication(None, show=False)
    assert out.reason == "ceph-mon, ceph-osd not installed here" == P.why_not_live()
    monkeypatch.setattr(P, "fuse_problem", lambda: "")
    monkeypatch.setattr(recordings, "which", which_but())
    out = P.shared_file(None, show=False)
    assert out.reason == P.NO_CLUSTER and P.why_not_live() == ""


def test_in_live_mode_what_keeps_the_cluster_from_running_raises(monkeypatch):
    """IOLAB_MODE=live never replays: start() raises ToolMissing naming a missing Ceph package (with how
    to install it), CannotRunHere when FUSE is unusable; a section without a cluster raises too."""
    monkeypatch.setenv("IOLAB_MODE", "live")
    monkeypatch.setattr(recordings, "which", which_but("ceph-osd"))
    with pytest.raises(ToolMissing, match="ceph-osd is not installed.*apt-get install"):
        P.start()
    monkeypatch.setattr(recordings, "which", which_but())
    monkeypatch.setattr(P, "fuse_problem", lambda: "/dev/fuse exists but this user may not open it")
    with pytest.raises(recordings.CannotRunHere, match="ceph-fuse cannot mount: /dev/fuse exists"):
        P.start()
    with pytest.raises(recordings.CannotRunHere, match="/dev/fuse"):
        P.metadata(None, show=False)
    monkeypatch.setattr(P, "fuse_problem", lambda: "")
    with pytest.raises(recordings.CannotRunHere, match="no cluster was started"):
        P.coherence(None, show=False)


def test_every_section_is_a_typed_outcome_with_its_claims_and_trials():
    """One result shape: a Section (an Outcome) with typed claims and trials, no bag of strings."""
    for fn in (P.where_bytes_live, P.client_caches, P.metadata, P.coherence, P.shared_file, P.replication,
               PI.ior_two_clients, PI.ior_cephfs):
        out = fn(None, show=False)
        assert isinstance(out, P.Section) and isinstance(out, recordings.Outcome)
        assert out.claims and all(isinstance(c, explain.Claim) for c in out.claims)
        assert all(isinstance(t, trials.Trials) for t in out.trials.values())
        assert not hasattr(out, "extra")


def test_coherence_node_b_sees_unflushed_bytes():
    out = P.coherence(None, show=False)
    assert isinstance(out, P.Coherence) and out.frame is out.data["trials"]
    assert out.visible["bytes_equal"] and out.visible["size_seen_by_b"] == 4096
    assert len(out.sessions) >= 2
    assert out.claims[0].held is True


def test_replication_three_copies_reach_the_osds():
    out = P.replication(None, show=False)
    df = out.frame
    assert df[df["pool_size"] == 3]["osd_bytes_per_file_byte"].between(2.9, 3.1).all()
    assert df[df["pool_size"] == 1]["osd_bytes_per_file_byte"].between(0.95, 1.05).all()
    assert out.claims[0].held is True


def test_shared_file_has_its_comparison():
    out = P.shared_file(None, show=False)
    assert set(out.frame["how"]) == {"a file per client", "one shared file"}
    assert len(out.frame) == 2 * P.TRIALS
    all_consistent(out.claims)


def test_a_recorded_document_with_a_damaged_raw_output_is_a_parse_error():
    doc = json.loads(recordings.load("ceph/layouts").text)
    name = next(iter(doc["files"]))
    doc["files"][name]["getfattr"] = doc["files"][name]["getfattr"].replace("stripe_count=", "stripe_cnt=")
    with pytest.raises(ParseError):
        P.parse_layouts(json.dumps(doc))


def test_ior_minus_c_across_two_clients_reads_from_the_osds():
    """Seed 001 with two clients (recorded): rank 0 on node A, rank 1 on node B; without -C the OSDs
    send nothing (each client's cache answers), with -C -Q 1 and one task per node every byte comes
    from the OSDs, and IOR itself says it moved the ranks."""
    out = PI.ior_two_clients(None, show=False)
    df = out.frame
    own, other = (df[df["step"] == s] for s in PI.IOR_STEPS)
    assert len(own) == len(other) == P.TRIALS
    assert (own["osd_bytes_sent"] < MiB).all() and (other["osd_bytes_sent"] >= other["bytes"]).all()
    assert set(other["ordering"]) == {"constant task offset"} and set(df["tasks_per_node"]) == {1}
    assert [c.held for c in out.claims[:2]] == [True, True]
    all_consistent(out.claims)
    doc = json.loads(out.text)
    argv = doc["trials"][1]["argv"]
    paths = [argv[i + 1] for i, a in enumerate(argv) if a == "-o"]
    assert len(paths) == 2 and "node-a" in paths[0] and "node-b" in paths[1] and "-C" in argv
    assert out.witness is not None and out.witness.device is not None


def test_ior_minus_c_served_by_a_cache_turns_the_sentence():
    df = PI.ior_two_clients(None, show=False).frame.copy()
    df.loc[df["step"] == PI.IOR_STEPS[1], "osd_bytes_sent"] = 0
    claims = PI.ior_two_clients_claims(df, show=False)
    all_consistent(claims)
    assert claims[1].held is False and "numTasksOnNode0" not in claims[1].text and "tasks per node" in claims[1].text
    df.loc[:, "mib_per_s"] = [100.0, 90.0, 80.0, 120.0, 110.0, 95.0]
    assert PI.ior_two_clients_claims(df, show=False)[2].held is None


def test_ior_section_without_ior_replays_saying_so(monkeypatch):
    monkeypatch.setenv("IOLAB_MODE", "auto")
    monkeypatch.setattr(recordings, "which", which_but("ior"))
    out = PI.ior_two_clients(Untouched(), show=False)
    assert out.mode == "replay" and out.reason.startswith("ior not installed here")
    assert out.witness is not None                  # the recording's
    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(ToolMissing, match="ior"):
        PI.ior_two_clients(Untouched(), show=False)


# --- section 8: IOR's own CEPHFS backend ---------------------------------------------------------------

def test_ior_cephfs_shared_file_sends_every_4k_on_its_own_and_olazy_buffers_again():
    """Seed 001's shared file against -F, through libcephfs (recorded, IOR 4.0.0 built --with-cephfs):
    two clients on one file send the OSDs one write per 4 KiB transfer; a file each, LazyIO, and one
    ceph-fuse client send large writes; every sentence re-checks against the numbers."""
    out = PI.ior_cephfs(None, show=False)
    df = out.frame
    assert out.mode == "replay" and len(df) == len(PI.CEPHFS_SETTINGS) * P.TRIALS
    assert list(df["setting"][:len(PI.CEPHFS_SETTINGS)]) == list(PI.CEPHFS_SETTINGS)   # interleaved
    shared, fpp, lazy, posix = (df[df["setting"] == s] for s in PI.CEPHFS_SETTINGS)
    assert (shared["kib_per_osd_write"] < 8).all() and (shared["osd_write_ops"] >= 256).all()
    for other in (fpp, lazy, posix):
        assert (other["kib_per_osd_write"] > 32).all()
    assert (df["osd_bytes_in"] >= df["bytes"]).all()
    assert held(out.claims)[:3] == [True, True, True]
    all_consistent(out.claims)
    assert set(out.trials["all"].settings) == set(PI.CEPHFS_SETTINGS)
    doc = json.loads(out.text)
    assert doc["ior_version"] == "4.0.0"
    for t in doc["trials"]:
        argv = t["argv"]
        if "CEPHFS" in argv:
            assert any(a.startswith("--cephfs.prefix=") for a in argv) and "--cephfs.user=admin" in argv
        assert "-g" in argv and ("--cephfs.olazy" in argv) == t["setting"].endswith("olazy")
    assert out.witness is not None and out.witness.device is not None


def test_ior_cephfs_sentences_turn_with_the_numbers():
    df = PI.ior_cephfs(None, show=False).frame.copy()
    shared = df["setting"] == next(iter(PI.CEPHFS_SETTINGS))
    df.loc[shared, "mib_per_s"] = df.loc[df["setting"] == list(PI.CEPHFS_SETTINGS)[1], "mib_per_s"].values
    df.loc[df.index[0], "osd_bytes_in"] = 0
    claims = PI.cephfs_claims(df, show=False)
    all_consistent(claims)
    assert claims[0].held is False and claims[1].held is None


def test_ior_cephfs_without_a_cephfs_ior_replays_saying_how_to_build_one(monkeypatch):
    monkeypatch.setattr(PI, "cephfs_ior", lambda: None)
    monkeypatch.setenv("IOLAB_MODE", "auto")
    monkeypatch.setattr(recordings, "which", which_but())
    out = PI.ior_cephfs(Untouched(), show=False)
    assert out.mode == "replay" and "CEPHFS backend" in out.reason
    assert "--with-cephfs" in out.reason and "#ifndef HAVE_CONFIG_H" in out.reason
    monkeypatch.setenv("IOLAB_MODE", "live")
    with pytest.raises(recordings.CannotRunHere, match="with-cephfs"):
        PI.ior_cephfs(Untouched(), show=False)


def test_cephfs_ior_is_the_one_whose_help_lists_the_backend(tmp_path, monkeypatch):
    def fake(d, backends):
        d.mkdir(parents=True)
        exe = d / "ior"
        exe.write_text(f"#!/bin/sh\necho 'Synopsis ior'\necho '  -a=POSIX   API for I/O [{backends}]'\n")
        exe.chmod(0o755)
        return exe
    plain = fake(tmp_path / "plain", "POSIX|DUMMY|MPIIO|MMAP")
    built = fake(tmp_path / "ior-4.0.0-cephfs" / "bin", "POSIX|DUMMY|MPIIO|MMAP|CEPHFS")
    monkeypatch.setenv("PATH", f"{plain.parent}:/usr/bin:/bin")
    monkeypatch.setattr(PI, "CEPHFS_IOR_GLOB", str(tmp_path / "nothing-*" / "ior"))
    assert PI.cephfs_ior() is None
    monkeypatch.setattr(PI, "CEPHFS_IOR_GLOB", str(tmp_path / "ior-*-cephfs" / "bin" / "ior"))
    assert PI.cephfs_ior() == str(built)
    monkeypatch.setenv("PATH", f"{built.parent}:/usr/bin:/bin")
    assert PI.cephfs_ior() == str(built)


def test_ior_cephfs_document_without_a_write_result_is_a_parse_error():
    doc = json.loads(recordings.load("ceph/ior-cephfs").text)
    doc["trials"][2]["stdout"] = doc["trials"][2]["stdout"].replace("write     ", "wrote     ")
    with pytest.raises(ParseError, match="trial 1"):
        PI.parse_cephfs(json.dumps(doc))
    doc = json.loads(recordings.load("ceph/ior-cephfs").text)
    doc["trials"][0]["perf_after"] = 3
    with pytest.raises(ParseError):
        PI.parse_cephfs(json.dumps(doc))


# --- issue 32: sentences the numbers beside them deny -------------------------------------------------

def test_caches_say_what_the_object_cache_counted_not_its_buffer_head_bytes_as_bytes_hit():
    """ceph's ObjectCacher::_readx adds the whole buffer head each read touches to cache_bytes_hit, so the
    recording's counter reads 2,104-2,416 MiB for a 64 MiB read: the sentence counts reads, hit and missed."""
    out = P.client_caches(None, show=False)
    ev = out.frame[out.frame["step"] == P.CACHE_STEPS[2]]
    assert (ev["client_cache_hit_bytes"] > 64 * MiB).all()                # the counter, more than the file
    assert (ev["client_cache_ops_miss"] == 0).all() and (ev["client_cache_ops_hit"] > 0).all()
    text = out.claims[2].text
    assert "the client cache hit" not in text and "cache_ops_miss" in text and "buffer head" in text
    assert f"{int(ev['client_cache_ops_hit'].min()):,}" in text


def test_metadata_says_which_requests_the_mds_counted_and_they_add_up():
    out = P.metadata(None, show=False)
    ceph = out.frame[out.frame["where"] == "CephFS"].groupby("trial").first()
    kinds = [f"mds_{k}s" for k in P.MDS_KINDS] + ["mds_other"]
    assert (ceph[kinds].sum(axis=1) == ceph["mds_requests"]).all()
    assert (ceph["mds_creates"] == ceph["files"]).all() and (ceph["mds_unlinks"] == ceph["files"]).all()
    text = out.claims[0].text
    for word in ("creates", "unlinks", "lookups", "getattrs"):
        assert word in text, text


def test_coherence_says_whose_the_sessions_are():
    out = P.coherence(None, show=False)
    text = out.claims[0].text
    mounts = [s for s in out.sessions if s["mount_point"]]
    assert len(mounts) == 2 and f"{len(out.sessions)} client sessions" in text
    assert "2 of them the mounts" in text and "mgr.x" in text


def test_replication_trials_rotate_which_pool_size_is_written_first():
    firsts = [sizes[0] for sizes in P.replication_rounds(4)]
    assert firsts == [1, 3, 1, 3]


def test_layouts_lead_with_counts_and_show_no_rate_of_one_run():
    out = P.where_bytes_live(None, show=False)
    assert not [c for c in out.frame.columns if "per_s" in c]
    nb = (Path(__file__).resolve().parents[3] / "notebooks" / "08-parallel-fs.ipynb").read_text()
    assert "More stripes do not make a single writer faster here" not in nb


def test_sessions_of_the_two_mounts_alone_and_a_spread_of_equal_trials_keep_their_unit():
    two = [{"id": 1, "num_caps": 1, "state": "open", "entity": "admin", "mount_point": "/a"},
           {"id": 2, "num_caps": 1, "state": "open", "entity": "admin", "mount_point": "/b"}]
    assert P._sessions_text(two) == "2 client sessions at the MDS, the two mounts (node A, node B)"
    assert f"{P._spread([64.0, 64.0, 64.0])} MiB" == "64 MiB"      # not "64 in every trial MiB"
