"""bpftrace: trace kernel tracepoints while Python does something, and parse what the script printed.

bpftrace needs root, the tracefs filesystem (``/sys/kernel/tracing``) and the tracepoints the
script names; :func:`why_not` says in words which of these is missing. :class:`Tracer` owns the
bpftrace process: it waits until every probe is attached (the script's ``BEGIN`` probe prints
``READY``, which bpftrace runs only after attaching the others), and on exit, error or
KeyboardInterrupt stops it with SIGINT (so it flushes what it printed) and kills it if it hangs.

The readahead script (:func:`readahead_script`) prints one line per event on one file::

    S <ns> <index> <req_count>                         readahead:page_cache_sync_ra (a miss)
    Y <ns> <index> <req_count>                         readahead:page_cache_async_ra (the marker page)
    W <ns> <index> <size> <async_size> <order>         readahead:page_cache_ra_order (a window)
    A <ns> <index> <order>                             filemap:mm_filemap_add_to_page_cache (a folio)

``index`` and sizes are in pages; ``order``: a folio of 2**order pages. The ``readahead:``
tracepoints are recent (Linux 6.x); without them only ``A`` lines are printed.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ParseError, ToolFailed, ToolMissing
from ..runner import Run, install_hint, run, tool_version, which
from .. import guard

TRACING = Path("/sys/kernel/tracing")
READY = "READY"
KINDS = {"S": "sync", "Y": "async", "W": "window", "A": "folio"}
_FIELDS = {"S": ("ns", "index", "req_count"), "Y": ("ns", "index", "req_count"),
           "W": ("ns", "index", "size", "async_size", "order"), "A": ("ns", "index", "order")}
_ATTACHING = re.compile(r"^Attaching \d+ probes?\.\.\.$")


def tracepoint_exists(name: str, tracing: Path = TRACING) -> bool:
    """``name`` is "subsystem:event", e.g. "filemap:mm_filemap_add_to_page_cache"."""
    sub, _, event = name.partition(":")
    return (tracing / "events" / sub / event / "format").exists()


def why_not(tracepoints: tuple[str, ...] = ("filemap:mm_filemap_add_to_page_cache",),
            tracing: Path = TRACING) -> str | None:
    """None when bpftrace can run the tracepoints here; else why not, in words."""
    if which("bpftrace") is None:
        return f"bpftrace is not installed here ({install_hint('bpftrace')})"
    if os.geteuid() != 0:
        return f"bpftrace needs root (you are uid {os.geteuid()})"
    if not (tracing / "events").is_dir():
        return (f"tracefs is not mounted at {tracing} (as root: mount -t tracefs nodev {tracing})")
    missing = [t for t in tracepoints if not tracepoint_exists(t, tracing)]
    if missing:
        return f"this kernel has no tracepoint {', '.join(missing)}"
    return None


def ensure_tracefs(tracing: Path = TRACING) -> str | None:
    """As root, mount tracefs at ``tracing`` when it is not mounted (a fresh machine or container whose
    init did not), so that the trace runs live; a sentence saying so, or None when nothing was done
    (mounted already, not root, no bpftrace, or no such directory). tracefs is the kernel's own view
    of its tracing, mounted once per machine like /proc: it is left mounted, as systemd would."""
    if (tracing / "events").is_dir() or os.geteuid() != 0 or which("bpftrace") is None or not tracing.is_dir():
        return None
    try:
        run(["mount", "-t", "tracefs", "nodev", str(tracing)], timeout=10)
    except (ToolFailed, ToolMissing) as e:
        return f"could not mount tracefs at {tracing}: {e}"
    return f"mounted tracefs at {tracing} (it was not: bpftrace needs it)"


def kernel_dev(st_dev: int) -> int:
    """A device number as the kernel's tracepoints print it (MKDEV: major << 20 | minor)."""
    return (os.major(st_dev) << 20) | os.minor(st_dev)


def readahead_script(path: str | os.PathLike[str], *, readahead_events: bool = True) -> str:
    """The script that prints the readahead windows and the folios added to the page cache for one
    file (by inode and device): see the module docstring for its lines."""
    st = os.stat(path)
    where = f"/args->i_ino == {st.st_ino} && args->s_dev == {kernel_dev(st.st_dev)}/"
    lines = [f'BEGIN {{ printf("{READY}\\n"); }}',
             f"tracepoint:filemap:mm_filemap_add_to_page_cache {where} "
             '{ printf("A %llu %lu %u\\n", nsecs, args->index, args->order); }']
    if readahead_events:
        lines += [f"tracepoint:readahead:page_cache_sync_ra {where} "
                  '{ printf("S %llu %lu %lu\\n", nsecs, args->index, args->req_count); }',
                  f"tracepoint:readahead:page_cache_async_ra {where} "
                  '{ printf("Y %llu %lu %lu\\n", nsecs, args->index, args->req_count); }',
                  f"tracepoint:readahead:page_cache_ra_order {where} "
                  '{ printf("W %llu %lu %u %u %u\\n", nsecs, args->index, args->size, args->async_size, '
                  "args->order); }"]
    return "\n".join(lines) + "\n"


