"""Sizes and rates: one place for "4k", "16MiB", MiB/s and MB/s.

Conventions (those of dd, IOR and fio): a bare letter or an ``iB`` suffix is binary
(``4k`` = ``4KiB`` = 4096), a letter with a plain ``B`` is decimal (``2MB`` = 2,000,000).
"""
from __future__ import annotations

import re
from fractions import Fraction

from .errors import ParseError

KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4
KB, MB, GB, TB = 1000, 1000**2, 1000**3, 1000**4

_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_SIZE = re.compile(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([kmgtp]?)(i?)(b?)\s*", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Return a size in bytes from an int or a string such as "4k", "16MiB", "2MB".

    What is not a size raises :class:`~iolab.errors.ParseError` (a ValueError): a negative or
    fractional number of bytes, an unknown unit, a number of more than 30 digits.

    >>> parse_size("16MiB"), parse_size("4k"), parse_size("2MB")
    (16777216, 4096, 2000000)
    """
    if isinstance(value, bool):
        raise ParseError(f"not a size: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ParseError(f"a size cannot be negative: {value!r}")
        return value
    if not isinstance(value, str):
        raise ParseError(f"not a size: {value!r} (give an int or a string like '4k' or '16MiB')")
    m = _SIZE.fullmatch(value) if len(value) < 100 else None
    if not m:
        raise ParseError(f"not a size: {value!r} (expected a number and an optional unit: "
                         "B, k/K/KiB, KB, m/M/MiB, MB, g/G/GiB, GB, ...)")
    number, letter, i, b = m.groups()
    power = _POWERS[letter.lower()]
    if i and not letter:
        raise ParseError(f"not a size: {value!r}")
    base = 1000 if (b and not i and letter) else 1024
    nbytes = Fraction(number) * base**power
    if nbytes.denominator != 1:
        raise ParseError(f"not a whole number of bytes: {value!r}")
    return int(nbytes)


def format_size(nbytes: float, *, decimal: bool = False, digits: int = 1) -> str:
    """Human-readable size: 16777216 -> "16 MiB"; with decimal=True, 2000000 -> "2 MB"."""
    if nbytes < 0:
        return "-" + format_size(-nbytes, decimal=decimal, digits=digits)
    base = 1000 if decimal else 1024
    names = ["B", "KB", "MB", "GB", "TB", "PB"] if decimal else ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
    value, idx = float(nbytes), 0
    while value >= base and idx < len(names) - 1:
        value /= base
        idx += 1
    if value == int(value):
        return f"{int(value)} {names[idx]}"
    return f"{value:.{digits}f} {names[idx]}"


_RATE_UNITS = {"B/s": 1, "KiB/s": KiB, "MiB/s": MiB, "GiB/s": GiB,
               "KB/s": KB, "MB/s": MB, "GB/s": GB}


def format_rate(bytes_per_s: float, unit: str = "MiB/s", digits: int = 1) -> str:
    """A rate in the unit asked for: MiB/s (2**20 bytes/s, IOR's unit) or MB/s (10**6, fio/dd's)."""
    if unit not in _RATE_UNITS:
        raise ParseError(f"unknown rate unit {unit!r}; use one of {', '.join(_RATE_UNITS)}")
    return f"{bytes_per_s / _RATE_UNITS[unit]:,.{digits}f} {unit}"


def rate(bytes_per_s: float, unit: str = "MiB/s") -> float:
    """A rate in bytes/s converted to the given unit, as a number."""
    if unit not in _RATE_UNITS:
        raise ParseError(f"unknown rate unit {unit!r}; use one of {', '.join(_RATE_UNITS)}")
    return bytes_per_s / _RATE_UNITS[unit]


def to_mib_per_s(bytes_per_s: float) -> float:
    return bytes_per_s / MiB
