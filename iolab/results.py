"""Class results: every student's measurements in one shared directory, one file per user.

A class runs the same exercise (seed 001: mdtest on four filesystems) and compares what everyone
measured. Each student's kernel calls :func:`save` with a DataFrame and where it came from; the
instructor's notebook calls :func:`load` on the directory and gets one tidy DataFrame::

    results.save(df, tool="mdtest", path="/scratch/me/md", options=["-n", "10", "-i", "20", "-y"])
    everyone = results.load()                       # $IOLAB_RESULTS, across all users

The directory is ``$IOLAB_RESULTS`` (a path shared by the class, e.g. on NFS), else
``~/.local/share/iolab/results``. Layout and guarantees:

* one file per user, ``<user>.json``: no two students ever write the same file, so there is no
  write contention between them on a network filesystem;
* every write is atomic: the new content goes to a temporary file in the same directory, is
  flushed to disk and renamed over the old file (``os.replace``), so a reader sees the old file or
  the new one, never half of one; two kernels of the same user take turns with a POSIX lock;
* the file carries ``schema_version``; :func:`load` migrates older files through ``MIGRATIONS``
  and skips files from a newer iolab, or files that are corrupt or half-written (copied in by
  hand, a full disk), with a warning, never an exception.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import socket
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import doctor, fsinfo

SCHEMA_VERSION = 1
ENV = "IOLAB_RESULTS"

#: migrations[v] turns a file of schema v into schema v + 1 (a dict in, a dict out)
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

#: provenance columns added to each row by load(), in this order
PROVENANCE = ("user", "filesystem", "fstype", "fs_kind", "fs_path", "fs_options", "tool", "tool_version", "options",
              "mode", "host", "node", "recording", "notes", "saved_at", "measurement")

MODES = ("live", "replay", "recorded")


class ResultsWarning(UserWarning):
    """A results file was skipped or repaired while loading or saving."""


def results_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The class results directory: the argument, else ``$IOLAB_RESULTS``, else a private default."""
    if directory is not None:
        return Path(directory).expanduser()
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".local" / "share" / "iolab" / "results"


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:
        return str(os.getuid())


def _safe_user(user: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}", user or ""):
        raise ValueError(f"a user name for a results file is letters, digits and _.@- : {user!r}")
    return user


def user_file(directory: str | os.PathLike[str] | None = None, user: str | None = None) -> Path:
    return results_dir(directory) / f"{_safe_user(user or _user())}.json"


# --- JSON without surprises ---------------------------------------------------------------------

def _plain(v: Any) -> Any:
    """A JSON-friendly value: numpy scalars to Python, NaN to None, timestamps to ISO text."""
    if v is None or isinstance(v, (str, bool)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 0) == 0:   # numpy scalar
        return _plain(v.item())
    if hasattr(v, "isoformat"):
        try:
            return v.isoformat()
        except ValueError:     # NaT
            return None
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    try:
        import pandas as pd

        if pd.isna(v):
            return None
    except (TypeError, ValueError, ImportError):
        pass
    return str(v)


def _options_text(options: Any) -> str:
    if options is None:
        return ""
    if isinstance(options, str):
        return options
    if isinstance(options, Mapping):
        return " ".join(f"{k}={v}" for k, v in options.items())
    import shlex

    return shlex.join(str(o) for o in options)


# --- writing ------------------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """An exclusive POSIX lock (works on NFS with lockd/NFSv4); without locking, carry on."""
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        warnings.warn(f"cannot create {lock_path} ({e}); saving without a lock", ResultsWarning, stacklevel=3)
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
        except OSError as e:
            warnings.warn(f"cannot lock {lock_path} ({e}); saving without a lock", ResultsWarning, stacklevel=3)
        yield
    finally:
        os.close(fd)     # closing releases the lock


def atomic_write(path: Path, text: str, mode: int = 0o644) -> None:
    """Write text to path so that readers see the old content or the new, never a part."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _read_doc(path: Path) -> dict[str, Any]:
    """A results file as a dict at the current schema; raises ValueError if unusable."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"not readable JSON ({e})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("schema_version"), int) \
            or not isinstance(doc.get("measurements"), list):
        raise ValueError("not an iolab results file (no schema_version / measurements)")
    v = doc["schema_version"]
    if v > SCHEMA_VERSION:
        raise ValueError(f"written by a newer iolab (schema {v}, this one reads up to {SCHEMA_VERSION}): "
                         "update iolab to read it")
    while v < SCHEMA_VERSION:
        if v not in MIGRATIONS:
            raise ValueError(f"schema {v} is too old (no migration to {v + 1})")
        doc = MIGRATIONS[v](doc)
        v += 1
        doc["schema_version"] = v
    return doc