class Tracer:
    """Run ``bpftrace -e SCRIPT`` around a block::

        with Tracer(script) as t:
            do_something()
        t.run.stdout          # everything bpftrace printed, "Attaching ..." and READY included
    """

    def __init__(self, script: str, *, start_timeout: float = 60, stop_timeout: float = 30):
        self.script = script
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.run: Run | None = None
        self._lines: list[str] = []
        self._ready = threading.Event()
        self._attached = False

    def _read(self, stream) -> None:
        for line in stream:
            self._lines.append(line)
            if line.strip() == READY:
                self._attached = True
                self._ready.set()
        self._ready.set()                       # EOF: bpftrace ended (or never started)

    def __enter__(self) -> "Tracer":
        if which("bpftrace") is None:
            raise ToolMissing("bpftrace", install_hint("bpftrace"))

        self.argv = ["bpftrace", "-e", self.script]
        self._started = time.time()
        self._t0 = time.perf_counter()
        self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      errors="replace", start_new_session=True)
        guard.watch_process_group(self._proc.pid)
        self._err: list[str] = []
        out, err = self._proc.stdout, self._proc.stderr
        assert out is not None and err is not None                # (PIPE)
        self._out_thread = threading.Thread(target=self._read, args=(out,), daemon=True)
        self._err_thread = threading.Thread(target=lambda: self._err.extend(err), daemon=True)
        self._out_thread.start()
        self._err_thread.start()
        try:
            if not self._ready.wait(self.start_timeout) or not self._attached or self._proc.poll() is not None:
                # its output ended without READY: bpftrace refused the script and is exiting (its stdout
                # can close before it is reaped: poll() alone was None now and then)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._proc.wait(10 if self._ready.is_set() else 0.1)
                self._err_thread.join(5)
                raise ToolFailed(self.argv, self._proc.poll() if self._proc.poll() is not None else -1,
                                 "".join(self._err)[-2000:] or "bpftrace did not attach its probes in time")
        except BaseException:
            self._stop()
            raise
        return self

    def _stop(self) -> int:
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)     # bpftrace flushes and exits on SIGINT
            try:
                self._proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
        self._out_thread.join(5)
        self._err_thread.join(5)
        guard.forget_process_group(self._proc.pid)
        return self._proc.returncode

    def __exit__(self, *exc: object) -> None:
        rc = self._stop()
        from datetime import datetime, timezone

        self.run = Run(argv=self.argv, stdout="".join(self._lines), stderr="".join(self._err),
                       returncode=rc, seconds=time.perf_counter() - self._t0,
                       started=datetime.fromtimestamp(self._started, timezone.utc),
                       tool_version=tool_version("bpftrace"))


def parse(text: str) -> list[dict[str, Any]]:
    """The lines of :func:`readahead_script`: one record per event, in order::

        {"kind": "window", "ns": 10439124113516, "index": 4, "size": 16, "async_size": 16, "order": 2}

    bpftrace's own lines ("Attaching N probes...", READY, blank lines) are skipped; anything else
    raises ParseError naming the line. A trace that reached READY but holds no event is an error too:
    nothing was traced."""
    records: list[dict[str, Any]] = []
    ready = False
    lines = text.splitlines()
    if lines and not text.endswith(("\n", "\r")) and lines[-1].strip():
        raise ParseError("the trace's last line is cut short (no newline at its end)",
                         line_no=len(lines), line=lines[-1][:200])
    for no, line in enumerate(lines, 1):
        s = line.strip()
        if not s or _ATTACHING.match(s):
            continue
        if s == READY:
            ready = True
            continue
        parts = s.split()
        kind = parts[0]
        if kind not in _FIELDS:
            raise ParseError(f"not a line of the readahead trace (expected one of {', '.join(_FIELDS)})",
                             line_no=no, line=line)
        names = _FIELDS[kind]
        if len(parts) != len(names) + 1 or not all(p.isascii() and p.isdigit() and len(p) <= 20 for p in parts[1:]):
            raise ParseError(f"a {KINDS[kind]} line has {' '.join(names)} (integers)", line_no=no, line=line)
        records.append({"kind": KINDS[kind], **dict(zip(names, map(int, parts[1:])))})
    if not ready:
        raise ParseError("no READY line: bpftrace never attached its probes (or this is not its output)",
                         line_no=1 if text else None, line=text.splitlines()[0] if text.strip() else None)
    if not any(r["kind"] == "folio" for r in records):
        raise ParseError("the trace holds no folio added to the page cache: nothing was read, or the file "
                         "was cached already")
    return records
