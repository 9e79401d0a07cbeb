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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

AS_PREDICTED = "As predicted:"
NOT_THIS_TIME = "Not this time:"
CANNOT_TELL = "Cannot tell from this run:"
TOO_CLOSE = "Too close to call here:"
MIN_TRIALS = 3          # fewer trials of a side than this: its spread is not known, nothing is called


@dataclass(frozen=True)
class Relation:
    """A comparison of measured numbers that can be evaluated again from its evidence."""

    kind: str                       # "greater" | "within" | "true"
    evidence: Mapping[str, float]
    params: Mapping[str, Any] = field(default_factory=dict)

    def holds(self) -> bool | None:
        ev = self.evidence
        if any(v is None or math.isnan(v) for v in ev.values()):
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
            by = self.params.get("by", 1.0)
            return not (low > by or high * by < 1)      # neither beats the other beyond the spreads
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
        return not any(v is None or math.isnan(v) for v in ev.values()) and self.holds() is None


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
    av = [float(v) for v in (a_values or ()) if v is not None and not math.isnan(float(v))]
    bv = [float(v) for v in (b_values or ()) if v is not None and not math.isnan(float(v))]
    nan = math.nan
    ev = {a: _median(av), b: _median(bv),
          "a min": min(av, default=nan), "a max": max(av, default=nan), "a trials": float(len(av)),
          "b min": min(bv, default=nan), "b max": max(bv, default=nan), "b trials": float(len(bv))}
    return Relation("beyond", ev, {"a": a, "b": b, "by": by, "higher": higher, "unit": unit})


def alike(a: str, a_values, b: str, b_values, *, by: float = 1.0, higher: bool = True,
          unit: str = "") -> Relation:
    """``a`` and ``b`` "perform alike", by the same rule as :func:`beyond`: it holds when NEITHER side
    beats the other beyond the spreads (by the factor ``by``), i.e. when ``beyond(a, b)`` and
    ``beyond(b, a)`` would both be too close to call; it is refuted when one of them would hold (every
    trial of one side beats every trial of the other). Fewer than :data:`MIN_TRIALS` trials of a side:
    nothing is called. Overlapping spreads say only that this run cannot tell the two apart: the
    sentence says so with the spreads (:func:`spread_text`)."""
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


def fact(name: str, value: bool | None) -> Relation:
    """A yes/no observation (a page resident, a file opened), kept as evidence."""
    return Relation("true", {name: None if value is None else float(bool(value))}, {"a": name})


def _num(value: Any) -> float | None:
    if value is None:
        return None
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
    predicted" nor "Not this time". An :func:`alike` relation holds when the spreads overlap; with
    fewer than :data:`MIN_TRIALS` trials of a side it is too close to call as well.
    """
    held = relation.holds()
    ev = relation.evidence
    if held is None and relation.too_close():
        n = min(ev["a trials"], ev["b trials"])
        # with too few trials the spreads are unknown, whether or not the ranges seen so far overlap
        why_not = (f"too few trials to know their spreads (fewer than {MIN_TRIALS} trials of a side)"
                   if n < MIN_TRIALS else "the spreads overlap")
        text = (f"{TOO_CLOSE} we expected that {predicted}, but {spread_text(relation)}: "
                f"{why_not}; {close or SEPARATE}.")
    elif held is None:
        text = f"{CANNOT_TELL} we expected that {predicted}, but {missing or 'a number it needs was not measured.'}"
    elif held:
        text = f"{AS_PREDICTED} {predicted}" + (f" — {_fill(yes, ev)}" if yes else "")
        if relation.kind in ("beyond", "alike") and not yes:
            text += f" — {spread_text(relation)}"
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
