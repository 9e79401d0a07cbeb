"""Repeated trials of two or more settings, interleaved, with their spread: numbers a benchmark
engineer would trust.

One run of each side, taken in a fixed order, measures the order as much as the settings: the first
run pays for fresh pages, a neighbour's burst lands on one side only. :func:`run` takes the settings
as functions, runs an optional warm-up of each, then ``repeat`` rounds in which every setting runs
once, in turn (A B A B …) or in a seeded random order per round, and keeps every trial::

    t = trials.run({"no fsync": lambda: measure.timed_write(...),
                    "fsync": lambda: measure.timed_write(..., fsync=True)},
                   repeat=5, warmup=1, metric=trials.mib_per_s, higher=True, unit="MiB/s")
    t.summary()                  # per setting: trials, median, min, max, q1, q3
    t.frame                      # every trial, warm-ups and re-runs included (``kept`` marks the ones used)
    t.expect("write() without fsync returns sooner", "no fsync", "fsync", by=1.5)

A trial whose witness (``result.witness.disturbed``) says the device moved someone else's bytes is run
again at once, at most ``reruns`` times over the whole run; the disturbed trial stays in the frame
(``kept=False``) and :attr:`Trials.notes` says so. The comparison rule is :func:`iolab.explain.beyond`
(one place): a side wins only when its worst trial beats the other's best; otherwise the lesson says
"Too close to call here", with the spreads and what would separate them.
"""
from __future__ import annotations

import math
import numbers
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from . import explain
from .errors import BadValue
from .units import MiB


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and type(v).__name__ != "bool_"


def value(v: Any, what: str, *, nan: bool = False) -> float:
    """``v`` as a trial's value, or :class:`iolab.errors.BadValue` naming it and ``what`` it was: a trial
    is a time, a rate or a count, so a finite number at least 0; never a bool, a string (not even "1.5"
    or "1e400"), None or infinity. ``nan``: NaN is taken (a trial not measured; the rule leaves it out)."""
    if not _is_number(v):
        raise BadValue(f"{what}: {v!r} ({type(v).__name__}) is not a number (a trial is a number: seconds, "
                       "a rate or a count)")
    f = float(v)
    if math.isnan(f) and nan:
        return f
    if not math.isfinite(f) or f < 0:
        raise BadValue(f"{what}: {v!r} is not a trial's value (a time, a rate or a count is finite and at "
                       "least 0)")
    return f


def _attr(result: Any, name: str, metric: str) -> float:
    if _is_number(result) or result is None or isinstance(result, (str, bytes, bool)):
        raise BadValue(f"{metric}({result!r}): give a number or a result with .{name} "
                       "(a measure.Measurement)")
    if not hasattr(result, name):
        raise BadValue(f"{metric}: {type(result).__name__} {result!r:.80} has no .{name}")
    return value(getattr(result, name), f"{metric}: its .{name}")


QUARTILES_FROM = 5      # fewer trials than this: a report gives no quartiles (they would be interpolations)


def seconds(result: Any) -> float:
    """The default metric: a number as it is, else the result's ``seconds``."""
    if _is_number(result):
        return value(result, f"seconds({result!r})")
    return _attr(result, "seconds", "seconds")


def mib_per_s(result: Any) -> float:
    """A measure.Measurement's rate in MiB/s (or a number taken as bytes per second)."""
    if _is_number(result):
        return value(result, f"mib_per_s({result!r})") / MiB
    return _attr(result, "bytes_per_s", "mib_per_s") / MiB


def witness_disturbed(result: Any) -> bool | None:
    """The default disturbance test: the result's witness (``result.witness.disturbed``), when it has one."""
    w = getattr(result, "witness", None)
    return None if w is None else w.disturbed


