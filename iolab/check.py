"""Feedback for exercises: a clear pass message, or a hint (raised as CheckFailed).

Each exercise ends with one ``check_*`` call. On success it prints why the answer is right;
on failure it raises :class:`CheckFailed`, which Jupyter shows as the hint alone, without a
traceback, and which makes CI fail when a solution is wrong.

This module holds what every check shares; a lesson's checks are its ``check`` module
(``iolab.lessons.<lesson>.check``: ``from iolab.lessons.l04_ior import check``).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .units import MB, MiB


class CheckFailed(AssertionError):
    """The answer is not right yet. The message is the hint."""

    def _render_traceback_(self) -> list[str]:  # IPython shows this instead of a traceback
        return [f"\x1b[1;31m✗ Not yet.\x1b[0m {self}"]


def passed(message: str) -> bool:
    print(f"✓ Correct. {message}")
    return True


def fail(hint: str) -> None:
    raise CheckFailed(hint)


def given(value: object, what: str, how: str) -> None:
    """Fail with ``how`` while ``value`` is still the exercise's placeholder (``...``) or None: an
    unanswered task gets its hint, never a NameError or an AttributeError from inside the check."""
    if value is Ellipsis or value is None:
        fail(f"{what} is not answered yet (still `...`): {how}")


# factors a unit slip multiplies a number by, each with the slip named (issue 32: a hint names it)
UNIT_SLIPS = (
    (1e9 / MiB, "MiB/s and GB/s: 1 GB/s is 10**9 bytes/s, 953.7 MiB/s (1,000 / 1.048576): convert MiB/s to "
                "bytes/s (x 2**20) and then to GB/s (/ 10**9)"),
    (2**30, "bytes and GiB (2**30): check which unit each number is in, and which one the task asks for"),
    (1e9, "bytes and GB (10**9): check which unit each number is in, and which one the task asks for"),
    (MiB, "bytes and MiB (2**20 = 1,048,576): check which unit each number is in, and which one the task asks for"),
    (1e6, "bytes and MB (10**6): check which unit each number is in, and which one the task asks for"),
    (1024, "a factor of 1,024 (KiB and MiB, or MiB and GiB): one binary prefix too many or too few"),
    (1000, "a factor of 1,000 (MB/s and GB/s, kB and MB, ms and s): one decimal prefix too many or too few"),
)


def likely_mistake(answer: float, expected: float, *, rel: float, ratio: str = "",
                   per: tuple[str, float] | None = None,
                   wrong: Iterable[tuple[float, str]] = ()) -> str | None:
    """The usual slip that turns ``expected`` into ``answer``, named, or None. ``ratio``: how the
    ratio is formed ("warm / cold"), for an answer upside down; ``per``: (what, n) when the answer is a
    share of n (per node, per rank), for an answer that is the total or divided twice; ``wrong``: the
    wrong values this task invites, each with its slip ((value, "those are the primaries only: ..."),
    a counter read off instead of computed), tried first. Then a unit slip (:data:`UNIT_SLIPS`), a
    percentage, a gain for a ratio."""
    def near(x: float) -> bool:
        return x > 0 and math.isclose(answer, x, rel_tol=rel)
    if expected <= 0 or answer <= 0 or near(expected):
        return None
    for value, why in wrong:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and near(float(value)):
            return why
    if ratio and not math.isclose(expected, 1, rel_tol=rel) and near(1 / expected):
        return f"upside down: the answer is {ratio}, and you divided the other way round."
    if per and near(expected * per[1]):
        return f"that is the total: divide it by the {per[1]:g} {per[0]}."
    if per and near(expected / per[1]):
        return f"you divided by the {per[1]:g} {per[0]} once too often."
    # every slip that could give this answer, and the one whose value lies nearest it: a gain of a
    # large ratio (14.83 for 15.83) lies within a tolerance of the GiB/GB factor too, but nearer its own
    slips: list[tuple[float, str]] = []
    for factor, units_ in ((MiB / MB, "MiB and MB (1 MiB = 1.048576 MB)"),
                           (2**30 / 1e9, "GiB and GB (1 GiB = 1.073741824 GB)")):
        for x in (expected * factor, expected / factor):
            slips.append((x, f"off by exactly the factor between {units_}: check which unit each number is in, "
                             "and which one the task asks for."))
        for x in (expected * factor ** 2, expected / factor ** 2):
            slips.append((x, f"converted the wrong way round between {units_}: you multiplied where you should "
                             "divide (or the other way)."))
    for factor, slip in UNIT_SLIPS:
        slips += [(expected * factor, f"off by {slip}."), (expected / factor, f"off by {slip}.")]
    slips.append((expected * 100, "that is a percentage: give the plain number (0.25, not 25)."))
    slips.append((expected / 100, "that looks divided by 100: give the plain ratio, not a fraction of a percent."))
    if ratio and expected > 1:
        slips.append((expected - 1, f"that is how much faster, minus one (a gain): the task asks for {ratio} "
                                    "itself, how many times as fast."))
    found = [(abs(math.log(answer / x)), why) for x, why in slips if near(x)]
    return min(found)[1] if found else None


def close_to(answer: float, expected: float, *, rel: float = 0.05, what: str = "your answer",
             ratio: str = "", per: tuple[str, float] | None = None,
             wrong: Iterable[tuple[float, str]] = ()) -> None:
    """Fail unless answer is within rel (relative) of expected; the hint names the likely mistake
    (:func:`likely_mistake`: the task's own ``wrong`` values, a ratio upside down, a unit slip, a total
    for a share, a percentage), else says which way the answer is off and roughly by how much."""
    if answer is Ellipsis or answer is None:
        fail(f"{what} is not answered yet (still `...`).")
    if not isinstance(answer, (int, float)) or isinstance(answer, bool) or math.isnan(answer):
        fail(f"{what} should be a number, got {answer!r}.")
    if not math.isclose(answer, expected, rel_tol=rel):
        slip = likely_mistake(float(answer), float(expected), rel=max(rel, 0.005), ratio=ratio, per=per,
                              wrong=wrong)
        if slip:
            fail(f"{what} is {answer:,.4g}: {slip}")
        fail(f"{what} is {answer:,.4g}: {_how_far(float(answer), float(expected))} what these numbers give, "
             "and no usual slip (units, a ratio upside down, a total for a share) explains it: check each "
             "number the task names, where it is read from" + (f", and the ratio ({ratio})." if ratio else "."))


def _how_far(answer: float, expected: float) -> str:
    """Which way an answer is off, and roughly how far (one or two digits: a direction, not the answer)."""
    if expected == 0 or answer == 0 or (answer < 0) != (expected < 0):
        return "not near"
    r = answer / expected
    if 0.9 < r < 1.1:          # "about 1/1 of" says nothing: this is a rounding, or a digit read off wrong
        return f"just outside the tolerance: {abs(r - 1):.1%} too {'high' if r > 1 else 'low'} against"
    if r > 1:
        return f"too high: about {r:.3g} times" if r < 10 else f"too high: more than {10 ** int(math.log10(r)):,} times"
    return f"too low: about 1/{1 / r:.3g} of" if r > 0.1 else f"too low: less than 1/{10 ** int(math.log10(1 / r)):,} of"


def close_to_fraction(answer: float, expected: float, *, rel: float, what: str, ratio: str = "") -> None:
    """Like :func:`close_to` for a share between 0 and 1, with a hint for an answer given in percent."""
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 1 and \
            math.isclose(answer / 100, expected, rel_tol=rel):
        fail("give a fraction between 0 and 1, not a percentage.")
    close_to(answer, expected, rel=rel, what=what, ratio=ratio)


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


def whole(answer: object, what: str) -> int:
    if isinstance(answer, bool) or not isinstance(answer, int):
        fail(f"{what} should be a whole number (an int), got {answer!r}.")
    return int(answer)


def judged_from(verdict: Any, expected: Mapping[str, Any], *, what: str = "verdict",
                how: Mapping[str, str] | None = None,
                wrong: Mapping[str, Iterable[tuple[float, str]]] | None = None) -> None:
    """Fail unless ``verdict`` (a :class:`iolab.measure.Verdict`) was made by measure.judge /
    judge_write from the numbers the task names (``expected``: name -> value, as judge takes them).
    A label alone can be right for the wrong numbers (a rate in MiB/s where bytes/s are expected still
    comes out "unclear"), so each input is compared (issue 32); the hint names the input and its slip:
    ``wrong[name]``'s (value, why) pairs first, then :func:`likely_mistake`; ``how[name]`` says where
    the right value is read from."""
    how, wrong = how or {}, wrong or {}
    given_ = getattr(verdict, "given", None)
    if not given_:
        fail(f"{what}: make it with measure.judge(...): a Verdict typed by hand carries no numbers to check.")
    for name, want in expected.items():
        got = given_.get(name)
        where = f" ({how[name]})" if name in how else ""
        if want is None or not isinstance(want, (int, float)) or isinstance(want, bool):
            if got is not want and got != want:
                fail(f"{what}: {name} is not what this task names{where}.")
            continue
        if got is None:
            fail(f"{what}: {name} is missing (None): pass it{where}.")
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            fail(f"{what}: {name}={got!r} is not a number{where}.")
        if math.isclose(float(got), float(want), rel_tol=0.005):
            continue
        slip = likely_mistake(float(got), float(want), rel=0.005, wrong=wrong.get(name, ()))
        shown = f"{got:,.0f}" if abs(got) >= 1000 else f"{got:,.6g}"
        fail(f"{what}: {name}={shown}: " + (slip or f"{_how_far(float(got), float(want))} what it should be")
             + where + ("" if where or slip else "."))
