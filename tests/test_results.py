"""iolab.results: one file per user, atomic writes, tolerant load, schema migrations."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iolab import results

ROOT = Path(__file__).resolve().parent.parent


def frame(n: int = 3, scale: float = 1.0) -> pd.DataFrame:
    # test inputs for the bookkeeping, not measurements
    return pd.DataFrame({"operation": [f"op{i}" for i in range(n)], "rate": np.arange(1, n + 1) * scale,
                         "count": np.arange(n, dtype=np.int64)})


def test_save_then_load_keeps_rows_and_provenance(tmp_path):
    d = tmp_path / "class"
    mid = results.save(frame(), tool="mdtest", directory=d, user="alice", path=tmp_path,
                       options=["-n", "10", "-y"], node="n1", notes="first try")
    df = results.load(d)
    assert len(df) == 3
    assert list(df.columns[:len(results.PROVENANCE)]) == list(results.PROVENANCE)
    row = df.iloc[0]
    assert row["user"] == "alice" and row["tool"] == "mdtest" and row["measurement"] == mid
    assert row["options"] == "-n 10 -y" and row["node"] == "n1" and row["mode"] == "live"
    assert row["fstype"] and row["fs_path"] == str(tmp_path)
    assert df["rate"].tolist() == [1.0, 2.0, 3.0]
    assert (d / "alice.json").exists()
    doc = json.loads((d / "alice.json").read_text())
    assert doc["schema_version"] == results.SCHEMA_VERSION and doc["user"] == "alice"


def test_one_file_per_user_and_appends(tmp_path):
    for u in ("alice", "bob", "alice"):
        results.save(frame(2), tool="fio", directory=tmp_path, user=u, fstype="ext4", filesystem="/scratch")
    assert sorted(p.name for p in tmp_path.glob("*.json")) == ["alice.json", "bob.json"]
    df = results.load(tmp_path)
    assert df.groupby("user").size().to_dict() == {"alice": 4, "bob": 2}
    assert set(df["filesystem"]) == {"/scratch"} and set(df["fs_kind"]) == {"local disk"}
    assert results.load(tmp_path, users=["bob"])["user"].unique().tolist() == ["bob"]


def test_numpy_nan_and_timestamps_are_stored_as_json(tmp_path):
    df = pd.DataFrame({"x": [np.float32(1.5), np.nan], "n": [np.int64(2), np.int64(3)],
                       "when": [pd.Timestamp("2026-01-01"), pd.NaT], "ok": [np.bool_(True), np.bool_(False)]})
    results.save(df, tool="fio", directory=tmp_path, user="carol", fstype="tmpfs")
    text = (tmp_path / "carol.json").read_text()
    assert "NaN" not in text
    back = results.load(tmp_path)
    assert back["x"].iloc[0] == 1.5 and pd.isna(back["x"].iloc[1])
    assert back["n"].tolist() == [2, 3] and back["ok"].tolist() == [True, False]


def test_bad_user_names_are_refused(tmp_path):
    for bad in ("../etc", "a/b", ".hidden", "x" * 100):
        with pytest.raises(ValueError):
            results.save(frame(), tool="fio", directory=tmp_path, user=bad)


def test_a_measurement_column_wins_over_provenance(tmp_path):
    df = pd.DataFrame({"node": [0, 1], "host": ["vm", "vm"], "rate": [1.0, 2.0]})
    results.save(df, tool="fio", directory=tmp_path, user="dave", node=None, host="login1")
    back = results.load(tmp_path)
    assert back["node"].tolist() == [0, 1] and back["host"].tolist() == ["vm", "vm"]


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    import pandas as pd
    from iolab import results
    d, user, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(n):
        results.save(pd.DataFrame({{"i": [i], "pid": [__import__("os").getpid()], "pad": ["x" * 2000]}}),
                     tool="fio", directory=d, user=user, fstype="ext4")
""")


@pytest.mark.slow
def test_concurrent_writers_lose_nothing_and_readers_never_see_half_a_file(tmp_path):
    """Six processes (three users, two kernels each) append at once while this process reads."""
    d = tmp_path / "shared"
    d.mkdir()
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    n = 15
    procs = [subprocess.Popen([sys.executable, str(script), str(d), user, str(n)])
             for user in ("u1", "u2", "u3") for _ in range(2)]
    reads = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", results.ResultsWarning)     # a half-written file would warn
        while any(p.poll() is None for p in procs):
            results.load(d)
            reads += 1
    assert all(p.wait() == 0 for p in procs)
    df = results.load(d)
    assert df.groupby("user").size().to_dict() == {"u1": 2 * n, "u2": 2 * n, "u3": 2 * n}
    # both kernels of each user got all their rows in (the lock serialises read-modify-write)
    assert df.groupby(["user", "pid"]).size().eq(n).all()
    assert not [p for p in d.iterdir() if p.name.endswith(".tmp")]
    assert reads > 0