@dataclass
class Trials:
    """Every trial of a run of settings. ``frame``: one row per trial, in the order they ran
    (``position``), with ``setting``, ``trial`` (1.. per setting, warm-ups 0), ``value``, ``warmup``,
    ``disturbed``, ``rerun`` (this trial replaced a disturbed one) and ``kept`` (counted in the
    summary and the comparisons); plus the result's own ``row()`` when it has one."""

    frame: pd.DataFrame
    unit: str = ""
    higher: bool = False                        # a larger value is better (a rate); False: seconds
    results: dict[str, list[Any]] = field(default_factory=dict)   # the kept results per setting
    notes: list[str] = field(default_factory=list)

    @property
    def settings(self) -> list[str]:
        return list(dict.fromkeys(self.frame["setting"]))

    def values(self, setting: str) -> list[float]:
        if setting not in self.settings:
            raise BadValue(f"no setting {setting!r} in these trials; there are "
                           + ", ".join(repr(s) for s in self.settings))
        f = self.frame
        return [float(v) for v in f.loc[(f["setting"] == setting) & f["kept"], "value"]]

    def median(self, setting: str) -> float:
        v = self.values(setting)
        return float(pd.Series(v).median()) if v else math.nan

    def summary(self) -> pd.DataFrame:
        """Per setting: the number of kept trials, their median, min, max and quartiles, and the
        spread as a fraction of the median ((max - min) / median)."""
        rows = []
        for s in self.settings:
            v = pd.Series(self.values(s), dtype=float)
            med = v.median() if len(v) else math.nan
            rows.append({"setting": s, "trials": len(v), "median": med, "min": v.min(), "max": v.max(),
                         "q1": v.quantile(0.25), "q3": v.quantile(0.75),
                         "spread": (v.max() - v.min()) / med if len(v) and med else math.nan,
                         "disturbed": int(self.frame.loc[self.frame["setting"] == s, "disturbed"]
                                          .fillna(False).astype(bool).sum()),
                         "unit": self.unit})
        return pd.DataFrame(rows).set_index("setting")

    def relation(self, a: str, b: str, *, by: float = 1.0) -> explain.Relation:
        """:func:`iolab.explain.beyond` over the kept trials of ``a`` and ``b``."""
        return explain.beyond(a, self.values(a), b, self.values(b), by=by, higher=self.higher, unit=self.unit)

    def expect(self, predicted: str, a: str, b: str, *, by: float = 1.0, **kw: Any) -> explain.Claim:
        """explain.expect over :meth:`relation`: "As predicted", "Not this time" or "Too close to call here"."""
        return explain.expect(predicted, self.relation(a, b, by=by), **kw)

    def report(self) -> dict[str, str]:
        """How a benchmark report states each setting: the median, the range (min–max) and, from
        :data:`QUARTILES_FROM` trials on, the interquartile range, over how many trials, and how they ran.
        Never one number alone."""
        s = self.summary()
        f = self.frame
        how = "interleaved with the other settings" if len(self.settings) > 1 else "in a row"
        out: dict[str, str] = {}
        for name, r in s.iterrows():
            warm = int(f.loc[f["setting"] == name, "warmup"].astype(bool).sum()) if "warmup" in f.columns else 0
            # quartiles only where there are enough trials to have them (of three, they are interpolations)
            quart = f"quartiles {_num(r['q1'])}–{_num(r['q3'])}, " if r["trials"] >= QUARTILES_FROM else ""
            out[str(name)] = (f"median {_num(r['median'])} {self.unit}, range {_num(r['min'])}–{_num(r['max'])} "
                              f"(spread {r['spread']:.0%} of the median), {quart}"
                              f"over {r['trials']} trials {how}" + (f", after {warm} warm-up run(s)" if warm else ""))
        return out

    def __str__(self) -> str:
        s = self.summary()
        lines = [f"{name}: median {_num(r['median'])} {self.unit} over {r['trials']} trials "
                 f"(min {_num(r['min'])}, max {_num(r['max'])})" for name, r in s.iterrows()]
        return "\n".join(lines + self.notes)


