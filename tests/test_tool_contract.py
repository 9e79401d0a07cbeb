"""The tool modules against the contract iolab/tools/__init__.py states: parse(text) -> list[dict], or
the module's entry in PARSE_EXCEPTIONS. A new tool module that follows neither fails here."""
from __future__ import annotations

import importlib
import json
import pkgutil
import typing
from pathlib import Path
from typing import Any

import pytest

import iolab.tools
from iolab import recordings
from iolab.tools import PARSE_EXCEPTIONS

RULE = list[dict[str, Any]]
MODULES = sorted(m.name for m in pkgutil.iter_modules(iolab.tools.__path__) if not m.name.startswith("_"))
GOLDEN = Path(__file__).parent / "golden"


def _returns(module: str) -> Any:
    """What iolab.tools.<module>.parse says it returns, or None when the module has no parse."""
    parse = getattr(importlib.import_module(f"iolab.tools.{module}"), "parse", None)
    if parse is None:
        return None
    assert parse.__module__ == f"iolab.tools.{module}", f"{module}.parse is {parse.__module__}'s"
    return typing.get_type_hints(parse).get("return")


def test_every_exception_is_a_tool_module_and_says_why() -> None:
    assert set(PARSE_EXCEPTIONS) <= set(MODULES), sorted(set(PARSE_EXCEPTIONS) - set(MODULES))
    for module, (returns, why) in PARSE_EXCEPTIONS.items():
        assert returns != RULE, f"{module} follows the rule: it is no exception"
        assert len(why) > 20, f"{module}'s exception does not say why"


@pytest.mark.parametrize("module", MODULES)
def test_each_tool_module_follows_the_rule_or_its_stated_exception(module: str) -> None:
    want = PARSE_EXCEPTIONS[module][0] if module in PARSE_EXCEPTIONS else RULE
    assert _returns(module) == want, (f"iolab.tools.{module}.parse returns {_returns(module)}, the contract "
                                      f"says {want} (iolab/tools/__init__.py: the rule or PARSE_EXCEPTIONS)")


def _golden_parses() -> list[tuple[str, str]]:
    cases = []
    for case in sorted(GOLDEN.glob("*/*.json")):
        spec = json.loads(case.read_text())
        module, _, func = spec["parser"].partition(":")
        if func == "parse":
            cases.append((module.rsplit(".", 1)[1], spec["recording"]))
    return cases


@pytest.mark.parametrize("module, recording", _golden_parses(), ids=lambda x: x)
def test_a_real_recording_parses_to_what_the_contract_says(module: str, recording: str) -> None:
    # the annotation checked above, and mypy the body; here what a real output gives
    got = importlib.import_module(f"iolab.tools.{module}").parse(recordings.load(recording).text)
    if PARSE_EXCEPTIONS.get(module, (RULE,))[0] == RULE:
        assert isinstance(got, list) and got and all(isinstance(r, dict) for r in got), type(got)
    else:
        assert isinstance(got, dict), type(got)


def test_every_module_with_a_parse_has_a_golden_recording_of_it() -> None:
    parsed = {m for m, _ in _golden_parses()}
    with_parse = {m for m in MODULES if _returns(m) is not None}
    assert with_parse <= parsed, f"no golden test of parse for {sorted(with_parse - parsed)}"
