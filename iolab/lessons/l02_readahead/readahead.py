"""Lesson 02 (readahead): the experiments, and what their numbers showed, as claims.

The functions that explain take what was measured (the read-size sweep, dd's summary, residencies,
the window-growth frame, the read_ahead_kb setting) and return the :class:`iolab.explain.Claim`
list they printed, so the lesson reads right on tmpfs, on a VM's disk and on a network filesystem.
"""
from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ... import explain, fsinfo, readahead_probes as probes, recordings
from ...explain import Claim
from ...pagecache import Residency
from ...units import KiB, MiB, format_size
from ...witness import Witnessed
from ...runner import Run
from ...tools import bpftrace, dd

MEMORY_FS = fsinfo.MEMORY_FS

# the sweep's sizes: 1 B up to 1 MiB
SIZES = (1, 16, 256, 1024, 4096, 8192, 65536, MiB)

# a pass this much slower than the one before it (next smaller read size) breaks "gets faster"
NOISE = 1.25


def _memory(fstype: str) -> bool:
    return fstype in MEMORY_FS


def sweep(path: str | os.PathLike[str], sizes: Sequence[int] = SIZES, *, repeat: int = 3) -> pd.DataFrame:
    """The read-size sweep of lesson 02, ``repeat`` times, interleaved: in each round every size is read
    cold (after an eviction) and at once warm (read whole once more first), so a busy moment or the
    order cannot fall on one side only; every pass is kept (``trial`` 1..repeat, ``position`` the order
    they ran in). On a filesystem that cannot evict (tmpfs) the "cold" passes run anyway and say so in
    ``resident_before``."""
    parts = []
    for trial in range(1, repeat + 1):
        for size in sizes:
            for cache in ("cold", "warm"):
                part = probes.read_size_sweep(path, [size], cache=cache, strict=False)
                parts.append(part.assign(trial=trial))
    out = pd.concat(parts, ignore_index=True)
    out["position"] = range(1, len(out) + 1)
    return out


def _passes(frame: pd.DataFrame, cache: str, size: int) -> list[float]:
    part = frame[(frame["cache"] == cache) & (frame["read_size"] == size)]
    return [float(v) for v in part["seconds"]]