def _num(v: float) -> str:
    """A figure as a report prints it: four significant digits, thousands separated, never 1.2e+04."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:,.4g}"


def order(settings: Sequence[str], repeat: int, *, how: str = "interleaved", seed: int | None = None) -> list[str]:
    """The order the trials run in: ``interleaved`` (A B A B …), ``rotated`` (each round starts one
    setting later: A B C, B C A, C A B, so that over as many rounds as settings each setting runs once
    in each place of a round) or ``random`` (each round of one trial per setting shuffled, seeded:
    the same seed gives the same order)."""
    if how not in ("interleaved", "rotated", "random"):
        raise ValueError(f"how must be 'interleaved', 'rotated' or 'random', got {how!r}")
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(repeat):
        r = list(settings)
        if how == "rotated":
            k = i % len(r) if r else 0
            r = r[k:] + r[:k]
        if how == "random":
            rng.shuffle(r)
        out.extend(r)
    return out


def run(settings: Mapping[str, Callable[[], Any]], *, repeat: int = 5, warmup: int = 1,
        how: str = "interleaved", seed: int | None = None, metric: Callable[[Any], float] = seconds,
        higher: bool = False, unit: str = "s", disturbed: Callable[[Any], bool | None] = witness_disturbed,
        reruns: int | None = None, between: Callable[[], Any] | None = None) -> Trials:
    """Run each setting ``warmup`` times (not counted), then ``repeat`` trials of each in the order
    :func:`order` gives. ``metric`` turns a result into the number compared (:func:`seconds`,
    :func:`mib_per_s`), ``higher`` says whether larger is better. A trial that ``disturbed`` says was
    disturbed is run again at once, at most ``reruns`` times in all (default: ``repeat``).
    ``between``: called before every trial (e.g. evict a file), outside what is timed."""
    if not isinstance(settings, Mapping) or len(settings) < 2:
        raise BadValue(f"give two settings or more to compare, as {{name: function}}; got {settings!r:.120}")
    for what, n, least in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < least:
            raise BadValue(f"{what}={n!r}: a whole number at least {least}")
    budget = repeat if reruns is None else reruns
    rows: list[dict[str, Any]] = []
    every: list[Any] = []
    count = {s: 0 for s in settings}
    notes: list[str] = []
    reran = 0

    def one(name: str, *, is_warmup: bool, rerun: bool) -> bool | None:
        if between is not None:
            between()
        result = settings[name]()
        d = disturbed(result)
        row = dict(result.row()) if hasattr(result, "row") else {}
        try:
            v = value(metric(result), f"setting {name!r}: the metric of its result {result!r:.80}")
        except BadValue as e:
            raise BadValue(f"setting {name!r}: {e}") from None
        row.update(setting=name, position=len(rows) + 1, trial=0 if is_warmup else count[name] + 1,
                   value=v, warmup=is_warmup, disturbed=d, rerun=rerun, kept=not is_warmup)
        rows.append(row)
        every.append(result)
        if not is_warmup:
            return d
        return None

    for _ in range(warmup):
        for name in settings:
            one(name, is_warmup=True, rerun=False)
    for name in order(list(settings), repeat, how=how, seed=seed):
        d = one(name, is_warmup=False, rerun=False)
        while d and reran < budget:
            rows[-1]["kept"] = False
            reran += 1
            d = one(name, is_warmup=False, rerun=True)
        count[name] += 1
    frame = pd.DataFrame(rows)
    cols = ["setting", "trial", "position", "value", "warmup", "disturbed", "rerun", "kept"]
    frame = frame[cols + [c for c in frame.columns if c not in cols]]
    if reran:
        notes.append(f"{reran} trial(s) the witness found disturbed (someone else's traffic on the device) "
                     "were run again; the disturbed ones are kept in the frame, not counted")
    still = frame.loc[frame["kept"], "disturbed"].fillna(False).astype(bool).sum()
    if still:
        notes.append(f"{int(still)} counted trial(s) were still disturbed after {budget} re-runs: "
                     "this machine is busy, and their spread shows it")
    results = {s: [r for r, (_, row) in zip(every, frame.iterrows()) if row["kept"] and row["setting"] == s]
               for s in settings}
    return Trials(frame, unit=unit, higher=higher, results=results, notes=notes)


def from_values(values: Mapping[str, Sequence[float]], *, unit: str = "s", higher: bool = False,
                notes: Sequence[str] = ()) -> Trials:
    """A :class:`Trials` from numbers measured elsewhere (a recording's repeated runs, a class's
    results), in the order given per setting, interleaved as they would have run; all counted."""
    values = _per_setting(values, "from_values")
    values = {name: [value(v, f"from_values: setting {name!r}, trial {i + 1}", nan=True) for i, v in enumerate(vals)]
              for name, vals in values.items()}
    rows, pos = [], 0
    longest = max((len(v) for v in values.values()), default=0)
    for i in range(longest):
        for name, vals in values.items():
            if i < len(vals):
                pos += 1
                rows.append({"setting": name, "trial": i + 1, "position": pos, "value": float(vals[i]),
                             "warmup": False, "disturbed": None, "rerun": False, "kept": True})
    frame = pd.DataFrame(rows, columns=["setting", "trial", "position", "value", "warmup", "disturbed",
                                        "rerun", "kept"])
    return Trials(frame, unit=unit, higher=higher, notes=list(notes))


def from_results(results: Mapping[str, Sequence[Any]], *, metric: Callable[[Any], float] = seconds,
                 higher: bool = False, unit: str = "s",
                 disturbed: Callable[[Any], bool | None] = witness_disturbed,
                 notes: Sequence[str] = ()) -> Trials:
    """A :class:`Trials` from results measured elsewhere (a learner's own ``measure.timed_read`` of
    each side), all counted, in the order given per setting, interleaved as :func:`run` would have run
    them; each result's ``row()`` and witness kept as :func:`run` keeps them. One result of a side is
    one trial: the rule of :func:`iolab.explain.beyond` then calls nothing."""
    results = _per_setting(results, "from_results")
    rows: list[dict[str, Any]] = []
    longest = max((len(v) for v in results.values()), default=0)
    for i in range(longest):
        for name, res in results.items():
            if i < len(res):
                r = res[i]
                row = dict(r.row()) if hasattr(r, "row") else {}
                v = value(metric(r), f"from_results: setting {name!r}, result {i + 1}", nan=True)
                row.update(setting=name, trial=i + 1, position=len(rows) + 1, value=v, warmup=False,
                           disturbed=disturbed(r), rerun=False, kept=True)
                rows.append(row)
    cols = ["setting", "trial", "position", "value", "warmup", "disturbed", "rerun", "kept"]
    frame = pd.DataFrame(rows, columns=cols + [c for c in (rows[0] if rows else {}) if c not in cols])
    return Trials(frame, unit=unit, higher=higher, results={s: list(v) for s, v in results.items()},
                  notes=list(notes))


def _per_setting(given: Any, fn: str) -> dict[str, list[Any]]:
    """``{setting: [trial, ...]}`` as given to :func:`from_values` / :func:`from_results`, checked: a
    mapping of one setting or more, each to a list (a string is not a list of trials)."""
    if not isinstance(given, Mapping):
        raise BadValue(f"{fn}: give {{setting: [trial, ...]}}, got {given!r:.120}")
    if not given:
        raise BadValue(f"{fn}({{}}): no setting given; give {{setting: [trial, ...]}}")
    out = {}
    for name, vals in given.items():
        if isinstance(vals, (str, bytes)) or not isinstance(vals, (Sequence, pd.Series)) and \
                not hasattr(vals, "__array__"):
            raise BadValue(f"{fn}: setting {name!r} has {vals!r:.80}, not a list of trials")
        out[name] = list(vals)
    return out
