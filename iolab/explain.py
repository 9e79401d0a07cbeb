"""Sentences that follow the numbers: a lesson's claims computed from what was measured.

A lesson runs on machines its authors never saw. Prose that stays fixed may only state what holds
everywhere; a sentence about *this* run's numbers is chosen by comparing them. :func:`expect` takes
what the lesson predicted and whether the numbers show it, and returns a :class:`Claim` whose text
is "As predicted: …" or "Not this time: … Why it can happen: …". The relation helpers
(:func:`greater`, :func:`within`) state the comparison once, so the sentence and the test that
guards it cannot drift apart: a Claim keeps its evidence and can re-check itself
(:meth:`Claim.consistent`).

Lesson functions (``iolab.labs.*``) return their claims; tests feed them numbers from recordings
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
        raise ValueError(f"unknown relation {self.kind!r}")


def greater(a: str, a_value: float | None, b: str, b_value: float | None, *, by: float = 1.0) -> Relation:
    """``a > by × b``: e.g. ``greater("warm", warm_rate, "cold", cold_rate, by=2)``."""
    return Relation("greater", {a: _num(a_value), b: _num(b_value)}, {"a": a, "b": b, "by": by})


def within(a: str, a_value: float | None, b: str, b_value: float | None, *, rel: float) -> Relation:
    """``a`` and ``b`` differ by at most ``rel`` of the larger one."""
    return Relation("within", {a: _num(a_value), b: _num(b_value)}, {"a": a, "b": b, "rel": rel})


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
        return held == self.held and self.text.startswith(prefix)

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle) -> None:  # IPython shows the sentence, not the dataclass
        p.text(self.text)


def _fill(template: str | Callable[[Mapping[str, float]], str], evidence: Mapping[str, float]) -> str:
    if callable(template):
        return template(evidence)
    return template.format(**evidence)


def expect(predicted: str, relation: Relation, *, yes: str | Callable = "", no: str | Callable = "",
           why: str = "", missing: str = "", show: bool = True) -> Claim:
    """Say whether ``relation`` held, in the sentence that fits.

    ``predicted``: the expectation as a clause that reads after "As predicted:" and after "we
    expected that" ("the warm read is faster than the cold one").
    ``yes``: what to add when it held; ``no``: what was seen instead; ``why``: why that can happen
    on some machines (a VM's host cache, a fast device, noise). Templates may use the evidence's
    names, e.g. ``"{warm:.0f} MiB/s against {cold:.0f} MiB/s"``, or be functions of the evidence.
    Prints the sentence unless ``show=False``, and returns the :class:`Claim`.
    """
    held = relation.holds()
    ev = relation.evidence
    if held is None:
        text = f"{CANNOT_TELL} we expected that {predicted}, but {missing or 'a number it needs was not measured.'}"
    elif held:
        text = f"{AS_PREDICTED} {predicted}" + (f" — {_fill(yes, ev)}" if yes else "")
        text += "" if text.endswith((".", "!", "?")) else "."
    else:
        text = f"{NOT_THIS_TIME} we expected that {predicted}, but " + (_fill(no, ev) if no else "the numbers say otherwise")
        text += "" if text.endswith((".", "!", "?")) else "."
        if why:
            text += f" Why it can happen: {why}"
    claim = Claim(predicted=predicted, relation=relation, held=held, text=text)
    if show:
        print(text)
    return claim
