"""iolab.safeio: files others can shape are read as regular files of bounded size, and JSON with bounded
depth and digits, with every failure a ParseError (issue 21, item 9)."""
from __future__ import annotations

import os

import pytest

from iolab import ParseError, safeio


def test_a_regular_file_reads(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"a": [1, 2.5, "x"]}\n')
    assert safeio.read_json(p) == {"a": [1, 2.5, "x"]}
    assert safeio.read_text(p) == '{"a": [1, 2.5, "x"]}\n'


def test_special_files_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ParseError, match="not a regular file"):      # open() alone blocks on a FIFO
        safeio.read_bytes(fifo)
    link = tmp_path / "zero"
    link.symlink_to("/dev/zero")
    with pytest.raises(ParseError, match="symbolic link"):
        safeio.read_bytes(link)
    with pytest.raises(ParseError, match="not a regular file"):
        safeio.read_bytes("/dev/zero")
    with pytest.raises(ParseError, match="not a regular file"):
        safeio.read_bytes(tmp_path)
    with pytest.raises(FileNotFoundError):
        safeio.read_bytes(tmp_path / "none")


def test_open_regular_is_the_one_way_to_open_for_reading_and_writing(tmp_path):
    # a file to write or lock where others can put things first: created 0600, or the regular file
    # that is there; a FIFO (with or without a reader), a symlink, a device or a directory refused
    # without blocking, as an OSError saying what it is
    new = tmp_path / "new.lock"
    fd, st = safeio.open_regular(new, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, b"x")
        assert new.read_bytes() == b"x" and st.st_mode & 0o777 == 0o600 and os.fstat(fd).st_ino == st.st_ino
    finally:
        os.close(fd)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link"
    link.symlink_to(new)
    for path, flags, what in [(fifo, os.O_WRONLY, "a FIFO"), (fifo, os.O_RDWR | os.O_CREAT, "a FIFO"),
                              (fifo, os.O_RDONLY, "a FIFO"), (link, os.O_RDWR | os.O_CREAT, "symbolic link"),
                              ("/dev/null", os.O_WRONLY, "a device"), (tmp_path, os.O_RDONLY, "a directory")]:
        with pytest.raises(safeio.NotRegular, match=what):
            safeio.open_regular(path, flags)
    assert new.read_bytes() == b"x"
    with pytest.raises(FileNotFoundError):
        safeio.open_regular(tmp_path / "none", os.O_WRONLY)


def test_the_size_bound(tmp_path):
    p = tmp_path / "big"
    with open(p, "wb") as f:
        f.truncate(1025)
    with pytest.raises(ParseError, match="1,025 bytes, more than the 1,024"):
        safeio.read_bytes(p, limit=1024)
    assert len(safeio.read_bytes(p, limit=1025)) == 1025


def test_text_that_is_not_utf8_names_its_line(tmp_path):
    p = tmp_path / "t"
    p.write_bytes(b"ok\nok\n\xff\n")
    with pytest.raises(ParseError, match="not UTF-8") as e:
        safeio.read_text(p)
    assert e.value.line_no == 3
    assert safeio.read_text(p, errors="replace") == "ok\nok\n\ufffd\n"


@pytest.mark.parametrize("text,match", [
    ("[" * 100_000 + "]" * 100_000, "nests deeper"),            # was RecursionError
    ("[" * 65 + "]" * 65, "nests deeper"),
    ("[" + "9" * 5000 + "]", "5,000 digits"),                  # was ValueError (int's 4,300-digit limit)
    ("[1e999]", "out of range"),                               # was inf
    ("[NaN]", "NaN"),
    ('{"a": 1}{"a": 2}', "goes on after its end"),             # was the first document alone
    ('{"a": 1}\n[]', "goes on after its end"),
    ('{"a": ', "ends early"),
    ('{"a" 1}', "not valid JSON"),
])
def test_bad_json_is_a_parse_error(text, match):
    with pytest.raises(ParseError, match=match):
        safeio.loads(text)


def test_depth_counts_brackets_outside_strings():
    assert safeio.depth('{"a": "[[[[[", "b": [[1]]}') == 3
    assert safeio.loads('{"a": "' + "[" * 1000 + '"}') == {"a": "[" * 1000}
    assert safeio.loads("[" * 64 + "]" * 64) is not None
    assert safeio.loads('  {"a": 1}\n\n') == {"a": 1}