def save(frame: Any, *, tool: str, directory: str | os.PathLike[str] | None = None, user: str | None = None,
         path: str | os.PathLike[str] | None = None, filesystem: str | None = None, fstype: str | None = None,
         tool_version: str | None = None, options: Sequence[str] | Mapping[str, Any] | str | None = None,
         mode: str = "live", host: str | None = None, node: str | None = None, recording: str | None = None,
         notes: str = "", outcome: Any = None, file_mode: int = 0o644) -> str:
    """Append one measurement (a DataFrame, or a list of dicts) to this user's results file.

    path: the directory measured; its filesystem type, source and kind are looked up here.
    filesystem: a label for the filesystem (default: the mount point, e.g. "/scratch").
    mode: "live" (measured now), "replay" / "recorded" (a recording was replayed).
    outcome: an ``iolab.recordings.Outcome``: mode, recording and, for a replay, host, filesystem
    and tool version are taken from it. Returns the measurement's id.
    """
    import pandas as pd

    if mode not in MODES:
        raise ValueError(f"mode is one of {', '.join(MODES)}, got {mode!r}")
    rows_df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(list(frame))
    fs: dict[str, Any] = {}
    if outcome is not None:
        mode = getattr(outcome, "mode", mode)
        rec = getattr(outcome, "recording", None)
        if rec is not None:
            recording = recording or rec.ref
            meta = rec.meta
            tool_version = tool_version or meta.get("tool_version")
            host = host or (meta.get("host") or {}).get("hostname")
            fs = dict(meta.get("filesystem") or {})
    if path is not None:
        m = fsinfo.mount_of(path)
        fs = {"path": os.fspath(path), "fstype": m.fstype, "source": m.source, "kind": m.kind,
              "mountpoint": m.mountpoint, "options": m.options}
    if fstype:
        fs["fstype"] = fstype
    if fs.get("fstype") and "kind" not in fs:
        fs["kind"] = fsinfo.Mount("", fs["fstype"], "", "").kind
    fs["label"] = filesystem or fs.get("label") or fs.get("mountpoint") or fs.get("path") or fs.get("fstype") or ""
    user = _safe_user(user or _user())
    if tool_version is None and mode == "live":
        tool_version = doctor.tool_version(tool)
    measurement = {
        "id": uuid.uuid4().hex,
        "saved_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "user": user, "host": host or socket.gethostname(), "node": node,
        "filesystem": fs, "tool": tool, "tool_version": tool_version,
        "options": _plain(list(options) if isinstance(options, (list, tuple)) else options),
        "mode": mode, "recording": recording, "notes": notes,
        "columns": [str(c) for c in rows_df.columns],
        "rows": [_plain(r) for r in rows_df.to_dict(orient="records")],
    }
    d = results_dir(directory)
    d.mkdir(parents=True, exist_ok=True)
    target = d / f"{user}.json"
    with _locked(d / f".{user}.lock"):
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "user": user, "measurements": []}
        if target.exists():
            try:
                doc = _read_doc(target)
            except ValueError as e:
                aside = target.with_name(f"{target.name}.unreadable-{datetime.now():%Y%m%d-%H%M%S}")
                os.replace(target, aside)
                warnings.warn(f"{target} was unusable ({e}); kept it as {aside.name} and started a new file",
                              ResultsWarning, stacklevel=2)
        doc["schema_version"] = SCHEMA_VERSION
        doc["measurements"].append(measurement)
        atomic_write(target, json.dumps(doc, indent=1, allow_nan=False) + "\n", mode=file_mode)
    return measurement["id"]


# --- reading ------------------------------------------------------------------------------------

