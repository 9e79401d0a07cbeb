"""Re-make the recordings lesson 05 replays, with mdtest 3.3.0 and 4.0.0 (real runs only).

For each version (``/tmp/ior-<version>/bin/mdtest``, put first on PATH), 2 ranks under mpirun:

* ``rates-{tmp,shm}-V``: the seed's command scaled down, ``mdtest -n 10 -i 10 -y``, on /tmp and /dev/shm;
* ``syncs-seed-tmp-V`` / ``syncs-write4k-tmp-V``: ``strace -f -c`` of that command, and of the same
  with ``-w 4096``, counting the sync calls (fsync ...) and mkdir/rmdir/unlink;
* ``write4k-{tmp,shm}-V``: ``mdtest -n 10 -i 10 -y -w 4096``; these four with ``-v`` (each iteration's
  rates: the trials), only these: ``--rates-only``;
* ``strace-one-file-{tmp,shm}-V``: one rank, one 4 KiB file with -y in each of 6 iterations (a warm-up and
  5 trials), ``strace -T -P <each file>``; only these: ``--one-file-only``;
* ``removals-tmp-V``, ``removals-shm-V``, ``removals-write4k-tmp-V``: ``strace -f -T`` of the seed's
  command (and of ``-w 4096 -y``), only unlink/rmdir/fsync, each call with its time;
* as root only: ``removals-ext4-<variant>-V`` on fresh 512 MiB ext4 images loop-mounted under /tmp:
  with and without a journal (``mkfs.ext4 -O ^has_journal``), with and without ``-o discard``;
* ``phases-{tmp,shm}-V-{create,stat,remove}`` and, as root, ``phases-ext4-<variant>-V-...``: the
  seed's command with one iteration and 100 items per rank (``metadata.PHASE_RUN``), one mdtest run
  per phase (-C, -T, -r) on one tree, each witnessed (its meta keeps the bytes mdtest's processes
  and the device moved), and ``...-device`` (JSON): the device's stat file around each phase
  (requests, bytes, discards, busy time), and for a journalled ext4 in the seconds after the last
  phase too (``metadata.settle_s``: one commit interval and a half). Only these:
  ``-m recorders.l05_mdtest --phases-only``.

Each recording's meta keeps the filesystem's mount options and, for ext4, whether it has a journal
(``iolab.lessons.l05_mdtest.metadata.fs_meta``): the lesson's sentences depend on both.

Run: ``.venv/bin/python -m recorders.l05_mdtest [--versions 3.3.0 4.0.0] [--no-loop]``.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from recorders import ROOT


from iolab import recordings, runner
from iolab.lessons.l05_mdtest import metadata, calls as metadata_strace
from iolab.tools import mdtest

HOST = "2-core VM (Debian 12, 24 GiB), virtio disk; Open MPI 4.1.4"
SEED = mdtest.Options(files=10, iterations=10, sync=True)
WRITE4K = replace(SEED, write_bytes=4096)
PLACES = {"tmp": "/tmp", "shm": "/dev/shm"}
# name: (mkfs.ext4 features, mount options)
EXT4_VARIANTS = {
    "journal": ([], []),
    "journal-discard": ([], ["discard"]),
    "nojournal": (["-O", "^has_journal"], []),
    "nojournal-discard": (["-O", "^has_journal"], ["discard"]),
}


def save(run, name: str, path: str, notes: str, *, stream: str = "stdout", tool_version: str | None = None) -> None:
    out = recordings.save(run, f"mdtest/{name}", fs_path=path, fs_facts=metadata.fs_meta(path),
                          host_description=HOST, notes=notes, stream=stream, tool_version=tool_version)
    print(f"  {out.relative_to(ROOT)}")


@contextlib.contextmanager
def loop_ext4(features: list[str], options: list[str]):
    """A fresh sparse ext4 image under /tmp, loop-mounted; unmounted and removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="iolab-ext4-", dir="/tmp"))
    img, mnt = base / "fs.img", base / "mnt"
    mnt.mkdir()
    try:
        runner.run(["truncate", "-s", "512M", str(img)], timeout=30)
        runner.run(["mkfs.ext4", "-q", "-F", *features, str(img)], timeout=120)
        runner.run(["mount", "-o", ",".join(["loop", *options]), str(img), str(mnt)], timeout=60)
        try:
            yield str(mnt)
        finally:
            runner.run(["umount", str(mnt)], timeout=60, check=False)
    finally:
        img.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            mnt.rmdir()
            base.rmdir()


