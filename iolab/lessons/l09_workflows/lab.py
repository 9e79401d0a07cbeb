"""Lesson 09's set-up: the course's SeaweedFS with its counters on, a bucket holding the data set,
and the pieces every experiment shares (a run's environment, the scratch sampler, a directory's
contents). No experiment and no claim here.

    with open_lab(ws) as lab:     # ToolMissing / the store's own errors, nothing left behind
        lab.ep, lab.bucket, lab.data, lab.objects   # the endpoint, "training", the Dataset, key -> size
        lab.counters()            # the store's S3 counters now (iolab.tools.seaweedfs)
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ... import recordings
from ... import workspace as _workspace
from ...errors import IolabError, ToolMissing
from ...objectstore.endpoint import Endpoint
from ...objectstore.servers import local_s3, which_s3_server
from ...runner import install_hint, which
from ...tools import seaweedfs
from . import data as _data

BUCKET = "training"
SNAKEFILE = Path(__file__).with_name("Snakefile")
WORKFLOW_TOOLS = ("snakemake", "bwa", "samtools", "bcftools", "wgsim")
ON_PATH = ("bwa", "samtools", "bcftools", "wgsim", "s3cmd")


class StoreError(IolabError):
    """The object store refused or failed: a missing bucket, wrong keys, a store that is gone."""


def snakemake_exe() -> list[str]:
    """How to start Snakemake: this Python with ``-m snakemake`` (the lesson's own interpreter: a
    launcher script's #! may name an interpreter a student cannot run); ToolMissing with how to
    install it when this Python has no snakemake (or is older than 3.11, which snakemake 9 needs)."""
    if sys.version_info < (3, 11) or importlib.util.find_spec("snakemake") is None \
            or importlib.util.find_spec("snakemake_storage_plugin_s3") is None:
        raise ToolMissing("snakemake", install_hint("snakemake"))
    return [sys.executable, "-m", "snakemake"]


def missing_tools() -> list[str]:
    out = []
    for t in WORKFLOW_TOOLS:
        if t == "snakemake":
            try:
                snakemake_exe()
            except ToolMissing:
                out.append(t)
        elif which(t) is None:
            out.append(t)
    return out


def client(ep: Endpoint):
    """A boto3 S3 client for the endpoint (path-style, the endpoint's region, 3 tries)."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=ep.url, aws_access_key_id=ep.access_key,
                        aws_secret_access_key=ep.secret_key, region_name=ep.region,
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                                      connect_timeout=5, read_timeout=30))


def listing(cl, bucket: str, prefix: str = "") -> dict[str, int]:
    """key -> size of the bucket's objects (StoreError naming what the store said)."""
    from botocore.exceptions import BotoCoreError, ClientError

    out: dict[str, int] = {}
    try:
        for page in cl.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for o in page.get("Contents", []):
                out[o["Key"]] = int(o["Size"])
    except ClientError as e:
        raise StoreError(explain_store_error(e, bucket)) from None
    except BotoCoreError as e:
        raise StoreError(f"the store did not answer: {e}") from None
    return out


def explain_store_error(e: Exception, bucket: str) -> str:
    code = getattr(e, "response", {}).get("Error", {}).get("Code", "")
    if code in ("NoSuchBucket", "404"):
        return f"bucket {bucket!r} does not exist in this store (make it, or check the name)"
    if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403"):
        return f"the store refused the keys ({code}): wrong access key or secret for bucket {bucket!r}"
    return f"the store said {code or e}"


