"""Re-make the dd recordings of lessons 01 and 02 on this machine: `.venv/bin/python -m recorders.dd`.

With iolab.recordings.save (dd's summary from stderr + .meta.json), on /tmp (a disk) and on /dev/shm
(tmpfs, memory), each in a private workspace that is removed afterwards:

* write-64m-buffered-<fs> / write-64m-dsync-<fs>: seed 002's write test, `dd if=/dev/zero of=F bs=1M
  count=64 [oflag=dsync]` (64 MiB instead of the seed's 1 GiB); lesson 01's write-back section.
* read-1mib-bs1-<fs>: `dd if=F of=/dev/null bs=1` of a cached 1 MiB file, one read(2) and one
  write(2) per byte; lesson 02 compares it with Python's cost per f.read(1).

Never edit the recorded text; run this again instead.
"""
from __future__ import annotations

import os


from iolab import recordings, workspace
from iolab.tools import dd

HOST = os.environ.get("IOLAB_HOST_DESCRIPTION", "2-core AMD EPYC VM (shared), 24 GiB, virtio disk, Debian 12")
PLACES = {"tmp": "/tmp", "shm": "/dev/shm"}


def main() -> None:
    for name, base in PLACES.items():
        with workspace.Workspace(budget="256MiB", base=base) as ws:
            for dsync in (False, True):
                target = ws.root / "dd.bin"
                ws.reserve(64 * 2**20)
                r = dd.run("/dev/zero", target, bs="1MiB", count=64, oflag=["dsync"] if dsync else ())
                target.unlink(missing_ok=True)
                kind = "dsync" if dsync else "buffered"
                p = recordings.save(r, f"dd/write-64m-{kind}-{name}", stream="stderr", fs_path=ws.root,
                                    host_description=HOST,
                                    notes=f"Seed 002's write test with 64 MiB, {'oflag=dsync: every write waits for the device' if dsync else 'no flag: writes land in the page cache'}, on {base}, LC_ALL=C.")
                print(p, dd.parse(r.stderr)["bytes_per_s"] / 1e6, "MB/s")
            f = ws.make_file("sweep.bin", "1MiB")
            with open(f, "rb") as fh:       # cached: the lesson's warm pass
                fh.read()
            r = dd.run(f, "/dev/null", bs=1, timeout=300)
            p = recordings.save(r, f"dd/read-1mib-bs1-{name}", stream="stderr", fs_path=ws.root,
                                host_description=HOST,
                                notes=f"A cached 1 MiB file on {base} read by dd with bs=1: one read(2) and one "
                                      "write(2) to /dev/null per byte, LC_ALL=C.")
            rec = dd.parse(r.stderr)
            print(p, rec["seconds"] / rec["records_in"] * 1e6, "µs per record")


if __name__ == "__main__":
    main()