def _row(frame: pd.DataFrame, cache: str, size: int) -> pd.Series | None:
    """The median pass of a size and cache state (the middle one by time), or None."""
    part = frame[(frame["cache"] == cache) & (frame["read_size"] == size)]
    return None if part.empty else part.sort_values("seconds").iloc[(len(part) - 1) // 2]


def _spread(secs: list[float]) -> str:
    if len(secs) < 2:
        return f"{_t(secs[0])}, one pass" if secs else "no pass"
    return f"{_t(sorted(secs)[(len(secs) - 1) // 2])} (median of {len(secs)}, {_t(min(secs))}–{_t(max(secs))})"


def _t(s: float) -> str:
    return f"{s:.3f} s" if s >= 0.1 else f"{s * 1e3:.3g} ms"


def sweep_claims(frame: pd.DataFrame, *, fstype: str = "", show: bool = True) -> list[Claim]:
    """What the cold and warm read-size sweep showed, over every pass of each (:func:`sweep`'s
    interleaved trials): medians for "about as long", and the rule of :func:`iolab.explain.beyond`
    for "slower" (the slower side's fastest pass slower than the other's slowest)."""
    small, big = int(frame["read_size"].min()), int(frame["read_size"].max())
    c_small, w_small = _passes(frame, "cold", small), _passes(frame, "warm", small)
    c_big, w_big = _passes(frame, "cold", big), _passes(frame, "warm", big)
    n = int(frame["file_size"].iloc[0])
    expected = frame["read_size"].map(lambda s: -(-n // int(s)) + 1)
    exact = bool((frame["calls"] == expected).all())
    claims = [explain.expect(
        "each pass makes file size / read size calls (rounded up), plus the one that returns 0 bytes",
        explain.fact("every count as predicted", exact),
        yes=f"from {int(frame['calls'].max()):,} calls at {format_size(small)} down to "
            f"{int(frame['calls'].min()):,} at {format_size(big)}",
        no="some counts differ", why="the file changed size while it was read.", show=show)]
    claims.append(_sweep_witness(frame, fstype, show))
    cold = frame[frame["cache"] == "cold"]
    was_cold = bool(len(cold)) and bool((cold["resident_before"] == 0).all())
    not_cold = ("the 'cold' passes found the file in memory (" + (f"{fstype} keeps files in memory and "
                "nothing can be evicted" if _memory(fstype) else "the eviction did not work") +
                "), so there is nothing cold to compare with.")

    def median(secs: list[float]) -> float | None:
        return None if not secs else float(pd.Series(secs).median())

    claims.append(explain.expect(
        f"the {format_size(small)} pass takes about as long cold as warm (medians within 50%): the calls set "
        "its time, not the device",
        explain.within(f"cold {small} B", median(c_small) if was_cold else None,
                       f"warm {small} B", median(w_small), rel=0.5),
        yes=lambda ev: f"cold {_spread(c_small)}, warm {_spread(w_small)}",
        no=lambda ev: f"cold {_spread(c_small)} against warm {_spread(w_small)}",
        why="the device is slow enough that even a million calls' worth of time does not hide it (a network "
            "filesystem: seed 004's BeeGFS), or other work on this machine slowed the passes of one side.",
        missing=not_cold, show=show))
    big_rel = explain.beyond(f"warm {format_size(big)}", w_big, f"cold {format_size(big)}",
                             c_big if was_cold else [], by=2, higher=False, unit="s")
    claims.append(explain.expect(
        f"the {format_size(big)} pass is at least 2x slower cold than warm: with few calls, the device sets "
        "the time",
        big_rel,
        yes=lambda ev: f"cold {_spread(c_big)}, warm {_spread(w_big)}: even the fastest cold pass took 2x the "
                       "slowest warm one",
        no=lambda ev: f"cold {_spread(c_big)} against warm {_spread(w_big)}",
        why="what served the cold reads is nearly as fast as memory (a VM host's cache, a fast device).",
        missing=not_cold, show=show))
    sizes = sorted(int(s) for s in cold["read_size"].unique())
    rises = []
    for a, b in zip(sizes, sizes[1:]):
        r = explain.beyond(format_size(a), _passes(frame, "cold", a), format_size(b), _passes(frame, "cold", b),
                           higher=False)
        if r.holds():
            rises.append((a, b))
    first = [_passes(frame, "cold", s) for s in sizes]
    warm_big = median(w_big)
    claims.append(explain.expect(
        "the cold pass gets faster (or stays level, within its spread) as the read size grows",
        explain.fact("no cold pass is slower, beyond the spread, than the next smaller size's",
                     (not rises) if len(sizes) > 1 and was_cold else None),
        yes=(f"from {_spread(first[0])} at {format_size(sizes[0])} to {_spread(first[-1])} at "
             f"{format_size(sizes[-1])}") if sizes else "",
        no=("every " + format_size(rises[0][1]) + f" pass ({_spread(_passes(frame, 'cold', rises[0][1]))}) was "
            f"slower than every {format_size(rises[0][0])} pass ({_spread(_passes(frame, 'cold', rises[0][0]))})"
            ) if rises else "",
        why=("not the copy: copying the whole file from memory (the warm "
             f"{format_size(big)} pass) took {_t(warm_big) if warm_big is not None else 'next to nothing'}. "
             "Once the calls are few, the device sets the time, and the read size sets how much the first "
             "read waits for: the kernel's first readahead window is that read rounded up to a power of two, "
             "times 4 while it is small (get_init_ra_size in mm/readahead.c, section 2), so a larger first "
             "read waits for a larger window, where smaller reads get the rest fetched in the background "
             "while they run (the PG_readahead mark). A pass of a few milliseconds also moves with anything "
             "else this machine is doing."),
        missing=not_cold, show=show))
    return claims


def _sweep_witness(frame: pd.DataFrame, fstype: str, show: bool) -> Claim:
    """The first ground of the sweep: what each pass took from storage (the kernel's count)."""
    n = int(frame["file_size"].iloc[0])
    stored = frame["from_storage"] if "from_storage" in frame.columns else pd.Series([None] * len(frame))
    known = stored.notna().all() and len(frame)
    cold = frame[frame["cache"] == "cold"]
    warm = frame[frame["cache"] == "warm"]
    allowance = 0.05 * n + 256 * KiB
    least_cold = float(stored[cold.index].min()) if known and len(cold) else None
    most_warm = float(stored[warm.index].max()) if known and len(warm) else None
    value = None if not known else bool((least_cold is None or least_cold >= 0.95 * n) and
                                        (most_warm is None or most_warm <= allowance))
    if _memory(fstype):
        missing = (f"{fstype} has no block device: the kernel counts no storage bytes for it, so nothing "
                   "witnesses which pass came from where.")
    elif "from_storage" not in frame.columns:
        missing = "this sweep was made without the kernel's counters."
    else:
        missing = "no block device behind this file: the kernel's counters cannot witness it."
    return explain.expect(
        "every cold pass took the whole file from storage, every warm pass (next to) nothing: the kernel's "
        "own count of which layer served each",
        explain.fact("cold from storage, warm from memory", value),
        yes=lambda ev: (f"at least {format_size(least_cold)} from storage in each cold pass, at most "
                        f"{format_size(most_warm)} in each warm one, for a {format_size(n)} file"),
        no=lambda ev: (f"the cold passes took at least {format_size(least_cold)} from storage and the warm ones "
                       f"at most {format_size(most_warm)}"),
        why="the eviction before a cold pass did not take, or memory pressure evicted the file between warm passes.",
        missing=missing, show=show)


# --- the cost of one call: Python's loop against dd's ---------------------------------------------

def dd_one_byte(path: str | os.PathLike[str], *, recording: str, repeat: int = 3,
                quiet: bool = False) -> recordings.Outcome:
    """``dd if=PATH of=/dev/null bs=1``: one read(2) and one write(2) per byte, from a C program,
    ``repeat`` times when live (a replay is the one recorded run: it is never counted as several).
    Live when dd is here, else (or with IOLAB_MODE=replay) the recording. The Outcome's ``frame``:
    one row per run (trial, seconds, records_in, us_per_record, us_per_syscall); its ``data``: the
    first run's parse."""

    def live():
        r = dd.run(path, "/dev/null", bs=1, timeout=300)
        return replace(r, stdout=r.stderr)   # dd's summary is on stderr

    parts = [recordings.live_or_recorded(live, recording, requires=("dd",), parse=dd.parse, quiet=quiet)]
    while parts[0].live and len(parts) < repeat:
        parts.append(recordings.live_or_recorded(live, recording, requires=("dd",), parse=dd.parse, quiet=True))
    rows = [{"trial": i, "seconds": p.data["seconds"], "records_in": p.data["records_in"],
             "us_per_record": p.data["seconds"] / max(p.data["records_in"], 1) * 1e6} for i, p in enumerate(parts, 1)]
    frame = pd.DataFrame(rows).assign(us_per_syscall=lambda f: f["us_per_record"] / 2)
    out = recordings.combine(parts, frame, data=parts[0].data)
    first = parts[0]
    if first.recording is not None and first.recording.witness_note:
        out.witness_note = first.recording.witness_note
    return out


def call_cost_claims(frame: pd.DataFrame, dd_out: recordings.Outcome, *, show: bool = True) -> list[Claim]:
    """Python's cost per 1-byte read() (every warm 1-byte pass of the sweep) against dd's cost per
    system call (every dd run: each record of ``bs=1`` is one read(2) of the file and one write(2) to
    /dev/null, from a C program), by the course's one rule (:func:`iolab.explain.beyond`)."""
    warm = frame[(frame["cache"] == "warm") & (frame["read_size"] == 1)]
    py = [float(v) for v in warm["us_per_call"]]
    runs = dd_out.frame if dd_out.frame is not None else pd.DataFrame(
        [{"us_per_record": dd_out.data["seconds"] / max(dd_out.data["records_in"], 1) * 1e6}]).assign(
        us_per_syscall=lambda f: f["us_per_record"] / 2)
    per_call = [float(v) for v in runs["us_per_syscall"]]
    comparable = dd_out.mode == "live"
    rel = explain.beyond("Python, per call", py if py else None, "dd, per system call",
                         per_call if comparable else None, unit="µs")
    return [explain.expect(
        "a 1-byte f.read() in Python costs more than one system call does in a C program: the rest is the "
        "interpreter's own work per call",
        rel,
        yes=lambda ev: (f"{explain.spread_text(rel)}; each dd record is a read(2) and a write(2), so the system "
                        f"call is half of it. Roughly {ev['Python, per call'] - ev['dd, per system call']:.2f} µs "
                        f"({(ev['Python, per call'] - ev['dd, per system call']) / ev['Python, per call']:.0%}) of "
                        "each Python call (medians) is the loop around the system call"),
        no=lambda ev: f"{explain.spread_text(rel)} (each dd record is two system calls)",
        why="entering the kernel is expensive on this machine (speculative-execution mitigations, a kernel "
            "that audits every call, a busy virtual CPU) and dominates both programs, or other work slowed "
            "the Python passes.",
        missing=("dd was replayed from a recording, not run beside this sweep's Python passes; a per-call cost "
                 "only compares with one measured on the same machine at the same time" if not comparable
                 else "the sweep has no warm 1-byte pass"),
        close="what would separate them: more passes of each, an idle machine", show=show)]


# --- the readahead window -------------------------------------------------------------------------

def windows(path: str | os.PathLike[str], advices: Sequence[str] = ("normal", "sequential", "random")
            ) -> dict[str, Residency]:
    """One 1-byte read at offset 0 of the evicted file, once per posix_fadvise advice."""
    return {a: probes.window(path, 1, a, strict=False) for a in advices}


def window_claims(wins: Mapping[str, Residency], ra_kb: int | None, *, show: bool = True) -> list[Claim]:
    """The pages one 1-byte read brought in, against the kernel's rule (get_init_ra_size)."""
    some = next(iter(wins.values()))
    ps = some.page_size
    full = some.pages
    mem = some.fstype in MEMORY_FS
    claims = []
    max_pages = None if ra_kb is None else ra_kb * 1024 // ps
    why_mem = (f"{some.fstype} keeps the whole file in memory: it cannot be evicted, and every page is resident "
               "whatever you read.")
    for advice in ("normal", "sequential"):
        if advice not in wins:
            continue
        r = wins[advice]
        mp = None if max_pages is None else (2 * max_pages if advice == "sequential" else max_pages)
        want = None if not mp else min(probes.initial_window_pages(1, mp), full)
        claims.append(explain.expect(
            f"with {advice.upper()} advice, one 1-byte read brings in the kernel's first window: "
            + (f"{want} pages" if want else "a few pages"),
            explain.within("resident", r.resident if r.reliable and not mem else None, "kernel's first window",
                           want, rel=0),
            yes=f"{r.resident:,} pages ({format_size(r.resident_bytes)}) resident",
            no=f"{r.resident:,} pages were resident",
            why=(why_mem if mem else "a filesystem that caches in large folios rounds the window up to a folio, "
                 "and a filesystem with its own readahead (NFS, Lustre, FUSE) decides differently."),
            missing=(why_mem if mem else "there is no readahead setting for this file" if max_pages is None else
                     "the kernel would not tell this process the file's residency"),
            show=show))
    if "random" in wins:
        r = wins["random"]
        claims.append(explain.expect(
            "with RANDOM advice readahead is off: only the page that holds the byte is read",
            explain.within("resident", r.resident if r.reliable and not mem else None, "one page", 1, rel=0),
            yes="1 page resident", no=f"{r.resident:,} pages were resident",
            why="the filesystem reads ahead on its own (NFS, Lustre, a FUSE daemon).",
            missing=why_mem if mem else "the kernel would not tell this process the file's residency", show=show))
    return claims


def growth_claims(growth: pd.DataFrame, *, fstype: str = "", show: bool = True) -> list[Claim]:
    """Sequential 4 KiB reads after an eviction: normal advice runs ahead, RANDOM follows exactly."""
    claims = []
    mem = fstype in MEMORY_FS
    why_mem = f"{fstype} keeps the whole file in memory: nothing is read ahead, every page is there already."
    normal = growth[growth["advice"] == "normal"]
    if len(normal):
        last = normal.iloc[-1]
        claims.append(explain.expect(
            "after the sequential reads, the cache holds at least twice the pages asked for (readahead "
            "ran ahead)",
            explain.greater("resident", None if mem else int(last["resident"]), "asked for",
                            int(last["pages_read"]), by=2),
            yes=f"{int(last['resident']):,} pages resident after asking for {int(last['pages_read']):,}, "
                f"in {normal['resident'].nunique()} steps",
            no=f"{int(last['resident']):,} pages resident after asking for {int(last['pages_read']):,}",
            why="readahead was still in flight when the residency was taken (a page counts only once "
                "its read completed), or readahead is off for this device (read_ahead_kb = 0).",
            missing=why_mem, show=show))
    rnd = growth[growth["advice"] == "random"]
    if len(rnd):
        exact = bool((rnd["resident"] == rnd["pages_read"]).all())
        last = rnd.iloc[-1]
        claims.append(explain.expect(
            "with RANDOM advice the cache holds exactly the pages asked for, read after read",
            explain.fact("resident == asked for, every read", None if mem else exact),
            yes=f"{int(last['resident']):,} pages for {int(last['pages_read']):,} asked",
            no=f"{int(last['resident']):,} pages resident for {int(last['pages_read']):,} asked",
            why="the filesystem prefetches on its own, whatever the advice.", missing=why_mem, show=show))
    return claims


def read_ahead_kb_claim(ra: probes.ReadAhead, *, show: bool = True) -> list[Claim]:
    """This device's readahead maximum against the kernel's default (VM_READAHEAD_PAGES, 128 KiB)."""
    default = probes.KERNEL_DEFAULT_KB
    return [explain.expect(
        f"this device keeps the kernel's default readahead maximum, {default} KiB",
        explain.within("read_ahead_kb", ra.kb, "kernel default", default, rel=0),
        yes=f"read_ahead_kb = {ra.kb} KiB",
        no=lambda ev: (f"read_ahead_kb = {ra.kb:,} KiB here, {ra.kb / default:g}x the default" if ra.kb else
                       "read_ahead_kb = 0 here: readahead is off"),
        why="a driver, a udev rule or an administrator can change it (blockdev --setra, or "
            "/sys/block/DEVICE/queue/read_ahead_kb). Network and parallel filesystems often use several "
            "MiB, to keep a long pipe full; some cloud images raise it for their virtual disks.",
        missing=ra.reason, show=show)]


# --- seed 004's read-size demo --------------------------------------------------------------------

def seed004_sweep() -> pd.DataFrame:
    """Seed 004's published read-demo times (10 MiB file, unbuffered f.read(n)) with calls and µs per call."""
    pub = recordings.published("seed004-read-size-demo")
    pub["calls"] = -(-pub["file_size"] // pub["read_size"]) + 1
    pub["us_per_call"] = pub["seconds"] / pub["calls"] * 1e6
    return pub


def seed004_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """µs per call by read size: seed 004's four directories beside this machine's warm passes of
    ``sweep`` (:func:`iolab.readahead_probes.read_size_sweep`), this machine's as the MEDIAN of its passes
    (one slow pass, a neighbour's burst, moved a mean: 29 µs per call at 4 KiB against 2 µs at 8 KiB)."""
    seed = seed004_sweep()
    seed["source"] = "seed 004, " + seed["directory"] + " (" + seed["filesystem"] + ")"
    here = sweep[(sweep["cache"] == "warm") & sweep["read_size"].isin(seed["read_size"])]
    passes = int(here.groupby("read_size").size().max()) if len(here) else 0
    here = here.assign(source=f"this machine (1 MiB file, warm: median of {passes} passes)")
    table = pd.concat([seed[["read_size", "us_per_call", "source"]], here[["read_size", "us_per_call", "source"]]])
    return table.pivot_table(index="read_size", columns="source", values="us_per_call", aggfunc="median",
                             sort=False).round(2)


# --- readahead seen from the device's counters --------------------------------------------------------

def one_byte(path: str | os.PathLike[str], advices: Sequence[str] = ("normal", "random")
             ) -> dict[str, tuple[Residency, Witnessed]]:
    """One 1-byte read at offset 0 of the evicted file, per advice, with the kernel's witness."""
    return {a: probes.window_witnessed(path, 1, a, strict=False) for a in advices}


def one_byte_frame(results: Mapping[str, tuple[Residency, Witnessed]]) -> pd.DataFrame:
    rows = []
    for advice, (res, w) in results.items():
        rows.append({"advice": advice, "bytes asked": 1, "pages resident": res.resident,
                     "from storage": None if w.device is None else w.own_read,
                     "device read": w.device_read, "note": "; ".join(w.notes)})
    return pd.DataFrame(rows)


def one_byte_claims(results: Mapping[str, tuple[Residency, Witnessed]], ra_kb: int | None, *,
                    show: bool = True) -> list[Claim]:
    """What one 1-byte cold read made the kernel fetch from storage, against its rule."""
    claims = []
    for advice, (res, w) in results.items():
        ps = res.page_size
        if advice == "random":
            want, why_want = 1, "readahead is off: only the page that holds the byte"
        elif ra_kb:
            mp = ra_kb * KiB // ps * (2 if advice == "sequential" else 1)
            want, why_want = probes.initial_window_pages(1, mp), "the kernel's first readahead window"
        else:
            want, why_want = None, ""
        own = None if w.device is None else w.own_read
        missing = ("; ".join(w.notes) + "." if w.device is None else
                   "there is no readahead setting for this file.")
        claims.append(explain.expect(
            f"with {advice.upper()} advice, one 1-byte cold read makes the kernel fetch "
            + (f"{format_size(want * ps)} from storage ({why_want})" if want else "its first window from storage"),
            explain.within("from storage", own, "expected", None if want is None else want * ps, rel=0),
            yes=lambda ev, w=w: (f"read_bytes grew by {format_size(w.own_read)}; the device read "
                                 f"{format_size(w.device_read)} in that time, for everyone"),
            no=lambda ev, w=w: (f"read_bytes grew by {format_size(w.own_read)} (the device read "
                                f"{format_size(w.device_read)})"),
            why=("this filesystem reads in larger folios or blocks than a page, and a whole folio is fetched "
                 "at once; or the filesystem reads ahead on its own."),
            missing=missing, show=show))
    return claims


GROWTH_RECORDING = "bpftrace/readahead-growth-ext4-64m"


@dataclass
class Growth(recordings.Outcome):
    """:func:`growth_trace`'s outcome: ``data`` the (folios, windows) frames, ``frame`` the windows,
    and what the trace depends on."""

    read_ahead_kb: int | None = None     # the device's read_ahead_kb (the window's ceiling)
    file_bytes: int | None = None        # the size of the file read


def growth_trace(path: str | os.PathLike[str], *, recording: str = GROWTH_RECORDING,
                 read_size: str = "4KiB", quiet: bool = False) -> Growth:
    """The readahead windows and folios of a sequential cold read, traced with bpftrace where this
    learner may (root, tracefs, bpftrace, the filemap tracepoint), else (or with IOLAB_MODE=replay)
    the recording. ``out.data`` = (folios, windows) frames (:func:`iolab.readahead_probes.growth_frames`);
    ``out.witness`` the read's witness; ``out.read_ahead_kb``, ``out.file_bytes``. As root, tracefs
    is mounted first when it is not (:func:`iolab.tools.bpftrace.ensure_tracefs`), and the lesson
    says so."""

    def unavailable() -> str | None:
        mounted = bpftrace.ensure_tracefs()
        if mounted and not quiet:
            print(mounted)
        fstype = fsinfo.fstype(Path(path).parent) if Path(path).parent.exists() else ""
        if bpftrace.why_not() is None and _memory(fstype):
            return f"{fstype} keeps files in memory: reading one adds nothing to the page cache, there is no readahead to trace"
        return bpftrace.why_not()

    def live() -> Run:
        run, w = probes.trace_growth(path, read_size)
        return replace(run, witness=w)

    out = recordings.live_or_recorded(live, recording, unavailable=unavailable, quiet=True,
                                      parse=lambda text: probes.growth_frames(bpftrace.parse(text)),
                                      frame=lambda data: data[1], cls=Growth)
    if out.live:
        out.provenance = (f"LIVE bpftrace run here ({socket.gethostname()}, {out.run.started:%Y-%m-%d %H:%M} UTC): "
                          "readahead and filemap tracepoints during a sequential cold read")
        out.read_ahead_kb, out.file_bytes = probes.read_ahead_kb(path).kb, os.stat(path).st_size
    else:
        rec = out.recording
        out.witness, out.witness_note = rec.witness(), rec.witness_note
        fs = rec.meta.get("filesystem", {})
        out.read_ahead_kb, out.file_bytes = fs.get("read_ahead_kb"), fs.get("file_bytes")
    if not quiet:
        print(out.provenance)
    return out


def record_growth(path: str | os.PathLike[str], save_as: str = GROWTH_RECORDING, *, read_size: str = "4KiB",
                  root=None) -> "os.PathLike[str]":
    """Make the recording :func:`growth_trace` replays: a live trace, saved with its witness, the
    file's size and the device's read_ahead_kb."""
    run, w = probes.trace_growth(path, read_size)
    size = os.stat(path).st_size
    return recordings.save(run, save_as, fs_path=path, witness=w, root=root,
                           fs_facts={"read_ahead_kb": probes.read_ahead_kb(path).kb, "file_bytes": size,
                                     "read_size": read_size},
                           notes=f"bpftrace of readahead:page_cache_{{sync,async}}_ra, readahead:page_cache_ra_order "
                                 f"and filemap:mm_filemap_add_to_page_cache while Python read a {format_size(size)} "
                                 f"file, evicted first, sequentially in {read_size} os.read() calls")


def growth_trace_claims(out: Growth, *, show: bool = True) -> list[Claim]:
    """What the traced windows and folios showed: a small first window, growth to read_ahead_kb,
    larger folios as the windows grow, and every byte fetched once (the witness)."""
    folios, windows = out.data
    ra_kb = out.read_ahead_kb
    size = out.file_bytes
    ps = 4096
    max_pages = None if not ra_kb else ra_kb * KiB // ps
    have_windows = len(windows) > 0
    no_windows = "this kernel has no readahead tracepoints (Linux 6.x added them): only the folios were traced."
    first = int(windows["size"].iloc[0]) if have_windows else None
    want_first = probes.initial_window_pages(1, max_pages) if max_pages else None
    claims = [explain.expect(
        "the first window, opened by the first 4 KiB read's miss, is the kernel's first window for a 1-page "
        f"read: {want_first} pages" if want_first else "the first window is small",
        explain.within("first window", first, "kernel's rule", want_first, rel=0),
        yes=f"{first} pages", no=f"it was {first} pages",
        why="a filesystem that caches in large folios rounds the window up to a folio.",
        missing=no_windows if not have_windows else "there is no readahead setting for this file.",
        show=show)]
    biggest = int(windows["size"].max()) if have_windows else None
    claims.append(explain.expect(
        f"the windows grow until they reach the readahead maximum, read_ahead_kb = {ra_kb:,} KiB "
        f"({max_pages:,} pages)" if max_pages else "the windows grow to the readahead maximum",
        explain.within("largest window", biggest, "read_ahead_kb in pages", max_pages, rel=0),
        yes=lambda ev: (f"from {first} pages to {biggest:,} in {int((windows['size'] < biggest).sum()) + 1} "
                        "windows"),
        no=lambda ev: f"the largest window was {biggest:,} pages",
        why="the file ended before the windows reached the maximum (each window is at most 4x, then 2x, the "
            "one before).",
        missing=no_windows if not have_windows else "the recording does not say the device's read_ahead_kb.",
        show=show))
    orders = list(folios["order"])
    claims.append(explain.expect(
        "the folios grow with the windows: the last ones are larger than the first (higher order)",
        explain.greater("last order", orders[-1] if orders else None, "first order", orders[0] if orders else None),
        yes=lambda ev: (f"order {orders[0]} ({1 << orders[0]} page) at first, order {orders[-1]} "
                        f"({format_size((1 << orders[-1]) * ps)}) at the end"),
        no=lambda ev: f"order {orders[0]} at first, {orders[-1]} at the end",
        why="this filesystem caches files in single pages only (no large folios).", show=show))
    w = out.witness
    claims.append(explain.expect(
        "the kernel fetched the whole file from storage once: read_bytes grew by the file's size",
        explain.within("from storage", None if w is None or w.device is None else w.own_read, "file size", size,
                       rel=0.01),
        yes=lambda ev: f"{format_size(w.own_read)} for a {format_size(size)} file",
        no=lambda ev: f"{format_size(w.own_read)} for a {format_size(size)} file",
        why="part of the file was cached already, or readahead read beyond what was read.",
        missing=out.witness_note or "the read had no witness.", show=show))
    return claims