def test_corrupt_and_half_written_files_are_skipped_with_a_warning(tmp_path):
    results.save(frame(), tool="mdtest", directory=tmp_path, user="alice", fstype="tmpfs")
    good = (tmp_path / "alice.json").read_text()
    (tmp_path / "bob.json").write_text(good[: len(good) // 2])          # half-written
    (tmp_path / "carol.json").write_bytes(b"\x00\xff garbage")          # not text
    (tmp_path / "dave.json").write_text('{"hello": "world"}')           # JSON, not results
    (tmp_path / "erin.json").write_text(json.dumps(
        {"schema_version": 1, "user": "erin", "measurements": [{"rows": "nope"}, 7]}))
    with pytest.warns(results.ResultsWarning) as caught:
        df = results.load(tmp_path)
    assert df["user"].unique().tolist() == ["alice"] and len(df) == 3
    text = " ".join(str(w.message) for w in caught)
    for name in ("bob.json", "carol.json", "dave.json", "erin.json"):
        assert name in text


def test_saving_over_a_corrupt_own_file_keeps_it_aside(tmp_path):
    (tmp_path / "alice.json").write_text("{ truncated")
    with pytest.warns(results.ResultsWarning, match="kept it as"):
        results.save(frame(), tool="fio", directory=tmp_path, user="alice")
    assert len(results.load(tmp_path)) == 3
    aside = list(tmp_path.glob("alice.json.unreadable-*"))
    assert len(aside) == 1 and aside[0].read_text() == "{ truncated"


def test_empty_or_missing_directory_gives_an_empty_frame(tmp_path):
    assert results.load(tmp_path / "nope").empty
    assert list(results.load(tmp_path).columns) == list(results.PROVENANCE)


def test_a_newer_schema_is_skipped_and_an_older_one_migrated(tmp_path, monkeypatch):
    # files written by today's iolab (schema 1)
    results.save(pd.DataFrame({"rate_ops": [10.0]}), tool="mdtest", directory=tmp_path, user="old", fstype="ext4")
    # a future iolab renames rate_ops to ops_per_s: schema 2, with its migration
    def v1_to_v2(doc):
        for m in doc["measurements"]:
            m["columns"] = ["ops_per_s" if c == "rate_ops" else c for c in m["columns"]]
            m["rows"] = [{("ops_per_s" if k == "rate_ops" else k): v for k, v in r.items()} for r in m["rows"]]
        return doc
    monkeypatch.setattr(results, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(results.MIGRATIONS, 1, v1_to_v2)
    results.save(pd.DataFrame({"ops_per_s": [20.0]}), tool="mdtest", directory=tmp_path, user="new", fstype="ext4")
    df = results.load(tmp_path)
    assert df.set_index("user")["ops_per_s"].to_dict() == {"new": 20.0, "old": 10.0}
    assert "rate_ops" not in df.columns
    # saving again as "old" rewrites the file at schema 2
    results.save(pd.DataFrame({"ops_per_s": [30.0]}), tool="mdtest", directory=tmp_path, user="old", fstype="ext4")
    assert json.loads((tmp_path / "old.json").read_text())["schema_version"] == 2
    # back to today's iolab: the schema-2 files are from the future, skipped with a warning
    monkeypatch.setattr(results, "SCHEMA_VERSION", 1)
    with pytest.warns(results.ResultsWarning, match="newer iolab"):
        assert results.load(tmp_path).empty


def test_an_old_schema_without_migration_is_skipped(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"schema_version": 0, "measurements": []}))
    with pytest.warns(results.ResultsWarning, match="too old"):
        assert results.load(tmp_path).empty


def test_results_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("IOLAB_RESULTS", str(tmp_path / "env"))
    results.save(frame(1), tool="fio", user="zoe")
    assert (tmp_path / "env" / "zoe.json").exists()
    assert len(results.load()) == 1


def test_file_mode_lets_the_instructor_read(tmp_path):
    results.save(frame(1), tool="fio", directory=tmp_path, user="amy", file_mode=0o640)
    assert (os.stat(tmp_path / "amy.json").st_mode & 0o777) == 0o640


def test_save_from_a_replayed_outcome_takes_its_provenance(tmp_path):
    from iolab import recordings

    refs = recordings.available("fio")
    if not refs:
        pytest.skip("no fio recording in data/recorded")
    rec = recordings.load(refs[0])
    out = recordings.Outcome("replay", rec.text, rec.provenance, recording=rec)
    results.save(frame(1), tool="fio", directory=tmp_path, user="ann", outcome=out)
    row = results.load(tmp_path).iloc[0]
    assert row["mode"] == "replay" and row["recording"] == refs[0]
    assert row["tool_version"] == rec.meta.get("tool_version")


def test_summary_and_outliers():
    # a group of eight around 100 with one value 50x off, and a group too small to judge
    df = pd.DataFrame({"filesystem": ["a"] * 8 + ["b"] * 2,
                       "user": [f"u{i}" for i in range(10)],
                       "rate": [100, 110, 95, 105, 98, 102, 5000, 101, 1, 2]})
    s = results.summary(df, "rate").set_index("filesystem")
    assert s.loc["a", "n"] == 8 and s.loc["a", "users"] == 8 and s.loc["a", "median"] == 101.5
    assert s.loc["b", "spread"] == 2
    o = results.outliers(df, "rate")
    assert o["user"].tolist() == ["u6"] and o["x_median"].iloc[0] > 40
    assert results.outliers(df.iloc[0:0], "rate").empty


def test_recorded_class_data_loads_cleanly():
    d = ROOT / "data" / "recorded" / "class" / "results"
    if not d.is_dir():
        pytest.skip("no recorded class results yet")
    with warnings.catch_warnings():
        warnings.simplefilter("error", results.ResultsWarning)
        df = results.load(d)
    assert df["user"].nunique() >= 4 and df["filesystem"].nunique() >= 3
    assert set(df["mode"]) <= {"live", "replay", "recorded"}


# --- deployment (docs/jupyterhub.md) ------------------------------------------------------------

def _as_uid(uid: int, fn) -> int:
    """Run fn() in a forked child with this uid; the child's exit code (0 = fn returned True)."""
    pid = os.fork()
    if pid == 0:                       # pragma: no cover - runs in the child
        code = 1
        try:
            os.setgid(65534)
            os.setuid(uid)
            code = 0 if fn() else 1
        except BaseException:
            code = 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="switching users needs root")