def _rows(doc: dict[str, Any], source: Path) -> list[dict[str, Any]]:
    out = []
    for i, m in enumerate(doc["measurements"]):
        if not isinstance(m, dict) or not isinstance(m.get("rows"), list) or not m.get("tool"):
            warnings.warn(f"{source.name}: measurement {i} is malformed; skipped", ResultsWarning, stacklevel=3)
            continue
        fs = m.get("filesystem") or {}
        prov = {"user": m.get("user") or doc.get("user"), "filesystem": fs.get("label") or fs.get("path"),
                "fstype": fs.get("fstype"), "fs_kind": fs.get("kind"), "fs_path": fs.get("path"),
                "fs_options": fs.get("options"),
                "tool": m.get("tool"), "tool_version": m.get("tool_version"),
                "options": _options_text(m.get("options")), "mode": m.get("mode"), "host": m.get("host"),
                "node": m.get("node"), "recording": m.get("recording"), "notes": m.get("notes", ""),
                "saved_at": m.get("saved_at"), "measurement": m.get("id")}
        for r in m["rows"]:
            if not isinstance(r, dict):
                continue
            row = dict(prov)
            # a measurement's own column wins (a Slurm job's per-row node and host, for instance)
            row.update({k: v for k, v in r.items() if not (k in prov and v is None)})
            out.append(row)
    return out


def load(directory: str | os.PathLike[str] | None = None, *, users: Sequence[str] | None = None):
    """Every user's measurements as one DataFrame (provenance columns first).

    Files that are corrupt, half-written, of a newer schema or not results at all are skipped
    with a :class:`ResultsWarning`; an empty or missing directory gives an empty DataFrame.
    """
    import pandas as pd

    d = results_dir(directory)
    rows: list[dict[str, Any]] = []
    files = sorted(p for p in d.glob("*.json") if not p.name.startswith(".")) if d.is_dir() else []
    for p in files:
        if users is not None and p.stem not in users:
            continue
        try:
            doc = _read_doc(p)
        except ValueError as e:
            warnings.warn(f"skipped {p.name}: {e}", ResultsWarning, stacklevel=2)
            continue
        rows.extend(_rows(doc, p))
    if not rows:
        return pd.DataFrame(columns=list(PROVENANCE))
    df = pd.DataFrame(rows)
    first = [c for c in PROVENANCE if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


# --- what a discussion starts from --------------------------------------------------------------

def summary(df: Any, value: str, by: Sequence[str] = ("filesystem",)):
    """Per group: how many measurements and students, median, min, max and the max/min spread."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=[*by, "n", "users", "median", "min", "max", "spread"])
    g = df.dropna(subset=[value]).groupby(list(by), dropna=False)
    out = g[value].agg(["count", "median", "min", "max"]).rename(columns={"count": "n"})
    out.insert(1, "users", g["user"].nunique() if "user" in df.columns else 1)
    out["spread"] = out["max"] / out["min"].where(out["min"] > 0)
    return out.reset_index()


def outliers(df: Any, value: str, by: Sequence[str] = ("filesystem",), *, threshold: float = 3.5,
             min_factor: float = 2.0, min_group: int = 4):
    """Rows far from their group's median, on a log scale (rates differ by factors, not offsets).

    Robust z = 0.6745 · (log x − median log x) / MAD(log x), per group of ``by`` with at least
    ``min_group`` rows; a row is an outlier when |z| > threshold and it is at least ``min_factor``
    times above or below the median (students who agree closely make the MAD tiny, and a 20 %
    difference is not what a discussion is about). Adds ``z`` and ``x_median`` (the row's value over
    its group's median), sorted by |z|.
    """
    import numpy as np
    import pandas as pd

    parts = []
    for _, g in df.dropna(subset=[value]).groupby(list(by), dropna=False):
        g = g[g[value] > 0]
        if len(g) < min_group:
            continue
        logv = np.log10(g[value].astype(float))
        med = logv.median()
        mad = (logv - med).abs().median()
        if mad == 0:
            continue
        z = 0.6745 * (logv - med) / mad
        far = (z.abs() > threshold) & ((logv - med).abs() >= np.log10(min_factor))
        sel = g[far].copy()
        sel["z"] = z[far]
        sel["x_median"] = sel[value] / 10 ** med
        parts.append(sel)
    if not parts:
        return df.iloc[0:0].assign(z=pd.Series(dtype=float), x_median=pd.Series(dtype=float))
    out = pd.concat(parts)
    return out.reindex(out["z"].abs().sort_values(ascending=False).index)
