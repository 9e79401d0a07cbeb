"""recordings.save stores a binary file a tool wrote (a Darshan log) byte for byte, with its meta."""
from __future__ import annotations

import json
import os

from iolab import recordings, runner


def test_save_stores_bytes_with_the_runs_meta(tmp_path):
    r = runner.run(["true"], timeout=10)
    blob = bytes(range(256)) + os.urandom(64)          # not text: every byte value, undecodable as UTF-8
    raw = recordings.save(r, "darshan/blob", ext="darshan", stream="file", data=blob, root=tmp_path,
                          notes="a binary file")
    assert raw == tmp_path / "darshan" / "blob.darshan" and raw.read_bytes() == blob
    meta = json.loads((tmp_path / "darshan" / "blob.meta.json").read_text())
    assert meta["argv"] == ["true"] and meta["stream"] == "file" and meta["returncode"] == 0


def test_save_without_data_still_writes_text(tmp_path):
    raw = recordings.save("hello\n", "darshan/text", root=tmp_path)
    assert raw.read_text() == "hello\n"
