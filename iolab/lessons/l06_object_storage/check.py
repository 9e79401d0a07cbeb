"""Lesson 06 (FUSE and object storage): its exercise checks: each prints why a right answer is right, or raises
CheckFailed with a hint
(what every lesson shares is in :mod:`iolab.check`)."""
from __future__ import annotations

import math
from ...check import close_to, fail, passed, same_items


def check_06_speedup(answer: object, reads) -> bool:
    """Exercise 06.1: how many times faster the warm read through s3fs with use_cache was than the cold one."""
    part = reads[reads["label"] == "s3fs, use_cache"].set_index("read")
    rates = part["mb_per_s"]
    expected = float(rates.iloc[1] / rates.iloc[0])
    if isinstance(answer, (int, float)) and not isinstance(answer, bool) and answer > 0 and \
            math.isclose(answer, 1 / expected, rel_tol=0.05):
        fail("you divided the cold rate by the warm one: the speed-up is warm / cold.")
    close_to(answer, expected, rel=0.05, what="the speed-up", ratio="warm rate / cold rate")
    warm = part.iloc[1]
    down = warm.get("link_down") if "link_down" in part else None
    if down is not None and down == down and down < 0.5 * warm["nbytes"]:
        why = (f"only {down:,.0f} bytes crossed the link during it (replies to s3fs's requests), so its data came "
               "from s3fs's cache directory, not from the store.")
    else:
        why = "compare its rate with the link's cap to tell which layer served it."
    return passed(f"The second read ran {expected:,.0f}x faster; {why}")


SHORT_LAYERS = {"the store, over the network": "network", "the FUSE client's own cache": "fuse cache",
                "the kernel page cache": "page cache"}


def check_06_layers(answer: object, reads) -> bool:
    """Exercise 06.2: for each client configuration, the layer that served the read after the page
    cache was dropped ("network", "fuse cache" or "page cache")."""
    last = reads[reads["read"] == reads["read"].unique()[-1]]
    expected = {r.label: SHORT_LAYERS.get(r.layer, r.layer) for r in last.itertuples()}
    if not isinstance(answer, dict):
        fail("answer with a dict: {client configuration label: 'network' | 'fuse cache' | 'page cache'}.")
    same_items(answer, expected, what="the client configurations in your answer")
    wrong = [k for k in expected if str(answer[k]).strip().lower() != expected[k]]
    if wrong:
        fail(f"look again at {wrong[0]!r}: how many bytes crossed the link during its 3rd read, compared with "
             "the file's size? And how much of the file did the open find in the page cache?")
    return passed("A cache of the FUSE client survives dropping the page cache; without one, every "
                  "read after the pages are gone crosses the network again.")


def check_06_keep_cache(answer: object, reads) -> bool:
    """Exercise 06.3: the configurations whose 2nd read found the whole file in the page cache at open."""
    second = reads[reads["read"] == reads["read"].unique()[1]]
    expected = sorted(second[second["resident_before"] >= 0.95]["label"])
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        fail("answer with a list (or set) of configuration labels.")
    got = sorted(str(a) for a in answer)
    unknown = [a for a in got if a not in set(reads["label"])]
    if unknown:
        fail(f"{unknown[0]!r} is not a configuration label of the table.")
    if got != expected:
        missing = [e for e in expected if e not in got]
        extra = [g for g in got if g not in expected]
        hint = (f"{missing[0]!r} is missing: look at its 2nd read's resident_before" if missing else
                f"{extra[0]!r} does not belong: its 2nd read found {second.set_index('label').loc[extra[0], 'resident_before']:.0%} "
                "of the file at open (resident_in_fd is measured after the read, through the reading descriptor)")
        fail(hint)
    return passed("Those clients answer each open with FOPEN_KEEP_CACHE (gcsfuse always; s3fs with -o kernel_cache); "
                  "for the others Linux's FUSE driver drops the file's pages at every open.")
