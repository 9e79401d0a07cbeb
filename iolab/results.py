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

In a directory the whole class can write, nobody may speak for someone else:

* a file's **owner** decides whose rows it holds: :func:`load` takes a file that belongs to another
  user as that user's, and skips (with a warning) measurements in it that claim to be someone
  else's; files of the loader's own and of root are taken as they are (recorded class data);
* only regular files of at most ``MAX_BYTES`` are read (opened without following a symlink, never
  blocking on a FIFO), and a file whose JSON nests too deep or holds a field of the wrong type is
  skipped, as corrupt;
* a save never writes more than ``MAX_BYTES`` into the directory (:class:`BudgetExceeded`); when
  ``<user>.json`` was created by someone else, it goes to a private name (``<user>.<random>.json``)
  instead; its lock is used only when it is the user's own regular file, and waited for at most
  ``LOCK_TIMEOUT`` seconds;
* one member of the class counts once: :func:`load` reads at most ``MAX_FILES_PER_OWNER`` files of
  each other owner, ``MAX_ROWS_PER_USER`` rows and ``MAX_COLUMNS_PER_USER`` column names of each user,
  with one warning per cut (never one per file or row), and :func:`summary` / :func:`outliers` take
  their centre from each student's own median, so many rows of one student cannot become the class's
  median;
* and cannot break the class's columns: in a column where most students hold numbers (or text), a
  student's text (or numbers, or True/False) is read as missing, with one warning per student, so one
  member's ``"mean": "fast"`` or ``"operation": 7`` neither fails the instructor's medians and sorts nor
  speaks for the column (a tie is decided by the files of root and of the loader, else for numbers).
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import pwd
import re
import secrets
import socket
import stat
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from . import doctor, fsinfo, safeio
from .errors import BudgetExceeded, IolabError, ParseError
from .units import MiB, format_size

SCHEMA_VERSION = 1
ENV = "IOLAB_RESULTS"

#: the largest results file save writes and load reads (a class's mdtest exercise is about 90 KB)
MAX_BYTES = 2 * MiB
# what one member of a class counts for, however many valid files they write into the shared directory:
# a save writes <user>.json, or <user>.<random>.json when someone else made that name first, so a
# student has one file or two; and a student's own measurements are a few hundred rows
MAX_FILES_PER_OWNER = 4
MAX_ROWS_PER_USER = 5000
# and the columns: a class's mdtest and fio rows have about 50 (and 16 of provenance); a member whose rows
# carry thousands of distinct names would make the class's frame rows x columns big (60,000 columns of one
# member's 2,000 rows: over a GiB)
MAX_COLUMNS_PER_USER = 256
# and the groups a class is compared in: a student measures a few filesystems and operations, so one
# member's thousands of labels would only swell every summary and chart (rows of other owners only)
MAX_LABELS_PER_USER = 32
LABELLED = ("filesystem", "operation", "tool")
#: how long a save waits for another kernel of the same user to finish its own
LOCK_TIMEOUT = 30.0

#: migrations[v] turns a file of schema v into schema v + 1 (a dict in, a dict out)
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

#: provenance columns added to each row by load(), in this order
PROVENANCE = ("user", "filesystem", "fstype", "fs_kind", "fs_path", "fs_options", "tool", "tool_version", "options",
              "mode", "host", "node", "recording", "notes", "saved_at", "measurement")

MODES = ("live", "replay", "recorded")


class ResultsWarning(UserWarning):
    """A results file was skipped or repaired while loading or saving."""


class LockTimeout(IolabError, TimeoutError):
    """Another process of the same user held the results file's lock for longer than LOCK_TIMEOUT."""


def results_dir(directory: str | os.PathLike[str] | None = None) -> Path:
    """The class results directory: the argument, else ``$IOLAB_RESULTS``, else a private default."""
    if directory is not None:
        return Path(directory).expanduser()
    env = os.environ.get(ENV)
    if env:
        return Path(env).expanduser()
    return Path.home() / ".local" / "share" / "iolab" / "results"


def _user() -> str:
    """The name the loader will see as the owner of this user's files (the euid's login name)."""
    import getpass

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        pass
    try:
        return getpass.getuser()
    except Exception:
        return str(os.geteuid())


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _safe_user(user: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}", user or ""):
        raise ValueError(f"a user name for a results file is letters, digits and _.@- : {user!r}")
    return user


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


# --- safe reading -------------------------------------------------------------------------------

_SCALAR = (str, int, float, bool, type(None))


