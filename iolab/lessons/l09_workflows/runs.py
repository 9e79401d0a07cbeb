"""How lesson 09 runs a program it measures (Snakemake, a staging script's steps): in a process group
of its own that the guard knows, its log read as it comes, the scratch directory sampled, the
store's counters read before and after, and all of it kept as one document (the run's record, what
a recording holds). No lesson text here.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ... import guard
from ...errors import ToolFailed, ToolTimeout
from .lab import Lab, Sampler, StoreError, contents

# the lines of SeaweedFS's /metrics a record keeps: its S3 gateway's (the rest is Go's and the
# other servers', ~45 kB a reading)
S3_PREFIX = "SeaweedFS_s3_"


def s3_lines(text: str) -> str:
    """The S3 gateway's lines of a /metrics text (samples and their # HELP/# TYPE), as served."""
    keep = []
    for line in text.splitlines(keepends=True):
        body = line[7:] if line.startswith(("# HELP ", "# TYPE ")) else line
        if body.startswith(S3_PREFIX):
            keep.append(line)
    return "".join(keep)


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


class Step:
    """One program run as a step of a record: its argv, return code, time, stdout, stderr, and the
    store's counters once it has ended."""

    def __init__(self, label: str, argv: Sequence[str], cwd: Path, env: dict[str, str]):
        self.label, self.argv, self.cwd, self.env = label, [os.fspath(a) for a in argv], cwd, env
        self.lines: list[str] = []
        self.stdout = ""
        self.returncode: int | None = None
        self.seconds = 0.0
        self.signal: str | None = None

    def run(self, *, timeout: float, kill_when: Callable[[list[str]], str | None] | None = None,
            sig_delay: float = 0.3) -> "Step":
        """Run to its end; ``kill_when(lines)`` may name a signal ("KILL", "INT") to send the whole
        group once the log so far calls for it. On timeout the group is killed (ToolTimeout); on
        KeyboardInterrupt it is sent SIGINT, given 20 s to clean up, then killed."""
        env = dict(os.environ)
        env.update(self.env)
        t0 = time.perf_counter()
        p = subprocess.Popen(self.argv, cwd=self.cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace", start_new_session=True,
                             preexec_fn=_default_sigint)
        guard.watch_process_group(p.pid)
        out: list[str] = []
        fired = threading.Event()

        def read_err() -> None:
            assert p.stderr is not None
            for line in p.stderr:
                self.lines.append(line)
                if kill_when is not None and not fired.is_set():
                    sig = kill_when(self.lines)
                    if sig:
                        fired.set()
                        time.sleep(sig_delay)
                        self.signal = sig
                        _signal_group(p.pid, getattr(signal, f"SIG{sig}"))

        def read_out() -> None:
            assert p.stdout is not None
            out.append(p.stdout.read())

        threads = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=read_out, daemon=True)]
        for t in threads:
            t.start()
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(p.pid, signal.SIGKILL)
            p.wait()
            raise ToolTimeout(self.argv, None, "".join(self.lines[-30:]),
                              f"{Path(self.argv[0]).name} did not finish in {timeout:.0f} s; it was killed") from None
        except KeyboardInterrupt:
            _signal_group(p.pid, signal.SIGINT)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                _signal_group(p.pid, signal.SIGKILL)
                p.wait()
            raise
        finally:
            if p.poll() is None:
                _signal_group(p.pid, signal.SIGKILL)
                p.wait()
            _signal_group(p.pid, signal.SIGKILL)      # whatever it left in its group (a job's bwa)
            guard.forget_process_group(p.pid)
            for t in threads:
                t.join(5)
        self.stdout = "".join(out)
        self.returncode = p.returncode
        self.seconds = time.perf_counter() - t0
        return self

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def check(self, what: str) -> "Step":
        if self.returncode != 0:
            raise ToolFailed(self.argv, self.returncode, self.stderr, f"{what} failed (exit status {self.returncode})")
        return self


def _default_sigint() -> None:
    """In the child, before exec: SIGINT as a terminal's Ctrl-C finds it. A parent started in the
    background by a shell ignores SIGINT, and an ignored signal stays ignored across exec: Snakemake
    would never see the interrupt it is sent."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Recorder:
    """The record of one experiment: steps, the counters before and after each, the scratch samples."""

    def __init__(self, lab: Lab, kind: str, scratch: Path, local: Path | None = None, **facts: Any):
        self.lab, self.scratch, self.local = lab, scratch, local
        self.doc: dict[str, Any] = {
            "kind": kind, "bucket": lab.bucket, "objects": dict(lab.objects), "host": socket.gethostname(),
            "started": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "load_before": loadavg(),
            "cpus": os.cpu_count(), "steps": [], "samples": [], **facts}
        self.doc["metrics_before"] = s3_lines(lab.metrics_text())
        dirs = [scratch] + ([local] if local is not None else [])
        self.sampler = Sampler(*dirs)
        self._t0 = time.monotonic()

    def __enter__(self) -> "Recorder":
        self.sampler.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.sampler.__exit__(*exc)
        self.doc["samples"] = self.sampler.samples
        self.doc["load_after"] = loadavg()
        self.doc["left"] = contents(self.scratch)

    def step(self, step: Step, **kw: Any) -> Step:
        t = time.monotonic() - self.sampler._t0
        step.run(**kw)
        try:
            metrics = self.lab.metrics_text()
        except ToolFailed as e:
            tail = "\n".join(step.stderr.strip().splitlines()[-8:])
            raise StoreError(f"the store stopped answering during {step.label!r} ({e.stderr}); the step's last "
                             f"lines:\n{tail}") from None
        self.doc["steps"].append({
            "label": step.label, "argv": _shown(step.argv, self.lab), "returncode": step.returncode,
            "seconds": round(step.seconds, 3), "start": round(t, 3), "signal": step.signal,
            "stdout": step.stdout, "stderr": step.stderr, "metrics": s3_lines(metrics)})
        return step


def _shown(argv: list[str], lab: Lab) -> list[str]:
    """argv as a record keeps it: the workspace's path written as $WS (no secret is ever in an argv)."""
    root = str(lab.ws.root)
    return [a.replace(root, "$WS") for a in argv]


def call(rec: Recorder, label: str, shown: Sequence[str], fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """An in-process step of a record (a read through boto3 or s3fs, no program): ``fn()``'s counted
    facts kept as the step's stdout (JSON), the store's counters read after it, as :meth:`Recorder.step`."""
    import json

    t = time.monotonic() - rec.sampler._t0
    t0 = time.perf_counter()
    facts = fn()
    seconds = time.perf_counter() - t0
    rec.doc["steps"].append({
        "label": label, "argv": _shown(list(shown), rec.lab), "returncode": 0, "seconds": round(seconds, 3),
        "start": round(t, 3), "signal": None, "stdout": json.dumps(facts), "stderr": "",
        "metrics": s3_lines(rec.lab.metrics_text())})
    return facts
