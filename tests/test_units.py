import pytest

from iolab.units import GiB, KiB, MiB, format_rate, format_size, parse_size, rate


@pytest.mark.parametrize("text,expected", [
    ("16MiB", 16 * MiB), ("4k", 4096), ("4K", 4096), ("4KiB", 4096), ("1m", MiB), ("2MB", 2_000_000),
    ("1g", GiB), ("512", 512), ("512B", 512), ("1.5k", 1536), ("10 MiB", 10 * MiB), ("4kB", 4000),
    (0, 0), (4096, 4096),
])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["4x", "-1k", "", "k", "1.3", "MiB", "4 k k", None, -5, True, 1.5, "1iB"])
def test_parse_size_rejects_bad_input_naming_it(bad):
    with pytest.raises(ValueError) as e:
        parse_size(bad)
    assert repr(bad) in str(e.value)


def test_format_size():
    assert format_size(16 * MiB) == "16 MiB"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(2_000_000, decimal=True) == "2 MB"
    assert format_size(100) == "100 B"


def test_rates_never_confuse_mib_and_mb():
    assert format_rate(252 * MiB) == "252.0 MiB/s"
    assert format_rate(10_200_000, unit="MB/s") == "10.2 MB/s"
    assert format_rate(MiB, unit="MB/s") == "1.0 MB/s"        # 1.048576 MB/s rounds to 1.0
    assert rate(MiB, "MB/s") == pytest.approx(1.048576)
    assert rate(1000 * KiB, "KiB/s") == 1000
    with pytest.raises(ValueError):
        format_rate(1, unit="Mb/s")