def record(version: str, loop: bool) -> None:
    os.environ["PATH"] = f"/tmp/ior-{version}/bin:" + os.environ["PATH"]
    assert mdtest.installed_version() == version, mdtest.installed_version()
    seed, w4k = " ".join(SEED.argv()[1:]), " ".join(WRITE4K.argv()[1:])
    print(f"mdtest {version}")
    record_rates(version)
    for short, path in PLACES.items():
        record_one_file(version, short, path)
        save(metadata_strace.trace_removals(SEED, 2, on=path), f"removals-{short}-{version}", path, stream="file",
             notes=f"strace -f -tt -T -e trace=unlink,rmdir,fsync of `mpirun -np 2 mdtest {seed}` on {path}: "
                   "each removal with its time (files are empty: -w 0)")
    path = PLACES["tmp"]
    save(metadata_strace.count_syncs(SEED, 2, on=path), f"syncs-seed-tmp-{version}", path, stream="file",
         notes=f"strace -f -c of `mpirun -np 2 mdtest {seed}` on {path}: the sync calls (fsync, fdatasync, sync, "
               "syncfs, sync_file_range) and mkdir/rmdir/unlink; fsync is absent: -y without -w syncs nothing")
    save(metadata_strace.count_syncs(WRITE4K, 2, on=path), f"syncs-write4k-tmp-{version}", path, stream="file",
         notes=f"strace -f -c of `mpirun -np 2 mdtest {w4k}` on {path}: one fsync per file, "
               f"{mdtest.expected_fsyncs(WRITE4K, 2)} in all")
    save(metadata_strace.trace_removals(WRITE4K, 2, on=path), f"removals-write4k-tmp-{version}", path, stream="file",
         notes=f"strace -f -tt -T -e trace=unlink,rmdir,fsync of `mpirun -np 2 mdtest {w4k}` on {path}: "
               "each file owns a 4 KiB block when it is removed")
    if not loop:
        return
    for name, (features, options) in EXT4_VARIANTS.items():
        with loop_ext4(features, options) as mnt:
            f = metadata.facts(mnt)
            save(metadata_strace.trace_removals(SEED, 2, on=mnt), f"removals-ext4-{name}-{version}", mnt, stream="file",
                 notes=f"strace -f -tt -T -e trace=unlink,rmdir,fsync of `mpirun -np 2 mdtest {seed}` on a fresh "
                       f"512 MiB ext4 image loop-mounted under /tmp as root ({f.describe()}; mkfs.ext4 "
                       f"{' '.join(features) or '(defaults)'}, mount -o {','.join(['loop', *options])})")


def record_rates(version: str) -> None:
    """``rates-{tmp,shm}-V`` and ``write4k-{tmp,shm}-V``, with ``-v`` (``metadata.with_trials``): each
    iteration's rate of each phase is printed, the trials the lesson judges (``mdtest.parse_iterations``).
    The load average when each ran goes into its notes."""
    seed, w4k = (" ".join(metadata.with_trials(o).argv()[1:]) for o in (SEED, WRITE4K))
    for short, path in PLACES.items():
        save(mdtest.run(metadata.with_trials(SEED), 2, on=path), f"rates-{short}-{version}", path,
             f"seed 001's mdtest -n 10 -i 200 -y scaled to `{seed}`, 2 ranks, on {path}; -v prints each "
             f"iteration's rates (the trials); {load()}")
        save(mdtest.run(metadata.with_trials(WRITE4K), 2, on=path), f"write4k-{short}-{version}", path,
             f"`{w4k}`, 2 ranks, on {path}: each file gets 4 KiB, then an fsync; -v prints each iteration's "
             f"rates (the trials); {load()}")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores when it ran"


def record_one_file(version: str, short: str, path: str) -> None:
    """strace-one-file-<short>-<version>: one mdtest process, one 4 KiB file with -y per iteration, the
    first iteration a warm-up and the next five the trials lesson 05's claims compare."""
    load = os.getloadavg()[0]
    r = metadata_strace.one_file_trace(path)
    n = metadata_strace.ONE_FILE.iterations
    save(r, f"strace-one-file-{short}-{version}", path, stream="file",
         tool_version=f"{version} (under {r.tool_version})",
         notes=f"strace -f -tt -T -y -P <each iteration's file> of one mdtest {version} process (no mpirun) "
               f"creating one 4 KiB file with -y (fsync) in each of {n} iterations on {path}: only the syscalls "
               f"on those files; the first iteration is a warm-up, the other {n - 1} are trials; the machine's "
               f"load average (1 min) when it started: {load:.1f} on {os.cpu_count()} cores")


