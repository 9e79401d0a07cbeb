"""Darshan: find its runtime, run a program under it, read the log with PyDarshan into DataFrames.

Darshan has two halves, shipped separately:

* the **runtime**, ``libdarshan.so``: loaded into a program (``LD_PRELOAD``, or linked in by a site's
  MPI compiler wrappers), it wraps the POSIX, STDIO and MPI-IO calls, keeps counters per file and per
  layer, and writes one compressed log when the program ends. It is in no package registry: on a
  cluster it is a module (``module load darshan``), elsewhere it is built from its source release.
  :func:`find_runtime` looks for it (``$DARSHAN_RUNTIME``, a ``darshan-config`` on PATH, the
  ``LD_PRELOAD`` a module set, ``$DARSHAN_ROOT``, the usual library directories, and a build under
  ``/tmp/darshan-<version>``), and accepts a library only where no other user could have replaced it.
* the **reader**, PyDarshan (PyPI ``darshan``), with its own compiled log utilities: a dependency of
  the course. A reader reads the log formats it knows (:data:`READABLE_FORMATS`); a log written by a
  newer runtime is refused, so the runtime should not be newer than the reader.

Facts this module relies on, checked in the Darshan 3.5.0 sources (darshan-runtime/lib/darshan-core.c,
darshan-config.c, include/darshan-log-format.h, darshan-util/darshan-logutils.c):

* ``DARSHAN_LOGFILE`` names the log file exactly, whatever log directory the runtime was configured
  with (``--with-log-path`` or ``--with-log-path-by-env``); the lesson puts it in the workspace, and
  ``DARSHAN_MMAP_LOGPATH`` there too: a build with mmap logs (the default) keeps a memory-mapped copy
  of the counters in /tmp while a process runs, and a process that is killed, or that replaces itself
  with ``exec`` (a shell script, ``env``), leaves it behind.
* A program that does not call ``MPI_Init`` is only profiled with ``DARSHAN_ENABLE_NONMPI=1``; an MPI
  program is profiled from ``MPI_Init`` to ``MPI_Finalize``, and rank 0 writes one log for the job.
  ``DXT_ENABLE_IO_TRACE=1`` adds the DXT modules: every operation's offset, length, start and end.
* Paths under /etc/ /dev/ /usr/ /bin/ /boot/ /lib/ /opt/ /sbin/ /sys/ /proc/ /var/ are not recorded
  (darshan-config.c); ``DARSHAN_EXCLUDE_DIRS`` replaces that list. A workspace in /dev/shm would go
  unseen: :func:`env` drops from the list the trees that hold the paths it is told to ``record``.
* The log starts with an uncompressed header: an 8-byte format version, a magic number (6567223),
  and the offset and length of every region; :func:`check_header` checks it before PyDarshan reads
  the rest (PyDarshan 3.5.0 accepts a truncated log and can then crash the process at exit). No header
  check foresees every inconsistency (a log whose job region is empty passes it and fails an assertion
  in darshan-logutils.c), so :func:`read_log` runs PyDarshan in a child process with a time and memory
  limit (:mod:`iolab.tools._darshan_reader`): its death is a ParseError, not the kernel's.
* The command line is stored in one text with the mount table, one entry per line after it, and the
  reader parses every line after the first as a mount entry (darshan_log_get_mounts). A command line
  with a newline in it (``python -c`` with a multi-line script) gives it lines that are not: PyDarshan
  3.5.0 then refuses the log (a UnicodeDecodeError) or reads a cut command line and bogus mounts,
  depending on the bytes. Run scripts from files. :func:`read_log` turns any refusal into a
  :class:`~iolab.errors.ParseError` naming the log.
"""
from __future__ import annotations

import atexit
import functools
import importlib.metadata
import importlib.util
import os
import pickle
import re
import select
import signal
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd

from .. import runner, safeio, workspace
from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run