def test_a_sticky_class_directory_lets_students_add_but_not_replace(tmp_path):
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="iolab-class-perm-", dir="/tmp"))
    try:
        os.chmod(shared, 0o1777)       # docs/jupyterhub.md: like /tmp, or 3770 with a class group
        one = frame(1)

        def save_as(user):
            def fn():
                results.save(one, tool="fio", directory=shared, user=user, fstype="ext4", tool_version="t")
                return True
            return fn

        def overwrite_other():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", results.ResultsWarning)   # cannot lock the other's lock file
                try:
                    results.save(one, tool="fio", directory=shared, user="stu-a", fstype="ext4", tool_version="t")
                except PermissionError:
                    return True
            return False

        assert _as_uid(65501, save_as("stu-a")) == 0
        assert _as_uid(65502, save_as("stu-b")) == 0
        assert _as_uid(65502, overwrite_other) == 0
        assert (shared / "stu-a.json").stat().st_uid == 65501
        df = results.load(shared)
        assert df.groupby("user").size().to_dict() == {"stu-a": 1, "stu-b": 1}
        assert not [p for p in shared.iterdir() if p.name.endswith(".tmp")]
    finally:
        import shutil

        shutil.rmtree(shared, ignore_errors=True)


def test_kernel_install_carries_class_settings(tmp_path):
    pytest.importorskip("ipykernel")
    r = subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(tmp_path), "--name", "iolab-test",
                        "--display-name", "iolab (test)", "--env", "IOLAB_RESULTS", "/shared/class/results"],
                       capture_output=True, text=True,
                       env={**os.environ, "TMPDIR": str(tmp_path)})    # ipykernel leaves an empty tmp*_kernels
    assert r.returncode == 0, r.stderr
    spec = json.loads((tmp_path / "share" / "jupyter" / "kernels" / "iolab-test" / "kernel.json").read_text())
    assert spec["env"] == {"IOLAB_RESULTS": "/shared/class/results"}
    assert spec["argv"][0] == sys.executable and "ipykernel_launcher" in spec["argv"]
