"""Read a file another user or a bad download could have shaped, without hanging or exhausting memory.

Every loader of such a file (a recording and its ``.meta.json``, a class results file, a manifest, a
Darshan log) reads it through here, and a writer in a directory others share (the class results' lock
files) opens it here (:func:`open_regular`, the one way of both): only a regular file (a FIFO would block the reader for ever, a
symlink to /dev/zero would feed it until the OOM killer comes), opened without following a symlink in
its last component and without blocking, at most ``limit`` bytes, UTF-8 or a :class:`ParseError`, and
JSON nested at most ``max_depth`` levels, with no number longer than ``MAX_DIGITS`` digits (Python's
own ``int()`` refuses 4,300 with a plain ValueError) and no NaN or Infinity, or a :class:`ParseError`
naming the file.
"""
from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import ParseError

LIMIT = 64 * 1024 * 1024            # bytes a text file iolab reads may have (the recordings are < 2 MiB)
MAX_DEPTH = 64                      # JSON nesting (fio's and IOR's documents nest 5 deep)
MAX_DIGITS = 400                    # digits in a JSON number (a 64-bit integer has 20; a float's exponent 3)

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_PAIR = re.compile(r"\[\]|\{\}")


class NotRegular(OSError):
    """:func:`open_regular`'s refusal: the path is a symbolic link, a FIFO, a device, a socket or a
    directory (``errno`` ELOOP for a link; ``strerror`` says which)."""


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY,
                 mode: int = 0o600) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` and its status, if it is a regular file: how iolab opens a file another
    user could have put there, to read it (:func:`read_regular`) or to write or lock it (``flags`` such
    as ``os.O_RDWR | os.O_CREAT``; ``mode`` for a file it creates).

    Never through a symbolic link in the last component (O_NOFOLLOW), never blocking on a FIFO or a
    device (O_NONBLOCK; a FIFO without a reader refuses a writer), the status read from the
    descriptor, not from a second look at the path. :class:`NotRegular` (an OSError, the descriptor
    closed) when it is not a regular file; any other OSError as ``os.open`` raises it (FileNotFoundError)."""
    p = Path(path)
    try:
        fd = os.open(p, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotRegular(errno.ELOOP, f"{p.name} is a symbolic link (iolab opens only regular files)",
                             str(p)) from None
        if e.errno == errno.ENXIO:          # open(O_WRONLY|O_NONBLOCK) of a FIFO without a reader, a socket
            raise NotRegular(errno.ENXIO, f"{p.name} is a FIFO or a socket, not a regular file", str(p)) from None
        raise
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a directory" if stat.S_ISDIR(st.st_mode) else \
            "a device or socket"
        raise NotRegular(errno.EINVAL, f"{p.name} is {kind}, not a regular file", str(p))
    return fd, st


def read_bytes(path: str | os.PathLike[str], *, limit: int = LIMIT, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit``), or ParseError saying why not.

    A symlink is refused (O_NOFOLLOW): where iolab reads a file another user could replace, a link to
    a device or a FIFO is the attack, and the course's own files are never links. A missing file is
    FileNotFoundError, as ``open`` would raise it.
    """
    return read_regular(path, limit=limit, what=what)[0]


def read_regular(path: str | os.PathLike[str], *, limit: int = LIMIT, what: str = "file",
                 max_links: int | None = None) -> tuple[bytes, os.stat_result]:
    """:func:`read_bytes`, and the status of the file those bytes were read from (its owner decides
    whose a file is, where several users write into one directory: read it from the same descriptor,
    not from a second look at the path). ``max_links``: refuse a file with more hard links (a link to
    someone else's file)."""
    p = Path(path)
    try:
        fd, st = open_regular(p)
    except FileNotFoundError:
        raise
    except NotRegular as e:
        if e.errno == errno.ELOOP:
            raise ParseError(f"the {what} {p} is a symbolic link: iolab reads only regular files") from None
        raise ParseError(f"the {what} {p} is not a regular file (a FIFO, a device or a directory): "
                         "iolab reads only regular files") from None
    except OSError as e:
        raise ParseError(f"cannot read the {what} {p}: {e.strerror}") from None
    try:
        if max_links is not None and st.st_nlink > max_links:
            raise ParseError(f"the {what} {p} has {st.st_nlink} hard links (a link to another file is not read)")
        if st.st_size > limit:
            raise ParseError(f"the {what} {p} has {st.st_size:,} bytes, more than the {limit:,} iolab reads")
        chunks, n = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - n))
            if not chunk:
                break
            chunks.append(chunk)
            n += len(chunk)
            if n > limit:                                   # it grew while we read it
                raise ParseError(f"the {what} {p} has more than the {limit:,} bytes iolab reads")
        return b"".join(chunks), st
    except OSError as e:
        raise ParseError(f"cannot read the {what} {p}: {e.strerror}") from None
    finally:
        os.close(fd)


def decode(data: bytes, *, what: str = "file") -> str:
    """UTF-8 text, or ParseError naming where the first byte that is not UTF-8 sits."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_no = data.count(b"\n", 0, e.start) + 1
        raise ParseError(f"the {what} is not UTF-8 text (byte {e.start:,})", line_no=line_no) from None


def read_text(path: str | os.PathLike[str], *, limit: int = LIMIT, what: str = "file",
              errors: str = "strict") -> str:
    """The text of the regular file ``path``: :func:`read_bytes`, then UTF-8 (``errors="replace"`` keeps
    a tool's stray byte as U+FFFD instead of refusing the file)."""
    data = read_bytes(path, limit=limit, what=what)
    if errors == "strict":
        return decode(data, what=f"{what} {path}")
    return data.decode("utf-8", errors)


def _no_constant(name: str) -> Any:
    raise ParseError(f"{name}, not a number iolab reads")


def _int(s: str) -> int:
    if len(s) > MAX_DIGITS:
        raise ParseError(f"a number of {len(s):,} digits (more than {MAX_DIGITS})")
    return int(s)


def _float(s: str) -> float:
    if len(s) > MAX_DIGITS:
        raise ParseError(f"a number of {len(s):,} characters (more than {MAX_DIGITS})")
    v = float(s)
    if not math.isfinite(v):
        raise ParseError(f"a number out of range ({s[:40]})")
    return v


def depth(text: str) -> int:
    """How deep the brackets of a JSON text nest (outside its strings): C-speed passes, each removing the
    innermost pairs; stops counting past MAX_DEPTH."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    n = 0
    while brackets and n <= MAX_DEPTH:
        brackets, k = _PAIR.subn("", brackets)
        if not k:
            break
        n += 1
    return n


def loads(text: str, *, what: str = "JSON document", max_depth: int = MAX_DEPTH,
          trailing: bool = False) -> Any:
    """``json.loads`` that raises only ParseError: bad JSON (with its line), a text nested deeper than
    ``max_depth``, a number of more than MAX_DIGITS digits, NaN or Infinity, and (``trailing=False``)
    anything but white space after the document, such as a second document."""
    if depth(text) > max_depth:
        raise ParseError(f"the {what} nests deeper than {max_depth} levels")
    dec = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_no_constant)
    start = len(text) - len(text.lstrip())
    try:
        doc, end = dec.raw_decode(text, start)
    except json.JSONDecodeError as e:
        early = e.pos >= len(text.rstrip())
        raise ParseError(f"the {what} ends early (cut short?)" if early else
                         f"the {what} is not valid JSON ({e.msg})", line_no=e.lineno,
                         line=_line(text, e.lineno)) from None
    except RecursionError:
        raise ParseError(f"the {what} nests too deep to read") from None
    except ParseError as e:                           # from the number hooks, which know no position
        raise ParseError(f"the {what} holds {e}") from None
    if not trailing and text[end:].strip():
        line_no = text.count("\n", 0, end) + 1
        raise ParseError(f"the {what} goes on after its end (a second document, or text after it)",
                         line_no=line_no, line=_line(text, line_no))
    return doc


def _line(text: str, line_no: int) -> str:
    start = 0
    for _ in range(line_no - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    end = text.find("\n", start)
    return text[start:end if end >= 0 else len(text)][:200]


def read_json(path: str | os.PathLike[str], *, limit: int = LIMIT, what: str = "JSON file",
              max_depth: int = MAX_DEPTH) -> Any:
    """The JSON document in the regular file ``path``: :func:`read_text` then :func:`loads`; every
    failure a ParseError naming the file."""
    return loads(read_text(path, limit=limit, what=what), what=f"{what} {path}", max_depth=max_depth)
