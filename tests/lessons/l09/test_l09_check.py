"""Lesson 09's exercise checks: the right answers pass, the slips students make are named."""
from __future__ import annotations

import os

import pytest

from iolab.check import CheckFailed
from iolab.lessons.l09_workflows import check, experiments as ex


@pytest.fixture(scope="module")
def runs():
    old = os.environ.get("IOLAB_MODE")
    os.environ["IOLAB_MODE"] = "replay"
    try:
        return ex.workflow(None, cores=1), ex.resume(None, sig="KILL")
    finally:
        os.environ.pop("IOLAB_MODE") if old is None else os.environ.__setitem__("IOLAB_MODE", old)


def _fails(fn, *a, match: str):
    with pytest.raises(CheckFailed, match=match):
        fn(*a)


def test_fetched_mb(runs):
    c1, _ = runs
    sent = c1.moved.sent
    assert check.check_fetched_mb(sent / 1e6, c1)
    _fails(check.check_fetched_mb, ..., c1, match="not answered")
    _fails(check.check_fetched_mb, sent / 2**20, c1, match="MiB")                 # MiB for MB
    no_index = sum(v for k, v in c1.data["objects"].items() if not k.endswith((".amb", ".ann", ".bwt", ".pac",
                                                                                ".sa", ".fai")))
    _fails(check.check_fetched_mb, no_index / 1e6, c1, match="index")             # the index files left out
    _fails(check.check_fetched_mb, (sent + c1.moved.received) / 1e6, c1, match="received")
    _fails(check.check_fetched_mb, sent, c1, match="megabytes")
    _fails(check.check_fetched_mb, "17", c1, match="number")


def test_gets(runs):
    c1, _ = runs
    m = c1.moved
    assert check.check_gets(m.gets, c1)
    _fails(check.check_gets, m.heads, c1, match="HEADs")                          # the HEADs counted instead
    _fails(check.check_gets, m.gets + m.heads, c1, match="counts a HEAD as a GET")
    _fails(check.check_gets, m.requests, c1, match="every request")
    _fails(check.check_gets, m.gets + 1, c1, match="not what the store counted")


def test_redone(runs):
    _, kill = runs
    last = kill.steps["label"].iloc[-1]
    redone = int((kill.jobs.step == last).sum())
    assert check.check_redone(redone, kill)
    _fails(check.check_redone, 11, kill, match="every job")
    _fails(check.check_redone, len(kill.jobs), kill, match="killed run")
    _fails(check.check_redone, ..., kill, match="not answered")
