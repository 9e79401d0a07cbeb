"""Real tool outputs recorded earlier, and the switch between running live and replaying them.

A recording is ``data/recorded/<tool>/<name>.<ext>`` (the raw output, untouched) plus
``<name>.meta.json`` (argv, tool version, host, filesystem, date). ``IOLAB_MODE`` chooses:
``auto`` (default: live when the tools are here, else replay), ``live``, or ``replay``. What each
means, in the words a lesson prints, is :data:`MODE_NOTES`: ``replay`` replays every run of a tool,
and what iolab measures itself in Python (no tool, no recording) still runs here, saying LIVE.

Witnesses (issue 12). A recording made with ``save(..., witness=...)`` keeps what the kernel saw
during the run (:class:`iolab.witness.Witnessed`) in its meta, one entry per labelled run::

    "witness": {
      "run": {"own_read_bytes": 134217728, "own_write_bytes": 0, "device": "vda",
              "device_read_bytes": 134479872, "device_write_bytes": 69632,
              "disturbed": false, "notes": []}
    }

``own_*``: bytes this process and its waited-for children made the storage layer move (task I/O
accounting); ``device_*``: what the block device moved for everyone; any of them null where it
could not be read, and ``notes`` says why. A single witness is labelled ``"run"``; a recording of
several runs (the phases of a benchmark, the points of a sweep) labels each. Recordings made before
witnesses were kept have no ``"witness"`` key: :attr:`Recording.witness_note` says so in words, and a
verdict on such a replay is inference from rates and residency.
"""
from __future__ import annotations

import json
import os
import platform
import socket
from collections.abc import Callable, Mapping, Sequence, Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fsinfo, safeio
from .errors import ParseError, ToolMissing
from .runner import Run, install_hint, which
from .witness import Witness, Witnessed

if TYPE_CHECKING:
    import pandas as pd

MODES = ("auto", "live", "replay")
META_LIMIT = 1024 * 1024          # bytes a recording's .meta.json may have (they have < 4 KiB)
RAW_LIMIT = 64 * 1024 * 1024      # bytes of a recording (the largest has < 2 MiB)
RUN = "run"             # the label of a recording's one witness
NO_WITNESS = ("this recording was made before iolab kept the kernel's witnesses: it has no count of the "
              "bytes that came from storage or the device, so what served it can only be inferred "
              "from rates and residency")


