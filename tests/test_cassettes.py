"""One declaration of what an experiment's recording consists of (recordings.Cassette, vcrpy's
cassette): the lesson reads its parts and its recorder writes them through it, so the two cannot
disagree about a file name. Every committed recording of a declared cassette has every part the lesson
reads, and nothing in its name space that the declaration does not know."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab import recordings
from iolab.lessons.l04_ior import pitfalls, sweeps
from iolab.lessons.l05_mdtest import metadata

ROOT = Path(__file__).resolve().parent.parent
V = r"\d+\.\d+\.\d+"
# each cassette a lesson declares, and the recordings made with it: patterns of their names (a
# recording's name, tool/name, without its parts), or the list of them
CASSETTES = {
    "l04_ior.pitfalls.CASSETTE": (pitfalls.CASSETTE, (rf"ior/lesson-[a-z0-9]+-{V}-(?!evict-)[a-z]+",
                                                      rf"ior/sweep-t[0-9a-z]+-n[0-9]+-s[0-9]+-{V}")),
    "l04_ior.pitfalls.EVICT_CASSETTE": (pitfalls.EVICT_CASSETTE, (rf"ior/lesson-[a-z0-9]+-{V}-evict",)),
    "l04_ior.pitfalls.SPLIT_CASSETTE": (pitfalls.SPLIT_CASSETTE, (rf"ior/evict-{V}",)),
    "l04_ior.sweeps.CGROUP_CASSETTE": (sweeps.CGROUP_CASSETTE, sweeps.cgroup_runs()),
    "l05_mdtest.metadata.PHASES_CASSETTE": (metadata.PHASES_CASSETTE, (rf"mdtest/phases-[a-z0-9-]+-{V}",)),
}


def _names(tool: str) -> set[str]:
    """The recordings of data/recorded/<tool>: tool/name of every .meta.json."""
    return set(recordings.available(tool))


def _bases(how: tuple[str, ...] | list[str], names: set[str]) -> set[str]:
    if isinstance(how, list):
        return set(how)
    return {m.group(0) for pattern in how for n in names if (m := re.match(pattern + r"(?=-)", n))}


def test_every_cassette_a_lesson_declares_is_held_to_its_recordings():
    declared = set()
    for path in sorted((ROOT / "iolab" / "lessons").glob("*/*.py")):
        for m in re.finditer(r"^([A-Z_]+) = recordings\.Cassette\(", path.read_text(), re.M):
            declared.add(f"{path.parent.name}.{path.stem}.{m.group(1)}")
    assert declared == set(CASSETTES), f"cassettes declared, and not held to their recordings here (or gone): " \
                                       f"{sorted(declared ^ set(CASSETTES))}"


@pytest.mark.parametrize("key", sorted(CASSETTES))
def test_a_committed_recording_has_every_declared_part_and_nothing_else(key):
    cassette, how = CASSETTES[key]
    tool = how[0].split("/")[0]
    names = _names(tool)
    bases = _bases(how, names)
    assert bases, f"{key}: no committed recording"
    wrong = {}
    for base in sorted(bases):
        missing, undeclared = cassette.check(base, names)
        if missing or undeclared:
            wrong[base] = {"missing": missing, "undeclared": undeclared}
    assert not wrong, f"{key}: recordings that are not what the lesson reads: {wrong}"


def test_every_recording_has_its_raw_file_beside_its_meta():
    for tool in ("ior", "mdtest"):
        d = recordings.data_dir() / tool
        metas = {p.name[:-len(".meta.json")] for p in d.glob("*.meta.json")}
        raws = {p.name.rsplit(".", 1)[0] for p in d.iterdir() if not p.name.endswith(".meta.json")}
        assert metas == raws, f"{tool}: a meta without its raw file or the other way: {sorted(metas ^ raws)}"


def test_the_check_finds_a_missing_part_an_undeclared_one_and_a_trial_short_of_its_parts():
    run = recordings.Cassette(("-summary", "-cache"), optional=("-opens",))
    trials = recordings.Cassette(("-t{i}-write", "-t{i}-read"), each=run)
    whole = {f"x-t{i}-{k}-{p}" for i in (1, 2) for k in ("write", "read") for p in ("summary", "cache")}
    assert trials.check("x", whole) == ([], [])
    assert trials.check("x", whole | {"x-t1-read-opens"}) == ([], [])
    assert trials.check("x", whole - {"x-t2-read-cache"}) == (["x-t2-read-cache"], [])
    assert trials.check("x", whole | {"x-t3-write-summary"})[0] == ["x-t3-read-cache", "x-t3-read-summary",
                                                                     "x-t3-write-cache"]
    assert run.check("y", {"y-summary", "y-cache", "y-trace", "yz-summary"}) == ([], ["y-trace"])
    with pytest.raises(ValueError, match="not a part"):
        run.part("y", "-summay")


def test_recorders_name_the_parts_of_a_declared_cassette_only_through_it():
    """The writer of a declared cassette composes no part's name by hand (an f-string ending in one)."""
    parts = {p for c, _ in CASSETTES.values() for p in c.parts + c.optional} | \
            {p for c, _ in CASSETTES.values() if c.each for p in c.each.parts + c.each.optional}
    literal = re.compile(r"f\"[^\"\n]*(" + "|".join(re.escape(p).replace(r"\{i\}", r"\{\w+\}") for p in parts) + r")\"")
    wrong = {}
    for path in [*sorted((ROOT / "recorders").glob("l0[45]_*.py")), ROOT / "iolab" / "lessons" / "l04_ior" / "pitfalls.py",
                 ROOT / "iolab" / "lessons" / "l04_ior" / "sweeps.py", ROOT / "iolab" / "lessons" / "l05_mdtest" / "metadata.py"]:
        hits = [m.group(0) for m in literal.finditer(path.read_text())]
        if hits:
            wrong[path.name] = hits
    assert not wrong, f"parts' names composed by hand, not through the lesson's cassette: {wrong}"
