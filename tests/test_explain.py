import pytest

from iolab import explain


def test_as_predicted_fills_the_evidence(capsys):
    c = explain.expect("the warm read is faster than the cold one",
                       explain.greater("warm", 900.0, "cold", 300.0, by=2),
                       yes="{warm:.0f} against {cold:.0f} MiB/s", no="{warm:.0f} against {cold:.0f} MiB/s")
    assert c.held is True and c.consistent()
    assert capsys.readouterr().out.strip() == \
        "As predicted: the warm read is faster than the cold one — 900 against 300 MiB/s."


def test_not_this_time_says_why():
    c = explain.expect("the warm read is faster", explain.greater("warm", 500.0, "cold", 300.0, by=2),
                       no="{warm:.0f} against {cold:.0f}", why="the host caches the disk.", show=False)
    assert c.held is False and c.consistent()
    assert c.text == ("Not this time: we expected that the warm read is faster, but 500 against 300. "
                      "Why it can happen: the host caches the disk.")


def test_missing_numbers_cannot_tell():
    c = explain.expect("x", explain.within("a", None, "b", 1.0, rel=0.1), show=False)
    assert c.held is None and c.text.startswith(explain.CANNOT_TELL) and c.consistent()


@pytest.mark.parametrize("a,b,rel,held", [(100, 105, 0.1, True), (100, 120, 0.1, False), (0, 0, 0.1, True)])
def test_within(a, b, rel, held):
    assert explain.within("a", a, "b", b, rel=rel).holds() is held


def test_fact_and_callable_template():
    c = explain.expect("rank 1 opened rank 0's file", explain.fact("moved", True),
                       yes=lambda ev: f"moved={ev['moved']:.0f}", show=False)
    assert c.text.endswith("moved=1.") and c.consistent()


def test_a_tampered_claim_is_inconsistent():
    c = explain.expect("p", explain.greater("a", 1.0, "b", 2.0), show=False)
    forged = explain.Claim(c.predicted, c.relation, True, c.text.replace(explain.NOT_THIS_TIME, explain.AS_PREDICTED))
    assert not forged.consistent()