@dataclass
class Lab:
    ws: _workspace.Workspace
    ep: Endpoint
    bucket: str
    data: _data.Dataset
    objects: dict[str, int] = field(default_factory=dict)    # key -> size, as uploaded
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    def close(self) -> None:
        """Stop the store (its data goes with it); the lab's scratch directories stay in the workspace."""
        self.stack.close()

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def describe(self) -> str:
        return (f"{self.ep.describe()}: bucket {self.bucket!r} holds {len(self.objects)} objects, "
                f"{sum(self.objects.values()):,} bytes (the data set, made here: seed {self.data.seed}, "
                f"{self.data.reads:,} reads per sample)")

    def counters(self) -> seaweedfs.S3Counters:
        return seaweedfs.counters(seaweedfs.parse(self.metrics_text()))

    def metrics_text(self) -> str:
        return seaweedfs.scrape(self.ep.metrics_url, timeout=10)

    def client(self):
        return client(self.ep)

    def env(self, workdir: Path) -> dict[str, str]:
        """A workflow's environment: the store (Snakemake's S3 plugin reads these), and every
        directory Snakemake or its jobs write besides the run's own (its source cache, TMPDIR) in
        the workspace."""
        tmp = workdir / "tmp"
        tmp.mkdir(exist_ok=True)
        cache = Path(self.ws.mkdir("l09-cache"))
        return {"SNAKEMAKE_STORAGE_S3_ENDPOINT_URL": self.ep.url, "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": self.ep.access_key,
                "SNAKEMAKE_STORAGE_S3_SECRET_KEY": self.ep.secret_key, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(cache),
                "AWS_EC2_METADATA_DISABLED": "true"}


@contextlib.contextmanager
def open_lab(ws: _workspace.Workspace | None = None, *, bucket: str = BUCKET, reads: int = _data.READS,
             seed: int = _data.SEED) -> Iterator[Lab]:
    """SeaweedFS with its metrics on (in the session's private network where there is one), the data
    set made and uploaded; the store stopped and its data removed on exit, error or interrupt."""
    w = ws if ws is not None else _workspace.session()
    ds = _data.make(w, reads=reads, seed=seed)
    with local_s3(w, server="seaweedfs", metrics=True) as ep:
        cl = client(ep)
        cl.create_bucket(Bucket=bucket)
        w.reserve(ds.nbytes)                  # the store's copy, in its data directory in the workspace
        _data.upload(ds, cl, bucket)
        yield Lab(w, ep, bucket, ds, listing(cl, bucket, "data/"))


def _why_not() -> str | None:
    snakemake_exe()                              # ToolMissing: the door says so
    if which_s3_server() != "seaweedfs":
        raise ToolMissing("weed", install_hint("weed"))
    return None


def start(ws: _workspace.Workspace | None = None, *, quiet: bool = False) -> Lab | None:
    """The lesson's lab, kept open across a notebook's cells (``close()`` at the end; a killed kernel's
    guard stops the store), or None when the lesson replays (a tool missing, IOLAB_MODE=replay), said
    why. An error or an interrupt while starting stops whatever had started."""
    say = (lambda *a: None) if quiet else print
    why = recordings.replay_reason(ON_PATH, _why_not)     # IOLAB_MODE=live: raises what is missing
    if why is not None:
        say(f"{why}: no store is started; every run below is a recording.")
        return None
    stack = contextlib.ExitStack()
    try:
        lab = stack.enter_context(open_lab(ws))
    except BaseException:
        stack.close()
        raise
    lab.stack = stack
    say(lab.describe())
    return lab


# --- what a run leaves, and the high-water mark ------------------------------------------------------

def tree_bytes(root: Path) -> int:
    """Bytes in the regular files under root (their sizes; symlinks not followed, mounts not entered)."""
    total = 0
    dev = None
    for dirpath, dirnames, filenames in os.walk(root):
        try:
            st = os.lstat(dirpath)
        except OSError:
            continue
        if dev is None:
            dev = st.st_dev
        elif st.st_dev != dev:
            dirnames[:] = []
            continue
        for f in filenames:
            try:
                s = os.lstat(os.path.join(dirpath, f))
            except OSError:
                continue
            if not os.path.islink(os.path.join(dirpath, f)):
                total += s.st_size
    return total


def contents(root: Path) -> dict[str, int]:
    """relative path -> size of every regular file under root."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = Path(dirpath) / f
            try:
                if not p.is_symlink():
                    out[str(p.relative_to(root))] = p.stat().st_size
            except OSError:
                pass
    return out


class Sampler:
    """The bytes under some directories every ``every`` seconds, in a thread: [(t, bytes...)]."""

    def __init__(self, *dirs: Path, every: float = 0.2):
        self.dirs, self.every = dirs, every
        self.samples: list[list[float]] = []
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def sample(self) -> None:
        self.samples.append([round(time.monotonic() - self._t0, 3), *[tree_bytes(d) for d in self.dirs]])

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.every)

    def __enter__(self) -> "Sampler":
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sample()