def _read_bounded(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of a regular file of at most MAX_BYTES with one link, and its status, read through
    :func:`iolab.safeio.read_regular` (ParseError, a ValueError, if not)."""
    return safeio.read_regular(path, limit=MAX_BYTES, what="results file", max_links=1)


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise ParseError(f"not an iolab results file: {what}")


def _scalars(v: Any) -> bool:
    return isinstance(v, _SCALAR)


def _valid_measurement(m: Any) -> str:
    """Why m is not a measurement save could have written ("" when it is)."""
    if not isinstance(m, dict):
        return "not an object"
    if not isinstance(m.get("rows"), list) or not m.get("tool") or not isinstance(m.get("tool"), str):
        return "no rows or no tool"
    for key in ("id", "saved_at", "user", "host", "tool_version", "mode", "recording", "notes"):
        if not isinstance(m.get(key), (str, type(None))):
            return f"{key} is a {type(m[key]).__name__}, not text"
    if not isinstance(m.get("node"), (str, int, type(None))) or isinstance(m.get("node"), bool):
        return "node is neither text nor a number"
    fs = m.get("filesystem")
    if fs is not None and not (isinstance(fs, dict) and all(_scalars(v) for v in fs.values())):
        return "filesystem is not an object of plain values"
    opts = m.get("options")
    if not (opts is None or isinstance(opts, str)
            or (isinstance(opts, list) and all(_scalars(o) for o in opts))
            or (isinstance(opts, dict) and all(_scalars(o) for o in opts.values()))):
        return "options are not text, a list or an object of plain values"
    cols = m.get("columns")
    if cols is not None and not (isinstance(cols, list) and all(isinstance(c, str) for c in cols)):
        return "columns are not a list of names"
    for r in m["rows"]:
        if not isinstance(r, dict) or not all(_scalars(v) for v in r.values()):
            return "a row is not an object of plain values"
    return ""


def _parse_doc(data: bytes) -> dict[str, Any]:
    """A results file's bytes as a dict at the current schema; ParseError (a ValueError) if unusable."""
    doc = safeio.loads(safeio.decode(data, what="results file"), what="results file")
    _check(isinstance(doc, dict) and isinstance(doc.get("schema_version"), int)
           and not isinstance(doc.get("schema_version"), bool) and isinstance(doc.get("measurements"), list),
           "no schema_version / measurements")
    _check(isinstance(doc.get("user"), (str, type(None))), "user is not text")
    v = doc["schema_version"]
    if v > SCHEMA_VERSION:
        raise ParseError(f"written by a newer iolab (schema {v}, this one reads up to {SCHEMA_VERSION}): "
                         "update iolab to read it")
    while v < SCHEMA_VERSION:
        if v not in MIGRATIONS:
            raise ParseError(f"schema {v} is too old (no migration to {v + 1})")
        doc = MIGRATIONS[v](doc)
        v += 1
        doc["schema_version"] = v
    return doc


def _read_doc(path: Path) -> dict[str, Any]:
    """A results file as a dict at the current schema; raises ValueError (ParseError) if unusable."""
    return _parse_doc(_read_bounded(path)[0])


# --- writing ------------------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(lock_path: Path, timeout: float | None = None) -> Iterator[None]:
    """An exclusive POSIX lock (works on NFS with lockd/NFSv4) on the user's own lock file, waited for
    at most ``timeout`` s (:class:`LockTimeout`). A lock file that is not this user's regular file
    (someone else made it first, a symlink, a FIFO) is not used: the save goes on without it."""
    timeout = LOCK_TIMEOUT if timeout is None else timeout
    try:
        fd, st = safeio.open_regular(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as e:
        warnings.warn(f"cannot use {lock_path} ({e.strerror or e}); saving without a lock", ResultsWarning,
                      stacklevel=3)
        yield
        return
    try:
        if st.st_uid != os.geteuid():
            warnings.warn(f"{lock_path} belongs to {_owner(st.st_uid)}, not to you: someone else made it, and "
                          "could hold it forever; saving without a lock", ResultsWarning, stacklevel=3)
            yield
            return
        deadline = time.monotonic() + timeout
        locked = False
        while not locked:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                locked = True
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EAGAIN):
                    warnings.warn(f"cannot lock {lock_path} ({e}); saving without a lock", ResultsWarning,
                                  stacklevel=3)
                    break
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"another of your kernels has held {lock_path} for over {timeout:g} s: "
                                      "let it finish (or restart it), then save again") from None
                time.sleep(0.05)
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