def save_phases(ph, name: str, path: str, notes: str) -> None:
    """The phases of metadata.measure_phases: one recording per phase (its witness in the meta) and the
    device's counts around each (JSON)."""
    import json

    for phase, m in ph.phases.items():
        out = recordings.save(m.run, metadata.PHASES_CASSETTE.part(f"mdtest/{name}", f"-{phase}"), fs_path=path, fs_facts=metadata.fs_meta(path),
                              host_description=HOST, witness=m.witness,
                              notes=f"{notes}: the {phase} phase ({mdtest.PHASES[phase]}), its own mdtest run on the "
                                    "tree the previous phases left; the witness covers this run")
        print(f"  {out.relative_to(ROOT)}")
    r = ph.run
    text = json.dumps({"phases": ph.device, "settle_s": ph.settle_s, "directories": ph.directories}, indent=2) + "\n"
    out = recordings.save(text, metadata.PHASES_CASSETTE.part(f"mdtest/{name}", "-device"), ext="json", argv=r.argv, stream="file",
                          tool_version=r.tool_version, fs_path=path, fs_facts=metadata.fs_meta(path),
                          host_description=HOST,
                          notes=f"{notes}: what the block device's stat file (/sys/class/block/<dev>/stat: requests, "
                                "sectors read and written, discard requests and sectors, ms busy) moved during each "
                                "phase, for everyone; 'after': in the settle_s seconds after the last phase "
                                "(a journal commits later); measured by iolab (metadata.run_phases)")
    print(f"  {out.relative_to(ROOT)}")


def record_phases(version: str, loop: bool) -> None:
    os.environ["PATH"] = f"/tmp/ior-{version}/bin:" + os.environ["PATH"]
    assert mdtest.installed_version() == version, mdtest.installed_version()
    cmd = " ".join(metadata.PHASE_RUN.argv()[1:])
    print(f"mdtest {version}: phases")
    for short, path in PLACES.items():
        ph = metadata.measure_phases(path, metadata.PHASE_RUN, recording="mdtest/none",
                                     settle_s=metadata.settle_s(metadata.facts(path)), quiet=True)
        save_phases(ph, f"phases-{short}-{version}", path, f"`mpirun -np 2 mdtest {cmd}` on {path}")
    if not loop:
        return
    for name, (features, options) in EXT4_VARIANTS.items():
        with loop_ext4(features, options) as mnt:
            f = metadata.facts(mnt)
            ph = metadata.measure_phases(mnt, metadata.PHASE_RUN, recording="mdtest/none",
                                         settle_s=metadata.settle_s(f), quiet=True)
            save_phases(ph, f"phases-ext4-{name}-{version}", mnt,
                        f"`mpirun -np 2 mdtest {cmd}` on a fresh 512 MiB ext4 image loop-mounted under /tmp as root "
                        f"({f.describe()}; mkfs.ext4 {' '.join(features) or '(defaults)'}, mount -o "
                        f"{','.join(['loop', *options])})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versions", nargs="+", default=["3.3.0", "4.0.0"])
    ap.add_argument("--no-loop", action="store_true", help="skip the loop-mounted ext4 images (they need root)")
    ap.add_argument("--phases-only", action="store_true", help="record only the witnessed phases (section 6)")
    ap.add_argument("--rates-only", action="store_true", help="record only rates-* and write4k-* (sections 3-4)")
    ap.add_argument("--one-file-only", action="store_true", help="record only the one-file traces (section 5)")
    args = ap.parse_args()
    path0 = os.environ["PATH"]
    for v in args.versions:
        os.environ["PATH"] = path0
        if args.rates_only:
            os.environ["PATH"] = f"/tmp/ior-{v}/bin:" + path0
            assert mdtest.installed_version() == v, mdtest.installed_version()
            record_rates(v)
            continue
        if args.one_file_only:
            os.environ["PATH"] = f"/tmp/ior-{v}/bin:" + path0
            assert mdtest.installed_version() == v, mdtest.installed_version()
            for short, path in PLACES.items():
                record_one_file(v, short, path)
            continue
        loop = not args.no_loop and os.geteuid() == 0
        if not args.phases_only:
            record(v, loop=loop)
            os.environ["PATH"] = path0
        record_phases(v, loop=loop)


if __name__ == "__main__":
    main()
