"""Sentences that follow the numbers: a lesson's claims computed from what was measured.

A lesson runs on machines its authors never saw. Prose that stays fixed may only state what holds
everywhere; a sentence about *this* run's numbers is chosen by comparing them. :func:`expect` takes
what the lesson predicted and whether the numbers show it, and returns a :class:`Claim` whose text
is "As predicted: …" or "Not this time: … Why it can happen: …". The relation helpers
(:func:`greater`, :func:`within`) state the comparison once, so the sentence and the test that
guards it cannot drift apart: a Claim keeps its evidence and can re-check itself
(:meth:`Claim.consistent`).

Lesson functions (``iolab.lessons.*``) return their claims; tests feed them numbers from recordings
of different filesystems and machines and assert that every claim is consistent.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import BadValue

AS_PREDICTED = "As predicted:"
NOT_THIS_TIME = "Not this time:"
CANNOT_TELL = "Cannot tell from this run:"
TOO_CLOSE = "Too close to call here:"
MIN_TRIALS = 3          # fewer trials of a side than this: its spread is not known, nothing is called


@dataclass(frozen=True)
class Relation:
    """A comparison of measured numbers that can be evaluated again from its evidence."""

    kind: str                       # "greater" | "within" | "true" | "beyond" | "alike"
    evidence: Mapping[str, float]   # NaN: a number that was not measured
    params: Mapping[str, Any] = field(default_factory=dict)

    def holds(self) -> bool | None:
        ev = self.evidence
        if any(math.isnan(v) for v in ev.values()):
            return None
        if self.kind == "greater":
            a, b = ev[self.params["a"]], ev[self.params["b"]]
            return a > self.params.get("by", 1.0) * b
        if self.kind == "within":
            a, b = ev[self.params["a"]], ev[self.params["b"]]
            rel = self.params["rel"]
            return abs(a - b) <= rel * max(abs(a), abs(b))
        if self.kind == "true":
            return bool(ev[self.params["a"]])
        if self.kind == "beyond":
            low, high = self.ratio_range()
            by = self.params.get("by", 1.0)
            if min(ev["a trials"], ev["b trials"]) < MIN_TRIALS:
                return None
            if low > by:
                return True
            if high <= by:
                return False
            return None
        if self.kind == "alike":
            if min(ev["a trials"], ev["b trials"]) < MIN_TRIALS:
                return None
            low, high = self.ratio_range()
            by = max(self.params.get("by", 1.0), 1.0)
            if high <= by and low * by >= 1:            # every pair of trials within the factor: shown
                return True
            if low > by or high * by < 1:               # every trial of one beats every trial of the other
                return False
            return None                                 # overlapping spreads: this run cannot tell
        raise ValueError(f"unknown relation {self.kind!r}")

    def ratio_range(self) -> tuple[float, float]:
        """For :func:`beyond`: the least and the most favourable ratio of a to b that any pair of their
        trials gives (a's worst against b's best, a's best against b's worst), as "times better"."""
        ev, higher = self.evidence, self.params.get("higher", True)
        a_lo, a_hi, b_lo, b_hi = ev["a min"], ev["a max"], ev["b min"], ev["b max"]
        if higher:
            return _ratio(a_lo, b_hi), _ratio(a_hi, b_lo)
        return _ratio(b_lo, a_hi), _ratio(b_hi, a_lo)

    def too_close(self) -> bool:
        """The numbers are all there, but :func:`beyond`'s trials overlap too much to call (or, for
        :func:`beyond` and :func:`alike`, a side has fewer than :data:`MIN_TRIALS` trials)."""
        if self.kind not in ("beyond", "alike"):
            return False
        ev = self.evidence
        return not any(math.isnan(v) for v in ev.values()) and self.holds() is None


def greater(a: str, a_value: float | None, b: str, b_value: float | None, *, by: float = 1.0) -> Relation:
    """``a > by × b``: e.g. ``greater("warm", warm_rate, "cold", cold_rate, by=2)``."""
    return Relation("greater", {a: _num(a_value), b: _num(b_value)}, {"a": a, "b": b, "by": by})


def within(a: str, a_value: float | None, b: str, b_value: float | None, *, rel: float) -> Relation:
    """``a`` and ``b`` differ by at most ``rel`` of the larger one."""
    return Relation("within", {a: _num(a_value), b: _num(b_value)}, {"a": a, "b": b, "rel": rel})


def beyond(a: str, a_values, b: str, b_values, *, by: float = 1.0, higher: bool = True,
           unit: str = "") -> Relation:
    """THE comparison rule of repeated trials, stated once: ``a`` beats ``b`` (by a factor ``by``) only
    when a's WORST trial beats b's BEST one by that factor, i.e. every pair of trials agrees; it is
    refuted only when even a's best against b's worst falls short of it. Otherwise (the spreads
    overlap) the two are **too close to call here**, as they are with fewer than :data:`MIN_TRIALS`
    trials of a side. ``higher``: a larger value is better (a rate); False for seconds.
    The evidence keeps the medians under the names ``a`` and ``b`` (for templates), and each side's
    min, max and number of trials."""
    by = factor(by)
    av = [float(v) for v in (a_values or ()) if v is not None and not math.isnan(float(v))]
    bv = [float(v) for v in (b_values or ()) if v is not None and not math.isnan(float(v))]
    nan = math.nan
    ev = {a: _median(av), b: _median(bv),
          "a min": min(av, default=nan), "a max": max(av, default=nan), "a trials": float(len(av)),
          "b min": min(bv, default=nan), "b max": max(bv, default=nan), "b trials": float(len(bv))}
    return Relation("beyond", ev, {"a": a, "b": b, "by": by, "higher": higher, "unit": unit})


def factor(by: Any, what: str = "by") -> float:
    """``by`` as a float, or :class:`iolab.errors.BadValue` naming it: a factor is a finite number above 0
    (not a bool, not a string)."""
    if isinstance(by, bool) or not isinstance(by, numbers.Real) or not math.isfinite(by) or by <= 0:
        raise BadValue(f"{what}={by!r}: a factor must be a finite number above 0 (2.0: twice; 1.0: merely more)")
    return float(by)


def alike(a: str, a_values, b: str, b_values, *, by: float = 1.0, higher: bool = True,
          unit: str = "") -> Relation:
    """``a`` and ``b`` "perform alike" (within a factor ``by``), by the same pairs of trials as
    :func:`beyond`: it is SHOWN only when every trial of each side lies within ``by`` of every trial of
    the other (the least and the most favourable ratio both within); it is refuted when every trial of
    one side beats every trial of the other by more than ``by``. Otherwise the spreads overlap, and
    overlapping spreads say only that this run cannot tell the two apart, which is not a result:
    "Too close to call here", with the spreads and the widest pair. Fewer than :data:`MIN_TRIALS` trials
    of a side: nothing is called. ``by`` below 1 is taken as 1 (identical trials only)."""
    r = beyond(a, a_values, b, b_values, by=by, higher=higher, unit=unit)
    return Relation("alike", r.evidence, r.params)


def _median(values: list[float]) -> float:
    if not values:
        return math.nan
    s = sorted(values)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def _ratio(x: float, y: float) -> float:
    if y == 0:
        return math.inf if x > 0 else 1.0
    return x / y


def spread_text(relation: Relation) -> str:
    """``beyond``'s evidence in words: each side's median and range over its trials."""
    ev, p = relation.evidence, relation.params
    unit = f" {p['unit']}" if p.get("unit") else ""

    def fmt(v: float) -> str:
        return f"{v:,.3g}" if abs(v) < 10 else f"{v:,.0f}"

    def side(name: str, key: str) -> str:
        return (f"{name} {fmt(ev[name])}{unit} (median of {ev[key + ' trials']:.0f}, "
                f"{fmt(ev[key + ' min'])}–{fmt(ev[key + ' max'])})")
    return f"{side(p['a'], 'a')} against {side(p['b'], 'b')}"


def _x(v: float) -> str:
    """A factor as the sentences print it: 2x, 1.58x, 3.2x."""
    return f"{v:.3g}x"


def _widest(relation: Relation) -> float:
    """The factor between the two trials, one of each side, that differ most (>= 1)."""
    low, high = relation.ratio_range()
    return max(high, 1 / low if low > 0 else math.inf)


def why_not_called(relation: Relation) -> str:
    """Why :func:`beyond` or :func:`alike` calls nothing over trials that are all there, in words that
    the numbers beside them bear out: too few trials; the spreads overlap; or (beyond with a factor)
    the ranges do not overlap and what is not shown is the factor the claim asks for."""
    ev, p = relation.evidence, relation.params
    if min(ev["a trials"], ev["b trials"]) < MIN_TRIALS:
        # with too few trials the spreads are unknown, whether or not the ranges seen so far overlap
        return f"too few trials to know their spreads (fewer than {MIN_TRIALS} trials of a side)"
    low, high = relation.ratio_range()
    by = p.get("by", 1.0)
    if relation.kind == "alike":
        by = max(by, 1.0)
        widest = _widest(relation)
        ask = f"within {_x(by)} of each other" if by > 1 else "the same"
        return (f"the spreads overlap, so this run cannot tell them apart, and that does not show them alike: "
                f"'alike' asks every pair of trials to be {ask}, and the widest pair here differs by "
                f"{_x(widest)}")
    if by < 1 and low <= 1 <= high:
        # "a stays within 1/by of b": overlapping spreads are what it expects; what is not shown is the factor
        return (f"the claim asks {p['a']} to stay within {_x(1 / by)} of {p['b']} in every pair of trials, and the "
                f"pairs give {_x(low)} to {_x(high)} ({p['a']} against {p['b']}): some pairs are within it, some "
                "are not")
    if low <= 1 <= high:
        return "the spreads overlap"
    first, second = (p["a"], p["b"]) if low > 1 else (p["b"], p["a"])
    return (f"the ranges do not overlap (every trial of {first} beats every trial of {second}), but the claim "
            f"asks for a factor of {_x(by)} ({p['a']} against {p['b']}) and the pairs of trials give "
            f"{_x(low)} to {_x(high)}: what is not shown is the factor")


def fact(name: str, value: bool | None) -> Relation:
    """A yes/no observation (a page resident, a file opened), kept as evidence."""
    return Relation("true", {name: math.nan if value is None else float(bool(value))}, {"a": name})


def _num(value: Any) -> float:
    """A measured number as a float; NaN for one not measured (None), as :func:`beyond` keeps a side
    without trials."""
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    return float(value)


@dataclass(frozen=True)
class Claim:
    """One sentence about this run, with the relation it was chosen by."""

    predicted: str          # what the lesson expected, in words
    relation: Relation
    held: bool | None       # what the numbers showed (None: the numbers are missing)
    text: str               # the whole sentence, as printed

    @property
    def evidence(self) -> Mapping[str, float]:
        return self.relation.evidence

    def consistent(self) -> bool:
        """Does the sentence's verdict match the relation evaluated again from the evidence?"""
        held = self.relation.holds()
        prefix = {True: AS_PREDICTED, False: NOT_THIS_TIME, None: CANNOT_TELL}[held]
        if held is None and self.relation.too_close():
            prefix = TOO_CLOSE
        return held == self.held and self.text.startswith(prefix)

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle) -> None:  # IPython shows the sentence, not the dataclass
        p.text(self.text)


