"""iolab.results: one file per user, atomic writes, tolerant load, schema migrations."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import unix_users
from iolab import BudgetExceeded, results

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

CLASS_GROUP = f"ioltc{os.getpid() % 100000}"


@pytest.fixture(scope="module")
def klass():
    """Three real students of one class group (mallory, alice, bob)."""
    with unix_users.made(3, group=CLASS_GROUP) as people:
        yield people


@pytest.fixture
def shared(klass):
    """The class directory as docs/jupyterhub.md makes it: root:<class group>, mode 3770."""
    import grp

    d = Path(tempfile.mkdtemp(prefix="iolab-class-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None))
    os.chown(d, 0, grp.getgrnam(CLASS_GROUP).gr_gid)
    os.chmod(d, 0o3770)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _save(d, user=None, rows=1, **kw):
    def fn():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            results.save(frame(rows), tool="fio", directory=d, user=user, fstype="ext4", tool_version="t", **kw)
        return [str(w.message) for w in caught]
    return fn


def _load(d):
    def fn():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = results.load(d)
        return {"per_user": {str(k): int(v) for k, v in df.groupby("user").size().items()} if len(df) else {},
                "notes": sorted(set(df["notes"].dropna())) if len(df) else [],
                "warned": [str(w.message) for w in caught]}
    return fn


def _doc(user, notes="", **measurement):
    m = {"id": "x", "saved_at": "2026-01-01T00:00:00Z", "user": user, "host": "h", "node": None,
         "filesystem": {"label": "/scratch", "fstype": "ext4"}, "tool": "fio", "tool_version": "t", "options": [],
         "mode": "live", "recording": None, "notes": notes, "columns": ["rate"], "rows": [{"rate": 1.0}]}
    m.update(measurement)
    return json.dumps({"schema_version": 1, "user": user, "measurements": [m]})


@unix_users.needs_users
def test_students_add_but_never_replace_each_others_files(klass, shared):
    mallory, alice, bob = klass
    assert unix_users.as_user(alice, _save(shared)) == ("ok", [])
    assert unix_users.as_user(bob, _save(shared)) == ("ok", [])

    def replace_alices():
        try:
            os.replace(shared / f"{bob.pw_name}.json", shared / f"{alice.pw_name}.json")
        except PermissionError:
            return "refused"
        return "replaced"
    assert unix_users.as_user(bob, replace_alices) == ("ok", "refused")
    assert (shared / f"{alice.pw_name}.json").stat().st_uid == alice.pw_uid
    status, out = unix_users.as_user(None, _load(shared))
    assert out["per_user"] == {alice.pw_name: 1, bob.pw_name: 1} and out["warned"] == []
    assert not [p for p in shared.iterdir() if p.name.endswith(".tmp")]


@unix_users.needs_users
def test_a_file_made_first_under_someone_elses_name_neither_blocks_nor_speaks_for_them(klass, shared):
    mallory, alice, bob = klass
    # mallory saves "as alice" before alice does: the file alice.json is mallory's, its row says alice
    assert unix_users.as_user(mallory, _save(shared, user=alice.pw_name, notes="forged"))[0] == "ok"
    assert (shared / f"{alice.pw_name}.json").stat().st_uid == mallory.pw_uid
    status, told = unix_users.as_user(alice, _save(shared, notes="hers"))
    assert status == "ok", told                        # before: PermissionError, her save failed
    assert any("someone else created it" in t for t in told), told
    mine = [p for p in shared.glob(f"{alice.pw_name}.*.json")]
    assert len(mine) == 1 and mine[0].stat().st_uid == alice.pw_uid
    assert unix_users.as_user(alice, _save(shared, notes="hers"))[0] == "ok"      # the same file again
    assert [p.name for p in shared.glob(f"{alice.pw_name}.*.json")] == [mine[0].name]
    status, out = unix_users.as_user(None, _load(shared))
    assert out["per_user"] == {alice.pw_name: 2}, out  # before: the forged row counted as alice's
    assert out["notes"] == ["hers"]
    assert any(mallory.pw_name in w and "nobody may speak for someone else" in w for w in out["warned"])


@unix_users.needs_users
def test_rows_in_a_students_own_file_that_claim_someone_else_are_not_theirs(klass, shared):
    mallory, alice, bob = klass

    def forge():
        (shared / f"{mallory.pw_name}.json").write_text(_doc(alice.pw_name, notes="forged"))
        return True
    assert unix_users.as_user(mallory, forge) == ("ok", True)
    # a row's own "user" column does not decide either
    assert unix_users.as_user(bob, _save(shared))[0] == "ok"
    doc = json.loads((shared / f"{bob.pw_name}.json").read_text())
    doc["measurements"][0]["rows"][0]["user"] = alice.pw_name

    def bob_rewrites():
        (shared / f"{bob.pw_name}.json").write_text(json.dumps(doc))
        return True
    assert unix_users.as_user(bob, bob_rewrites) == ("ok", True)
    status, out = unix_users.as_user(None, _load(shared))
    assert alice.pw_name not in out["per_user"], out   # before: the loader trusted the field
    assert out["per_user"] == {bob.pw_name: 1}


@unix_users.needs_users
def test_a_lock_file_someone_else_holds_does_not_block_a_save(klass, shared):
    import fcntl

    mallory, alice, bob = klass
    lock = shared / f".{alice.pw_name}.lock"

    def make_lock():
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        os.fchmod(fd, 0o666)
        os.close(fd)
        return True
    assert unix_users.as_user(mallory, make_lock) == ("ok", True)
    fd = os.open(lock, os.O_RDWR)                      # and holds it (for the test, this process does)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        status, told = unix_users.as_user(alice, _save(shared), timeout=60)
        assert status == "ok", (status, told)          # before: the save waited forever
        assert any("saving without a lock" in t for t in told), told
    finally:
        os.close(fd)
    assert unix_users.as_user(None, _load(shared))[1]["per_user"] == {alice.pw_name: 1}


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_lock_file_that_is_no_regular_file_neither_blocks_nor_is_followed(tmp_path, kind):
    # the lock is opened through safeio.open_regular: a FIFO there does not block the save, a symlink is
    # not followed (nor its target created or locked); the save goes on without a lock and says so
    lock, target = tmp_path / ".ann.lock", tmp_path / "elsewhere"
    os.mkfifo(lock) if kind == "fifo" else lock.symlink_to(target)
    with pytest.warns(results.ResultsWarning, match="saving without a lock"):
        results.save(frame(1), tool="fio", directory=tmp_path, user="ann")
    assert len(results.load(tmp_path)) == 1 and not target.exists()


def test_a_lock_held_too_long_times_out(tmp_path, monkeypatch):

    monkeypatch.setattr(results, "LOCK_TIMEOUT", 0.5)
    results.save(frame(1), tool="fio", directory=tmp_path, user="ann")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR);"
                               " fcntl.lockf(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(120)",
                               str(tmp_path / ".ann.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(results.LockTimeout, match="another of your kernels"):
            results.save(frame(1), tool="fio", directory=tmp_path, user="ann")
    finally:
        holder.kill()
        holder.wait()
    assert len(results.load(tmp_path)) == 1


def _poison(kind: str, d: Path, secret: Path):
    def fn():
        p = d / f"{kind}.json"
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "dev-zero":
            os.symlink("/dev/zero", p)
        elif kind == "root-only":
            os.symlink(secret, p)
        elif kind == "nested":
            p.write_text("[" * 100_000 + "]" * 100_000)
        elif kind == "wrong-type":
            p.write_text(_doc(os.environ["USER"], filesystem="not an object"))
        elif kind == "oversized":
            p.write_text(_doc(os.environ["USER"], notes="x" * (results.MAX_BYTES + 1)))
        return True
    return fn


@unix_users.needs_users
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "root-only", "nested", "wrong-type", "oversized"])
def test_a_poisoned_file_cannot_hang_exhaust_or_fool_the_instructors_load(klass, shared, kind, tmp_path):
    mallory, alice, bob = klass
    secret = tmp_path / "secret.json"                  # a file only root may read
    secret.write_text(_doc("root-secret", notes="SECRET"))
    os.chmod(secret, 0o600)
    assert unix_users.as_user(alice, _save(shared))[0] == "ok"
    assert unix_users.as_user(mallory, _poison(kind, shared, secret)) == ("ok", True)
    # the instructor is root; a load gets a minute and 1 GiB beyond what it has
    status, out = unix_users.as_user(None, _load(shared), timeout=60, more_memory=1 << 30)
    assert status == "ok", (status, out)               # before: a hang, MemoryError, RecursionError, AttributeError
    assert out["per_user"] == {alice.pw_name: 1} and "SECRET" not in out["notes"], out
    assert any(f"{kind}.json" in w for w in out["warned"]), out["warned"]


def test_save_bounds_what_it_puts_into_the_class_directory(tmp_path):
    big = pd.DataFrame({"pad": ["x" * 1000] * (results.MAX_BYTES // 1000 + 10)})
    with pytest.raises(BudgetExceeded, match="MAX_BYTES"):
        results.save(big, tool="fio", directory=tmp_path, user="amy")
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == []     # nothing written
    results.save(frame(1), tool="fio", directory=tmp_path, user="amy")
    with pytest.raises(BudgetExceeded):
        results.save(big, tool="fio", directory=tmp_path, user="amy")
    assert len(results.load(tmp_path)) == 1            # the file kept what it had
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= results.MAX_BYTES


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


# --- one member of the class counts once (issue 32: 20,000 valid files made the class median theirs) ---

def _unused_uid(start: int) -> int:
    """The first uid from start that no account has (a file's owner named by its number)."""
    import pwd
    uid = start
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


def _flood(d: Path, uid: int, name: str, files: int, rows: int, rate: float) -> None:
    """files valid results files owned by uid, each of rows measurements of one row each at rate."""
    ms = [{"id": f"m{i}", "saved_at": "2026-01-01T00:00:00Z", "user": name, "host": "h", "node": None,
           "filesystem": {"label": "/scratch", "fstype": "ext4"}, "tool": "mdtest", "tool_version": "t",
           "options": [], "mode": "live", "recording": None, "notes": "", "columns": ["rate"],
           "rows": [{"rate": rate}]} for i in range(rows)]
    text = json.dumps({"schema_version": 1, "user": name, "measurements": ms})
    for i in range(files):
        p = d / f"{name}.{i:05d}.json"
        p.write_text(text)
        os.chown(p, uid, uid)


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another owner need root to make")
def test_one_owner_with_many_valid_files_counts_once(tmp_path):
    uid = _unused_uid(54321)                      # a uid nobody has here: its name is the number
    name = str(uid)
    for i, user in enumerate(["ann", "bob", "cem", "dee", "eve"]):
        # five honest students (files of the loader's own, as recorded class data), about 100 ops/s
        (tmp_path / f"{user}.json").write_text(_doc(user, rows=[{"rate": 100.0 + i}]))
    _flood(tmp_path, uid, name, files=2000, rows=50, rate=1e6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = results.load(tmp_path)
    per_user = df.groupby("user").size()
    assert per_user[name] <= results.MAX_FILES_PER_OWNER * 50, per_user
    assert per_user[name] <= results.MAX_ROWS_PER_USER
    assert len(caught) <= 3, [str(w.message) for w in caught][:5]   # one per cut, not one per file
    assert any("owns 2000 results files" in str(w.message) for w in caught)
    s = results.summary(df, "rate").set_index("filesystem")
    assert 100 <= s.loc["/scratch", "median"] <= 104, s          # the class's median, not the flooder's
    assert s.loc["/scratch", "users"] == 6
    out = results.outliers(df, "rate", threshold=3.0)
    assert set(out["user"]) == {name}, out[["user", "rate"]]


def test_many_rows_of_one_user_are_capped_and_do_not_move_the_median(tmp_path):
    rows = [{"rate": 1e6}] * (results.MAX_ROWS_PER_USER + 10)
    (tmp_path / "mal.json").write_text(_doc("mal", rows=rows))
    for i, user in enumerate(["ann", "bob", "cem"]):
        (tmp_path / f"{user}.json").write_text(_doc(user, rows=[{"rate": 10.0 + i}]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = results.load(tmp_path)
    assert (df["user"] == "mal").sum() == results.MAX_ROWS_PER_USER
    assert [str(w.message) for w in caught if "mal" in str(w.message)] and len(caught) == 1
    s = results.summary(df, "rate").set_index("filesystem")
    assert s.loc["/scratch", "median"] == 11.5 and s.loc["/scratch", "n"] == results.MAX_ROWS_PER_USER + 3


def test_many_malformed_measurements_give_one_warning(tmp_path):
    doc = json.loads(_doc("ann"))
    doc["measurements"] = doc["measurements"] + [{"id": i} for i in range(3000)]
    (tmp_path / "ann.json").write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = results.load(tmp_path)
    assert len(df) == 1 and len(caught) == 1 and "3000 malformed" in str(caught[0].message)


# --- one member cannot break the class's columns (issue 32's adversarial run) -----------------------

def _hostile(kind: str, user: str) -> str:
    """A results file of mdtest rows as a member could write by hand: valid JSON of plain values, with
    one column of another kind than the class's (or thousands of column names)."""
    ops = ["directory creation", "file creation", "file stat", "file removal"]
    row = {"operation": "file creation", "max": 5000.0, "min": 1000.0, "mean": 3000.0, "stddev": 1.0,
           "unit": "ops/s", "iterations": 20.0, "tasks": 1.0, "items": 10.0, "task": 0}
    rows = {"text-mean": [dict(row, operation=op, mean="9e9") for op in ops],
            "bool-mean": [dict(row, operation=op, mean=True) for op in ops],
            "number-operation": [dict(row, operation=7)] + [dict(row, operation=op) for op in ops],
            "text-tasks": [dict(row, operation=op, tasks="many") for op in ops],
            "number-tool": [dict(row, operation=op, tool=3) for op in ops],
            "number-mode": [dict(row, operation=op, mode=3) for op in ops],
            "null-operation": [dict(row, operation=None)] + [dict(row, operation=op) for op in ops],
            "null-mode": [dict(row, operation=op) for op in ops],
            "many-columns": [dict(row, **{f"k{j}_{i}": 1 for i in range(30)}) for j in range(2000)]}[kind]
    return _doc(user, rows=rows, tool="mdtest", options=["-n", "10", "-i", "20", "-y"],
                filesystem={"label": "local-ext4", "fstype": "ext4"}, columns=[],
                mode=None if kind == "null-mode" else "live")


def _instructor(d: Path):
    """What the instructor's notebook does with the class directory: load, sort its tools, modes and
    operations, the summary, the configurations, the outliers and their causes, a strip."""
    def fn():
        from iolab.lessons.class_results import analysis, plots
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = results.load(d)
        tools, modes = sorted(df["tool"].unique()), sorted(df["mode"].dropna().unique())   # as the notebook
        md = df[df["tool"] == "mdtest"]
        ops = sorted(md["operation"].dropna().unique())
        create = md[md["operation"] == "file creation"]
        s = results.summary(create, "mean", by=["filesystem", "fstype"]).set_index("filesystem")
        analysis.class_configs(md)
        common = analysis.common_config(md)
        ", ".join(f"{k}={v!r}" if k == "options" else f"{k}={v:g}" for k, v in common.items())
        out = results.outliers(md, "mean", by=["filesystem", "operation"], threshold=3.0, min_factor=2.0)
        analysis.outlier_causes(md, out)
        plots.class_strip(create, "mean", unit="ops/s", title="file creation")
        return {"tools": tools, "modes": modes, "ops": len(ops), "columns": len(df.columns),
                "median": {str(k): float(v) for k, v in s["median"].items()},
                "warned": [str(w.message) for w in caught]}
    return fn


@unix_users.needs_users
@pytest.mark.parametrize("kind", ["text-mean", "bool-mean", "number-operation", "text-tasks", "number-tool",
                                  "number-mode", "null-operation", "null-mode", "many-columns"])
def test_one_members_values_of_another_kind_or_thousands_of_columns_do_not_break_the_instructors_notebook(
        klass, shared, kind):
    """Before: a member's "mean": "9e9" failed summary (TypeError: agg function failed), "operation": 7 or
    "tool": 3 every sort of the column, "tasks": "many" common_config's format, True counted as 1 ops/s, and
    2,000 rows of 30 new column names each made a frame of 60,000 columns (MemoryError within 1 GiB)."""
    mallory, alice, bob = klass
    recorded = ROOT / "data" / "recorded" / "class" / "results"
    for p in recorded.glob("*.json"):                      # the class: recorded files, as root's
        shutil.copy(p, shared / p.name)
    base = unix_users.as_user(None, _instructor(shared), timeout=120)
    assert base[0] == "ok", base

    def write():
        (shared / f"{os.environ['USER']}.json").write_text(_hostile(kind, os.environ["USER"]))
        return True
    assert unix_users.as_user(mallory, write) == ("ok", True)
    status, out = unix_users.as_user(None, _instructor(shared), timeout=120, more_memory=1 << 30)
    assert status == "ok", out
    assert out["tools"] == base[1]["tools"] and out["modes"] == base[1]["modes"], out
    assert out["columns"] <= base[1]["columns"] + results.MAX_COLUMNS_PER_USER
    if kind in ("text-mean", "bool-mean"):                  # the member's value is missing, the class's median kept
        assert out["median"] == base[1]["median"], (out["median"], base[1]["median"])
    mine = [w for w in out["warned"] if mallory.pw_name in w]
    assert len(mine) <= 2, out["warned"]                    # at most one warning per cut, naming the member
    if kind not in ("null-operation", "null-mode", "number-tool", "number-mode"):   # a missing value is no cut
        assert mine, out["warned"]
    assert not [w for w in out["warned"] if mallory.pw_name not in w], out["warned"]


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another owner need root to make")
def test_one_member_cannot_swell_the_class_into_thousands_of_groups(tmp_path):
    # the walkthrough (issue 32): 3,000 distinct filesystem labels of one member swelled every summary
    uid = _unused_uid(54400)
    ms = [{"id": f"m{i}", "saved_at": "2026-01-01T00:00:00Z", "user": str(uid), "host": "h", "node": None,
           "filesystem": {"label": f"/fs{i}", "fstype": "ext4"}, "tool": "mdtest", "tool_version": "t",
           "options": [], "mode": "live", "recording": None, "notes": "", "columns": ["rate", "operation"],
           "rows": [{"rate": 1.0, "operation": f"op{i}"}]} for i in range(3000)]
    p = tmp_path / f"{uid}.json"
    p.write_text(json.dumps({"schema_version": 1, "user": str(uid), "measurements": ms}))
    os.chown(p, uid, uid)
    (tmp_path / "ann.json").write_text(_doc("ann", rows=[{"rate": 5.0, "operation": f"op{i}"} for i in range(40)]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = results.load(tmp_path)
    mine = df[df["user"] == str(uid)]
    assert mine["filesystem"].nunique() <= results.MAX_LABELS_PER_USER
    assert mine["operation"].nunique() <= results.MAX_LABELS_PER_USER
    assert (df["user"] == "ann").sum() == 40           # files of the loader's own are not cut
    assert sum("MAX_LABELS_PER_USER" in str(w.message) for w in caught) == 1
    assert len(results.summary(df, "rate", by=["filesystem"])) <= results.MAX_LABELS_PER_USER + 1