def _mine(path: Path) -> bool | None:
    """True: path is this user's own regular file with one link; None: there is nothing there; False:
    something else is (another user's file, a symlink, a FIFO, a directory)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_nlink <= 1


def _own_file(d: Path, user: str) -> tuple[Path, str]:
    """The file this user's rows go to: ``<user>.json`` unless someone else took that name first, then
    this user's own ``<user>.<random>.json`` (an existing one, or a new name). Also why, or ""."""
    target = d / f"{user}.json"
    if _mine(target) is not False:
        return target, ""
    try:
        st = os.lstat(target)
        what = "a symlink" if stat.S_ISLNK(st.st_mode) else \
            f"a file of {_owner(st.st_uid)}'s" if st.st_uid != os.geteuid() else "not a plain file of yours"
    except OSError:
        what = "not yours"
    pattern = re.compile(re.escape(user) + r"\.[0-9a-f]{8}\.json")
    with contextlib.suppress(OSError):
        for e in sorted(os.scandir(d), key=lambda e: e.name):
            if pattern.fullmatch(e.name) and _mine(Path(e.path)):
                return Path(e.path), what
    return d / f"{user}.{secrets.token_hex(4)}.json", what


def user_file(directory: str | os.PathLike[str] | None = None, user: str | None = None) -> Path:
    """The file :func:`save` writes this user's rows to (``<user>.json``, unless someone else took it)."""
    return _own_file(results_dir(directory), _safe_user(user or _user()))[0]


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
    with _locked(d / f".{user}.lock"):
        target, why = _own_file(d, user)
        if why:
            warnings.warn(f"{d / (user + '.json')} is {why}: someone else created it, and it is not read as "
                          f"yours. Your results go to {target.name} instead (load() counts a file as its "
                          "owner's, whatever its name); tell the instructor.", ResultsWarning, stacklevel=2)
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "user": user, "measurements": []}
        if _mine(target):
            try:
                doc = _read_doc(target)
            except ValueError as e:
                aside = target.with_name(f"{target.name}.unreadable-{datetime.now():%Y%m%d-%H%M%S}")
                for old in d.glob(f"{glob_escape(target.name)}.unreadable-*"):   # keep one aside, not many
                    if _mine(old):
                        old.unlink()
                os.replace(target, aside)
                warnings.warn(f"{target} was unusable ({e}); kept it as {aside.name} and started a new file",
                              ResultsWarning, stacklevel=2)
        doc["schema_version"] = SCHEMA_VERSION
        doc["measurements"].append(measurement)
        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
        size = len(text.encode())
        if size > MAX_BYTES:
            raise BudgetExceeded(
                f"saving this measurement would take {target} to {format_size(size)}, over the "
                f"{format_size(MAX_BYTES)} a student's results file may hold in the class directory "
                f"(results.MAX_BYTES). Save fewer rows (a summary per operation), or delete {target.name} "
                "to start over.")
        atomic_write(target, text, mode=file_mode)
    return measurement["id"]


# --- reading ------------------------------------------------------------------------------------

def _rows(doc: dict[str, Any], source: Path, owner: str | None = None) -> list[dict[str, Any]]:
    """The rows of a results file; with owner (a file of another user's), only the measurements that
    say they are owner's, all as owner's."""
    out = []
    malformed: list[str] = []
    foreign: list[str] = []
    for i, m in enumerate(doc["measurements"]):
        why = _valid_measurement(m)
        if why:
            malformed.append(f"measurement {i} ({why})")
            continue
        claimed = m.get("user") or doc.get("user")
        if owner is not None and claimed != owner:
            foreign.append(f"measurement {i} says it is {claimed}'s")
            continue
        fs = m.get("filesystem") or {}
        prov = {"user": claimed, "filesystem": fs.get("label") or fs.get("path"),
                "fstype": fs.get("fstype"), "fs_kind": fs.get("kind"), "fs_path": fs.get("path"),
                "fs_options": fs.get("options"),
                "tool": m.get("tool"), "tool_version": m.get("tool_version"),
                "options": _options_text(m.get("options")), "mode": m.get("mode"), "host": m.get("host"),
                "node": m.get("node"), "recording": m.get("recording"), "notes": m.get("notes", ""),
                "saved_at": m.get("saved_at"), "measurement": m.get("id")}
        for r in m["rows"]:
            row = dict(prov)
            # a measurement's own column wins (a Slurm job's per-row node and host, for instance), but
            # never over whose it is, and over provenance only with text (a node also with its number)
            row.update({k: v for k, v in r.items() if k != "user" and (
                k not in prov or isinstance(v, str) or (k == "node" and _kind(v) == "number"))})
            out.append(row)
    # one warning per file and kind, however many measurements it holds
    if malformed:
        warnings.warn(f"{source.name}: {len(malformed)} malformed measurement(s) skipped, the first: "
                      f"{malformed[0]}", ResultsWarning, stacklevel=3)
    if foreign:
        warnings.warn(f"{source.name}: {len(foreign)} measurement(s) skipped that claim to be someone else's "
                      f"(the file belongs to {owner}: nobody may speak for someone else), the first: "
                      f"{foreign[0]}", ResultsWarning, stacklevel=3)
    return out