TOOL = "darshan"
LIBRARY = "libdarshan.so"
RUNTIME_ENV = "DARSHAN_RUNTIME"            # a libdarshan.so, the prefix of a runtime install, or "none"
ROOT_ENVS = ("DARSHAN_RUNTIME_ROOT", "DARSHAN_ROOT")   # what module files commonly set
USUAL_LIBDIRS = ("/usr/local/lib", "/usr/local/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                 "/usr/lib64", "/usr/lib")
INSTALL_HINT = runner.install_hint("darshan")

# Log formats the reader opens: darshan-util 3.5.0, darshan_log_get_header() (darshan-logutils.c)
READABLE_FORMATS = ("3.00", "3.10", "3.20", "3.21", "3.41")
MAGIC = 6567223
MODULES = ("POSIX", "STDIO", "MPI-IO")
LOG_LIMIT = 1024 ** 3                      # bytes of a log read_log reads (a course's logs have < 1 MiB)
# paths Darshan does not record unless DARSHAN_EXCLUDE_DIRS says otherwise (darshan-config.c, 3.5.0)
DEFAULT_EXCLUDES = ("/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/opt/", "/sbin/", "/sys/", "/proc/", "/var/")
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")


# --- the reader ---------------------------------------------------------------------------------

def reader_version() -> str | None:
    """The installed PyDarshan's version ("3.5.0"), or None when it is not installed."""
    try:
        return importlib.metadata.version("darshan")
    except importlib.metadata.PackageNotFoundError:
        return None


def version_tuple(version: str | None) -> tuple[int, ...]:
    m = re.match(r"(\d+(?:\.\d+)*)", version or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


# --- the runtime --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Runtime:
    """A Darshan runtime library this user may load, and how it was found."""

    library: Path
    found_by: str                     # "$DARSHAN_RUNTIME", "darshan-config on PATH", "LD_PRELOAD", ...
    version: str | None = None        # from the darshan-config installed next to it ("3.5.0")

    @property
    def prefix(self) -> Path:
        return self.library.parent.parent

    def compatible(self, reader: str | None = None) -> bool | None:
        """Can the installed PyDarshan read this runtime's logs? None when a version is unknown.

        A runtime writes the log format of its release; a reader opens the formats up to its own, so
        a runtime newer (major.minor) than the reader may write logs it refuses."""
        reader = reader if reader is not None else reader_version()
        rt, rd = version_tuple(self.version)[:2], version_tuple(reader)[:2]
        if not rt or not rd:
            return None
        return rt <= rd

    def describe(self) -> str:
        v = f"Darshan {self.version}" if self.version else "Darshan (version unknown)"
        return f"{v}: {self.library} (found by {self.found_by})"


@dataclass(frozen=True)
class Candidate:
    path: Path
    found_by: str
    problem: str | None = None        # why it cannot be used (None: usable)


def _config_version(config: Path) -> str | None:
    """The version a darshan-config script states (``version="Darshan Runtime 3.5.0"``), read, not run."""
    try:
        text = config.read_text(errors="replace")[:4096]
    except OSError:
        return None
    m = re.search(r'version="Darshan Runtime ([^"]+)"', text)
    return m.group(1).strip() if m else None


def _config_libdir(config: Path) -> Path | None:
    try:
        text = config.read_text(errors="replace")[:8192]
    except OSError:
        return None
    prefix = re.search(r'^prefix="([^"]+)"', text, re.M)
    libdir = re.search(r'^DARSHAN_LIB_PATH="([^"]+)"', text, re.M)
    if libdir and prefix:
        return Path(libdir.group(1).replace("${exec_prefix}", prefix.group(1)).replace("${prefix}", prefix.group(1)))
    return Path(prefix.group(1)) / "lib" if prefix else None


def _unsafe(path: Path) -> str | None:
    """Why loading ``path`` into our programs would be unsafe (None: it is safe).

    The library and every directory above it must belong to this user or to root, and none may be
    writable by others unless sticky (like /tmp): otherwise another user could put code of theirs there.
    """
    try:
        st = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_uid not in (0, os.geteuid()):
        return f"belongs to uid {st.st_uid}, not to you or root"
    if st.st_mode & 0o022:
        return f"can be written by others (mode {stat.S_IMODE(st.st_mode):o})"
    try:
        workspace.safe_chain(Path(os.path.realpath(path)).parent)
    except PermissionError as e:
        return str(e).split(":")[0]
    return None


def _libraries_in(directory: Path) -> list[Path]:
    return [directory / LIBRARY] if (directory / LIBRARY).exists() else []


def candidates() -> list[Candidate]:
    """Every place a Darshan runtime was looked for and found, in the order they are preferred."""
    found: list[tuple[Path, str]] = []
    env = os.environ.get(RUNTIME_ENV)
    if env == "none":              # DARSHAN_RUNTIME=none: act as if there were none (to try the replays)
        return []
    if env:
        p = Path(env)
        if p.is_dir():
            found += [(q, f"${RUNTIME_ENV}") for q in _libraries_in(p / "lib") + _libraries_in(p)]
        else:
            found.append((p, f"${RUNTIME_ENV}"))
    for item in re.split(r"[:\s]+", os.environ.get("LD_PRELOAD", "")):
        if item and Path(item).name.startswith("libdarshan"):
            found.append((Path(item), "LD_PRELOAD (set by a module?)"))
    config = runner.which("darshan-config")
    if config:
        libdir = _config_libdir(Path(config))
        if libdir is not None:
            found += [(q, "darshan-config on PATH") for q in _libraries_in(libdir)]
    for name in ROOT_ENVS:
        if os.environ.get(name):
            found += [(q, f"${name}") for q in _libraries_in(Path(os.environ[name]) / "lib")]
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d:
            found += [(q, "LD_LIBRARY_PATH") for q in _libraries_in(Path(d))]
    for d in USUAL_LIBDIRS:
        found += [(q, "usual library path") for q in _libraries_in(Path(d))]
    reader = reader_version()
    if reader:
        # where the course's README builds it: a prefix named after the reader's version
        found += [(q, "a build at /tmp/darshan-" + reader) for q in _libraries_in(Path(f"/tmp/darshan-{reader}/lib"))]
    out, seen = [], set()
    for path, how in found:
        key = os.path.realpath(path)
        if key in seen:
            continue
        seen.add(key)
        out.append(Candidate(path, how, _unsafe(path)))
    return out


def _version_of(library: Path) -> str | None:
    for config in (library.parent.parent / "bin" / "darshan-config", library.parent / "darshan-config"):
        if config.exists():
            return _config_version(config)
    return None


@functools.lru_cache(maxsize=1)
def _find() -> Runtime | None:
    for c in candidates():
        if c.problem is None:
            return Runtime(c.path, c.found_by, _version_of(c.path))
    return None


def find_runtime(*, refresh: bool = False) -> Runtime | None:
    """The first usable Darshan runtime (see :func:`candidates`), or None."""
    if refresh:
        _find.cache_clear()
    return _find()


def require_runtime() -> Runtime:
    rt = find_runtime()
    if rt is None:
        raise ToolMissing("Darshan runtime (libdarshan.so)", INSTALL_HINT)
    return rt


# --- argv / env builders ------------------------------------------------------------------------

def excluded_by_default(path: str | os.PathLike[str]) -> str | None:
    """The default exclusion (``"/dev/"``) that keeps Darshan from recording ``path``, or None."""
    p = os.path.realpath(path).rstrip("/") + "/"
    return next((d for d in DEFAULT_EXCLUDES if p.startswith(d)), None)


def exclusions_keeping(paths: Sequence[str | os.PathLike[str]]) -> list[str] | None:
    """Darshan's default exclusions without those that would hide ``paths``; None when none would."""
    hiding = {excluded_by_default(p) for p in paths} - {None}
    return [d for d in DEFAULT_EXCLUDES if d not in hiding] if hiding else None


def env(log_file: str | os.PathLike[str], *, runtime: Runtime | None = None, mpi: bool = False,
        dxt: bool = False, exclude_dirs: Sequence[str] | None = None,
        record: Sequence[str | os.PathLike[str]] = ()) -> dict[str, str]:
    """The environment that profiles a program with Darshan and writes its log to ``log_file``.

    ``mpi=False``: the program does not call MPI_Init, so ``DARSHAN_ENABLE_NONMPI=1``. ``dxt``: trace
    every operation too (``DXT_ENABLE_IO_TRACE=1``). ``exclude_dirs``: replace Darshan's list of
    directories it does not record (``DARSHAN_EXCLUDE_DIRS``; ``["none"]`` records everything).
    ``record``: paths that must be recorded (the workspace): when one lies in a tree Darshan skips by
    default (/dev/shm is under /dev/), the list is set without that tree.
    """
    if exclude_dirs is None and record:
        exclude_dirs = exclusions_keeping(record)
    rt = runtime or require_runtime()
    preload = [str(rt.library)] + [p for p in re.split(r"[:\s]+", os.environ.get("LD_PRELOAD", ""))
                                   if p and not Path(p).name.startswith("libdarshan")]
    # the log, and the memory-mapped copy of the counters some builds keep while the program runs
    # (under /tmp by default, left there when a process is killed or replaces itself with exec)
    out = {"LD_PRELOAD": ":".join(preload), "DARSHAN_LOGFILE": os.fspath(log_file),
           "DARSHAN_MMAP_LOGPATH": os.path.dirname(os.path.abspath(log_file))}
    if not mpi:
        out["DARSHAN_ENABLE_NONMPI"] = "1"
    if dxt:
        out["DXT_ENABLE_IO_TRACE"] = "1"
    if exclude_dirs is not None:
        out["DARSHAN_EXCLUDE_DIRS"] = ",".join(exclude_dirs)
    return out


def launcher_args(variables: Mapping[str, str], *, launcher: str = "mpirun", flavour: str = "openmpi") -> list[str]:
    """Launcher flags that give every MPI rank ``variables`` (and not the launcher itself).

    Open MPI: ``-x NAME=VALUE``; MPICH and Intel MPI (Hydra): ``-genv NAME VALUE``; srun:
    ``--export=ALL,NAME=VALUE,...``. Values may not contain a comma for srun.
    """
    if launcher == "srun":
        bad = [k for k, v in variables.items() if "," in v]
        if bad:
            raise ValueError(f"srun --export cannot pass a comma in {bad}")
        return ["--export=" + ",".join(["ALL", *(f"{k}={v}" for k, v in variables.items())])]
    if flavour in ("mpich", "intel"):
        return [a for k, v in variables.items() for a in ("-genv", k, v)]
    return [a for k, v in variables.items() for a in ("-x", f"{k}={v}")]


@dataclass
class Profiled:
    """A program run under Darshan: its Run and the log it left."""

    run: Run
    log: Path


def run(cmd: Sequence[str | os.PathLike[str]], log_file: str | os.PathLike[str], *, runtime: Runtime | None = None,
        dxt: bool = False, timeout: float = 120, cwd: str | os.PathLike[str] | None = None,
        check: bool = True, record: Sequence[str | os.PathLike[str]] = ()) -> Profiled:
    """Run a non-MPI program under Darshan (``LD_PRELOAD``) and return its Run and log path.

    Run a script from a file, not ``python -c`` with newlines: see the module's docstring.
    Raises ToolMissing without a runtime, ToolFailed when the program fails (``check``) or Darshan
    wrote no log (a program ended by a signal or ``_exit`` never reaches Darshan's shutdown).
    """
    rt = runtime or require_runtime()
    argv = [os.fspath(a) for a in cmd]
    if any("\n" in a for a in argv):
        raise ValueError("a command line with a newline in it makes the Darshan log unreadable to PyDarshan: "
                         "write the script to a file and run the file")
    log = Path(log_file)
    log.unlink(missing_ok=True)
    r = runner.run(argv, timeout=timeout, cwd=cwd, env=env(log, runtime=rt, dxt=dxt, record=record), check=check)
    r = replace(r, tool_version=rt.version)
    if not log.exists():
        raise ToolFailed(argv, r.returncode, r.stderr, message=(
            f"Darshan wrote no log at {log}: the program may have ended by a signal or os._exit (Darshan "
            f"writes its log at a normal exit), or {rt.library} does not support LD_PRELOAD"))
    return Profiled(r, log)


# --- reading a log ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Header:
    format: str                          # "3.41"
    partial: bool                        # the runtime ran out of memory for records: counts are incomplete
    regions: dict[str, tuple[int, int]]  # name -> (offset, length), the regions the header points to


_HEADER_341 = struct.Struct("<8sqB7xQ")     # version, magic, compression, (padding), partial flag
_PARTIAL_OLD = struct.Struct("<I")          # formats before 3.41: the partial flag is 4 bytes at byte 20
# darshan-log-format.h: enum darshan_comp_type {DARSHAN_ZLIB_COMP, DARSHAN_BZIP2_COMP, DARSHAN_NO_COMP}
_ZLIB, _BZIP2, _NO_COMP = 0, 1, 2


def _region_error(data: bytes, comp: int) -> str | None:
    """Why a region of the log does not decompress whole (each rank's part is a stream of its own, one
    after the other), or None. A changed byte of compressed data fails its checksum here, before
    PyDarshan's C reader sees it (which can abort the whole process on such a log)."""
    import bz2
    import zlib

    if comp == _NO_COMP:
        return None
    while data:
        try:
            if comp == _ZLIB:
                z = zlib.decompressobj()
                left = data
                while left and not z.eof:                        # 1 MiB at a time: memory stays flat
                    z.decompress(left, 1 << 20)
                    left = z.unconsumed_tail
                ended, data = z.eof, z.unused_data
            else:
                b = bz2.BZ2Decompressor()
                b.decompress(data)
                ended, data = b.eof, b.unused_data
        except (zlib.error, OSError, EOFError, ValueError) as e:
            return str(e)
        if not ended:
            return "its compressed data ends before the end of its stream"
    return None


def check_header(path: str | os.PathLike[str]) -> Header:
    """Read and check a log's header: a Darshan log, a format the reader knows, nothing cut off.

    Raises ParseError naming the log when it is not one, was written by a newer runtime, is
    shorter than its header says (a copy cut off, a job killed while writing), or a region of it does
    not decompress whole (a damaged copy).
    """
    p = Path(path)
    return _check(_read(p), p)


def _read(p: Path) -> bytes:
    try:
        return safeio.read_bytes(p, limit=LOG_LIMIT, what="Darshan log")
    except FileNotFoundError as e:
        raise ParseError(f"cannot read the Darshan log {p}: {e.strerror}") from None


def _check(data: bytes, p: Path) -> Header:
    if len(data) < _HEADER_341.size:
        raise ParseError(f"{p} is not a Darshan log: {len(data)} bytes, shorter than a log header")
    raw_version, magic, comp, partial = _HEADER_341.unpack_from(data)
    version = raw_version.split(b"\0")[0].decode("ascii", "replace")
    if magic != MAGIC and struct.unpack("<q", struct.pack(">q", magic))[0] != MAGIC:
        raise ParseError(f"{p} is not a Darshan log (no Darshan magic number in its header)")
    if version not in READABLE_FORMATS:
        newer = version_tuple(version) > version_tuple(READABLE_FORMATS[-1])
        raise ParseError(
            f"the Darshan log {p} has format {version}, which PyDarshan {reader_version() or '?'} cannot read "
            f"(it reads {', '.join(READABLE_FORMATS)})"
            + (": it was written by a newer Darshan runtime. Use a runtime of the reader's version, or "
               "upgrade the reader (pip install -U darshan)" if newer else ""))
    regions: dict[str, tuple[int, int]] = {}
    if version != "3.00":
        if comp not in (_ZLIB, _BZIP2, _NO_COMP):
            raise ParseError(f"the Darshan log {p} names an unknown compression ({comp}): not a log Darshan wrote")
        if version_tuple(version) >= (3, 41):
            n_mods, off = 64, _HEADER_341.size
        else:
            # formats 3.10-3.21 (runtimes 3.1-3.3): a 4-byte partial flag after the compression byte and
            # its padding, the maps of 16 modules from byte 24 (read so from PyDarshan's own example logs)
            (partial,) = _PARTIAL_OLD.unpack_from(data, 20)
            n_mods, off = 16, 24
        if len(data) < off + 16 * (n_mods + 1):
            raise ParseError(f"the Darshan log {p} is cut off inside its header ({len(data):,} bytes)")
        maps = struct.unpack_from(f"<{2 * (n_mods + 1)}Q", data, off)
        header_size = off + 16 * (n_mods + 1) + 4 * n_mods
        name_off, name_len = maps[0], maps[1]
        regions["job"] = (header_size, max(name_off - header_size, 0))
        regions["names"] = (name_off, name_len)
        for i in range(n_mods):
            o, n = maps[2 + 2 * i], maps[3 + 2 * i]
            if n:
                regions[f"module {i}"] = (o, n)
        for name, (o, n) in regions.items():
            if o + n > len(data):
                raise ParseError(f"the Darshan log {p} is cut off: its {name} region ends at byte {o + n:,}, "
                                 f"but the file has {len(data):,} bytes (a partial copy, or a job killed while "
                                 "writing it)")
            why = _region_error(data[o:o + n], comp)
            if why is not None:
                raise ParseError(f"the Darshan log {p} is damaged: its {name} region (bytes {o:,} to {o + n:,}) does "
                                 f"not decompress ({why})")
    return Header(version, bool(partial), regions)


@dataclass
class Log:
    """What PyDarshan read from one log, as plain data: the job, the mounts, and a frame per module."""

    path: Path
    job: dict[str, Any]                              # exe, nprocs, run_time, lib_ver, log_ver, jobid, start_time
    mounts: list[tuple[str, str]]                    # (mount point, fs type), as the runtime saw them
    modules: list[str]
    records: dict[str, pd.DataFrame] = field(default_factory=dict)     # POSIX / STDIO / MPI-IO counters
    dxt: dict[str, pd.DataFrame] = field(default_factory=dict)         # DXT_POSIX / DXT_MPIIO segments
    partial: bool = False

    @property
    def exe(self) -> str:
        return self.job.get("exe", "")


def _mount_of(path: str, mounts: Sequence[tuple[str, str]]) -> tuple[str | None, str | None]:
    best = None
    for mnt, fs in mounts:
        if path == mnt or path.startswith(mnt.rstrip("/") + "/"):
            if best is None or len(mnt) > len(best[0]):
                best = (mnt, fs)
    return best if best else (None, None)


def _module_frame(report: Any, mod: str, names: Mapping[int, str], mounts) -> pd.DataFrame:
    frames = report.records[mod].to_df()
    c, f = frames["counters"], frames["fcounters"]
    df = pd.concat([c, f.drop(columns=[x for x in ("rank", "id") if x in f.columns])], axis=1)
    files = [names.get(int(i), str(i)) for i in df["id"]]
    df.insert(0, "file", files)
    df.insert(0, "module", mod)
    mnt = [_mount_of(x, mounts) for x in files]
    df["mount"] = [m for m, _ in mnt]
    df["fstype"] = [fs for _, fs in mnt]
    return df


def _dxt_frame(report: Any, mod: str, names: Mapping[int, str]) -> pd.DataFrame:
    rows = []
    for rec in report.records[mod].to_df():
        name = names.get(int(rec["id"]), str(rec["id"]))
        for op in ("write", "read"):
            seg = rec[f"{op}_segments"]
            if len(seg) == 0:
                continue
            part = pd.DataFrame({"file": name, "rank": int(rec["rank"]), "hostname": rec.get("hostname"),
                                 "op": op, "offset": seg["offset"].astype("int64"),
                                 "length": seg["length"].astype("int64"),
                                 "start": seg["start_time"].astype(float), "end": seg["end_time"].astype(float)})
            rows.append(part)
    cols = ["module", "file", "rank", "hostname", "op", "offset", "length", "start", "end"]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.concat(rows, ignore_index=True)
    df.insert(0, "module", mod)
    return df.sort_values(["start", "rank"], kind="stable").reset_index(drop=True)[cols]


READ_TIMEOUT = 60.0            # seconds the reader may take on one log (the recorded ones take < 1)
READ_MEMORY = 2 * 1024 ** 3    # bytes of address space the reader may add (one corrupt log asked for 145 PiB)


def read_report(path: str) -> tuple[dict[str, Any], list[tuple[str, str]], list[str], dict[str, pd.DataFrame],
                                    dict[str, pd.DataFrame], str]:
    """PyDarshan's reading of one log, in this process: (job, mounts, modules, records, dxt, exe).

    Unguarded: a corrupt log can abort this process. :func:`read_log` runs it in a child; the
    benchmark (benchmarks/bench_darshan_read.py) calls it directly on the recorded logs to measure
    what the child costs."""
    from darshan.report import DarshanReport

    with DarshanReport(path, read_all=True) as report:
        meta = report.metadata
        job = dict(meta.get("job", {}))
        names = {int(k): v for k, v in report.name_records.items()}
        mounts = [(m, fs) for m, fs in report.mounts]
        modules = list(report.modules)
        records = {m: _module_frame(report, m, names, mounts) for m in MODULES if m in report.records}
        dxt = {m: _dxt_frame(report, m, names) for m in DXT_MODULES if m in report.records}
        exe = meta.get("exe", "")
    return job, mounts, modules, records, dxt, exe


_LEN = struct.Struct("<Q")
_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMEXPR_MAX_THREADS": "1"}


def send_message(f: BinaryIO, obj: Any) -> None:
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_LEN.pack(len(body)) + body)
    f.flush()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes | None:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive_message(fd: int, deadline: float | None = None) -> Any:
    """One message from ``fd``; None at end of file; TimeoutError past ``deadline`` (time.monotonic)."""
    head = _read_exact(fd, _LEN.size, deadline)
    if head is None:
        return None
    body = _read_exact(fd, _LEN.unpack(head)[0], deadline)
    if body is None:
        return None
    return pickle.loads(body)


_server: Any = None                    # the running reader (subprocess.Popen), started by the first read_log
_server_lock = threading.Lock()


def _reader() -> Any:
    """The reader process (iolab.tools._darshan_reader), started on first use and again if it died."""
    global _server
    if _server is not None and _server.poll() is None:
        return _server
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, **_THREAD_ENV,
           "PYTHONPATH": os.pathsep.join([package_root] + [p for p in [os.environ.get("PYTHONPATH")] if p])}
    proc = subprocess.Popen([sys.executable, "-m", "iolab.tools._darshan_reader"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, close_fds=True, start_new_session=True)
    assert proc.stdout is not None                       # (stdout=PIPE)
    try:
        hello = receive_message(proc.stdout.fileno(), time.monotonic() + 120)
    except TimeoutError:
        hello = None
    if not (isinstance(hello, tuple) and hello[:1] == ("ready",)):
        proc.kill()
        proc.wait()
        raise ToolFailed([sys.executable, "-m", "iolab.tools._darshan_reader"], proc.returncode, "",
                         message="the Darshan log reader process did not start (is PyDarshan installed?)")
    _server = proc
    return proc


def stop_reader() -> None:
    """Stop the reader process (it also stops by itself when this process ends)."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.stdin.close()
            try:
                _server.wait(10)
            except subprocess.TimeoutExpired:
                _server.kill()
                _server.wait()
            _server.stdout.close()
            _server = None


def _forget_reader_in_child() -> None:
    """A forked copy of this process starts its own reader: the inherited pipes are the parent's, and
    two processes asking one reader would read each other's answers."""
    global _server, _server_lock
    _server, _server_lock = None, threading.Lock()


atexit.register(stop_reader)
os.register_at_fork(after_in_child=_forget_reader_in_child)


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _ask_reader(data: bytes, memory: int, timeout: float) -> tuple[str, Any]:
    global _server
    with _server_lock:
        proc = _reader()
        try:
            send_message(proc.stdin, (data, memory, timeout))
            answer = receive_message(proc.stdout.fileno(), time.monotonic() + timeout + 60)
        except (OSError, TimeoutError):
            answer = None
        if answer is None:                          # the server itself failed: the next read starts another
            proc.kill()
            proc.wait()
            _server = None
            return ("died", proc.returncode)
        return answer


def read_log(path: str | os.PathLike[str], *, timeout: float = READ_TIMEOUT, memory: int = READ_MEMORY) -> Log:
    """Read a Darshan log with PyDarshan into a :class:`Log`; ParseError (naming the log) if refused.

    The log is read as a regular file of at most LOG_LIMIT bytes, its header checked
    (:func:`check_header`), and the same bytes handed to PyDarshan in a child process with ``timeout``
    seconds and ``memory`` bytes of address space: PyDarshan's C reader aborts, crashes, loops or asks
    for petabytes on some corrupt logs (issue 21), and a child's death, time-out or MemoryError is a
    ParseError here, not the end of the kernel. The child is forked from a server that has PyDarshan
    loaded (:mod:`iolab.tools._darshan_reader`): the first read starts it, the others cost a fork.
    """
    p = Path(path)
    data = _read(p)
    header = _check(data, p)
    if importlib.util.find_spec("darshan") is None:
        raise ToolMissing("PyDarshan (the darshan package)", "pip install -e '.[lab]' (or pip install darshan)")
    status, payload = _ask_reader(data, memory, timeout)
    if status == "timeout":
        raise ParseError(f"PyDarshan {reader_version() or ''} did not finish reading the Darshan log {p} in "
                         f"{timeout:g} s (a corrupt log can send its C reader into a loop): stopped") from None
    if status == "died":
        how = (f"was killed by {_signal_name(payload)}" if isinstance(payload, int) and payload < 0
               else f"exited with status {payload}")
        raise ParseError(f"PyDarshan {reader_version() or ''} crashed on the Darshan log {p}: the process "
                         f"reading it {how} (the log is corrupt in a way its header does not show)") from None
    if status != "ok":
        kind, message = payload
        cause = f"{kind}: {message}"
        hint = ""
        if kind == "UnicodeDecodeError":
            hint = (" Its command line or mount table is not valid UTF-8. A command line with a newline in it "
                    "(python -c with a multi-line script) does this: the reader takes every line after the first "
                    "for a mount entry. Run scripts from files.")
        elif kind == "MemoryError":
            hint = f" It asked for more than the {memory:,} bytes the reader may use: the log is corrupt."
        elif kind == "KeyboardInterrupt":
            raise KeyboardInterrupt
        raise ParseError(f"PyDarshan {reader_version() or ''} cannot read the Darshan log {p} ({cause}).{hint}") from None
    job, mounts, modules, records, dxt, exe = pickle.loads(payload)
    lib_ver = job.get("metadata", {}).get("lib_ver") if isinstance(job.get("metadata"), dict) else None
    try:
        info = {"exe": str(exe).strip(), "nprocs": int(job.get("nprocs", 0)),
                "run_time": float(job.get("run_time", 0.0)), "lib_ver": lib_ver,
                "log_ver": job.get("log_ver", header.format), "jobid": job.get("jobid"),
                "start_time": job.get("start_time_sec"), "uid": job.get("uid")}
    except (TypeError, ValueError, OverflowError) as e:
        raise ParseError(f"the Darshan log {p} has a job record PyDarshan read as nonsense ({e})") from None
    return Log(p, info, mounts, modules, records, dxt, header.partial)


# --- tidy frames --------------------------------------------------------------------------------

# module -> how its counters give the columns of files()
_FILE_COLUMNS = {
    "POSIX": {"opens": ["POSIX_OPENS"], "reads": ["POSIX_READS"], "writes": ["POSIX_WRITES"],
              "bytes_read": ["POSIX_BYTES_READ"], "bytes_written": ["POSIX_BYTES_WRITTEN"],
              "read_s": ["POSIX_F_READ_TIME"], "write_s": ["POSIX_F_WRITE_TIME"], "meta_s": ["POSIX_F_META_TIME"]},
    "STDIO": {"opens": ["STDIO_OPENS"], "reads": ["STDIO_READS"], "writes": ["STDIO_WRITES"],
              "bytes_read": ["STDIO_BYTES_READ"], "bytes_written": ["STDIO_BYTES_WRITTEN"],
              "read_s": ["STDIO_F_READ_TIME"], "write_s": ["STDIO_F_WRITE_TIME"], "meta_s": ["STDIO_F_META_TIME"]},
    "MPI-IO": {"opens": ["MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS"],
               "reads": ["MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"],
               "writes": ["MPIIO_INDEP_WRITES", "MPIIO_COLL_WRITES", "MPIIO_SPLIT_WRITES", "MPIIO_NB_WRITES"],
               "bytes_read": ["MPIIO_BYTES_READ"], "bytes_written": ["MPIIO_BYTES_WRITTEN"],
               "read_s": ["MPIIO_F_READ_TIME"], "write_s": ["MPIIO_F_WRITE_TIME"], "meta_s": ["MPIIO_F_META_TIME"]},
}
FILE_COLUMNS = ("module", "file", "rank", "opens", "reads", "writes", "bytes_read", "bytes_written",
                "read_s", "write_s", "meta_s", "fstype")


def files(log: Log, modules: Sequence[str] = MODULES) -> pd.DataFrame:
    """One row per file, rank and layer: what the program did to each file it touched.

    rank -1 is Darshan's record of a file every rank opened (its counters summed over the ranks).
    Counters Darshan could not keep are -1 in the log and NaN here.
    """
    parts = []
    for mod in modules:
        df = log.records.get(mod)
        if df is None or df.empty:
            continue
        out = pd.DataFrame({"module": mod, "file": df["file"], "rank": df["rank"].astype(int)})
        for col, sources in _FILE_COLUMNS[mod].items():
            vals = sum(df[s].where(df[s] >= 0) for s in sources if s in df.columns)
            out[col] = vals
        out["fstype"] = df["fstype"]
        parts.append(out)
    if not parts:
        return pd.DataFrame(columns=list(FILE_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    for col in ("opens", "reads", "writes", "bytes_read", "bytes_written"):
        out[col] = out[col].astype("Int64")
    return out[list(FILE_COLUMNS)]


# Darshan's size buckets (DARSHAN_BUCKET_INC, darshan-common.h): upper bounds included, by the bytes
# each call actually moved (a read at the end of a file that returns 0 bytes counts in the first)
_BUCKETS = (("0_100", 0, 100), ("100_1K", 101, 1024), ("1K_10K", 1025, 10240), ("10K_100K", 10241, 102400),
            ("100K_1M", 102401, 1048576), ("1M_4M", 1048577, 4194304), ("4M_10M", 4194305, 10485760),
            ("10M_100M", 10485761, 104857600), ("100M_1G", 104857601, 1073741824), ("1G_PLUS", 1073741825, None))
BUCKET_LABELS = ("0-100 B", "101 B-1 KiB", "1-10 KiB", "10-100 KiB", "100 KiB-1 MiB", "1-4 MiB", "4-10 MiB",
                 "10-100 MiB", "100 MiB-1 GiB", "over 1 GiB")


def bucket_of(nbytes: int) -> str:
    """The label of the Darshan size bucket a call that moved ``nbytes`` counts in."""
    for (_, low, high), label in zip(_BUCKETS, BUCKET_LABELS):
        if high is None or nbytes <= high:
            return label
    raise AssertionError("unreachable")


def access_sizes(log: Log, module: str = "POSIX", file: str | None = None) -> pd.DataFrame:
    """Darshan's access-size histogram: how many reads and writes fell in each size bucket.

    Columns: op (read/write), bucket (label), low, high (bytes, both included; high None for the
    last), count.
    ``file``: one file only (else every file of the module). The buckets are Darshan's own
    (``POSIX_SIZE_READ_1K_10K``...); MPI-IO's are of the sizes the program asked MPI for (``_AGG_``).
    """
    df = log.records.get(module)
    prefix = {"POSIX": "POSIX_SIZE_", "MPI-IO": "MPIIO_SIZE_", "STDIO": None}[module]
    if prefix is None:
        raise ValueError("Darshan keeps no access-size histogram for STDIO")
    rows = []
    if df is not None and file is not None:
        df = df[df["file"] == file]
    for op in ("read", "write"):
        for (suffix, low, high), label in zip(_BUCKETS, BUCKET_LABELS):
            col = f"{prefix}{op.upper()}_{'AGG_' if module == 'MPI-IO' else ''}{suffix}"
            n = int(df[col].clip(lower=0).sum()) if df is not None and col in df.columns else 0
            rows.append({"op": op, "bucket": label, "low": low, "high": high, "count": n})
    return pd.DataFrame(rows)


def dxt_segments(log: Log, module: str = "DXT_POSIX", file: str | None = None) -> pd.DataFrame:
    """Every operation DXT traced: module, file, rank, hostname, op, offset, length, start, end (s since
    the job started). Empty when the run was not traced (``dxt=False``)."""
    df = log.dxt.get(module)
    if df is None:
        return pd.DataFrame(columns=["module", "file", "rank", "hostname", "op", "offset", "length", "start", "end"])
    return df if file is None else df[df["file"] == file].reset_index(drop=True)


def counter(log: Log, name: str, *, file: str | None = None, module: str | None = None) -> int:
    """The sum of one counter (``"POSIX_WRITES"``) over the records of ``file`` (every file if None)."""
    mod = module or {"POSIX": "POSIX", "STDIO": "STDIO", "MPIIO": "MPI-IO"}[name.split("_")[0]]
    df = log.records.get(mod)
    if df is None or name not in df.columns:
        return 0
    if file is not None:
        df = df[df["file"] == file]
    return int(df[name].clip(lower=0).sum())


def golden_view(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What the golden tests pin for one log: the job, every file's row, the histograms, DXT counts."""
    log = read_log(path)
    f = files(log)
    f = f.astype(object).where(f.notna(), None)
    rows = [{k: (round(v, 9) if isinstance(v, float) else v) for k, v in r.items() if not str(k).endswith("_s")}
            for r in f.to_dict("records")]
    hist = access_sizes(log) if "POSIX" in log.records else pd.DataFrame(columns=["op", "bucket", "count"])
    dxt = {m: {"segments": int(len(d)), "bytes": int(d["length"].sum()) if len(d) else 0} for m, d in log.dxt.items()}
    return {"job": {k: log.job[k] for k in ("exe", "nprocs", "lib_ver", "log_ver")},
            "modules": sorted(log.modules), "files": rows,
            "posix_sizes": [r for r in hist[["op", "bucket", "count"]].to_dict("records") if r["count"]],
            "dxt": dxt}