def _fill(template: str | Callable[[Mapping[str, float]], str], evidence: Mapping[str, float]) -> str:
    if callable(template):
        return template(evidence)
    return template.format(**evidence)


SEPARATE = ("what would separate them: more trials, a bigger file (a longer measurement) or an idle machine")


def expect(predicted: str, relation: Relation, *, yes: str | Callable = "", no: str | Callable = "",
           why: str = "", missing: str = "", close: str = "", show: bool = True) -> Claim:
    """Say whether ``relation`` held, in the sentence that fits.

    ``predicted``: the expectation as a clause that reads after "As predicted:" and after "we
    expected that" ("the warm read is faster than the cold one").
    ``yes``: what to add when it held; ``no``: what was seen instead; ``why``: why that can happen
    on some machines (a VM's host cache, a fast device, noise). Templates may use the evidence's
    names, e.g. ``"{warm:.0f} MiB/s against {cold:.0f} MiB/s"``, or be functions of the evidence.
    Prints the sentence unless ``show=False``, and returns the :class:`Claim`.

    A :func:`beyond` relation whose trials overlap gives "Too close to call here: …" with both
    spreads and ``close`` (what would separate them; :data:`SEPARATE` by default), never "As
    predicted" nor "Not this time"; the sentence says what was not shown (:func:`why_not_called`). An
    :func:`alike` relation holds only when every pair of trials lies within its factor; overlapping
    spreads are too close to call, as are fewer than :data:`MIN_TRIALS` trials of a side.
    """
    held = relation.holds()
    ev = relation.evidence
    if held is None and relation.too_close():
        text = (f"{TOO_CLOSE} we expected that {predicted}, but {spread_text(relation)}: "
                f"{why_not_called(relation)}; {close or SEPARATE}.")
    elif held is None:
        text = f"{CANNOT_TELL} we expected that {predicted}, but {missing or 'a number it needs was not measured.'}"
    elif held:
        text = f"{AS_PREDICTED} {predicted}" + (f" — {_fill(yes, ev)}" if yes else "")
        if relation.kind in ("beyond", "alike") and not yes:
            text += f" — {spread_text(relation)}"
        if relation.kind == "alike" and not yes:
            text = (text.rstrip(".") + f": every pair of trials within {_x(max(relation.params.get('by', 1.0), 1.0))} "
                    f"of each other (the widest {_x(_widest(relation))})")
        text += "" if text.endswith((".", "!", "?")) else "."
    else:
        text = f"{NOT_THIS_TIME} we expected that {predicted}, but " + (_fill(no, ev) if no else
                                                                         spread_text(relation)
                                                                         if relation.kind in ("beyond", "alike")
                                                                         else "the numbers say otherwise")
        text += "" if text.endswith((".", "!", "?")) else "."
        if why:
            text += f" Why it can happen: {why}"
    claim = Claim(predicted=predicted, relation=relation, held=held, text=text)
    if show:
        print(text)
    return claim