def _capped_files(d: Path) -> list[tuple[Path, os.stat_result]]:
    """The results files of d to read, with their lstat: every file of the loader's and root's, and at
    most MAX_FILES_PER_OWNER of each other owner (their own <user>.json first), so that one member of the
    class cannot outweigh the rest by writing many valid files; one warning per owner cut."""
    trusted = {0, os.geteuid()}
    by_owner: dict[int, list[tuple[Path, os.stat_result]]] = {}
    for p in sorted(d.glob("*.json")):
        if p.name.startswith("."):
            continue
        try:
            st = os.lstat(p)
        except OSError:
            continue
        by_owner.setdefault(st.st_uid, []).append((p, st))
    keep: list[tuple[Path, os.stat_result]] = []
    for uid, found in by_owner.items():
        if uid in trusted or len(found) <= MAX_FILES_PER_OWNER:
            keep.extend(found)
            continue
        name = _owner(uid)
        found.sort(key=lambda f: (f[0].stem != name, f[0].name))
        keep.extend(found[:MAX_FILES_PER_OWNER])
        warnings.warn(f"{name} owns {len(found)} results files here; only {MAX_FILES_PER_OWNER} are read "
                      f"({', '.join(f[0].name for f in found[:MAX_FILES_PER_OWNER])}): one member of the class "
                      f"counts once", ResultsWarning, stacklevel=3)
    return sorted(keep, key=lambda f: f[0].name)


