"""Feedback for exercises: a clear pass message, or a hint (raised as CheckFailed).

Each exercise ends with one ``check_*`` call. On success it prints why the answer is right;
on failure it raises :class:`CheckFailed`, which Jupyter shows as the hint alone, without a
traceback, and which makes CI fail when a solution is wrong.
"""
from __future__ import annotations

import math
from collections.abc import Iterable


class CheckFailed(AssertionError):
    """The answer is not right yet. The message is the hint."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"\x1b[1;31m✗ Not yet.\x1b[0m {self}"]


def passed(message: str) -> bool:
    print(f"✓ Correct. {message}")
    return True


def fail(hint: str) -> None:
    raise CheckFailed(hint)


def close_to(answer: float, expected: float, *, rel: float = 0.05, what: str = "your answer") -> None:
    """Fail unless answer is within rel (relative) of expected."""
    if not isinstance(answer, (int, float)) or isinstance(answer, bool) or math.isnan(answer):
        fail(f"{what} should be a number, got {answer!r}.")
    if not math.isclose(answer, expected, rel_tol=rel):
        fail(f"{what} is {answer:,.4g}, more than {rel:.0%} away from what this machine gives.")


def same_items(answer: Iterable[object], expected: Iterable[object], *, what: str = "your answer") -> None:
    a, e = set(answer), set(expected)
    if a != e:
        missing, extra = e - a, a - e
        hint = []
        if missing:
            hint.append(f"it misses {sorted(map(str, missing))}")
        if extra:
            hint.append(f"it should not contain {sorted(map(str, extra))}")
        fail(f"{what}: " + "; ".join(hint) + ".")


# --- lesson 00 ----------------------------------------------------------------------------------

# --- lesson 01 ----------------------------------------------------------------------------------

# --- lesson 02 ----------------------------------------------------------------------------------

# --- lesson 03 ----------------------------------------------------------------------------------

# --- lesson 04 ----------------------------------------------------------------------------------

# --- lesson 05 ----------------------------------------------------------------------------------

# --- lesson 06 ----------------------------------------------------------------------------------