def data_dir() -> Path:
    """The recordings directory: ``$IOLAB_DATA`` or the ``data/recorded`` of this checkout."""
    env = os.environ.get("IOLAB_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parent.parent / "data" / "recorded")
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(
        "cannot find the recorded outputs (data/recorded). Install iolab from its checkout "
        "(pip install -e .) or set IOLAB_DATA to the data/recorded directory.")


def published(name: str) -> "pd.DataFrame":
    """A table of figures published in the course's source material: ``data/published/<name>.csv``.

    Each such CSV has a ``source`` column naming the document the figures come from.
    """
    import pandas as pd

    path = data_dir().parent / "published" / f"{name}.csv"
    if not path.exists():
        have = sorted(p.stem for p in path.parent.glob("*.csv"))
        raise FileNotFoundError(f"no published table {name!r}; there are: {', '.join(have) or 'none'}")
    frame = pd.read_csv(path)
    if "source" not in frame.columns:
        raise ValueError(f"{path} has no 'source' column: published figures must name where they come from")
    return frame


@dataclass(frozen=True)
class Recording:
    ref: str
    path: Path
    text: str
    meta: dict[str, Any]

    @property
    def provenance(self) -> str:
        m = self.meta
        host = m.get("host") or {}
        fs = m.get("filesystem") or {}
        bits = [f"recorded {(m.get('date') or '?')[:10]}", f"on {host.get('description') or host.get('hostname', '?')}"]
        if fs.get("fstype"):
            bits.append(f"{fs['fstype']} filesystem")
        if m.get("tool_version"):
            bits.append(f"{m.get('tool', '')} {m['tool_version']}".strip())
        rel = self.path
        try:
            rel = self.path.relative_to(data_dir().parent.parent)
        except ValueError:
            pass
        return f"REPLAY of {rel} ({', '.join(bits)})"

    @property
    def witnesses(self) -> dict[str, Witnessed]:
        """The kernel's witnesses stored with the recording, by label ({} for an older recording)."""
        return {label: Witnessed.from_meta(d) for label, d in (self.meta.get("witness") or {}).items()}

    def witness(self, label: str = RUN) -> Witnessed | None:
        """The witness of run ``label``, or None when the recording has none (see :attr:`witness_note`)."""
        d = (self.meta.get("witness") or {}).get(label)
        return Witnessed.from_meta(d) if d is not None else None

    @property
    def witness_note(self) -> str:
        """"" when the recording has witnesses, else a sentence saying that it has none."""
        return "" if self.meta.get("witness") else NO_WITNESS


def _split(ref: str) -> tuple[str, str]:
    tool, _, name = ref.partition("/")
    if not tool or not name or "/" in name or ".." in ref:
        raise ValueError(f"a recording is named 'tool/name', got {ref!r}")
    return tool, name


def _raw_path(tool_dir: Path, name: str) -> Path | None:
    found = [p for p in tool_dir.glob(f"{name}.*")
             if p.name != f"{name}.meta.json" and p.name[len(name):].count(".") == 1]
    return found[0] if len(found) == 1 else None


def load(ref: str) -> Recording:
    """Load a recording by its name, e.g. ``load("strace/count-read-4k")``."""
    tool, name = _split(ref)
    tool_dir = data_dir() / tool
    raw = _raw_path(tool_dir, name)
    meta_path = tool_dir / f"{name}.meta.json"
    if raw is None or not meta_path.exists():
        have = sorted(p.name.split(".")[0] for p in tool_dir.glob("*.meta.json")) if tool_dir.is_dir() else []
        raise FileNotFoundError(f"no recording {ref!r} in {data_dir()} (with a .meta.json); "
                                f"{tool} has: {', '.join(have) or 'none'}")
    meta = safeio.read_json(meta_path, limit=META_LIMIT, what="recording's meta")
    if not isinstance(meta, dict):
        raise ParseError(f"the recording's meta {meta_path} is not a JSON object")
    _check_meta(meta, meta_path)
    text = safeio.read_text(raw, limit=RAW_LIMIT, what="recording", errors="replace")
    return Recording(ref=ref, path=raw, text=text, meta=meta)


# the keys of a recording's meta and the JSON types they may have (None: null is allowed too)
_META_TYPES: dict[str, tuple[type, ...]] = {
    "argv": (list,), "tool": (str, type(None)), "tool_version": (str, type(None)), "stream": (str, type(None)),
    "returncode": (int, type(None)), "date": (str, type(None)), "host": (dict,),
    "filesystem": (dict,), "notes": (str, type(None)), "witness": (dict, type(None)),
}


def _check_meta(meta: dict[str, Any], path: Path) -> None:
    """Refuse a meta whose known keys have values of another type (ParseError naming the file and key),
    so that the provenance, the argv and the witnesses read from it cannot fail later with a TypeError."""
    for key, types in _META_TYPES.items():
        v = meta.get(key)
        if key in meta and (not isinstance(v, types) or isinstance(v, bool) and bool not in types):
            raise ParseError(f"the recording's meta {path}: {key!r} is a {type(v).__name__}, not a "
                             f"{' or '.join(t.__name__ for t in types if t is not type(None))}")
    if not all(isinstance(a, str) for a in meta.get("argv", [])):
        raise ParseError(f"the recording's meta {path}: 'argv' holds something that is not a string")
    stack: list[tuple[str, Any]] = [(k, v) for k, v in meta.items() if k != "returncode"]
    while stack:                                  # counts, sizes, times: none is negative (a signal is)
        key, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{key}.{k}", x) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((f"{key}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            raise ParseError(f"the recording's meta {path}: {key} is {v}, and nothing a recording counts is negative")
    for label, w in (meta.get("witness") or {}).items():
        try:
            if not isinstance(w, dict):
                raise ValueError(f"a {type(w).__name__}, not an object")
            Witnessed.from_meta(w)
        except (ValueError, TypeError) as e:
            raise ParseError(f"the recording's meta {path}: its witness {label!r} is not one ({e})") from None


def available(tool: str | None = None) -> list[str]:
    """Names of all recordings ("tool/name"), optionally of one tool."""
    root = data_dir()
    refs = []
    for meta in sorted(root.glob(f"{tool or '*'}/*.meta.json")):
        refs.append(f"{meta.parent.name}/{meta.name[:-len('.meta.json')]}")
    return refs


@dataclass(frozen=True)
class Cassette:
    """What one recording of an experiment consists of (vcrpy's cassette): its parts, each a recording
    named ``<recording><part>`` (``"-summary"``, ``"-cache"``; ``"-t{i}-write"`` for trial ``i``, from 1).
    ``optional`` parts only some recordings have (a traced run's ``-opens``); with ``each``, every part
    is itself a recording of that cassette. A lesson declares its cassettes once; the lesson reads a
    part and its recorder writes it through :meth:`part`, so the two cannot disagree about a file
    name, and :meth:`check` holds a committed recording to the declaration (tests/test_cassettes.py)."""

    parts: tuple[str, ...]
    optional: tuple[str, ...] = ()
    each: "Cassette | None" = None

    def part(self, recording: str, part: str, **fields: object) -> str:
        """The name of ``recording``'s ``part`` (``i=`` for a trial's part); ValueError for a part it has not."""
        if part not in self.parts + self.optional:
            raise ValueError(f"{part!r} is not a part of this recording: its parts are "
                             f"{', '.join(self.parts + self.optional)}")
        return recording + part.format(**fields)

    def _trials(self, recording: str, names: AbstractSet[str]) -> range:
        """Trials 1..n: as many as the names hold a part of (none when no part is a trial's)."""
        trial = [p for p in self.parts + self.optional if "{i}" in p]
        n = 0
        while any(any(x == self.part(recording, p, i=n + 1) or x.startswith(self.part(recording, p, i=n + 1) + "-")
                      for x in names) for p in trial):
            n += 1
        return range(1, n + 1) if trial else range(1, 2)

    def names(self, recording: str, present: AbstractSet[str] = frozenset()) -> tuple[set[str], set[str]]:
        """(the names ``recording`` must have, those it may have), given the names ``present``
        (which say how many trials there are, and which optional parts a part that is a cassette has)."""
        must: set[str] = set()
        may: set[str] = set()
        for i in self._trials(recording, present):
            for group, parts in ((must, self.parts), (may, self.optional)):
                for p in parts:
                    name = self.part(recording, p, i=i)
                    if self.each is None:
                        group.add(name)
                    else:
                        m, o = self.each.names(name, present)
                        group.update(m)
                        may.update(o)
        return must, may

    def check(self, recording: str, present: set[str]) -> tuple[list[str], list[str]]:
        """(the declared parts missing from ``present``, the names of ``present`` under ``recording``
        that no part declares): both empty when a committed recording is what the lesson reads."""
        must, may = self.names(recording, present)
        mine = {x for x in present if x == recording or x.startswith(recording + "-")}
        return sorted(must - present), sorted(mine - must - may)


def host_facts(description: str | None = None) -> dict[str, Any]:
    os_name = ""
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        mem = None
    return {"hostname": socket.gethostname(), "kernel": platform.release(), "os": os_name,
            "cpus": os.cpu_count(), "mem_bytes": mem,
            "description": description or f"{os.cpu_count()}-core {platform.machine()} host, {os_name}"}


def witness_meta(witness: Witnessed | Mapping[str, Witnessed | None] | None) -> dict[str, Any] | None:
    """``meta["witness"]`` for a single :class:`Witnessed` (labelled ``"run"``) or a mapping label ->
    Witnessed (None entries are left out); None when there is nothing to store."""
    if witness is None:
        return None
    if isinstance(witness, Witnessed):
        witness = {RUN: witness}
    out = {}
    for label, w in witness.items():
        if w is None:
            continue
        if not isinstance(w, Witnessed):
            raise TypeError(f"witness {label!r} must be an iolab.witness.Witnessed, got {type(w).__name__}")
        out[str(label)] = w.meta()
    return out or None


def save(run: Run | str, ref: str, *, ext: str = "txt", argv: Sequence[str] | None = None,
         tool_version: str | None = None, stream: str = "stdout", fs_path: str | os.PathLike[str] | None = None,
         host_description: str | None = None, notes: str = "", root: Path | None = None,
         fs_facts: dict[str, Any] | None = None, data: bytes | None = None,
         witness: Witnessed | Mapping[str, Witnessed | None] | None = None) -> Path:
    """Write a recording (raw text + .meta.json). Returns the path of the raw file.

    ``data``: bytes to store as the raw file instead of the Run's text (a binary file the tool wrote,
    such as a Darshan log; say which with ``stream="file"``); the Run (or text) still gives the meta.

    ``filesystem`` in the meta: path, fstype, source and mount options of ``fs_path``, plus
    ``fs_facts`` (facts an explanation depends on that the mount options do not show, e.g. whether
    an ext4 has a journal).

    ``witness``: what the kernel saw during the run (a :class:`~iolab.witness.Witnessed`, or a
    mapping label -> Witnessed for several runs), stored as ``meta["witness"]`` (see the module's
    docstring). Give it for every recording of a measurement."""
    tool, name = _split(ref)
    d = (root or data_dir()) / tool
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(run, Run):
        text = run.stderr if stream == "stderr" else run.stdout
        argv = list(argv or run.argv)
        date = run.started
        rc: int | None = run.returncode
        tool_version = tool_version or run.tool_version
    else:
        text, date, rc = run, datetime.now(timezone.utc), None
    fs = {}
    if fs_path is not None:
        m = fsinfo.mount_of(fs_path)
        fs = {"path": str(fs_path), "fstype": m.fstype, "source": m.source, "options": m.options}
    fs.update(fs_facts or {})
    meta = {"argv": list(argv or []), "tool": tool, "tool_version": tool_version, "stream": stream,
            "returncode": rc, "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": host_facts(host_description), "filesystem": fs, "notes": notes}
    wm = witness_meta(witness)
    if wm is not None:
        meta["witness"] = wm
    raw = d / f"{name}.{ext}"
    if data is not None:
        raw.write_bytes(bytes(data))
    else:
        raw.write_text(text)
    (d / f"{name}.meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return raw


@dataclass
class Outcome:
    """What a lesson's experiment gives back, live or replayed: the text the tool produced, where it
    comes from (``provenance``), its parse (``data``) and the lesson's table of it (``frame``).

    Every lesson function that runs a tool or replays its recording returns one (or a subclass that
    adds what its lesson needs, e.g. the phases of a run). An outcome made of several runs
    (:func:`combine`) has one provenance line per run, their outcomes in ``parts``, and mode
    "mixed" when some ran here and some were replayed."""

    mode: str                      # "live", "replay" (or "mixed": see combine)
    text: str
    provenance: str
    run: Run | None = None
    recording: Recording | None = None
    data: Any = None
    reason: str = ""               # why a replay was chosen
    witness: Witnessed | None = None   # what the kernel saw: live, or stored with the recording
    witness_note: str = ""         # why there is none (an older recording)
    frame: "pd.DataFrame | None" = None   # the lesson's table of the result
    parts: list["Outcome"] = field(default_factory=list)   # the runs it combines (see combine)
    siblings: dict[str, Recording] = field(default_factory=dict)   # a replay's sibling recordings

    @property
    def live(self) -> bool:
        return self.mode == "live"

    def __str__(self) -> str:
        return self.provenance


def as_frame(data: Any) -> "pd.DataFrame | None":
    """A parse as a table: a DataFrame as it is, a list of rows (dicts) or one row (a dict) as a
    DataFrame; None for anything else (raw text, numbers)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping):
        return pd.DataFrame([dict(data)])
    if isinstance(data, list) and all(isinstance(r, Mapping) for r in data):
        return pd.DataFrame([dict(r) for r in data])
    return None


def combine(parts: Sequence[Outcome], frame: "pd.DataFrame | None" = None, *, data: Any = None,
            cls: type[Outcome] | None = None, **fields: Any) -> Outcome:
    """Several live-or-replayed runs as one outcome: one provenance line per distinct run, mode
    "live" or "replay" when they agree, else "mixed"; the first part's run and recording (what
    facts of the filesystem are read from); ``frame`` the lesson's table of them all. ``cls``: a
    subclass of Outcome to build, ``fields`` its own fields."""
    if not parts:
        raise ValueError("combine() needs at least one outcome")
    modes = {p.mode for p in parts}
    first = parts[0]
    return (cls or Outcome)(mode=modes.pop() if len(modes) == 1 else "mixed", text="",
                            provenance="\n".join(dict.fromkeys(p.provenance for p in parts)),
                            run=first.run, recording=first.recording, data=data, reason=first.reason,
                            frame=frame, parts=list(parts), **fields)


MODE_NOTES = {
    "auto": "",
    "live": ("IOLAB_MODE=live: every experiment runs here; one that cannot (a tool missing, no root for a "
             "tracer) stops with an error saying why, never replays."),
    "replay": ("IOLAB_MODE=replay: every run of a tool (strace, dd, fio, IOR, mdtest, bpftrace, Darshan, Ceph, "
               "the object stores and their FUSE clients) is replayed from a real recording made elsewhere, "
               "which the lesson names; what iolab measures itself in Python, with no tool (reading and writing "
               "a file in your workspace, its pages in the page cache, the kernel's counters), has nothing to "
               "replay and still runs here, marked LIVE."),
}


def mode_note() -> str:
    """What the current ``IOLAB_MODE`` replays and what it runs, in one sentence ("" for auto, the
    default, whose every outcome says which it was)."""
    return MODE_NOTES[mode()]


def mode() -> str:
    """``IOLAB_MODE``: "auto" (the default), "live" or "replay". Only this module reads it: a lesson
    asks :func:`live_or_recorded` (or :func:`replay_reason`) instead."""
    m = os.environ.get("IOLAB_MODE", "auto").strip().lower() or "auto"
    if m not in MODES:
        raise ValueError(f"IOLAB_MODE={m!r}: use one of {', '.join(MODES)}")
    return m


class CannotRunHere(ToolMissing):
    """IOLAB_MODE=live, but something other than a missing tool keeps the experiment from running
    live here (no data file given, a runtime too new for its reader, no root for a tracer)."""

    def __init__(self, reason: str):
        self.tool = ""
        self.hint = reason
        Exception.__init__(self, f"IOLAB_MODE=live, but it cannot run live here: {reason}")


def unless_asked(live: bool, why: str) -> str | None:
    """Why a part that runs live only when asked (too slow for the lesson's time) replays: ``why``, unless
    it was asked (``live``) or IOLAB_MODE=live asks for every part, which then runs here or says what
    it lacks."""
    if live:
        return None
    try:
        return replay_reason((), why)
    except CannotRunHere:
        return None


def replay_reason(requires: Sequence[str] = (), unavailable: str | Callable[[], str | None] | None = None, *,
                  strict: bool = True) -> str | None:
    """The one decision between live and replay: None when the experiment runs live here, else why it
    is replayed ("IOLAB_MODE=replay", "strace not installed here", or ``unavailable``'s reason).

    ``requires``: programs that must be on PATH. ``unavailable``: why live is not possible here besides a
    missing program (a sentence, or a function returning one or None; it may raise ToolMissing);
    only asked when the mode is not replay. With IOLAB_MODE=live a reason raises (ToolMissing, or
    :class:`CannotRunHere`) unless ``strict=False``, which only asks whether live is possible."""
    m = mode()
    if m == "replay":
        return "IOLAB_MODE=replay"
    missing = [t for t in requires if which(t) is None]
    if missing:
        if m == "live" and strict:
            raise ToolMissing(missing[0], install_hint(missing[0]))
        return f"{', '.join(missing)} not installed here"
    try:
        why = unavailable() if callable(unavailable) else unavailable
    except ToolMissing as e:
        if m == "live" and strict:
            raise
        return f"{e.tool} not installed here"
    if why and m == "live" and strict:
        raise CannotRunHere(why)
    return why or None


def live_or_recorded(live: Callable[[], Run | str | Outcome], recording: str | None, *, requires: Sequence[str] = (),
                     parse: Callable[[str], Any] | None = None, quiet: bool = False,
                     witness_path: str | os.PathLike[str] | None = None,
                     unavailable: str | Callable[[], str | None] | None = None,
                     siblings: Sequence[str] = (), read: Callable[[Recording], Any] | None = None,
                     frame: Callable[[Any], "pd.DataFrame | None"] | None = None,
                     cls: type[Outcome] | None = None) -> Any:
    """Run ``live()`` when it can run here, else replay ``recording``; parse either the same way
    (``outcome.data``, and ``outcome.frame`` when the parse is a table: :func:`as_frame`).

    ``requires``, ``unavailable``: what live needs (see :func:`replay_reason`, the decision).
    ``recording`` None: there is nothing to replay (a learner's own command): it always runs live.
    ``siblings``: suffixes of the recordings made beside this one in the same run (``<recording>-<s>``,
    e.g. the strace trace of a Darshan run); a replay loads them into ``outcome.siblings`` (by suffix).
    ``read``: how a replay gives ``data`` when the recording is not text (a Darshan log), instead of
    ``parse``; ``live()`` then returns the Outcome it made (its ``data`` set), which is taken as it is. ``frame``: the lesson's table of ``data`` when it is not ``data`` itself.
    ``cls``: the subclass of Outcome to build (a lesson's own typed fields, set by the caller after).

    ``witness_path``: a file or directory on the filesystem the run reads or writes. A live run is
    then taken under :class:`~iolab.witness.Witness` (``outcome.witness``); a replay carries the
    recording's witness, or, for an older recording, says in its provenance that it has none
    (``outcome.witness_note``)."""
    make = cls or Outcome
    reason = replay_reason(requires, unavailable) if recording is not None else None
    outcome: Outcome | None = None
    if reason is None:
        try:
            if witness_path is not None:
                with Witness(witness_path) as w:
                    result = live()
            else:
                result = live()
        except ToolMissing as e:
            if recording is None or mode() == "live":
                raise
            reason = f"{e.tool} not installed here"
        else:
            if isinstance(result, Outcome):              # a lesson's own live result (a Darshan log)
                outcome = result
            elif isinstance(result, Run):
                text = result.stdout
                prov = (f"LIVE run here ({socket.gethostname()}, {result.started:%Y-%m-%d %H:%M} UTC, "
                        f"{result.seconds:.1f} s): {' '.join(result.argv[:8])}{' ...' if len(result.argv) > 8 else ''}")
                outcome = make("live", text, prov, run=result)
            else:
                outcome = make("live", str(result), f"LIVE run here ({socket.gethostname()})")
            if witness_path is not None:
                outcome.witness = w.result
            elif isinstance(result, Run) and (result.witness is not None or result.witness_note):
                outcome.witness = result.witness         # a tool's run that witnessed itself (dd, fio)
                outcome.witness_note = result.witness_note
    if outcome is None:
        assert recording is not None
        rec = load(recording)
        outcome = make("replay", rec.text, f"{rec.provenance}; {reason}", recording=rec, reason=reason or "",
                          siblings={s: load(f"{recording}-{s}") for s in siblings})
        if witness_path is not None:
            outcome.witness = rec.witness()
            if rec.witness_note:
                outcome.witness_note = rec.witness_note
                outcome.provenance += "; it has no witnesses (recorded before iolab kept them)"
        if read is not None:
            outcome.data = read(rec)
    if parse is not None and outcome.data is None:
        outcome.data = parse(outcome.text)
    outcome.frame = frame(outcome.data) if frame is not None else as_frame(outcome.data)
    if not quiet:
        print(outcome.provenance)
    return outcome