def load(directory: str | os.PathLike[str] | None = None, *, users: Sequence[str] | None = None):
    """Every user's measurements as one DataFrame (provenance columns first).

    Files that are corrupt, half-written, of a newer schema, not results at all, not regular files,
    or over ``MAX_BYTES`` are skipped with a :class:`ResultsWarning`; an empty or missing directory
    gives an empty DataFrame. A file of another user's holds that user's rows only (measurements in it
    that claim someone else are skipped with a warning); files of yours and of root are taken as they
    are. ``users``: keep only these users' rows.
    """
    import pandas as pd

    d = results_dir(directory)
    trusted = {0, os.geteuid()}
    rows: list[dict[str, Any]] = []
    per_user: dict[Any, int] = {}
    cut: dict[Any, int] = {}
    labels: dict[Any, dict[str, set[Any]]] = {}
    cut_labels: dict[Any, set[str]] = {}
    columns: dict[Any, set[str]] = {}
    cut_columns: dict[Any, set[str]] = {}
    trusted_users: set[Any] = set()
    files = [p for p, _st in _capped_files(d)] if d.is_dir() else []
    for p in files:
        try:
            data, st = _read_bounded(p)
            doc = _parse_doc(data)
        except ValueError as e:
            warnings.warn(f"skipped {p.name}: {e}", ResultsWarning, stacklevel=2)
            continue
        owner = None if st.st_uid in trusted else _owner(st.st_uid)
        if owner is not None and p.stem != owner and not p.stem.startswith(owner + "."):
            warnings.warn(f"{p.name} belongs to {owner}: a file under someone else's name; only rows of "
                          f"{owner}'s in it are read, as {owner}'s", ResultsWarning, stacklevel=2)
        for r in _rows(doc, p, owner):
            if users is not None and r["user"] not in users:
                continue
            n = per_user.get(r["user"], 0)
            if n >= MAX_ROWS_PER_USER:
                cut[r["user"]] = cut.get(r["user"], 0) + 1
                continue
            if owner is not None:
                seen = labels.setdefault(r["user"], {})
                over = [c for c in LABELLED if r.get(c) is not None and r[c] not in seen.setdefault(c, set())
                        and len(seen[c]) >= MAX_LABELS_PER_USER]
                if over:
                    cut_labels.setdefault(r["user"], set()).update(over)
                    continue
                for c in LABELLED:
                    if r.get(c) is not None:
                        seen[c].add(r[c])
            per_user[r["user"]] = n + 1
            if owner is None:
                trusted_users.add(r["user"])
            else:
                known = columns.setdefault(r["user"], set())
                for k in [k for k in r if k not in known and k not in PROVENANCE]:
                    if len(known) < MAX_COLUMNS_PER_USER:
                        known.add(k)
                    else:
                        del r[k]
                        cut_columns.setdefault(r["user"], set()).add(k)
            rows.append(r)
    for user, n in cut.items():
        warnings.warn(f"{user}: {n} rows beyond the first {MAX_ROWS_PER_USER} were not read (MAX_ROWS_PER_USER: "
                      f"one member of the class counts once)", ResultsWarning, stacklevel=2)
    for user, cols in cut_labels.items():
        warnings.warn(f"{user}: rows with more than {MAX_LABELS_PER_USER} different values of {', '.join(sorted(cols))} "
                      f"were not read beyond the first {MAX_LABELS_PER_USER} (MAX_LABELS_PER_USER)", ResultsWarning,
                      stacklevel=2)
    for user, names in cut_columns.items():
        warnings.warn(f"{user}: {len(names)} column names beyond the first {MAX_COLUMNS_PER_USER} were not read "
                      f"(MAX_COLUMNS_PER_USER), such as {sorted(names)[0]!r}", ResultsWarning, stacklevel=2)
    _agree_on_kinds(rows, trusted_users)
    if not rows:
        return pd.DataFrame(columns=list(PROVENANCE))
    df = pd.DataFrame(rows)
    first = [c for c in PROVENANCE if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def _kind(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    return "text"


def _agree_on_kinds(rows: list[dict[str, Any]], trusted: set[Any]) -> None:
    """In each column, the kind of value (number, text, bool) most students hold; another student's values
    of another kind become None (missing), with one warning per student. A tie goes to the kind of the
    rows of root's and the loader's files, else to numbers, else to text."""
    held: dict[str, dict[str, set[Any]]] = {}
    for r in rows:
        for k, v in r.items():
            kind = _kind(v)
            if kind is not None:
                held.setdefault(k, {}).setdefault(kind, set()).add(r["user"])
    winner: dict[str, str] = {}
    for col, kinds in held.items():
        if len(kinds) < 2:
            continue
        most = max(len(u) for u in kinds.values())
        tied = [k for k, u in kinds.items() if len(u) == most]
        by_trusted = [k for k in tied if kinds[k] & trusted]
        pick = by_trusted if len(by_trusted) == 1 else tied
        winner[col] = next(k for k in ("number", "text", "bool") if k in pick)
    if not winner:
        return
    dropped: dict[Any, set[str]] = {}
    for r in rows:
        for col, kind in winner.items():
            v = r.get(col)
            if v is not None and _kind(v) != kind:
                r[col] = None
                dropped.setdefault(r["user"], set()).add(col)
    for user, cols in dropped.items():
        said = ", ".join(f"{c!r} ({'numbers' if winner[c] == 'number' else winner[c]})" for c in sorted(cols)[:5])
        warnings.warn(f"{user}: values of another kind than the class's in {len(cols)} column(s), read as missing: "
                      f"{said}", ResultsWarning, stacklevel=3)


# --- what a discussion starts from --------------------------------------------------------------

def _per_user(df: Any, value: str, by: Sequence[str]):
    """Each student's median of value per group: one vote each, however many rows a student saved."""
    if "user" not in df.columns:
        return df[[*by, value]]
    return df.groupby([*by, "user"], dropna=False)[value].median().reset_index()


def summary(df: Any, value: str, by: Sequence[str] = ("filesystem",)):
    """Per group: how many measurements and students, the median, min, max and the max/min spread.

    The median is the median over students of each student's own median: every student counts once,
    however many rows they saved (a student who saved 50,000 rows does not move it more than one who
    saved 5). min and max are over all rows."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=[*by, "n", "users", "median", "min", "max", "spread"])
    d = df.dropna(subset=[value])
    g = d.groupby(list(by), dropna=False)
    out = g[value].agg(["count", "min", "max"]).rename(columns={"count": "n"})
    out.insert(1, "users", g["user"].nunique() if "user" in df.columns else 1)
    out.insert(2, "median", _per_user(d, value, by).groupby(list(by), dropna=False)[value].median())
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
        # the centre and its spread from each student's median (one vote each), so that a student who
        # saved many rows cannot become the class's centre
        logv = np.log10(g[value].astype(float))
        votes = np.log10(_per_user(g, value, [])[value].astype(float)) if "user" in g.columns else logv
        if len(votes) < min_group:
            continue
        med = votes.median()
        mad = (votes - med).abs().median()
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
